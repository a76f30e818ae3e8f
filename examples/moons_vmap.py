"""moons.py's training, full batch through vjpgrad.vmap: the same final parameters, bit for bit.

The model is written as a function of a list of parameters (``apply``), the loss per sample
(``margin``), and ``vmap(grad(margin), in_dims=(None, 0, 0))`` gives every sample's gradient
at once, as array code. ``batch_sum`` adds them as eager code's reverse pass adds them: the
regularisation's gradient first (its nodes were made last), then the samples from the last to
the first (the regularisation's gradient by ``vmap(grad(penalty))``, parameter by parameter: the
same numbers). Needs NumPy: pip install numpy (or pip install -e '.[vmap]' in your clone of vjpgrad).

    python examples/moons_vmap.py [--steps 100]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import vjpgrad
from vjpgrad import Value
from vjpgrad.nn import MLP

sys.path.insert(0, str(Path(__file__).resolve().parent))
from moons import make_moons  # the data set of moons.py, next to this file

SIZES = (2, 16, 16, 1)


def apply(params: Sequence[Any], x: Sequence[Any], sizes: Sequence[int] = SIZES) -> Any:
    """``MLP(2, [16, 16, 1])`` with its parameters given, in ``model.parameters()``'s order (each
    neuron's weights, then its bias), computing as ``vjpgrad.nn.Neuron`` computes: ``b + w0 * x0
    + w1 * x1 + ...``, relu on the hidden layers."""
    k = 0
    inputs = list(x)
    for layer in range(len(sizes) - 1):
        nin, nout = sizes[layer], sizes[layer + 1]
        outputs = []
        for _ in range(nout):
            total = params[k + nin]
            for i in range(nin):
                total = total + params[k + i] * inputs[i]
            k += nin + 1
            outputs.append(total if layer == len(sizes) - 2 else total.relu())
        inputs = outputs
    return inputs[0]


def margin(params: Sequence[Any], x: Sequence[Any], label: Any, count: int) -> Any:
    """One sample's share of moons.py's data loss: its hinge loss times ``1 / count``, the factor
    eager code's mean hands each sample's gradient."""
    return (1 + -label * apply(params, x)).relu() * (1.0 / count)


def regularisation(params: Sequence[Any]) -> Any:
    """moons.py's L2 term: 1e-4 times the sum of the squared parameters."""
    return 1e-4 * sum((p * p for p in params), Value(0.0, requires_grad=False))


def penalty(p: Any) -> Any:
    """One parameter's share of the L2 term, ``1e-4 * (p * p)``. In ``regularisation`` the sum
    hands each square the gradient it gets (1e-4) unchanged, so ``vmap(grad(penalty))`` over the
    parameters gives ``grad(regularisation)``'s numbers to the bit, in a few array operations
    instead of a graph of 675 nodes."""
    return 1e-4 * (p * p)


def train(steps: int = 100, seed: int = 1337, *, fast: bool = False) -> list[float]:
    """moons.py's ``train``, full batch through vmap; returns the final parameters."""
    import numpy as np

    points, labels = make_moons()
    xs, ys = np.array(points), np.array(labels, dtype=np.float64)
    params = np.array([p.data for p in MLP(2, [16, 16, 1], seed=seed).parameters()])
    per_sample = vjpgrad.vmap(vjpgrad.grad(margin), in_dims=(None, 0, 0, None), fast=fast)
    regularised = vjpgrad.vmap(vjpgrad.grad(penalty), fast=fast)  # grad(regularisation)'s numbers, per parameter
    for k in range(steps):
        rows = per_sample(list(params), xs, ys, len(points))
        grads = 0.0 + vjpgrad.batch_sum(rows, start=regularised(params))  # .grad was zeroed: 0.0 + the pass
        learning_rate = 1.0 - 0.9 * k / 100
        params = params - learning_rate * grads
    return [float(p) for p in params]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    params = train(args.steps)
    print(f"{len(params)} parameters after {args.steps} steps, {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
