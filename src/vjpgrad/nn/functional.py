"""``torch.nn.functional`` for lists of Values: ``max``, ``softmax``, ``log_softmax``,
``cross_entropy``, ``rms_norm``, ``linear`` and ``embedding``, with PyTorch's names and argument
order.

Each function takes a Vector or a list (any iterable) of Values, where a plain number is a
constant, and answers in kind: a Vector for a Vector, a list of Values otherwise. It agrees
with ``torch.nn.functional`` on a 1-D float64 tensor, values and gradients, to about 1e-12
relative, with an absolute floor of 1e-12 times the size of the terms a result sums (where they
nearly cancel, a result is only as exact as its largest term; the tests hold it to that).

Every function is made of Value operations and nothing else: it never reads ``.data``,
never calls ``float()``, never compares a Value or branches on one. The graph it records
is therefore the same whatever the numbers are, and replaying that graph on new numbers
(what a compiler does) computes the right thing. Python decisions here depend only on
lengths and types, never on values; the one number read is an index Value's, to raise
IndexError before any node is made when it is no whole number in range (the ``take`` node
checks it again as the code runs), which never changes the graph.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Iterable, Sequence
from typing import overload

from vjpgrad.core.ops import MAX, TAKE
from vjpgrad.core.ops import data_of as _data_of
from vjpgrad.core.ops import take_position as _take_position
from vjpgrad.core.value import Value, nary
from vjpgrad.core.vector import Vector, as_values

__all__ = ["cross_entropy", "embedding", "linear", "log_softmax", "max", "rms_norm", "softmax"]

Values = Vector | Sequence[Value | float]
"""What the functions take: a Vector, or a list of Values and numbers (numbers are constants).
Any iterable will do at run time; a list in, a list out."""

Row = Vector | Sequence[Value | float]
"""A row of a weight matrix."""


def _values(input: object, function: str) -> list[Value]:
    """The elements of ``input`` as Values (numbers become constants), or a TypeError."""
    if isinstance(input, Vector):
        return list(input)
    if isinstance(input, (str, bytes, Value)) or not isinstance(input, Iterable):
        raise TypeError(f"{function}() takes a Vector or a list of Values, got {type(input).__name__}")
    return as_values(input, False, f"{function}()")  # numbers are constants


def _in_kind(input: object, values: list[Value]) -> Vector | list[Value]:
    """The result in the kind of the input: a Vector for a Vector, a list otherwise."""
    return Vector(values) if isinstance(input, Vector) else values


def _check_dim(dim: object, function: str) -> None:
    """A list is one-dimensional: ``dim`` may be None, 0 or -1, as for a 1-D tensor."""
    if dim is None:
        return
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{function}() dim must be an int or None, got {type(dim).__name__}")
    if dim not in (0, -1):
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got {dim})")


def _sum(values: Iterable[Value]) -> Value:
    """values[0] + values[1] + ..., left to right, with no ``0 +`` node in front (as ``sum()`` makes)."""
    iterator = iter(values)
    total = next(iterator)
    for value in iterator:
        total = total + value
    return total


def max(input: Values) -> Value:  # PyTorch's name; it shadows the builtin in this module
    """The largest element, as ``torch.max(input)``, as a graph operation: its gradient goes
    to the largest element, split evenly among ties, as PyTorch's; nan if any element is nan.

    Raises ValueError for an empty input.
    """
    values = _values(input, "max")
    if not values:
        raise ValueError("max() of an empty list: there is no largest element")
    # one node of the graph with every element as an operand: the gradient goes to the
    # largest, split evenly among ties (PyTorch's evenly_distribute_backward); nan wins
    return nary(MAX, tuple(values))


@overload
def softmax(input: Vector, dim: int | None = None) -> Vector: ...
@overload
def softmax(input: Sequence[Value | float], dim: int | None = None) -> list[Value]: ...
def softmax(input: Values, dim: int | None = None) -> Vector | list[Value]:
    """``exp(x_i) / sum_j exp(x_j)``, computed as ``exp(x_i - m) / sum_j exp(x_j - m)`` with
    ``m = max(x)`` so that no exponential overflows (logits of 1000 are fine).

    The shift does not change the result, nor its gradient: the gradient flowing into ``m``
    sums to zero (up to rounding). ``dim`` is there for PyTorch's signature: None, 0 or -1.
    """
    values = _values(input, "softmax")
    _check_dim(dim, "softmax")
    if not values:
        return _in_kind(input, [])
    m = max(values)
    exps = [(x - m).exp() for x in values]
    total = _sum(exps)
    return _in_kind(input, [e / total for e in exps])


@overload
def log_softmax(input: Vector, dim: int | None = None) -> Vector: ...
@overload
def log_softmax(input: Sequence[Value | float], dim: int | None = None) -> list[Value]: ...
def log_softmax(input: Values, dim: int | None = None) -> Vector | list[Value]:
    """``x_i - log(sum_j exp(x_j))``, computed as ``(x_i - m) - log(sum_j exp(x_j - m))``
    with ``m = max(x)``: no overflow, and no ``log(0)`` for a very negative element."""
    values = _values(input, "log_softmax")
    _check_dim(dim, "log_softmax")
    if not values:
        return _in_kind(input, [])
    shifted, log_sum_exp = _shifted_and_log_sum_exp(values)
    return _in_kind(input, [s - log_sum_exp for s in shifted])


def _shifted_and_log_sum_exp(values: list[Value]) -> tuple[list[Value], Value]:
    """``x_i - m`` for each element and ``log(sum_j exp(x_j - m))``, with ``m = max(x)``."""
    m = max(values)
    shifted = [x - m for x in values]
    return shifted, _sum(s.exp() for s in shifted).log()


def cross_entropy(input: Values, target: int | Value | Values) -> Value:
    """The loss of one example whose logits are ``input``, as
    ``torch.nn.functional.cross_entropy`` on a 1-D input: ``-log_softmax(input)[target]`` for
    a class index, ``-sum_c target[c] * log_softmax(input)[c]`` for class probabilities (a
    list as long as ``input``).

    The index is an int (structure to ``vjpgrad.compile``: a recording per class) or a Value
    holding a whole number (data: one recording serves every class, the class picked by a
    ``take`` node; the same loss and gradient as the int index, bit for bit).
    For an index only the target's term is built: ``log(sum_j exp(x_j - m)) - (x_target - m)``.
    Raises IndexError when ``target`` is not in ``range(len(input))``.
    """
    values = _values(input, "cross_entropy")
    if not values:
        raise ValueError("cross_entropy() of no logits: there is no class")
    if isinstance(target, Value):
        _take_position(_data_of(target), len(values))  # checked before any node is made (not user code: no .data)
        shifted, log_sum_exp = _shifted_and_log_sum_exp(values)
        return log_sum_exp - nary(TAKE, (target, *shifted))
    if not isinstance(target, (bool, numbers.Integral)) and isinstance(target, (Vector, Sequence)):
        probabilities = _values(target, "cross_entropy target")
        if len(probabilities) != len(values):
            raise ValueError(f"cross_entropy() target has {len(probabilities)} probabilities for {len(values)} classes")
        shifted, log_sum_exp = _shifted_and_log_sum_exp(values)
        return -_sum((s - log_sum_exp) * p for s, p in zip(shifted, probabilities, strict=True))
    if isinstance(target, bool) or not isinstance(target, numbers.Integral):
        raise TypeError(
            f"cross_entropy() target must be an int or a Value (a class index) or a list of probabilities, "
            f"got {type(target).__name__}"
        )
    target = int(target)
    if not 0 <= target < len(values):
        raise IndexError(f"Target {target} is out of bounds: there are {len(values)} classes")
    shifted, log_sum_exp = _shifted_and_log_sum_exp(values)
    return log_sum_exp - shifted[target]


def embedding(input: int | Value, weight: Sequence[Row]) -> list[Value]:
    """The row of ``weight`` that ``input`` picks, as ``torch.nn.functional.embedding`` of one
    index: ``weight[input]``.

    An int index is structure: the row's own Values are returned, as ``weight[input]`` would
    (microgpt's ``wte[token_id]``), and ``vjpgrad.compile`` records one program per index. A
    Value index (a whole number, e.g. ``Value(3.0, requires_grad=False)``) is data: each element
    of the row is a ``take`` node over the column, whose gradient goes to the picked row alone,
    added into a zero (``0.0 + g``), and an exact 0.0 to the others, as PyTorch's dense embedding
    gradient: one recording serves every index. Raises IndexError for an index that is not a whole
    number in ``range(len(weight))``, and, for a Value index, ValueError for rows of different
    lengths.
    """
    if isinstance(input, Value):
        rows = [_values(row, "embedding") for row in weight]
        if not rows:
            raise ValueError("embedding() of an empty weight: there is no row to pick")
        if len({len(row) for row in rows}) > 1:
            raise ValueError(f"embedding() weight rows differ in length: {sorted({len(row) for row in rows})}")
        _take_position(_data_of(input), len(rows))  # checked before any node is made
        return [nary(TAKE, (input, *column)) for column in zip(*rows, strict=True)]
    if isinstance(input, bool) or not isinstance(input, numbers.Integral):
        raise TypeError(f"embedding() index must be an int or a Value, got {type(input).__name__}")
    index = int(input)
    if not 0 <= index < len(weight):
        raise IndexError(f"index {index} is out of range for {len(weight)} rows")
    return _values(weight[index], "embedding")  # the row alone: an eager step reads no other


@overload
def rms_norm(
    input: Vector,
    normalized_shape: int | Sequence[int] | None = None,
    weight: Values | None = None,
    eps: float | None = None,
) -> Vector: ...
@overload
def rms_norm(
    input: Sequence[Value | float],
    normalized_shape: int | Sequence[int] | None = None,
    weight: Values | None = None,
    eps: float | None = None,
) -> list[Value]: ...
def rms_norm(
    input: Values,
    normalized_shape: int | Sequence[int] | None = None,
    weight: Values | None = None,
    eps: float | None = None,
) -> Vector | list[Value]:
    """``x_i / sqrt(mean(x * x) + eps)``, times ``weight[i]`` when given: RMSNorm over the
    list, as ``torch.nn.functional.rms_norm(input, (len(input),), weight, eps)``.

    ``eps=None`` means the machine epsilon of float64, ``sys.float_info.epsilon`` (2.2e-16),
    which is what PyTorch uses for a float64 tensor (``torch.finfo(dtype).eps``); GPT code
    usually passes ``eps=1e-5``. ``normalized_shape`` is optional here (a list has one
    dimension); when given it must be ``len(input)`` or ``(len(input),)``.
    """
    values = _values(input, "rms_norm")
    n = len(values)
    if normalized_shape is not None:
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence) or list(shape) != [n]:
            raise ValueError(
                f"rms_norm() normalized_shape must be {n} or ({n},) for an input of length {n}, "
                f"got {normalized_shape!r}"
            )
    scales = None if weight is None else _values(weight, "rms_norm weight")
    if scales is not None and len(scales) != n:
        raise ValueError(f"rms_norm() weight has {len(scales)} elements for an input of length {n}")
    if eps is None:
        eps = sys.float_info.epsilon
    elif isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"rms_norm() eps must be a number or None, got {type(eps).__name__}")
    if not values:
        return _in_kind(input, [])
    mean_square = _sum(x * x for x in values) / n
    scale = (mean_square + float(eps)) ** -0.5
    out = [x * scale for x in values]
    if scales is not None:
        out = [y * w for y, w in zip(out, scales, strict=True)]
    return _in_kind(input, out)


@overload
def linear(input: Vector, weight: Iterable[Row], bias: Values | None = None) -> Vector: ...
@overload
def linear(input: Sequence[Value | float], weight: Iterable[Row], bias: Values | None = None) -> list[Value]: ...
def linear(input: Values, weight: Iterable[Row], bias: Values | None = None) -> Vector | list[Value]:
    """``y_j = sum_i weight[j][i] * x_i + bias[j]``: ``W x + b``, as
    ``torch.nn.functional.linear(input, weight, bias)``.

    ``weight`` is a list of rows (``out_features`` rows of ``in_features`` elements each,
    PyTorch's layout); its elements are Values or numbers. ``bias`` is optional.
    """
    x = _values(input, "linear")
    if isinstance(weight, (str, bytes, Value, Vector)) or not isinstance(weight, Iterable):
        raise TypeError(f"linear() weight must be a list of rows, got {type(weight).__name__}")
    rows = list(weight)
    for index, row in enumerate(rows):
        if isinstance(row, (str, bytes)) or not isinstance(row, (Vector, Sequence)):
            raise TypeError(f"linear() weight row {index} must be a list or a Vector, got {type(row).__name__}")
        if len(row) != len(x):
            raise ValueError(
                f"linear() weight row {index} has {len(row)} elements but the input has {len(x)} "
                "(weight is out_features rows of in_features elements, as in PyTorch)"
            )
    biases = None if bias is None else _values(bias, "linear bias")
    if biases is not None and len(biases) != len(rows):
        raise ValueError(f"linear() bias has {len(biases)} elements for {len(rows)} weight rows")
    out = []
    for row in rows:
        if not x:  # in_features 0: zeros (plus the bias), as in PyTorch
            out.append(Value(0.0, requires_grad=False))
            continue
        # row[0] * x[0] + row[1] * x[1] + ..., as a plain loop: this is the hot path of a
        # model. A number in a row times a Value is a Value.
        pairs = zip(row, x)  # noqa: B905  # the lengths were checked above
        w, xi = next(pairs)
        total = w * xi
        for w, xi in pairs:
            total = total + w * xi
        out.append(total)
    if biases is not None:
        out = [y + b for y, b in zip(out, biases, strict=True)]
    return _in_kind(input, out)
