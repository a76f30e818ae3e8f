"""vjpgrad.optim without torch: each update worked out by hand from the published formulas.

Gradients are set directly on ``.grad`` so every number is in view. Most numbers are dyadic
(0.25, 0.5, 3.0...), so the arithmetic is exact and the tests compare with ``==``; where a
square root enters, the expected value is the formula written out, compared to 15 digits,
together with a rough figure that a dropped term would miss by far.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from vjpgrad import Value
from vjpgrad.optim import SGD, Adam, AdamW, Optimizer


def steps(opt: Optimizer, *grads: float | list[float]) -> list[float]:
    """Set the grads (one number per parameter, or one for all) and step, once per entry;
    return the parameters' data after each step (of the first parameter when there is one)."""
    trace = []
    for g in grads:
        for p, gi in zip(opt.params, g if isinstance(g, list) else [g] * len(opt.params), strict=True):
            p.grad = gi
        opt.step()
        trace.append(opt.params[0].data)
    return trace


# ---- SGD -------------------------------------------------------------------------------------


def test_sgd_steps_against_the_gradient() -> None:
    p = Value(1.0)
    assert steps(SGD([p], lr=0.25), 2.0, -4.0) == [1.0 - 0.25 * 2.0, 0.5 - 0.25 * -4.0]  # 0.5, 1.5


def test_sgd_momentum_keeps_its_buffer_across_steps() -> None:
    p = Value(1.0)
    opt = SGD([p], lr=0.25, momentum=0.5)
    # buf1 = g1 = 2, buf2 = 0.5 * 2 + 4 = 5, buf3 = 0.5 * 5 + 0 = 2.5
    assert steps(opt, 2.0, 4.0, 0.0) == [1.0 - 0.25 * 2.0, 0.5 - 0.25 * 5.0, -0.75 - 0.25 * 2.5]
    assert opt.state_dict()["state"] == [{"momentum_buffer": 2.5}]


def test_sgd_momentum_buffers_are_per_parameter() -> None:
    a, b = Value(0.0), Value(0.0)
    opt = SGD([a, b], lr=1.0, momentum=0.5)
    steps(opt, [1.0, 2.0], [0.0, 0.0])
    # a: buf = 1 then 0.5; b: buf = 2 then 1
    assert (a.data, b.data) == (0.0 - 1.0 - 0.5, 0.0 - 2.0 - 1.0)


def test_sgd_weight_decay_pulls_towards_zero() -> None:
    up, down, idle = Value(2.0), Value(-2.0), Value(2.0)
    opt = SGD([up, down, idle], lr=0.25, weight_decay=0.5)
    steps(opt, [1.0, 1.0, 0.0])
    assert up.data == 2.0 - 0.25 * (1.0 + 0.5 * 2.0)  # 1.5
    assert down.data == -2.0 - 0.25 * (1.0 + 0.5 * -2.0)  # -2.0: the decay cancels the gradient
    assert idle.data == 2.0 - 0.25 * (0.0 + 0.5 * 2.0)  # 1.75: decay alone shrinks it


def test_sgd_dampening_scales_the_new_gradient_from_the_second_step_on() -> None:
    p = Value(1.0)
    opt = SGD([p], lr=0.25, momentum=0.5, dampening=0.5)
    # buf1 = g1 = 2 (undamped, as PyTorch), buf2 = 0.5 * 2 + (1 - 0.5) * 4 = 3
    assert steps(opt, 2.0, 4.0) == [1.0 - 0.25 * 2.0, 0.5 - 0.25 * 3.0]


def test_sgd_nesterov_looks_ahead_along_the_buffer() -> None:
    p = Value(1.0)
    opt = SGD([p], lr=0.25, momentum=0.5, nesterov=True)
    # buf1 = 2, step g1 + 0.5 * buf1 = 3; buf2 = 0.5 * 2 + 4 = 5, step 4 + 0.5 * 5 = 6.5
    assert steps(opt, 2.0, 4.0) == [1.0 - 0.25 * 3.0, 0.25 - 0.25 * 6.5]
    assert opt.state_dict()["state"] == [{"momentum_buffer": 5.0}]


def test_sgd_maximize_climbs_and_negates_the_gradient_before_weight_decay() -> None:
    p, q = Value(1.0), Value(1.0)
    steps(SGD([p], lr=0.25, maximize=True), 2.0)
    assert p.data == 1.0 + 0.25 * 2.0
    steps(SGD([q], lr=0.25, weight_decay=0.5, maximize=True), 2.0)
    assert q.data == 1.0 - 0.25 * (-2.0 + 0.5 * 1.0)  # 1.375; decay still pulls towards 0


def test_sgd_maximize_on_minus_f_is_minimize_on_f() -> None:
    x, y = Value(0.5), Value(0.5)
    up = SGD([x], lr=0.1, momentum=0.9, weight_decay=0.01, maximize=True)
    down = SGD([y], lr=0.1, momentum=0.9, weight_decay=0.01)
    for _ in range(3):
        up.zero_grad()
        (-(x * x - x.sin())).backward()
        up.step()
        down.zero_grad()
        (y * y - y.sin()).backward()
        down.step()
    assert x.data == y.data
    assert x.data != 0.5


def test_sgd_takes_params_lr_and_momentum_by_position() -> None:
    p = Value(1.0)
    opt = SGD([p], 0.25, 0.5)
    assert (opt.lr, opt.momentum) == (0.25, 0.5)


# ---- Adam and AdamW --------------------------------------------------------------------------


def adam_update(m: float, v: float, t: int, lr: float, b1: float, b2: float, eps: float) -> float:
    """The amount Adam subtracts, written as in the paper with PyTorch's eps placement:
    lr * m_hat / (sqrt(v_hat) + eps), m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t)."""
    return lr * (m / (1 - b1**t)) / (math.sqrt(v) / math.sqrt(1 - b2**t) + eps)


DIGITS = 1e-15


def test_adam_first_step_moves_by_about_lr_whatever_the_gradient() -> None:
    p, q = Value(1.0), Value(1.0)
    steps(Adam([p], lr=0.1), 3.0)
    steps(Adam([q], lr=0.1), -0.002)
    m, v = (1 - 0.9) * 3.0, (1 - 0.999) * 3.0**2
    assert p.data == pytest.approx(1.0 - adam_update(m, v, 1, 0.1, 0.9, 0.999, 1e-8), rel=DIGITS)
    # both bias corrections make m_hat = g and v_hat = g^2: the step is lr * sign(g), less eps's share
    assert p.data == pytest.approx(0.9, abs=1e-8)  # without 1 - b1^t: 0.99; without 1 - b2^t: -2.16
    assert q.data == pytest.approx(1.1, abs=1e-5)


def test_adam_second_step() -> None:
    p = Value(1.0)
    opt = Adam([p], lr=0.1, betas=(0.5, 0.75), eps=1e-8)
    trace = steps(opt, 3.0, 1.0)
    m1, v1 = 0.5 * 3.0, 0.25 * 3.0**2  # 1.5, 2.25
    m2, v2 = 0.5 * m1 + 0.5 * 1.0, 0.75 * v1 + 0.25 * 1.0**2  # 1.25, 1.9375
    p1 = 1.0 - adam_update(m1, v1, 1, 0.1, 0.5, 0.75, 1e-8)
    assert trace == pytest.approx([p1, p1 - adam_update(m2, v2, 2, 0.1, 0.5, 0.75, 1e-8)], rel=DIGITS)
    assert trace[1] == pytest.approx(0.9 - 0.1 * (1.25 / 0.75) / math.sqrt(1.9375 / 0.4375), abs=1e-8)  # 0.8208
    assert opt.state_dict()["state"] == [{"step": 2, "exp_avg": 1.25, "exp_avg_sq": 1.9375}]


def test_adam_weight_decay_enters_the_gradient_and_maximize_negates_first() -> None:
    p, q = Value(2.0), Value(2.0)
    steps(Adam([p], lr=0.1, betas=(0.5, 0.75), weight_decay=0.5), 1.0, 1.0)
    g = 1.0 + 0.5 * 2.0  # 2 at the first step
    m1, v1 = 0.5 * g, 0.25 * g**2
    p1 = 2.0 - adam_update(m1, v1, 1, 0.1, 0.5, 0.75, 1e-8)
    g2 = 1.0 + 0.5 * p1
    p2 = p1 - adam_update(0.5 * m1 + 0.5 * g2, 0.75 * v1 + 0.25 * g2**2, 2, 0.1, 0.5, 0.75, 1e-8)
    assert p.data == pytest.approx(p2, rel=DIGITS)
    # maximize: g = -4 + 0.5 * 2 = -3, so the first step climbs by about lr
    steps(Adam([q], lr=0.1, weight_decay=0.5, maximize=True), 4.0)
    assert q.data == pytest.approx(2.1, abs=1e-8)


def test_amsgrad_divides_by_the_largest_second_moment_so_far() -> None:
    p, q = Value(1.0), Value(1.0)
    settings: dict[str, Any] = {"lr": 0.1, "betas": (0.5, 0.5), "eps": 1e-8}
    with_max = Adam([p], amsgrad=True, **settings)
    trace = steps(with_max, 4.0, 0.0)
    plain = steps(Adam([q], **settings), 4.0, 0.0)
    # v1 = 0.5 * 16 = 8, v2 = 0.5 * 8 = 4 < 8: amsgrad keeps 8; m2 = 0.5 * 0.5 * 4 = 1
    p1 = 1.0 - adam_update(2.0, 8.0, 1, 0.1, 0.5, 0.5, 1e-8)
    assert trace == pytest.approx([p1, p1 - adam_update(1.0, 8.0, 2, 0.1, 0.5, 0.5, 1e-8)], rel=DIGITS)
    assert plain[1] == pytest.approx(p1 - adam_update(1.0, 4.0, 2, 0.1, 0.5, 0.5, 1e-8), rel=DIGITS)
    assert trace[1] - plain[1] > 0.01  # a smaller step than plain Adam's
    assert with_max.state_dict()["state"][0]["max_exp_avg_sq"] == 8.0


def test_adamw_scales_the_parameter_before_the_adam_step() -> None:
    p, q = Value(2.0), Value(2.0)
    steps(AdamW([p], lr=0.1, weight_decay=0.5), 3.0)
    update = adam_update((1 - 0.9) * 3.0, (1 - 0.999) * 9.0, 1, 0.1, 0.9, 0.999, 1e-8)
    assert p.data == pytest.approx(2.0 * (1 - 0.1 * 0.5) - update, rel=DIGITS)
    # about 1.9 - 0.1; decaying after the step would give (2 - 0.1) * 0.95 = 1.805, coupled decay 1.9
    assert p.data == pytest.approx(1.8, abs=1e-8)
    steps(AdamW([q], lr=0.1, weight_decay=0.5), 0.0)
    assert q.data == 2.0 * (1 - 0.1 * 0.5)  # no gradient, no Adam step: only the decay


def test_adamw_default_weight_decay_is_one_hundredth() -> None:
    assert AdamW([Value(1.0)]).weight_decay == 0.01
    assert Adam([Value(1.0)]).weight_decay == 0.0


# ---- frozen parameters -----------------------------------------------------------------------

EVERY_KIND: list[Callable[[list[Value]], Optimizer]] = [
    lambda ps: SGD(ps, lr=0.25, momentum=0.5, weight_decay=0.5),
    lambda ps: SGD(ps, lr=0.25, momentum=0.5, nesterov=True, maximize=True),
    lambda ps: Adam(ps, lr=0.1, weight_decay=0.5, amsgrad=True),
    lambda ps: AdamW(ps, lr=0.1, weight_decay=0.5),
]


@pytest.mark.parametrize("make", EVERY_KIND)
def test_a_parameter_that_does_not_require_grad_is_not_moved_at_all(make: Callable[[list[Value]], Optimizer]) -> None:
    frozen, live = Value(2.0, requires_grad=False), Value(2.0)
    opt = make([frozen, live])
    steps(opt, 3.0, 3.0)  # a grad is set even on the frozen one: it must still be left alone
    assert frozen.data == 2.0
    assert live.data != 2.0
    assert opt.state_dict()["state"][0] == {}


def test_adam_counts_steps_per_parameter() -> None:
    """A parameter frozen for one step has taken one step fewer: its bias corrections say so."""
    a, b = Value(1.0), Value(1.0)
    opt = Adam([a, b], lr=0.1, betas=(0.5, 0.75))
    steps(opt, 3.0)
    a.requires_grad = False
    steps(opt, 1.0)
    a.requires_grad = True
    steps(opt, 1.0)
    assert [s["step"] for s in opt.state_dict()["state"]] == [2, 3]
    alone = Value(1.0)
    steps(Adam([alone], lr=0.1, betas=(0.5, 0.75)), 3.0, 1.0)
    assert a.data == alone.data


# ---- saving and loading ----------------------------------------------------------------------

SAVABLE: list[Callable[[list[Value]], Optimizer]] = [
    lambda ps: SGD(ps, lr=0.25, momentum=0.5, dampening=0.25, weight_decay=0.125),
    lambda ps: Adam(ps, lr=0.1, betas=(0.5, 0.75), weight_decay=0.5, amsgrad=True),
    lambda ps: AdamW(ps, lr=0.1, maximize=True),
]
GRADS = [[3.0, -1.0], [0.5, 2.0], [-1.5, 0.25], [1.0, 1.0], [0.0, -2.0]]


@pytest.mark.parametrize("make", SAVABLE)
@pytest.mark.parametrize("through", [json, pickle, copy])
def test_saved_and_loaded_runs_continue_bit_for_bit(make: Callable[[list[Value]], Optimizer], through: Any) -> None:
    straight = make([Value(1.0), Value(-0.5)])
    steps(straight, *GRADS)
    first = make([Value(1.0), Value(-0.5)])
    steps(first, *GRADS[:2])
    saved = first.state_dict()
    saved = copy.deepcopy(saved) if through is copy else through.loads(through.dumps(saved))
    resumed = make([Value(p.data) for p in first.params])
    resumed.lr = 7.0  # the saved hyperparameters replace this
    resumed.load_state_dict(saved)
    assert resumed.state_dict() == first.state_dict()
    steps(resumed, *GRADS[2:])
    assert [p.data for p in resumed.params] == [p.data for p in straight.params]


def test_state_dict_is_plain_data_and_a_snapshot() -> None:
    p = Value(1.0)
    opt = SGD([p], lr=0.25, momentum=0.5)
    assert opt.state_dict() == {
        "optimizer": "SGD",
        "hyperparameters": {
            "lr": 0.25,
            "momentum": 0.5,
            "dampening": 0.0,
            "weight_decay": 0.0,
            "nesterov": False,
            "maximize": False,
        },
        "state": [{}],
    }
    steps(opt, 2.0)
    saved = opt.state_dict()
    saved["state"][0]["momentum_buffer"] = 100.0
    saved["hyperparameters"]["lr"] = 100.0
    assert opt.state_dict()["state"] == [{"momentum_buffer": 2.0}]
    assert opt.lr == 0.25


def adam_saved() -> dict[str, Any]:
    opt = Adam([Value(1.0), Value(2.0)], amsgrad=True)
    steps(opt, 1.0)
    return opt.state_dict()


def without(d: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != key}


BAD_LOADS: list[tuple[Callable[[dict[str, Any]], Any], type[Exception], str]] = [
    (lambda d: [d], TypeError, "state_dict must be a dict, got list"),
    (lambda d: {**d, "optimizer": "SGD"}, ValueError, "from optimizer 'SGD', not 'Adam'"),
    (lambda d: {**d, "optimizer": "AdamW"}, ValueError, "from optimizer 'AdamW', not 'Adam'"),
    (lambda d: without(d, "state"), ValueError, "state_dict is missing 'state'"),
    (lambda d: {**d, "extra": 1}, ValueError, "unknown key.*'extra'"),
    (lambda d: {**d, "state": d["state"][:1]}, ValueError, "state for 1 parameter.*this optimizer has 2"),
    (lambda d: {**d, "state": {0: {}}}, TypeError, r"state_dict\['state'\] must be a list, got dict"),
    (lambda d: {**d, "hyperparameters": without(d["hyperparameters"], "eps")}, ValueError, "missing 'eps'"),
    (lambda d: {**d, "hyperparameters": {**d["hyperparameters"], "lr": -1.0}}, ValueError, "Invalid learning rate"),
    (
        lambda d: {**d, "hyperparameters": {**d["hyperparameters"], "amsgrad": "no"}},
        TypeError,
        "amsgrad must be a bool",
    ),
    (lambda d: {**d, "state": [d["state"][0], without(d["state"][1], "exp_avg")]}, ValueError, "missing 'exp_avg'"),
    (
        lambda d: {**d, "state": [d["state"][0], without(d["state"][1], "max_exp_avg_sq")]},
        ValueError,
        r"\[1\] is missing 'max_exp_avg_sq'",
    ),
    (lambda d: {**d, "state": [d["state"][0], {**d["state"][1], "step": 1.5}]}, TypeError, "step'] must be an int"),
    (lambda d: {**d, "state": [d["state"][0], {**d["state"][1], "step": 0}]}, ValueError, "step'\\]: 0"),
    (lambda d: {**d, "state": [d["state"][0], {**d["state"][1], "exp_avg_sq": -1.0}]}, ValueError, "exp_avg_sq'\\]"),
    (lambda d: {**d, "state": [d["state"][0], {**d["state"][1], "exp_avg": "0"}]}, TypeError, "must be a number"),
    (lambda d: {**d, "state": [d["state"][0], None]}, TypeError, r"\['state'\]\[1\] must be a dict, got NoneType"),
]


@pytest.mark.parametrize(("spoil", "error", "message"), BAD_LOADS)
def test_a_bad_state_dict_is_refused_before_anything_changes(
    spoil: Callable[[dict[str, Any]], Any], error: type[Exception], message: str
) -> None:
    opt = Adam([Value(1.0), Value(2.0)], lr=0.5)
    before = opt.state_dict()
    bad = spoil({**adam_saved(), "hyperparameters": {**adam_saved()["hyperparameters"], "lr": 0.25}})
    with pytest.raises(error, match=message):
        opt.load_state_dict(bad)
    assert opt.state_dict() == before


def test_sgd_state_must_be_a_momentum_buffer() -> None:
    opt = SGD([Value(1.0)], lr=0.1, momentum=0.9)
    saved = opt.state_dict()
    with pytest.raises(ValueError, match=r"unknown key.*'exp_avg'"):
        opt.load_state_dict({**saved, "state": [{"exp_avg": 1.0}]})
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        opt.load_state_dict(
            {**saved, "hyperparameters": {**saved["hyperparameters"], "momentum": 0.0, "nesterov": True}}
        )
    assert opt.momentum == 0.9


# ---- zero_grad -------------------------------------------------------------------------------


@pytest.mark.parametrize("make", EVERY_KIND)
def test_zero_grad_clears_every_grad(make: Callable[[list[Value]], Optimizer]) -> None:
    a, b = Value(1.5), Value(-2.0, requires_grad=False)
    (a * a * 3).backward()
    b.grad = 4.0
    opt = make([a, b])
    opt.zero_grad()
    assert (a.grad, b.grad) == (0.0, 0.0)
    (a * 2).backward()
    assert a.grad == 2.0  # a fresh gradient, not 9 + 2
