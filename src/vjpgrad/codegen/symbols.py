"""Symbols: the table's derivative rules called on names instead of numbers write code.

A rule of ``core.ops`` (``lambda x, y, out: y`` for ``*``) takes floats, Values, or the
``Code`` symbols of this module, and answers in kind: with ``Code("x")`` and ``Code("y")`` it
returns ``Code("y")``, the text of the saved value. Both writers of code use this, so that no
formula is written twice: ``vjpgrad.codegen.eager`` writes the eager operators
(``core/operators.py``), and ``vjpgrad.compiler.write`` the lines of a compiled function. The
code they write computes the rules' own numbers, bit for bit, by construction.

Numbers are written with ``repr`` (``_inf``, ``_nan`` for the infinities and nan), and the
helpers a line calls are the ``floats`` functions under the names of ``NAMESPACE``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vjpgrad.core import floats, ops
from vjpgrad.core.ops import MASKED


def literal(x: Any) -> str:
    """A float, a ``Code`` or ``MASKED`` as text of Python."""
    if isinstance(x, Code):
        return x.text
    if x is MASKED:
        return "_MASKED"
    number = float(x)
    if math.isnan(number):  # its sign kept: x + c hands c's nan on as it is
        return "(-_nan)" if math.copysign(1.0, number) < 0 else "_nan"
    if math.isinf(number):
        return "_inf" if number > 0 else "(-_inf)"
    text = repr(number)
    return f"({text})" if text.startswith("-") else text


def operand(x: Any) -> str:
    """``x`` (a Code or a number) as the operand of an operator: compound expressions in parentheses."""
    if isinstance(x, Code):
        return x.text if x.atomic else f"({x.text})"
    text = literal(x)
    return text


class Code:
    """A symbol in a derivative rule: arithmetic on it builds the text of the expression."""

    __slots__ = ("atomic", "text")

    def __init__(self, text: str, atomic: bool = False) -> None:
        self.text = text
        self.atomic = atomic

    def __repr__(self) -> str:
        return f"Code({self.text!r})"

    def __bool__(self) -> bool:
        raise TypeError("a rule that branches on its operands' numbers cannot be written as code")

    def _binary(self, other: Any, symbol: str, reflected: bool = False) -> Code:
        if not isinstance(other, (Code, float, int)):
            return NotImplemented  # type: ignore[no-any-return]  # NotImplemented is typed Any
        left, right = (other, self) if reflected else (self, other)
        return Code(f"{operand(left)} {symbol} {operand(right)}")

    def __add__(self, other: Any) -> Code:
        return self._binary(other, "+")

    def __radd__(self, other: Any) -> Code:
        return self._binary(other, "+", True)

    def __sub__(self, other: Any) -> Code:
        return self._binary(other, "-")

    def __rsub__(self, other: Any) -> Code:
        return self._binary(other, "-", True)

    def __mul__(self, other: Any) -> Code:
        # g * 1.0 is g and g * -1.0 is -g, to the bit: written plainly
        if type(other) is float and other == 1.0:
            return self
        if type(other) is float and other == -1.0:
            return -self
        return self._binary(other, "*")

    def __rmul__(self, other: Any) -> Code:
        return self._binary(other, "*", True)

    def __neg__(self) -> Code:
        return Code(f"-{operand(self)}")

    def __truediv__(self, other: Any) -> Code:
        return _divide(self, other)

    def __rtruediv__(self, other: Any) -> Code:
        return _divide(other, self)

    def __pow__(self, other: Any) -> Code:  # C's pow, as PyTorch's tensor ** tensor
        return Code(f"_pow({self.text}, {literal(other)})", atomic=True)

    def pow_scalar(self, k: Any) -> Code:  # PyTorch's tensor ** number, with its special cases
        return Code(f"_pow_scalar({self.text}, {literal(k)})", atomic=True)

    def __rpow__(self, other: Any) -> Code:
        return Code(f"_pow({literal(other)}, {self.text})", atomic=True)

    def _call(self, function: str) -> Code:
        return Code(f"{function}({self.text})", atomic=True)

    def log(self) -> Code:
        return self._call("_log")

    def reciprocal(self) -> Code:
        return self._call("_reciprocal")

    def sin(self) -> Code:
        return self._call("_sin")

    def cos(self) -> Code:
        return self._call("_cos")

    def sign(self) -> Code:
        return self._call("_sign")

    def one_minus_square(self) -> Code:
        return self._call("_one_minus_square")

    def _compare(self, other: Any, symbol: str) -> Code:
        return Code(f"{operand(self)} {symbol} {operand(other)}")

    def __eq__(self, other: object) -> Code:  # type: ignore[override]  # builds a condition
        return self._compare(other, "==")

    def __ne__(self, other: object) -> Code:  # type: ignore[override]  # builds a condition
        return self._compare(other, "!=")

    def __le__(self, other: Any) -> Code:
        return self._compare(other, "<=")

    def __lt__(self, other: Any) -> Code:
        return self._compare(other, "<")

    def __ge__(self, other: Any) -> Code:
        return self._compare(other, ">=")

    def __gt__(self, other: Any) -> Code:
        return self._compare(other, ">")

    def __and__(self, other: Any) -> Code:
        return Code(f"{operand(self)} and {operand(other)}")

    __hash__ = None  # type: ignore[assignment]  # == builds code, so a Code is no dict key

    def choose(self, if_true: Any, if_false: Any) -> Any:
        """``where(self, if_true, if_false)``: a conditional expression, or a maybe-masked value."""
        if if_true is MASKED:
            return Maybe(self, if_false)
        return Code(f"{operand(if_true)} if {self.text} else {operand(if_false)}")


def _divide(x: Any, y: Any) -> Code:
    # IEEE division: Python's / raises on a zero divisor, where floats.div gives inf or nan
    if isinstance(y, Code) and y.atomic:
        return Code(f"{operand(x)} / {y.text} if {y.text} else _div({literal(x)}, {y.text})")
    return Code(f"_div({literal(x)}, {literal(y)})", atomic=True)


@dataclass(frozen=True)
class Maybe:
    """A saved value that is ``MASKED`` where ``condition`` holds, ``value`` elsewhere."""

    condition: Code
    value: Any


def contribution(gradient: Callable[..., Any], g: Code, saved: Any) -> Code | float:
    """The code of what an edge hands its operand (``ops.contribution`` for symbols)."""
    if saved is MASKED:
        return 0.0
    if isinstance(saved, Maybe):
        part = ops.contribution(gradient, g, saved.value)
        return Code(f"0.0 if {saved.condition.text} else {operand(part)}")
    result: Code | float = ops.contribution(gradient, g, saved)
    return result


def saved_names(name: str, count: int) -> Code | tuple[Code, ...]:
    """The saved numbers of an edge held in the variable ``name`` as the gradient takes them:
    ``name`` itself for one, ``name[0], name[1]...`` for a tuple of ``count``."""
    if count == 1:
        return Code(name, atomic=True)
    return tuple(Code(f"{name}[{k}]", atomic=True) for k in range(count))


def saved_text(saved: Any) -> str:
    """What a saved rule returned (a number, a ``Code``, ``MASKED`` or a tuple of them) as an
    expression of Python."""
    if type(saved) is tuple:
        return f"({', '.join(literal(s) for s in saved)}{',' if len(saved) == 1 else ''})"
    return literal(saved)


# ---- the names the code calls -----------------------------------------------------------------------


NAMESPACE: dict[str, Any] = {
    "_div": floats.div,
    "_pow": floats.power,
    "_pow_scalar": floats.power_scalar,
    "_log": floats.log,
    "_sin": floats.sin,
    "_cos": floats.cos,
    "_sign": floats.sign,
    "_one_minus_square": floats.one_minus_square,
    "_inf": math.inf,
    "_nan": math.nan,
    "_MASKED": MASKED,
}
"""The helpers generated code calls, by the names the symbols write (``_div(x, y)``): the
``floats`` functions, and each operation's forward as ``_<name>`` (``_exp``)."""
for _op in ops.BUILTIN:
    NAMESPACE.setdefault(f"_{_op.name}", _op.forward)

INLINE = frozenset({"{0} + {1}", "{0} - {1}", "{0} * {1}", "-{0}", "abs({0})", "{0}", "0.0 if {0} < 0.0 else {0}"})
"""Forwards written as Python expressions rather than calls of a helper."""


def operand_text(text: str) -> str:
    """A term as an operand of an operator: a name or a plain number as it is, else in parentheses."""
    return text if text.isidentifier() or _is_plain_number(text) else f"({text})"


def _is_plain_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return not text.startswith("-")
