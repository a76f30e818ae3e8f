"""Exercise 12, stretch (straight_line.py): case 1's forward and reverse pass as straight-line code,
against the numbers of vjpgrad.compile's generated code.

A failure says which number differs and where that number comes from, never vjpgrad's code: that
would be the answer (the exercise's hint says how to compare with it once it passes)."""

from __future__ import annotations

import ast
import math
from typing import Any

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


def test_it_is_straight_line_code(student: Any) -> None:
    """It is straight-line code: one line per step, no loops or functions."""
    function = student("straight_line").example_1
    function(1.0, 2.0, 3.0, 0.5)  # written at all? (the skeleton raises NotImplementedError)
    file = student.directory / "straight_line.py"  # read here, as text: the function as written
    function_node = next(
        (node for node in ast.parse(file.read_text(encoding="utf-8")).body
         if isinstance(node, ast.FunctionDef) and node.name == "example_1"),
        None,
    )  # fmt: skip
    assert function_node is not None, "straight_line.py has no function example_1 at its top level"
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
