"""``vjpgrad course check`` in this interpreter (``vjpgrad.course.inprocess``), the path a browser takes.

Forced here on CPython (``VJPGRAD_COURSE_IN_PROCESS=1``, or its functions called directly), it must
give what the child processes give, check for check and message for message: on the reference
solutions and on a broken engine. It must stop an endless loop on the clock with each way this
platform has of keeping a deadline, and leave the interpreter as it found it (the working directory,
``sys.path``, the environment, no student module), so that the next check reads the files anew.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from _course_mistakes import MISTAKES

from vjpgrad.course import commands, grading, inprocess
from vjpgrad.course.exercises import BUILTIN, exercise, folder

pytest.importorskip("hypothesis")


def solutions_in(directory: Path) -> Path:
    shutil.copytree(folder("solutions"), directory, dirs_exist_ok=True)
    return directory


def seen(results: list[grading.ExerciseResult]) -> list[tuple[int, str, list[tuple[str, str, str]]]]:
    """What a student reads of results: each exercise's status and each check's outcome and message."""
    return [(r.exercise.number, r.status, [(t.name, t.outcome, t.message) for t in r.tests]) for r in results]


def clocks() -> list[str]:
    """The ways of keeping the deadline that this interpreter has and ``clock`` may choose (``trace``
    only where ``monitoring`` is not: from 3.12 on, tracing is too slow to run the checks in time)."""
    import signal

    have = ["monitoring"] if hasattr(sys, "monitoring") else ["trace"]
    return have + (["alarm"] if hasattr(signal, "setitimer") else [])


def test_the_path_is_taken_in_a_browser_or_when_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(inprocess.VARIABLE, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert not inprocess.wanted()
    monkeypatch.setenv(inprocess.VARIABLE, "1")
    assert inprocess.wanted()
    monkeypatch.setenv(inprocess.VARIABLE, "0")
    assert not inprocess.wanted()
    monkeypatch.setattr(sys, "platform", "emscripten")
    assert inprocess.wanted()
    assert inprocess.clock() in ("monitoring", "trace")  # no signals in a browser


@pytest.mark.slow  # every exercise twice: in child processes and here
@pytest.mark.parametrize("broken", [False, True], ids=["reference solutions", "a broken engine"])
def test_in_process_gives_what_the_child_processes_give(tmp_path: Path, broken: bool) -> None:
    directory = solutions_in(tmp_path / "course")
    exercises = list(BUILTIN)
    if broken:
        # a wrong derivative rule, whose results do not depend on the order a set of nodes is walked in
        # (the order of their addresses, which differs from run to run), checked by the exercises that
        # run the engine on given graphs
        mistake = next(m for m in MISTAKES if m.name == "tanh's derivative written 1 - tanh")
        engine = directory / mistake.file
        engine.write_text(engine.read_text().replace(mistake.old, mistake.new))
        exercises = [ex for ex in BUILTIN if 2 <= ex.number <= 8]
    children = grading.run(directory, exercises, timeout=300)
    here = inprocess.run(directory, exercises, timeout=300)
    assert seen(here) == seen(children)
    statuses = {r.status for r in here}
    assert statuses == ({grading.DONE, grading.FAILING} if broken else {grading.DONE})
    assert not [name for name, module in sys.modules.items() if str(directory) in str(getattr(module, "__file__", ""))]


def loops_forever(directory: Path) -> Path:
    solutions_in(directory)
    (directory / "derivatives.py").write_text(
        "def central_difference(f, *xs, arg=0, h=1e-6):\n    while True:\n        pass\n"
    )
    return directory


@pytest.mark.slow  # it waits for the deadline
@pytest.mark.parametrize("how", clocks())
def test_an_endless_loop_is_stopped_on_the_clock_and_the_next_exercise_still_runs(tmp_path: Path, how: str) -> None:
    directory = loops_forever(tmp_path / "loops")
    limit = 10  # pytest's own start under a tracer or a callback at each jump takes a few seconds
    started = time.monotonic()
    looping = inprocess.run_exercise(directory, exercise(1), limit, how=how, more_time=grading.CHECK)  # check's
    assert time.monotonic() - started < 60
    after = inprocess.run_exercise(directory, exercise(2), 300, how=how)
    problem = looping.first_problem()
    assert problem is not None
    assert problem.name == "the_derivative_of_x_squared_at_3_is_6"
    assert problem.message == f"it did not finish within {limit} s (an endless loop? --timeout gives more time)"
    assert {t.message for t in looping.tests[1:]} == {"not run: the checks of this exercise stopped at an earlier one"}
    assert after.status == grading.DONE  # the interpreter goes on as before
    assert sys.gettrace() is None or how != "trace"


@pytest.mark.slow  # two whole checks of a course directory: seconds
def test_the_interpreter_is_left_as_it_was_and_a_changed_file_is_read_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = solutions_in(tmp_path / "course")
    right = (directory / "derivatives.py").read_text()
    wrong = next(m for m in MISTAKES if m.name == "the central difference divided by h, not 2h")
    (directory / "derivatives.py").write_text(right.replace(wrong.old, wrong.new))
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x --maxfail=1")
    path, cwd, modules = list(sys.path), os.getcwd(), set(sys.modules)
    (failing,) = inprocess.run(directory, [exercise(1)], timeout=300)
    assert failing.status == grading.FAILING
    assert "central_difference(lambda x: x * x, 3.0) is 12" in (failing.first_problem() or failing.tests[0]).message
    assert (sys.path, os.getcwd(), os.environ["PYTEST_ADDOPTS"]) == (path, cwd, "-x --maxfail=1")
    assert "derivatives" not in sys.modules
    assert not {name for name in set(sys.modules) - modules if name.startswith("check_")}
    (directory / "derivatives.py").write_text(right)
    (fixed,) = inprocess.run(directory, [exercise(1)], timeout=300)
    assert fixed.status == grading.DONE
    assert not list(directory.glob("__pycache__"))
    assert not list(directory.glob(".hypothesis"))


def test_course_check_takes_the_path_when_asked_and_starts_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = solutions_in(tmp_path / "course")

    def no_processes(*args: object, **kwargs: object) -> None:
        raise AssertionError("grading.run was called: the in-process path was not taken")

    monkeypatch.setattr(grading, "run", no_processes)
    monkeypatch.setenv(inprocess.VARIABLE, "1")
    assert commands.main(["check", str(directory), "1"]) == 0
    assert "Checked exercise 1 alone: done." in capsys.readouterr().out


def test_a_deadline_outside_the_known_clocks_is_refused() -> None:
    with pytest.raises(ValueError, match="how must be one of alarm, monitoring, trace"), inprocess.deadline(1, "cpu"):
        pass
