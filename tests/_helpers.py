"""Helpers the tests share: central finite differences and float comparison."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st


def central_difference(f: Callable[[float], float], x: float, eps: float = 1e-6) -> float:
    """(f(x + h) - f(x - h)) / 2h, with h scaled to x."""
    h = eps * max(1.0, abs(x))
    return (f(x + h) - f(x - h)) / (2 * h)


def close(actual: float, expected: float, rel: float = 1e-4, abs_tol: float = 1e-6) -> bool:
    """Equal within tolerance; inf must match inf of the same sign, nan must match nan."""
    if math.isnan(expected) or math.isnan(actual):
        return math.isnan(expected) and math.isnan(actual)
    if math.isinf(expected) or math.isinf(actual):
        return actual == expected
    return math.isclose(actual, expected, rel_tol=rel, abs_tol=abs_tol)


# ---- random expression graphs, written once for every engine ----------------------------------

GRAPH_OPS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("add", lambda x, y: x + y),
    ("sub", lambda x, y: x - y),
    ("mul", lambda x, y: x * y),
    ("div", lambda x, y: x / (1.5 + y * y)),
    ("pow", lambda x, y: (1.0 + x * x) ** (y * 0.5)),
    ("tanh", lambda x, y: x.tanh()),
    ("sigmoid", lambda x, y: x.sigmoid() * 2),
    ("sin", lambda x, y: x.sin()),
    ("cos", lambda x, y: x.cos() - y),
    ("exp", lambda x, y: (x.tanh() * 2).exp()),
    ("log", lambda x, y: (x * x + 0.5).log()),
    ("sqrt", lambda x, y: (x * x + 0.1).sqrt()),
    ("relu", lambda x, y: x.relu() + y * 0.5),
    ("abs", lambda x, y: abs(x) * y),
    ("square", lambda x, y: x**2 - 1),
    ("const", lambda x, y: 2 * x - 3 / (1 + y * y)),
]

Program = tuple[list[float], list[tuple[int, int, int]]]
"""Leaf values, then steps (op, i, j): each applies an op to two earlier nodes."""

programs = st.tuples(
    st.lists(st.floats(-2, 2), min_size=1, max_size=4),
    st.lists(
        st.tuples(st.integers(0, len(GRAPH_OPS) - 1), st.integers(0, 10**6), st.integers(0, 10**6)),
        min_size=1,
        max_size=25,
    ),
)


def run(program: Program, leaf: Callable[[float], Any]) -> tuple[list[Any], list[Any]]:
    """Evaluate a random program with ``leaf`` making the inputs; returns leaves and all nodes."""
    inputs, steps = program
    leaves = [leaf(x) for x in inputs]
    nodes = list(leaves)
    for op, i, j in steps:
        nodes.append(GRAPH_OPS[op][1](nodes[i % len(nodes)], nodes[j % len(nodes)]))
    return leaves, nodes


def backward_gradients(graph: Callable[[], Any]) -> dict[str, float]:
    """Each named leaf's gradient from one real backward pass on a fresh copy of ``graph``
    (a function returning the output, ``{name: Value or Vector}`` and the seed)."""
    from vjpgrad import Vector

    y, names, seed = graph()
    if isinstance(y, Vector):
        y.backward(seed)
    else:
        y.backward()
    grads: dict[str, float] = {}
    for name, thing in names.items():
        if isinstance(thing, Vector):
            grads.update((f"{name}[{i}]", v.grad) for i, v in enumerate(thing))
        else:
            grads[name] = thing.grad
    return grads
