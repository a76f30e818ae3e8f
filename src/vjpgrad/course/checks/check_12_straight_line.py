"""Exercise 12, stretch (straight_line.py): case 1's forward and reverse pass as straight-line code,
against the numbers of vjpgrad.compile's generated code.

A failure says which number differs and where that number comes from, never vjpgrad's code: that
would be the answer (the exercise's hint says how to compare with it once it passes)."""

from __future__ import annotations

import ast
import math
import operator
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value
from vjpgrad.course import expect
from vjpgrad.course.expect import advice


def example_1(a: Any, b: Any, c: Any) -> Any:
    return 3 * a + 2 * b * b + vjpgrad.log(c)


COMPILED = vjpgrad.compile(example_1)


WHERE = {
    "y": "the forward pass, y = 3a + 2b*b + log(c)",
    "a.grad": "a is used once, in t1 = 3 * a",
    "b.grad": "b is used twice, in t2 = 2 * b and in t3 = t2 * b: its gradient is the sum of both shares",
    "c.grad": "c is used once, in t5 = log(c)",
}
"""Where each number comes from, said when it differs."""


def compiled(a: float, b: float, c: float, v: float) -> list[float]:
    """(y, a.grad, b.grad, c.grad) from vjpgrad's generated code."""
    inputs = [Value(a), Value(b), Value(c)]
    y = COMPILED(*inputs)
    y.backward(v)
    return [y.data, *(x.grad for x in inputs)]


@example(1.0, 2.0, 3.0, 0.5)
@given(st.floats(-3, 3), st.floats(-3, 3), st.floats(0.1, 10), st.floats(-2, 2))
def test_it_gives_vjpgrads_numbers(student: Any, a: float, b: float, c: float, v: float) -> None:
    """It gives the numbers of vjpgrad's compiled code."""
    call = f"example_1({a}, {b}, {c}, {v})"
    result = expect.floats(student("straight_line").example_1(a, b, c, v), 4, call, "(y, a.grad, b.grad, c.grad)")
    ours = compiled(a, b, c, v)
    for name, theirs, want in zip(["y", "a.grad", "b.grad", "c.grad"], result, ours, strict=True):
        assert math.isclose(theirs, want, rel_tol=1e-9, abs_tol=1e-12), (
            f"at a, b, c, v = {a}, {b}, {c}, {v}: your {name} is {theirs!r}, vjpgrad's is {want!r} ({WHERE[name]})"
        )


FORBIDDEN = {
    ast.For: "a for loop",
    ast.While: "a while loop",
    ast.ListComp: "a list comprehension",
    ast.GeneratorExp: "a generator",
    ast.Lambda: "a lambda",
    ast.FunctionDef: "a function",
    ast.Import: "an import",
    ast.ImportFrom: "an import",
}


@pytest.fixture(scope="session", autouse=True)
def handed_in(student: Any) -> str | OSError:
    """straight_line.py as handed in: read once, as the session starts, before any check asks the
    student's process for their code (which could rewrite the file as it is imported), and never
    through a symbolic link (the checks' process may read what the student's cannot). The text,
    or the error that reading it gave."""
    try:
        return read_handed_in(Path(student.directory) / "straight_line.py")
    except OSError as error:
        return error


def read_handed_in(path: Path) -> str:
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(descriptor, encoding="utf-8") as stream:
        return stream.read()


def last_binding(tree: ast.Module, name: str) -> ast.stmt | None:
    """The last top-level statement of ``tree`` that binds ``name`` (a def, a class, an import, an
    assignment, or a store anywhere inside it): the one whose ``name`` Python runs."""
    last = None
    for node in tree.body:
        for inner in ast.walk(node):
            named = isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and inner.name == name
            stored = isinstance(inner, ast.Name) and inner.id == name and isinstance(inner.ctx, ast.Store)
            imported = isinstance(inner, ast.alias) and (inner.asname or inner.name.split(".")[0]) == name
            if named or stored or imported:
                last = node
                break
    return last


def test_it_is_straight_line_code(student: Any, handed_in: str | OSError) -> None:
    """It is straight-line code: one line per step, no loops or functions."""
    function = student("straight_line").example_1
    function(1.0, 2.0, 3.0, 0.5)  # written at all? (the skeleton raises NotImplementedError)
    assert not isinstance(handed_in, OSError), (
        f"straight_line.py could not be read as a file of its own (a symbolic link?): {handed_in}"
    )
    # read as text, as handed in: the def that Python runs, the last to bind the name
    function_node = last_binding(ast.parse(handed_in), "example_1")
    assert function_node is not None, "straight_line.py has no function example_1 at its top level"
    plain = isinstance(function_node, ast.FunctionDef) and not function_node.decorator_list
    assert plain, (
        f"example_1 is bound last at line {function_node.lineno} of straight_line.py by something other than "
        "a plain def: write it as one def, without decorators"
    )
    assert isinstance(function_node, ast.FunctionDef)  # (for the type checker: plain says so)
    first = function_node.lineno - 1  # lines are counted from the function's
    for node in ast.walk(function_node):
        if node is function_node or not isinstance(node, ast.expr | ast.stmt):
            continue
        for kind, what in FORBIDDEN.items():
            assert not isinstance(node, kind), (
                f"example_1 has {what} (line {node.lineno - first} of the function)"
                + advice(": write one line per step instead")
            )
        if isinstance(node, ast.Call):
            called = ast.unparse(node.func)
            assert called == "math.log", (
                f"example_1 calls {called}() (line {node.lineno - first} of the function): only math.log is needed, "
                "every other step is + or *"
            )
    for args in AT:  # the def as written, run as arithmetic here, gives what the student's process gave
        try:
            written = as_written(function_node, args)
        except NotStraightError as error:
            line = getattr(error.node, "lineno", function_node.lineno) - first
            raise AssertionError(
                f"example_1 uses {error.what} (line {line} of the function): straight-line code reads only its "
                "parameters and the names it has assigned, with numbers, + - * / ** and math.log"
            ) from None
        except (ArithmeticError, ValueError, TypeError) as error:
            raise AssertionError(f"example_1{args}, read as written, raised {type(error).__name__}: {error}") from None
        call = f"example_1{args}"
        ran = expect.floats(function(*args), 4, call, "(y, a.grad, b.grad, c.grad)")
        for name, theirs, mine in zip(["y", "a.grad", "b.grad", "c.grad"], ran, written, strict=False):
            assert math.isclose(theirs, mine, rel_tol=1e-9, abs_tol=1e-12), (
                f"{call} returned {name} = {theirs!r}, but its def read as written gives {mine!r}: the number "
                "comes from code other than example_1's lines (math rebound, or an object's operator?)"
            )


AT = [(1.0, 2.0, 3.0, 0.5), (-1.5, 0.75, 2.5, -1.25), (2.0, -3.0, 0.5, 2.0)]
"""Where the def as written is run as arithmetic and compared with what the student's process returns."""


class NotStraightError(Exception):
    """A part of the def that straight-line arithmetic has not: ``what`` it is, at ``node``."""

    def __init__(self, node: ast.AST, what: str) -> None:
        super().__init__(what)
        self.node, self.what = node, what


OPERATORS: dict[type, Any] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos,
}  # fmt: skip
"""The operators straight-line code may use, on floats."""


def as_written(function: ast.FunctionDef, args: tuple[float, ...]) -> tuple[float, ...]:
    """What ``function`` returns at ``args``, run here as straight-line arithmetic on floats: its
    parameters and the names it assigns, numbers, ``OPERATORS`` and the real ``math.log``. Nothing
    of the student's runs: whatever else the def names (a global, an attribute, a call) raises
    ``NotStraightError``, since its value would be the student's process's, not these lines'."""
    names = dict(zip([a.arg for a in function.args.args], args, strict=False))
    for statement in function.body:
        if isinstance(statement, ast.Pass) or (
            isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
        ):
            continue  # a docstring
        if isinstance(statement, ast.Return) and statement.value is not None:
            returned = statement.value
            parts = returned.elts if isinstance(returned, ast.Tuple) else [returned]
            return tuple(value(part, names) for part in parts)
        assign(statement, names)
    raise NotStraightError(function, "no return of its numbers")


def assign(statement: ast.stmt, names: dict[str, float]) -> None:
    """``t = ...``, ``t1 = t2 = ...``, ``t += ...`` or ``t: float = ...`` of ``statement``, into ``names``."""
    if isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets):
        number = value(statement.value, names)
        names.update({t.id: number for t in statement.targets if isinstance(t, ast.Name)})
    elif isinstance(statement, ast.Assign) and len(statement.targets) == 1 and pairs(statement):
        numbers = [value(v, names) for _, v in pairs(statement)]  # all read before any is assigned
        names.update({t.id: number for (t, _), number in zip(pairs(statement), numbers, strict=True)})
    elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        operation = OPERATORS.get(type(statement.op))
        if operation is None or statement.target.id not in names:
            raise NotStraightError(statement, ast.unparse(statement))
        names[statement.target.id] = operation(names[statement.target.id], value(statement.value, names))
    elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
        names[statement.target.id] = value(statement.value, names)
    else:
        raise NotStraightError(statement, f"{ast.unparse(statement).splitlines()[0]}")


def pairs(statement: ast.Assign) -> list[tuple[ast.Name, ast.expr]]:
    """``t1, t2 = x, y`` as its pairs of a name and an expression; none for any other assignment."""
    (target,) = statement.targets
    if not (isinstance(target, ast.Tuple) and isinstance(statement.value, ast.Tuple)):
        return []
    if len(target.elts) != len(statement.value.elts) or not all(isinstance(t, ast.Name) for t in target.elts):
        return []
    return [(t, v) for t, v in zip(target.elts, statement.value.elts, strict=True) if isinstance(t, ast.Name)]


def value(node: ast.expr, names: dict[str, float]) -> float:
    """The float ``node`` stands for (``as_written``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise NotStraightError(node, f"the name {node.id}, which is neither a parameter nor a name it has assigned")
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return float(OPERATORS[type(node.op)](value(node.left, names), value(node.right, names)))
    if isinstance(node, ast.UnaryOp) and type(node.op) in OPERATORS:
        return float(OPERATORS[type(node.op)](value(node.operand, names)))
    if (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) == "math.log"
        and len(node.args) == 1
        and not node.keywords
    ):
        return math.log(value(node.args[0], names))
    raise NotStraightError(node, ast.unparse(node))
