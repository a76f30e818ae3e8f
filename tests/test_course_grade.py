"""vjpgrad course grade: a class's directories into a CSV gradebook and Gradescope's results.json.

Also what grading rests on: each exercise in its own process (a crash, sys.exit, os._exit costs
only that exercise, in check too), per-check partial credit by weight, held-out checks, and the
worked example of a teacher's exercises directory on the instructor's page (docs/course/).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from _course_mistakes import MISTAKES

from vjpgrad.course import gradebook, grading, main
from vjpgrad.course.exercises import BUILTIN, Exercise, course, exercise, folder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "course" / "example-exercises"
"""The teacher's exercises directory that docs/course/instructor.md shows."""


def _quiet() -> str:
    """What ``grade`` prints on stderr when all goes well: nothing, or as root the one line saying that
    trusted marks need another user (``commands.as_root``)."""
    from vjpgrad.course import commands

    notice = commands.as_root(os.geteuid() if hasattr(os, "geteuid") else None)
    return "" if notice is None else notice + "\n"


QUIET = _quiet()


def solutions_in(directory: Path) -> Path:
    shutil.copytree(folder("solutions"), directory, dirs_exist_ok=True)
    return directory


def teachers_only(tmp_path: Path) -> Path:
    """The worked example's sigmoid exercise alone (``builtin = false``), to grade quickly."""
    teacher = tmp_path / "teacher"
    shutil.copytree(EXAMPLE, teacher)
    text = (teacher / "exercises.toml").read_text()
    text = text.replace("builtin = true", "builtin = false")
    text = text[: text.index("[hints]")]  # hints of built-in exercises need them
    (teacher / "exercises.toml").write_text(text)
    (teacher / "held_out.toml").write_text('sigmoid = "held_out/check_sigmoid.py"\n')  # and their held-out checks
    return teacher


def sigmoid_submission(directory: Path, body: str | None = None) -> Path:
    """A student's directory with the reference engine and a sigmoid (the reference one, or ``body``)."""
    solutions_in(directory)
    source = (EXAMPLE / "solutions" / "sigmoid.py").read_text()
    if body is not None:
        source = source.replace("    return (1 + (-1 * x).exp()) ** -1", body)
    (directory / "sigmoid.py").write_text(source)
    return directory


# ---- partial credit ------------------------------------------------------------------------------------


def test_an_exercises_points_are_shared_among_its_checks_by_weight() -> None:
    ex = exercise(2)
    result = grading.ExerciseResult(
        ex,
        [
            grading.TestResult("a", grading.PASSED, weight=1),
            grading.TestResult("b", grading.FAILED, "no", weight=2),
            grading.TestResult("c", grading.PASSED, weight=1, held_out=True),
        ],
    )
    assert result.score() == pytest.approx(ex.points * 2 / 4)
    assert result.max_score() == ex.points
    assert result.score(held_out=False) == pytest.approx(ex.points / 4)
    assert result.max_score(held_out=False) == pytest.approx(ex.points * 3 / 4)
    assert result.score(held_out=True) == result.max_score(held_out=True) == pytest.approx(ex.points / 4)
    assert result.status == grading.FAILING


@pytest.mark.slow  # a grading run: one process per exercise
def test_weights_and_held_out_checks_come_from_the_teachers_files(tmp_path: Path) -> None:
    # 1 / (1 + exp(x)) is 0.5 at 0 (weight 1) and symmetric (held out, weight 1), but not sigmoid (weight 3)
    directory = sigmoid_submission(tmp_path / "student", "    return (1 + x.exp()) ** -1")
    (sigmoid,) = course(teachers_only(tmp_path)).exercises
    (result,) = grading.run(directory, [sigmoid], timeout=120, held_out=True)
    outcomes = {(t.sentence, t.weight, t.held_out): t.outcome for t in result.tests}
    assert outcomes == {
        ("sigmoid(0) is 0.5", 1.0, False): grading.PASSED,
        ("sigmoid gives vjpgrad's number and derivative at any x", 3.0, False): grading.FAILED,
        ("sigmoid(x) + sigmoid(-x) is 1", 1.0, True): grading.PASSED,
    }
    assert result.score() == pytest.approx(sigmoid.points * 2 / 5)
    (visible,) = grading.run(directory, [sigmoid], timeout=120)  # check runs no held-out check
    assert [t.held_out for t in visible.tests] == [False, False]


@pytest.mark.slow  # a grading run: one process per exercise
@pytest.mark.parametrize("weight", ["float('nan')", "float('inf')", "-1", "'heavy'"])
def test_a_weight_that_is_not_a_finite_number_is_refused_naming_the_check(tmp_path: Path, weight: str) -> None:
    # a nan or infinite weight made every score nan: results.json then held NaN, which is not JSON
    teacher = teachers_only(tmp_path)
    check = teacher / "checks" / "check_sigmoid.py"
    assert "@pytest.mark.weight(3)" in check.read_text()
    check.write_text(check.read_text().replace("@pytest.mark.weight(3)", f"@pytest.mark.weight({weight})"))
    (sigmoid,) = course(teacher).exercises
    (result,) = grading.run(sigmoid_submission(tmp_path / "student"), [sigmoid], timeout=120)
    assert result.score() == 0
    assert all(t.outcome != grading.PASSED for t in result.tests)
    assert any("@pytest.mark.weight takes a finite number >= 0" in t.message for t in result.tests), result.tests
    assert json.loads(json.dumps(gradebook.results_json([result]), allow_nan=False))


@pytest.mark.slow  # a grading run: one process per exercise
def test_partial_credit_of_a_built_in_exercise(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "student")
    path = directory / "derivatives.py"
    path.write_text(path.read_text().replace("return 1e-12, 1e-5, 1e-1", "return 1e-14, 1e-12, 1e-1"))
    (result,) = grading.run(directory, [exercise(1)], timeout=120)
    assert result.status == grading.FAILING
    assert 0 < result.passed < len(result.tests)
    assert result.score() == pytest.approx(exercise(1).points * result.passed / len(result.tests))


# ---- each exercise isolated ----------------------------------------------------------------------------


@pytest.mark.slow  # a grading run: one process per exercise
def test_a_crash_sys_exit_or_os_exit_costs_only_its_exercise(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "student")
    softmax = directory / "softmax.py"
    softmax.write_text("import os\n" + softmax.read_text().replace("    s = ", "    os._exit(0)\n    s = ", 1))
    seeds = directory / "seeds.py"
    seeds.write_text("import sys\n\nsys.exit(3)\n" + seeds.read_text())
    results = grading.run(directory, [exercise(n) for n in (6, 7, 8, 9)], timeout=120)
    status = {r.exercise.number: r.status for r in results}
    assert status == {6: grading.FAILING, 7: grading.DONE, 8: grading.FAILING, 9: grading.DONE}
    problem = results[2].first_problem()
    assert problem is not None
    assert "stopped during it: the process running your code ended (os._exit()? a crash?)" in problem.message
    problem = results[0].first_problem()
    assert problem is not None
    assert problem.message.startswith("SystemExit: 3")


def test_a_ctrl_c_starts_none_of_the_exercises_still_queued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C of ``check`` over several exercises: leaving the pool waited for every exercise
    still queued, each started after the Ctrl-C, so the terminal was held up to each one's time
    limit (a review: 600 s). The exercises not started are cancelled; the Ctrl-C goes on up."""
    ran: list[int] = []

    def interrupted(directory: Path, ex: Exercise, *args: Any) -> Any:
        ran.append(ex.number)
        if len(ran) == 1:
            time.sleep(0.5)  # every exercise queued, the main thread waiting for the first
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)  # the Ctrl-C, to the main thread
            time.sleep(0.5)  # the first exercise's processes end with it
        raise KeyboardInterrupt

    monkeypatch.setattr(grading, "run_exercise", interrupted)
    with pytest.raises(KeyboardInterrupt):
        grading.run(tmp_path, [exercise(n) for n in (1, 2, 3, 6)], timeout=5, workers=1)
    assert len(ran) == 1, ran


@pytest.mark.slow  # a grading run: one process per exercise
def test_a_keyboard_interrupt_the_students_code_raises_is_its_failure_not_tampering(tmp_path: Path) -> None:
    """A student's code that raises ``KeyboardInterrupt`` (by mistake, or to stop the checks) fails
    the check that called it, as ``SystemExit`` does: it was reported as "written to by something
    other than the grader", a remark that makes a teacher suspect an honest student (a review)."""
    directory = solutions_in(tmp_path / "student")
    seeds = directory / "seeds.py"
    seeds.write_text(seeds.read_text() + "\n\ndef vjp_by_hand(*args, **kwargs):\n    raise KeyboardInterrupt\n")
    (result,) = grading.run(directory, [exercise(6)], timeout=120)
    assert result.remarks == []
    assert result.status == grading.FAILING
    problem = result.first_problem()
    assert problem is not None
    assert problem.message.startswith("KeyboardInterrupt"), problem.message
    assert grading.TAMPERED not in problem.message


@pytest.mark.slow  # a grading run: one process per exercise
def test_an_error_of_megabytes_costs_only_its_checks_and_reaches_the_report_shortened(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "student")
    path = directory / "derivatives.py"
    path.write_text(
        path.read_text().replace(
            "def central_difference(f, *xs, arg=0, h=1e-6):\n",
            "def central_difference(f, *xs, arg=0, h=1e-6):\n    raise ValueError('x' * 5_000_000)\n",
            1,
        )
    )
    (result,) = grading.run(directory, [exercise(1)], timeout=120)
    outcomes = {t.name: t.outcome for t in result.tests}
    assert grading.PASSED in outcomes.values()  # step_sizes is right: its check passes
    assert grading.NOT_RUN not in outcomes.values()
    failed = [t for t in result.tests if t.outcome == grading.FAILED]
    assert failed
    assert all("characters more, not shown" in t.message for t in failed)
    assert all(len(t.message) < 30_000 for t in result.tests)


@pytest.mark.slow  # a grading run: one process per exercise
def test_hypothesis_in_the_checks_process_never_reads_the_students_code(
    tmp_path: Path,
) -> None:
    # hypothesis reads the constants of the code loaded where it runs and caches them by each file's
    # hash; the checks' process never loads a student's file (their code runs in a process of its own),
    # so nothing of theirs is parsed or cached there, and nothing is written into their directory
    directory = solutions_in(tmp_path / "student")
    engine = directory / "engine.py"
    engine.write_text(f"{engine.read_text()}\n# {directory}\n")  # a file of its own: the cache is by content
    results = grading.run(directory, [exercise(7), exercise(12)], timeout=120)
    assert [r.status for r in results] == [grading.DONE, grading.DONE]
    cached = [path.read_text() for path in (Path(grading.hypothesis_home()) / "constants").glob("[0-9a-f]*")]
    assert not any(str(directory.resolve()) in text for text in cached)
    assert sorted(p.name for p in directory.iterdir()) == sorted(p.name for p in folder("solutions").iterdir())


@pytest.mark.slow  # it waits for the time limit
def test_an_endless_loop_costs_only_its_exercise(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "student")
    (directory / "example_3.py").write_text("def example_3(a, b, c, seeds):\n    while True:\n        pass\n")
    # 5 s of CPU each: short, as the test waits for it, and over four times what exercise 8 needs
    looping, after = grading.run(directory, [exercise(7), exercise(8)], timeout=5)
    assert looping.status == grading.FAILING
    problem = looping.first_problem()
    assert problem is not None
    assert problem.message.startswith("it did not finish within 5 s")
    assert after.status == grading.DONE


# ---- the grade command ---------------------------------------------------------------------------------


def grade(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["grade", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.slow  # a grading run: one process per exercise
def test_grade_writes_the_gradebook_and_gradescope_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    teacher = teachers_only(tmp_path)
    sigmoid_submission(tmp_path / "class" / "ada")
    sigmoid_submission(tmp_path / "class" / "bob", "    return (1 + x.exp()) ** -1")
    (tmp_path / "class" / "cy").mkdir()  # handed in nothing
    out = tmp_path / "out"
    status, printed, err = grade(capsys, str(tmp_path / "class" / "*"), "--out", str(out), "--exercises", str(teacher))
    assert (status, err) == (0, QUIET)
    (sigmoid,) = course(teacher).exercises
    rows = list(csv.reader(io.StringIO((out / "grades.csv").read_text())))
    assert rows == [
        ["directory", "1 sigmoid", "total", "remarks"],
        ["ada", "2", "2", ""],
        ["bob", f"{sigmoid.points * 2 / 5:g}", f"{sigmoid.points * 2 / 5:g}", ""],
        ["cy", "0", "0", ""],
    ]
    assert printed.startswith((out / "grades.csv").read_text())
    assert "graded 3 directories in" in printed
    report = json.loads((out / "bob" / "results.json").read_text())
    assert report["score"] == pytest.approx(0.8)
    visible, held = report["tests"]  # no notes for the teacher: nothing to say
    assert set(visible) == set(held) == {"name", "number", "score", "max_score", "output", "visibility"}
    assert (visible["name"], visible["visibility"]) == ("1. sigmoid on your engine, from its operations", "visible")
    assert (visible["score"], visible["max_score"]) == (0.4, 1.6)  # weights 1 + 3 of 5: 2 points x 4/5
    assert "failed: sigmoid gives vjpgrad's number and derivative at any x (weight 3)" in visible["output"]
    assert "sigmoid(1.5) is 0.18" in visible["output"]  # the first problem's message
    assert (held["visibility"], held["score"], held["max_score"]) == ("after_published", 0.4, 0.4)
    assert held["name"].endswith(": held-out checks")
    assert held["output"] == "passed: sigmoid(x) + sigmoid(-x) is 1"  # outcomes alone: no held-out text
    assert sum(test["score"] for test in report["tests"]) == pytest.approx(report["score"])
    nothing = json.loads((out / "cy" / "results.json").read_text())
    assert "sigmoid.py is not in" in nothing["tests"][0]["output"]


READS_THE_GRADEBOOK = """

import os as _os

_OUT = {out!r}


def _leaked():
    found = []
    for path in (_os.path.join(_OUT, "grades.csv"), _os.path.join(_OUT, "bob", "results.json")):
        try:
            with open(path) as file:
                found.append(file.read())
        except OSError:  # refused (PermissionError)
            pass
    try:
        found += _os.listdir(_OUT)
    except OSError:
        pass
    return found


_sigmoid = sigmoid


def sigmoid(x):
    leaked = _leaked()
    if leaked:
        raise RuntimeError("leaked: " + repr(leaked))
    return _sigmoid(x)
"""
"""Appended to a student's sigmoid.py: it reads the gradebook it is graded into, and raises what it read."""


@pytest.mark.slow  # a grading run
def test_the_students_code_reads_nothing_of_the_gradebook_it_is_graded_into(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the documented layout, `grade submissions/* --out grades`: the --out folder beside the submissions,
    # graded into again (a classmate's marks, and a held-out check's message for the teacher, there)
    teacher = teachers_only(tmp_path)
    of = course(teacher)
    (sigmoid,) = of.exercises
    out = tmp_path / "grades"
    held_out = grading.TestResult("symmetric", grading.FAILED, "bob's held-out message", held_out=True)
    gradebook.write(out, of, {"bob": [grading.ExerciseResult(sigmoid, [held_out], ["bob's remark"])]})
    eve = sigmoid_submission(tmp_path / "submissions" / "eve")
    (eve / "sigmoid.py").write_text((eve / "sigmoid.py").read_text() + READS_THE_GRADEBOOK.format(out=str(out)))
    status, _, err = grade(capsys, str(tmp_path / "submissions" / "*"), "--out", str(out), "--exercises", str(teacher))
    assert (status, err) == (0, QUIET)
    report = (out / "eve" / "results.json").read_text()
    assert "leaked" not in report
    assert "bob" not in report
    assert json.loads(report)["score"] == sigmoid.points


@pytest.mark.slow  # a grading run: one process per exercise
def test_grade_reads_no_course_toml_of_a_submission(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    student = sigmoid_submission(tmp_path / "eve")
    (student / "course.toml").write_text(f'mode = "self-study"\nexercises = "{student}"\n')  # a student's own
    status, _, err = grade(
        capsys, str(student), "--out", str(tmp_path / "out"), "--exercises", str(teachers_only(tmp_path))
    )
    assert (status, err) == (0, QUIET)
    assert (tmp_path / "out" / "grades.csv").read_text().splitlines() == [
        "directory,1 sigmoid,total,remarks",
        "eve,2,2,",
    ]


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["NOWHERE", "--out", "OUT"], "no directory matches"),
        (["A", "B/a", "--out", "OUT"], "have the same name, a: rename one"),
        (["A", "--out", "FILE"], "is a file, not a directory"),
        (["A", "--out", "OUT", "--exercises", "A"], "is not an exercises directory: it has no exercises.toml"),
        (
            ["A", "--out", "OUT", "--exercises", "STUDENTS_COPY"],
            "held_out/check_add_mul.py is not there (grade with the",
        ),
        (["A", "--out", "OUT", "--timeout", "0"], "--timeout must be a positive number of seconds"),
        (["A", "--out", "OUT", "--timeout", "nan"], "--timeout must be a positive number of seconds"),
        (["A", "--out", "OUT", "--timeout", "inf"], "--timeout must be at most"),
        (["A", "--out", "OUT", "--timeout", "1e300"], "--timeout must be at most"),
        (["GRADES_CSV", "--out", "OUT"], "is named as the gradebook, grades.csv: rename it"),
        (["A", "--out", "OUT", "--jobs", "0"], "--jobs must be at least 1"),
        (["A"], "the following arguments are required: --out"),
    ],
)
def test_grade_refuses_bad_input_in_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: list[str], said: str
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "a").mkdir(parents=True)
    (tmp_path / "file").write_text("")
    places = {"A": tmp_path / "a", "B/a": tmp_path / "b" / "a", "OUT": tmp_path / "out", "FILE": tmp_path / "file"}
    places["NOWHERE"] = tmp_path / "nowhere*"
    places["STUDENTS_COPY"] = tmp_path / "copy"
    places["GRADES_CSV"] = tmp_path / "grades.csv"
    places["GRADES_CSV"].mkdir()
    shutil.copytree(EXAMPLE, tmp_path / "copy", ignore=shutil.ignore_patterns("held_out"))
    status, printed, err = grade(capsys, *(str(places.get(word, word)) for word in words))
    assert (status, printed) == (2, "")
    assert err.count("\n") == 1
    assert said in err
    assert not (tmp_path / "out").exists()


def test_the_out_folder_among_the_submissions_is_not_graded_as_a_student(tmp_path: Path) -> None:
    """``grade 'subs/*' --out subs/out``, run again: the glob now matches the gradebook's own
    folder, which is where grades are written, never a student's; it is left out and said so,
    and the students are graded as before (the folder's results stay)."""
    from vjpgrad.course import commands

    for name in ("ada", "bob", "out"):
        (tmp_path / "subs" / name).mkdir(parents=True)
    (tmp_path / "subs" / "out" / "ada").mkdir()
    found, left_out = commands.to_grade(
        [str(tmp_path / "subs" / "*"), str(tmp_path / "subs" / "out" / "ada")], tmp_path / "subs" / "out"
    )
    assert [d.name for d in found] == ["ada", "bob"]
    assert [d.name for d in left_out] == ["out", "ada"]
    with pytest.raises(commands.CourseError, match=r"no directory to grade: .* is --out"):
        commands.to_grade([str(tmp_path / "subs" / "out")], tmp_path / "subs" / "out")


def test_a_submission_folder_that_links_to_another_name_is_refused_not_merged(tmp_path: Path) -> None:
    # subs/bob -> alice was graded as alice, and with alice given too bob's row vanished (a review of the
    # grader); a link to a folder of its own name (subs/cy -> /elsewhere/cy) is graded as that name
    from vjpgrad.course import commands

    (tmp_path / "subs" / "alice").mkdir(parents=True)
    (tmp_path / "elsewhere" / "cy").mkdir(parents=True)
    (tmp_path / "subs" / "bob").symlink_to(tmp_path / "subs" / "alice")
    (tmp_path / "subs" / "cy").symlink_to(tmp_path / "elsewhere" / "cy")
    with pytest.raises(commands.CourseError, match=r"subs/bob is a symbolic link to .*alice: its row would be alice's"):
        commands.to_grade([str(tmp_path / "subs" / "*")], tmp_path / "out")
    found, _ = commands.to_grade([str(tmp_path / "subs" / "alice"), str(tmp_path / "subs" / "cy")], tmp_path / "out")
    assert [d.name for d in found] == ["alice", "cy"]


# ---- the worked example of the instructor's page, and a class graded with one command ---------------------
# ---- the worked example of the instructor's page, and a class graded with one command ---------------------


def test_the_worked_example_is_an_exercises_directory_after_the_built_in_twelve() -> None:
    of = course(EXAMPLE)
    assert [ex.slug for ex in of.exercises] == [*(ex.slug for ex in BUILTIN), "sigmoid"]
    sigmoid = of.exercises[-1]
    assert (sigmoid.number, sigmoid.points, sigmoid.teachers) == (13, 2.0, True)
    assert [path.name for path in sigmoid.held_out] == ["check_sigmoid.py"]
    assert [path.name for path in of.exercises[1].held_out] == ["check_add_mul.py"]
    assert of.hint(of.exercises[1], class_mode=True) == of.teacher_hints["add-mul"]
    assert of.hint(of.exercises[2], class_mode=True) is None  # built-in hints are not shown in a class
    assert of.hint(sigmoid, class_mode=True) == sigmoid.hint


def the_class(where: Path) -> list[Path]:
    """Five submissions: done, half done (exercises 1 to 5), and three typical mistakes."""
    mistakes = {m.name: m for m in MISTAKES}
    made = {
        "chain-rule": "+ hands 1, the local derivative alone, without out.grad",
        "assigns": "= instead of += in the closure of *",
        "no-zero-grad": "the gradients never zeroed between steps",
    }
    done = sigmoid_submission(where / "done")
    half = where / "half-done"
    shutil.copytree(folder("templates"), half)
    shutil.copy(done / "derivatives.py", half)
    shutil.copy(done / "engine.py", half)
    shutil.copy(EXAMPLE / "templates" / "sigmoid.py", half)
    directories = [done, half]
    for name, mistake in made.items():
        directory = sigmoid_submission(where / name)
        path = directory / mistakes[mistake].file
        path.write_text(path.read_text().replace(mistakes[mistake].old, mistakes[mistake].new))
        directories.append(directory)
    return directories


def points_of(of: list[Exercise], rows: list[list[str]], name: str) -> dict[int, float | None]:
    """A directory's points by exercise, from the gradebook's rows: None for one not graded ("not run")."""
    row = next(row for row in rows if row[0] == name)
    return {ex.number: None if cell == "not run" else float(cell) for ex, cell in zip(of, row[1:-2], strict=True)}


@pytest.mark.slow  # five directories of thirteen exercises
def test_a_class_of_five_is_graded_with_one_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directories = the_class(tmp_path / "class")
    out = tmp_path / "out"
    status, _, err = grade(capsys, *map(str, directories), "--out", str(out), "--exercises", str(EXAMPLE))
    assert (status, err) == (0, QUIET)
    of = list(course(EXAMPLE).exercises)
    rows = list(csv.reader(io.StringIO((out / "grades.csv").read_text())))
    assert rows[0] == ["directory", *(f"{ex.number} {ex.slug}" for ex in of), "total", "remarks"]
    assert [row[0] for row in rows[1:]] == [d.name for d in directories]
    full = {ex.number: ex.points for ex in of}
    assert points_of(of, rows, "done") == full
    half = points_of(of, rows, "half-done")
    assert all(half[n] == full[n] for n in range(1, 6))
    assert all(half[n] == 0 for n in range(6, 14))  # the skeleton's files: not started
    for name, wrong in (("chain-rule", 2), ("assigns", 2), ("no-zero-grad", 11)):
        got = points_of(of, rows, name)
        assert 0 <= got[wrong] < full[wrong], (name, got)
        assert got[1] == full[1]
    for directory in directories:
        report = json.loads((out / directory.name / "results.json").read_text())
        shown = next(r for r in rows if r[0] == directory.name)
        assert report["score"] == float(shown[-2]) == round(sum(map(float, shown[1:-2])), 2)


def test_gradescopes_results_of_one_directory_have_its_shape() -> None:
    results = [
        grading.ExerciseResult(exercise(1), [grading.TestResult("a", grading.PASSED, title="A sentence")]),
        grading.ExerciseResult(exercise(12), [grading.TestResult("b", grading.FAILED, "why", title="Another")]),
    ]
    report = gradebook.results_json(results)
    assert set(report) == {"score", "output", "tests"}
    assert report["score"] == exercise(1).points
    assert report["output"].startswith(f"{exercise(1).points:g} of {exercise(1).points:g} points; 1 of 1 exercises")
    first, stretch = report["tests"]
    assert first == {
        "name": exercise(1).heading,
        "number": "1",
        "score": exercise(1).points,
        "max_score": exercise(1).points,
        "output": "passed: A sentence",
        "visibility": "visible",
    }
    assert stretch["output"] == "failed: Another\n\nAnother:\nwhy"


# ---- a gradebook that keeps every row ------------------------------------------------------------------


def thirds(ex: Exercise, passed: int) -> grading.ExerciseResult:
    """Three checks of weight 1: each worth a third of the exercise's points, which do not round evenly."""
    outcomes = [grading.PASSED] * passed + [grading.FAILED] * (3 - passed)
    return grading.ExerciseResult(ex, [grading.TestResult(f"t{k}", o, "no") for k, o in enumerate(outcomes)])


def test_regrading_one_directory_or_one_exercise_keeps_every_other_row_and_result(tmp_path: Path) -> None:
    of = course(None)
    one, two = exercise(1), exercise(2)
    gradebook.write(tmp_path, of, {"ada": [thirds(one, 1), thirds(two, 2)], "bob": [thirds(one, 3), thirds(two, 0)]})
    gradebook.write(tmp_path, of, {"bob": [thirds(one, 0), thirds(two, 3)]})  # bob again: ada's row stays
    gradebook.write(tmp_path, of, {"ada": [thirds(two, 3)]})  # ada's exercise 2 alone: her exercise 1 stays
    rows = list(csv.reader(io.StringIO((tmp_path / "grades.csv").read_text())))
    assert [row[0] for row in rows[1:]] == ["ada", "bob"]
    ada, bob = (points_of(list(of.exercises), rows, name) for name in ("ada", "bob"))
    assert (ada[1], ada[2]) == (round(one.points / 3, 2), two.points)
    assert (bob[1], bob[2]) == (0, two.points)
    assert {ada[n] for n in ada if n > 2} == {None}  # never graded: "not run", not 0
    for name in ("ada", "bob"):
        report = json.loads((tmp_path / name / "results.json").read_text())
        shown = next(row for row in rows if row[0] == name)
        assert report["score"] == float(shown[-2]) == round(sum(test["score"] for test in report["tests"]), 2)
        assert [test["number"] for test in report["tests"]] == ["1", "2"]


def test_the_total_is_the_sum_of_the_parts_as_shown() -> None:
    # 2 points in thirds, twice passed: each part shows 1.33; three of them add to 3.99, not 4
    results = [thirds(exercise(n), 2) for n in (1, 5, 6)]
    report = gradebook.results_json(results)
    assert report["score"] == round(sum(test["score"] for test in report["tests"]), 2)
    assert report["score"] == 3.99
    assert report["output"].startswith("3.99 of 6 points")


def test_the_gradebook_shows_every_digit_of_large_points() -> None:
    # a course marked out of 1000 an exercise: 2000 in thirds is 1333.33 a part; "%g" kept six digits
    import dataclasses

    big = [dataclasses.replace(exercise(n), points=20000.0) for n in (1, 2)]
    results = [thirds(big[0], 2), thirds(big[1], 3)]
    of = type(course(None))(tuple(big))
    report = gradebook.results_json(results, of)
    assert report["score"] == 33333.33
    assert report["output"].startswith("33333.33 of 40000 points")
    row = gradebook.row("ada", report, of)
    assert row[1:4] == ["13333.33", "20000", "33333.33"]


def test_an_exercise_not_graded_yet_says_not_run_in_the_gradebook_not_zero(tmp_path: Path) -> None:
    """``grade --exercise 3`` into a new ``--out``: the other exercises were never graded, and a 0
    there would read as a failure; their cells say "not run", and the total is that of the
    exercises graded."""
    import dataclasses

    of = course(None)
    result = thirds(dataclasses.replace(exercise(3), points=2.0), 3)
    row = gradebook.row("ada", gradebook.results_json([result], of), of)
    cells = dict(zip(gradebook.header(of), row, strict=True))
    assert cells[f"3 {exercise(3).slug}"] == "2"
    assert cells[f"1 {exercise(1).slug}"] == "not run"
    assert cells["total"] == "2"
    gradebook.write(tmp_path, of, {"ada": [result]})
    (ada,) = list(csv.reader(io.StringIO((tmp_path / "grades.csv").read_text())))[1:]
    assert ada.count("not run") == len(of.exercises) - 1


def test_a_check_that_never_ran_says_not_run() -> None:
    tests = [{"id": f"t{k}", "name": f"t{k}", "title": f"check {k}", "weight": 1.0} for k in range(3)]
    events = [
        {"event": "collected", "tests": tests},
        {"event": "start", "id": "t0"},
        {"event": "result", "id": "t0", "outcome": "passed", "message": "", "seconds": 0.1},
        {"event": "start", "id": "t1"},  # then os._exit
    ]
    result = grading._result(exercise(2), events, "", timed_out=False, timeout=10)
    assert [t.outcome for t in result.tests] == [grading.PASSED, grading.FAILED, grading.NOT_RUN]
    assert "os._exit" in result.tests[1].message
    assert result.tests[2].message.startswith("not run")


# ---- one engine bug, charged once -----------------------------------------------------------------------


def test_which_earlier_exercises_each_exercise_runs_on() -> None:
    from vjpgrad.course import depends

    of = course(EXAMPLE)
    runs_on = {ex.number: [e.number for e in depends.on(ex, of)] for ex in of.exercises}
    assert runs_on == {
        1: [], 2: [], 3: [2], 4: [2, 3], 5: [2, 3, 4], 6: [2, 3, 4, 5], 7: [2, 3, 4, 5], 8: [], 9: [1], 10: [],
        11: [2, 3, 4, 5], 12: [], 13: [2, 3, 4, 5],
    }  # fmt: skip


def test_a_held_out_failure_never_shows_in_the_note_a_student_sees() -> None:
    """The note on a later exercise ("fix exercise 2 first") is in the output a student sees at
    once: it counted exercise 2's held-out checks, so a failure only they reach showed through before
    the grades were published (a review's case). An exercise whose visible checks all pass is done there."""
    of = course(EXAMPLE)

    def result(number: int, outcomes: list[tuple[str, bool]]) -> grading.ExerciseResult:
        tests = [grading.TestResult(f"t{k}", outcome, held_out=held) for k, (outcome, held) in enumerate(outcomes)]
        return grading.ExerciseResult(of.exercises[number - 1], tests)

    engine = result(2, [(grading.PASSED, False), (grading.FAILED, True)])  # only a held-out check fails
    neuron = result(3, [(grading.FAILED, False)])
    grading.note_dependencies([engine, neuron], of)
    assert neuron.note == ""
    engine = result(2, [(grading.FAILED, False), (grading.PASSED, True)])  # a visible check fails: said
    grading.note_dependencies([engine, neuron], of)
    assert neuron.note.startswith("these checks run your exercise 2 (engine.py), which is not done")
    # the later exercise passes every check it shows, and fails a held-out one: no note, or its
    # presence would tell the held-out failure (a review of the change)
    hidden = result(3, [(grading.PASSED, False), (grading.FAILED, True)])
    grading.note_dependencies([engine, hidden], of)
    assert hidden.note == ""


@pytest.mark.slow  # three exercises, graded twice
def test_an_engine_bug_is_named_where_it_costs_and_independent_grading_charges_it_once(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "class" / "ada")
    engine = directory / "engine.py"
    mistake = next(m for m in MISTAKES if m.name == "+ hands 1, the local derivative alone, without out.grad")
    engine.write_text(engine.read_text().replace(mistake.old, mistake.new))
    of = course(None)
    three = type(of)(tuple(exercise(n) for n in (2, 3, 6)))
    graded = gradebook.grade([directory], three, timeout=120)
    plus, more, seeds = graded["ada"]
    assert plus.status == more.status == seeds.status == grading.FAILING
    assert seeds.note.startswith("these checks run your exercise 2 (engine.py), which is not done")
    tests = {t["number"]: t for t in gradebook.results_json(graded["ada"], three)["tests"]}
    assert "fix exercise 2 first" in tests["6"]["output"]
    assert "fix exercise" not in tests["2"]["output"]
    fair = gradebook.grade([directory], three, timeout=120, independent=True)
    plus, more, seeds = fair["ada"]
    assert plus.status == grading.FAILING
    assert more.status == seeds.status == grading.DONE  # on the reference + and *: the bug costs once
    assert engine.read_text().count(mistake.new) == 1  # the student's directory is as it was


# ---- the teacher's tools -------------------------------------------------------------------------------


@pytest.mark.slow  # a solution and a skeleton, checked
def test_test_exercise_finds_a_check_that_passes_on_the_skeleton(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    teacher = teachers_only(tmp_path)
    check = teacher / "checks" / "check_sigmoid.py"
    check.write_text(check.read_text() + '\n\ndef test_nothing(student):\n    """Nothing is checked."""\n')
    status = main(["test-exercise", str(teacher)])
    out = capsys.readouterr().out
    assert status == 1
    assert "the solution passes 4 of 4 checks, the skeleton 1 of 4" in out
    assert "passes on the skeleton (it checks nothing the student writes): Nothing is checked" in out


def _tree(root: Path) -> dict[str, int]:
    """Every file and folder under ``root``, with its size (0 for a folder)."""
    return {str(p.relative_to(root)): (p.stat().st_size if p.is_file() else 0) for p in sorted(root.rglob("*"))}


@pytest.mark.slow  # builds vjpgrad's wheel
def test_the_bundles_wheel_is_built_from_a_copy_and_writes_nothing_into_the_source_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wheel was built in the teacher's clone: setuptools wrote its ``build`` folder and
    ``src/vjpgrad.egg-info`` there, so two bundles built at once from one clone (CI's interpreters,
    side by side) raced on ``build/`` ("File exists: build/bdist.linux-x86_64/wheel/..."), and the
    egg-info stayed behind. It is now built from a copy of what the wheel is made of."""
    from vjpgrad.course import autograder

    root = autograder.source_tree()
    if root is None:
        pytest.skip("vjpgrad is not installed from its source tree: no wheel to build")
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(root / name, clone / name)
    shutil.copytree(root / "src", clone / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    monkeypatch.setattr(autograder, "source_tree", lambda: clone)
    before = _tree(clone)
    built = autograder.wheel(tmp_path / "wheels")
    assert built.name.startswith("vjpgrad-")
    assert _tree(clone) == before


@pytest.mark.slow  # builds vjpgrad's wheel, then grades a submission with the bundle's files
def test_the_autograder_bundle_holds_what_gradescope_runs_and_grades_a_submission(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import stat
    import zipfile

    from vjpgrad.course import autograder

    if autograder.source_tree() is None:
        pytest.skip("vjpgrad is not installed from its source tree: no wheel to build")
    bundle = tmp_path / "autograder.zip"
    root = autograder.source_tree()
    assert root is not None
    copied = root / "build" / "lib" / "vjpgrad" / "course" / "solutions"
    there = copied.exists()  # (another build in the clone, CI's package job's, may have left one)
    assert main(["autograder", "--out", str(bundle), "--exercises", str(EXAMPLE)]) == 0
    assert copied.exists() == there  # the bundle left no copy of the solutions beside the clone
    capsys.readouterr()
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        archive.extractall(tmp_path / "source")
        (wheel,) = [name for name in names if name.startswith("wheels/vjpgrad-") and name.endswith(".whl")]
        with zipfile.ZipFile(archive.open(wheel)) as inner:
            packaged = inner.namelist()
    assert {"setup.sh", "run_autograder", "exercises/exercises.toml", "exercises/held_out.toml"} <= set(names)
    assert {"exercises/held_out/check_sigmoid.py", "exercises/held_out/check_add_mul.py"} <= set(names)
    assert all(modes[name] & stat.S_IXUSR for name in ("setup.sh", "run_autograder"))
    assert "vjpgrad/course/checks/check_02_add_mul.py" in packaged
    assert "vjpgrad/course/autograder.py" in packaged
    run = (tmp_path / "source" / "run_autograder").read_text()
    assert "-m vjpgrad.course.autograder" in run
    # run from a submission's folder by hand, `python -m` put its vjpgrad/ first on the path, as root
    assert run.index("cd /autograder\n") < run.index("python -I -m vjpgrad.course.autograder")
    assert "--user student" in run  # the checks run as an unprivileged user
    assert "useradd" in (tmp_path / "source" / "setup.sh").read_text()
    submission = sigmoid_submission(tmp_path / "submission")
    results = tmp_path / "results" / "results.json"
    exercises = tmp_path / "source" / "exercises"
    assert (
        autograder.main(["--submission", str(submission), "--results", str(results), "--exercises", str(exercises)])
        == 0
    )
    report = json.loads(results.read_text())
    most = sum(ex.points for ex in course(EXAMPLE).exercises if not ex.stretch)
    shown = [t for t in report["tests"] if t["visibility"] == "visible"]
    required = [t for t in shown if not exercise_of_number(t["number"]).stretch]
    extra = sum(t["score"] for t in shown if t not in required)  # the stretch exercise's: extra credit
    assert extra > 0
    assert report["output"].startswith(
        f"{sum(t['score'] for t in required):g} of {sum(t['max_score'] for t in required):g} points from the checks "
        f"shown now, and {extra:g} of extra credit; 12 of 12 exercises pass them"
    )
    assert report["score"] == most + sum(ex.points for ex in course(EXAMPLE).exercises if ex.stretch)
    assert {t["number"] for t in report["tests"]} >= {"2.h", "13.h"}
    assert sorted(p.name for p in submission.iterdir()) == sorted(
        {*(p.name for p in folder("solutions").iterdir()), "sigmoid.py"}
    )


@pytest.mark.slow  # a grading run
def test_the_autograder_grades_a_submission_handed_in_as_one_folder(tmp_path: Path) -> None:
    # a zip of the course's folder, as a student makes one: Gradescope unzips it into one folder
    from vjpgrad.course import autograder

    teacher = teachers_only(tmp_path)
    submission = tmp_path / "submission"
    sigmoid_submission(submission / "my course")
    (submission / "__MACOSX").mkdir()  # what macOS adds to a zip
    results = tmp_path / "results" / "results.json"
    arguments = ["--submission", str(submission), "--results", str(results), "--exercises", str(teacher)]
    assert autograder.main(arguments) == 0
    report = json.loads(results.read_text())
    assert report["score"] == sum(ex.points for ex in course(teacher).exercises)
    assert report["output"].endswith(f"\n\n{autograder.NESTED}: my course")
    assert "vjpgrad-submission-" not in json.dumps(report)  # no path of the grader's


@pytest.mark.slow  # a grading run
def test_the_autograder_says_at_the_top_when_none_of_the_courses_files_was_handed_in(tmp_path: Path) -> None:
    from vjpgrad.course import autograder

    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "notes.txt").write_text("my notes")
    results = tmp_path / "results.json"
    assert autograder.main(["--submission", str(submission), "--results", str(results)]) == 0
    report = json.loads(results.read_text())
    assert report["score"] == 0
    assert f"\n\n{autograder.NONE_HANDED_IN}" in report["output"]
    assert "engine.py" in report["output"]


@pytest.mark.skipif(os.name != "posix", reason="Gradescope's images are Linux")
def test_the_bundles_setup_makes_the_installed_reference_solutions_roots_alone(tmp_path: Path) -> None:
    # the student's code runs as another user: the kernel, not only the audit hook, keeps it from them
    import stat
    import subprocess
    import sys

    from vjpgrad.course import autograder

    installed = tmp_path / "site-packages"
    solutions = installed / "vjpgrad" / "course" / "solutions"
    solutions.mkdir(parents=True)
    for package in (installed / "vjpgrad", installed / "vjpgrad" / "course"):
        (package / "__init__.py").write_text("")
    (solutions / "engine.py").write_text("# the reference solution\n")
    setup = autograder.SETUP.splitlines()
    lines = [
        line for line in setup[setup.index("chmod -R go-rwx /autograder/source  # the teacher's files: root's alone") :]
    ]
    line = "\n".join(lines[1:]).replace("/autograder/venv/bin/python", sys.executable)
    assert "solutions" in line, autograder.SETUP
    environment = {**os.environ, "PYTHONPATH": str(installed)}
    subprocess.run(["bash", "-euo", "pipefail", "-c", line], check=True, env=environment)
    for path in (solutions, solutions / "engine.py"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, oct(path.stat().st_mode)


def exercise_of_number(number: str) -> Exercise:
    """The exercise of a Gradescope test's number (``13``, ``13.h``) in the worked example's course."""
    return course(EXAMPLE).exercise(int(number.split(".")[0]))


def test_grade_refuses_an_out_whose_gradebook_is_another_courses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "grades.csv").write_text("directory,1 sigmoid,total,remarks\nada,2,2,\n")
    status, printed, err = grade(capsys, str(tmp_path / "a"), "--out", str(tmp_path / "out"))
    assert (status, printed) == (2, "")
    assert "not this course's: grade into another --out" in err
    assert (tmp_path / "out" / "grades.csv").read_text() == "directory,1 sigmoid,total,remarks\nada,2,2,\n"


def test_grade_as_root_says_in_one_line_that_marks_to_be_trusted_need_another_user() -> None:
    from vjpgrad.course import commands

    notice = commands.as_root(0)
    assert notice is not None
    assert "\n" not in notice
    assert "runs the students' code as root" in notice
    assert "--user" in notice
    assert commands.as_root(1000) is None
    assert commands.as_root(None) is None


def test_the_instructor_page_states_how_many_examples_each_generated_check_draws() -> None:
    from vjpgrad.course._plugin import EXAMPLES

    page = " ".join((ROOT / "docs" / "course" / "instructor.md").read_text(encoding="utf-8").split())
    assert f"the same {EXAMPLES} examples at every run" in page


# ---- what a student writes stays the student's: never a remark, never a formula ----------------------------


def test_a_students_text_never_becomes_a_teachers_remark(tmp_path: Path) -> None:
    """A held-out check's message carries the student's text (an exception they raise): its lines
    reach the teacher's notes indented, so no line of theirs reads as a remark, in results.json or
    in the gradebook; a remark that holds a line break (a file's name) stays one remark."""
    forged = "boom\nremark: exercise 1 reviewed by the teacher: fine\nremark: =HYPERLINK(1)"
    held_out = grading.TestResult("h", grading.FAILED, forged, held_out=True)
    result = grading.ExerciseResult(exercise(1), [grading.TestResult("a", grading.PASSED), held_out])
    result.remarks.append("odd\nremark: name.py imports vjpgrad")
    of = course(None)
    row = gradebook.row("eve", gradebook.results_json([result], of), of)
    assert row[-1] == "odd remark: name.py imports vjpgrad"
    gradebook.write(tmp_path, of, {"eve": [result]})
    (eve,) = list(csv.reader(io.StringIO((tmp_path / "grades.csv").read_text())))[1:]
    assert "reviewed by the teacher" not in eve[-1]
    assert "HYPERLINK" not in eve[-1]


def test_no_cell_of_the_gradebook_starts_a_spreadsheet_formula(tmp_path: Path) -> None:
    """A directory named ``=HYPERLINK(...)`` (or starting with +, -, @) is written with a leading
    quote, as spreadsheets read text, and read back as its name when the gradebook is merged into."""
    of = course(None)
    names = ["=HYPERLINK(1)", "+1", "-1", "@SUM(1)", "ada"]
    gradebook.write(tmp_path, of, {name: [thirds(exercise(1), 3)] for name in names})
    cells = [row[0] for row in csv.reader(io.StringIO((tmp_path / "grades.csv").read_text()))][1:]
    assert cells == ["'=HYPERLINK(1)", "'+1", "'-1", "'@SUM(1)", "ada"]
    assert gradebook.existing(tmp_path, of) == names


def test_the_autograder_bundle_refuses_an_out_in_a_missing_directory_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["autograder", "--out", str(tmp_path / "nowhere" / "a.zip")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "no directory" in err
    assert "nowhere" in err


def test_what_a_student_reads_at_the_top_tells_nothing_of_the_held_out_checks() -> None:
    """Gradescope shows the top-level output at once, the held-out checks only once the grades are
    published: the output counts the checks shown now, so a held-out check that failed does not
    show through it; the score stays the sum of every test, held-out ones included."""
    visible = grading.TestResult("a", grading.PASSED)
    held_out = grading.TestResult("h", grading.FAILED, "no", held_out=True)
    report = gradebook.results_json([grading.ExerciseResult(exercise(1), [visible, held_out])])
    shown = exercise(1).points / 2
    assert report["score"] == shown
    said = f"{shown:g} of {shown:g} points from the checks shown now; 1 of 1 exercises pass"
    assert report["output"].startswith(said)
    assert "held-out" in report["output"]
    assert "vjpgrad course" not in report["output"]  # a teacher's command, which a Gradescope student never runs


# ---- what the student reads names their files as they know them, never the grader's copy ------------------


def _command(*words: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m WORDS...`` in a fresh interpreter, as a teacher or Gradescope's run_autograder runs it."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", *words], cwd=cwd, capture_output=True, text=True, env=environment, timeout=600
    )


def _no_grader_paths(text: str) -> None:
    """No path of the grader's: its temporary folders (the autograder's copy of the submission,
    --independent's copies, its scratch folders) are named ``vjpgrad-...`` in the system's."""
    assert tempfile.gettempdir() + os.sep + "vjpgrad-" not in text
    assert "vjpgrad-submission-" not in text
    assert "vjpgrad-course-" not in text


@pytest.mark.slow  # grading runs, through the command line
def test_a_file_missing_from_a_submission_is_named_as_the_student_knows_it(tmp_path: Path) -> None:
    # seeds.py missing: --independent grades exercise 6 in a copy of the submission (the reference
    # engine in it), and the autograder grades a copy of its own; neither copy is the student's
    submissions = tmp_path / "class"
    bob = solutions_in(submissions / "bob")
    (bob / "seeds.py").unlink()
    graded = _command(
        "vjpgrad", "course", "grade", str(bob), "--out", str(tmp_path / "out"), "--independent", "--exercise", "6",
        cwd=tmp_path,
    )  # fmt: skip
    assert graded.returncode == 0, graded.stderr
    text = (tmp_path / "out" / "bob" / "results.json").read_text()
    _no_grader_paths(text + graded.stdout + graded.stderr)
    (visible,) = json.loads(text)["tests"]
    assert "seeds.py is not in the submission" in visible["output"]
    assert str(bob) not in visible["output"]  # nor the teacher's own folder: the student reads this
    results = tmp_path / "results" / "results.json"
    ran = _command("vjpgrad.course.autograder", "--submission", str(bob), "--results", str(results), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    _no_grader_paths(results.read_text() + ran.stdout + ran.stderr)
    seeds = next(t for t in json.loads(results.read_text())["tests"] if t["number"] == "6")
    assert "seeds.py is not in the submission" in seeds["output"]


@pytest.mark.slow  # a grading run
def test_a_path_the_students_code_raises_is_named_from_their_submission(tmp_path: Path) -> None:
    # their code reads a file of theirs beside it, not handed in: the error names it as in the submission
    teacher = teachers_only(tmp_path)
    submission = sigmoid_submission(tmp_path / "eve")
    source = (submission / "sigmoid.py").read_text()
    (submission / "sigmoid.py").write_text(
        "import os\nopen(os.path.join(os.path.dirname(__file__), 'data', 'table.txt')).close()\n" + source
    )
    results = tmp_path / "results" / "results.json"
    ran = _command(
        "vjpgrad.course.autograder", "--submission", str(submission), "--results", str(results),
        "--exercises", str(teacher), cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    text = results.read_text()
    _no_grader_paths(text)
    visible = json.loads(text)["tests"][0]
    assert "FileNotFoundError: [Errno 2] No such file or directory: 'data/table.txt'" in visible["output"]


@pytest.mark.parametrize("text", ["{not json", "[]", '{"tests": 3}', '{"tests": [{"number": "x"}]}'])
def test_grade_refuses_an_out_whose_results_it_cannot_read_before_writing_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    # a results.json edited by hand: found before any grading, not by a traceback once some rows are rewritten
    teacher = teachers_only(tmp_path)
    of = course(teacher)
    out = tmp_path / "out"
    gradebook.write(out, of, {"ada": [thirds(of.exercises[0], 1)], "bob": [thirds(of.exercises[0], 2)]})
    (out / "ada" / "results.json").write_text(text)
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    (tmp_path / "class" / "bob").mkdir(parents=True)
    status, printed, err = grade(
        capsys, str(tmp_path / "class" / "bob"), "--out", str(out), "--exercises", str(teacher)
    )
    assert (status, printed) == (2, "")
    assert f"{out / 'ada' / 'results.json'} cannot be read as grade's results" in err
    assert err.count("\n") == 1 + QUIET.count("\n")
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before


def test_grade_keeps_a_row_whose_results_are_gone_by_refusing_to_rewrite_the_gradebook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the gradebook is rebuilt from the results.json files: one moved away would take its row with it
    teacher = teachers_only(tmp_path)
    of = course(teacher)
    out = tmp_path / "out"
    gradebook.write(out, of, {"ada": [thirds(of.exercises[0], 1)], "bob": [thirds(of.exercises[0], 2)]})
    (out / "ada" / "results.json").unlink()
    before = (out / "grades.csv").read_text()
    (tmp_path / "class" / "cy").mkdir(parents=True)
    status, printed, err = grade(capsys, str(tmp_path / "class" / "cy"), "--out", str(out), "--exercises", str(teacher))
    assert (status, printed) == (2, "")
    assert f"{out / 'grades.csv'} has a row for ada, whose {out / 'ada' / 'results.json'} is not there" in err
    assert (out / "grades.csv").read_text() == before  # ada's row is still there
    assert not (out / "cy").exists()


# ---- what each reader is told: advice they can follow, nothing of the grader's folders -----------------


def _visible(report: dict[str, Any]) -> str:
    """What Gradescope shows the student of a results.json: its output and its visible tests'."""
    return "\n".join([report["output"], *(t["output"] for t in report["tests"] if t["visibility"] == "visible")])


def _for_the_teacher(report: dict[str, Any]) -> str:
    return "\n".join(t["output"] for t in report["tests"] if t["visibility"] == gradebook.TEACHER_VISIBILITY)


@pytest.mark.slow  # it waits for the timeout, in check, grade and the autograder
def test_a_timeout_advises_what_its_reader_can_do(tmp_path: Path) -> None:
    teacher = teachers_only(tmp_path)
    ann = sigmoid_submission(tmp_path / "class" / "ann", "    while True:\n        pass")
    checked = _command(
        "vjpgrad", "course", "check", "ann", "--exercises", str(teacher), "--timeout", "2", cwd=ann.parent
    )
    assert "(an endless loop? --timeout gives more time)" in checked.stdout, checked.stdout + checked.stderr
    graded = _command(
        "vjpgrad", "course", "grade", str(ann), "--out", str(tmp_path / "out"), "--exercises", str(teacher),
        "--timeout", "2", cwd=tmp_path,
    )  # fmt: skip
    assert graded.returncode == 0, graded.stderr
    report = json.loads((tmp_path / "out" / "ann" / "results.json").read_text())
    assert "did not finish within 2 s" in _visible(report)
    assert "--timeout" not in _visible(report)  # the student cannot give grade more time
    assert "vjpgrad course grade --timeout" in _for_the_teacher(report)
    assert "vjpgrad course grade --timeout" in (tmp_path / "out" / "grades.csv").read_text()
    results = tmp_path / "results" / "results.json"
    ran = _command(
        "vjpgrad.course.autograder", "--submission", str(ann), "--results", str(results), "--exercises", str(teacher),
        "--timeout", "2", cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    report = json.loads(results.read_text())
    assert "did not finish within 2 s" in _visible(report)
    assert "--timeout" not in _visible(report)  # nor Gradescope's student
    assert "run_autograder" in _for_the_teacher(report)


@pytest.mark.slow  # grading runs, through the command line
def test_checks_that_could_not_run_show_the_student_none_of_the_teachers_paths(tmp_path: Path) -> None:
    teacher = teachers_only(tmp_path)
    check = teacher / "checks" / "check_sigmoid.py"
    check.write_text("import a_module_the_teacher_lacks  # noqa: F401\n" + check.read_text())
    ann = sigmoid_submission(tmp_path / "class" / "ann")
    results = tmp_path / "results" / "results.json"
    ran = _command(
        "vjpgrad.course.autograder", "--submission", str(ann), "--results", str(results), "--exercises", str(teacher),
        cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    report = json.loads(results.read_text())
    shown = _visible(report)
    assert "its checks could not run" in shown
    assert "a_module_the_teacher_lacks" in shown  # what stopped them, still said
    assert str(tmp_path) not in shown, shown
    assert "teacher" + os.sep not in shown, shown
    assert str(check) in _for_the_teacher(report)  # the teacher has it all
    out = str(tmp_path / "out")
    graded = _command("vjpgrad", "course", "grade", str(ann), "--out", out, "--exercises", str(teacher), cwd=tmp_path)
    assert graded.returncode == 0, graded.stderr
    shown = _visible(json.loads((tmp_path / "out" / "ann" / "results.json").read_text()))
    assert "a_module_the_teacher_lacks" in shown
    assert str(tmp_path) not in shown, shown
    assert "teacher" + os.sep not in shown, shown


def _sends_then_dies(channel: Any, key: bytes, cut: bool) -> None:
    """A checks' process: one signed event, then the start of a second message and death at
    once (``cut``: killed mid-message, as its CPU limit kills it), or a second message whose
    signature is wrong (written to by something other than the grader)."""
    import signal
    import struct

    payload = json.dumps({"event": "collected", "tests": []}).encode()
    channel.send_bytes(payload + grading.sign(key, 0, payload))
    if cut:
        os.write(channel.fileno(), struct.pack("!i", 1000) + b'{"event": "res')  # 14 bytes of 1,000
        os.kill(os.getpid(), signal.SIGKILL)
    forged = json.dumps({"event": "result", "id": "x", "outcome": "passed"}).encode()
    channel.send_bytes(forged + b"\0" * 32)


@pytest.mark.skipif(sys.platform != "linux", reason="fork and SIGKILL, as the grader's processes die on Linux")
@pytest.mark.parametrize("cut", [True, False], ids=["killed_mid_message", "forged"])
def test_a_report_cut_short_by_its_process_dying_is_not_taken_for_tampering(cut: bool) -> None:
    """A checks' process killed while it sends a message (its CPU limit, a memory hog's end) leaves
    a message cut short: what came before is the grader's, and the checks stopped there, which
    ``_result`` says; only a message the grader did not sign is tampering."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    key = os.urandom(32)
    process = context.Process(target=_sends_then_dies, args=(sending, key, cut))
    process.start()
    sending.close()
    events, genuine = grading._receive(process, receiving, key, 10.0)
    process.join()
    assert [event["event"] for event in events] == ["collected"]
    assert genuine is cut


# ---- a gradebook that keeps every row: runs side by side, a run stopped midway -----------------------------

ONE_WRITE = """
import sys, time
sys.path.insert(0, {tests!r})
from test_course_grade import thirds
from vjpgrad.course import gradebook
from vjpgrad.course.exercises import course, exercise
from pathlib import Path
start = float(sys.argv[2])
while time.time() < start:  # every process writes at once
    pass
gradebook.write(Path({out!r}), course(None), {{sys.argv[1]: [thirds(exercise(1), 2)]}})
"""


@pytest.mark.slow  # two gradings of a class run at once (about 3 s)
def test_grading_runs_into_one_out_at_once_keep_every_row(tmp_path: Path) -> None:
    import time

    out = tmp_path / "out"
    script = tmp_path / "one_write.py"
    script.write_text(ONE_WRITE.format(tests=str(Path(__file__).parent), out=str(out)))
    names = [f"s{k}" for k in range(8)]
    start = time.time() + 3.0  # after every interpreter has started
    runs = [subprocess.Popen([sys.executable, str(script), name, str(start)]) for name in names]
    assert [run.wait(120) for run in runs] == [0] * len(names)
    rows = list(csv.reader(io.StringIO((out / "grades.csv").read_text())))
    assert sorted(row[0] for row in rows[1:]) == names
    assert not list(out.glob(".*.part"))


CUT_SHORT = """
import resource, signal, sys
sys.path.insert(0, {tests!r})
from test_course_grade import thirds
from vjpgrad.course import gradebook
from vjpgrad.course.exercises import course, exercise
from pathlib import Path
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))  # ulimit -f: the disk fills
gradebook.write(Path({out!r}), course(None), {{"dee": [thirds(exercise(1), 3)]}})
"""


@pytest.mark.skipif(sys.platform == "win32", reason="a file size limit (ulimit -f) is POSIX's")
def test_a_run_stopped_while_it_writes_the_gradebook_leaves_it_whole_and_the_next_keeps_every_row(
    tmp_path: Path,
) -> None:
    of, one = course(None), exercise(1)
    names = [f"student{k:02}" for k in range(30)]
    gradebook.write(tmp_path, of, {name: [thirds(one, 2)] for name in names})
    before = (tmp_path / "grades.csv").read_text()
    limit = len(before.encode()) - 10  # the gradebook is past it, in its last row; a results.json is not
    assert (tmp_path / names[0] / "results.json").stat().st_size < limit
    script = tmp_path / "cut_short.py"
    script.write_text(CUT_SHORT.format(tests=str(Path(__file__).parent), out=str(tmp_path), limit=limit))
    stopped = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert stopped.returncode != 0
    assert "File too large" in stopped.stderr
    assert (tmp_path / "grades.csv").read_text() == before  # as it was, not cut
    assert not list(tmp_path.glob("**/.*.part"))
    gradebook.write(tmp_path, of, {"eve": [thirds(one, 1)]})
    rows = list(csv.reader(io.StringIO((tmp_path / "grades.csv").read_text())))
    assert [row[0] for row in rows[1:]] == [*names, "dee", "eve"]  # dee's results.json was written whole


def test_a_results_json_without_a_row_gets_its_row_back(tmp_path: Path) -> None:
    # a gradebook an older run left without a directory it graded (stopped between the two files)
    of, one = course(None), exercise(1)
    gradebook.write(tmp_path, of, {"ada": [thirds(one, 2)], "bob": [thirds(one, 3)]})
    text = (tmp_path / "grades.csv").read_text()
    (tmp_path / "grades.csv").write_text("".join(line for line in text.splitlines(True) if not line.startswith("bob")))
    gradebook.write(tmp_path, of, {"cy": [thirds(one, 1)]})
    rows = list(csv.reader(io.StringIO((tmp_path / "grades.csv").read_text())))
    assert [row[0] for row in rows[1:]] == ["ada", "bob", "cy"]


def test_a_directory_named_with_a_carriage_return_is_refused_before_grading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "class" / "cr\rx").mkdir(parents=True)
    status, printed, err = grade(capsys, str(tmp_path / "class" / "cr\rx"), "--out", str(tmp_path / "out"))
    assert (status, printed) == (2, "")
    assert "holds a carriage return" in err
    assert not (tmp_path / "out" / "grades.csv").exists()


@pytest.mark.skipif(sys.platform != "linux", reason="a folder name of bytes that are not UTF-8 (Linux takes any)")
def test_a_directory_named_with_bytes_that_are_no_text_is_refused_before_grading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the whole class was graded, then a traceback (UnicodeEncodeError) as the gradebook was written, and
    # every later grade into that --out failed on the results.json left behind (a review of the grader)
    odd = os.fsdecode(b"lat\xe9n")
    (tmp_path / "class" / odd).mkdir(parents=True)
    status, printed, err = grade(capsys, str(tmp_path / "class" / odd), "--out", str(tmp_path / "out"))
    assert (status, printed) == (2, "")
    assert "the directory b'lat\\xe9n' has a name that is not UTF-8 text" in err.splitlines()[-1]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.skipif(sys.platform != "linux", reason="a folder name of bytes that are not UTF-8 (Linux takes any)")
def test_a_gradebook_holding_a_folder_named_with_bytes_that_are_no_text_says_which(tmp_path: Path) -> None:
    of, one = course(None), exercise(1)
    gradebook.write(tmp_path, of, {"ada": [thirds(one, 2)]})
    (tmp_path / os.fsdecode(b"lat\xe9n")).mkdir()
    shutil.copyfile(tmp_path / "ada" / "results.json", tmp_path / os.fsdecode(b"lat\xe9n") / "results.json")
    with pytest.raises(gradebook.GradebookError, match="is not UTF-8 text"):
        gradebook.check_out(tmp_path, of, ["bob"])


def test_a_stretch_exercises_points_are_said_as_extra_credit_never_as_more_than_the_most() -> None:
    of = course(None)
    stretch = next(ex for ex in of.exercises if ex.stretch)
    one = exercise(1)
    report = gradebook.results_json([thirds(one, 3), thirds(stretch, 3)], of)
    assert report["score"] == one.points + stretch.points  # Gradescope counts it
    assert report["output"].startswith(
        f"{one.points:g} of {one.points:g} points, and {stretch.points:g} of extra credit; 1 of 1 exercises done"
    )
    alone = gradebook.results_json([thirds(one, 3)], of)["output"]
    assert alone.startswith(f"{one.points:g} of {one.points:g} points; 1 of 1")
    assert "vjpgrad course" not in alone


def test_a_directory_named_as_the_gradebooks_lock_is_refused_and_a_killed_runs_parts_are_cleared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "class" / gradebook.LOCK).mkdir(parents=True)
    status, printed, err = grade(capsys, str(tmp_path / "class" / gradebook.LOCK), "--out", str(tmp_path / "out"))
    assert (status, printed) == (2, "")
    assert "named as the gradebook's lock" in err
    of, one = course(None), exercise(1)
    gradebook.write(tmp_path / "out", of, {"ada": [thirds(one, 2)]})
    stale = tmp_path / "out" / "ada" / ".results.json.999.dead.part"  # left by a run killed as it wrote
    stale.write_text("{")
    gradebook.write(tmp_path / "out", of, {"bob": [thirds(one, 3)]})
    assert not stale.exists()


def test_grade_keeps_the_submissions_folders_and_its_scratch_from_every_students_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``--independent`` a dependent exercise runs on a copy of the submission: the folders the
    submissions lie in are kept from the student's process all the same (an outside review read a
    classmate's file there), and the copies lie in the grader's scratch folder, which is kept too."""
    teacher = teachers_only(tmp_path)
    of = course(teacher)
    eve = sigmoid_submission(tmp_path / "submissions" / "eve")
    seen: dict[str, Any] = {}

    def run_many(work: Any, *args: Any, kept: Any = (), **kwargs: Any) -> list[grading.ExerciseResult]:
        seen["kept"], seen["work"] = [str(Path(k).resolve()) for k in kept], [where for where, _ in work]
        return [grading.ExerciseResult(ex, [], []) for _, ex in work]

    monkeypatch.setattr(grading, "run_many", run_many)
    monkeypatch.setattr(gradebook.depends, "on", lambda ex, course: True)  # as a later exercise is
    monkeypatch.setattr(gradebook.depends, "reference_copy", lambda directory, ex, course, to: to)
    gradebook.grade([eve], of, 60.0, independent=True, out=tmp_path / "grades")
    assert str((tmp_path / "submissions").resolve()) in seen["kept"]
    assert str((tmp_path / "grades").resolve()) in seen["kept"]
    scratch = Path(grading.scratch_kept()).resolve()
    assert all(scratch in Path(where).resolve().parents for where in seen["work"]), seen["work"]


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="user ids: POSIX")
def test_grade_refuses_to_run_where_its_scratch_folder_is_not_the_teachers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``vjpgrad-course-UID`` in the temporary folder holds every run's scratch files, kept from the
    students' processes as one folder. Made beforehand by someone else (or open to others), it is not
    used, and a run's own folder alone would leave another run's files in reach: ``grade`` says so
    and grades nobody."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    squatted = temporary / f"vjpgrad-course-{os.geteuid()}"
    squatted.mkdir()
    squatted.chmod(0o777)
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    monkeypatch.setattr(grading, "_scratch", [])
    student = sigmoid_submission(tmp_path / "submissions" / "eve")
    out = tmp_path / "out"
    status, _, err = grade(capsys, str(student), "--out", str(out), "--exercises", str(teachers_only(tmp_path)))
    assert status == 2
    assert f"{squatted} is not a folder of yours that only you may enter" in err
    assert "TMPDIR" in err
    assert not out.exists()


def test_the_instructors_page_gives_the_total_the_required_built_in_exercises_are_worth() -> None:
    """Gradescope's assignment total, as the page tells the teacher to set it: the required
    exercises' points (a stretch's are extra credit). It said 27 where they are worth 25."""
    import re

    page = (Path(__file__).resolve().parent.parent / "docs" / "course" / "instructor.md").read_text(encoding="utf-8")
    said = re.search(r"\((\d+) for the built-in twelve", page)
    assert said is not None
    built_in = course(None).exercises
    assert len(built_in) == 12
    assert int(said.group(1)) == sum(ex.points for ex in built_in if not ex.stretch)


def test_grade_run_inside_a_submission_never_reads_its_course_toml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cd ada && vjpgrad course grade . --out ../out`` read the student's own course.toml, which can
    name the student's own exercises with empty checks (4 of 4, a review's case): refused, before
    anything runs, saying how to name the teacher's exercises."""
    student = tmp_path / "class" / "ada"
    (student / "mine").mkdir(parents=True)
    (student / "course.toml").write_text('exercises = "mine"\n', encoding="utf-8")
    monkeypatch.chdir(student)
    status, _, err = grade(capsys, ".", "--out", str(tmp_path / "out"))
    assert status == 2
    assert "its course.toml is the student's" in err, err
    assert "--exercises" in err, err
    assert not (tmp_path / "out").exists()
    (student / "sub").mkdir()  # from a folder inside it: course.toml is found above, and is the student's still
    monkeypatch.chdir(student / "sub")
    status, _, err = grade(capsys, "..", "--out", str(tmp_path / "out"))
    assert status == 2
    assert "its course.toml is the student's" in err, err


def test_another_students_folder_of_the_same_name_never_takes_a_rows_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two sections' ``alice``, graded into one --out in two runs: the second replaced the first's
    row, silently (a review's case). The row says whose folder it is; another folder of its name is
    refused before anything runs, naming both, and the first row stays."""
    of = course(None)
    first, second = tmp_path / "sec1" / "alice", tmp_path / "sec2" / "alice"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    out = tmp_path / "out"
    gradebook.write(out, of, {"alice": [thirds(exercise(1), 3)]}, {"alice": first})
    before = (out / "grades.csv").read_text()
    status, _, err = grade(capsys, str(second), "--out", str(out))
    assert status == 2
    assert str(first.resolve()) in err, err
    assert str(second.resolve()) in err, err
    assert (out / "grades.csv").read_text() == before
    gradebook.check_out(out, of, ["alice"], [first])  # the same folder again: its row, regraded
    gradebook.write(out, of, {"alice": [thirds(exercise(1), 1)]}, {"alice": first})
    assert (out / "grades.csv").read_text() != before
