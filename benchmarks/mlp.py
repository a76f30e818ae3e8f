"""4. micrograd's demo step: MLP(2, [16, 16, 1]) on 100 two-moons points, forward + loss +
backward + SGD update, the same operations on every engine."""

from __future__ import annotations

import itertools
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engines import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from moons import make_moons

SIZES = (2, 16, 16, 1)


class GenericMLP:
    """micrograd's MLP on any engine: uniform(-1, 1) weights, zero biases, relu hidden layers."""

    def __init__(self, engine: Engine, seed: int = 1337) -> None:
        rng = random.Random(seed)
        self.engine = engine
        self.layers = [
            [([engine.leaf(rng.uniform(-1, 1)) for _ in range(nin)], engine.leaf(0.0)) for _ in range(nout)]
            for nin, nout in itertools.pairwise(SIZES)
        ]

    def parameters(self) -> list[Any]:
        return [p for layer in self.layers for w, b in layer for p in (*w, b)]

    def __call__(self, x: list[Any]) -> Any:
        last = len(self.layers) - 1
        for k, layer in enumerate(self.layers):
            out = []
            for w, b in layer:
                act = b
                for wi, xi in zip(w, x, strict=True):
                    act = act + wi * xi
                out.append(self.engine.relu(act) if k < last else act)
            x = out
        return x[0]


def training_step(
    engine: Engine, model: GenericMLP, points: list[tuple[float, float]], labels: list[int]
) -> tuple[list[float], float, float]:
    """One step of micrograd's demo: returns the parameters' gradients and the two times."""
    t0 = time.perf_counter()
    scores = [model(list(p)) for p in points]
    margins = [engine.relu(1 + -y * s) for y, s in zip(labels, scores, strict=True)]
    data_loss = margins[0]
    for m in margins[1:]:
        data_loss = data_loss + m
    data_loss = data_loss * (1.0 / len(margins))
    params = model.parameters()
    reg = params[0] * params[0]
    for p in params[1:]:
        reg = reg + p * p
    total = data_loss + reg * 1e-4
    t1 = time.perf_counter()
    engine.backward(total)
    grads = [engine.grad(p) for p in params]
    engine.sgd_step(params, 0.5)
    return grads, t1 - t0, time.perf_counter() - t1


def mlp_step(engines: list[Engine], rounds: int, compare: Callable[..., Any]) -> Any:
    points, labels = make_moons()
    models = {engine.name: GenericMLP(engine) for engine in engines}

    def run_for(engine: Engine) -> Callable[[], tuple[list[float], float, float]]:
        # a fresh model each time, so every engine's every round computes the same gradients
        return lambda: training_step(engine, GenericMLP(engine), points, labels)

    nodes = _count_nodes(models["vjpgrad"], points)
    return compare(
        "4. MLP(2, [16, 16, 1]) demo step on 100 points", nodes, {e.name: run_for(e) for e in engines}, rounds
    )


def _count_nodes(model: GenericMLP, points: list[tuple[float, float]]) -> int:
    """Graph nodes of one step in vjpgrad (for the per-node figures)."""
    from vjpgrad._graph import pass_lock, reached

    engine = model.engine
    scores = [model(list(p)) for p in points]
    total = scores[0]
    for s in scores[1:]:
        total = total + engine.relu(1 + -s)
    with pass_lock:
        operations, leaves = reached([total])
    return len(operations) + len(leaves) + 2 * len(model.parameters())
