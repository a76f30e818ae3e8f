"""Code generation: a recorded graph written out as straight-line Python.

``vjpgrad.compile`` records a function once (``_graph.Recording``) and hands the graph here.
The forward pass becomes one line per operation, in the order the operations were made; the
reverse pass one line per edge, nodes in decreasing order of creation, contributions added
in that order, exactly as ``_graph.propagate`` runs them. The lines of the reverse pass are
not written by hand: each edge's saved rule and ``Form`` from ``_ops`` are called with
``Code`` symbols instead of floats, and what they build is the text of the line. So the
generated code computes the eager engine's numbers, bit for bit, by construction.

Only the graph goes into the code: variable names are made here (``x0`` for arguments,
``p0`` for parameters, ``t1`` for intermediates), numbers are written with ``repr``, and
no label, name or other user text is ever placed in it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vjpgrad import _floats, _graph, _ops
from vjpgrad._mode import switched
from vjpgrad._ops import MASKED, Op


def literal(x: Any) -> str:
    """A float, a ``Code`` or ``MASKED`` as text of Python."""
    if isinstance(x, Code):
        return x.text
    if x is MASKED:
        return "_MASKED"
    number = float(x)
    if math.isnan(number):
        return "_nan"
    if math.isinf(number):
        return "_inf" if number > 0 else "(-_inf)"
    text = repr(number)
    return f"({text})" if text.startswith("-") else text


def _operand(x: Any) -> str:
    """``x`` as the operand of an operator: compound expressions in parentheses."""
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
        return Code(f"{_operand(left)} {symbol} {_operand(right)}")

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
        return Code(f"-{_operand(self)}")

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

    def sin(self) -> Code:
        return self._call("_sin")

    def cos(self) -> Code:
        return self._call("_cos")

    def sign(self) -> Code:
        return self._call("_sign")

    def one_minus_square(self) -> Code:
        return self._call("_one_minus_square")

    def _compare(self, other: Any, symbol: str) -> Code:
        return Code(f"{_operand(self)} {symbol} {_operand(other)}")

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
        return Code(f"{_operand(self)} and {_operand(other)}")

    __hash__ = None  # type: ignore[assignment]  # == builds code, so a Code is no dict key

    def choose(self, if_true: Any, if_false: Any) -> Any:
        """``where(self, if_true, if_false)``: a conditional expression, or a maybe-masked value."""
        if if_true is MASKED:
            return Maybe(self, if_false)
        return Code(f"{_operand(if_true)} if {self.text} else {_operand(if_false)}")


def _divide(x: Any, y: Any) -> Code:
    # IEEE division: Python's / raises on a zero divisor, where _floats.div gives inf or nan
    if isinstance(y, Code) and y.atomic:
        return Code(f"{_operand(x)} / {y.text} if {y.text} else _div({literal(x)}, {y.text})")
    return Code(f"_div({literal(x)}, {literal(y)})", atomic=True)


@dataclass(frozen=True)
class Maybe:
    """A saved value that is ``MASKED`` where ``condition`` holds, ``value`` elsewhere."""

    condition: Code
    value: Any


def contribution(form: _ops.Form, g: Code, saved: Any) -> Code | float:
    """The code of what an edge hands its operand (``_ops.contribution`` for symbols)."""
    if saved is MASKED:
        return 0.0
    if isinstance(saved, Maybe):
        part = form.contribute(g, saved.value)
        return Code(f"0.0 if {saved.condition.text} else {_operand(part)}")
    result: Code | float = form.contribute(g, saved)
    return result


# ---- the program ----------------------------------------------------------------------------------


NAMESPACE: dict[str, Any] = {
    "_div": _floats.div,
    "_pow": _floats.power,
    "_pow_scalar": _floats.power_scalar,
    "_log": _floats.log,
    "_sin": _floats.sin,
    "_cos": _floats.cos,
    "_sign": _floats.sign,
    "_one_minus_square": _floats.one_minus_square,
    "_inf": math.inf,
    "_nan": math.nan,
    "_MASKED": MASKED,
}
for _op in _ops.BUILTIN:
    NAMESPACE.setdefault(f"_{_op.name}", _op.forward)

_INLINE = {"{0} + {1}", "{0} - {1}", "{0} * {1}", "-{0}", "abs({0})", "{0}", "0.0 if {0} < 0.0 else {0}"}


class Writer:
    """Writes the forward and reverse passes of one recorded graph."""

    def __init__(
        self,
        nodes: Sequence[_graph.Node],
        names: dict[int, str],
        constants: dict[int, float],
        takes_grad: dict[int, bool],
    ) -> None:
        self.nodes = nodes  # the live operations, in creation order
        self.names = names  # id(Value) -> variable name, for externals and operations
        self.constants = constants  # id(leaf made inside the function) -> its number
        self.takes_grad = takes_grad  # id(Value) -> whether gradient flows to it
        self.namespace = dict(NAMESPACE)
        self._helpers = 0
        self._templates: dict[tuple[Any, ...], str | None] = {}

    def term(self, x: Any) -> str:
        """An operand as text: a variable name or a number."""
        if isinstance(x, _graph.Node):
            key = id(x)
            return self.names[key] if key in self.names else literal(self.constants[key])
        return literal(x)

    def symbol(self, x: Any) -> Any:
        """An operand as a rule's argument: a Code symbol, or a float for a number constant."""
        if isinstance(x, _graph.Node):
            key = id(x)
            return Code(self.names[key], atomic=True) if key in self.names else self.constants[key]
        return x

    def helper(self, function: Callable[..., Any]) -> str:
        """Bind ``function`` under a fresh name of our own making."""
        self._helpers += 1
        name = f"_helper{self._helpers}"
        self.namespace[name] = function
        return name

    def comment(self, op: Op) -> str:
        """The operation's name, from our table only (never a user's text)."""
        return op.shown if op in _ops.BUILTIN else "custom operation"

    def forward_line(self, node: _graph.Node) -> str:
        op = _graph.op_of(node)
        assert op is not None  # the live nodes are operations
        terms = [self.term(x) for x in _graph.operands(node)]
        if op.nary:
            expression = f"{self.helper(op.forward)}({', '.join(terms)})"
        elif op.code in _INLINE:
            expression = op.code.format(*[_operand_text(t) for t in terms])
        elif op in _ops.BUILTIN:  # a call of a helper in NAMESPACE, e.g. _pow_scalar(x0, 0.5)
            expression = op.code.format(*terms)
        else:
            expression = f"{self.helper(op.forward)}({', '.join(terms)})"
        return f"{self.names[id(node)]} = {expression}  # {self.comment(op)}"

    def backward_lines(self, node: _graph.Node, gradient: str) -> list[tuple[int, str]]:
        """``(id of operand, code of the contribution)`` for each edge that carries gradient."""
        op = _graph.op_of(node)
        assert op is not None
        operands = _graph.operands(node)
        g = Code(gradient, atomic=True)
        out = Code(self.names[id(node)], atomic=True)
        live = [(k, x) for k, x, _ in _graph.edges(node)]  # the edges the recording made
        if not live:
            return []
        form = op.forms[0]
        if op.nary:
            saved = f"{self.helper(op.saved[0])}(({', '.join(self.term(x) for x in operands)},), {out.text})"
            parts = []
            for k, x in live:
                s = Code(f"{saved}[{k}]", atomic=True) if len(live) == 1 else Code(f"_s[{k}]", atomic=True)
                parts.append((id(x), f"0.0 if {s.text} is _MASKED else {_operand(form.contribute(g, s))}"))
            if len(live) > 1:
                parts.insert(0, (-1, f"_s = {saved}"))
            return parts
        terms = [self.term(x) for x in operands]
        pattern = tuple(None if isinstance(x, _graph.Node) else x for x in operands)
        lines = []
        for k, x in live:
            template = self._template(op, k, pattern)
            if template is None:  # a rule that needs numbers: call it on them as the code runs
                rule = self.helper(op.saved[k])
                part = _operand(op.forms[k].contribute(g, Code("_s", atomic=True)))
                lines.append((-1, f"_s = {rule}({', '.join(terms)}, {out.text})"))
                lines.append((id(x), f"0.0 if _s is _MASKED else {part}"))
                continue
            lines.append((id(x), template.format(*terms, g=gradient, out=out.text)))
        return lines

    def _template(self, op: Op, k: int, pattern: tuple[Any, ...]) -> str | None:
        """The code of edge ``k``'s contribution with ``{0}``, ``{1}``, ``{g}`` and ``{out}`` for
        the names: the rule called once per operation, edge and constant operands, not per node."""
        key = (op, k, pattern)
        if key in self._templates:
            return self._templates[key]
        template = None
        if op in _ops.BUILTIN:
            args = [Code(f"{{{i}}}", atomic=True) if c is None else c for i, c in enumerate(pattern)]
            try:
                code = contribution(
                    op.forms[k], Code("{g}", atomic=True), op.saved[k](*args, Code("{out}", atomic=True))
                )
                template = code.text if isinstance(code, Code) else literal(code)
            except TypeError:  # the rule branches on a number: it runs on numbers instead
                template = None
        self._templates[key] = template
        return template


def _operand_text(text: str) -> str:
    return text if text.isidentifier() or _is_plain_number(text) else f"({text})"


def _is_plain_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return not text.startswith("-")


# ---- the eager operators, written from the table ----------------------------------------------------


def _saved_code(op: Op, k: int, args: list[Any], helper: str) -> str:
    """The code of edge ``k``'s saved value, from the table's rule called with symbols (or a
    call of the rule itself, named ``helper``, where it needs numbers)."""
    try:
        saved = op.saved[k](*args)
    except TypeError:
        return f"{helper}({', '.join(literal(a) for a in args)})"
    if isinstance(saved, Maybe):
        return f"_MASKED if {saved.condition.text} else {_operand(saved.value)}"
    return literal(saved)


def eager_operators(op: Op, reflected: Op, namespace: dict[str, Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``self <op> other`` and ``other <op> self`` as straight-line functions written from the
    rows of the table: the forward and each saved value inlined, as ``compile`` writes them,
    which saves the calls of the rules on every node. ``namespace`` must hold ``Value``,
    ``make`` and ``as_number``."""
    x, y, out = (Code(name, atomic=True) for name in ("x", "y", "out"))
    namespace.update(NAMESPACE, _op=op, _reflected_op=reflected, _saved_x=op.saved[0], _saved_y=op.saved[1])
    namespace.update(_new=object.__new__, _next_seq=_graph.next_seq, switched=switched)
    namespace["_reflected_saved_y"] = reflected.saved[1]
    source = f"""
def operator(self, other):
    if isinstance(other, Value):
        y = other._data
        takes = other.requires_grad
    elif type(other) is float:
        y = other
        takes = False
    else:
        y = as_number(other)
        if y is None:
            return NotImplemented
        other = y
        takes = False
    x = self._data
    out = {op.code.format("x", "y")}
    da = ({_saved_code(op, 0, [x, y, out], "_saved_x")}) if self.requires_grad else None
    db = ({_saved_code(op, 1, [x, y, out], "_saved_y")}) if takes else None
{_graph.make_inline("    ", "out", "_op", "self", "da", "other", "db")}

def reflected(self, other):
    if type(other) is float:
        x = other
    else:
        x = as_number(other)
        if x is None:
            return NotImplemented
    y = self._data
    out = {reflected.code.format("x", "y")}
    db = ({_saved_code(reflected, 1, [x, y, out], "_reflected_saved_y")}) if self.requires_grad else None
{_graph.make_inline("    ", "out", "_reflected_op", "x", "None", "self", "db")}"""
    exec(compile(source, f"<vjpgrad operator {op.name}>", "exec"), namespace)  # code written from the table alone
    return namespace.pop("operator"), namespace.pop("reflected")


def eager_unary(op: Op, namespace: dict[str, Any]) -> Callable[..., Any]:
    """The Value method of a one-operand operation, written from its row as ``eager_operators``."""
    x, out = Code("x", atomic=True), Code("out", atomic=True)
    namespace.update(NAMESPACE, _op=op, _saved=op.saved[0])
    namespace.update(_new=object.__new__, _next_seq=_graph.next_seq, switched=switched)
    source = f"""
def method(self):
    x = self._data
    out = {op.code.format("x")}
    saved = ({_saved_code(op, 0, [x, out], "_saved")}) if self.requires_grad else None
{_graph.make_inline("    ", "out", "_op", "self", "saved", "None", "None")}"""
    exec(compile(source, f"<vjpgrad operation {op.name}>", "exec"), namespace)  # code written from the table alone
    function: Callable[..., Any] = namespace.pop("method")
    return function
