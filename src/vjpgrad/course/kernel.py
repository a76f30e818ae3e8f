"""What the kernel counts of the student's process, read from outside it (Linux's ``/proc``).

A number the student's process reports about itself (``probe``) can be misreported by the student's
code; the kernel's own count of that process cannot. The checks' process reads it by the student's
process id, which the grading process took from the process it started, never from anything the
student's process said. Where ``/proc`` is not there (macOS, Windows, Pyodide) the checks fall back to
``probe``'s count, made in the student's process.

- Peak memory: ``VmHWM`` in ``/proc/PID/status``, the most memory the process has held in RAM (its
  resident set), which writing ``5`` to ``/proc/PID/clear_refs`` resets to what it holds now.
"""

from __future__ import annotations

from pathlib import Path


class UnmeasuredError(Exception):
    """The kernel's count of the student's process could not be read or reset (it was at the start)."""


def _proc(pid: int, name: str) -> Path:
    return Path("/proc") / str(pid) / name


def resident_peak(pid: int) -> int:
    """The most memory (bytes) process ``pid`` has held in RAM since its peak was last reset."""
    try:
        status = _proc(pid, "status").read_text(encoding="ascii")
    except (OSError, ValueError) as error:
        raise UnmeasuredError(f"/proc/{pid}/status could not be read: {error}") from None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            number, unit = line.split()[1:3]
            if unit == "kB":
                return int(number) * 1024
    raise UnmeasuredError(f"/proc/{pid}/status has no VmHWM in kB")


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
