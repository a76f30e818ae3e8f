"""vjpgrad.optim: PyTorch's update formulas, checked number for number against torch.optim.

Every comparison uses torch's single-tensor code (``foreach=False``), the one our formulas
copy operation for operation. The torch-free arithmetic checks are in test_optim_by_hand.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from vjpgrad import Value
from vjpgrad.optim import SGD, Adam, AdamW, Optimizer

torch = pytest.importorskip("torch")

OURS: dict[str, type[Optimizer]] = {"SGD": SGD, "Adam": Adam, "AdamW": AdamW}


def loss_of(params: list[Any]) -> Any:
    """A small non-quadratic loss written once for Values and tensors."""
    a, b, c = params
    return (a * b - 1) ** 2 + (b + c).sin() * a + c * c * 0.5


def make_pair(kind: str, start: list[float], frozen: list[bool], **settings: Any) -> tuple[Any, Any]:
    """The same optimizer, with the same settings, over the same starting point, in both libraries."""
    ours = [Value(x, requires_grad=not f) for x, f in zip(start, frozen, strict=True)]
    theirs = [torch.tensor(x, dtype=torch.float64, requires_grad=not f) for x, f in zip(start, frozen, strict=True)]
    return OURS[kind](ours, **settings), getattr(torch.optim, kind)(theirs, foreach=False, **settings)


def objective(opt: Any, params: list[Any]) -> Any:
    """The loss, or its negative under ``maximize``: ascending -loss takes the same (stable)
    path as descending loss, through the maximize code."""
    return -loss_of(params) if opt.maximize else loss_of(params)


def one_step(opt: Any, topt: Any) -> None:
    opt.zero_grad()
    objective(opt, opt.params).backward()
    opt.step()
    topt.zero_grad()  # sets grads to None: torch then skips parameters that no pass reached
    objective(opt, topt.param_groups[0]["params"]).backward()
    topt.step()


def params_of(opt: Any, topt: Any) -> tuple[list[float], list[float]]:
    return [p.data for p in opt.params], [t.item() for t in topt.param_groups[0]["params"]]


def run_both(kind: str, start: list[float], steps: int, frozen: list[bool] | None = None, **settings: Any) -> Any:
    opt, topt = make_pair(kind, start, frozen or [False] * len(start), **settings)
    for _ in range(steps):
        one_step(opt, topt)
    return opt, topt


starts = st.lists(st.floats(-2, 2), min_size=3, max_size=3)
# at least one parameter takes part, or there is nothing to differentiate
masks = st.lists(st.booleans(), min_size=3, max_size=3).filter(lambda frozen: not all(frozen))

# The formulas are PyTorch's, operation for operation; only the last bit may differ, because
# PyTorch's CPU kernels compute p + alpha * g (and lerp, addcmul) as one fused multiply-add
# (one rounding) where Python rounds twice, and its CPU sqrt is not always correctly rounded.
# Measured: with both emulated, a reference matches torch bit for bit; as written, about half
# to four fifths of the results are bit-identical and the rest differ by a few units in the
# last place. 11 digits catch any wrong formula (a missing bias correction, a different
# momentum rule) while allowing that: Adam's division by sqrt(v) + eps can magnify a
# last-bit difference over 8 steps where v is tiny (seen: 4e-12 relative).
DIGITS = 1e-11


def assert_same(opt: Any, topt: Any) -> None:
    ours, theirs = params_of(opt, topt)
    assert ours == pytest.approx(theirs, rel=DIGITS, abs=DIGITS)


@given(
    starts,
    st.sampled_from([0.0, 0.9]),
    st.sampled_from([0.0, 0.5]),
    st.booleans(),
    st.sampled_from([0.0, 0.01]),
    st.booleans(),
)
def test_sgd_agrees_with_torch(
    start: list[float], momentum: float, dampening: float, nesterov: bool, weight_decay: float, maximize: bool
) -> None:
    assume(not nesterov or (momentum > 0 and dampening == 0))
    settings = {"momentum": momentum, "dampening": dampening, "nesterov": nesterov}
    opt, topt = run_both("SGD", start, 8, lr=0.05, weight_decay=weight_decay, maximize=maximize, **settings)
    assert_same(opt, topt)


@given(
    starts,
    st.sampled_from(["Adam", "AdamW"]),
    # with beta2 = 0.5 the second moment falls as the gradient shrinks, so amsgrad's maximum matters
    st.sampled_from([(0.9, 0.999), (0.9, 0.5), (0.5, 0.9), (0.0, 0.99)]),
    st.sampled_from([0.0, 0.01, 0.3]),
    st.booleans(),
    st.booleans(),
)
def test_adam_and_adamw_agree_with_torch(
    start: list[float], kind: str, betas: tuple[float, float], weight_decay: float, amsgrad: bool, maximize: bool
) -> None:
    settings = {"betas": betas, "weight_decay": weight_decay, "amsgrad": amsgrad, "maximize": maximize}
    opt, topt = run_both(kind, start, 8, lr=0.05, **settings)
    assert_same(opt, topt)


def test_amsgrad_takes_another_path_and_the_same_as_torchs() -> None:
    """A run where the second moment falls, so that amsgrad's maximum changes the steps."""
    settings = {"lr": 0.1, "betas": (0.9, 0.5)}
    with_max, topt = run_both("Adam", [1.5, -0.5, 2.0], 8, amsgrad=True, **settings)
    without, _ = run_both("Adam", [1.5, -0.5, 2.0], 8, amsgrad=False, **settings)
    assert [p.data for p in with_max.params] != pytest.approx([p.data for p in without.params], abs=0.1)
    assert_same(with_max, topt)


# Settings under which a step would move even a parameter with zero gradient (weight decay,
# momentum), so that skipping a frozen parameter is visible.
MOVING = [
    ("SGD", {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1, "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1}),
]


@pytest.mark.parametrize(("kind", "settings"), MOVING)
@given(start=starts, frozen=masks)
def test_parameters_that_do_not_require_grad_are_skipped_as_torch_does(
    kind: str, settings: dict[str, Any], start: list[float], frozen: list[bool]
) -> None:
    opt, topt = run_both(kind, start, 5, frozen, **settings)
    assert_same(opt, topt)
    for p, x, f in zip(opt.params, start, frozen, strict=True):
        if f:
            assert p.data == x
            assert opt.state_dict()["state"][next(i for i, q in enumerate(opt.params) if q is p)] == {}


@pytest.mark.parametrize(("kind", "settings"), MOVING)
def test_freezing_mid_run_keeps_each_parameters_own_step_count(kind: str, settings: dict[str, Any]) -> None:
    """Adam's bias corrections use each parameter's own step count, as PyTorch's state does."""
    opt, topt = make_pair(kind, [0.7, -1.2, 0.4], [False] * 3, **settings)
    for k in range(9):
        frozen = 3 <= k < 6  # the first parameter sits out three steps in the middle
        opt.params[0].requires_grad = not frozen
        topt.param_groups[0]["params"][0].requires_grad_(not frozen)
        one_step(opt, topt)
        assert_same(opt, topt)
    if kind != "SGD":
        assert [s["step"] for s in opt.state_dict()["state"]] == [6, 9, 9]


@pytest.mark.parametrize(
    ("kind", "settings"),
    [
        ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.25, "weight_decay": 0.01}),
        ("Adam", {"lr": 0.01, "weight_decay": 0.01, "amsgrad": True}),
        ("AdamW", {"lr": 0.01, "betas": (0.8, 0.95), "maximize": True}),
    ],
)
def test_state_dict_holds_what_torchs_holds(kind: str, settings: dict[str, Any]) -> None:
    opt, topt = run_both(kind, [0.3, 1.1, -0.6], 4, **settings)
    ours, theirs = opt.state_dict(), topt.state_dict()
    assert ours["optimizer"] == kind
    group = theirs["param_groups"][0]
    for name, value in ours["hyperparameters"].items():
        assert value == group[name], name
    for i, state in enumerate(ours["state"]):
        torch_state = {k: v.item() for k, v in theirs["state"][i].items()}
        assert state.keys() == torch_state.keys()
        assert state == pytest.approx(torch_state, rel=DIGITS, abs=DIGITS)


@given(start=starts)
def test_loading_a_saved_state_continues_like_torch_without_a_break(start: list[float]) -> None:
    """Save after three steps, rebuild parameters and optimizer, load, continue: the result is
    torch's uninterrupted run (and bit for bit our own uninterrupted run)."""
    settings = {"lr": 0.02, "weight_decay": 0.05, "amsgrad": True}
    straight, topt = run_both("AdamW", start, 6, **settings)
    first, _ = run_both("AdamW", start, 3, **settings)
    saved = first.state_dict()
    params = [Value(p.data) for p in first.params]
    resumed = AdamW(params, lr=0.5)  # the saved hyperparameters replace these
    resumed.load_state_dict(saved)
    for _ in range(3):
        resumed.zero_grad()
        loss_of(params).backward()
        resumed.step()
    assert [p.data for p in params] == [p.data for p in straight.params]
    assert_same(resumed, topt)


NESTEROV = "Nesterov momentum requires a momentum and zero dampening"


@pytest.mark.parametrize(
    ("kind", "settings"),
    [
        ("SGD", {"lr": -0.1}),
        ("SGD", {"lr": 0.1, "momentum": -1.0}),
        ("SGD", {"lr": 0.1, "weight_decay": -0.01}),
        ("SGD", {"lr": 0.1, "nesterov": True}),
        ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": True}),
        ("Adam", {"lr": -1e-3}),
        ("Adam", {"eps": -1e-8}),
        ("Adam", {"betas": (1.0, 0.9)}),
        ("Adam", {"betas": (0.9, -0.5)}),
        ("Adam", {"weight_decay": -0.1}),
        ("AdamW", {"weight_decay": -0.1}),
        ("AdamW", {"betas": (0.9, 1.5)}),
    ],
)
def test_refusals_match_torchs(kind: str, settings: dict[str, Any]) -> None:
    """Torch's ValueError message starts ours (ours may add the allowed range)."""
    with pytest.raises(ValueError, match=r"^(Invalid|Nesterov)") as theirs:
        getattr(torch.optim, kind)([torch.zeros((), requires_grad=True)], **settings)
    with pytest.raises(ValueError, match="^" + re.escape(str(theirs.value))):
        OURS[kind]([Value(1.0)], **settings)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: SGD([], lr=0.1), ValueError, "empty parameter list"),
        (lambda: SGD([Value(1.0)], lr=-0.1), ValueError, "Invalid learning rate: -0.1"),
        (lambda: SGD([Value(1.0)], lr="fast"), TypeError, "learning rate must be a number, got str"),
        (lambda: SGD([1.0], lr=0.1), TypeError, r"params\[0\] must be a Value, got float"),
        (lambda: SGD(Value(1.0), lr=0.1), TypeError, "params must be an iterable of Values, got Value"),
        (lambda: SGD([Value(1.0)], lr=0.1, momentum=-1), ValueError, "Invalid momentum value"),
        (lambda: SGD([Value(1.0)], lr=0.1, dampening=float("nan")), ValueError, "Invalid dampening value: nan"),
        (lambda: SGD([Value(1.0)], lr=0.1, nesterov=1), TypeError, "nesterov must be a bool, got int"),
        (lambda: SGD([Value(1.0)], lr=0.1, maximize="yes"), TypeError, "maximize must be a bool, got str"),
        (lambda: SGD([Value(1.0)], 0.1, 0.9, 0.01), TypeError, "positional"),
        (lambda: Adam([Value(1.0)], betas=(1.0, 0.9)), ValueError, "Invalid beta parameter at index 0"),
        (lambda: Adam([Value(1.0)], betas=(0.9,)), TypeError, "betas must be a pair"),
        (lambda: Adam([Value(1.0)], eps=-1e-8), ValueError, "Invalid epsilon value"),
        (lambda: Adam([Value(1.0)], amsgrad=None), TypeError, "amsgrad must be a bool, got NoneType"),
        (lambda: AdamW([Value(1.0)], weight_decay="1e-2"), TypeError, "weight_decay value must be a number"),
    ],
)
def test_bad_settings_are_refused(make: Callable[[], Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make()
