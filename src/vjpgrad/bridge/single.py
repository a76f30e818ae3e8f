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
from fractions import Fraction

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


def fused(a: float, b: float, c: float, single: bool) -> float:
    """``c + a * b`` rounded once, as a fused multiply-add computes it (``std::fma``, a kernel's
    vectorised ``fmadd``), to float32 when ``single`` (a ``Single``): where two roundings (the
    product's, then the sum's) can differ from it by an ulp. Exact in Python: the product and the
    sum as fractions, rounded to float64 once; to float32 from there, a tie of the float64 number
    between two float32 numbers decided by the side the exact sum lies on. A sum with an infinity
    or a nan, or a product that is 0, is the plain sum, whose IEEE rules (signs of zeros, nan) the
    fused one follows."""
    product = float(a) * float(b)
    if not (math.isfinite(product) and math.isfinite(c)) or product == 0.0:
        return in_dtype(float(c) + product, single)
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if exact == 0:
        return in_dtype(0.0, single)  # x + (-x) is +0.0, rounding to nearest
    near = float(exact)  # the nearest float64 (int / int is rounded correctly)
    if not single or not math.isfinite(near):
        return in_dtype(near, single)
    rounded = round32(near)
    if rounded != near and math.isfinite(rounded):
        other = _neighbour32(rounded, near)
        if near - rounded == other - near:  # a tie of near, the exact sum on one side of it
            above = exact > Fraction(near)
            below = exact < Fraction(near)
            if above or below:
                rounded = max(rounded, other) if above else min(rounded, other)
    return Single(rounded)


def _neighbour32(x: float, toward: float) -> float:
    """The float32 number next to ``x`` (a finite float32) in the direction of ``toward``."""
    n = _ordered(x, True) + (1 if toward > x else -1)
    bits = n if n >= 0 else (1 << 31) | -n
    value: float = struct.unpack("<f", struct.pack("<I", bits))[0]
    return value


class Fused(Single):
    """A product ``a * b`` that a kernel adds onto another number with one rounding (a fused
    multiply-add): added to a number ``c``, from either side, it gives ``fused(a, b, c)``; read as
    a number alone, it is the product rounded to its type. The engine adds an edge's contribution
    onto its operand's running gradient (``g += part``), so an edge that hands a ``Fused`` makes
    that addition the kernel's fused one."""

    __slots__ = ("_factors", "_single")

    _factors: tuple[float, float]
    _single: bool

    def __new__(cls, a: float, b: float, single: bool) -> Fused:
        self = super().__new__(cls, in_dtype(float(a) * float(b), single))
        self._factors = (float(a), float(b))
        self._single = single
        return self

    def __add__(self, other: float) -> float:  # type: ignore[override]  # a Single, or a float for float64
        a, b = self._factors
        return fused(a, b, float(other), self._single)

    __radd__ = __add__  # type: ignore[assignment]  # as __add__
