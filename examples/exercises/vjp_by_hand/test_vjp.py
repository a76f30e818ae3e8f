"""Checks the hand-computed VJP of the Stack Overflow answer's Example 1 against vjpgrad's backward."""

import importlib
import os

from hypothesis import given
from hypothesis import strategies as st

from vjpgrad import Vector, log
from vjpgrad.testing import assert_grad_close

MODULES = {"exercise": "vjp", "solution": "vjp_solution", "wrong": "vjp_wrong"}
vjp_example_1 = importlib.import_module(MODULES[os.environ.get("VJPGRAD_EXERCISE", "solution")]).vjp_example_1


def example_1(*xs):
    """y = 3a + 2b*b + log(c) with a, b, c the three thirds of xs."""
    n = len(xs) // 3
    a, b, c = Vector(xs[:n]), Vector(xs[n : 2 * n]), Vector(xs[2 * n :])
    return 3 * a + 2 * b * b + log(c)


def check(a, b, c, v):
    """Your gradients, computed by hand, against the ones vjpgrad's y.backward(v) gives."""
    by_hand = vjp_example_1(a, b, c, v)
    names = [f"{name}[{i}]" for name, xs in zip("abc", (a, b, c), strict=True) for i in range(len(xs))]
    expected = [g for part in by_hand for g in part]
    assert_grad_close(example_1, a + b + c, expected=expected, seed=v, names=names, yours="expected")


def test_the_documented_case():
    check([1.0, 2.0, 3.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [0.1, 1.0, 0.0001])


def test_a_scalar_seeded_with_one():
    check([0.1], [1.0], [0.1], [1.0])


@given(st.integers(1, 5).flatmap(lambda n: st.lists(st.floats(0.1, 10), min_size=4 * n, max_size=4 * n)))
def test_any_inputs_and_seeds(numbers):
    n = len(numbers) // 4
    a, b, c, v = (numbers[k * n : (k + 1) * n] for k in range(4))
    check(a, b, c, v)
