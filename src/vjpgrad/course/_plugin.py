"""The pytest plugin of ``vjpgrad course check``, loaded into the pytest process that runs the checks.

Its ``student`` fixture gives the checks the student's files: where ``grading`` runs the student's
code in a process of its own (``REMOTE``), as proxies of the modules imported there (``remote``),
and this process never imports them; where the checks run in the student's interpreter
(``inprocess``, in a browser), by importing them here, with the student's directory on ``sys.path``
after the standard library's (so their own files ``import engine``, and a ``tracemalloc.py`` of theirs
does not stand in for the standard library's). It gives the checks the ``weight`` marker, and sets
hypothesis up for grading (the same examples at every run, no database written into the student's
directory). ``Reporter``, a plugin object that ``grading`` makes before pytest starts, sends one
signed message per event to the grading process: the tests collected (each with the sentence that
names it and its weight), each test's start, and each result as passed, failed or not started (the
student's code still raises the skeleton's NotImplementedError), with a message a student can read
instead of a traceback. It keeps the functions it calls, ``classify`` among them, from before any
student code is imported: replacing this module's names changes nothing it sends.

A check is named by its test function's docstring, a sentence; a parametrized one's docstring may
name its parameters, ``"{op} hands out.grad times its local derivative"``. ``@pytest.mark.weight(2)``
makes a check count twice as much as one without the marker in its exercise's points.
"""

from __future__ import annotations

import builtins
import importlib.util
import inspect
import json
import math
import os
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Generator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from vjpgrad.course import paths, remote

EXAMPLES = 30
"""Generated examples per hypothesis check: enough to meet every shape of small graph. Each check
meets the smallest graphs first (its explicit examples, then hypothesis's simplest draws), where the
typical mistakes (tests/_course_mistakes.py) all show; 60 caught no more of them, and cost about a
quarter of a whole check's CPU more (benchmarks/course_ab.py, 23 s against 30 s)."""


class MissingFileError(ImportError):
    """One of the student's files is not in their directory."""


SUBMISSION = "the submission"
"""How a student's directory is named to them where they did not name it (``grade``, the autograder,
which grade a copy of it in a folder of the grader's)."""


def missing(name: str, known_as: str | None) -> str:
    """What a student reads when their ``name.py`` is not there: their directory named as they know
    it, ``known_as`` (``check``: as they typed it), else ``SUBMISSION``; never the folder the grader
    reads it in."""
    if known_as is None:
        return (
            f"{name}.py is not in {SUBMISSION}: hand it in with your other files (`vjpgrad course init DIR` "
            "writes it again into your course's folder DIR, and keeps your other files)"
        )
    where = "this folder" if known_as == "." else known_as
    command = f"vjpgrad course init {shlex.quote(known_as)}"
    return f"{name}.py is not in {where}: `{command}` writes it again (and keeps your other files)"


def linked(name: str) -> str:
    """What a student graded by ``grade`` reads when their ``name.py`` is a symbolic link."""
    return (
        f"{name}.py is a symbolic link in {SUBMISSION}, which the grader does not follow (the Gradescope "
        "autograder leaves links out too): hand in the file itself"
    )


def present(directory: Path, name: str, known_as: str | None = None) -> None:
    """Raise ``MissingFileError`` when the student's ``name.py`` is not in ``directory``, which they
    know as ``known_as`` (``missing``); where it is the submission (``known_as`` None: ``grade``, the
    autograder), when it is a symbolic link too (``linked``), as the autograder leaves links out."""
    __tracebackhide__ = True
    path = directory / f"{name}.py"
    if known_as is None and path.is_symlink():
        raise MissingFileError(linked(name))
    if not path.is_file():
        raise MissingFileError(missing(name, known_as))


class Student:
    """The student's directory: ``student("engine")`` imports their ``engine.py``. ``known_as``: how
    the student names it (``missing``)."""

    def __init__(self, directory: Path, known_as: str | None = None) -> None:
        self.directory = directory
        self.known_as = known_as

    def __call__(self, name: str) -> ModuleType:
        __tracebackhide__ = True
        present(self.directory, name, self.known_as)
        module = sys.modules.get(name)
        if module is not None and Path(getattr(module, "__file__", "") or "").parent == self.directory:
            return module
        sys.modules.pop(name, None)  # a module of that name from elsewhere is not the student's
        spec = importlib.util.spec_from_file_location(name, self.directory / f"{name}.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # the student's other files import it by name
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module

    def probe(self, name: str, *arguments: Any) -> Any:
        """``probe``'s helper ``name`` on ``arguments``, here (where the student's code runs too)."""
        from vjpgrad.course import probe

        return probe.HELPERS[name](*arguments)

    def peak_memory(self, name: str, function: str, *arguments: Any) -> Any:
        """The peak memory (bytes) of the student's ``name.function(*arguments)``, counted here by
        ``tracemalloc``, and ``"tracemalloc"``: the call alone, since the checks may have imported the
        module already (feedback, not marks); its ``.result``, the call's (``remote.Peak``)."""
        __tracebackhide__ = True
        from vjpgrad.course.remote import Peak

        _names(name, function)
        peak, result = self.probe("peak_memory_and_result", getattr(self(name), function), *arguments)
        return Peak(int(peak), "tracemalloc", result)

    def cpu_seconds(self, function: Any, *arguments: Any) -> tuple[Any, float, str]:
        """``function(*arguments)``, the CPU seconds it took by ``time.process_time``, and ``"process_time"``."""
        result, seconds = self.probe("cpu_seconds", function, *arguments)
        return result, seconds, "process_time"


class RemoteStudent:
    """The student's directory when their code runs in a process of its own (``remote``):
    ``student("engine")`` is a proxy of their ``engine.py``, imported there, never here."""

    def __init__(self, directory: Path, checks: Any, known_as: str | None = None) -> None:
        self.directory = directory
        self.checks = checks
        self.known_as = known_as
        self.modules: dict[str, Any] = {}

    def __call__(self, name: str) -> Any:
        __tracebackhide__ = True
        present(self.directory, name, self.known_as)
        if name not in self.modules:
            self.modules[name] = self.checks.module(name)
        return self.modules[name]

    def probe(self, name: str, *arguments: Any) -> Any:
        """``probe``'s helper ``name`` on ``arguments``, run in the student's process."""
        return self.checks.probe(name, *arguments)

    def peak_memory(self, name: str, function: str, *arguments: Any) -> Any:
        """The peak memory (bytes) of importing the student's ``name.py`` and calling its
        ``function(*arguments)``, in a process of their code that the grader started for this
        measure alone (``FRESH``), counted from before the import, and who counted it: the kernel,
        from this process, where it can (``"kernel"``); else ``"tracemalloc"``, there. Counting
        the import means memory it fills, frees and keeps resident cannot hide a call's (``kernel``). Its
        ``.result`` is the call's (``remote.Peak``)."""
        __tracebackhide__ = True
        _names(name, function)
        present(self.directory, name, self.known_as)
        if not FRESH:
            raise AssertionError(
                "the grader has no process of your code left to measure memory in: each student.peak_memory "
                "written in a check file gets one (this one is called more often than it is written)"
            )
        return FRESH.pop(0).peak_memory_with_import(name, function, *arguments)

    def cpu_seconds(self, function: Any, *arguments: Any) -> tuple[Any, float, str]:
        """``function(*arguments)`` in the student's process, the CPU seconds it took and who counted
        them: the kernel, from this process, where it can (``"kernel"``); else ``"process_time"``, there."""
        return self.checks.cpu_seconds(function, *arguments)  # type: ignore[no-any-return]


REMOTE: list[Any] = [None]
"""The checks' end of the pipe to the student's process (``remote.Checks``) when the student's code
runs there; none when it runs in this process (``inprocess``: feedback, not marks)."""
FRESH: list[Any] = []
"""The checks' ends of pipes to processes of the student's code that none of their code has run in
yet (``remote.Checks``), one for each ``student.peak_memory`` written in the check files: each
measures one import and call (``RemoteStudent.peak_memory``), then is used no more."""


def _names(name: object, function: object) -> None:
    """Refuse a ``student.peak_memory`` not given the module's and the function's names."""
    if not isinstance(name, str) or not isinstance(function, str):
        raise TypeError(
            "student.peak_memory(name, function, *arguments) takes the names of the student's module and of "
            f'its function ("softmax", "softmax_vjp"), not {type(name).__name__} and {type(function).__name__}'
        )


BORROWED = ("vjpgrad", "torch")
"""What a student's file may not import in place of its own code (``borrowed``: the teacher is told)."""


def guard_imports(directory: Path, permitted: dict[str, set[str]]) -> None:
    """Refuse an import of vjpgrad or torch written in a student's file anywhere in ``directory`` (a
    subfolder's too, named by its path there: ``remote.in_submission``), unless its skeleton makes it
    (``permitted``, by file name; a file in a subfolder has no skeleton): their engine is checked,
    not vjpgrad's."""
    original = builtins.__import__
    known = remote.in_submission

    def guarded(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> ModuleType:
        root = name.partition(".")[0]
        if level == 0 and root in BORROWED and isinstance(globals, dict):
            where = known(str(globals.get("__file__") or ""), directory)
            if where is not None and root not in permitted.get(where, set()):
                raise ImportError(f"{where} imports {root}: the checks run your own code, not {root}'s")
        return original(name, globals, locals, fromlist, level)

    builtins.__import__ = guarded


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vjpgrad course")
    group.addoption("--student", metavar="DIR", help="the student's directory, whose files the checks import")
    group.addoption(
        "--known-as", metavar="NAME", default=None,
        help="how the student names their directory (check: as typed); default: the submission",
    )  # fmt: skip
    group.addoption("--class-mode", action="store_true", help="messages say what differs, never how to write the fix")
    group.addoption(
        "--own", action="append", default=[], metavar="FILE=PACKAGE,...",
        help="a student's FILE may import these of vjpgrad and torch (as its skeleton does); no other may",
    )  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "weight(n): the check counts n times in its exercise's points (default 1)")
    if config.getoption("--class-mode"):
        from vjpgrad.course import expect

        expect.SAY_HOW[0] = False
    directory = config.getoption("--student")
    if directory:
        for entry in ("", os.getcwd()):  # the working directory (the student's) is not searched first
            while entry in sys.path:
                sys.path.remove(entry)
    if directory and REMOTE[0] is None:  # the student's code runs here: their directory on sys.path
        paths.after_the_standard_library(sys.path, str(Path(directory).resolve()))
        permitted = {}
        for word in config.getoption("--own"):
            name, _, packages = word.partition("=")
            permitted[name] = {p for p in packages.split(",") if p}
        guard_imports(Path(directory).resolve(), permitted)
    from hypothesis import HealthCheck, Phase, settings

    settings.register_profile(
        "vjpgrad-course",
        max_examples=EXAMPLES,
        derandomize=True,  # the same grade at every run of the same code
        database=None,  # nothing written into the student's directory
        deadline=None,
        print_blob=False,
        report_multiple_bugs=False,  # one failure to read, the smallest
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],  # not explain: slow
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    settings.load_profile("vjpgrad-course")


@pytest.fixture(scope="session")
def student(pytestconfig: pytest.Config) -> Student | RemoteStudent:
    """The student's directory, to import their files from: ``student("engine").Value``."""
    directory = Path(pytestconfig.getoption("--student") or ".").resolve()
    known_as = pytestconfig.getoption("--known-as")
    return Student(directory, known_as) if REMOTE[0] is None else RemoteStudent(directory, REMOTE[0], known_as)


def test_name(item: pytest.Item) -> str:
    return item.name.removeprefix("test_")


def title(item: pytest.Item) -> str:
    """The sentence that names a check: its docstring's first paragraph, with the parameters of a
    parametrized check filled in; without a docstring, its name in words and its parameters."""
    function = getattr(item, "function", None)
    doc = inspect.getdoc(function) if function is not None else None
    callspec = getattr(item, "callspec", None)
    params: dict[str, object] = dict(callspec.params) if callspec is not None else {}
    if doc:
        text = " ".join(doc.split("\n\n")[0].split())
        try:
            return text.format(**params).rstrip(".")
        except (KeyError, IndexError, ValueError):
            return text.rstrip(".")
    name = getattr(item, "originalname", item.name).removeprefix("test_").replace("_", " ")
    given = ", ".join(f"{key} = {value}" for key, value in params.items())
    return f"{name} ({given})" if given else name


def weight(item: pytest.Item) -> float:
    """A check's weight in its exercise: ``@pytest.mark.weight(n)``, 1 without the marker."""
    marker = item.get_closest_marker("weight")
    if marker is None:
        return 1.0
    value = marker.args[0] if marker.args else marker.kwargs.get("n")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:  # nan too
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.weight takes a finite number >= 0, got {value!r}")
    return float(value)


class Reporter:
    """The plugin that sends the grading process each event, signed: made by ``grading`` before
    pytest starts, with the write end of its pipe (``channel``) and a keyed hash (``mac``), and
    with the functions it uses (``classify``, ``title``, ``weight``) taken then, not looked up later
    where a student's code could have replaced them."""

    def __init__(self, channel: Any, mac: Any) -> None:
        send, copy = channel.send_bytes, mac.copy
        count = [0]

        def write(event: dict[str, Any]) -> None:
            payload = json.dumps(event).encode()
            signature = copy()
            signature.update(count[0].to_bytes(8, "big") + payload)
            count[0] += 1
            send(payload + signature.digest())

        self._write: Callable[[dict[str, Any]], None] = write
        self._classify, self._title, self._weight, self._clock = classify, title, weight, time.perf_counter
        self._started: dict[str, float] = {}

    def tampered(self) -> None:
        """Tell the grading process that the pipe from the student's process carried something else:
        it voids the exercise's report."""
        self._write({"event": "tampered"})

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        tests = [
            {"id": item.nodeid, "name": test_name(item), "title": self._title(item), "weight": self._weight(item)}
            for item in session.items
        ]
        self._write({"event": "collected", "tests": tests})

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self._started[item.nodeid] = self._clock()
        self._write({"event": "start", "id": item.nodeid})

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and not report.passed):
            directory = Path(item.config.getoption("--student") or ".").resolve()
            result, message = self._classify(call.excinfo, directory)
            seconds = self._clock() - self._started.get(item.nodeid, self._clock())
            message = remote.shortened(message)  # a student's error of megabytes: its start is enough
            self._write({"event": "result", "id": item.nodeid, "outcome": result, "message": message,
                         "seconds": seconds})  # fmt: skip


def classify(excinfo: pytest.ExceptionInfo[BaseException] | None, directory: Path) -> tuple[str, str]:
    """A test's outcome for the scoreboard, ``passed``, ``failed`` or ``not started``, and its message."""
    if excinfo is None:
        return "passed", ""
    error = excinfo.value
    where = _student_frame(error, directory)
    if isinstance(error, NotImplementedError) and where is not None:
        return "not started", f"{where}: {error}"
    return "failed", describe(error, directory, where)


def describe(error: BaseException, directory: Path, where: str | None = None) -> str:
    """One readable message for an exception: a check's own message as it is (each names its inputs);
    a student's error as its type, its text, the line of their file that raised it and, when
    hypothesis generated the inputs, the example it was raised on."""
    if isinstance(error, (AssertionError, MissingFileError)):
        return str(error) or "the check failed"
    if isinstance(error, SyntaxError) and error.filename:
        known = remote.in_submission(error.filename, directory) or Path(error.filename).name
        return f"{known}, line {error.lineno}: SyntaxError: {error.msg}"
    head = f"{type(error).__name__}: {error}" + (f" ({where})" if where else "")
    return "\n".join([head, *_example(error)])


FIXTURES = ("student=", "engine=")


def _example(error: BaseException) -> list[str]:
    """Hypothesis's note of the example an error was raised on, without the fixtures' lines."""
    lines = []
    for note in getattr(error, "__notes__", []):
        if note.startswith(("Falsifying", "Failing")):
            lines += [line for line in note.splitlines() if not line.strip().startswith(FIXTURES)]
    return lines


def _student_frame(error: BaseException, directory: Path) -> str | None:
    """Where in the student's files the error was raised: ``engine.py, line 31, in __add__`` (as the
    student's process said, for an error raised there)."""
    said = getattr(error, "student_where", None)
    if isinstance(said, str):
        return said
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        known = remote.in_submission(frame.filename, directory)
        if known is not None:
            found = f"{known}, line {frame.lineno}, in {frame.name}"
    return found
