"""The table of operations generates the faces of each operation at import: the rows
(``_ops._unary``, ``_ops._binary``), the Vector operators and methods
(``_vector._elementwise``, ``_vector._method``) and the import-time check that every
function has a Vector method. These tests run those generators again, at test time, and
hold what they make against what the package made at import (and against hand-computed
values), so a mistake in a generator shows in a test run and in a mutation run, which only
sees code that runs inside a test.
"""

from __future__ import annotations

import operator

import pytest

from vjpgrad import Value, Vector, _ops, _vector
from vjpgrad._ops import BUILTIN, FUNCTIONS, MASKED, TIMES, Op

FIELDS = ("name", "arity", "forward", "saved", "forms", "code", "doc", "symbol", "plain", "maskable", "backward")


def fields(op: Op) -> tuple[object, ...]:
    return tuple(getattr(op, f) for f in FIELDS)


UNARY_ROWS = [op for op in BUILTIN if op.arity == 1]
BINARY_ROWS = [op for op in BUILTIN if op.arity == 2]


@pytest.mark.parametrize("op", UNARY_ROWS, ids=[op.name for op in UNARY_ROWS])
def test_rebuilding_a_unary_row_gives_the_same_row(op: Op) -> None:
    again = _ops._unary(op.name, op.forward, op.saved[0], op.forms[0], doc=op.doc, code=op.code, maskable=op.maskable)
    assert fields(again) == fields(op)
    if op.code == f"_{op.name}({{0}})":  # the default code of a function
        assert fields(_ops._unary(op.name, op.forward, op.saved[0], op.forms[0], doc=op.doc, maskable=op.maskable)) == (
            fields(op)
        )
    if not op.maskable:
        assert fields(_ops._unary(op.name, op.forward, op.saved[0], op.forms[0], doc=op.doc, code=op.code)) == (
            fields(op)
        )


def test_a_unary_row_without_a_form_multiplies() -> None:
    op = _ops._unary("twice", lambda x: 2 * x, lambda x, out: 2.0, doc="2x")
    assert (op.name, op.arity, op.forms, op.code, op.doc, op.symbol, op.maskable, op.plain) == (
        "twice",
        1,
        (TIMES,),
        "_twice({0})",
        "2x",
        "",
        False,
        True,
    )


@pytest.mark.parametrize("op", BINARY_ROWS, ids=[f"{op.name}{op.symbol}{k}" for k, op in enumerate(BINARY_ROWS)])
def test_rebuilding_a_binary_row_gives_the_same_row(op: Op) -> None:
    again = _ops._binary(
        op.name,
        op.symbol,
        op.forward,
        op.code,
        op.saved[0],
        op.saved[1],
        (op.forms[0], op.forms[1]),
        maskable=op.maskable,
    )
    assert fields(again) == fields(op)
    if op.forms == (TIMES, TIMES) and not op.maskable:
        assert fields(_ops._binary(op.name, op.symbol, op.forward, op.code, op.saved[0], op.saved[1])) == fields(op)


def test_which_rows_take_the_inline_multiplication() -> None:
    # plain: every edge g * saved, nothing masked, no backward of its own
    # "pow" here is number ** Value; Value ** Value and Value ** number are masked
    assert {op.name for op in BUILTIN if op.plain} == {
        "add", "sub", "mul", "pow", "neg", "abs", "reciprocal", "exp", "sin", "cos", "tan", "tanh", "identity",
        "detach",
    }  # fmt: skip
    assert [op.plain for op in (_ops.POW, _ops.POW_BASE, _ops.POW_SCALAR)] == [False, True, False]
    assert not any(op.plain for op in (_ops.RELU, _ops.MAX, _ops.DIV, _ops.LOG, _ops.SQRT, _ops.SIGMOID))
    rebuilt = Op("mask", 1, abs, (lambda x, out: MASKED,), (TIMES,), "{0}", maskable=True)
    assert not rebuilt.plain
    own = Op("own", 1, abs, (lambda x, out: 1.0,), (TIMES,), "{0}", backward=lambda node, g: None)
    assert not own.plain


def test_a_masked_value_reads_as_masked() -> None:
    assert repr(MASKED) == "MASKED"


# ---- the Vector faces --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("function", "left", "right"),
    [
        (operator.add, [7.0, 11.0], [7.0, 11.0]),
        (operator.sub, [3.0, 7.0], [-3.0, -7.0]),
        (operator.mul, [10.0, 18.0], [10.0, 18.0]),
        (operator.truediv, [2.5, 4.5], [0.4, 2 / 9]),
        (operator.pow, [25.0, 81.0], [32.0, 512.0]),
    ],
)
def test_a_generated_vector_operator_works_in_both_orders(
    function: object, left: list[float], right: list[float]
) -> None:
    forward, reflected = _vector._elementwise(function)  # type: ignore[arg-type]
    v = Vector([5.0, 9.0])
    assert forward(v, 2).data == left  # v <op> 2
    assert reflected(v, 2).data == right  # 2 <op> v
    w = Vector([2.0, 2.0])
    assert forward(v, w).data == left
    assert forward(v, "a") is NotImplemented
    assert reflected(v, "a") is NotImplemented
    assert forward.__doc__ == "self <op> other, elementwise"
    assert reflected.__doc__ == "other <op> self, elementwise"
    assert all(x.requires_grad for x in forward(v, 2))


def test_a_generated_vector_method_applies_the_operation_to_each_element() -> None:
    method = _vector._method(_ops.NEG)
    v = Vector([1.5, -2.0])
    result = method(v)
    assert isinstance(result, Vector)
    assert result.data == [-1.5, 2.0]
    assert [x.op for x in result] == ["neg", "neg"]
    assert method.__name__ == method.__qualname__ == "neg"
    assert method.__doc__ == "-x, elementwise."
    result.backward([1.0, 3.0])
    assert v.grad.data == [-1.0, -3.0]


@pytest.mark.parametrize("op", FUNCTIONS, ids=[op.name for op in FUNCTIONS])
def test_each_function_is_a_vector_method_generated_from_its_row(op: Op) -> None:
    method = getattr(Vector, op.name)
    assert method.__name__ == op.name
    assert method.__doc__ == f"{op.doc}, elementwise."
    v = Vector([0.25, 2.0])
    assert getattr(v, op.name)().data == [op.forward(0.25), op.forward(2.0)]


def test_every_function_of_the_table_is_a_method_written_from_its_row() -> None:
    from vjpgrad import _ops

    for op in _ops.METHODS:
        for cls in (Value, Vector):
            method = getattr(cls, op.name)
            assert method is not getattr(_ops.Functions, op.name)  # not the declaration's stub
            assert method.__name__ == op.name
            assert op.doc in (method.__doc__ or "")


def test_a_value_operand_of_a_vector_operator_stays_a_node() -> None:
    forward, reflected = _vector._elementwise(operator.mul)
    x = Value(3.0)
    v = Vector([1.0, 2.0])
    forward(v, x).backward([1.0, 1.0])
    assert x.grad == 3.0
    reflected(v, x).backward([1.0, 1.0])
    assert x.grad == 6.0
