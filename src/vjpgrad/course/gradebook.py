"""Grading a class: many submission directories at once, into a gradebook and Gradescope's results.

``grade`` checks every exercise of every directory, each in its own process with a time limit, the
held-out checks included (in a process of their own), in one pool of processes as wide as the
machine's cores. ``write`` puts ``OUT/<name>/results.json`` in the shape of Gradescope's autograder
results (``score`` at the top, and ``tests`` with ``name``, ``number``, ``score``, ``max_score``,
``output`` and ``visibility`` for each exercise; its held-out checks apart, shown to students once
the teacher publishes the grades, as their outcomes alone; and what only the teacher may read,
``visibility`` ``hidden``), then ``OUT/grades.csv``, built from every ``results.json`` in ``OUT``:
a header row, then one row per directory (the points of each exercise, the total, and the
teacher's remarks). Grading into an ``OUT`` that holds results already replaces only the
directories (and, with ``exercises``, only the exercises) graded this time.

Every number is rounded once, where a check's points are shown: an exercise's column is the sum of
its tests' scores as written, the total the sum of those.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import secrets
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from vjpgrad.course import borrowed, depends, grading, guard, trees
from vjpgrad.course.exercises import Course, Exercise
from vjpgrad.course.grading import PASSED, ExerciseResult, points

HELD_OUT_VISIBILITY = "after_published"
"""Gradescope shows a held-out check's outcome to the student only once the grades are published."""
TEACHER_VISIBILITY = "hidden"
"""Gradescope never shows a ``hidden`` test to the student: the teacher's remarks, held-out messages."""
RESULTS = "results.json"
GRADES = "grades.csv"
LOCK = ".grades.lock"
SOURCE = ".submission"
"""Beside a row's ``results.json``: the folder it was graded from (its absolute path), so that
another folder of the same name (two sections' ``alice``) never takes its place."""
"""The file in ``OUT`` that a run holds locked while it merges its results in (``write``): two runs
into one ``OUT`` at once take turns, and neither loses the other's rows."""


class GradebookError(ValueError):
    """An ``OUT`` whose gradebook belongs to another course: the message says what differs."""


def grade(
    directories: Sequence[Path], course: Course, timeout: float, workers: int | None = None,
    exercises: Sequence[Exercise] | None = None, independent: bool = False, more_time: grading.MoreTime = grading.GRADE,
    out: Path | None = None,
) -> dict[str, list[ExerciseResult]]:  # fmt: skip
    """The ``exercises`` (all of ``course``'s by default) of every directory, held-out checks
    included: results by directory name. ``independent``: each exercise on the reference solution
    of the earlier exercises it runs on (``depends.reference_copy``), so that one bug costs once.
    The teacher's remarks (``borrowed``) are read from the files as handed in, before any of the
    student's code runs (code that could write would otherwise rewrite what they read), by a process
    with a time and memory limit per submission (``borrowed.remarks_apart``). A check
    stopped at the time limit advises the student nothing, the teacher ``more_time`` (a remark).
    ``out``: where the grades are written (every student's marks, the teacher's remarks), which no
    student's process may read (``grading.kept_from_student``)."""
    chosen = list(course.exercises if exercises is None else exercises)
    # the copies (``independent``) in the grader's scratch folder, kept from every student's process
    with tempfile.TemporaryDirectory(prefix="independent-", dir=grading.scratch()) as scratch:
        work, checked, remarks, prints = [], [], [], []
        for k, directory in enumerate(directories):
            # as handed in, before any of it runs, by a process with a time and memory limit
            said, found = borrowed.remarks_apart(directory, chosen, course)
            remarks += said
            prints += found
            for ex in chosen:
                where = directory
                if independent and depends.on(ex, course):
                    where = depends.reference_copy(
                        directory, ex, course, Path(scratch) / f"{k}-{ex.number}" / directory.name
                    )
                work.append((where, ex))
                checked.append(directory)
        # the folders the submissions lie in, whether a copy or the submission itself runs (the
        # others' files), and the gradebook's
        kept = sorted({directory.resolve().parent for directory in directories}) + ([] if out is None else [out])
        try:
            results = grading.run_many(
                work, timeout, workers, held_out=True, class_mode=True, more_time=more_time, kept=kept
            )
        finally:  # the copies, removed without recursion: folders nested deeper than shutil.rmtree recurses
            with os.scandir(scratch) as scan:
                copies = [Path(entry.path) for entry in scan if entry.is_dir(follow_symlinks=False)]
            for copy in copies:
                trees.removed(copy)
    graded: dict[str, list[ExerciseResult]] = {directory.name: [] for directory in directories}
    alike = _alike(checked, [ex for _, ex in work], prints)
    for directory, result, read, same in zip(checked, results, remarks, alike, strict=True):
        result.remarks += read + same
        for refused, remark in ((guard.SOLUTIONS, guard.SOLUTIONS_REMARK), (guard.ENGINE, guard.ENGINE_REMARK)):
            if any(refused in t.message for t in result.tests):  # the student's process refused it
                result.remarks.append(remark)
        graded[directory.name].append(result)
    for results_of_one in graded.values():
        if not independent:
            grading.note_dependencies(results_of_one, course)
    return graded


def _alike(directories: Sequence[Path], exercises: Sequence[Exercise], prints: Sequence[str | None]) -> list[list[str]]:
    """For each (submission, exercise) graded, the remark that other submissions hand in the same
    program for that exercise (``borrowed.fingerprint``), naming them: where two submissions are
    alike in a large exercise (``borrowed.LARGE_COPY``), or in two exercises or more (one small
    exercise alike is often two students' obvious loop). A remark, not a verdict."""
    holders: dict[tuple[int, str], list[str]] = {}
    for directory, ex, mark in zip(directories, exercises, prints, strict=True):
        if mark is not None:
            holders.setdefault((ex.number, mark), []).append(directory.name)
    shared: dict[tuple[str, str], int] = {}  # (one, other): how many exercises alike, a large one counting two
    for (_, mark), names in holders.items():
        for one in names:
            for other in names:
                if one != other:
                    shared[(one, other)] = shared.get((one, other), 0) + (2 if mark.startswith("L") else 1)
    said: list[list[str]] = []
    for directory, ex, mark in zip(directories, exercises, prints, strict=True):
        alike = [] if mark is None else holders[(ex.number, mark)]
        others = [name for name in alike if name != directory.name and shared[(directory.name, name)] >= 2]
        parts = ", ".join(ex.parts) if ex.parts else "the whole file"
        said.append([f"{ex.files[0]} ({parts}): {borrowed.CLASSMATES} {', '.join(others)}"] if others else [])
    return said


def number(x: float) -> str:
    """Points as the CSV and the outputs write them: ``2``, ``1.5``, ``0.67``, ``13333.33`` (every
    digit, to two decimals: ``%g`` kept six)."""
    return f"{points(x):.2f}".rstrip("0").rstrip(".")


def _check_lines(result: ExerciseResult, held_out: bool) -> list[str]:
    return [
        f"{'passed' if t.outcome == PASSED else t.outcome}: {t.sentence}"
        + (f" (weight {t.weight:g})" if t.weight != 1 else "")
        for t in result.tests
        if t.held_out is held_out
    ]


def _output(result: ExerciseResult) -> str:
    """What a student reads in Gradescope: each check's outcome, then the first problem's message,
    and which earlier exercise to fix first when these checks run one that is not done."""
    lines = _check_lines(result, held_out=False)
    problem = next((t for t in result.tests if not t.held_out and t.outcome != PASSED), None)
    if problem is not None:
        lines += ["", f"{problem.sentence}:", problem.message]
    if result.note:
        lines += ["", f"({result.note})"]
    return "\n".join(lines)


def _teachers(result: ExerciseResult) -> str:
    """What only the teacher reads: the remarks, and the messages of the held-out checks not passed."""
    lines = [f"remark: {' '.join(remark.splitlines())}" for remark in result.remarks]
    for t in result.tests:
        if t.held_out and t.outcome != PASSED:  # its message is the student's text (what they raised): indented
            lines += [f"held-out check {t.sentence}, {t.outcome}:", *(f"    {line}" for line in t.message.splitlines())]
            lines.append("")
    return "\n".join(lines).strip()


def exercise_tests(r: ExerciseResult) -> list[dict[str, Any]]:
    """An exercise's tests in Gradescope's results: the visible one, its held-out checks' outcomes
    (shown once published: their messages could carry their text, so only the teacher reads them),
    and the teacher's notes when there are any."""
    ex = r.exercise
    tests = [{
        "name": ex.heading, "number": str(ex.number), "score": points(r.score(held_out=False)),
        "max_score": points(r.max_score(held_out=False)), "output": _output(r), "visibility": "visible",
    }]  # fmt: skip
    if any(t.held_out for t in r.tests):
        tests.append({
            "name": f"{ex.heading}: held-out checks", "number": f"{ex.number}.h",
            "score": points(r.score(held_out=True)), "max_score": points(r.max_score(held_out=True)),
            "output": "\n".join(_check_lines(r, held_out=True)), "visibility": HELD_OUT_VISIBILITY,
        })  # fmt: skip
    notes = _teachers(r)
    if notes:
        tests.append({
            "name": f"{ex.heading}: for the teacher", "number": f"{ex.number}.t", "score": 0.0, "max_score": 0.0,
            "output": notes, "visibility": TEACHER_VISIBILITY,
        })  # fmt: skip
    return tests


def _exercise_of(test: dict[str, Any]) -> int:
    return int(str(test["number"]).split(".")[0])


def summary(tests: Sequence[dict[str, Any]], course: Course) -> dict[str, Any]:
    """``results.json``'s top level for ``tests``: the score is the sum of the tests' scores as shown.
    The output, which Gradescope shows the student at once, counts what they may see at once: where
    there are held-out checks (shown once the grades are published), the points and exercises of the
    other checks alone, so that a held-out check's outcome does not show through it."""
    total = points(sum(float(test["score"]) for test in tests))
    numbers = {_exercise_of(test) for test in tests}
    required = [ex for ex in course.exercises if ex.number in numbers and not ex.stretch]
    held_out = any(t["visibility"] == HELD_OUT_VISIBILITY for t in tests)
    shown = [t for t in tests if t["visibility"] == "visible" or (not held_out and t["visibility"] != "hidden")]
    done = sum(all(t["score"] == t["max_score"] for t in shown if _exercise_of(t) == ex.number) for ex in required)
    counted = {ex.number for ex in required}  # a stretch exercise's points are extra credit, said apart
    earned = _points_of(shown if held_out else tests, counted)
    if held_out:
        most_now = points(sum(float(t["max_score"]) for t in shown if _exercise_of(t) in counted))
        output = (
            f"{number(earned[0])} of {number(most_now)} points from the checks shown now{_extra(earned[1])}; {done} "
            f"of {len(required)} exercises pass them; the held-out checks are shown once the grades are published"
        )
    else:
        most = points(sum(ex.points for ex in required))
        output = (
            f"{number(earned[0])} of {number(most)} points{_extra(earned[1])}; {done} of {len(required)} exercises done"
        )
    return {"score": total, "output": output, "tests": list(tests)}


def _points_of(tests: Sequence[dict[str, Any]], counted: set[int]) -> tuple[float, float]:
    """The points of ``tests`` of the exercises ``counted``, and those of the others (stretch: extra credit)."""
    ours = points(sum(float(t["score"]) for t in tests if _exercise_of(t) in counted))
    return ours, points(sum(float(t["score"]) for t in tests if _exercise_of(t) not in counted))


def _extra(extra: float) -> str:
    """What a summary adds for the points of stretch exercises (extra credit): nothing where there are none."""
    return f", and {number(extra)} of extra credit" if extra else ""


def results_json(results: Sequence[ExerciseResult], course: Course | None = None) -> dict[str, Any]:
    """One directory's results in Gradescope's format; a stretch exercise's points are extra credit."""
    of = course if course is not None else Course(tuple(r.exercise for r in results))
    return summary([test for r in results for test in exercise_tests(r)], of)


def merged(old: dict[str, Any] | None, new: dict[str, Any], course: Course) -> dict[str, Any]:
    """``new`` results over ``old`` ones: the exercises graded this time replace theirs, the others stay."""
    if old is None:
        return new
    regraded = {_exercise_of(test) for test in new["tests"]}
    kept = [test for test in old.get("tests", []) if _exercise_of(test) not in regraded]
    order = {ex.number: k for k, ex in enumerate(course.exercises)}
    tests = sorted([*kept, *new["tests"]], key=lambda t: (order.get(_exercise_of(t), len(order)), str(t["number"])))
    return summary(tests, course)


def header(course: Course) -> list[str]:
    return ["directory", *(f"{ex.number} {ex.slug}" for ex in course.exercises), "total", "remarks"]


def row(name: str, report: dict[str, Any], course: Course) -> list[str]:
    """A directory's row: each exercise's points (the sum of its tests' scores as shown; "not run"
    for an exercise never graded, as after ``grade --exercise N`` into a new ``--out``, where a 0
    would read as a failure), the total of those graded, and the teacher's remarks."""
    tests = report.get("tests", [])
    graded = {_exercise_of(t) for t in tests}
    cells = [points(sum(float(t["score"]) for t in tests if _exercise_of(t) == ex.number)) for ex in course.exercises]
    pairs = zip(course.exercises, cells, strict=True)
    shown = [number(cell) if ex.number in graded else grading.NOT_RUN for ex, cell in pairs]
    remarks: list[str] = []
    copied: list[int] = []
    for t in tests:
        if t.get("visibility") != TEACHER_VISIBILITY:
            continue
        for line in str(t["output"]).splitlines():
            if line.startswith("remark: ") and borrowed.COPIED in line:
                copied.append(_exercise_of(t))
            elif line.startswith("remark: "):
                remarks.append(line.removeprefix("remark: "))
    if copied:  # said once: the exercises whose parts are a shipped solution's
        remarks.append(f"{grading.numbered(sorted(set(copied)))}: {borrowed.COPIED}")
    return [name, *shown, number(sum(cells)), "; ".join(dict.fromkeys(remarks))]


FORMULA = ("=", "+", "-", "@", "\t", "\r", "'")
"""What a cell may not start with, lest a spreadsheet read it as a formula (OWASP's CSV injection);
and the quote that marks such a cell as text, so that a name starting with one is told apart."""


def _text(cell: str) -> str:
    """A cell as a spreadsheet reads text: a quote before one that would start a formula."""
    return f"'{cell}" if cell.startswith(FORMULA) else cell


def _untext(cell: str) -> str:
    """``_text`` undone: the cell's own text (a directory's name, read back from the gradebook)."""
    return cell[1:] if cell.startswith("'") else cell


def gradebook(course: Course, reports: dict[str, dict[str, Any]]) -> str:
    """The CSV gradebook of ``reports`` (each directory's ``results.json``), by directory name; a
    cell a spreadsheet would read as a formula (a directory named ``=HYPERLINK(...)``) as text."""
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(header(course))
    for name, report in reports.items():
        writer.writerow([_text(cell) for cell in row(name, report, course)])
    return stream.getvalue()


def existing(out: Path, course: Course) -> list[str]:
    """The directories ``out`` has results of, in its gradebook's order; ``GradebookError`` when its
    gradebook has other columns (another course's), or a row whose ``results.json`` is gone or
    cannot be read (the gradebook is rebuilt from them: that row would be lost)."""
    path = out / GRADES
    if not path.is_file():
        return _unlisted(out, [])
    with open(path, encoding="utf-8", newline="") as file:  # a name may hold a newline, quoted
        rows = list(csv.reader(file))
    if rows and rows[0] != header(course):
        raise GradebookError(
            f"{path} has the columns {', '.join(rows[0])}, not this course's: grade into another --out"
        )
    names = _unlisted(out, [_untext(r[0]) for r in rows[1:] if r])
    for name in names:
        _a_text_name(name, out)
        if not (out / name / RESULTS).is_file():  # the gradebook is rebuilt from them: its row would go
            raise GradebookError(
                f"{path} has a row for {name}, whose {out / name / RESULTS} is not there: put it back, or "
                "grade into another --out"
            )
        read_results(out / name / RESULTS)
    return names


def _a_text_name(name: str, out: Path | None = None) -> None:
    """Refuse (``GradebookError``) a directory's name whose bytes are not UTF-8 text (Linux takes any
    bytes; Python holds the others as surrogates): its gradebook row, written as UTF-8, cannot hold
    it. ``out``: the gradebook's folder, where an older run left it."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(name)
        where = f" in {out}" if out is not None else ""
        raise GradebookError(
            f"the directory {shown!r}{where} has a name that is not UTF-8 text, which a gradebook row cannot hold: "
            "rename it"
        ) from None


def _unlisted(out: Path, names: list[str]) -> list[str]:
    """``names`` (the gradebook's rows, in order), then the directories of ``out`` that hold a
    ``results.json`` and have no row (a gradebook written by a run that stopped before it was done),
    by name: every directory graded keeps its row."""
    if not out.is_dir():
        return names
    listed = set(names)
    return [*names, *sorted(p.parent.name for p in out.glob(f"*/{RESULTS}") if p.parent.name not in listed)]


def read_results(path: Path) -> dict[str, Any]:
    """A ``results.json`` that ``grade`` wrote; ``GradebookError`` naming it when it is not one (a file
    edited by hand), said before anything is written, rather than a traceback once some are."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        tests = report["tests"]
        if not isinstance(tests, list):
            raise TypeError(f"its tests are a {type(tests).__name__}, not a list")
        for test in tests:
            _exercise_of(test), float(test["score"])
    except (OSError, ValueError, TypeError, KeyError, IndexError) as error:
        why = f"{type(error).__name__}: {error}"
        raise GradebookError(
            f"{path} cannot be read as grade's results ({why}): move it away or grade into another --out"
        ) from None
    return report  # type: ignore[no-any-return]


def check_out(out: Path, course: Course, names: Sequence[str], directories: Sequence[Path] = ()) -> None:
    """Refuse (``GradebookError``) an ``out`` that ``write`` could not merge into: another course's
    gradebook, or a ``results.json`` it could not read, of a directory in it or of one of ``names``
    (those about to be graded); a name a gradebook's row cannot hold (a carriage return, which
    a CSV line writes bare); and one of ``directories`` whose name's row is another folder's
    (``SOURCE``)."""
    for directory in directories:
        _same_folder(out, directory)
    for name in names:
        if name == LOCK:
            raise GradebookError(f"the directory {name!r} is named as the gradebook's lock, {LOCK}: rename it")
        if "\r" in name:
            raise GradebookError(
                f"the directory {name!r} holds a carriage return (\\r), which would cut its gradebook row in two: "
                "rename it"
            )
        _a_text_name(name)
    existing(out, course)
    for name in names:
        if (out / name / RESULTS).is_file():
            read_results(out / name / RESULTS)


def _same_folder(out: Path, directory: Path) -> None:
    """``GradebookError`` where ``out`` holds a row of ``directory``'s name graded from another folder."""
    source = out / directory.name / SOURCE
    try:
        was = source.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):  # none (a gradebook of before, or a new name): nothing to tell
        return
    now = str(directory.resolve())
    if was != now:
        raise GradebookError(
            f"{out}'s row {directory.name} is of {was}, and {now} has the same name: grade it into another "
            f"--out, or rename one of the folders (where it is the same student's folder, moved, delete {source})"
        )


def write(
    out: Path, course: Course, graded: dict[str, list[ExerciseResult]], sources: dict[str, Path] | None = None
) -> str:
    """``out/<name>/results.json`` for each directory graded, merged into what ``out`` holds, then
    ``out/grades.csv`` with every directory's row; returns the gradebook's text. One run at a time
    (``LOCK``), each file replaced whole (``_replace``): a run stopped midway leaves each file as it
    was or as it is now, and a run beside it its rows. ``sources``: the folder each name was graded
    from, written beside its results (``SOURCE``)."""
    out.mkdir(parents=True, exist_ok=True)
    with _locked(out / LOCK):
        for stale in [*out.glob(".*.part"), *out.glob("*/.*.part")]:  # a run killed as it wrote (kill -9)
            stale.unlink(missing_ok=True)
        names = existing(out, course)
        for directory in (sources or {}).values():  # again under the lock: a run beside this one may have written
            _same_folder(out, directory)
        for name, results in graded.items():
            path = out / name / RESULTS
            old = read_results(path) if path.is_file() else None
            report = merged(old, results_json(results, course), course)
            path.parent.mkdir(exist_ok=True)
            if sources is not None and name in sources:
                _replace(path.parent / SOURCE, f"{sources[name].resolve()}\n")
            _replace(path, json.dumps(report, indent=2) + "\n")
        everyone = [*names, *(name for name in graded if name not in names)]
        reports = {name: read_results(out / name / RESULTS) for name in everyone}
        text = gradebook(course, reports)
        _replace(out / GRADES, text)
    return text


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole: into a file beside it, then moved in its place (``os.replace``,
    one step), so that no reader, and no run stopped midway, finds it half written."""
    part = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.part")
    try:
        with open(part, "x", encoding="utf-8") as file:  # made as any file of the user's (the umask)
            file.write(text)
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold ``path`` locked (made if missing) for the body: another process waits for it."""
    with open(path, "a+b") as handle:
        if sys.platform == "win32":
            import msvcrt

            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)  # tries for 10 s, then raises OSError
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # let go when the file is closed
        yield
