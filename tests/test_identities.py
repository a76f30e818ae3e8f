"""Identities the engine must keep, checked on every operation of the table at the IEEE-754
edges, without torch and without random search (so a mutation run sees the same inputs for
every mutant):

- compiled == eager, bit for bit, for the outputs and every gradient;
- the differentiable pass (create_graph=True) gives the same first derivatives as the float pass;
- the gradient is linear in the seed: seeding a*u + b*v gives a*(pass of u) + b*(pass of v);
- two passes give exactly twice one pass;
- second derivatives agree with central differences of the first.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import vjpgrad
from vjpgrad import Value, Vector
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported

inf, nan = math.inf, math.nan


def bits(x: float) -> int | str:
    """A float's bits, every nan alike (nan payloads are not part of the contract)."""
    return "nan" if math.isnan(x) else int(struct.unpack("<q", struct.pack("<d", x))[0])


EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, 1e-300, 1e300, 700.0, -800.0, inf, -inf, nan]

UNARY: list[tuple[str, Callable[[Any], Any]]] = [
    ("neg", lambda x: -x),
    ("abs", abs),
    ("exp", lambda x: x.exp()),
    ("log", lambda x: x.log()),
    ("sqrt", lambda x: x.sqrt()),
    ("sin", lambda x: x.sin()),
    ("cos", lambda x: x.cos()),
    ("tan", lambda x: x.tan()),
    ("tanh", lambda x: x.tanh()),
    ("sigmoid", lambda x: x.sigmoid()),
    ("relu", lambda x: x.relu()),
    ("reciprocal", lambda x: x.reciprocal()),
    *[(f"x ** {k}", lambda x, k=k: x**k) for k in (0, 1, 0.5, -0.5, -1, 2, 3, -2, 2.5, -1.5)],
    ("2 ** x", lambda x: 2**x),
    ("0 ** x", lambda x: 0**x),
    ("-2 ** x", lambda x: (-2.0) ** x),
    ("x / 4", lambda x: x / 4),
    ("3 / x", lambda x: 3 / x),
    ("x - 7", lambda x: x - 7),
    ("7 - x", lambda x: 7 - x),
    ("x * -0.0", lambda x: x * -0.0),
    ("max(x, 1, x / 2)", lambda x: F.max([x, 1.0, x * 0.5])),
]

BINARY: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("+", lambda x, y: x + y),
    ("-", lambda x, y: x - y),
    ("*", lambda x, y: x * y),
    ("/", lambda x, y: x / y),
    ("**", lambda x, y: x**y),
    ("max", lambda x, y: F.max([x, y])),
    ("max with a constant", lambda x, y: F.max([x, 0.0, y])),
]

PAIRS = [(x, y) for x in (0.0, -0.0, 1.0, -2.0, 0.5, inf, nan) for y in (0.0, -0.0, 2.0, -1.0, 0.5, -inf, nan)]


def eager_and_compiled(fn: Callable[..., Any], points: Sequence[tuple[float, ...]], seed: float) -> None:
    compiled = vjpgrad.compile(fn)
    for point in points:
        results = []
        for f in (fn, compiled):
            xs = [Value(x) for x in point]
            out = f(*xs)
            if out.requires_grad:
                out.backward(seed)
            results.append((bits(out.data), [bits(x.grad) for x in xs]))
        assert results[1] == results[0], (point, seed)
    assert compiled.recordings == 1


@pytest.mark.parametrize(("name", "fn"), UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("seed", [1.0, -0.5, 0.0])
def test_a_compiled_operation_equals_eager_bit_for_bit(name: str, fn: Callable[[Any], Any], seed: float) -> None:
    eager_and_compiled(fn, [(x,) for x in EDGES], seed)


@pytest.mark.parametrize(("name", "fn"), BINARY, ids=[b[0] for b in BINARY])
def test_a_compiled_binary_operation_equals_eager_bit_for_bit(name: str, fn: Callable[[Any, Any], Any]) -> None:
    eager_and_compiled(fn, PAIRS, 1.0)


def test_compiled_vector_outputs_with_shared_nodes_equal_eager() -> None:
    def fn(x: Value, y: Value) -> Vector:
        t = x * y
        return Vector([t.sin(), t + x, (t - y).relu(), t])

    compiled = vjpgrad.compile(fn)
    for point in [(0.5, -1.5), (2.0, 3.0), (-1.0, 0.0)]:
        results = []
        for f in (fn, compiled):
            x, y = Value(point[0]), Value(point[1])
            f(x, y).backward([1.0, -2.0, 0.5, 3.0])
            results.append((bits(x.grad), bits(y.grad)))
        assert results[0] == results[1]


def test_a_compiled_leaf_that_is_also_an_output_gets_its_seed_first_as_eager() -> None:
    def fn(x: Value) -> Vector:
        return Vector([x, (1.0 + x * x) ** (x * 0.5)])

    compiled = vjpgrad.compile(fn)
    compiled(Value(0.3))  # the recording; the calls below replay
    results = []
    for f in (fn, compiled):
        x = Value(-1.0)
        f(x).backward([1.0, 1.0])
        results.append(bits(x.grad))
    assert results[1] == results[0]


INLINE: list[tuple[str, Callable[..., Any], int]] = [
    *[(name, fn, 1) for name, fn in UNARY if not name.startswith("max")],
    *[(name, fn, 2) for name, fn in BINARY if not name.startswith("max")],
    ("x ** a constant made inside", lambda x: x ** Value(2.5, requires_grad=False), 1),
    ("a constant made inside ** x", lambda x: Value(0.0, requires_grad=False) ** x, 1),
]


@pytest.mark.parametrize(("name", "fn", "arity"), INLINE, ids=[i[0] for i in INLINE])
def test_the_backward_of_a_built_in_operation_is_generated_inline(
    name: str, fn: Callable[..., Any], arity: int
) -> None:
    # straight-line code: every edge of a table operation is written out, masks as conditional
    # expressions; only a rule that needs numbers (a custom operation's) is called as the code runs
    compiled = vjpgrad.compile(fn)
    xs = [Value(0.5 + k) for k in range(arity)]
    compiled(*xs).backward()
    backward = compiled.source.split("def backward")[1]
    assert "_s = " not in backward, compiled.source


def test_masks_are_inline_conditionals() -> None:
    compiled = vjpgrad.compile(lambda x, y: x**y + x.relu() + abs(y))
    compiled(Value(0.5), Value(2.0)).backward()
    backward = compiled.source.split("def backward")[1]
    assert "0.0 if x1 == 0.0 else" in backward
    assert "0.0 if (x0 == 0.0) and (x1 >= 0.0) else" in backward
    assert "0.0 if t2 <= 0.0 else" in backward
    assert "_sign(x1)" in backward


@pytest.mark.parametrize("exponent", [4.0, -1.0])
def test_a_power_with_a_constant_made_inside_compiles_to_eagers_gradient(exponent: float) -> None:
    def fn(x: Value) -> Value:
        return x ** Value(exponent, requires_grad=False)

    compiled = vjpgrad.compile(fn)
    differ = []
    for k in range(200):
        x0 = 1.0 + k / 97.0
        grads = []
        for f in (fn, compiled):
            x = Value(x0)
            f(x).backward()
            grads.append(bits(x.grad))
        differ += [x0] if grads[0] != grads[1] else []
    assert differ == []


# ---- the differentiable pass gives the float pass's first derivatives ----------------------------


@pytest.mark.parametrize(("name", "fn"), UNARY, ids=[u[0] for u in UNARY])
def test_create_graph_gives_the_same_first_derivative(name: str, fn: Callable[[Any], Any]) -> None:
    for x0 in EDGES:
        x = Value(x0)
        y = fn(x)
        if not y.requires_grad:
            continue
        (plain,) = vjpgrad.gradients(y, [x], retain_graph=True)
        (graphed,) = vjpgrad.gradients(y, [x], create_graph=True)
        assert bits(graphed.data) == bits(plain.data), (name, x0)


@pytest.mark.parametrize(("name", "fn"), BINARY, ids=[b[0] for b in BINARY])
def test_create_graph_gives_the_same_first_derivatives_of_two_operands(
    name: str, fn: Callable[[Any, Any], Any]
) -> None:
    for x0, y0 in PAIRS:
        x, y = Value(x0), Value(y0)
        out = fn(x, y)
        plain = vjpgrad.gradients(out, [x, y], retain_graph=True)
        graphed = vjpgrad.gradients(out, [x, y], create_graph=True)
        assert [bits(g.data) for g in graphed] == [bits(g.data) for g in plain], (name, x0, y0)


# ---- second derivatives against central differences of the first -------------------------------

SMOOTH: list[tuple[str, Callable[[Any], Any], float]] = [
    ("x ** 2.5", lambda x: x**2.5, 1.7),
    ("x ** -1.5", lambda x: x**-1.5, 0.8),
    ("x ** 3", lambda x: x**3, -1.3),
    ("x ** 0.5", lambda x: x**0.5, 2.2),
    ("x ** -0.5", lambda x: x**-0.5, 0.6),
    ("x ** -2", lambda x: x**-2, 1.9),
    ("x ** -1", lambda x: x**-1, -0.7),
    ("x ** x", lambda x: x**x, 1.3),
    ("2 ** x", lambda x: 2**x, 0.4),
    ("exp", lambda x: x.exp(), 0.3),
    ("log", lambda x: x.log(), 1.4),
    ("sqrt", lambda x: x.sqrt(), 0.9),
    ("sin", lambda x: x.sin(), 0.7),
    ("cos", lambda x: x.cos(), -0.4),
    ("tan", lambda x: x.tan(), 0.5),
    ("tanh", lambda x: x.tanh(), 0.6),
    ("sigmoid", lambda x: x.sigmoid(), -0.8),
    ("reciprocal", lambda x: x.reciprocal(), 1.6),
    ("3 / x", lambda x: 3 / x, -1.1),
    ("x / (1 + x * x)", lambda x: x / (1 + x * x), 0.35),
    ("abs * x", lambda x: abs(x) * x, -1.5),
    ("relu ** 2", lambda x: x.relu() ** 2, 1.2),
    ("max(x * x, 2 - x)", lambda x: F.max([x * x, 2 - x]), 1.5),
]


def first_derivative(fn: Callable[[Any], Any], x0: float) -> float:
    x = Value(x0)
    fn(x).backward()
    return x.grad


@pytest.mark.parametrize(("name", "fn", "x0"), SMOOTH, ids=[s[0] for s in SMOOTH])
def test_second_derivatives_agree_with_central_differences_of_the_first(
    name: str, fn: Callable[[Any], Any], x0: float
) -> None:
    x = Value(x0)
    (g,) = vjpgrad.gradients(fn(x), [x], create_graph=True)
    (gg,) = vjpgrad.gradients(g, [x])
    h = 1e-5
    numeric = (first_derivative(fn, x0 + h) - first_derivative(fn, x0 - h)) / (2 * h)
    assert math.isclose(gg.data, numeric, rel_tol=1e-6, abs_tol=1e-8), (name, gg.data, numeric)


def test_second_derivatives_by_hand() -> None:
    # d2/dx2 x ** 2.5 = 2.5 * 1.5 * x ** 0.5 = 7.5 at 4; d2/dx2 exp = exp; d2/dx2 x ** 3 = 6x
    assert vjpgrad.grad(vjpgrad.grad(lambda x: x**2.5))(4.0) == 7.5
    assert vjpgrad.grad(vjpgrad.grad(lambda x: x**3))(-2.0) == -12.0
    assert vjpgrad.grad(vjpgrad.grad(lambda x: x.exp()))(0.0) == 1.0
    # the mask of x ** y where y == 0 holds in the differentiable pass too: d/dx x ** y = 0 there
    x, y = Value(0.0), Value(0.0)
    gx, gy = vjpgrad.gradients(x**y, [x, y], create_graph=True)
    assert (bits(gx.data), bits(gy.data)) == (bits(0.0), bits(0.0))  # 0 ** 0: d/dy masked where x == 0 <= y


# ---- linearity in the seed, and two passes -------------------------------------------------------


def graph(a: Value, b: Value) -> Vector:
    t = a * b + a.exp()
    return Vector([t.sin() * b, (t / b).log(), abs(a - b) ** 1.5, F.max([a, b, t * 0.1]).relu()])


def pass_with(seed: list[float]) -> tuple[float, float]:
    a, b = Value(0.7), Value(1.3)
    graph(a, b).backward(seed)
    return a.grad, b.grad


def test_the_gradient_is_linear_in_the_seed() -> None:
    u, v = [1.0, 0.0, 2.0, -1.0], [0.0, 3.0, -1.0, 0.5]
    pu, pv = pass_with(u), pass_with(v)
    for alpha, beta in [(2.0, -3.0), (0.5, 0.25), (-1.0, 1.0)]:
        combined = pass_with([alpha * p + beta * q for p, q in zip(u, v, strict=True)])
        for got, gu, gv in zip(combined, pu, pv, strict=True):
            assert math.isclose(got, alpha * gu + beta * gv, rel_tol=1e-12, abs_tol=1e-12)
    # each element alone: the seed picks rows of the Jacobian
    rows = [pass_with([1.0 if i == k else 0.0 for i in range(4)]) for k in range(4)]
    full = pass_with([1.0, 1.0, 1.0, 1.0])
    for j in range(2):
        assert math.isclose(full[j], math.fsum(row[j] for row in rows), rel_tol=1e-12)


def test_two_passes_are_exactly_twice_one_pass_on_every_node() -> None:
    a, b = Value(0.7), Value(1.3)
    y = graph(a, b)
    nodes = [a, b, *y]
    y.backward([1.0, -2.0, 0.5, 3.0], retain_graph=True)
    once = [n.grad for n in nodes]
    y.backward([1.0, -2.0, 0.5, 3.0])
    assert [n.grad for n in nodes] == [2 * g for g in once]


def test_gradients_equals_backward_and_leaves_grad_alone() -> None:
    a, b = Value(0.7), Value(1.3)
    y = graph(a, b)
    ga, gb = vjpgrad.gradients(y, [a, b], [1.0, -2.0, 0.5, 3.0], retain_graph=True)
    assert (a.grad, b.grad) == (0.0, 0.0)
    y.backward([1.0, -2.0, 0.5, 3.0])
    assert (ga.data, gb.data) == (a.grad, b.grad)
