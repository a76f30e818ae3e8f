"""Grading: run the checks against a student's directory, and report the results.

``run`` starts pytest in a child process (the student's code cannot break the command, and an
endless loop is stopped by the timeout) with the plugin ``vjpgrad.course._plugin``, which writes
one JSON line per event; ``run`` reads them back into an ``ExerciseResult`` per exercise.
``scoreboard`` is the text a student reads, ``as_json`` what an autograder reads.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vjpgrad.course.exercises import EXERCISES, Exercise, folder

DONE, FAILING, NOT_STARTED = "done", "failing", "not started"
PASSED, FAILED = "passed", "failed"


class CheckError(RuntimeError):
    """The checks could not run at all (not: a check failed)."""


@dataclass(frozen=True)
class TestResult:
    """One check: its name (its test function's, without ``test_``), outcome and message."""

    name: str
    outcome: str  # PASSED, FAILED or NOT_STARTED
    message: str = ""
    seconds: float = 0.0


@dataclass
class ExerciseResult:
    """An exercise's checks and what they say about it."""

    exercise: Exercise
    tests: list[TestResult] = field(default_factory=list)

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
        """The check to show: the first that failed, else the first not started."""
        for outcome in (FAILED, NOT_STARTED):
            for test in self.tests:
                if test.outcome == outcome:
                    return test
        return None


def run(directory: Path, exercises: Sequence[Exercise], timeout: float) -> list[ExerciseResult]:
    """Run the checks of ``exercises`` against the files in ``directory``; at most ``timeout`` seconds."""
    checks = folder("checks")
    with tempfile.TemporaryDirectory(prefix="vjpgrad-course-") as scratch:
        report = Path(scratch) / "report.jsonl"
        command = [
            sys.executable, "-m", "pytest", "-q", "--no-header", "-c", str(checks / "pytest.ini"),
            "--rootdir", str(checks), "--student", str(directory), "--course-report", str(report),
            *(str(checks / exercise.check) for exercise in exercises),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # no __pycache__ in the student's directory
        env.pop("PYTEST_ADDOPTS", None)  # the checks run as written, whatever the shell says
        env["HYPOTHESIS_STORAGE_DIRECTORY"] = scratch  # hypothesis writes nothing into the student's directory
        timed_out = False
        try:
            finished = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=timeout)
            output = finished.stdout + finished.stderr
        except subprocess.TimeoutExpired as expired:
            timed_out = True
            output = _text(expired.stdout) + _text(expired.stderr)
        lines = report.read_text(encoding="utf-8").splitlines() if report.exists() else []
        events = [json.loads(line) for line in lines]
    return _results(exercises, events, output, timed_out, timeout)


def _text(data: str | bytes | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _results(
    exercises: Sequence[Exercise], events: list[dict[str, Any]], output: str, timed_out: bool, timeout: float
) -> list[ExerciseResult]:
    collected = next((event["tests"] for event in events if event["event"] == "collected"), None)
    if collected is None:
        if timed_out:
            raise CheckError(f"the checks did not start within {timeout:g} s")
        raise CheckError("the checks could not run:\n" + "\n".join(output.strip().splitlines()[-15:]))
    finished = {event["id"]: event for event in events if event["event"] == "result"}
    started = [event["id"] for event in events if event["event"] == "start"]
    results = {exercise.number: ExerciseResult(exercise) for exercise in exercises}
    for test in collected:
        result = results.get(test["exercise"])
        if result is None:
            continue
        event = finished.get(test["id"])
        if event is not None:
            result.tests.append(TestResult(test["name"], event["outcome"], event["message"], event["seconds"]))
        elif started and started[-1] == test["id"]:
            why = (
                f"it did not finish within {timeout:g} s (an endless loop? --timeout gives more time)"
                if timed_out
                else "the process running the checks stopped during it (os._exit? a crash?)"
            )
            result.tests.append(TestResult(test["name"], FAILED, why))
        else:
            result.tests.append(TestResult(test["name"], FAILED, "not run: the checks stopped at an earlier one"))
    return [results[exercise.number] for exercise in exercises]


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


def _count(results: Sequence[ExerciseResult], command: str) -> list[str]:
    """The lines under the table: how many are done, of what. All done is said only of the whole
    course (every exercise but the stretch ones); a check of some exercises says which were not checked."""
    checked = {r.exercise.number for r in results}
    unchecked = [ex.number for ex in EXERCISES if ex.number not in checked]
    whole = all(ex.stretch for ex in EXERCISES if ex.number not in checked)
    counted = [r for r in results if not r.exercise.stretch] or list(results)  # a stretch checked alone counts
    done = sum(r.status == DONE for r in counted)
    stretches = [r for r in results if r.exercise.stretch and r not in counted]
    if whole:
        lines = [f"{done} of {len(counted)} done." + (" All done: well done!" if done == len(counted) else "")]
        if stretches:
            which = numbered([r.exercise.number for r in stretches])
            lines.append(
                f"{which.capitalize()} {'is a stretch' if len(stretches) == 1 else 'are stretches'}: checked and "
                "shown, but not counted; the course is done without it."
            )
        return lines
    if len(results) == 1:
        lines = [f"Checked {numbered([results[0].exercise.number])} alone: {results[0].status}."]
    else:
        lines = [f"Checked {numbered(sorted(checked))}: {done} of {len(counted)} done."]
    if unchecked:
        lines.append(f"Not checked this time: {numbered(unchecked)} ({command} checks them all).")
    return lines


def scoreboard(results: Sequence[ExerciseResult], directory: Path, command: str) -> str:
    """The text a student reads: each exercise's status and checks passed, then the first one not
    done with its message and hint. ``command`` is how they ran the check, to say how to run one."""
    rows = []
    for r in results:
        rows.append((f"{r.exercise.number:>3}", r.exercise.label, r.status, f"{r.passed}/{len(r.tests)}"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [f"vjpgrad course: {directory}", ""]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines += ["", *_count(results, command)]
    todo = next((r for r in results if r.status != DONE), None)
    if todo is None:
        return "\n".join(lines)
    exercise = todo.exercise
    problem = todo.first_problem()
    lines += ["", f"Exercise {exercise.number} ({', '.join(exercise.files)}) is {todo.status}: {exercise.title}."]
    if problem is not None:
        lines += ["", f"  {problem.name.replace('_', ' ')}:"]
        lines += [("    " + line).rstrip() for line in problem.message.splitlines()]
        first = re.search(r"exercise (\d+): write", problem.message) if problem.outcome == NOT_STARTED else None
        if first and int(first.group(1)) != exercise.number:
            lines.append(
                f"    (its checks run the code of exercise {first.group(1)}: do exercise {first.group(1)} first)"
            )
    lines += ["", "Hint:", *textwrap.wrap(exercise.hint, 96, initial_indent="  ", subsequent_indent="  ")]
    if len(results) > 1:
        lines += ["", f"Check this one alone: {command} {exercise.number}"]
    return "\n".join(lines)


def as_json(results: Sequence[ExerciseResult], directory: Path) -> dict[str, Any]:
    """The results for an autograder. The top level has the shape of a GitHub Classroom test runner's
    result (``version``, ``status``, ``max_score``, ``tests`` with ``name``, ``status``, ``score``,
    ``message``): one point per exercise done, none for a stretch exercise; the rest is vjpgrad's."""
    tests = []
    for r in results:
        problem = r.first_problem()
        points = 0 if r.exercise.stretch else 1
        tests.append({
            "name": r.exercise.heading,
            "status": "pass" if r.status == DONE else "fail",
            "score": points if r.status == DONE else 0,
            "max_score": points,
            "message": "" if problem is None else problem.message,
            "number": r.exercise.number,
            "slug": r.exercise.slug,
            "title": r.exercise.title,
            "files": list(r.exercise.files),
            "stretch": r.exercise.stretch,
            "state": r.status,
            "passed": r.passed,
            "total": len(r.tests),
            "hint": r.exercise.hint,
            "checks": [
                {"name": t.name, "outcome": t.outcome, "message": t.message, "seconds": round(t.seconds, 3)}
                for t in r.tests
            ],
        })  # fmt: skip
    return {
        "version": 1,
        "status": "pass" if all_done(results) else "fail",
        "score": sum(test["score"] for test in tests),
        "max_score": sum(test["max_score"] for test in tests),
        "directory": str(directory),
        "tests": tests,
    }
