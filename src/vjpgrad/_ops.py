"""Every primitive operation: its float forward and its local derivative, side by side.

A derivative rule is written once and serves twice. In the forward pass it is called with
floats, and the numbers it returns are stored on the new node: the backward pass then
multiplies by them and never calls a rule (that is what makes a node cheap; see
``PERF-NOTES``). When a pass builds a differentiable graph (``create_graph=True``) the same
rule is called with the operand Values, so its result is itself differentiable and
derivatives of any order follow. The helpers below (``_log``, ``_reciprocal``...) take a
float or a Value and answer in kind, which is what lets one rule serve both.

The formulas are PyTorch's, conventions at the edges included (``abs'(0) = 0``,
``relu'(0) = 0``, ``d/db a**b = 0`` where ``a = 0 <= b``), so the two agree value for value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from vjpgrad import _floats

if TYPE_CHECKING:
    from vjpgrad._value import Value

Scalar = Union[float, "Value"]
"""A float or a Value: what a derivative rule receives and returns."""


@dataclass(frozen=True, slots=True)
class UnaryOp:
    """A function of one operand: ``forward(x)`` and ``derivative(x, out) = d out / d x``."""

    name: str
    forward: Callable[[float], float]
    derivative: Callable[[Scalar, Scalar], Scalar]


@dataclass(frozen=True, slots=True)
class BinaryOp:
    """A function of two operands: ``forward(x, y)`` and
    ``derivative(x, y, out) = (d out / d x, d out / d y)``."""

    name: str
    forward: Callable[[float, float], float]
    derivative: Callable[[Scalar, Scalar, Scalar], tuple[Scalar, Scalar]]


def data_of(x: Scalar) -> float:
    """The float behind a float or a Value (for the conditions of masked derivatives)."""
    return x if isinstance(x, float) else x.data


def _reciprocal(x: Scalar) -> Scalar:
    return _floats.reciprocal(x) if isinstance(x, float) else x.reciprocal()


def _divide(x: Scalar, y: Scalar) -> Scalar:
    if isinstance(x, float) and isinstance(y, float):
        return _floats.div(x, y)
    return x / y


def _power(x: Scalar, y: Scalar) -> Scalar:
    if isinstance(x, float) and isinstance(y, float):
        return _floats.power(x, y)
    return x**y


def _power_scalar(x: Scalar, k: float) -> Scalar:
    return _floats.power_scalar(x, k) if isinstance(x, float) else x**k


def _log(x: Scalar) -> Scalar:
    return _floats.log(x) if isinstance(x, float) else x.log()


def _sin(x: Scalar) -> Scalar:
    return _floats.sin(x) if isinstance(x, float) else x.sin()


def _cos(x: Scalar) -> Scalar:
    return _floats.cos(x) if isinstance(x, float) else x.cos()


# ---- binary operations -------------------------------------------------------------------


def _pow_derivative(x: Scalar, y: Scalar, out: Scalar) -> tuple[Scalar, Scalar]:
    # d/dx x**y = y * x**(y-1), taken as 0 where y == 0 (PyTorch's mask: no 0 * inf = nan)
    dx = 0.0 if data_of(y) == 0.0 else y * _power(x, y - 1.0)
    # d/dy x**y = x**y * log(x), taken as 0 where x == 0 <= y (log(0) = -inf would give nan)
    dy = 0.0 if data_of(x) == 0.0 and data_of(y) >= 0.0 else out * _log(x)
    return dx, dy


def _pow_scalar_derivative(x: Scalar, k: Scalar, out: Scalar) -> tuple[Scalar, Scalar]:
    # d/dx x**k = k * x**(k-1) for a constant k, 0 where k == 0; the constant gets none
    k = data_of(k)
    return (0.0 if k == 0.0 else k * _power_scalar(x, k - 1.0)), 0.0


ADD = BinaryOp("+", lambda x, y: x + y, lambda x, y, out: (1.0, 1.0))
SUB = BinaryOp("-", lambda x, y: x - y, lambda x, y, out: (1.0, -1.0))
MUL = BinaryOp("*", lambda x, y: x * y, lambda x, y, out: (y, x))
# d/dx x/y = 1/y and d/dy x/y = -(x/y)/y, PyTorch's form of -x/y**2
DIV = BinaryOp("/", _floats.div, lambda x, y, out: (_reciprocal(y), -_divide(out, y)))
# x ** y with y a Value (and number ** Value): C's pow, as PyTorch's tensor-tensor kernel
POW = BinaryOp("**", _floats.power, _pow_derivative)
# x ** k with k a number: PyTorch's special cases (x**0.5 is sqrt(x), x**2 is x*x, ...)
POW_SCALAR = BinaryOp("**", _floats.power_scalar, _pow_scalar_derivative)

# ---- unary operations --------------------------------------------------------------------

NEG = UnaryOp("neg", lambda x: -x, lambda x, out: -1.0)
# A transform's own variable on top of an outer one: distinct, yet differentiable through
IDENTITY = UnaryOp("identity", lambda x: x, lambda x, out: 1.0)
ABS = UnaryOp("abs", abs, lambda x, out: _floats.sign(data_of(x)))
RECIPROCAL = UnaryOp("reciprocal", _floats.reciprocal, lambda x, out: -(out * out))
EXP = UnaryOp("exp", _floats.exp, lambda x, out: out)
LOG = UnaryOp("log", _floats.log, lambda x, out: _reciprocal(x))
SQRT = UnaryOp("sqrt", _floats.sqrt, lambda x, out: _reciprocal(2.0 * out))
SIN = UnaryOp("sin", _floats.sin, lambda x, out: _cos(x))
COS = UnaryOp("cos", _floats.cos, lambda x, out: -_sin(x))
TAN = UnaryOp("tan", _floats.tan, lambda x, out: 1.0 + out * out)
TANH = UnaryOp("tanh", _floats.tanh, lambda x, out: 1.0 - out * out)
SIGMOID = UnaryOp("sigmoid", _floats.sigmoid, lambda x, out: out * (1.0 - out))
# relu' is 0 where the output is <= 0 (so relu'(0) = 0) and 1 elsewhere, nan included
RELU = UnaryOp("relu", _floats.relu, lambda x, out: 0.0 if data_of(out) <= 0.0 else 1.0)

FUNCTIONS: tuple[UnaryOp, ...] = (EXP, LOG, SQRT, SIN, COS, TAN, TANH, SIGMOID, RELU)
"""The functions of the contract, each a Value method and a module function."""
