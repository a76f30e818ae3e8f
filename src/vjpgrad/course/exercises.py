"""The course's exercises, read from exercises directories: what each is, where it is written, how it is checked.

An exercises directory holds ``exercises.toml`` (one ``[[exercise]]`` table each, in order: slug,
title, the student's files, the parts asked for, the check file, points, a hint), ``templates/``
(the student's files, written by ``vjpgrad course init``), the check files (pytest), and optionally
``solutions/`` (what ``vjpgrad course solution N`` shows in self-study) and held-out checks, which
``vjpgrad course grade`` runs and students never get. The built-in twelve are such a directory,
this package's own (``builtin()``); a teacher's directory comes after them (or replaces them, with
``builtin = false``), can add held-out checks to any exercise (``held_out.toml``, by slug, a file apart
so that the copy handed out names none; or ``[held_out]`` in exercises.toml) and give its own
hints for built-in ones (``[hints]``). docs/course/instructor.md describes the format.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vjpgrad.course import _toml

EXERCISES_FILE = "exercises.toml"
HELD_OUT_FILE = "held_out.toml"
"""The teacher's held-out checks, by exercise slug, in a file of its own beside exercises.toml: the
copy handed to students leaves it out (with ``held_out/``), so their exercises.toml names none."""
SLUG = re.compile(r"[a-z0-9][a-z0-9-]*")


class ExercisesError(ValueError):
    """An exercises directory that cannot be read: the message names the file and what is wrong."""


@dataclass(frozen=True)
class Exercise:
    """One exercise: what to write, where, how it is checked, what it is worth, and a hint."""

    number: int
    slug: str
    title: str
    files: tuple[str, ...]
    """The student's files it is written in, e.g. ``("engine.py",)``."""
    parts: tuple[str, ...]
    """What it asks for, as names in the first of its files: ``"central_difference"``, ``"Value.__add__"``;
    none when it is the whole file."""
    hint: str
    check: Path
    """Its pytest file, which students have (they run it with ``vjpgrad course check``)."""
    home: Path
    """The exercises directory it comes from: its ``templates/`` and ``solutions/``."""
    points: float = 1.0
    """What it is worth; its checks share the points by weight (``@pytest.mark.weight``)."""
    stretch: bool = False
    """A stretch exercise is shown and checked but not needed for the course to be done: extra credit."""
    held_out: tuple[Path, ...] = ()
    """The teacher's held-out pytest files, run only by ``vjpgrad course grade`` (the copy of the
    directory handed to students lacks them: only ``grade`` needs them to be there)."""
    teachers: bool = False
    """Whether it comes from a teacher's directory (then its hint is the teacher's)."""
    kept: tuple[Path, ...] = ()
    """The teacher's folders of its course, which no student's process may read (``grading``): the
    teacher's exercises folder and the folder of every held-out check of the course, whichever
    exercise runs (a built-in one too)."""

    @property
    def label(self) -> str:
        """The title, marked when the exercise is a stretch."""
        return self.title + (" (stretch)" if self.stretch else "")

    @property
    def heading(self) -> str:
        return f"{self.number}. {self.label}"

    def template(self, name: str) -> Path:
        return self.home / "templates" / name

    def solution(self, name: str) -> Path:
        return self.home / "solutions" / name


def folder(name: str) -> Path:
    """One of the package's data folders: ``templates``, ``checks`` or ``solutions``.

    A path on disk, not an importlib resource: pytest runs the checks as files."""
    return Path(__file__).resolve().parent / name


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file as a dict; ``ExercisesError`` naming the file when it is missing or not TOML."""
    try:
        return _toml.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ExercisesError(f"cannot read {path}: {error.strerror}") from None
    except _toml.TOMLError as error:
        raise ExercisesError(f"{path}: {error}") from None


# ---- reading an exercises directory -----------------------------------------------------------------


def _field(entry: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str, default: Any = None) -> Any:
    value = entry.get(key, default)
    if value is None:
        raise ExercisesError(f"{where} has no {key}")
    if not isinstance(value, kind) or isinstance(value, bool) is not (kind is bool):
        raise ExercisesError(f"{where}: {key} = {value!r} is not {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", list: "a list of strings", bool: "true or false", int: "a number"}
    return names.get(kind, "a number") if isinstance(kind, type) else "a number"


def _names(entry: dict[str, Any], key: str, where: str, default: list[str] | None = None) -> tuple[str, ...]:
    values = _field(entry, key, list, where, default)
    if not all(isinstance(v, str) and v for v in values):
        raise ExercisesError(f"{where}: {key} = {values!r} is not a list of names")
    return tuple(values)


def _existing(directory: Path, relative: str, where: str) -> Path:
    path = (directory / relative).resolve()
    if not path.is_file():
        raise ExercisesError(f"{where}: there is no file {path}")
    return path


KNOWN_KEYS = {"slug", "title", "files", "parts", "check", "held_out", "points", "hint", "stretch"}


def _exercise(entry: Any, number: int, directory: Path, teachers: bool) -> Exercise:
    where = f"{directory / EXERCISES_FILE}, exercise {number}"
    if not isinstance(entry, dict):
        raise ExercisesError(f"{where} is not a table")
    unknown = sorted(set(entry) - KNOWN_KEYS)
    if unknown:
        raise ExercisesError(f"{where}: unknown key {unknown[0]} (the keys are {', '.join(sorted(KNOWN_KEYS))})")
    slug = _field(entry, "slug", str, where)
    if not SLUG.fullmatch(slug):
        raise ExercisesError(f"{where}: slug {slug!r} must be lower-case letters, digits and -")
    files = _names(entry, "files", where)
    for name in files:
        _existing(directory, f"templates/{name}", where)
    points = _field(entry, "points", (int, float), where, 1)
    if not math.isfinite(points):
        raise ExercisesError(f"{where}: points = {points} is not a finite number")
    if points < 0:
        raise ExercisesError(f"{where}: points = {points} is negative")
    held_out = entry.get("held_out", [])
    held_out = [held_out] if isinstance(held_out, str) else held_out
    check = _existing(directory, _field(entry, "check", str, where), where)
    return Exercise(
        number, slug, _field(entry, "title", str, where), files, _names(entry, "parts", where, []),
        " ".join(_field(entry, "hint", str, where, "").split()), check, directory, float(points),
        _field(entry, "stretch", bool, where, False), tuple((directory / p).resolve() for p in held_out), teachers,
    )  # fmt: skip


def load(directory: Path, first: int = 1, teachers: bool = False) -> tuple[Exercise, ...]:
    """The exercises of ``directory``'s ``exercises.toml``, numbered from ``first`` in their order."""
    directory = directory.resolve()
    document = read_toml(directory / EXERCISES_FILE)
    entries = document.get("exercise", [])
    if not isinstance(entries, list):
        raise ExercisesError(f"{directory / EXERCISES_FILE}: exercise must be an array of tables, [[exercise]]")
    return tuple(_exercise(entry, first + k, directory, teachers) for k, entry in enumerate(entries))


@functools.cache
def builtin() -> tuple[Exercise, ...]:
    """The built-in exercises, from this package's exercises.toml: read when first asked for, so that
    importing the course (the command line does) reads no TOML (Python 3.10 reads it with tomli, an extra)."""
    return load(Path(__file__).resolve().parent)


def __getattr__(name: str) -> tuple[Exercise, ...]:
    """``BUILTIN`` (and ``EXERCISES``, the same): the built-in exercises, ``builtin()``."""
    if name in ("BUILTIN", "EXERCISES"):
        return builtin()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- a course: the built-in exercises and a teacher's ---------------------------------------------------


@dataclass(frozen=True)
class Course:
    """The exercises of one course, in order, and the teacher's hints for built-in ones (by slug)."""

    exercises: tuple[Exercise, ...] = field(default_factory=builtin)
    teacher_hints: dict[str, str] = field(default_factory=dict)

    def exercise(self, number: int) -> Exercise:
        """The exercise numbered ``number``; ``ValueError`` naming the range when there is none."""
        for ex in self.exercises:
            if ex.number == number:
                return ex
        raise ValueError(
            f"there is no exercise {number}: they are numbered 1 to {len(self.exercises)} (vjpgrad course list)"
        )

    def student_files(self) -> dict[str, Path]:
        """Every file ``init`` writes, in the order the exercises need them, with its template."""
        return {name: ex.template(name) for ex in self.exercises for name in ex.files}

    def hint(self, ex: Exercise, class_mode: bool) -> str | None:
        """The hint a student may read: in class mode only the teacher's."""
        if ex.teachers or not class_mode:
            return self.teacher_hints.get(ex.slug) or ex.hint or None
        return self.teacher_hints.get(ex.slug)


def _by_slug(document: dict[str, Any], key: str, slugs: set[str], where: Path) -> dict[str, Any]:
    table = document.get(key, {})
    if not isinstance(table, dict):
        raise ExercisesError(f"{where}: [{key}] must be a table of exercise slugs")
    unknown = sorted(set(table) - slugs)
    if unknown:
        raise ExercisesError(
            f"{where}: [{key}] names {unknown[0]}, which is not a built-in exercise's slug"
            + ("" if slugs else " (builtin = false: there are none)")
        )
    return table


def course(teacher: Path | None = None) -> Course:
    """The course: the built-in exercises, then those of the teacher's directory ``teacher`` (or only
    those, when its exercises.toml says ``builtin = false``), with its held-out checks and hints."""
    if teacher is None:
        return Course()
    teacher = teacher.resolve()
    where = teacher / EXERCISES_FILE
    document = read_toml(where)
    with_builtin = _field(document, "builtin", bool, str(where), True)
    builtins = builtin() if with_builtin else ()
    slugs = {ex.slug for ex in builtins}
    own = load(teacher, first=len(builtins) + 1, teachers=True)
    clash = sorted({ex.slug for ex in own} & slugs)
    if clash:
        raise ExercisesError(f"{where}: the slug {clash[0]} is a built-in exercise's already")
    kept = teacher / HELD_OUT_FILE
    kept_apart = read_toml(kept) if kept.is_file() else {}
    held_out = {
        **_by_slug(document, "held_out", slugs, where),
        **_by_slug({"held_out": kept_apart}, "held_out", slugs | {ex.slug for ex in own}, kept),
    }
    hints = _by_slug(document, "hints", slugs, where)
    first = [_with_held_out(ex, held_out.get(ex.slug), teacher) for ex in builtins]
    own = tuple(_with_held_out(ex, held_out.get(ex.slug), teacher) for ex in own)
    folders = (teacher, *sorted({path.parent for ex in (*first, *own) for path in ex.held_out} - {teacher}))
    exercises = tuple(Exercise(**{**ex.__dict__, "kept": folders}) for ex in (*first, *own))
    return Course(exercises, {slug: " ".join(str(text).split()) for slug, text in hints.items()})


def _with_held_out(ex: Exercise, files: Any, teacher: Path) -> Exercise:
    if files is None:
        return ex
    paths = [files] if isinstance(files, str) else files
    more = tuple((teacher / str(p)).resolve() for p in paths)
    return Exercise(**{**ex.__dict__, "held_out": (*ex.held_out, *(p for p in more if p not in ex.held_out))})


def exercise(number: int) -> Exercise:
    """The built-in exercise numbered ``number``; ``ValueError`` naming the range when there is none."""
    return Course().exercise(number)


def student_files() -> tuple[str, ...]:
    """Every file ``init`` writes for the built-in course, in the order the exercises need them."""
    return tuple(Course().student_files())
