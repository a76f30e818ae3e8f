"""Vector: construction, a sequence of Values, elementwise arithmetic, and the seeded backward."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector


def test_from_numbers_it_makes_leaf_values() -> None:
    v = Vector([1, 2.5, True])
    assert v.data == [1.0, 2.5, 1.0]
    assert all(isinstance(x, Value) and x.is_leaf and x.requires_grad for x in v)
    assert not any(x.requires_grad for x in Vector([1.0], requires_grad=False))


def test_from_values_it_wraps_them_as_they_are() -> None:
    a, b = Value(1.0), Value(2.0)
    v = Vector([a, b])
    assert v[0] is a
    assert v[1] is b


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ("abc", "iterable of numbers or Values, got str"),
        (3.0, "iterable of numbers or Values, got float"),
        ([1.0, "2"], "element 1 must be a number or a Value, got str"),
        ([None], "element 0 must be a number or a Value, got NoneType"),
    ],
)
def test_bad_items_are_a_type_error_naming_them(items: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        Vector(items)  # type: ignore[arg-type]


def test_zeros_ones_empty() -> None:
    assert Vector.zeros(3).data == [0.0, 0.0, 0.0]
    assert Vector.ones(2).data == [1.0, 1.0]
    assert Vector.empty(2).data == [0.0, 0.0]
    assert "uninitialised" in (Vector.empty.__doc__ or "")
    with pytest.raises(ValueError, match="length must be >= 0, got -1"):
        Vector.zeros(-1)
    with pytest.raises(TypeError, match="length must be an int, got float"):
        Vector.ones(2.0)  # type: ignore[arg-type]


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


def test_grad_is_a_new_vector_that_requires_no_grad() -> None:
    v = Vector([1.0, 2.0])
    (v * v).backward([1.0, 1.0])
    g = v.grad
    assert g.data == [2.0, 4.0]
    assert not g.requires_grad
    assert g[0] is not v[0]


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


def test_foreign_operands_return_not_implemented() -> None:
    assert Vector([1.0]).__add__("s") is NotImplemented  # type: ignore[operator]
    with pytest.raises(TypeError):
        Vector([1.0]) * "s"  # type: ignore[operator]


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


def test_no_seed_on_a_longer_vector_is_pytorchs_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (Vector([1.0, 2.0]) * 2).backward()


def test_no_seed_on_a_length_1_vector_seeds_it_with_one() -> None:
    x = Vector([3.0])
    (x * x).backward()
    assert x.grad.data == [6.0]


def test_a_longer_seed_on_a_length_1_output_is_summed() -> None:
    x = Vector([1.0])
    (x * 3).backward([0.1, 1.0, 0.0001])
    assert x.grad.data == [3 * (0.1 + 1.0 + 0.0001)]


def test_a_seed_vector_works_like_a_list() -> None:
    x = Vector([1.0, 2.0])
    (x * x).backward(Vector([0.5, 2.0]))
    assert x.grad.data == [1.0, 8.0]


@pytest.mark.parametrize(
    ("seed", "error", "message"),
    [
        ([1.0, 2.0], ValueError, "gradients has length 2 but the output has length 3"),
        ([1.0], ValueError, "gradients has length 1 but the output has length 3"),
        ("abc", TypeError, "gradients must be a sequence of numbers.*got str"),
        (1.0, TypeError, "gradients must be a sequence of numbers.*got float"),
        ([1.0, "x", 2.0], TypeError, r"gradients\[1\] must be a real number, got str"),
    ],
)
def test_bad_seeds_are_refused_before_anything_changes(seed: object, error: type[Exception], message: str) -> None:
    x = Vector([1.0, 2.0, 3.0])
    y = x * 2
    with pytest.raises(error, match=message):
        y.backward(seed)  # type: ignore[arg-type]
    assert x.grad.data == [0.0, 0.0, 0.0]
    y.backward([1.0, 1.0, 1.0])  # the graph was not freed by the failed call
    assert x.grad.data == [2.0, 2.0, 2.0]


def test_functions_apply_elementwise() -> None:
    x = Vector([0.5, 1.5])
    for name in ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu"]:
        assert getattr(x, name)().data == [getattr(Value(0.5), name)().data, getattr(Value(1.5), name)().data]
    assert vjpgrad.log(x).data == x.log().data
    assert x.reciprocal().data == [2.0, 1 / 1.5]


def test_zero_grad_and_detach() -> None:
    x = Vector([1.0, 2.0])
    (x * x).backward([1.0, 1.0])
    x.zero_grad()
    assert x.grad.data == [0.0, 0.0]
    d = x.detach()
    assert d.data == x.data
    assert not d.requires_grad


def test_repr_is_exact_and_str_reads_like_pytorch() -> None:
    v = Vector([0.1, 1 / 3])
    assert repr(v) == "Vector([0.1, 0.3333333333333333])"
    assert str(v) == "tensor([0.1000, 0.3333])"


@pytest.mark.parametrize("seed", [[], Vector([]), ()])
def test_an_empty_seed_on_a_length_1_output_is_refused_before_anything_changes(seed: object) -> None:
    # a longer seed is summed into a length-1 output (it was broadcast); an empty one is not a
    # seed of length 0 summed to 0.0 but a mistake
    x = Vector([1.0])
    y = x * 3
    with pytest.raises(ValueError, match="gradients has length 0 but the output has length 1"):
        y.backward(seed)  # type: ignore[arg-type]
    assert x.grad.data == [0.0]
    with pytest.raises(ValueError, match="seeds has length 0 but the output has length 1"):
        vjpgrad.gradients(y, list(x), seed)
    y.backward([2.0])  # nothing was freed by the refused calls
    assert x.grad.data == [6.0]
