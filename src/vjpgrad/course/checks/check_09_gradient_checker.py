"""Exercise 9 (gradient_checker.py): the student's checker approves vjpgrad's gradients and catches a
derivative rule planted wrong (square's derivative written x instead of 2x) at the input it affects."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

import vjpgrad
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
