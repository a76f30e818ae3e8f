"""Grading a class: many submission directories at once, into a gradebook and Gradescope's results.

``grade`` checks every exercise of every directory, each in its own process with a time limit, the
held-out checks included, in one pool of processes as wide as the machine's cores. ``write`` puts
``OUT/grades.csv`` (a header row, then one row per directory, named by the directory's name: the
points of each exercise and the total) and ``OUT/<name>/results.json`` in the shape of Gradescope's
autograder results: ``score`` at the top, and ``tests`` with ``name``, ``score``, ``max_score``,
``output`` and ``visibility`` for each exercise (its held-out checks apart, shown to students once
the teacher publishes the grades).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vjpgrad.course import grading
from vjpgrad.course.exercises import Course
from vjpgrad.course.grading import DONE, PASSED, ExerciseResult, points

HELD_OUT_VISIBILITY = "after_published"
"""Gradescope shows a held-out check's result to the student only once the grades are published."""


def grade(
    directories: Sequence[Path], course: Course, timeout: float, workers: int | None = None
) -> dict[str, list[ExerciseResult]]:
    """Every exercise of ``course`` in every directory, held-out checks included: results by directory name."""
    work = [(directory, ex) for directory in directories for ex in course.exercises]
    results = grading.run_many(work, timeout, workers, held_out=True)
    graded: dict[str, list[ExerciseResult]] = {directory.name: [] for directory in directories}
    for (directory, _), result in zip(work, results, strict=True):
        graded[directory.name].append(result)
    return graded


def number(x: float) -> str:
    """Points as the CSV writes them: ``2``, ``1.5``, ``0.67``."""
    return f"{points(x):g}"


def gradebook(course: Course, graded: dict[str, list[ExerciseResult]]) -> str:
    """The CSV gradebook: a header row (``directory``, one column per exercise, ``total``), then a row
    per directory with the points of each exercise."""
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(["directory", *(f"{ex.number} {ex.slug}" for ex in course.exercises), "total"])
    for name, results in graded.items():
        writer.writerow([name, *(number(r.score()) for r in results), number(sum(r.score() for r in results))])
    return stream.getvalue()


def _check_lines(result: ExerciseResult, held_out: bool) -> list[str]:
    return [
        f"{'passed' if t.outcome == PASSED else t.outcome}: {t.sentence}"
        + (f" (weight {t.weight:g})" if t.weight != 1 else "")
        for t in result.tests
        if t.held_out is held_out
    ]


def _output(result: ExerciseResult, held_out: bool) -> str:
    """What a student reads in Gradescope: each check's outcome, then the first problem's message."""
    lines = _check_lines(result, held_out)
    problem = next((t for t in result.tests if t.held_out is held_out and t.outcome != PASSED), None)
    if problem is not None:
        lines += ["", f"{problem.sentence}:", problem.message]
    return "\n".join(lines)


def results_json(results: Sequence[ExerciseResult]) -> dict[str, Any]:
    """One directory's results in Gradescope's format; a stretch exercise's points are extra credit."""
    tests = []
    for r in results:
        tests.append({
            "name": r.exercise.heading, "number": str(r.exercise.number), "score": points(r.score(held_out=False)),
            "max_score": points(r.max_score(held_out=False)), "output": _output(r, held_out=False),
            "visibility": "visible",
        })  # fmt: skip
        if any(t.held_out for t in r.tests):
            tests.append({
                "name": f"{r.exercise.heading}: held-out checks", "number": f"{r.exercise.number}.h",
                "score": points(r.score(held_out=True)), "max_score": points(r.max_score(held_out=True)),
                "output": _output(r, held_out=True), "visibility": HELD_OUT_VISIBILITY,
            })  # fmt: skip
    done = sum(r.status == DONE for r in results if not r.exercise.stretch)
    required = sum(not r.exercise.stretch for r in results)
    total = points(sum(r.score() for r in results))
    most = points(sum(r.exercise.points for r in results if not r.exercise.stretch))
    return {
        "score": total,
        "output": f"{total:g} of {most:g} points; {done} of {required} exercises done (vjpgrad course grade)",
        "tests": tests,
    }


def write(out: Path, course: Course, graded: dict[str, list[ExerciseResult]]) -> None:
    """``out/grades.csv`` and ``out/<name>/results.json`` for each directory graded."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "grades.csv").write_text(gradebook(course, graded), encoding="utf-8")
    for name, results in graded.items():
        (out / name).mkdir(exist_ok=True)
        text = json.dumps(results_json(results), indent=2) + "\n"
        (out / name / "results.json").write_text(text, encoding="utf-8")
