"""4. micrograd's demo step: MLP(2, [16, 16, 1]) on 100 two-moons points, forward + loss +
backward + SGD update, the same operations on every engine."""

from __future__ import annotations

import importlib
import itertools
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engines import Engine
from workloads import count_nodes

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
    total = loss_of(engine, model, points, labels)
    t1 = time.perf_counter()
    engine.backward(total)
    params = model.parameters()
    grads = [engine.grad(p) for p in params]
    engine.sgd_step(params, 0.5)
    return grads, t1 - t0, time.perf_counter() - t1


def loss_of(engine: Engine, model: GenericMLP, points: Sequence[Sequence[Any]], labels: list[int]) -> Any:
    """micrograd's demo loss: the mean max-margin loss plus 1e-4 times the L2 of the weights."""
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
    return data_loss + reg * 1e-4


def compiled_step(
    engine: Engine, points: list[tuple[float, float]], labels: list[int]
) -> tuple[Any, tuple[float, float]]:
    """The same step with the loss through vjpgrad.compile: one model, reset before each run so
    every run computes the first step's gradients; returns the run and the seconds of the first
    two calls (recorded, then compiled or loaded from the cache)."""
    import vjpgrad

    model = GenericMLP(engine)
    params = model.parameters()
    start = [p.data for p in params]
    compiled = vjpgrad.compile(lambda pts: loss_of(engine, model, pts, labels))
    seconds = []
    for _ in range(2):
        t = time.perf_counter()
        compiled(points).backward()
        seconds.append(time.perf_counter() - t)
    first = (seconds[0], seconds[1])

    def run() -> tuple[list[float], float, float]:
        for p, x in zip(params, start, strict=True):
            p.data, p.grad = x, 0.0
        t0 = time.perf_counter()
        total = compiled(points)
        t1 = time.perf_counter()
        total.backward()
        grads = [p.grad for p in params]
        engine.sgd_step(params, 0.5)
        return grads, t1 - t0, time.perf_counter() - t1

    return run, first


def step_by_hand(model: GenericMLP, points: list[tuple[float, float]], labels: list[int]) -> list[float]:
    """The limit: the same step in plain floats, gradients derived by hand (backpropagation
    written out), no graph. ``model``'s parameters give the starting numbers."""
    layers = [[([w.data for w in ws], b.data) for ws, b in layer] for layer in model.layers]
    grads = [[([0.0] * len(ws), 0.0) for ws, _ in layer] for layer in layers]
    gw = [[list(ws) for ws, _ in layer] for layer in grads]
    gb = [[0.0 for _ in layer] for layer in grads]
    last = len(layers) - 1
    n = len(points)
    for (x0, x1), y in zip(points, labels, strict=True):
        activations = [[x0, x1]]
        pre = []
        h = activations[0]
        for k, layer in enumerate(layers):
            z = []
            for ws, b in layer:
                act = b
                for w, xi in zip(ws, h, strict=True):
                    act += w * xi
                z.append(act)
            pre.append(z)
            h = [v if v > 0.0 else 0.0 for v in z] if k < last else z
            activations.append(h)
        margin = 1.0 - y * h[0]
        upstream = [(-y / n) if margin > 0.0 else 0.0]  # d loss / d score
        for k in range(last, -1, -1):
            if k < last:
                upstream = [g if z > 0.0 else 0.0 for g, z in zip(upstream, pre[k], strict=True)]
            below = [0.0] * len(activations[k])
            for j, (ws, _) in enumerate(layers[k]):
                g = upstream[j]
                gb[k][j] += g
                row = gw[k][j]
                for i, xi in enumerate(activations[k]):
                    row[i] += g * xi
                    below[i] += g * ws[i]
            upstream = below
    flat = []
    for k, layer in enumerate(layers):
        for j, (ws, b) in enumerate(layer):
            flat += [g + 2e-4 * w for g, w in zip(gw[k][j], ws, strict=True)]
            flat.append(gb[k][j] + 2e-4 * b)
    return flat


def mlp_step(
    engines: list[Engine], rounds: int, compare: Callable[..., Any], first_calls: list[tuple[float, float]]
) -> Any:
    points, labels = make_moons()
    models = {engine.name: GenericMLP(engine) for engine in engines}

    def run_for(engine: Engine) -> Callable[[], tuple[list[float], float, float]]:
        # a fresh model each time, so every engine's every round computes the same gradients
        return lambda: training_step(engine, GenericMLP(engine), points, labels)

    nodes = _count_nodes(models["vjpgrad"], points)
    runs = {e.name: run_for(e) for e in engines}
    vjpgrad_engine = next(e for e in engines if e.name == "vjpgrad")
    if hasattr(importlib.import_module("vjpgrad"), "compile"):
        runs["vjpgrad compiled"], first = compiled_step(vjpgrad_engine, points, labels)
        first_calls.append(first)
    start = GenericMLP(vjpgrad_engine)

    def limit() -> tuple[list[float], float, float]:
        t0 = time.perf_counter()
        grads = step_by_hand(start, points, labels)
        return grads, time.perf_counter() - t0, 0.0

    runs["hand-written"] = limit
    return compare("4. MLP(2, [16, 16, 1]) demo step on 100 points", nodes, runs, rounds)


def _count_nodes(model: GenericMLP, points: list[tuple[float, float]]) -> int:
    """Graph nodes of one step in vjpgrad (for the per-node figures)."""
    engine = model.engine
    scores = [model(list(p)) for p in points]
    total = scores[0]
    for s in scores[1:]:
        total = total + engine.relu(1 + -s)
    return count_nodes(total) + 2 * len(model.parameters())
