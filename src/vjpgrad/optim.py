"""Optimizers with PyTorch's update formulas, number for number: ``SGD`` and ``Adam``.

Each ``step()`` reads every parameter's ``.grad`` and changes its ``.data``; it records no
graph. The formulas follow ``torch.optim``'s single-tensor code, down to the order of the
floating-point operations, so the same parameters and gradients give the same numbers.
One difference: PyTorch skips a parameter whose ``.grad`` is None; a Value's grad is a
number, so every parameter is stepped (as PyTorch does after ``zero_grad(set_to_none=False)``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

from vjpgrad._value import Value


def _number(x: object, name: str, *, low: float = 0.0, below: float | None = None) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}")
    value = float(x)
    if not value >= low or (below is not None and not value < below):
        bound = f"in [{low}, {below})" if below is not None else f">= {low}"
        raise ValueError(f"Invalid {name}: {value!r} (it must be {bound})")
    return value


class Optimizer:
    """Holds the parameters; ``zero_grad()`` sets their grads to 0.0."""

    def __init__(self, params: Iterable[Value]) -> None:
        if isinstance(params, Value) or not isinstance(params, Iterable):
            raise TypeError(f"params must be an iterable of Values, got {type(params).__name__}")
        self.params = list(params)
        for index, p in enumerate(self.params):
            if not isinstance(p, Value):
                raise TypeError(f"params[{index}] must be a Value, got {type(p).__name__}")
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")

    def zero_grad(self) -> None:
        """Set every parameter's ``.grad`` to 0.0."""
        for p in self.params:
            p.grad = 0.0

    def step(self) -> None:
        """Update every parameter from its ``.grad``."""
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum and weight decay (L2), as
    ``torch.optim.SGD``: ``g = grad + wd * p``; ``buf = g`` at the first step, then
    ``buf = momentum * buf + g``; ``p = p - lr * buf`` (or ``- lr * g`` without momentum)."""

    def __init__(self, params: Iterable[Value], lr: float, momentum: float = 0.0, weight_decay: float = 0.0) -> None:
        super().__init__(params)
        self.lr = _number(lr, "learning rate")
        self.momentum = _number(momentum, "momentum value")
        self.weight_decay = _number(weight_decay, "weight_decay value")
        self.buffers: list[float | None] = [None] * len(self.params)

    def step(self) -> None:
        for i, p in enumerate(self.params):
            grad = p.grad
            if self.weight_decay != 0:
                grad = grad + self.weight_decay * p.data
            if self.momentum != 0:
                buf = self.buffers[i]
                buf = grad if buf is None else buf * self.momentum + 1.0 * grad
                self.buffers[i] = grad = buf
            p.data = p.data + -self.lr * grad


class Adam(Optimizer):
    """Adam, as ``torch.optim.Adam``: first and second moment running averages with PyTorch's
    bias corrections, ``p = p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``."""

    def __init__(
        self,
        params: Iterable[Value],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        super().__init__(params)
        self.lr = _number(lr, "learning rate")
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"betas must be a pair of numbers, got {betas!r}")
        self.betas = (
            _number(betas[0], "beta parameter at index 0", below=1.0),
            _number(betas[1], "beta parameter at index 1", below=1.0),
        )
        self.eps = _number(eps, "epsilon value")
        self.weight_decay = _number(weight_decay, "weight_decay value")
        self.t = 0
        self.exp_avg = [0.0] * len(self.params)
        self.exp_avg_sq = [0.0] * len(self.params)

    def step(self) -> None:
        beta1, beta2 = self.betas
        self.t += 1
        bias_correction1 = 1 - beta1**self.t
        bias_correction2 = 1 - beta2**self.t
        step_size = self.lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5
        weight = 1 - beta1
        for i, p in enumerate(self.params):
            grad = p.grad
            if self.weight_decay != 0:
                grad = grad + self.weight_decay * p.data
            m = self.exp_avg[i]
            # torch's lerp(m, grad, weight), in the form it uses for that weight
            m = m + weight * (grad - m) if abs(weight) < 0.5 else grad - (grad - m) * (1 - weight)
            v = self.exp_avg_sq[i] * beta2 + (1 - beta2) * grad * grad
            self.exp_avg[i], self.exp_avg_sq[i] = m, v
            denom = math.sqrt(v) / bias_correction2_sqrt + self.eps
            p.data = p.data + -step_size * m / denom
