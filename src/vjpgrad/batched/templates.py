"""Each operation of the table as array code: its forward (a template per op, keyed by the op's
name); its backward is the table's own rules, called on array symbols.

The forward templates are the one place that says how an op of ``core/ops.py`` reads on a
column of numbers; a test fails, naming the op, when the table has one without a template
here. The backward needs no template of its own: each edge's saved rule and gradient are
called with ``codegen.symbols.Code`` symbols in the ``ARRAY`` dialect, and what they build is
the line, as ``vjpgrad.compile`` builds its scalar lines with the same symbols (the dialect
writes what has no array meaning in scalar code: ``a if c else b`` as ``_where(c, a, b)``,
``and`` as ``_and``, a masked edge as ``_where(c, 0.0, ...)``). The n-ary ``max``, whose rule
counts its ties with Python, and ``take``, whose rule picks an operand by the index's number,
have their backward written here (``max_backward``, ``take_backward``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from vjpgrad.codegen.symbols import ARRAY, Code, call, literal, reads
from vjpgrad.core import ops
from vjpgrad.core.ops import Op

# ---- the forward of each op, by its name in the table ---------------------------------------------


def _infix(symbol: str) -> Callable[[list[str]], str]:
    return lambda terms: f"{terms[0]} {symbol} {terms[1]}"


def _helper(name: str) -> Callable[[list[str]], str]:
    return lambda terms: f"{name}({', '.join(terms)})"


FORWARD: dict[str, Callable[[list[str]], str]] = {
    "add": _infix("+"),
    "sub": _infix("-"),
    "mul": _infix("*"),
    "div": _helper("_div"),
    "pow": _helper("_pow"),  # POW (Value ** Value) and POW_BASE (number ** Value) alike: C's pow
    "pow_scalar": _helper("_pow_scalar"),
    "neg": lambda terms: f"-{terms[0]}",
    "abs": _helper("_abs"),
    "sign": _helper("_sign"),
    "masked_zero": _helper("_zero"),
    "reciprocal": lambda terms: f"_div(1.0, {terms[0]})",
    "exp": _helper("_exp"),
    "log": _helper("_log"),
    "log1p": _helper("_log1p"),
    "sqrt": _helper("_sqrt"),
    "sin": _helper("_sin"),
    "cos": _helper("_cos"),
    "tan": _helper("_tan"),
    "tanh": _helper("_tanh"),
    "sigmoid": _helper("_sigmoid"),
    "relu": lambda terms: f"_where({terms[0]} < 0.0, 0.0, {terms[0]})",  # relu(-0.0) = -0.0, relu(nan) = nan
    "identity": lambda terms: terms[0],
    "detach": lambda terms: terms[0],
    "max": _helper("_max"),
    "take": _helper("_take"),
    "atan2": _helper("_atan2"),
    "hypot": _helper("_hypot"),
}
"""The array forward of each op of the table, by name: ``terms`` are its operands as text (names
of arrays, or numbers). ``POW_SCALAR``'s row is named ``pow`` in the table; the writer looks it up
under ``pow_scalar`` (``forward_key``)."""


def forward_key(op: Op) -> str:
    """The key of ``op``'s template in ``FORWARD``: its name, and ``pow_scalar`` for the row of a
    constant exponent (which shares the name ``pow`` with C's pow)."""
    return "pow_scalar" if op is ops.POW_SCALAR else op.name


class Prepared(NamedTuple):
    """A line of a backward that prepares its edges' contributions: ``names = value``."""

    names: tuple[str, ...]
    value: Code


def _terms(terms: list[Any]) -> str:
    """The operands (``Code`` symbols, numbers) as the text of a tuple: ``(t1, t2, 0.5,)``."""
    return f"({', '.join(literal(x) for x in terms)},)"


def max_backward(
    terms: list[Any], out: Code, gradient: Code, positions: tuple[int, ...]
) -> tuple[Prepared, list[tuple[int, Code | float]]]:
    """The n-ary max's backward: its hits and their count once, then each operand's share, the
    table's gradient applied (``g / count``) where it is a hit and exactly 0.0 elsewhere."""
    count = Code("_count", atomic=True, dialect=ARRAY, reads=frozenset({"_count"}))
    share = ops.contribution(ops.MAX.gradients[0], gradient, count)
    hits = Code(f"_max_hits({_terms(terms)}, {out.text})", atomic=True, dialect=ARRAY, reads=reads(*terms, out))
    edges: list[tuple[int, Code | float]] = []
    for k in positions:
        hit = Code(f"_hits[{k}]", atomic=True, dialect=ARRAY, reads=frozenset({"_hits"}))
        edges.append((k, call("_where", hit, share, 0.0, dialect=ARRAY)))
    return Prepared(("_hits", "_count"), hits), edges


def take_backward(
    terms: list[Any], gradient: Code, positions: tuple[int, ...]
) -> tuple[Prepared, list[tuple[int, Code | float]]]:
    """``take``'s backward: the position each sample's index picks, once (checked as the forward
    checks it), then each element's share: the table's gradient (``0.0 + g``) where it is
    picked, exactly 0.0 elsewhere; the index's own share exactly 0.0."""
    saved = Code(literal(ops.TAKE_SAVED), atomic=True, dialect=ARRAY)
    share = ops.contribution(ops.TAKE.gradients[0], gradient, saved)
    at = Code(f"_take_positions({literal(terms[0])}, {len(terms) - 1}) + 1", dialect=ARRAY, reads=reads(terms[0]))
    edges: list[tuple[int, Code | float]] = []
    for k in positions:
        if k == 0:
            edges.append((k, 0.0))
            continue
        picked = Code(f"_at == {k}", dialect=ARRAY, reads=frozenset({"_at"}))
        edges.append((k, call("_where", picked, share, 0.0, dialect=ARRAY)))
    return Prepared(("_at",), at), edges
