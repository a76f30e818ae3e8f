"""vjpgrad.vmap runs a block its recording repeats (the neurons of a layer) as one array operation
across its copies, and every number stays eager code's for each sample, to the bit.

Each test checks that the array code does run a block across its copies (its ``.source`` says
so) and compares every sample's numbers with eager ``grad`` (or the transform) of that sample:
a wrong order of additions across copies, a contribution computed where the eager pass never
runs, or a gradient started at the wrong zero shows in the bits.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import struct
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, grad, jacobian, value_and_grad, vmap

np = pytest.importorskip("numpy", reason="vmap needs NumPy: pip install numpy (or pip install -e '.[vmap]')")

FOLDED = "copies of a block"
SMALLEST_BLOCK = 4  # batched.blocks.SMALLEST: the fewest operations a block has

pytestmark = pytest.mark.usefixtures("vmap_code")  # every test with the plain code and in a workspace


def same(a: float, b: float) -> bool:
    return struct.pack("<d", float(a)) == struct.pack("<d", float(b)) or (a != a and b != b)


def assert_rows(rows: Any, expected: Sequence[Any], what: str) -> None:
    assert len(rows) == len(expected)
    for i, want in enumerate(expected):
        got = np.asarray(rows[i], dtype=np.float64).ravel()
        wanted = np.asarray(want, dtype=np.float64).ravel()
        assert got.shape == wanted.shape, f"{what}, sample {i}"
        for k, (g, w) in enumerate(zip(got, wanted, strict=True)):
            assert same(g, w), f"{what}, sample {i}, number {k}: vmap {g!r}, eager {w!r}"


def layer(params: Sequence[Any], inputs: Sequence[Any], nout: int, k: int, act: Callable[[Any], Any] | None) -> Any:
    """``nout`` neurons ``b + w0 * x0 + ...`` (vjpgrad.nn.Neuron's order) on ``inputs``."""
    nin = len(inputs)
    out = []
    for _ in range(nout):
        total = params[k + nin]
        for i in range(nin):
            total = total + params[k + i] * inputs[i]
        k += nin + 1
        out.append(total if act is None else act(total))
    return out, k


def mlp(params: Sequence[Any], x: Sequence[Any], sizes: Sequence[int], act: Callable[[Any], Any]) -> Any:
    k, h = 0, list(x)
    for n, nout in enumerate(sizes[1:]):
        h, k = layer(params, h, nout, k, None if n == len(sizes) - 2 else act)
    return h


def count(sizes: Sequence[int]) -> int:
    return sum((a + 1) * b for a, b in itertools.pairwise(sizes))


def data(n: int, width: int, parameters: int, seed: int = 0) -> tuple[list[float], Any]:
    rng = random.Random(seed)
    params = [rng.uniform(-1, 1) for _ in range(parameters)]
    xs = np.array([[rng.uniform(-2, 2) for _ in range(width)] for _ in range(n)])
    return params, xs


SIZES = (2, 8, 8, 1)


def hinge(params: Sequence[Any], x: Sequence[Any], y: Any) -> Any:
    return (1 + -y * mlp(params, x, SIZES, lambda v: v.relu())[0]).relu()


def test_the_neurons_of_a_layer_run_as_one_operation_with_each_samples_eager_bits() -> None:
    params, xs = data(60, 2, count(SIZES))
    ys = np.array([1.0 if i % 3 else -1.0 for i in range(60)])
    batched = vmap(grad(hinge), in_dims=(None, 0, 0))
    rows = batched(params, xs, ys)
    assert FOLDED in batched.source
    assert batched.source.count("_stack(") >= 2  # both hidden layers
    assert "8 products at once" in batched.source  # the second layer's w_i * x_i, one operation
    # their shares of the first layer's outputs multiplied and added copy by copy, the sums of products
    # added product by product, the weights' gradients multiplied into the rows of the result
    assert "_across_products(" in batched.source
    assert batched.source.count("_sum_products(") == 2
    assert "_product(" in batched.source
    eager = [grad(hinge)(params, [float(a) for a in x], float(y)) for x, y in zip(xs, ys, strict=True)]
    assert_rows(rows, eager, "per-sample gradient")


def test_the_moons_mlps_products_are_never_made_whole_and_every_number_is_eagers() -> None:
    """examples/moons_vmap.py's per-sample gradient: both layers' sums run product by product
    (``_sum_products``), the second layer's shares of the first's outputs added copy by copy
    (``_across_products``), its 16 weights' gradients multiplied into the result's rows
    (``_product``), so no array of a layer's products or of their gradients is made; and each
    sample's gradient is eager's to the bit. A rewrite that fires where it must not, or misses
    where it should, shows here."""
    examples = str(Path(__file__).resolve().parent.parent / "examples")
    sys.path.insert(0, examples)
    try:
        from moons_vmap import margin
    finally:
        sys.path.remove(examples)
    from vjpgrad.nn import MLP

    rng = random.Random(11)
    xs = np.array([[rng.uniform(-1.5, 2.5), rng.uniform(-1.0, 1.5)] for _ in range(40)])
    xs[0], xs[1] = [-0.0, 0.0], [math.inf, 1.0]
    ys = np.array([1.0 if i % 2 else -1.0 for i in range(40)])
    params = [p.data for p in MLP(2, [16, 16, 1], seed=1337).parameters()]
    batched = vmap(grad(margin), in_dims=(None, 0, 0, None))
    rows = batched(params, xs, ys, 40)
    source = batched.source
    assert source.count("16 products at once") == 2
    assert source.count("_sum_products(") == 2  # the second layer's neurons, and the output neuron
    assert source.count("_across_products(") == 1
    assert source.count("_product(") == 16
    assert re.search(r"^    pp\w* = pa", source, re.MULTILINE) is None  # no array of the products
    assert re.search(r"^    pc1_\d+ = ", source, re.MULTILINE) is None  # nor of the second layer's gradients
    values = lambda x: [Value(float(a), requires_grad=False) for a in x]  # noqa: E731
    eager = [
        grad(margin)(params, values(x), Value(float(y), requires_grad=False), 40) for x, y in zip(xs, ys, strict=True)
    ]
    assert_rows(rows, eager, "per-sample gradient")


def test_a_value_two_products_of_each_copy_read_gets_its_shares_from_their_rows_with_eager_bits() -> None:
    # each neuron reads h[1] and h[0] twice each: the shares of one value are two rows of the
    # products' gradients, told apart by row (not by the value they go to), so all four are read
    # where they lie, multiplied copy by copy (_across_products), in eager's order
    def net(p: Any, x: Any) -> Any:
        h = [(x[0] * 0.5).tanh(), (x[1] * 0.25).tanh()]
        out = []
        for j in range(3):
            k = 4 * j
            total = p[12 + j] + p[k] * h[1] + p[k + 1] * h[1] + p[k + 2] * h[0] + p[k + 3] * h[0]
            out.append(total.relu())
        return out[0] + out[1] + out[2]

    params, xs = data(30, 2, 15, seed=5)
    xs[3] = [-0.0, math.inf]
    xs[4] = [math.nan, 0.0]
    batched = vmap(grad(net, argnums=(0, 1)), in_dims=(None, 0))
    by_params, by_x = batched(params, xs)
    assert FOLDED in batched.source
    assert "4 products at once" in batched.source
    assert "_across_products(" in batched.source
    assert "_across(" not in batched.source
    eager = [grad(net, argnums=(0, 1))(params, [float(a) for a in x]) for x in xs]
    assert_rows(by_params, [e[0] for e in eager], "the parameters' gradient")
    assert_rows(by_x, [e[1] for e in eager], "the sample's gradient")


def test_full_batch_gradient_through_blocks_equals_eager_to_the_bit() -> None:
    params, xs = data(40, 2, count(SIZES), seed=3)
    ys = np.array([1.0 if i % 2 else -1.0 for i in range(40)])

    def margin(p: Any, x: Any, y: Any, n: int) -> Any:
        return hinge(p, x, y) * (1.0 / n)

    rows = vmap(grad(margin), in_dims=(None, 0, 0, None))(params, xs, ys, len(xs))
    summed = 0.0 + vjpgrad.batch_sum(rows)
    values = [Value(p) for p in params]
    total = sum((margin(values, [Value(float(a)) for a in x], float(y), len(xs)) for x, y in zip(xs, ys, strict=True)),
                Value(0.0, requires_grad=False))  # fmt: skip
    total.backward()
    assert [struct.pack("<d", g) for g in summed] == [struct.pack("<d", v.grad) for v in values]


@pytest.mark.parametrize("fast", [False, True])
def test_tanh_layers_and_edge_values(fast: bool) -> None:
    """tanh through the exact helpers (one C call per element) and inputs at the edges: zeros of
    both signs, infinities, nan; fast mode must at least run the same blocks."""
    sizes = (3, 6, 6, 2)
    params, xs = data(30, 3, count(sizes), seed=5)
    xs[0] = [0.0, -0.0, 1.0]
    xs[1] = [math.inf, -1.0, 0.5]
    xs[2] = [math.nan, 0.0, -0.0]
    xs[3] = [-0.0, -0.0, -0.0]

    def f(p: Any, x: Any) -> Any:
        out = mlp(p, x, sizes, lambda v: v.tanh())
        return out[0] * out[1] + out[1]

    batched = vmap(grad(f), in_dims=(None, 0), fast=fast)
    rows = batched(params, xs)
    assert FOLDED in batched.source
    if not fast:
        eager = [grad(f)(params, [float(a) for a in x]) for x in xs]
        assert_rows(rows, eager, "tanh MLP")


def test_a_value_every_copy_reads_twice_and_later_again() -> None:
    """Each copy reads the shared inputs at two places (and one of them again after the block):
    its gradient adds the copies' contributions last copy first, each copy's in its order, after
    what the code after the block handed it."""

    def f(p: Any, x: Any) -> Any:
        outs = []
        for m in range(6):
            a = p[2 * m] * x[0] + p[2 * m + 1] * x[1]
            b = a * x[0] - x[1] * p[2 * m]
            outs.append((a + b).sigmoid())
        total = outs[0]
        for o in outs[1:]:
            total = total + o
        return total * x[0] + x[1] * x[1]

    params, xs = data(25, 2, 12, seed=7)
    xs[0] = [0.0, -0.0]
    batched = vmap(grad(f, argnums=(0, 1)), in_dims=(None, 0))
    got_p, got_x = batched(params, xs)
    assert FOLDED in batched.source
    assert "_across(" in batched.source
    eager = [grad(f, argnums=(0, 1))(params, [float(a) for a in x]) for x in xs]
    assert_rows(got_p, [e[0] for e in eager], "parameters' gradients")
    assert_rows(got_x, [e[1] for e in eager], "inputs' gradients")


def test_copies_whose_outputs_the_pass_does_not_all_reach() -> None:
    """Some neurons' outputs are unused: the reverse pass never runs their operations, so the
    array code must not compute contributions there (a 0 * w from them would change signed
    zeros); the result still equals eager's."""

    def f(p: Any, x: Any) -> Any:
        h, k = layer(p, x, 8, 0, lambda v: v.relu())
        h, _ = layer(p, h, 8, k, lambda v: v.relu())
        return h[1] * h[3] + h[6]

    params, xs = data(30, 3, 32 + 72, seed=11)
    xs[0] = [-0.0, 0.0, -0.0]
    batched = vmap(grad(f), in_dims=(None, 0))
    rows = batched(params, xs)
    assert FOLDED in batched.source  # the first layer, all of whose neurons the pass reaches
    eager = [grad(f)(params, [float(a) for a in x]) for x in xs]
    assert_rows(rows, eager, "partly used layer")


def test_value_and_grad_and_jacobian_through_blocks() -> None:
    sizes = (2, 5, 5, 3)
    params, xs = data(20, 2, count(sizes), seed=13)

    def f(p: Any, x: Any) -> Any:
        return mlp(p, x, sizes, lambda v: v.relu())

    def loss(p: Any, x: Any) -> Any:
        out = f(p, x)
        return out[0] + out[1] * out[2]

    jac = vmap(jacobian(f), in_dims=(None, 0))
    rows = jac(params, xs)
    assert FOLDED in jac.source
    assert_rows(rows, [jacobian(f)(params, [float(a) for a in x]) for x in xs], "jacobian")
    both = vmap(value_and_grad(loss), in_dims=(None, 0))
    values, grads = both(params, xs)
    eager = [value_and_grad(loss)(params, [float(a) for a in x]) for x in xs]
    assert_rows(values, [e[0] for e in eager], "values")
    assert_rows(grads, [e[1] for e in eager], "gradients")


def test_forward_alone_through_blocks() -> None:
    params, xs = data(15, 2, count(SIZES), seed=17)
    batched = vmap(lambda p, x: mlp(p, x, SIZES, lambda v: v.relu())[0], in_dims=(None, 0))
    values = [Value(p) for p in params]  # passed as they are: Values, their numbers read at each call
    out = batched(values, xs)
    assert FOLDED in batched.source
    eager = [mlp(values, [Value(float(a)) for a in x], SIZES, lambda v: v.relu())[0].data for x in xs]
    assert_rows(out, eager, "forward")


def test_copies_of_their_own_columns_sharing_parameters() -> None:
    """Each copy reads a column of its own (a number of the sample) and two parameters every copy
    shares, which the parameters' gradients add across the copies, the last copy first."""

    def f(p: Any, x: Any) -> Any:
        outs = [(x[i] * p[0] + p[1]).tanh() * x[i] - p[1] for i in range(8)]
        total = outs[0]
        for o in outs[1:]:
            total = total + o
        return total

    params = [0.7, -0.3]
    rng = random.Random(19)
    xs = np.array([[rng.uniform(-3, 3) for _ in range(8)] for _ in range(40)])
    xs[0, :3] = [0.0, -0.0, math.inf]
    batched = vmap(grad(f, argnums=(0, 1)), in_dims=(None, 0))
    got_p, got_x = batched(params, xs)
    assert FOLDED in batched.source
    eager = [grad(f, argnums=(0, 1))(params, [float(a) for a in x]) for x in xs]
    assert_rows(got_p, [e[0] for e in eager], "shared parameters' gradients")
    assert_rows(got_x, [e[1] for e in eager], "the columns' gradients")


def test_a_vjp_function_through_blocks() -> None:
    """``vmap(vjp_fn)``: the primals fixed (each block's inputs are numbers, not columns), the
    cotangents batched."""
    sizes = (2, 6, 6, 3)
    params, _ = data(1, 2, count(sizes), seed=23)

    def f(p: Any) -> Any:
        return mlp(p, [0.5, -1.5], sizes, lambda v: v.relu())

    _, function = vjpgrad.vjp(f, params)
    cotangents = np.array([[random.Random(k).uniform(-2, 2) for _ in range(3)] for k in range(20)])
    cotangents[0] = [0.0, -0.0, 1.0]
    batched = vmap(function)
    (rows,) = batched(cotangents)
    assert FOLDED in batched.source
    assert_rows(rows, [function(list(c))[0] for c in cotangents], "vjp")


def test_the_search_for_blocks_is_bounded_on_a_long_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain repeats one operation at every position, each a candidate as long as the chain,
    none a block (each copy reads the one before): the search stops within its budget."""
    from vjpgrad.batched import blocks

    checked = [0]
    of = blocks.fold.Block.of

    def counting(starts: list[int], length: int, *rest: Any, **options: Any) -> Any:
        checked[0] += len(starts) * length
        return of(starts, length, *rest, **options)

    monkeypatch.setattr(blocks.fold.Block, "of", counting)

    def chain(p: Any, x: Any) -> Any:
        y = x
        for _ in range(600):
            y = y * p + 0.5
        return y

    rows = vmap(grad(chain), in_dims=(None, 0))(0.9, np.array([1.0, -2.0, 0.0]))
    assert checked[0] <= (blocks.WORK + 2) * 1200
    eager = [grad(chain)(0.9, x) for x in (1.0, -2.0, 0.0)]
    assert_rows(rows, eager, "chain")


def test_gradients_of_some_copies_inputs_only_placed_row_by_row() -> None:
    """The weights split between two arguments, only the second differentiated and given in
    reverse order: the reverse pass places in its result the rows of a block's stacked gradient
    that belong to it, taken in the argument's order, and a weight also read after the block
    gets its later contribution first, as eager code adds them."""
    params, xs = data(30, 2, count(SIZES), seed=5)
    half = len(params) // 2
    ys = np.array([1.0 if i % 2 else -1.0 for i in range(30)])

    def split(first: Any, second: Any, x: Any, y: Any) -> Any:
        p = [v if isinstance(v, Value) else Value(v, requires_grad=False) for v in first] + list(second)[::-1]
        return hinge(p, x, y) + p[half] * p[half + 1] * x[0]

    batched = vmap(grad(split, argnums=1), in_dims=(None, None, 0, 0))
    second = params[half:][::-1]
    rows = batched(params[:half], second, xs, ys)
    assert FOLDED in batched.source
    taken_in_another_order = r"\(gi\d+_\d+, (slice\([\d, ]+\)|\([\d, ]+\)), \(\d"  # (array, rows, copies)
    assert re.search(taken_in_another_order, batched.source)
    by_sample = grad(split, argnums=1)
    eager = [by_sample(params[:half], second, [float(a) for a in x], float(y)) for x, y in zip(xs, ys, strict=True)]
    assert_rows(rows, eager, "per-sample gradient of the second argument")


def test_the_l2_penalty_parameter_by_parameter_gives_the_sums_gradient() -> None:
    """examples/moons_vmap.py takes the L2 term's gradient as vmap(grad(penalty)) over the
    parameters: the sum hands each square its gradient unchanged, so the numbers are the ones
    grad of the whole sum gives (a different order or a missing factor shows in the bits)."""
    params, _ = data(1, 2, 337, seed=7)
    params[:4] = [0.0, -0.0, 1e-300, -3.5e200]

    def regularisation(p: Sequence[Any]) -> Any:
        return 1e-4 * sum((v * v for v in p), Value(0.0, requires_grad=False))

    def penalty(v: Any) -> Any:
        return 1e-4 * (v * v)

    by_parameter = vmap(grad(penalty))(np.array(params))
    assert_rows(by_parameter, grad(regularisation)(params), "the L2 term's gradient")


def test_products_whose_operand_gets_another_contribution_run_one_by_one() -> None:
    """Products run as one array operation only where taking their contributions at once adds
    nothing in another order: each neuron reading its first weight in two products (``w0 * x0``,
    ``w0 * x2``) still runs them at once (the pass takes the products' shares in the same order),
    but a neuron that also hands its first weight gradient through another operation between
    the products (``w0.relu()``) runs its products one by one. The six products of the output
    neuron run at once in both. Each gives every sample's eager bits."""
    params, xs = data(25, 3, 4 * 6 + 7, seed=11)
    xs[3] = [0.0, -0.0, 1e308]

    def network(p: Sequence[Any], x: Sequence[Any], again: Callable[[Any], Any]) -> Any:
        out = []
        for n in range(6):
            w = p[4 * n : 4 * n + 4]
            out.append((w[3] + w[0] * x[0] + w[1] * x[1] + again(w[0]) + w[2] * x[2]).relu())
        total = p[24]
        for n in range(6):
            total = total + p[25 + n] * out[n]
        return total

    def twice(p: Sequence[Any], x: Sequence[Any]) -> Any:
        return network(p, x, lambda w: w * x[2])

    def through_relu(p: Sequence[Any], x: Sequence[Any]) -> Any:
        return network(p, x, lambda w: w.relu())

    for function, fused in ((twice, "4 products at once"), (through_relu, None)):
        batched = vmap(grad(function), in_dims=(None, 0))
        rows = batched(params, xs)
        assert FOLDED in batched.source
        assert "6 products at once" in batched.source, function.__name__
        assert fused is None or fused in batched.source, function.__name__
        assert fused is not None or "3 products at once" not in batched.source, function.__name__
        eager = [grad(function)(params, [float(a) for a in x]) for x in xs]
        assert_rows(rows, eager, function.__name__)


CANCELLING = (1e16, -1e16, 1.0, 3.0, -1.0, 0.5, -0.0, 1e-300)
"""Numbers whose sums depend on the order they are added in (``1e16 + 1.0 - 1e16`` is 0.0 left to
right, 1.0 another way)."""


@pytest.mark.parametrize("together", [True, False], ids=["products-made-together", "product-by-product"])
def test_sums_of_products_and_shares_across_copies_add_in_eager_order(
    together: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A layer's sums ``b + w0 * x0 + ...`` run product by product (``_sum_products``; or with its
    products made in one multiplication first, where they are few: ``PRODUCTS_BYTES``), the
    shares of the inputs' gradients copy by copy (``_across_products``) and the weights'
    gradients into the result's rows (``_product``), on numbers that cancel: any other order of
    the additions (a neuron's products from the last, the copies from the first, a pairwise sum)
    changes the bits of the values or of the gradients."""
    from vjpgrad.batched import arrays

    monkeypatch.setattr(arrays, "PRODUCTS_BYTES", 1 << 30 if together else 0)
    rng = random.Random(5)
    nin, nout = 5, 6
    pattern = (1e16, 1.0, -1e16, 1.0, 3.0, 0.5)  # each input's weights across the copies cancel too
    params = [pattern[(j + i) % nout] for j in range(nout) for i in range(nin + 1)] + [1.0] * nout
    xs = np.array([[rng.choice(CANCELLING) for _ in range(nin)] for _ in range(40)])

    def network(p: Sequence[Any], x: Sequence[Any]) -> Any:
        hidden, k = layer(p, x, nout, 0, None)
        total = hidden[0] * p[k]
        for n in range(1, nout):
            total = total + hidden[n] * p[k + n]
        return total

    batched = vmap(value_and_grad(network, argnums=(0, 1)), in_dims=(None, 0))
    values, (got_p, got_x) = batched(params, xs)
    for helper in ("_sum_products(", "_across_products(", "_product("):
        assert helper in batched.source, helper
    eager = [value_and_grad(network, argnums=(0, 1))(params, [float(a) for a in x]) for x in xs]
    assert_rows(values, [e[0] for e in eager], "values")
    assert_rows(got_p, [e[1][0] for e in eager], "parameters' gradients")
    assert_rows(got_x, [e[1][1] for e in eager], "inputs' gradients")
    by_floats = [network(params, [float(a) for a in x]) for x in xs]  # Python's own float arithmetic
    assert_rows(vmap(network, in_dims=(None, 0))(params, xs), by_floats, "forward")


def test_a_partial_sum_read_again_is_added_line_by_line() -> None:
    """A neuron's partial sum that something else reads (another operation, or the function's
    result) is made as before, line by line: only a chain that nothing else reads runs as one."""
    rng = random.Random(6)
    params = [rng.choice(CANCELLING[:6]) for _ in range(12)]
    xs = np.array([[rng.choice(CANCELLING) for _ in range(4)] for _ in range(30)])

    def read_again(p: Sequence[Any], x: Sequence[Any]) -> Any:
        partial = p[0] + p[1] * x[0]
        total = partial + p[2] * x[1] + p[3] * x[2] + p[4] * x[3]
        return total * partial

    def returned(p: Sequence[Any], x: Sequence[Any]) -> Any:
        partial = p[0] + p[1] * x[0] + p[2] * x[1]
        return [partial, partial + p[3] * x[2] + p[4] * x[3]]

    batched = vmap(grad(read_again), in_dims=(None, 0))
    rows = batched(params, xs)
    assert "4 products at once" in batched.source
    assert "_sum_products(" not in batched.source
    assert_rows(rows, [grad(read_again)(params, [float(a) for a in x]) for x in xs], "read again")
    forward = vmap(returned, in_dims=(None, 0))
    out = forward(params, xs)
    assert "4 products at once" in forward.source
    assert "_sum_products(" not in forward.source
    assert_rows(out, [returned(params, [float(a) for a in x]) for x in xs], "a partial sum returned")


# ---- the weights' gradients multiplied into the result's rows -------------------------------------

EDGES = (1e16, -1e16, 1.0, -0.0, 0.0, math.inf, -math.inf, math.nan, 5e-324, -3.5)


def _placed_rows(places: list[slice], rows: list[int], count: int = 60) -> tuple[Any, Any]:
    """``_rows`` filled from ``Product``s of one ``left * right`` (row ``rows[i]`` of it into the
    slice ``places[i]``), and the same rows multiplied one by one: both results."""
    from vjpgrad.batched import arrays

    rng = random.Random(len(places) * 7 + rows[0])
    copies, width = 3, 5
    left = np.array([[[rng.choice(EDGES) for _ in range(width)] for _ in range(copies)] for _ in range(6)])
    right = np.array([[[rng.choice(EDGES) for _ in range(width)]] for _ in range(6)])
    placed = tuple((arrays.Product(left, right, r), where, None) for r, where in zip(rows, places, strict=True))
    with np.errstate(all="ignore"):  # inf * 0.0 is nan, as in eager code
        got = arrays._rows(np)(count, placed, ())
        expected = np.full((count, width), 7.0)
        for r, where in zip(rows, places, strict=True):
            expected[where] = left[r] * right[r]
    filled = sorted({k for where in places for k in range(*where.indices(count))})
    return got[filled], expected[filled]


@pytest.mark.parametrize(
    ("places", "rows", "at_once"),
    [
        ([slice(2 + i, 2 + i + 3 * 9, 9) for i in range(6)], list(range(6)), True),  # a layer's weights
        ([slice(2 + i, 2 + i + 3 * 9, 9) for i in range(6)][::-1], list(range(6))[::-1], True),  # listed last first
        ([slice(10 + 2 * i, 10 + 2 * i + 3 * 13, 13) for i in range(5)], list(range(1, 6)), True),  # a gap between rows
        ([slice(0, 3), slice(3, 6), slice(30, 33)], [0, 1, 2], False),  # not regular: one by one
        ([slice(0, 9, 3), slice(1, 10, 3)], [0, 2], False),  # not consecutive rows of the product: one by one
        ([slice(1, 4), slice(0, 3)], [1, 0], False),  # two rows would fill one result row: one by one, in order
        ([slice(0, 6, 2), slice(1, 7, 2), slice(2, 8, 2)], [0, 1, 2], False),  # steps shorter than the rows: overlap
    ],
)
def test_products_fill_the_rows_of_the_result_as_one_by_one(
    places: list[slice], rows: list[int], at_once: bool
) -> None:
    """``_rows`` multiplies the rows of one product into the result in one operation only where
    they lie in a regular pattern of rows no two share (``_regular``), and the numbers are those
    the rows multiplied one by one give, in the order they are listed."""
    from vjpgrad.batched import arrays

    got, expected = _placed_rows(places, rows)
    assert got.shape == expected.shape
    for g, e in zip(got.ravel(), expected.ravel(), strict=True):
        assert same(g, e), (g, e)
    left, right = np.zeros((6, 3, 5)), np.zeros((6, 1, 5))
    entries = [(arrays.Product(left, right, r), where) for r, where in zip(rows, places, strict=True)]
    assert (arrays._regular(entries, 60) is not None) == at_once


def test_product_rows_without_a_copies_axis_are_multiplied_one_by_one() -> None:
    """A product whose rows are a row of samples each (no copies axis) fills its slices by
    broadcasting, row by row; one multiplication would lay the numbers out otherwise, so it is
    not used."""
    from vjpgrad.batched import arrays

    left, right = np.arange(12.0).reshape(3, 4), np.arange(12.0, 24.0).reshape(3, 4)
    places = [slice(3 * i, 3 * i + 3) for i in range(3)]
    entries = [(arrays.Product(left, right, r), where) for r, where in enumerate(places)]
    assert arrays._regular(entries, 9) is None
    got = arrays._rows(np)(9, tuple((p, w, None) for p, w in entries), ())
    for r, where in enumerate(places):
        assert (got[where] == left[r] * right[r]).all()


def test_a_parameter_that_is_several_weights_gets_its_gradient_where_a_block_hands_it_part() -> None:
    """A parameter read as a weight of one neuron of a folded layer and also elsewhere (as two
    weights of another neuron) takes its share out of the block's array by hand; the block's
    other rows, of the copies that follow it, are placed in the result from the rows they are
    (a copy taken out before them once shifted the rest onto the wrong rows: a ValueError)."""
    sizes = (2, 2, 2, 2)
    index = list(range(18))
    index[0] = 1  # layer 0, neuron 0: weights 0 and 1 both read p[1]
    index[9] = 1  # layer 1, neuron 1: weight 0 reads p[1] too

    def shared(p: Sequence[Any], x: Sequence[Any]) -> Any:
        h, k = list(x), 0
        for n, nout in enumerate(sizes[1:]):
            nin, out = len(h), []
            for o in range(nout):
                total = p[index[k + o * (nin + 1) + nin]]
                for i in range(nin):
                    total = total + p[index[k + o * (nin + 1) + i]] * h[i]
                out.append(total.relu() if n < len(sizes) - 2 else total)
            h, k = out, k + nout * (nin + 1)
        return h[0] + h[1]

    params = [rng_value * (k + 1) * (-1) ** k for k, rng_value in enumerate([0.05] * 18)]
    xs = np.array([[1.0, -2.0], [0.5, 3.0], [-1e16, 1e16], [-0.0, 2.5]])
    batched = vmap(grad(shared), in_dims=(None, 0))
    rows = batched(params, xs)
    assert FOLDED in batched.source
    assert_rows(rows, [grad(shared)(params, [float(a) for a in x]) for x in xs], "shared weights")


def test_copies_that_read_the_same_values_share_one_array_and_give_eager_bits() -> None:
    # the vmap tutorial's loss computes (w[0] * x + w[1]).relu() - y twice: two copies of a block whose
    # inputs are the same, so no copies axis; taking copy 0 and 1 out of it took samples 0 and 1
    def loss(w: Any, x: Any, y: Any) -> Any:
        return ((w[0] * x + w[1]).relu() - y) * ((w[0] * x + w[1]).relu() - y)

    def twice(x: Any) -> Any:
        return (x * 0.5 - 0.25).relu().exp() * (x * 0.5 - 0.25).relu().exp()

    w = [0.5, -0.25]
    xs, ys = np.array([1.0, 2.0, -3.0, 0.75]), np.array([2.0, 0.0, 1.0, -1.0])
    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    eager = [grad(loss)(w, float(x), float(y)) for x, y in zip(xs, ys, strict=True)]
    assert_rows(per_sample(w, xs, ys), eager, "per-sample gradient")
    values = [Value(a) for a in w]
    losses = vmap(loss, in_dims=(None, 0, 0))(values, xs, ys)
    eager_losses = [loss(values, Value(float(x)), Value(float(y))).data for x, y in zip(xs, ys, strict=True)]
    assert_rows(losses, eager_losses, "loss")
    assert_rows(vmap(twice)(xs), [twice(Value(float(x))).data for x in xs], "twice")


def _apply(op: str, a: Any, b: Any) -> Any:
    if op == "relu":
        return (a - b).relu()
    if op == "tanh":
        return (a * b).tanh()
    if op == "pow0":  # a gradient that is one number, 0.0, whatever reaches it
        return (a * b) ** 0 + a
    return a + b if op == "+" else a - b if op == "-" else a * b


@pytest.mark.slow  # a hundred programs, each through vmap twice and eager per sample
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["+", "-", "*", "relu", "tanh", "pow0"]), st.integers(0, 30), st.integers(0, 30)),
        min_size=SMALLEST_BLOCK,
        max_size=8,
    ),
    copies=st.integers(2, 4),
    own=st.sampled_from(["none", "weight", "weight and bias"]),
    xs=st.lists(st.floats(-2.0, 2.0) | st.sampled_from([0.0, -0.0, math.inf, -math.inf]), min_size=1, max_size=5),
)
def test_random_repeated_blocks_give_eager_bits(steps: list[Any], copies: int, own: str, xs: list[float]) -> None:
    # the same steps run once per copy on what every copy reads (the sample, a shared weight) and,
    # as ``own`` says, on weights of the copy's own: back to back, the repetition vmap runs across copies
    def f(w: Any, x: Any) -> Any:
        outs = []
        for c in range(copies):
            mine = [w[1 + c], w[1 + copies + c]] if own == "weight and bias" else [w[1 + c]] if own == "weight" else []
            regs = [x, w[0], *mine]
            for op, i, j in steps:
                regs.append(_apply(op, regs[i % len(regs)], regs[j % len(regs)]))
            outs.append(regs[-1])
        total = outs[0]
        for out in outs[1:]:
            total = total * 0.5 + out
        return total

    w = [0.75 - 0.3 * k for k in range(1 + 2 * copies)]
    samples = np.array(xs)
    rows = vmap(grad(f), in_dims=(None, 0))(w, samples)
    eager = [grad(f)(w, Value(x, requires_grad=False)) for x in xs]
    assert_rows(rows, eager, f"gradient of {steps}, {copies} copies, own {own}")
    weights = [Value(a) for a in w]  # an unbatched list of Values reaches f as it is
    values = vmap(f, in_dims=(None, 0))(weights, samples)
    assert_rows(values, [f(weights, Value(x)).data for x in xs], f"value of {steps}")


# ---- found by a fuzz of vmap against eager (2026-12-03): each once silently wrong, or a crash ----------


def per_sample_rows(f: Callable[..., Any], params: list[float], xs: Any, as_value: Callable[[Any], Any]) -> None:
    """vmap(grad(f)) over ``xs``, row by row against eager ``grad(f)`` of each sample, to the bit."""
    rows = vmap(grad(f), in_dims=(None, 0))(params, xs)
    eager = [grad(f)(params, as_value(x)) for x in xs]
    assert_rows(rows, eager, "per-sample gradient")


def test_products_every_copy_of_a_block_shares_are_not_run_as_one_against_stacked_gradients() -> None:
    def f(p: Any, x: Any) -> Any:
        def pre() -> Any:
            return p[3] + p[0] * x[0] + p[1] * x[1] + p[2] * x[2]

        a, b, c = pre(), pre(), pre()  # one sub-expression three times: three copies of three products
        return a * b - c

    def neurons(p: Any, x: Any) -> Any:
        outs = [(p[3 + n] + p[0] * x[0] + p[1] * x[1] + p[2] * x[2]).tanh() for n in range(3)]
        return outs[0] * outs[1] + outs[2]

    def square(p: Any, x: Any) -> Any:
        def pre() -> Any:
            return p[3] + p[0] * x + p[1] * x + p[2] * x

        return pre() * pre()

    xs = np.array([[1.5, -0.5, 2.0], [0.25, 3.0, -1.0], [-2.0, 0.5, 0.75]])
    rows = lambda x: [Value(float(v), requires_grad=False) for v in x]  # noqa: E731
    per_sample_rows(f, [0.5, -1.0, 2.0, 0.25], xs, rows)
    per_sample_rows(neurons, [0.5, -1.0, 2.0, 0.25, -0.3, 0.7], xs, rows)
    per_sample_rows(
        square, [0.5, -1.0, 2.0, 0.25], np.array([1.5, -0.5]), lambda x: Value(float(x), requires_grad=False)
    )


def test_products_of_unbatched_numbers_whose_gradient_is_batched_keep_a_row_each() -> None:
    def f(p: Any, x: Any) -> Any:
        return (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) * x  # an L2 term of the parameters, times the sample

    for n in (3, 5):  # as many samples as products, and not
        xs = np.array([1.0, 2.0, 3.0, -0.5, 4.0][:n])
        per_sample_rows(f, [0.5, -1.0, 2.0], xs, lambda x: Value(float(x), requires_grad=False))
        _, pullback = vjpgrad.vjp(lambda p: p[0] * p[0] + p[1] * p[1] + p[2] * p[2], [0.5, -1.0, 2.0])
        found = vmap(pullback)(xs)
        assert_rows(found[0], [pullback(float(x))[0] for x in xs], "vjp")  # a row per sample


def test_a_shared_values_contributions_that_are_all_numbers_are_added_across_copies() -> None:
    def f(p: Any, x: Any) -> Any:
        outs = [((p[4] ** 0) * p[n] * x + x).tanh() for n in range(4)]  # ** 0 hands its base the number 0.0
        return outs[0] + outs[1] + outs[2] + outs[3]

    per_sample_rows(f, [0.5, -1.0, 2.0, 0.25, 3.0], np.array([1.5]), lambda x: Value(float(x), requires_grad=False))
    per_sample_rows(
        f, [0.5, -1.0, 2.0, 0.25, 3.0], np.array([1.5, -2.0]), lambda x: Value(float(x), requires_grad=False)
    )


def test_a_gradient_that_is_one_number_inside_a_block_stays_each_samples_own() -> None:
    def f(p: Any, x: Any) -> Any:
        outs = [((p[4] * x + p[n]) ** 0 + x).tanh() for n in range(4)]
        return outs[0] + outs[1] + outs[2] + outs[3]

    params = [0.5, -1.0, 2.0, 0.25, 3.0]
    for xs in ([1.0, math.inf, 2.0], [math.inf], [-0.0, 2.0], [1.0, -3.0, 0.5, 2.0]):
        per_sample_rows(f, params, np.array(xs), lambda x: Value(float(x), requires_grad=False))


def test_the_weights_gradients_are_multiplied_into_the_result_only_where_rows_places_them_through_a_slice() -> None:
    from vjpgrad.batched import statements as st

    body = [
        st.assign("pc0_0", "(pg0 * pb0)", ("pg0", "pb0")),
        st.taken("gi0_1", "pc0_0", 0),
        st.taken("gi0_2", "pc0_0", 1),
        st.Statement(
            "return _rows(3, ((gi0_1, (0, 2), None), (gi0_2, slice(1, 2, 1), None),), ())",
            (),
            frozenset({"gi0_1", "gi0_2"}),
        ),
    ]
    parts = {"pc0_0": ("pg0", "pb0")}
    assert st.products_into_rows(body, parts, {"gi0_2"}) == body  # gi0_1's rows are a tuple: pc0_0 made as before
    rewritten = st.products_into_rows(body, parts, {"gi0_1", "gi0_2"})
    assert [s.line() for s in rewritten] == [
        "gi0_1 = _product(pg0, pb0, 0)",
        "gi0_2 = _product(pg0, pb0, 1)",
        body[-1].line(),
    ]
    assert rewritten[0].reads == {"pg0", "pb0"}  # pc0_0 is read by nothing left
    read_again = [*body[:-1], st.assign("h", "gi0_1 * 2.0", ("gi0_1",)), body[-1]]
    assert st.products_into_rows(read_again, parts, {"gi0_1", "gi0_2"}) == read_again  # gi0_1 read twice


def test_a_blocks_shares_are_multiplied_across_the_copies_only_where_nothing_else_reads_them() -> None:
    from vjpgrad.batched import statements as st

    body = [
        st.assign("pc0_1", "(pg0 * pa0)", ("pg0", "pa0")),
        st.taken("c0_0", "pc0_1", 1),
        st.taken("c0_1", "pc0_1", 0),
        st.across_stacked(["g_t2", "g_t1"], "(-0.0, g_t1,), 1", "pc0_1", "1::-1", ["g_t1"]),
    ]
    parts = {"pc0_1": ("pg0", "pa0")}
    rewritten = st.products_across(body, parts)
    assert [s.line() for s in rewritten] == ["g_t2, g_t1, = _across_products((-0.0, g_t1,), 1, pg0[1::-1], pa0[1::-1])"]
    assert rewritten[0].reads == {"g_t1", "pg0", "pa0"}
    read = [*body, st.assign("h", "c0_0 * 2.0", ("c0_0",))]  # a share read by something else: made as before
    assert st.products_across(read, parts) == read


def test_a_chain_of_additions_is_one_sum_of_products_only_where_nothing_else_reads_its_parts() -> None:
    from vjpgrad.batched import statements as st

    forward = [
        st.assign("pp0", "pa0 * pb0", ("pa0", "pb0"), "3 products at once", st.Product("pa0", "pb0")),
        st.rows(["t1", "t3", "t5"], "pp0"),
        st.assign("t2", "p0 + t1", ("p0", "t1"), "+", st.Added("p0", "t1")),
        st.assign("t4", "t3 + t2", ("t3", "t2"), "+", st.Added("t3", "t2")),
        st.assign("t6", "t4 + t5", ("t4", "t5"), "+", st.Added("t4", "t5")),
        st.handover("return (t1, t2, t3, t4, t5, t6, pp0)", reads=("t1", "t2", "t3", "t4", "t5", "t6", "pp0")),
    ]
    summed = st.sums_of_products(forward, [], {"t6"})
    assert [s.line() for s in summed] == [
        "t6 = _sum_products(p0, pa0, pb0, ((0, 0), (1, 1), (2, 0),))  # 3 products added in order",
        "t2 = t4 = t1 = t3 = t5 = pp0 = None",
        forward[-1].line(),
    ]
    assert st.sums_of_products(forward, [], {"t4"}) == forward  # a partial sum the function returns
    backward = [st.assign("g_t1", "(g_t4 * t2)", ("g_t4", "t2"))]  # a partial sum the reverse pass reads
    assert st.sums_of_products(forward, backward, {"t6"}) == forward


@pytest.mark.parametrize("start", [-0.5, -0.0, 0.0, 1e16, -1e16, math.inf, -math.inf, math.nan, 5e-324])
def test_a_sum_of_products_that_starts_at_a_number_is_added_in_eager_order(start: float) -> None:
    """A neuron whose bias is a number (not batched, not a Value) starts its chain at that number,
    written as the code writes numbers (``(-0.5)``, ``_inf``, ``(-_nan)``...): one ``_sum_products``
    call, with the bits of Python's own float arithmetic."""

    def neuron(p: Sequence[Any], x: Sequence[Any]) -> Any:
        return p[0] + p[1] * x[0] + p[2] * x[1] + p[3] * x[2] + p[4] * x[3]

    rng = random.Random(7)
    params = [start, *(rng.choice(CANCELLING[:6]) for _ in range(4))]
    xs = np.array([[rng.choice(CANCELLING) for _ in range(4)] for _ in range(20)])
    batched = vmap(neuron, in_dims=(None, 0))
    got = batched(params, xs)
    assert "_sum_products(" in batched.source
    assert_rows(got, [neuron(params, [float(a) for a in x]) for x in xs], "forward")


def test_a_vjpgrad_nn_mlp_takes_a_batched_sample_as_it_is_and_gives_eager_bits() -> None:
    """``vmap(model)(xs)``, the first thing a user writes with ``vjpgrad.nn``: each sample
    reaches the model as a Vector (as torch.func.vmap's samples are tensors), which an MLP takes
    as it takes a list (it refused it: "an MLP takes a list of inputs, got Vector"); its layers
    run across their neurons, and the outputs and the gradients with respect to the inputs are
    eager code's, sample by sample, given the same Vector."""
    model = vjpgrad.nn.MLP(3, [8, 8, 2], activation="tanh", seed=1)
    xs = np.array([[0.5, -1.0, 2.0], [0.0, -0.0, 1e16], [math.inf, 1.0, -2.0], [1e-308, 3.0, -0.5]])

    def sample(x: Sequence[float]) -> vjpgrad.Vector:
        return vjpgrad.Vector([Value(float(v), requires_grad=False) for v in x])

    outputs = vmap(model)(xs)
    assert outputs.shape == (len(xs), 2)
    assert_rows(outputs, [[v.data for v in model(sample(x))] for x in xs], "outputs")

    def loss(x: Any) -> Any:
        first, second = model(x)
        return first * second

    rows = vmap(grad(loss))(xs)
    assert_rows(rows, [grad(loss)([float(v) for v in x]) for x in xs], "gradient with respect to the inputs")


@pytest.mark.parametrize("end", [lambda t: t**0, lambda t: t**0.0 * 2.0], ids=["pow_0", "pow_0_times_2"])
def test_copies_whose_gradient_is_a_constant_zero_and_that_share_weights_are_eagers_bits(end: Any) -> None:
    # a block ending in ** 0 hands its products the number 0.0 (no copies axis): with a weight read by
    # two copies, the gradient of the other operand was read copy by copy and raised an IndexError
    def f(p: Any, x: Any) -> Any:
        h = []
        for j in range(3):
            w = p[3 * j % 6 : 3 * j % 6 + 3]  # the third neuron reads the first's weights again
            h.append(end(w[0] * x[0] + w[1] * x[1] + w[2] * x[2]))
        return h[0] + h[1] + h[2]

    p = [0.5, -0.25, 0.75, 1.5, -1.0, 2.0]
    xs = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [-3.0, 0.0, -0.0]])
    for argnums in (0, 1, (0, 1)):
        batched = vmap(grad(f, argnums=argnums), in_dims=(None, 0))(p, xs)
        eager = [grad(f, argnums=argnums)(p, [float(v) for v in row]) for row in xs]
        if argnums == (0, 1):
            for part in range(2):
                assert_rows(batched[part], [e[part] for e in eager], f"argnums {argnums}, part {part}")
        else:
            assert_rows(batched, eager, f"argnums {argnums}")
