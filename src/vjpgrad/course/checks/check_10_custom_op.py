"""Exercise 10 (softsign.py): the student's derivative rule of softsign, inside vjpgrad.

vjpgrad differentiates with the student's rule, so its gradients are labelled "yours" (yours="f").
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from vjpgrad import custom_op, grad
from vjpgrad.course import remote
from vjpgrad.course.expect import advice
from vjpgrad.testing import Expression, assert_grad_close, expressions

FIRST = Expression(("*", "x", 2.0), ("x",))


def softsign_of(student: Any) -> Any:
    """The student's softsign, to differentiate here. Where their code runs in a process of its own,
    vjpgrad's custom_op of their function with their rule, each call of the rule made there (with
    numbers, or with this process's Values, which it can add, multiply and so on)."""
    theirs = student("softsign").softsign
    if not isinstance(theirs, remote.Proxy):
        return theirs
    function, rule = theirs.function, student.probe("derivative_rule", theirs)
    if rule is None:
        return theirs  # no rule: their softsign says so on Values, as it would here

    def softsign(x: float) -> float:
        return float(function(x))

    ours = custom_op(softsign)
    ours.derivative(lambda x, out: rule(x, out))
    return ours


def test_the_derivative_at_one_is_a_quarter(student: Any) -> None:
    """The derivative of softsign at 1 is a quarter."""
    assert_grad_close(softsign_of(student), [1.0], expected=[0.25], yours="f")


@pytest.mark.parametrize("x", [-3.0, -0.5, 0.0, 0.25, 2.0])
def test_the_derivative_matches_central_differences(student: Any, x: float) -> None:
    """The derivative at x = {x} matches central differences."""
    assert_grad_close(softsign_of(student), [x], yours="f")


@example(FIRST, 0.5)
@given(expressions(["x"]), st.floats(-3, 3))
def test_inside_any_expression(student: Any, expression: Expression, x: float) -> None:
    """softsign's rule is right inside any expression."""
    softsign = softsign_of(student)
    try:
        assert_grad_close(lambda x: softsign(expression(x)), [x], yours="f")
    except AssertionError as error:
        raise AssertionError(f"f(x) = softsign({expression.text}) at x = {x!r}:\n{error}") from None


@pytest.mark.parametrize("x", [-2.0, -0.5, 0.5, 2.0])
def test_the_rule_is_differentiable_too(student: Any, x: float) -> None:
    """The rule is differentiable too, at x = {x}."""
    softsign = softsign_of(student)
    second = grad(grad(softsign))(x)
    assert_grad_close(lambda x: grad(softsign)(x), [x], expected=[second], yours="f")
    h = 1e-5
    numeric = (grad(softsign)(x + h) - grad(softsign)(x - h)) / (2 * h)
    assert second == pytest.approx(numeric, rel=1e-4), (
        f"the second derivative at {x} is {second} by your rule, {numeric} by central differences of the first"
        + advice(
            ": write the rule with operators and abs(), not math's functions, so that vjpgrad can differentiate it"
        )
    )
