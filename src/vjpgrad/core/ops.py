"""The table of operations: each one's float forward and its backward formula, side by side.

This module is the only place that knows the engine's calculus (the PyTorch bridge keeps
PyTorch's formulas for the operations it replays). Every other face of an operation is
generated from its row here: the ``Value`` operator or method and the ``Vector`` method
(written into ``core/operators.py`` by ``python -m vjpgrad.codegen --write``), the module
function (``vjpgrad.exp``, written into ``core/functions.py`` the same way), the command
line's whitelist, the lines of code ``vjpgrad.compile`` writes and ``vjpgrad.vmap``'s array code.
Adding a function is its row here and the other steps of CONTRIBUTING.md's recipe: its float
function in ``floats`` where Python has none with PyTorch's edges, its test cases, its array
forward, the generator, and the pages that name the functions.

How a backward formula is written
---------------------------------
Each operand of an operation is an *edge* with two parts, as in PyTorch's
``tools/autograd/derivatives.yaml``:

- ``saved(x, y, out)``: what the backward pass keeps from the forward pass (the saved
  tensors of PyTorch's autograd), computed once when the node is made: one number, or a
  tuple of as many as the gradient needs (atan2's ``other`` and ``recip``);
- its *gradient*: one expression over the incoming gradient ``g`` and those numbers, written
  as derivatives.yaml writes it and in the same order of operations, so that the two round
  alike, bit for bit: ``x / y`` hands ``g / y`` to ``x``, not ``g * (1 / y)``; ``atan2(y, x)``
  hands ``(g * x) * recip`` to ``y``, not ``g * (x * recip)``. Most edges are ``g * s``
  (``times``), which the reverse pass multiplies inline.

A saved value may be ``MASKED``: the contribution is then exactly ``0.0`` whatever ``g`` is,
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

from vjpgrad.core import floats, powers
from vjpgrad.core.modes import raised_for_a_number, refuse_number, state


class _Masked:
    """The saved value of an edge whose contribution is exactly 0.0 (PyTorch's masks)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MASKED"


MASKED: Final = _Masked()

# ---- helpers that take floats, Values or code, and answer in kind -------------------------------
# A float goes through ``floats`` (IEEE results, never a Python exception); anything else
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
        return powers.power_scalar(x, k)
    if hasattr(x, "pow_scalar"):  # code: PyTorch's special cases, whatever k's form
        return x.pow_scalar(k)
    return x**k


def reciprocal(x: Any) -> Any:
    return floats.reciprocal(x) if is_float(x) else x.reciprocal()


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


# ---- the gradient of an edge, as PyTorch's derivatives.yaml writes it ---------------------------
# Each edge's gradient is one expression over ``g`` (the incoming gradient) and what the forward
# pass saved for that edge, in derivatives.yaml's order of operations, so that the bits match.


def times(g: Any, s: Any) -> Any:
    """``g * s``: the gradient of most edges, the reverse pass multiplies it inline."""
    return g * s


def divided(g: Any, s: Any) -> Any:
    """``g / s``: PyTorch divides where its formula divides (``x / y`` hands ``g / y`` to ``x``)."""
    return div(g, s)


def contribution(gradient: Callable[..., Any], g: Any, saved: Any) -> Any:
    """What an edge hands its operand: its ``gradient`` of ``g`` and the numbers it saved (a tuple
    when it saved several), or exactly 0.0 for a masked edge."""
    if saved is MASKED:
        return 0.0
    if type(saved) is tuple:
        return gradient(g, *saved)
    return gradient(g, saved)


def local_derivative(gradient: Callable[..., Any], saved: Any) -> Any:
    """The local derivative an edge stands for: its gradient of ``g = 1`` (``1 / s`` for ``g / s``;
    0.0 for a masked edge). What ``explain`` and forward mode show."""
    if gradient is times and saved is not MASKED:
        return saved  # 1.0 * s is s: a Value stays the Value, with no node for the product
    return contribution(gradient, 1.0, saved)


def saved_count(gradient: Callable[..., Any]) -> int:
    """How many saved numbers a gradient takes (its parameters after ``g``)."""
    return int(gradient.__code__.co_argcount) - 1


# ---- the rows of the table ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class Op:
    """One operation: its float ``forward`` and, per operand, a saved rule and a gradient.

    ``saved`` rules take the operands and the result, ``(x, y, out)`` for two operands and
    ``(x, out)`` for one, and return what the backward pass needs from the forward pass: one
    number, or a tuple of as many as the gradient takes. ``gradients`` are one expression per
    operand over ``g`` and those numbers, as derivatives.yaml writes it (``lambda g, s: g * s``
    is ``times``). An operation of any number of operands (``max``, arity 0) has one saved rule
    ``(xs, out)`` that returns one saved number per operand, and one gradient for them all.
    ``code`` is the forward as a line of Python (``{0}``, ``{1}`` the operands). ``plain`` (every
    gradient ``times``, nothing masked) lets the reverse pass multiply inline.
    """

    name: str
    arity: int  # 1, 2, or 0 for any number of operands
    forward: Callable[..., float]
    saved: tuple[Callable[..., Any], ...]
    gradients: tuple[Callable[..., Any], ...]
    code: str
    doc: str = ""
    symbol: str = ""  # the operator as written (+, *, **), "" for a function
    operand_names: tuple[str, ...] = ()  # a function's parameters as PyTorch names them: atan2(input, other)
    plain: bool = field(default=False)
    maskable: bool = field(default=False)
    # A masked edge decided by a number the recording is keyed by (``x ** k``'s exponent, which
    # compile and vmap take as structure), not by a Value's: a create_graph pass through it is
    # recorded where another masked row's is refused (``graph.edges``)
    masked_by_structure: bool = field(default=False)
    # An operation that runs its own backward (a compiled function): called as
    # ``backward(node, g)`` in place of the edges' gradients
    backward: Callable[[Any, Any], None] | None = None
    # What a pass that frees the graph does to a node of this operation: None drops what the node
    # saved (every row of the table); a function is called with the node instead (a compiled call)
    release: Callable[[Any], None] | None = None
    # An operation that runs its own backward may also run a whole pass by itself: when a node of
    # it is the one output of ``backward()``, ``whole_pass(node, seed, retain_graph)`` either runs
    # the pass (every ``.grad`` the table's pass would change, changed to the same bits) and
    # returns True, or changes nothing and returns False, and the table's pass runs
    whole_pass: Callable[[Any, Any, bool], bool] | None = None
    nary: bool = field(default=False)  # of any number of operands (arity 0): read per node, so a field
    saves: tuple[int, ...] = field(default=())  # how many numbers each edge saves (its gradient's parameters)

    def __post_init__(self) -> None:
        plain = not self.maskable and self.backward is None and all(rule is times for rule in self.gradients)
        object.__setattr__(self, "plain", plain)
        object.__setattr__(self, "nary", self.arity == 0)
        object.__setattr__(self, "saves", tuple(saved_count(rule) for rule in self.gradients))
        if not self.operand_names and self.arity:
            object.__setattr__(self, "operand_names", ("x", "y")[: self.arity])

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
    gradients: tuple[Callable[..., Any], Callable[..., Any]] = (times, times),
    *,
    doc: str = "",
    operand_names: tuple[str, str] = ("x", "y"),
    maskable: bool = False,
    masked_by_structure: bool = False,
) -> Op:
    return Op(
        name,
        2,
        forward,
        (saved_x, saved_y),
        gradients,
        code,
        doc=doc,
        symbol=symbol,
        operand_names=operand_names,
        maskable=maskable,
        masked_by_structure=masked_by_structure,
    )


def _unary(
    name: str,
    forward: Callable[[float], float],
    saved: Callable[[Any, Any], Any],
    gradient: Callable[..., Any] = times,
    *,
    doc: str,
    code: str | None = None,
    maskable: bool = False,
) -> Op:
    return Op(name, 1, forward, (saved,), (gradient,), code or f"_{name}({{0}})", doc=doc, maskable=maskable)


# Binary operations. ``x`` and ``y`` are the operands; a number operand (the 3 of 3 * x)
# is a constant with no edge of its own.
ADD = _binary("add", "+", lambda x, y: x + y, "{0} + {1}", lambda x, y, out: 1.0, lambda x, y, out: 1.0)
# PyTorch: other's gradient is -g; g * -1.0 is the same number, nan and zeros included
SUB = _binary("sub", "-", lambda x, y: x - y, "{0} - {1}", lambda x, y, out: 1.0, lambda x, y, out: -1.0)
MUL = _binary("mul", "*", lambda x, y: x * y, "{0} * {1}", lambda x, y, out: y, lambda x, y, out: x)
# PyTorch: g / y for x, and -g * ((x / y) / y) for y (x / y recomputed is out)
DIV = _binary(
    "div", "/", floats.div, "_div({0}, {1})", lambda x, y, out: y, lambda x, y, out: -div(out, y), (divided, times)
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
    powers.power_scalar,
    "_pow_scalar({0}, {1})",
    lambda x, k, out: where(k == 0.0, MASKED, k * power_scalar(x, k - 1.0)),
    lambda x, k, out: 0.0,
    maskable=True,
    masked_by_structure=True,  # k is a number: structure to compile and vmap
)


def _atan2_recip(y: Any, x: Any) -> Any:
    """``recip`` of PyTorch's atan2_backward: ``(self * self + other * other).reciprocal()``, with
    0 where that sum is 0, so that the gradient at the origin is 0 (nan for an infinite ``g``)."""
    denominator = y * y + x * x
    return where(data_of(denominator) == 0.0, 0.0, reciprocal(denominator))


# Functions of two operands, named as torch names them. atan2's rule is PyTorch's atan2_backward:
# self: grad * other * recip; other: grad * -self * recip (C++ evaluates left to right:
# (grad * other) * recip)
ATAN2 = _binary(
    "atan2",
    "",
    floats.atan2,
    "_atan2({0}, {1})",
    lambda y, x, out: (x, _atan2_recip(y, x)),
    lambda y, x, out: (y, _atan2_recip(y, x)),
    (lambda g, other, recip: (g * other) * recip, lambda g, self, recip: (g * -self) * recip),
    doc="the angle of the point (other, input) in radians, in [-pi, pi], as C's atan2",
    operand_names=("input", "other"),
)
# derivatives.yaml: self: grad * self / result; other: grad * other / result
HYPOT = _binary(
    "hypot",
    "",
    floats.hypot,
    "_hypot({0}, {1})",
    lambda x, y, out: (x, out),
    lambda x, y, out: (y, out),
    (lambda g, self, result: div(g * self, result), lambda g, other, result: div(g * other, result)),
    doc="sqrt(input ** 2 + other ** 2) without overflow, as C's hypot",
    operand_names=("input", "other"),
)

# Unary operations: the functions of the contract, and the operators' helpers.
NEG = _unary("neg", lambda x: -x, lambda x, out: -1.0, doc="-x", code="-{0}")
ABS = _unary("abs", abs, lambda x, out: sign(x), doc="abs(x); its derivative at 0 (and nan) is 0", code="abs({0})")
RECIPROCAL = _unary("reciprocal", floats.reciprocal, lambda x, out: -(out * out), doc="1 / x")
EXP = _unary("exp", floats.exp, lambda x, out: out, doc="e ** x; its derivative is its output")
LOG = _unary(
    "log", floats.log, lambda x, out: x, divided, doc="Natural logarithm: log(0) = -inf, log(x < 0) = nan; d/dx = 1/x"
)
# PyTorch's log1p_backward: g / (x + 1)
LOG1P = _unary(
    "log1p",
    floats.log1p,
    lambda x, out: x + 1.0,
    divided,
    doc="log(1 + x), exact near 0: log1p(-1) = -inf, below nan; d/dx = 1/(1 + x)",
)
SQRT = _unary(
    "sqrt",
    floats.sqrt,
    lambda x, out: 2.0 * out,
    divided,
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
        if state.recording is not None:  # the once-rounded number is no operation a replay could run
            refuse_number(
                "a gradient with create_graph through tanh (its rule rounds 1 - out * out once, as PyTorch's kernel "
                "does, which a recording cannot replay)",
                "take the gradient outside the function: vmap(grad(f)) over a batch, or grad(f) called uncompiled",
            )
        saved.data = floats.one_minus_square(number)
    return saved


TANH = _unary("tanh", floats.tanh, _tanh_saved, doc="Hyperbolic tangent")
# PyTorch's sigmoid_backward: (g * (1 - out)) * out
SIGMOID = _unary(
    "sigmoid", floats.sigmoid, lambda x, out: out, lambda g, out: (g * (1.0 - out)) * out, doc="1 / (1 + exp(-x))"
)
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


MAX = Op("max", 0, _max_forward, (_max_saved,), (divided,), "_max({0})", doc="max(xs)", maskable=True)


def take_position(index: float, count: int) -> int:
    """The position an index picks among ``count`` elements: ``index`` must be a whole number in
    ``range(count)`` (a Value's number, so a float: 3.0 picks the fourth). Raises IndexError,
    naming the index and the count, for any other (a fraction, nan, an infinity, out of range)."""
    if index == index and abs(index) != float("inf"):  # nan and infinities are no position
        k = int(index)
        if k == index and 0 <= k < count:
            return k
    error = IndexError(f"index {index!r} is not a whole number in range({count})")
    raised_for_a_number(error, "an index")
    raise error


def _take_forward(index: float, *xs: float) -> float:
    """The element ``index`` picks: ``xs[index]``, the index checked (``take_position``)."""
    return xs[take_position(index, len(xs))]


TAKE_SAVED: Final = 0.0
"""What the element a ``take`` picks saves: PyTorch's dense zero (``embedding_dense_backward``'s
``index_add_``) that its gradient is added into. Compiled and array code write this number."""


def _take_saved(xs: tuple[Any, ...], out: Any) -> tuple[Any, ...]:
    # PyTorch's embedding_dense_backward: a gradient of zeros for every row, the picked row's
    # gradient added into its zero, and every other element handed an exact 0.0; the index takes none
    at = take_position(data_of(xs[0]), len(xs) - 1) + 1
    return tuple(TAKE_SAVED if k == at else MASKED for k in range(len(xs)))


def added(g: Any, s: Any) -> Any:
    """``s + g``: the gradient added into the number saved (``take``'s picked element: into
    PyTorch's dense zero, so that a -0.0 arrives as 0.0, as ``index_add_`` gives it)."""
    return s + g


TAKE = Op("take", 0, _take_forward, (_take_saved,), (added,), "_take({0})", doc="xs[index]", maskable=True)

FUNCTIONS: tuple[Op, ...] = (EXP, LOG, LOG1P, SQRT, SIN, COS, TAN, TANH, SIGMOID, RELU, ATAN2, HYPOT)
"""The functions of the contract: each a Value method, a Vector method, a module function
(``vjpgrad.exp``, ``vjpgrad.atan2``) and a function of the command line, taking as many operands
as its row's arity."""

# x.detach() inside a function vjpgrad.compile records: the value passes, no gradient does
DETACH = _unary("detach", lambda x: x, lambda x, out: 0.0, doc="x cut from the graph", code="{0}")

BUILTIN: frozenset[Op] = frozenset(
    (
        *(ADD, SUB, MUL, DIV, POW, POW_BASE, POW_SCALAR, NEG, ABS, SIGN, MASKED_ZERO, RECIPROCAL, IDENTITY, MAX, TAKE),
        *(DETACH, *FUNCTIONS),
    )
)
"""Every operation of this table (a custom operation is not one of them)."""


METHODS: tuple[Op, ...] = (RECIPROCAL, SIGN, *FUNCTIONS)
"""The operations that are methods of Value and of Vector (``x.exp()``, ``v.relu()``)."""


BINARY_METHODS: tuple[Op, ...] = tuple(op for op in METHODS if op.arity == 2)
"""The methods of two operands (``x.atan2(other)``)."""


def reflected_name(op: Op) -> str:
    """The Value method that computes a function of two operands with a number first
    (``vjpgrad.atan2(1.0, x)`` calls ``x._reflected_atan2(1.0)``), as ``__rmul__`` does ``*``."""
    return f"_reflected_{op.name}"


@dataclass(frozen=True)
class Face:
    """One way Python calls an operation on a Value: ``name`` is the method, ``op`` the row,
    and ``kind`` how the operands are taken: ``"operator"`` for ``self <op> other``,
    ``"reflected"`` for ``other <op> self`` (a number on the left), ``"method"`` for
    ``self.f()``; a function of two operands is an ``"operator"`` (``self.atan2(other)``) and a
    ``"reflected"`` face (``reflected_name``). ``vjpgrad.codegen`` writes one function per face
    into ``core/operators.py``.

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
    *(Face(op.name, op, "method", f"{op.doc}.") for op in METHODS if op.arity == 1),
    *(Face(op.name, op, "operator", f"{op.name}(self, other): {op.doc}.") for op in BINARY_METHODS),
    *(Face(reflected_name(op), op, "reflected", f"{op.name}(other, self), other a number") for op in BINARY_METHODS),
)
"""Every operator and method of Value written from the table (``__rtruediv__`` and ``__pow__``
are written by hand in ``core/value.py``: they choose between rows, as PyTorch does)."""
