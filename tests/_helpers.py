"""Helpers the tests share: central finite differences and float comparison."""

from __future__ import annotations

import math
from collections.abc import Callable


def central_difference(f: Callable[[float], float], x: float, eps: float = 1e-6) -> float:
    """(f(x + h) - f(x - h)) / 2h, with h scaled to x."""
    h = eps * max(1.0, abs(x))
    return (f(x + h) - f(x - h)) / (2 * h)


def close(actual: float, expected: float, rel: float = 1e-4, abs_tol: float = 1e-6) -> bool:
    """Equal within tolerance; inf must match inf of the same sign, nan must match nan."""
    if math.isnan(expected) or math.isnan(actual):
        return math.isnan(expected) and math.isnan(actual)
    if math.isinf(expected) or math.isinf(actual):
        return actual == expected
    return math.isclose(actual, expected, rel_tol=rel, abs_tol=abs_tol)
