"""Each operation of the table as array code: its forward (a template per op, keyed by the op's
name) and its backward (the table's own rules, called on array symbols).

The forward templates are the one place that says how an op of ``core/ops.py`` reads on a
column of numbers; a test fails, naming the op, when the table has one without a template
here. The backward needs no template of its own: each edge's saved rule and gradient are
called with ``ArrayCode`` symbols, and what they build is the line, as ``vjpgrad.compile``
builds its scalar lines with ``codegen.symbols``. What has no array meaning in scalar code is
written for arrays here: ``a if c else b`` is ``_where(c, a, b)``, ``and`` is ``_and``, a
masked edge (exactly 0.0 where its condition holds) is ``_where(c, 0.0, ...)``. The n-ary max,
whose rule counts its ties with Python, has its backward written here (``max_backward``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from vjpgrad.core import ops
from vjpgrad.core.ops import MASKED, Op


def literal(x: Any) -> str:
    """A number, an ``ArrayCode`` or ``MASKED`` as text of Python (numbers by ``repr``)."""
    if isinstance(x, ArrayCode):
        return x.text
    if x is MASKED:
        raise TypeError("a masked value has no text: the contribution is written with _where")
    number = float(x)
    if math.isnan(number):
        return "(-_nan)" if math.copysign(1.0, number) < 0 else "_nan"
    if math.isinf(number):
        return "_inf" if number > 0 else "(-_inf)"
    text = repr(number)
    return f"({text})" if text.startswith("-") else text


def operand(x: Any) -> str:
    """``x`` as the operand of an operator: a compound expression in parentheses."""
    if isinstance(x, ArrayCode) and not x.atomic:
        return f"({x.text})"
    return literal(x)


class ArrayCode:
    """A symbol in a derivative rule that writes array code: arithmetic on it builds the text."""

    __slots__ = ("atomic", "text")

    def __init__(self, text: str, atomic: bool = False) -> None:
        self.text = text
        self.atomic = atomic

    def __repr__(self) -> str:
        return f"ArrayCode({self.text!r})"

    def __bool__(self) -> bool:
        raise TypeError("a rule that branches on its operands' numbers has no array code")

    def _binary(self, other: Any, symbol: str, reflected: bool = False) -> ArrayCode:
        if not isinstance(other, (ArrayCode, float, int)):
            return NotImplemented  # type: ignore[no-any-return]  # NotImplemented is typed Any
        left, right = (other, self) if reflected else (self, other)
        return ArrayCode(f"{operand(left)} {symbol} {operand(right)}")

    def __add__(self, other: Any) -> ArrayCode:
        return self._binary(other, "+")

    def __radd__(self, other: Any) -> ArrayCode:
        return self._binary(other, "+", True)

    def __sub__(self, other: Any) -> ArrayCode:
        return self._binary(other, "-")

    def __rsub__(self, other: Any) -> ArrayCode:
        return self._binary(other, "-", True)

    def __mul__(self, other: Any) -> ArrayCode:
        if type(other) is float and other == 1.0:  # g * 1.0 is g, to the bit (a nan's too)
            return self
        return self._binary(other, "*")

    def __rmul__(self, other: Any) -> ArrayCode:
        return self._binary(other, "*", True)

    def __neg__(self) -> ArrayCode:
        return ArrayCode(f"-{operand(self)}")

    def __truediv__(self, other: Any) -> ArrayCode:
        return call("_div", self, other)

    def __rtruediv__(self, other: Any) -> ArrayCode:
        return call("_div", other, self)

    def __pow__(self, other: Any) -> ArrayCode:  # C's pow, as PyTorch's tensor ** tensor
        return call("_pow", self, other)

    def __rpow__(self, other: Any) -> ArrayCode:
        return call("_pow", other, self)

    def pow_scalar(self, k: Any) -> ArrayCode:  # PyTorch's tensor ** number, with its special cases
        return call("_pow_scalar", self, k)

    def log(self) -> ArrayCode:
        return call("_log", self)

    def reciprocal(self) -> ArrayCode:
        return call("_div", 1.0, self)

    def sin(self) -> ArrayCode:
        return call("_sin", self)

    def cos(self) -> ArrayCode:
        return call("_cos", self)

    def sign(self) -> ArrayCode:
        return call("_sign", self)

    def one_minus_square(self) -> ArrayCode:
        return call("_one_minus_square", self)

    def _compare(self, other: Any, symbol: str) -> ArrayCode:
        return ArrayCode(f"({operand(self)} {symbol} {operand(other)})", atomic=True)

    def __eq__(self, other: object) -> ArrayCode:  # type: ignore[override]  # builds a condition
        return self._compare(other, "==")

    def __ne__(self, other: object) -> ArrayCode:  # type: ignore[override]  # builds a condition
        return self._compare(other, "!=")

    def __le__(self, other: Any) -> ArrayCode:
        return self._compare(other, "<=")

    def __lt__(self, other: Any) -> ArrayCode:
        return self._compare(other, "<")

    def __ge__(self, other: Any) -> ArrayCode:
        return self._compare(other, ">=")

    def __gt__(self, other: Any) -> ArrayCode:
        return self._compare(other, ">")

    def __and__(self, other: Any) -> ArrayCode:
        return call("_and", self, other)

    __hash__ = None  # type: ignore[assignment]  # == builds code, so an ArrayCode is no dict key

    def choose(self, if_true: Any, if_false: Any) -> Any:
        """``where(self, if_true, if_false)`` element-wise; a masked ``if_true`` keeps the
        condition for the contribution (``Masked``)."""
        if if_true is MASKED:
            return Masked(self, if_false)
        return call("_where", self, if_true, if_false)


def call(function: str, *arguments: Any) -> ArrayCode:
    """A call of one of the helpers of ``arrays.namespace``."""
    return ArrayCode(f"{function}({', '.join(literal(a) for a in arguments)})", atomic=True)


class Masked:
    """A saved value that is masked (its contribution exactly 0.0) where ``condition`` holds."""

    __slots__ = ("condition", "value")

    def __init__(self, condition: ArrayCode, value: Any) -> None:
        self.condition = condition
        self.value = value


def contribution(gradient: Callable[..., Any], g: ArrayCode, saved: Any) -> ArrayCode | float:
    """The array code of what an edge hands its operand (``ops.contribution`` for arrays)."""
    if saved is MASKED:
        return 0.0
    if isinstance(saved, Masked):
        return call("_where", saved.condition, 0.0, ops.contribution(gradient, g, saved.value))
    result: ArrayCode | float = ops.contribution(gradient, g, saved)
    return result


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
    "atan2": _helper("_atan2"),
    "hypot": _helper("_hypot"),
}
"""The array forward of each op of the table, by name: ``terms`` are its operands as text (names
of arrays, or numbers). ``POW_SCALAR``'s row is named ``pow`` in the table; the writer looks it up
under ``pow_scalar`` (``forward_of``)."""


def forward_key(op: Op) -> str:
    """The key of ``op``'s template in ``FORWARD``: its name, and ``pow_scalar`` for the row of a
    constant exponent (which shares the name ``pow`` with C's pow)."""
    return "pow_scalar" if op is ops.POW_SCALAR else op.name


def max_backward(terms: list[str], out: str, gradient: str, positions: tuple[int, ...]) -> list[tuple[int, str]]:
    """The lines of the n-ary max's backward: its hits and their count once, then each operand's
    share, the table's gradient applied (``g / count``) where it is a hit and exactly 0.0 elsewhere."""
    share = ops.contribution(ops.MAX.gradients[0], ArrayCode(gradient, atomic=True), ArrayCode("_count", atomic=True))
    lines = [(-1, f"_hits, _count = _max_hits(({', '.join(terms)},), {out})")]
    for k in positions:
        lines.append((k, f"_where(_hits[{k}], {literal(share)}, 0.0)"))
    return lines
