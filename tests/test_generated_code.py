"""The code written from the table: the generated modules are current and readable, and the
table's row builders and Vector's operators make what they should.

``core/operators.py``, ``core/functions.py`` and ``core/powers.py`` are written by ``python -m
vjpgrad.codegen --write`` from the tables of ``core/ops.py`` and ``core/floats.py``. They are
files: each function has its real name, module and docstring, ``inspect.getsource`` shows it,
and a traceback through it shows its line.
"""

from __future__ import annotations

import inspect
import operator
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import vjpgrad
from vjpgrad import Value, Vector
from vjpgrad.codegen import eager
from vjpgrad.core import functions as _functions
from vjpgrad.core import graph as _graph
from vjpgrad.core import modes as _modes
from vjpgrad.core import ops as _ops
from vjpgrad.core import vector as _vector
from vjpgrad.core.ops import BUILTIN, FACES, FUNCTIONS, MASKED, METHODS, Op, times

# ---- the generated modules -------------------------------------------------------------------------


def test_the_generated_modules_are_what_the_table_writes_now() -> None:
    assert eager.stale() == [], "run: python -m vjpgrad.codegen --write"


@pytest.mark.slow  # a codegen process
def test_the_check_command_passes_and_a_stale_module_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    done = subprocess.run([sys.executable, "-m", "vjpgrad.codegen", "--check"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "")
    monkeypatch.setattr(eager, "GENERATED", {**eager.GENERATED, "functions.py": lambda: "# another text\n"})
    assert eager.stale() == ["functions.py"]


# the three shapes the writer inlines: self <op> other, number <op> self, a method of self
SHAPES = {
    "operator": ("self", "da", "other", "db"),
    "reflected": ("x", "None", "self", "db"),
    "method": ("self", "saved", "None", "None"),
}


def inlined(shape: str) -> Callable[..., Value]:
    """A function running the lines ``graph.make_inline`` writes for ``shape``, as the generated operators do."""
    a, da, b, db = SHAPES[shape]
    parameters = ", ".join(dict.fromkeys(name for name in ("out", a, da, b, db) if name != "None"))
    lines = _graph.make_inline("    ", "_Value", "out", "_OP", a, da, b, db)
    namespace: dict[str, Any] = {"make": _graph.make, "_new": _graph.new_node, "_next_seq": _graph.next_seq}
    namespace |= {"switches_on": _modes.switches_on, "_Value": Value, "_OP": _ops.MUL}
    exec("\n".join([f"def made({parameters}):", *lines]), namespace)  # the writer's own lines, run as written
    made: Callable[..., Value] = namespace["made"]
    return made


def seen(node: Value, *leaves: Value) -> tuple[object, ...]:
    """What a user can see of a node: its number, gradient, kind, operands, and what a pass hands each leaf."""
    shown = (node.data, node.grad, node.requires_grad, node.is_leaf, node.op, node.parents)
    if not node.requires_grad:
        return shown
    (node * 1.0).backward(2.0)  # a pass through a later node: the made node is ordered by its creation
    return (*shown, node.grad, *(leaf.grad for leaf in leaves))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["grad", "constant", "no_grad", "anomaly"])
def test_the_lines_written_in_place_of_make_make_the_node_make_makes(shape: str, mode: str) -> None:
    def node(build: Callable[..., Value]) -> tuple[object, ...]:
        x, y = Value(3.0, requires_grad=mode != "constant"), Value(5.0, requires_grad=mode != "constant")
        da = 5.0 if x.requires_grad else None
        db = 3.0 if y.requires_grad else None
        every: dict[str, tuple[Any, ...]] = {
            "operator": (15.0, x, da, y, db),
            "reflected": (15.0, 3.0, y, db),
            "method": (15.0, x, da),
        }
        arguments = every[shape]
        if mode == "no_grad":
            with vjpgrad.no_grad():
                made = build(*arguments)
        elif mode == "anomaly":
            with vjpgrad.detect_anomaly():
                made = build(*arguments)
        else:
            made = build(*arguments)
        return seen(made, x, y)

    makes: dict[str, Callable[..., Value]] = {  # the same arguments, in make's order
        "operator": lambda out, a, da, b, db: _graph.make(Value, out, _ops.MUL, a, da, b, db),
        "reflected": lambda out, a, b, db: _graph.make(Value, out, _ops.MUL, a, None, b, db),
        "method": lambda out, a, da: _graph.make(Value, out, _ops.MUL, a, da, None, None),
    }
    assert node(inlined(shape)) == node(makes[shape])


def test_every_face_of_the_table_is_a_value_method_with_its_source() -> None:
    for face in FACES:
        method = getattr(Value, face.name)
        assert method.__name__ == face.name
        assert method.__qualname__ == f"ValueOperators.{face.name}"
        assert method.__module__ == "vjpgrad.core.operators"
        assert face.doc.rstrip(".") in (method.__doc__ or "")
        assert f"def {face.name}(self" in inspect.getsource(method)


def test_multiplication_records_its_node_where_a_reader_can_see_it() -> None:
    source = inspect.getsource(Value.__mul__)
    assert "out = x * y" in source  # the forward
    assert "da = y if self.requires_grad else None" in source  # the saved value of d(x*y)/dx
    assert "node._operation = _MUL" in source


def test_a_traceback_through_an_operator_shows_its_line() -> None:
    class Broken(float):  # a real number whose conversion fails inside the operator
        def __float__(self) -> float:
            raise ArithmeticError("cannot be read")

    with pytest.raises(ArithmeticError) as caught:
        Value(2.0) * Broken(3.0)
    frames = traceback.extract_tb(caught.value.__traceback__)
    inside = [frame for frame in frames if frame.filename.endswith("operators.py")]
    assert [frame.name for frame in inside] == ["__mul__"]
    assert inside[0].line == "number = as_number(other)"


def test_each_function_of_the_table_is_a_module_function_and_exported() -> None:
    assert sorted(_functions.__all__) == sorted(op.name for op in FUNCTIONS)
    for op in FUNCTIONS:
        function = getattr(vjpgrad, op.name)
        assert function is getattr(_functions, op.name)
        assert function.__module__ == "vjpgrad.core.functions"
        assert op.name in vjpgrad.__all__
        halves = [0.5] * op.arity  # as many operands as the row takes
        assert function(*halves) == op.forward(*halves)
        assert op.doc in (function.__doc__ or "")


FIELDS = (
    "name", "arity", "forward", "saved", "gradients", "code", "doc", "symbol", "operand_names", "plain", "maskable",
    "backward", "saves",
)  # fmt: skip


def fields(op: Op) -> tuple[object, ...]:
    return tuple(getattr(op, f) for f in FIELDS)


# (in the order of their names: BUILTIN is a set of rows hashed by identity, so its own order is
# where each row was allocated, which may differ between two pytest-xdist workers)
UNARY_ROWS = sorted((op for op in BUILTIN if op.arity == 1), key=lambda op: op.name)
BINARY_ROWS = sorted((op for op in BUILTIN if op.arity == 2), key=lambda op: op.name)


@pytest.mark.parametrize("op", UNARY_ROWS, ids=[op.name for op in UNARY_ROWS])
def test_rebuilding_a_unary_row_gives_the_same_row(op: Op) -> None:
    again = _ops._unary(
        op.name, op.forward, op.saved[0], op.gradients[0], doc=op.doc, code=op.code, maskable=op.maskable
    )
    assert fields(again) == fields(op)
    if op.code == f"_{op.name}({{0}})":  # the default code of a function
        assert fields(
            _ops._unary(op.name, op.forward, op.saved[0], op.gradients[0], doc=op.doc, maskable=op.maskable)
        ) == (fields(op))
    if not op.maskable:
        assert fields(_ops._unary(op.name, op.forward, op.saved[0], op.gradients[0], doc=op.doc, code=op.code)) == (
            fields(op)
        )


def test_a_unary_row_without_a_gradient_multiplies() -> None:
    op = _ops._unary("twice", lambda x: 2 * x, lambda x, out: 2.0, doc="2x")
    assert (op.name, op.arity, op.gradients, op.code, op.doc, op.symbol, op.maskable, op.plain) == (
        "twice",
        1,
        (times,),
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
        (op.gradients[0], op.gradients[1]),
        doc=op.doc,
        operand_names=(op.operand_names[0], op.operand_names[1]),
        maskable=op.maskable,
    )
    assert fields(again) == fields(op)
    if op.gradients == (times, times) and not op.maskable and not op.doc:
        assert fields(_ops._binary(op.name, op.symbol, op.forward, op.code, op.saved[0], op.saved[1])) == fields(op)


def test_the_written_module_functions_fit_the_line_length_however_many_the_table_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # __all__ grows with every operation added: written on one line, the fifteenth overflowed
    # ruff's 120 columns in a file nobody edits by hand. It is written as ruff format writes it
    import ast
    import dataclasses

    twins = tuple(dataclasses.replace(op, name=f"{op.name}_twin") for op in FUNCTIONS)
    for twin in twins:
        monkeypatch.setattr(_ops, twin.name.upper(), twin, raising=False)
    monkeypatch.setattr(_ops, "FUNCTIONS", FUNCTIONS + twins)
    source = eager.functions_source()
    assert max(len(line) for line in source.splitlines()) <= 120
    (listed,) = [n.value for n in ast.parse(source).body if isinstance(n, ast.Assign) and "__all__" in ast.unparse(n)]
    assert ast.literal_eval(listed) == sorted(op.name for op in FUNCTIONS + twins)
    assert '__all__ = [\n    "atan2",\n    "atan2_twin",\n' in source  # one a line, as ruff format wraps a list
    assert eager.functions_source().count("__all__") == 1


def test_which_rows_take_the_inline_multiplication() -> None:
    # plain: every edge g * saved, nothing masked, no backward of its own. The rows named here, not
    # the whole table: a new operation (the recipe's) is decided by its row, with no line here
    # "pow" here is number ** Value; Value ** Value and Value ** number are masked
    plain = {op.name for op in BUILTIN if op.plain}
    assert {"add", "sub", "mul", "pow", "neg", "abs", "reciprocal", "exp", "sin", "cos", "tan", "tanh"} <= plain
    assert {"identity", "detach"} <= plain
    assert not {"div", "log", "log1p", "sqrt", "sigmoid", "relu", "sign", "masked_zero", "max", "take"} & plain
    assert not {"atan2", "hypot"} & plain  # their gradients are PyTorch's expressions, not g * saved
    assert all(op.plain == (not op.maskable and all(r is times for r in op.gradients)) for op in BUILTIN)
    assert [op.plain for op in (_ops.POW, _ops.POW_BASE, _ops.POW_SCALAR)] == [False, True, False]
    assert not any(op.plain for op in (_ops.RELU, _ops.MAX, _ops.DIV, _ops.LOG, _ops.SQRT, _ops.SIGMOID))
    rebuilt = Op("mask", 1, abs, (lambda x, out: MASKED,), (times,), "{0}", maskable=True)
    assert not rebuilt.plain
    own = Op("own", 1, abs, (lambda x, out: 1.0,), (times,), "{0}", backward=lambda node, g: None)
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
    forward, reflected = _vector._elementwise(function, "?")  # type: ignore[arg-type]
    name = function.__name__  # type: ignore[attr-defined]
    assert (forward.__qualname__, reflected.__qualname__) == (f"Vector.__{name}__", f"Vector.__r{name}__")
    v = Vector([5.0, 9.0])
    assert forward(v, 2).data == left  # v <op> 2
    assert reflected(v, 2).data == right  # 2 <op> v
    w = Vector([2.0, 2.0])
    assert forward(v, w).data == left
    assert forward(v, "a") is NotImplemented
    assert reflected(v, "a") is NotImplemented
    assert forward.__doc__ == "self ? other, elementwise (a length-1 Vector broadcasts)."
    assert reflected.__doc__ == "other ? self, elementwise (a length-1 Vector broadcasts)."
    assert all(x.requires_grad for x in forward(v, 2))


@pytest.mark.parametrize("op", METHODS, ids=[op.name for op in METHODS])
def test_each_method_of_the_table_is_a_vector_method_written_from_its_row(op: Op) -> None:
    method = getattr(Vector, op.name)
    assert method.__name__ == op.name
    assert method.__module__ == "vjpgrad.core.operators"
    v = Vector([0.25, 2.0])
    if op.arity == 1:
        assert method.__doc__ == f"{op.name}() of each element: {op.doc}."
        result, expected = getattr(v, op.name)(), [op.forward(0.25), op.forward(2.0)]
    else:  # with another Vector, elementwise
        assert op.doc in (method.__doc__ or "")
        result, expected = getattr(v, op.name)(Vector([3.0, -1.0])), [op.forward(0.25, 3.0), op.forward(2.0, -1.0)]
    assert isinstance(result, Vector)
    assert result.data == expected
    assert [x.op for x in result] == [op.shown, op.shown]


def test_vector_operators_say_what_they_do() -> None:
    assert Vector.__add__.__doc__ == "self + other, elementwise (a length-1 Vector broadcasts)."
    assert Vector.__rpow__.__qualname__ == "Vector.__rpow__"


def test_a_value_operand_of_a_vector_operator_stays_a_node() -> None:
    forward, reflected = _vector._elementwise(operator.mul, "*")
    x = Value(3.0)
    v = Vector([1.0, 2.0])
    forward(v, x).backward([1.0, 1.0])
    assert x.grad == 3.0
    reflected(v, x).backward([1.0, 1.0])
    assert x.grad == 6.0


# ---- the symbols every writer uses -----------------------------------------------------------------


def test_the_symbols_write_a_rule_for_floats_and_in_their_array_dialect_for_columns() -> None:
    # one class writes both: the array dialect differs only where a float's syntax has no element-wise meaning
    from vjpgrad.codegen.symbols import ARRAY, SCALAR, Code, contribution

    for dialect, condition, masked, divided in (
        (None, "0.0 if x < 0.0 else (g * y)", "0.0 if x < 0.0 else g", "g / y if y else _div(g, y)"),
        (ARRAY, "_where((x < 0.0), 0.0, g * y)", "_where((x < 0.0), 0.0, g)", "_div(g, y)"),
    ):
        x, y, g = (Code(name, atomic=True, dialect=dialect) for name in ("x", "y", "g"))
        assert (x < 0.0).choose(0.0, g * y).text == condition
        assert contribution(lambda g, s: g * s, g, (x < 0.0).choose(MASKED, 1.0)).text == masked  # type: ignore[union-attr]
        assert (g / y).text == divided
        assert ((x * y + 1.0) * g).dialect is (dialect or SCALAR)  # what it builds keeps its dialect
    assert (Code("g", atomic=True, dialect=ARRAY) * -1.0).text == "g * (-1.0)"  # the scalar code writes -g
    assert (Code("g", atomic=True) * -1.0).text == "-g"


# ---- what code symbols can write: one list ------------------------------------------------------------


def test_every_one_operand_operation_and_helper_is_a_method_of_code_symbols_in_each_dialect() -> None:
    from vjpgrad.codegen.symbols import ARRAY, CALLED, HELPERS, NAMESPACE, SCALAR, Code

    one_operand = {op.name for op in BUILTIN if op.arity == 1}
    assert {"exp", "log", "sigmoid", "tanh", "sign", "one_minus_square"} <= CALLED == one_operand | set(HELPERS)
    for name in sorted(CALLED - set(vars(Code))):  # reciprocal is written by its dialect
        for dialect in (SCALAR, ARRAY):
            written = getattr(Code("x", atomic=True, dialect=dialect), name)()
            assert (written.text, written.dialect) == (f"_{name}(x)", dialect)
        assert f"_{name}" in NAMESPACE  # what the scalar code it writes calls
    assert NAMESPACE["_exp"] is _ops.EXP.forward
    assert NAMESPACE["_one_minus_square"] is HELPERS["one_minus_square"]


def test_the_array_helpers_cover_every_name_code_symbols_write() -> None:
    pytest.importorskip("numpy")
    from vjpgrad.batched import arrays
    from vjpgrad.codegen.symbols import CALLED

    for fast in (False, True):
        given = arrays.namespace(fast)
        assert {
            f"_{name}" for name in CALLED if name not in ("neg", "identity", "detach", "masked_zero", "abs")
        } <= set(given), fast


def test_a_row_whose_forward_is_not_a_floats_function_has_its_exact_array_helper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the recipe's step 1 adds a float function only where Python has none with PyTorch's edges: a row
    # whose forward is Python's own (math.erf) gets its exact array helper from the table all the same
    np = pytest.importorskip("numpy")
    import math

    from vjpgrad.batched import arrays

    row = Op("erf_like", 1, math.erf, (lambda x, out: 1.0,), (times,), "_erf_like({0})", doc="math.erf")
    monkeypatch.setattr(_ops, "BUILTIN", _ops.BUILTIN | {row})
    for fast in (False, True):
        helper = arrays.namespace(fast)["_erf_like"]
        points = [0.0, -0.0, 0.5, -2.0, math.inf, -math.inf]
        assert [float(r) for r in helper(np.array(points))] == [math.erf(x) for x in points]
    assert "_add" not in arrays.exact_helpers({})  # an operator written inline (x + y) calls no helper


def test_which_rows_of_two_operands_get_an_exact_array_helper_is_read_from_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a function of two operands (no operator symbol: atan2, hypot) is called as a helper of its
    # name in array code; an operator (x * y, x / y) is written inline or has its own helper
    np = pytest.importorskip("numpy")
    import math

    from vjpgrad.batched import arrays

    made = arrays.exact_helpers({})
    functions = {f"_{op.name}" for op in _ops.BUILTIN if op.arity == 2 and not op.symbol}
    assert {"_atan2", "_hypot"} <= functions  # and any function of two operands added (the recipe's copysign)
    assert functions <= set(made)
    assert made["_atan2"](np.array([0.0, -0.0]), np.array([-0.0, -1.0])).tolist() == [math.pi, -math.pi]
    assert not {"_add", "_sub", "_mul", "_div", "_pow"} & set(made)  # inline, or a helper of arrays' own
    saved = (lambda x, y, out: 1.0, lambda x, y, out: 0.0)
    function = Op("copysign_like", 2, math.copysign, saved, (times, times), "copysign_like({0}, {1})")
    operator_row = Op("fmod_like", 2, math.fmod, saved, (times, times), "_fmod_like({0}, {1})", symbol="%")
    monkeypatch.setattr(_ops, "BUILTIN", _ops.BUILTIN | {function, operator_row})
    made = arrays.exact_helpers({})
    assert made["_copysign_like"](np.array([1.0, -2.0]), np.array([-0.0, 3.0])).tolist() == [-1.0, 2.0]
    assert "_fmod_like" not in made  # the table says it is an operator, whatever its code's text


def test_a_rule_that_calls_what_code_symbols_lack_is_named_with_its_row_and_operand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from vjpgrad.codegen.symbols import Code

    softplus = Op("softplus", 1, lambda x: x, (lambda x, out: x.softplus_derivative(),), (times,), "_softplus({0})")
    monkeypatch.setattr(_ops, "SOFTPLUS", softplus, raising=False)  # a row of the table, by its name
    with pytest.raises(AttributeError) as error:
        eager._Module().saved(softplus, 0, [Code("x", atomic=True), Code("out", atomic=True)])
    message = str(error.value)
    assert "saved rule for operand 0 cannot be written as code" in message
    assert "softplus_derivative()" in message
    assert "symbols.HELPERS" in message
    assert "CONTRIBUTING.md" in message
    assert not hasattr(Code("x"), "softplus_derivative")  # hasattr and getattr(x, name, default) still work


def test_writing_from_a_clone_while_python_imports_another_vjpgrad_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a newcomer's clone, with the editable install of another checkout on the path: --write rewrote
    # that other checkout's files, saying only "wrote vjpgrad/core/operators.py"
    from vjpgrad.codegen.__main__ import main

    (tmp_path / "src" / "vjpgrad" / "core").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    written: list[str] = []
    monkeypatch.setattr(eager, "write", lambda: written.append("written") or [])
    assert main(["--write"]) == 2
    assert written == []
    assert "PYTHONPATH=src python -m vjpgrad.codegen --write" in capsys.readouterr().err
