"""``vjpgrad course init | check | hint | list | solution``: the course's command line.

Every problem with the input (a missing directory, an unknown exercise, pytest not installed) is
one line on stderr and exit status 2, never a traceback. ``check`` exits 0 only when every
exercise checked is done, 1 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from vjpgrad.course.exercises import EXERCISES, Exercise, exercise, folder, student_files

PROGRAM = "vjpgrad course"
TIMEOUT = 600.0


def install_hint(missing: Sequence[str]) -> str:
    """How to install what ``check`` needs: the missing packages by name, or the course extra from
    vjpgrad's clone (vjpgrad is not on PyPI)."""
    return f"pip install {' '.join(missing)} (or pip install -e '.[course]' in your clone of vjpgrad)"


class CourseError(Exception):
    """Bad input to the course's command line: one line on stderr and exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors raised as ``CourseError`` (one line) instead of printed with the usage."""

    def error(self, message: str) -> NoReturn:
        raise CourseError(f"{message} (see {self.prog} --help)")


def _parser() -> _Parser:
    parser = _Parser(
        prog=PROGRAM,
        description="Build your own reverse-mode autodiff engine, exercise by exercise, checked against vjpgrad.",
        epilog=textwrap.dedent(f"""\
            start:
              {PROGRAM} init mycourse      write the exercises' files into mycourse/
              cd mycourse
              {PROGRAM} check              the scoreboard, and what to do next
              {PROGRAM} check . 2          exercise 2 alone
              {PROGRAM} hint 2             a hint for exercise 2
            """),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    init = commands.add_parser("init", help="write the student's files into DIR (never overwrites one)")
    init.add_argument("directory", metavar="DIR")
    check = commands.add_parser("check", help="check the exercises in DIR (default: here) and show the scoreboard")
    check.add_argument(
        "where",
        nargs="*",
        metavar="[DIR] [N]",
        help="the directory (default: here), then an exercise; a lone number is N",
    )
    check.add_argument("--json", action="store_true", help="print the results as JSON, for an autograder")
    check.add_argument(
        "--timeout", type=float, default=TIMEOUT, metavar="SECONDS", help=f"stop the checks after SECONDS ({TIMEOUT:g})"
    )
    hint = commands.add_parser("hint", help="a hint for exercise N")
    hint.add_argument("number", metavar="N")
    commands.add_parser("list", help="the exercises, in order")
    solution = commands.add_parser("solution", help="the reference solution of exercise N (asks first)")
    solution.add_argument("number", metavar="N")
    solution.add_argument("--yes", action="store_true", help="do not ask")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``vjpgrad course ...`` with ``argv`` (the words after ``course``); returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.command is None:
            print(parser.format_help())
            return 0
        run: Callable[[argparse.Namespace], int] = COMMANDS[args.command]
        return run(args)
    except CourseError as error:
        print(f"{PROGRAM}: error: {error}", file=sys.stderr)
        return 2


def _number(text: str) -> Exercise:
    try:
        n = int(text)
    except ValueError:
        raise CourseError(f"N must be an exercise number, got {text!r} ({PROGRAM} list shows them)") from None
    try:
        return exercise(n)
    except ValueError as error:
        raise CourseError(str(error)) from None


# ---- init ---------------------------------------------------------------------------------------------


def readme() -> str:
    """The README.md ``init`` writes: how to work, and the exercises in order."""
    lines = [
        "# Build your own reverse-mode engine",
        "",
        "The vjpgrad course: small exercises, in order. Each file says what to write; each TODO raises",
        "NotImplementedError until you do. Then:",
        "",
        "```bash",
        f"{PROGRAM} check          # the scoreboard: done, failing, not started, and what to do next",
        f"{PROGRAM} check . 2      # exercise 2 alone",
        f"{PROGRAM} hint 2         # when you are stuck",
        "```",
        "",
        "| # | exercise | file |",
        "|---|---|---|",
    ]
    lines += [f"| {ex.number} | {ex.label} | {', '.join(ex.files)} |" for ex in EXERCISES]
    return "\n".join(lines) + "\n"


def init(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    if directory.exists() and not directory.is_dir():
        raise CourseError(f"{directory} is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CourseError(f"cannot make {directory}: {error.strerror}") from None
    templates = folder("templates")
    files = {name: (templates / name).read_text(encoding="utf-8") for name in student_files()}
    files["README.md"] = readme()
    lines, wrote = [], 0
    for name, text in files.items():
        target = directory / name
        try:
            with target.open("x", encoding="utf-8") as stream:  # "x": fails on a file that is there
                stream.write(text)
        except FileExistsError:
            lines.append(f"  kept  {name} (it is there already: init never overwrites a file)")
            continue
        except OSError as error:
            raise CourseError(f"cannot write {target}: {error.strerror}") from None
        wrote += 1
        lines.append(f"  wrote {name}")
    print(f"{PROGRAM}: {directory}, {wrote} files written")
    print("\n".join(lines))
    print(f"\nNext: cd {directory} and run {PROGRAM} check")
    return 0


# ---- check -------------------------------------------------------------------------------------------


def _where(words: list[str]) -> tuple[Path, Exercise | None]:
    """``[DIR] [N]``: a last word of digits is N; a word before it, or a lone other word, is DIR."""
    if len(words) > 2:
        raise CourseError(f"check takes at most a directory and an exercise number, got {' '.join(words)}")
    number = _number(words.pop()) if words and words[-1].isdigit() else None
    directory = Path(words[0]) if words else Path()
    return directory, number


def check(args: argparse.Namespace) -> int:
    directory, only = _where(list(args.where))
    if not directory.is_dir():
        raise CourseError(f"no directory {directory}: make the course's files with {PROGRAM} init {directory}")
    if not any((directory / name).is_file() for name in student_files()):
        raise CourseError(f"{directory} has none of the course's files: write them with {PROGRAM} init {directory}")
    missing = [name for name in ("pytest", "hypothesis") if importlib.util.find_spec(name) is None]
    if missing:
        raise CourseError(f"{PROGRAM} check needs {' and '.join(missing)}: {install_hint(missing)}")
    if args.timeout <= 0:
        raise CourseError(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    from vjpgrad.course import grading

    exercises = list(EXERCISES) if only is None else [only]
    try:
        results = grading.run(directory.resolve(), exercises, args.timeout)
    except grading.CheckError as error:
        raise CourseError(str(error)) from None
    if args.json:
        print(json.dumps(grading.as_json(results, directory.resolve()), indent=2))
    else:
        command = f"{PROGRAM} check" + ("" if directory == Path() else f" {directory}")
        print(grading.scoreboard(results, directory.resolve(), command))
    return 0 if grading.all_done(results, stretch_counts=only is not None) else 1


# ---- hint, list, solution ------------------------------------------------------------------------------


def hint(args: argparse.Namespace) -> int:
    ex = _number(args.number)
    print(f"Exercise {ex.heading} ({', '.join(ex.files)})\n")
    print(textwrap.fill(ex.hint, 96))
    return 0


def list_exercises(args: argparse.Namespace) -> int:
    width = max(len(", ".join(ex.files)) for ex in EXERCISES)
    for ex in EXERCISES:
        print(f"{ex.number:>3}  {', '.join(ex.files):<{width}}  {ex.label}")
    return 0


def solution_text(ex: Exercise) -> str:
    """The reference solution's parts that exercise ``ex`` asks for (the whole file when it names none)."""
    name = ex.files[0]
    source = (folder("solutions") / name).read_text(encoding="utf-8")
    if not ex.parts:
        return f"# {name}\n{source}"
    tree = ast.parse(source)
    docstring = ast.get_docstring(tree)
    pieces = [f'"""{docstring}"""'] if docstring else []
    for part in ex.parts:
        scope: list[ast.stmt] = tree.body
        *owners, last = part.split(".")
        for owner in owners:
            scope = next(n for n in scope if isinstance(n, ast.ClassDef) and n.name == owner).body
        node = next(n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == last)
        segment = ast.get_source_segment(source, node, padded=True)
        assert segment is not None
        pieces.append(f"# {name}, {part}\n{textwrap.dedent(segment)}")
    return "\n\n".join(pieces)


def solution(args: argparse.Namespace) -> int:
    ex = _number(args.number)
    if not args.yes:
        question = (
            f"The reference solution of exercise {ex.number} gives the answer away; "
            f"a hint ({PROGRAM} hint {ex.number}) may be enough. Show it? [y/N] "
        )
        print(question, end="", flush=True)
        try:
            answer = input()
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print("Not shown.")
            return 0
    print(solution_text(ex))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "init": init,
    "check": check,
    "hint": hint,
    "list": list_exercises,
    "solution": solution,
}
