"""vjpgrad.nn: micrograd's layer shapes, seeded initialisation and training to full accuracy; and
vjpgrad.nn.functional, PyTorch's functions on lists of Values, held against torch.nn.functional
(float64) and against finite differences, and checked to read no data.

Tolerances. Values and gradients agree with PyTorch to 1e-12 relative, with an absolute floor of
1e-12 times the size of the terms they are sums of: a gradient of softmax is
``s_i * v_i - s_i * (s . v)``, a row of a linear layer ``sum_i w_i x_i``, and where such terms
nearly cancel the result is only as exact as its largest term, here as in PyTorch (the two add in
different orders). Each test states that size from the formula.
"""

from __future__ import annotations

import builtins
import math
import random
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import vjpgrad
import vjpgrad.nn.functional as F  # noqa: N812  # PyTorch's spelling
from vjpgrad import Value, Vector
from vjpgrad.nn import MLP, Layer, Module, Neuron
from vjpgrad.optim import SGD

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


# ---- the layers: Neuron, Layer, MLP --------------------------------------------------------------


def test_mlp_has_micrograds_shape_and_parameter_count() -> None:
    model = MLP(2, [16, 16, 1], seed=0)
    assert len(model.parameters()) == (2 * 16 + 16) + (16 * 16 + 16) + (16 + 1)
    assert [len(layer.neurons) for layer in model.layers] == [16, 16, 1]
    assert repr(model).startswith("MLP of [Layer of [ReluNeuron(2)")
    assert "LinearNeuron(16)" in repr(model)


def test_weights_are_uniform_in_minus_1_1_biases_zero_and_a_seed_fixes_them() -> None:
    a, b = MLP(3, [4, 2], seed=7), MLP(3, [4, 2], seed=7)
    assert [p.data for p in a.parameters()] == [p.data for p in b.parameters()]
    assert [p.data for p in a.parameters()] != [p.data for p in MLP(3, [4, 2], seed=8).parameters()]
    for neuron in (n for layer in a.layers for n in layer.neurons):
        assert all(-1.0 <= w.data <= 1.0 for w in neuron.w)
        assert neuron.b.data == 0.0
    shared = random.Random(3)
    assert [p.data for p in Neuron(2, seed=shared).parameters()] != [
        p.data for p in Neuron(2, seed=shared).parameters()
    ]


def test_a_single_output_is_a_value_and_several_a_list() -> None:
    assert isinstance(MLP(2, [3, 1], seed=0)([1.0, 2.0]), Value)
    out = MLP(2, [3, 2], seed=0)([1.0, 2.0])
    assert isinstance(out, list)
    assert len(out) == 2


def test_a_neuron_computes_activation_of_w_dot_x_plus_b() -> None:
    n = Neuron(2, seed=0)
    n.w[0].data, n.w[1].data, n.b.data = 0.5, -2.0, 0.25
    assert n([1.0, 1.0]).data == 0.0  # relu(0.5 - 2 + 0.25) = relu(-1.25)
    assert n([3.0, 0.0]).data == 1.75
    t = Neuron(2, activation="tanh", seed=0)
    t.w[0].data, t.w[1].data = 1.0, 0.0
    assert t([0.5, 9.0]).data == Value(0.5).tanh().data
    assert Neuron(2, nonlin=False, seed=0).activation == "linear"


def test_activations_per_hidden_layer() -> None:
    model = MLP(2, [3, 3, 1], activation=["tanh", "relu"], seed=0)
    assert [layer.neurons[0].activation for layer in model.layers] == ["tanh", "relu", "linear"]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: MLP(2, [3, 1], seed=0)([1.0]), ValueError, "this MLP takes 2 inputs, got 1"),
        (lambda: MLP(2, [3, 1], seed=0)("ab"), TypeError, "an MLP takes a list of inputs, got str"),
        (lambda: MLP(2, [3, 1], seed=0)([1.0, "x"]), TypeError, "MLP input 1 must be a number or a Value, got str"),
        (lambda: MLP(0, [1]), ValueError, "MLP nin must be at least 1, got 0"),
        (lambda: MLP(2, []), TypeError, "nouts must be a non-empty list"),
        (lambda: MLP(2, [3, 1], activation=["tanh", "relu"]), ValueError, "1 hidden layers but 2 activations"),
        (lambda: Neuron(2, activation="gelu"), ValueError, "activation must be one of relu, tanh, sigmoid, linear"),
        (lambda: Layer(2, 0), ValueError, "Layer nout must be at least 1, got 0"),
        (lambda: MLP(2, [1], seed="x"), TypeError, "seed must be an int, a random.Random or None, got str"),
        # refused where no hidden layer uses it, as where one does
        (lambda: MLP(2, [1], activation="gelu"), ValueError, "activation must be one of relu, tanh, sigmoid, linear"),
        (lambda: MLP(2, [3, 1], activation=None), TypeError, "activation must be a name or a list of names, got None"),
        (lambda: Neuron(2, "no"), TypeError, "Neuron nonlin must be a bool, got str"),
        (lambda: Layer(2, 2, 1), TypeError, "Layer nonlin must be a bool, got int"),
        (lambda: Neuron(2, seed=0)([1.0, "a"]), TypeError, "Neuron input 1 must be a number or a Value, got str"),
        (lambda: Neuron(2, seed=0)(5), TypeError, "a Neuron takes a list of inputs, got int"),
        (lambda: Layer(2, 2, seed=0)(5), TypeError, "a Neuron takes a list of inputs, got int"),
        (
            lambda: Layer(2, 2, seed=0)([1.0, None]),
            TypeError,
            "Neuron input 1 must be a number or a Value, got NoneType",
        ),
    ],
)
def test_bad_construction_and_calls_name_the_problem(make: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make()  # type: ignore[operator]


def test_zero_grad_on_a_module() -> None:
    model = MLP(2, [2, 1], seed=0)
    out = model([1.0, -1.0])
    assert isinstance(out, Value)
    (out * out + 1).backward()
    model.zero_grad()
    assert all(p.grad == 0.0 for p in model.parameters())
    assert Module().parameters() == []
    model.zero_grad(set_to_none=True)  # PyTorch's default
    assert all(p.grad is None for p in model.parameters())
    with pytest.raises(TypeError, match=r"^set_to_none must be a bool, got str$"):
        model.zero_grad(set_to_none="yes")  # type: ignore[arg-type]


# ---- training ------------------------------------------------------------------------------------


@pytest.mark.slow  # a training run
def test_a_small_net_learns_a_small_two_moons_set_to_full_accuracy() -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        from moons import loss, make_moons
    finally:
        sys.path.remove(str(EXAMPLES))
    points, labels = make_moons(n=30, noise=0.05, seed=3)
    model = MLP(2, [8, 8, 1], seed=1)
    optimizer = SGD(model.parameters(), lr=0.5)
    accuracy = 0.0
    for _ in range(150):
        total, accuracy = loss(model, points, labels)
        if accuracy == 1.0:
            break
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
    assert accuracy == 1.0


@pytest.mark.slow  # a training run
def test_the_moons_example_reaches_full_accuracy(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "moons.py"), "--steps", "60", "--out", str(tmp_path / "m.png")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "training accuracy 100%" in result.stdout
    assert "wrote" in result.stdout or "pip install matplotlib (or pip install -e '.[plot]'" in result.stdout


def test_no_grad_inside_training_leaves_no_graph_on_parameters() -> None:
    model = MLP(2, [2, 1], seed=0)
    with vjpgrad.no_grad():
        out = model([1.0, 2.0])
    assert isinstance(out, Value)
    assert not out.requires_grad


# ---- nn.functional -------------------------------------------------------------------------------


try:
    import torch
    import torch.nn.functional as TF  # noqa: N812
except ImportError:  # the torch comparisons skip; the rest runs
    torch = None


needs_torch = pytest.mark.skipif(torch is None, reason="needs torch (pip install torch)")


RTOL = 1e-12


floats = st.floats(-30.0, 30.0, allow_subnormal=False)


# logits near +-1000, where a softmax without the max shift overflows exp
shifts = st.sampled_from([0.0, 1000.0, -1000.0])


logit_lists = st.tuples(st.lists(floats, min_size=1, max_size=8), shifts).map(lambda p: [x + p[1] for x in p[0]])


def seeds_for(n: int) -> st.SearchStrategy[list[float]]:
    return st.lists(st.floats(-2.0, 2.0, allow_subnormal=False), min_size=n, max_size=n)


def assert_close(ours: Sequence[float], theirs: Sequence[float], scales: Sequence[float] | float = 0.0) -> None:
    """|ours - theirs| <= 1e-12 (|theirs| + scale), element by element (and 1e-300 for
    products that underflow to subnormals)."""
    scales = [scales] * len(theirs) if isinstance(scales, (int, float)) else scales
    assert len(ours) == len(theirs)
    for i, (o, t, s) in enumerate(zip(ours, theirs, scales, strict=True)):
        assert math.isfinite(o), f"element {i}: {o} is not finite (PyTorch: {t})"
        assert abs(o - t) <= RTOL * (abs(t) + s) + 1e-300, f"element {i}: {o} vs PyTorch {t} (scale {s})"


def leaves(xs: Sequence[float]) -> list[Value]:
    return [Value(x) for x in xs]


def softmax_of(xs: Sequence[float]) -> list[float]:
    top = builtins.max(xs)
    exps = [math.exp(x - top) for x in xs]
    return [e / sum(exps) for e in exps]


def compare_with_torch(
    ours: Callable[[list[Value]], Any],
    theirs: Callable[[Any], Any],
    xs: Sequence[float],
    v: Sequence[float],
    value_scale: float,
    grad_scales: Sequence[float],
) -> None:
    """f(xs) and the gradient of sum_i v_i f(xs)_i in vjpgrad and in PyTorch."""
    x = leaves(xs)
    out = ours(x)
    out = [out] if isinstance(out, Value) else list(out)
    Vector(out).backward(v)
    t = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    t_out = theirs(t).reshape(-1)
    t_out.backward(torch.tensor(v, dtype=torch.float64))
    assert_close([y.data for y in out], t_out.tolist(), value_scale)
    assert_close([xi.grad for xi in x], t.grad.tolist(), grad_scales)


def through_the_max(xs: Sequence[float], size: float) -> list[float]:
    """The gradient that reaches softmax's max shift cancels only to rounding, leaving about
    1e-16 ``size``. It goes to the largest element; on its way through the fold that stands
    in for the core max, it is also added to and taken from each other element, costing
    those the rounding of that residue (1e-32 ``size``)."""
    top = builtins.max(xs)
    return [size if x == top else 1e-15 * size for x in xs]


@needs_torch
@given(st.data())
def test_softmax_agrees_with_torch(data: st.DataObject) -> None:
    xs = data.draw(logit_lists)
    v = data.draw(seeds_for(len(xs)))
    s = softmax_of(xs)
    s_dot_v = sum(si * abs(vi) for si, vi in zip(s, v, strict=True))
    # d/dx_i = s_i v_i - s_i (s . v)
    scales = [si * (abs(vi) + s_dot_v) + r for si, vi, r in zip(s, v, through_the_max(xs, s_dot_v), strict=True)]
    compare_with_torch(F.softmax, lambda t: TF.softmax(t, dim=0), xs, v, 0.0, scales)


@pytest.mark.slow  # through torch: seconds
@needs_torch
@given(st.data())
def test_log_softmax_agrees_with_torch(data: st.DataObject) -> None:
    xs = data.draw(logit_lists)
    v = data.draw(seeds_for(len(xs)))
    s = softmax_of(xs)
    v_sum = sum(abs(vi) for vi in v)
    # (x_i - m) - log(sum_j exp(x_j - m)); d/dx_i = v_i - s_i sum_j v_j
    scales = [abs(vi) + si * v_sum + r for si, vi, r in zip(s, v, through_the_max(xs, v_sum), strict=True)]
    value_scale = builtins.max(xs) - builtins.min(xs) + math.log(len(xs))
    compare_with_torch(F.log_softmax, lambda t: TF.log_softmax(t, dim=0), xs, v, value_scale, scales)


@pytest.mark.slow  # through torch: seconds
@needs_torch
@given(st.data())
def test_cross_entropy_agrees_with_torch(data: st.DataObject) -> None:
    xs = data.draw(logit_lists)
    target = data.draw(st.integers(0, len(xs) - 1))
    v = data.draw(seeds_for(1))
    s = softmax_of(xs)
    # d/dx_i = v (s_i - [i == target])
    scales = [
        abs(v[0]) * (si + (i == target)) + r
        for i, (si, r) in enumerate(zip(s, through_the_max(xs, abs(v[0])), strict=True))
    ]
    value_scale = builtins.max(xs) - builtins.min(xs) + math.log(len(xs))
    compare_with_torch(
        lambda x: F.cross_entropy(x, target),
        lambda t: TF.cross_entropy(t, torch.tensor(target)),
        xs,
        v,
        value_scale,
        scales,
    )


def rms_norm_scales(xs: Sequence[float], u: Sequence[float], eps: float) -> list[float]:
    """d/dx_i of sum_j u_j x_j r is r u_i - x_i r^3 (x . u) / n, with r = (mean(x^2) + eps)^-1/2."""
    n = len(xs)
    r = (sum(x * x for x in xs) / n + eps) ** -0.5
    x_dot_u = sum(abs(x * ui) for x, ui in zip(xs, u, strict=True))
    return [r * abs(ui) + abs(x) * r**3 * x_dot_u / n for x, ui in zip(xs, u, strict=True)]


@pytest.mark.slow  # through torch: seconds
@needs_torch
@given(st.data())
def test_rms_norm_agrees_with_torch_with_its_default_eps(data: st.DataObject) -> None:
    xs = data.draw(st.lists(floats, min_size=1, max_size=8))
    v = data.draw(seeds_for(len(xs)))
    scales = rms_norm_scales(xs, v, sys.float_info.epsilon)
    compare_with_torch(F.rms_norm, lambda t: TF.rms_norm(t, (len(xs),)), xs, v, 0.0, scales)


@pytest.mark.slow  # through torch: seconds
@needs_torch
@given(st.data())
def test_rms_norm_with_weight_and_eps_agrees_with_torch(data: st.DataObject) -> None:
    xs = data.draw(st.lists(floats, min_size=1, max_size=8))
    n = len(xs)
    v = data.draw(seeds_for(n))
    w = data.draw(seeds_for(n))
    weight = torch.tensor(w, dtype=torch.float64)
    scales = rms_norm_scales(xs, [vi * wi for vi, wi in zip(v, w, strict=True)], 1e-5)
    compare_with_torch(
        lambda x: F.rms_norm(x, (n,), w, eps=1e-5),
        lambda t: TF.rms_norm(t, (n,), weight, eps=1e-5),
        xs,
        v,
        0.0,
        scales,
    )


@pytest.mark.slow  # through torch: seconds
@needs_torch
@given(st.data())
def test_linear_agrees_with_torch_in_values_and_every_gradient(data: st.DataObject) -> None:
    n_in = data.draw(st.integers(1, 6))
    n_out = data.draw(st.integers(1, 5))
    xs = data.draw(st.lists(floats, min_size=n_in, max_size=n_in))
    ws = [data.draw(st.lists(floats, min_size=n_in, max_size=n_in)) for _ in range(n_out)]
    bs = data.draw(st.lists(floats, min_size=n_out, max_size=n_out))
    v = data.draw(seeds_for(n_out))
    x, weight, bias = leaves(xs), [leaves(row) for row in ws], leaves(bs)
    out = F.linear(x, weight, bias)
    Vector(out).backward(v)

    tx, tw, tb = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (xs, ws, bs))
    t_out = TF.linear(tx, tw, tb)
    t_out.backward(torch.tensor(v, dtype=torch.float64))
    terms = [sum(abs(wi * xi) for wi, xi in zip(row, xs, strict=True)) + abs(b) for row, b in zip(ws, bs, strict=True)]
    assert_close([y.data for y in out], t_out.tolist(), terms)
    x_terms = [sum(abs(v[j] * ws[j][i]) for j in range(n_out)) for i in range(n_in)]
    assert_close([xi.grad for xi in x], tx.grad.tolist(), x_terms)
    assert_close([w.grad for row in weight for w in row], tw.grad.reshape(-1).tolist())
    assert_close([b.grad for b in bias], tb.grad.tolist())


# Multiples of 1/1024 in [-30, 30]: the fold of (a + b + |a - b|) / 2 that stands in for the
# core max until it lands adds and subtracts them exactly. On other floats its rounding can
# be off by an ulp of the largest magnitude, and even make a false tie: max(1e-32, -1) rounds
# to 0.0, which then ties with a 0.0 (see functional.max). The core operation is exact.
grid = st.integers(-30 * 1024, 30 * 1024).map(lambda k: k / 1024)


@needs_torch
@given(st.lists(grid, min_size=1, max_size=8, unique=True), grid)
def test_max_agrees_with_torch_max_without_ties(xs: list[float], seed: float) -> None:
    x = leaves(xs)
    m = F.max(x)
    m.backward(seed)
    t = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    t_max = torch.max(t)
    t_max.backward(torch.tensor(seed, dtype=torch.float64))
    assert m.data == t_max.item()
    assert [xi.grad for xi in x] == t.grad.tolist()  # all of it to the largest element


def test_softmax_of_large_logits_is_finite_and_right() -> None:
    # a naive exp(1000) overflows: the max shift makes these exp(0), exp(-1), exp(-2000)
    probabilities = [p.data for p in F.softmax(leaves([1000.0, 999.0, -1000.0]))]
    e = math.exp(-1.0)
    assert probabilities == pytest.approx([1 / (1 + e), e / (1 + e), 0.0], rel=1e-15, abs=0.0)
    log_probabilities = [p.data for p in F.log_softmax(leaves([0.0, -1000.0]))]
    assert log_probabilities == pytest.approx([0.0, -1000.0], rel=1e-15, abs=1e-300)  # no log(0) = -inf


def test_cross_entropy_of_large_logits_and_its_gradient_is_softmax_minus_one_hot() -> None:
    x = leaves([1000.0, 1001.0, 998.0])
    loss = F.cross_entropy(x, 0)
    loss.backward()
    exps = [math.exp(-1.0), 1.0, math.exp(-3.0)]
    softmax = [e / sum(exps) for e in exps]
    assert loss.data == pytest.approx(-math.log(softmax[0]), rel=1e-14)
    assert [xi.grad for xi in x] == pytest.approx([softmax[0] - 1, softmax[1], softmax[2]], rel=1e-12, abs=1e-15)


small_lists = st.lists(st.floats(-3.0, 3.0, allow_subnormal=False), min_size=1, max_size=5)


@pytest.mark.slow  # through torch: seconds
@given(small_lists)
def test_softmax_and_log_softmax_gradients_match_finite_differences(xs: list[float]) -> None:
    assert vjpgrad.gradcheck(lambda *x: Vector(F.softmax(list(x))), xs)
    assert vjpgrad.gradcheck(lambda *x: Vector(F.log_softmax(list(x))), xs)


@given(small_lists, st.data())
def test_cross_entropy_gradient_matches_finite_differences(xs: list[float], data: st.DataObject) -> None:
    target = data.draw(st.integers(0, len(xs) - 1))
    assert vjpgrad.gradcheck(lambda *x: F.cross_entropy(list(x), target), xs)


@given(small_lists.filter(lambda xs: sum(x * x for x in xs) > 0.1))
def test_rms_norm_gradient_matches_finite_differences(xs: list[float]) -> None:
    assert vjpgrad.gradcheck(lambda *x: Vector(F.rms_norm(list(x), eps=1e-5)), xs)


@given(st.integers(1, 4), st.integers(1, 3), st.data())
def test_linear_gradient_matches_finite_differences(n_in: int, n_out: int, data: st.DataObject) -> None:
    values = data.draw(
        st.lists(st.floats(-3.0, 3.0), min_size=n_in * (n_out + 1) + n_out, max_size=n_in * (n_out + 1) + n_out)
    )

    def f(*p: Value) -> Vector:
        x, rest = list(p[:n_in]), p[n_in:]
        weight = [list(rest[j * n_in : (j + 1) * n_in]) for j in range(n_out)]
        return Vector(F.linear(x, weight, list(rest[n_out * n_in :])))

    assert vjpgrad.gradcheck(f, values)


@given(small_lists)
def test_the_functions_agree_with_their_definitions_in_plain_floats(xs: list[float]) -> None:
    exps = [math.exp(x) for x in xs]
    total = sum(exps)
    assert [p.data for p in F.softmax(leaves(xs))] == pytest.approx([e / total for e in exps], rel=1e-13)
    assert [p.data for p in F.log_softmax(leaves(xs))] == pytest.approx(
        [x - math.log(total) for x in xs], rel=1e-13, abs=1e-13
    )
    assert F.cross_entropy(leaves(xs), len(xs) - 1).data == pytest.approx(
        math.log(total) - xs[-1], rel=1e-13, abs=1e-13
    )
    rms = math.sqrt(sum(x * x for x in xs) / len(xs) + 1e-5)
    assert [y.data for y in F.rms_norm(leaves(xs), eps=1e-5)] == pytest.approx([x / rms for x in xs], rel=1e-13)
    assert F.max(leaves(xs)).data == pytest.approx(max(xs), rel=1e-15, abs=1e-15 * max(abs(x) for x in xs))


def test_rms_norm_default_eps_is_float64_machine_epsilon() -> None:
    # with x = (0, 0) the result is 0 and its gradient is 1/sqrt(eps): eps itself shows
    x = leaves([0.0, 0.0])
    F.rms_norm(x)[0].backward()
    assert x[0].grad == pytest.approx(sys.float_info.epsilon**-0.5, rel=1e-15)
    y = leaves([0.0, 0.0])
    F.rms_norm(y, eps=1e-5)[0].backward()
    assert y[0].grad == pytest.approx(1e-5**-0.5, rel=1e-15)


def test_linear_is_w_x_plus_b_with_weight_as_rows() -> None:
    x = leaves([1.0, 2.0])
    out = F.linear(x, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [10.0, 20.0, 30.0])
    assert [y.data for y in out] == [15.0, 31.0, 47.0]
    Vector(out).backward([1.0, 1.0, 1.0])
    assert [xi.grad for xi in x] == [9.0, 12.0]  # W^T v: column sums
    assert [y.data for y in F.linear(x, [[1.0, 1.0]])] == [3.0]  # no bias


def test_max_gradient_goes_to_the_largest_element_only() -> None:
    x = leaves([0.5, -3.0, 2.0, 1.9])
    m = F.max(x)
    m.backward(3.0)
    assert m.data == 2.0
    assert [xi.grad for xi in x] == [0.0, 0.0, 3.0, 0.0]


def test_max_splits_the_gradient_evenly_among_ties_like_torch_max() -> None:
    x = leaves([2.0, 1.0, 2.0, 2.0])
    F.max(x).backward()
    assert [xi.grad for xi in x] == pytest.approx([1 / 3, 0.0, 1 / 3, 1 / 3], rel=1e-15)


FUNCTIONAL_FILE = F.softmax.__code__.co_filename


def test_every_function_replays_under_compile_bit_for_bit() -> None:
    """What a compiler relies on: no data reads, no branching on Values. vjpgrad.compile
    refuses any such read while it records, and its replay must equal eager to the bit."""

    def everything(x: list[Value], w0: list[Value], w1: list[Value]) -> Vector:
        return Vector(
            [
                F.max(x),
                *F.softmax(x),
                *F.log_softmax(Vector(x)),
                F.cross_entropy(x, 2),
                *F.rms_norm(x, 4, x, eps=1e-5),
                *F.linear(x, [w0, w1], x[:2]),
            ]
        )

    compiled = vjpgrad.compile(everything)
    results = []
    for f in (everything, compiled, compiled):
        x = leaves([0.3, -1.2, 2.5, 2.5])
        w0, w1 = leaves([0.1, 0.2, 0.3, 0.4]), leaves([-1.0, 0.5, 0.0, 2.0])
        out = f(x, w0, w1)
        out.backward([0.5 + k for k in range(len(out))])
        results.append((out.tolist(), [v.grad for v in (*x, *w0, *w1)]))
    assert results[0] == results[1] == results[2]
    assert all(math.isfinite(g) for g in results[0][1])


def test_a_vector_gives_a_vector_and_a_list_gives_a_list_and_numbers_are_constants() -> None:
    assert isinstance(F.softmax(Vector([1.0, 2.0])), Vector)
    assert isinstance(F.log_softmax(Vector([1.0, 2.0])), Vector)
    assert isinstance(F.rms_norm(Vector([1.0, 2.0])), Vector)
    assert isinstance(F.linear(Vector([1.0]), [[2.0]]), Vector)
    out = F.softmax([Value(1.0), 2.0])
    assert type(out) is list
    assert all(isinstance(p, Value) for p in out)
    assert not F.softmax([1.0, 2.0])[0].requires_grad
    assert F.softmax([]) == []
    assert F.log_softmax([]) == []
    assert F.rms_norm([]) == []
    assert [y.data for y in F.linear([], [[], []], [1.0, 2.0])] == [1.0, 2.0]  # in_features 0, as in torch


def test_the_dim_of_a_list_is_0_or_minus_1() -> None:
    assert F.softmax([1.0], dim=0)[0].data == F.softmax([1.0], dim=-1)[0].data == 1.0
    with pytest.raises(IndexError, match=r"Dimension out of range .* but got 1"):
        F.softmax([1.0], dim=1)
    with pytest.raises(TypeError, match="dim must be an int"):
        F.log_softmax([1.0], dim=0.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: F.max([]), ValueError, "empty"),
        (lambda: F.softmax(Value(1.0)), TypeError, "takes a Vector or a list of Values, got Value"),
        (lambda: F.softmax("ab"), TypeError, "got str"),
        (
            lambda: F.softmax([Value(1.0), "x"]),
            TypeError,
            r"softmax\(\) element 1 must be a number or a Value, got str",
        ),
        (lambda: F.cross_entropy([], []), ValueError, r"cross_entropy\(\) of no logits: there is no class"),
        (lambda: F.cross_entropy([], Value(0.0)), ValueError, r"cross_entropy\(\) of no logits: there is no class"),
        (lambda: F.cross_entropy([1.0, 2.0], 2), IndexError, "Target 2 is out of bounds"),
        (lambda: F.cross_entropy([1.0, 2.0], -1), IndexError, "Target -1 is out of bounds"),
        (lambda: F.cross_entropy([1.0, 2.0], True), TypeError, "target must be an int"),
        (lambda: F.cross_entropy([1.0, 2.0], 1.0), TypeError, "target must be an int"),
        (lambda: F.rms_norm([1.0, 2.0], 3), ValueError, r"normalized_shape must be 2 or \(2,\)"),
        (lambda: F.rms_norm([1.0, 2.0], (2, 1)), ValueError, "normalized_shape"),
        (lambda: F.rms_norm([1.0, 2.0], weight=[1.0]), ValueError, "weight has 1 elements"),
        (lambda: F.rms_norm([1.0, 2.0], eps="small"), TypeError, "eps must be a number"),
        (lambda: F.linear([1.0, 2.0], [[1.0]]), ValueError, "row 0 has 1 elements but the input has 2"),
        (lambda: F.linear([1.0], Vector([1.0])), TypeError, "weight must be a list of rows"),
        (lambda: F.linear([1.0], [1.0]), TypeError, "weight row 0 must be a list or a Vector, got float"),
        (lambda: F.linear([1.0], [[1.0]], [1.0, 2.0]), ValueError, "bias has 2 elements for 1 weight rows"),
    ],
)
def test_bad_input_is_refused_with_a_message_naming_it(call: Callable[[], object], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_nn_exposes_functional_like_torch() -> None:
    import vjpgrad.nn

    assert vjpgrad.nn.functional is F


def test_functional_offers_its_functions_and_none_of_the_cores_helpers() -> None:
    """``from vjpgrad.nn.functional import *`` gives PyTorch's functions alone: not the core's
    ``data_of``, which reads a Value's number where compile would not see it (an outside review
    found it exported), nor the table's operations."""
    names: dict[str, Any] = {}
    exec("from vjpgrad.nn.functional import *", names)  # what a learner's star import gives
    offered = sorted(name for name in names if name != "__builtins__")
    assert offered == ["cross_entropy", "embedding", "linear", "log_softmax", "max", "rms_norm", "softmax"]
    assert not hasattr(F, "data_of")
    assert not hasattr(F, "take_position")
