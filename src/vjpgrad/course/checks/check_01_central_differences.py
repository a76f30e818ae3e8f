"""Exercise 1 (derivatives.py): central differences, against vjpgrad's exact derivatives."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad.course.expect import advice
from vjpgrad.testing import Expression, expressions


def test_the_derivative_of_x_squared_at_3_is_6(student: Any) -> None:
    """The derivative of x * x at 3 is 6."""
    d = student("derivatives").central_difference(lambda x: x * x, 3.0)
    assert math.isclose(d, 6.0, rel_tol=1e-6), (
        f"central_difference(lambda x: x * x, 3.0) is {d!r}; the derivative of x**2 is 2x, 6 at x = 3"
    )
    # of x * x a central difference is exact whatever the step; a one-sided one is off by h, which a
    # small step hides (a review found (f(x + h) - f(x)) / h passing every check)
    wide = student("derivatives").central_difference(lambda x: x * x, 3.0, h=0.5)
    assert math.isclose(wide, 6.0, rel_tol=1e-12), (
        f"central_difference(lambda x: x * x, 3.0, h=0.5) is {wide!r}, not 6: of x**2 a central difference is "
        "exact for any step, where a one-sided one, (f(x + h) - f(x)) / h, gives 6.5"
    )


@example(Expression(("*", "x", ("sin", "y")), ("x", "y")), 0.5, 1.5, 1)
@given(expressions(["x", "y"]), st.floats(-2, 2), st.floats(-2, 2), st.sampled_from([0, 1]))
def test_it_agrees_with_vjpgrad_on_any_expression_of_two_arguments(
    student: Any, expression: Expression, x: float, y: float, arg: int
) -> None:
    """It agrees with vjpgrad's exact derivative on any expression of two arguments."""
    numeric = student("derivatives").central_difference(expression, x, y, arg=arg)
    exact = vjpgrad.grad(expression, argnums=arg)(x, y)
    size = 1 + abs(float(expression(x, y)))
    assert math.isclose(numeric, exact, rel_tol=1e-4, abs_tol=1e-5 * size), (
        f"for f(x, y) = {expression.text} at x = {x!r}, y = {y!r}: central_difference(f, x, y, arg={arg}) is "
        f"{numeric!r}, vjpgrad's exact derivative d/d{'xy'[arg]} is {exact!r}"
    )


def test_the_steps_are_ordered_too_small_good_too_large(student: Any) -> None:
    """The three step sizes are positive and ordered: too small, good, too large."""
    too_small, good, too_large = student("derivatives").step_sizes()
    assert 0 < too_small < good < too_large, (
        f"step_sizes() returned {(too_small, good, too_large)}: expected (too_small, good, too_large), "
        "positive and in that order"
    )


def error_with_step(student: Any, h: float) -> float:
    """How far the central difference of exp at 1 is from its derivative, e, with step ``h``."""
    return abs(float(student("derivatives").central_difference(math.exp, 1.0, h=h)) - math.e)


def test_the_good_step_is_accurate_to_1e_8(student: Any) -> None:
    """The good step gives the derivative of exp at 1 within 1e-8."""
    good = student("derivatives").step_sizes()[1]
    error = error_with_step(student, good)
    assert error < 1e-8, f"with h = {good!r} the derivative of exp at 1 is off by {error:.3g}: find a step within 1e-8"


def test_a_too_small_step_loses_to_rounding_and_a_too_large_one_to_the_curve(student: Any) -> None:
    """A too small step loses to rounding, and a too large one to the curve."""
    too_small, _, too_large = student("derivatives").step_sizes()
    for name, h in (("too small", too_small), ("too large", too_large)):
        error = error_with_step(student, h)
        assert error > 1e-6, f"the {name} step h = {h!r} gives the derivative of exp at 1 within {error:.3g}" + advice(
            ": pick one whose error is above 1e-6, to see what goes wrong", ", not above 1e-6"
        )
