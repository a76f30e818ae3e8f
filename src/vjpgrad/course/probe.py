"""What is measured where the student's code runs: a call's peak memory, its CPU time, a call at a
given recursion limit, and a long chain of operations built without a request per link.

Each helper takes the student's objects and plain data and returns plain data (and the student's
objects it made). With ``remote``, they run in the student's process, so a student's code could
misreport what they measure (memory, time, depth): where the kernel's count can be read from the
checks' process (``kernel``, Linux), memory and time are taken from it instead, and ``peak_memory``
and ``cpu_seconds`` here are the fallback. The numbers the checks compare with the reference are
never computed here.

The student's process also refuses ``sys.setrecursionlimit`` to the student's code
(``refuse_recursion_limit``, installed before any of it runs): no count the kernel keeps tells a
recursive ``backward()`` from a loop, so exercise 4's check of a deep graph at Python's default limit
means something only where the student's code cannot raise it. No reference to the interpreter's
own setter is kept there: the process runs at the default limit, which is the one the checks ask for.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from tracemalloc import get_traced_memory, start, stop
from typing import Any


def peak_memory(function: Callable[..., Any], *arguments: Any) -> int:
    """The peak memory (bytes, by ``tracemalloc``) of ``function(*arguments)``, or since ``trace``
    when that ran first; its result is dropped."""
    start()  # the standard library's, bound before the student's code is imported (tracing already: nothing)
    try:
        function(*arguments)
        return int(get_traced_memory()[1])
    finally:
        stop()


def peak_memory_and_result(function: Callable[..., Any], *arguments: Any) -> tuple[int, Any]:
    """``peak_memory`` of ``function(*arguments)`` and its result (which the checks compare too)."""
    start()
    try:
        result = function(*arguments)
        return int(get_traced_memory()[1]), result
    finally:
        stop()


def trace() -> None:
    """Start ``tracemalloc``, so that the next ``peak_memory`` counts from now: from before a module
    is imported, when the checks ask for this first."""
    start()


def dropped(function: Callable[..., Any], *arguments: Any) -> None:
    """``function(*arguments)``, its result dropped: a call measured from outside (``kernel``)."""
    function(*arguments)


def called(function: Callable[..., Any], *arguments: Any) -> Any:
    """``function(*arguments)``, its result kept: a call measured from outside whose result the checks compare."""
    return function(*arguments)


GC_FIRST = 500_000
"""The collector's first threshold while a training is timed: above what one training step of the
reference MLP allocates and keeps alive (about 55,000 objects the collector tracks), so that most of a
step's graph dies young, before the collector moves it to the older generations, whose collections
scan everything they hold. The reference ``train()`` takes about 4 s of CPU so, about 10 s at a
threshold of 10,000 and 14 s at CPython's 700, with the same peak memory (130 to 160 MB); with the
collector off, 2.6 s and 400 MB."""


FROZEN_AT_IMPORT = gc.get_freeze_count()
"""How many objects the process had frozen when this module was imported: 0, or on CPython 3.12 a few
hundred of its own start. More when a training starts means another freeze happened since (the fork
server's, ``_warm``, which imports this module first), and ``cpu_seconds`` must not undo it."""


def cpu_seconds(function: Callable[..., Any], *arguments: Any) -> tuple[Any, float]:
    """``function(*arguments)`` and the CPU seconds it took, with the collector as a training script
    would set it: its first threshold raised and the objects made before frozen. A micrograd-shaped
    engine makes a reference cycle per node (out -> out._backward -> out), and at CPython's default
    thresholds the collector then takes most of the training time. The first threshold is ``GC_FIRST``.

    What it froze is let go after, unless the process had frozen objects since its start (a student's
    process forked from the grader's fork server, which froze its own: ``_warm``). ``gc.unfreeze``
    lets every frozen object go, and would hand the server's 50,000 back to the collector, which
    then scans them at each full collection, on the student's CPU; so the process's objects made
    before the training stay frozen there too, for the short life of that process."""
    thresholds = gc.get_threshold()
    frozen_before = gc.get_freeze_count() > FROZEN_AT_IMPORT
    gc.freeze()
    gc.set_threshold(GC_FIRST, 10, 10)
    begun = time.process_time()  # CPU time: a busy machine does not fail the student
    try:
        result = function(*arguments)
    finally:
        seconds = time.process_time() - begun
        gc.set_threshold(*thresholds)
        if not frozen_before:
            gc.unfreeze()
    return result, seconds


DEFAULT_RECURSION_LIMIT = 1_000
"""Python's default recursion limit: the one the student's process runs at (``refuse_recursion_limit``)."""

RECURSION_RULE = (
    "sys.setrecursionlimit is refused where the course runs your code: exercise 4's rule is that "
    "backward() works at Python's default recursion limit (1,000), whatever the depth of the graph"
)
"""What a student's code reads when it tries to raise the recursion limit (``refuse_recursion_limit``)."""


def _refused_recursion_limit(limit: int, /) -> None:
    raise PermissionError(RECURSION_RULE)


def refuse_recursion_limit() -> None:
    """Set the recursion limit to Python's default (``DEFAULT_RECURSION_LIMIT``), then replace
    ``sys.setrecursionlimit`` by one that raises ``PermissionError`` naming exercise 4's rule
    (``RECURSION_RULE``), in the student's process, before any of their code runs. No reference to
    the interpreter's own setter is kept anywhere in that process: the grader never needs another
    limit there (``at_recursion_limit`` asks for the one it runs at)."""
    sys.setrecursionlimit(DEFAULT_RECURSION_LIMIT)
    sys.setrecursionlimit = _refused_recursion_limit


def at_recursion_limit(limit: int, function: Callable[..., Any], *arguments: Any) -> Any:
    """``function(*arguments)`` with the interpreter's recursion limit at ``limit``: where it already
    is (the student's process, at the default), as it is; elsewhere (the checks' own process, in
    ``inprocess``) set by ``sys.setrecursionlimit`` for the call and put back after."""
    before = sys.getrecursionlimit()
    if before == limit:
        return function(*arguments)
    if sys.setrecursionlimit is _refused_recursion_limit:
        raise ValueError(f"the student's process runs at a recursion limit of {before:,}, not {limit:,}")
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
    "trace": trace,
    "dropped": dropped,
    "called": called,
    "peak_memory_and_result": peak_memory_and_result,
    "cpu_seconds": cpu_seconds,
    "at_recursion_limit": at_recursion_limit,
    "chain": chain,
    "derivative_rule": derivative_rule,
    "leaf_gradients": leaf_gradients,
}
"""The helpers the checks may run where the student's code runs, by name."""
