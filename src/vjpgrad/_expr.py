"""A safe expression language for the command line: parsed, never evaluated as Python.

Python's own parser reads the text into a syntax tree; a whitelist then admits numbers,
variable names, ``+ - * / **``, unary minus and plus, parentheses and calls of the
functions of the contract. Everything else (attributes, subscripts, lambdas,
comprehensions, strings, keywords, unknown names...) is refused with ``ExpressionError``,
and nothing in the text is ever executed: the admitted tree is evaluated by the small
interpreter below, node by node.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any, cast

from vjpgrad._functions import cos, exp, log, relu, sigmoid, sin, sqrt, tan, tanh
from vjpgrad._value import Value

MAX_LENGTH = 10_000
MAX_DEPTH = 200

FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "exp": exp,
    "log": log,
    "sqrt": sqrt,
    "sin": sin,
    "cos": cos,
    "tan": tan,
    "tanh": tanh,
    "sigmoid": sigmoid,
    "relu": relu,
    "abs": abs,
}
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.USub: "-", ast.UAdd: "+"}


class ExpressionError(ValueError):
    """The expression text is not one the command line accepts; the message says why."""


def parse(text: str) -> ast.expr:
    """The checked syntax tree of ``text``, or ``ExpressionError``."""
    if not isinstance(text, str):
        raise ExpressionError(f"the expression must be text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"the expression is {len(text):,} characters long; the limit is {MAX_LENGTH:,}")
    if not text.strip():
        raise ExpressionError("the expression is empty")
    if "\x00" in text:
        raise ExpressionError("the expression contains a NUL character")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        raise ExpressionError(f"it does not parse: {error.msg} (column {error.offset})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError(f"it is nested more deeply than {MAX_DEPTH} levels") from None
    _check(tree.body)
    return tree.body


def _check(root: ast.expr) -> None:
    """Admit only the whitelisted node types, nested at most MAX_DEPTH deep (iteratively,
    so no input can exhaust the Python stack here)."""
    stack: list[tuple[ast.AST, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ExpressionError(f"it is nested more deeply than {MAX_DEPTH} levels")
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise ExpressionError(f"{node.value!r} is not a number: only numbers, names and operators are allowed")
        elif isinstance(node, ast.Name):
            if node.id in FUNCTIONS:
                raise ExpressionError(f"{node.id} is a function: call it, as in {node.id}(x)")
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINARY:
                raise ExpressionError(f"the operator {type(node.op).__name__} is not allowed (only + - * / **)")
            stack += [(node.left, depth + 1), (node.right, depth + 1)]
        elif isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY:
                raise ExpressionError(f"the operator {type(node.op).__name__} is not allowed (only unary - and +)")
            stack.append((node.operand, depth + 1))
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise ExpressionError(f"{_describe(node.func)} cannot be called: only {', '.join(FUNCTIONS)} can")
            if node.func.id not in FUNCTIONS:
                raise ExpressionError(
                    f"{node.func.id} is not a known function; the functions are {', '.join(FUNCTIONS)}"
                )
            if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
                raise ExpressionError(f"{node.func.id}() takes exactly one argument")
            stack.append((node.args[0], depth + 1))
        else:
            raise ExpressionError(
                f"{_describe(node)} is not allowed: only numbers, names, + - * / **, and function calls"
            )


def _describe(node: ast.AST) -> str:
    names = {
        ast.Attribute: "an attribute",
        ast.Subscript: "a subscript",
        ast.Lambda: "a lambda",
        ast.ListComp: "a comprehension",
        ast.GeneratorExp: "a comprehension",
        ast.SetComp: "a comprehension",
        ast.DictComp: "a comprehension",
        ast.Compare: "a comparison",
        ast.BoolOp: "and/or",
        ast.IfExp: "an if expression",
        ast.NamedExpr: "an assignment",
        ast.JoinedStr: "a string",
        ast.Tuple: "a tuple",
        ast.List: "a list",
    }
    return names.get(type(node), f"a {type(node).__name__} expression")


def variables(tree: ast.expr) -> list[str]:
    """The variable names the expression uses, in order of first use."""
    functions = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and id(node) not in functions and node.id not in names:
            names.append(node.id)
    return names


def evaluate(tree: ast.expr, env: Mapping[str, Any]) -> Any:
    """Evaluate a checked tree with vjpgrad's operations over the variables in ``env``."""
    if isinstance(tree, ast.Constant):
        return float(cast(float, tree.value))  # parse() admitted only int and float constants
    if isinstance(tree, ast.Name):
        if tree.id not in env:
            raise ExpressionError(f"{tree.id} has no value: give it one, as in {tree.id}=1.5 or {tree.id}=1,2,3")
        return env[tree.id]
    if isinstance(tree, ast.BinOp):
        left, right = evaluate(tree.left, env), evaluate(tree.right, env)
        if isinstance(left, float) and isinstance(right, float):  # IEEE-754 as everywhere: 1/0 = inf
            return _BINARY[type(tree.op)](Value(left, requires_grad=False), right).data
        return _BINARY[type(tree.op)](left, right)
    if isinstance(tree, ast.UnaryOp):
        return _UNARY[type(tree.op)](evaluate(tree.operand, env))
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name):
        return FUNCTIONS[tree.func.id](evaluate(tree.args[0], env))
    raise ExpressionError(f"{_describe(tree)} is not allowed")  # unreachable after parse()
