"""A Value: construction from a number (and nothing else), its attributes, Python's protocols
(numbers, comparisons, hashing, operators, attributes and weak references), and micrograd's names
(``_prev``, ``_op``) with the drawing code micrograd's notebooks write against them.
"""

from __future__ import annotations

import copy
import fractions
import math
import operator
import pickle
import re
import struct
import weakref
from fractions import Fraction
from typing import Any
from unittest import mock

import pytest
from _helpers import numpy

import vjpgrad
from vjpgrad import Value, Vector

# ---- construction: any real number, and nothing else ---------------------------------------------


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


class _Half(float):
    """A float subclass: not a float to the constructor's quick path, a float all the same."""


@pytest.mark.parametrize("number", [0.5, -0.0, math.inf, -math.inf, math.nan, 5e-324, _Half(0.25)])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_a_float_is_kept_to_the_bit_as_a_plain_float_with_its_flag(number: float, requires_grad: bool) -> None:
    # a float with a bool and no label takes the constructor's quick path (no checks to run);
    # a float subclass the checked one: each keeps the number's bits, as a plain float
    v = Value(number, requires_grad=requires_grad)
    assert type(v.data) is float
    assert struct.pack("<d", v.data) == struct.pack("<d", number)
    assert (v.requires_grad, v.grad, v.op, v.parents) == (requires_grad, 0.0, "", ())


@pytest.mark.parametrize(
    ("data", "type_name"),
    [("3", "str"), (None, "NoneType"), (1j, "complex"), ([1.0], "list"), (Value(1.0), "Value")],
)
def test_anything_else_is_a_type_error_naming_the_type(data: object, type_name: str) -> None:
    with pytest.raises(TypeError, match=rf"Value\(\) takes a real number .*got {type_name}"):
        Value(data)  # type: ignore[arg-type]


def test_a_value_given_for_data_is_refused_with_what_to_write_instead() -> None:
    with pytest.raises(TypeError) as caught:
        Value(Value(1.0))  # type: ignore[arg-type]  # the wrong type is the subject
    assert str(caught.value) == (
        "Value() takes a real number (int, float, bool, Fraction, a NumPy scalar), got Value: "
        "use the Value itself, or .detach() for a constant copy"
    )


@pytest.mark.parametrize(
    ("data", "shown"),
    [(10**400, "an int of 401 digits"), (fractions.Fraction(10**400, 3), repr(fractions.Fraction(10**400, 3)))],
)
def test_the_overflow_error_shows_the_number_and_the_way_to_infinity(data: object, shown: str) -> None:
    with pytest.raises(OverflowError) as caught:
        Value(data)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"Value(): {shown} is too large to be converted to a float without overflow "
        "(the largest float is about 1.8e308; pass float('inf') if you mean infinity)"
    )


def test_requires_grad_and_label_are_checked() -> None:
    with pytest.raises(TypeError, match="requires_grad must be a bool, got str"):
        Value(1.0, requires_grad="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="label must be a str or None, got int"):
        Value(1.0, label=3)  # type: ignore[arg-type]


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


def test_numpy_bools_are_numbers_and_huge_ints_overflow_with_a_message() -> None:
    np: Any = numpy()
    assert Value(np.True_).data == 1.0
    with pytest.raises(OverflowError, match="too large to be converted to a float"):
        Value(10**400)
    with pytest.raises(TypeError, match=r"got numpy.str_"):
        Value(np.str_("1"))


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


def test_an_int_too_large_for_a_float_is_an_overflow_error_naming_its_size() -> None:
    with pytest.raises(OverflowError, match=r"about 5,?001 digits"):
        Value(10**5000)
    with pytest.raises(OverflowError, match=r"310 digits"):
        Value(10**309)


# ---- attributes ----------------------------------------------------------------------------------


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


def test_data_is_assignable_so_an_optimizer_can_step_it() -> None:
    v = Value(1.0)
    v.data -= 0.5
    assert v.data == 0.5


@pytest.mark.parametrize("number", [3, True, Fraction(1, 4), -7])
def test_data_and_grad_take_any_real_number_and_hold_it_as_a_float(number: Any) -> None:
    v = Value(1.0)
    v.data = number
    v.grad = number
    assert (v.data, type(v.data), v.grad, type(v.grad)) == (float(number), float, float(number), float)


def test_data_and_grad_of_the_wrong_type_are_refused_saying_what_each_takes() -> None:
    v = Value(1.0)
    with pytest.raises(TypeError) as data:
        v.data = "0"  # type: ignore[assignment]  # the wrong type is the subject
    with pytest.raises(TypeError) as grad:
        v.grad = Value(2.0)  # type: ignore[assignment]  # a Value is no number here
    assert str(data.value) == ".data of a Value must be a real number, got str"
    assert str(grad.value) == ".grad of a Value must be a real number or None, got Value"
    assert (v.data, v.grad) == (1.0, 0.0)


def test_a_grad_of_the_wrong_type_is_refused_when_it_is_assigned() -> None:
    x = Value(3.0)
    with pytest.raises(TypeError, match=r"\.grad .* str"):
        x.grad = "0"  # type: ignore[assignment]  # the wrong type is the subject
    assert x.grad == 0.0


def test_zero_grad() -> None:
    a = Value(1.0)
    (a * a).backward()
    assert a.grad == 2.0
    a.zero_grad()
    assert a.grad == 0.0


def test_detach_gives_a_constant_leaf_with_the_same_data() -> None:
    a = Value(3.0)
    d = (a * 2).detach()
    assert (d.data, d.requires_grad, d.op, d.parents) == (6.0, False, "", ())
    assert Value(1.5, label="w").detach().label == "w"  # the copy keeps the label
    y = d * a
    y.backward()
    assert a.grad == 6.0
    assert d.grad == 0.0


def test_values_take_user_attributes() -> None:
    n = Value(1.0)
    n._vis_color = "red"  # Eureka Labs' micrograd training script sets this
    n.m = 0.0  # and its AdamW keeps moments on the parameter
    assert (n._vis_color, n.m) == ("red", 0.0)
    assert (n * 2).data == 2.0


def test_values_can_be_weakly_referenced() -> None:
    x = Value(1.0)
    ref = weakref.ref(x)
    assert ref() is x
    del x
    assert ref() is None  # no cycle keeps a Value alive


# ---- numbers, comparisons and hashing, as a 0-d tensor's -----------------------------------------


def test_float_item_and_repr() -> None:
    v = Value(0.1, label="a")
    assert float(v) == 0.1
    assert v.item() == 0.1
    assert repr(v) == "Value(data=0.1, grad=0.0, label='a')"
    assert repr(Value(2.0, requires_grad=False)) == "Value(data=2.0, grad=0.0, requires_grad=False)"


def test_truthiness_and_comparisons_are_on_the_data() -> None:
    assert not Value(0.0)
    assert Value(-2.0)
    x = Value(1.5)
    assert x > 0
    assert x >= 1.5
    assert x < Value(2.0)
    assert not x <= 1
    assert x == Value(1.5)  # equality is on the data too, as a 0-d tensor's
    assert len({x, Value(1.5)}) == 2  # while hashing stays by identity: Values are dict keys and set members


def test_each_comparison_with_a_number_is_the_datas_at_equality_too() -> None:
    x = Value(1.5)
    assert [x < 1.5, x <= 1.5, x > 1.5, x >= 1.5, x == 1.5, x != 1.5] == [False, True, False, True, True, False]
    assert [x < 2, x <= 1, x > 1, x >= 2] == [True, False, True, False]
    for compare, symbol in [(operator.lt, "<"), (operator.le, "<="), (operator.gt, ">"), (operator.ge, ">=")]:
        with pytest.raises(TypeError) as caught:
            compare(x, "1.5")
        assert str(caught.value) == f"'{symbol}' not supported between instances of 'Value' and 'str'"


def test_format_int_and_str_read_the_data_as_a_0d_tensors_do() -> None:
    v = Value(2.75, label="v")
    assert (f"{v:.3f}", f"{v:>6}", f"{v}", str(v)) == ("2.750", "  2.75", repr(v), repr(v))
    assert (int(v), int(Value(-2.75)), type(int(v))) == (2, -2, int)
    assert (round(v), round(Value(-2.5)), round(v, 1), type(round(v))) == (3, -2, 2.8, int)  # as round() of a float


def test_equality_is_on_the_data_and_hashing_by_identity() -> None:
    a, b = Value(1.0), Value(1.0)
    assert a == b
    assert a != Value(2.0)
    assert len({a, b}) == 2
    assert {a: 1}[a] == 1


def test_equality_compares_data_as_a_0d_tensor_does() -> None:
    y = Value(2.0) * 3
    assert y == 6.0
    assert (y != 6.0) is False
    assert Value(1.5) == Value(1.5)
    assert Value(1.5) != Value(2.5)
    assert Value(math.nan) != Value(math.nan)
    assert 6.0 == y  # noqa: SIM300 - the reflected comparison is the subject


def test_equality_with_a_foreign_type_is_false_not_an_error() -> None:
    assert Value(1.0) != "1.0"
    assert Value(1.0) != [1.0]
    assert (Value(1.0) == None) is False  # noqa: E711 - the comparison itself is the subject


def test_equality_with_a_foreign_type_lets_that_type_answer() -> None:
    # NotImplemented, as float's == returns it: Python then asks the other operand
    assert Value(1.0) == mock.ANY
    assert (Value(1.0) != mock.ANY) is False


def test_values_stay_dict_keys_and_set_members_by_identity() -> None:
    a, b = Value(1.0), Value(1.0)
    assert a == b
    assert len({a, b}) == 2
    grads = {a: "a", b: "b"}
    assert grads[a] == "a"
    assert grads[b] == "b"
    assert hash(a) != hash(b)


# ---- operators: numbers on either side, and Python's own TypeError for anything else -------------


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


def test_numpy_scalars_work_on_either_side_of_an_operator() -> None:
    np: Any = numpy()
    x = Value(3.0)
    assert isinstance(np.float64(2.0) * x, Value)  # not a NumPy object array
    assert (np.float64(2.0) * x).data == 6.0
    v = Vector([1.0, 2.0])
    assert isinstance(np.float64(2.0) * v, Vector)
    assert (np.int64(3) - v).tolist() == [2.0, 1.0]
    assert (v * Fraction(1, 2)).tolist() == [0.5, 1.0]


# ---- micrograd's names: _prev and _op, and the drawing code its notebooks write ------------------
# micrograd's ``trace`` and ``draw_dot`` (and Eureka Labs' copy of them) walk ``v._prev`` (a set of
# parents) and draw ``v._op`` (the operation's symbol), ``v.data``, ``v.grad`` and ``v.label``. The
# functions below are written the way that code is written, so these tests hold vjpgrad to the
# attributes such code reads.


def test_prev_is_the_set_of_parents_and_op_the_symbol_as_in_micrograd() -> None:
    a, b = Value(2.0), Value(3.0)
    c = a * b
    assert c._prev == {a, b}
    assert c._op == "*"
    assert a._prev == set()
    assert a._op == ""
    assert (a * a)._prev == {a}
    assert vjpgrad.exp(a)._op == "exp"
    assert (3 * a)._prev == {a}  # the constant 3 is not a Value


def trace(root: Value) -> tuple[set[Value], set[tuple[Value, Value]]]:
    """Every node and edge behind ``root``, found through ``_prev`` as micrograd's notebooks do."""
    nodes: set[Value] = set()
    edges: set[tuple[Value, Value]] = set()

    def build(v: Value) -> None:
        if v not in nodes:
            nodes.add(v)
            for child in v._prev:
                edges.add((child, v))
                build(child)

    build(root)
    return nodes, edges


def draw_dot(root: Value) -> Any:
    """A graphviz Digraph of ``root``'s graph: a record per Value, an oval per operation."""
    graphviz = pytest.importorskip("graphviz")
    dot = graphviz.Digraph(format="svg", graph_attr={"rankdir": "LR"})
    nodes, edges = trace(root)
    for n in nodes:
        uid = str(id(n))
        dot.node(name=uid, label="{ %s | data %.4f | grad %.4f }" % (n.label, n.data, n.grad), shape="record")  # noqa: UP031 - written as micrograd's notebooks write it
        if n._op:
            dot.node(name=uid + n._op, label=n._op)
            dot.edge(uid + n._op, uid)
    for n1, n2 in edges:
        dot.edge(str(id(n1)), str(id(n2)) + n2._op)
    return dot


def example() -> tuple[Value, Value, Value, Value]:
    """micrograd's README example, a little shorter."""
    a = Value(2.0, label="a")
    b = Value(-3.0, label="b")
    c = a * b
    c.label = "c"
    d = (c + a.tanh()).relu()
    d.label = "d"
    d.backward()
    return a, b, c, d


def test_trace_finds_every_node_and_edge_through_prev() -> None:
    a, b, c, d = example()
    nodes, edges = trace(d)
    assert {n.label for n in nodes if n.label} == {"a", "b", "c", "d"}
    assert len(nodes) == 6  # a, b, c, tanh(a), c + tanh(a) and d, the relu of it
    assert (a, c) in edges
    assert (b, c) in edges


def test_ops_are_symbols_and_leaves_have_none() -> None:
    a, b, c, d = example()
    assert (a._op, c._op, d._op) == ("", "*", "relu")
    assert a._prev == set()
    assert c._prev == {a, b}


def test_micrograds_draw_dot_runs_on_vjpgrad_values() -> None:
    a, _, _, d = example()
    dot = draw_dot(d)
    source = dot.source
    assert f"{{ a | data 2.0000 | grad {a.grad:.4f} }}" in source
    assert source.count("shape=record") == 6
    assert {"*", "+", "tanh", "relu"} <= set(re.findall(r'label=["]?([*+a-z]+)["]?[\]\s]', source))


# ---- micrograd's constructor, Value(data, _children, _op) ----------------------------------------------


MICROGRADS_CONSTRUCTOR = (
    "as its second argument, as in micrograd's Value(data, _children, _op): vjpgrad records the children itself "
    "(there is no _children argument: the operators build the graph), so write"
)


@pytest.mark.parametrize(
    ("children", "op", "instead"),
    [
        (lambda a, b: (a, b), "+", "2 Values ... a + b instead, with a, b the Values"),
        (lambda a, b: [a, b], "*", "2 Values ... a * b instead, with a, b the Values"),
        (lambda a, b: (a, b), "-", "2 Values ... a - b instead, with a, b the Values"),
        (lambda a, b: (a, b), "/", "2 Values ... a / b instead, with a, b the Values"),
        (lambda a, b: (a, b), "**", "2 Values ... a ** b instead, with a, b the Values"),
        (lambda a, b: {a}, "tanh", "a Value ... a.tanh() instead, with a the Value"),
        (lambda a, b: (a,), "**2", "a Value ... a**2 instead, with a the Value"),
        (lambda a, b: (a,), "+", "a Value ... a + b, a * b, a.tanh()... instead, with a the Value"),
        (lambda a, b: (a, b), "", "2 Values ... a + b, a * b, a.tanh()... instead, with a, b the Values"),
        (lambda a, b: (a, b), "tanh", "2 Values ... a + b, a * b, a.tanh()... instead, with a, b the Values"),
    ],
)
def test_micrograds_children_argument_is_explained_with_what_to_write(children: Any, op: str, instead: str) -> None:
    a, b = Value(2.0), Value(3.0)
    with pytest.raises(TypeError) as caught:
        Value(5.0, children(a, b), op)  # micrograd's Value(data, _children, _op)
    got, write = instead.split(" ... ")
    assert str(caught.value) == (
        f"Value() got {got} {MICROGRADS_CONSTRUCTOR} {write} you passed; "
        "Value(data) alone makes a leaf (the second argument is requires_grad, a bool)"
    )


def test_micrograds_empty_children_argument_is_explained_with_what_to_write() -> None:
    with pytest.raises(TypeError) as caught:
        Value(5.0, (), "")  # micrograd's Value(data, _children, _op)
    assert str(caught.value) == (
        f"Value() got an empty collection {MICROGRADS_CONSTRUCTOR} Value(data) instead for a leaf "
        "(the second argument is requires_grad, a bool)"
    )


def test_a_second_argument_that_is_no_collection_of_values_is_still_a_bad_requires_grad() -> None:
    with pytest.raises(TypeError, match="requires_grad must be a bool, got tuple"):
        Value(5.0, (1.0, 2.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="requires_grad must be a bool, got str"):
        Value(5.0, "yes")  # type: ignore[arg-type]


def test_label_is_none_until_one_is_given_as_the_docs_say() -> None:
    # micrograd's lecture Value has label='' and its draw_dot prints n.label; vjpgrad keeps None (documented,
    # typed str | None): docs/coming-from-micrograd.md says to write n.label or '' in that draw_dot
    assert Value(1.0).label is None
    assert "{ %s | data %.4f }" % (Value(1.0).label or "", 1.0) == "{  | data 1.0000 }"  # noqa: UP031 - micrograd's


def test_a_value_copies_and_pickles_with_its_number_outside_a_recording() -> None:
    x = Value(2.5, label="x")
    for copied in (copy.copy(x), copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        assert (copied.data, copied.label, copied.requires_grad) == (2.5, "x", True)


def test_micrograds_per_node_backward_is_refused_pointing_to_explain_and_backward() -> None:
    # micrograd's video calls o._backward() node by node to show the chain rule
    a = Value(2.0)
    o = a * 3.0
    with pytest.raises(AttributeError) as caught:
        o._backward()  # type: ignore[attr-defined]
    assert str(caught.value) == (
        "a vjpgrad Value has no _backward: each operation's derivative rule lives in one table, and "
        "o.backward() runs them all in order; to see each step micrograd's o._backward() takes, one edge at a "
        "time, print(vjpgrad.explain(o))"
    )
    assert not hasattr(a, "_backward")
    assert a.grad == 0.0


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("retain_grad", "every Value the pass reaches gets its .grad, results of operations too"),
        ("grad_fn", ".op names the operation that made it"),
        ("requires_grad_", "set v.requires_grad = True"),
    ],
)
def test_pytorchs_names_a_value_has_not_say_what_it_has(name: str, hint: str) -> None:
    # a learner's PyTorch habits (h.retain_grad(), y.grad_fn, x.requires_grad_()) get a way on, not a bare error
    h = Value(2.0) * 3.0
    with pytest.raises(AttributeError, match=f"a vjpgrad Value has no {name}") as caught:
        getattr(h, name)
    assert hint in str(caught.value)
    assert not hasattr(h, name)
