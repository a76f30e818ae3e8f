"""vjpgrad.optim: PyTorch's SGD, Adam and AdamW. Each update worked out by hand from the published
formulas, every refusal's whole message, the defaults and the update paths that only edge settings
reach (weight decay or momentum of exactly 1, a negative dampening, both forms of torch's lerp,
amsgrad switched on mid-run, partial saved state); and, when PyTorch is installed, number for number
against torch.optim.

By hand: gradients are set directly on ``.grad`` so every number is in view. Most numbers are dyadic
(0.25, 0.5, 3.0...), so the arithmetic is exact and the tests compare with ``==``; where a square root
enters, the expected value is the formula written out, compared to 15 digits, together with a rough
figure that a dropped term would miss by far. The messages are the contract's "clear error that names
what was wrong": each names the setting or the state entry and the value or type received.

Against torch: every comparison uses torch's single-tensor code (``foreach=False``), the one our
formulas copy operation for operation.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

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


# ---- SGD -----------------------------------------------------------------------------------------


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


def test_sgd_accepts_a_negative_dampening_as_pytorch_does() -> None:
    # momentum 0.5, dampening -0.5, lr 0.25, gradient 1 at each step:
    # step 1: buf = 1, p = 1 - 0.25 = 0.75; step 2: buf = 0.5 * 1 + 1.5 * 1 = 2, p = 0.75 - 0.5 = 0.25
    p = Value(1.0)
    opt = SGD([p], lr=0.25, momentum=0.5, dampening=-0.5)
    for expected in (0.75, 0.25):
        p.grad = 1.0
        opt.step()
        assert p.data == expected


def test_sgd_with_a_weight_decay_of_exactly_one() -> None:
    # g = 0.5 + 1 * 2 = 2.5, p = 2 - 0.1 * 2.5 = 1.75
    p = Value(2.0)
    p.grad = 0.5
    SGD([p], lr=0.1, weight_decay=1.0).step()
    assert p.data == 1.75


def test_sgd_with_a_momentum_of_exactly_one() -> None:
    # step 1: buf = 1, p = 1 - 0.25 = 0.75; step 2: buf = 1 * 1 + 1 * 1 = 2, p = 0.75 - 0.5 = 0.25
    p = Value(1.0)
    opt = SGD([p], lr=0.25, momentum=1.0)
    for expected in (0.75, 0.25):
        p.grad = 1.0
        opt.step()
        assert p.data == expected
    assert opt.state_dict()["state"] == [{"momentum_buffer": 2.0}]


# ---- Adam and AdamW ------------------------------------------------------------------------------


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


def test_adam_with_a_weight_decay_of_exactly_one_puts_it_into_the_moments() -> None:
    # g = 0.5 + 1 * 1 = 1.5: m = 0.1 * 1.5, v = 0.001 * 1.5 * 1.5
    p = Value(1.0)
    p.grad = 0.5
    opt = Adam([p], lr=0.1, weight_decay=1.0)
    opt.step()
    state = opt.state_dict()["state"][0]
    assert state["exp_avg"] == (1 - 0.9) * 1.5
    assert state["exp_avg_sq"] == (1 - 0.999) * 1.5 * 1.5


def torch_lerp(start: float, end: float, weight: float) -> float:
    """torch.lerp on the CPU, as ATen writes it: two forms, chosen by the size of the weight."""
    if abs(weight) < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (1 - weight)


def other_lerp(start: float, end: float, weight: float) -> float:
    if abs(weight) < 0.5:
        return end - (end - start) * (1 - weight)
    return start + weight * (end - start)


@pytest.mark.parametrize("beta1", [0.9, 0.5, 0.25])
def test_adams_first_moment_is_torchs_lerp_in_the_form_torch_picks_for_the_weight(beta1: float) -> None:
    weight = 1 - beta1
    grads = [(0.1 * k + 0.37, -0.3 * k + 1.1) for k in range(1, 200)]
    # inputs where the two forms of lerp round differently at the second step, so the test
    # sees which form was used
    telling = [
        (g1, g2)
        for g1, g2 in grads
        if torch_lerp(torch_lerp(0.0, g1, weight), g2, weight) != other_lerp(other_lerp(0.0, g1, weight), g2, weight)
    ]
    assert len(telling) >= 3, "the two forms agree on every input: pick others"
    for g1, g2 in telling[:3]:
        p = Value(1.0)
        opt = Adam([p], lr=0.01, betas=(beta1, 0.999))
        p.grad = g1
        opt.step()
        assert opt.state_dict()["state"][0]["exp_avg"] == torch_lerp(0.0, g1, weight)
        p.grad = g2
        opt.step()
        assert opt.state_dict()["state"][0]["exp_avg"] == torch_lerp(torch_lerp(0.0, g1, weight), g2, weight)


def test_amsgrad_starts_its_maximum_at_zero() -> None:
    # a small gradient: v = 0.001 * 0.01 = 1e-5 after one step, and the maximum is v itself
    p = Value(1.0)
    p.grad = 0.1
    opt = Adam([p], lr=0.1, amsgrad=True)
    opt.step()
    state = opt.state_dict()["state"][0]
    assert state["max_exp_avg_sq"] == state["exp_avg_sq"] == (1 - 0.999) * 0.1 * 0.1


def test_amsgrad_switched_on_after_the_first_step_starts_from_zero() -> None:
    plain, switched = Value(1.0), Value(1.0)
    opt_plain, opt_switched = Adam([plain], lr=0.1), Adam([switched], lr=0.1)
    for grad in (0.2, 0.1):
        plain.grad = switched.grad = grad
        opt_plain.step()
        opt_switched.step()
        opt_switched.amsgrad = True  # as torch's param_groups[0]["amsgrad"] = True
    # v grew from step 1 to step 2, so the maximum of (0, v) is v: the same step as without amsgrad
    assert switched.data == plain.data
    assert opt_switched.state_dict()["state"][0]["max_exp_avg_sq"] == opt_plain.state_dict()["state"][0]["exp_avg_sq"]


def test_amsgrad_switched_on_before_a_step_saves_a_state_that_loads() -> None:
    # the maximum a step would start from (0) is in the state: the dict loads into amsgrad Adam
    q = Value(1.0)
    opt = Adam([q], lr=0.1)
    q.grad = 0.1
    opt.step()
    opt.amsgrad = True
    saved = opt.state_dict()
    assert saved["state"][0]["max_exp_avg_sq"] == 0.0
    other = Value(q.data)
    loaded = Adam([other], lr=0.1, amsgrad=True)
    loaded.load_state_dict(saved)
    q.grad = other.grad = 0.05
    opt.step()
    loaded.step()
    assert other.data == q.data


@pytest.mark.parametrize("kind", [Adam, AdamW])
def test_adam_with_no_epsilon_and_no_gradient_divides_as_ieee_does(kind: type[Adam]) -> None:
    # 0 / 0 in the step: torch.optim gives the parameter nan, not an exception
    p = Value(1.0)
    opt = kind([p], lr=0.1, eps=0.0)
    p.grad = 0.0
    opt.step()
    assert math.isnan(p.data)


def test_amsgrad_keeps_the_largest_second_moment_so_far() -> None:
    p = Value(1.0)
    opt = Adam([p], lr=0.1, amsgrad=True)
    p.grad = 3.0
    opt.step()
    largest = opt.state_dict()["state"][0]["exp_avg_sq"]
    p.grad = 0.0
    opt.step()
    state = opt.state_dict()["state"][0]
    assert state["exp_avg_sq"] == largest * 0.999 < largest
    assert state["max_exp_avg_sq"] == largest


# ---- every optimizer: parameters, defaults, zero_grad --------------------------------------------


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


@pytest.mark.parametrize("optimizer", [SGD, Adam, AdamW])
def test_optimizers_skip_a_parameter_whose_grad_is_none(optimizer: type) -> None:
    kwargs = {"momentum": 0.9, "weight_decay": 0.1} if optimizer is SGD else {"weight_decay": 0.1}
    a, b = Value(1.0), Value(2.0)
    step = optimizer([a, b], lr=0.1, **kwargs)
    (a * b).backward()
    b.grad = None
    step.step()
    assert b.data == 2.0
    assert b.grad is None
    assert a.data != 1.0
    assert "momentum_buffer" not in step.state_dict()["state"][1]


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


def test_any_iterable_of_values_is_a_parameter_list() -> None:
    a, b = Value(1.0), Value(2.0)
    assert SGD((p for p in (a, b)), lr=0.1).params == [a, b]
    assert Adam({a: 0}).params == [a]


def test_the_defaults_are_pytorchs() -> None:
    adam = Adam(one())
    assert (adam.lr, adam.betas, adam.eps, adam.weight_decay, adam.amsgrad, adam.maximize) == (
        1e-3,
        (0.9, 0.999),
        1e-8,
        0.0,
        False,
        False,
    )
    adamw = AdamW(one())
    assert (adamw.lr, adamw.betas, adamw.eps, adamw.weight_decay, adamw.amsgrad, adamw.maximize) == (
        1e-3,
        (0.9, 0.999),
        1e-8,
        1e-2,
        False,
        False,
    )
    sgd = SGD(one(), 0.5)
    assert (sgd.lr, sgd.momentum, sgd.dampening, sgd.weight_decay, sgd.nesterov, sgd.maximize) == (
        0.5,
        0.0,
        0.0,
        0.0,
        False,
        False,
    )


def test_adamw_passes_every_setting_on() -> None:
    opt = AdamW(one(), 0.5, (0.5, 0.75), 1e-6, 0.25, True, maximize=True)
    assert (opt.lr, opt.betas, opt.eps, opt.weight_decay, opt.amsgrad, opt.maximize) == (
        0.5,
        (0.5, 0.75),
        1e-6,
        0.25,
        True,
        True,
    )


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


def test_betas_assigned_between_steps_are_checked_and_made_floats_before_the_step_reads_them() -> None:
    # Adam read self.betas before the check: NumPy float32 betas assigned between steps computed that step in
    # float32, and three betas said "too many values to unpack" (a review of the change)
    np = pytest.importorskip("numpy")
    as_floats, assigned = Value(1.0), Value(1.0)
    for p, betas in ((as_floats, (float(np.float32(0.9)), float(np.float32(0.999)))), (assigned, None)):
        opt = Adam([p], lr=0.1)
        opt.betas = betas if betas is not None else (np.float32(0.9), np.float32(0.999))
        p.grad = 0.3
        opt.step()
    assert assigned.data.hex() == as_floats.data.hex()
    opt = Adam([Value(1.0)], lr=0.1)
    opt.betas = (0.9, 0.999, 0.5)  # type: ignore[assignment]
    refuses(opt.step, TypeError, "betas must be a pair of numbers, got (0.9, 0.999, 0.5)")


def test_an_optimizer_of_ones_own_steps_through_stepped_without_hyperparameters_to_check() -> None:
    # the Optimizer base class invites subclasses: one with no _settings raised NotImplementedError
    class SignSGD(Optimizer):
        def __init__(self, params: list[Value], lr: float) -> None:
            super().__init__(params)
            self.lr = lr

        def step(self) -> None:
            for _, p in self._stepped():
                p.data -= self.lr * (1.0 if p.grad > 0 else -1.0)

    p = Value(1.0)
    opt = SignSGD([p], 0.25)
    p.grad = 2.0
    opt.step()
    assert p.data == 0.75


@pytest.mark.parametrize("make", EVERY_KIND)
def test_zero_grad_set_to_none_clears_to_none_as_pytorchs_does(make: Callable[[list[Value]], Optimizer]) -> None:
    a = Value(1.5)
    (a * 3).backward()
    opt = make([a])
    opt.zero_grad(set_to_none=True)
    assert a.grad is None
    opt.step()  # a parameter whose grad is None is not stepped
    assert a.data == 1.5
    opt.zero_grad(set_to_none=False)
    assert a.grad == 0.0
    refuses(lambda: opt.zero_grad(set_to_none=1), TypeError, "set_to_none must be a bool, got int")  # type: ignore[arg-type]


# ---- refusals, word for word ---------------------------------------------------------------------


def refuses(make: Callable[[], Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        make()
    assert str(caught.value) == message


def one() -> list[Value]:
    return [Value(1.0)]


SETTINGS_REFUSED: list[tuple[Callable[[], Any], type[Exception], str]] = [
    (lambda: SGD([], lr=0.1), ValueError, "optimizer got an empty parameter list"),
    (lambda: SGD(Value(1.0), lr=0.1), TypeError, "params must be an iterable of Values, got Value"),  # type: ignore[arg-type]
    (lambda: SGD(3.0, lr=0.1), TypeError, "params must be an iterable of Values, got float"),  # type: ignore[arg-type]
    (lambda: SGD([Value(1.0), 2.0], lr=0.1), TypeError, "params[1] must be a Value, got float"),  # type: ignore[list-item]
    # the same Value twice had a state of its own at each place (PyTorch warns that this will be an error)
    (
        lambda: SGD([*(lambda p: [Value(0.5), p, p])(Value(1.0))], lr=0.1, momentum=0.9),
        ValueError,
        "params[2] is params[1]: list each parameter once (a weight used in two places is one parameter)",
    ),
    # a Value an operation made is remade by the next forward pass: stepping it moved nothing
    (
        lambda: SGD([Value(2.0) * 3], lr=0.1),
        ValueError,
        "params[0] was computed by an operation (*): an optimizer steps leaves, the Values you made, "
        "as PyTorch's can't optimize a non-leaf Tensor",
    ),
    (lambda: SGD(one(), lr="fast"), TypeError, "learning rate must be a number, got str"),  # type: ignore[arg-type]
    (lambda: SGD(one(), lr=True), TypeError, "learning rate must be a number, got bool"),
    (lambda: SGD(one(), lr=-0.1), ValueError, "Invalid learning rate: -0.1 (it must be >= 0.0)"),
    (lambda: SGD(one(), lr=math.nan), ValueError, "Invalid learning rate: nan (it must be >= 0.0)"),
    (lambda: SGD(one(), lr=0.1, momentum=-1), ValueError, "Invalid momentum value: -1.0 (it must be >= 0.0)"),
    (lambda: SGD(one(), lr=0.1, momentum="0.9"), TypeError, "momentum value must be a number, got str"),  # type: ignore[arg-type]
    (lambda: SGD(one(), lr=0.1, dampening=None), TypeError, "dampening value must be a number, got NoneType"),  # type: ignore[arg-type]
    (
        lambda: SGD(one(), lr=0.1, weight_decay=-0.5),
        ValueError,
        "Invalid weight_decay value: -0.5 (it must be >= 0.0)",
    ),
    (lambda: SGD(one(), lr=0.1, weight_decay=[]), TypeError, "weight_decay value must be a number, got list"),  # type: ignore[arg-type]
    (lambda: SGD(one(), lr=0.1, nesterov=1), TypeError, "nesterov must be a bool, got int"),  # type: ignore[arg-type]
    (lambda: SGD(one(), lr=0.1, maximize="yes"), TypeError, "maximize must be a bool, got str"),  # type: ignore[arg-type]
    (
        lambda: SGD(one(), lr=0.1, momentum=0.0, nesterov=True),
        ValueError,
        "Nesterov momentum requires a momentum and zero dampening",
    ),
    (
        lambda: SGD(one(), lr=0.1, momentum=0.9, dampening=0.5, nesterov=True),
        ValueError,
        "Nesterov momentum requires a momentum and zero dampening",
    ),
    (lambda: Adam(one(), lr=-1.0), ValueError, "Invalid learning rate: -1.0 (it must be >= 0.0)"),
    (lambda: Adam(one(), betas=(0.9,)), TypeError, "betas must be a pair of numbers, got (0.9,)"),  # type: ignore[arg-type]
    (lambda: Adam(one(), betas=(0.9, 0.99, 0.5)), TypeError, "betas must be a pair of numbers, got (0.9, 0.99, 0.5)"),  # type: ignore[arg-type]
    (lambda: Adam(one(), betas=0.9), TypeError, "betas must be a pair of numbers, got 0.9"),  # type: ignore[arg-type]
    (
        lambda: Adam(one(), betas=(1.0, 0.9)),
        ValueError,
        "Invalid beta parameter at index 0: 1.0 (it must be in [0.0, 1.0))",
    ),
    (
        lambda: Adam(one(), betas=(0.9, 1.0)),
        ValueError,
        "Invalid beta parameter at index 1: 1.0 (it must be in [0.0, 1.0))",
    ),
    (
        lambda: Adam(one(), betas=(1.5, 0.9)),
        ValueError,
        "Invalid beta parameter at index 0: 1.5 (it must be in [0.0, 1.0))",
    ),
    (
        lambda: Adam(one(), betas=(0.9, -0.5)),
        ValueError,
        "Invalid beta parameter at index 1: -0.5 (it must be in [0.0, 1.0))",
    ),
    (lambda: Adam(one(), betas=("a", 0.9)), TypeError, "beta parameter at index 0 must be a number, got str"),  # type: ignore[arg-type]
    (lambda: Adam(one(), betas=(0.9, None)), TypeError, "beta parameter at index 1 must be a number, got NoneType"),  # type: ignore[arg-type]
    (lambda: Adam(one(), eps=-1e-8), ValueError, "Invalid epsilon value: -1e-08 (it must be >= 0.0)"),
    (lambda: Adam(one(), eps="small"), TypeError, "epsilon value must be a number, got str"),  # type: ignore[arg-type]
    (lambda: Adam(one(), weight_decay=-0.1), ValueError, "Invalid weight_decay value: -0.1 (it must be >= 0.0)"),
    (lambda: Adam(one(), weight_decay="0"), TypeError, "weight_decay value must be a number, got str"),  # type: ignore[arg-type]
    (lambda: Adam(one(), amsgrad=None), TypeError, "amsgrad must be a bool, got NoneType"),  # type: ignore[arg-type]
    (lambda: Adam(one(), maximize=0), TypeError, "maximize must be a bool, got int"),  # type: ignore[arg-type]
    (lambda: AdamW(one(), weight_decay=-0.1), ValueError, "Invalid weight_decay value: -0.1 (it must be >= 0.0)"),
    (lambda: AdamW(one(), maximize=None), TypeError, "maximize must be a bool, got NoneType"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("make", "error", "message"), SETTINGS_REFUSED)
def test_bad_settings_are_refused_word_for_word(make: Callable[[], Any], error: type[Exception], message: str) -> None:
    refuses(make, error, message)


@pytest.mark.parametrize(
    ("make", "name", "bad", "error", "message"),
    [
        (lambda ps: Adam(ps, lr=0.1), "lr", "0.01", TypeError, "learning rate must be a number, got str"),
        (
            lambda ps: Adam(ps, lr=0.1),
            "betas",
            (0.9, 1.5),
            ValueError,
            "Invalid beta parameter at index 1: 1.5 (it must be in [0.0, 1.0))",
        ),
        (
            lambda ps: SGD(ps, lr=0.1, momentum=0.9),
            "lr",
            -1.0,
            ValueError,
            "Invalid learning rate: -1.0 (it must be >= 0.0)",
        ),
        (
            lambda ps: SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
            "momentum",
            0.0,
            ValueError,
            "Nesterov momentum requires a momentum and zero dampening",
        ),
    ],
)
def test_a_setting_assigned_between_steps_is_checked_before_the_step_changes_anything(
    make: Callable[[list[Value]], Optimizer], name: str, bad: Any, error: type[Exception], message: str
) -> None:
    # a schedule assigns optimizer.lr between steps (the GPT tutorial's decay); an ill-typed one failed
    # half-way through a step, the moments and step counts of the parameters before it already moved
    params = [Value(1.0), Value(-2.0)]
    opt = make(params)
    steps(opt, 0.5)
    before, data = opt.state_dict(), [p.data for p in params]
    setattr(opt, name, bad)
    for p in params:
        p.grad = 0.25
    refuses(opt.step, error, message)
    assert [p.data for p in params] == data
    assert opt.state_dict()["state"] == before["state"]


def test_a_nan_dampening_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"^Invalid dampening value: nan\b"):
        SGD(one(), lr=0.1, dampening=math.nan)


# ---- saved state ---------------------------------------------------------------------------------


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


def adam_state(amsgrad: bool = True) -> dict[str, Any]:
    a, b = Value(1.0), Value(2.0)
    opt = Adam([a, b], lr=0.5, amsgrad=amsgrad)
    a.grad, b.grad = 0.5, -1.5
    opt.step()
    return opt.state_dict()


def with_entry(state: dict[str, Any], index: int, **entries: Any) -> dict[str, Any]:
    states = [dict(s) for s in state["state"]]
    states[index].update(entries)
    return {**state, "state": states}


LOADS_REFUSED: list[tuple[Callable[[dict[str, Any]], Any], type[Exception], str]] = [
    (
        lambda d: {**d, "hyperparameters": [1, 2]},
        TypeError,
        "state_dict['hyperparameters'] must be a dict, got list",
    ),
    (
        lambda d: {**d, "hyperparameters": {k: v for k, v in d["hyperparameters"].items() if k not in ("eps", "lr")}},
        ValueError,
        "state_dict['hyperparameters'] is missing 'lr', 'eps'",
    ),
    (
        lambda d: {**d, "hyperparameters": {**d["hyperparameters"], "foo": 1, "bar": 2}},
        ValueError,
        "state_dict['hyperparameters'] has unknown key(s) 'foo', 'bar'",
    ),
    (
        lambda d: with_entry(d, 1, step=2.0),
        TypeError,
        "state_dict['state'][1]['step'] must be an int, got float",
    ),
    (
        lambda d: with_entry(d, 1, step=True),
        TypeError,
        "state_dict['state'][1]['step'] must be an int, got bool",
    ),
    (
        lambda d: with_entry(d, 1, step=0),
        ValueError,
        "Invalid state_dict['state'][1]['step']: 0 (a saved state has step >= 1)",
    ),
    (
        lambda d: with_entry(d, 1, step=2**53 + 1),  # step() counts in floats: 2**1024 raised OverflowError there
        ValueError,
        f"Invalid state_dict['state'][1]['step']: {2**53 + 1} (a step count is at most 2**53)",
    ),
    (
        lambda d: with_entry(d, 1, exp_avg="0.1"),
        TypeError,
        "state_dict['state'][1]['exp_avg'] must be a number, got str",
    ),
    (
        lambda d: with_entry(d, 0, exp_avg_sq=None),
        TypeError,
        "state_dict['state'][0]['exp_avg_sq'] must be a number, got NoneType",
    ),
    (
        lambda d: with_entry(d, 1, exp_avg_sq=-1.0),
        ValueError,
        "Invalid state_dict['state'][1]['exp_avg_sq']: -1.0 (it must be >= 0.0)",
    ),
    (
        lambda d: with_entry(d, 1, max_exp_avg_sq=-2.0),
        ValueError,
        "Invalid state_dict['state'][1]['max_exp_avg_sq']: -2.0 (it must be >= 0.0)",
    ),
    (
        lambda d: with_entry(d, 0, max_exp_avg_sq="big"),
        TypeError,
        "state_dict['state'][0]['max_exp_avg_sq'] must be a number, got str",
    ),
    (
        lambda d: with_entry(d, 1, momentum_buffer=1.0),
        ValueError,
        "state_dict['state'][1] has unknown key(s) 'momentum_buffer'",
    ),
]


@pytest.mark.parametrize(("spoil", "error", "message"), LOADS_REFUSED)
def test_a_bad_adam_state_is_refused_word_for_word_and_changes_nothing(
    spoil: Callable[[dict[str, Any]], Any], error: type[Exception], message: str
) -> None:
    opt = Adam([Value(1.0), Value(2.0)], lr=0.125)
    before = opt.state_dict()
    refuses(lambda: opt.load_state_dict(spoil(adam_state())), error, message)
    assert opt.state_dict() == before


def test_a_bad_sgd_state_is_refused_word_for_word() -> None:
    opt = SGD([Value(1.0)], lr=0.1, momentum=0.9)
    saved = opt.state_dict()
    refuses(
        lambda: opt.load_state_dict({**saved, "state": [{"momentum_buffer": "1"}]}),
        TypeError,
        "state_dict['state'][0]['momentum_buffer'] must be a number, got str",
    )
    refuses(
        lambda: opt.load_state_dict({**saved, "state": [{"momentum_buffer": 1.0, "step": 1}]}),
        ValueError,
        "state_dict['state'][0] has unknown key(s) 'step'",
    )


def test_a_negative_momentum_buffer_loads_and_is_used() -> None:
    p = Value(1.0)
    opt = SGD([p], lr=0.25, momentum=0.5)
    opt.load_state_dict({**opt.state_dict(), "state": [{"momentum_buffer": -2.0}]})
    p.grad = 1.0
    opt.step()  # buf = 0.5 * -2 + 1 = 0, p unchanged
    assert p.data == 1.0
    assert opt.state_dict()["state"] == [{"momentum_buffer": 0.0}]


def test_a_zero_second_moment_loads() -> None:
    # a step with a zero gradient leaves exp_avg_sq = 0.0: its state must load
    p = Value(1.0)
    opt = Adam([p], lr=0.1, amsgrad=True)
    p.grad = 0.0
    opt.step()
    saved = opt.state_dict()
    assert saved["state"][0]["exp_avg_sq"] == 0.0
    other = Adam([Value(1.0)], lr=0.1)
    other.load_state_dict(saved)
    assert other.state_dict() == saved


def test_a_saved_maximum_loads_without_amsgrad_and_is_kept() -> None:
    saved = adam_state(amsgrad=True)
    saved = {**saved, "hyperparameters": {**saved["hyperparameters"], "amsgrad": False}}
    opt = Adam([Value(1.0), Value(2.0)])
    opt.load_state_dict(saved)
    assert opt.state_dict() == saved


def test_an_empty_entry_loads_as_a_parameter_that_has_not_stepped_yet() -> None:
    saved = with_entry(adam_state(amsgrad=False), 1)
    saved["state"][1] = {}
    a, b = Value(1.0), Value(2.0)
    opt = Adam([a, b], lr=0.5)
    opt.load_state_dict(saved)
    assert opt.state_dict()["state"][1] == {}
    fresh_b = Value(2.0)
    fresh = Adam([fresh_b], lr=0.5)
    a.grad, b.grad, fresh_b.grad = 0.25, -0.75, -0.75
    opt.step()
    fresh.step()
    assert b.data == fresh_b.data
    assert opt.state_dict()["state"][1] == fresh.state_dict()["state"][0]
    assert opt.state_dict()["state"][0]["step"] == 2


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_a_state_saved_after_a_nan_gradient_loads_back(kind: str) -> None:
    make: Callable[[list[Value]], Optimizer] = (
        (lambda ps: SGD(ps, lr=0.1, momentum=0.9)) if kind == "SGD" else (lambda ps: Adam(ps, lr=0.1))
    )
    p = Value(1.0)
    opt = make([p])
    p.grad = math.nan
    opt.step()
    saved = opt.state_dict()
    other = make([Value(1.0)])
    other.load_state_dict(saved)  # the module docstring: a run saved and loaded continues
    key = "momentum_buffer" if kind == "SGD" else "exp_avg"
    assert math.isnan(other.state_dict()["state"][0][key])


# ---- against torch.optim -------------------------------------------------------------------------


try:
    import torch
except ImportError:  # the comparisons with torch.optim skip; the rest of this file runs
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="the comparisons with torch.optim need torch")


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
TORCH_DIGITS = 1e-11


def assert_same(opt: Any, topt: Any) -> None:
    ours, theirs = params_of(opt, topt)
    assert ours == pytest.approx(theirs, rel=TORCH_DIGITS, abs=TORCH_DIGITS)


@pytest.mark.slow  # steps through torch's optimizers: seconds
@needs_torch
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


@pytest.mark.slow  # steps through torch's optimizers: seconds
@needs_torch
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


@needs_torch
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


@pytest.mark.slow  # steps through torch's optimizers: seconds
@needs_torch
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


@needs_torch
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


@needs_torch
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
        assert state == pytest.approx(torch_state, rel=TORCH_DIGITS, abs=TORCH_DIGITS)


@pytest.mark.slow  # steps through torch's optimizers: seconds
@needs_torch
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


@needs_torch
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


@pytest.mark.parametrize("make", [lambda ps: SGD(ps, lr=0.1, momentum=0.9), lambda ps: Adam(ps, lr=0.1)])
@pytest.mark.parametrize("change", ["appended", "replaced", "removed"])
def test_a_parameter_list_changed_after_the_optimizer_was_made_is_refused_before_any_step(
    make: Callable[[list[Value]], Any], change: str
) -> None:
    # an outside review: a parameter appended to .params moved the others, then raised a bare IndexError
    a, b = Value(1.0), Value(2.0)
    optimizer = make([a, b])
    for p in (a, b):
        p.grad = 0.5
    optimizer.step()
    before = (a.data, b.data)
    c = Value(5.0)
    c.grad = 0.5
    if change == "appended":
        optimizer.params.append(c)
    elif change == "replaced":
        optimizer.params[1] = c
    else:
        optimizer.params.pop()
    with pytest.raises(ValueError, match=r"optimizer\.params changed since the optimizer's first step"):
        optimizer.step()
    with pytest.raises(ValueError, match=r"optimizer\.params changed"):
        optimizer.state_dict()
    assert (a.data, b.data, c.data) == (*before, 5.0)  # nothing moved


def test_the_parameter_list_may_change_before_the_first_step_within_the_places_its_state_holds() -> None:
    class Unfrozen(Adam):  # a subclass of one's own drops the frozen parameters after __init__
        def __init__(self, params: list[Value], **settings: Any) -> None:
            super().__init__(params, **settings)
            self.params = [p for p in self.params if p.requires_grad]

    a, frozen, b = Value(1.0), Value(2.0, requires_grad=False), Value(3.0)
    optimizer = Unfrozen([a, frozen, b], lr=0.1)
    for p in (a, b):
        p.grad = 1.0
    optimizer.step()
    assert frozen.data == 2.0
    assert a.data == pytest.approx(0.9, rel=1e-8)  # Adam's first step moves each by about lr
    assert b.data == pytest.approx(2.9, rel=1e-8)
    grown = SGD([Value(1.0)], lr=0.1)
    grown.params.append(Value(2.0))
    with pytest.raises(ValueError, match=r"more than the 1 the optimizer was made with"):
        grown.step()
    twice = SGD([a, b], lr=0.1)
    twice.params[1] = a
    with pytest.raises(ValueError, match=r"lists a parameter twice"):
        twice.step()


def test_an_optimizer_of_ones_own_made_without_init_still_says_what_it_lacks() -> None:
    class Own(Optimizer):
        def __init__(self, params: list[Value]) -> None:  # no super().__init__()
            self.params = params

    with pytest.raises(NotImplementedError):
        Own([Value(1.0)]).step()
