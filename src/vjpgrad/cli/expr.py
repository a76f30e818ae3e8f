"""A safe expression language for the command line: parsed, never evaluated as Python.

The language is a subset of Python's expressions: numbers, variable names, ``+ - * / **``,
unary minus and plus, parentheses and calls of the functions of the operations table (and
``abs``). Three steps read it, and no input can exhaust the stack or escape as a traceback:

1. ``nesting`` measures how deeply the text nests (parentheses, calls, unary signs), without
   recursion, and refuses more than ``MAX_DEPTH`` levels before Python's parser sees it. A flat
   chain such as ``x+x+...+x`` is not nesting, however long: for it the ``MAX_LENGTH`` limit is
   the one that bites.
2. Python's parser (``ast.parse``) reads it. A flat chain longer than the tree it builds at once
   (about 2,900 terms on Python 3.11 and 3.12) is read in pieces (``_in_pieces``), to the same tree.
3. A whitelist admits the tree node by node (``_check``, iteratively), or says in words what is
   not allowed ("a lambda is not allowed", "the operator Mod is not allowed"...).

Nothing in the text is ever executed: the admitted tree is evaluated by the interpreter at
the end, node by node.
"""

from __future__ import annotations

import ast
import io
import itertools
import keyword
import math
import operator
import re
import sys
import tokenize
import warnings
from collections.abc import Callable, Mapping
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


NOT_TEXT = "bytes that are not text in this terminal's encoding (UTF-8 expected): type it again, or set a UTF-8 locale"
"""What an argument holds where the terminal's encoding could not read a byte of it."""


def not_text(text: str) -> bool:
    """Whether an argument holds a byte the terminal's encoding could not read: Python hands it
    over as a lone surrogate (``\\udcff``), which no name or number is."""
    return any("\ud800" <= c <= "\udfff" for c in text)


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
    if not_text(text):
        raise ExpressionError(f"the expression holds {NOT_TEXT}")
    if nesting(text) > MAX_DEPTH:
        raise ExpressionError(
            f"it is nested more deeply than {MAX_DEPTH} levels (each parenthesis, call and unary sign is a level)"
        )
    tree = _python_parse(text)
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


# ---- 2. Python's parser ---------------------------------------------------------------------------


def _python_parse(text: str) -> ast.expr:
    """The tree Python's parser builds for ``text`` (its integer literals read however long: the
    evaluation reads them as floats), or ``ExpressionError`` saying what does not parse."""
    digits = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    setattr_digits = getattr(sys, "set_int_max_str_digits", None)
    if setattr_digits is not None:
        setattr_digits(0)
    try:
        try:
            with warnings.catch_warnings():  # "invalid decimal literal" and the like: the refusal says it
                warnings.simplefilter("ignore")
                return ast.parse(text, mode="eval").body
        except (RecursionError, MemoryError):  # a flat chain longer than the parser builds at once
            return _in_pieces(text)
    except SyntaxError as error:
        raise ExpressionError(_syntax(text, error)) from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError("Python's parser cannot read it: a chain of operators is too long for it") from None
    finally:
        if setattr_digits is not None:
            setattr_digits(digits)


_NUMBER_AGAINST_NAME = re.compile(r"(?<![\w.])((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([A-Za-z_]\w*)")


def _syntax(text: str, error: SyntaxError) -> str:
    """What ``SyntaxError`` says, in the words of the command line."""
    if text[:1] == "'" or text[-1:] == "'":  # a shell that keeps single quotes (cmd.exe) split the expression
        return (
            "it does not parse: it starts or ends with a single quote, which reached vjpgrad as part of the "
            "expression (a shell such as Windows' cmd.exe keeps single quotes and splits the expression at its "
            'spaces): quote it with double quotes: vjpgrad "3*a + 2*b*b" a=1 b=2'
        )
    found = _NUMBER_AGAINST_NAME.search(text)
    if found:  # 2x: a learner's product
        number, name = found.groups()
        return f"{found.group(0)} is a number followed by a name: write {number}*{name} for the product"
    if not error.offset:  # Python says the text ends too soon, without where: say after what
        last = [match for match in _LENIENT.finditer(text.split("#", 1)[0]) if match.lastgroup != "space"][-1:]
        if last and (last[0].lastgroup in ("power", "other") or keyword.iskeyword(last[0].group())):
            where = f"{last[0].group()!r} at column {last[0].start() + 1}"
            return f"it does not parse: the expression ends where an operand should be (after {where})"
        return f"it does not parse: {error.msg}"
    return f"it does not parse: {error.msg} (column {error.offset})"


CHAIN = 1_000
"""How many operators of a flat chain ``_in_pieces`` reads at once: well within what Python's
parser builds (about 2,900 levels of tree on 3.11 and 3.12, where a chain is as deep as it is long)."""
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def _in_pieces(text: str, chain: int = CHAIN) -> ast.expr:
    """The tree of a long flat chain (``x+x+...+x``), read ``chain`` operators at a time.

    A piece is the text up to a binary operator at the outer level whose precedence is at most
    that of every such operator before it, so that everything before it is the operator's left
    operand. Each piece after the first is read with that operand written as one name of the
    same length (so that every column stays where it was), and that name is then replaced by the
    tree of the pieces before. Python's tree for the whole text is the same."""
    if "\n" in text:
        raise RecursionError
    cuts = _cuts(text)[chain::chain]
    tree: ast.expr | None = None
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        stand_in = "_" * len(text[:start].encode())
        piece = ast.parse(stand_in + text[start:end], mode="eval").body
        tree = piece if tree is None else _graft(piece, stand_in, tree)
    assert tree is not None
    return tree


def _graft(piece: ast.expr, stand_in: str, tree: ast.expr) -> ast.expr:
    """``piece`` with its leftmost operand, the name ``stand_in``, replaced by ``tree``."""
    holder = piece
    while isinstance(holder, ast.BinOp) and not (isinstance(holder.left, ast.Name) and holder.left.id == stand_in):
        holder = holder.left
    if not isinstance(holder, ast.BinOp):
        raise RecursionError  # not a chain of + - * /: say it is too long
    holder.left = tree
    return piece


def _cuts(text: str) -> list[int]:
    """Where ``text`` may be cut (see ``_in_pieces``): the offset of each such operator."""
    cuts, depth, lowest, previous = [], 0, 2, None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER):
            continue
        if token.string in ("(", "[", "{"):
            depth += 1
        elif token.string in (")", "]", "}"):
            depth -= 1
        elif token.string in _PRECEDENCE and depth == 0 and previous is not None and _ends_operand(previous):
            if _PRECEDENCE[token.string] <= lowest:
                cuts.append(token.start[1])
            lowest = min(lowest, _PRECEDENCE[token.string])
        previous = token
    return cuts


def _ends_operand(token: tokenize.TokenInfo) -> bool:
    if token.type in (tokenize.NUMBER, tokenize.STRING):
        return True
    if token.type == tokenize.NAME:
        return not keyword.iskeyword(token.string) or token.string in ("True", "False", "None")
    return token.string in (")", "]", "}")


# ---- 3. the whitelist ------------------------------------------------------------------------------


def _check(root: ast.expr, text: str) -> None:
    """Admit only the whitelisted node types (iteratively): each kind of node is checked by its
    own function, which returns the children to check next. In a long text, a refusal says where."""
    stack: list[ast.AST] = [root]
    while stack:
        node = stack.pop()
        admit = _ADMIT.get(type(node))
        try:
            if admit is None:
                raise ExpressionError(
                    f"{_describe(node)} is not allowed: only numbers, names, + - * / **, and function calls"
                )
            stack += admit(node, text)
        except ExpressionError as refusal:
            where = _where(node, text) if len(text) > LOCATE_BEYOND else ""
            if not where:
                raise
            raise ExpressionError(f"{refusal} ({where})") from None


def _where(node: ast.AST, text: str) -> str:
    """Where ``node`` is refused: its first character outside its operands, e.g. the ``.`` of ``x.y``."""
    if getattr(node, "lineno", None) != getattr(node, "end_lineno", 0) or "\n" in text:
        return ""
    line, at = text.encode(), cast(int, getattr(node, "col_offset", 0))  # ast's columns count UTF-8 bytes
    spans = [(c.col_offset, c.end_col_offset or 0) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
    for start, end in sorted(spans):
        if line[at:start].strip():
            break
        at = max(at, end)
    at += len(line[at:]) - len(line[at:].lstrip())
    before = line[:at].decode(errors="replace")
    return f"{line[at:].decode(errors='replace')[:1]!r} at column {len(before) + 1}"


def _admit_constant(node: Any, text: str) -> list[ast.AST]:
    if isinstance(node.value, str) and len(text.strip()) > 1 and text.strip()[0] == text.strip()[-1] == "'":
        # the whole expression in single quotes: a shell that keeps them (cmd.exe) handed them over
        inner = text.strip()[1:-1]
        raise ExpressionError(
            "the expression is in single quotes, which reached vjpgrad as part of it (a shell such as "
            f'Windows\' cmd.exe keeps single quotes): quote it with double quotes: vjpgrad "{inner}"'
        )
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
        argument = ast.unparse(node.args[0])
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
        return (node.lineno, node.col_offset) != (func.lineno, func.col_offset)
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


def to_float(number: float) -> float:
    """An integer literal as a float, overflowing to inf as a float literal does (1e999): the
    expression's and a value's (``x=0x10``)."""
    try:
        return float(number)
    except OverflowError:
        return math.inf


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
            results.append(to_float(cast(int | float, node.value)))  # parse() admitted only int and float
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
