"""``course.toml``: how a course directory is run, chosen by the teacher.

``vjpgrad course init DIR --class`` writes it (a teacher can commit it to a template repository);
``check``, ``hint``, ``list`` and ``solution`` read the one in the directory they work in or the
nearest above it. Two settings:

- ``mode``: ``"self-study"`` (hints when asked, reference solutions after a question) or ``"class"``
  (only the teacher's hints, no ``solution`` command);
- ``exercises``: a teacher's exercises directory, relative to the file (``--exercises`` overrides it).

``vjpgrad course grade`` reads none of this from a submission: a student can edit their copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vjpgrad.course import _toml
from vjpgrad.course.exercises import ExercisesError, read_toml

CONFIG_FILE = "course.toml"
SELF_STUDY, CLASS = "self-study", "class"
MODES = (SELF_STUDY, CLASS)


@dataclass(frozen=True)
class Settings:
    """What a ``course.toml`` says, or the defaults (self-study, the built-in exercises) without one."""

    mode: str = SELF_STUDY
    exercises: Path | None = None
    path: Path | None = None
    """The ``course.toml`` read, if any."""

    @property
    def class_mode(self) -> bool:
        return self.mode == CLASS


def find(start: Path) -> Path | None:
    """The ``course.toml`` of ``start`` or of the nearest directory above it."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if (directory / CONFIG_FILE).is_file():
            return directory / CONFIG_FILE
    return None


def read(start: Path) -> Settings:
    """The settings of the course directory ``start`` (``ExercisesError`` naming a wrong value)."""
    path = find(start)
    if path is None:
        return Settings()
    document = read_toml(path)
    unknown = sorted(set(document) - {"mode", "exercises"})
    if unknown:
        raise ExercisesError(f"{path}: unknown setting {unknown[0]} (the settings are mode and exercises)")
    mode = document.get("mode", SELF_STUDY)
    if mode not in MODES:
        raise ExercisesError(f"{path}: mode = {mode!r}, expected one of {', '.join(repr(m) for m in MODES)}")
    exercises = document.get("exercises")
    if exercises is not None and not isinstance(exercises, str):
        raise ExercisesError(f"{path}: exercises = {exercises!r} is not a path (a string)")
    return Settings(mode, None if exercises is None else (path.parent / exercises).resolve(), path)


def text(mode: str, exercises: str | None) -> str:
    """The ``course.toml`` that ``init`` writes."""
    lines = [
        "# How `vjpgrad course` runs in this directory (docs/course/instructor.md).",
        '# mode: "self-study" (hints when asked, solutions after a question) or "class" (no solutions,',
        "# only the teacher's hints).",
        f"mode = {_toml.string(mode)}",
    ]
    if exercises is not None:
        lines += [
            "# the teacher's exercises directory, relative to this file",
            f"exercises = {_toml.string(exercises)}",
        ]
    return "\n".join(lines) + "\n"
