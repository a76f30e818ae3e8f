"""Value: construction, attributes, Python protocols, and refusing what is not a number."""

from __future__ import annotations

import fractions
import math

import pytest

from vjpgrad import Value

try:  # NumPy is not a dependency; its scalars are checked when it is installed
    import numpy as np

    NUMPY_SCALARS: list[object] = [np.float32(3.0), np.int64(3), np.float64(3)]
    NUMPY_ARRAYS: list[object] = [np.array([1.0])]
except ImportError:  # pragma: no cover - depends on the environment
    NUMPY_SCALARS, NUMPY_ARRAYS = [], []


@pytest.mark.parametrize("data", [3, 3.0, True, fractions.Fraction(3, 1), *NUMPY_SCALARS])
def test_any_real_number_is_stored_as_a_float(data: float) -> None:
    v = Value(data)
    assert type(v.data) is float
    assert v.data == float(data)


@pytest.mark.parametrize(
    ("data", "type_name"),
    [("3", "str"), (None, "NoneType"), (1j, "complex"), ([1.0], "list"), (Value(1.0), "Value")],
)
def test_anything_else_is_a_type_error_naming_the_type(data: object, type_name: str) -> None:
    with pytest.raises(TypeError, match=rf"Value\(\) takes a real number .*got {type_name}"):
        Value(data)  # type: ignore[arg-type]


def test_requires_grad_and_label_are_checked() -> None:
    with pytest.raises(TypeError, match="requires_grad must be a bool, got str"):
        Value(1.0, requires_grad="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="label must be a str or None, got int"):
        Value(1.0, label=3)  # type: ignore[arg-type]


def test_a_new_value_is_a_leaf_with_zero_grad() -> None:
    v = Value(2.5, label="x")
    assert (v.data, v.grad, v.requires_grad, v.label, v.op, v.parents, v.is_leaf) == (2.5, 0.0, True, "x", "", (), True)


def test_an_operation_records_its_name_and_parents() -> None:
    a, b = Value(2.0), Value(3.0)
    c = a * b
    assert (c.op, c.parents, c.is_leaf, c.requires_grad) == ("*", (a, b), False, True)
    assert a.log().op == "log"
    assert (-a).op == "neg"


def test_number_constants_are_operands_not_graph_nodes() -> None:
    a = Value(2.0)
    assert (3 * a).parents == (a,)
    assert (a + 1).parents == (a,)
    assert (2**a).parents == (a,)


def test_data_is_assignable_so_an_optimizer_can_step_it() -> None:
    v = Value(1.0)
    v.data -= 0.5
    assert v.data == 0.5


def test_float_item_and_repr() -> None:
    v = Value(0.1, label="a")
    assert float(v) == 0.1
    assert v.item() == 0.1
    assert repr(v) == "Value(data=0.1, grad=0.0, label='a')"
    assert repr(Value(2.0, requires_grad=False)) == "Value(data=2.0, grad=0.0, requires_grad=False)"


def test_equality_is_on_the_data_and_hashing_by_identity() -> None:
    a, b = Value(1.0), Value(1.0)
    assert a == b
    assert a != Value(2.0)
    assert len({a, b}) == 2
    assert {a: 1}[a] == 1


def test_detach_gives_a_constant_leaf_with_the_same_data() -> None:
    a = Value(3.0)
    d = (a * 2).detach()
    assert (d.data, d.requires_grad, d.op, d.parents) == (6.0, False, "", ())
    y = d * a
    y.backward()
    assert a.grad == 6.0
    assert d.grad == 0.0


OPERATORS = ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__"]
OPERATORS += ["__truediv__", "__rtruediv__", "__pow__", "__rpow__"]


@pytest.mark.parametrize("other", ["s", [1.0], None, 1j, *NUMPY_ARRAYS])
@pytest.mark.parametrize("method", OPERATORS)
def test_foreign_operand_types_return_not_implemented(method: str, other: object) -> None:
    assert getattr(Value(1.0), method)(other) is NotImplemented


@pytest.mark.parametrize("other", ["s", [1.0], None, 1j])
def test_so_python_raises_its_usual_type_error(other: object) -> None:
    a = Value(1.0)
    for operation in (lambda: a + other, lambda: other - a, lambda: a * other, lambda: other / a, lambda: a**other):
        with pytest.raises(TypeError, match=r"unsupported operand|can't multiply"):
            operation()  # type: ignore[operator]


def test_both_operand_orders_agree() -> None:
    a = Value(1.5)
    assert (a + 2).data == (2 + a).data == 3.5
    assert (a * 2).data == (2 * a).data == 3.0
    assert (a - 2).data == -(2 - a).data == -0.5
    assert (2 / a).data == pytest.approx(1 / (a / 2).data)
    assert (a**2).data == 2.25
    assert (2**a).data == math.pow(2, 1.5)


def test_zero_grad() -> None:
    a = Value(1.0)
    (a * a).backward()
    assert a.grad == 2.0
    a.zero_grad()
    assert a.grad == 0.0


def test_numpy_bools_are_numbers_like_python_bools() -> None:
    np = pytest.importorskip("numpy")
    for flag in (np.True_, np.False_):
        v = Value(flag)
        assert type(v.data) is float
        assert v.data == float(bool(flag))


def test_numpy_types_that_are_not_real_numbers_are_named_in_full() -> None:
    np = pytest.importorskip("numpy")
    for data, name in ((np.array([1.0, 2.0]), "numpy.ndarray"), (np.complex128(1.0), "numpy.complex128")):
        with pytest.raises(TypeError, match=rf"got {name}$"):
            Value(data)


@pytest.mark.parametrize("data", [10**400, -(10**400), fractions.Fraction(10**400, 3)])
def test_a_number_beyond_the_largest_float_is_an_overflow_error_that_says_so(data: object) -> None:
    with pytest.raises(OverflowError, match=r"too large to be converted to a float.*1\.8e308.*float\('inf'\)"):
        Value(data)  # type: ignore[arg-type]


def test_an_integer_that_rounds_to_the_largest_float_is_fine() -> None:
    assert Value(2**1024 - 2**970 - 1).data == 1.7976931348623157e308
    with pytest.raises(OverflowError):
        Value(2**1024 - 2**970)  # rounds up to 2**1024: no float


def test_the_overflow_message_does_not_show_a_smaller_number() -> None:
    with pytest.raises(OverflowError) as caught:
        Value(10**400)
    assert "1" + "0" * 39 + " " not in str(caught.value)
    assert "an int of 401 digits" in str(caught.value)
