"""What the kernel counts of the student's process, read from outside it (Linux's ``/proc``).

A number the student's process reports about itself (``probe``) can be misreported by the student's
code; the kernel's own count of that process cannot. The checks' process reads it by the student's
process id, which the grading process took from the process it started, never from anything the
student's process said. Where ``/proc`` is not there (macOS, Windows, Pyodide) the checks fall back to
``probe``'s count, made in the student's process.

- Peak memory (``peak_while``): ``VmHWM`` in ``/proc/PID/status``, the most memory the process has
  held in RAM (its resident set) since writing ``5`` to ``/proc/PID/clear_refs`` reset it to what it
  held then. The student's process can reset it too (after building and freeing the Jacobian), so
  its resident set (``VmRSS``) is also read every ``INTERVAL`` while the call runs, and the higher
  count wins; the growth is counted from the lowest reading, when the process gave memory back
  (below what it held at the reset) before taking more. The count tells what the process took from
  the system, not what was allocated: memory it already holds (filled, then freed but kept
  resident by the allocator) is reused without the resident set growing. So the checks count from
  before the student's module is imported, in a process none of their code has run in
  (``remote.Checks.peak_memory_with_import``): what an import fills then counts. Ways left to
  hide memory: holding it for less than ``INTERVAL`` between two readings, then giving it back and
  resetting the peak; giving back memory held at the reset (the allocator's free pages, shared
  libraries' pages, through ``ctypes``) a little at a time as much is taken, so that no reading
  is lower; and a child process the student's code does not wait for.
- CPU time (``cpu_while``): ``utime`` and ``stime`` in ``/proc/PID/stat``, the CPU the process's
  threads have used, with ``cutime`` and ``cstime``, its children's that it waited for.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

INTERVAL = 0.001
"""Seconds between two readings of the student's process's resident set while a measured call runs."""


class UnmeasuredError(Exception):
    """The kernel's count of the student's process could not be read or reset (it was at the start)."""


def _proc(pid: int, name: str) -> Path:
    return Path("/proc") / str(pid) / name


def _status(pid: int, field: str) -> int:
    """``field`` of ``/proc/PID/status`` in bytes (``VmHWM``, ``VmRSS``)."""
    try:
        status = _proc(pid, "status").read_text(encoding="ascii")
    except (OSError, ValueError) as error:
        raise UnmeasuredError(f"/proc/{pid}/status could not be read: {error}") from None
    for line in status.splitlines():
        if line.startswith(field + ":"):
            number, unit = line.split()[1:3]
            if unit == "kB":
                return int(number) * 1024
    raise UnmeasuredError(f"/proc/{pid}/status has no {field} in kB")


def resident_peak(pid: int) -> int:
    """The most memory (bytes) process ``pid`` has held in RAM since its peak was last reset."""
    return _status(pid, "VmHWM")


def resident(pid: int) -> int:
    """The memory (bytes) process ``pid`` holds in RAM now."""
    return _status(pid, "VmRSS")


def reset_peak(pid: int) -> int:
    """Reset process ``pid``'s peak memory to what it holds now, and return that (bytes)."""
    try:
        _proc(pid, "clear_refs").write_text("5", encoding="ascii")
    except OSError as error:
        raise UnmeasuredError(f"/proc/{pid}/clear_refs could not be written: {error}") from None
    return resident_peak(pid)


def can_measure(pid: int | None) -> bool:
    """Whether the kernel's count of process ``pid``'s peak memory can be reset and read here: asked
    once, before any of the student's code has run in it."""
    if pid is None:
        return False
    try:
        reset_peak(pid)
    except UnmeasuredError:
        return False
    return True


def peak_while(pid: int, call: Callable[[], Any]) -> int:
    """How much more memory (bytes) process ``pid`` held in RAM at its peak while ``call()`` ran (in
    another process: ``pid``'s) than at its lowest: the peak is the kernel's, reset before the call
    and read after, or the most its resident set was at a reading every ``INTERVAL``, whichever is
    higher; the lowest is what it held at the reset, or less when a reading found less."""
    before = reset_peak(pid)
    highest, lowest = [before], [before]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            try:
                now = resident(pid)
            except UnmeasuredError:
                return
            highest[0], lowest[0] = max(highest[0], now), min(lowest[0], now)
            done.wait(INTERVAL)

    watcher = threading.Thread(target=watch, name="vjpgrad course: the student's memory", daemon=True)
    watcher.start()
    try:
        call()
    finally:
        done.set()
        watcher.join()
    return max(0, max(highest[0], resident_peak(pid)) - lowest[0])


def cpu_seconds(pid: int) -> float:
    """The CPU seconds process ``pid`` has used (all its threads, user and system), with those of the
    children it has waited for."""
    try:
        stat = _proc(pid, "stat").read_text(encoding="ascii", errors="replace")
        fields = stat[stat.rindex(")") + 2 :].split()  # after the name, which may hold spaces
        ticks = sum(int(fields[k]) for k in (11, 12, 13, 14))  # utime, stime, cutime, cstime
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError) as error:
        raise UnmeasuredError(f"/proc/{pid}/stat could not be read: {error}") from None


def cpu_while(pid: int, call: Callable[[], Any]) -> tuple[Any, float]:
    """``call()``'s result and the CPU seconds process ``pid`` used while it ran (in ``pid``)."""
    before = cpu_seconds(pid)
    result = call()
    return result, cpu_seconds(pid) - before
