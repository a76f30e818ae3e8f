"""IEEE-754 float arithmetic as PyTorch gives it: never a Python exception at a domain edge.

Python's ``math`` module raises where C and PyTorch return ``inf`` or ``nan``
(``math.log(0)`` raises ``ValueError``, ``1.0 / 0.0`` raises ``ZeroDivisionError``).
Every forward value and every local derivative in vjpgrad goes through these functions,
so ``log(0) = -inf``, ``1/0 = inf``, ``0/0 = nan`` and ``sqrt(-1) = nan`` hold everywhere.
Where PyTorch computes an operation as another one (``x ** 0.5`` as ``sqrt(x)``), so do we.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable
from typing import cast

inf = math.inf
nan = math.nan
_fsum = math.fsum


def as_number(x: object) -> float | None:
    """A real number as a float (None for anything else): int, float, bool, Fraction, NumPy.
    What an operator takes beside a Value; anything else makes it return NotImplemented."""
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, numbers.Real):
        return float(x)
    return None


def div(x: float, y: float) -> float:
    """x / y with IEEE-754 results for a zero divisor (1/0 = inf, -1/0 = -inf, 0/0 = nan), each the
    bits the processor's division gives, as PyTorch's and NumPy's: a nan divided is itself, and 0/0
    the processor's default nan (an invalid operation, as ``0 * inf`` is: negative on x86-64)."""
    try:
        return x / y
    except ZeroDivisionError:
        if x != x:
            return x
        if x == 0.0:
            return x * inf
        return math.copysign(inf, x) * math.copysign(1.0, y)


def reciprocal(x: float) -> float:
    """1 / x."""
    return div(1.0, x)


def _is_odd_integer(y: float) -> bool:
    return math.isfinite(y) and abs(math.fmod(y, 2.0)) == 1.0


def power(x: float, y: float) -> float:
    """C's ``pow(x, y)``: overflow gives inf, a negative base with a fractional exponent nan."""
    try:
        return math.pow(x, y)
    except OverflowError:
        return -inf if x < 0.0 and _is_odd_integer(y) else inf
    except ValueError:
        if x == 0.0:  # zero to a negative power: a pole, signed for odd exponents
            return math.copysign(inf, x) if _is_odd_integer(y) else inf
        return nan


def exp(x: float) -> float:
    """e ** x; overflow gives inf."""
    try:
        return math.exp(x)
    except OverflowError:
        return inf


def log(x: float) -> float:
    """Natural logarithm: log(0) = -inf, log(x < 0) = nan."""
    try:
        return math.log(x)
    except ValueError:
        return -inf if x == 0.0 else nan


def log1p(x: float) -> float:
    """log(1 + x), exact for small x: log1p(-1) = -inf, log1p(x < -1) = nan."""
    try:
        return math.log1p(x)
    except ValueError:
        return -inf if x == -1.0 else nan


def sqrt(x: float) -> float:
    """Square root: sqrt(x < 0) = nan, sqrt(-0.0) = -0.0."""
    try:
        return math.sqrt(x)
    except ValueError:
        return nan


POWER_STEPS: dict[float, tuple[str, ...]] = {
    0.0: ("one",),
    1.0: (),
    0.5: ("sqrt",),
    -0.5: ("sqrt", "reciprocal"),
    -1.0: ("reciprocal",),
    2.0: ("square",),
    3.0: ("cube",),
    -2.0: ("square", "reciprocal"),
}
"""The exponents that ``x ** k`` for a number ``k`` computes without C's ``pow``, as PyTorch's CPU
kernel does, each as the steps it runs on ``x`` in order: ``one`` (the number 1.0), ``sqrt``,
``reciprocal``, ``square`` (``x * x``) and ``cube`` (``x * x * x``, rounded twice). It shows at
inf and nan (``(-inf) ** 0.5`` is ``sqrt(-inf) = nan`` where C's ``pow`` gives ``inf``) and in
the last bit. The one place this is known: ``core/powers.py`` (``power_scalar``, on floats) is
written from it by ``python -m vjpgrad.codegen --write``, compile's writer writes the steps out
for an exponent it knows (``codegen.symbols``), and vmap's fast mode runs them on arrays."""


def sin(x: float) -> float:
    """Sine: sin(±inf) = nan."""
    try:
        return math.sin(x)
    except ValueError:
        return nan


def cos(x: float) -> float:
    """Cosine: cos(±inf) = nan."""
    try:
        return math.cos(x)
    except ValueError:
        return nan


def tan(x: float) -> float:
    """Tangent: tan(±inf) = nan."""
    try:
        return math.tan(x)
    except ValueError:
        return nan


def tanh(x: float) -> float:
    """Hyperbolic tangent (never raises)."""
    return math.tanh(x)


def sigmoid(x: float) -> float:
    """1 / (1 + exp(-x)), PyTorch's formula: sigmoid(-inf) = 0, sigmoid(inf) = 1."""
    return reciprocal(1.0 + exp(-x))


def atan2(y: float, x: float) -> float:
    """The angle of the point (x, y), C's ``atan2``: signed zeros and infinities give C99's
    angles (``atan2(0.0, -0.0) = pi``, ``atan2(inf, inf) = pi / 4``); never raises."""
    return math.atan2(y, x)


def hypot(x: float, y: float) -> float:
    """``sqrt(x * x + y * y)`` without overflow, the C library's ``hypot`` as PyTorch computes it:
    ``hypot(inf, nan) = inf``. Python's ``math.hypot`` is its own algorithm, which can differ
    from the C library's in the last bit; where the C library can be loaded, its ``hypot`` is
    used (``math.hypot`` elsewhere), loaded at the first call (``_first_hypot``)."""
    return _c_hypot(x, y)


def _first_hypot(x: float, y: float) -> float:
    """``hypot``'s first call: loads the C library's (``_load_c_hypot``) and calls it. Not at import:
    ``ctypes`` and the search for the library cost some 15 ms of every ``import vjpgrad``, and in a
    course's student process a ctypes object made before the guard keeps raw memory within reach
    (the guard refuses ``ctypes`` from then on: ``math.hypot`` there)."""
    global _c_hypot
    _c_hypot = _load_c_hypot()
    return _c_hypot(x, y)


def _load_c_hypot() -> Callable[[float, float], float]:
    """The C library's ``hypot``, or ``math.hypot`` where no C library can be loaded."""
    try:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("m") or ("ucrtbase" if os.name == "nt" else None)
        function = ctypes.CDLL(name).hypot
    except (ImportError, OSError, AttributeError, TypeError):
        return math.hypot
    function.restype = ctypes.c_double
    function.argtypes = (ctypes.c_double, ctypes.c_double)
    return cast("Callable[[float, float], float]", function)


_c_hypot: Callable[[float, float], float] = _first_hypot  # the C library's hypot, from the first call on


def relu(x: float) -> float:
    """max(x, 0) as PyTorch's ``clamp_min(x, 0)``: relu(nan) = nan, relu(-0.0) = -0.0."""
    return 0.0 if x < 0.0 else x


def one_minus_square(r: float) -> float:
    """``1 - r * r`` rounded once, as ``fma(-r, r, 1)`` gives it.

    PyTorch's CPU ``tanh_backward`` kernel is compiled with floating-point contraction, so
    its ``g * (1 - r * r)`` rounds ``1 - r * r`` once; rounding ``r * r`` first can lose
    the last bits (many of them where ``r`` is near 1). Python before 3.13 has no
    ``math.fma``. For ``|r| <= 1`` (every tanh output) Dekker's product splits ``r * r``
    exactly into ``p + e`` and ``fsum`` rounds ``1 - p - e`` once; beyond, the exact value
    is a ratio of integers, and int / int rounds correctly.
    """
    if -1.0 <= r <= 1.0:
        p = r * r
        c = 134217729.0 * r  # 2**27 + 1: Veltkamp's split of r into 26 + 27 bits
        high = c - (c - r)
        low = r - high
        return _fsum((1.0, -p, -(((high * high - p) + 2.0 * high * low) + low * low)))
    if r != r or r in (inf, -inf):
        return 1.0 - r * r  # nan, or -inf
    numerator, denominator = r.as_integer_ratio()
    square = denominator * denominator
    try:
        return (square - numerator * numerator) / square
    except OverflowError:  # r * r beyond the largest float
        return -inf


def sign(x: float) -> float:
    """-1, 0 or 1; sign(nan) = 0, PyTorch's convention for the derivative of abs."""
    return float((x > 0.0) - (x < 0.0))
