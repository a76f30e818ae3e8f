"""Each operation of the table, from its row of cases in op_cases.py: its value at the IEEE-754
edges, its derivative there (PyTorch's formulas) and against central finite differences on generated
inputs, on Values, on one-element Vectors and as a module function; and the guard that every
operation of the table has its row.

Every expected value here and in op_cases.py is written from IEEE-754 (and C99 Annex F for ``pow``,
``log``, ``sqrt`` and the trigonometric functions) and from PyTorch's derivative formulas, not read
off the code: a mistake in the float layer shows as a wrong row. Signs of zeros and infinities are
checked, and nan is compared as nan.
"""

from __future__ import annotations

import fractions
import math
import struct
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from _helpers import bits, central_difference, close, same
from hypothesis import given
from hypothesis import strategies as st
from op_cases import CASES, NOT_CALLED_BY_USERS, OpCase, Spelling

import vjpgrad
from vjpgrad import Value, Vector, explain, gradients
from vjpgrad.core import floats, ops
from vjpgrad.core.ops import Op
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported

inf, nan = math.inf, math.nan


def operands(kinds: str, xs: Iterable[float], make: Callable[[float], Any] = Value) -> list[Any]:
    """The operands of a call: ``make(x)`` (a fresh Value) for a ``v`` of ``kinds``, the number for an ``n``."""
    return [make(x) if kind == "v" else x for kind, x in zip(kinds, xs, strict=True)]


def shown(xs: Iterable[float]) -> str:
    return ", ".join(map(repr, xs))


# ---- every operation of the table has its row of cases -------------------------------------------


def rows_missing(table: Iterable[Op], cases: list[OpCase], not_called: dict[Op, str]) -> list[str]:
    """What is wrong between the table and the rows of cases, in words: each operation a user calls
    with no row, each row whose operation the table does not have, each operation with two rows."""
    table = set(table)
    faces: dict[Op, list[str]] = {}
    for face in ops.FACES:
        faces.setdefault(face.op, []).append(face.name)
    covered = [case.op for case in cases]
    found = []
    for op in sorted(table, key=lambda op: (op.name, tuple(faces.get(op, ())))):
        if op not in covered and op not in not_called:
            where = f" (Value.{', Value.'.join(faces[op])})" if op in faces else ""
            found.append(f"no row for {op.name}{where}")
        if covered.count(op) > 1:
            found.append(f"{covered.count(op)} rows for {op.name}")
    found += [f"the row {case.name!r} is not an operation of the table" for case in cases if case.op not in table]
    return found


def test_every_operation_of_the_table_has_its_row_of_cases() -> None:
    table = {face.op for face in ops.FACES} | set(ops.FUNCTIONS) | set(ops.BUILTIN)
    wrong = rows_missing(table, CASES, NOT_CALLED_BY_USERS)
    assert not wrong, "tests/op_cases.py: " + "; ".join(wrong)
    called = {face.op for face in ops.FACES} | set(ops.FUNCTIONS)
    assert [op.name for op in NOT_CALLED_BY_USERS if op in called] == []  # a user calls these: they need rows


def test_the_guard_names_an_operation_without_a_row_and_a_row_without_an_operation() -> None:
    rows = [case.op for case in CASES]  # a table whose every operation has its row
    assert rows_missing(rows, CASES, {}) == []
    erf = Op("erf", 1, math.erf, (lambda x, out: x,), (ops.times,), "_erf({0})")  # an operation with no row
    assert rows_missing([*rows, erf], CASES, {}) == ["no row for erf"]
    assert rows_missing([*rows, erf], CASES, {erf: "internal"}) == []
    assert rows_missing([op for op in rows if op is not ops.POW_SCALAR], CASES, {}) == [
        "the row 'pow_scalar' is not an operation of the table"
    ]
    assert rows_missing(rows, [case for case in CASES if case.op is not ops.POW_BASE], {}) == [
        "no row for pow (Value.__rpow__)"
    ]
    assert rows_missing(rows, [*CASES, CASES[0]], {}) == ["2 rows for add"]


# ---- derivatives against central finite differences ----------------------------------------------

FORMS = [(case, form) for case in CASES for form in case.spellings()]


@pytest.mark.slow  # central differences over every operation: seconds
@pytest.mark.parametrize(("case", "form"), FORMS, ids=[f"{case.name}: {form.text}" for case, form in FORMS])
@given(data=st.data())
def test_each_derivative_matches_central_differences(case: OpCase, form: Spelling, data: st.DataObject) -> None:
    # a form with a number for a Value (x + c) takes that operand of the row's domain as the number
    xs = list(data.draw(case.domain, label="operands"))
    args = operands(form.operands, xs)
    form.call(*args).backward()
    for i, kind in enumerate(form.operands):
        if kind == "v":

            def moved(t: float, i: int = i) -> float:
                return float(form.call(*operands(form.operands, [t if k == i else x for k, x in enumerate(xs)])).data)

            numeric = central_difference(moved, xs[i])
            assert close(args[i].grad, numeric, rel=1e-4, abs_tol=1e-6), (form.text, xs, i, args[i].grad, numeric)


# ---- forward values at the IEEE-754 edges --------------------------------------------------------

EDGES = [(case, edge) for case in CASES for edge in case.edges]


@pytest.mark.parametrize(("case", "edge"), EDGES, ids=[f"{case.name}({shown(edge[:-1])})" for case, edge in EDGES])
def test_each_operation_gives_ieee_754s_value_at_its_edges(case: OpCase, edge: tuple[float, ...]) -> None:
    *xs, expected = edge
    assert same(case.call(*operands(case.operands, xs)).data, expected)
    if case.op.arity:  # elementwise on Vectors (max, of any number of operands, is not)
        assert same(case.call(*operands(case.operands, xs, lambda x: Vector([x]))).data[0], expected)
    if case.with_a_number:  # the same operation with a constant operand: x + c
        assert same(case.call(Value(xs[0]), xs[1]).data, expected)
        assert same(case.call(Vector([xs[0]]), xs[1]).data[0], expected)
    if case.op in ops.FUNCTIONS:  # the module function on a number
        assert same(getattr(vjpgrad, case.op.name)(*xs), expected)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_operation_raises_nothing_at_the_edges_forward_or_backward(case: OpCase) -> None:
    for form in case.spellings():
        for xs in case.points(form):
            args = operands(form.operands, xs)
            out = form.call(*args)
            assert type(out.data) is float, (form.text, xs)
            out.backward()
            assert all(type(a.grad) is float for a in args if isinstance(a, Value)), (form.text, xs)


# ---- the node each operation makes ----------------------------------------------------------------

POINT = 0.75
"""An operand where every operation is smooth and takes its general path (x ** 0.75 is C's pow)."""


@pytest.mark.parametrize(("case", "form"), FORMS, ids=[f"{case.name}: {form.text}" for case, form in FORMS])
def test_each_result_starts_with_a_zero_grad_and_a_pass_adds_its_seed(case: OpCase, form: Spelling) -> None:
    out = form.call(*operands(form.operands, [POINT] * len(form.operands)))
    assert (out.grad, type(out.grad), out.requires_grad) == (0.0, float, True)
    out.backward(3.0)
    assert out.grad == 3.0  # an output's own gradient is its seed, added to 0.0


@pytest.mark.parametrize(("case", "form"), FORMS, ids=[f"{case.name}: {form.text}" for case, form in FORMS])
def test_each_operation_of_constants_gives_a_constant(case: OpCase, form: Spelling) -> None:
    constant = form.call(
        *operands(form.operands, [POINT] * len(form.operands), lambda x: Value(x, requires_grad=False))
    )
    assert (constant.requires_grad, constant.is_leaf, constant.op, constant.parents) == (False, True, "", ())
    assert bits(constant.data) == bits(form.call(*operands(form.operands, [POINT] * len(form.operands))).data)
    with pytest.raises(RuntimeError, match="does not require grad and has no graph"):
        constant.backward()


@pytest.mark.parametrize(("case", "form"), FORMS, ids=[f"{case.name}: {form.text}" for case, form in FORMS])
def test_each_operation_inside_a_longer_expression_passes_on_its_gradient(case: OpCase, form: Spelling) -> None:
    # the pass orders the operation's node among others (by creation): twice the result, twice the gradients
    alone = operands(form.operands, [POINT] * len(form.operands))
    form.call(*alone).backward()
    inside = operands(form.operands, [POINT] * len(form.operands))
    (form.call(*inside) * 2.0 + 1.0).backward()
    grads = [(a.grad, b.grad) for a, b in zip(alone, inside, strict=True) if isinstance(a, Value)]
    assert all(bits(2.0 * g) == bits(h) for g, h in grads), grads


@pytest.mark.parametrize(
    ("zero", "expected"),
    [(0.0, inf), (-0.0, -inf)],
)
def test_reciprocal_of_a_signed_zero(zero: float, expected: float) -> None:
    assert same(Value(zero).reciprocal().data, expected)
    assert same((1 / Value(zero)).data, expected)  # a number over a Value is number * reciprocal


def test_a_cube_is_rounded_twice_as_x_times_x_times_x() -> None:
    # x * x * x and C's pow(x, 3) differ in the last bit for some x; the cube must be the former
    differing = [x for x in (1.0 + k / 97.0 for k in range(200)) if (x * x) * x != math.pow(x, 3.0)]
    assert differing, "no x where the two roundings differ: pick other inputs"
    for x in differing[:5]:
        assert bits((Value(x) ** 3).data) == bits((x * x) * x)
        assert bits((Value(x) ** 3.0).data) == bits((x * x) * x)


def test_x_to_the_minus_1_is_the_reciprocal_not_cs_pow() -> None:
    x = 5.288940500365528e93  # C's pow(x, -1) rounds differently from 1 / x here
    assert math.pow(x, -1.0) != 1.0 / x
    assert bits((Value(x) ** -1).data) == bits(1.0 / x)
    v = Value(x)
    (v**-1).backward()
    assert bits(v.grad) == bits(-1.0 * (1.0 / (x * x)))  # -1 * x ** -2, with x ** -2 as 1 / (x * x)


def test_a_reciprocal_square_is_one_over_x_times_x() -> None:
    differing = [x for x in (1.0 + k / 89.0 for k in range(300)) if 1.0 / (x * x) != math.pow(x, -2.0)]
    assert differing, "no x where the two roundings differ: pick other inputs"
    for x in differing[:5]:
        assert bits((Value(x) ** -2).data) == bits(1.0 / (x * x))


# ---- derivatives at the edges: PyTorch's formulas ----------------------------------------------------

DERIVATIVES = [(case, edge) for case in CASES for edge in case.derivatives]


@pytest.mark.parametrize(
    ("case", "edge"),
    DERIVATIVES,
    ids=[f"{case.name}({shown(edge[: len(case.operands)])})" for case, edge in DERIVATIVES],
)
def test_each_derivative_is_pytorchs_at_its_edges(case: OpCase, edge: tuple[float, ...]) -> None:
    xs, expected = edge[: len(case.operands)], edge[len(case.operands) :]
    args = operands(case.operands, xs)
    leaves = [a for a in args if isinstance(a, Value)]
    found = [g.data for g in gradients(case.call(*args), leaves)]  # as torch.autograd.grad: a zero keeps its sign
    assert all(same(g, e) for g, e in zip(found, expected, strict=True)), (found, expected)
    args = operands(case.operands, xs)
    case.call(*args).backward()  # into .grad, which starts at 0.0: 0.0 + -0.0 is 0.0
    grads = [a.grad for a in args if isinstance(a, Value)]
    assert all(same(g, e + 0.0) for g, e in zip(grads, expected, strict=True)), (grads, expected)


@pytest.mark.parametrize(
    ("case", "edge"),
    DERIVATIVES,
    ids=[f"{case.name}({shown(edge[: len(case.operands)])})" for case, edge in DERIVATIVES],
)
def test_each_rows_rules_on_numbers_give_pytorchs_derivatives_at_its_edges(
    case: OpCase, edge: tuple[float, ...]
) -> None:
    # the row itself, as compile's helpers and operations of many operands call it: forward and saved rules on floats
    xs, expected = [float(x) for x in edge[: len(case.operands)]], edge[len(case.operands) :]
    op, first = case.op, len(case.leading)  # the row's operands: the call's, after any it fixes (take's index)
    every = [*case.leading, *xs]
    out = op.forward(*every)
    assert same(out, case.call(*operands(case.operands, xs)).data)
    if op.nary:
        saved, gradients = op.saved[0](tuple(every), out), [op.gradients[0]] * len(every)
    else:
        saved, gradients = [rule(*every, out) for rule in op.saved], list(op.gradients)
    found = [
        ops.contribution(gradients[first + k], 1.0, saved[first + k])
        for k, kind in enumerate(case.operands)
        if kind == "v"
    ]
    assert all(same(g, e) for g, e in zip(found, expected, strict=True)), (found, expected)


def test_a_constant_values_power_passes_no_gradient_to_the_exponent_where_the_base_is_zero() -> None:
    # d/db a ** b is 0 where a = 0 <= b, whether a is a number (c ** x) or a Value that requires no grad
    v = Value(0.0)
    (Value(0.0, requires_grad=False) ** v).backward()
    assert close(v.grad, 0.0)


def test_a_masked_edge_passes_exactly_zero_even_from_an_infinite_upstream_gradient() -> None:
    x = Value(-1.0)
    x.relu().backward(inf)
    assert same(x.grad, 0.0)  # not inf * 0 = nan
    y = Value(2.0)
    (y**0).backward(nan)
    assert same(y.grad, 0.0)
    z = Value(0.0)
    (z ** Value(0.0)).backward(inf)
    assert same(z.grad, 0.0)


@given(st.floats(-25, 25) | st.sampled_from([0.0, -0.0, 1e-200, 0.8813735870195429, 19.0, 400.0]))
def test_tanhs_derivative_is_one_minus_the_square_rounded_once(x: float) -> None:
    # as PyTorch's tanh_backward kernel computes it (a fused multiply-add): 1 - r*r exactly,
    # then one rounding; with r*r rounded first the last bits (or all of them, near r = 1) go
    v = Value(x)
    r = v.tanh()
    (differentiable,) = gradients(r, [v], create_graph=True, retain_graph=True)
    r.backward()
    assert v.grad == differentiable.data == float(1 - fractions.Fraction(r.data) ** 2)


@given(st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([1.5, -1.0 - 2**-52, 1e200, inf, -inf]))
def test_the_float_layers_one_minus_a_square_is_rounded_once_for_any_number(r: float) -> None:
    # fma(-r, r, 1) as PyTorch's kernels compute it; beyond +-1 (no tanh gives it) as well
    try:
        expected = float(1 - fractions.Fraction(r) ** 2)  # int / int: rounded once
    except (OverflowError, ValueError):  # beyond the largest float, or an infinity
        expected = -inf
    assert floats.one_minus_square(r) == expected
    assert math.isnan(floats.one_minus_square(nan))


# ---- max: of any number of operands (vjpgrad.nn.functional.max) ----------------------------------


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


def test_max_of_a_signed_zero_tie_is_the_first_operand() -> None:
    assert math.copysign(1.0, F.max([-0.0, 0.0]).data) == -1.0
    assert math.copysign(1.0, F.max([0.0, -0.0]).data) == 1.0
    assert math.copysign(1.0, F.max([0.0, -0.0, 0.0]).data) == 1.0


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


# ---- the module functions: vjpgrad.exp and the others --------------------------------------------

FUNCTIONS = [case for case in CASES if case.op in ops.FUNCTIONS]


@pytest.mark.parametrize("op", [case.op for case in FUNCTIONS], ids=[case.op.name for case in FUNCTIONS])
def test_module_functions_take_numbers_values_and_vectors(op: ops.Op) -> None:
    # as many operands as the row takes: log(x), atan2(y, x)
    function = getattr(vjpgrad, op.name)
    first, second = [0.7, 1.3][: op.arity], [2, 3][: op.arity]

    def method(*xs: float) -> float:
        values = [Value(float(x)) for x in xs]
        return float(getattr(values[0], op.name)(*values[1:]).data)

    assert function(*first) == method(*first) == op.forward(*first)
    assert function(*second) == method(*second)
    value = function(*[Value(x) for x in first])
    assert isinstance(value, Value)
    assert value.op == op.name
    vector = function(*[vjpgrad.Vector([x, x + 0.2]) for x in first])
    assert isinstance(vector, vjpgrad.Vector)
    assert vector.data == [method(*first), method(*[x + 0.2 for x in first])]


BINARY_FUNCTIONS = [case.op for case in FUNCTIONS if case.op.arity == 2]


@pytest.mark.parametrize("op", BINARY_FUNCTIONS, ids=[op.name for op in BINARY_FUNCTIONS])
def test_a_function_of_two_operands_mixes_numbers_values_and_vectors_as_torch_does(op: ops.Op) -> None:
    function = getattr(vjpgrad, op.name)
    y, x = 0.6, -1.7
    expected = op.forward(y, x)
    for make_y, make_x in [(Value, float), (float, Value), (Value, Value)]:
        a, b = make_y(y), make_x(x)
        out = function(a, b)
        assert isinstance(out, Value)
        assert out.data == expected
        out.backward()
        both = Value(y), Value(x)
        function(*both).backward()
        for k, (operand, alone) in enumerate(zip((a, b), both, strict=True)):  # a number: a constant, no edge
            if isinstance(operand, Value):
                masked = op.saved[k](y, x, expected) is ops.MASKED  # PyTorch's zeros_like (copysign's other)
                assert operand.grad == alone.grad
                assert (alone.grad == 0.0) == masked
    v = vjpgrad.Vector([y, 2 * y])
    assert function(v, x).data == [expected, op.forward(2 * y, x)]  # a number broadcasts
    assert function(x, v).data == [op.forward(x, y), op.forward(x, 2 * y)]
    assert function(v, Value(x)).data == function(v, vjpgrad.Vector([x])).data  # so do a Value and a length-1 Vector
    assert getattr(v, op.name)(vjpgrad.Vector([x, x])).data == function(v, x).data
    with pytest.raises(ValueError, match="lengths 2 and 3"):
        function(v, vjpgrad.Vector([1.0, 2.0, 3.0]))
    for bad in [(Value(y), "x"), ("y", Value(x)), ("y", 1.0), (v, "x"), ("y", v)]:
        with pytest.raises(TypeError, match=rf"{op.name}\(\) takes .*got str"):
            function(*bad)
    with pytest.raises(TypeError, match=rf"{op.name}\(\) takes a Value or a number as other, got str"):
        getattr(Value(y), op.name)("x")


def test_module_function_refuses_other_types() -> None:
    with pytest.raises(TypeError, match=r"log\(\) takes a number, a Value or a Vector, got str"):
        vjpgrad.log("e")  # type: ignore[call-overload]


def test_log_of_zero_as_a_number_is_minus_inf_not_an_exception() -> None:
    assert vjpgrad.log(0) == -inf


# ---- hypot: the C library's, as PyTorch computes it ----------------------------------------------


def test_hypot_is_the_c_librarys_where_python_rounds_otherwise() -> None:
    # math.hypot is Python's own algorithm; glibc's hypot (PyTorch's, one number at a time)
    # rounds this point the other way in the last bit
    x, y = 1.7174430627618178, 1.7742289477795508
    floats.hypot(x, y)  # the first call loads the C library's
    if floats._c_hypot is math.hypot:
        pytest.skip("no C library could be loaded here: math.hypot stands in")
    assert floats.hypot(x, y) == floats._c_hypot(x, y)
    if math.hypot(x, y) != floats._c_hypot(x, y):  # glibc: the point tells the two apart
        assert floats.hypot(x, y) == 2.46931144916303


def test_importing_vjpgrad_loads_no_ctypes_until_hypot_is_first_called() -> None:
    # ctypes and the search for libm cost some 15 ms of every import, and a course's student process
    # must hold no ctypes object (the guard): the C library's hypot is loaded at the first call
    import subprocess
    import sys

    code = (
        "import sys, vjpgrad\n"
        "print('ctypes' in sys.modules, '_ctypes' in sys.modules)\n"
        "print(vjpgrad.Value(3.0).hypot(4.0).data, 'ctypes' in sys.modules)\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown == "False False\n5.0 True\n"


def test_hypot_falls_back_to_pythons_where_no_c_library_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("no C library here")

    monkeypatch.setattr(ctypes, "CDLL", refuse)
    assert floats._load_c_hypot() is math.hypot
    assert math.hypot(math.inf, math.nan) == math.inf  # the fallback keeps C99's edge


@given(
    st.sampled_from([0.0, -0.0, math.nan, -math.nan, 1.0, -2.5, math.inf, -math.inf, 5e-324]),
    st.sampled_from([0.0, -0.0]),
)
def test_a_division_by_zero_gives_the_processors_own_bits_as_pytorch_and_numpy_do(x: float, y: float) -> None:
    """0 / 0 is the processor's default nan (the invalid operation's, as ``0 * inf`` gives it: its
    sign bit set on x86-64, where PyTorch's and NumPy's division give that nan, and vjpgrad's gave
    Python's, whose bit is clear); a nan divided by zero is that nan; x / 0 an infinity. Compared
    by every bit, a nan's sign too."""

    def raw(v: float) -> bytes:
        return struct.pack("<d", v)

    got = floats.div(x, y)
    if x != x:
        assert raw(got) == raw(x)
    elif x == 0.0:
        assert raw(got) == raw(0.0 * math.inf)
    else:
        assert got == math.copysign(math.inf, x) * math.copysign(1.0, y)
    assert raw((Value(x) / Value(y)).data) == raw(got)
    numpy = pytest.importorskip("numpy")
    with numpy.errstate(all="ignore"):
        assert raw(got) == raw(float(numpy.float64(x) / numpy.float64(y)))
