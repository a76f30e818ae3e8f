"""``vjpgrad course init | check | hint | list | solution | grade | test-exercise | autograder``: the
course's command line.

Every problem with the input (a missing directory, an unknown exercise, pytest not installed, a
teacher's exercises directory that cannot be read) is one line on stderr and exit status 2, never a
traceback, before anything is written. ``check`` exits 0 only when every exercise checked is done, 1
otherwise; ``grade`` exits 0 when every directory was graded, whatever the scores.
"""

from __future__ import annotations

import argparse
import ast
import glob
import importlib.util
import json
import os
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from vjpgrad.course import config
from vjpgrad.course.exercises import Course, Exercise, ExercisesError, course

if TYPE_CHECKING:
    from vjpgrad.course import grading

PROGRAM = "vjpgrad course"


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


EPILOG = f"""\
start:
  {PROGRAM} init mycourse      write the exercises' files into mycourse/
  cd mycourse
  {PROGRAM} check              the scoreboard, and what to do next
  {PROGRAM} check . 2          exercise 2 alone
  {PROGRAM} hint 2             a hint for exercise 2, when you are stuck
teach:
  {PROGRAM} init DIR --class   a class's directory: no reference solutions, only your hints
  {PROGRAM} grade DIR... --out OUT   grade submissions: OUT/grades.csv, OUT/<name>/results.json
  {PROGRAM} grade DIR --out OUT --exercise 3   grade one exercise again (the rest is kept)
  {PROGRAM} test-exercise EXERCISES   your exercises' solutions pass, their skeletons fail
  {PROGRAM} autograder --out autograder.zip   a Gradescope bundle of your course
"""


def _exercises_option(parser: argparse.ArgumentParser, grading: bool = False) -> None:
    said = "with its held-out checks (default: the built-in exercises alone)" if grading else "(default: course.toml's)"
    parser.add_argument("--exercises", metavar="DIR", help=f"a teacher's exercises directory {said}")


def _running_options(parser: argparse.ArgumentParser, grading: bool = False) -> None:
    from vjpgrad.course.grading import TIMEOUT

    parser.add_argument(
        "--timeout", type=float, default=TIMEOUT, metavar="SECONDS",
        help=f"stop an exercise's checks after SECONDS of CPU ({TIMEOUT:g})",
    )  # fmt: skip
    parser.add_argument("--jobs", type=int, default=None, metavar="N", help="check N exercises at once (the cores)")
    _exercises_option(parser, grading)


def _parser() -> _Parser:
    parser = _Parser(
        prog=PROGRAM,
        description="Build your own reverse-mode autodiff engine, exercise by exercise, checked against vjpgrad.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    init = commands.add_parser("init", help="write the student's files into DIR (never overwrites one)")
    init.add_argument("directory", metavar="DIR")
    init.add_argument(
        "--class",
        dest="class_mode",
        action="store_true",
        help="class mode: no reference solutions; hint shows only the teacher's hints",
    )
    _exercises_option(init)
    check = commands.add_parser("check", help="check the exercises in DIR (default: here) and show the scoreboard")
    check.add_argument(
        "where",
        nargs="*",
        metavar="[DIR] [N]",
        help="the directory (default: here), then an exercise (a lone number is N)",
    )
    check.add_argument("--json", action="store_true", help="print the results as JSON, for an autograder")
    _running_options(check)
    hint = commands.add_parser("hint", help="a hint for exercise N")
    hint.add_argument("number", metavar="N")
    _exercises_option(hint)
    _exercises_option(commands.add_parser("list", help="the exercises, in order"))
    solution = commands.add_parser("solution", help="the reference solution of exercise N (asks first; self-study)")
    solution.add_argument("number", metavar="N")
    solution.add_argument("--yes", action="store_true", help="do not ask")
    _exercises_option(solution)
    grade = commands.add_parser("grade", help="grade submissions into OUT/grades.csv and OUT/<name>/results.json")
    grade.add_argument("directories", nargs="+", metavar="DIR", help="the submissions (a quoted glob is expanded)")
    grade.add_argument(
        "--out", required=True, metavar="OUT",
        help="where to write grades.csv and the results (merged into what is there: a directory graded again "
        "replaces only its row)",
    )  # fmt: skip
    grade.add_argument("--exercise", metavar="N", help="grade exercise N alone (the others' results are kept)")
    grade.add_argument(
        "--independent", action="store_true",
        help="grade each exercise on the reference solution of the earlier ones it runs on (the engine): "
        "one bug costs once",
    )  # fmt: skip
    _running_options(grade, grading=True)
    bundle = commands.add_parser("autograder", help="write a Gradescope autograder bundle (a zip) for your course")
    bundle.add_argument("--out", required=True, metavar="FILE.zip", help="the bundle to write")
    bundle.add_argument(
        "--exercises", metavar="DIR", help="your exercises directory, held-out checks included (default: course.toml's)"
    )
    tester = commands.add_parser(
        "test-exercise", help="check a teacher's exercises: their solution passes every check, their skeleton none"
    )
    tester.add_argument("directory", metavar="DIR", help="the teacher's exercises directory")
    tester.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS", help="as for check")
    tester.add_argument("--jobs", type=int, default=None, metavar="N", help="as for check")
    return parser


IN_A_BROWSER = (
    "(in the browser there is no terminal: where this says vjpgrad course check mycourse 1, run "
    'main(["check", "mycourse", "1"]) in a cell, and so for every command)'
)
"""What every command says last in a browser (JupyterLite), whose messages name commands as typed in a terminal."""


def in_a_browser() -> bool:
    """Whether the course runs in a browser (Pyodide), where there is no terminal."""
    return sys.platform == "emscripten"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``vjpgrad course ...`` with ``argv`` (the words after ``course``); returns the exit status.
    In a browser, the last line says how the commands its messages name are run there."""
    try:
        return _main(argv)
    finally:
        if in_a_browser():
            print(IN_A_BROWSER)


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.command is None:
            print(parser.format_help())
            return 0
        run: Callable[[argparse.Namespace], int] = COMMANDS[args.command]
        return run(args)
    except (CourseError, ExercisesError) as error:  # ExercisesError: the built-in exercises, read when first used
        print(f"{PROGRAM}: error: {error}", file=sys.stderr)
        return 2


def settings_and_course(where: Path, exercises: str | None) -> tuple[config.Settings, Course]:
    """The course directory ``where``'s settings (its course.toml), and its course: the built-in
    exercises, with the teacher's directory ``exercises`` (the option) or course.toml's."""
    try:
        settings = config.read(where)
        teacher = Path(exercises) if exercises is not None else settings.exercises
        if teacher is not None and not (teacher / "exercises.toml").is_file():
            raise CourseError(f"{teacher} is not an exercises directory: it has no exercises.toml")
        return settings, course(teacher)
    except ExercisesError as error:
        raise CourseError(str(error)) from None


def _number(text: str, of: Course) -> Exercise:
    try:
        n = int(text)
    except ValueError:
        raise CourseError(f"N must be an exercise number, got {text!r} ({PROGRAM} list shows them)") from None
    try:
        return of.exercise(n)
    except ValueError as error:
        raise CourseError(str(error)) from None


# ---- init ---------------------------------------------------------------------------------------------


def readme(of: Course, class_mode: bool) -> str:
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
        *([] if class_mode else [f"{PROGRAM} hint 2         # when you are stuck"]),
        "```",
        "",
        "| # | exercise | file |",
        "|---|---|---|",
    ]
    lines += [f"| {ex.number} | {ex.label} | {', '.join(ex.files)} |" for ex in of.exercises]
    return "\n".join(lines) + "\n"


NUMBER = "{{number}}"
"""What a teacher's template writes for its exercise's number, which depends on the course it is in
(after the built-in twelve, or alone): ``raise NotImplementedError("exercise {{number}}: write sigmoid")``."""


def student_file(template: Path, class_mode: bool, number: int) -> str:
    """A student's file as ``init`` writes it: its skeleton, ``{{number}}`` its first exercise's
    number; in class mode without the lines that send the student to ``hint`` (a class has only the
    teacher's hints)."""
    text = template.read_text(encoding="utf-8").replace(NUMBER, str(number))
    if not class_mode:
        return text
    return "".join(line for line in text.splitlines(keepends=True) if f"{PROGRAM} hint" not in line)


def _write_new(target: Path, text: str) -> bool:
    """Write ``text`` to ``target`` unless there is a file there already; whether it was written."""
    try:
        with target.open("x", encoding="utf-8") as stream:  # "x": fails on a file that is there
            stream.write(text)
    except FileExistsError:
        return False
    except OSError as error:
        raise CourseError(f"cannot write {target}: {error.strerror}") from None
    return True


def _recorded(exercises: Path, directory: Path) -> str:
    """How course.toml names the teacher's exercises directory: relative to ``directory`` when it is
    inside it (a template repository that carries it), else its absolute path."""
    exercises, directory = exercises.resolve(), directory.resolve()
    inside = exercises == directory or directory in exercises.parents
    return os.path.relpath(exercises, directory) if inside else str(exercises)


def _init_files(directory: Path, args: argparse.Namespace) -> dict[str, str]:
    """The files ``init`` writes: the students', README.md, and course.toml when a setting is asked for."""
    _, of = settings_and_course(directory, args.exercises)
    numbers = {name: ex.number for ex in reversed(of.exercises) for name in ex.files}  # each file's first
    files = {name: student_file(path, args.class_mode, numbers[name]) for name, path in of.student_files().items()}
    files["README.md"] = readme(of, args.class_mode)
    if args.class_mode or args.exercises is not None:
        teacher = None if args.exercises is None else _recorded(Path(args.exercises), directory)
        files[config.CONFIG_FILE] = config.text(config.CLASS if args.class_mode else config.SELF_STUDY, teacher)
    return files


def init(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    if directory.exists() and not directory.is_dir():
        raise CourseError(f"{directory} is a file, not a directory")
    files = _init_files(directory, args)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CourseError(f"cannot make {directory}: {error.strerror}") from None
    lines, wrote = [], 0
    for name, text in files.items():
        if _write_new(directory / name, text):
            wrote += 1
            lines.append(f"  wrote {name}")
        else:
            lines.append(f"  kept  {name} (it is there already: init never overwrites a file)")
    written = f"{wrote} file{'' if wrote == 1 else 's'} written"
    print(f"{PROGRAM}: {directory}, {written}" + (" (class mode)" if args.class_mode else ""))
    print("\n".join(lines))
    print(f"\nNext: cd {directory} and run {PROGRAM} check")
    return 0


# ---- check -------------------------------------------------------------------------------------------


def _where(words: list[str]) -> tuple[Path, str | None]:
    """``[DIR] [N]``: a last word of digits is N; a word before it, or a lone other word, is DIR."""
    if len(words) > 2:
        raise CourseError(f"check takes at most a directory and an exercise number, got {' '.join(words)}")
    number = words.pop() if words and words[-1].isdigit() else None
    if len(words) == 2:  # a directory, then what is not an exercise's number
        raise CourseError(f"the exercise to check is a number, got {words[1]} (check [DIR] [N])")
    directory = Path(words[0]) if words else Path()
    return directory, number


def _needs_pytest(command: str) -> None:
    missing = [name for name in ("pytest", "hypothesis") if importlib.util.find_spec(name) is None]
    if missing:
        raise CourseError(f"{PROGRAM} {command} needs {' and '.join(missing)}: {install_hint(missing)}")


def _running(args: argparse.Namespace) -> None:
    from vjpgrad.course.grading import TIMEOUT_LIMIT

    if not args.timeout > 0:  # nan too
        raise CourseError(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    if args.timeout > TIMEOUT_LIMIT:
        raise CourseError(f"--timeout must be at most {TIMEOUT_LIMIT:g} seconds (a day), got {args.timeout:g}")
    if args.jobs is not None and args.jobs < 1:
        raise CourseError(f"--jobs must be at least 1, got {args.jobs}")


def check(args: argparse.Namespace) -> int:
    directory, number = _where(list(args.where))
    if not directory.is_dir():
        raise CourseError(f"no directory {directory}: make the course's files with {PROGRAM} init {directory}")
    settings, of = settings_and_course(directory, args.exercises)
    only = None if number is None else _number(number, of)
    if not any((directory / name).is_file() for name in of.student_files()):
        raise CourseError(f"{directory} has none of the course's files: write them with {PROGRAM} init {directory}")
    _needs_pytest("check")
    _running(args)
    from vjpgrad.course import grading, inprocess

    exercises = list(of.exercises) if only is None else [only]
    run = inprocess.run if inprocess.wanted() else grading.run  # in a browser: no processes to start
    results = run(
        directory.resolve(), exercises, args.timeout, args.jobs, class_mode=settings.class_mode,
        known_as=str(directory), more_time=grading.CHECK,
    )  # fmt: skip
    grading.note_dependencies(results, of)
    hints = {ex.number: of.hint(ex, settings.class_mode) for ex in exercises}
    if args.json:
        print(json.dumps(grading.as_json(results, directory.resolve(), hints), indent=2))
    else:
        command = f"{PROGRAM} check" + ("" if directory == Path() else f" {directory}")
        hinted = [n for n, text in hints.items() if text]
        print(grading.scoreboard(results, directory.resolve(), command, hinted, of.exercises))
    return 0 if grading.all_done(results, stretch_counts=only is not None) else 1


# ---- hint, list, solution ------------------------------------------------------------------------------


def hint(args: argparse.Namespace) -> int:
    settings, of = settings_and_course(Path(), args.exercises)
    ex = _number(args.number, of)
    text = of.hint(ex, settings.class_mode)
    print(f"Exercise {ex.heading} ({', '.join(ex.files)})\n")
    if text is None:
        print(f"This is a class (see {settings.path}): exercise {ex.number} has no hint from your teacher. Ask them.")
        return 0
    print(textwrap.fill(text, 96))
    return 0


def list_exercises(args: argparse.Namespace) -> int:
    _, of = settings_and_course(Path(), args.exercises)
    width = max(len(", ".join(ex.files)) for ex in of.exercises)
    for ex in of.exercises:
        print(f"{ex.number:>3}  {', '.join(ex.files):<{width}}  {ex.label}")
    return 0


def solution_text(ex: Exercise) -> str:
    """The reference solution's parts that exercise ``ex`` asks for (the whole file when it names none)."""
    name = ex.files[0]
    path = ex.solution(name)
    if not path.is_file():
        raise CourseError(f"exercise {ex.number} has no reference solution ({path} is not there)")
    source = path.read_text(encoding="utf-8")
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


def _asked(ex: Exercise) -> bool:
    question = (
        f"The reference solution of exercise {ex.number} gives the answer away; "
        f"a hint ({PROGRAM} hint {ex.number}) may be enough. Show it? [y/N] "
    )
    print(question, end="", flush=True)
    try:
        answer = input()
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def solution(args: argparse.Namespace) -> int:
    settings, of = settings_and_course(Path(), args.exercises)
    if settings.class_mode:
        raise CourseError(f'this is a class ({settings.path} says mode = "class"): there are no solutions to show')
    ex = _number(args.number, of)
    text = solution_text(ex)
    if not args.yes and not _asked(ex):
        print("Not shown.")
        return 0
    print(text)
    return 0


# ---- grade ---------------------------------------------------------------------------------------------


def to_grade(words: Sequence[str], out: Path) -> tuple[list[Path], list[Path]]:
    """The directories to grade: each word a directory, or a glob (quoted, so the shell left it) of
    them; and those left out, the ``out`` folder and any inside it (``grade 'subs/*' --out
    subs/out`` run again matches the gradebook's own folder: where grades are written, never a
    student's)."""
    from vjpgrad.course import gradebook

    found: list[Path] = []
    for word in words:
        matches = [word] if Path(word).exists() or not glob.has_magic(word) else sorted(glob.glob(word))
        if not matches:
            raise CourseError(f"no directory matches {word}")
        found += [Path(match) for match in matches if Path(match).is_dir() or match == word]
    written = out.resolve()
    left_out = [d for d in found if d.resolve() == written or written in d.resolve().parents]
    found = [d for d in found if d not in left_out]
    if not found:
        raise CourseError(f"no directory to grade: {', '.join(map(str, left_out))} is --out, where grades are written")
    return _submissions(found, gradebook.GRADES), left_out


def _submissions(found: list[Path], grades: str) -> list[Path]:
    """``found``, checked: each a directory, none named as the gradebook (``grades``), no two of one name."""
    for directory in found:
        if not directory.is_dir():
            raise CourseError(f"{directory} is not a directory: grade takes the students' course directories")
        if directory.is_symlink() and directory.resolve().name != Path(os.path.abspath(directory)).name:
            raise CourseError(
                f"{directory} is a symbolic link to {directory.resolve()}: its row would be "
                f"{directory.resolve().name}'s; grade the folder itself, or give it a name of its own"
            )
    names: dict[str, Path] = {}
    for directory in found:
        name = directory.resolve().name
        if name == grades:
            raise CourseError(f"{directory} is named as the gradebook, {grades}: rename it")
        if name in names and names[name].resolve() != directory.resolve():
            raise CourseError(f"{names[name]} and {directory} have the same name, {name}: rename one")
        names[name] = directory
    return [directory.resolve() for directory in names.values()]


def grade(args: argparse.Namespace) -> int:
    from vjpgrad.course import gradebook, grading

    out = Path(args.out)
    directories, left_out = to_grade(args.directories, out)
    if out.exists() and not out.is_dir():
        raise CourseError(f"--out {out} is a file, not a directory")
    teacher = _teachers_exercises(args.exercises, directories)
    if teacher is not None and not (teacher / "exercises.toml").is_file():
        raise CourseError(f"{teacher} is not an exercises directory: it has no exercises.toml")
    try:
        of = course(teacher)  # the teacher's, never a submission's course.toml
    except ExercisesError as error:
        raise CourseError(str(error)) from None
    only = None if args.exercise is None else [_number(args.exercise, of)]
    missing = next((path for ex in only or of.exercises for path in ex.held_out if not path.is_file()), None)
    if missing is not None:
        raise CourseError(f"the held-out check {missing} is not there (grade with the teacher's copy of {teacher})")
    _needs_pytest("grade")
    _running(args)
    refused = grading.scratch_refused()
    if refused is not None:
        raise CourseError(refused)
    notice = as_root(os.geteuid() if hasattr(os, "geteuid") else None)
    if notice is not None:
        print(notice, file=sys.stderr)
    try:
        gradebook.check_out(out, of, [directory.name for directory in directories], directories)
    except gradebook.GradebookError as error:
        raise CourseError(str(error)) from None
    for directory in left_out:
        print(f"{PROGRAM}: {directory} is not graded: it is --out, where grades are written", file=sys.stderr)
    started = time.perf_counter()
    graded = gradebook.grade(directories, of, args.timeout, args.jobs, only, args.independent, out=out)
    try:
        text = gradebook.write(out, of, graded, {directory.name: directory for directory in directories})
    except gradebook.GradebookError as error:  # a run beside this one wrote another folder's row of a name
        raise CourseError(str(error)) from None
    seconds = time.perf_counter() - started
    print(text, end="")
    print(f"\n{PROGRAM}: graded {len(graded)} directories in {seconds:.1f} s: {out / 'grades.csv'}, "
          f"{out / '<name>' / 'results.json'}")  # fmt: skip
    return 0


def as_root(euid: int | None) -> str | None:
    """The one line ``grade`` prints when it runs as root (``euid`` 0): the students' code then runs as
    root too (``grade`` has no ``--user``), and no boundary but the student's process's audit hook
    (``guard``) stands between it and the grader; None for any other user, or where there are none."""
    if euid != 0:
        return None
    return (
        f"{PROGRAM}: grading as root runs the students' code as root: marks to be trusted need another user "
        "(the autograder's --user, as the Gradescope bundle runs it)"
    )


def _teachers_exercises(option: str | None, graded: Sequence[Path] = ()) -> Path | None:
    """The teacher's exercises directory: ``--exercises``, else the one the course.toml of the
    directory ``grade`` runs in names (a class template's), else none (the built-in exercises).
    Where that directory is, or lies in, one of the submissions ``graded``, its course.toml is the
    student's: refused, never read."""
    if option is not None:
        return Path(option)
    found = config.find(Path().resolve())  # the course.toml of the folder grade runs in, or of one above it
    inside = None if found is None else next((d for d in graded if d in found.resolve().parents), None)
    if inside is not None:
        raise CourseError(
            f"grade runs in {inside}, a submission it grades: its course.toml is the student's, which grade never "
            "reads; run it from your class folder, or name your exercises with --exercises DIR"
        )
    try:
        return config.read(Path()).exercises
    except ExercisesError as error:
        raise CourseError(str(error)) from None


# ---- test-exercise -------------------------------------------------------------------------------------


def _teachers_course(directory: Path) -> Course:
    if not (directory / "exercises.toml").is_file():
        raise CourseError(f"{directory} is not an exercises directory: it has no exercises.toml")
    try:
        of = course(directory)
    except ExercisesError as error:
        raise CourseError(str(error)) from None
    own = [ex for ex in of.exercises if ex.teachers]
    if not own:
        raise CourseError(f"{directory / 'exercises.toml'} has no [[exercise]] of its own to test")
    for ex in own:
        for name in ex.files:
            if not ex.solution(name).is_file():
                raise CourseError(f"exercise {ex.number} has no solution to test: {ex.solution(name)} is not there")
        missing = next((path for path in ex.held_out if not path.is_file()), None)
        if missing is not None:
            raise CourseError(f"the held-out check {missing} is not there")
    return of


def test_exercise(args: argparse.Namespace) -> int:
    """Each of the teacher's exercises, checked (held-out checks included) on the reference
    solutions (every check must pass) and on its own skeleton among them (every check must fail)."""
    import shutil
    import tempfile

    from vjpgrad.course import grading
    from vjpgrad.course.exercises import folder

    directory = Path(args.directory)
    of = _teachers_course(directory)
    _needs_pytest("test-exercise")
    _running(args)
    own = [ex for ex in of.exercises if ex.teachers]
    numbers = {name: ex.number for ex in reversed(of.exercises) for name in ex.files}
    with tempfile.TemporaryDirectory(prefix="vjpgrad-test-exercise-") as scratch:
        solved = Path(scratch) / "solved"
        shutil.copytree(folder("solutions"), solved)
        for ex in own:
            for name in ex.files:
                shutil.copyfile(ex.solution(name), solved / name)
        work = [(solved, ex) for ex in own]
        for ex in own:
            skeleton = Path(scratch) / f"skeleton-{ex.number}"
            shutil.copytree(solved, skeleton)
            for name in ex.files:
                (skeleton / name).write_text(student_file(ex.template(name), False, numbers[name]), encoding="utf-8")
            work.append((skeleton, ex))
        results = grading.run_many(work, args.timeout, args.jobs, held_out=True, more_time=grading.CHECK)
    good = [
        _tested(ex, on_solution, on_skeleton)
        for ex, on_solution, on_skeleton in zip(own, results[: len(own)], results[len(own) :], strict=True)
    ]
    return 0 if all(good) else 1


def _tested(ex: Exercise, on_solution: grading.ExerciseResult, on_skeleton: grading.ExerciseResult) -> bool:
    """Prints what ``test-exercise`` found for one exercise; whether it is good (every check passes on
    the solution, none on the skeleton)."""
    from vjpgrad.course import grading

    failing = [t for t in on_solution.tests if t.outcome != grading.PASSED]
    passing = [t for t in on_skeleton.tests if t.outcome == grading.PASSED]
    print(
        f"{ex.heading}: the solution passes {on_solution.passed} of {len(on_solution.tests)} checks, "
        f"the skeleton {on_skeleton.passed} of {len(on_skeleton.tests)}" + ("" if failing or passing else ": good")
    )
    for t in failing:
        print(f"  on the solution, {t.outcome}: {t.sentence}\n" + textwrap.indent(t.message, "    "))
    for t in passing:
        print(f"  passes on the skeleton (it checks nothing the student writes): {t.sentence}")
    return not failing and not passing


# ---- autograder ----------------------------------------------------------------------------------------


def autograder(args: argparse.Namespace) -> int:
    from vjpgrad.course import autograder as gradescope

    out = Path(args.out)
    if out.suffix != ".zip":
        raise CourseError(f"--out {out} must name a .zip file (Gradescope takes the bundle as a zip)")
    if out.is_dir():
        raise CourseError(f"--out {out} is a directory, not a file")
    if not out.parent.is_dir():
        raise CourseError(f"--out {out}: there is no directory {out.parent} to write it in")
    teacher = _teachers_exercises(args.exercises)
    if teacher is not None:
        if not (teacher / "exercises.toml").is_file():
            raise CourseError(f"{teacher} is not an exercises directory: it has no exercises.toml")
        try:
            of = course(teacher)
        except ExercisesError as error:
            raise CourseError(str(error)) from None
        missing = next((path for ex in of.exercises for path in ex.held_out if not path.is_file()), None)
        if missing is not None:
            raise CourseError(f"the held-out check {missing} is not there (bundle your own copy of {teacher})")
    try:
        names = gradescope.bundle(out, None if teacher is None else teacher.resolve())
    except gradescope.BundleError as error:
        raise CourseError(str(error)) from None
    print(f"{PROGRAM}: wrote {out} ({len(names)} files): upload it as the assignment's autograder on Gradescope")
    for name in names:
        print(f"  {name}")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "autograder": autograder,
    "test-exercise": test_exercise,
    "init": init,
    "check": check,
    "hint": hint,
    "list": list_exercises,
    "solution": solution,
    "grade": grade,
}
