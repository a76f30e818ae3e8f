"""``Vector``: a thin list of Values with elementwise arithmetic and PyTorch's seeded backward.

The point of a Vector is ``y.backward(gradients)``: element ``i`` of the output is seeded
with ``gradients[i]`` and one reverse pass runs for all elements together, so each ``x.grad``
gains ``sum_i gradients[i] * dy[i]/dx``: the vector-Jacobian product ``v^T J``.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Union, cast, overload

from vjpgrad.core.backward import backward
from vjpgrad.core.floats import as_number
from vjpgrad.core.format import format_vector
from vjpgrad.core.graph import Node
from vjpgrad.core.modes import USER_FRAMES, refuse_number
from vjpgrad.core.operators import VectorMethods
from vjpgrad.core.seeds import seeds_for
from vjpgrad.core.value import Value, from_floats

VectorOperand = Union["Vector", Value, float]
_Pairing = Callable[[Any, Any], Any]
_FLOAT = frozenset((float,))


def as_values(items: Iterable[object], requires_grad: bool, caller: str) -> list[Value]:
    """Each item as a Value: a Value as it is, a number as a new leaf (``requires_grad`` says
    whether it takes gradient); anything else is a TypeError that ``caller`` names."""
    if (type(items) is list or type(items) is tuple) and _FLOAT.issuperset(map(type, items)):
        return from_floats(cast("Sequence[float]", items), requires_grad)  # a row of floats: in one loop
    values: list[Any] = []  # Values
    for index, item in enumerate(items):
        if isinstance(item, Node):  # a Node is a Value
            values.append(item)
        elif isinstance(item, numbers.Real):
            values.append(Value(item, requires_grad=requires_grad))
        else:
            raise TypeError(f"{caller} element {index} must be a number or a Value, got {type(item).__name__}")
    return values


def wrap(values: list[Value]) -> Vector:
    """A Vector of these Values as they are (no checks: for the package's own results)."""
    vector = object.__new__(Vector)
    vector._values = values
    return vector


def pairs(x: object, y: object) -> list[tuple[Any, Any]] | None:
    """The element pairs of ``x`` and ``y`` (Vectors, Values or numbers, at least one Vector)
    after broadcasting; None when either is of a foreign type. A length-1 Vector
    broadcasts against any length; any other mismatch raises ValueError naming both."""
    if isinstance(x, Vector) and isinstance(y, Vector):
        mine, theirs = x._values, y._values
        if len(mine) == len(theirs):
            return list(zip(mine, theirs, strict=True))
        if len(theirs) == 1:
            return [(a, theirs[0]) for a in mine]
        if len(mine) == 1:
            return [(mine[0], b) for b in theirs]
        raise ValueError(
            f"Vector lengths {len(mine)} and {len(theirs)} do not match "
            "(only equal lengths, or a length-1 Vector, can be combined elementwise)"
        )
    if isinstance(x, Vector):
        other = y if isinstance(y, Value) else as_number(y)
        return None if other is None else [(a, other) for a in x._values]
    if isinstance(y, Vector):
        other = x if isinstance(x, Value) else as_number(x)
        return None if other is None else [(other, b) for b in y._values]
    return None


def _as_index(index: object) -> int:
    """An integer index of another type (a NumPy integer), as a list takes it; bools and the
    rest are refused."""
    if not isinstance(index, bool) and "bool" not in type(index).__name__:
        try:
            return operator.index(index)  # type: ignore[arg-type]  # anything with __index__; a TypeError otherwise
        except TypeError:
            pass
    raise TypeError(f"Vector indices must be integers or slices, got {type(index).__name__}")


def _elementwise(
    function: _Pairing, symbol: str
) -> tuple[Callable[[Vector, Any], Vector], Callable[[Vector, Any], Vector]]:
    """``self <op> other`` and ``other <op> self`` for Vectors, from one binary function."""

    def forward(self: Vector, other: Any) -> Vector:
        found = pairs(self, other)
        return NotImplemented if found is None else wrap([function(x, y) for x, y in found])

    def reflected(self: Vector, other: Any) -> Vector:
        found = pairs(other, self)
        return NotImplemented if found is None else wrap([function(x, y) for x, y in found])

    name = function.__name__  # operator.add -> "add"
    for method, face, doc in ((forward, f"__{name}__", "self {} other"), (reflected, f"__r{name}__", "other {} self")):
        method.__name__ = face
        method.__qualname__ = f"Vector.{face}"
        method.__doc__ = f"{doc.format(symbol)}, elementwise (a length-1 Vector broadcasts)."
    return forward, reflected


class Vector(VectorMethods):
    """A sequence of Values that computes elementwise.

    ``Vector([1.0, 2.0, 3.0])`` makes three leaf Values; ``Vector([a, b])`` wraps the given
    Values as they are. Arithmetic and functions apply to each element, with another
    Vector of the same length, a Value or a number; a Vector of length 1 broadcasts
    against any length, as a one-element tensor does in PyTorch.
    """

    __slots__ = ("_values",)
    __array_ufunc__ = None  # NumPy defers to us: np.float64(2) * v is a Vector, not an array

    _values: list[Value]

    def __init__(self, items: Iterable[Value | float | numbers.Real], requires_grad: bool = True) -> None:
        if type(items) is not list and (isinstance(items, (str, bytes, Value)) or not isinstance(items, Iterable)):
            raise TypeError(f"Vector() takes an iterable of numbers or Values, got {type(items).__name__}")
        if not isinstance(requires_grad, bool):
            raise TypeError(f"Vector() requires_grad must be a bool, got {type(requires_grad).__name__}")
        self._values = as_values(items, requires_grad, "Vector()")

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

        ``torch.empty`` returns whatever bytes were in memory, so case 3 of the Stack Overflow answer
        printed gradients that depended on them; on its machine they were zeros, hence
        ``c.grad = inf`` (the derivative of ``log`` at 0). Here ``empty`` always gives
        zeros, which reproduces that example exactly and every time.
        """
        return cls.full(n, 0.0, requires_grad)

    # ---- a sequence of Values -----------------------------------------------------------

    def _pairs(self, other: object, function: str) -> list[tuple[Value, Value | float]]:
        """The element pairs of this Vector and ``other`` for a function of two operands
        (``v.atan2(other)``), broadcast as arithmetic is; a TypeError naming ``function`` for
        an operand of another type."""
        found = pairs(self, other)
        if found is None:
            raise TypeError(f"{function}() takes numbers, Values or Vectors, got {type(other).__name__}")
        return found

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
            return wrap(self._values[index])
        if not isinstance(index, int) or isinstance(index, bool):
            index = _as_index(index)
        try:
            return self._values[index]
        except IndexError:
            raise IndexError(f"index {index} is out of range for a Vector of length {len(self)}") from None

    @property
    def data(self) -> list[float]:
        """The elements' data, as floats (a new list: set an element's with ``v[i].data = x``)."""
        refuse_number("Vector.data (or tolist())")
        return [value.data for value in self._values]

    @data.setter
    def data(self, numbers: object) -> None:
        shown = repr(numbers) if isinstance(numbers, list) and len(numbers) <= 8 else "numbers"
        raise AttributeError(
            "a Vector's .data is a new list each time it is read, so it cannot be assigned: set each element's, "
            f"for x, number in zip(v, {shown}): x.data = number (or make a new Vector: Vector({shown}))"
        )

    def tolist(self) -> list[float]:
        """The elements' data, as ``tensor.tolist()``."""
        return self.data

    @property
    def grad(self) -> Vector:
        """The elements' gradients, as a new Vector that requires no grad (an element's cleared
        with ``None`` reads 0.0, as a pass counts it).

        ``v.grad = None`` clears each element's ``.grad`` to None, as PyTorch users reset a
        tensor's gradient; ``v.zero_grad()`` sets each to 0.0."""
        return Vector([0.0 if value.grad is None else value.grad for value in self._values], requires_grad=False)

    @grad.setter
    def grad(self, cleared: None) -> None:
        if cleared is not None:
            raise TypeError(
                "a Vector's .grad can be set to None (each element's .grad = None, counted as 0.0), "
                f"got {type(cleared).__name__}: v.zero_grad() sets each element's to 0.0, and v[i].grad = number "
                "sets one"
            )
        for value in self._values:
            value.grad = None

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
        return wrap([value.detach() for value in self._values])

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
            return Value(math.nan, requires_grad=False)
        return self.sum() / len(self._values)

    def dot(self, other: Vector | Sequence[float]) -> Value:
        """``sum_i self[i] * other[i]``; ``other`` is a Vector or a list of numbers."""
        if not isinstance(other, Vector):
            other = Vector(other, requires_grad=False)
        if len(other) != len(self._values):
            raise ValueError(
                "dot() takes two Vectors of the same length (as torch.dot does), "
                f"got {len(self._values)} and {len(other)}"
            )
        return (self * other).sum()

    # ---- elementwise arithmetic ---------------------------------------------------------

    __add__, __radd__ = _elementwise(operator.add, "+")
    __sub__, __rsub__ = _elementwise(operator.sub, "-")
    __mul__, __rmul__ = _elementwise(operator.mul, "*")
    __truediv__, __rtruediv__ = _elementwise(operator.truediv, "/")
    __pow__, __rpow__ = _elementwise(operator.pow, "**")

    def __neg__(self) -> Vector:
        """-self"""
        return wrap([-x for x in self._values])

    def __pos__(self) -> Vector:
        """+self, which is self"""
        return self

    def __abs__(self) -> Vector:
        """abs(self)"""
        return wrap([abs(x) for x in self._values])

    # ---- the seeded backward ------------------------------------------------------------

    def backward(
        self,
        gradients: Vector | Sequence[float] | None = None,
        *,
        retain_graph: bool = False,
        gradient: Any = None,
        create_graph: bool = False,
    ) -> None:
        """Seed element ``i`` with ``gradients[i]`` and run one reverse pass for all elements.

        Afterwards each ``x.grad`` has gained ``sum_i gradients[i] * d self[i] / dx``: the
        vector-Jacobian product ``v^T J`` with ``v = gradients``, what PyTorch's
        ``y.backward(gradients)`` computes (its spelling ``gradient=`` works too).
        ``gradients`` has the length of this Vector (a list, a Vector or a NumPy array); it
        may be left out only for a Vector of length 1. A longer seed on a length-1 Vector is
        summed into it, because that output was broadcast (case 3 of the Stack Overflow answer).
        Gradients accumulate: zero them between passes when you need fresh ones.
        ``retain_graph`` and ``create_graph`` are ``Value.backward``'s.

        Case 1 of the Stack Overflow answer: ``y[i]`` depends only on ``a[i]``, ``b[i]`` and
        ``c[i]``, so ``a.grad = v × 3``, ``b.grad = v × 4b`` and ``c.grad = v / c``.

        >>> from vjpgrad import Vector, log
        >>> a = Vector([1.0, 2.0, 3.0])
        >>> b = Vector([3.0, 4.0, 5.0])
        >>> c = Vector([6.0, 7.0, 8.0])
        >>> y = 3 * a + 2 * b * b + log(c)
        >>> y.backward([0.1, 1.0, 0.0001])   # v: one weight per element of y
        >>> print(a.grad)
        tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])
        >>> print(b.grad)
        tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])
        """
        with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
            if gradients is not None and gradient is not None:
                raise TypeError("backward() got both gradients= and gradient=: they are the same seed, pass one")
            seed = gradients if gradient is None else gradient
            backward(self._values, len(self._values), seed, retain_graph=retain_graph, create_graph=create_graph)

    def __float__(self) -> float:
        if len(self._values) != 1:
            raise TypeError(
                f"only one-element Vectors can be converted to Python scalars: this one has {len(self._values)}"
            )
        return float(self._values[0])


def outputs_and_seeds(
    output: Value | Vector, seed: object, what: str, hint: str = ""
) -> tuple[list[Value], list[float]]:
    """The outputs of a Value or a Vector and one seed each, by the rules of ``core/seeds.py``:
    what ``explain``, ``to_dot`` and ``vjpgrad.testing`` take, as ``backward`` takes it."""
    if isinstance(output, Value):
        return [output], seeds_for(None, seed, name="seed")
    if isinstance(output, Vector):
        return list(output), seeds_for(len(output), seed, name="seed", hint=hint)
    raise TypeError(f"{what}() takes a Value or a Vector, got {type(output).__name__}")
