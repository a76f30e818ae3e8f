"""Optimizers with PyTorch's update formulas, number for number: ``SGD``, ``Adam``, ``AdamW``.

Each ``step()`` reads every parameter's ``.grad`` and changes its ``.data``; it records no
graph. The formulas follow ``torch.optim``'s single-tensor code (``foreach=False``), down to
the order of the floating-point operations, so the same parameters and gradients give the
same numbers, with two exceptions in the last bit: PyTorch's CPU kernels compute
``a + alpha * b`` (and ``lerp``, ``addcmul``) with one fused multiply-add where Python rounds
twice, and PyTorch's CPU square root is not always correctly rounded (``math.sqrt`` is). The
tests hold every option to 13 digits against ``torch.optim``.

Which parameters move: PyTorch skips a parameter whose ``.grad`` is None, which is what a
tensor with ``requires_grad=False`` has, or one whose grad was set to None. Here a step skips
every parameter whose ``requires_grad`` is False *at that step*, or whose ``.grad`` is None:
its data, its state (momentum buffer, moments, step count) and its weight decay are all left
alone. A parameter that requires grad is stepped even if no pass reached it, since its grad
is then 0.0 (a Value's ``.grad`` starts at 0.0, as micrograd's does): its weight decay and
momentum move it, where PyTorch, whose ``.grad`` starts as None (and stays None through
``zero_grad(set_to_none=False)``), skips it. ``zero_grad(set_to_none=True)`` before each pass
gives PyTorch's behaviour: a parameter no pass reached keeps None and is skipped.

Saving: ``state_dict()`` returns plain Python data (the optimizer's name, its hyperparameters,
one dict of state per parameter, the names PyTorch uses: ``momentum_buffer``, ``step``,
``exp_avg``, ``exp_avg_sq``, ``max_exp_avg_sq``); it survives ``json`` and ``pickle``.
``load_state_dict(d)`` restores hyperparameters and state, so a run saved and loaded
continues bit for bit. It checks everything before it changes anything.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar

from vjpgrad.core import floats
from vjpgrad.core.value import Value


def _number(x: object, name: str, *, low: float = 0.0, below: float | None = None) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}")
    value = float(x)
    if not value >= low or (below is not None and not value < below):
        bound = f"in [{low}, {below})" if below is not None else f">= {low}"
        raise ValueError(f"Invalid {name}: {value!r} (it must be {bound})")
    return value


def _state_number(x: object, name: str) -> float:
    """A number of an optimizer's state: any float, nan and inf included (a diverged run's)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}")
    return float(x)


def _flag(x: object, name: str) -> bool:
    if not isinstance(x, bool):
        raise TypeError(f"{name} must be a bool, got {type(x).__name__}")
    return x


def _keys(given: Mapping[Any, Any], required: Iterable[str], what: str, optional: Iterable[str] = ()) -> None:
    """Refuse a mapping that lacks a required key or has one that is neither required nor optional."""
    required = list(required)
    missing = [key for key in required if key not in given]
    if missing:
        raise ValueError(f"{what} is missing {', '.join(map(repr, missing))}")
    unknown = [key for key in given if key not in required and key not in optional]
    if unknown:
        raise ValueError(f"{what} has unknown key(s) {', '.join(map(repr, unknown))}")


def _mapping(x: object, what: str) -> Mapping[Any, Any]:
    if not isinstance(x, Mapping):
        raise TypeError(f"{what} must be a dict, got {type(x).__name__}")
    return x


class Optimizer:
    """Holds the parameters; ``zero_grad()`` sets their grads to 0.0.

    A subclass names its hyperparameters in ``_settings`` (validated by ``_check_settings``,
    used by the constructor and by ``load_state_dict`` alike) and says how to save, check
    and restore one parameter's state.
    """

    _settings: ClassVar[tuple[str, ...]] = ()

    def __init__(self, params: Iterable[Value]) -> None:
        if isinstance(params, Value) or not isinstance(params, Iterable):
            raise TypeError(f"params must be an iterable of Values, got {type(params).__name__}")
        self.params = list(params)
        seen: dict[int, int] = {}
        for index, p in enumerate(self.params):
            if not isinstance(p, Value):
                raise TypeError(f"params[{index}] must be a Value, got {type(p).__name__}")
            first = seen.setdefault(id(p), index)
            if first != index:  # its state would be kept twice, and the two copies stepped apart
                raise ValueError(
                    f"params[{index}] is params[{first}]: list each parameter once "
                    "(a weight used in two places is one parameter)"
                )
            if not p.is_leaf:  # the next forward pass makes it anew: stepping it would move nothing
                raise ValueError(
                    f"params[{index}] was computed by an operation ({p.op}): an optimizer steps leaves, "
                    "the Values you made, as PyTorch's can't optimize a non-leaf Tensor"
                )
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        self._places = len(self.params)  # the state's lists hold a place for each
        self._kept_for: tuple[Value, ...] | None = None  # the list the state is kept for, from the first step on

    def _check_params(self) -> None:
        """The parameter list is the one the state is kept for: the optimizer keeps its state
        (momentum, moments, step counts, what ``state_dict()`` saves) by position, so a parameter
        appended, removed or replaced after the first step (or ``state_dict()``) would be stepped
        with another's state, or with none. Until then the list may change (a subclass that drops
        its frozen parameters after ``__init__``), within the places the state holds. Checked
        before anything changes."""
        kept = getattr(self, "_kept_for", None)
        if kept is None:
            places = getattr(self, "_places", None)  # None: an optimizer of one's own, made without __init__
            if places is not None and len(self.params) > places:
                raise ValueError(
                    f"optimizer.params holds {len(self.params)} parameters, more than the {places} the optimizer was "
                    "made with, whose state has a place for each: make a new optimizer for the longer list"
                )
            if len({id(p) for p in self.params}) != len(self.params):
                raise ValueError("optimizer.params lists a parameter twice: its state would be kept twice")
            self._kept_for = tuple(self.params)
            return
        if len(self.params) != len(kept) or any(map(operator.is_not, self.params, kept)):
            raise ValueError(
                f"optimizer.params changed since the optimizer's first step ({len(kept)} parameters, now "
                f"{len(self.params)}, or another Value in a place): its state is kept by position; make a new "
                "optimizer for the new list (PyTorch's param groups have no counterpart here)"
            )

    def zero_grad(self, set_to_none: bool = False) -> None:
        """Set every parameter's ``.grad`` to 0.0, or to None with ``set_to_none=True`` (PyTorch's
        default): a step then skips a parameter no pass reached since, where 0.0 still steps it
        (its weight decay, its momentum)."""
        cleared = None if _flag(set_to_none, "set_to_none") else 0.0
        for p in self.params:
            p.grad = cleared

    def step(self) -> None:
        """Update every parameter that requires grad from its ``.grad``."""
        raise NotImplementedError

    def _stepped(self) -> Iterator[tuple[int, Value]]:
        """The parameters a step moves, with their index: PyTorch steps only those with a grad.
        First, the hyperparameters as they are now are checked (a schedule assigns ``lr`` between
        steps): an ill-typed one raises here, before the step changes anything."""
        self._check_params()
        if self._settings:  # an optimizer of one's own may name none
            self._apply_settings(self._check_settings({name: getattr(self, name) for name in self._settings}))
        return ((i, p) for i, p in enumerate(self.params) if p.requires_grad and p.grad is not None)

    # ---- hyperparameters and state as plain data ------------------------------------------

    def _apply_settings(self, settings: Mapping[str, object]) -> None:
        for name, value in settings.items():
            setattr(self, name, value)

    @classmethod
    def _check_settings(cls, given: Mapping[str, object]) -> dict[str, object]:
        """The hyperparameters, checked and converted; raises before anything changes."""
        raise NotImplementedError

    def _state_of(self, i: int) -> dict[str, Any]:
        raise NotImplementedError

    def _check_state(self, i: int, given: Mapping[Any, Any], settings: Mapping[str, object]) -> object:
        raise NotImplementedError

    def _restore(self, states: list[Any]) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """Plain data to save: ``{"optimizer": name, "hyperparameters": {...}, "state": [...]}``
        with one dict per parameter, in order (empty until the parameter's first step)."""
        self._check_params()
        return {
            "optimizer": type(self).__name__,
            "hyperparameters": {name: getattr(self, name) for name in self._settings},
            "state": [self._state_of(i) for i in range(len(self.params))],
        }

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore hyperparameters and per-parameter state from ``state_dict()``'s output.

        The parameters themselves are not part of it (save their ``.data`` yourself); the
        state is matched to them by position. Everything is checked first: a dict from
        another optimizer, for another number of parameters, or with a missing, unknown or
        ill-typed entry raises ValueError or TypeError and changes nothing.
        """
        self._check_params()
        kind = type(self).__name__
        given = _mapping(state_dict, "state_dict")
        _keys(given, ("optimizer", "hyperparameters", "state"), "state_dict")
        if given["optimizer"] != kind:
            raise ValueError(f"state_dict is from optimizer {given['optimizer']!r}, not {kind!r}")
        hyper = _mapping(given["hyperparameters"], "state_dict['hyperparameters']")
        _keys(hyper, self._settings, "state_dict['hyperparameters']")
        settings = self._check_settings(hyper)
        states = given["state"]
        if not isinstance(states, (list, tuple)):
            raise TypeError(f"state_dict['state'] must be a list, got {type(states).__name__}")
        if len(states) != len(self.params):
            raise ValueError(
                f"state_dict has state for {len(states)} parameter(s); this optimizer has {len(self.params)}"
            )
        checked = [
            self._check_state(i, _mapping(state, f"state_dict['state'][{i}]"), settings)
            for i, state in enumerate(states)
        ]
        self._apply_settings(settings)
        self._restore(checked)


class SGD(Optimizer):
    """Stochastic gradient descent, as ``torch.optim.SGD``. At each step, for each parameter
    that requires grad: ``g = -grad`` if ``maximize`` else ``grad``; ``g = g + wd * p``; with
    momentum, ``buf = g`` at the parameter's first step, then
    ``buf = momentum * buf + (1 - dampening) * g``, and ``g = g + momentum * buf`` (Nesterov)
    or ``g = buf``; finally ``p = p - lr * g``.

    ``params``, ``lr`` and ``momentum`` may be given by position (as in PyTorch); the rest
    only by name, because PyTorch's fourth positional argument is ``dampening``.
    """

    _settings = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize")
    lr: float
    momentum: float
    dampening: float
    weight_decay: float
    nesterov: bool
    maximize: bool

    def __init__(
        self,
        params: Iterable[Value],
        lr: float,
        momentum: float = 0.0,
        *,
        weight_decay: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
        maximize: bool = False,
    ) -> None:
        super().__init__(params)
        given = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
        }
        self._apply_settings(self._check_settings(given))
        self.momentum_buffers: list[float | None] = [None] * len(self.params)

    @classmethod
    def _check_settings(cls, given: Mapping[str, object]) -> dict[str, object]:
        settings: dict[str, object] = {
            "lr": _number(given["lr"], "learning rate"),
            "momentum": _number(given["momentum"], "momentum value"),
            # PyTorch accepts any dampening; only NaN is refused here
            "dampening": _number(given["dampening"], "dampening value", low=-math.inf),
            "weight_decay": _number(given["weight_decay"], "weight_decay value"),
            "nesterov": _flag(given["nesterov"], "nesterov"),
            "maximize": _flag(given["maximize"], "maximize"),
        }
        if settings["nesterov"] and (settings["momentum"] == 0 or settings["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        return settings

    def step(self) -> None:
        for i, p in self._stepped():
            grad = -p.grad if self.maximize else p.grad
            if self.weight_decay != 0:
                grad = grad + self.weight_decay * p.data
            if self.momentum != 0:
                buf = self.momentum_buffers[i]
                buf = grad if buf is None else buf * self.momentum + (1 - self.dampening) * grad
                self.momentum_buffers[i] = buf
                grad = grad + self.momentum * buf if self.nesterov else buf
            p.data = p.data + -self.lr * grad

    def _state_of(self, i: int) -> dict[str, Any]:
        buf = self.momentum_buffers[i]
        return {} if buf is None else {"momentum_buffer": buf}

    def _check_state(self, i: int, given: Mapping[Any, Any], settings: Mapping[str, object]) -> float | None:
        _keys(given, (), f"state_dict['state'][{i}]", optional=("momentum_buffer",))
        if "momentum_buffer" not in given:
            return None
        return _state_number(given["momentum_buffer"], f"state_dict['state'][{i}]['momentum_buffer']")

    def _restore(self, states: list[Any]) -> None:
        self.momentum_buffers = list(states)


class Adam(Optimizer):
    """Adam, as ``torch.optim.Adam``. Each parameter keeps its own step count ``t`` (it counts
    only the steps that moved it) and moments ``m``, ``v``: ``g = -grad`` if ``maximize``;
    ``g = g + wd * p``; ``m = lerp(m, g, 1 - b1)``; ``v = b2 * v + (1 - b2) * g * g``; with
    ``amsgrad``, ``vmax = max(vmax, v)`` is used instead of ``v`` below;
    ``p = p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``."""

    _settings = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")
    _decoupled: ClassVar[bool] = False
    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    amsgrad: bool
    maximize: bool

    def __init__(
        self,
        params: Iterable[Value],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        super().__init__(params)
        given = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
        }
        self._apply_settings(self._check_settings(given))
        n = len(self.params)
        self.steps = [0] * n
        self.exp_avg = [0.0] * n
        self.exp_avg_sq = [0.0] * n
        self.max_exp_avg_sq: list[float | None] = [None] * n

    @classmethod
    def _check_settings(cls, given: Mapping[str, object]) -> dict[str, object]:
        betas = given["betas"]
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"betas must be a pair of numbers, got {betas!r}")
        return {
            "lr": _number(given["lr"], "learning rate"),
            "betas": (
                _number(betas[0], "beta parameter at index 0", below=1.0),
                _number(betas[1], "beta parameter at index 1", below=1.0),
            ),
            "eps": _number(given["eps"], "epsilon value"),
            "weight_decay": _number(given["weight_decay"], "weight_decay value"),
            "amsgrad": _flag(given["amsgrad"], "amsgrad"),
            "maximize": _flag(given["maximize"], "maximize"),
        }

    def step(self) -> None:
        stepped = self._stepped()  # checks the hyperparameters first: betas assigned since are floats here
        beta1, beta2 = self.betas
        for i, p in stepped:
            grad = -p.grad if self.maximize else p.grad
            self.steps[i] = step = self.steps[i] + 1
            if self.weight_decay != 0:
                if self._decoupled:
                    p.data = p.data * (1 - self.lr * self.weight_decay)
                else:
                    grad = grad + self.weight_decay * p.data
            m, weight = self.exp_avg[i], 1 - beta1
            # torch's lerp(m, grad, weight), in the form it uses for that weight
            m = m + weight * (grad - m) if abs(weight) < 0.5 else grad - (grad - m) * (1 - weight)
            v = self.exp_avg_sq[i] * beta2 + (1 - beta2) * grad * grad
            self.exp_avg[i], self.exp_avg_sq[i] = m, v
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            step_size = self.lr / bias_correction1
            bias_correction2_sqrt = bias_correction2**0.5
            if self.amsgrad:
                old = self.max_exp_avg_sq[i]
                old = 0.0 if old is None else old  # amsgrad switched on after the first step
                # torch.maximum: NaN wins
                v = old if old > v or math.isnan(old) else v
                self.max_exp_avg_sq[i] = v
            denom = math.sqrt(v) / bias_correction2_sqrt + self.eps
            p.data = p.data + floats.div(-step_size * m, denom)  # IEEE's 0 / 0 = nan with eps = 0, as torch

    def _state_of(self, i: int) -> dict[str, Any]:
        if self.steps[i] == 0:
            return {}
        state: dict[str, Any] = {"step": self.steps[i], "exp_avg": self.exp_avg[i], "exp_avg_sq": self.exp_avg_sq[i]}
        if self.max_exp_avg_sq[i] is not None:
            state["max_exp_avg_sq"] = self.max_exp_avg_sq[i]
        elif self.amsgrad:  # switched on since the last step: the maximum the next step starts from
            state["max_exp_avg_sq"] = 0.0
        return state

    def _check_state(
        self, i: int, given: Mapping[Any, Any], settings: Mapping[str, object]
    ) -> tuple[int, float, float, float | None]:
        where = f"state_dict['state'][{i}]"
        if not given:
            return (0, 0.0, 0.0, None)
        required = ["step", "exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if settings["amsgrad"] else [])
        _keys(given, required, where, optional=("max_exp_avg_sq",))
        step = given["step"]
        if isinstance(step, bool) or not isinstance(step, numbers.Integral):
            raise TypeError(f"{where}['step'] must be an int, got {type(step).__name__}")
        if step < 1:
            raise ValueError(f"Invalid {where}['step']: {step} (a saved state has step >= 1)")
        if int(step) > 2**53:  # the bias corrections raise it to a float power: 2**1024 raised OverflowError in step()
            raise ValueError(f"Invalid {where}['step']: {step} (a step count is at most 2**53)")
        exp_avg = _state_number(given["exp_avg"], f"{where}['exp_avg']")
        # a diverged run may hold NaN; a negative second moment cannot come from a step
        exp_avg_sq = _state_number(given["exp_avg_sq"], f"{where}['exp_avg_sq']")
        most = given.get("max_exp_avg_sq")
        max_sq = None if most is None else _state_number(most, f"{where}['max_exp_avg_sq']")
        for name, value in (("exp_avg_sq", exp_avg_sq), ("max_exp_avg_sq", max_sq)):
            if value is not None and value < 0:
                raise ValueError(f"Invalid {where}[{name!r}]: {value!r} (it must be >= 0.0)")
        return (int(step), exp_avg, exp_avg_sq, max_sq)

    def _restore(self, states: list[Any]) -> None:
        self.steps = [s[0] for s in states]
        self.exp_avg = [s[1] for s in states]
        self.exp_avg_sq = [s[2] for s in states]
        self.max_exp_avg_sq = [s[3] for s in states]


class AdamW(Adam):
    """AdamW, as ``torch.optim.AdamW``: Adam with decoupled weight decay. The decay scales the
    parameter, ``p = p * (1 - lr * wd)``, before the Adam update, and never enters ``m`` or
    ``v``; the default ``weight_decay`` is 1e-2."""

    _decoupled = True

    def __init__(
        self,
        params: Iterable[Value],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
