"""Exercise 6 (seeds.py): case 1's VJP, by hand and with the student's engine, against vjpgrad's
``y.backward(v)``. Case 1 of the Stack Overflow answer to "Pytorch, what are the gradient
arguments" (https://stackoverflow.com/questions/43451125)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from vjpgrad import Value, Vector, log
from vjpgrad.course import expect
from vjpgrad.testing import assert_grad_close

WAYS = ["vjp_by_hand", "vjp_with_engine"]


def example_1(*xs: Value) -> Vector:
    """y = 3a + 2b*b + log(c), with a, b, c the three thirds of xs."""
    n = len(xs) // 3
    a, b, c = Vector(xs[:n]), Vector(xs[n : 2 * n]), Vector(xs[2 * n :])
    return 3 * a + 2 * b * b + log(c)


def check(vjp: Any, a: list[float], b: list[float], c: list[float], v: list[float]) -> None:
    """The student's three lists against the gradients vjpgrad's y.backward(v) gives."""
    __tracebackhide__ = True
    call, expected = f"{vjp.__name__}({a}, {b}, {c}, {v})", f"three lists of {len(a)} numbers"
    parts = expect.items(vjp(list(a), list(b), list(c), list(v)), 3, call, expected)
    yours = [g for part in parts for g in expect.floats(part, len(a), call, expected)]
    names = [f"{name}[{i}]" for name in "abc" for i in range(len(a))]
    try:
        assert_grad_close(example_1, a + b + c, expected=yours, seed=v, names=names, yours="expected")
    except AssertionError as error:
        raise AssertionError(f"{call}, the seed v being {v}:\n{error}") from None


@pytest.mark.parametrize("way", WAYS)
def test_example_1_gives_the_documented_gradients(student: Any, way: str) -> None:
    """{way} gives case 1's gradients."""
    check(getattr(student("seeds"), way), [1.0, 2.0, 3.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [0.1, 1.0, 0.0001])


@pytest.mark.parametrize("way", WAYS)
def test_one_element_seeded_with_1_is_example_2s_gradient(student: Any, way: str) -> None:
    """{way} gives case 2's gradient: one element, seeded with 1."""
    check(getattr(student("seeds"), way), [0.1], [1.0], [0.1], [1.0])


@pytest.mark.parametrize("way", WAYS)
@example(numbers=[1.0, 2.0, 3.0, 0.5])
@given(numbers=st.integers(1, 5).flatmap(lambda n: st.lists(st.floats(0.1, 10), min_size=4 * n, max_size=4 * n)))
def test_any_inputs_and_seeds(student: Any, way: str, numbers: list[float]) -> None:
    """{way} gives vjpgrad's gradients for any inputs and seeds."""
    n = len(numbers) // 4
    a, b, c, v = (numbers[k * n : (k + 1) * n] for k in range(4))
    check(getattr(student("seeds"), way), a, b, c, v)
