"""The pytest plugin of ``vjpgrad course check``, loaded into the pytest process that runs the checks.

It puts the student's directory first on ``sys.path`` (so a check, and the student's own files,
``import engine``), gives the checks the ``student`` fixture and the ``weight`` marker, sets
hypothesis up for grading (the same examples at every run, no database written into the student's
directory), and writes one JSON line per event to the report file that ``grading`` reads: the tests
collected (each with the sentence that names it and its weight), each test's start, and each result
as passed, failed or not started (the student's code still raises the skeleton's
NotImplementedError), with a message a student can read instead of a traceback.

A check is named by its test function's docstring, a sentence; a parametrized one's docstring may
name its parameters, ``"{op} hands out.grad times its local derivative"``. ``@pytest.mark.weight(2)``
makes a check count twice as much as one without the marker in its exercise's points.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import time
import traceback
from collections.abc import Generator
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import pytest

EXAMPLES = 60
"""Generated examples per hypothesis check: enough to meet every shape of small graph."""


class MissingFileError(ImportError):
    """One of the student's files is not in their directory."""


class Student:
    """The student's directory: ``student("engine")`` imports their ``engine.py``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def __call__(self, name: str) -> ModuleType:
        __tracebackhide__ = True
        if not (self.directory / f"{name}.py").is_file():
            raise MissingFileError(
                f"{name}.py is not in {self.directory}: `vjpgrad course init {self.directory}` writes it again "
                "(and keeps your other files)"
            )
        module = sys.modules.get(name)
        if module is not None and Path(getattr(module, "__file__", "") or "").parent == self.directory:
            return module
        sys.modules.pop(name, None)  # a module of that name from elsewhere is not the student's
        return importlib.import_module(name)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vjpgrad course")
    group.addoption("--student", metavar="DIR", help="the student's directory, whose files the checks import")
    group.addoption("--course-report", metavar="FILE", help="write one JSON line per test event to FILE")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "weight(n): the check counts n times in its exercise's points (default 1)")
    directory = config.getoption("--student")
    if directory:
        sys.path.insert(0, str(Path(directory).resolve()))
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
    report = config.getoption("--course-report")
    if report:
        config.stash[_REPORT] = open(report, "a", encoding="utf-8")  # noqa: SIM115  # closed at unconfigure


def pytest_unconfigure(config: pytest.Config) -> None:
    stream = config.stash.get(_REPORT, None)
    if stream is not None:
        stream.close()


_REPORT = pytest.StashKey[TextIO]()
_STARTED = pytest.StashKey[float]()


def _write(config: pytest.Config, event: dict[str, Any]) -> None:
    stream = config.stash.get(_REPORT, None)
    if stream is not None:
        stream.write(json.dumps(event) + "\n")
        stream.flush()  # a line survives a run stopped by the timeout


@pytest.fixture(scope="session")
def student(pytestconfig: pytest.Config) -> Student:
    """The student's directory, to import their files from: ``student("engine").Value``."""
    return Student(Path(pytestconfig.getoption("--student") or ".").resolve())


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
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.weight takes a number >= 0, got {value!r}")
    return float(value)


def pytest_collection_finish(session: pytest.Session) -> None:
    tests = [
        {
            "id": item.nodeid,
            "file": str(Path(str(item.path)).resolve()),
            "name": test_name(item),
            "title": title(item),
            "weight": weight(item),
        }
        for item in session.items
    ]
    _write(session.config, {"event": "collected", "tests": tests})


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_STARTED] = time.perf_counter()
    _write(item.config, {"event": "start", "id": item.nodeid})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and not report.passed):
        directory = Path(item.config.getoption("--student") or ".").resolve()
        result, message = classify(call.excinfo, directory)
        seconds = time.perf_counter() - item.stash.get(_STARTED, time.perf_counter())
        event = {"event": "result", "id": item.nodeid, "outcome": result, "message": message, "seconds": seconds}
        _write(item.config, event)


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
        return f"{Path(error.filename).name}, line {error.lineno}: SyntaxError: {error.msg}"
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
    """Where in the student's files the error was raised: ``engine.py, line 31, in __add__``."""
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        path = Path(frame.filename)
        if path.parent == directory:
            found = f"{path.name}, line {frame.lineno}, in {frame.name}"
    return found
