"""What the checks expect back from a student's function, said in one line when it is something else."""

from __future__ import annotations

import numbers
from typing import Any


def items(result: object, length: int, call: str, expected: str) -> list[Any]:
    """``result`` as a list, when it is a list or tuple of ``length`` items; otherwise an
    ``AssertionError`` that shows the call, what it returned and what was ``expected``."""
    __tracebackhide__ = True
    if not isinstance(result, (list, tuple)) or len(result) != length:
        raise AssertionError(f"{call} returned {result!r}: expected {expected}")
    return list(result)


def floats(result: object, length: int, call: str, expected: str) -> list[float]:
    """``items``, each a real number, as floats."""
    __tracebackhide__ = True
    found = items(result, length, call, expected)
    if not all(isinstance(x, numbers.Real) for x in found):
        raise AssertionError(f"{call} returned {result!r}: expected {expected}")
    return [float(x) for x in found]
