"""The engine's small rules, each worked out by hand, torch-free: seeds, Vector's
constructors and reductions, max and its ties, signed zeros of gradients, what a pass
reaches, the messages that name what was wrong, and the passes that watch every edge
(explain, detect_anomaly) through every kind of node."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

import vjpgrad
from vjpgrad import Value, Vector, explain, gradients
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported

nan, inf = math.nan, math.inf


def is_minus_zero(x: float) -> bool:
    return x == 0.0 and math.copysign(1.0, x) < 0


def message(error: pytest.ExceptionInfo[BaseException]) -> str:
    return str(error.value)


# ---- seeds -----------------------------------------------------------------------------------------


def test_a_value_seed_gives_float_gradients_in_a_plain_pass() -> None:
    x = Value(3.0)
    w = Value(2.0)  # requires grad, but a plain pass takes its number
    (x * x).backward(w)  # type: ignore[arg-type]  # a Value seed is a number too
    assert type(x.grad) is float
    assert x.grad == 12.0
    y = Value(1.0)
    Vector([y * 5.0, y]).backward([w, Value(1.0)])  # type: ignore[list-item]
    assert type(y.grad) is float
    assert y.grad == 11.0
    assert w.grad == 0.0


def test_a_value_seed_of_a_single_output_stays_on_the_graph_with_create_graph() -> None:
    x, w = Value(3.0), Value(2.0)
    (g,) = gradients(x * x, [x], seeds=w, create_graph=True)
    assert g.data == 12.0  # w * 2x
    (dg_dw,) = gradients(g, [w])
    assert dg_dw.data == 6.0  # 2x
    constant = Value(2.0, requires_grad=False)
    (h,) = gradients(x * x, [x], seeds=constant, create_graph=True)
    assert h.data == 12.0


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda y: y.backward("1"), TypeError, "the gradient seed must be a real number for a single output, got str"),
        (lambda y: explain(y, [1.0]), TypeError, "seed must be a real number for a single output, got list"),
        (lambda y: gradients(y, [y.parents[0]], seeds="s"), TypeError, "seeds must be a real number for a single"),
    ],
)
def test_a_bad_single_seed_is_named(call: Any, error: type[Exception], text: str) -> None:
    x = Value(2.0)
    with pytest.raises(error) as caught:
        call(x * x)
    assert message(caught).startswith(text)


def test_the_seed_of_a_vector_names_its_argument_and_the_fix() -> None:
    x = Value(1.0)
    y = Vector([x * 1.0, x * 2.0, x * 3.0])
    with pytest.raises(RuntimeError) as caught:
        y.backward()
    assert message(caught) == (
        "grad can be implicitly created only for scalar outputs: the output has 3 elements, "
        "so pass one seed per element, e.g. [1.0] * 3"
    )
    with pytest.raises(RuntimeError) as caught:
        explain(y)
    assert message(caught).endswith("so pass one seed per element, e.g. [1.0] * 3")
    with pytest.raises(TypeError) as bad_element:
        y.backward([1.0, "2", 3.0])  # type: ignore[list-item]
    assert message(bad_element) == "gradients[1] must be a real number, got str"
    with pytest.raises(TypeError) as not_a_sequence:
        y.backward(1.0)  # type: ignore[arg-type]
    assert message(not_a_sequence).startswith("gradients must be a sequence of numbers")
    with pytest.raises(
        ValueError, match=r"^gradients has length 2 but the output has length 3: pass one seed per element$"
    ):
        y.backward([1.0, 2.0])
    assert x.grad == 0.0


def test_an_empty_seed_of_a_length_1_output_is_a_length_mismatch() -> None:
    x = Value(1.0)
    with pytest.raises(
        ValueError, match=r"^gradients has length 0 but the output has length 1: pass one seed per element$"
    ):
        Vector([x * 2.0]).backward([])


@pytest.mark.parametrize(("seed", "total"), [([1.0, 2.0], 3.0), ([0.5, 0.25, 0.125], 0.875), ([4.0], 4.0)])
def test_a_longer_seed_of_a_length_1_output_is_summed(seed: list[float], total: float) -> None:
    x = Value(1.0)
    Vector([x * 2.0]).backward(seed)
    assert x.grad == 2.0 * total


def test_numpy_seeds() -> None:
    np = pytest.importorskip("numpy")
    x = Value(2.0)
    (x * x).backward(np.float64(0.5))
    assert x.grad == 2.0
    (x * x).backward(np.array(0.25))  # a 0-d array is a number
    assert x.grad == 3.0
    Vector([x * 1.0, x * 3.0]).backward(np.array([1.0, 2.0]))
    assert x.grad == 10.0
    with pytest.raises(TypeError) as caught:
        (x * x).backward(np.array([1.0]))  # a 1-d array is not a single seed
    assert message(caught) == "the gradient seed must be a real number for a single output, got ndarray"


def test_a_numpy_object_that_is_not_a_number_is_refused() -> None:
    np = pytest.importorskip("numpy")
    x = Value(2.0)
    with pytest.raises(TypeError) as caught:
        (x * x).backward(np.sin)
    assert message(caught) == "the gradient seed must be a real number for a single output, got ufunc"


def test_a_fake_zero_dimensional_array_outside_numpy_is_refused() -> None:
    class Scalarish:
        shape = ()

        def __float__(self) -> float:
            return 1.0

    x = Value(2.0)
    with pytest.raises(TypeError) as caught:
        (x * x).backward(Scalarish())  # type: ignore[arg-type]
    assert message(caught) == "the gradient seed must be a real number for a single output, got Scalarish"


# ---- Vector's constructors, reductions, backward ------------------------------------------------


@pytest.mark.parametrize(("make", "fill"), [(Vector.zeros, 0.0), (Vector.ones, 1.0), (Vector.empty, 0.0)])
def test_constructors_fill_and_require_grad_by_default(make: Any, fill: float) -> None:
    v = make(3)
    assert v.data == [fill] * 3
    assert all(x.requires_grad and x.is_leaf for x in v)
    frozen = make(2, requires_grad=False)
    assert frozen.data == [fill] * 2
    assert not any(x.requires_grad for x in frozen)
    assert make(0).data == []


def test_full_checks_its_length() -> None:
    assert Vector.full(2, 7.5).data == [7.5, 7.5]
    assert Vector.full(2, 7.5)[0].requires_grad
    assert not Vector.full(1, 7.5, requires_grad=False)[0].requires_grad
    assert len(Vector.full(0, 1.0)) == 0
    with pytest.raises(ValueError, match=r"^Vector length must be >= 0, got -1$"):
        Vector.full(-1, 1.0)
    with pytest.raises(TypeError) as caught:
        Vector.zeros(True)
    assert message(caught) == "Vector length must be an int, got bool"


def test_vector_requires_grad_must_be_a_bool() -> None:
    with pytest.raises(TypeError) as caught:
        Vector([1.0], requires_grad=1)  # type: ignore[arg-type]
    assert message(caught) == "Vector() requires_grad must be a bool, got int"


def test_sum_and_mean_of_short_vectors() -> None:
    x = Value(2.0)
    assert Vector([x]).sum() is x  # one element: the sum is that element, no new node
    empty = Vector([]).sum()
    assert empty.data == 0.0
    assert not empty.requires_grad
    mean = Vector([]).mean()
    assert math.isnan(mean.data)
    assert not mean.requires_grad
    s = Vector([1.0, 2.0, 4.0]).sum()
    assert s.data == 7.0
    assert s.op == "+"


def test_dot_with_a_list_makes_constants() -> None:
    v = Vector([1.0, 2.0])
    d = v.dot([3.0, 4.0])
    assert d.data == 11.0
    d.backward()
    assert v.grad.data == [3.0, 4.0]
    frozen = Vector([1.0, 2.0], requires_grad=False).dot([3.0, 4.0])
    assert not frozen.requires_grad


def test_backward_takes_pytorchs_spelling_gradient_too() -> None:
    x = Value(1.0)
    y = Vector([x * 2.0, x * 3.0])
    y.backward(gradient=[1.0, 10.0], retain_graph=True)
    assert x.grad == 32.0
    with pytest.raises(TypeError) as caught:
        y.backward([1.0, 1.0], gradient=[1.0, 1.0])
    assert message(caught) == "backward() got both gradients= and gradient=: they are the same seed, pass one"
    y.backward([1.0, 1.0])  # frees the graph: retain_graph is False by default
    assert x.grad == 37.0
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward([1.0, 1.0])


def test_float_of_a_vector() -> None:
    assert float(Vector([2.5])) == 2.5
    for items in ([], [1.0, 2.0]):
        with pytest.raises(TypeError) as caught:
            float(Vector(items))
        assert message(caught) == (
            f"only one-element Vectors can be converted to Python scalars: this one has {len(items)}"
        )


def test_a_length_mismatch_is_named_in_full() -> None:
    text = "Vector lengths 2 and 3 do not match (only equal lengths, or a length-1 Vector, can be combined elementwise)"
    with pytest.raises(ValueError, match=f"^{re.escape(text)}$"):
        Vector([1.0, 2.0]) + Vector([1.0, 2.0, 3.0])


@pytest.mark.parametrize("other", ["a", None, [1.0]])
def test_a_foreign_operand_on_the_left_is_pythons_type_error_naming_vector(other: object) -> None:
    with pytest.raises(TypeError) as caught:
        other - Vector([1.0, 2.0])
    assert "'Vector'" in message(caught)
    with pytest.raises(TypeError) as caught:
        Vector([1.0, 2.0]) * other
    assert "'Vector'" in message(caught)


def test_a_number_on_the_left_of_a_vector() -> None:
    v = Vector([1.0, 2.0])
    assert (10 - v).data == [9.0, 8.0]
    assert (2**v).data == [2.0, 4.0]
    x = Value(3.0)
    (x - v).backward([1.0, 1.0])  # type: ignore[arg-type]  # Value - Vector is a Vector
    assert x.grad == 2.0
    assert v.grad.data == [-1.0, -1.0]


# ---- max ---------------------------------------------------------------------------------------------


def test_max_by_hand() -> None:
    a, b, c = Value(1.0), Value(3.0), Value(2.0)
    m = F.max([a, b, c])
    assert m.data == 3.0
    m.backward(5.0)
    assert (a.grad, b.grad, c.grad) == (0.0, 5.0, 0.0)


def test_max_splits_the_gradient_evenly_among_ties() -> None:
    a, b, c = Value(3.0), Value(1.0), Value(3.0)
    F.max([a, b, c]).backward(1.0)
    assert (a.grad, b.grad, c.grad) == (0.5, 0.0, 0.5)
    xs = [Value(2.0) for _ in range(3)]
    F.max(xs).backward(3.0)
    assert [x.grad for x in xs] == [1.0, 1.0, 1.0]


def test_max_with_nan_is_nan_and_the_gradient_goes_to_the_nans() -> None:
    a, b, c = Value(1.0), Value(nan), Value(nan)
    m = F.max([a, b, c])
    assert math.isnan(m.data)
    m.backward(4.0)
    assert (a.grad, b.grad, c.grad) == (0.0, 2.0, 2.0)
    first = F.max([Value(nan), Value(5.0)])
    assert math.isnan(first.data)


def test_max_of_one_element_and_of_constants() -> None:
    x = Value(-2.0)
    F.max([x]).backward()
    assert x.grad == 1.0
    y = Value(1.0)
    m = F.max([y, 4.0, Value(2.0, requires_grad=False)])
    assert m.data == 4.0
    m.backward()  # the constant wins: nothing reaches y
    assert y.grad == 0.0
    e = explain(F.max([y, 0.5, Value(0.0, requires_grad=False)]))
    assert y in e.gradients
    assert len(e.gradients) == 2  # y and the output: the pass reaches no constant


def test_max_through_the_differentiable_pass_and_explain() -> None:
    a, b = Value(2.0), Value(2.0)
    c = Value(1.0)
    m = F.max([a * 1.0, b, c])
    ga, gb, gc = gradients(m, [a, b, c], create_graph=True)
    assert (ga.data, gb.data, gc.data) == (0.5, 0.5, 0.0)
    e = explain(m, names={"a": a, "b": b, "c": c})
    assert [(s.operand, s.local, s.contribution) for s in e.steps if s.op == "max"] == [
        ("t1", 0.5, 0.5),
        ("b", 0.5, 0.5),
        ("c", 0.0, 0.0),
    ]
    assert e.gradients[a] == 0.5


def test_max_under_anomaly_mode_and_compiled() -> None:
    def f(x: Value, y: Value) -> Value:
        return F.max([x * x, y, 1.0])

    for point, expected in [((3.0, 2.0), (6.0, 0.0)), ((0.5, 2.0), (0.0, 1.0)), ((1.0, 1.0), (2 / 3, 1 / 3))]:
        for run in (f, vjpgrad.compile(f)):
            x, y = Value(point[0]), Value(point[1])
            with vjpgrad.detect_anomaly():
                run(x, y).backward()
            assert (x.grad, y.grad) == expected


# ---- signed zeros, and what a pass reaches ---------------------------------------------------------


def test_a_lone_negative_zero_contribution_keeps_its_sign() -> None:
    # the pass starts each sum at -0.0, the identity of +: a lone -0.0 stays -0.0, as in PyTorch
    x = Value(1.0)
    (g,) = gradients(x * -0.0, [x])
    assert is_minus_zero(g.data)
    y = Value(1.0)
    assert is_minus_zero(explain(y * -0.0).gradients[y])
    z = Value(1.0)
    (h,) = gradients(z * 0.0, [z])
    assert h.data == 0.0
    assert not is_minus_zero(h.data)


def test_backward_from_an_output_that_takes_no_gradient_names_it() -> None:
    x = Value(1.0)
    constant = Value(2.0, requires_grad=False) * 3.0
    with pytest.raises(RuntimeError) as caught:
        Vector([x * 2.0, constant]).backward([1.0, 1.0])
    assert message(caught) == (
        "element 1 of the outputs does not require grad and has no graph: "
        "it was made from constants, detached values or under no_grad()"
    )
    assert x.grad == 0.0


def test_results_of_constants_are_constant_leaves() -> None:
    k = Value(2.0, requires_grad=False)
    for y in (k * 3.0, k.exp(), -k, k + k):
        assert y.requires_grad is False
        assert y.is_leaf
        assert y.label is None
        assert y.parents == ()
    with vjpgrad.no_grad():
        z = Value(1.0) * 2.0
    assert z.requires_grad is False
    made = Value(1.0) * 2.0
    assert made.label is None
    assert made.requires_grad is True


def test_a_compiled_function_sees_the_requires_grad_that_eager_gives() -> None:
    seen: list[bool] = []

    def f(x: Value) -> Value:
        y = x * x * 3.0
        seen.append(y.requires_grad)
        with vjpgrad.no_grad():
            z = x * 2.0
        seen.append(z.requires_grad)
        k = Value(3.0, requires_grad=False) * 2.0
        seen.append(k.requires_grad)
        return y + z + k

    f(Value(1.0))
    eager = list(seen)
    seen.clear()
    vjpgrad.compile(f)(Value(1.0))
    assert seen == eager == [True, False, False]


def test_a_gradient_taken_inside_a_compiled_function() -> None:
    def f(x: Value, y: Value) -> Value:
        t = x * y * 3.0
        gx, gy = gradients(t, [x, y], create_graph=True)  # 3y, 3x
        return gx * x + gy

    compiled = vjpgrad.compile(f)
    for a, b in [(2.0, 5.0), (-1.0, 0.5)]:
        assert compiled(Value(a), Value(b)).data == f(Value(a), Value(b)).data == 3 * b * a + 3 * a


def test_a_constant_made_before_a_compiled_function_is_read_at_each_call() -> None:
    with vjpgrad.no_grad():
        scale = Value(2.0) * 1.5  # a constant made outside, before the recording
    w = Value(0.5)  # a parameter

    def f(x: Value) -> Value:
        return x * scale + w

    compiled = vjpgrad.compile(f)
    x = Value(4.0)
    out = compiled(x)
    assert out.data == 12.5
    out.backward()
    assert (x.grad, w.grad) == (3.0, 1.0)
    scale.data = 10.0
    w.data = -1.0
    assert compiled(Value(4.0)).data == 39.0


# ---- passes that watch every edge ------------------------------------------------------------------


def test_explain_shows_a_masked_edge_as_a_zero_local_derivative() -> None:
    x = Value(-1.0)
    e = explain(x.relu() * 3.0, names={"x": x})
    relu_step = next(s for s in e.steps if s.op == "relu")
    assert (relu_step.local, relu_step.contribution) == (0.0, 0.0)
    y = Value(2.0)
    e = explain(y**0, names={"y": y})
    assert [(s.local, s.contribution) for s in e.steps] == [(0.0, 0.0)]


def test_anomaly_mode_goes_through_a_compiled_call_and_explain_says_to_call_it_uncompiled() -> None:
    def inner(x: Value) -> Value:
        return x * x + x.sin()

    compiled = vjpgrad.compile(inner)
    compiled(Value(0.1))
    x = Value(0.5)
    y = compiled(x) * 2.0 + x
    with pytest.raises(RuntimeError, match="call the function uncompiled"):
        explain(y)
    with vjpgrad.detect_anomaly():
        y.backward(retain_graph=True)
    expected = 2.0 * (2 * 0.5 + math.cos(0.5)) + 1.0
    assert math.isclose(x.grad, expected, rel_tol=1e-15)
    x.grad = 0.0
    y.backward()
    assert math.isclose(x.grad, expected, rel_tol=1e-15)


def test_anomaly_mode_goes_on_past_a_compiled_call() -> None:
    compiled = vjpgrad.compile(lambda z: z * z)
    compiled(Value(1.0))
    x = Value(1.5)
    y = compiled(x * 3.0)  # the pass runs the compiled call, then the multiplication before it
    with vjpgrad.detect_anomaly():
        y.backward()
    assert x.grad == 27.0


def test_create_graph_through_a_compiled_call_is_refused_naming_the_fix() -> None:
    compiled = vjpgrad.compile(lambda z: z * z)
    x = Value(2.0)
    compiled(x)  # the first call records (and is eager code); the next one replays
    with pytest.raises(RuntimeError) as caught:
        gradients(compiled(x), [x], create_graph=True)
    assert message(caught) == (
        "create_graph=True, higher derivatives, forward mode (jvp) and explain do not go through a function "
        "compiled by vjpgrad.compile: call the function uncompiled for them"
    )


def test_a_node_is_freed_by_a_pass_that_does_not_retain_the_graph() -> None:
    from vjpgrad.core import graph as _graph

    x = Value(2.0)
    y = x * x
    z = y + 1.0
    constant = Value(1.0, requires_grad=False) * 2.0
    assert [_graph.is_freed(n) for n in (x, y, z, constant)] == [False, False, False, False]
    z.backward(retain_graph=True)
    assert [_graph.is_freed(n) for n in (x, y, z)] == [False, False, False]
    z.backward()
    assert [_graph.is_freed(n) for n in (x, y, z, constant)] == [False, True, True, False]
    w = Value(3.0)
    half = x * w  # one edge freed is not the node freed
    half.backward(retain_graph=True)
    assert not _graph.is_freed(half)


def test_anomaly_mode_message_in_the_differentiable_pass_names_the_edge() -> None:
    a = Value(0.0)
    with vjpgrad.detect_anomaly():
        y = a.sqrt() * 0.0
        with pytest.raises(FloatingPointError) as caught:
            gradients(y, [a], create_graph=True)
    text = message(caught)
    assert text.startswith("backward of 'sqrt' produced nan for its operand 0 (upstream gradient ")
    assert ", saved " in text
    assert "saved None" not in text
    assert "upstream gradient None" not in text
    assert "the node was made at " in text
    assert "unknown place" not in text


def test_a_node_made_under_another_switch_but_outside_anomaly_mode_has_no_place() -> None:
    a = Value(0.0)
    with vjpgrad.enable_grad():  # a switch is on, anomaly mode is not
        y = a.sqrt() * 0.0
    with vjpgrad.detect_anomaly(), pytest.raises(FloatingPointError) as caught:
        y.backward()
    assert message(caught).endswith("the node was made at an unknown place (made outside detect_anomaly())")


def test_anomaly_mode_message_in_the_float_pass_shows_the_numbers() -> None:
    a = Value(0.0)
    with vjpgrad.detect_anomaly():
        y = a.sqrt() * 0.0
        with pytest.raises(FloatingPointError) as caught:
            y.backward()
    assert message(caught).startswith(
        "backward of 'sqrt' produced nan for its operand 0 (upstream gradient 0.0, saved 0.0); the node was made at "
    )
