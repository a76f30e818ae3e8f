"""vjpgrad.optim: PyTorch's update formulas, checked number for number against torch.optim."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vjpgrad import Value
from vjpgrad.optim import SGD, Adam

torch = pytest.importorskip("torch")


def loss_of(params: list[Any]) -> Any:
    """A small non-quadratic loss written once for Values and tensors."""
    a, b, c = params
    return (a * b - 1) ** 2 + (b + c).sin() * a + c * c * 0.5


def run_both(
    make_ours: Callable[[list[Value]], Any], make_theirs: Callable[[list[Any]], Any], start: list[float], steps: int
) -> tuple[list[float], list[float]]:
    ours = [Value(x) for x in start]
    theirs = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in start]
    opt, topt = make_ours(ours), make_theirs(theirs)
    for _ in range(steps):
        opt.zero_grad()
        loss_of(ours).backward()
        opt.step()
        topt.zero_grad()
        loss_of(theirs).backward()
        topt.step()
    return [p.data for p in ours], [t.item() for t in theirs]


starts = st.lists(st.floats(-2, 2), min_size=3, max_size=3)

# The formulas are PyTorch's, operation for operation; only the last bit may differ, because
# PyTorch's CPU kernels compute p + alpha * g as one fused multiply-add (one rounding) where
# Python rounds twice. 13 digits catch any wrong formula (a missing bias correction, a
# different momentum rule) while allowing that.
DIGITS = 1e-13


@given(starts, st.sampled_from([0.0, 0.9]), st.sampled_from([0.0, 0.01]))
def test_sgd_agrees_with_torch(start: list[float], momentum: float, weight_decay: float) -> None:
    ours, theirs = run_both(
        lambda p: SGD(p, lr=0.05, momentum=momentum, weight_decay=weight_decay),
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=momentum, weight_decay=weight_decay),
        start,
        8,
    )
    assert ours == pytest.approx(theirs, rel=DIGITS, abs=DIGITS)


@given(starts, st.sampled_from([(0.9, 0.999), (0.5, 0.9), (0.0, 0.99)]), st.sampled_from([0.0, 0.01]))
def test_adam_agrees_with_torch(start: list[float], betas: tuple[float, float], weight_decay: float) -> None:
    ours, theirs = run_both(
        lambda p: Adam(p, lr=0.01, betas=betas, weight_decay=weight_decay),
        lambda p: torch.optim.Adam(p, lr=0.01, betas=betas, weight_decay=weight_decay),
        start,
        8,
    )
    assert ours == pytest.approx(theirs, rel=DIGITS, abs=DIGITS)


def test_one_sgd_step_is_exactly_p_minus_lr_times_grad() -> None:
    p = Value(1.0)
    (p * 3).backward()
    SGD([p], lr=0.1).step()
    assert p.data == 1.0 - 0.1 * 3.0


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: SGD([], lr=0.1), ValueError, "empty parameter list"),
        (lambda: SGD([Value(1.0)], lr=-0.1), ValueError, "Invalid learning rate: -0.1"),
        (lambda: SGD([Value(1.0)], lr="fast"), TypeError, "learning rate must be a number, got str"),
        (lambda: SGD([1.0], lr=0.1), TypeError, r"params\[0\] must be a Value, got float"),
        (lambda: SGD(Value(1.0), lr=0.1), TypeError, "params must be an iterable of Values, got Value"),
        (lambda: SGD([Value(1.0)], lr=0.1, momentum=-1), ValueError, "Invalid momentum value"),
        (lambda: Adam([Value(1.0)], betas=(1.0, 0.9)), ValueError, "Invalid beta parameter at index 0"),
        (lambda: Adam([Value(1.0)], betas=(0.9,)), TypeError, "betas must be a pair"),
        (lambda: Adam([Value(1.0)], eps=-1e-8), ValueError, "Invalid epsilon value"),
    ],
)
def test_bad_settings_are_refused(make: Callable[[], Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make()
