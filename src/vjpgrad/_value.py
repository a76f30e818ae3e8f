"""``Value``: a scalar that records how it was computed, so gradients can flow back to it.

Each operation makes a node holding its result, its operands and the local derivative of
the result with respect to each operand (``_ops`` holds the forward and derivative rules).
A node is one object with fixed slots: two operands, two local derivatives. There is no
closure per node, no set of children, and no reference from a node to itself, so a graph
has no reference cycles and is freed by reference counting the moment it is dropped.
That layout measured fastest by far (``PERF-NOTES.md``: the cyclic garbage collector is
most of micrograd's time).
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Callable
from typing import Union

from vjpgrad import _ops
from vjpgrad._mode import state, switched
from vjpgrad._ops import BinaryOp, UnaryOp

Operand = Union["Value", float]
"""What arithmetic accepts beside a Value: a Value, an int or a float."""

_new = object.__new__


def _node(
    data: float,
    op: UnaryOp | BinaryOp,
    a: Operand,
    da: float | None,
    b: Operand | None,
    db: float | None,
) -> Value:
    """The result of an operation: a graph node when an operand takes gradient and grad mode
    is on, otherwise a constant leaf (as PyTorch gives a result no ``grad_fn``)."""
    node = _new(Value)
    node.data = data
    node.grad = 0.0
    node.label = None
    node._seen = None
    switches_on = switched[0]
    if (da is None and db is None) or (switches_on and not state.grad_enabled):
        node.requires_grad = False
        node._op = node._a = node._b = node._da = node._db = None
        return node
    node.requires_grad = True
    node._op = op
    node._a = a
    node._b = b
    node._da = da
    node._db = db
    if switches_on and state.detect_anomaly:
        node._origin = _caller_location()
    return node


def _caller_location() -> str:
    """``file:line`` of the first frame outside vjpgrad: where the user made this node."""
    frame = sys._getframe(1)
    package = __file__.rsplit("/", 1)[0].rsplit("\\", 1)[0]
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _unary(op: UnaryOp, x: Value) -> Value:
    """Apply a one-operand operation to a Value."""
    data = x.data
    out = op.forward(data)
    # A rule called with floats answers floats (see _ops); mypy sees its float-or-Value type.
    local = op.derivative(data, out) if x.requires_grad else None
    return _node(out, op, x, local, None, None)  # type: ignore[arg-type]


_Operator = Callable[["Value", Operand], "Value"]
_Reflected = Callable[["Value", float], "Value"]


def _binary_operators(op: BinaryOp) -> tuple[_Operator, _Reflected]:
    """``self <op> other`` and its reflected form ``other <op> self``, from one definition.

    Numbers are operands, not nodes: the ``3`` of ``3 * x`` is kept as a float constant.
    Any other operand type returns ``NotImplemented`` so Python raises its usual TypeError.
    """
    forward, derivative = op.forward, op.derivative

    def operator(self: Value, other: Operand) -> Value:
        if isinstance(other, Value):
            y = other.data
            other_takes_grad = other.requires_grad
        elif isinstance(other, (int, float)):
            y = other = float(other)
            other_takes_grad = False
        else:
            return NotImplemented
        x = self.data
        out = forward(x, y)
        dx, dy = derivative(x, y, out)  # a rule called with floats answers floats
        da = dx if self.requires_grad else None
        db = dy if other_takes_grad else None
        return _node(out, op, self, da, other, db)  # type: ignore[arg-type]

    def reflected(self: Value, other: float) -> Value:
        if not isinstance(other, (int, float)):
            return NotImplemented
        x = float(other)
        y = self.data
        out = forward(x, y)
        dy = derivative(x, y, out)[1] if self.requires_grad else None
        return _node(out, op, x, None, self, dy)  # type: ignore[arg-type]  # floats in, floats out

    operator.__doc__ = f"self {op.name} other"
    reflected.__doc__ = f"other {op.name} self"
    return operator, reflected


_add, _reflected_add = _binary_operators(_ops.ADD)
_subtract, _reflected_subtract = _binary_operators(_ops.SUB)
_multiply, _reflected_multiply = _binary_operators(_ops.MUL)
_divide, _ = _binary_operators(_ops.DIV)
_power, _reflected_power = _binary_operators(_ops.POW)
_power_scalar, _ = _binary_operators(_ops.POW_SCALAR)


class Value:
    """A scalar in a computation graph.

    ``Value(data, requires_grad=True, label=None)``: ``data`` is any real number, stored as
    a float. Arithmetic and the functions below build new Values that remember their
    operands; ``backward()`` then fills ``.grad`` of every Value that requires grad with
    the derivative of the output with respect to it.

    ``.grad`` accumulates, as in PyTorch: each ``backward`` call adds this pass's gradients
    to what is there. Call ``zero_grad()`` between passes when you want fresh ones.
    """

    __slots__ = (
        "_a",
        "_b",
        "_cotangent",
        "_da",
        "_db",
        "_op",
        "_origin",
        "_seen",
        "data",
        "grad",
        "label",
        "requires_grad",
    )

    data: float
    grad: float
    requires_grad: bool
    label: str | None
    # How this node was made: the operation, its operands (a Value, or the float constant
    # of `3 * x`), and the local derivative with respect to each operand that takes
    # gradient (None for one that does not). A leaf has no operation. A node whose pass
    # freed the graph keeps its operation and operands but has both derivatives None.
    _op: UnaryOp | BinaryOp | None
    _a: Value | float | None
    _b: Value | float | None
    _da: float | None
    _db: float | None
    _origin: str  # "file:line" where the node was made; set only under detect_anomaly
    # Scratch of the reverse pass running now (see _backward): the token of the last pass
    # that reached this node, and this pass's gradient here.
    _seen: object
    _cotangent: float

    def __init__(
        self,
        data: float | numbers.Real,
        requires_grad: bool = True,
        label: str | None = None,
    ) -> None:
        if isinstance(data, Value) or not isinstance(data, numbers.Real):
            raise TypeError(
                "Value() takes a real number (int, float, bool, Fraction, a NumPy scalar), "
                f"got {type(data).__name__}"
                + (": use the Value itself, or .detach() for a constant copy" if isinstance(data, Value) else "")
            )
        if not isinstance(requires_grad, bool):
            raise TypeError(f"Value() requires_grad must be a bool, got {type(requires_grad).__name__}")
        if label is not None and not isinstance(label, str):
            raise TypeError(f"Value() label must be a str or None, got {type(label).__name__}")
        self.data = float(data)
        self.grad = 0.0
        self.requires_grad = requires_grad
        self.label = label
        self._op = self._a = self._b = self._da = self._db = self._seen = None

    # ---- what it is ---------------------------------------------------------------------

    @property
    def op(self) -> str:
        """Name of the operation that made this Value (``"*"``, ``"log"``...), ``""`` for a leaf."""
        return "" if self._op is None else self._op.name

    @property
    def parents(self) -> tuple[Value, ...]:
        """The Values this one was computed from (number constants are not Values)."""
        return tuple(x for x in (self._a, self._b) if isinstance(x, Value))

    @property
    def is_leaf(self) -> bool:
        """True for a Value made by the user (or a constant), False for an operation's result."""
        return self._op is None

    def __repr__(self) -> str:
        label = "" if self.label is None else f", label={self.label!r}"
        grad = "" if self.requires_grad else ", requires_grad=False"
        return f"Value(data={self.data!r}, grad={self.grad!r}{grad}{label})"

    def __float__(self) -> float:
        return self.data

    def item(self) -> float:
        """The data as a Python float, as ``tensor.item()``."""
        return self.data

    def detach(self) -> Value:
        """A new leaf with the same data that requires no grad: a constant cut from the graph."""
        return Value(self.data, requires_grad=False, label=self.label)

    def zero_grad(self) -> None:
        """Set ``.grad`` to 0.0."""
        self.grad = 0.0

    def backward(self, grad: float | numbers.Real = 1.0, *, retain_graph: bool = False) -> None:
        """Add d(self)/dx times ``grad`` into ``x.grad`` for every x this Value depends on.

        ``grad`` is the seed: the gradient of some final quantity with respect to this
        Value (1.0 when this Value is that quantity). The pass adds its gradients to
        ``.grad`` of every node that requires grad, leaves and intermediates alike, so two
        calls give exactly twice one call. Without ``retain_graph=True`` the pass frees the
        local derivatives it used, and a later pass through them raises ``RuntimeError``.
        """
        from vjpgrad._backward import backward

        backward([self], [grad], retain_graph=retain_graph)

    # ---- arithmetic ---------------------------------------------------------------------
    # Each operator and its reflected twin come from one function, so they cannot drift.

    __add__: _Operator = _add
    __radd__: _Reflected = _reflected_add
    __sub__: _Operator = _subtract
    __rsub__: _Reflected = _reflected_subtract
    __mul__: _Operator = _multiply
    __rmul__: _Reflected = _reflected_multiply
    __rpow__: _Reflected = _reflected_power

    def __neg__(self) -> Value:
        """-self"""
        return _unary(_ops.NEG, self)

    def __abs__(self) -> Value:
        """abs(self)"""
        return _unary(_ops.ABS, self)

    def __pos__(self) -> Value:
        """+self, which is self, as in PyTorch"""
        return self

    def __pow__(self, other: Operand) -> Value:
        """self ** other"""
        if isinstance(other, (int, float)):
            return _power_scalar(self, other)
        return _power(self, other)

    def __truediv__(self, other: Operand) -> Value:
        """self / other"""
        return _divide(self, other)

    def __rtruediv__(self, other: float) -> Value:
        """other / self, computed as other * (1 / self) like PyTorch (same rounding, same edges)"""
        if not isinstance(other, (int, float)):
            return NotImplemented
        return self.reciprocal() * other

    def reciprocal(self) -> Value:
        """1 / self"""
        return _unary(_ops.RECIPROCAL, self)

    def exp(self) -> Value:
        """e ** self"""
        return _unary(_ops.EXP, self)

    def log(self) -> Value:
        """Natural logarithm: log(0) = -inf, log(x < 0) = nan; its derivative is 1/x."""
        return _unary(_ops.LOG, self)

    def sqrt(self) -> Value:
        """Square root: sqrt(x < 0) = nan; its derivative at 0 is inf."""
        return _unary(_ops.SQRT, self)

    def sin(self) -> Value:
        """Sine."""
        return _unary(_ops.SIN, self)

    def cos(self) -> Value:
        """Cosine."""
        return _unary(_ops.COS, self)

    def tan(self) -> Value:
        """Tangent."""
        return _unary(_ops.TAN, self)

    def tanh(self) -> Value:
        """Hyperbolic tangent."""
        return _unary(_ops.TANH, self)

    def sigmoid(self) -> Value:
        """1 / (1 + exp(-self))."""
        return _unary(_ops.SIGMOID, self)

    def relu(self) -> Value:
        """max(self, 0); its derivative at 0 is 0, as in PyTorch."""
        return _unary(_ops.RELU, self)
