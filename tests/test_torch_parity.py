"""vjpgrad against PyTorch (float64, CPU), to the bit.

What "the same" means here:

- Forward values and gradients are compared by their bits; nan equals nan whatever its
  payload and sign.
- Gradients that come straight from a pass (``vjpgrad.gradients``, ``torch.autograd.grad``)
  keep the sign of a zero: +0.0 and -0.0 differ. A leaf's ``.grad`` starts at 0.0 in
  vjpgrad and at None in PyTorch (which stores the first gradient as it is), and
  ``0.0 + -0.0`` is ``0.0``, so there the two zeros are equal.
- ``exp log log1p sqrt sin cos tan tanh`` (and ``x ** 0.5``, which PyTorch computes as
  ``sqrt``): PyTorch runs these through its vectorised kernels (MKL's VML here, SLEEF
  elsewhere), whose results may be one ulp from the correctly rounded one, while vjpgrad gives
  the C library's (glibc's ``tanh`` is itself up to two ulps off, its others one). ``log1p``
  differs in the last bit on about 9% of inputs in [-0.99, 6], even one number at a time.
  ``atan2`` and ``hypot`` of one number at a time, as compared here, are the C library's in
  both, to the bit. So for these forward
  values vjpgrad must give exactly the C library's number, and PyTorch's may differ from it
  by at most two ulps. Where they differ, so may every gradient computed from them: such a
  case is counted (hypothesis ``event``) and its gradients compared to 1e-9 relative; every
  other case, and every other operation, is compared by bits.

``VJPGRAD_EXAMPLES`` (see conftest.py) raises the number of generated examples; a large
campaign is ``VJPGRAD_EXAMPLES=3000 pytest tests/test_torch_parity.py``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from op_cases import BY_NAME, CASES, CONSTANTS, Kernels, Spelling

import vjpgrad
from vjpgrad import Value, Vector

torch = pytest.importorskip("torch")

inf, nan = math.inf, math.nan
TINY = 5e-324
HUGE = 1.7976931348623157e308

# ---- comparing floats ---------------------------------------------------------------------------


def bits(x: float) -> int:
    return int(struct.unpack("<q", struct.pack("<d", x))[0])


def identical(ours: float, theirs: float, *, zero_sign: bool = True) -> bool:
    """Same bits (any nan equals any nan); with ``zero_sign=False``, 0.0 equals -0.0."""
    if ours != ours or theirs != theirs:
        return ours != ours and theirs != theirs
    if not zero_sign and ours == 0.0 and theirs == 0.0:
        return True
    return bits(ours) == bits(theirs)


def ulps_apart(a: float, b: float) -> float:
    """How many doubles lie between a and b (inf when one is nan or infinite and they differ)."""
    if identical(a, b, zero_sign=False):
        return 0
    if not (math.isfinite(a) and math.isfinite(b)):
        return inf

    def ordinal(x: float) -> int:
        n = bits(x)
        return n if n >= 0 else -(n & 0x7FFFFFFFFFFFFFFF)

    return abs(ordinal(a) - ordinal(b))


def near(ours: float, theirs: float) -> bool:
    """The comparison for a gradient downstream of a one-ulp difference in PyTorch's kernels."""
    if not (math.isfinite(ours) and math.isfinite(theirs)):
        return identical(ours, theirs, zero_sign=False)
    return math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-300)


def test_the_comparisons_see_the_last_bit_and_the_sign_of_zero() -> None:
    assert identical(nan, -nan)
    assert not identical(nan, 0.0)
    assert not identical(0.0, -0.0)
    assert identical(0.0, -0.0, zero_sign=False)
    assert not identical(1.0, math.nextafter(1.0, 2.0))
    assert ulps_apart(1.0, math.nextafter(1.0, 2.0)) == 1
    assert ulps_apart(-TINY, TINY) == 2
    assert ulps_apart(inf, HUGE) == inf
    assert ulps_apart(nan, nan) == 0


# ---- both engines -------------------------------------------------------------------------------

D = torch.float64


def tensor(x: float, requires_grad: bool = True) -> Any:
    return torch.tensor(x, dtype=D, requires_grad=requires_grad)


def number(t: Any) -> float:
    return 0.0 if t is None else float(t.item())


def libm(name: str, x: float) -> float | None:
    """The C library's ``name`` at ``x`` (``math.<name>``; None at an edge where Python's math raises)."""
    try:
        result: float = getattr(math, name)(x)
    except (ValueError, OverflowError):
        return None
    return result


def libm_agrees(name: str, x: float) -> bool:
    """Whether PyTorch's ``name`` at ``x`` has the C library's bits."""
    with torch.no_grad():
        theirs = float(getattr(torch, name)(tensor(x, False)).item())
    ours = libm(name, x)
    return ours is None or identical(ours, theirs)  # at an edge (log(0)...) both are exact


def kernel_explains(kernel: str | None, x: float, ours: float, theirs: float) -> bool:
    """Whether ``ours != theirs`` is PyTorch's vectorised ``kernel`` differing from the C
    library: ours is the C library's number and theirs is at most two ulps from it."""
    if kernel is None:
        return False
    expected = libm(kernel, x)
    return expected is not None and identical(ours, expected) and ulps_apart(ours, theirs) <= 2


# ---- every operation, every operand order -----------------------------------------------------

EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, 0.1, 1e-300, -1e-300, TINY, -TINY]
EDGES += [1e300, -1e300, HUGE, -HUGE, 700.0, -800.0, 1e10, 20.0, -20.0, 1e-8, inf, -inf, nan]
SEEDS = [1.0, -0.5, 0.0, -0.0, 3.7e-5, 1e300, -2.25, inf, -inf, nan]

floats = st.floats(allow_nan=True, allow_infinity=True)
inputs = st.sampled_from(EDGES) | st.floats(-30, 30) | floats
seeds = st.sampled_from(SEEDS) | st.floats(-4, 4) | floats

FORMS = [form for case in CASES for form in case.spellings()]
FUNCTIONS = [form for form in FORMS if form.operands == "v"]
"""The operations of one Value: x.exp(), abs(x), -x..."""
WITH_A_NUMBER = [form for form in FORMS if form.values == 1 and "n" in form.operands]
"""A Value and a number: x + c, c + x..., c ** x, x ** k."""
BINARY = [form for form in FORMS if form.operands == "vv"]
"""Two Values: x + y..., x ** y, max([x, y])."""


@dataclass
class Mismatches:
    """What one comparison found: hard mismatches, and cases a vectorised kernel explains."""

    found: list[tuple[Any, ...]] = field(default_factory=list)
    explained: int = 0

    def check(self) -> None:
        assert not self.found, (
            f"{len(self.found)} mismatches (the spelling, its operands, the seed, what differs, vjpgrad's, "
            f"PyTorch's), first: {self.found[:3]}; where PyTorch computes the operation with a vectorised kernel "
            "of its own (compare torch.NAME on a large float64 tensor with the row's float function), its row in "
            'tests/op_cases.py says vectorised=kernel("NAME") (CONTRIBUTING.md, adding an operation, step 3)'
        )


def compare_operation(form: Spelling, xs: Sequence[float], seed: float, result: Mismatches) -> None:
    """Run ``form`` at ``xs`` on Values and on tensors (a number operand stays a number), seed
    both with ``seed``, compare the output and every Value operand's gradient: by
    ``gradients``/``autograd.grad`` (zeros signed) and by ``backward`` into ``.grad``."""
    ours_args = [Value(x) if kind == "v" else x for kind, x in zip(form.operands, xs, strict=True)]
    theirs_args = [tensor(x) if kind == "v" else x for kind, x in zip(form.operands, xs, strict=True)]
    ours_in = [a for a in ours_args if isinstance(a, Value)]
    theirs_in = [t for t, kind in zip(theirs_args, form.operands, strict=True) if kind == "v"]
    ours = form.call(*ours_args)
    theirs = form.torch(torch, *theirs_args) if form.torch else form.call(*theirs_args)
    mine = vjpgrad.gradients(ours, ours_in, seed, retain_graph=True)
    expected = torch.autograd.grad(theirs, theirs_in, tensor(seed, False), retain_graph=True)
    ours.backward(seed)
    theirs.backward(tensor(seed, False))
    shown = form.text
    out, out_t = ours.data, number(theirs)
    forward, dependencies = form.vectorised(*xs)
    explained = False
    if not identical(out, out_t):
        zero_tie = form.zero_ties_differ and identical(out, out_t, zero_sign=False)  # a known difference
        if not zero_tie and not (forward and kernel_explains(forward[0], forward[1], out, out_t)):
            result.found.append((shown, xs, seed, "forward", out, out_t))
            return
        explained = not zero_tie
    explained = explained or not all(libm_agrees(fn, x) for fn, x in dependencies)
    result.explained += explained
    for i, x in enumerate(ours_in):
        pairs = [(mine[i].data, number(expected[i]), True), (x.grad, number(theirs_in[i].grad), False)]
        for a, b, signed in pairs:
            ok = near(a, b) if explained else identical(a, b, zero_sign=signed)
            if not ok:
                result.found.append((shown, xs, seed, f"d/d operand {i}", "gradients" if signed else ".grad", a, b))


def own_edges(form: Spelling) -> list[tuple[float, ...]]:
    """The operands its row's ``edges`` name, for the row's own form (log1p's -1...)."""
    case = next(case for case in CASES if case.spellings()[0] == form)
    return [edge[:-1] for edge in case.edges]


@pytest.mark.slow  # a grid of edges per operation, each through torch
@pytest.mark.parametrize("form", FUNCTIONS, ids=[form.text for form in FUNCTIONS])
def test_each_function_at_the_edges_agrees_with_pytorch_to_the_bit(form: Spelling) -> None:
    result = Mismatches()
    for (x,) in [*[(x,) for x in EDGES], *own_edges(form)]:
        for seed in SEEDS:
            compare_operation(form, [x], seed, result)
    result.check()


@pytest.mark.slow  # a grid of edges per operation, each through torch
@pytest.mark.parametrize("form", WITH_A_NUMBER, ids=[form.text for form in WITH_A_NUMBER])
def test_each_operation_with_a_number_at_the_edges_agrees_with_pytorch_to_the_bit(form: Spelling) -> None:
    result = Mismatches()
    value_first = form.operands == "vn"
    for c in form.numbers:
        for x in EDGES:
            for seed in (1.0, -0.0, inf, nan, 0.3):
                compare_operation(form, [x, c] if value_first else [c, x], seed, result)
    result.check()


@pytest.mark.slow  # a grid of edges per operation, each through torch
@pytest.mark.parametrize("form", BINARY, ids=[form.text for form in BINARY])
def test_each_binary_operation_at_the_edges_agrees_with_pytorch_to_the_bit(form: Spelling) -> None:
    result = Mismatches()
    for xy in [*[(x, y) for x in EDGES for y in EDGES], *own_edges(form)]:
        for seed in (1.0, -0.0, inf, nan, -0.3):
            compare_operation(form, xy, seed, result)
    result.check()


@given(st.sampled_from(FUNCTIONS), inputs, seeds)
def test_each_function_agrees_with_pytorch_to_the_bit(form: Spelling, x: float, seed: float) -> None:
    result = Mismatches()
    compare_operation(form, [x], seed, result)
    if result.explained:
        event("PyTorch's vectorised kernel differs from libm by one ulp")
    result.check()


@given(st.sampled_from(WITH_A_NUMBER), inputs, st.sampled_from(CONSTANTS) | st.floats(-10, 10), seeds)
def test_each_operation_with_a_number_agrees_with_pytorch_to_the_bit(
    form: Spelling, x: float, c: float, seed: float
) -> None:
    result = Mismatches()
    compare_operation(form, [x, c] if form.operands == "vn" else [c, x], seed, result)
    if result.explained:
        event("PyTorch's vectorised kernel differs from libm by one ulp")
    result.check()


@given(st.sampled_from(BINARY), inputs, inputs, seeds)
def test_each_binary_operation_agrees_with_pytorch_to_the_bit(form: Spelling, x: float, y: float, seed: float) -> None:
    result = Mismatches()
    compare_operation(form, [x, y], seed, result)
    if result.explained:
        event("PyTorch's vectorised kernel differs from libm by one ulp")
    result.check()


def test_a_vectorised_difference_is_a_rounding_difference_of_pytorch_or_libm() -> None:
    # The exemption above is narrow: each library is within its accuracy of the correctly
    # rounded result (PyTorch's sqrt here is one ulp from the exact IEEE square root).
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 200
    for name, x in [("sqrt", 2.970128361985127), ("tanh", 0.3962226569192966), ("exp", 0.10567641159200747)]:
        ours = BY_NAME[name].call(Value(x)).data
        theirs = number(BY_NAME[name].torch(torch, tensor(x)))
        exact = float(getattr(mpmath, name)(mpmath.mpf(x)))
        assert ours == libm(name, x)
        assert ulps_apart(theirs, exact) <= 1
        assert ulps_apart(ours, exact) <= 2
        assert kernel_explains(name, x, ours, theirs) or identical(ours, theirs)
        assert not kernel_explains(name, x, math.nextafter(ours, inf), theirs)  # ours must be libm's


# ---- the formulas the edges single out ------------------------------------------------------------


def torch_grad(f: Callable[[Any], Any], x: float, seed: float) -> float:
    t = tensor(x)
    return number(torch.autograd.grad(f(t), [t], tensor(seed, False))[0])


def ours_grad(f: Callable[[Any], Any], x: float, seed: float) -> float:
    v = Value(x)
    return vjpgrad.gradients(f(v), [v], seed)[0].data


def test_relu_keeps_the_sign_of_a_negative_zero_like_pytorch() -> None:
    assert identical(Value(-0.0).relu().data, -0.0)
    assert identical(Value(-0.0).relu().data, number(torch.relu(tensor(-0.0))))
    assert identical(Value(0.0).relu().data, 0.0)
    assert identical(vjpgrad.relu(-0.0), -0.0)  # the module function on a number too


@pytest.mark.parametrize("seed", [inf, -inf, nan])
@pytest.mark.parametrize(
    ("name", "f", "x"),
    [
        ("relu below 0", lambda v: v.relu(), -1.0),
        ("relu at -0.0", lambda v: v.relu(), -0.0),
        ("relu at 0", lambda v: v.relu(), 0.0),
        ("x ** 0", lambda v: v**0, 3.0),
        ("x ** 0 at nan", lambda v: v**0, nan),
        ("x ** 0.0 at inf", lambda v: v**0.0, inf),
    ],
)
def test_masks_give_exactly_zero_whatever_the_upstream_gradient(
    name: str, f: Callable[[Any], Any], x: float, seed: float
) -> None:
    ours = ours_grad(f, x, seed)
    assert identical(ours, 0.0), (name, ours)
    assert identical(ours, torch_grad(f, x, seed))


def test_tanh_backward_is_one_fused_multiply_add_as_in_pytorchs_cpu_kernel() -> None:
    # PyTorch's tanh_backward kernel computes g * (1 - r * r) with 1 - r*r rounded once (the
    # compiler contracts it to fma(-r, r, 1)); rounding r * r first loses the last bits.
    x, seed = 3.0, 1.0
    r = math.tanh(x)
    twice_rounded = seed * (1.0 - r * r)
    ours, theirs = ours_grad(lambda v: v.tanh(), x, seed), torch_grad(lambda t: t.tanh(), x, seed)
    assert ours == theirs
    assert ours != twice_rounded


def test_tanh_backward_rounds_once_with_create_graph_too() -> None:
    x = Value(3.0)
    (g,) = vjpgrad.gradients(x.tanh(), [x], create_graph=True)
    assert g.data == torch_grad(lambda t: t.tanh(), 3.0, 1.0)
    assert g.requires_grad  # still differentiable: the data is PyTorch's, the graph 1 - r*r's
    (second,) = vjpgrad.gradients(g, [x])
    assert second.data == pytest.approx(-2 * math.tanh(3.0) * (1 - math.tanh(3.0) ** 2), rel=1e-12)


def test_create_graph_divides_a_number_by_a_value_as_pytorch_does() -> None:
    # log's backward is g / x. With create_graph the seed is a number and x a Value: that
    # must be one division, not Python's number / Value, which is (1 / x) * number.
    x, seed = -1.970723652336229, -1.8765205430492928
    v = Value(x)
    (g,) = vjpgrad.gradients(-v.log(), [v], seed, create_graph=True)
    expected = torch_grad(lambda t: -t.log(), x, seed)
    assert identical(g.data, expected)
    assert expected != (1 / x) * -seed


def test_the_exponents_gradient_of_tensor_pow_multiplies_by_zero_and_is_not_masked() -> None:
    # pow_backward_exponent: grad * where(base == 0 & exponent >= 0, 0, result * log(base)):
    # an infinite upstream gradient times that 0 is nan in PyTorch.
    x, y = Value(0.0), Value(2.0)
    (gx, gy) = vjpgrad.gradients(x**y, [x, y], inf)
    tx, ty = tensor(0.0), tensor(2.0)
    (ex, ey) = torch.autograd.grad(tx**ty, [tx, ty], tensor(inf, False))
    assert math.isnan(number(ey))
    assert math.isnan(gy.data)
    assert identical(gx.data, number(ex))


def test_a_number_to_a_value_power_multiplies_by_zero_at_base_zero() -> None:
    # pow(Scalar, Tensor) for base 0: grad * where(exponent >= 0, 0, result * log(0))
    assert math.isnan(torch_grad(lambda t: 0.0**t, 2.0, inf))
    assert math.isnan(ours_grad(lambda v: 0.0**v, 2.0, inf))
    assert identical(ours_grad(lambda v: 0.0**v, 2.0, -0.0), torch_grad(lambda t: 0.0**t, 2.0, -0.0))


# ---- random graphs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphOp:
    """One step of a random graph: a form of a row of op_cases.py, of the step's earlier nodes x
    (and y, for two Values). A number operand is the step's constant c in a form with a number for
    a Value (x + c); in a row's own form (x ** k, c ** x) it is one of the row's numbers, picked
    by the step's index j (PyTorch picks a kernel by k: sqrt for x ** 0.5)."""

    form: Spelling
    own: bool  # the row's own form

    @property
    def name(self) -> str:
        return self.form.text

    def numbers(self, c: float, j: int) -> list[float]:
        count = self.form.operands.count("n")
        if not count:
            return []
        return [self.form.numbers[j % len(self.form.numbers)]] * count if self.own else [c] * count

    def operands(self, x: Any, y: Any, c: float, j: int) -> list[Any]:
        values, numbers = iter((x, y)), iter(self.numbers(c, j))
        return [next(values) if kind == "v" else next(numbers) for kind in self.form.operands]

    def f(self, x: Any, y: Any, c: float, j: int) -> Any:
        args = self.operands(x, y, c, j)
        if self.form.torch and not isinstance(x, Value):
            return self.form.torch(torch, *args)
        return self.form.call(*args)

    def kernels(self, x: float, y: float, c: float, j: int) -> Kernels:
        return self.form.vectorised(*self.operands(x, y, c, j))


GRAPH_OPS: list[GraphOp] = [GraphOp(form, k == 0) for case in CASES for k, form in enumerate(case.spellings())]


@dataclass(frozen=True)
class Program:
    """Leaves (value, requires_grad), then steps (op, i, j, constant) over earlier nodes."""

    leaves: list[tuple[float, bool]]
    steps: list[tuple[int, int, int, float]]

    def __repr__(self) -> str:  # what hypothesis prints for a failing example: a readable program
        lines = [f"n{k} = leaf({x!r}, requires_grad={g})" for k, (x, g) in enumerate(self.leaves)]
        count = len(self.leaves)
        for op, i, j, c in self.steps:
            step = GRAPH_OPS[op]
            lines.append(f"n{count} = {step.name} (x=n{i % count}, y=n{j % count}, c={c!r}, j={j})")
            count += 1
        return "Program:\n  " + "\n  ".join(lines)


moderate = st.floats(-3, 3) | st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.0])
leaf_values = moderate | st.sampled_from(EDGES)
programs = st.builds(
    Program,
    st.lists(st.tuples(leaf_values, st.booleans() | st.just(True)), min_size=1, max_size=4),
    st.lists(
        st.tuples(
            st.integers(0, len(GRAPH_OPS) - 1),
            st.integers(0, 10**6),
            st.integers(0, 10**6),
            moderate | st.sampled_from(CONSTANTS),
        ),
        min_size=1,
        max_size=30,
    ),
)
graph_seeds = st.floats(-3, 3) | st.sampled_from(SEEDS)


@dataclass
class Built:
    leaves: list[Any]
    nodes: list[Any]
    steps: list[tuple[GraphOp, Any, Any, float, int]]  # the op and its operands, per step


def build(program: Program, leaf: Callable[[float, bool], Any]) -> Built:
    built = Built([leaf(x, g) for x, g in program.leaves], [], [])
    built.nodes = list(built.leaves)
    for op, i, j, c in program.steps:
        step = GRAPH_OPS[op]
        x, y = built.nodes[i % len(built.nodes)], built.nodes[j % len(built.nodes)]
        built.nodes.append(step.f(x, y, c, j))
        built.steps.append((step, x, y, c, j))
    return built


def value_of(x: Any) -> float:
    return x.data if isinstance(x, Value) else number(x)


def compare_forward(ours: Built, theirs: Built) -> bool:
    """Every node's value by bits. Returns False when the first difference is one ulp of a
    vectorised kernel (everything downstream may then differ); fails on any other."""
    for k, (a, b) in enumerate(zip(ours.nodes, theirs.nodes, strict=True)):
        if identical(a.data, number(b)):
            continue
        step, x, y, c, j = ours.steps[k - len(ours.leaves)]
        if step.form.zero_ties_differ and identical(a.data, number(b), zero_sign=False):
            return False  # PyTorch's max of a tie of 0.0 and -0.0 may be either: a known difference
        forward, _ = step.kernels(x.data, y.data, c, j)
        assert forward is not None, (k, step.name, a.data, number(b))
        assert kernel_explains(*forward, a.data, number(b)), (k, step.name, a.data, number(b))
        return False
    for step, x, y, c, j in ours.steps:
        _, dependencies = step.kernels(x.data, y.data, c, j)
        if not all(libm_agrees(fn, v) for fn, v in dependencies):
            return False
    return True


def graph_pair(program: Program) -> tuple[Built, Built] | None:
    ours = build(program, lambda x, g: Value(x, requires_grad=g))
    theirs = build(program, tensor)
    if not compare_forward(ours, theirs):
        event("a vectorised kernel's one-ulp difference, or max's zero tie: gradients not compared by bits")
        return None
    return ours, theirs


def outputs_of(built: Built, count: int) -> list[Any]:
    """The last ``count`` distinct nodes that take gradient (vjpgrad and torch agree on which)."""
    found = [n for n in built.nodes[len(built.leaves) :] if n.requires_grad]
    return found[-count:]


def compare_gradients(ours: Built, theirs: Built, count: int, seed_list: list[float]) -> None:
    outs, outs_t = outputs_of(ours, count), outputs_of(theirs, count)
    assert len(outs) == len(outs_t)
    if not outs:
        return
    given_seeds = seed_list[: len(outs)]
    # gradients()/autograd.grad with respect to every node that takes gradient: signed zeros
    inputs = [n for n in ours.nodes if n.requires_grad]
    inputs_t = [t for t in theirs.nodes if t.requires_grad]
    mine = vjpgrad.gradients(outs, inputs, given_seeds, retain_graph=True, allow_unused=True)
    expected = torch.autograd.grad(
        outs_t, inputs_t, [tensor(s, False) for s in given_seeds], retain_graph=True, allow_unused=True
    )
    # the same numbers as differentiable Values (create_graph=True; PyTorch's are the same too)
    differentiable = vjpgrad.gradients(outs, inputs, given_seeds, create_graph=True, allow_unused=True)
    finite = all(b is None or math.isfinite(number(b)) for b in expected)
    event("every gradient finite" if finite else "some gradient inf or nan")
    for k, (a, a_graph, b) in enumerate(zip(mine, differentiable, expected, strict=True)):
        if b is None:  # not reached from the outputs: PyTorch has no gradient, vjpgrad 0.0
            assert a.data == 0.0, k
            assert a_graph.data == 0.0, k
        else:
            assert identical(a.data, number(b)), (k, a.data, number(b))
            assert identical(a_graph.data, number(b)), (k, "create_graph", a_graph.data, number(b))
    # backward into .grad of every leaf
    Vector(outs).backward(given_seeds)
    torch.autograd.backward(outs_t, [tensor(s, False) for s in given_seeds])
    for k, (leaf, leaf_t) in enumerate(zip(ours.leaves, theirs.leaves, strict=True)):
        assert identical(leaf.grad, number(leaf_t.grad), zero_sign=False), (k, leaf.grad, number(leaf_t.grad))


@pytest.mark.slow  # graphs through torch: seconds
@given(programs, graph_seeds)
def test_random_graphs_agree_with_pytorch_to_the_bit(program: Program, seed: float) -> None:
    pair = graph_pair(program)
    if pair is not None:
        compare_gradients(*pair, 1, [seed])


@pytest.mark.slow  # random graphs through torch: seconds
@given(programs, st.integers(2, 5), st.lists(graph_seeds, min_size=5, max_size=5))
def test_random_graphs_with_several_seeded_outputs_agree_with_pytorch_to_the_bit(
    program: Program, count: int, seed_list: list[float]
) -> None:
    pair = graph_pair(program)
    if pair is not None:
        compare_gradients(*pair, count, seed_list)


@pytest.mark.slow  # graphs through torch: seconds
@given(
    st.lists(st.sampled_from(range(len(GRAPH_OPS))), min_size=3, max_size=8),
    st.floats(-3, 3),
    st.lists(moderate, min_size=8, max_size=8),
    graph_seeds,
)
def test_a_node_with_many_consumers_sums_them_in_pytorchs_order(
    ops: list[int], x: float, constants: list[float], seed: float
) -> None:
    # h feeds every op; the sum of their results is the output, so h's gradient is a sum
    # of len(ops) contributions (more when an op uses h twice), added in PyTorch's order.
    add, times_c = (next(i for i, s in enumerate(GRAPH_OPS) if s.name == name) for name in ("x + y", "x * c"))
    steps = [(times_c, 0, 0, 1.5)]  # n1 = h = n0 * 1.5
    steps += [(op, 1, 1, c) for op, c in zip(ops, constants, strict=False)]  # n2, n3...: each uses h
    total = 2
    for k in range(1, len(ops)):
        steps.append((add, total, 2 + k, 0.0))  # the running sum of n2, n3...
        total = len(steps)  # the node just made (one leaf, then one node per step)
    pair = graph_pair(Program([(x, True)], steps))
    if pair is not None:
        compare_gradients(*pair, 1, [seed])


def test_contributions_are_added_in_pytorchs_order_not_any_order() -> None:
    # x feeds three products; (a + b) + c and a + (b + c) differ in the last bit here, and
    # PyTorch adds the contribution of the latest consumer first (creation order would give 1.0).
    def f(x: Any) -> Any:
        return (x * 0.1 + x * 0.2) + x * 0.7

    v, t = Value(1.0), tensor(1.0)
    f(v).backward()
    f(t).backward()
    assert v.grad == number(t.grad) == (0.7 + 0.2) + 0.1
    assert (0.7 + 0.2) + 0.1 != (0.1 + 0.2) + 0.7


# ---- whole programs that matter ---------------------------------------------------------------


def test_the_stack_overflow_answers_example_1_agrees_with_pytorch() -> None:
    a, b, c = Vector([1.0, 2.0, 3.0]), Vector([3.0, 4.0, 5.0]), Vector([6.0, 7.0, 8.0])
    y = 3 * a + 2 * b * b + c.log()
    y.backward([0.1, 1.0, 0.0001])
    ta, tb, tc = (torch.tensor(v.data, dtype=D, requires_grad=True) for v in (a, b, c))
    ty = 3 * ta + 2 * tb * tb + torch.log(tc)
    ty.backward(torch.tensor([0.1, 1.0, 0.0001], dtype=D))
    for ours, theirs in ((a, ta), (b, tb), (c, tc)):
        assert ours.grad.data == theirs.grad.tolist()


def test_two_passes_accumulate_like_pytorch() -> None:
    a, b, c = Value(1.0), Value(1.0), Value(1.0)
    y = 3 * a + 2 * b * b + c**-1
    y.backward(retain_graph=True)
    y.backward()
    ta, tb, tc = tensor(1.0), tensor(1.0), tensor(1.0)
    ty = 3 * ta + 2 * tb * tb + tc**-1
    ty.backward(retain_graph=True)
    ty.backward()
    assert (a.grad, b.grad, c.grad) == (number(ta.grad), number(tb.grad), number(tc.grad)) == (6.0, 8.0, -2.0)


def test_pytorch_also_refuses_a_second_pass_through_a_freed_graph() -> None:
    t = tensor(2.0)
    ty = t.exp() * t
    ty.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        ty.backward()
    v = Value(2.0)
    y = v.exp() * v
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_pytorchs_python_front_end_refuses_the_seed_of_example_3() -> None:
    # Why the Stack Overflow answer's Example 3 fails on a current PyTorch: the seed is longer than y.
    a = torch.zeros(1, requires_grad=True, dtype=D)
    y = 3 * a
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        y.backward(torch.tensor([0.1, 1.0, 0.0001], dtype=D))
    # The C++ engine sums a seed over a broadcast dimension, which gives 3.3003:
    ones = torch.zeros(3, requires_grad=True, dtype=D)
    y_broadcast = 3 * a.expand(3) + 0 * ones
    y_broadcast.backward(torch.tensor([0.1, 1.0, 0.0001], dtype=D))
    v = Vector.empty(1)
    with pytest.warns(UserWarning, match="3 numbers for an output of one number, so they were summed"):
        (3 * v).backward([0.1, 1.0, 0.0001])
    assert v.grad.data == a.grad.tolist()


@pytest.mark.parametrize("shape", [(1,), ()], ids=["one element", "0-d"])
def test_pytorchs_cpp_engine_still_sums_a_longer_seed_into_a_one_number_output(shape: tuple[int, ...]) -> None:
    # what PyTorch before 1.3 did from Python, and what vjpgrad's Vector.empty(1) and Value do
    from torch.autograd import Variable

    a, b, c = (torch.zeros(shape, requires_grad=True, dtype=D) for _ in range(3))
    y = 3 * a + 2 * b * b + torch.log(c)
    seed = torch.tensor([0.1, 1.0, 0.0001], dtype=D)
    Variable._execution_engine.run_backward((y,), (seed,), False, False, (), True, True)
    assert [a.grad.tolist(), b.grad.tolist(), c.grad.tolist()] == (
        [[3 * 1.1001], [0.0], [math.inf]] if shape else [3 * 1.1001, 0.0, math.inf]
    )
    x, z, w = (Value(0.0) for _ in range(3))
    with pytest.warns(UserWarning, match="summed"):
        (3 * x + 2 * z * z + vjpgrad.log(w)).backward([0.1, 1.0, 0.0001])
    assert [x.grad, z.grad, w.grad] == [3 * 1.1001, 0.0, math.inf]
