"""Exercise 9 (gradient_checker.py): the student's checker approves vjpgrad's gradients and catches a
derivative rule planted wrong (square's derivative written x instead of 2x) at the input it affects."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad.course.expect import advice
from vjpgrad.testing import Expression, expressions

FIRST = Expression(("*", "x", ("sin", "y")), ("x", "y", "z"))
"""The first expression each check tries: x * sin(y), which does not use z."""

VARIABLES = ["x", "y", "z"]


@vjpgrad.custom_op
def square(x: float) -> float:
    return x * x


@square.derivative
def _(x: Any, out: Any) -> Any:
    return x  # planted: the derivative of x * x is 2x


def vjpgrads_gradients(f: Any, xs: list[float]) -> list[float]:
    return list(vjpgrad.grad(f, argnums=tuple(range(len(xs))))(*xs))


point = st.lists(st.floats(-2, 2), min_size=3, max_size=3)


@example(FIRST, [0.5, 1.0, 2.0])
@given(expressions(VARIABLES), point)
def test_right_gradients_are_approved(student: Any, expression: Expression, xs: list[float]) -> None:
    """Right gradients are approved."""
    grads = vjpgrads_gradients(expression, xs)
    wrong = student("gradient_checker").wrong_gradients(expression, xs, grads)
    assert list(wrong) == [], (
        f"for f(x, y, z) = {expression.text} at {xs} and vjpgrad's gradients {grads}, which are right, "
        f"wrong_gradients returned {wrong!r}, not []"
    )


@example(FIRST, [0.5, 1.0, 2.0], {1})
@given(expressions(VARIABLES), point, st.sets(st.sampled_from([0, 1, 2]), min_size=1))
def test_a_planted_wrong_rule_is_caught_at_each_input_it_touches(
    student: Any, expression: Expression, xs: list[float], planted: set[int]
) -> None:
    """A wrong derivative rule is caught at each input it touches."""
    for i in planted:
        xs[i] = 1.0 + abs(xs[i])  # away from 0, where x and 2x agree

    def f(*args: Any) -> Any:
        total = expression(*args)
        for i in sorted(planted):
            total = total + square(args[i])
        return total

    grads = vjpgrads_gradients(f, xs)
    wrong = student("gradient_checker").wrong_gradients(f, xs, grads)
    terms = " + ".join(f"square({VARIABLES[i]})" for i in sorted(planted))
    assert list(wrong) == sorted(planted), (
        f"for f(x, y, z) = {expression.text} + {terms} at {xs}, square's rule is wrong (x instead of 2x), so the "
        f"gradients {grads} are wrong at positions {sorted(planted)}; wrong_gradients returned {wrong!r}"
    )


STEEP = 20.0
"""exp(20) is about 4.9e8: the central difference of exp there is off by about 1e-2 from rounding alone,
far beyond an absolute tolerance of 1e-4 and far within a relative one."""


def steep(x: Any, y: Any) -> Any:
    return vjpgrad.exp(x) * y


def test_the_tolerance_grows_with_the_derivative(student: Any) -> None:
    """The tolerance grows with the derivative: right gradients of a steep function are approved."""
    xs = [STEEP, 1.5]
    grads = vjpgrads_gradients(steep, xs)
    wrong = student("gradient_checker").wrong_gradients(steep, xs, grads)
    assert list(wrong) == [], (
        f"for f(x, y) = exp(x) * y at {xs}, vjpgrad's gradients {grads} are right (df/dx is about "
        f"{grads[0]:.3g}), but wrong_gradients returned {wrong!r}: the central difference of so steep a function "
        "is off by about 1e-2 from rounding alone"
        + advice(", so compare with tol * max(1, |numeric|), not with tol alone")
    )
