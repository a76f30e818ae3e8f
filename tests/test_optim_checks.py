"""vjpgrad.optim without torch: every refusal's whole message, the defaults, and the update
paths test_optim_by_hand.py does not reach (weight decay or momentum of exactly 1, a negative
dampening, both forms of torch's lerp, amsgrad switched on mid-run, partial saved state).

The messages are the contract's "clear error that names what was wrong": each names the
setting or the state entry and the value or type received.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from vjpgrad import Value
from vjpgrad.optim import SGD, Adam, AdamW, Optimizer


def refuses(make: Callable[[], Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        make()
    assert str(caught.value) == message


def one() -> list[Value]:
    return [Value(1.0)]


# ---- the refusals, word for word -----------------------------------------------------------------

SETTINGS_REFUSED: list[tuple[Callable[[], Any], type[Exception], str]] = [
    (lambda: SGD([], lr=0.1), ValueError, "optimizer got an empty parameter list"),
    (lambda: SGD(Value(1.0), lr=0.1), TypeError, "params must be an iterable of Values, got Value"),  # type: ignore[arg-type]
    (lambda: SGD(3.0, lr=0.1), TypeError, "params must be an iterable of Values, got float"),  # type: ignore[arg-type]
    (lambda: SGD([Value(1.0), 2.0], lr=0.1), TypeError, "params[1] must be a Value, got float"),  # type: ignore[list-item]
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


def test_a_nan_dampening_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"^Invalid dampening value: nan\b"):
        SGD(one(), lr=0.1, dampening=math.nan)


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


# ---- saving and loading ----------------------------------------------------------------------------


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
