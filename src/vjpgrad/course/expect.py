"""What the checks expect back from a student's function, said in one line when it is something else;
and ``advice``, the part of a check's message that says how to write the fix, which class mode leaves out."""

from __future__ import annotations

import numbers
from typing import Any

SAY_HOW = [True]
"""Whether messages say how to write the fix (self-study) or only what differs (class mode):
``_plugin`` sets it from ``--class-mode`` before any check runs."""


def advice(how: str, instead: str = "") -> str:
    """A message's advice on how to write the fix: ``how`` in self-study; in class mode ``instead``,
    what the message says in its place (nothing, or what differs said without the fix)."""
    return how if SAY_HOW[0] else instead


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


def number(x: object) -> float | None:
    """``x`` as a float where it came over as a number (an int or a float, never a bool), else None:
    anything else is an object of the student's process, whose ``==`` would answer for itself."""
    if type(x) is float or type(x) is int:  # exactly: a subclass's == is its own
        return float(x)
    return None
