"""Your own operation: a float function plus its derivative rule, made into an operation on
Values and Vectors that takes part in everything else (backward, Vector, the transforms,
higher order), in the way HIPS autograd's ``defvjp`` and JAX's ``custom_vjp`` do."""

from __future__ import annotations

import functools
import inspect
import numbers
from collections.abc import Callable
from typing import Any

from vjpgrad._ops import BinaryOp, Scalar, UnaryOp
from vjpgrad._value import Value, _binary_operators, _unary
from vjpgrad._vector import Vector


class CustomOp:
    """An operation defined by its float function; its derivative is added with ``.derivative``.

    ::

        @vjpgrad.custom_op
        def softplus(x: float) -> float:
            return math.log1p(math.exp(-abs(x))) + max(x, 0.0)  # stable for any x

        @softplus.derivative
        def _(x, out):  # d out / d x, for floats and for Values alike
            return vjpgrad.sigmoid(x)

    A rule for one argument is ``rule(x, out) -> d out/dx``; for two arguments it is
    ``rule(x, y, out) -> (d out/dx, d out/dy)``. The rule is called with floats in the
    forward pass, and with Values when a pass builds a differentiable graph: write it with
    operators and vjpgrad's functions (``vjpgrad.exp``, not ``math.exp``) and derivatives of
    any order work. A rule written with ``math`` gives correct first derivatives only.
    """

    def __init__(self, function: Callable[..., float]) -> None:
        if not callable(function):
            raise TypeError(f"custom_op decorates a function, got {type(function).__name__}")
        parameters = [
            p
            for p in inspect.signature(function).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
        if len(parameters) not in (1, 2):
            raise TypeError(
                f"custom_op takes a function of one or two numbers; {function.__name__} takes {len(parameters)}"
            )
        self.function = function
        self.arity = len(parameters)
        self.name = function.__name__
        self._apply: Callable[..., Value] | None = None
        self._reflected: Callable[..., Value] | None = None
        functools.update_wrapper(self, function)

    def derivative(self, rule: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: set the derivative rule of this operation (see the class docstring)."""
        if not callable(rule):
            raise TypeError(f"a derivative rule must be callable, got {type(rule).__name__}")
        name, function, arity = self.name, self.function, self.arity

        def forward(*xs: float) -> float:
            return float(function(*xs))

        if arity == 1:

            def unary_rule(x: Scalar, out: Scalar) -> Scalar:
                return rule(x, out)  # type: ignore[no-any-return]

            self._apply = functools.partial(_unary, UnaryOp(name, forward, unary_rule))
        else:

            def binary_rule(x: Scalar, y: Scalar, out: Scalar) -> tuple[Scalar, Scalar]:
                result = rule(x, y, out)
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise TypeError(
                        f"the derivative rule of {name} must return a pair (d/dx, d/dy), got {type(result).__name__}"
                    )
                return result

            self._apply, self._reflected = _binary_operators(BinaryOp(name, forward, binary_rule))
        return rule

    def __call__(self, *args: Any) -> Any:
        if len(args) != self.arity:
            raise TypeError(
                f"{self.name}() takes {self.arity} argument{'s' if self.arity > 1 else ''}, got {len(args)}"
            )
        for arg in args:
            if not isinstance(arg, (Value, Vector, numbers.Real)):
                raise TypeError(f"{self.name}() takes numbers, Values or Vectors, got {type(arg).__name__}")
        if not any(isinstance(arg, (Value, Vector)) for arg in args):
            return float(self.function(*(float(a) for a in args)))
        if self._apply is None:
            raise RuntimeError(
                f"{self.name} has no derivative rule yet: define one with @{self.name}.derivative "
                "before using it on Values"
            )
        if self.arity == 1:
            (x,) = args
            return x._map(self._apply) if isinstance(x, Vector) else self._apply(x)
        x, y = args
        if isinstance(x, Vector):
            return Vector._of([self(a, b) for a, b in x._pairs(y) or []])
        if isinstance(y, Vector):
            return Vector._of([self(a, b) for b, a in y._pairs(x) or []])
        if isinstance(x, Value):
            return self._apply(x, y)
        return self._reflected(y, x)  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"<vjpgrad custom_op {self.name}>"


def custom_op(function: Callable[..., float]) -> CustomOp:
    """Decorator: make a float function of one or two numbers into a differentiable operation.

    Attach its derivative rule with ``@f.derivative``; see ``CustomOp``.
    """
    return CustomOp(function)
