"""The workloads, each written once for every engine, plus its hand-written float version
(the same values and analytic gradients with no graph at all: the CPython limit)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engines import Engine

# ---- 1. a random expression DAG ---------------------------------------------------------
# Each step applies one op to operands drawn from all earlier nodes; values stay in about
# [-1, 1] so no engine meets inf. The ops are those every engine has.
OPS = ("add", "sub", "mul", "square", "relu", "scale", "shift")


@dataclass(frozen=True)
class Program:
    """A random DAG: leaf values, then (op, i, j) steps over earlier nodes."""

    leaves: list[float]
    steps: list[tuple[str, int, int]]

    @property
    def nodes(self) -> int:
        """Graph nodes: the steps plus the balanced sum that makes every node reach the output."""
        return 2 * (len(self.leaves) + len(self.steps)) - 1


def random_program(size: int, seed: int = 0, leaves: int = 100) -> Program:
    rng = random.Random(seed)
    values = [rng.uniform(-1, 1) for _ in range(leaves)]
    steps = []
    for k in range(size):
        n = leaves + k
        steps.append((OPS[rng.randrange(len(OPS))], rng.randrange(n), rng.randrange(n)))
    return Program(values, steps)


def build_dag(engine: Engine, program: Program) -> tuple[list[Any], Any]:
    """Run the program on an engine; returns its leaves and the balanced sum of all nodes."""
    leaves = [engine.leaf(x) for x in program.leaves]
    return leaves, dag_from(leaves, engine.relu, program)


def dag_from(leaves: Sequence[Any], relu: Callable[[Any], Any], program: Program) -> Any:
    """The program's graph on these leaves: the balanced sum of all its nodes."""
    nodes = list(leaves)
    for op, i, j in program.steps:
        a, b = nodes[i], nodes[j]
        if op == "add":
            r = (a + b) * 0.5
        elif op == "sub":
            r = (a - b) * 0.5
        elif op == "mul":
            r = a * b
        elif op == "square":
            r = a**2
        elif op == "relu":
            r = relu(a)
        elif op == "scale":
            r = a * 0.9
        else:
            r = a + 0.1
        nodes.append(r)
    return balanced_sum(nodes)


def balanced_sum(nodes: Sequence[Any]) -> Any:
    level = list(nodes)
    while len(level) > 1:
        paired = [level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


def dag_by_hand(program: Program) -> list[float]:
    """The same DAG in plain floats, forward then reverse, derivatives written by hand."""
    values = list(program.leaves)
    for op, i, j in program.steps:
        a, b = values[i], values[j]
        if op == "add":
            values.append((a + b) * 0.5)
        elif op == "sub":
            values.append((a - b) * 0.5)
        elif op == "mul":
            values.append(a * b)
        elif op == "square":
            values.append(a * a)
        elif op == "relu":
            values.append(a if a > 0 else 0.0)
        elif op == "scale":
            values.append(a * 0.9)
        else:
            values.append(a + 0.1)
    adjoint = [1.0] * len(values)  # the balanced sum gives every node a gradient of 1
    first = len(program.leaves)
    for k in range(len(program.steps) - 1, -1, -1):
        op, i, j = program.steps[k]
        g = adjoint[first + k]
        if op == "add":
            adjoint[i] += g * 0.5
            adjoint[j] += g * 0.5
        elif op == "sub":
            adjoint[i] += g * 0.5
            adjoint[j] -= g * 0.5
        elif op == "mul":
            adjoint[i] += g * values[j]
            adjoint[j] += g * values[i]
        elif op == "square":
            adjoint[i] += g * 2 * values[i]
        elif op == "relu":
            adjoint[i] += g if values[first + k] > 0 else 0.0
        elif op == "scale":
            adjoint[i] += g * 0.9
        else:
            adjoint[i] += g
    return adjoint[:first]


# ---- 2. the seed's expression at scale ---------------------------------------------------


def seed_inputs(n: int, seed: int = 1) -> tuple[list[float], list[float], list[float], list[float]]:
    rng = random.Random(seed)
    a = [rng.uniform(-2, 2) for _ in range(n)]
    b = [rng.uniform(-2, 2) for _ in range(n)]
    c = [rng.uniform(0.5, 3) for _ in range(n)]
    v = [rng.uniform(-1, 1) for _ in range(n)]
    return a, b, c, v


def seed_expression(engine: Engine, inputs: tuple[list[float], ...], use_log: bool) -> tuple[list[Any], list[Any]]:
    """y = 3a + 2b*b + c**-1 (or + log(c)) elementwise; returns the leaves and the outputs."""
    a_data, b_data, c_data, _ = inputs
    a = [engine.leaf(x) for x in a_data]
    b = [engine.leaf(x) for x in b_data]
    c = [engine.leaf(x) for x in c_data]
    if use_log:
        y = [3 * ai + 2 * bi * bi + engine.log(ci) for ai, bi, ci in zip(a, b, c, strict=True)]
    else:
        y = [3 * ai + 2 * bi * bi + ci**-1 for ai, bi, ci in zip(a, b, c, strict=True)]
    return a + b + c, y


def seed_expression_by_hand(inputs: tuple[list[float], ...], use_log: bool) -> list[float]:
    a, b, c, v = inputs
    y = [3 * ai + 2 * bi * bi + (1 / ci) for ai, bi, ci in zip(a, b, c, strict=True)]
    assert len(y) == len(v)
    grad_a = [3 * vi for vi in v]
    grad_b = [4 * bi * vi for bi, vi in zip(b, v, strict=True)]
    if use_log:
        grad_c = [vi / ci for ci, vi in zip(c, v, strict=True)]
    else:
        grad_c = [-vi / (ci * ci) for ci, vi in zip(c, v, strict=True)]
    return grad_a + grad_b + grad_c


# ---- 3. a deep chain ----------------------------------------------------------------------


def deep_chain(engine: Engine, links: int) -> list[Any]:
    x = engine.leaf(0.5)
    y = x
    for _ in range(links):
        y = y * 0.999999 + 0.000001
    engine.backward(y)
    return [x]


def count_nodes(output: Any) -> int:
    """Nodes of a vjpgrad graph, found through the public ``parents`` (so that any version of
    vjpgrad counts alike)."""
    seen = {id(output)}
    stack = [output]
    while stack:
        for parent in stack.pop().parents:
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append(parent)
    return len(seen)
