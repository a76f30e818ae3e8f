"""Grading: run the checks against a student's directory, and report the results.

``run`` checks each exercise in child processes of its own, several exercises at a time where the
machine has the cores, each with a time limit: a student's crash, ``sys.exit``, ``os._exit`` or
endless loop costs only the exercise it is in. The children are forked from a server that has
imported pytest, hypothesis and vjpgrad once. Each exercise has two: the student's process
(``student_process``), where their files are imported and their code runs, and the checks' process,
pytest with the plugin ``vjpgrad.course._plugin``, which never imports a student's file: it holds
proxies of the student's objects (``remote``), computes the reference, compares and decides there,
and sends one message per event over a pipe this process owns. ``run`` reads them back into an
``ExerciseResult`` per exercise, whose score is the exercise's points shared among its checks by
weight. ``scoreboard`` is the text a student reads, ``as_json`` what an autograder reads.

The student's code can reach neither the checks' objects nor this process's: it runs in a process
that holds none of them and answers the checks' requests with plain data (``remote``). The checks'
process is made one that the same user's processes cannot trace (Linux), and with the autograder's
``--user`` the student's process runs as another user. The results are recorded here, never in a
file. Each
message the child sends is signed with a key made here for that child alone (HMAC-SHA256, over
the message and its place in the sequence): the child's plugin keeps only a keyed hash object,
made before any student code is imported. A message that is not signed, out of order, or not a
whole message (a student's code writing into the pipe) voids the exercise's report: it scores
nothing and is marked as tampered with (``TAMPERED``). The held-out checks run in a process of
their own, so the process that runs the checks a student sees never imports them.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import importlib.util
import json
import math
import multiprocessing
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vjpgrad.course.exercises import Course, Exercise, builtin, folder

DONE, FAILING, NOT_STARTED = "done", "failing", "not started"
PASSED, FAILED, NOT_RUN = "passed", "failed", "not run"
TAMPERED = "the report of these checks was written to by something other than the grader"
"""The remark on an exercise whose report failed its authentication: it scores nothing."""
TIMEOUT = 120.0
"""Seconds of CPU each exercise's checks may take (exercise 11 trains a network in about 5 s of CPU).
CPU time, not the clock's, where the platform can limit it (``resource``): a busy machine does not
fail a student; the clock's limit is then ``WALL`` times as long, for a process that waits forever."""
WALL = 5
TIMEOUT_LIMIT = 86_400.0
"""The longest ``--timeout`` taken, in seconds (a day): beyond it (``inf``) no limit can be set, and
every exercise would fail for the grader's reason, not the student's."""


@dataclass(frozen=True)
class MoreTime:
    """How the readers of an exercise's results can give its checks more time, where they can: the
    student's words, in the message of a check stopped at the time limit (``check``'s, whose
    ``--timeout`` is theirs); the teacher's, in a remark (``grade``'s and the autograder's, whose
    ``--timeout`` the student reading the results cannot use). Empty: nothing to advise."""

    student: str = ""
    teacher: str = ""


UNADVISED = MoreTime()
"""No advice: a reader of the results that no ``--timeout`` is known to be theirs."""
CHECK = MoreTime(student="--timeout gives more time")
GRADE = MoreTime(teacher="`vjpgrad course grade --timeout SECONDS` gives more time")
AUTOGRADER = MoreTime(teacher="`--timeout SECONDS` added to run_autograder's command gives more time")


RUN_AS: list[tuple[int, int] | None] = [None]
"""The user (uid, gid) the processes where the student's code runs drop to before they import
anything of theirs, when the grader runs as root (``autograder``; the checks' processes stay root's);
none: the grader's own user."""


def cores() -> int:
    """How many child processes to run at once: the cores this process may use."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity is not None else (os.cpu_count() or 1))


@dataclass(frozen=True)
class TestResult:
    """One check: its name (its test function's, without ``test_``), outcome and message; the sentence
    that names it for a student (``title``), its weight, and whether it is a held-out check."""

    name: str
    outcome: str  # PASSED, FAILED, NOT_STARTED or NOT_RUN
    message: str = ""
    seconds: float = 0.0
    title: str = ""
    weight: float = 1.0
    held_out: bool = False

    @property
    def sentence(self) -> str:
        return self.title or self.name.replace("_", " ")


@dataclass
class ExerciseResult:
    """An exercise's checks and what they say about it."""

    exercise: Exercise
    tests: list[TestResult] = field(default_factory=list)
    remarks: list[str] = field(default_factory=list)
    """What the teacher is told and the student is not: a report tampered with, borrowed work."""
    note: str = ""
    """Why it may fail through no fault of its own: an earlier exercise it runs on is not done."""

    @property
    def passed(self) -> int:
        return sum(test.outcome == PASSED for test in self.tests)

    @property
    def status(self) -> str:
        """``done`` when every check passes, ``not started`` when nothing is written yet (every
        check stops at the skeleton's NotImplementedError), ``failing`` otherwise."""
        if self.tests and self.passed == len(self.tests):
            return DONE
        if self.tests and all(test.outcome == NOT_STARTED for test in self.tests):
            return NOT_STARTED
        return FAILING

    def first_problem(self) -> TestResult | None:
        """The check to show: the first that failed, else the first not started, else the first not
        run (held-out ones last)."""
        for outcome in (FAILED, NOT_STARTED, NOT_RUN):
            for test in sorted(self.tests, key=lambda t: t.held_out):
                if test.outcome == outcome:
                    return test
        return None

    def max_score(self, held_out: bool | None = None) -> float:
        """The points of the checks asked for (all; or only the held-out ones, or only the others)."""
        total = sum(t.weight for t in self.tests)
        chosen = sum(t.weight for t in self.tests if held_out is None or t.held_out is held_out)
        return self.exercise.points * chosen / total if total else 0.0

    def score(self, held_out: bool | None = None) -> float:
        """The points earned: the exercise's points shared among its checks by weight, for those passed."""
        total = sum(t.weight for t in self.tests)
        chosen = [t for t in self.tests if held_out is None or t.held_out is held_out]
        earned = sum(t.weight for t in chosen if t.outcome == PASSED)
        return self.exercise.points * earned / total if total else 0.0


def run(
    directory: Path, exercises: Sequence[Exercise], timeout: float = TIMEOUT, workers: int | None = None,
    held_out: bool = False, class_mode: bool = False, known_as: str | None = None, more_time: MoreTime = UNADVISED,
) -> list[ExerciseResult]:  # fmt: skip
    """Check ``exercises`` against the files in ``directory``, each in its own process, at most
    ``timeout`` seconds each, ``workers`` at a time (the cores by default); the held-out checks too
    when ``held_out``; with messages that say only what differs when ``class_mode``. ``known_as``:
    how the student names ``directory`` (``check``: as they typed it); by default it is the
    submission, and the messages name their files by their paths in it (``as_known``). ``more_time``:
    what a check stopped at the time limit advises (``MoreTime``)."""
    work = [(directory, ex) for ex in exercises]
    return run_many(work, timeout, workers, held_out, class_mode, known_as, more_time)


def run_many(
    work: Sequence[tuple[Path, Exercise]], timeout: float = TIMEOUT, workers: int | None = None,
    held_out: bool = False, class_mode: bool = False, known_as: str | None = None, more_time: MoreTime = UNADVISED,
    kept: Sequence[Path] = (),
) -> list[ExerciseResult]:  # fmt: skip
    """``run`` for (directory, exercise) pairs of several directories, in one pool of processes; the
    longest exercises (``LONGEST``) start first, the results come in the order of ``work``. ``kept``:
    more folders a graded (``held_out``) student's process may not read (``grade``'s ``--out``)."""
    order = sorted(range(len(work)), key=lambda k: (work[k][1].teachers or work[k][1].slug not in LONGEST, k))
    beside = sorted(
        {str(directory.resolve().parent) for directory, _ in work} | {str(path.resolve()) for path in kept}
    )  # where the run's submissions lie, and where its grades are written
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers or cores(), len(work) or 1)))
    try:
        started = {
            k: pool.submit(run_exercise, *work[k], timeout, held_out, class_mode, known_as, more_time, beside)
            for k in order
        }
        return [started[k].result() for k in range(len(work))]
    except BaseException:  # Ctrl-C: the exercises not started never start (they started after it, one by one)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)  # those running end with the Ctrl-C that reached their processes too


LONGEST = ("mlp",)
"""The built-in exercises whose checks take longest (exercise 11 trains a network: about a quarter of
the CPU of a whole course's checks): started first, they run beside the others rather than after them."""


PRELOAD = [
    "pytest", "hypothesis", "hypothesis.strategies", "_hypothesis_pytestplugin", "vjpgrad", "vjpgrad.testing",
    "vjpgrad.course._plugin", "vjpgrad.course._warm",
]  # fmt: skip
"""What the fork server imports once, so that each exercise's process starts without importing them
again (hypothesis alone takes most of a second); ``_warm``, last, does once what each checks' process
would do at its start (hypothesis's reading of the local code's constants)."""


HYPOTHESIS_PLUGIN = ["-p", "_hypothesis_pytestplugin"] if importlib.util.find_spec("_hypothesis_pytestplugin") else []
"""Hypothesis's pytest plugin, loaded by name: the checks' processes load no plugin by its entry point."""


def _processes() -> Any:
    """Where each exercise's process comes from: a fork server that has imported pytest, hypothesis
    and vjpgrad once, where the platform has one (Linux, macOS); else a fresh interpreter each time.
    Its processes are started by ``start``."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


_starting = threading.Lock()


def start(context: Any, process: Any) -> None:
    """Start ``process`` (of ``context``, from ``_processes``), the fork server first if it is not running, from the
    filesystem's root. The fork server is an interpreter started with ``-c``, which searches its
    working directory first (``""`` on ``sys.path``) as it imports ``PRELOAD``: started where
    ``check`` runs, in the student's directory (as GitHub Classroom runs it), their ``pytest.py`` or
    ``hypothesis.py`` would run there, and so in every checks' process forked from it; and their code
    can end it (``check`` runs it as the same user), so any start may start it again. This process's
    working directory is put back before ``process`` starts (its children are given it), and the
    threads start their processes one at a time meanwhile."""
    with _starting:
        if context.get_start_method() == "forkserver":
            from multiprocessing import forkserver

            here = os.getcwd()
            os.chdir(os.path.abspath(os.sep))
            try:
                forkserver.ensure_running()
            finally:
                os.chdir(here)
        process.start()


_scratch: list[str] = []
_scratch_made = threading.Lock()


def scratch() -> str:
    """This process's folder for the grader's own files (each run's temporary folders, the checks'
    output, hypothesis's cache), made once, removed when it exits; never the student's directory. It
    lies in ``scratch_kept()``, which every student's process is kept from (``kept_from_student``):
    the checks' output holds a failing held-out check's traceback, and hypothesis's cache the
    constants and path of every check file, the held-out ones too."""
    with _scratch_made:
        if not _scratch:
            parent = _scratch_parent()
            made = tempfile.mkdtemp(prefix="run-" if parent is not None else "vjpgrad-course-run-", dir=parent)
            _scratch[:] = [parent or made, made]
            atexit.register(shutil.rmtree, made, ignore_errors=True)  # the parent stays: another run may use it
        return _scratch[1]


def scratch_kept() -> str:
    """The folder kept from every student's process that holds ``scratch()``: this user's folder of
    the grader's runs (``_scratch_parent``), so that another run's files at the same time (another
    ``grade``, a test worker) are kept too; this run's own folder where there is none."""
    scratch()
    return _scratch[0]


def _scratch_parent() -> str | None:
    """This user's folder of the grader's runs in the system's temporary folder (``vjpgrad-course-UID``),
    made where it is not there: None where it cannot be trusted (not a folder of this user's that no
    one else may enter: another user could have made it, or a link in its place), and where the
    system has no user ids (Windows): each run's folder is then kept alone."""
    if not hasattr(os, "geteuid"):
        return None
    folder = os.path.join(tempfile.gettempdir(), f"vjpgrad-course-{os.geteuid()}")
    with contextlib.suppress(OSError):
        os.mkdir(folder, 0o700)
    try:
        found = os.lstat(folder)
    except OSError:
        return None
    ours = stat.S_ISDIR(found.st_mode) and found.st_uid == os.geteuid() and not found.st_mode & 0o077
    return folder if ours else None


def scratch_refused() -> str | None:
    """Why a run that grades (``grade``) may not start here, or None: on a system with user ids, this
    user's folder of the grader's runs (``_scratch_parent``) is not one only they may enter (someone
    made it first, or opened it to others), so that each run's scratch would be kept alone from its
    own students, and another run's at the same time left in their reach."""
    if not hasattr(os, "geteuid"):
        return None
    scratch()
    if _scratch[0] != _scratch[1]:
        return None
    folder = os.path.join(tempfile.gettempdir(), f"vjpgrad-course-{os.geteuid()}")
    return (
        f"{folder} is not a folder of yours that only you may enter (made by another user, or open to others): "
        "the grader keeps its scratch files there, out of the students' reach; remove it, or set TMPDIR to a "
        "folder of your own"
    )


def hypothesis_home(held_out: bool = False) -> str:
    """The folder where the checks' processes keep hypothesis's files, in ``scratch()``: one for the
    visible checks' processes and another for the held-out ones', so that a held-out check's constants
    (which hypothesis caches by file, each file beginning with the check file's path) are never in a
    folder a visible run reads. Hypothesis reads the constants of the code under test in each process
    and caches them there by each file's hash, so a run's later processes skip parsing the same files
    (vjpgrad's own modules, where vjpgrad is not in site-packages, as in an editable install: a
    couple of seconds a process). Its examples database is off (``database=None`` in ``_plugin``),
    so no example of one student's code is ever replayed on another's."""
    home = os.path.join(scratch(), "hypothesis-held-out" if held_out else "hypothesis")
    with contextlib.suppress(FileExistsError):
        os.mkdir(home, 0o700)
    return home


def pytest_process(
    arguments: list[str],
    directory: str,
    output: str,
    storage: str,
    seconds: float,
    channel: Any,
    key: bytes,
    user: tuple[int, int] | None = None,
    student: Any = None,
    pid: int | None = None,
    fresh: Sequence[tuple[Any, int]] = (),
) -> None:
    """An exercise's checks: pytest with ``arguments`` in the student's ``directory``, its output in
    the file ``output``, at most ``seconds`` of CPU; nothing written into the student's directory but
    what their code writes. Its events go to ``channel`` (the write end of a pipe), each signed with a
    hash keyed by ``key``: the key is dropped from this process's arguments before pytest starts, and
    only the hash object made from it is kept, by the reporter (``_plugin.Reporter``). ``student``:
    the pipe to the process where the student's code runs (``student_process``); without it, the
    student's code runs in this process, as ``user`` when given. ``pid``: the student's process's id,
    taken from the process the grading process started, for the kernel's count of its memory.
    ``fresh``: the pipes to, and ids of, processes of the student's code none of whose code has run
    yet, one for each ``student.peak_memory`` in the check files (``measures``)."""
    from vjpgrad.course import _plugin, remote

    process = multiprocessing.current_process()
    process._args, process._kwargs = (), {}  # type: ignore[attr-defined]  # the key is in them
    reporter = _plugin.Reporter(channel, hmac.new(key, digestmod=hashlib.sha256))
    del key
    _undumpable()
    _limit_cpu(seconds)
    stream = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(stream, 1)
    os.dup2(stream, 2)

    def broken(error: Exception) -> None:  # the student's process wrote into the pipe, or ended
        if isinstance(error, remote.TamperedError):
            reporter.tampered()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(STUDENT_GONE)

    if student is not None:
        _plugin.REMOTE[0] = remote.Checks(student, broken, pid)
        _plugin.FRESH[:] = [remote.Checks(end, broken, spare) for end, spare in fresh]
    elif user is not None:  # the student's code runs here, as an unprivileged user
        _input_from_dev_null()
        _become(user)
    os.chdir(directory)
    os.environ.pop("PYTEST_ADDOPTS", None)  # the checks run as written, whatever the shell says
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # nor the plugins installed (pytest-randomly would reorder)
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = storage  # hypothesis writes nothing into the student's directory
    sys.dont_write_bytecode = True  # no __pycache__ in the student's directory
    import pytest

    status = pytest.main(arguments, plugins=[reporter])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(status))


STUDENT_GONE = 70
"""The exit status of the checks' process when the student's process ended under it (or wrote into
the pipe between them): the check running then did not finish, the later ones did not run."""


def _input_from_dev_null() -> None:
    """Read nothing from the terminal (the descriptor 0 made ``/dev/null``): with its output thrown
    away too, the student's code holds no descriptor of the teacher's terminal, and where the audit
    hook stands (``guard``) it may not open one, nor ``ioctl`` one: keys typed into the teacher's
    terminal (``TIOCSTI``) would run in the teacher's shell once ``grade`` exits (a review). The
    process stays in the teacher's session, so a Ctrl-C of ``check`` or ``grade`` still ends it."""
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)


def _become(user: tuple[int, int]) -> None:
    """Drop to ``user`` (uid, gid), with no supplementary groups: nothing of root's is theirs."""
    os.setgroups([])
    os.setgid(user[1])
    os.setuid(user[0])


def _undumpable() -> None:
    """Make this process one that processes of the same user cannot trace nor read the memory of
    (``prctl(PR_SET_DUMPABLE, 0)``, Linux); elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


STANDARD = (
    "array", "bisect", "cmath", "collections", "copy", "dataclasses", "decimal", "fractions", "functools", "heapq",
    "itertools", "math", "numbers", "operator", "random", "re", "statistics", "string", "struct", "typing",
)  # fmt: skip
"""The standard library's modules for computing that the student's process imports before it drops
to another user (``RUN_AS``): the student's files may import them as that user even where the
interpreter's own files are not readable by it (a Python installed under root's home). A process
from the fork server has them already (and more: what pytest, hypothesis and vjpgrad import); a
``Fresh`` one imports these alone."""


def student_process(
    directory: str, permitted: dict[str, set[str]], channel: Any, seconds: float, user: tuple[int, int] | None,
    unreached: bool = False, kept: Sequence[str] = (),
) -> None:  # fmt: skip
    """The process where the student's code runs, for one exercise's checks: at most ``seconds`` of
    CPU and ``MEMORY`` bytes more than it starts with, as ``user`` when given, its output thrown away,
    in their ``directory`` (on ``sys.path`` after the standard library), refusing imports of vjpgrad
    and torch but those ``permitted``, ``sys.setrecursionlimit`` (``probe.refuse_recursion_limit``)
    and, by an audit hook installed just before it serves the checks, what reaches outside the
    process (``guard``). It answers the checks' requests on ``channel`` (``remote``) and holds
    nothing of theirs. Nothing of the student's runs until the checks ask it to import one of their
    files: a process the checks' process measures from before that
    (``remote.Checks.peak_memory_with_import``) counts all their code takes. ``unreached``: vjpgrad's
    engine was never loaded here (``Fresh``), and the hook refuses reading its files (``guard``); ``kept``:
    folders whose files the hook refuses but the student's own (``kept_from_student``)."""
    # all it runs, imported before it may drop to ``user``
    from vjpgrad.course import _plugin, guard, paths, probe, remote

    probe.refuse_recursion_limit()  # exercise 4's check means something only if their code cannot raise it
    for name in STANDARD:  # before it may drop to ``user``, who may not read the interpreter's files
        importlib.import_module(name)
    sysconfig.get_config_vars()  # its data module, imported once: read for the student's place on sys.path
    _limit_cpu(seconds)
    _limit_memory(MEMORY)
    nothing = os.open(os.devnull, os.O_WRONLY)
    os.dup2(nothing, 1)
    os.dup2(nothing, 2)
    _input_from_dev_null()
    if user is not None:
        _become(user)
    os.chdir(directory)
    sys.dont_write_bytecode = True  # no __pycache__ in the student's directory
    home = Path(directory).resolve()
    for entry in ("", os.getcwd(), directory):
        while entry in sys.path:
            sys.path.remove(entry)
    paths.after_the_standard_library(sys.path, str(home))
    _plugin.guard_imports(home, permitted)
    student = _plugin.Student(home)
    # last: from here on, no process, file written, socket, ctypes, /proc nor reference solution (``guard``)
    engine = str(folder("solutions").parent.parent) if unreached else None
    guard.close_pipes([channel.fileno()])
    sys.pycache_prefix = os.path.join(tempfile.gettempdir(), f"vjpgrad-no-bytecode-{os.getpid()}")  # never made:
    # every module imported from here on is compiled from its source, never read as bytecode (a .pyc is not
    # checked, and the hook refuses marshal)
    guard.install(str(folder("solutions")), engine, kept, str(home))
    remote.serve(channel, home, student)


def sign(key: bytes, number: int, payload: bytes) -> bytes:
    """The signature of the ``number``-th message, ``payload``: HMAC-SHA256 of its number and text."""
    return hmac.new(key, number.to_bytes(8, "big") + payload, hashlib.sha256).digest()


MESSAGE_LIMIT = 1 << 22
"""The longest message a child may send (bytes); a longer length is a pipe written to by someone else."""


def _receive(process: Any, channel: Any, key: bytes, wall: float) -> tuple[list[dict[str, Any]], bool]:
    """The events a child sends until it stops (or ``wall`` seconds pass), each checked against its
    signature, and whether every message was the grader's (signed, in order, whole; a last one cut
    short by the child dying as it sent it is left out, ``_died``)."""
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + wall
    while True:
        alive = process.is_alive()
        try:
            ready = channel.poll(0.05 if alive else 0)
        except (OSError, EOFError):
            ready = False
        if not ready:
            if not alive or time.monotonic() > deadline:
                return events, True
            continue
        try:
            message = channel.recv_bytes(MESSAGE_LIMIT)
        except EOFError:
            if not process.is_alive():
                return events, True
            process.join(0.05)
            continue
        except OSError:  # a message cut short, or a length too long to be one of ours
            return events, _died(process)
        payload, signature = message[:-32], message[-32:]
        if len(message) < 32 or not hmac.compare_digest(signature, sign(key, len(events), payload)):
            return events, False
        try:
            event = json.loads(payload)
        except ValueError:
            return events, False
        if not isinstance(event, dict) or event.get("event") == "tampered":
            return events, False
        events.append(event)


def _died(process: Any) -> bool:
    """Whether a message that broke off came from ``process`` dying while it sent it (its CPU or
    memory limit, a kill: it has stopped, and not by returning), so that the messages before it
    are the whole report and the checks stopped there; a process still running or one that
    returned normally did not write it as the grader writes: tampering."""
    process.join(0.5)
    return process.exitcode not in (None, 0)


def _limit_cpu(seconds: float) -> None:
    """Stop this process (SIGXCPU, then SIGKILL) after ``seconds`` of CPU, where the platform can."""
    try:
        import resource
    except ImportError:  # Windows: the clock's limit alone
        return
    limit = max(1, math.ceil(seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))


MEMORY = 4 << 30
"""Bytes of address space a student's process may take beyond what it starts with (Linux): the checks
need a few MiB; a runaway allocation raises ``MemoryError`` in the student's process instead of
taking the memory of the machine that grades a class."""


def _limit_memory(extra: int) -> None:
    """Cap this process's address space (``RLIMIT_AS``) at its size now plus ``extra`` bytes, on Linux
    (elsewhere the limit is not kept, or its size not read: nothing)."""
    if not sys.platform.startswith("linux"):
        return
    import resource

    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = size + extra if hard == resource.RLIM_INFINITY else min(size + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def cpu_limited() -> bool:
    """Whether an exercise's time limit is CPU time (else the clock's)."""
    return importlib.util.find_spec("resource") is not None


def run_exercise(
    directory: Path, exercise: Exercise, timeout: float, held_out: bool = False, class_mode: bool = False,
    known_as: str | None = None, more_time: MoreTime = UNADVISED, beside: Sequence[str] = (),
) -> ExerciseResult:  # fmt: skip
    """One exercise's checks in a pytest process of its own, and its held-out checks (when
    ``held_out``) in another: the process of the checks a student sees never imports them. Its
    messages name ``directory`` as the student knows it (``known_as``, ``as_known``). ``beside``:
    the folders the run's other submissions lie in, which a graded student's process may not read."""
    options = [*(["--class-mode"] if class_mode else []), *(["--known-as", known_as] if known_as is not None else [])]
    told = Told(class_mode, more_time)
    result = _run_files(directory, exercise, [exercise.check], timeout, options, told, held_out, beside)
    if held_out and exercise.held_out:
        hidden = _run_files(
            directory, exercise, list(exercise.held_out), timeout, options, told, held_out, beside, hidden=True
        )
        result.tests += [TestResult(**{**t.__dict__, "held_out": True}) for t in hidden.tests]
        result.remarks += [remark for remark in hidden.remarks if remark not in result.remarks]
    return as_known(result, directory, known_as)


def as_known(result: ExerciseResult, directory: Path, known_as: str | None) -> ExerciseResult:
    """``result`` with its messages naming the student's files as the student knows them, never by
    the path of the folder the grader read them in (the autograder's copy of the submission,
    ``--independent``'s, each in a temporary folder of the grader's): a file in ``directory`` by
    its path in it, ``directory`` itself as ``known_as`` (``check``: as typed) or the submission."""
    from vjpgrad.course._plugin import SUBMISSION

    places = sorted({str(directory), str(directory.resolve())}, key=len, reverse=True)
    inside = "" if known_as in (None, ".") else known_as.rstrip(os.sep) + os.sep
    itself = SUBMISSION if known_as is None else known_as
    within = re.compile("|".join(re.escape(place + os.sep) for place in places))
    alone = re.compile("|".join(re.escape(place) + r"(?![\w.-])" for place in places))

    def known(text: str) -> str:
        return alone.sub(lambda _: itself, within.sub(lambda _: inside, text))

    tests = [TestResult(**{**t.__dict__, "message": known(t.message)}) for t in result.tests]
    return ExerciseResult(result.exercise, tests, [known(remark) for remark in result.remarks], known(result.note))


@dataclass(frozen=True)
class Told:
    """What the reader of an exercise's messages is told beyond what differs: in class mode, no path
    outside their directory (``outside``); how to have more time (``MoreTime``)."""

    class_mode: bool = False
    more_time: MoreTime = UNADVISED


def _run_files(
    directory: Path, exercise: Exercise, files: list[Path], timeout: float, options: Sequence[str] = (),
    told: Told = Told(), graded: bool = False, beside: Sequence[str] = (), hidden: bool = False,
) -> ExerciseResult:  # fmt: skip
    """The checks of ``files`` in one pytest process, its report received and authenticated here;
    ``graded``: a run of the held-out checks too (``grade``, the autograder), whose student's process
    reads nothing beside the submission's folder (``kept_from_student``); ``hidden``: ``files`` are
    held-out checks (hypothesis's home of their own, ``hypothesis_home``). Its output is written in a
    folder of ``scratch()``, and removed once read."""
    with tempfile.TemporaryDirectory(prefix="checks-", dir=scratch()) as folder_of_run:
        output = Path(folder_of_run) / "output.txt"
        arguments = [
            "-q", "--no-header", "-c", str(folder("checks") / "pytest.ini"), "--rootdir", str(files[0].parent),
            "--student", str(directory.resolve()), *_own(exercise), *options, *HYPOTHESIS_PLUGIN, *map(str, files),
        ]  # fmt: skip
        context = _processes()
        receiving, sending = context.Pipe(duplex=False)
        key = secrets.token_bytes(32)
        student, ours = _student(context, directory, exercise, timeout, graded, beside)
        fresh = [_student(context, directory, exercise, timeout, graded, beside) for _ in range(measures(files))]
        process = context.Process(  # the ids of the processes started here, not what any process says it is:
            target=pytest_process,
            args=(arguments, str(directory), str(output), hypothesis_home(hidden), timeout, sending, key, None, ours),
            kwargs={"pid": student.pid, "fresh": [(end, spare.pid) for spare, end in fresh]},
            name="vjpgrad course",
        )
        start(context, process)
        sending.close()
        for end in (ours, *(end for _, end in fresh)):
            end.close()
        events, genuine = _receive(process, receiving, key, timeout * WALL if cpu_limited() else timeout)
        process.join(0 if not process.is_alive() else 0.1)
        over_cpu = getattr(signal, "SIGXCPU", None)  # what RLIMIT_CPU sends; none on Windows
        timed_out = process.is_alive() or (over_cpu is not None and process.exitcode == -over_cpu)
        students = [student, *(spare for spare, _ in fresh)]
        for each in (process, *students):
            if each.is_alive():
                each.kill()
            each.join()
        timed_out = timed_out or (over_cpu is not None and any(each.exitcode == -over_cpu for each in students))
        receiving.close()
        text = output.read_text(encoding="utf-8", errors="replace") if output.exists() else ""
    if not genuine:
        return _tampered(exercise, events)
    return _result(exercise, events, text, timed_out, timeout, told, directory)


def _student(
    context: Any, directory: Path, exercise: Exercise, timeout: float, graded: bool = False, beside: Sequence[str] = ()
) -> tuple[Any, Any]:
    """A process where the student's code runs (``student_process``), started, and the checks' end of
    the pipe to it: a fresh interpreter where vjpgrad's engine is never loaded (``Fresh``) when no
    file the exercise runs may use vjpgrad (POSIX), else one from the fork server (which has it).
    The folders it may not read (``kept_from_student``) depend on whether the run is ``graded``."""
    theirs, ours = context.Pipe(duplex=True)
    permitted = _permitted(exercise)
    kept = kept_from_student(directory, exercise, graded, beside)
    arguments = (str(directory), permitted, theirs, timeout, RUN_AS[0], kept)
    student: Any
    if os.name == "posix" and not uses_vjpgrad(exercise, permitted):
        student = Fresh(arguments)
    else:
        student = context.Process(  # ``kept`` by its name: the sixth parameter is ``unreached``
            target=student_process, args=arguments[:5], kwargs={"kept": kept}, name="vjpgrad course: the student's code"
        )
        start(context, student)
    theirs.close()
    return student, ours


def kept_from_student(directory: Path, exercise: Exercise, graded: bool, beside: Sequence[str] = ()) -> list[str]:
    """The folders whose files the student's process may not read nor list (``guard.KEPT``), but for
    the student's own folder inside one: the grader's scratch folder (``scratch_kept``); the teacher's
    (``Exercise.kept``: the exercises folder and every held-out check's, whichever exercise runs; the
    exercise's own folder where it is the teacher's);
    where the run is ``graded`` (``grade``, the autograder), the folder the submission lies in too,
    which holds the other students', and ``beside``, the folders the run's other submissions lie in
    (a student's own ``check`` reads beside their folder what it likes)."""
    kept = {str(path) for path in exercise.kept} | {str(path.parent) for path in exercise.held_out}
    kept.add(scratch_kept())  # the grader's own files: the checks' output, hypothesis's cache
    if exercise.teachers:
        kept.add(str(exercise.home))
    if graded:
        kept |= {str(directory.resolve().parent), *beside}
    return sorted(kept)


def uses_vjpgrad(exercise: Exercise, permitted: dict[str, set[str]]) -> bool:
    """Whether a student's file that ``exercise``'s checks run may import vjpgrad (``permitted``: its
    skeleton does, as exercise 10's ``softsign.py``, a vjpgrad custom op)."""
    from vjpgrad.course import depends

    templates = {
        path.name: path for templates in (folder("templates"), exercise.home / "templates")
        for path in sorted(templates.glob("*.py"))
    }  # fmt: skip
    return any("vjpgrad" in permitted.get(name, ()) for name in depends.used_of(exercise, templates))


BOOT = """\
import json, os, sys, types
paths, package, arguments = json.loads(sys.argv[1])
sys.path += [path for path in paths if path not in sys.path]


def _absent(name):
    def absent(attribute):
        raise AttributeError(
            f"module {name!r} has no attribute {attribute!r}: vjpgrad is not loaded where the course runs "
            "this exercise's code (its files may not use it)"
        )
    return absent


for name, folder in (("vjpgrad", package), ("vjpgrad.course", os.path.join(package, "course"))):
    stub = types.ModuleType(name)
    stub.__path__, stub.__file__ = [folder], os.path.join(folder, "__init__.py")
    stub.__getattr__ = _absent(name)
    sys.modules[name] = stub
from multiprocessing.connection import Connection
from vjpgrad.course.grading import student_process
directory, permitted, channel, seconds, user, kept = arguments
student_process(
    directory, {file: set(names) for file, names in permitted.items()}, Connection(channel), seconds,
    None if user is None else (user[0], user[1]), unreached=True, kept=kept,
)
"""
"""What ``Fresh``'s interpreter runs: vjpgrad's package and ``vjpgrad.course`` as empty modules that
only point at their folders (``vjpgrad/__init__.py``, which imports the engine, never runs), then
``student_process`` on the arguments, the pipe being an inherited file descriptor."""


class Fresh:
    """A process of the student's code started from a fresh interpreter (``python -I -B -c BOOT``),
    not from the fork server, which has imported vjpgrad: vjpgrad's engine is never loaded in it,
    so no lookup of the student's code (``sys.modules``, ``object.__subclasses__()``, the grader's
    frames and globals) can find it, and ``student_process`` has its files refused (``guard``). It
    answers what ``_run_files`` asks of a process: ``pid``, ``is_alive``, ``kill``, ``join``,
    ``exitcode``."""

    def __init__(
        self, arguments: tuple[str, dict[str, set[str]], Any, float, tuple[int, int] | None, list[str]]
    ) -> None:
        directory, permitted, channel, seconds, user, kept = arguments
        here = os.getcwd()
        paths = [os.path.abspath(path) for path in sys.path if path]  # the packages this interpreter finds
        package = str(folder("solutions").parent.parent)  # vjpgrad's folder
        plain = {file: sorted(names) for file, names in permitted.items()}
        given = json.dumps(
            [
                [path for path in paths if path != here],
                package,
                [directory, plain, channel.fileno(), seconds, user, kept],
            ]
        )
        self.popen = subprocess.Popen(
            [sys.executable, "-I", "-B", "-c", BOOT, given], pass_fds=(channel.fileno(),), cwd=os.sep,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        self.pid = self.popen.pid

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        self.popen.kill()

    def join(self, timeout: float | None = None) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()


MEASURE = re.compile(r"\.peak_memory\(")
"""A call of ``student.peak_memory`` written in a check file: each is given a process of the student's
code of its own (``measures``)."""


def measures(files: Sequence[Path]) -> int:
    """How many processes of the student's code to start, besides the one the checks share, for
    ``student.peak_memory``: one for each call written in ``files``. Each measures one import of a
    student's module and one call from before the import, in a process none of their code has run in,
    so memory an import fills and frees but keeps resident counts (``kernel``)."""
    return sum(len(MEASURE.findall(path.read_text(encoding="utf-8", errors="replace"))) for path in files)


def _permitted(exercise: Exercise) -> dict[str, set[str]]:
    """What each of the student's files may import of vjpgrad and torch: what its skeleton does."""
    options = _own(exercise)
    permitted: dict[str, set[str]] = {}
    for word in options[1::2]:
        name, _, packages = word.partition("=")
        permitted[name] = {p for p in packages.split(",") if p}
    return permitted


def _own(exercise: Exercise) -> list[str]:
    """``--own`` options: the student's files whose skeletons import vjpgrad or torch, and which."""
    from vjpgrad.course import borrowed

    options = []
    for templates in {folder("templates"), exercise.home / "templates"}:
        for template in sorted(templates.glob("*.py")):
            tree = borrowed.parse(template)
            packages = sorted(borrowed.imported(tree)) if tree is not None else []
            if packages:
                options += ["--own", f"{template.name}={','.join(packages)}"]
    return options


def _tampered(exercise: Exercise, events: list[dict[str, Any]]) -> ExerciseResult:
    """An exercise whose report was written to by the student's code: every check failed, and a remark."""
    collected = next((event.get("tests") for event in events if event.get("event") == "collected"), None)
    tests = [
        TestResult(str(t["name"]), FAILED, TAMPERED, title=str(t["title"]), weight=float(t["weight"]))
        for t in (collected or [])
    ] or [TestResult("checks_could_not_run", FAILED, TAMPERED, title="the checks run")]
    return ExerciseResult(exercise, tests, [f"exercise {exercise.number}: {TAMPERED}; it scores nothing"])


def _result(
    exercise: Exercise, events: list[dict[str, Any]], output: str, timed_out: bool, timeout: float,
    told: Told = Told(), directory: Path | None = None,
) -> ExerciseResult:  # fmt: skip
    """The results of an exercise's checks from the ``events`` their process sent and its ``output``.
    A check stopped at the time limit says what ``told.more_time`` advises; checks that could not run
    show the output's last lines, in class mode naming no file outside the student's ``directory``
    by more than its name (``outside``), with the whole of them in a remark to the teacher."""
    collected = next((event["tests"] for event in events if event["event"] == "collected"), None)
    started = [event["id"] for event in events if event["event"] == "start"]
    remarks = _stopped(exercise, timed_out, timeout, told.more_time)
    if collected is None or not started:  # the checks could not run: the whole exercise fails, with why
        if timed_out:
            why = f"its checks did not start within {timeout:g} s"
        else:
            tail = "\n".join(output.strip().splitlines()[-15:])
            remarks.append(f"exercise {exercise.number}: its checks could not run:\n{tail}")
            why = "its checks could not run:\n" + (outside(tail, directory) if told.class_mode else tail)
        failed = TestResult("checks_could_not_run", FAILED, why, title="the checks run")
        return ExerciseResult(exercise, [failed], remarks)
    finished = {event["id"]: event for event in events if event["event"] == "result"}
    result = ExerciseResult(exercise, remarks=remarks)
    for test in collected:
        event = finished.get(test["id"])
        if event is not None:
            outcome, message, seconds = event["outcome"], event["message"], event["seconds"]
        elif test["id"] in started:
            outcome, message, seconds = FAILED, _unfinished(timed_out, timeout, told.more_time), 0.0
        else:
            outcome, message, seconds = NOT_RUN, "not run: the checks of this exercise stopped at an earlier one", 0.0
        result.tests.append(TestResult(test["name"], outcome, message, seconds, test["title"], test["weight"]))
    return result


def _limits(timeout: float) -> str:
    """The time limit a check was stopped at, as its message names it: CPU time where the platform
    limits it, with the clock's limit beside it (a process that waits, ``time.sleep``, uses none)."""
    return f"{timeout:g} s of CPU or {timeout * WALL:g} s of the clock" if cpu_limited() else f"{timeout:g} s"


STOPPED = "the checks stopped during it: the process running your code ended (os._exit()? a crash?)"
"""What a check says that did not finish, its process gone, not stopped at the time limit."""


def _unfinished(timed_out: bool, timeout: float, more_time: MoreTime = UNADVISED) -> str:
    if timed_out:
        return f"it did not finish within {_limits(timeout)} ({advice(more_time)})"
    return STOPPED


def advice(more_time: MoreTime) -> str:
    """What a check stopped at the time limit says in its parenthesis: ``more_time``'s words for the
    student, where there are any."""
    return " ".join(["an endless loop?", *([more_time.student] if more_time.student else [])])


def _stopped(exercise: Exercise, timed_out: bool, timeout: float, more_time: MoreTime) -> list[str]:
    """The teacher's remark on an exercise whose checks were stopped at the time limit, where
    ``more_time`` has advice for them."""
    if not timed_out or not more_time.teacher:
        return []
    return [f"exercise {exercise.number}: its checks were stopped at the time limit, {_limits(timeout)}: "
            f"{more_time.teacher}"]  # fmt: skip


PATH = re.compile(r"(?:[A-Za-z]:)?[^\s'\"():]*[\\/][^\s'\"():]*")
"""A path in pytest's output: a run of characters without spaces, quotes, parentheses or colons
(which follow a path's line number) that holds a folder separator."""
LIKE_A_PATH = re.compile(r"[\\/.~]|[A-Za-z]:|.*\.\w+$")
"""A ``PATH`` that is one: from a folder (``/``, ``./``, ``../``, ``~``, ``C:``) or to a file with a
suffix (``checks/check_sigmoid.py``), not words (``and/or``)."""


def outside(text: str, directory: Path | None) -> str:
    """``text`` with each path that does not lie in the student's ``directory`` cut to its file's
    name (``check_sigmoid.py``, not the teacher's ``/autograder/source/exercises/checks/...``), so
    that no folder of the grader's machine is shown; those in ``directory`` are kept (``as_known``
    names them as the student knows them)."""
    places = () if directory is None else tuple({str(directory), str(directory.resolve())})

    def cut(match: re.Match[str]) -> str:
        path = match.group(0)
        if (places and path.startswith(places)) or not LIKE_A_PATH.match(path):
            return path
        name = re.split(r"[\\/]", path.rstrip("\\/"))[-1]
        return name or path

    return PATH.sub(cut, text)


def note_dependencies(results: Sequence[ExerciseResult], course: Course) -> None:
    """Say, on each exercise not done whose checks run an earlier exercise that is not done either,
    which one to fix first (``depends.blame``). The note is in what a student sees at once, so an
    earlier exercise counts as done here when its visible checks all pass: a failure only a held-out
    check reaches never shows through it."""
    from vjpgrad.course import depends

    done = {r.exercise.number: _visibly_done(r) for r in results}
    for r in results:
        if not done[r.exercise.number]:  # a note on one whose visible checks pass would tell a held-out failure
            r.note = depends.blame(r.exercise, course, done) or ""


def _visibly_done(result: ExerciseResult) -> bool:
    """Whether every check of an exercise a student sees passes (its held-out checks aside)."""
    visible = [t for t in result.tests if not t.held_out]
    return bool(visible) and all(t.outcome == PASSED for t in visible)


# ---- reports --------------------------------------------------------------------------------------------


def all_done(results: Sequence[ExerciseResult], stretch_counts: bool = False) -> bool:
    """Whether every exercise is done; a stretch exercise counts only when asked for by number."""
    return all(r.status == DONE for r in results if stretch_counts or not r.exercise.stretch)


def numbered(numbers: Sequence[int]) -> str:
    """``exercise 4``, ``exercises 1 and 3``, ``exercises 2 to 12``, ``exercises 1 to 3 and 5 to 12``."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    parts = [part for run in runs for part in ([f"{run[0]} to {run[-1]}"] if len(run) > 2 else map(str, run))]
    text = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    return f"exercise {text}" if len(numbers) == 1 else f"exercises {text}"


def _whole_count(results: Sequence[ExerciseResult], counted: Sequence[ExerciseResult], done: int) -> list[str]:
    lines = [f"{done} of {len(counted)} done." + (" All done: well done!" if done == len(counted) else "")]
    stretches = [r for r in results if r.exercise.stretch and r not in counted]
    if stretches:
        which = numbered([r.exercise.number for r in stretches])
        lines.append(
            f"{which.capitalize()} {'is a stretch' if len(stretches) == 1 else 'are stretches'}: checked and "
            "shown, but not counted; the course is done without it."
        )
    return lines


def _count(results: Sequence[ExerciseResult], command: str, everything: Sequence[Exercise]) -> list[str]:
    """The lines under the table: how many are done, of what. All done is said only of the whole
    course (every exercise but the stretch ones); a check of some exercises says which were not checked."""
    checked = {r.exercise.number for r in results}
    unchecked = [ex.number for ex in everything if ex.number not in checked]
    counted = [r for r in results if not r.exercise.stretch] or list(results)  # a stretch checked alone counts
    done = sum(r.status == DONE for r in counted)
    if all(ex.stretch for ex in everything if ex.number not in checked):
        return _whole_count(results, counted, done)
    if len(results) == 1:
        lines = [f"Checked {numbered([results[0].exercise.number])} alone: {results[0].status}."]
    else:
        lines = [f"Checked {numbered(sorted(checked))}: {done} of {len(counted)} done."]
    if unchecked:
        lines.append(f"Not checked this time: {numbered(unchecked)} ({command} checks them all).")
    return lines


def _problem(todo: ExerciseResult) -> list[str]:
    """The first problem of an exercise not done: the check's sentence and its message."""
    problem = todo.first_problem()
    if problem is None:
        return []
    lines = ["", f"  {problem.sentence}:"]
    lines += [("    " + line).rstrip() for line in problem.message.splitlines()]
    if todo.note:
        lines.append(f"    ({todo.note})")
    first = re.search(r"exercise (\d+): write", problem.message) if problem.outcome == NOT_STARTED else None
    if first and int(first.group(1)) != todo.exercise.number:
        lines.append(f"    (its checks run the code of exercise {first.group(1)}: do exercise {first.group(1)} first)")
    return lines


def scoreboard(
    results: Sequence[ExerciseResult], directory: Path, command: str, hinted: Collection[int] = (),
    everything: Sequence[Exercise] | None = None, program: str = "vjpgrad course",
) -> str:  # fmt: skip
    """The text a student reads: each exercise's status and checks passed, then the first one not
    done with its message, and how to ask for its hint when it has one a student may read (``hinted``:
    their numbers). ``command`` is how they ran the check, to say how to run one; ``everything`` is
    the whole course (the built-in exercises when not given)."""
    rows = [(f"{r.exercise.number:>3}", r.exercise.label, r.status, f"{r.passed}/{len(r.tests)}") for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [f"vjpgrad course: {directory}", ""]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines += ["", *_count(results, command, builtin() if everything is None else everything)]
    todo = next((r for r in results if r.status != DONE), None)
    if todo is None:
        return "\n".join(lines)
    exercise = todo.exercise
    lines += ["", f"Exercise {exercise.number} ({', '.join(exercise.files)}) is {todo.status}: {exercise.title}."]
    lines += _problem(todo)
    if exercise.number in hinted:
        lines += ["", f"Stuck? `{program} hint {exercise.number}`"]
    if len(results) > 1:
        lines += ["", f"Check this one alone: {command} {exercise.number}"]
    return "\n".join(lines)


def points(x: float) -> float:
    """Points as reports show them: to two decimals."""
    return round(x, 2)


def _json_test(r: ExerciseResult, hint: str | None) -> dict[str, Any]:
    problem = r.first_problem()
    return {
        "name": r.exercise.heading,
        "status": "pass" if r.status == DONE else "fail",
        "score": points(r.score()),
        "max_score": points(r.exercise.points),
        "message": "" if problem is None else problem.message + (f"\n({r.note})" if r.note else ""),
        "number": r.exercise.number,
        "slug": r.exercise.slug,
        "title": r.exercise.title,
        "files": list(r.exercise.files),
        "stretch": r.exercise.stretch,
        "state": r.status,
        "passed": r.passed,
        "total": len(r.tests),
        "hint": hint,
        "checks": [
            {"name": t.name, "title": t.sentence, "outcome": t.outcome, "message": t.message, "weight": t.weight,
             "seconds": round(t.seconds, 3)}
            for t in r.tests
        ],
    }  # fmt: skip


def as_json(
    results: Sequence[ExerciseResult], directory: Path, hints: dict[int, str | None] | None = None
) -> dict[str, Any]:
    """The results for an autograder. The top level has the shape of a GitHub Classroom test runner's
    result (``version``, ``status``, ``max_score``, ``tests`` with ``name``, ``status``, ``score``,
    ``message``): each exercise's points, shared among its checks by weight; a stretch exercise is
    extra credit, not in ``max_score``. ``hints``: the hint a student may read, by exercise number."""
    tests = [_json_test(r, (hints or {}).get(r.exercise.number)) for r in results]
    return {
        "version": 1,
        "status": "pass" if all_done(results) else "fail",
        "score": points(sum(r.score() for r in results)),
        "max_score": points(sum(r.exercise.points for r in results if not r.exercise.stretch)),
        "directory": str(directory),
        "tests": tests,
    }
