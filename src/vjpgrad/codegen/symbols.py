"""Symbols: the table's derivative rules called on names instead of numbers write code.

A rule of ``core.ops`` (``lambda x, y, out: y`` for ``*``) takes floats, Values, or the
``Code`` symbols of this module, and answers in kind: with ``Code("x")`` and ``Code("y")`` it
returns ``Code("y")``, the text of the saved value. Every writer of code uses this, so that no
formula is written twice: ``vjpgrad.codegen.eager`` writes the eager operators
(``core/operators.py``), ``vjpgrad.compiler.write`` the lines of a compiled function, and
``vjpgrad.batched.write`` vmap's array lines (``Code`` in the ``ARRAY`` dialect: the forms a
float's syntax has and an array's has not, ``a if c else b`` and ``and``, written as helper
calls). The code they write computes the rules' own numbers, bit for bit, by construction.

Numbers are written with ``repr`` (``_inf``, ``_nan`` for the infinities and nan), and the
helpers a line calls are the ``floats`` functions under the names of ``NAMESPACE``.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vjpgrad.core import floats, ops, powers
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
    return literal(x)


def reads(*parts: Any) -> frozenset[str]:
    """The names an expression made of ``parts`` (Codes, numbers) reads: those its Codes read."""
    found: frozenset[str] = frozenset()
    for part in parts:
        if isinstance(part, Code) and part.reads:
            found = found | part.reads
    return found


def call(function: str, *arguments: Any, dialect: Dialect | None = None) -> Code:
    """A call of one of the helpers generated code has (``_div(x, y)``), in ``dialect`` (scalar by default)."""
    text = f"{function}({', '.join(literal(a) for a in arguments)})"
    return Code(text, atomic=True, dialect=dialect, reads=reads(*arguments))


class Dialect:
    """How a line of code for floats is written where Python's float syntax gives the rule's number:
    the strategy ``Code`` follows for the few forms that differ by what the code computes on.

    ``ARRAY`` (NumPy columns, for ``vjpgrad.vmap``) writes the same rules with helper calls where a
    float's syntax has no element-wise meaning: ``a if c else b`` is ``_where(c, a, b)``, ``and`` is
    ``_and``, a division is ``_div`` throughout, a comparison a bracketed array of booleans."""

    name = "scalar"
    negates_times_minus_one = True
    """``g * -1.0`` written ``-g`` (the same bits for a float)."""

    def divide(self, x: Any, y: Any) -> Code:
        # IEEE division: Python's / raises on a zero divisor, where floats.div gives inf or nan
        if isinstance(y, Code) and y.atomic:
            text = f"{operand(x)} / {y.text} if {y.text} else _div({literal(x)}, {y.text})"
            return Code(text, dialect=self, reads=reads(x, y))
        return call("_div", x, y, dialect=self)

    def reciprocal(self, x: Code) -> Code:
        return call("_reciprocal", x, dialect=self)

    def compare(self, left: Code, symbol: str, right: Any) -> Code:
        return Code(f"{operand(left)} {symbol} {operand(right)}", dialect=self, reads=reads(left, right))

    def both(self, left: Code, right: Any) -> Code:
        return Code(f"{operand(left)} and {operand(right)}", dialect=self, reads=reads(left, right))

    def where(self, condition: Code, if_true: Any, if_false: Any) -> Code:
        text = f"{operand(if_true)} if {condition.text} else {operand(if_false)}"
        return Code(text, dialect=self, reads=reads(condition, if_true, if_false))

    def power_scalar(self, x: Code, k: Any) -> Code | float:
        """``x ** k`` as ``powers.power_scalar`` computes it. For an exponent known as the code is
        written (a number, not a symbol), the steps ``floats.POWER_STEPS`` gives for it are
        written out: ``x * x`` for 2, ``x`` itself for 1, ``1.0`` for 0, ``_sqrt(x)`` for 0.5...,
        the very operations ``power_scalar`` runs (it is written from these forms), so the same
        bits with no call of it (a GPT's squared relu, and its derivative ``2.0 * x``, run once
        per neuron)."""
        if type(k) not in (float, int):  # a symbol: the exponent is known only as the code runs
            return call("_pow_scalar", x, k, dialect=self)
        steps = floats.POWER_STEPS.get(float(k))
        if steps is None:
            return call("_pow", x, k, dialect=self)
        result: Code | float = x
        for step in steps:
            result = self._power_step(step, result)
        return result

    def _power_step(self, step: str, x: Any) -> Code | float:
        """One step of ``floats.POWER_STEPS`` written out on ``x``."""
        if step == "one":
            return 1.0
        if step == "sqrt":
            return call("_sqrt", x, dialect=self)
        if step == "reciprocal":
            return call("_reciprocal", x, dialect=self)
        base = operand(x)
        if step == "square":
            return Code(f"{base} * {base}", dialect=self, reads=reads(x))
        if step == "cube":
            return Code(f"{base} * {base} * {base}", dialect=self, reads=reads(x))
        raise ValueError(f"floats.POWER_STEPS has a step no code is written for: {step!r}")

    def __repr__(self) -> str:
        return f"<{self.name} code>"


class _ArrayDialect(Dialect):
    name = "array"
    negates_times_minus_one = False

    def divide(self, x: Any, y: Any) -> Code:
        return call("_div", x, y, dialect=self)

    def reciprocal(self, x: Code) -> Code:
        return call("_div", 1.0, x, dialect=self)

    def compare(self, left: Code, symbol: str, right: Any) -> Code:
        text = f"({operand(left)} {symbol} {operand(right)})"
        return Code(text, atomic=True, dialect=self, reads=reads(left, right))

    def both(self, left: Code, right: Any) -> Code:
        return call("_and", left, right, dialect=self)

    def where(self, condition: Code, if_true: Any, if_false: Any) -> Code:
        return call("_where", condition, if_true, if_false, dialect=self)

    def power_scalar(self, x: Code, k: Any) -> Code | float:
        return call("_pow_scalar", x, k, dialect=self)  # the array helper takes every exponent


SCALAR = Dialect()
"""Code on floats: compile's lines and the eager operators."""
ARRAY = _ArrayDialect()
"""Code on NumPy columns of samples: ``vjpgrad.vmap``'s lines (``batched.write``)."""


class Code:
    """A symbol in a derivative rule: arithmetic on it builds the text of the expression, in its
    ``dialect`` (``SCALAR`` by default, ``ARRAY`` for NumPy columns), which what it builds keeps.

    ``reads``: the names of variables the expression reads, for a writer that keeps its statements
    as data (``batched.write``): a symbol made with its name (``Code("x", atomic=True,
    reads={"x"})``) reads it, and what is built from symbols reads the names they read."""

    __slots__ = ("atomic", "dialect", "reads", "text")

    def __init__(
        self, text: str, atomic: bool = False, dialect: Dialect | None = None, reads: frozenset[str] = frozenset()
    ) -> None:
        self.text = text
        self.atomic = atomic
        self.dialect = SCALAR if dialect is None else dialect
        self.reads = reads

    def __repr__(self) -> str:
        shown = "" if self.dialect is SCALAR else f", dialect={self.dialect.name.upper()}"
        return f"Code({self.text!r}{shown})"

    def __bool__(self) -> bool:
        raise TypeError("a rule that branches on its operands' numbers cannot be written as code")

    def _binary(self, other: Any, symbol: str, reflected: bool = False) -> Code:
        if not isinstance(other, (Code, float, int)):
            return NotImplemented  # type: ignore[no-any-return]  # NotImplemented is typed Any
        left, right = (other, self) if reflected else (self, other)
        return Code(f"{operand(left)} {symbol} {operand(right)}", False, self.dialect, reads(left, right))

    def __add__(self, other: Any) -> Code:
        return self._binary(other, "+")

    def __radd__(self, other: Any) -> Code:
        return self._binary(other, "+", True)

    def __sub__(self, other: Any) -> Code:
        return self._binary(other, "-")

    def __rsub__(self, other: Any) -> Code:
        return self._binary(other, "-", True)

    def __mul__(self, other: Any) -> Code:
        # g * 1.0 is g, to the bit (a nan's too): written plainly; so is g * -1.0 as -g where the dialect says so
        if type(other) is float and other == 1.0:
            return self
        if type(other) is float and other == -1.0 and self.dialect.negates_times_minus_one:
            return -self
        return self._binary(other, "*")

    def __rmul__(self, other: Any) -> Code:
        return self._binary(other, "*", True)

    def __neg__(self) -> Code:
        return Code(f"-{operand(self)}", False, self.dialect, self.reads)

    def __truediv__(self, other: Any) -> Code:
        return self.dialect.divide(self, other)

    def __rtruediv__(self, other: Any) -> Code:
        return self.dialect.divide(other, self)

    def _call(self, function: str, *arguments: Any) -> Code:
        return call(function, *arguments, dialect=self.dialect)

    def __pow__(self, other: Any) -> Code:  # C's pow, as PyTorch's tensor ** tensor
        return self._call("_pow", self, other)

    def pow_scalar(self, k: Any) -> Code | float:  # PyTorch's tensor ** number, with its special cases
        return self.dialect.power_scalar(self, k)

    def __rpow__(self, other: Any) -> Code:
        return self._call("_pow", other, self)

    def reciprocal(self) -> Code:
        return self.dialect.reciprocal(self)

    def __getattr__(self, name: str) -> Callable[[], Code]:
        """``x.exp()``, ``x.log()``...: a call of the helper ``_<name>``, for every name of
        ``CALLED`` (each one-operand operation of the table, and ``HELPERS``), as a rule calls
        the method of a Value; any other name is an error that says where to add it."""
        if name in CALLED:
            return lambda: self._call(f"_{name}", self)
        raise AttributeError(
            f"a rule calls {name}() on an operand, and code symbols have no {name}: the methods of "
            f"vjpgrad.codegen.symbols.Code are the table's one-operand operations and the names of "
            f"symbols.HELPERS (CONTRIBUTING.md, Adding an operation)"
        )

    def __eq__(self, other: object) -> Code:  # type: ignore[override]  # builds a condition
        return self.dialect.compare(self, "==", other)

    def __ne__(self, other: object) -> Code:  # type: ignore[override]  # builds a condition
        return self.dialect.compare(self, "!=", other)

    def __le__(self, other: Any) -> Code:
        return self.dialect.compare(self, "<=", other)

    def __lt__(self, other: Any) -> Code:
        return self.dialect.compare(self, "<", other)

    def __ge__(self, other: Any) -> Code:
        return self.dialect.compare(self, ">=", other)

    def __gt__(self, other: Any) -> Code:
        return self.dialect.compare(self, ">", other)

    def __and__(self, other: Any) -> Code:
        return self.dialect.both(self, other)

    __hash__ = None  # type: ignore[assignment]  # == builds code, so a Code is no dict key

    def choose(self, if_true: Any, if_false: Any) -> Any:
        """``where(self, if_true, if_false)``: a conditional expression, or a maybe-masked value."""
        if if_true is MASKED:
            return Maybe(self, if_false)
        return self.dialect.where(self, if_true, if_false)


@dataclass(frozen=True)
class Maybe:
    """A saved value that is ``MASKED`` (its contribution exactly 0.0) where ``condition`` holds,
    ``value`` elsewhere."""

    condition: Code
    value: Any


def contribution(gradient: Callable[..., Any], g: Code, saved: Any) -> Code | float:
    """The code of what an edge hands its operand (``ops.contribution`` for symbols), in ``g``'s dialect."""
    if saved is MASKED:
        return 0.0
    if isinstance(saved, Maybe):
        return g.dialect.where(saved.condition, 0.0, ops.contribution(gradient, g, saved.value))
    result: Code | float = ops.contribution(gradient, g, saved)
    return result


def saved_names(name: str, count: int) -> Code | tuple[Code, ...]:
    """The saved numbers of an edge held in the variable ``name`` as the gradient takes them:
    ``name`` itself for one, ``name[0], name[1]...`` for a tuple of ``count``."""
    held = frozenset({name})
    if count == 1:
        return Code(name, atomic=True, reads=held)
    return tuple(Code(f"{name}[{k}]", atomic=True, reads=held) for k in range(count))


def saved_text(saved: Any) -> str:
    """What a saved rule returned (a number, a ``Code``, ``MASKED`` or a tuple of them) as an
    expression of Python."""
    if type(saved) is tuple:
        return f"({', '.join(literal(s) for s in saved)}{',' if len(saved) == 1 else ''})"
    return literal(saved)


# ---- the names the code calls -----------------------------------------------------------------------


HELPERS: dict[str, Callable[[float], float]] = {"one_minus_square": floats.one_minus_square}
"""The ``floats`` functions a rule may call on an operand that are no operation of the table
(``tanh``'s ``1 - out * out``, rounded once), by the method name a rule calls."""

NAMESPACE: dict[str, Any] = {
    "_div": floats.div,
    "_pow": floats.power,
    "_pow_scalar": powers.power_scalar,
    "_log": floats.log,
    "_sin": floats.sin,
    "_cos": floats.cos,
    "_sign": floats.sign,
    "_max_of": builtins.max,  # Python's max, where no operand is nan (compiler.write's max)
    "_take_position": ops.take_position,  # the index a take picks, checked (compiler.write's take)
    "_inf": math.inf,
    "_nan": math.nan,
    "_MASKED": MASKED,
}
"""The helpers generated code calls, by the names the symbols write (``_div(x, y)``): the
``floats`` functions, ``HELPERS``, each operation's forward as ``_<name>`` (``_exp``), and
Python's ``max`` (``_max_of``), which compile's ``max`` runs where no operand is nan."""
NAMESPACE.update({f"_{name}": function for name, function in HELPERS.items()})
for _op in ops.BUILTIN:
    NAMESPACE.setdefault(f"_{_op.name}", _op.forward)

CALLED: frozenset[str] = frozenset({op.name for op in ops.BUILTIN if op.arity == 1} | set(HELPERS))
"""The methods a rule may call on a ``Code`` symbol (``x.exp()`` writes ``_exp(x)``): one list,
the table's one-operand operations and ``HELPERS``, for every dialect (``batched.arrays`` gives
the array helper of each)."""

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
