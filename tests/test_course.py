"""vjpgrad course: the command line, and grading checked the three ways CI checks it.

1. the untouched skeleton: every exercise not started, with a hint, no traceback, exit 1;
2. the reference solutions: every exercise done, exit 0;
3. typical wrong solutions (tests/_course_mistakes.py): each fails at its exercise, with a message
   that names the wrong node, edge or input.

Also: a correct engine written otherwise (tests/_course_engine_kahn.py) passes the engine
exercises; init never overwrites; --json is complete; solution asks first. Grading runs pytest in a
child process; the runs that do not need the command line go through ``grading.run``, two at a time.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _course_mistakes import MISTAKES, Mistake
from hypothesis import given

from vjpgrad.course import grading, main
from vjpgrad.course.exercises import EXERCISES, Exercise, exercise, folder, student_files
from vjpgrad.course.twins import (
    OPERATIONS,
    SHORTCUT,
    SMALL,
    Instruction,
    MismatchError,
    Program,
    Twin,
    close,
    programs,
)

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
KAHN = TESTS / "_course_engine_kahn.py"
REQUIRED = [ex for ex in EXERCISES if not ex.stretch]


@dataclass
class Ran:
    """One command line run in this process: exit status, stdout, stderr."""

    status: int
    out: str
    err: str


def course(capsys: pytest.CaptureFixture[str], *args: str) -> Ran:
    status = main(list(args))
    captured = capsys.readouterr()
    return Ran(status, captured.out, captured.err)


def one_line_error(ran: Ran) -> str:
    """The error of a refused command: exit 2, nothing on stdout, one line on stderr, no traceback."""
    assert ran.status == 2
    assert ran.out == ""
    assert "Traceback" not in ran.err
    assert ran.err.count("\n") == 1
    assert ran.err.startswith("vjpgrad course: error: ")
    return ran.err.strip()


def solutions_in(directory: Path) -> Path:
    shutil.copytree(folder("solutions"), directory, dirs_exist_ok=True)
    return directory


@pytest.fixture
def skeleton(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert course(capsys, "init", str(tmp_path / "mycourse")).status == 0
    return tmp_path / "mycourse"


# ---- init --------------------------------------------------------------------------------------------------


def test_init_writes_every_students_file_and_a_readme(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran = course(capsys, "init", str(tmp_path / "a" / "b"))
    assert ran.status == 0
    written = sorted(path.name for path in (tmp_path / "a" / "b").iterdir())
    assert written == sorted([*student_files(), "README.md"])
    for name in student_files():
        assert (tmp_path / "a" / "b" / name).read_text() == (folder("templates") / name).read_text()
        assert f"wrote {name}" in ran.out
    readme = (tmp_path / "a" / "b" / "README.md").read_text()
    assert all(ex.title in readme for ex in EXERCISES)
    assert not any(
        (tmp_path / "a" / "b" / name).exists() for name in ("conftest.py", "check_01_central_differences.py")
    )


def test_in_a_browser_each_command_says_how_to_run_the_commands_it_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # JupyterLite has no terminal: "run vjpgrad course check" is written main(["check", ...]) there
    from vjpgrad.course import commands

    assert commands.IN_A_BROWSER not in course(capsys, "init", str(tmp_path / "here")).out
    monkeypatch.setattr(commands, "in_a_browser", lambda: True)
    said = course(capsys, "init", str(tmp_path / "there")).out
    assert said.rstrip().endswith(commands.IN_A_BROWSER)
    assert 'main(["check", "mycourse", "1"])' in commands.IN_A_BROWSER


def test_init_never_overwrites_a_file_and_says_which_it_kept(
    skeleton: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (skeleton / "engine.py").write_text("# my work\n")
    (skeleton / "seeds.py").unlink()
    ran = course(capsys, "init", str(skeleton))
    assert ran.status == 0
    assert (skeleton / "engine.py").read_text() == "# my work\n"
    assert (skeleton / "seeds.py").read_text() == (folder("templates") / "seeds.py").read_text()
    assert "kept  engine.py (it is there already: init never overwrites a file)" in ran.out
    assert "wrote seeds.py" in ran.out
    assert "1 file written" in ran.out


def test_init_never_writes_a_solution(skeleton: Path) -> None:
    for name in student_files():
        assert (skeleton / name).read_text() != (folder("solutions") / name).read_text()


def test_init_refuses_a_path_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").write_text("")
    assert "is a file, not a directory" in one_line_error(course(capsys, "init", str(tmp_path / "taken")))


def test_init_into_a_directory_it_cannot_write_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = Path.open

    def refuse_in_tmp_path(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.parent == tmp_path:
            raise PermissionError(13, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse_in_tmp_path)
    message = one_line_error(course(capsys, "init", str(tmp_path)))
    assert message == f"vjpgrad course: error: cannot write {tmp_path / student_files()[0]}: Permission denied"


# ---- way 1: the untouched skeleton ---------------------------------------------------------------------------


def scoreboard_rows(out: str) -> dict[int, tuple[str, str]]:
    """The scoreboard's rows: exercise number -> (status, tests passed)."""
    rows = {}
    for line in out.splitlines():
        match = re.match(r"\s*(\d+)\s{2}.*?\s{2,}(done|failing|not started)\s{2,}(\d+/\d+)$", line)
        if match:
            rows[int(match.group(1))] = (match.group(2), match.group(3))
    return rows


@pytest.mark.slow  # a full run of the course's checks
def test_the_untouched_skeleton_is_not_started_everywhere_with_a_hint_and_no_traceback(
    skeleton: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = course(capsys, "check", str(skeleton))
    assert ran.status == 1
    rows = scoreboard_rows(ran.out)
    assert sorted(rows) == [ex.number for ex in EXERCISES]
    assert {status for status, _ in rows.values()} == {"not started"}
    assert all(passed.startswith("0/") and passed != "0/0" for _, passed in rows.values())
    assert "0 of 11 done." in ran.out
    assert "Exercise 1 (derivatives.py) is not started" in ran.out
    assert "derivatives.py, line " in ran.out  # where the skeleton's NotImplementedError is
    assert "exercise 1: write central_difference" in ran.out
    assert "Stuck? `vjpgrad course hint 1`" in ran.out  # hints only when asked
    assert exercise(1).hint[:40] not in ran.out.replace("\n  ", " ")
    assert f"vjpgrad course check {skeleton} 1" in ran.out
    assert "Traceback" not in ran.out + ran.err
    assert ran.err == ""


@pytest.mark.slow  # runs the exercises' checks in pytest processes
def test_check_N_in_the_current_directory_checks_that_exercise_alone(
    skeleton: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(skeleton)
    ran = course(capsys, "check", "4")
    assert ran.status == 1
    assert list(scoreboard_rows(ran.out)) == [4]
    assert "exercise 2: write Value.__mul__" in ran.out  # exercise 4's graphs need exercise 2's * first
    assert "(its checks run the code of exercise 2: do exercise 2 first)" in ran.out
    assert "Check this one alone" not in ran.out


# ---- way 2: the reference solutions ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_reference_solutions_are_all_done_and_the_json_says_so_completely(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = course(capsys, "check", str(solutions_in(tmp_path / "solved")), "--json")
    assert ran.status == 0, ran.out[-3000:]
    report = json.loads(ran.out)
    assert report["version"] == 1
    assert report["status"] == "pass"
    assert report["score"] == sum(ex.points for ex in EXERCISES)  # the stretch exercise is extra credit
    assert report["max_score"] == sum(ex.points for ex in REQUIRED)
    assert [test["number"] for test in report["tests"]] == [ex.number for ex in EXERCISES]
    for test, ex in zip(report["tests"], EXERCISES, strict=True):
        assert test["state"] == "done"
        assert test["status"] == "pass"
        assert test["name"] == ex.heading
        assert test["files"] == list(ex.files)
        assert test["hint"] == ex.hint
        assert test["stretch"] is ex.stretch
        assert test["score"] == test["max_score"] == ex.points
        assert test["passed"] == test["total"] == len(test["checks"]) > 0
        assert all(check["outcome"] == "passed" and check["message"] == "" for check in test["checks"])


@pytest.mark.slow  # runs the exercises' checks in pytest processes
def test_the_json_of_a_skeleton_gives_every_check_its_outcome_and_message(
    skeleton: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = course(capsys, "check", str(skeleton), "1", "--json")
    assert ran.status == 1
    report = json.loads(ran.out)
    assert (report["status"], report["score"], report["max_score"]) == ("fail", 0, exercise(1).points)
    (test,) = report["tests"]
    assert (test["state"], test["status"], test["score"], test["passed"]) == ("not started", "fail", 0, 0)
    assert test["message"].startswith("derivatives.py, line ")
    assert {check["outcome"] for check in test["checks"]} == {"not started"}
    assert all("exercise 1: write" in check["message"] for check in test["checks"])


# ---- way 3: typical mistakes ------------------------------------------------------------------------------------


ENGINE_READERS = {2, 3, 4, 5, 6, 7, 11}
"""The exercises whose checks run the student's engine.py, besides their own files."""


def reads(ex: Exercise) -> set[str]:
    """The student's files an exercise's checks run."""
    files = set(ex.files) | ({"engine.py"} if ex.number in ENGINE_READERS else set())
    return files | ({"derivatives.py"} if ex.number == 9 else set())


@dataclass
class Batch:
    """Mistakes that can be checked in one run: none changes a file another one's exercise reads."""

    mistakes: list[Mistake] = field(default_factory=list)

    def admits(self, mistake: Mistake) -> bool:
        changed = {m.file for m in self.mistakes}
        read = set().union(*(reads(exercise(m.exercise)) for m in self.mistakes)) if self.mistakes else set()
        exercises = {m.exercise for m in self.mistakes}
        return (
            mistake.exercise not in exercises
            and mistake.file not in changed | read
            and not reads(exercise(mistake.exercise)) & changed
        )


def batches(mistakes: Sequence[Mistake]) -> list[Batch]:
    out: list[Batch] = []
    for mistake in mistakes:
        batch = next((b for b in out if b.admits(mistake)), None)
        if batch is None:
            batch = Batch()
            out.append(batch)
        batch.mistakes.append(mistake)
    return out


def with_mistakes(directory: Path, mistakes: Sequence[Mistake]) -> Path:
    """The reference solutions in ``directory``, with each mistake made."""
    solutions_in(directory)
    for mistake in mistakes:
        path = directory / mistake.file
        text = path.read_text()
        assert text.count(mistake.old) == 1, f"{mistake.name}: its old text is not once in {mistake.file}"
        path.write_text(text.replace(mistake.old, mistake.new))
    return directory


def check_batch(directory: Path, batch: Batch) -> dict[str, grading.ExerciseResult]:
    with_mistakes(directory, batch.mistakes)
    results = grading.run(directory, [exercise(m.exercise) for m in batch.mistakes], timeout=300)
    return {m.name: r for m, r in zip(batch.mistakes, results, strict=True)}


@pytest.fixture(scope="module")
def mistakes_checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, grading.ExerciseResult]:
    """Every quick mistake, checked at its exercise, in as few runs as they allow, two runs at a time."""
    plan = batches([m for m in MISTAKES if not m.slow])
    folders = [tmp_path_factory.mktemp(f"mistakes{k}") for k in range(len(plan))]  # mktemp is no thread's to share
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = pool.map(check_batch, folders, plan)
        return {name: result for results in done for name, result in results.items()}


def assert_fails_with(result: grading.ExerciseResult, mistake: Mistake) -> None:
    assert result.exercise.number == mistake.exercise
    assert result.status == grading.FAILING, [t.message for t in result.tests]
    problem = result.first_problem()
    assert problem is not None
    assert problem.outcome == grading.FAILED
    for fragment in mistake.expect:
        assert fragment in problem.message, problem.message
    for fragment in mistake.forbid:
        assert fragment not in problem.message, problem.message
    assert "Traceback" not in problem.message


@pytest.mark.slow  # the mistakes are checked in a few full runs of the course's checks
@pytest.mark.parametrize("mistake", [m for m in MISTAKES if not m.slow], ids=lambda m: m.name)
def test_a_typical_mistake_fails_at_its_exercise_with_a_message_that_names_it(
    mistakes_checked: dict[str, grading.ExerciseResult], mistake: Mistake
) -> None:
    assert_fails_with(mistakes_checked[mistake.name], mistake)


@pytest.mark.slow
@pytest.mark.parametrize("mistake", [m for m in MISTAKES if m.slow], ids=lambda m: m.name)
def test_a_slow_typical_mistake_fails_at_its_exercise(tmp_path: Path, mistake: Mistake) -> None:
    assert_fails_with(check_batch(tmp_path, Batch([mistake]))[mistake.name], mistake)


def table_row(message: str, name: str) -> list[str]:
    """The cells of the row of ``name`` in an assert_grad_close table."""
    return next(line.split() for line in message.splitlines() if line.split()[:1] == [name])


@pytest.mark.slow  # the mistakes are checked in a few full runs of the course's checks
def test_a_wrong_softsign_rule_is_yours_beside_the_expected_quarter(
    mistakes_checked: dict[str, grading.ExerciseResult],
) -> None:
    problem = mistakes_checked["softsign's derivative without the square"].first_problem()
    assert problem is not None
    assert problem.name == "the_derivative_at_one_is_a_quarter"
    value, yours, expected = (float(cell) for cell in table_row(problem.message, "x")[1:4])
    assert (value, yours, expected) == (1.0, 0.5, 0.25)  # the wrong rule 1 / (1 + |x|) at 1; the right one squares it


@pytest.mark.slow  # the mistakes are checked in a few full runs of the course's checks
def test_a_forgotten_seed_shows_b0_as_12_beside_vjpgrads_1_2(
    mistakes_checked: dict[str, grading.ExerciseResult],
) -> None:
    problem = mistakes_checked["the seed forgotten for b (4b, not v * 4b)"].first_problem()
    assert problem is not None
    value, yours, ours = (float(cell) for cell in table_row(problem.message, "b[0]")[1:4])
    assert (value, yours) == (3.0, 12.0)  # b = 3 and v = 0.1: 4b forgot the seed
    assert ours == pytest.approx(1.2)
    assert table_row(problem.message, "a[0]")[-1] == "ok"


@pytest.mark.slow  # the mistakes are checked in a few full runs of the course's checks
def test_a_mistake_in_one_closure_marks_one_first_difference(
    mistakes_checked: dict[str, grading.ExerciseResult],
) -> None:
    problem = mistakes_checked["tanh's derivative written 1 - tanh"].first_problem()
    assert problem is not None
    marked = [line.split() for line in problem.message.splitlines() if line.endswith("<-- first difference")]
    assert len(marked) == 1
    assert marked[0][2] == "tanh"  # the op column of the marked step


# ---- a second, independent engine ---------------------------------------------------------------------------------


@pytest.mark.slow  # a full run of the course's checks
def test_an_independent_correct_engine_passes_every_exercise_that_runs_an_engine(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "kahn")
    shutil.copy(KAHN, directory / "engine.py")
    checked = [exercise(n) for n in sorted(ENGINE_READERS - {11})]  # 11 trains a network: slow, and needs no more
    results = grading.run(directory, checked, timeout=300)
    assert [(r.exercise.number, r.status) for r in results] == [(ex.number, grading.DONE) for ex in checked], [
        t.message for r in results for t in r.tests if t.outcome != grading.PASSED
    ]


# ---- what check says about a broken directory ------------------------------------------------------------------


@pytest.mark.slow  # runs the exercises' checks in pytest processes
def test_a_syntax_error_and_a_missing_file_are_each_one_message(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "broken")
    (directory / "engine.py").write_text("class Value:\n    def __add__(self, other)\n        pass\n")
    (directory / "seeds.py").unlink()
    engine, seeds = grading.run(directory, [exercise(2), exercise(6)], timeout=300, known_as="broken")
    problem = engine.first_problem()
    assert problem is not None
    assert problem.message.startswith("engine.py, line 2: SyntaxError: ")
    (directory / "engine.py").write_bytes(b"class Value:\n    pass\n\0\n")  # a null byte: named as well
    (engine,) = grading.run(directory, [exercise(2)], timeout=300, known_as="broken")
    problem = engine.first_problem()
    assert problem is not None
    assert problem.message.startswith("engine.py, line 3: SyntaxError: the file holds a null byte"), problem.message
    problem = seeds.first_problem()
    assert problem is not None
    assert problem.message.startswith("seeds.py is not in broken: `vjpgrad course init broken` writes it again")
    (graded,) = grading.run(directory, [exercise(6)], timeout=300)  # grade's: the student did not name it
    problem = graded.first_problem()
    assert problem is not None
    assert problem.message.startswith("seeds.py is not in the submission: hand it in")
    assert str(directory) not in problem.message


@pytest.mark.slow  # it waits for the clock's limit
@pytest.mark.skipif(not grading.cpu_limited(), reason="the CPU's limit and the clock's differ where CPU is limited")
def test_a_check_that_waits_forever_is_stopped_by_the_clock_and_says_so(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "waits")
    (directory / "derivatives.py").write_text(
        "import time\n\n\ndef central_difference(f, *xs, arg=0, h=1e-6):\n    time.sleep(600)\n"
    )
    (result,) = grading.run(directory, [exercise(1)], timeout=1)  # 1 s of CPU, 5 s of the clock
    problem = result.first_problem()
    assert problem is not None
    assert problem.message.startswith(f"it did not finish within 1 s of CPU or {grading.WALL:g} s of the clock")


@pytest.mark.slow  # it waits for the timeout
def test_a_check_that_loops_forever_is_stopped_by_the_timeout(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "loops")
    (directory / "derivatives.py").write_text(
        "def central_difference(f, *xs, arg=0, h=1e-6):\n    while True:\n        pass\n"
    )
    (result,) = grading.run(directory, [exercise(1)], timeout=5)  # seconds of CPU: short, as the test waits for it
    assert result.status == grading.FAILING
    problem = result.first_problem()
    assert problem is not None
    assert problem.name == "the_derivative_of_x_squared_at_3_is_6"
    assert problem.message.startswith("it did not finish within 5 s")
    assert {t.message for t in result.tests[1:]} == {"not run: the checks of this exercise stopped at an earlier one"}


@pytest.mark.slow  # runs the exercises' checks in pytest processes
def test_a_student_file_that_ends_the_process_is_reported_at_its_check(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "exits")
    (directory / "derivatives.py").write_text(
        "import os\n\n\ndef central_difference(f, *xs, arg=0, h=1e-6):\n    os._exit(3)\n"
    )
    (result,) = grading.run(directory, [exercise(1)], timeout=300)
    problem = result.first_problem()
    assert problem is not None
    assert problem.name == "the_derivative_of_x_squared_at_3_is_6"
    assert "stopped during it" in problem.message


@pytest.mark.slow  # runs the exercises' checks in pytest processes
def test_a_students_exception_names_its_line_and_the_generated_example(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "raises")
    path = directory / "engine.py"
    path.write_text(path.read_text().replace('out = Value(self.data + other.data, (self, other), "+")', "out = None.x"))
    (result,) = grading.run(directory, [exercise(2)], timeout=300)
    problem = result.first_problem()
    assert problem is not None
    line = next(n for n, text in enumerate(path.read_text().splitlines(), start=1) if "None.x" in text)
    assert problem.message.startswith(f"AttributeError: 'NoneType' object has no attribute 'x' (engine.py, line {line}")
    assert "Failing explicit example" in problem.message  # hypothesis's example, without the fixtures
    assert "engine=" not in problem.message
    assert "student=" not in problem.message


# ---- check's command line ----------------------------------------------------------------------------------------


def test_check_without_pytest_says_how_to_install_it(
    skeleton: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "hypothesis" else real(name, *a))
    message = one_line_error(course(capsys, "check", str(skeleton)))
    assert message.endswith(
        "check needs hypothesis: pip install hypothesis (or pip install -e '.[course]' in your clone of vjpgrad)"
    )


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["nowhere"], "no directory nowhere: make the course's files with vjpgrad course init nowhere"),
        (["SKELETON", "13"], "there is no exercise 13: they are numbered 1 to 12 (vjpgrad course list)"),
        (["SKELETON", "0"], "there is no exercise 0"),
        (["a", "b", "c"], "check takes at most a directory and an exercise number, got a b c"),
        (["SKELETON", "--timeout", "0"], "--timeout must be a positive number of seconds, got 0"),
        (["SKELETON", "--timeout", "inf"], "--timeout must be at most 86400 seconds (a day), got inf"),
        (["SKELETON", "abc"], "the exercise to check is a number, got abc"),
        (["SKELETON", "--", "-1"], "the exercise to check is a number, got -1"),
        (["SKELETON", "--timeout", "soon"], "argument --timeout: invalid float value: 'soon'"),
        (["EMPTY"], "has none of the course's files: write them with vjpgrad course init"),
    ],
)
def test_check_refuses_bad_input_in_one_line(
    skeleton: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], words: list[str], said: str
) -> None:
    (tmp_path / "empty").mkdir()
    places = {"SKELETON": str(skeleton), "EMPTY": str(tmp_path / "empty")}
    assert said in one_line_error(course(capsys, "check", *(places.get(word, word) for word in words)))


def test_the_scoreboard_shows_the_first_exercise_not_done_with_its_message_and_hint() -> None:
    results = [
        grading.ExerciseResult(exercise(1), [grading.TestResult("a", grading.PASSED)]),
        grading.ExerciseResult(
            exercise(2),
            [grading.TestResult("b_c", grading.PASSED), grading.TestResult("d", grading.FAILED, "line one\nline two")],
        ),
        grading.ExerciseResult(exercise(3), [grading.TestResult("e", grading.NOT_STARTED, "not yet")]),
        grading.ExerciseResult(exercise(12), [grading.TestResult("f", grading.NOT_STARTED, "not yet")]),
    ]
    text = grading.scoreboard(results, Path("/somewhere"), "vjpgrad course check", hinted=[2, 3])
    assert scoreboard_rows(text) == {
        1: ("done", "1/1"),
        2: ("failing", "1/2"),
        3: ("not started", "0/1"),
        12: ("not started", "0/1"),
    }
    assert "1 of 3 done." in text
    assert "Exercise 2 (engine.py) is failing" in text
    assert "  d:\n    line one\n    line two" in text
    assert "not yet" not in text
    assert "Stuck? `vjpgrad course hint 2`" in text
    assert exercise(2).hint[:30] not in text  # hints only when asked
    assert "Check this one alone: vjpgrad course check 2" in text
    assert not grading.all_done(results)
    assert grading.all_done(results[:1])


def test_a_stretch_exercise_is_not_needed_unless_it_is_checked_alone() -> None:
    required = [grading.ExerciseResult(ex, [grading.TestResult("a", grading.PASSED)]) for ex in REQUIRED]
    stretch = [grading.ExerciseResult(exercise(12), [grading.TestResult("b", grading.FAILED, "no")])]
    assert grading.all_done(required + stretch)
    assert not grading.all_done(stretch, stretch_counts=True)
    assert f"{len(REQUIRED)} of {len(REQUIRED)} done. All done" in grading.scoreboard(required + stretch, Path(), "c")
    report = grading.as_json(required + stretch, Path())
    most = sum(ex.points for ex in REQUIRED)
    assert (report["status"], report["score"], report["max_score"]) == ("pass", most, most)


def test_checking_one_exercise_says_what_was_checked_and_what_was_not() -> None:
    done = [grading.ExerciseResult(exercise(1), [grading.TestResult("a", grading.PASSED)])]
    text = grading.scoreboard(done, Path(), "vjpgrad course check")
    assert "All done" not in text
    assert "Checked exercise 1 alone: done." in text
    assert "Not checked this time: exercises 2 to 12 (vjpgrad course check checks them all)." in text
    failing = [grading.ExerciseResult(exercise(4), [grading.TestResult("a", grading.FAILED, "no")])]
    text = grading.scoreboard(failing, Path(), "vjpgrad course check d")
    assert "Checked exercise 4 alone: failing." in text
    assert "Not checked this time: exercises 1 to 3 and 5 to 12 (vjpgrad course check d checks them all)." in text


def test_all_done_is_said_only_when_every_exercise_of_the_course_is_done() -> None:
    passed = [grading.TestResult("a", grading.PASSED)]
    almost = [grading.ExerciseResult(ex, passed) for ex in REQUIRED[:-1]]
    text = grading.scoreboard(almost, Path(), "c")
    assert "All done" not in text
    assert f"{len(REQUIRED) - 1} of {len(REQUIRED) - 1} done." in text
    assert f"Not checked this time: exercises {REQUIRED[-1].number} and 12" in text


def test_the_full_count_says_the_stretch_exercise_is_not_counted() -> None:
    results = [grading.ExerciseResult(ex, [grading.TestResult("a", grading.NOT_STARTED, "x")]) for ex in EXERCISES]
    text = grading.scoreboard(results, Path(), "c")
    assert f"0 of {len(REQUIRED)} done." in text
    assert "Exercise 12 is a stretch: checked and shown, but not counted; the course is done without it." in text
    assert "Not checked" not in text


@pytest.mark.slow  # runs the exercises' checks in pytest processes
def test_check_of_one_solved_exercise_does_not_say_all_done(
    skeleton: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(folder("solutions") / "derivatives.py", skeleton / "derivatives.py")
    monkeypatch.chdir(skeleton)
    ran = course(capsys, "check", ".", "1")
    assert ran.status == 0, ran.out
    assert scoreboard_rows(ran.out) == {1: ("done", "5/5")}
    assert "All done" not in ran.out
    assert "Checked exercise 1 alone: done." in ran.out
    assert "Not checked this time: exercises 2 to 12 (vjpgrad course check checks them all)." in ran.out


# ---- hint, list, solution, and the entry points ---------------------------------------------------------------


def test_hint_prints_the_exercises_hint(capsys: pytest.CaptureFixture[str]) -> None:
    ran = course(capsys, "hint", "4")
    assert ran.status == 0
    assert ran.out.startswith(f"Exercise 4. {exercise(4).title} (engine.py)")
    assert " ".join(ran.out.split()[-5:]) == " ".join(exercise(4).hint.split()[-5:])


@pytest.mark.parametrize(("word", "said"), [("99", "there is no exercise 99"), ("two", "N must be an exercise number")])
def test_hint_and_solution_refuse_an_unknown_exercise(capsys: pytest.CaptureFixture[str], word: str, said: str) -> None:
    assert said in one_line_error(course(capsys, "hint", word))
    assert said in one_line_error(course(capsys, "solution", word, "--yes"))


def test_list_shows_every_exercise_in_order_with_its_files(capsys: pytest.CaptureFixture[str]) -> None:
    ran = course(capsys, "list")
    lines = ran.out.splitlines()
    assert [int(line.split()[0]) for line in lines] == [ex.number for ex in EXERCISES]
    for line, ex in zip(lines, EXERCISES, strict=True):
        assert line.split()[1] == ex.files[0]
        assert line.endswith(ex.label)


@pytest.mark.parametrize("answer", ["n\n", "\n", "maybe\n", ""])  # "" is the end of input
def test_solution_asks_first_and_shows_nothing_without_a_yes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, answer: str
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    ran = course(capsys, "solution", "2")
    assert ran.status == 0
    assert "gives the answer away" in ran.out
    assert ran.out.rstrip().endswith("Show it? [y/N] Not shown.")
    assert "def __add__" not in ran.out


def test_solution_shows_only_the_parts_of_its_exercise_after_a_yes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    asked = course(capsys, "solution", "2")
    assert "Show it? [y/N] " in asked.out
    shown = asked.out.split("Show it? [y/N] ", 1)[1]
    assert shown == course(capsys, "solution", "2", "--yes").out
    assert "# engine.py, Value.__add__\ndef __add__(self, other):" in shown
    assert "def __mul__" in shown
    assert "def backward" not in shown
    assert "def exp" not in shown
    compile(shown, "<solution 2>", "exec")  # it reads as Python


def test_solution_of_an_exercise_without_parts_is_its_whole_file(capsys: pytest.CaptureFixture[str]) -> None:
    shown = course(capsys, "solution", "10", "--yes").out
    assert shown == f"# softsign.py\n{(folder('solutions') / 'softsign.py').read_text()}\n"
    assert "return 1 / (1 + abs(x)) ** 2" in shown


def test_vjpgrad_course_without_a_command_prints_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    ran = course(capsys)
    assert ran.status == 0
    for command in ("init", "check", "hint", "list", "solution"):
        assert command in ran.out


def test_an_unknown_command_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert "invalid choice: 'frobnicate'" in one_line_error(course(capsys, "frobnicate"))


@pytest.mark.slow  # runs the exercises' checks in pytest processes
def test_python_dash_m_vjpgrad_course_runs_the_course() -> None:
    ran = subprocess.run([sys.executable, "-m", "vjpgrad", "course", "list"], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert len(ran.stdout.splitlines()) == len(EXERCISES)
    assert ran.stdout.splitlines()[0].split()[:2] == ["1", "derivatives.py"]


# ---- the course's files agree with each other ----------------------------------------------------------------------


def defined(path: Path) -> set[str]:
    """The functions and classes a file defines, methods as Class.method."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{n.name}" for n in node.body if isinstance(n, ast.FunctionDef)}
    return names


@pytest.mark.parametrize("name", student_files())
def test_each_solution_defines_what_its_template_asks_for(name: str) -> None:
    assert defined(folder("solutions") / name) == defined(folder("templates") / name)


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.slug)
def test_each_exercise_has_its_files_its_check_and_solution_parts(ex: Exercise) -> None:
    assert ex.check.is_file()
    assert set(ex.parts) <= defined(folder("solutions") / ex.files[0])
    for name in ex.files:
        todos = re.findall(r'NotImplementedError\("exercise (\d+):', (folder("templates") / name).read_text())
        assert todos, f"{name} has no TODO"
        assert all(exercise(int(n)).files[0] == name for n in todos)  # each TODO names an exercise of its file
    assert ex.hint
    assert ex.title


def test_every_check_file_belongs_to_an_exercise() -> None:
    checks = sorted(path.name for path in folder("checks").glob("check_*.py"))
    assert checks == sorted(ex.check.name for ex in EXERCISES)


def test_pyproject_ships_the_course_and_its_extra() -> None:
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs tomllib (Python 3.11+)")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    shipped = config["tool"]["setuptools"]["package-data"]["vjpgrad"]
    package = folder("templates").parent
    listed = [folder("templates").parent / "exercises.toml"]
    for data in [*listed, *folder("templates").iterdir(), *folder("checks").iterdir(), *folder("solutions").iterdir()]:
        if data.is_file():
            relative = data.relative_to(package.parent).as_posix()  # course/templates/engine.py
            assert any(Path(relative).match(pattern) for pattern in shipped), f"{relative} is not in package-data"
    assert sorted(config["project"]["optional-dependencies"]["course"]) == [
        "hypothesis>=6",
        "pytest>=7",
        "tomli>=1.1; python_version < '3.11'",  # the course's TOML reader on Python 3.10
    ]


# ---- the comparison of two engines, in this process ----------------------------------------------------------------


def reference_engine(*changes: tuple[str, str]) -> Any:
    """The reference engine's Value, loaded from the solution file, with ``changes`` (old, new) made."""
    source = (folder("solutions") / "engine.py").read_text()
    for old, new in changes:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    module = ModuleType("course_reference_engine")
    exec(compile(source, "engine.py", "exec"), module.__dict__)
    return module.Value


REFERENCE = reference_engine()


@pytest.mark.slow  # a search of generated graphs
@given(programs(tuple(OPERATIONS)))
def test_generated_graphs_run_in_both_engines_and_agree(program: Program) -> None:
    twin = Twin(program, REFERENCE)
    twin.check_closures()
    Twin(program, REFERENCE).check_backward()
    Twin(program, REFERENCE).check_passes(2)
    assert set(program.names) == set(twin.theirs)


@pytest.mark.slow  # a search of generated programs
def test_a_required_operation_is_always_in_the_program() -> None:
    @given(programs(("+",), must_use="log", low=-3, high=-1))  # log is undefined at every leaf drawn
    def each(program: Program) -> None:
        assert [i.op for i in program.instructions][-1] == "log"

    each()


def test_a_wrong_local_derivative_marks_its_edge_and_says_what_to_check() -> None:
    tanh_one_minus = reference_engine(
        ("self.grad += (1 - out.data**2) * out.grad", "self.grad += (1 - out.data) * out.grad")
    )
    program = Program(
        (("x1", 0.5),),
        (Instruction("t1", "*", ("x1", 3.0)), Instruction("t2", "tanh", ("t1",)), Instruction("t3", "+", ("t2", "x1"))),
    )
    with pytest.raises(MismatchError) as failure:
        Twin(program, tanh_one_minus).check_closures()
    message = str(failure.value)
    marked = [line.split() for line in message.splitlines() if line.endswith("<-- first difference")]
    assert [row[1:4] for row in marked] == [["t2", "tanh", "t1"]]
    assert "the edge t2 -> t1 (tanh) handed t1" in message
    assert "check the local derivative of tanh" in message


EAGER_PASS = """        self.grad = 1.0
        todo, seen = [self], {self}
        while todo:  # runs each node as soon as a walk from the output meets it
            node = todo.pop(0)
            node._backward()
            for child in node._prev:
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
"""


def test_the_shortcut_graph_catches_a_pass_that_is_not_topological() -> None:
    start = "        order = self.topological_order()\n        for node in order:  # exercise 5"
    eager = reference_engine((start, EAGER_PASS + "        return\n" + start))
    with pytest.raises(MismatchError, match="it ran before t2, which uses t1: the order is not topological"):
        Twin(SHORTCUT, eager).check_backward()
    Twin(SMALL, REFERENCE).check_backward()  # where every node has one use, that order happens to work


@pytest.mark.parametrize(
    ("theirs", "ours", "scale", "agree"),
    [
        (1.0 + 1e-9, 1.0, 0.0, True),  # rounding
        (1.1, 1.0, 0.0, False),
        (1e-12, 0.0, 1.0, True),  # a sum of terms of size 1 that cancel keeps their rounding
        (1e-3, 0.0, 1.0, False),
        (float("nan"), float("nan"), 0.0, True),
        (None, 1.0, 0.0, False),
        (True, 1.0, 0.0, False),  # a bool is not a gradient
    ],
)
def test_close_allows_rounding_and_refuses_a_wrong_number(theirs: Any, ours: float, scale: float, agree: bool) -> None:
    assert close(theirs, ours, scale) is agree


@pytest.mark.slow  # runs the exercises' checks in pytest processes
def test_no_check_leaves_files_in_the_students_directory(skeleton: Path) -> None:
    before = sorted(path.name for path in skeleton.iterdir())
    grading.run(skeleton.resolve(), [exercise(1), exercise(2)], timeout=300)
    assert sorted(path.name for path in skeleton.iterdir()) == before


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        (
            (
                "            self.grad += out.grad\n            other.grad += out.grad",
                "            self.grad += 1.0\n            other.grad += 1.0",
            ),
            "the edge t2 -> t1 (+) handed t1 1; vjpgrad's hands 1.5 = upstream 1.5 x local derivative 1: that is the "
            "local derivative alone, but t2.grad is 1.5 here: multiply by out.grad (the chain rule",
        ),
        (
            ("self.grad += other.data * out.grad", "self.grad += other.data"),
            "the edge t1 -> x1 (*) handed x1 -0.5; vjpgrad's hands -0.75 = upstream 1.5 x local derivative -0.5: that "
            "is the local derivative alone, but t1.grad is 1.5 here: multiply by out.grad (the chain rule",
        ),
        (
            ("self.grad += other.data * out.grad", "self.grad += self.data"),
            "the edge t1 -> x1 (*) handed x1 1.5; vjpgrad's hands -1 = upstream 2 x local derivative -0.5: that "
            "is x1's own number, but an operand receives out.grad x the local derivative: multiply by out.grad (the "
            "chain rule; t1.grad is 2 here)",
        ),
        (
            ("self.grad += other.data * out.grad", "self.grad += out.grad"),
            "the edge t3 -> t2 (*) handed t2 1; vjpgrad's hands 1.5 = upstream 1 x local derivative 1.5: that is "
            "out.grad alone (or a local derivative of 1): check the local derivative of *, 1.5 here, and multiply "
            "out.grad by it (the chain rule)",
        ),
    ],
    ids=["+ without out.grad", "* without out.grad", "the operand's own number", "out.grad alone"],
)
def test_a_missing_factor_of_the_chain_rule_is_named(changes: tuple[str, str], said: str) -> None:
    twice = Program(  # t1 used twice by +: the * below it runs with out.grad 2
        (("x1", 1.5), ("x2", -0.5)), (Instruction("t1", "*", ("x1", "x2")), Instruction("t2", "+", ("t1", "t1")))
    )
    program = twice if "self.data" in changes[1] else SMALL
    with pytest.raises(MismatchError) as failure:
        Twin(program, reference_engine(changes)).check_closures()
    assert said in str(failure.value)


def test_where_out_grad_is_1_a_missing_out_grad_is_not_blamed_on_the_chain_rule() -> None:
    relu_one_at_zero = reference_engine(("(self.data > 0) * out.grad", "(self.data >= 0) * out.grad"))
    program = Program((("x", 0.0),), (Instruction("t1", "relu", ("x",)),))
    with pytest.raises(MismatchError) as failure:
        Twin(program, relu_one_at_zero).check_closures()
    assert "check the local derivative of relu, 0 here" in str(failure.value)
    assert "that is the local derivative alone" not in str(failure.value)


COLLECT = """
import json, sys
import pytest
from vjpgrad.course import _plugin

class Collector:
    def pytest_collection_finish(self, session):
        print(json.dumps([_plugin.title(item) for item in session.items]), file=sys.__stderr__)

pytest.main(sys.argv[1:], plugins=[Collector()])
"""


@pytest.mark.slow  # runs the exercises' checks in pytest processes
def test_every_check_is_named_by_a_sentence_not_a_test_id(tmp_path: Path) -> None:
    checks = folder("checks")
    command = [
        sys.executable, "-c", COLLECT, "--collect-only", "-q", "-c", str(checks / "pytest.ini"), "--rootdir",
        str(checks), *(str(ex.check) for ex in EXERCISES),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, check=True, text=True)
    titles: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    assert len(titles) == len(set(titles)) > 50
    names = ("softmax_vjp", "zero_grad", "vjp_by_hand", "vjp_with_engine")  # the student's functions, by name
    for title in titles:
        words = " ".join(word for word in title.split() if not word.startswith(names))
        assert not re.search(r"[\[\]_]|vjpgrads |\d \d", words), title
    assert "Case 3's seeds give a.grad = 3.3003" in titles
    assert "tanh hands out.grad times its local derivative to its operand" in titles
    assert "The rule is differentiable too, at x = -2.0" in titles


CLASS_MODE_MISTAKES = [
    ("self.grad += other.data * out.grad", "self.grad = other.data * out.grad"),
    ("self.grad += other.data * out.grad", "self.grad += other.data"),
    ("self.grad += other.data * out.grad", "self.grad += self.data"),
    ("self.grad += other.data * out.grad", "self.grad += out.grad"),
]


@pytest.mark.parametrize(
    "changes", CLASS_MODE_MISTAKES, ids=["= for +=", "no out.grad", "own number", "out.grad alone"]
)
def test_class_mode_says_what_differs_never_how_to_write_the_fix(
    changes: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vjpgrad.course import expect

    program = Program(
        (("x1", 1.5), ("x2", -0.5)),
        (
            Instruction("t1", "*", ("x1", "x2")),
            Instruction("t2", "+", ("t1", "t1")),
            Instruction("t3", "*", ("t2", "x1")),
        ),
    )
    with pytest.raises(MismatchError) as study:
        Twin(program, reference_engine(changes)).check_closures()
    monkeypatch.setattr(expect, "SAY_HOW", [False])
    with pytest.raises(MismatchError) as klass:
        Twin(program, reference_engine(changes)).check_closures()
    said = str(klass.value)
    assert re.search(r"the edge t\d -> \w+ \([+*]\) handed \w+ -?[\d.]+; vjpgrad's hands", said)  # which edge, numbers
    for how in ("+=", "multiply", "do not assign", "check the local derivative"):
        assert how not in said, how
    assert said != str(study.value)
    assert any(how in str(study.value) for how in ("+=", "multiply", "check the"))  # self-study keeps its advice


CLASS_MODE_LATER = {
    "a too small step whose error is small": (
        1, "derivatives.py", "return 1e-12, 1e-5, 1e-1", "return 1e-6, 1e-5, 1e-1",
        "gives the derivative of exp at 1 within", ("pick one",),
    ),
    "a checker with an absolute tolerance only": (
        9, "gradient_checker.py", "if abs(g - numeric) > tol * max(1.0, abs(numeric)):", "if abs(g - numeric) > tol:",
        "off by about 1e-2 from rounding alone", ("tol * max", "compare with"),
    ),
    "training of one step": (
        11, "mlp.py", "def train(points, labels, steps=60):", "def train(points, labels, steps=1):",
        "points are right", ("more steps", "learning rate", "train until"),
    ),
}  # fmt: skip
"""A mistake of a later exercise, what its class-mode message still says, and the advice it leaves out."""


@pytest.mark.slow  # a grading run in class mode
@pytest.mark.parametrize("name", sorted(CLASS_MODE_LATER))
def test_class_mode_messages_of_the_later_exercises_say_what_differs_never_how(tmp_path: Path, name: str) -> None:
    number, file, old, new, said, advice = CLASS_MODE_LATER[name]
    directory = solutions_in(tmp_path / "student")
    path = directory / file
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    (result,) = grading.run(directory, [exercise(number)], timeout=300, class_mode=True)
    messages = "\n".join(t.message for t in result.tests if t.outcome != grading.PASSED)
    assert said in messages, messages
    for how in advice:
        assert how not in messages, how


@pytest.mark.slow  # a check, through the command line
def test_check_names_a_missing_file_in_the_directory_as_the_student_typed_it(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "my course")
    (directory / "seeds.py").unlink()
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "src")}
    ran = subprocess.run(
        [sys.executable, "-m", "vjpgrad", "course", "check", "my course", "6"], cwd=tmp_path, capture_output=True,
        text=True, env=environment, timeout=600,
    )  # fmt: skip
    assert ran.returncode == 1, ran.stderr
    assert "seeds.py is not in my course: `vjpgrad course init 'my course'` writes it again" in ran.stdout
    assert "vjpgrad-" not in ran.stdout


def _check(directory: Path, *words: str) -> subprocess.CompletedProcess[str]:
    """``python -m vjpgrad course check DIR WORDS...`` from ``directory``'s parent, as a student runs it."""
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "src")}
    return subprocess.run(
        [sys.executable, "-m", "vjpgrad", "course", "check", directory.name, *words], cwd=directory.parent,
        capture_output=True, text=True, env=environment, timeout=600,
    )  # fmt: skip


@pytest.mark.slow  # checks, through the command line
def test_an_error_in_a_file_of_a_subfolder_is_named_by_its_path_in_the_submission(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "mine")
    (directory / "helpers").mkdir()
    (directory / "helpers" / "more.py").write_text("def central_difference(f, *xs, arg=0, h=1e-6):\n    return 1 / 0\n")
    (directory / "derivatives.py").write_text(
        "from helpers.more import central_difference  # noqa: F401\n\n\n"
        "def step_sizes():\n    return 1e-12, 1e-5, 0.1\n"
    )
    (directory / "helpers" / "broken.py").write_text("def dot(v, s)\n    return 0\n")
    (directory / "softmax.py").write_text("from helpers.broken import dot  # noqa: F401\n")
    ran = _check(directory, "1")
    assert "ZeroDivisionError: division by zero (helpers/more.py, line 2, in central_difference)" in ran.stdout
    ran = _check(directory, "8")
    assert "helpers/broken.py, line 1: SyntaxError: " in ran.stdout, ran.stdout


@pytest.mark.slow  # a check, through the command line
def test_a_file_of_a_subfolder_that_imports_vjpgrad_is_refused_by_its_path(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "mine")
    (directory / "helpers").mkdir()
    (directory / "helpers" / "more.py").write_text("from vjpgrad import Value  # noqa: F401\n")
    derivatives = directory / "derivatives.py"
    derivatives.write_text("from helpers.more import Value  # noqa: F401\n" + derivatives.read_text())
    ran = _check(directory, "1")
    assert "ImportError: helpers/more.py imports vjpgrad: the checks run your own code, not vjpgrad's" in ran.stdout
    assert str(Path(__file__).resolve().parent.parent) not in ran.stdout  # nor where the grader's vjpgrad lies
