"""A safe expression language for the command line: parsed, never evaluated as Python.

The language is a subset of Python's expressions: numbers, variable names, ``+ - * / **``,
unary minus and plus, parentheses and calls of the functions of the operations table (and
``abs``). Three steps read it, none of them recursive, so no input can exhaust the stack:

1. ``nesting`` measures how deeply the text nests (parentheses, calls, unary signs) and
   refuses more than ``MAX_DEPTH`` levels. A flat chain such as ``x+x+...+x`` is not
   nesting, however long: for it the ``MAX_LENGTH`` limit is the one that bites.
2. A small operator-precedence parser reads the language, with Python's precedence and
   associativity and Python's normalisation of names (NFKC), into ``ast`` nodes. It needs
   no recursion, where Python's own parser refuses a flat chain of a few thousand terms.
3. Text it does not read is handed to Python's parser, only so that the refusal can say
   what was written ("a lambda is not allowed", "the operator Mod is not allowed"...); the
   few spellings Python accepts and the small parser does not (a trailing comma in a
   call, a comment) are admitted through the same whitelist.

Nothing in the text is ever executed: the admitted tree is evaluated by the interpreter at
the end, node by node.
"""

from __future__ import annotations

import ast
import copy
import itertools
import keyword
import math
import operator
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from vjpgrad.core import functions

# The operations table: adding a function to it adds it to the command line. The only place
# this module names it.
from vjpgrad.core.ops import FUNCTIONS as OPERATIONS
from vjpgrad.core.value import Value

MAX_LENGTH = 10_000
MAX_DEPTH = 200


class _Operation(Protocol):
    """What the command line needs of an entry of the operations table."""

    @property
    def name(self) -> str: ...
    @property
    def arity(self) -> int: ...


def _function(op: _Operation) -> Callable[..., Any]:
    """The module function of ``op`` (``vjpgrad.log``, ``vjpgrad.atan2``), which takes numbers,
    Values and Vectors alike and gives a float for numbers (a constant argument)."""
    function: Callable[..., Any] = getattr(functions, op.name)
    return function


FUNCTIONS: dict[str, Callable[..., Any]] = {op.name: _function(op) for op in OPERATIONS}
FUNCTIONS["abs"] = abs  # Python's abs(): Values and Vectors answer to it
ARITY: dict[str, int] = {op.name: op.arity for op in OPERATIONS} | {"abs": 1}
"""How many arguments each function takes."""
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


class ExpressionError(ValueError):
    """The expression text is not one the command line accepts; the message says why."""


LOCATE_BEYOND = 80
"""A refusal of a text longer than this says where in it the trouble is."""


def parse(text: str) -> ast.expr:
    """The checked syntax tree of ``text``, or ``ExpressionError``."""
    if not isinstance(text, str):
        raise ExpressionError(f"the expression must be text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"the expression is {len(text):,} characters long; the limit is {MAX_LENGTH:,}")
    text = text.strip()
    if not text:
        raise ExpressionError("the expression is empty")
    if "\x00" in text:
        raise ExpressionError("the expression contains a NUL character")
    if nesting(text) > MAX_DEPTH:
        raise ExpressionError(
            f"it is nested more deeply than {MAX_DEPTH} levels (each parenthesis, call and unary sign is a level)"
        )
    try:
        tree = _read(text)
    except _UnreadError as unread:
        tree = _python_parse(text, unread)
        try:
            _check(tree, text)
        except ExpressionError as refusal:
            if len(text) <= LOCATE_BEYOND:
                raise
            # in a long text, say where: Python's parser does not on every version
            raise ExpressionError(f"{refusal} ({unread})") from None
        return tree
    _check(tree, text)
    return tree


# ---- 1. nesting ----------------------------------------------------------------------------------

_LENIENT = re.compile(
    r"""(?P<space>\s+)
      | (?P<string>[rRbBuUfF]{0,2}(?:'[^'\\\n]*'|"[^"\\\n]*"))
      | (?P<atom>[^\W\d]\w*|\.?[0-9][\w.]*)
      | (?P<power>\*\*)
      | (?P<other>.)""",
    re.VERBOSE,
)


def nesting(text: str) -> int:
    """How many levels deep ``text`` nests: an operand alone is level 1, and each pair of
    parentheses (or brackets), each call and each unary sign around it adds one. A unary
    sign reaches to the end of its power chain (``-a**b`` is ``-(a**b)``), and a binary
    ``+ - * /`` ends it. Flat chains of binary operators are one level, however long.
    Lenient: text outside the language is measured as well as it can be, and stops at
    the first level over ``MAX_DEPTH``."""
    deepest = level = 1  # the level of the next operand, before its unary signs
    signs = 0  # unary signs applying to the next operand
    enclosing: list[tuple[int, int]] = []
    after_operand = False
    for match in _LENIENT.finditer(text):
        kind, token = match.lastgroup, match.group()
        if kind == "space":
            continue
        if kind in ("string", "atom") and token != "not":
            deepest = max(deepest, level + signs)
            after_operand = True
        elif token in ("(", "[", "{"):
            enclosing.append((level, signs))
            level, signs = level + signs + 1, 0
            deepest = max(deepest, level)
            after_operand = False
        elif token in (")", "]", "}"):
            if enclosing:
                level, signs = enclosing.pop()
            after_operand = True
        elif token in ("-", "+", "~", "not") and not after_operand:
            signs += 1
            deepest = max(deepest, level + signs)
        elif kind == "power":
            after_operand = False
        else:  # a binary operator, a comma...: the unary signs before it are done
            signs = 0
            after_operand = False
        if deepest > MAX_DEPTH:
            break
    return deepest


# ---- 2. the small parser ---------------------------------------------------------------------------

_DIGITS = r"[0-9](?:_?[0-9])*"
_EXPONENT = rf"[eE][+-]?{_DIGITS}"
_FLOAT = rf"{_DIGITS}\.(?:{_DIGITS})?(?:{_EXPONENT})?|\.{_DIGITS}(?:{_EXPONENT})?|{_DIGITS}{_EXPONENT}"
_INTEGER = r"0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|0(?:_?0)*|[1-9](?:_?[0-9])*"
_TOKEN = re.compile(
    rf"""[ \t\f]*(?:
        (?P<float>(?:{_FLOAT})(?![\w.]))
      | (?P<integer>(?:{_INTEGER})(?![\w.]))
      | (?P<name>[^\W\d]\w*)
      | (?P<operator>\*\*|[-+*/(),])
    )""",
    re.VERBOSE,
)


class _UnreadError(Exception):
    """The small parser does not read this text; ``str()`` says where it stopped."""


@dataclass(frozen=True)
class _Token:
    kind: str  # "number", "name", "operator"
    text: str
    column: int  # 1-based, as Python's messages count
    value: float | str = ""  # the number, or the NFKC-normalised name


def _tokens(text: str) -> Iterator[_Token]:
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.lastgroup is None:
            rest = text[position:].lstrip(" \t\f")
            raise _UnreadError(f"{rest[:1]!r} at column {len(text) - len(rest) + 1}")
        kind, token, column = match.lastgroup, match.group(match.lastgroup), match.start(match.lastgroup) + 1
        position = match.end()
        if kind == "float":
            yield _Token("number", token, column, float(token))
        elif kind == "integer":
            # float() reads a decimal integer however long (1 followed by 400 zeros is inf, as
            # 1e400 is); int() reads the other bases, which have no limit on their digits
            decimal = token[:2].lower() not in ("0x", "0o", "0b")
            number = float(token) if decimal else _to_float(int(token, 0))
            yield _Token("number", token, column, number)
        elif kind == "name":
            name = unicodedata.normalize("NFKC", token)  # as Python's parser does: 𝑥 is x
            if not token.isidentifier() or keyword.iskeyword(name):
                raise _UnreadError(f"{token!r} at column {column}")
            yield _Token("name", token, column, name)
        else:
            yield _Token("operator", token, column)


def _to_float(number: float) -> float:
    """An integer literal as a float, overflowing to inf as a float literal does (1e999)."""
    try:
        return float(number)
    except OverflowError:
        return math.inf


# binding power and right-associativity of each operator; unary signs sit between * and **
_PRECEDENCE = {"+": (1, False), "-": (1, False), "*": (2, False), "/": (2, False), "unary": (3, False), "**": (4, True)}
_AST_BINARY = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "**": ast.Pow}


def _read(text: str) -> ast.expr:
    """Operator precedence (shunting-yard) over the tokens: the tree Python's parser would
    build for the language, built without recursion."""
    tokens = list(_tokens(text))
    reader = _Reader()
    for i, token in enumerate(tokens):
        if reader.want_operand:
            following = tokens[i + 1].text if i + 1 < len(tokens) else ""
            reader.operand(token, following, tokens[i - 1] if i else None)
        elif token.text in _PRECEDENCE:
            reader.binary(token.text)
        elif token.text == ",":
            reader.comma(token)
        elif token.text == ")":
            reader.close(token)
        else:
            raise _UnreadError(f"{token.text!r} at column {token.column}")
    return reader.finish()


class _Reader:
    """The state of the shunting-yard: the operands read, the operators and parentheses pending,
    and whether an operand comes next."""

    def __init__(self) -> None:
        self.operands: list[ast.expr] = []
        self.pending: list[tuple[str, str]] = []  # ("binary", op), ("unary", op), ("(", ""), ("call", name)
        self.commas: list[int] = []  # for each open call, the commas read so far
        self.want_operand = True

    def operand(self, token: _Token, following: str, before: _Token | None) -> None:
        """A token where an operand belongs: a number, a name, a call, a sign or a parenthesis."""
        if token.kind == "number":
            self.operands.append(ast.Constant(token.value))
            self.want_operand = False
        elif token.kind == "name" and following == "(":
            self.pending.append(("call", str(token.value)))
            self.commas.append(0)
        elif token.kind == "name":
            self.operands.append(ast.Name(str(token.value), ast.Load()))
            self.want_operand = False
        elif token.text in ("-", "+"):
            self.pending.append(("unary", token.text))
        elif token.text == "(":
            opens_call = self.pending and self.pending[-1][0] == "call" and before is not None and before.kind == "name"
            if not opens_call:
                self.pending.append(("(", ""))
        else:
            raise _UnreadError(f"{token.text!r} at column {token.column}")

    def binary(self, symbol: str) -> None:
        """A binary operator: first reduce the pending operators that bind at least as tightly."""
        power, right = _PRECEDENCE[symbol]
        while self.pending and self.pending[-1][0] in ("binary", "unary"):
            top = self._binding(self.pending[-1])
            if top < power or (top == power and right):
                break
            self._reduce()
        self.pending.append(("binary", symbol))
        self.want_operand = True

    def comma(self, token: _Token) -> None:
        """Between the arguments of a call: ends the argument before it."""
        self._reduce_operators()
        if not self.pending or self.pending[-1][0] != "call":
            raise _UnreadError(f"',' at column {token.column}")
        self.commas[-1] += 1
        self.want_operand = True

    def close(self, token: _Token) -> None:
        """A closing parenthesis: of a group, or of a call with its arguments."""
        self._reduce_operators()
        if not self.pending:
            raise _UnreadError(f"an unmatched ')' at column {token.column}")
        kind, name = self.pending.pop()
        if kind == "call":
            count = self.commas.pop() + 1
            arguments = self.operands[-count:]
            del self.operands[-count:]
            self.operands.append(ast.Call(ast.Name(name, ast.Load()), arguments, []))

    def finish(self) -> ast.expr:
        """The tree, once every token is read."""
        if self.want_operand:
            raise _UnreadError("the expression ends where an operand should be")
        while self.pending:
            if self.pending[-1][0] not in ("binary", "unary"):
                raise _UnreadError("a '(' is never closed")
            self._reduce()
        return self.operands[0]

    def _reduce_operators(self) -> None:
        while self.pending and self.pending[-1][0] in ("binary", "unary"):
            self._reduce()

    def _reduce(self) -> None:
        kind, symbol = self.pending.pop()
        operands = self.operands
        if kind == "unary":
            operands.append(ast.UnaryOp(ast.USub() if symbol == "-" else ast.UAdd(), operands.pop()))
        else:
            right = operands.pop()
            operands.append(ast.BinOp(operands.pop(), _AST_BINARY[symbol](), right))

    @staticmethod
    def _binding(entry: tuple[str, str]) -> int:
        return _PRECEDENCE["unary" if entry[0] == "unary" else entry[1]][0]


# ---- 3. Python's parser, for the refusal ----------------------------------------------------------


_NUMBER_AGAINST_NAME = re.compile(r"(?<![\w.])((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([A-Za-z_]\w*)")


def _python_parse(text: str, unread: _UnreadError) -> ast.expr:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError as error:
        found = _NUMBER_AGAINST_NAME.search(text)
        if found:  # 2x: a learner's product
            number, name = found.groups()
            raise ExpressionError(
                f"{found.group(0)} is a number followed by a name: write {number}*{name} for the product"
            ) from None
        if not error.offset:  # Python lost the place (it can, deep into a long text): say where ours stopped
            raise ExpressionError(f"it does not parse: {unread}") from None
        raise ExpressionError(f"it does not parse: {error.msg} (column {error.offset})") from None
    except (RecursionError, MemoryError, ValueError):  # too big for Python's parser: say where ours stopped
        raise ExpressionError(f"it does not parse: {unread} is not allowed there") from None


def _check(root: ast.expr, text: str) -> None:
    """Admit only the whitelisted node types (iteratively): each kind of node is checked by its
    own function, which returns the children to check next."""
    stack: list[ast.AST] = [root]
    while stack:
        node = stack.pop()
        admit = _ADMIT.get(type(node))
        if admit is None:
            raise ExpressionError(
                f"{_describe(node)} is not allowed: only numbers, names, + - * / **, and function calls"
            )
        stack += admit(node, text)


def _admit_constant(node: Any, text: str) -> list[ast.AST]:
    if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
        raise ExpressionError(f"{node.value!r} is not a number: only numbers, names and operators are allowed")
    return []


def _admit_name(node: Any, text: str) -> list[ast.AST]:
    if node.id in FUNCTIONS:
        raise ExpressionError(f"{node.id} is a function: call it, as in {node.id}(x)")
    return []


def _admit_binary(node: Any, text: str) -> list[ast.AST]:
    if isinstance(node.op, ast.BitXor):
        raise ExpressionError(_caret(node, text))
    if type(node.op) not in _BINARY:
        raise ExpressionError(f"the operator {type(node.op).__name__} is not allowed (only + - * / **)")
    return [node.left, node.right]


def _admit_unary(node: Any, text: str) -> list[ast.AST]:
    if type(node.op) not in _UNARY:
        raise ExpressionError(f"the operator {type(node.op).__name__} is not allowed (only unary - and +)")
    return [node.operand]


def _admit_call(node: Any, text: str) -> list[ast.AST]:
    """A call of a function of the table, with as many arguments as it takes."""
    if _is_product(node):  # 2(x+1): a learner's product
        while isinstance(node.func, ast.Call) and _is_product(node.func):  # 2(x)(y): the first one
            node = node.func
        raise ExpressionError(_product(node, text))
    if not isinstance(node.func, ast.Name):
        raise ExpressionError(f"{_describe(node.func)} cannot be called: only {', '.join(FUNCTIONS)} can")
    if node.func.id not in FUNCTIONS:
        advice = _spelling(node)
        raise ExpressionError(
            f"{node.func.id} is not a known function{f' ({advice})' if advice else ''}; "
            f"the functions are {', '.join(FUNCTIONS)}"
        )
    wanted = ARITY[node.func.id]
    if node.keywords or len(node.args) != wanted or any(isinstance(a, ast.Starred) for a in node.args):
        shown = "exactly one argument" if wanted == 1 else f"exactly {wanted} arguments"
        raise ExpressionError(f"{node.func.id}() takes {shown}")
    return list(node.args)


_ADMIT: dict[type[ast.AST], Callable[[Any, str], list[ast.AST]]] = {
    ast.Constant: _admit_constant,
    ast.Name: _admit_name,
    ast.BinOp: _admit_binary,
    ast.UnaryOp: _admit_unary,
    ast.Call: _admit_call,
}
"""The node types the language admits, each with its check."""


SPELLINGS = {
    "ln": "log is the natural logarithm: write log({})",
    "log10": "write log({}) / log(10)",
    "log2": "write log({}) / log(2)",
    "pow": "write a**b for a to the power b",
}
"""Functions a learner may know by another name, and how to write them here (``{}``: the argument)."""


def _spelling(node: ast.Call) -> str:
    """How to write an unknown function that is one of ours by another name or in another case."""
    assert isinstance(node.func, ast.Name)
    argument = "..." if node.args else "x"
    small = len(node.args) == 1 and sum(1 for _ in itertools.islice(ast.walk(node.args[0]), 16)) < 16
    if small and not node.keywords and not isinstance(node.args[0], ast.Starred):  # unparse() recurses: keep it small
        tidy = copy.deepcopy(node.args[0])
        for part in ast.walk(tidy):  # the small parser reads 2 as 2.0: show it as written
            if isinstance(part, ast.Constant) and isinstance(part.value, float) and part.value.is_integer():
                part.value = int(part.value) if abs(part.value) < 1e16 else part.value
        argument = ast.unparse(tidy)
        argument = argument if len(argument) <= 30 else "..."
    name = node.func.id
    if name.casefold() in SPELLINGS:
        return SPELLINGS[name.casefold()].format(argument)
    ours = next((f for f in FUNCTIONS if f.casefold() == name.casefold()), None)
    return "" if ours is None else f"names are case-sensitive: write {ours}({argument})"


def _is_product(node: ast.Call) -> bool:
    """A parenthesis after a number or an expression of the language (``2(x+1)``, ``(x+1)(x-1)``,
    ``exp(x)(x+1)``, ``(x)(y)``): a product written without ``*``, not a call."""
    func = node.func
    if len(node.args) != 1 or node.keywords:
        return False
    if isinstance(func, ast.Constant):
        return isinstance(func.value, (int, float)) and not isinstance(func.value, bool)
    if isinstance(func, ast.Name):  # (x)(y), but not x(y): that is a call of an unknown function
        where = getattr(node, "lineno", None), getattr(node, "col_offset", None)  # none from the small parser
        return where != (getattr(func, "lineno", None), getattr(func, "col_offset", None))
    return isinstance(func, (ast.BinOp, ast.UnaryOp, ast.Call))


def _product(node: ast.Call, text: str) -> str:
    """The message for ``2(x+1)``, in the words of the one for ``2x``: write ``2*(x+1)``."""
    what = "a number" if isinstance(node.func, ast.Constant) else "an expression"
    func, end = node.func, node.end_col_offset
    if node.lineno == node.end_lineno == func.end_lineno and end is not None and func.end_col_offset is not None:
        line = text.splitlines()[node.lineno - 1].encode()  # ast's columns count UTF-8 bytes
        head, tail = line[node.col_offset : func.end_col_offset], line[func.end_col_offset : end]
        opening = tail.find(b"(", len(tail) - len(tail.lstrip(b") \t")))  # after the )s that close the operand
        written = (head + tail).decode()
        if opening >= 0 and len(written) <= 60:
            head += tail[:opening].rstrip()
            return (
                f"{written} is {what} followed by a parenthesis: "
                f"write {head.decode()}*{tail[opening:].decode()} for the product"
            )
    return f"{what.capitalize()} followed by a parenthesis is not a call: write * between them for the product"


def _caret(node: ast.BinOp, text: str) -> str:
    """The message for ``x^2``: ``^`` is exclusive or in Python; powers are ``**``."""
    advice = "write ** for powers, as in x**2"
    if node.lineno == node.end_lineno and node.end_col_offset is not None and node.right.end_col_offset is not None:
        line = text.splitlines()[node.lineno - 1].encode()  # ast's columns count UTF-8 bytes
        written = line[node.col_offset : node.end_col_offset].decode()
        if len(written) <= 60:
            left = line[node.col_offset : node.left.end_col_offset].decode()
            between = line[node.left.end_col_offset : node.right.col_offset].decode()
            right = line[node.right.col_offset : node.end_col_offset].decode()
            advice = f"write {left}{between.replace('^', '**')}{right} for {written}"
    return f"^ is not a power (in Python it is exclusive or): {advice}"


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
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (str, bytes)):
            return "a string"
        number = isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        return f"the number {node.value!r}" if number else repr(node.value)
    return names.get(type(node), f"a {type(node).__name__} expression")


def _children(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.Call):
        return list(node.args)
    return []


def variables(tree: ast.expr) -> list[str]:
    """The variable names the expression uses, in order of first use (left to right)."""
    names: list[str] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and node.id not in names:
            names.append(node.id)
        stack += reversed(_children(node))
    return names


def evaluate(tree: ast.expr, env: Mapping[str, Any]) -> Any:
    """Evaluate a checked tree with vjpgrad's operations over the variables in ``env``:
    operands left to right, as Python would, and without recursion."""
    results: list[Any] = []
    stack: list[tuple[ast.expr, bool]] = [(tree, False)]
    while stack:
        node, operands_done = stack.pop()
        if isinstance(node, ast.Constant):
            results.append(_to_float(cast(int | float, node.value)))  # parse() admitted only int and float
        elif isinstance(node, ast.Name):
            if node.id not in env:
                raise ExpressionError(f"{node.id} has no value: give it one, as in {node.id}=1.5 or {node.id}=1,2,3")
            results.append(env[node.id])
        elif not operands_done:
            stack.append((node, True))
            stack += [(child, False) for child in reversed(_children(node))]
        elif isinstance(node, ast.BinOp):
            right = results.pop()
            left = results.pop()
            combine = _BINARY[type(node.op)]
            if isinstance(left, float) and isinstance(right, float):  # IEEE-754 as everywhere: 1/0 = inf
                results.append(combine(Value(left, requires_grad=False), right).data)
            else:
                results.append(combine(left, right))
        elif isinstance(node, ast.UnaryOp):
            results.append(_UNARY[type(node.op)](results.pop()))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            arguments = [results.pop() for _ in node.args][::-1]
            results.append(FUNCTIONS[node.func.id](*arguments))
        else:
            raise ExpressionError(f"{_describe(node)} is not allowed")  # unreachable after parse()
    return results[0]
