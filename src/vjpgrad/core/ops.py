"""The table of operations: each one's float forward and its backward formula, side by side.

This module is the only place that knows calculus. Every other face of an operation is
generated from its row here: the ``Value`` operator or method and the ``Vector`` method
(written into ``core/operators.py`` by ``python -m vjpgrad.codegen --write``), the module
function (``vjpgrad.exp``, written into ``core/functions.py`` the same way), the command
line's whitelist and the lines of code ``vjpgrad.compile`` writes. Adding a function is adding
its row (and its float function to ``floats`` if it is new) and running the generator.

How a backward formula is written
---------------------------------
Each operand of an operation is an *edge* with two parts:

- ``saved(x, y, out)``: what the backward pass keeps from the forward pass (the saved
  tensor of PyTorch's autograd), computed once when the node is made;
- a ``Form``: how the upstream gradient ``g`` and that saved value make the contribution to
  the operand: ``g * s`` (``TIMES``), ``g / s`` (``DIVIDED``) or ``(g * (1 - s)) * s``
  (``LOGISTIC``).

The formulas and their forms are PyTorch's (``tools/autograd/derivatives.yaml``), so the
two round alike, bit for bit: ``x / y`` hands ``g / y`` to ``x``, not ``g * (1 / y)``. A
saved value may be ``MASKED``: the contribution is then exactly ``0.0`` whatever ``g`` is,
as PyTorch's ``where(mask, 0, ...)`` gives (so ``relu`` passes no nan from an infinite
upstream gradient where its output is <= 0).

The rules are written with the helpers below (``div``, ``log``, ``where``...), which take
floats, Values or code and answer in kind. Called with floats, a rule gives the numbers the
eager engine stores; with Values, a differentiable gradient (``create_graph=True``, higher
order); with ``vjpgrad.codegen``'s symbols, the text of a line of generated code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from vjpgrad.core import floats


class _Masked:
    """The saved value of an edge whose contribution is exactly 0.0 (PyTorch's masks)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MASKED"


MASKED: Final = _Masked()

# ---- helpers that take floats, Values or code, and answer in kind -------------------------------
# A float goes through ``_floats`` (IEEE results, never a Python exception); anything else
# (a Value, a code symbol) through its own operators and methods.


def is_float(x: object) -> bool:
    return type(x) is float


def data_of(x: Any) -> Any:
    """The number behind an operand, for the conditions of masks (code stays code). A Value's
    is read from its slot: the rule reads it, not the user's code (which compile watches). A
    number and code have no ``_data``: they are their own."""
    return getattr(x, "_data", x)


def sign(x: Any) -> Any:
    """-1.0, 0.0 or 1.0 (0.0 for nan), abs' derivative. Of a Value, a Value whose own derivative
    is 0 (PyTorch's sgn): abs' gradient then stays on the graph, differentiable again."""
    return floats.sign(x) if is_float(x) else x.sign()


def div(x: Any, y: Any) -> Any:
    if is_float(x):
        if is_float(y):
            return floats.div(x, y)
        if hasattr(y, "requires_grad"):
            # a float over a Value: a true division, as PyTorch's g / x. Python's reflected
            # number / Value is (1 / x) * number (PyTorch's __rtruediv__), rounded twice
            x = type(y)(x, requires_grad=False)
    return x / y


def power(x: Any, y: Any) -> Any:
    return floats.power(x, y) if is_float(x) and is_float(y) else x**y


def power_scalar(x: Any, k: float) -> Any:
    if is_float(x):
        return floats.power_scalar(x, k)
    if hasattr(x, "pow_scalar"):  # code: PyTorch's special cases, whatever k's form
        return x.pow_scalar(k)
    return x**k


def log(x: Any) -> Any:
    return floats.log(x) if is_float(x) else x.log()


def sin(x: Any) -> Any:
    return floats.sin(x) if is_float(x) else x.sin()


def cos(x: Any) -> Any:
    return floats.cos(x) if is_float(x) else x.cos()


def where(condition: Any, if_true: Any, if_false: Any) -> Any:
    """``if_true if condition else if_false``; a condition in code stays a condition in code."""
    if isinstance(condition, bool):
        return if_true if condition else if_false
    return condition.choose(if_true, if_false)


def both(first: Any, second: Any) -> Any:
    """``first and second`` for conditions (code cannot overload ``and``)."""
    if isinstance(first, bool):
        return second if first else False
    if isinstance(second, bool):
        return first if second else False
    return first & second


# ---- how a contribution is formed ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Form:
    """How the upstream gradient ``g`` and an edge's saved value ``s`` make its contribution.

    ``contribute(g, s)`` is the contribution; ``local(s)`` the local derivative it stands
    for (what ``explain`` and forward mode show: ``1 / s`` for ``g / s``).
    """

    name: str
    contribute: Callable[[Any, Any], Any]
    local: Callable[[Any], Any]


TIMES = Form("times", lambda g, s: g * s, lambda s: s)
DIVIDED = Form("divided", lambda g, s: div(g, s), lambda s: div(1.0, s))
LOGISTIC = Form("sigmoid", lambda g, s: (g * (1.0 - s)) * s, lambda s: (1.0 - s) * s)


def contribution(form: Form, g: Any, saved: Any) -> Any:
    """What an edge hands its operand: ``form`` applied, or exactly 0.0 for a masked edge."""
    return 0.0 if saved is MASKED else form.contribute(g, saved)


def local_derivative(form: Form, saved: Any) -> Any:
    """The local derivative an edge stands for (0.0 for a masked edge)."""
    return 0.0 if saved is MASKED else form.local(saved)


# ---- the rows of the table ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Op:
    """One operation: its float ``forward`` and, per operand, a saved rule and a ``Form``.

    ``saved`` rules take ``(x, y, out)`` for two operands and ``(x, out)`` for one; ``n-ary``
    operations (``max``) take ``(xs, out)`` and return one saved value per operand, all of
    one form. ``code`` is the forward as a line of Python (``{0}``, ``{1}`` the operands).
    ``plain`` (every edge ``g * s``, nothing masked) lets the reverse pass multiply inline.
    """

    name: str
    arity: int  # 1, 2, or 0 for any number of operands
    forward: Callable[..., float]
    saved: tuple[Callable[..., Any], ...]
    forms: tuple[Form, ...]
    code: str
    doc: str = ""
    symbol: str = ""  # the operator as written (+, *, **), "" for a function
    plain: bool = field(default=False)
    maskable: bool = field(default=False)
    # An operation that runs its own backward (a compiled function): called as
    # ``backward(node, g)`` in place of the edges' forms
    backward: Callable[[Any, Any], None] | None = None
    # What a pass that frees the graph does to a node of this operation: None drops what the node
    # saved (every row of the table); a function is called with the node instead (a compiled call)
    release: Callable[[Any], None] | None = None
    nary: bool = field(default=False)  # of any number of operands (arity 0): read per node, so a field

    def __post_init__(self) -> None:
        plain = not self.maskable and self.backward is None and all(form is TIMES for form in self.forms)
        object.__setattr__(self, "plain", plain)
        object.__setattr__(self, "nary", self.arity == 0)

    @property
    def shown(self) -> str:
        """How the operation is shown: its operator (``*``) or its name (``log``)."""
        return self.symbol or self.name


def _binary(
    name: str,
    symbol: str,
    forward: Callable[[float, float], float],
    code: str,
    saved_x: Callable[[Any, Any, Any], Any],
    saved_y: Callable[[Any, Any, Any], Any],
    forms: tuple[Form, Form] = (TIMES, TIMES),
    *,
    maskable: bool = False,
) -> Op:
    return Op(name, 2, forward, (saved_x, saved_y), forms, code, symbol=symbol, maskable=maskable)


def _unary(
    name: str,
    forward: Callable[[float], float],
    saved: Callable[[Any, Any], Any],
    form: Form = TIMES,
    *,
    doc: str,
    code: str | None = None,
    maskable: bool = False,
) -> Op:
    return Op(name, 1, forward, (saved,), (form,), code or f"_{name}({{0}})", doc=doc, maskable=maskable)


# Binary operations. ``x`` and ``y`` are the operands; a number operand (the 3 of 3 * x)
# is a constant with no edge of its own.
ADD = _binary("add", "+", lambda x, y: x + y, "{0} + {1}", lambda x, y, out: 1.0, lambda x, y, out: 1.0)
# PyTorch: other's gradient is -g; g * -1.0 is the same number, nan and zeros included
SUB = _binary("sub", "-", lambda x, y: x - y, "{0} - {1}", lambda x, y, out: 1.0, lambda x, y, out: -1.0)
MUL = _binary("mul", "*", lambda x, y: x * y, "{0} * {1}", lambda x, y, out: y, lambda x, y, out: x)
# PyTorch: g / y for x, and -g * ((x / y) / y) for y (x / y recomputed is out)
DIV = _binary(
    "div", "/", floats.div, "_div({0}, {1})", lambda x, y, out: y, lambda x, y, out: -div(out, y), (DIVIDED, TIMES)
)
# x ** y with y a Value: C's pow, as PyTorch's tensor-tensor kernel.
# d/dx = y * x**(y-1), masked where y == 0 (pow_backward_self's where); d/dy = out * log(x),
# with 0 in its place where x == 0 <= y: pow_backward_exponent multiplies g by its where(),
# so an infinite or nan g still gives nan there, as in PyTorch
POW = _binary(
    "pow",
    "**",
    floats.power,
    "_pow({0}, {1})",
    lambda x, y, out: where(data_of(y) == 0.0, MASKED, y * power(x, y - 1.0)),
    lambda x, y, out: where(both(data_of(x) == 0.0, data_of(y) >= 0.0), 0.0, out * log(x)),
    maskable=True,
)
# number ** Value: PyTorch's pow(Scalar, Tensor) multiplies by its where(): g * 0 stays nan
POW_BASE = _binary(
    "pow",
    "**",
    floats.power,
    "_pow({0}, {1})",
    lambda x, y, out: 0.0,
    lambda x, y, out: where(both(data_of(x) == 0.0, data_of(y) >= 0.0), 0.0, out * log(x)),
)
# x ** k with k a number: PyTorch's special cases (x**0.5 is sqrt(x), x**2 is x*x, ...);
# d/dx = k * x**(k-1), masked (zeros) where k == 0; the constant k gets none
POW_SCALAR = _binary(
    "pow",
    "**",
    floats.power_scalar,
    "_pow_scalar({0}, {1})",
    lambda x, k, out: where(k == 0.0, MASKED, k * power_scalar(x, k - 1.0)),
    lambda x, k, out: 0.0,
    maskable=True,
)

# Unary operations: the functions of the contract, and the operators' helpers.
NEG = _unary("neg", lambda x: -x, lambda x, out: -1.0, doc="-x", code="-{0}")
ABS = _unary("abs", abs, lambda x, out: sign(x), doc="abs(x); its derivative at 0 (and nan) is 0", code="abs({0})")
RECIPROCAL = _unary("reciprocal", floats.reciprocal, lambda x, out: -(out * out), doc="1 / x")
EXP = _unary("exp", floats.exp, lambda x, out: out, doc="e ** x; its derivative is its output")
LOG = _unary(
    "log", floats.log, lambda x, out: x, DIVIDED, doc="Natural logarithm: log(0) = -inf, log(x < 0) = nan; d/dx = 1/x"
)
# PyTorch's log1p_backward: g / (x + 1)
LOG1P = _unary(
    "log1p",
    floats.log1p,
    lambda x, out: x + 1.0,
    DIVIDED,
    doc="log(1 + x), exact near 0: log1p(-1) = -inf, below nan; d/dx = 1/(1 + x)",
)
SQRT = _unary(
    "sqrt",
    floats.sqrt,
    lambda x, out: 2.0 * out,
    DIVIDED,
    doc="Square root: sqrt(x < 0) = nan; its derivative at 0 is inf",
)
SIN = _unary("sin", floats.sin, lambda x, out: cos(x), doc="Sine")
COS = _unary("cos", floats.cos, lambda x, out: -sin(x), doc="Cosine")
TAN = _unary("tan", floats.tan, lambda x, out: 1.0 + out * out, doc="Tangent")


def _tanh_saved(x: Any, out: Any) -> Any:
    """``1 - out * out`` rounded once, as PyTorch's tanh_backward kernel computes it (a fused
    multiply-add). A Value keeps the graph of ``1 - out * out`` (so it differentiates the
    same) with the once-rounded number as its data: create_graph gradients round alike."""
    if is_float(out):
        return floats.one_minus_square(out)
    if hasattr(out, "one_minus_square"):  # code: the same once-rounded helper
        return out.one_minus_square()
    saved = 1.0 - out * out
    number = getattr(out, "_data", None)  # a Value's number, from its slot as data_of reads it
    if type(number) is float:
        saved.data = floats.one_minus_square(number)
    return saved


TANH = _unary("tanh", floats.tanh, _tanh_saved, doc="Hyperbolic tangent")
SIGMOID = _unary("sigmoid", floats.sigmoid, lambda x, out: out, LOGISTIC, doc="1 / (1 + exp(-x))")
# relu passes g where its output is > 0 (nan included) and exactly 0.0 elsewhere: relu'(0) = 0
RELU = _unary(
    "relu",
    floats.relu,
    lambda x, out: where(data_of(out) <= 0.0, MASKED, 1.0),
    doc="max(x, 0); its derivative at 0 is 0, as in PyTorch",
    code="0.0 if {0} < 0.0 else {0}",  # floats.relu, written out (relu(-0.0) = -0.0, relu(nan) = nan)
    maskable=True,
)
SIGN = _unary(
    "sign",
    floats.sign,
    lambda x, out: MASKED,
    doc="-1.0, 0.0 or 1.0 (0.0 at 0 and at nan, as torch.sign); its derivative is 0",
    maskable=True,
)
# What a masked edge hands its operand in a pass that builds a graph (create_graph): exactly 0.0,
# yet a function of the operand (with derivative 0), as PyTorch's zero from relu's backward is
MASKED_ZERO = _unary("masked_zero", lambda x: 0.0, lambda x, out: MASKED, doc="0.0, with derivative 0", maskable=True)
# A transform's own variable on top of an outer one: distinct, yet differentiable through
IDENTITY = _unary("identity", lambda x: x, lambda x, out: 1.0, doc="x itself, as a new node", code="{0}")


def _max_forward(*xs: float) -> float:
    """The largest operand; nan if any is nan (PyTorch's max). Of equal ones, the first, as
    Python's ``max``: ``max(-0.0, 0.0)`` is -0.0. PyTorch's vectorised reduction returns either
    zero of such a tie, by length and position (a known difference; the gradient is the same)."""
    best = xs[0]
    for x in xs:
        if x != x:
            return x
        if x > best:
            best = x
    return best


def _max_saved(xs: tuple[Any, ...], out: Any) -> tuple[Any, ...]:
    # PyTorch's evenly_distribute_backward: g / count to each operand equal to the maximum
    # (to each nan when the maximum is nan), exactly 0.0 to the others
    top = data_of(out)
    hits = [data_of(x) == top or (top != top and data_of(x) != data_of(x)) for x in xs]
    count = float(sum(hits))
    return tuple(count if hit else MASKED for hit in hits)


MAX = Op("max", 0, _max_forward, (_max_saved,), (DIVIDED,), "_max({0})", doc="max(xs)", maskable=True)

FUNCTIONS: tuple[Op, ...] = (EXP, LOG, LOG1P, SQRT, SIN, COS, TAN, TANH, SIGMOID, RELU)
"""The functions of the contract: each a Value method, a Vector method, a module function
(``vjpgrad.exp``) and a function of the command line."""

# x.detach() inside a function vjpgrad.compile records: the value passes, no gradient does
DETACH = _unary("detach", lambda x: x, lambda x, out: 0.0, doc="x cut from the graph", code="{0}")

BUILTIN: frozenset[Op] = frozenset(
    (
        *(ADD, SUB, MUL, DIV, POW, POW_BASE, POW_SCALAR, NEG, ABS, SIGN, MASKED_ZERO, RECIPROCAL, IDENTITY, MAX),
        *(DETACH, *FUNCTIONS),
    )
)
"""Every operation of this table (a custom operation is not one of them)."""


METHODS: tuple[Op, ...] = (RECIPROCAL, SIGN, *FUNCTIONS)
"""The operations that are methods of Value and of Vector (``x.exp()``, ``v.relu()``)."""


@dataclass(frozen=True)
class Face:
    """One way Python calls an operation on a Value: ``name`` is the method, ``op`` the row,
    and ``kind`` how the operands are taken: ``"operator"`` for ``self <op> other``,
    ``"reflected"`` for ``other <op> self`` (a number on the left), ``"method"`` for
    ``self.f()``. ``vjpgrad.codegen`` writes one function per face into ``core/operators.py``.

    ``other`` says what an operator's other operand can be, so that no branch is written that
    nothing can reach: ``"any"`` (a Value or a number: the operators Python calls), ``"value"``
    (``__pow__`` chose the row), and ``"number"`` (a number: it takes no gradient)."""

    name: str
    op: Op
    kind: str
    doc: str
    other: str = "any"


FACES: tuple[Face, ...] = (
    Face("__add__", ADD, "operator", "self + other"),
    Face("__radd__", ADD, "reflected", "other + self"),
    Face("__sub__", SUB, "operator", "self - other"),
    Face("__rsub__", SUB, "reflected", "other - self"),
    Face("__mul__", MUL, "operator", "self * other"),
    Face("__rmul__", MUL, "reflected", "other * self"),
    Face("__truediv__", DIV, "operator", "self / other"),
    Face("_pow_value", POW, "operator", "self ** other for a Value exponent: C's pow", "value"),
    Face("_pow_number", POW_SCALAR, "operator", "self ** other for a number exponent, with PyTorch's cases", "number"),
    Face("__rpow__", POW_BASE, "reflected", "other ** self, a number raised to a Value"),
    Face("__neg__", NEG, "method", "-self"),
    Face("__abs__", ABS, "method", "abs(self); its derivative at 0 (and at nan) is 0"),
    *(Face(op.name, op, "method", f"{op.doc}.") for op in METHODS),
)
"""Every operator and method of Value written from the table (``__rtruediv__`` and ``__pow__``
are written by hand in ``core/value.py``: they choose between rows, as PyTorch does)."""
