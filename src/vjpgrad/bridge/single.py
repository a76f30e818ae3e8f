"""Single precision in Python: a float that rounds to float32 after every operation.

PyTorch's float32 kernels round each operation's result to single precision. Python's
floats are doubles; rounding a double result of ``+ - * /`` on two float32 numbers to float32
gives the correctly rounded float32 result (a double has more than twice the 24 bits of a
float32 significand), so ``Single`` reproduces float32 arithmetic exactly. The bridge hands
the reverse pass ``Single`` numbers for a float32 tensor: the engine's ``g * saved`` and its
running sums then round as PyTorch's do, with no change to the engine.
"""

from __future__ import annotations

import math
import struct
from array import array

from vjpgrad.core import floats

_buffer = array("f", [0.0])


def round32(x: float) -> float:
    """``x`` rounded to the nearest float32 (ties to even; past the largest, inf), as a float."""
    _buffer[0] = x
    return _buffer[0]


class Single(float):
    """A float32 number: arithmetic with it rounds its result to float32."""

    __slots__ = ()

    def __add__(self, other: float) -> Single:
        return Single(round32(float.__add__(self, other)))

    __radd__ = __add__

    def __sub__(self, other: float) -> Single:
        return Single(round32(float.__sub__(self, other)))

    def __rsub__(self, other: float) -> Single:
        return Single(round32(float.__rsub__(self, other)))

    def __mul__(self, other: float) -> Single:
        return Single(round32(float.__mul__(self, other)))

    __rmul__ = __mul__

    def __truediv__(self, other: float) -> Single:
        return Single(round32(floats.div(float(self), float(other))))

    def __rtruediv__(self, other: float) -> Single:
        return Single(round32(floats.div(float(other), float(self))))

    def __neg__(self) -> Single:
        return Single(-float(self))


def in_dtype(x: float, single: bool) -> float:
    """``x`` as a number of the tensor's type: a ``Single`` for float32, the float for float64."""
    return Single(round32(x)) if single else x


_BITS = {True: (struct.Struct("<f"), struct.Struct("<I"), 31), False: (struct.Struct("<d"), struct.Struct("<Q"), 63)}


def _ordered(x: float, single: bool) -> int:
    """An integer that counts representable numbers: neighbours differ by 1, -0.0 and 0.0 are 0."""
    number, integer, sign = _BITS[single]
    n: int = integer.unpack(number.pack(x))[0]
    magnitude = n & ((1 << sign) - 1)
    return -magnitude if n >> sign else magnitude


def ulps(a: float, b: float, single: bool) -> int | None:
    """How many representable numbers of the type apart ``a`` and ``b`` are: 0 when their bits are
    equal; None when one is nan and the other not, when two nans' bits differ (their sign: ``-nan``
    and ``nan``), or when their infinities differ."""
    if math.isnan(a) or math.isnan(b):
        number = _BITS[single][0]
        return 0 if math.isnan(a) and math.isnan(b) and number.pack(a) == number.pack(b) else None
    if math.isinf(a) or math.isinf(b):
        return 0 if a == b else None
    if a == b and math.copysign(1.0, a) != math.copysign(1.0, b):
        return 1  # 0.0 and -0.0: equal numbers, different bits
    return abs(_ordered(a, single) - _ordered(b, single))
