"""``vjpgrad course check`` where no process can be started: the checks run in this interpreter.

In a browser (Pyodide, ``sys.platform == "emscripten"``) there are no threads, no subprocesses and
no ``multiprocessing``, so ``grading.run``'s pool of child processes cannot start. There the
exercises are checked one after another in the interpreter itself, by ``pytest.main`` with the same
arguments and the same plugin, and read back by the same code into the same results. Set the
environment variable ``VJPGRAD_COURSE_IN_PROCESS=1`` to take this path anywhere (the tests do, to
check that it gives the results the child processes give).

What the child process gave for free is done by hand here, and undone after each exercise: the
working directory, the environment variables the checks need (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``,
else hypothesis's plugin is registered twice), ``sys.path``, and the student's modules, which are
forgotten so that the next check imports the files as they are then. pytest captures output with
``sys`` (its default, ``fd``, calls ``dup2``) and ``os._exit`` is never called.

The time limit is the clock's, since nothing can stop the interpreter from outside. It is kept by
the first of these that the platform has:

- ``alarm``: ``signal.setitimer`` (SIGALRM), on CPython on Unix in the main thread; costs nothing
  until it fires, and stops a loop inside a C function that checks for signals too;
- ``monitoring``: ``sys.monitoring`` (Python 3.12+, so Pyodide's), a callback at each backward jump
  (each turn of a loop) and each function start that compares the clock with the deadline;
- ``trace``: ``sys.settrace``, the same check at each line (the slowest, for 3.10 and 3.11 without
  signals).

When time is up, ``TimeUp`` (a ``KeyboardInterrupt``, so neither the student's ``except Exception``
nor pytest nor hypothesis keeps it) stops the run at the check that was running; that check is
reported as not finished within the limit, and the later ones as not run, as ``grading`` reports
them. A loop inside one C call that never returns (``time.sleep`` of an hour) is not stopped by the
last two.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import io
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from vjpgrad.course import grading
from vjpgrad.course.exercises import Exercise, folder

VARIABLE = "VJPGRAD_COURSE_IN_PROCESS"
"""The environment variable that, set to 1, makes ``course check`` take this path on any platform."""

CLOCKS = ("alarm", "monitoring", "trace")


def wanted() -> bool:
    """Whether ``course check`` checks in this interpreter: in a browser, or when asked for."""
    return sys.platform == "emscripten" or os.environ.get(VARIABLE, "") == "1"


class TimeUp(KeyboardInterrupt):
    """An exercise's checks ran out of time (a ``KeyboardInterrupt``: nothing on the way catches it)."""


def clock() -> str:
    """The best way this platform has of stopping the checks at a deadline (see the module's text)."""
    import signal

    alarm = hasattr(signal, "setitimer") and sys.platform != "emscripten"
    if alarm and threading.current_thread() is threading.main_thread():
        return "alarm"
    return "monitoring" if hasattr(sys, "monitoring") else "trace"


@contextlib.contextmanager
def deadline(seconds: float, how: str | None = None) -> Iterator[list[bool]]:
    """Raise ``TimeUp`` in the code running in this block once ``seconds`` have passed on the clock,
    by ``how`` (one of ``CLOCKS``; the platform's best by default). Yields a list that holds True once
    time was up."""
    how = how or clock()
    if how not in CLOCKS:
        raise ValueError(f"how must be one of {', '.join(CLOCKS)}, got {how!r}")
    fired: list[bool] = []
    end = time.monotonic() + seconds

    def up() -> None:
        fired.append(True)
        raise TimeUp(f"the checks did not finish within {seconds:g} s")

    stop = {"alarm": _alarm, "monitoring": _monitoring, "trace": _trace}[how](seconds, end, up, fired)
    try:
        yield fired
    finally:
        stop()


def _alarm(seconds: float, end: float, up: Callable[[], None], fired: list[bool]) -> Callable[[], None]:
    import signal

    def ring(signum: int, frame: FrameType | None) -> None:
        up()

    before = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)

    def stop() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)

    return stop


def _monitoring(seconds: float, end: float, up: Callable[[], None], fired: list[bool]) -> Callable[[], None]:
    monitoring: Any = getattr(sys, "monitoring")  # noqa: B009  # Python 3.12+ (mypy checks against 3.10)
    tool = next(t for t in range(6) if monitoring.get_tool(t) is None)
    monitoring.use_tool_id(tool, "vjpgrad course deadline")
    events = monitoring.events

    def check(*_: object) -> Any:
        if not fired and time.monotonic() > end:
            up()
        return None

    monitoring.register_callback(tool, events.JUMP, check)
    monitoring.register_callback(tool, events.PY_START, check)
    monitoring.set_events(tool, events.JUMP | events.PY_START)

    def stop() -> None:
        monitoring.set_events(tool, 0)
        monitoring.register_callback(tool, events.JUMP, None)
        monitoring.register_callback(tool, events.PY_START, None)
        monitoring.free_tool_id(tool)

    return stop


def _trace(seconds: float, end: float, up: Callable[[], None], fired: list[bool]) -> Callable[[], None]:
    before = sys.gettrace()

    def check(frame: FrameType, event: str, arg: object) -> Any:
        if not fired and time.monotonic() > end:
            up()
        return check

    sys.settrace(check)
    here = sys._getframe(1)  # the frames already running (the block's own) are traced too
    frame: FrameType | None = here
    while frame is not None:
        frame.f_trace = check
        frame = frame.f_back

    def stop() -> None:
        sys.settrace(before)
        frame: FrameType | None = here
        while frame is not None:
            frame.f_trace = None
            frame = frame.f_back

    return stop


def run(
    directory: Path, exercises: Sequence[Exercise], timeout: float = grading.TIMEOUT, workers: int | None = None,
    held_out: bool = False, class_mode: bool = False, known_as: str | None = None,
    more_time: grading.MoreTime = grading.UNADVISED,
) -> list[grading.ExerciseResult]:  # fmt: skip
    """``grading.run`` in this interpreter: the exercises one after another (``workers`` is ignored)."""
    work = [(directory, exercise) for exercise in exercises]
    return run_many(work, timeout, held_out, class_mode=class_mode, known_as=known_as, more_time=more_time)


def run_many(
    work: Sequence[tuple[Path, Exercise]], timeout: float = grading.TIMEOUT, held_out: bool = False,
    how: str | None = None, class_mode: bool = False, known_as: str | None = None,
    more_time: grading.MoreTime = grading.UNADVISED,
) -> list[grading.ExerciseResult]:  # fmt: skip
    """``grading.run_many`` in this interpreter: each (directory, exercise) pair in turn, each at most
    ``timeout`` seconds on the clock (kept ``how``: see ``deadline``)."""
    return [
        run_exercise(directory, exercise, timeout, held_out, how, class_mode, known_as, more_time)
        for directory, exercise in work
    ]


@contextlib.contextmanager
def _as_a_child(directory: Path, storage: str) -> Iterator[None]:
    """What a child process of ``grading`` starts with, and is undone after: the student's directory
    as the working one, the checks' environment variables, no bytecode written, and ``sys.path`` and
    the modules of the student's directory and the checks as they were."""
    names = ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "HYPOTHESIS_STORAGE_DIRECTORY")
    environment = {name: os.environ.get(name) for name in names}
    path, cwd, bytecode = list(sys.path), os.getcwd(), sys.dont_write_bytecode
    modules = set(sys.modules)
    os.environ.pop("PYTEST_ADDOPTS", None)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = storage
    sys.dont_write_bytecode = True
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.dont_write_bytecode = bytecode
        sys.path[:] = path
        for name, value in environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _forget(modules, directory.resolve(), folder("checks").resolve())


def _forget(kept: set[str], *places: Path) -> None:
    """Forget the modules imported since ``kept`` was taken from files in ``places`` (the student's,
    the checks'), and any module of the student's directory, so the next check imports them anew."""
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        parent = Path(file).resolve().parent
        if parent == places[0] or (name not in kept and parent in places):
            del sys.modules[name]


class _Kept:
    """The reporter's channel in this interpreter: its messages kept in a list, in order. The
    student's code runs in this very process, so nothing here is out of its reach: this path is for
    a learner checking their own work (in a browser), never for marks (``grading`` is)."""

    def __init__(self) -> None:
        self.messages: list[bytes] = []

    def send_bytes(self, message: bytes) -> None:
        self.messages.append(message)


def run_exercise(
    directory: Path, exercise: Exercise, timeout: float, held_out: bool = False, how: str | None = None,
    class_mode: bool = False, known_as: str | None = None, more_time: grading.MoreTime = grading.UNADVISED,
) -> grading.ExerciseResult:  # fmt: skip
    """One exercise's checks (and its held-out checks when ``held_out``) by ``pytest.main`` here, their
    messages naming ``directory`` as the student knows it (``grading.as_known``), a check stopped at
    the deadline advising what ``more_time`` does."""
    import pytest

    from vjpgrad.course import _plugin

    files = [exercise.check, *(exercise.held_out if held_out else ())]
    arguments = [
        "-q", "--no-header", "-c", str(folder("checks") / "pytest.ini"), "--rootdir", str(exercise.check.parent),
        "--student", str(directory.resolve()), *grading._own(exercise), *(["--class-mode"] if class_mode else []),
        *(["--known-as", known_as] if known_as is not None else []), *grading.HYPOTHESIS_PLUGIN, "--capture=sys",
        "-p", "no:faulthandler", *map(str, files),
    ]  # fmt: skip
    kept = _Kept()
    reporter = _plugin.Reporter(kept, hmac.new(b"in-process", digestmod=hashlib.sha256))
    output = io.StringIO()
    fired: list[bool] = []
    with (
        _as_a_child(directory, grading.hypothesis_home()),
        contextlib.redirect_stdout(output),
        contextlib.redirect_stderr(output),
    ):
        try:
            with deadline(timeout, how) as fired:
                pytest.main(arguments, plugins=[reporter])
        except TimeUp:  # raised after pytest.main returned, before the deadline was lifted
            pass
    events = [json.loads(message[: -hashlib.sha256().digest_size]) for message in kept.messages]
    # read as a run that was not stopped; a stop on the clock is said below (grading's words for a
    # stopped run name the CPU where the platform has a resource module, which Pyodide's is not)
    told = grading.Told(class_mode, more_time)
    result = grading._result(exercise, events, output.getvalue(), False, timeout, told, directory.resolve())
    return grading.as_known(_on_the_clock(result, timeout, more_time) if fired else result, directory, known_as)


def _on_the_clock(
    result: grading.ExerciseResult, timeout: float, more_time: grading.MoreTime = grading.UNADVISED
) -> grading.ExerciseResult:
    """The results of a run stopped at the deadline: the check that was running did not finish in
    time (or the checks did not start), said as ``grading`` says it of a child process stopped."""
    limit = f"{timeout:g} s"
    tests = []
    for test in result.tests:
        message = test.message
        if test.name == "checks_could_not_run":
            message = f"its checks did not start within {limit}"
        elif message == grading.STOPPED:
            message = f"it did not finish within {limit} ({grading.advice(more_time)})"
        tests.append(dataclasses.replace(test, message=message))
    return grading.ExerciseResult(result.exercise, tests)
