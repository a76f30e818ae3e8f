"""``Vector``: a thin list of Values with elementwise arithmetic and PyTorch's seeded backward.

The point of a Vector is ``y.backward(gradients)``: element ``i`` of the output is seeded
with ``gradients[i]`` and one reverse pass runs for all elements together, so each ``x.grad``
gains ``sum_i gradients[i] * dy[i]/dx``: the vector-Jacobian product ``v^T J``.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Union, overload

from vjpgrad._backward import backward, check_seed
from vjpgrad._format import format_vector
from vjpgrad._value import Value

VectorOperand = Union["Vector", Value, float]
_Pairing = Callable[[Value | float, Value | float], Value]


def _elementwise(
    function: _Pairing,
) -> tuple[Callable[[Vector, VectorOperand], Vector], Callable[[Vector, VectorOperand], Vector]]:
    """``self <op> other`` and ``other <op> self`` for Vectors, from one binary function."""

    def forward(self: Vector, other: VectorOperand) -> Vector:
        pairs = self._pairs(other)
        if pairs is None:
            return NotImplemented  # type: ignore[no-any-return]
        return Vector._of([function(x, y) for x, y in pairs])

    def reflected(self: Vector, other: VectorOperand) -> Vector:
        pairs = self._pairs(other)
        if pairs is None:
            return NotImplemented  # type: ignore[no-any-return]
        return Vector._of([function(y, x) for x, y in pairs])

    return forward, reflected


class Vector:
    """A sequence of Values that computes elementwise.

    ``Vector([1.0, 2.0, 3.0])`` makes three leaf Values; ``Vector([a, b])`` wraps the given
    Values as they are. Arithmetic and functions apply to each element, with another
    Vector of the same length, a Value or a number; a Vector of length 1 broadcasts
    against any length, as a one-element tensor does in PyTorch.
    """

    __slots__ = ("_values",)

    _values: list[Value]

    def __init__(self, items: Iterable[Value | float | numbers.Real], requires_grad: bool = True) -> None:
        if isinstance(items, (str, bytes, Value)) or not isinstance(items, Iterable):
            raise TypeError(f"Vector() takes an iterable of numbers or Values, got {type(items).__name__}")
        if not isinstance(requires_grad, bool):
            raise TypeError(f"Vector() requires_grad must be a bool, got {type(requires_grad).__name__}")
        values = []
        for index, item in enumerate(items):
            if isinstance(item, Value):
                values.append(item)
            elif isinstance(item, numbers.Real):
                values.append(Value(item, requires_grad=requires_grad))
            else:
                raise TypeError(f"Vector() element {index} must be a number or a Value, got {type(item).__name__}")
        self._values = values

    @classmethod
    def _of(cls, values: list[Value]) -> Vector:
        vector = object.__new__(cls)
        vector._values = values
        return vector

    @classmethod
    def full(cls, n: int, fill: float, requires_grad: bool = True) -> Vector:
        """``n`` leaf Values holding ``fill``."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"Vector length must be an int, got {type(n).__name__}")
        if n < 0:
            raise ValueError(f"Vector length must be >= 0, got {n}")
        return cls([fill] * n, requires_grad=requires_grad)

    @classmethod
    def zeros(cls, n: int, requires_grad: bool = True) -> Vector:
        """``n`` leaf Values holding 0.0."""
        return cls.full(n, 0.0, requires_grad)

    @classmethod
    def ones(cls, n: int, requires_grad: bool = True) -> Vector:
        """``n`` leaf Values holding 1.0."""
        return cls.full(n, 1.0, requires_grad)

    @classmethod
    def empty(cls, n: int, requires_grad: bool = True) -> Vector:
        """``n`` leaf Values holding 0.0: Python has no uninitialised memory.

        ``torch.empty`` returns whatever bytes were in memory, so the seed's Example 3
        printed gradients that depended on them; on its machine they were zeros, hence
        ``c.grad = inf`` (the derivative of ``log`` at 0). Here ``empty`` always gives
        zeros, which reproduces that example exactly and every time.
        """
        return cls.full(n, 0.0, requires_grad)

    # ---- a sequence of Values -----------------------------------------------------------

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Value]:
        return iter(self._values)

    @overload
    def __getitem__(self, index: int) -> Value: ...
    @overload
    def __getitem__(self, index: slice) -> Vector: ...
    def __getitem__(self, index: int | slice) -> Value | Vector:
        """``v[i]`` is the i-th Value; ``v[a:b]`` a Vector of the same Values (not copies)."""
        if isinstance(index, slice):
            return Vector._of(self._values[index])
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"Vector indices must be ints or slices, got {type(index).__name__}")
        try:
            return self._values[index]
        except IndexError:
            raise IndexError(f"index {index} is out of range for a Vector of length {len(self)}") from None

    @property
    def data(self) -> list[float]:
        """The elements' data, as floats."""
        return [value.data for value in self._values]

    def tolist(self) -> list[float]:
        """The elements' data, as ``tensor.tolist()``."""
        return self.data

    @property
    def grad(self) -> Vector:
        """The elements' gradients, as a new Vector that requires no grad."""
        return Vector([value.grad for value in self._values], requires_grad=False)

    @property
    def requires_grad(self) -> bool:
        """Whether any element requires grad."""
        return any(value.requires_grad for value in self._values)

    def zero_grad(self) -> None:
        """Set every element's ``.grad`` to 0.0."""
        for value in self._values:
            value.grad = 0.0

    def detach(self) -> Vector:
        """Constant copies of the elements, cut from the graph."""
        return Vector._of([value.detach() for value in self._values])

    def __str__(self) -> str:
        return format_vector(self.data)

    def __repr__(self) -> str:
        return f"Vector({self.data!r})"

    # ---- reductions ---------------------------------------------------------------------

    def sum(self) -> Value:
        """The sum of the elements (0.0 for an empty Vector)."""
        total: Value | float = 0.0
        for index, value in enumerate(self._values):
            total = value if index == 0 else total + value
        return total if isinstance(total, Value) else Value(total, requires_grad=False)

    def mean(self) -> Value:
        """The mean of the elements (nan for an empty Vector, as in PyTorch)."""
        if not self._values:
            return Value(float("nan"), requires_grad=False)
        return self.sum() / len(self._values)

    def dot(self, other: Vector | Sequence[float]) -> Value:
        """``sum_i self[i] * other[i]``; ``other`` is a Vector or a list of numbers."""
        if not isinstance(other, Vector):
            other = Vector(other, requires_grad=False)
        return (self * other).sum()

    # ---- elementwise arithmetic ---------------------------------------------------------

    def _pairs(self, other: object) -> list[tuple[Value, Value | float]] | None:
        """Element pairs of ``self`` and ``other`` after broadcasting; None for a foreign type."""
        if isinstance(other, Vector):
            mine, theirs = self._values, other._values
            if len(mine) == len(theirs):
                return list(zip(mine, theirs, strict=True))
            if len(theirs) == 1:
                return [(x, theirs[0]) for x in mine]
            if len(mine) == 1:
                return [(mine[0], y) for y in theirs]
            raise ValueError(
                f"Vector lengths {len(mine)} and {len(theirs)} do not match "
                "(only equal lengths, or a length-1 Vector, can be combined elementwise)"
            )
        if isinstance(other, (Value, int, float)):
            return [(x, other) for x in self._values]
        return None

    __add__, __radd__ = _elementwise(operator.add)
    __sub__, __rsub__ = _elementwise(operator.sub)
    __mul__, __rmul__ = _elementwise(operator.mul)
    __truediv__, __rtruediv__ = _elementwise(operator.truediv)
    __pow__, __rpow__ = _elementwise(operator.pow)

    def __neg__(self) -> Vector:
        """-self"""
        return Vector._of([-x for x in self._values])

    def __pos__(self) -> Vector:
        """+self, which is self"""
        return self

    def __abs__(self) -> Vector:
        """abs(self)"""
        return Vector._of([abs(x) for x in self._values])

    def _map(self, function: Callable[[Value], Value]) -> Vector:
        return Vector._of([function(x) for x in self._values])

    def reciprocal(self) -> Vector:
        """1 / self, elementwise."""
        return self._map(Value.reciprocal)

    def exp(self) -> Vector:
        """e ** self, elementwise."""
        return self._map(Value.exp)

    def log(self) -> Vector:
        """Natural logarithm, elementwise."""
        return self._map(Value.log)

    def sqrt(self) -> Vector:
        """Square root, elementwise."""
        return self._map(Value.sqrt)

    def sin(self) -> Vector:
        """Sine, elementwise."""
        return self._map(Value.sin)

    def cos(self) -> Vector:
        """Cosine, elementwise."""
        return self._map(Value.cos)

    def tan(self) -> Vector:
        """Tangent, elementwise."""
        return self._map(Value.tan)

    def tanh(self) -> Vector:
        """Hyperbolic tangent, elementwise."""
        return self._map(Value.tanh)

    def sigmoid(self) -> Vector:
        """Logistic sigmoid, elementwise."""
        return self._map(Value.sigmoid)

    def relu(self) -> Vector:
        """max(x, 0), elementwise."""
        return self._map(Value.relu)

    # ---- the seeded backward ------------------------------------------------------------

    def backward(
        self,
        gradients: Vector | Sequence[float] | None = None,
        *,
        retain_graph: bool = False,
    ) -> None:
        """Seed element ``i`` with ``gradients[i]`` and run one reverse pass for all elements.

        Afterwards each ``x.grad`` has gained ``sum_i gradients[i] * d self[i] / dx``: the
        vector-Jacobian product ``v^T J`` with ``v = gradients``, what PyTorch's
        ``y.backward(gradients)`` computes. ``gradients`` has the length of this Vector;
        it may be left out only for a Vector of length 1. A longer seed on a length-1
        Vector is summed into it, because that output was broadcast (the seed's Example 3).
        Gradients accumulate: zero them between passes when you need fresh ones.
        """
        seeds = self._seeds(gradients)
        backward(self._values, seeds, retain_graph=retain_graph)

    def _seeds(self, gradients: Vector | Sequence[float] | None) -> list[float]:
        n = len(self._values)
        if gradients is None:
            if n != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs: this Vector has {n} "
                    f"elements, so pass one seed per element, e.g. y.backward([1.0] * {n})"
                )
            return [1.0]
        if isinstance(gradients, Vector):
            seeds = gradients.data
        elif isinstance(gradients, (str, bytes)) or not isinstance(gradients, Sequence):
            raise TypeError(f"gradients must be a Vector or a sequence of numbers, got {type(gradients).__name__}")
        else:
            seeds = [check_seed(seed, f"gradients[{i}]") for i, seed in enumerate(gradients)]
        if len(seeds) == n:
            return seeds
        if n == 1:
            return [sum(seeds)]
        raise ValueError(f"gradients has length {len(seeds)} but the Vector has length {n}: pass one seed per element")
