"""The engines the benchmarks compare, behind one small interface.

Each engine runs the same program: leaves, then operations, then a backward pass. Peers are
imported only if installed: ``pip install micrograd==0.1.0 torch==2.13.0``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import vjpgrad


class Engine:
    """A scalar autodiff engine as the benchmarks use it."""

    name = "?"
    has_log = True

    def leaf(self, x: float) -> Any:
        raise NotImplementedError

    def relu(self, a: Any) -> Any:
        return a.relu()

    def log(self, a: Any) -> Any:
        return a.log()

    def backward(self, output: Any) -> None:
        output.backward()

    def backward_seeded(self, outputs: Sequence[Any], seeds: Sequence[float]) -> None:
        raise NotImplementedError

    def grad(self, leaf: Any) -> float:
        return float(leaf.grad)

    def sgd_step(self, params: Sequence[Any], lr: float) -> None:
        """p -= lr * p.grad, then zero the grads (micrograd's demo update)."""
        for p in params:
            p.data -= lr * p.grad
            p.grad = 0.0


class Vjpgrad(Engine):
    name = "vjpgrad"

    def leaf(self, x: float) -> Any:
        return vjpgrad.Value(x)

    def backward_seeded(self, outputs: Sequence[Any], seeds: Sequence[float]) -> None:
        vjpgrad.Vector(outputs).backward(seeds)


class Micrograd(Engine):
    """micrograd 0.1.0: no log, no seed; its VJP is the backward of sum_i v_i * y_i."""

    name = "micrograd"
    has_log = False

    def __init__(self) -> None:
        from micrograd.engine import Value

        self.value = Value

    def leaf(self, x: float) -> Any:
        return self.value(x)

    def backward_seeded(self, outputs: Sequence[Any], seeds: Sequence[float]) -> None:
        # summed as a balanced tree: a chain would be as deep as n, past its recursive sort
        level = [y * v for y, v in zip(outputs, seeds, strict=True)]
        while len(level) > 1:
            paired = [level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)]
            level = paired + level[len(level) - len(level) % 2 :]
        level[0].backward()


class Torch(Engine):
    """PyTorch 0-d float64 tensors, one per scalar."""

    name = "torch 0-d"

    def __init__(self) -> None:
        import torch

        self.torch = torch

    def leaf(self, x: float) -> Any:
        return self.torch.tensor(x, dtype=self.torch.float64, requires_grad=True)

    def backward_seeded(self, outputs: Sequence[Any], seeds: Sequence[float]) -> None:
        torch = self.torch
        torch.autograd.backward(list(outputs), [torch.tensor(v, dtype=torch.float64) for v in seeds])

    def grad(self, leaf: Any) -> float:
        return 0.0 if leaf.grad is None else float(leaf.grad)

    def sgd_step(self, params: Sequence[Any], lr: float) -> None:
        with self.torch.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None


def available() -> list[Engine]:
    """vjpgrad and whichever peers are installed."""
    engines: list[Engine] = [Vjpgrad()]
    if importlib.util.find_spec("micrograd") is not None:
        engines.append(Micrograd())
    if importlib.util.find_spec("torch") is not None:
        engines.append(Torch())
    return engines
