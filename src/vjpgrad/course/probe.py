"""What is measured where the student's code runs: a call's peak memory, its CPU time, a call at a
given recursion limit, and a long chain of operations built without a request per link.

Each helper takes the student's objects and plain data and returns plain data (and the student's
objects it made). With ``remote``, they run in the student's process, so a student's code could
misreport what they measure (memory, time, depth): where the kernel's count can be read from the
checks' process (``kernel``, Linux), memory and time are taken from it instead, and ``peak_memory``
and ``cpu_seconds`` here are the fallback. The numbers the checks compare with the reference are
never computed here.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from tracemalloc import get_traced_memory, start, stop
from typing import Any


def peak_memory(function: Callable[..., Any], *arguments: Any) -> int:
    """The peak memory (bytes, by ``tracemalloc``) of ``function(*arguments)``; its result is dropped."""
    start()  # the standard library's, bound before the student's code is imported
    try:
        function(*arguments)
        return int(get_traced_memory()[1])
    finally:
        stop()


def dropped(function: Callable[..., Any], *arguments: Any) -> None:
    """``function(*arguments)``, its result dropped: a call measured from outside (``kernel``)."""
    function(*arguments)


def cpu_seconds(function: Callable[..., Any], *arguments: Any) -> tuple[Any, float]:
    """``function(*arguments)`` and the CPU seconds it took, with the collector as a training script
    would set it: its first threshold raised and the objects made before frozen. A micrograd-shaped
    engine makes a reference cycle per node (out -> out._backward -> out), and at CPython's default
    thresholds the collector then takes about half of the training time."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    begun = time.process_time()  # CPU time: a busy machine does not fail the student
    try:
        result = function(*arguments)
    finally:
        seconds = time.process_time() - begun
        gc.set_threshold(*thresholds)
        gc.unfreeze()
    return result, seconds


def at_recursion_limit(limit: int, function: Callable[..., Any], *arguments: Any) -> Any:
    """``function(*arguments)`` with the interpreter's recursion limit at ``limit``."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        return function(*arguments)
    finally:
        sys.setrecursionlimit(before)


def chain(value_type: Callable[[float], Any], start: float, factor: float, links: int) -> tuple[Any, Any]:
    """``x = value_type(start)`` and ``y = x * factor * factor ...`` (``links`` times): (x, y)."""
    x = value_type(start)
    y = x
    for _ in range(links):
        y = y * factor
    return x, y


def derivative_rule(operation: Any) -> Any:
    """The rule a ``vjpgrad.custom_op`` was given with ``.derivative`` (as written, not as checked),
    or None when it has none."""
    checked = getattr(getattr(operation, "op", None), "saved", (None,))[0]
    code, cells = getattr(checked, "__code__", None), getattr(checked, "__closure__", None) or ()
    if code is None:
        return None
    return dict(zip(code.co_freevars, (cell.cell_contents for cell in cells), strict=False)).get("rule")


def leaf_gradients(output: Any) -> list[tuple[Any, Any]]:
    """Each Value ``output`` was computed from that no operation made (its ``_prev`` is empty), found
    by a loop, with its ``.grad`` now: the walk of a whole graph in one request, not one a node."""
    found, seen, stack = [], {id(output)}, [output]
    while stack:
        node = stack.pop()
        operands = list(getattr(node, "_prev", ()))
        if not operands:
            found.append((node, getattr(node, "grad", None)))
        for operand in operands:
            if id(operand) not in seen:
                seen.add(id(operand))
                stack.append(operand)
    return found


HELPERS: dict[str, Callable[..., Any]] = {
    "peak_memory": peak_memory,
    "dropped": dropped,
    "cpu_seconds": cpu_seconds,
    "at_recursion_limit": at_recursion_limit,
    "chain": chain,
    "derivative_rule": derivative_rule,
    "leaf_gradients": leaf_gradients,
}
"""The helpers the checks may run where the student's code runs, by name."""
