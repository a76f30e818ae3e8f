"""Vector: construction, a sequence of Values, reductions, elementwise arithmetic with broadcasting
of a length-1 Vector, and its backward as the vector-Jacobian product (the rules of its seed are in
test_seeds.py).
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from _helpers import message
from hypothesis import given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector
from vjpgrad.core import ops
from vjpgrad.core.graph import Node

# ---- construction --------------------------------------------------------------------------------


def test_from_numbers_it_makes_leaf_values() -> None:
    v = Vector([1, 2.5, True])
    assert v.data == [1.0, 2.5, 1.0]
    assert all(isinstance(x, Value) and x.is_leaf and x.requires_grad for x in v)
    assert not any(x.requires_grad for x in Vector([1.0], requires_grad=False))


@pytest.mark.parametrize("requires_grad", [True, False])
def test_a_vector_of_floats_is_made_of_leaves_exactly_as_value_makes_them(requires_grad: bool) -> None:
    # a row of floats is made in one loop (graph.new_leaves), not by Value(): the same nodes
    numbers = [1.5, -0.0, math.inf, 2.0**-1074]
    before = Value(0.0)
    v = Vector(numbers, requires_grad=requires_grad)
    after = [Value(x, requires_grad=requires_grad) for x in numbers]
    unset = object()
    for made, reference in zip(v, after, strict=True):
        assert type(made) is Value
        for slot in Node.__slots__:
            if slot not in ("__weakref__", "_seq"):
                assert getattr(made, slot, unset) == getattr(reference, slot, unset), slot
    seqs = [x._seq for x in [before, *v, *after]]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)
    assert [math.copysign(1.0, x.data) for x in v] == [1.0, -1.0, 1.0, 1.0]


class Half(float):
    """A float subclass: a number Value() converts to a float."""


def test_only_a_list_or_tuple_of_exact_floats_is_stored_as_it_is() -> None:
    np = pytest.importorskip("numpy")
    for items in ([1.5, np.float64(2.5)], (Half(0.5), 1.0), [True, 2.0], [3, 4.0]):
        v = Vector(items)
        assert all(type(x._data) is float for x in v), items  # converted, as Value() converts
        assert v.data == [float(x) for x in items]


def test_a_generator_of_numbers_and_values_is_read_item_by_item_as_before() -> None:
    made: list[Value] = []

    def items() -> Any:
        yield 1.0
        made.append(Value(2.0))
        yield made[0]
        yield 3.0

    v = Vector(items())
    assert v[1] is made[0]
    assert [x._seq for x in v] == sorted(x._seq for x in v)  # each made as it is read
    with pytest.raises(TypeError, match="element 0"):  # the first bad item, before the iterable ends
        Vector(x for x in ["x", 1.0])


def test_a_vector_of_floats_made_inside_a_compiled_function_is_made_there_as_in_eager_code() -> None:
    def f(x: Value) -> list[Value]:
        w = Vector([2.0, 3.0])  # leaves that take gradient, made at every call
        return [w[0] * x + w[1], w[1]]

    compiled = vjpgrad.compile(f)
    for _ in range(3):  # recorded, then replayed
        results = []
        for run in (f, compiled):
            x = Value(1.5)
            out = run(x)
            out[0].backward()
            results.append(([o.data for o in out], x.grad, out[1].grad, out[1].is_leaf))
        assert results[0] == results[1] == ([6.0, 3.0], 2.0, 1.0, True)


def test_from_values_it_wraps_them_as_they_are() -> None:
    a, b = Value(1.0), Value(2.0)
    v = Vector([a, b])
    assert v[0] is a
    assert v[1] is b


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ("abc", "takes an iterable of numbers or Values, got str"),
        (3.0, "takes an iterable of numbers or Values, got float"),
        ([1.0, "2"], "element 1 must be a number or a Value, got str"),
        ([None], "element 0 must be a number or a Value, got NoneType"),
    ],
)
def test_bad_items_are_a_type_error_naming_them(items: object, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        Vector(items)  # type: ignore[arg-type]
    assert str(caught.value) == f"Vector() {message}"


def test_vector_requires_grad_must_be_a_bool() -> None:
    with pytest.raises(TypeError) as caught:
        Vector([1.0], requires_grad=1)  # type: ignore[arg-type]
    assert message(caught) == "Vector() requires_grad must be a bool, got int"


def test_zeros_ones_empty() -> None:
    assert Vector.zeros(3).data == [0.0, 0.0, 0.0]
    assert Vector.ones(2).data == [1.0, 1.0]
    assert Vector.empty(2).data == [0.0, 0.0]
    assert "uninitialised" in (Vector.empty.__doc__ or "")
    with pytest.raises(ValueError, match="length must be >= 0, got -1"):
        Vector.zeros(-1)
    with pytest.raises(TypeError, match="length must be an int, got float"):
        Vector.ones(2.0)  # type: ignore[arg-type]


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


# ---- a sequence of Values ------------------------------------------------------------------------


def test_sequence_protocol() -> None:
    v = Vector([1.0, 2.0, 3.0, 4.0])
    assert len(v) == 4
    assert [x.data for x in v] == [1.0, 2.0, 3.0, 4.0]
    assert isinstance(v[-1], Value)
    assert v[-1].data == 4.0
    part = v[1:3]
    assert isinstance(part, Vector)
    assert part[0] is v[1]
    assert v.tolist() == v.data
    with pytest.raises(IndexError, match="index 4 is out of range for a Vector of length 4"):
        v[4]
    with pytest.raises(TypeError, match="indices must be integers or slices, got str"):
        v["0"]  # type: ignore[call-overload]


def test_a_vector_takes_a_numpy_integer_index_as_a_list_does() -> None:
    np = pytest.importorskip("numpy")
    v = Vector([1.0, 2.0, 3.0])
    assert v[np.int64(1)] is v[1]
    assert v[np.int32(-1)] is v[2]
    with pytest.raises(TypeError, match="bool"):
        v[np.bool_(True)]  # type: ignore[call-overload]  # the wrong type is the subject


def test_grad_is_a_new_vector_that_requires_no_grad() -> None:
    v = Vector([1.0, 2.0])
    (v * v).backward([1.0, 1.0])
    g = v.grad
    assert g.data == [2.0, 4.0]
    assert not g.requires_grad
    assert g[0] is not v[0]


def test_zero_grad_and_detach() -> None:
    x = Vector([1.0, 2.0])
    (x * x).backward([1.0, 1.0])
    x.zero_grad()
    assert x.grad.data == [0.0, 0.0]
    d = x.detach()
    assert d.data == x.data
    assert not d.requires_grad


def test_float_of_a_vector() -> None:
    assert float(Vector([2.5])) == 2.5
    for items in ([], [1.0, 2.0]):
        with pytest.raises(TypeError) as caught:
            float(Vector(items))
        assert message(caught) == (
            f"only one-element Vectors can be converted to Python scalars: this one has {len(items)}"
        )


def test_repr_is_exact_and_str_reads_like_pytorch() -> None:
    v = Vector([0.1, 1 / 3])
    assert repr(v) == "Vector([0.1, 0.3333333333333333])"
    assert str(v) == "tensor([0.1000, 0.3333])"


# ---- reductions ----------------------------------------------------------------------------------


def test_reductions() -> None:
    v = Vector([1.0, 2.0, 3.0])
    assert v.sum().data == 6.0
    assert v.mean().data == 2.0
    assert v.dot([1.0, 0.0, 2.0]).data == 7.0
    assert v.dot(Vector([2.0, 2.0, 2.0])).data == 12.0
    v.mean().backward()
    assert v.grad.data == pytest.approx([1 / 3] * 3)
    assert Vector([]).sum().data == 0.0
    assert math.isnan(Vector([]).mean().data)


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


def test_dot_of_unequal_lengths_is_refused_as_torch_dot_refuses() -> None:
    with pytest.raises(ValueError, match="same length") as caught:
        Vector([1.0, 2.0, 3.0]).dot(Vector([1.0, 2.0]))
    assert message(caught) == "dot() takes two Vectors of the same length (as torch.dot does), got 3 and 2"
    with pytest.raises(ValueError, match=r"dot.* 2 .* 1"):
        Vector([1.0, 2.0]).dot([1.0])


# ---- elementwise arithmetic ----------------------------------------------------------------------


def test_elementwise_with_vectors_values_and_numbers_in_both_orders() -> None:
    x = Vector([1.0, 2.0])
    s = Value(10.0)
    assert (x + x).data == [2.0, 4.0]
    assert (x * s).data == [10.0, 20.0]
    assert (s * x).data == [10.0, 20.0]
    assert (x - 1).data == [0.0, 1.0]
    assert (1 - x).data == [0.0, -1.0]
    assert (x / 2).data == [0.5, 1.0]
    assert (2 / x).data == [2.0, 1.0]
    assert (x**2).data == [1.0, 4.0]
    assert (2**x).data == [2.0, 4.0]
    assert (-x).data == [-1.0, -2.0]
    assert abs(Vector([-3.0])).data == [3.0]


def test_a_number_on_the_left_of_a_vector() -> None:
    v = Vector([1.0, 2.0])
    assert (10 - v).data == [9.0, 8.0]
    assert (2**v).data == [2.0, 4.0]
    x = Value(3.0)
    (x - v).backward([1.0, 1.0])  # type: ignore[arg-type]  # Value - Vector is a Vector
    assert x.grad == 2.0
    assert v.grad.data == [-1.0, -1.0]


def test_a_length_1_vector_broadcasts_against_any_length() -> None:
    one = Vector([10.0])
    three = Vector([1.0, 2.0, 3.0])
    assert (one * three).data == [10.0, 20.0, 30.0]
    assert (three + one).data == [11.0, 12.0, 13.0]
    (one * three).backward([1.0, 1.0, 1.0])
    assert one.grad.data == [6.0]


def test_any_other_length_mismatch_names_both_lengths() -> None:
    with pytest.raises(ValueError, match="Vector lengths 2 and 3 do not match"):
        Vector([1.0, 2.0]) + Vector([1.0, 2.0, 3.0])


def test_a_length_mismatch_is_named_in_full() -> None:
    text = "Vector lengths 2 and 3 do not match (only equal lengths, or a length-1 Vector, can be combined elementwise)"
    with pytest.raises(ValueError, match=f"^{re.escape(text)}$"):
        Vector([1.0, 2.0]) + Vector([1.0, 2.0, 3.0])


def test_foreign_operands_return_not_implemented() -> None:
    assert Vector([1.0]).__add__("s") is NotImplemented  # type: ignore[operator]
    with pytest.raises(TypeError):
        Vector([1.0]) * "s"  # type: ignore[operator]


@pytest.mark.parametrize("other", ["a", None, [1.0]])
def test_a_foreign_operand_on_the_left_is_pythons_type_error_naming_vector(other: object) -> None:
    with pytest.raises(TypeError) as caught:
        other - Vector([1.0, 2.0])
    assert "'Vector'" in message(caught)
    with pytest.raises(TypeError) as caught:
        Vector([1.0, 2.0]) * other
    assert "'Vector'" in message(caught)


def test_functions_apply_elementwise() -> None:
    x = Vector([0.5, 1.5])
    for op in ops.FUNCTIONS:  # every function of the table, with a Vector for each operand
        others = [Vector([2.0, -3.0])] * (op.arity - 1)
        expected = [
            getattr(Value(0.5), op.name)(*[2.0] * (op.arity - 1)),
            getattr(Value(1.5), op.name)(*[-3.0] * (op.arity - 1)),
        ]
        assert getattr(x, op.name)(*others).data == [e.data for e in expected]
    assert vjpgrad.log(x).data == x.log().data
    assert x.reciprocal().data == [2.0, 1 / 1.5]


# ---- backward: the vector-Jacobian product -------------------------------------------------------


@given(
    st.lists(st.floats(-10, 10), min_size=1, max_size=6).flatmap(
        lambda xs: st.tuples(st.just(xs), st.lists(st.floats(-10, 10), min_size=len(xs), max_size=len(xs)))
    )
)
def test_backward_with_gradients_is_the_vector_jacobian_product(case: tuple[list[float], list[float]]) -> None:
    xs, v = case
    x = Vector(xs)
    y = x * x * 3 + x.sin()  # y[i] depends on x[i] only: J is diagonal, J[i][i] = 6x + cos x
    y.backward(v)
    for i, xi in enumerate(xs):
        assert x[i].grad == pytest.approx(v[i] * (6 * xi + math.cos(xi)), rel=1e-12, abs=1e-12)


def test_one_pass_for_all_elements_even_when_they_share_a_node() -> None:
    a = Value(2.0)
    shared = a.exp()
    y = Vector([shared * 1.0, shared * 2.0])
    y.backward([1.0, 10.0])
    assert shared.grad == 21.0
    assert a.grad == pytest.approx(21.0 * math.exp(2.0))


def test_cross_terms_follow_the_full_jacobian() -> None:
    a, b = Value(2.0), Value(3.0)
    y = Vector([a * b, a + b, a * a])  # J = [[b, a], [1, 1], [2a, 0]]
    y.backward([1.0, 10.0, 100.0])
    assert (a.grad, b.grad) == (3.0 + 10.0 + 400.0, 2.0 + 10.0)


def test_the_same_value_twice_in_an_output_is_seeded_twice() -> None:
    a = Value(1.0)
    h = a * 5
    Vector([h, h]).backward([1.0, 2.0])
    assert a.grad == 15.0


# ---- PyTorch's habits on a Vector's .grad and .data ----------------------------------------------


def test_setting_a_vectors_grad_to_none_clears_each_elements_as_pytorch_users_write_it() -> None:
    v = Vector([1.0, 2.0])
    (v * v).backward([1.0, 1.0])
    v.grad = None  # PyTorch's optimizer.zero_grad(set_to_none=True)
    assert [x.grad for x in v] == [None, None]  # as a Value's .grad = None
    assert v.grad.data == [0.0, 0.0]  # a Vector's gradient is one number per element: None reads 0.0
    (v * v).backward([1.0, 1.0])  # None counts as 0.0
    assert v.grad.data == [2.0, 4.0]


def test_a_vectors_grad_takes_only_none_saying_what_to_write_for_numbers() -> None:
    v = Vector([1.0, 2.0])
    (v * v).backward([1.0, 1.0])
    with pytest.raises(TypeError) as caught:
        v.grad = [0.0, 0.0]  # type: ignore[assignment]
    assert message(caught) == (
        "a Vector's .grad can be set to None (each element's .grad = None, counted as 0.0), got list: "
        "v.zero_grad() sets each element's to 0.0, and v[i].grad = number sets one"
    )
    assert v.grad.data == [2.0, 4.0]


def test_assigning_a_vectors_data_says_what_to_write() -> None:
    v = Vector([1.0, 2.0])
    with pytest.raises(AttributeError) as caught:
        v.data = [5.0, 6.0]  # type: ignore[misc]
    assert message(caught) == (
        "a Vector's .data is a new list each time it is read, so it cannot be assigned: set each element's, "
        "for x, number in zip(v, [5.0, 6.0]): x.data = number (or make a new Vector: Vector([5.0, 6.0]))"
    )
    assert v.data == [1.0, 2.0]
