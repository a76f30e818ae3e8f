"""The functions of the contract as module functions that take a number, a Value or a Vector,
like ``torch.log``: ``vjpgrad.log(c)`` works whatever ``c`` is."""

from __future__ import annotations

import numbers
from typing import overload

from vjpgrad._ops import FUNCTIONS, Op
from vjpgrad._value import Value, as_number
from vjpgrad._vector import Vector


class ElementwiseFunction:
    """One of ``exp log sqrt sin cos tan tanh sigmoid relu``, applied to whatever it is given.

    A number gives a float (with IEEE-754 results at the edges: ``log(0) = -inf``), a Value
    a Value on the graph, a Vector a Vector of the results.
    """

    def __init__(self, op: Op) -> None:
        self.op = op
        self.__name__ = self.__qualname__ = op.name
        self.__doc__ = f"{op.name}(x): {op.doc}, of a number (a float), a Value or a Vector (elementwise)."

    @overload
    def __call__(self, x: Vector) -> Vector: ...
    @overload
    def __call__(self, x: Value) -> Value: ...
    @overload
    def __call__(self, x: float | numbers.Real) -> float: ...
    def __call__(self, x: Vector | Value | float | numbers.Real) -> Vector | Value | float:
        if isinstance(x, (Value, Vector)):
            method: Value | Vector = getattr(x, self.op.name)()
            return method
        number = as_number(x)
        if number is not None:
            return self.op.forward(number)
        raise TypeError(f"{self.op.name}() takes a number, a Value or a Vector, got {type(x).__name__}")

    def __repr__(self) -> str:
        return f"<vjpgrad function {self.op.name}>"


_by_name = {op.name: ElementwiseFunction(op) for op in FUNCTIONS}
exp = _by_name["exp"]
log = _by_name["log"]
sqrt = _by_name["sqrt"]
sin = _by_name["sin"]
cos = _by_name["cos"]
tan = _by_name["tan"]
tanh = _by_name["tanh"]
sigmoid = _by_name["sigmoid"]
relu = _by_name["relu"]
