"""Exercise 10 (softsign.py): the student's derivative rule of softsign, inside vjpgrad.

vjpgrad differentiates with the student's rule, so its gradients are labelled "yours" (yours="f").
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from vjpgrad import grad
from vjpgrad.course.expect import advice
from vjpgrad.testing import Expression, assert_grad_close, expressions

FIRST = Expression(("*", "x", 2.0), ("x",))


def test_the_derivative_at_one_is_a_quarter(student: Any) -> None:
    """The derivative of softsign at 1 is a quarter."""
    assert_grad_close(student("softsign").softsign, [1.0], expected=[0.25], yours="f")


@pytest.mark.parametrize("x", [-3.0, -0.5, 0.0, 0.25, 2.0])
def test_the_derivative_matches_central_differences(student: Any, x: float) -> None:
    """The derivative at x = {x} matches central differences."""
    assert_grad_close(student("softsign").softsign, [x], yours="f")


@example(FIRST, 0.5)
@given(expressions(["x"]), st.floats(-3, 3))
def test_inside_any_expression(student: Any, expression: Expression, x: float) -> None:
    """softsign's rule is right inside any expression."""
    softsign = student("softsign").softsign
    try:
        assert_grad_close(lambda x: softsign(expression(x)), [x], yours="f")
    except AssertionError as error:
        raise AssertionError(f"f(x) = softsign({expression.text}) at x = {x!r}:\n{error}") from None


@pytest.mark.parametrize("x", [-2.0, -0.5, 0.5, 2.0])
def test_the_rule_is_differentiable_too(student: Any, x: float) -> None:
    """The rule is differentiable too, at x = {x}."""
    softsign = student("softsign").softsign
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
