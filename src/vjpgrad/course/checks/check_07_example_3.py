"""Exercise 7 (example_3.py): a one-element output seeded with several numbers, against vjpgrad.

Case 3 of the Stack Overflow answer to "Pytorch, what are the gradient arguments"
(https://stackoverflow.com/questions/43451125) prints a.grad = [3.3003] = 3 x (0.1 + 1.0 + 0.0001).
vjpgrad's Vector.backward sums a seed longer than a one-element output, as PyTorch's engine does.
"""

from __future__ import annotations

import warnings
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from vjpgrad import SummedSeedWarning, Value, Vector, log
from vjpgrad.course import expect
from vjpgrad.testing import assert_grad_close

SEEDS = [0.1, 1.0, 0.0001]


def one_element(a: Value, b: Value, c: Value) -> Vector:
    """y = 3a + 2b*b + log(c), for a, b, c of one element each."""
    a_, b_, c_ = Vector([a]), Vector([b]), Vector([c])
    return 3 * a_ + 2 * b_ * b_ + log(c_)


def check(example_3: Any, a: float, b: float, c: float, seeds: list[float]) -> None:
    __tracebackhide__ = True
    call = f"example_3({a}, {b}, {c}, {seeds})"
    yours = expect.floats(example_3(a, b, c, list(seeds)), 3, call, "(a.grad, b.grad, c.grad), three numbers")
    try:
        with warnings.catch_warnings():  # the summed seed is this exercise's subject: vjpgrad's warning is not
            warnings.simplefilter("ignore", SummedSeedWarning)
            assert_grad_close(
                one_element, [a, b, c], expected=yours, seed=seeds, names=["a", "b", "c"], yours="expected"
            )
    except AssertionError as error:
        raise AssertionError(f"{call}:\n{error}") from None


def test_the_documented_seeds_give_a_grad_3_3003(student: Any) -> None:
    """Case 3's seeds give a.grad = 3.3003."""
    check(student("example_3").example_3, 0.0, 0.0, 1.0, SEEDS)  # a and b as torch.empty gave them; c = 1, not 0


@example(1.0, 2.0, 3.0, [0.5, -1.0])
@given(
    st.floats(-2, 2),
    st.floats(-2, 2),
    st.floats(0.1, 5),
    st.lists(st.floats(-2, 2, allow_subnormal=False), min_size=1, max_size=5),
)
def test_any_seeds_add_up(student: Any, a: float, b: float, c: float, seeds: list[float]) -> None:
    """Any seeds of a one-element output add up."""
    check(student("example_3").example_3, a, b, c, seeds)
