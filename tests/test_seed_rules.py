"""One set of seed rules, whatever takes the seed: backward, gradients, vjp, explain, to_dot,
vjpgrad.testing and the command line read it the same way and refuse it with the same words."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import vjpgrad
from vjpgrad import Value, Vector
from vjpgrad.testing import assert_grad_close

SEED = [0.1, 1.0, 0.0001]


def example_3() -> tuple[Vector, Vector, Vector, Vector]:
    """The Stack Overflow answer's Example 3: one element each, all zeros."""
    a, b, c = Vector.empty(1), Vector.empty(1), Vector.empty(1)
    return a, b, c, 3 * a + 2 * b * b + vjpgrad.log(c)


def through_backward(seed: Any) -> float:
    a, _, _, y = example_3()
    y.backward(seed)
    return a[0].grad


def through_gradients(seed: Any) -> float:
    a, _, _, y = example_3()
    return vjpgrad.gradients(y, a, seed)[0].data


def through_explain(seed: Any) -> float:
    a, _, _, y = example_3()
    return vjpgrad.explain(y, seed).gradients[a[0]]


def through_to_dot(seed: Any) -> float:
    a, _, _, y = example_3()
    text = vjpgrad.to_dot(y, seed, names={"a": a}, edges="chain")
    return 3.3003 if "= 3.3" in text else float("nan")  # the chain rule's label on a's edge


def through_testing(seed: Any) -> float:
    assert_grad_close(lambda a: Vector([3 * a]), [0.0], expected=[3.3003], seed=seed)
    return 3.3003


def through_vjp(seed: Any) -> float:
    _, vjp_fn = vjpgrad.vjp(lambda a: Vector([3 * a]), 0.0)
    (gradient,) = vjp_fn(seed)
    return float(gradient)


ENTRY_POINTS: list[Callable[[Any], float]] = [
    through_backward,
    through_gradients,
    through_explain,
    through_to_dot,
    through_testing,
]


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__name__)
def test_a_longer_seed_on_a_one_element_output_is_summed_everywhere(entry: Callable[[Any], float]) -> None:
    # the Stack Overflow answer's Example 3: a.grad = 3 x (0.1 + 1.0 + 0.0001) = 3.3003
    assert entry(SEED) == pytest.approx(3.3003, rel=1e-12)


@pytest.mark.parametrize("entry", [*ENTRY_POINTS, through_vjp], ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("seed", "error", "words"),
    [
        ("abc", TypeError, "must be a sequence of numbers"),
        ([1.0, "x"], TypeError, r"\[1\] must be a real number, got str"),
        ([], ValueError, "has length 0 but the output has length 1"),
    ],
)
def test_a_bad_seed_is_refused_with_the_same_words_everywhere(
    entry: Callable[[Any], float], seed: Any, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        entry(seed)


def test_the_command_line_sums_a_longer_seed_too() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "vjpgrad", "3*a + 2*b*b + log(c)", "a=0,", "b=0,", "c=0,", "--seed", "0.1,1,0.0001"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "a.grad = tensor([3.3003])" in result.stdout
    assert "c.grad = tensor([inf])" in result.stdout


def test_no_seed_on_a_longer_output_is_pytorchs_runtime_error_everywhere() -> None:
    a = Vector([1.0, 2.0])
    y = a * 2
    for call in (lambda: y.backward(), lambda: vjpgrad.gradients(y, a), lambda: vjpgrad.explain(y)):
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
            call()
    assert a.grad.tolist() == [0.0, 0.0]  # refused before anything changed
    y.backward([1.0, 1.0])  # and nothing was freed
    assert a.grad.tolist() == [2.0, 2.0]
    _ = Value  # the scalar case: a Value's seed defaults to 1.0
