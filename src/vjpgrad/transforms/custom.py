"""Your own operation: a float function plus its derivative rule, made into an operation on
Values and Vectors that takes part in everything else (backward, Vector, the transforms,
higher order), in the way HIPS autograd's ``defvjp`` and JAX's ``custom_vjp`` do."""

from __future__ import annotations

import functools
import inspect
import numbers
from collections.abc import Callable
from typing import Any

from vjpgrad.core import graph
from vjpgrad.core.floats import as_number
from vjpgrad.core.modes import raised_for_a_number, refusing_numbers
from vjpgrad.core.ops import Op, times
from vjpgrad.core.value import Value, binary_operators, unary
from vjpgrad.core.vector import Vector, pairs, wrap


def _checked_rule(name: str, rule: Callable[..., Any], arity: int) -> Callable[..., Any]:
    """``rule`` called safely: with floats it must answer numbers (a missing ``return`` is
    named), and a Python ZeroDivisionError or OverflowError is answered again with constant
    Values, whose arithmetic gives IEEE's inf and nan; with Values (a higher derivative) a
    ``math`` function on them is refused with the fix, instead of silently cutting the graph."""

    def call(*args: Any) -> Any:
        if all(type(a) is float for a in args):
            try:
                result = rule(*args)
            except (ZeroDivisionError, OverflowError):
                constants = [Value(a, requires_grad=False) for a in args]
                result = rule(*constants)
                result = tuple(_number(r) for r in result) if isinstance(result, tuple) else _number(result)
            _check_result(name, result, arity)
            # a Value the rule answers (one it closes over) is its number at this call, read
            # without float(), which vjpgrad.compile refuses while it records
            if isinstance(result, tuple):
                return tuple(float(_number(r)) for r in result)
            return float(_number(result))
        message = (
            f"the derivative rule of {name} is called with Values (for a higher derivative, or to build "
            "a differentiable gradient) and turned one into a number: write it with vjpgrad's functions "
            "and operators (vjpgrad.sin(x), not math.sin(x)) so that its result stays on the graph"
        )
        with refusing_numbers(message, TypeError, branches=True):  # a rule by pieces is fine
            result = rule(*args)
        _check_result(name, result, arity)
        return result

    return call


def _number(x: Any) -> Any:
    """A rule's answer as a number (its data, for a Value), without float(): inside
    vjpgrad.compile's recording, float() of a Value is refused."""
    return graph.number(x) if isinstance(x, Value) else x


def _function_result(name: str, result: Any) -> float:
    """What the operation's function returned, as a float, as ``float()`` reads it (a NumPy or
    PyTorch number, a 0-d array, a ``Decimal``; a Value by ``float()``, which compile refuses while it
    records); ``None`` and text are refused, naming the operation (``float("1.5")`` would parse it)."""
    if result is None:
        raise TypeError(f"the function of {name} returned None: did it forget to return its result?")
    complex_number = isinstance(result, numbers.Complex) and not isinstance(result, numbers.Real)
    if complex_number or isinstance(result, (str, bytes, bytearray, memoryview)):  # float() would parse or cut it
        raise TypeError(f"the function of {name} must return a real number, got {type(result).__name__}")
    try:
        return float(result)
    except (TypeError, ValueError):
        raise TypeError(f"the function of {name} must return a real number, got {type(result).__name__}") from None


def _check_result(name: str, result: Any, arity: int) -> None:
    parts = result if arity == 2 and isinstance(result, tuple) else (result,)
    if arity == 2 and not (isinstance(result, tuple) and len(result) == 2):
        raise TypeError(f"the derivative rule of {name} must return a pair (d/dx, d/dy), got {type(result).__name__}")
    for part in parts:
        if part is None:
            raise TypeError(f"the derivative rule of {name} returned None: did it forget to return its result?")
        if not isinstance(part, Value) and as_number(part) is None:
            raise TypeError(f"the derivative rule of {name} must return numbers or Values, got {type(part).__name__}")


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
    any order work. A rule written with ``math`` gives correct first derivatives only. A rule
    may branch on its input (``if x > 0:``), as a PyTorch backward may: each piece's own
    derivatives are the higher ones.
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
            star = [f"*{p.name}" for p in inspect.signature(function).parameters.values() if p.kind is p.VAR_POSITIONAL]
            takes = star[0] if star and not parameters else str(len(parameters))
            raise TypeError(
                f"custom_op takes a function of one or two numbers, each a parameter of its own (def f(x) or "
                f"def f(x, y)); {function.__name__} takes {takes}"
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
        checked = _checked_rule(name, rule, arity)

        def forward(*xs: float) -> float:
            try:
                result = function(*xs)
            except Exception as error:  # raised for the numbers: a recording that goes on decided by them
                raised_for_a_number(error, f"the custom operation {name}")
                raise
            return _function_result(name, result)

        # the rule's answer is a local derivative: the contribution is g times it
        if arity == 1:
            op = Op(name, 1, forward, (checked,), (times,), "{f}({0})", doc=f"{name}(x), a custom operation")
            self._apply = functools.partial(unary, op)
        else:
            op = Op(
                name,
                2,
                forward,
                (lambda x, y, out: checked(x, y, out)[0], lambda x, y, out: checked(x, y, out)[1]),
                (times, times),
                "{f}({0}, {1})",
                doc=f"{name}(x, y), a custom operation",
            )
            self._apply, self._reflected = binary_operators(op)
        self.op = op
        return rule

    def __call__(self, *args: Any) -> Any:
        self._check_arguments(args)
        if not any(isinstance(arg, (Value, Vector)) for arg in args):  # numbers: a float, as eager code gives
            return _function_result(self.name, self.function(*(float(a) for a in args)))
        if self._apply is None:
            raise RuntimeError(
                f"{self.name} has no derivative rule yet: define one with @{self.name}.derivative "
                "before using it on Values"
            )
        if self.arity == 1:
            (x,) = args
            return wrap([self._apply(a) for a in x]) if isinstance(x, Vector) else self._apply(x)
        return self._apply_two(*args)

    def _check_arguments(self, args: tuple[Any, ...]) -> None:
        """Refuse a call with the wrong number of arguments or an argument of another type."""
        if len(args) != self.arity:
            raise TypeError(
                f"{self.name}() takes {self.arity} argument{'s' if self.arity > 1 else ''}, got {len(args)}"
            )
        for arg in args:
            if not isinstance(arg, (Value, Vector)) and as_number(arg) is None:
                raise TypeError(f"{self.name}() takes numbers, Values or Vectors, got {type(arg).__name__}")

    def _apply_two(self, x: Any, y: Any) -> Any:
        """The operation of two operands: elementwise over Vectors, else on a Value and a number
        or Value, either first."""
        assert self._apply is not None  # __call__ checked that a rule is defined
        if isinstance(x, Vector) or isinstance(y, Vector):
            found = pairs(x, y)
            assert found is not None  # both operands were checked by __call__
            return wrap([self(a, b) for a, b in found])
        if isinstance(x, Value):
            return self._apply(x, y)
        assert self._reflected is not None  # set with _apply for two operands
        return self._reflected(y, x)

    def __repr__(self) -> str:
        return f"<vjpgrad custom_op {self.name}>"


def custom_op(function: Callable[..., float]) -> CustomOp:
    """Decorator: make a float function of one or two numbers into a differentiable operation.

    Attach its derivative rule with ``@f.derivative``; see ``CustomOp``.
    """
    return CustomOp(function)
