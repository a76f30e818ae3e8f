"""Helpers the tests share: central finite differences, float comparison by value and by bits, the
expressions several subjects differentiate, and random expression graphs written once for every engine."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector, log
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported


def nan_signs_alone(ours: list[float], theirs: list[float] | None) -> bool:
    """Whether two lists of numbers differ only where both hold a nan (its sign, its payload):
    where nans of both signs meet in one operation, which one's sign the result keeps is not
    reproducible in Python (the bridge's ``NAN_SIGNS_NOTE``)."""
    return (
        theirs is not None
        and len(ours) == len(theirs)
        and all(
            struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
            for a, b in zip(ours, theirs, strict=True)
        )
    )


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


def same(actual: float, expected: float) -> bool:
    """Equal as IEEE values, nan equal to nan, and the sign of a zero counted."""
    if math.isnan(expected):
        return math.isnan(actual)
    return actual == expected and math.copysign(1.0, actual) == math.copysign(1.0, expected)


def equal_or_both_nan(x: float, y: float) -> bool:
    """Equal as numbers (0.0 equals -0.0), or both nan."""
    return x == y or (math.isnan(x) and math.isnan(y))


def bits(x: float | None) -> int | str | None:
    """A float's bits, every nan alike (nan payloads are not part of the contract); None stays None."""
    if x is None:
        return None
    return "nan" if math.isnan(x) else int(struct.unpack("<q", struct.pack("<d", x))[0])


def is_minus_zero(x: float) -> bool:
    return x == 0.0 and math.copysign(1.0, x) < 0


def message(error: pytest.ExceptionInfo[BaseException]) -> str:
    """The whole text of a caught error."""
    return str(error.value)


def numpy() -> Any:
    """NumPy, for the tests of NumPy operands (they skip where it is not installed)."""
    return pytest.importorskip("numpy")


# ---- expressions several subjects differentiate ----------------------------------------------------


def answer_expression(a: Value, b: Value, c: Value) -> Value:
    """The Stack Overflow answer's expression ``3a + 2b² + log(c)``, with ``c ** -1`` for ``log(c)``:
    every gradient at 1.0 is exact."""
    return 3 * a + 2 * b * b + c**-1


Graph = tuple[Vector | Value, dict[str, Vector | Value], list[float] | None]
"""An output, its leaves by name, and its seed (None: the default 1.0)."""


# The four cases of the Stack Overflow answer, as graphs (vjpgrad.cli.cases keeps only their printed output)
def case_1() -> Graph:
    a, b, c = Vector([1.0, 2.0, 3.0]), Vector([3.0, 4.0, 5.0]), Vector([6.0, 7.0, 8.0])
    return 3 * a + 2 * b * b + log(c), {"a": a, "b": b, "c": c}, [0.1, 1.0, 0.0001]


def case_2() -> Graph:
    a, b, c = Value(0.1), Value(1.0), Value(0.1)
    return 3 * a + 2 * b * b + log(c), {"a": a, "b": b, "c": c}, None


def case_3() -> Graph:
    a, b, c = Vector.empty(1), Vector.empty(1), Vector.empty(1)
    return 3 * a + 2 * b * b + log(c), {"a": a, "b": b, "c": c}, [0.1, 1.0, 0.0001]


def case_4() -> Graph:
    a, b, c = Value(1.0), Value(1.0), Value(1.0)
    return 3 * a + 2 * b * b + log(c), {"a": a, "b": b, "c": c}, None


CASES = [case_1, case_2, case_3, case_4]
Case = Callable[[], Graph]


def four_outputs(a: Value, b: Value) -> Vector:
    """Four outputs of two leaves through a shared node, a mask (relu), max and a power."""
    t = a * b + a.exp()
    return Vector([t.sin() * b, (t / b).log(), abs(a - b) ** 1.5, F.max([a, b, t * 0.1]).relu()])


# ---- random expression graphs, written once for every engine ----------------------------------
# Steps that keep a graph finite and smooth (x / (1.5 + y * y), log(x * x + 0.5)...), for the
# comparisons that hold a pass to a tolerance (explain against backward, the stepper's totals).
# Each operation alone, at its edges, is tried from its row in op_cases.py.

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


def twin_scaled(make: Callable[[], tuple[Callable[..., Value], Callable[[Any], None]]], *scales: Any) -> None:
    """``make()`` gives a fresh world: the function and how to set the number it reads. Calls
    made with the world set to each of ``scales`` (the default: 2, 2, 3, 3; what else a setter
    takes, ``None`` to delete, is its own) must give eager's bits and eager's gradient of the
    argument, compiled as uncompiled."""

    def results(compiled: bool) -> list[Any]:
        fn, set_scale = make()
        run = vjpgrad.compile(fn) if compiled else fn
        found = []
        for scale in scales or (2.0, 2.0, 3.0, 3.0):
            set_scale(scale)
            x = Value(1.5)
            y = run(x)
            y.backward()
            found.append((bits(y.data), bits(x.grad)))
        return found

    assert results(compiled=True) == results(compiled=False)


PARTS = 10
"""How many parts a test of many seeded random cases is cut in (``parts``)."""


def parts(count: int = PARTS) -> list[Any]:
    """The parts of a test of many seeded random cases, for ``pytest.mark.parametrize("part", ...)``:
    part 0 runs in the quick loop (``pytest -m "not slow"``), the others are marked slow. The whole
    suite runs every case, the quick loop a ``count``-th of them, so that no test of the quick loop
    takes more than about a second (CONTRIBUTING.md). Each part seeds its own generator
    (``seed + 1000 * part``): part 0 runs the first cases the test ran before it was cut."""
    return [0, *(pytest.param(k, marks=pytest.mark.slow) for k in range(1, count))]


def cases_of(part: int, total: int, count: int = PARTS) -> range:
    """The numbers of part ``part``'s cases among a test's ``total`` (``range(total)`` cut in
    ``count`` runs of one length), for a test that chooses a kind of case by its number."""
    size, rest = divmod(total, count)
    assert not rest, f"{total} cases do not cut into {count} parts of one length"
    return range(part * size, (part + 1) * size)
