"""The course's two modes and its files: self-study and class (course.toml), a teacher's exercises
directory (exercises.toml), and how both are read and written."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from vjpgrad.course import _toml, config, exercises, main
from vjpgrad.course.exercises import BUILTIN, EXERCISES_FILE, ExercisesError, course, exercise, folder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "course" / "example-exercises"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_line_error(result: tuple[int, str, str]) -> str:
    status, out, err = result
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith("vjpgrad course: error: ")
    return err.strip()


# ---- the TOML files ---------------------------------------------------------------------------------------


def course_tomls() -> list[str]:
    """Every TOML text the course reads: the built-in exercises, the worked example, what init writes."""
    texts = [(folder("templates").parent / EXERCISES_FILE).read_text(), (EXAMPLE / EXERCISES_FILE).read_text()]
    for mode in config.MODES:
        texts += [config.text(mode, None), config.text(mode, 'C:\\teacher\'s "exercises"')]
    return texts


@pytest.mark.parametrize("text", course_tomls())
def test_the_python_3_10_reader_reads_every_course_file_as_tomllib_does(text: str) -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib, to compare with, is Python 3.11+")
    pytest.importorskip("tomli", reason="tomli is the course's reader on Python 3.10")
    assert _toml.tomli().loads(text) == tomllib.loads(text) == _toml.loads(text)


@pytest.mark.parametrize(
    "path",
    ["plain", 'C:\\teacher\'s "exercises"', "a\\b\\", 'ends with a quote"', "tab\there", "new\nline", "é ∂ \x7f"],
)
@pytest.mark.parametrize("mode", config.MODES)
def test_what_init_writes_reads_back_as_written(mode: str, path: str) -> None:
    assert _toml.loads(config.text(mode, path)) == {"mode": mode, "exercises": path}
    assert _toml.loads(config.text(mode, None)) == {"mode": mode}


@pytest.mark.parametrize(
    ("text", "line"),
    [('a = "open\n', 1), ("a = 1\na = 2\n", 2), ("a = 1 2\n", 1), ("\na = [1 2]\n", 2), ("a = nope\n", 1)],
)
def test_a_file_that_is_not_toml_is_a_toml_error_naming_the_line(text: str, line: int) -> None:
    with pytest.raises(_toml.TOMLError, match=rf"line {line}\b"):
        _toml.loads(text)


def test_without_tomli_the_3_10_reader_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tomli", None)  # import tomli raises ImportError
    with pytest.raises(_toml.TOMLError, match=r"needs tomli: pip install tomli \(or pip install -e '\.\[course\]'"):
        _toml.tomli()
    monkeypatch.setattr(_toml, "_reader", _toml.tomli)  # Python 3.10's path, on any Python
    with pytest.raises(ExercisesError, match=r"exercises\.toml: reading the course's TOML files on Python 3\.10"):
        course(EXAMPLE)
    exercises.builtin.cache_clear()
    try:
        message = one_line_error(run(capsys, "list"))
    finally:
        monkeypatch.undo()
        exercises.builtin.cache_clear()
    assert "needs tomli: pip install tomli" in message
    assert [ex.slug for ex in exercises.builtin()] == [ex.slug for ex in BUILTIN]


# ---- self-study and class mode ----------------------------------------------------------------------------


def test_init_in_self_study_writes_no_course_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "init", str(tmp_path / "me"))[0] == 0
    assert not (tmp_path / "me" / "course.toml").exists()
    assert "vjpgrad course hint 2" in (tmp_path / "me" / "README.md").read_text()
    assert config.read(tmp_path / "me") == config.Settings()


@pytest.fixture
def classroom(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A class-mode directory made by ``init DIR --class``, as the current directory."""
    status, out, _ = run(capsys, "init", str(tmp_path / "class"), "--class")
    assert status == 0
    assert "(class mode)" in out.splitlines()[0]
    assert "wrote course.toml" in out
    monkeypatch.chdir(tmp_path / "class")
    return tmp_path / "class"


def test_init_class_records_the_mode_in_course_toml(classroom: Path) -> None:
    settings = config.read(classroom)
    assert (settings.mode, settings.exercises, settings.path) == ("class", None, classroom / "course.toml")
    assert config.read(classroom / "deeper" / "still").class_mode  # read from the nearest directory above
    assert "hint" not in (classroom / "README.md").read_text()
    assert "hint" not in (classroom / "engine.py").read_text()  # nor the engine's docstring


def test_a_class_has_no_solution_command(classroom: Path, capsys: pytest.CaptureFixture[str]) -> None:
    message = one_line_error(run(capsys, "solution", "2", "--yes"))
    assert "this is a class" in message
    assert "there are no solutions to show" in message


def test_a_class_shows_no_built_in_hint(classroom: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "hint", "2")
    assert status == 0
    assert "exercise 2 has no hint from your teacher" in out
    assert exercise(2).hint[:30] not in out


def test_self_study_hints_give_the_idea_not_the_code(capsys: pytest.CaptureFixture[str]) -> None:
    for ex in BUILTIN:
        status, out, _ = run(capsys, "hint", str(ex.number))
        assert status == 0
        assert " ".join(out.split()).endswith(" ".join(ex.hint.split()))
    code = ["Value(self.data + other.data", "_backward()", "1 / (1 + |x|)**2", "1 - out.data**2", "k * x**(k - 1)"]
    for fragment in code:
        assert not any(fragment in ex.hint for ex in BUILTIN), fragment


@pytest.mark.slow  # runs the exercises' checks in pytest processes
@pytest.mark.parametrize("mode", ["class", "self-study"])
def test_the_scoreboard_says_how_to_ask_for_a_hint_only_where_there_is_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    directory = tmp_path / "d"
    assert run(capsys, "init", str(directory), *(["--class"] if mode == "class" else []))[0] == 0
    status, out, _ = run(capsys, "check", str(directory), "1")
    assert status == 1
    assert ("Stuck? `vjpgrad course hint 1`" in out) is (mode == "self-study")
    assert exercise(1).hint[:30] not in out.replace("\n", " ")
    report = json.loads(run(capsys, "check", str(directory), "1", "--json")[1])
    assert report["tests"][0]["hint"] == (None if mode == "class" else exercise(1).hint)


def test_a_wrong_course_toml_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(folder("templates"), tmp_path / "d")
    (tmp_path / "d" / "course.toml").write_text('mode = "exam"\n')
    message = one_line_error(run(capsys, "check", str(tmp_path / "d")))
    assert "course.toml: mode = 'exam', expected one of 'self-study', 'class'" in message
    (tmp_path / "d" / "course.toml").write_text('mode = "class"\nhints = "no"\n')
    assert "unknown setting hints" in one_line_error(run(capsys, "check", str(tmp_path / "d")))


# ---- a teacher's exercises directory ----------------------------------------------------------------------------


def test_init_with_a_teachers_exercises_writes_their_files_and_records_the_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    template = tmp_path / "template"
    handout = shutil.ignore_patterns("held_out", "held_out.toml", "solutions")
    shutil.copytree(EXAMPLE, template / "exercises", ignore=handout)
    assert "check_" not in (template / "exercises" / EXERCISES_FILE).read_text().replace("check_sigmoid", "")
    status, out, _ = run(capsys, "init", str(template), "--class", "--exercises", str(template / "exercises"))
    assert status == 0
    assert "wrote sigmoid.py" in out
    assert 'raise NotImplementedError("exercise 13: write sigmoid")' in (template / "sigmoid.py").read_text()
    assert 'exercises = "exercises"' in (template / "course.toml").read_text()  # inside: relative, committable
    monkeypatch.chdir(template)
    status, out, _ = run(capsys, "list")
    assert out.splitlines()[-1].split()[:2] == ["13", "sigmoid.py"]
    status, out, _ = run(capsys, "hint", "2")
    assert "Draw the graph of a * b + a" in out  # the teacher's hint for a built-in exercise
    status, out, _ = run(capsys, "hint", "13")
    assert "sigmoid(x) = 1 / (1 + exp(-x))" in " ".join(out.split())


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (("points = 2", "points = -1"), "points = -1 is negative"),
        (("points = 2", "points = nan"), "points = nan is not a finite number"),
        (("points = 2", "points = inf"), "points = inf is not a finite number"),
        (("points = 2", 'points = "two"'), "points = 'two' is not a number"),
        (('check = "checks/check_sigmoid.py"', 'check = "checks/nothing.py"'), "there is no file"),
        (('slug = "sigmoid"', 'slug = "add-mul"'), "the slug add-mul is a built-in exercise's already"),
        (("add-mul = ", "add_mull = "), "[hints] names add_mull, which is not a built-in exercise's slug"),
        (("points = 2", "points = 2\nweight = 1"), "unknown key weight"),
        (('title = "sigmoid on your engine, from its operations"\n', ""), "exercise 13 has no title"),
    ],
)
def test_a_wrong_exercises_directory_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], said: str
) -> None:
    teacher = tmp_path / "teacher"
    shutil.copytree(EXAMPLE, teacher)
    text = (teacher / EXERCISES_FILE).read_text()
    assert change[0] in text
    (teacher / EXERCISES_FILE).write_text(text.replace(change[0], change[1], 1))
    message = one_line_error(run(capsys, "list", "--exercises", str(teacher)))
    assert str(teacher / EXERCISES_FILE) in message
    assert said in message


def test_a_teacher_may_replace_the_built_in_exercises(tmp_path: Path) -> None:
    teacher = tmp_path / "teacher"
    shutil.copytree(EXAMPLE, teacher)
    text = (teacher / EXERCISES_FILE).read_text().replace("builtin = true", "builtin = false")
    (teacher / EXERCISES_FILE).write_text(text)
    with pytest.raises(ExercisesError, match=r"held_out.toml: \[held_out\] names add-mul, which is not"):
        course(teacher)
    (teacher / "held_out.toml").write_text('sigmoid = "held_out/check_sigmoid.py"\n')
    with pytest.raises(ExercisesError, match=r"\[hints\] names add-mul, .* \(builtin = false: there are none\)"):
        course(teacher)
    (teacher / EXERCISES_FILE).write_text(text[: text.index("[hints]")])
    (only,) = course(teacher).exercises
    assert (only.number, only.slug) == (1, "sigmoid")
