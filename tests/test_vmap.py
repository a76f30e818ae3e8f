"""vjpgrad.vmap: each sample's numbers are eager code's for that sample, to the bit.

Every operation of the table (tests/op_cases.py) at its edges, random programs over all of
them, ties of max, the transforms it composes with, full-batch training equal to eager
training, torch.func's vmap(grad) where torch is installed, and the refusals.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import inspect
import io
import math
import os
import pickle
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from op_cases import CASES, EDGES, MAX_WITH_CONSTANTS, value_points

import vjpgrad
from vjpgrad import DataDependentError, Value, Vector, grad, hessian, jacobian, value_and_grad, vjp, vmap
from vjpgrad.core import ops
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported

np = pytest.importorskip("numpy", reason="vmap needs NumPy: pip install numpy (or pip install -e '.[vmap]')")

from vjpgrad.batched.templates import FORWARD, forward_key  # noqa: E402 - after NumPy's skip

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


pytestmark = pytest.mark.usefixtures("vmap_code")  # every test with the plain code and in a workspace


def bits(x: float) -> bytes:
    return struct.pack("<d", float(x))


def same(a: float, b: float) -> bool:
    """The same bits; for a nan, a nan (the sign of a nan made from two nans of different signs is
    the operand the hardware returns, and NumPy's vector loops may take the operands in the other
    order)."""
    return bits(a) == bits(b) or (a != a and b != b)


def assert_same_bits(batched: Any, eager: list[Any], what: str) -> None:
    """``batched`` (samples along axis 0) holds, sample by sample, eager's numbers to the bit."""
    for i, expected in enumerate(eager):
        got = np.asarray(batched[i], dtype=np.float64).ravel()
        want = np.asarray(expected, dtype=np.float64).ravel()
        assert got.shape == want.shape, f"{what}, sample {i}: shape {got.shape}, eager {want.shape}"
        for g, w in zip(got, want, strict=True):
            assert same(g, w), f"{what}, sample {i}: vmap gives {g!r}, eager {w!r}"


def per_sample(function: Callable[..., Any], columns: list[Any]) -> list[Any]:
    return [function(*(float(c[i]) for c in columns)) for i in range(len(columns[0]))]


def check_against_eager(function: Callable[..., Any], count: int, points: list[tuple[float, ...]], what: str) -> None:
    """vmap(value_and_grad(f)) over ``points`` against value_and_grad(f) at each point."""
    argnums = tuple(range(count))
    columns = [np.array([p[k] for p in points]) for k in range(count)]
    eager = per_sample(value_and_grad(function, argnums), columns)
    value, grads = vmap(value_and_grad(function, argnums))(*columns)
    assert_same_bits(value, [e[0] for e in eager], f"{what}: value")
    for k in range(count):
        assert_same_bits(grads[k], [e[1][k] for e in eager], f"{what}: gradient {k}")


# ---- the table ------------------------------------------------------------------------------------


def test_every_operation_of_the_table_has_an_array_template() -> None:
    keys = {forward_key(op) for op in ops.BUILTIN}
    assert keys - set(FORWARD) == set(), "an operation of the table has no array forward"
    assert set(FORWARD) - keys == set(), "an array template for an operation the table does not have"


FORMS = [
    pytest.param(form, numbers, case, id=f"{form.text}{numbers if numbers else ''}")
    for case in CASES
    for form in case.spellings()
    for numbers in form.number_choices()
]


@pytest.mark.slow  # a training run, a grid of edges per operation, or torch.func: seconds
@pytest.mark.parametrize(("form", "numbers", "case"), FORMS)
def test_each_operation_gives_eager_bits_at_its_edges(form: Any, numbers: tuple[float, ...], case: Any) -> None:
    points = [tuple(p[k] for k, kind in enumerate(form.operands) if kind == "v") for p in case.points(form)]
    points = [p for p in points if len(p) == form.values] + value_points(form.values)
    check_against_eager(form.of_values(numbers), form.values, points, form.text)


@pytest.mark.parametrize(("text", "function", "count"), MAX_WITH_CONSTANTS)
def test_max_with_numbers_among_its_operands_gives_eager_bits(text: str, function: Any, count: int) -> None:
    check_against_eager(function, count, value_points(count), text)


def test_ties_of_max_follow_eager_order_and_share_the_gradient() -> None:
    three = [(a, b, c) for a in (0.0, -0.0, 1.0, math.nan) for b in (0.0, -0.0, 1.0, math.nan) for c in (-0.0, 1.0)]
    check_against_eager(lambda x, y, z: F.max([x, y, z]), 3, three, "max of three")


ONE_VALUE = {
    f"{form.text} {numbers}": form.of_values(numbers)
    for case in CASES
    for form in case.spellings()
    if form.values == 1
    for numbers in form.number_choices()
}
TWO_VALUES = {form.text: form.call for case in CASES for form in case.spellings() if form.operands == "vv"}
STEP = st.one_of(
    st.tuples(st.just("unary"), st.integers(0, 9), st.sampled_from(sorted(ONE_VALUE))),
    st.tuples(st.just("binary"), st.integers(0, 9), st.integers(0, 9), st.sampled_from(sorted(TWO_VALUES))),
)
NUMBER = st.sampled_from([*EDGES, 5e-324, -2.5e-310, 0.75, -0.3]) | st.floats(-4.0, 4.0)


def program(steps: list[tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def run(x: Any, y: Any) -> Any:
        regs = [x, y]
        for step in steps:
            if step[0] == "unary":
                regs.append(ONE_VALUE[step[2]](regs[step[1] % len(regs)]))
            else:
                regs.append(TWO_VALUES[step[3]](regs[step[1] % len(regs)], regs[step[2] % len(regs)]))
        return regs[-1] + regs[-2] * regs[len(regs) // 2]

    return run


@pytest.mark.slow  # a training run, a grid of edges per operation, or torch.func: seconds
@settings(max_examples=40, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=8), st.lists(st.tuples(NUMBER, NUMBER), min_size=1, max_size=12))
def test_random_programs_over_every_operation_give_eager_bits(steps: list[Any], points: list[Any]) -> None:
    check_against_eager(program(steps), 2, points, f"program {steps}")


# ---- the transforms -------------------------------------------------------------------------------


def loss(params: Any, x: Any, y: Any) -> Any:
    score = (params[0] * x[0] + params[1] * x[1] + params[2]).tanh()
    return (score - y) * (score - y) + params[3].exp() * vjpgrad.sigmoid(x[0])


PARAMS = [0.3, -0.7, 0.1, -1.5]
XS = np.array([[0.5, -1.0], [2.0, 0.25], [-3.0, 1e-3], [0.0, -0.0], [700.0, 1.0]])
YS = np.array([1.0, -1.0, 0.5, 0.0, 1.0])


def test_per_sample_gradients_have_a_row_per_sample_equal_to_grad_of_that_sample() -> None:
    rows = vmap(grad(loss), in_dims=(None, 0, 0))(PARAMS, XS, YS)
    assert rows.shape == (len(XS), len(PARAMS))
    assert_same_bits(rows, [grad(loss)(PARAMS, list(x), float(y)) for x, y in zip(XS, YS, strict=True)], "rows")


def test_gradients_with_respect_to_several_arguments_come_as_a_tuple() -> None:
    first, second = vmap(grad(loss, argnums=(0, 1)), in_dims=(None, 0, 0))(PARAMS, XS, YS)
    eager = [grad(loss, argnums=(0, 1))(PARAMS, list(x), float(y)) for x, y in zip(XS, YS, strict=True)]
    assert_same_bits(first, [e[0] for e in eager], "params")
    assert_same_bits(second, [e[1] for e in eager], "x")


def test_jacobians_per_sample_equal_jacobian_of_each_sample() -> None:
    def f(x: Any) -> Any:
        return [x[0] * x[1], x[0].sin(), (x[1] / x[0]).log()]

    found = vmap(jacobian(f))(XS)
    assert found.shape == (len(XS), 3, 2)
    assert_same_bits(found, [jacobian(f)(list(x)) for x in XS], "jacobian")


def test_vmap_of_a_vjp_function_takes_a_batch_of_cotangents() -> None:
    def f(x: Any) -> Any:
        return [x[0] * x[1], (x[0] - x[1]).relu()]

    _, vjp_fn = vjp(f, [2.0, 3.0])
    cotangents = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -2.0], [math.inf, 0.0]])
    (found,) = vmap(vjp_fn)(cotangents)
    assert_same_bits(found, [vjp_fn(list(v))[0] for v in cotangents], "vjp")


_SCALE = 5.0


def test_a_vjp_function_keeps_the_numbers_of_vjps_time_whatever_changed_since(monkeypatch: pytest.MonkeyPatch) -> None:
    """``vjp_fn`` reads the graph ``vjp`` made, as torch.func's does: a weight, a primal list or a
    global changed after ``vjp`` changes nothing it gives. ``vmap(vjp_fn)`` gives the same rows (it
    recorded the function again in the world of its call, another function's numbers: an outside
    review found it), through its array code while the world is as ``vjp`` found it."""
    global _SCALE
    cotangents = np.array([1.0, 2.0, -0.5])
    weight = Value(2.0)
    _, pullback = vjp(lambda x: (x * weight).tanh(), 0.5)
    batched = vmap(pullback)
    one_by_one = vjpgrad.batched.run.Vmapped._vjp_one_by_one
    monkeypatch.setattr(vjpgrad.batched.run.Vmapped, "_vjp_one_by_one", None)  # nothing changed: array code
    (before,) = batched(cotangents)
    (again,) = batched(cotangents)
    assert before.tolist() == again.tolist()
    for primal in (Vector([0.5, 1.5]), Value(0.7), [Value(0.5), Value(1.5)]):  # vjp wraps each in a node of its own
        _, of_values = vjp(lambda p: (p[0] * p[1] * weight) if isinstance(p, (list, Vector)) else p * weight, primal)
        (rows,) = vmap(of_values)(cotangents)
        assert_same_bits(rows, [of_values(float(c))[0] for c in cotangents], "Values as primals")
    monkeypatch.setattr(vjpgrad.batched.run.Vmapped, "_vjp_one_by_one", one_by_one)
    weight.data = 3.0  # as an optimizer's step
    (after,) = batched(cotangents)
    expected = [pullback(float(c))[0] for c in cotangents]
    assert_same_bits(before, expected, "as vjp found it")
    assert_same_bits(after, expected, "a weight changed after vjp")

    point = [0.5, 1.5]
    _, pullback = vjp(lambda p: (p[0] * p[1]).sin(), point)
    point[0] = 9.0
    (rows,) = vmap(pullback)(cotangents)
    assert_same_bits(rows, [pullback(float(c))[0] for c in cotangents], "a primal list changed after vjp")

    _, pullback = vjp(lambda x: x * _SCALE, 0.5)
    _SCALE = 7.0
    with pytest.raises(ValueError, match="each cotangent must have the shape"):  # checked before either way
        vmap(pullback)(np.ones((3, 2)))
    try:
        (rows,) = vmap(pullback)(cotangents)
    finally:
        _SCALE = 5.0
    assert rows.tolist() == [pullback(float(c))[0] for c in cotangents] == [5.0, 10.0, -2.5]


def test_a_plain_function_returns_its_results_stacked_along_out_dims() -> None:
    def f(x: Any, scale: Any) -> Any:
        return (x * scale).exp(), [x, x * x]

    first, second = vmap(f, in_dims=(0, None))(np.array([0.0, 1.0, -2.0]), 0.5)
    assert_same_bits(first, [math.exp(x * 0.5) for x in (0.0, 1.0, -2.0)], "exp")
    assert second.shape == (3, 2)
    moved = vmap(lambda x: [x, x * x], out_dims=1)(np.array([1.0, 2.0, 3.0]))
    assert moved.shape == (2, 3)
    assert moved[1].tolist() == [1.0, 4.0, 9.0]


def test_a_tuple_of_results_comes_back_as_a_tuple_of_arrays_as_in_torch_func() -> None:
    first, second = vmap(lambda x: (x, x * x))(np.array([1.0, -2.0]))
    assert first.tolist() == [1.0, -2.0]
    assert second.tolist() == [1.0, 4.0]


def test_an_input_returned_as_it_is_and_a_constant_result_have_the_transforms_gradients() -> None:
    assert vmap(grad(lambda x: x))(np.array([1.0, -2.0])).tolist() == [1.0, 1.0]
    value, gradient = vmap(value_and_grad(lambda x: 2.0))(np.array([1.0, -2.0]))
    assert value.tolist() == [2.0, 2.0]
    assert gradient.tolist() == [0.0, 0.0]


def test_an_unbatched_int_is_structure_as_in_eager_code_and_a_differentiated_one_a_variable() -> None:
    xs = np.array([0.7, -1.3, 2.0])
    cubes = vmap(grad(lambda x, n: x**n), in_dims=(0, None))(xs, 3)  # x ** 3 is x * x * x, PyTorch's case
    assert_same_bits(cubes, [grad(lambda x, n: x**n)(float(x), 3) for x in xs], "x ** 3")
    looped = vmap(lambda x, n: sum((x for _ in range(n)), x), in_dims=(0, None))(xs, 2)
    assert looped.tolist() == [x + x + x for x in xs.tolist()]
    slopes = vmap(grad(lambda w, x: w * x), in_dims=(None, 0))(2, xs)
    assert slopes.tolist() == xs.tolist()


def test_an_unbatched_number_reaches_the_function_as_that_number_as_in_torch_func() -> None:
    """``in_dims`` None passes the argument unchanged: a float stays a float, in a list or a tuple
    too, so its operations take the table's number rows, as eager code given that float does
    (``Value ** 0.5`` is sqrt: ``(-0.0) ** 0.5`` is -0.0, ``(-inf) ** 0.5`` nan)."""

    def power(x: Any, k: Any) -> Any:
        if type(k) is not float:  # as it was passed (a change to a list would be refused); not an assert,
            raise TypeError(f"given {type(k).__name__}")  # which pytest rewrites to read locals(): the module's globals
        return x**k

    xs = np.array([-0.0, -math.inf, 4.0, 2.0])
    assert_same_bits(vmap(power, in_dims=(0, None))(xs, 0.5), [(Value(x) ** 0.5).data for x in xs.tolist()], "x ** 0.5")
    gradients = vmap(grad(power), in_dims=(0, None))(xs, 0.5)
    assert_same_bits(gradients, [grad(power)(x, 0.5) for x in xs.tolist()], "grad of x ** 0.5")
    nested = vmap(lambda x, c: x * c[0] + x / c[1][0] - c[1][1], in_dims=(0, None))(xs, [3.0, (0.1, 2)])
    assert_same_bits(nested, [x * 3.0 + x / 0.1 - 2 for x in xs.tolist()], "numbers in a list")


def test_each_row_equals_eager_code_given_values_for_the_batched_data_and_the_unbatched_number_itself() -> None:
    """A batched argument reaches the function as a Value per sample (torch.func.vmap's samples are
    tensors); an unbatched float as that float. ``s / (s * a)`` with ``s`` a float is
    ``s * (1 / (s * a))``, PyTorch's rdiv, which with ``s`` = -1e300 is another number than the
    division of two Values."""

    def h(a: Any, s: Any) -> Any:
        return (s / (s * a)) / a

    a_s = np.array([-0.04863171, 0.5, 3.0])
    unbatched = vmap(grad(h), in_dims=(0, None))(a_s, -1e300)
    assert_same_bits(unbatched, [grad(h)(a, -1e300) for a in a_s.tolist()], "s unbatched: a float")
    batched = vmap(grad(h))(a_s, np.full(3, -1e300))
    as_values = [grad(h)(a, Value(-1e300, requires_grad=False)) for a in a_s.tolist()]
    assert_same_bits(batched, as_values, "s batched: a Value per sample")
    assert not same(unbatched[0], batched[0])  # the float's row and the Value's row differ here


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (0.5, 2.0), (2.0, 3.0), (0.0, -0.0), ([0.5, 1.0], [1.0, 3.0]), ((0.5, 1.0), (1.5, 2.0)), (2, 2.0),
        (np.float32(0.0), np.float32(-0.0)), (np.float64(0.0), np.float64(-0.0)), (np.float16(1.0), np.float16(-0.0)),
        ([np.float32(0.0)], [np.float32(-0.0)]),
    ],
    ids=[
        "0.5 then 2.0", "2.0 then 3.0", "0.0 then -0.0", "a list", "a tuple", "an int then a float",
        "NumPy float32 zeros", "NumPy float64 zeros", "NumPy float16", "a list of NumPy zeros",
    ],
)  # fmt: skip
def test_another_unbatched_number_is_recorded_anew_not_replayed_with_the_old_one_baked_in(
    first: Any, second: Any
) -> None:
    def power(x: Any, k: Any) -> Any:
        if not isinstance(k, (list, tuple)):
            return x * x / k  # k's sign reaches the gradient: 2x / -0.0
        return x ** (k[0] * k[1]) if len(k) > 1 else x / k[0]

    xs = np.array([0.7, -1.3, 2.0, -0.0])
    mapped = vmap(grad(power), in_dims=(0, None))
    for k in (first, second, first):
        assert_same_bits(mapped(xs, k), [grad(power)(x, k) for x in xs.tolist()], f"k = {k!r}")


def test_unbatched_values_reach_the_function_as_they_are_their_numbers_read_at_each_call() -> None:
    """A model's parameters as Values (a list of them, a Vector, one Value) with ``in_dims`` None:
    the function gets those Values, as eager code would, and a later call reads their numbers
    then, or another call's Values."""
    xs = np.array([1.0, 3.0, -2.0])
    layer = vmap(lambda p, x: (p[0] * x + p[1]).relu(), in_dims=(None, 0))
    w = [Value(2.0), Value(-1.0)]
    assert layer(w, xs).tolist() == [1.0, 5.0, 0.0]
    w[0].data = 3.0
    assert layer(w, xs).tolist() == [2.0, 8.0, 0.0]
    assert layer(vjpgrad.Vector([-1.0, 0.5]), xs).tolist() == [0.0, 0.0, 2.5]
    scale = Value(0.5, requires_grad=False)
    scaled = vmap(lambda s, x: x / s, in_dims=(None, 0))
    assert_same_bits(scaled(scale, xs), [(Value(x) / scale).data for x in xs.tolist()], "x / s")
    scale.data = 3.0
    assert_same_bits(scaled(scale, xs), [(Value(x) / scale).data for x in xs.tolist()], "x / s, s changed")


def test_a_number_that_changes_at_every_call_is_recorded_anew_the_recordings_bounded_and_a_warning_says_so() -> None:
    """Each recording keeps its arrays (tens of MB for a large batch): the ``PROGRAMS_KEPT``
    latest are kept, and past them one ``RecompileWarning`` says to pass such a number as a Value,
    whose number is read at each call."""
    from vjpgrad.batched.run import PROGRAMS_KEPT

    scaled = vmap(lambda x, k: x * k, in_dims=(0, None))
    results = []
    with pytest.warns(vjpgrad.RecompileWarning, match=r"Value\(k, requires_grad=False\)") as caught:
        results += [scaled(np.array([1.0, 2.0]), k + 0.5).tolist() for k in range(PROGRAMS_KEPT + 10)]
    assert results == [[k + 0.5, 2 * k + 1.0] for k in range(PROGRAMS_KEPT + 10)]
    assert len([w for w in caught if issubclass(w.category, vjpgrad.RecompileWarning)]) == 1
    assert caught[0].filename in (__file__, str(Path(__file__).with_name("conftest.py")))  # the caller's line
    assert len(scaled._programs) == PROGRAMS_KEPT <= 8  # the oldest dropped first
    assert scaled(np.array([1.0]), 0.5).tolist() == [0.5]  # recorded again


def test_a_new_value_at_every_call_is_read_at_every_call_and_recorded_once() -> None:
    """What the docs and the RecompileWarning advise for a number that changes at every call (a
    learning rate): a ``Value(k, requires_grad=False)``, made anew at each call, as compile reads it."""
    scaled = vmap(lambda x, k: x * k, in_dims=(0, None))
    for k in range(12):
        assert scaled(np.array([1.0, 2.0]), Value(k + 0.5, requires_grad=False)).tolist() == [k + 0.5, 2 * k + 1.0]
    assert scaled._recordings == 1
    shared = [Value(2.0, requires_grad=False)]
    both = vmap(lambda x, k: x * k * shared[0], in_dims=(0, None))  # a Value of its world given too: that one
    assert both(np.array([1.0, 3.0]), shared[0]).tolist() == [4.0, 12.0]
    assert both(np.array([1.0, 3.0]), Value(2.0, requires_grad=False)).tolist() == [4.0, 12.0]
    assert both._recordings == 2


def test_keyword_arguments_are_passed_as_they_are_not_batched_as_in_torch_func() -> None:
    scaled = vmap(lambda x, scale=4.0: x * scale)
    xs = np.array([1.0, -2.0, 3.0])
    assert scaled(xs).tolist() == [4.0, -8.0, 12.0]
    assert_same_bits(scaled(xs, scale=0.1), [(Value(x) * 0.1).data for x in xs.tolist()], "scale=0.1")
    assert scaled(xs, scale=[2.0, 3.0][1]).tolist() == [3.0, -6.0, 9.0]
    picked = vmap(lambda x, table=None: x * table[1])  # an array given by keyword reaches f as it is
    assert picked(xs, table=np.array([5.0, 0.5])).tolist() == [0.5, -1.0, 1.5]
    with pytest.raises(TypeError, match=r"vmap\(f\)\(xs, ys\)"):  # used as a batch, it says how to batch it
        vmap(lambda x, y: x * y)(xs, y=xs)


def test_in_dims_picks_the_axis_of_the_samples() -> None:
    xs = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert vmap(lambda x: x[0] * x[1], in_dims=1)(xs).tolist() == [4.0, 10.0, 18.0]
    assert vmap(lambda x: x[0] * x[1], in_dims=-1)(xs).tolist() == [4.0, 10.0, 18.0]  # counted from the last
    assert vmap(lambda x: x[0] * x[1], in_dims=-2)(xs).tolist() == [2.0, 20.0]  # the first axis


def test_a_differentiated_list_is_read_as_floats_whatever_numbers_it_holds() -> None:
    """The parameters of ``vmap(grad(f), in_dims=(None, 0))(params, xs)``: a list of floats (read
    in one pass), or of ints, NumPy numbers and float subclasses, each taken as its float, as the
    transforms take it; the gradients are eager's either way."""

    class Tagged(float):
        pass

    def loss(p: Any, x: Any) -> Any:
        return p[0] * x + p[1] * x * x + p[2]

    xs = np.array([0.5, -2.0, 3.0])
    floats = vmap(grad(loss), in_dims=(None, 0))([1.5, -2.0, 0.25], xs)
    mixed = vmap(grad(loss), in_dims=(None, 0))([Tagged(1.5), -2, np.float64(0.25)], xs)
    expected = [grad(loss)([1.5, -2.0, 0.25], Value(float(x), requires_grad=False)) for x in xs]
    assert_same_bits(floats, expected, "a list of floats")
    assert_same_bits(mixed, [grad(loss)([1.5, -2.0, 0.25], Value(float(x), requires_grad=False)) for x in xs], "mixed")
    with pytest.raises(TypeError, match="argument 0 is differentiated"):
        vmap(grad(loss), in_dims=(None, 0))([1.5, "2", 0.25], xs)


def test_values_the_function_closes_over_are_read_at_each_call() -> None:
    w = Value(2.0)
    scaled = vmap(lambda x: x * w)
    assert scaled(np.array([1.0, 3.0])).tolist() == [2.0, 6.0]
    w.data = -1.0
    assert scaled(np.array([1.0, 3.0])).tolist() == [-1.0, -3.0]


SCALE = 2.0  # a module's number, which a vmapped function reads as eager code reads it: at each call


def test_a_global_number_rebound_between_calls_is_read_as_eager_code_reads_it() -> None:
    """The function's world is watched as ``vjpgrad.compile`` watches it: a global, a closed-over
    number, a number held by an object it was given or by its defaults, each changed between
    calls, gives eager code's numbers (the call records anew); it was the first call's number."""
    global SCALE
    xs = np.array([1.0, -2.0, 0.5])
    SCALE = 2.0
    scaled = vmap(lambda x: x * SCALE)
    assert scaled(xs).tolist() == [2.0, -4.0, 1.0]
    SCALE = 3.0
    assert scaled(xs).tolist() == [3.0, -6.0, 1.5]
    slope = vmap(grad(lambda x: x * x * SCALE))
    assert slope(xs).tolist() == [6.0, -12.0, 3.0]
    SCALE = 0.5
    assert slope(xs).tolist() == [1.0, -2.0, 0.5]
    assert scaled(xs).tolist() == [0.5, -1.0, 0.25]


def test_a_number_an_unbatched_object_holds_changed_between_calls_is_read_as_eager_code_reads_it() -> None:
    class Settings:
        scale = 2.0

    settings = Settings()
    xs = np.array([1.0, 3.0])
    scaled = vmap(lambda x, s: x * s.scale, in_dims=(0, None))
    assert scaled(xs, settings).tolist() == [2.0, 6.0]
    settings.scale = 5.0
    assert scaled(xs, settings).tolist() == [5.0, 15.0]
    k = 2.0

    def closed(x: Any) -> Any:
        return x * k

    by_closure = vmap(closed)
    assert by_closure(xs).tolist() == [2.0, 6.0]
    k = -1.0
    assert by_closure(xs).tolist() == [-1.0, -3.0]


def test_a_parameter_rebound_to_another_value_is_followed() -> None:
    """A model whose weight is replaced by a new Value between calls (as loading a checkpoint
    does): the call reads the new Value, as eager code would (it read the old one's number)."""

    class Model:
        def __init__(self) -> None:
            self.w = Value(2.0)

        def __call__(self, x: Any) -> Any:
            return self.w * x

    model = Model()
    xs = np.array([1.0, -1.0])
    mapped = vmap(lambda m, x: m(x), in_dims=(None, 0))
    assert mapped(model, xs).tolist() == [2.0, -2.0]
    model.w = Value(7.0)
    assert mapped(model, xs).tolist() == [7.0, -7.0]


def test_a_random_draw_or_a_change_to_the_world_while_recording_is_refused_naming_vmap() -> None:
    """Array code would repeat the recorded draw for every sample and every call, and would not
    make the change again: refused as ``vjpgrad.compile`` refuses them, naming vjpgrad.vmap."""
    import random

    xs = np.array([1.0, 2.0])
    with pytest.raises(DataDependentError, match=r"drew random numbers .*vjpgrad\.vmap"):
        vmap(lambda x: x * random.random())(xs)
    seen: list[Any] = []

    def keeps(x: Any) -> Any:
        seen.append(1.0)
        return x * 2.0

    with pytest.raises(DataDependentError, match=r"changed .*vjpgrad\.vmap"):
        vmap(keeps)(xs)


def test_large_batches_run_in_chunks_with_the_same_numbers() -> None:
    xs = np.linspace(-3.0, 3.0, 1001)
    whole = vmap(grad(lambda x: (x * x).tanh()))(xs)
    chunked = vmap(grad(lambda x: (x * x).tanh()), chunk_size=64)(xs)
    assert [bits(a) for a in whole] == [bits(b) for b in chunked]


def test_the_array_code_is_shown_and_has_no_branch_on_a_number() -> None:
    relu = vmap(grad(lambda x: (x * 3.0).relu()))
    relu(np.array([-1.0, 2.0]))
    assert "def forward(x0):" in relu.source
    assert "def backward(" in relu.source
    assert "_where(" in relu.source
    assert " if " not in relu.source
    # each node's edges under its forward statement, as a comment without the forward's own comment
    assert "    t2 = _where(t1 < 0.0, 0.0, t1)  # relu\n" in relu.source
    assert "    # t2 = _where(t1 < 0.0, 0.0, t1)\n" in relu.source


def test_fast_mode_agrees_on_arithmetic_and_nearly_on_functions() -> None:
    xs = np.linspace(-1.0, 1.0, 201)  # tanh away from 1, where fast's 1 - r * r (rounded twice) cancels
    exact = vmap(grad(lambda x: (x * x + x).tanh().exp()))(xs)
    fast = vmap(grad(lambda x: (x * x + x).tanh().exp()), fast=True)(xs)
    np.testing.assert_allclose(fast, exact, rtol=1e-13, atol=0.0)
    arithmetic = vmap(grad(lambda x: (x * x - 3.0 * x).relu()), fast=True)(xs)
    assert_same_bits(arithmetic, [grad(lambda x: (x * x - 3.0 * x).relu())(float(x)) for x in xs], "fast arithmetic")


def test_every_fast_helper_computes_its_exact_helpers_function_within_a_few_units_in_the_last_place() -> None:
    # a fast helper (NumPy's ufunc) that names another function (np.exp for expm1) would make fast
    # mode compute something else, and no bit-for-bit test looks at fast mode: each function's fast
    # helper is held to its exact one (the table's own float function, per element) on a grid of
    # each sign: nan at the same places, and within 4 units in the last place where finite
    from vjpgrad.batched import arrays
    from vjpgrad.codegen.symbols import HELPERS

    exact, fast = arrays.namespace(fast=False), arrays.namespace(fast=True)
    two = {f"_{op.name}" for op in ops.BUILTIN if op.arity == 2 and not op.symbol} | {"_pow"}
    names = {f"_{op.name}" for op in ops.BUILTIN if op.arity == 1} | {f"_{n}" for n in HELPERS} | two
    names.add("_pow_scalar")
    grid = np.concatenate([-np.geomspace(1e-3, 20.0, 60), [0.0], np.geomspace(1e-3, 20.0, 60)])
    pair_x, pair_y = (a.ravel() for a in np.meshgrid(grid[::4], grid[::4]))
    own = 0
    for name in sorted(names):
        if name == "_pow_scalar":
            arguments: tuple[Any, ...] = (grid, 1.5)
        elif name == "_one_minus_square":  # tanh's saved 1 - r * r, away from |r| = 1, where it cancels
            arguments = (np.linspace(-0.9, 0.9, 121),)
        else:
            arguments = (pair_x, pair_y) if name in two else (grid,)
        with np.errstate(all="ignore"):
            want = np.asarray(exact[name](*arguments), dtype=np.float64)
            got = np.asarray(fast[name](*arguments), dtype=np.float64)
        assert np.array_equal(np.isnan(got), np.isnan(want)), name
        finite = np.isfinite(want) & (np.abs(want) < 1e300)
        assert finite.sum() >= 10, name  # some of the grid lies where the function is finite
        assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]), name
        ulps = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))
        assert ulps.max() <= 4, (name, float(ulps.max()))
        own += not np.array_equal(got, want)
    assert own >= 5  # NumPy's own loops differ somewhere from the C library's: the ufuncs were run


def test_the_fast_mode_benchmark_counts_each_operations_differences_and_none_in_exact_mode() -> None:
    """benchmarks/fast_mode.py, whose counts the docs quote: a line per operation, with the NumPy
    version and the CPU, and the exact mode equal to eager code on every input."""
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "fast_mode.py"
    env = {**os.environ, "PYTHONPATH": str(Path(vjpgrad.__file__).resolve().parent.parent)}
    run = subprocess.run(
        [sys.executable, str(script), "--count", "300"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env=env,
    )
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"NumPy {np.__version__}, ")
    for name in ("exp", "log1p", "tanh", "sigmoid", "x ** y", "atan2(x, y)", "softmax([x, y, z])[0]"):
        row = next(line for line in lines if line.startswith(name + " "))
        *_, forward, gradient, exact = row.split()
        assert 0 <= int(forward.replace(",", "")) <= 300, row
        assert 0 <= int(gradient.replace(",", "")) <= 300, row
        assert exact == "0", row


def test_a_call_leaves_numpys_settings_as_it_found_them() -> None:
    """vmap runs its array code with warnings off and a buffer of its own (``arrays.BUFFER``),
    and gives the caller's settings back after the call, as they were, an error or not."""
    from vjpgrad.batched import arrays

    xs = np.linspace(-2.0, 2.0, 50)
    seen: list[int] = []

    def watched(x: Any) -> Any:
        return (x * x).relu()

    before = np.setbufsize(4096)
    try:
        with np.errstate(divide="raise", over="warn"):
            errors = np.geterr()
            vmap(grad(watched))(xs)
            seen.append(np.getbufsize())
            assert np.geterr() == errors
            with pytest.raises(RuntimeError, match="inside the array code"), arrays.arithmetic(np):
                raise RuntimeError("an error inside the array code")
            seen.append(np.getbufsize())
            assert np.geterr() == errors
        with arrays.arithmetic(np):
            assert np.getbufsize() == arrays.BUFFER != 4096
            assert np.geterr()["divide"] == "ignore"
    finally:
        np.setbufsize(before)
    assert seen == [4096, 4096]


def test_an_empty_batch_gives_results_with_no_samples_of_one_samples_shapes() -> None:
    """A batch of no samples gives, as ``torch.func.vmap`` does, results with no rows, each of
    the shape one sample's result has (the function is recorded on a stand-in sample of zeros,
    whose numbers no result holds): every transform, and ``vmap(vjp_fn)`` with no cotangents."""

    def loss(p: Any, x: Any, y: Any) -> Any:
        return (p[0] * x[0] + p[1] * x[1] + -y).relu() * (1.0 / x[0])  # 1 / 0.0 at the stand-in: inf, no error

    params, xs, ys = [0.5, -1.5], np.zeros((0, 2)), np.zeros(0)
    assert vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys).shape == (0, 2)
    values, grads = vmap(value_and_grad(loss, argnums=(0, 1)), in_dims=(None, 0, 0))(params, xs, ys)
    assert [values.shape, grads[0].shape, grads[1].shape] == [(0,), (0, 2), (0, 2)]
    assert vmap(jacobian(lambda x: [x[0] * x[1], x[0] + x[1]]))(xs).shape == (0, 2, 2)
    assert vmap(lambda x: x * 2.0, out_dims=0)(np.zeros(0)).shape == (0,)
    _, vjp_fn = vjpgrad.vjp(lambda a, b: [a * b, a + b], 3.0, 2.0)
    assert [r.shape for r in vmap(vjp_fn)(np.zeros((0, 2)))] == [(0,), (0,)]
    rows = vmap(grad(loss), in_dims=(None, 0, 0))(params, np.array([[2.0, 1.0]]), np.array([1.0]))
    assert rows.tolist() == [grad(loss)(params, [2.0, 1.0], 1.0)]  # and after it, a batch of one
    torch = pytest.importorskip("torch", reason="the comparison with torch.func needs PyTorch")
    empty = torch.func.vmap(torch.func.grad(lambda x: (x * x).sum()))(torch.zeros(0, 2, dtype=torch.float64))
    assert tuple(empty.shape) == vmap(grad(lambda x: (x * x).sum()))(np.zeros((0, 2))).shape


# ---- the workspace: each call writes into the arrays of the previous one -------------------------


def _layer(params: Any, x: Any) -> Any:
    """A relu layer of 6 neurons on 3 inputs, then their sum: folded, products at once."""
    total = params[0] * 0.0
    for j in range(6):
        pre = params[4 * j + 3]
        for i in range(3):
            pre = pre + params[4 * j + i] * x[i]
        total = total + pre.relu()
    return total


def _layer_rows(params: list[float], xs: Any) -> list[list[float]]:
    return [grad(_layer)(params, [float(v) for v in x]) for x in xs]


def test_the_workspace_code_is_the_code_shown_with_its_array_making_statements_written_into_slots() -> None:
    from vjpgrad.batched import workspace

    source = [
        "def forward(x0, x1):",
        "    t1 = x0 * x1  # *",
        "    t2 = _where(t1 < 0.0, 0.0, t1)  # relu",
        "    pa0, pb0 = _sides((x0, x1), (x1, x0))",
        "    return (t1, t2, pa0, pb0)",
        "",
        "",
        "def backward(inputs, values, s0):",
        "    (x0, x1) = inputs",
        "    # t1 = x0 * x1",
        "    g_x0 = (s0 * x1)",
        "    g_x1 = -g_x0  # return _rows( in a comment",
        "    return _rows(2, (), ((0, g_x0), (1, g_x1),))",
        "",
    ]
    written, slots = workspace.slotted("\n".join(source))
    assert written.split("\n") == [
        "def forward(x0, x1, *, _w):",
        "    t1 = _in_mul(x0, x1, _w, 0)  # *",
        "    t2 = _where(t1 < 0.0, 0.0, t1)  # relu",  # np.where makes its own array (slotted's docstring)
        "    pa0, pb0 = _in_sides((x0, x1), (x1, x0), _w, 1)",  # two slots: one per side
        "    return (t1, t2, pa0, pb0)",
        "",
        "",
        "def backward(inputs, values, s0, *, _w):",
        "    (x0, x1) = inputs",
        "    # t1 = x0 * x1",
        "    g_x0 = _in_mul(s0, x1, _w, 3)",
        "    g_x1 = _in_neg(g_x0, _w, 4)  # return _rows( in a comment",
        "    return _in_rows(2, (), ((0, g_x0), (1, g_x1)), _w, 5)",
        "",
    ]
    assert slots == 6
    assert workspace.slotted("def forward():\n    return (1.0,)\n") == ("def forward(*, _w):\n    return (1.0,)\n", 0)


def test_results_held_by_the_caller_keep_their_numbers_while_later_calls_write_into_the_workspace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from vjpgrad.batched import workspace

    monkeypatch.setattr(workspace, "WORKSPACE_BYTES", 0)  # these small batches too
    rng = np.random.default_rng(3)
    params = [float(v) for v in rng.normal(size=24)]
    per_sample = vmap(grad(_layer), in_dims=(None, 0))
    values = vmap(value_and_grad(_layer), in_dims=(None, 0))
    plain = vmap(_layer, in_dims=(None, 0))
    batches = [rng.normal(size=(n, 3)) for n in (5, 5, 3, 5, 3, 5)]  # two sizes, alternating: two workspaces
    held = [(per_sample(params, xs), values(params, xs), plain(params, xs)) for xs in batches]
    for xs, (rows, (value, gradient), result) in zip(batches, held, strict=True):
        assert_same_bits(rows, _layer_rows(params, xs), "grad rows held while later calls ran")
        assert_same_bits(gradient, _layer_rows(params, xs), "value_and_grad's rows held")
        expected = [_layer([Value(p) for p in params], [float(v) for v in x]).data for x in xs]
        assert_same_bits(value, expected, "value_and_grad's values held")
        assert_same_bits(result, expected, "a plain function's results held")
    chunked = vmap(grad(_layer), in_dims=(None, 0), chunk_size=4)  # chunks of 4, 4 and 3 samples
    xs = rng.normal(size=(11, 3))
    first = chunked(params, xs)
    again = chunked(params, xs[::-1].copy())
    assert_same_bits(first, _layer_rows(params, xs), "chunked, held")
    assert_same_bits(again, _layer_rows(params, xs[::-1]), "chunked, the next call")


def test_the_rows_handed_back_are_filled_again_once_the_caller_lets_go_of_them(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc
    import weakref

    from vjpgrad.batched import workspace

    monkeypatch.setattr(workspace, "WORKSPACE_BYTES", 0)

    rng = np.random.default_rng(4)
    params = [float(v) for v in rng.normal(size=24)]
    per_sample = vmap(grad(_layer), in_dims=(None, 0))
    xs, ys = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    enabled = gc.isenabled()
    gc.disable()  # a reference cycle would hold the rows until the collector ran: there must be none
    try:
        rows = per_sample(params, xs)
        base = weakref.ref(rows.base if rows.base is not None else rows)
        kept = rows
        again = per_sample(params, ys)  # the first rows still held: new memory
        assert not np.shares_memory(again, kept)
        assert_same_bits(kept, _layer_rows(params, xs), "rows held during the next call")
        bases = [base, weakref.ref(again.base if again.base is not None else again)]
        del rows, kept, again
        third = per_sample(params, ys)
        alive = [b() for b in bases if b() is not None]
        assert any(np.shares_memory(third, b) for b in alive), "the rows let go of are filled again"
        assert_same_bits(third, _layer_rows(params, ys), "rows filled again")
    finally:
        if enabled:
            gc.enable()


def test_calls_from_several_threads_at_once_each_get_their_own_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from vjpgrad.batched import workspace

    monkeypatch.setattr(workspace, "WORKSPACE_BYTES", 0)

    rng = np.random.default_rng(5)
    params = [float(v) for v in rng.normal(size=24)]
    per_sample = vmap(grad(_layer), in_dims=(None, 0))
    batches = [rng.normal(size=(200, 3)) for _ in range(4)]
    expected = [np.array(_layer_rows(params, xs)) for xs in batches]
    per_sample(params, batches[0])  # recorded and written here: the threads share the workspace's code
    wrong: list[int] = []

    def work(k: int) -> None:
        for _ in range(60):
            if not np.array_equal(per_sample(params, batches[k]), expected[k]):
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads taking turns as often as they can: a window between two lines is met
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switching)
    assert not wrong
    # the recording found by every call: none recorded anew (an outside review found a thread
    # that called while another held the program out of the table record it again, and warn)
    assert per_sample._recordings == 1


# ---- training -------------------------------------------------------------------------------------


def test_batch_sum_adds_from_the_last_row_to_the_first_onto_the_start() -> None:
    rows = np.array([[1e16, 1.0], [1.0, -1e16], [-1e16, 1e16]])
    expected = [((5.0 + r2) + r1) + r0 for r0, r1, r2 in zip(rows[0], rows[1], rows[2], strict=True)]
    assert [bits(x) for x in vjpgrad.batch_sum(rows, start=5.0)] == [bits(x) for x in expected]


def _eager_order(rows: Any, start: Any) -> list[float]:
    """Each column of ``rows`` summed as eager code's reverse pass adds it: onto ``start`` (else
    onto the last row), the rows from the last to the first, one Python addition at a time."""
    columns = np.asarray(rows, dtype=np.float64).reshape((len(rows), -1))
    width = columns.shape[1]
    starts = np.broadcast_to(np.asarray(start if start is not None else 0.0), np.shape(rows)[1:]).reshape(-1)
    found = []
    for k in range(width):
        chain = [float(x) for x in columns[:, k]][::-1]
        total = float(starts[k]) if start is not None else chain.pop(0)
        for x in chain:
            total = total + x
        found.append(total)
    return found


def _adversarial(count: int, shape: tuple[int, ...]) -> Any:
    """Rows whose sums depend on the order of additions: 1e16 and 1 cancelling (pairwise or
    blocked sums lose or keep the ones differently), signed zeros, and an infinity and a nan in
    some columns; each column its own rotation and scale of the pattern."""
    width = int(np.prod(shape)) if shape else 1
    pattern = [1e16, 1.0, -1e16, 1.0, -0.0, 3.0, -1e16, 1e16, 0.5, -0.0]
    columns = []
    for k in range(width):
        column = [pattern[(i + k) % len(pattern)] * (1 + k % 3) for i in range(count)]
        if k % 4 == 3 and count > 2:  # the last rows are added first: an inf, then a nan after it
            column[count - 2] = math.inf if k % 8 == 3 else math.nan
        if k % 5 == 4:
            column = [-0.0] * count
        columns.append(column)
    return np.array(columns, dtype=np.float64).T.reshape((count, *shape))


@pytest.mark.parametrize("shape", [(), (1,), (2,), (3,), (8,), (33,), (2, 3), (1, 1)])
@pytest.mark.parametrize("count", [1, 2, 3, 7, 8, 9, 16, 17, 100, 1000])
def test_batch_sum_adds_in_eager_order_on_sums_that_cancel_for_every_shape(count: int, shape: tuple[int, ...]) -> None:
    rows = _adversarial(count, shape)
    for layout in (rows, np.asfortranarray(rows)):
        for start in (None, -0.0, 0.0, 2.5, _adversarial(1, shape)[0] if shape else None):
            found = vjpgrad.batch_sum(layout, start=start)
            assert np.shape(found) == shape
            expected = _eager_order(rows, start)
            assert [bits(x) for x in np.ravel(found)] == [bits(x) for x in expected], (count, shape, start)


def test_batch_sum_keeps_negative_zero_and_its_order_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    assert bits(vjpgrad.batch_sum(np.array([-0.0, -0.0, -0.0]))) == bits(-0.0)  # NumPy's sum starts at 0.0
    assert bits(vjpgrad.batch_sum(np.array([[-0.0], [-0.0]]), start=-0.0)[0]) == bits(-0.0)
    assert bits(vjpgrad.batch_sum(np.array([[-0.0], [-0.0]]), start=0.0)[0]) == bits(0.0)
    assert bits(vjpgrad.batch_sum(np.zeros((0, 2)), start=-0.0)[1]) == bits(-0.0)
    from vjpgrad.batched import arrays

    monkeypatch.setattr(arrays, "ORDERED_BYTES", 48)  # chunks of two rows: the total carried across them
    rows = _adversarial(37, (5,))
    for start in (None, 1.0):
        expected = _eager_order(rows, start)
        assert [bits(x) for x in vjpgrad.batch_sum(rows, start=start)] == [bits(x) for x in expected]


@pytest.mark.parametrize("writeable", [True, False], ids=["writeable", "read-only"])
def test_batch_sum_leaves_the_rows_it_is_given_as_they_were(writeable: bool) -> None:
    """``batch_sum`` reads the caller's rows and writes nothing into them (a sum that used their
    memory would leave another thread, or the caller, other numbers): the array is unchanged to
    the bit afterwards, and a read-only array gives the same sums."""
    rows = _adversarial(50, (6,))
    held = rows.tobytes()
    rows.setflags(write=writeable)
    for start in (None, 2.5, _adversarial(1, (6,))[0]):
        found = vjpgrad.batch_sum(rows, start=start)
        assert [bits(x) for x in found] == [bits(x) for x in _eager_order(rows, start)]
        assert rows.tobytes() == held
        assert rows.flags.writeable is writeable


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(1, 1500),
    width=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
    reversed_view=st.booleans(),
    starts=st.integers(0, 3),
)
def test_the_ordered_sum_adds_each_column_row_after_row_for_any_size(
    count: int, width: int, seed: int, reversed_view: bool, starts: int
) -> None:
    """NumPy's reduction along the first axis adds row after row into the running total when the
    columns are the fast axis, whatever the number of rows and whether the rows are a view read
    last first (``batch_sum``'s): each column's bits are a Python loop's, on numbers spread over 40
    orders of magnitude (where the order of additions shows), with signed zeros."""
    from vjpgrad.batched import arrays

    rng = np.random.default_rng(seed)
    block = rng.standard_normal((count, width)) * 10.0 ** rng.integers(-20, 20, size=(count, width))
    block[rng.random((count, width)) < 0.05] = -0.0
    held = block.tobytes()
    rows = block[::-1] if reversed_view else block
    first = [rng.standard_normal(width) * 1e10 for _ in range(starts)]
    got = arrays.ordered_sum(np, first, rows)
    expected = np.full(width, -0.0)
    for row in [*first, *rows]:
        expected = expected + row
    assert got.tobytes() == expected.tobytes()
    assert block.tobytes() == held  # the rows as they were


@pytest.mark.parametrize("chunk_bytes", [16, 48, 1 << 19])
def test_the_ordered_sum_adds_rows_that_come_first_even_more_than_a_chunk_holds(
    chunk_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ordered_sum``'s rows given first (``batch_sum``'s ``start``) all come before the others,
    in order, however few rows a chunk holds (chunks of one row, of two, and 512 KiB)."""
    from vjpgrad.batched import arrays

    monkeypatch.setattr(arrays, "ORDERED_BYTES", chunk_bytes)
    rows = _adversarial(9, (3,))
    first = [np.array(r) for r in _adversarial(4, (3,))]
    got = arrays.ordered_sum(np, first, rows)
    for column in range(3):
        total = first[0][column]
        for x in [*(f[column] for f in first[1:]), *rows[:, column]]:
            total = total + x
        assert bits(got[column]) == bits(total), column


def test_a_parameter_used_twice_per_sample_gets_eager_bits_with_each_use_an_argument_of_its_own() -> None:
    """Eager code adds the two uses' contributions interleaved across the samples; a row of
    ``vmap(grad(...))`` holds one sample's two already added. Each use its own argument, the
    uses' rows in the order eager code made them, summed by ``batch_sum``: eager's bits (the
    recipe of the vmap tutorial)."""

    def twice(p: Any, x: Any) -> Any:
        return (p[0] * x).tanh() + (p[0] * x * x).sin()

    def by_use(p: Any, q: Any, x: Any) -> Any:
        return (p[0] * x).tanh() + (q[0] * x * x).sin()

    xs = np.random.default_rng(0).standard_normal(50)
    param = [Value(0.7)]
    sum((twice(param, Value(x, requires_grad=False)) for x in xs.tolist()), Value(0.0, requires_grad=False)).backward()
    first, second = vmap(grad(by_use, argnums=(0, 1)), in_dims=(None, None, 0))([0.7], [0.7], xs)
    uses = np.stack([first, second], axis=1).reshape(-1, 1)
    assert bits(0.0 + vjpgrad.batch_sum(uses)[0]) == bits(param[0].grad)


@pytest.mark.slow  # a training run, a grid of edges per operation, or torch.func: seconds
def test_full_batch_training_through_vmap_equals_eager_training_to_the_bit() -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import moons
        import moons_vmap
    finally:
        sys.path.remove(str(EXAMPLES))
    with contextlib.redirect_stdout(io.StringIO()):
        model, *_ = moons.train(2)
    eager = [p.data for p in model.parameters()]
    assert [bits(p) for p in moons_vmap.train(2)] == [bits(p) for p in eager]


# ---- torch.func ------------------------------------------------------------------------------------


@pytest.mark.slow  # a training run, a grid of edges per operation, or torch.func: seconds
def test_per_sample_gradients_match_torch_func_vmap_of_grad() -> None:
    torch = pytest.importorskip("torch", reason="the comparison with torch.func needs PyTorch")
    func = torch.func

    def arithmetic(params: Any, x: Any, y: Any) -> Any:
        hidden = (params[0] * x[0] + params[1] * x[1] + params[2]).relu()
        return (hidden * params[3] - y) * (hidden * params[3] - y)

    xs = np.array([[0.5, -1.0], [2.0, 0.25], [-3.0, 1e-3], [0.0, -0.0], [7.0, 1.0]])
    ours = vmap(grad(arithmetic), in_dims=(None, 0, 0))(PARAMS, xs, YS)

    def torch_loss(p: Any, x: Any, y: Any) -> Any:
        hidden = torch.relu(p[0] * x[0] + p[1] * x[1] + p[2])
        return (hidden * p[3] - y) * (hidden * p[3] - y)

    theirs = func.vmap(func.grad(torch_loss), in_dims=(None, 0, 0))(
        torch.tensor(PARAMS, dtype=torch.float64), torch.from_numpy(xs), torch.from_numpy(YS)
    )
    # the same numbers; the sign of a zero may differ: torch's p[0] hands its gradient back by adding
    # it into zeros (0.0 + -0.0 is 0.0), where vjpgrad's params are separate Values
    assert ours.ravel().tolist() == theirs.numpy().ravel().tolist()
    assert sum(bits(a) != bits(b) for a, b in zip(ours.ravel(), theirs.numpy().ravel(), strict=True)) <= sum(
        a == 0.0 for a in ours.ravel()
    )
    smooth = vmap(grad(loss), in_dims=(None, 0, 0))(PARAMS, XS, YS)

    def torch_smooth(p: Any, x: Any, y: Any) -> Any:
        score = torch.tanh(p[0] * x[0] + p[1] * x[1] + p[2])
        return (score - y) * (score - y) + torch.exp(p[3]) * torch.sigmoid(x[0])

    reference = func.vmap(func.grad(torch_smooth), in_dims=(None, 0, 0))(
        torch.tensor(PARAMS, dtype=torch.float64), torch.from_numpy(XS), torch.from_numpy(YS)
    )
    np.testing.assert_allclose(smooth, reference.numpy(), rtol=4 * 2.0**-52, atol=0.0)  # vectorised exp, tanh


# ---- refusals -------------------------------------------------------------------------------------


def test_python_that_reads_a_samples_number_is_refused_naming_the_line() -> None:
    def branchy(x: Any) -> Any:
        return x * 2.0 if x > 0 else -x  # reads the number

    with pytest.raises(DataDependentError, match=r"vjpgrad\.vmap"):
        vmap(branchy)(np.array([1.0, -1.0]))


def test_a_world_too_large_to_check_at_each_call_is_refused_naming_vmap_and_what_to_do() -> None:
    """vmap checks the function's world at each call, as compile does: a world of more than
    ``WORLD_LIMIT`` objects and items (a dataset the function names) is refused when recorded,
    naming its largest container. (Kept in the test, not the module: a global of the module is
    in the world of every function here whose code pytest's rewritten asserts make read the
    globals.)"""
    from vjpgrad.compiler.world import WORLD_LIMIT

    table = [float(k) for k in range(200_000)]
    assert len(table) > WORLD_LIMIT
    with pytest.raises(DataDependentError, match=r"can reach .*table, which holds 200,000 .*vjpgrad\.vmap watches"):
        vmap(lambda x: x * table[3])(np.array([1.0, 2.0]))
    assert vmap(lambda x, t: x * t[3], in_dims=(0, None))(np.array([1.0, 2.0]), np.array(table)).tolist() == [3.0, 6.0]


def test_a_gradient_taken_inside_the_function_is_refused() -> None:
    def inside(x: Any) -> Any:
        w = Value(1.0)
        (dw,) = vjpgrad.gradients((w * x).relu(), [w], create_graph=True)  # relu's mask: one sample's
        return dw

    with pytest.raises(DataDependentError, match=r"vmap\(grad\(f\)\)"):
        vmap(inside)(np.array([1.0, -1.0]))
    # grad, jvp... inside: the same advice, where it blamed a .data the user never wrote
    with pytest.raises(DataDependentError, match=r"vmap\(grad\(f\)\)"):
        vmap(lambda x: grad(lambda y: (y * x).relu())(x))(np.array([1.0, -1.0]))
    with pytest.raises(DataDependentError, match=r"vmap\(grad\(f\)\)"):
        vmap(lambda x: vjpgrad.jvp(lambda y: y * y, (x,), (1.0,))[1])(np.array([1.0, -1.0]))


def test_a_gradient_taken_inside_names_its_line_and_vmap_of_a_vjp_function() -> None:
    """The refusal named no line, gave masks as its reason where ``t * t`` has none, and left out
    ``vmap(vjp_fn)``, the form that runs a vjp_fn made outside per sample."""
    _, vjp_fn = vjp(lambda t: t * t, 3.0)

    def inside(c: Any) -> Any:
        return vjp_fn(c)[0] * c  # the gradient taken inside

    def graded(x: Any) -> Any:
        return grad(lambda y: y * y)(x) * x  # the gradient taken inside

    for f in (inside, graded):
        with pytest.raises(DataDependentError, match=r"vmap\(vjp_fn\)") as refused:
            vmap(f)(np.array([1.0, 2.0]))
        lines, first = inspect.getsourcelines(f)
        at = first + next(k for k, line in enumerate(lines) if line.rstrip().endswith("# the gradient taken inside"))
        assert f"{__file__}:{at}" in str(refused.value)
        assert "mask" not in str(refused.value)
    assert vmap(vjp_fn)(np.array([1.0, 2.0]))[0].tolist() == [6.0, 12.0]  # what it says to write


def test_a_bool_differentiated_is_the_number_it_is_as_eager_grad_takes_it() -> None:
    xs = np.array([2.0, -3.0])
    batched = vmap(grad(lambda p, x: p * x * x), in_dims=(None, 0))(True, xs)
    assert batched.tolist() == [grad(lambda p, x: p * x * x)(True, float(x)) for x in xs] == [4.0, 9.0]
    rows = vmap(grad(lambda p, x: p[0] * x + p[1]), in_dims=(None, 0))([False, True], xs)
    assert rows.tolist() == [[2.0, 1.0], [-3.0, 1.0]]


@pytest.mark.parametrize("first_under_no_grad", [True, False])
def test_a_transform_vmapped_under_no_grad_differentiates_as_eager_grad_does(first_under_no_grad: bool) -> None:
    """``grad`` differentiates whatever the grad mode (as ``torch.func.grad``): vmap(grad(f)) first
    called inside ``no_grad()`` recorded the function with the graph off, gave zeros, and kept that
    recording for every later call, outside ``no_grad()`` too."""
    xs = np.array([1.0, 2.0, -3.0])
    with vjpgrad.no_grad():
        eager = [grad(lambda x: x * x)(float(x)) for x in xs]
    assert eager == [2.0, 4.0, -6.0]
    per_sample = vmap(grad(lambda x: x * x))
    both = vmap(value_and_grad(lambda w, x: w * x * x), in_dims=(None, 0))
    rows = vmap(jacobian(lambda v: Vector([v[0] * v[1], v[1]])))
    calls = [contextlib.nullcontext(), vjpgrad.no_grad()]
    for mode in calls[::-1] if first_under_no_grad else calls:
        with mode:
            assert per_sample(xs).tolist() == eager
            values, slopes = both(0.5, xs)
            assert values.tolist() == [0.5, 2.0, 4.5]
            assert slopes.tolist() == [1.0, 4.0, 9.0]
            assert rows(np.array([[1.0, 2.0]])).tolist() == [[[2.0, 1.0], [0.0, 1.0]]]


def test_a_vmap_inside_a_recorded_function_that_reads_its_values_is_refused() -> None:
    """A vmap called inside a function compile or vmap records runs array code on the numbers it
    reads: a Value of the outer recording (a sample, a parameter) read so would be kept as that
    call's number, with no gradient through it. Refused, naming it; a vmap of constants inside a
    recording still runs (its numbers are the world's, watched)."""
    ys = np.array([10.0, 20.0])

    def closed_over(x: Any) -> Any:
        return vmap(lambda y: y * x)(ys).sum()

    def given_unbatched(x: Any) -> Any:
        return vmap(lambda y, t: y * t, in_dims=(0, None))(ys, x).sum()

    for f in (closed_over, given_unbatched):
        assert [float(f(Value(x, requires_grad=False))) for x in (1.0, 2.0)] == [30.0, 60.0]  # eager
        with pytest.raises(DataDependentError, match=r"a vmap called inside .* reads 1 Value"):
            vmap(f)(np.array([1.0, 2.0, 3.0]))
        with pytest.raises(DataDependentError, match=r"a vmap called inside .* reads 1 Value"):
            vjpgrad.compile(lambda x, f=f: f(x) * x)(Value(2.0))
    constants = vmap(lambda y: y * 2.0)
    compiled = vjpgrad.compile(lambda x: x * float(constants(ys)[0]))
    assert [compiled(Value(x)).data for x in (1.0, 3.0)] == [20.0, 60.0]


def test_a_vmap_inside_a_recording_differentiating_its_values_is_refused() -> None:
    """The same refusal where the Values of the recording reach the inner vmap as an unbatched
    argument it differentiates (read as numbers: compiled code kept 1000 for every x, eager gives
    1000 x**2), or as the primals of a vjp_fn made inside the recorded function."""
    ys = np.array([10.0, 20.0])
    per_sample = vmap(grad(lambda y, t: y * y * t * t, argnums=1), in_dims=(0, None))

    def differentiated(x: Any) -> Any:
        return x * float(per_sample(ys, x).sum())

    def in_a_list(x: Any) -> Any:
        rows = vmap(grad(lambda y, t: y * t[0] * t[1], argnums=1), in_dims=(0, None))(ys, [x, x * 2.0])
        return x * float(rows.sum())

    def through_vjp(x: Any) -> Any:
        _, vjp_fn = vjp(lambda t: t * t * t, x)
        return x * float(vmap(vjp_fn)(np.array([1.0, 2.0]))[0].sum())

    for f in (differentiated, in_a_list, through_vjp):
        with pytest.raises(DataDependentError, match=r"a vmap called inside .* reads \d+ Values?"):
            vjpgrad.compile(f)(Value(2.0))
        refused = r"a vmap called inside .* reads \d+ Value|a gradient taken inside"
        with pytest.raises(DataDependentError, match=refused):
            vmap(f)(np.array([1.0, 2.0]))
    _, outside = vjp(lambda t: t * t * t, 2.0)  # made outside, on a number: its graph holds no Value of the recording
    compiled = vjpgrad.compile(lambda x: x * float(vmap(outside)(np.array([1.0, 2.0]))[0].sum()))
    assert [compiled(Value(x)).data for x in (1.0, 3.0)] == [36.0, 108.0]
    weight = Value(2.0)  # made outside on a Value: vjp fixed its primal's number, as eager's vjp_fn keeps it
    _, on_a_value = vjp(lambda t: t * t * t, weight)
    compiled = vjpgrad.compile(lambda x: x * float(vmap(on_a_value)(np.array([1.0, 2.0]))[0].sum()))
    assert [compiled(Value(x)).data for x in (1.0, 3.0)] == [36.0, 108.0]


def test_a_vmap_inside_grad_reading_the_values_it_differentiates_is_refused() -> None:
    """Inside grad, jvp or jacobian a vmap that reads a Value taking gradient (given unbatched, or
    in its function's world) ran its array code on the number: no gradient flowed through it, and
    grad gave 60 where the derivative is 120 (0.0 where it is 30). Refused; a vmap of constants, or
    of Values that take no gradient, still runs there."""
    ys = np.array([10.0, 20.0])
    for take in (
        lambda: grad(lambda x: vmap(lambda y, t: y * t, in_dims=(0, None))(ys, x).sum())(2.0),
        lambda: grad(lambda x: x * vmap(lambda y: y * x)(ys).sum())(2.0),
        lambda: vjpgrad.jvp(lambda x: x * vmap(lambda y: y * x)(ys).sum(), (2.0,), (1.0,)),
    ):
        with pytest.raises(DataDependentError, match=r"a vmap called inside .* reads 1 Value"):
            take()
    fixed = Value(3.0, requires_grad=False)
    assert grad(lambda x: x * float(vmap(lambda y: y * fixed)(ys).sum()))(2.0) == 90.0
    # a Value the transform does not differentiate (a model's parameter) is a constant to it, as in eager code
    weight = Value(3.0)
    assert grad(lambda x: x * float(vmap(lambda y: y * weight)(ys).sum()))(2.0) == 90.0
    assert grad(lambda x: x * float(vmap(lambda y, w: y * w, in_dims=(0, None))(ys, weight).sum()))(2.0) == 90.0
    assert hessian(lambda x: x * x * float(vmap(lambda y: y * weight)(ys).sum()))(2.0) == 180.0
    made_before: list[Any] = []
    grad(lambda x: made_before.append(vjp(lambda t: t * t, x)[1]) or x)(3.0)  # a vjp of an earlier grad's
    assert grad(lambda x: x * float(vmap(made_before[0])(np.array([10.0, 20.0]))[0].sum()))(2.0) == 180.0
    with_no_grad = grad(lambda x: x * no_grad_sum(lambda y: y * x, ys))(2.0)  # cut on purpose, as eager code cuts
    assert with_no_grad == 60.0


def no_grad_sum(f: Any, ys: Any) -> float:
    with vjpgrad.no_grad():
        return float(vmap(f)(ys).sum())


def test_without_numpy_vmap_and_batch_sum_each_say_how_to_install_it() -> None:
    """NumPy is an optional extra: without it, vmap and batch_sum raise ImportError naming
    themselves and how to install it (batch_sum's said "vjpgrad.vmap needs NumPy")."""
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "import vjpgrad\n"
        "for call in (lambda: vjpgrad.vmap(lambda x: x), lambda: vjpgrad.batch_sum([[1.0]])):\n"
        "    try:\n"
        "        call()\n"
        "    except ImportError as error:\n"
        "        print(error)\n"
    )
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    lines = said.splitlines()
    assert len(lines) == 2
    assert all("vjpgrad.vmap and vjpgrad.batch_sum need NumPy: pip install numpy" in line for line in lines)


def test_a_vmap_inside_a_function_vmap_records_is_refused_saying_so() -> None:
    with pytest.raises(TypeError, match=r"a vmap inside a function vmap records"):
        vmap(vmap(lambda x: x * 2.0))(np.array([[1.0, 2.0], [3.0, 4.0]]))


COPIES = [
    pytest.param(copy.copy, id="copy.copy"),
    pytest.param(copy.deepcopy, id="copy.deepcopy"),
    pytest.param(lambda x: pickle.loads(pickle.dumps(x)), id="pickle"),
    pytest.param(lambda x: x.__reduce_ex__(2), id="__reduce_ex__"),
    pytest.param(
        lambda x: x.__getstate__(),
        id="__getstate__",
        marks=pytest.mark.skipif(sys.version_info < (3, 11), reason="object.__getstate__ is new in Python 3.11"),
    ),
]


@pytest.mark.parametrize("copying", COPIES)
def test_copying_or_pickling_a_value_being_recorded_is_refused_saying_what_to_do(copying: Callable[[Any], Any]) -> None:
    """A copy of a Value is made from its number, one sample's: the array code would hand every
    sample that number. Refused as reading the number is."""
    refused = r"copying or pickling a Value .* at .*vjpgrad\.vmap.*the Value itself"
    with pytest.raises(DataDependentError, match=refused):
        vmap(lambda x: x * copying(x))(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(DataDependentError, match=r"copying or pickling a Value"):
        vmap(grad(lambda x: x * copying(x)))(np.array([1.0, 2.0, 3.0]))


@pytest.mark.parametrize(
    ("batched", "says"),
    [
        (np.array([1 + 5j, 2.0]), "complex numbers"),
        ([1.0, None], "None"),
        (np.array([1.0, None], dtype=object), "None"),
        ([1.0, "2"], "strings"),
        (np.array(["1e300", "nan"]), "strings"),
        ([[1.0, 2.0], [3.0, None]], "None"),
        ([1.0, Value(2.0)], "a Value"),
        (np.array(["2026-01-01"], dtype="datetime64[D]"), "dates"),
    ],
    ids=[
        "complex",
        "None in a list",
        "None in an object array",
        "a string",
        "strings",
        "None in a sample",
        "a Value",
        "dates",
    ],
)
def test_a_batched_argument_of_anything_but_real_numbers_is_refused_naming_it_before_anything_runs(
    batched: Any, says: str
) -> None:
    """``np.asarray(..., float64)`` would drop an imaginary part, read None as nan and parse
    strings: vmap refuses them instead, naming the argument and what it held."""
    ran: list[Any] = []

    def f(x: Any, y: Any) -> Any:
        ran.append(x)
        return x * y

    with pytest.raises(TypeError, match=rf"batched argument 1 must hold real numbers .*{says}"):
        vmap(f)(np.ones(len(batched)), batched)
    assert ran == []


@pytest.mark.parametrize(
    "pair",
    [
        (np.array([1.0, 2.0]), np.array([3.0, 4.0])),
        ([1.0, 2.0], [3.0, 4.0]),
        ((1.0, 2.0), (3.0, 4.0)),
        (np.array([1.0, 2.0]), [3.0, 4.0]),
    ],
    ids=["two arrays", "two lists", "two tuples", "an array and a list"],
)
def test_a_tuple_of_arrays_is_refused_as_torch_func_would_map_over_each_of_them(pair: tuple[Any, Any]) -> None:
    """torch.func.vmap reads a tuple as a pytree, mapping over each of its arrays: (xs, ys) is the
    samples (x0, y0), (x1, y1)... NumPy reads it as one array whose samples are xs and ys: two samples
    here, another function's numbers with no error. vmap refuses it, before anything runs, and says
    how to pass the arrays."""
    ran: list[Any] = []

    def product(p: Any) -> Any:
        ran.append(p)
        return p[0] * p[1]

    with pytest.raises(TypeError, match=r"argument 0 is a tuple of 2 .*pytree.*vmap\(f\)\(xs, ys\)"):
        vmap(product)(pair)
    with pytest.raises(TypeError, match=r"argument 1 is a tuple of 2 "):
        vmap(lambda w, p: w * p[0], in_dims=(None, 0))(2.0, pair)
    assert ran == []
    # the spellings it names: each array an argument of its own, or the samples as rows
    assert vmap(lambda x, y: x * y)(*map(np.asarray, pair)).tolist() == [3.0, 8.0]
    rows = vmap(lambda p: p[0] * p[1])
    assert rows(np.stack([np.asarray(a) for a in pair], axis=1)).tolist() == [3.0, 8.0]
    # a list of rows, and a tuple of numbers, are arrays as before (torch.func takes neither)
    assert rows([[1.0, 3.0], [2.0, 4.0]]).tolist() == [3.0, 8.0]
    assert rows([(1.0, 3.0), (2.0, 4.0)]).tolist() == [3.0, 8.0]
    # a list of arrays is a pytree to torch.func too: refused, not stacked
    with pytest.raises(TypeError, match=r"argument 0 is a list of 2 .*pytree"):
        vmap(product)([np.asarray(a) for a in pair])
    assert vmap(lambda x: x * 2.0)((1.0, 2.0, 3.0)).tolist() == [2.0, 4.0, 6.0]


def test_cotangents_given_as_a_tuple_of_arrays_are_refused_saying_to_stack_them() -> None:
    # vjp_fn of a function of two outputs: torch.func maps over each cotangent array of the tuple
    _, pullback = vjp(lambda x: (x * 2.0, x * 3.0), 1.5)
    with pytest.raises(TypeError, match=r"argument 0 is a tuple of 2 .*np\.stack\(\(first, second\), axis=1\)"):
        vmap(pullback)((np.array([1.0, 0.0]), np.array([1.0, 1.0])))
    (rows,) = vmap(pullback)(np.array([[1.0, 1.0], [0.0, 1.0]]))
    assert rows.tolist() == [5.0, 3.0]


def test_bools_ints_and_numpys_real_types_are_read_as_numbers() -> None:
    xs = [np.array([True, False]), [1, 2], np.array([1, 2], dtype=np.uint8), np.array([0.5, 2.0], dtype=np.float32)]
    for x in xs:
        assert vmap(lambda v: v * 2.0)(x).tolist() == [2.0 * float(v) for v in x]
    assert vmap(lambda v: v * 2.0)(np.array([1, 2.5], dtype=object)).tolist() == [2.0, 5.0]


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: vmap(lambda x: x)(np.array(1.0)), ValueError, "no axis"),
        (lambda: vmap(lambda x, y: x * y)(np.ones(2), np.ones(3)), ValueError, "different sizes"),
        (lambda: vmap(lambda x: x, in_dims=(0, 0))(np.ones(2)), ValueError, "in_dims has 2 entries"),
        (lambda: vmap(lambda x: x, in_dims=None)(1.0), ValueError, "at least one argument must be batched"),
        (lambda: vmap(lambda x: x, in_dims="0"), TypeError, "in_dims must be"),
        (lambda: vmap(lambda x: x, fast=1), TypeError, "fast must be a bool"),
        (lambda: vmap(lambda x: x, chunk_size=0), ValueError, "chunk_size must be at least 1"),
        (lambda: vmap(lambda x: x)(np.ones((2, 2, 2))), ValueError, "a number or a list of numbers"),
        (lambda: vmap(lambda x: x)(["a", "b"]), TypeError, "argument 0 must hold real numbers .* strings"),
        (lambda: vmap(grad(lambda x: [x, x]))(np.ones(2)), TypeError, "scalar output"),
        (lambda: vmap(vjpgrad.hessian(lambda x: x * x)), TypeError, "composes with grad"),
        (lambda: vmap(grad(grad(lambda x: x * x))), TypeError, "a transform of a transform"),
        (lambda: vmap(3), TypeError, "takes a function"),
        (lambda: vmap(lambda x: x).source, RuntimeError, "not been called"),
        (lambda: vmap(lambda x, y: x * y)(np.ones(3), y=np.ones(3)), TypeError, "keyword argument y, a NumPy array"),
        (lambda: vmap(lambda x: x, out_dims=1)(np.ones(3)), ValueError, r"out_dims 1 .* 1 axis"),
        (lambda: vmap(lambda x: [x, x], out_dims=-3)(np.ones(3)), ValueError, r"out_dims -3 .* 2 axes"),
        (lambda: vmap(lambda x: (x, [x]), out_dims=(0, 2))(np.ones(3)), ValueError, r"out_dims 2 .* 2 axes"),
        (lambda: vjpgrad.batch_sum("abc"), TypeError, r"batch_sum takes an array of real numbers .* str"),
        (lambda: vjpgrad.batch_sum([[1.0, None]]), TypeError, r"batch_sum takes an array of real numbers .* None"),
        (lambda: vjpgrad.batch_sum(np.ones((3, 2)), start=[1.0, 2.0, 3.0]), ValueError, r"start .*\(3,\).* \(2,\)"),
        (lambda: vjpgrad.batch_sum(np.ones((3, 2)), start="ab"), TypeError, r"batch_sum start .* str"),
    ],
)
def test_bad_calls_raise_a_clear_error(call: Callable[[], Any], error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        call()


def test_without_numpy_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(ImportError, match=r"pip install numpy \(or pip install -e '\.\[vmap\]' in your clone"):
        vmap(lambda x: x)


def test_broadcast_shapes_is_numpys() -> None:
    from vjpgrad.batched import arrays

    shapes = [(), (1,), (3,), (0,), (1, 3), (2, 1), (2, 3), (1, 1, 3), (4, 1, 1), (4, 2, 3), (2, 0), (1, 0)]
    for a in shapes:
        for b in shapes:
            try:
                expected: object = np.broadcast_shapes(a, b)
            except ValueError:
                expected = ValueError
            try:
                found: object = arrays.broadcast_shapes(a, b)
            except ValueError:
                found = ValueError
            assert found == expected, (a, b)


@pytest.mark.parametrize("start", [-0.0, 0.0])
def test_across_products_adds_each_share_onto_its_start_as_across_stacked(start: float) -> None:
    """Starts of -0.0 take the first share as the total (``-0.0 + c`` is ``c``); +0.0 does not
    (``0.0 + -0.0`` is ``0.0``): both as ``_across_stacked`` of the products, to the bit."""
    from vjpgrad.batched import arrays

    namespace = arrays.namespace(False)
    left = np.array([[[-0.0, 1e16, -1e16], [-0.0, -0.0, 3.0]], [[0.0, -0.0, np.inf], [np.nan, 2.0, -0.0]]])
    right = np.array([[[1.0], [2.0]], [[-1.0], [0.5]]])
    starts = (start, start)
    expected = namespace["_across_stacked"](starts, 1, left * right)
    for buffers in (None, []):
        found = namespace["_across_products"](starts, 1, left, right, buffers)
        assert found.tobytes() == expected.tobytes()


# ---- unbatched Values that are one object -----------------------------------------------------

ALIASED_GLOBAL = Value(5.0)


def _eager_rows(f: Callable[..., Value], xs: Any, *args: Any, **kwargs: Any) -> list[float]:
    return [f(Value(float(x), requires_grad=False), *args, **kwargs).data for x in xs]


def test_an_unbatched_value_that_is_also_read_from_outside_is_watched_as_one_object() -> None:
    """An unbatched Value argument that is the very Value the function also reads another way (a
    global, a model's weight it closes over, a keyword argument) is one input of the recording
    only while it is that Value: a later call given another Value is recorded anew, and reads
    each where eager code reads it (an outside review found the first recording reused, the new
    argument read in both places)."""
    xs = np.array([1.0, 2.0])
    other = Value(10.0)

    def with_global(x: Value, a: Value) -> Value:
        return x * a + ALIASED_GLOBAL

    mapped = vmap(with_global, in_dims=(0, None))
    assert mapped(xs, ALIASED_GLOBAL).tolist() == _eager_rows(with_global, xs, ALIASED_GLOBAL) == [10.0, 15.0]
    assert mapped(xs, other).tolist() == _eager_rows(with_global, xs, other) == [15.0, 25.0]
    assert mapped(xs, ALIASED_GLOBAL).tolist() == [10.0, 15.0]

    def with_keyword(x: Value, a: Value, *, b: Value) -> Value:
        return x * a + b

    mapped = vmap(with_keyword, in_dims=(0, None))
    assert mapped(xs, other, b=other).tolist() == [20.0, 30.0]
    hundred = Value(100.0)
    assert mapped(xs, hundred, b=other).tolist() == _eager_rows(with_keyword, xs, hundred, b=other) == [110.0, 210.0]

    neuron = vjpgrad.nn.Neuron(1, nonlin=False, seed=0)

    def with_model(x: Value, s: Value) -> Value:
        return neuron([x]) * s

    mapped = vmap(with_model, in_dims=(0, None))
    mapped(xs, neuron.w[0])
    three = Value(3.0)
    assert mapped(xs, three).tolist() == _eager_rows(with_model, xs, three)

    def loss(p: Value, x: Value, a: Value) -> Value:
        return p * x * a + p * ALIASED_GLOBAL

    per_sample = vmap(grad(loss), in_dims=(None, 0, None))
    per_sample(2.0, xs, ALIASED_GLOBAL)
    expected = [grad(loss)(2.0, Value(x, requires_grad=False), other) for x in xs]
    assert per_sample(2.0, xs, other).tolist() == expected == [15.0, 25.0]


def test_what_an_unbatched_value_is_beyond_its_number_is_structure_as_compile_keeps_it() -> None:
    """An unbatched Value's number is read at each call; which Value it is (``w is W``), what it
    carries (a label, an attribute of the user's), ``requires_grad`` and how it was made
    (``is_leaf``) fix the recording, as they fix compile's: a call where any of them differs is
    recorded anew (an outside review found the first recording replayed)."""
    xs = np.array([1.0, 2.0])
    cases: list[tuple[Callable[..., Any], Any, Callable[[Any], Any]]] = []

    def identity(x: Value, w: Value) -> Value:
        return x * 2.0 if w is ALIASED_GLOBAL else x * 3.0

    cases.append((identity, ALIASED_GLOBAL, lambda w: Value(ALIASED_GLOBAL.data)))

    def labelled(x: Value, w: Value) -> Value:
        return x * (2.0 if w.label == "a" else 3.0)

    cases.append((labelled, Value(1.0, label="a"), lambda w: setattr(w, "label", "b") or w))

    def scaled(x: Value, w: Value) -> Value:
        return x * getattr(w, "scale", 2.0)

    cases.append((scaled, Value(1.0), lambda w: setattr(w, "scale", 3.0) or w))

    def trained(x: Value, w: Value) -> Value:
        return x * (2.0 if w.requires_grad else 3.0)

    cases.append((trained, Value(1.0), lambda w: setattr(w, "requires_grad", False) or w))

    def made(x: Value, w: Value) -> Value:
        return x * (2.0 if w.is_leaf else 3.0)

    cases.append((made, Value(1.0), lambda w: w * 1.0))
    for f, first, then in cases:
        mapped = vmap(f, in_dims=(0, None))
        assert mapped(xs, first).tolist() == _eager_rows(f, xs, first) == [2.0, 4.0], f.__name__
        second = then(first)
        assert mapped(xs, second).tolist() == _eager_rows(f, xs, second) == [3.0, 6.0], f.__name__
    plain = vmap(lambda x, w: x * w, in_dims=(0, None))  # a number changed: read, not recorded anew
    w = Value(2.0)
    plain(xs, w)
    w.data = 4.0
    assert plain(xs, w).tolist() == [4.0, 8.0]
    assert len(plain._programs) == 1


@pytest.mark.parametrize("kind", [collections.Counter, collections.OrderedDict, collections.defaultdict])
def test_an_unbatched_dict_of_another_class_with_the_same_items_is_recorded_anew(kind: type) -> None:
    xs = np.array([1.0, 2.0])

    def f(x: Value, d: dict[str, float]) -> Value:
        return x * 2.0 if isinstance(d, kind) else x * 5.0

    mapped = vmap(f, in_dims=(0, None))
    assert mapped(xs, {"a": 1}).tolist() == [5.0, 10.0]
    other = kind(int) if kind is collections.defaultdict else kind()
    other["a"] = 1
    assert mapped(xs, other).tolist() == _eager_rows(f, xs, other) == [2.0, 4.0]


def test_one_value_given_twice_unbatched_is_one_input_and_two_later_are_two() -> None:
    """Tied weights (``[w, w]``) or ``f(x, w, w)``: one Value given twice is one input of the code
    (it was written as two parameters of one name, a SyntaxError); a later call with two Values
    in those places is recorded anew, and the reverse order works as well."""
    xs = np.array([1.0, 2.0])
    w, v = Value(10.0), Value(7.0)

    def tied(x: Value, ws: list[Value]) -> Value:
        return x * ws[0] + ws[1]

    mapped = vmap(tied, in_dims=(0, None))
    assert mapped(xs, [w, w]).tolist() == _eager_rows(tied, xs, [w, w]) == [20.0, 30.0]
    assert mapped(xs, [w, v]).tolist() == _eager_rows(tied, xs, [w, v]) == [17.0, 27.0]
    assert mapped(xs, [v, v]).tolist() == [14.0, 21.0]

    def loss(p: Value, x: Value, a: Value, b: Value) -> Value:
        return p * x * a + b

    per_sample = vmap(grad(loss), in_dims=(None, 0, None, None))
    assert per_sample(1.0, xs, w, w).tolist() == [grad(loss)(1.0, Value(x, requires_grad=False), w, w) for x in xs]
    assert per_sample(1.0, xs, w, v).tolist() == [10.0, 20.0]


def test_argnums_are_checked_as_the_transform_checks_them() -> None:
    """``vmap(grad(f, argnums=(0, 0)))`` is refused as ``grad(f, argnums=(0, 0))`` is (an outside
    review found it accepted, returning the gradient twice)."""

    def f(p: Value, x: Value) -> Value:
        return p * x

    with pytest.raises(ValueError, match=r"argnums elements must be unique, got \(0, 0\)"):
        grad(f, argnums=(0, 0))(2.0, Value(1.0, requires_grad=False))
    with pytest.raises(ValueError, match=r"argnums elements must be unique, got \(0, 0\)"):
        vmap(grad(f, argnums=(0, 0)), in_dims=(None, 0))(2.0, np.array([1.0, 3.0]))
    with pytest.raises(ValueError, match=r"argnums 2 is out of range for a function called with 2 arguments"):
        vmap(grad(f, argnums=2), in_dims=(None, 0))(2.0, np.array([1.0, 3.0]))


def test_an_out_dims_entry_applies_to_each_result_of_a_nested_tuple() -> None:
    """``out_dims=(0, 1)`` for a result ``((a, b), c)``: the entry 0 applies to both of ``(a, b)``,
    as ``torch.func.vmap``'s out_dims is a prefix of the result's structure (an outside review
    found an AttributeError)."""
    xs = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    (pair, last) = vmap(lambda x: ((x, [x[0] * 2.0, x[1]]), [x[1], x[0]]), out_dims=(0, 1))(xs)
    assert pair[1].shape == (3, 2)
    assert pair[1].tolist() == [[2.0, 2.0], [6.0, 4.0], [10.0, 6.0]]
    assert last.shape == (2, 3)
    assert last.tolist() == [[2.0, 4.0, 6.0], [1.0, 3.0, 5.0]]
    value, grads = vmap(value_and_grad(lambda a, b: a * b, argnums=(0, 1)), out_dims=(0, 0))(xs[:, 0], xs[:, 1])
    assert value.tolist() == [2.0, 12.0, 30.0]
    assert [g.tolist() for g in grads] == [[2.0, 4.0, 6.0], [1.0, 3.0, 5.0]]


def test_an_index_error_caught_while_recording_is_refused() -> None:
    """A sample whose index is out of range, caught by the function (a padding token), would fix
    the recording's branch for every sample: refused, as compile refuses it."""
    table = [[Value(0.1), Value(0.2)], [Value(0.3), Value(0.4)]]

    def embed(token: Value) -> Value:
        try:
            row = F.embedding(token, table)
        except IndexError:
            return Value(0.0, requires_grad=False)
        return row[0] + row[1]

    with pytest.raises(DataDependentError, match=r"raised IndexError .* for a Value's number"):
        vmap(embed)(np.array([5.0, 1.0]))


def test_two_vmapped_functions_of_one_name_each_show_their_own_lines() -> None:
    """The array code of each vmapped function is shown in tracebacks under a file name of its own:
    two functions named alike (two lambdas) shared one, which held the later one's lines."""
    import linecache

    first = vjpgrad.vmap(lambda x: x * 2.0)
    second = vjpgrad.vmap(lambda x: (x * 3.0).tanh())
    first([0.5, 1.0])
    second([0.5, 1.0])
    programs = [next(iter(v._programs.values())) for v in (first, second)]
    names = [p.forward.__code__.co_filename for p in programs]
    assert names[0] != names[1]
    assert "tanh" not in "".join(linecache.getlines(names[0]))
    assert "tanh" in "".join(linecache.getlines(names[1]))


def test_batch_sum_refuses_the_tuple_of_rows_of_several_arguments() -> None:
    """``vmap(grad(f, argnums=(0, 1)))`` returns one array of rows per argument: NumPy would read the
    tuple as one array and add the arguments' rows together, sample by sample, with no error."""

    def loss(w: list[Value], b: list[Value], x: list[Value]) -> Value:
        return (w[0] * x[0] + w[1] * x[1] + b[0] + b[1]).tanh()

    xs = np.array([[0.5, 1.0], [-1.0, 0.25], [2.0, -1.5]])
    rows = vmap(grad(loss, argnums=(0, 1)), in_dims=(None, None, 0))([0.3, -0.6], [0.1, 0.2], xs)
    with pytest.raises(TypeError, match=r"one array per argument \(sum each, batch_sum\(rows\[k\]\)\)"):
        vjpgrad.batch_sum(rows)
    scalars = vmap(grad(lambda a, b, x: a * b * x, argnums=(0, 1)), in_dims=(None, None, 0))(2.0, 3.0, xs[:, 0])
    with pytest.raises(TypeError, match="a tuple of 2 arrays"):
        vjpgrad.batch_sum(scalars)
    assert vjpgrad.batch_sum(rows[0]).shape == (2,)  # each argument's rows, summed apart
    assert vjpgrad.batch_sum([np.array([1.0, 2.0]), np.array([3.0, 4.0])]).tolist() == [4.0, 6.0]  # a list of rows
    jacobians = [np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[10.0, 20.0], [30.0, 40.0]])]  # a sample's each
    assert vjpgrad.batch_sum(jacobians).tolist() == [[11.0, 22.0], [33.0, 44.0]]


def test_anomaly_mode_raises_where_eager_code_raises_naming_the_sample() -> None:
    """Under ``detect_anomaly()`` a backward pass that produces nan raises (SPEC 6): vmap's array code
    would hand the nan on, so each sample's pass is also run as eager code, which names the op and
    the line, and the error names the sample."""

    def f(p: list[Value], x: Value) -> Value:
        return (p[0] * x).sqrt()

    xs = np.array([1.0, -1.0, 4.0])
    assert np.isnan(vmap(grad(f), in_dims=(None, 0))([1.0], xs)[1, 0])  # outside anomaly mode: nan, as eager
    with vjpgrad.detect_anomaly():
        with pytest.raises(FloatingPointError, match=r"vmap, at sample 1 of 3: backward of 'sqrt' produced nan"):
            vmap(grad(f), in_dims=(None, 0))([1.0], xs)
        assert vmap(grad(f), in_dims=(None, 0))([1.0], np.array([1.0, 4.0])).tolist() == [[0.5], [1.0]]
        _, vjp_fn = vjpgrad.vjp(lambda x: x.sqrt(), -1.0)
        with pytest.raises(FloatingPointError, match=r"vmap, at sample 0 of 2: backward of 'sqrt' produced nan"):
            vmap(vjp_fn)(np.array([1.0, 2.0]))


# ---- custom operations: their function and rule, called for each sample's numbers ------------------


@vjpgrad.custom_op
def _softplus(x: float) -> float:
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


@_softplus.derivative
def _(x: Any, out: Any) -> Any:
    return vjpgrad.sigmoid(x)


@vjpgrad.custom_op
def _by_pieces(x: float, y: float) -> float:
    return x * y if x > 0 else x + y


@_by_pieces.derivative
def _(x: Any, y: Any, out: Any) -> Any:
    return (y, x) if x > 0 else (1.0, 1.0)


def test_a_custom_operation_runs_in_vmap_with_eagers_bits() -> None:
    """SPEC 16: vmap takes what compile takes. A custom operation has no array form: its function
    and its rule are called on each sample's numbers, which gives each sample eager's bits."""
    xs = np.array([-3.0, -0.5, 0.0, 0.25, 2.0, 30.0, -745.0, math.inf])
    ys = np.array([1.5, -2.0, 0.5, 3.0, -1.0, 0.125, 2.0, 1.0])

    def f(x: Value, y: Value) -> Value:
        return _softplus(x * 2.0) * y + _by_pieces(x, y) - _by_pieces(1.5, x)

    def loss(p: list[Value], x: Value, y: Value) -> Value:
        return _softplus(p[0] * x + p[1]) * _by_pieces(y, p[0])

    eager_f = [f(Value(x), Value(y)).data for x, y in zip(xs.tolist(), ys.tolist(), strict=True)]
    assert_same_bits(vmap(f)(xs, ys), eager_f, "f")
    assert_same_bits(vmap(f, fast=True)(xs, ys), eager_f, "f, fast")  # the same function: no ufunc of NumPy's
    params = [0.5, -0.25]
    rows = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    pairs = list(zip(xs.tolist(), ys.tolist(), strict=True))
    assert_same_bits(rows, [grad(loss)(params, x, y) for x, y in pairs], "grad(loss)")
    both = vmap(grad(f, argnums=(0, 1)))(xs, ys)
    eager = [grad(f, argnums=(0, 1))(x, y) for x, y in zip(xs.tolist(), ys.tolist(), strict=True)]
    for k in range(2):
        assert_same_bits(both[k], [e[k] for e in eager], f"argument {k}")


def test_a_custom_operations_name_never_reaches_the_array_code() -> None:
    def evil(x: float) -> float:
        return x * 2.0

    evil.__name__ = "__import__('os').system('echo pwned')"
    op = vjpgrad.custom_op(evil)
    op.derivative(lambda x, out: 2.0)
    mapped = vmap(grad(lambda x: op(x) * x))
    assert mapped(np.array([1.0, 3.0])).tolist() == [4.0, 12.0]
    assert "pwned" not in mapped.source
    assert "evil" not in mapped.source


def test_a_custom_activation_in_a_layer_and_a_large_batch_keeps_eagers_bits() -> None:
    """A layer whose activation is a custom operation (no block is folded across its neurons: an
    operation outside the table never folds, as in compile); a large batch runs in workspaces
    and chunks, called again, as a training loop calls it."""

    def loss(p: list[Value], x: Value, y: Value) -> Value:
        hidden = [_softplus(p[3 * k] * x + p[3 * k + 1] * y + p[3 * k + 2]) for k in range(8)]
        return sum((h * h for h in hidden), Value(0.0, requires_grad=False))

    rng = np.random.default_rng(7)
    params = rng.uniform(-1, 1, 24).tolist()
    xs, ys = rng.uniform(-3, 3, 3000), rng.uniform(-3, 3, 3000)
    mapped = vmap(grad(loss), in_dims=(None, 0, 0))
    for _ in range(2):
        rows = mapped(params, xs, ys)
    picked = range(0, 3000, 97)
    assert_same_bits(rows[list(picked)], [grad(loss)(params, xs[k], ys[k]) for k in picked], "a layer")


def test_differentiating_through_vmap_and_a_batch_by_keyword_say_what_to_do() -> None:
    mapped = vmap(lambda x: x * x)
    with pytest.raises(TypeError, match=r"differentiating through it \(grad\(vmap\(f\)\)\) is not supported"):
        grad(lambda w: mapped([w, w]).sum())(1.0)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"keyword arguments are never batched, as in torch\.func\.vmap"):
        vmap(lambda x: x * 2.0)(x=np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"a batch is numbers, one row a sample") as given:  # no grad in sight
        vmap(lambda x: x * 2.0)([Value(1.0), Value(2.0)])
    assert "grad(vmap(f))" not in str(given.value)


def test_a_refusal_of_the_world_under_vmap_does_not_name_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the world is watched alike for both: a message that said "vjpgrad.compile cannot follow" misled under vmap
    import builtins
    import importlib

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    monkeypatch.chdir(tmp_path)  # the project
    (tmp_path / "own_settings_v.py").write_text("K = 2.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("own_settings_v")
    namespace: dict[str, Any] = {"__name__": "user_code_v"}
    source = "def f(x):\n    import own_settings_v\n    return x * own_settings_v.K\n"
    exec(builtins.compile(source, str(tmp_path / "user_code_v.py"), "exec"), namespace)
    with pytest.raises(DataDependentError, match=r"imports own_settings_v while it runs") as refused:
        vmap(namespace["f"])(np.array([1.0, 2.0]))
    assert "compile" not in str(refused.value), str(refused.value)


_DRAWN = iter([1.0, 2.0, 3.0])


def _draws_from_an_iterator(x: Any) -> Any:
    return x * next(_DRAWN)


def _decides_on_a_number(x: Any) -> Any:
    return x * 2.0 if x > 0 else -x


@pytest.mark.parametrize(
    "f", [_draws_from_an_iterator, _decides_on_a_number], ids=["a refused kind of object", "a decision on a number"]
)
def test_what_to_do_under_vmap_never_speaks_of_a_compiled_function(f: Callable[[Any], Any]) -> None:
    # the advice is shared with compile: "outside the compiled function" misled a vmap user
    with pytest.raises(DataDependentError) as refused:
        vmap(f)(np.array([1.0, 2.0]))
    message = str(refused.value)
    assert "vjpgrad" in message, message
    assert "compiled function" not in message, message


def test_an_unbatched_array_argument_is_told_to_take_an_in_dims_not_to_be_positional() -> None:
    xs = np.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"give argument 1 an in_dims of 0 to batch it") as refused:
        vmap(lambda x, y: x * y, in_dims=(0, None))(xs, xs)
    assert "positionally" not in str(refused.value)  # it was given by position


def test_a_given_value_also_reached_through_another_ones_graph_is_held_to_be_that_one() -> None:
    """``u.parents[0]`` was ``b`` at the recording, which is also an argument: one input. A later call
    whose ``u`` was made from another Value is not read with the new ``b``'s number (an outside review
    found [10, 15] where eager code gives [8, 11]): it records anew, and that Value, found nowhere
    but in ``u``'s graph, is refused, as compile refuses it."""

    def f(x: Value, u: Value, b: Value) -> Value:
        return x * u.parents[0] + b

    mapped = vmap(f, in_dims=(0, None, None))
    xs = np.array([1.0, 2.0])
    b = Value(10.0)
    assert mapped(xs, b * 2, b).tolist() == [20.0, 30.0]
    with pytest.raises(DataDependentError, match=r"vjpgrad\.vmap cannot find where"):
        mapped(xs, Value(3.0) * 2, Value(5.0))
    b3 = Value(4.0)
    assert mapped(xs, b3 * 2, b3).tolist() == [f(Value(x), b3 * 2, b3).data for x in xs.tolist()] == [8.0, 12.0]


def test_a_value_reached_through_an_arguments_graph_is_refused_as_compile_refuses_it() -> None:
    # u.parents[0] is read from the recorded Value at every call: another u's parent was not read
    mapped = vmap(lambda x, u: x * u.parents[0], in_dims=(0, None))
    with pytest.raises(DataDependentError, match=r"vjpgrad.vmap cannot find where .*<lambda> gets a Value it reads"):
        mapped(np.array([1.0, 2.0]), Value(10.0) * 2)


W_PARENT = Value(10.0)


def test_a_value_of_the_world_read_through_a_given_values_graph_is_never_read_stale() -> None:
    # W is a global and, at the first call, u.parents[0]: another u made from another Value gave
    # W's number for its parent ([20, 30] where eager gives [13, 16]; the review of the fix)
    mapped = vmap(lambda x, u: x * u.parents[0] + W_PARENT, in_dims=(0, None))
    xs = np.array([1.0, 2.0])
    assert mapped(xs, W_PARENT * 2).tolist() == [20.0, 30.0]
    with pytest.raises(DataDependentError, match="cannot find where"):
        mapped(xs, Value(3.0) * 2)


def test_a_new_value_at_every_call_records_once_where_the_code_names_a_values_graph_too() -> None:
    # naming .op anywhere the code reaches held every Value given to its object (12 calls, 12 recordings)
    def scaled(x: Value, lr: Value) -> Value:
        if isinstance(x, list):  # never true here: the name alone is what the world reads
            return x.op  # type: ignore[no-any-return]
        return x * lr

    mapped = vmap(scaled, in_dims=(0, None))
    for k in range(12):
        assert mapped(np.array([1.0, 2.0]), Value(k + 0.5, requires_grad=False)).tolist() == [k + 0.5, 2 * k + 1.0]
    assert mapped._recordings == 1


def _matrix(x: Any) -> Any:
    return [Vector([x[0] * x[1], x[0]]), Vector([x[1], x[0] + x[1]])]


@pytest.mark.parametrize("empty", [lambda x: [], lambda x: Vector([]), lambda x: ()], ids=["list", "Vector", "tuple"])
def test_the_jacobians_of_a_function_of_no_outputs_have_no_rows(empty: Callable[[Any], Any]) -> None:
    """Eager jacobian of a function returning nothing is ``[]``; vmap of it raised NumPy's "need at
    least one array to stack". It gives each sample's no rows, as torch.func's (batch, 0, ...)."""
    assert jacobian(empty)([1.0, 2.0]) == []
    assert vmap(jacobian(empty))([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).shape == (3, 0, 2)
    assert vmap(jacobian(empty))([1.0, 2.0, 3.0]).shape == (3, 0)


def test_a_matrix_result_is_refused_saying_how_to_stack_it() -> None:
    """A function that returns a matrix (a list of Vectors; a tuple of them, which jacobian reads
    as rows) is not stacked by vmap. ``vmap(f)`` said only "got Vector"; ``vmap(jacobian(f))`` of
    the tuple raised NumPy's "need at least one array to stack". Each now says what to return."""
    batch = [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(
        TypeError, match=r"vmap\(_matrix\): the function returns a list of Vectors \(a matrix\).*tuple\(rows\)"
    ):
        vmap(_matrix)(batch)
    for shaped in (_matrix, lambda x: tuple(_matrix(x))):
        with pytest.raises(TypeError, match=r"holding Vectors or lists \(rows of a matrix\).*one Vector"):
            vmap(jacobian(shaped))(batch)
    rows = vmap(lambda x: tuple(_matrix(x)))(batch)  # what the first advice says: each row stacked
    assert rows[1].tolist() == [[2.0, 3.0], [4.0, 7.0]]  # the second row of each sample
    flat = vmap(jacobian(lambda x: Vector([v for row in _matrix(x) for v in row])))(batch)  # the second's
    with pytest.raises(TypeError, match=r"holding Vectors or lists"):  # eager jacobian refuses it too
        vmap(jacobian(lambda x: (x[0] * x[1], Vector([x[0]]))))(batch)
    assert flat.reshape(2, 2, 2, 2)[1].tolist() == [[list(v) for v in row] for row in jacobian(_matrix)([3.0, 4.0])]


def test_a_cache_emptied_before_each_call_is_what_vmaps_warning_names() -> None:
    """A ``functools.cached_property`` filled by each recording and emptied before the next call:
    none is kept, and the warning says so (it blamed an unbatched number that changes)."""
    import functools

    class Scaled:
        @functools.cached_property
        def scale(self) -> float:
            return 2.0

        def __call__(self, x: Value) -> Value:
            return x * self.scale

    model = Scaled()
    mapped = vjpgrad.vmap(lambda x: model(x))

    def calls() -> list[list[float]]:
        found = []
        for k in range(10):
            vars(model).pop("scale", None)
            found.append(list(mapped(np.array([1.0, float(k)]))))
        return found

    with pytest.warns(vjpgrad.RecompileWarning, match=r"each recording filled a functools\.cached_property"):
        found = calls()
    assert found == [[2.0, 2.0 * k] for k in range(10)]
