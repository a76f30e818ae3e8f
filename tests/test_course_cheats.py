"""Marks a student cannot forge: each way a submission tried to forge its grade, graded.

Each submission here is a skeleton (or a wrong answer) plus a cheat that once earned marks: a
monkeypatch of the grader's code, lines appended to the grader's report before ``os._exit``, a
``tracemalloc.py`` that stood in for the standard library's, and held-out checks read from the
grading process and raised as an error. None of them may earn a point, and no held-out check's
text may reach what a student sees.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vjpgrad.course import borrowed, gradebook, grading, guard, kernel, remote
from vjpgrad.course.exercises import course, exercise, folder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "course" / "example-exercises"


def skeleton(directory: Path) -> Path:
    shutil.copytree(folder("templates"), directory)
    return directory


def solutions_in(directory: Path) -> Path:
    shutil.copytree(folder("solutions"), directory, dirs_exist_ok=True)
    return directory


def prepend(path: Path, text: str) -> None:
    path.write_text(text + path.read_text())


@contextlib.contextmanager
def students_module(tmp_path: Path, name: str, source: str, number: int = 2) -> Iterator[Any]:
    """The module ``name`` (``source``, beside the skeleton) as exercise ``number``'s student process
    imports it: its functions run there, under the hook, and their exceptions come back."""
    directory = skeleton(tmp_path / "student")
    (directory / f"{name}.py").write_text(source)
    context = grading._processes()
    process, ours = grading._student(context, directory, exercise(number), 60)
    try:
        yield remote.Checks(ours).module(name)
    finally:
        ours.close()
        process.join(10)


@pytest.mark.slow  # a grading run: the student's process and the checks' (seconds)
def test_a_monkeypatch_of_the_graders_classify_earns_nothing(tmp_path: Path) -> None:
    directory = skeleton(tmp_path / "student")
    prepend(
        directory / "engine.py",
        "import sys\n"
        "for _name, _module in list(sys.modules.items()):\n"
        "    if hasattr(_module, 'classify'):\n"
        "        _module.classify = lambda *args, **kwargs: ('passed', '')\n",
    )
    (result,) = grading.run(directory, [exercise(2)], timeout=120)
    assert result.passed == 0
    assert result.score() == 0


def test_lines_appended_to_the_report_before_os_exit_earn_nothing(tmp_path: Path) -> None:
    directory = skeleton(tmp_path / "student")
    prepend(
        directory / "engine.py",
        "import gc, json, os, sys\n"
        "import pytest\n"
        "try:\n"
        "    _session = next((o for o in gc.get_objects() if isinstance(o, pytest.Session)), None)\n"
        "except PermissionError:  # refused in the student's process (guard)\n"
        "    _session = None\n"
        "_ids = [item.nodeid for item in _session.items] if _session else ['check_02_add_mul.py::test_x']\n"
        "_lines = ''.join(\n"
        "    json.dumps({'event': 'start', 'id': nodeid}) + '\\n'\n"
        "    + json.dumps({'event': 'result', 'id': nodeid, 'outcome': 'passed', 'message': '', 'seconds': 0.0})\n"
        "    + '\\n' for nodeid in _ids)\n"
        "_path = _session.config.getoption('--course-report', None) if _session else None\n"
        "if _path:\n"
        "    with open(_path, 'a') as _report:\n"
        "        _report.write(_lines)\n"
        "for _fd in range(3, 64):\n"
        "    try:\n"
        "        os.write(_fd, _lines.encode())\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n",
    )
    (result,) = grading.run(directory, [exercise(2)], timeout=120)
    assert result.passed == 0
    assert result.score() == 0
    assert result.remarks == [f"exercise 2: {grading.TAMPERED}; it scores nothing"]


REPLACE_THE_CHECKS = (
    "import gc, sys\n"
    "def _nothing(*args, **kwargs):\n"
    "    return None\n"
    "try:\n"
    "    _objects = gc.get_objects()\n"
    "except PermissionError:  # refused in the student's process (guard): sys.modules is still there\n"
    "    _objects = []\n"
    "for _o in _objects:\n"
    "    _code = getattr(_o, '__code__', None)\n"
    "    if isinstance(_code, type(_nothing.__code__)) and 'check_' in _code.co_filename:\n"
    "        try:\n"
    "            _o.__code__ = _nothing.__code__\n"
    "        except (ValueError, TypeError):\n"
    "            pass\n"
    "for _module in list(sys.modules.values()):\n"
    "    _twin = getattr(_module, 'Twin', None)\n"
    "    if isinstance(_twin, type):\n"
    "        for _method in ('check_forward', 'check_closures', 'check_backward', 'check_passes'):\n"
    "            setattr(_twin, _method, _nothing)\n"
    "    for _name in ('assert_grad_close', 'classify', 'describe'):\n"
    "        if callable(getattr(_module, _name, None)):\n"
    "            setattr(_module, _name, _nothing)\n"
)
"""A cheat written into a student's file: every function of the checks it can find through the
interpreter's objects made to do nothing (so every check passes where it runs), the checks' helper
class ``Twin`` made to compare nothing, and the functions the checks call replaced."""


@pytest.mark.slow  # a grading run: the student's process and the checks'
def test_checks_replaced_through_the_interpreters_objects_earn_nothing(tmp_path: Path) -> None:
    directory = skeleton(tmp_path / "student")
    prepend(directory / "engine.py", REPLACE_THE_CHECKS)
    (result,) = grading.run(directory, [exercise(2)], timeout=120)
    assert result.passed == 0
    assert result.score() == 0
    assert result.status == grading.NOT_STARTED  # the skeleton's own NotImplementedError, as without the cheat


@pytest.mark.slow  # a grading run: the student's process and the checks'
def test_a_wrong_answer_with_the_checks_functions_replaced_earns_nothing(tmp_path: Path) -> None:
    directory = skeleton(tmp_path / "student")
    (directory / "softmax.py").write_text(
        REPLACE_THE_CHECKS + "\n\ndef softmax_vjp(x, v):\n    return [0.5] * len(x)\n"
    )
    (result,) = grading.run(directory, [exercise(8)], timeout=120)
    outcomes = {t.name: t.outcome for t in result.tests}
    assert outcomes["three_inputs"] == grading.FAILED
    assert outcomes["any_inputs_and_seeds"] == grading.FAILED
    assert "softmax_vjp([1.0, 2.0, 3.0], [0.1, 1.0, 0.0001])" in result.first_problem().message  # type: ignore[union-attr]


@pytest.mark.slow  # a grading run: the student's process and the checks'
def test_the_students_process_holds_nothing_of_the_checks(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "student")
    prepend(
        directory / "engine.py",
        "import gc, sys\n"
        "_found = sorted(name for name in sys.modules if name.startswith('check_') or name == 'vjpgrad.course.twins')\n"
        "try:\n"
        "    _objects = gc.get_objects()\n"
        "except PermissionError:  # refused in the student's process (guard)\n"
        "    _objects = []\n"
        "_found += sorted({type(o).__name__ for o in _objects if type(o).__name__ in ('Twin', 'Reporter')})\n"
        "if _found:\n"
        "    raise RuntimeError('found: ' + ', '.join(_found))\n",
    )
    (result,) = grading.run(directory, [exercise(2)], timeout=120)
    assert [t.message for t in result.tests if t.outcome != grading.PASSED] == []
    assert result.status == grading.DONE


@pytest.mark.slow  # a grading run: the student's process and the checks' (seconds)
def test_a_tracemalloc_beside_the_students_files_does_not_stand_in_for_the_standard_librarys(
    tmp_path: Path,
) -> None:
    directory = solutions_in(tmp_path / "student")
    (directory / "tracemalloc.py").write_text(
        "def start(*args):\n    pass\n\n\ndef stop():\n    pass\n\n\ndef get_traced_memory():\n    return (0, 0)\n"
    )
    (directory / "softmax.py").write_text(
        "import math\n\n\n"
        "def softmax_vjp(x, v):\n"
        "    m = max(x)\n"
        "    e = [math.exp(t - m) for t in x]\n"
        "    s = [t / sum(e) for t in e]\n"
        "    jacobian = [[s[i] * ((i == j) - s[j]) for j in range(len(x))] for i in range(len(x))]\n"
        "    return [sum(v[i] * jacobian[i][j] for i in range(len(x))) for j in range(len(x))]\n"
    )
    (result,) = grading.run(directory, [exercise(8)], timeout=120)
    outcomes = {t.name: t.outcome for t in result.tests}
    assert outcomes["it_does_not_build_the_jacobian"] == grading.FAILED
    assert outcomes["three_inputs"] == grading.PASSED


@pytest.mark.slow  # a grading run: the student's process and the checks' (seconds)
def test_held_out_checks_never_reach_what_a_student_sees(tmp_path: Path) -> None:
    teacher = tmp_path / "teacher"
    shutil.copytree(EXAMPLE, teacher)
    leak = (
        "import sys\n"
        "def _leak():\n"
        "    found = []\n"
        "    for module in list(sys.modules.values()):\n"
        "        path = getattr(module, '__file__', '') or ''\n"
        "        if 'held_out' in path:\n"
        "            found.append(open(path).read())\n"
        "    return '\\n'.join(found)\n"
    )
    directory = solutions_in(tmp_path / "class" / "eve")
    engine = directory / "engine.py"
    source = engine.read_text().replace(
        "    def __add__(self, other",
        "    def __add__(self, other, _leaked=None):\n        _x = _leak()\n"
        "        if _x:\n            raise RuntimeError(_x)\n"
        "        return self._add(other)\n\n    def _add(self, other",
        1,
    )
    engine.write_text(leak + source)
    of = course(teacher)
    graded = gradebook.grade([directory], type(of)((of.exercise(2),)), timeout=120)
    results = gradebook.results_json(graded["eve"])
    seen = [results["output"]] + [t["output"] for t in results["tests"] if t["visibility"] != "hidden"]
    assert graded["eve"][0].passed > 0  # the cheat ran: in the student's process it finds no check to read
    for text in seen:
        assert "Exercise 2's held-out checks" not in text
        assert 'Instruction("t3", "*", ("t2", "a"))' not in text


READS = """
def read(path):
    with open(path) as file:
        return file.read()
"""
"""A student's file that reads any file it is given the path of (a cheat finds the paths by walking folders)."""


@pytest.mark.parametrize("graded", [True, False], ids=["graded", "checked"])
@pytest.mark.parametrize("number", [1, 2, 10, 13])  # none of its own, one, from the fork server, the teacher's
def test_the_students_code_reads_none_of_the_teachers_files_and_where_graded_no_other_students_file(
    tmp_path: Path, graded: bool, number: int
) -> None:
    """Whichever exercise runs (the outside reviews read exercise 13's held-out check from exercise
    1's process, and from exercise 10's, started from the fork server, another student's file)."""
    import vjpgrad

    teacher = tmp_path / "teacher"
    shutil.copytree(EXAMPLE, teacher)
    of = course(teacher).exercise(number)
    teachers = [
        *sorted((teacher / "held_out").glob("*.py")),
        teacher / "exercises.toml",
        teacher / "solutions" / "sigmoid.py",
    ]
    directory = skeleton(tmp_path / "class" / "eve")
    (directory / "reads.py").write_text(READS)
    bob = skeleton(tmp_path / "class" / "bob")
    carol = skeleton(tmp_path / "section 2" / "carol")  # graded in the same run, from another folder
    process, ours = grading._student(grading._processes(), directory, of, 60, graded, [str(carol.parent)])
    try:
        reads = remote.Checks(ours).module("reads")
        assert "def read" in reads.read(str(directory / "reads.py"))  # its own files, as before
        assert "def read" in reads.read(str(tmp_path / "class" / ".." / "class" / "eve" / "reads.py"))
        for path in teachers:
            with pytest.raises(PermissionError, match=re.escape(guard.KEPT)):
                reads.read(str(path))
        for other in (bob, carol):
            if graded:  # another student's submission, beside this one or in the run
                with pytest.raises(PermissionError, match=re.escape(guard.KEPT)):
                    reads.read(str(other / "engine.py"))
            else:  # a student's own check reads beside their folder what it likes
                assert reads.read(str(other / "engine.py")) == (other / "engine.py").read_text()
        if number == 10:  # its files may use vjpgrad: its code is theirs to read, as check's process lets them
            assert "import" in reads.read(vjpgrad.__file__)
    finally:
        ours.close()
        process.join(10)


LISTS = """
import os


def names(path):
    return sorted(os.listdir(path))
"""
"""A student's file that lists any folder it is given the path of."""


@pytest.mark.parametrize("graded", [True, False], ids=["graded", "checked"])
def test_the_students_code_lists_none_of_the_folders_kept_from_it(tmp_path: Path, graded: bool) -> None:
    """A folder's names (a held-out check's, another student's) are refused as its files are."""
    teacher = tmp_path / "teacher"
    shutil.copytree(EXAMPLE, teacher)
    directory = skeleton(tmp_path / "class" / "eve")
    (directory / "lists.py").write_text(LISTS)
    skeleton(tmp_path / "class" / "bob")
    process, ours = grading._student(grading._processes(), directory, course(teacher).exercise(2), 60, graded)
    try:
        lists = remote.Checks(ours).module("lists")
        assert "lists.py" in lists.names(str(directory))  # its own folder, as before
        for kept in (teacher, teacher / "held_out", teacher / "held_out" / ".." / "checks"):
            with pytest.raises(PermissionError, match=re.escape(guard.KEPT)):
                lists.names(str(kept))
        if graded:  # the names of the other students' folders beside it
            with pytest.raises(PermissionError, match=re.escape(guard.KEPT)):
                lists.names(str(directory.parent))
        else:
            assert lists.names(str(directory.parent)) == ["bob", "eve"]
    finally:
        ours.close()
        process.join(10)


SNOOPS = """

import os as _os
import tempfile as _tempfile
import time as _time

_MARKERS = {markers!r}


def _found(path):
    try:
        with open(path, errors="replace") as file:
            text = file.read()
    except OSError:  # refused (PermissionError), or gone
        return False
    if any(marker in text for marker in _MARKERS):  # hypothesis's cache of a held-out check's constants
        return True
    try:  # the output of a checks' process of this run (a grader's file of minutes ago, not a leftover)
        return _os.path.basename(path) == "output.txt" and _time.time() - _os.stat(path).st_mtime < 600
    except OSError:
        return False


def _snoop():
    base = _tempfile.gettempdir()
    pending = [_os.path.join(base, name) for name in _os.listdir(base) if name.startswith("vjpgrad-course")]
    found = []
    while pending:
        path = pending.pop()
        try:
            pending += [_os.path.join(path, name) for name in _os.listdir(path)]
        except NotADirectoryError:
            found += [path] if _found(path) else []
        except OSError:  # refused, or gone
            continue
    return found


_sigmoid = sigmoid


def sigmoid(x):
    found = _snoop()
    if found:
        raise RuntimeError("read the grader's files: " + ", ".join(found))
    return _sigmoid(x)
"""
"""Appended to a student's sigmoid.py: at every call, it walks the system's temporary folder for the
grader's scratch folders (the checks' output, hypothesis's cache of the constants of the check files,
which names each file and holds its numbers and strings) and raises what it could read."""


@pytest.mark.slow  # a grading run: the visible checks, then the held-out ones
def test_the_students_code_reads_nothing_of_the_graders_scratch_folders(tmp_path: Path) -> None:
    """Hypothesis's cache (a held-out check's constants and path) and the checks' output, which holds
    a failing held-out check's traceback, are written where the student's process may not read."""
    teacher = tmp_path / "teacher"
    shutil.copytree(EXAMPLE, teacher)
    directory = solutions_in(tmp_path / "class" / "eve")
    source = (EXAMPLE / "solutions" / "sigmoid.py").read_text()
    markers = sorted({str(teacher), str(teacher.resolve())})
    (directory / "sigmoid.py").write_text(source + SNOOPS.format(markers=markers))
    (result,) = grading.run(directory, [course(teacher).exercise(13)], timeout=120, held_out=True, class_mode=True)
    assert [t.held_out for t in result.tests] == [False, False, True]
    assert [t.message for t in result.tests if "read the grader's files" in t.message] == []
    assert result.status == grading.DONE
    held_out = [str(teacher / "held_out"), str(teacher.resolve() / "held_out")]
    cached = [path.read_text() for path in (Path(grading.hypothesis_home()) / "constants").glob("[0-9a-f]*")]
    assert not any(folder in text for folder in held_out for text in cached)  # the visible runs' home: none of it


# ---- borrowed work, flagged to the teacher ---------------------------------------------------------------


def test_an_engine_that_is_vjpgrads_earns_nothing_and_is_flagged_to_the_teacher(tmp_path: Path) -> None:
    directory = skeleton(tmp_path / "class" / "mallory")
    (directory / "engine.py").write_text("from vjpgrad import Value\n")
    of = course(None)
    graded = gradebook.grade([directory], type(of)((exercise(2),)), timeout=120)
    (result,) = graded["mallory"]
    assert result.score() == 0
    assert "engine.py imports vjpgrad" in result.tests[0].message  # the student sees why their checks fail
    report = gradebook.results_json(graded["mallory"], of)
    hidden = [t for t in report["tests"] if t["visibility"] == "hidden"]
    assert [t["number"] for t in hidden] == ["2.t"]
    assert "engine.py imports vjpgrad: its checks ran without it" in hidden[0]["output"]
    shown = [report["output"]] + [t["output"] for t in report["tests"] if t["visibility"] != "hidden"]
    assert not any("borrowed" in text for text in shown)
    gradebook.write(tmp_path / "out", of, graded)
    rows = (tmp_path / "out" / "grades.csv").read_text().splitlines()
    assert rows[1].startswith("mallory,not run,0,")  # exercise 1 never graded, exercise 2 nothing earned
    assert rows[1].endswith("engine.py imports vjpgrad: its checks ran without it (borrowed engine?)")


def test_the_teachers_remarks_read_the_files_as_handed_in_before_any_code_of_the_student_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # code that gets past the student's process's hook (or runs as a user who owns the files) could
    # rewrite its own files as it runs: what the teacher is told is read before it runs at all
    directory = skeleton(tmp_path / "class" / "mallory")
    engine = directory / "engine.py"
    engine.write_text("from vjpgrad import Value\n")
    honest = (folder("templates") / "engine.py").read_text()
    real = grading.run_many

    def rewriting(*arguments: object, **keywords: object) -> object:
        results = real(*arguments, **keywords)  # type: ignore[arg-type]
        engine.write_text(honest)  # as the student's code could have, as it ran
        return results

    monkeypatch.setattr(grading, "run_many", rewriting)
    of = course(None)
    graded = gradebook.grade([directory], type(of)((exercise(2),)), timeout=120)
    (result,) = graded["mallory"]
    assert any("engine.py imports vjpgrad" in remark for remark in result.remarks), result.remarks


DELEGATE = """\"\"\"My own engine: written by me.\"\"\"
import sys as _s, os as _o, importlib.util as _u
_package = _s.modules["".join(["vjp", "grad"])]
_where = _o.path.join(_o.path.dirname(_package.__file__), "cou" + "rse", "sol" + "utions", "engine.py")
_spec = _u.spec_from_file_location("_mine", _where)
_module = _u.module_from_spec(_spec)
_spec.loader.exec_module(_module)
globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
"""
"""An engine that names neither vjpgrad nor its solutions in a way a reading of the file can tell,
and loads the shipped reference solution when it is imported."""


@pytest.mark.slow  # a grading run
def test_an_engine_that_loads_a_shipped_solution_at_run_time_earns_nothing_and_is_flagged(tmp_path: Path) -> None:
    directory = skeleton(tmp_path / "class" / "mallory")
    (directory / "engine.py").write_text(DELEGATE)
    of = course(None)
    graded = gradebook.grade([directory], type(of)((exercise(2),)), timeout=120)
    (result,) = graded["mallory"]
    assert result.score() == 0
    assert "reading vjpgrad's reference solutions" in result.tests[0].message  # why, to the student
    assert guard.SOLUTIONS_REMARK in result.remarks  # and to the teacher


def test_copies_of_shipped_solutions_are_told_from_other_answers(tmp_path: Path) -> None:
    from vjpgrad.course import borrowed

    solution = (folder("solutions") / "engine.py").read_text()
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "engine.py").write_text(
        solution.replace("other", "rhs")
        .replace("out", "res")
        .replace("        self.grad += ", "        self.grad  +=  ")
    )
    own = tmp_path / "own"
    own.mkdir()
    (own / "engine.py").write_text(solution.replace("self.grad += out.grad", "self.grad = self.grad + 1.0 * out.grad"))
    said = borrowed.copied(copy, exercise(2))
    assert said == [f"engine.py (Value.__add__, Value.__mul__): {borrowed.COPIED}"]
    assert borrowed.copied(folder("templates"), exercise(10)) == []  # the skeleton's softsign is given whole
    assert borrowed.copied(own, exercise(2)) == []
    assert borrowed.copied(copy, exercise(10)) == []  # not that exercise's file
    assert borrowed.imports(copy, exercise(2), course(None)) == []
    (own / "softsign.py").write_text("import vjpgrad\n")
    assert borrowed.imports(own, exercise(10), course(None)) == []  # its skeleton imports vjpgrad too
    (own / "engine.py").write_text("import importlib\nValue = importlib.import_module('vjpgrad').Value\n")
    assert borrowed.imports(own, exercise(4), course(None)) == [
        "engine.py imports vjpgrad: its checks ran without it (borrowed engine?)"
    ]


ALICES_ORDER = '''
    def topological_order(self):
        """Kahn's way: count each node's users, then list a node once all its users are listed."""
        users, pending = {}, [self]
        while pending:
            node = pending.pop()
            for child in node._prev:
                if child not in users:
                    users[child] = 0
                    pending.append(child)
                users[child] += 1
        order, ready = [], [self]
        while ready:
            node = ready.pop()
            order.append(node)
            for child in node._prev:
                users[child] -= 1
                if users[child] == 0:
                    ready.append(child)
        return order[::-1]

'''
"""Exercise 4's order written another way than the shipped solution's (its own work)."""


def _engine_with_order(directory: Path, order: str) -> Path:
    """A submission whose engine.py is the shipped solution's with ``order`` as its topological_order."""
    solutions_in(skeleton(directory))
    engine = (directory / "engine.py").read_text()
    start = engine.index("    def topological_order(self):")
    end = engine.index("    def backward(self):")
    (directory / "engine.py").write_text(engine[:start] + order.lstrip("\n") + engine[end:])
    return directory


OWN_RELU = (
    'out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")',
    'out = Value(max(self.data, 0.0), (self,), "relu")',
)
"""Exercise 3's relu written another way than the shipped solution's (with its operators, its own work)."""


@pytest.mark.slow  # a grading run of four submissions (8 s in the quick loop, its longest test)
def test_two_classmates_handing_in_one_program_are_told_to_the_teacher(tmp_path: Path) -> None:
    # "copies flagged": only copies of the shipped solutions were; two students' one program was not
    alice = _engine_with_order(tmp_path / "class" / "alice", ALICES_ORDER)
    bobs = (
        ALICES_ORDER.replace("users", "n_users").replace("pending", "todo").replace("ready", "free")
        .replace(ALICES_ORDER.splitlines()[2] + "\n", "")  # her docstring
        .replace("order.append(node)", "order.append(node)  # listed")
    )  # fmt: skip
    bob = _engine_with_order(tmp_path / "class" / "bob", bobs)
    for copied_pair in (alice, bob):  # and both relus alike: two exercises
        engine = copied_pair / "engine.py"
        engine.write_text(engine.read_text().replace(*OWN_RELU))
    carol = solutions_in(skeleton(tmp_path / "class" / "carol"))  # the shipped solution: told as that, not as bob's
    dave = _engine_with_order(tmp_path / "class" / "dave", ALICES_ORDER)  # alice's loop alone, as two could write it
    for handed_in in (alice, bob, dave):
        assert borrowed.copied(handed_in, exercise(4)) == []  # none is the shipped solution
    prints = {d.name: borrowed.fingerprint(d, exercise(4)) for d in (alice, bob, carol, dave)}
    assert prints["alice"] is not None
    assert prints["alice"] == prints["bob"] == prints["dave"]
    assert prints["carol"] is None  # told already as the shipped solution's
    assert borrowed.fingerprint(dave, exercise(3)) is None  # the shipped relu
    assert str(borrowed.fingerprint(alice, exercise(3))).startswith("L")  # five operations: told alike on their own
    assert str(prints["alice"]).startswith("S")  # two parts of about 150 nodes: not on their own
    graded = gradebook.grade([alice, bob, carol, dave], type(course(None))((exercise(3), exercise(4))), timeout=120)
    remarks = {name: [r for result in results for r in result.remarks] for name, results in graded.items()}
    parts = {
        3: "Value.__pow__, Value.exp, Value.log, Value.tanh, Value.relu",
        4: "Value.topological_order, Value.backward",
    }
    assert remarks["alice"] == [f"engine.py ({parts[n]}): {borrowed.CLASSMATES} bob" for n in (3, 4)]
    assert remarks["bob"] == [f"engine.py ({parts[n]}): {borrowed.CLASSMATES} alice" for n in (3, 4)]
    assert not any(borrowed.CLASSMATES in remark for remark in remarks["carol"] + remarks["dave"])  # one small alike
    assert all(result.status == grading.DONE for results in graded.values() for result in results)  # marks untouched


def _kahn_engine(directory: Path, *renamed: tuple[str, str]) -> Path:
    """A submission whose engine.py is the second engine of the tests (``_course_engine_kahn``, its
    operations built by a helper method of its own, ``_lift``), with each of ``renamed`` replaced."""
    skeleton(directory)
    engine = (Path(__file__).parent / "_course_engine_kahn.py").read_text()
    for old, new in renamed:  # a name where it is a whole word; any other text as it is
        engine = re.sub(rf"\b{old}\b", new, engine) if old.isidentifier() else engine.replace(old, new)
    (directory / "engine.py").write_text(engine)
    return directory


def test_a_copy_with_its_own_helper_methods_and_attributes_renamed_is_still_a_copy(tmp_path: Path) -> None:
    """A review: a classmate's engine, with the helper its operations call (``self._lift``) and an
    attribute of its own (``_locals``) renamed, was told as no copy: the name of a method or an
    attribute the student chose was kept as written, where a local's is set aside, and the helper's
    own code was no part of the comparison. The names the student chose are set aside, the names
    the skeleton gives (``data``, ``grad``, ``_prev``) are kept, and the helpers the parts call are
    compared with them: a helper written otherwise is another program."""
    alice = _kahn_engine(tmp_path / "alice")
    bob = _kahn_engine(tmp_path / "bob", ("_lift", "_as_value"), ("_locals", "_partials"))
    carol = _kahn_engine(
        tmp_path / "carol",
        ("return x if isinstance(x, Value) else Value(x)", "return x if type(x) is Value else Value(float(x))"),
    )
    prints = {d.name: borrowed.fingerprint(d, exercise(2)) for d in (alice, bob, carol)}
    assert prints["alice"] is not None
    assert prints["alice"] == prints["bob"]
    assert prints["carol"] != prints["alice"]  # its helper is its own
    assert "type(x) is Value" in (carol / "engine.py").read_text()


ROUNDED = (
    "    def __add__(self, other):",
    "    @staticmethod\n"
    "    def _lift_rounded(x):\n"
    "        return x if isinstance(x, Value) else Value(round(float(x), 12))\n\n"
    "    def __add__(self, other):",
)
"""A second helper of its own beside ``_lift``, which rounds what it lifts."""


def test_which_of_their_own_helpers_each_part_calls_tells_two_programs_apart(tmp_path: Path) -> None:
    """A review of the helpers compared: every name the student chose was made one name, and the
    helpers' forms were sorted, so an engine whose ``__mul__`` calls the rounding helper and one
    whose ``__add__`` does were told "the same program". The names are numbered where they first
    appear, the parts' order first, and the helpers kept in the order they are first called."""
    mul_rounds = _kahn_engine(tmp_path / "mul_rounds", ROUNDED)
    engine = mul_rounds / "engine.py"
    text = engine.read_text()
    at = text.index("    def __mul__(self, other):\n        other = self._lift(other)")
    engine.write_text(text[:at] + text[at:].replace("self._lift(other)", "self._lift_rounded(other)", 1))
    add_rounds = _kahn_engine(tmp_path / "add_rounds", ROUNDED)
    engine = add_rounds / "engine.py"
    text = engine.read_text()
    at = text.index("    def __add__(self, other):\n        other = self._lift(other)")
    engine.write_text(text[:at] + text[at:].replace("self._lift(other)", "self._lift_rounded(other)", 1))
    renamed = _kahn_engine(tmp_path / "renamed", ROUNDED, ("_lift_rounded", "_rounded"), ("_lift", "_as_value"))
    engine = renamed / "engine.py"
    text = engine.read_text()
    at = text.index("    def __mul__(self, other):\n        other = self._as_value(other)")
    engine.write_text(text[:at] + text[at:].replace("self._as_value(other)", "self._rounded(other)", 1))
    prints = {d.name: borrowed.fingerprint(d, exercise(2)) for d in (mul_rounds, add_rounds, renamed)}
    assert prints["mul_rounds"] is not None
    assert prints["mul_rounds"] != prints["add_rounds"]
    assert prints["mul_rounds"] == prints["renamed"]  # the same program, its two helpers renamed


def test_a_stub_of_a_helper_above_the_one_python_keeps_hides_no_copy(tmp_path: Path) -> None:
    """A review: an idle ``def _lift(o): pass`` above the real helper made the copy another program
    (every definition of a helper's name was compared); the parts' rule holds for helpers too: the
    last definition, the one Python keeps."""
    alice = _kahn_engine(tmp_path / "alice")
    real = "    @staticmethod\n    def _lift(x):"
    stub = (real, "    def _lift(o):\n        pass\n\n" + real)
    bob = _kahn_engine(tmp_path / "bob", stub)
    assert "pass" in (bob / "engine.py").read_text()
    assert borrowed.fingerprint(alice, exercise(2)) is not None
    assert borrowed.fingerprint(alice, exercise(2)) == borrowed.fingerprint(bob, exercise(2))


def test_a_helper_held_under_a_second_name_in_the_class_is_followed(tmp_path: Path) -> None:
    """``_as = _lift`` in the class, the parts calling ``self._as(other)``: the helper behind the name
    is compared (a review: a copy with both names changed was missed, and another helper behind the
    same name was told the same program)."""
    alias = ("    def __add__(self, other):", "    _as = _lift\n\n    def __add__(self, other):")
    calls = ("self._lift(other)", "self._as(other)")
    alice = _kahn_engine(tmp_path / "alice", alias, calls)
    bob = _kahn_engine(tmp_path / "bob", alias, calls, ("_as", "_use"), ("_lift", "_wrap"))
    carol = _kahn_engine(
        tmp_path / "carol",
        alias,
        calls,
        ("return x if isinstance(x, Value) else Value(x)", "return x if type(x) is Value else Value(float(x))"),
    )
    prints = {d.name: borrowed.fingerprint(d, exercise(2)) for d in (alice, bob, carol)}
    assert prints["alice"] is not None
    assert prints["alice"] == prints["bob"]
    assert prints["carol"] != prints["alice"]


def test_a_file_too_deep_to_read_again_is_told_as_no_copy_and_the_rest_is_still_read(tmp_path: Path) -> None:
    # a def whose expression nests past what ast.unparse can recurse, and a file past what the
    # parser's stack holds: Python runs the first and refuses the second; the copy check must not crash
    from vjpgrad.course import borrowed

    solution = (folder("solutions") / "engine.py").read_text()
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "engine.py").write_text(solution + "\n\ndef deep():\n    return " + "-" * 1500 + "1\n")
    (deep / "junk.py").write_text("x = " + "-" * 100_000 + "1\n")
    assert borrowed.copied(deep, exercise(2)) == [f"engine.py (Value.__add__, Value.__mul__): {borrowed.COPIED}"]
    assert borrowed.remarks(deep, exercise(2), course(None)) == borrowed.copied(deep, exercise(2))
    assert borrowed.parse(deep / "junk.py") is None  # as a file Python cannot read


def test_a_copy_with_independent_lines_swapped_or_joined_is_still_a_copy(tmp_path: Path) -> None:
    """Two lines that do not depend on each other swapped, or two assignments written as one,
    change nothing the code does."""
    engine = (folder("solutions") / "engine.py").read_text()
    swapped = tmp_path / "swapped"
    swapped.mkdir()
    (swapped / "engine.py").write_text(
        engine.replace(
            "            self.grad += out.grad\n            other.grad += out.grad\n",
            "            other.grad += out.grad\n            self.grad += out.grad\n",
        )
    )
    assert (swapped / "engine.py").read_text() != engine
    assert borrowed.copied(swapped, exercise(2)) == [f"engine.py (Value.__add__, Value.__mul__): {borrowed.COPIED}"]
    derivatives = (folder("solutions") / "derivatives.py").read_text()
    joined = tmp_path / "joined"
    joined.mkdir()
    (joined / "derivatives.py").write_text(
        derivatives.replace("    up = list(xs)\n    down = list(xs)\n", "    up, down = list(xs), list(xs)\n").replace(
            "    up[arg] += h\n    down[arg] -= h\n", "    down[arg] -= h\n    up[arg] += h\n"
        )
    )
    assert (joined / "derivatives.py").read_text().count("up, down") == 1
    assert borrowed.copied(joined, exercise(1)) != []
    # what a copy is not: the operands swapped, a common mistake of one's own (an outside review
    # found it told as a copy where every name was made alike)
    mistaken = tmp_path / "mistaken"
    mistaken.mkdir()
    (mistaken / "derivatives.py").write_text(derivatives.replace("(f(*up) - f(*down))", "(f(*down) - f(*up))"))
    (mistaken / "engine.py").write_text(
        engine.replace("self.grad += other.data * out.grad", "self.grad += self.data * out.grad")
    )
    assert (mistaken / "derivatives.py").read_text() != derivatives
    assert (mistaken / "engine.py").read_text() != engine
    assert borrowed.copied(mistaken, exercise(1)) == []
    assert borrowed.copied(mistaken, exercise(2)) == []


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("x = g(x)\n    y = g(x)\n    return y", "y = g(x)\n    x = g(x)\n    return y"),  # y reads x's new value
        ("a = next(it)\n    b = next(it)\n    return a - b", "b = next(it)\n    a = next(it)\n    return a - b"),
    ],
)
def test_two_lines_alike_that_depend_on_their_order_are_not_one_program(one: str, other: str) -> None:
    # a program that does something else is never told as the same: ordering look-alike lines by how their
    # names are used made these pairs one form (a review of a change, which was taken back)
    import ast

    forms = [borrowed.loose(ast.parse(f"def f(x, it):\n    {body}\n").body[0]) for body in (one, other)]
    assert forms[0] != forms[1]


def test_a_copy_padded_with_statements_that_do_nothing_or_hidden_under_a_later_def_is_still_a_copy(
    tmp_path: Path,
) -> None:
    """``pass``, a string or ``...`` added to each function changes nothing it does; Python keeps the
    last ``def`` of a name, so a stub above the copied one hides nothing."""
    import ast

    solution = (folder("solutions") / "engine.py").read_text()
    padded = tmp_path / "padded"
    padded.mkdir()
    tree = ast.parse(solution)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            node.body = [ast.Pass(), ast.Expr(ast.Constant("mine")), *node.body, ast.Expr(ast.Constant(...))]
    (padded / "engine.py").write_text(ast.unparse(tree))
    assert borrowed.copied(padded, exercise(2)) == [f"engine.py (Value.__add__, Value.__mul__): {borrowed.COPIED}"]
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    stub = "    def __add__(self, other):\n        return NotImplemented\n\n"
    first = "    def __add__(self, other"
    (hidden / "engine.py").write_text(solution.replace(first, stub + first, 1))
    assert borrowed.copied(hidden, exercise(2)) == [f"engine.py (Value.__add__, Value.__mul__): {borrowed.COPIED}"]


def _hidden_copy(how: str, directory: Path) -> None:
    """The shipped engine copied into ``directory``, hidden from a reading by the part's name in one
    of the ways a teacher reading the file would still call a copy."""
    import ast

    text = (folder("solutions") / "engine.py").read_text()
    if how == "in another module":
        (directory / "_mine.py").write_text(text)
        (directory / "engine.py").write_text('"""My engine."""\nfrom _mine import *  # noqa: F403\n')
        return
    if how == "in a module in a folder":
        (directory / "mine").mkdir()
        (directory / "mine" / "__init__.py").write_text("")
        (directory / "mine" / "engine_parts.py").write_text(text)
        (directory / "engine.py").write_text('"""My engine."""\nfrom mine.engine_parts import *  # noqa: F403\n')
        return
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            body: list[ast.stmt] = []
            for part in node.body:
                body.append(part)
                if isinstance(part, ast.FunctionDef) and part.name in ("__add__", "__mul__"):
                    name = part.name
                    if how == "under another name":
                        part.name = f"_my{name}"
                        body.append(ast.parse(f"{name} = _my{name}").body[0])
                    elif how == "behind a later stub":
                        body.append(ast.parse(f"_kept{name} = {name}").body[0])
                        body.append(ast.parse(f"def {name}(self, o):\n    return self._kept{name}(o)").body[0])
            node.body = body
        if isinstance(node, ast.FunctionDef) and how == "with assignments that do nothing":
            node.body.insert(0, ast.parse("_ = None").body[0])
    (directory / "engine.py").write_text(ast.unparse(ast.fix_missing_locations(tree)))


@pytest.mark.parametrize(
    "how",
    [
        "under another name",
        "behind a later stub",
        "with assignments that do nothing",
        "in another module",
        "in a module in a folder",
    ],
)
def test_a_copy_is_found_under_any_name_and_in_any_file_of_the_submission(tmp_path: Path, how: str) -> None:
    directory = tmp_path / "copy"
    directory.mkdir()
    _hidden_copy(how, directory)
    assert borrowed.copied(directory, exercise(2)) == [f"engine.py (Value.__add__, Value.__mul__): {borrowed.COPIED}"]


def test_the_students_directory_goes_after_the_standard_library_and_before_installed_packages() -> None:
    import sysconfig

    from vjpgrad.course.paths import after_the_standard_library

    stdlib, dynload = sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib") + "/lib-dynload"
    site = sysconfig.get_path("purelib")
    path = ["", stdlib + ".zip", stdlib, dynload, site, "/somewhere/else"]
    after_the_standard_library(path, "/student")
    assert path == ["", stdlib + ".zip", stdlib, dynload, "/student", site, "/somewhere/else"]


def test_a_students_file_named_as_a_standard_module_is_not_read_as_their_code(tmp_path: Path) -> None:
    # the student's folder goes after the standard library on sys.path, so their engine's `import json`
    # imports the standard library's json, never their own json.py: the remarks read what the code imports
    # (a review found a student's math.py read, and remarked on, as their engine's)
    directory = tmp_path / "student"
    directory.mkdir()
    (directory / "engine.py").write_text("import json\nimport helpers\nfrom random import random\nimport math.x\n")
    for name in ("json", "random", "math", "helpers"):
        (directory / f"{name}.py").write_text("import sys\nsys.setrecursionlimit(10**6)\n")
    assert borrowed.own_files(directory, exercise(2), course()) == ["engine.py", "helpers.py"]
    assert borrowed.recursion_limit(directory, exercise(2), borrowed.own_files(directory, exercise(2), course())) == [
        f"helpers.py names sys.setrecursionlimit: {borrowed.RECURSION_LIMIT}"
    ]


# ---- the student's code as another user (the autograder's --user) -----------------------------------------


def _unprivileged() -> tuple[int, int]:
    """The uid and gid of ``nobody``, where this process may become it (as root); else skip."""
    import os

    if not hasattr(os, "getuid") or os.getuid() != 0:
        pytest.skip("needs root: the student's process drops from root to another user, as the autograder's --user")
    import pwd

    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user named nobody to drop to")
    return entry.pw_uid, entry.pw_gid


@pytest.mark.slow  # a grading run: the student's process and the checks'
def test_as_another_user_the_students_code_reads_nothing_of_roots_and_the_checks_still_decide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    import os
    import tempfile

    uid, gid = _unprivileged()
    secret = tmp_path / "teacher" / "held_out.py"  # tmp_path is root's alone (0700), as /autograder/source is
    secret.parent.mkdir()
    secret.write_text("SECRET = 1\n")
    scratch = Path(tempfile.mkdtemp(prefix="vjpgrad-test-"))  # where the autograder copies a submission to
    os.chmod(scratch, 0o755)
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    directory = solutions_in(scratch / "student")
    prepend(
        directory / "engine.py",
        "import os\n"
        f"_said = ['uid {{}}'.format(os.getuid())] if os.getuid() != {uid} else []\n"
        "try:\n"
        f"    open({str(secret)!r}).read()\n"
        "    _said.append('read the teacher file')\n"
        "except OSError:\n"
        "    pass\n"
        "if _said:\n"
        "    raise RuntimeError(', '.join(_said))\n",
    )
    for path in [directory, *directory.rglob("*")]:
        os.chown(path, uid, gid)
    monkeypatch.setattr(grading, "RUN_AS", [(uid, gid)])
    (result,) = grading.run(directory, [exercise(2)], timeout=120)
    assert [t.message for t in result.tests if t.outcome != grading.PASSED] == []
    assert result.status == grading.DONE
    skeleton_directory = skeleton(scratch / "cheat")
    prepend(skeleton_directory / "engine.py", REPLACE_THE_CHECKS)
    for path in [skeleton_directory, *skeleton_directory.rglob("*")]:
        os.chown(path, uid, gid)
    (result,) = grading.run(skeleton_directory, [exercise(2)], timeout=120)
    assert result.score() == 0


@pytest.mark.slow  # a grading run as another user
def test_the_autograder_hands_the_students_user_a_copy_it_can_read_and_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the kernel, not only the hook, keeps the student's code from rewriting the files the checks read
    import pwd
    import stat

    from vjpgrad.course import autograder

    uid, _ = _unprivileged()
    submission = solutions_in(tmp_path / "submission")
    seen: list[tuple[Path, int, int]] = []
    real = gradebook.grade

    def looked_at(
        directories: list[Path], of: object, timeout: float, more_time: grading.MoreTime
    ) -> dict[str, list[grading.ExerciseResult]]:
        for path in [directories[0], *directories[0].rglob("*")]:
            seen.append((path, path.stat().st_uid, stat.S_IMODE(path.stat().st_mode)))
        return real(directories, type(course(None))((exercise(2),)), timeout, more_time=more_time)

    monkeypatch.setattr(gradebook, "grade", looked_at)
    results = tmp_path / "results" / "results.json"
    user = pwd.getpwuid(uid).pw_name
    arguments = ["--submission", str(submission), "--results", str(results), "--user", user]
    assert grading.RUN_AS[0] is None
    assert autograder.main(arguments) == 0
    assert grading.RUN_AS[0] is None  # the process is left as main found it: later grading runs as root
    assert seen
    for path, owner, mode in seen:
        assert owner != uid, (path, owner)  # not the student's to write
        assert not mode & 0o022, (path, oct(mode))
        assert mode & 0o004, (path, oct(mode))  # the student's to read
        assert mode & 0o001 or not path.is_dir(), (path, oct(mode))
    report = json.loads(results.read_text())
    (two,) = [t for t in report["tests"] if t["number"] == "2"]
    assert two["score"] == two["max_score"] == exercise(2).points


JACOBIAN = (
    "def softmax_vjp(x, v):\n"
    "    m = max(x)\n"
    "    e = [math.exp(t - m) for t in x]\n"
    "    s = [t / sum(e) for t in e]\n"
    "    jacobian = [[s[i] * ((i == j) - s[j]) for j in range(len(x))] for i in range(len(x))]\n"
    "    return [sum(v[i] * jacobian[i][j] for i in range(len(x))) for j in range(len(x))]\n"
)
"""A softmax_vjp that builds the n x n Jacobian, 32 MB of Python floats for 1,000 inputs."""

MISREPORT = (
    "import math\nimport sys\nimport tracemalloc\n\n"
    "for _module in list(sys.modules.values()):  # wherever the measuring code took them from\n"
    "    for _name in ('get_traced_memory', 'get_tracemalloc_memory'):\n"
    "        if getattr(_module, _name, None) is not None:\n"
    "            try:\n"
    "                setattr(_module, _name, lambda: (0, 0))\n"
    "            except (AttributeError, TypeError):\n"
    "                pass\n"
    "tracemalloc.get_traced_memory = lambda: (0, 0)\n\n\n"
)
"""The peak memory misreported from the student's own module: every ``get_traced_memory`` it can
reach in its interpreter, the standard library's and any module's that imported it, made to say 0."""


@pytest.mark.slow  # a grading run: the student's process and the checks'
@pytest.mark.skipif(not kernel.can_measure(os.getpid()), reason="the kernel's count of memory is read in /proc (Linux)")
def test_a_jacobian_with_the_memory_count_misreported_fails_the_memory_check(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "student")
    (directory / "softmax.py").write_text(MISREPORT + JACOBIAN)
    (result,) = grading.run(directory, [exercise(8)], timeout=120)
    outcomes = {t.name: t.outcome for t in result.tests}
    assert outcomes["three_inputs"] == grading.PASSED  # the answer is right, so the cheat did run
    assert outcomes["it_does_not_build_the_jacobian"] == grading.FAILED
    message = next(t.message for t in result.tests if t.name == "it_does_not_build_the_jacobian")
    assert "1,000 x 1,000" in message


FLAT_JACOBIAN = (
    "def _softmax_vjp(x, v):\n"
    "    import array\n"
    "    n = len(x)\n"
    "    m = max(x)\n"
    "    e = [math.exp(t - m) for t in x]\n"
    "    s = [t / sum(e) for t in e]\n"
    "    jacobian = array.array('d', [0.0]) * (n * n)  # 8 MB in one block, given back to the system when freed\n"
    "    for i in range(n):\n"
    "        for j in range(n):\n"
    "            jacobian[i * n + j] = s[i] * ((i == j) - s[j])\n"
    "    return [sum(v[i] * jacobian[i * n + j] for i in range(n)) for j in range(n)]\n"
)
"""A softmax_vjp that builds the Jacobian as one block of n x n doubles, which freeing gives back."""

RESET = (
    "import gc\nimport math\n\n\n"
    "def softmax_vjp(x, v):\n"
    "    result = _softmax_vjp(x, v)\n"
    "    gc.collect()\n"
    "    try:\n"
    "        with open('/proc/self/clear_refs', 'w') as counter:  # the kernel's peak, reset to now\n"
    "            counter.write('5')\n"
    "    except OSError:\n"
    "        pass\n"
    "    return result\n\n\n"
)
"""The kernel's count of the peak memory reset from the student's own process, after the Jacobian
is built and freed."""


@pytest.mark.slow  # a grading run: the student's process and the checks'
@pytest.mark.skipif(not kernel.can_measure(os.getpid()), reason="the kernel's count of memory is read in /proc (Linux)")
def test_a_jacobian_with_the_kernels_peak_reset_by_the_students_code_fails_the_memory_check(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "student")
    (directory / "softmax.py").write_text(RESET + FLAT_JACOBIAN)
    (result,) = grading.run(directory, [exercise(8)], timeout=120)
    outcomes = {t.name: t.outcome for t in result.tests}
    assert outcomes["three_inputs"] == grading.PASSED
    assert outcomes["it_does_not_build_the_jacobian"] == grading.FAILED


PREFILL = (
    "import math\n\n"
    "_rows = [[float(i * j) + 0.5 for j in range(1_000)] for i in range(1_500)]  # more than a Jacobian takes\n"
    "_kept = [row[::40] for row in _rows]  # one float in 40 kept: the pages of the others stay resident\n"
    "del _rows\n\n\n"
)
"""Memory filled as the student's module is imported, then freed but kept resident (the allocator
keeps a page while one object on it lives): a Jacobian built later reuses those pages, so the
process takes nothing more from the system while ``softmax_vjp`` runs."""


@pytest.mark.slow  # a grading run: the student's process and the checks'
@pytest.mark.skipif(not kernel.can_measure(os.getpid()), reason="the kernel's count of memory is read in /proc (Linux)")
def test_a_jacobian_in_memory_filled_as_the_module_is_imported_fails_the_memory_check(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "student")
    (directory / "softmax.py").write_text(PREFILL + JACOBIAN)
    (result,) = grading.run(directory, [exercise(8)], timeout=120)
    outcomes = {t.name: t.outcome for t in result.tests}
    assert outcomes["three_inputs"] == grading.PASSED  # the answer is right, so the cheat did run
    assert outcomes["it_does_not_build_the_jacobian"] == grading.FAILED
    message = next(t.message for t in result.tests if t.name == "it_does_not_build_the_jacobian")
    assert "1,000 x 1,000" in message
    assert "as softmax.py is imported" in message  # the count covers the import: a student reads why


@pytest.mark.slow  # a check run in a process of its own
def test_a_students_file_named_as_a_module_the_grader_preloads_never_runs_in_the_graders_processes(
    tmp_path: Path,
) -> None:
    # `vjpgrad course check` run in the student's directory, as GitHub Classroom's grader runs it
    directory = solutions_in(tmp_path / "student")
    ran = tmp_path / "ran.txt"
    for name in ("hypothesis", "pytest", "iniconfig"):
        (directory / f"{name}.py").write_text(f"open({str(ran)!r}, 'a').write({name!r} + ' ')\nraise ImportError\n")
    command = "import sys; sys.path.remove(''); from vjpgrad.cli.main import main; sys.exit(main())"  # like the
    done = subprocess.run(  # console script: this process does not search its working directory, its children might
        [sys.executable, "-c", command, "course", "check", ".", "2"], cwd=directory, capture_output=True, text=True
    )
    assert not ran.exists(), f"the student's {ran.read_text().strip()} ran in the grader's processes"
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Checked exercise 2 alone: done." in done.stdout


# ---- exercise 4's recursion limit -------------------------------------------------------------------------

RECURSIVE = """        import sys
        sys.setrecursionlimit(100_000)  # deep enough for the check's 10,000 links
        order, seen = [], set()

        def build(node):
            if id(node) not in seen:
                seen.add(id(node))
                for child in node._prev:
                    build(child)
                order.append(node)

        build(self)
"""
"""A ``backward()`` that sorts by recursion, with the interpreter's recursion limit raised first."""


def recursive_engine(directory: Path) -> Path:
    engine = directory / "engine.py"
    source = engine.read_text()
    assert "        order = self.topological_order()\n" in source
    engine.write_text(source.replace("        order = self.topological_order()\n", RECURSIVE, 1))
    return directory


@pytest.mark.slow  # a grading run
def test_a_recursive_backward_that_raises_the_recursion_limit_fails_and_is_flagged_to_the_teacher(
    tmp_path: Path,
) -> None:
    directory = recursive_engine(solutions_in(tmp_path / "class" / "trudy"))
    of = course(None)
    graded = gradebook.grade([directory], type(of)((exercise(4),)), timeout=120)
    (result,) = graded["trudy"]
    deep = next(t for t in result.tests if t.name == "a_chain_of_10_000_links_works_at_the_default_recursion_limit")
    assert deep.outcome == grading.FAILED
    assert "sys.setrecursionlimit is refused" in deep.message  # what the student reads: the rule
    assert "exercise 4" in deep.message
    assert "engine.py, line" in deep.message
    report = gradebook.results_json(graded["trudy"], of)
    hidden = "\n".join(t["output"] for t in report["tests"] if t["visibility"] == "hidden")
    assert f"engine.py names sys.setrecursionlimit: {borrowed.RECURSION_LIMIT}" in hidden
    shown = [report["output"]] + [t["output"] for t in report["tests"] if t["visibility"] != "hidden"]
    assert not any("recursion limit raised?" in text for text in shown)
    gradebook.write(tmp_path / "out", of, graded)
    rows = (tmp_path / "out" / "grades.csv").read_text().splitlines()
    assert rows[1].endswith(f"engine.py names sys.setrecursionlimit: {borrowed.RECURSION_LIMIT}")


def test_a_source_that_names_setrecursionlimit_is_flagged_however_it_names_it(tmp_path: Path) -> None:
    of = course(None)
    own = skeleton(tmp_path / "own")
    assert borrowed.remarks(own, exercise(4), of) == []
    flagged = f"engine.py names sys.setrecursionlimit: {borrowed.RECURSION_LIMIT}"
    engine = own / "engine.py"
    solution = engine.read_text()
    for cheat in (
        "import sys\nsys.setrecursionlimit(10**5)\n",
        "from sys import setrecursionlimit as deeper\ndeeper(10**5)\n",
        "import sys\ngetattr(sys, 'setrecursionlimit')(10**5)\n",
        "import sys\nvars(sys)['setRecursionLimit'.lower()](10**5)\n",
        "import ctypes\nctypes.pythonapi.Py_SetRecursionLimit(10**5)\n",
        "import sys\ngetattr(sys.modules['vjp' + 'grad.course.probe'], '_set_' + 'recursion_limit')(10**5)\n",
    ):
        engine.write_text(cheat + solution)
        assert borrowed.remarks(own, exercise(4), of)[0] == flagged, cheat
        assert borrowed.remarks(own, exercise(8), of) == []  # not that exercise's file
    reaching = f"engine.py names ctypes.pythonapi or /proc: {borrowed.REACHING}"
    engine.write_text("import ctypes\n_f = getattr(ctypes.pythonapi, 'Py_Set' + 'Recursion' + 'Limit')\n" + solution)
    assert borrowed.remarks(own, exercise(4), of) == [flagged, reaching]
    engine.write_text("import os\n_fds = os.listdir(f'/proc/{os.getppid()}/fd')\n" + solution)
    assert borrowed.remarks(own, exercise(4), of) == [reaching]
    engine.write_text(solution + "\nimport sys\nDEPTH = sys.getrecursionlimit()  # not sys.setrecursionlimit\n")
    assert borrowed.remarks(own, exercise(4), of) == []  # a comment is no reference; getrecursionlimit is fine


@pytest.mark.slow  # it reads many sources, each in a process of its own
def test_a_source_that_runs_code_made_from_text_is_flagged(tmp_path: Path) -> None:
    """A shipped solution kept as a string and run (``exec``, ``eval``, ``compile``, a loader that
    compiles a string, a code object made by hand) has no ``def`` for the copy check to read: such
    a file is remarked on; honest code that merely shares a name is not."""
    of = course(None)
    own = skeleton(tmp_path / "own")
    engine = own / "engine.py"
    solution = (folder("solutions") / "engine.py").read_text()
    flagged = f"engine.py runs code made from text: {borrowed.FROM_TEXT}"
    for cheat in (
        f"exec({solution!r})\n",
        f"_run = eval\n_run(compile({solution!r}, 'x', 'exec'))\n",
        f"import builtins\ngetattr(builtins, 'ex' + 'ec')({solution!r})\n",
        f"import builtins\ngetattr(builtins, 'cexe'[::-1])({solution!r})\n",
        "import builtins\nbuiltins.exec('x = 1')\n",
        "import types\n_f = types.FunctionType((lambda: 0).__code__, {})\n",
        "import marshal\n",
        "import importlib.abc as a\nclass L(a.SourceLoader):\n    pass\n",
        "import code\ncode.InteractiveInterpreter().runsource('x = 1')\n",
        "import pickle\n_x = pickle.loads(b'')\n",
    ):
        engine.write_text(cheat)
        assert flagged in borrowed.remarks(own, exercise(2), of), cheat
    for honest in (
        "import re\nPATTERN = re.compile('x')\n",
        "from re import compile\nPATTERN = compile('x')\n",
        "def train(model):\n    model.eval()\n",
        "class Net:\n    def eval(self):\n        return 1\n\n    def f(self):\n        return self.eval()\n",
        "def train(mode='eval'):\n    return mode\n",
        "from types import FunctionType\nOK = isinstance(len, FunctionType)\n",
        "def check(f, eval=None):\n    return eval(f) if eval else f\n",
        "evaluation = 3\n",
    ):
        engine.write_text(solution + "\n" + honest)
        assert flagged not in borrowed.remarks(own, exercise(2), of), honest
    straight = own / "straight_line.py"  # the skeleton's vjpgrad.compile is not Python's compile
    assert borrowed.remarks(own, exercise(12), of) == []
    assert "vjpgrad.compile" in straight.read_text()


RUN_TIME_VJPGRAD = """import sys

_engine = next(m for m in list(sys.modules.values()) if hasattr(m, "vmap") and hasattr(m, "custom_op"))


def softmax_vjp(x, v):
    xs = [_engine.Value(a) for a in x]
    es = [(a - max(x)).exp() for a in xs]
    total = sum(es[1:], es[0])
    out = sum(((e / total) * w for e, w in zip(es, v)), _engine.Value(0.0))
    out.backward()
    return [a.grad for a in xs]
"""
"""Exercise 8 done with vjpgrad's engine, taken from the student's process's modules: no import of
vjpgrad, no string naming it; it passes every check of exercise 8."""


@pytest.mark.slow  # it reads many sources, each in a process of its own
def test_a_module_taken_at_run_time_without_an_import_is_flagged(tmp_path: Path) -> None:
    """vjpgrad is loaded in the student's process (the grader's code there is vjpgrad's): a file can
    take its engine from ``sys.modules``, ``__import__`` of a name put together, ``importlib``, the
    classes of ``object.__subclasses__()`` or the grader's frames and globals, with no import or
    string a reading of the file would see. Such a file is remarked on; honest code is not."""
    of = course(None)
    own = skeleton(tmp_path / "own")
    softmax = own / "softmax.py"
    flagged = f"softmax.py looks modules up at run time: {borrowed.LOOKED_UP}"
    for cheat in (
        RUN_TIME_VJPGRAD,
        "_engine = __import__('vjp' + 'grad')\n",
        "import importlib\n_engine = importlib.import_module('vjp' + 'grad')\n",
        "from importlib import import_module as im\n_engine = im('vjp' + 'grad')\n",
        "import sys as s\n_engine = getattr(s, 'mod' + 'ules')['vjp' + 'grad']\n",
        "_classes = object.__subclasses__()\n",
        "import sys\n_g = sys._getframe(1).f_globals\n",
        "import inspect\n_g = inspect.currentframe().f_back.f_globals\n",
        "import builtins\n_g = builtins.__import__.__globals__\n",
        "_spec = __loader__\n",
        "import sys\n_finders = sys.meta_path\n",
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    _g = e.__traceback__.tb_frame\n",
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    _g = getattr(e.__traceback__, 'tb_' + 'frame')\n",
        "_builtins = print.__self__\n",
        "def _f():\n    pass\n\n\n_builtins = _f.__builtins__\n",
        "import sys as s\n_m = object.__getattribute__(s, 'mod' + 'ules')\n",
    ):
        softmax.write_text(cheat)
        assert flagged in borrowed.remarks(own, exercise(8), of), cheat
    solution = (folder("solutions") / "softmax.py").read_text()
    for honest in (
        "",
        "import sys\nDEPTH = sys.getrecursionlimit()\n",
        "class Layer:\n    def __init__(self):\n        self.modules = []\n",
        "def frames(n):\n    return [n]\n",
        "class Layer:\n    def __getattr__(self, name):\n        raise AttributeError(name)\n",
    ):
        softmax.write_text(solution + "\n" + honest)
        assert flagged not in borrowed.remarks(own, exercise(8), of), honest


@pytest.mark.slow  # a grading run
def test_vjpgrads_engine_taken_at_run_time_earns_nothing_and_is_told_to_the_teacher_alone(tmp_path: Path) -> None:
    directory = skeleton(tmp_path / "class" / "mallory")
    (directory / "softmax.py").write_text(RUN_TIME_VJPGRAD)
    of = course(None)
    graded = gradebook.grade([directory], type(of)((exercise(8),)), timeout=120)
    (result,) = graded["mallory"]
    assert result.passed == 0  # vjpgrad is not loaded where exercise 8's code runs: nothing to take
    report = gradebook.results_json(graded["mallory"], of)
    (hidden,) = [t for t in report["tests"] if t["visibility"] == "hidden"]
    assert f"softmax.py looks modules up at run time: {borrowed.LOOKED_UP}" in hidden["output"]
    shown = [report["output"]] + [t["output"] for t in report["tests"] if t["visibility"] != "hidden"]
    assert not any("run time" in text for text in shown)
    (directory / "softmax.py").write_text("import importlib\n_engine = importlib.import_module('vjp' + 'grad.core')\n")
    (result,) = gradebook.grade([directory], type(of)((exercise(8),)), timeout=120)["mallory"]
    assert result.passed == 0
    assert guard.ENGINE_REMARK in result.remarks  # loading it afresh is refused, and told to the teacher


ROUTES = """import builtins
import gc
import importlib
import importlib.util
import os
import sys

NAME = "vjp" + "grad"


def _engine(found):
    value = getattr(found, "Value", None)
    if value is None or not hasattr(value, "backward"):
        raise LookupError("no engine there")
    return value(2.0) * 3


def sys_modules():
    return sys.modules[NAME].Value(2.0) * 3


def sys_modules_scanned():
    return _engine(next(m for m in list(sys.modules.values()) if hasattr(m, "vmap") and hasattr(m, "Value")))


def subclasses():
    def every(cls):
        for sub in type.__subclasses__(cls):
            yield sub
            yield from every(sub)
    value = next(c for c in every(object) if c.__name__ == "Value" and c.__module__.startswith(NAME))
    return value(2.0) * 3


def gc_objects():
    return _engine(next(o for o in gc.get_objects() if getattr(o, "__name__", "") == NAME))


def frames():
    frame = sys._getframe()
    while frame is not None:
        for value in list(frame.f_globals.values()):
            for found in (value, getattr(value, "__dict__", {}).get(NAME)):
                if hasattr(found, "Value") and hasattr(found, "vmap"):
                    return _engine(found)
        frame = frame.f_back
    raise LookupError("no frame holds it")


def the_importers_globals():
    return _engine(builtins.__import__.__globals__.get("sys").modules[NAME])


def import_module():
    return _engine(importlib.import_module(NAME))


def import_submodule():
    return _engine(importlib.import_module(NAME + ".core.value"))


def dunder_import():
    return _engine(__import__(NAME))


def the_original_import():  # the grader's import guard keeps Python's in its closure
    cells = builtins.__import__.__closure__ or ()
    original = next(c.cell_contents for c in cells if getattr(c.cell_contents, "__name__", "") == "__import__")
    return _engine(original(NAME))


def afresh():
    for name in [n for n in sys.modules if n == NAME or n.startswith(NAME + ".")]:
        del sys.modules[name]
    return _engine(importlib.import_module(NAME))


def _package():
    spec = importlib.machinery.PathFinder.find_spec(NAME)
    return os.path.dirname(spec.origin)


def by_path():
    path = os.path.join(_package(), "__init__.py")
    spec = importlib.util.spec_from_file_location(NAME, path, submodule_search_locations=[_package()])
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    spec.loader.exec_module(module)
    return _engine(module)


def from_a_copy(folder):  # a copy of vjpgrad's source elsewhere (a clone, a build)
    sys.path.insert(0, folder)
    for name in [n for n in sys.modules if n == NAME or n.startswith(NAME + ".")]:
        del sys.modules[name]
    return _engine(importlib.import_module(NAME))


def honest():
    import math
    return math.exp(0.0)
"""
"""Every way found to take vjpgrad's engine in a student's process, one function a way: each
returns ``Value(2.0) * 3`` of vjpgrad's engine, or raises."""

EVERY_ROUTE = (
    "sys_modules", "sys_modules_scanned", "subclasses", "gc_objects", "frames", "the_importers_globals",
    "import_module", "import_submodule", "dunder_import", "the_original_import", "afresh", "by_path",
)  # fmt: skip


def test_vjpgrads_engine_is_out_of_reach_where_an_exercise_may_not_use_it(tmp_path: Path) -> None:
    """Exercise 8's files may not import vjpgrad: in its student's process vjpgrad's engine was never
    loaded, so no lookup finds it, and loading it again (importlib, __import__, Python's own import
    kept in the guard's closure, by its path, from a copy of its source) is refused."""
    directory = skeleton(tmp_path / "student")
    (directory / "routes.py").write_text(ROUTES)
    copy = tmp_path / "clone" / "src"
    shutil.copytree(Path(sys.modules["vjpgrad"].__file__).parent, copy / "vjpgrad")
    context = grading._processes()
    process, ours = grading._student(context, directory, exercise(8), 60)
    try:
        routes = remote.Checks(ours).module("routes")
        assert routes.honest() == 1.0  # the grader still serves the checks
        with pytest.raises(AttributeError, match="vjpgrad is not loaded where the course runs"):
            routes.sys_modules()
        for name in ("import_submodule", "by_path"):  # its files are refused, with why
            with pytest.raises(PermissionError, match=guard.ENGINE):
                getattr(routes, name)()
        reached = {}
        for name in EVERY_ROUTE:
            with contextlib.suppress(Exception):  # any refusal will do: none may give the engine
                reached[name] = getattr(routes, name)()
        with pytest.raises(PermissionError, match=guard.ENGINE):
            reached["from_a_copy"] = routes.from_a_copy(str(copy))
        assert reached == {}, f"vjpgrad's engine reached by {sorted(reached)}"
    finally:
        ours.close()
        process.join(10)


def test_where_an_exercise_may_use_vjpgrad_its_process_has_it(tmp_path: Path) -> None:
    # exercise 10's softsign.py is a vjpgrad custom op: its process imports vjpgrad as before
    directory = skeleton(tmp_path / "student")
    (directory / "routes.py").write_text(ROUTES)
    context = grading._processes()
    process, ours = grading._student(context, directory, exercise(10), 60)
    try:
        routes = remote.Checks(ours).module("routes")
        assert routes.sys_modules() is not None  # loaded there: only flagged (the instructor's page says so)
        assert routes.import_module() is not None
    finally:
        ours.close()
        process.join(10)


def utf7(word: str) -> str:
    """``word`` as UTF-7 spells it in base64 (``exec`` is ``+AGUAeABlAGM-``): Python runs a file that
    declares ``# coding: utf-7`` as the decoded text, while the bytes read as UTF-8 say another thing."""
    import base64

    return "+" + base64.b64encode(word.encode("utf-16-be")).decode().rstrip("=") + "-"


def test_a_file_in_another_source_encoding_is_read_as_python_runs_it(tmp_path: Path) -> None:
    of = course(None)
    own = skeleton(tmp_path / "own")
    engine = own / "engine.py"
    solution = (folder("solutions") / "engine.py").read_text()

    def hand_in(body: str) -> None:
        engine.write_text("# -*- coding: utf-7 -*-\n" + body)
        compile(engine.read_bytes(), str(engine), "exec")  # Python reads it (UTF-7 writes + as +-)

    hand_in(f"{utf7('exec')}({solution.replace('+', '+-')!r})\n")
    assert f"engine.py runs code made from text: {borrowed.FROM_TEXT}" in borrowed.remarks(own, exercise(2), of)
    hand_in(f"from {utf7('vjpgrad')} import Value\n")
    assert any(r.startswith("engine.py imports vjpgrad") for r in borrowed.remarks(own, exercise(2), of))
    hidden = solution.replace("+", "+-")
    hand_in(hidden.replace("def __add__", f"def {utf7('__add__')}").replace("def __mul__", f"def {utf7('__mul__')}"))
    runs: dict[str, object] = {}
    exec(compile(engine.read_bytes(), str(engine), "exec"), runs)  # the shipped solution, as Python reads it
    assert {"__add__", "__mul__"} <= set(vars(runs["Value"]))
    assert f"engine.py (Value.__add__, Value.__mul__): {borrowed.COPIED}" in borrowed.remarks(own, exercise(2), of)


def test_what_the_teacher_is_told_of_a_file_is_told_of_the_students_modules_it_imports(tmp_path: Path) -> None:
    """An import of vjpgrad, code run from text, a ``setrecursionlimit`` or a module looked up at run
    time, moved into a module of the student's own that the exercise's file imports, is remarked on
    (naming that module) as if it were in the file; a module the exercise's files do not import
    is not that exercise's, and another exercise's file is remarked on in its own exercise."""
    of = course(None)
    own = skeleton(tmp_path / "own")
    solution = (folder("solutions") / "engine.py").read_text()
    handed_out = (own / "engine.py").read_text()
    (own / "engine.py").write_text("from helpers.more import *  # noqa\n")
    (own / "helpers").mkdir()
    (own / "helpers" / "__init__.py").write_text("")
    more = own / "helpers" / "more.py"
    for cheat, remark in (
        ("from vjpgrad import Value\n", "helpers/more.py imports vjpgrad: its checks ran without it"),
        (f"exec({solution!r})\n", f"helpers/more.py runs code made from text: {borrowed.FROM_TEXT}"),
        ("import sys\nsys.setrecursionlimit(10**5)\n", "helpers/more.py names sys.setrecursionlimit: "),
        ("import sys\nValue = sys.modules['vjp' + 'grad'].Value\n", "helpers/more.py looks modules up at run time"),
    ):
        more.write_text(cheat)
        assert any(r.startswith(remark) for r in borrowed.remarks(own, exercise(4), of)), cheat
        assert borrowed.remarks(own, exercise(8), of) == []  # softmax.py does not import it
    (own / "engine.py").write_text(handed_out)
    (own / "util.py").write_text(f"exec({solution!r})\n")
    assert borrowed.remarks(own, exercise(2), of) == []  # util.py is imported by no file of exercise 2
    (own / "softmax.py").write_text("import engine\nimport util\n")
    assert borrowed.remarks(own, exercise(8), of) == [f"util.py runs code made from text: {borrowed.FROM_TEXT}"]
    (own / "softmax.py").write_text("from " + "." * 60 + " import engine\nfrom .. import util\nimport " + "a" * 300)
    assert borrowed.remarks(own, exercise(8), of) == []  # nothing outside the submission, and no error


# ---- exercise 12 reads the def that runs, as handed in ------------------------------------------------------

WITH_A_LOOP = """

def example_1(a, b, c, v):
    y, ga, gb, gc = 0.0, 0.0, 0.0, 0.0
    for _ in range(1):
        y = 3 * a + 2 * b * b + math.log(c)
        ga, gb, gc = 3 * v, 4 * b * v, v / c
    return y, ga, gb, gc
"""


def straight_line_outcome(directory: Path) -> tuple[str, str]:
    (result,) = grading.run(directory, [exercise(12)], timeout=120)
    (check,) = [t for t in result.tests if t.name == "it_is_straight_line_code"]
    return check.outcome, check.message


@pytest.mark.slow  # a grading run
def test_a_second_def_with_a_loop_after_the_straight_one_fails_the_straight_line_check(tmp_path: Path) -> None:
    # Python runs the last def of a name: the check must read that one, not the first
    directory = solutions_in(skeleton(tmp_path / "student"))
    file = directory / "straight_line.py"
    file.write_text(file.read_text() + WITH_A_LOOP)
    outcome, message = straight_line_outcome(directory)
    assert outcome == grading.FAILED
    assert "a for loop" in message


@pytest.mark.slow  # a grading run
def test_a_file_rewritten_as_it_is_imported_is_read_as_it_was_handed_in(tmp_path: Path) -> None:
    # the loop runs; at import the module tries to write the straight-line solution over its own file
    directory = solutions_in(skeleton(tmp_path / "student"))
    file = directory / "straight_line.py"
    straight = file.read_text()
    file.write_text(
        straight
        + WITH_A_LOOP
        + (
            "\nimport pathlib as _p\n"
            f"try:\n    _p.Path(__file__).write_text({straight!r})\n"
            "except PermissionError:  # refused in the student's process (guard)\n    pass\n"
        )
    )
    outcome, message = straight_line_outcome(directory)
    assert outcome == grading.FAILED
    assert "a for loop" in message


LOOPS = """
def _steps(x, _log=math.log):
    if not isinstance(x, tuple):
        return _log(x)
    a, b, c, v = x
    grads = [0.0, 0.0, 0.0]
    for _ in range(1):  # the work done anywhere but in example_1: loops, an engine...
        grads = [3 * v, 4 * b * v, v / c]
    return (3 * a + 2 * b * b + _log(c), *grads)
"""
"""A function that does exercise 12's work with a loop; the cheats below reach it from a def that
has no loop, no call but ``math.log`` and no other function in it."""
STRAIGHT_LOOKING = {
    "math bound to another object": LOOPS + "\nclass _M:\n    log = staticmethod(_steps)\n\n\nmath = _M()\n"
    "\n\ndef example_1(a, b, c, v):\n    return math.log((a, b, c, v))\n",
    "math.log replaced": LOOPS + "\nmath.log = _steps\n\n\ndef example_1(a, b, c, v):\n"
    "    return math.log((a, b, c, v))\n",
    "math replaced through globals()": LOOPS + "\nclass _M:\n    log = staticmethod(_steps)\n\n\n"
    "globals()['math'] = _M()\n\n\ndef example_1(a, b, c, v):\n    return math.log((a, b, c, v))\n",
    "an operator of a module's object": LOOPS + "\nclass _G:\n    def __mul__(self, x):\n        return _steps(x)\n"
    "\n\nG = _G()\n\n\ndef example_1(a, b, c, v):\n    return G * (a, b, c, v)\n",
}


@pytest.mark.slow  # a grading run
@pytest.mark.parametrize("how", sorted(STRAIGHT_LOOKING))
def test_a_straight_looking_def_whose_work_is_done_elsewhere_fails_the_straight_line_check(
    tmp_path: Path, how: str
) -> None:
    directory = solutions_in(skeleton(tmp_path / "student"))
    (directory / "straight_line.py").write_text("import math\n" + STRAIGHT_LOOKING[how])
    (result,) = grading.run(directory, [exercise(12)], timeout=120)
    outcomes = {t.name: t.outcome for t in result.tests}
    assert outcomes["it_gives_vjpgrads_numbers"] == grading.PASSED  # the numbers are right
    outcome, message = straight_line_outcome(directory)
    assert outcome == grading.FAILED, how
    assert "example_1" in message


HONEST_STRAIGHT_LINES = """import math


def example_1(a, b, c, v):
    \"\"\"Forward, then backward.\"\"\"
    t1, t3 = 3 * a, 2 * b ** 2
    y: float = t1 + t3 + math.log(c)
    g_a = g_b = g_c = 0.0
    g_a += 3 * v
    g_b += 4.0 * b * v
    g_c += v / c
    return (y, g_a, g_b, +g_c)
"""


@pytest.mark.slow  # a grading run
def test_straight_line_code_written_with_tuples_augmented_assignments_and_powers_passes(tmp_path: Path) -> None:
    directory = solutions_in(skeleton(tmp_path / "student"))
    (directory / "straight_line.py").write_text(HONEST_STRAIGHT_LINES)
    (result,) = grading.run(directory, [exercise(12)], timeout=120)
    assert [t.outcome for t in result.tests] == [grading.PASSED, grading.PASSED], result.tests


@pytest.mark.slow  # a grading run
def test_the_skeletons_stub_left_above_a_correct_def_passes(tmp_path: Path) -> None:
    directory = skeleton(tmp_path / "student")
    file = directory / "straight_line.py"
    solved = (folder("solutions") / "straight_line.py").read_text()
    body = solved[solved.index("def example_1") :]
    file.write_text(file.read_text() + "\n\n" + body)
    assert file.read_text().count("def example_1") == 2
    assert straight_line_outcome(directory) == (grading.PASSED, "")


@pytest.mark.slow  # a grading run
def test_a_symbolic_link_handed_in_is_not_followed(tmp_path: Path) -> None:
    directory = solutions_in(skeleton(tmp_path / "student"))
    file = directory / "straight_line.py"
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text(file.read_text())
    file.unlink()
    file.symlink_to(elsewhere)
    outcome, message = straight_line_outcome(directory)
    assert outcome == grading.FAILED
    assert "symbolic link" in message


REMARKS_APART = """
import json, resource, sys
from pathlib import Path

resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # a file read for ever fails here, not the machine
from vjpgrad.course import borrowed
from vjpgrad.course.exercises import course, exercise

def peak():  # kB: the kernel's high-water mark of this program (ru_maxrss keeps the forked parent's)
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

remarks = borrowed.remarks(Path(sys.argv[1]), exercise(int(sys.argv[2])), course(None))
print(json.dumps([remarks, peak()]))
"""
"""The teacher's remarks on an exercise of a submission, read in a process of their own with 1 GiB of
address space: what it remarks, and the most memory it held (kB; on Linux the kernel's high-water
mark since the program started: ``ru_maxrss`` counts the test process it was forked from, over
256 MB in a run of the whole suite)."""


def remarks_apart(directory: Path, number: int) -> tuple[list[str], int] | None:
    """``borrowed.remarks`` of exercise ``number`` in ``directory`` (``REMARKS_APART``); None where it
    did not finish within 30 s (a read that waits for ever)."""
    try:
        ran = subprocess.run(
            [sys.executable, "-c", REMARKS_APART, str(directory), str(number)],
            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None
    assert ran.returncode == 0, ran.stderr
    remarks, most = json.loads(ran.stdout)
    return remarks, most


@pytest.mark.skipif(os.name != "posix", reason="a link to a device or a named pipe (POSIX)")
@pytest.mark.parametrize("target", ["/dev/zero", "a named pipe", "a shipped solution"])
def test_the_teachers_remarks_follow_no_link_and_wait_on_no_file(tmp_path: Path, target: str) -> None:
    # git stores a symbolic link (GitHub Classroom hands in repositories): one to /dev/zero or to a named
    # pipe made grade read for ever, before grading anyone; one to a solution was read as the student's
    directory = skeleton(tmp_path / "class" / "mallory")
    (directory / "derivatives.py").unlink()
    if target == "a named pipe":
        os.mkfifo(tmp_path / "pipe")
        (directory / "derivatives.py").symlink_to(tmp_path / "pipe")
    elif target == "a shipped solution":
        shutil.copyfile(folder("solutions") / "derivatives.py", tmp_path / "copy.py")
        (directory / "derivatives.py").symlink_to(tmp_path / "copy.py")
    else:
        (directory / "derivatives.py").symlink_to(target)
    found = remarks_apart(directory, 1)
    assert found is not None, "the remarks never finished"
    remarks, most = found
    assert most < 256 * 1024  # kB: nothing read from /dev/zero
    assert remarks == ["derivatives.py is a symbolic link: not read for these remarks"]


@pytest.mark.skipif(os.name != "posix", reason="the address space is limited with resource (POSIX)")
@pytest.mark.parametrize("written", ["import ", "from . import ", "x = y.", "import \\\n "])
def test_a_dotted_name_too_long_to_parse_cheaply_is_not_parsed_by_the_teacher(tmp_path: Path, written: str) -> None:
    # CPython's parser holds memory growing with the square of a dotted name's parts: a line of 200 kB,
    # import a.a.a..., took 11 GB, before anyone was graded (found by an outside review)
    directory = solutions_in(skeleton(tmp_path / "class" / "mallory"))
    source = (directory / "derivatives.py").read_text()
    (directory / "derivatives.py").write_text(source + "\n" + written + ".".join(["a"] * 100_000) + "\n")
    found = remarks_apart(directory, 1)
    assert found is not None, "the remarks never finished"
    remarks, most = found
    assert most < 512 * 1024  # kB
    assert remarks == [f"derivatives.py names a dotted name of more than {borrowed.DOTTED_PARTS} parts: not read"]


@pytest.mark.parametrize("nested", ["x = f" + "()" * 130_000, "x = a" + "+a" * 130_000, "x = a" + "[0]" * 130_000])
def test_code_nested_deeper_than_the_parser_reads_is_not_parsed_by_the_teacher(tmp_path: Path, nested: str) -> None:
    # CPython 3.10's parser has no bound on nesting: a line of 260 kB, f()()()... of 130,000 calls, overflowed
    # its C stack and killed the teacher's process, the whole class's grading with it (found by a review of
    # the grader); 3.11 and later raise RecursionError, and the file was then left out without a word
    directory = solutions_in(skeleton(tmp_path / "class" / "mallory"))
    source = (directory / "derivatives.py").read_text()
    (directory / "derivatives.py").write_text(source + "\n" + nested + "\n")
    found = remarks_apart(directory, 1)
    assert found is not None, "the remarks never finished"
    remarks, _ = found
    assert remarks == ["derivatives.py is nested deeper than Python's parser reads: not read"]


@pytest.mark.parametrize("calls", [104_700, 200_000])
def test_code_nested_just_within_what_a_parse_alone_survives_does_not_kill_the_teachers_process(
    tmp_path: Path, calls: int
) -> None:
    # on Python 3.10 a large file is parsed first by a process of its own; one parsing in its main thread
    # survived f()()()... of some 104,700 calls, where the teacher's process, deeper in its own calls,
    # did not: the teacher's parse has four times the stack of the one alone (a review of the grader)
    directory = solutions_in(skeleton(tmp_path / "class" / "mallory"))
    (directory / "helpers.py").write_text("x = f" + "()" * calls + "\n")
    assert remarks_apart(directory, 1) is not None  # finished, exit status 0


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("notes.py", "# coding: undefined\n"),  # the codec raises UnicodeError, which is no UnicodeDecodeError
        ("notes.py", "import " + "a" * 300 + ".b\n"),  # a module's folder name longer than the system takes
        ("engine.py", "# " + "a" * 40_000 + "\n"),  # one run of letters: the dotted-name search was quadratic
    ],
)
def test_the_teachers_remarks_finish_on_files_that_broke_or_stalled_them(tmp_path: Path, name: str, text: str) -> None:
    # each stopped the whole class's grade before anyone was graded, with a traceback, or for minutes
    # per file (found by a review of the grader as an adversarial student)
    directory = solutions_in(skeleton(tmp_path / "class" / "mallory"))
    with open(directory / name, "a", encoding="utf-8") as handed:
        handed.write(text)
    started = time.monotonic()
    found = remarks_apart(directory, 1)
    assert found is not None, "the remarks never finished"
    assert time.monotonic() - started < 20


def test_defs_nested_in_functions_are_not_read_for_copies(tmp_path: Path) -> None:
    # 99 defs nested in one another, in 6.6 kB, took the teacher's process 300 s of CPU for one student:
    # each nested def was read again with every def around it; the checks import what a module's top
    # level and its classes define, which is where a copy is looked for
    directory = solutions_in(skeleton(tmp_path / "class" / "mallory"))
    one = "".join(" " * k + f"def g{k}(a):\n" for k in range(99)) + " " * 99 + "a=a+1;" * 50 + "\n"
    (directory / "notes.py").write_text(one)
    started = time.monotonic()
    found = remarks_apart(directory, 1)
    assert found is not None, "the remarks never finished"
    assert time.monotonic() - started < 20
    assert found[0] == [f"derivatives.py (central_difference, step_sizes): {borrowed.COPIED}"]


@pytest.mark.slow  # it runs a remarks process until its time limit kills it (about 5 s)
def test_the_remarks_of_a_submission_are_read_by_a_process_of_their_own_with_a_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a file that declares the punycode coding (decoded in pure Python, in time quadratic in its
    # length) took 500 s of the teacher's process for one student; a thousand files importing one
    # another 25 minutes: grade reads each submission's remarks in a process with a time and memory
    # limit, and says where they were not read; the others' remarks are as before
    ok = solutions_in(skeleton(tmp_path / "class" / "alice"))
    slow = skeleton(tmp_path / "class" / "mallory")
    (slow / "notes.py").write_bytes(("# coding: punycode\nx = 1\n#" + "\u2500" * 200_000 + "\n").encode("punycode"))
    monkeypatch.setattr(borrowed, "REMARKS_SECONDS", 4.0)
    started = time.monotonic()
    assert borrowed.remarks_apart(ok, [exercise(1), exercise(2)], course(None)) == (
        [borrowed.remarks(ok, exercise(1), course(None)), borrowed.remarks(ok, exercise(2), course(None))],
        [borrowed.fingerprint(ok, exercise(1)), borrowed.fingerprint(ok, exercise(2))],
    )
    found = borrowed.remarks_apart(slow, [exercise(1), exercise(2)], course(None))
    assert time.monotonic() - started < 30
    assert found == ([[borrowed.NOT_READ_IN_TIME.format(seconds=4)]] * 2, [None, None])


def test_the_teachers_remarks_read_no_file_larger_than_the_limit(tmp_path: Path) -> None:
    directory = solutions_in(skeleton(tmp_path / "class" / "mallory"))
    source = (directory / "derivatives.py").read_text()
    assert borrowed.remarks(directory, exercise(1), course(None)) == [
        f"derivatives.py (central_difference, step_sizes): {borrowed.COPIED}"
    ]
    (directory / "derivatives.py").write_text(source + "\n" + "# padding\n" * (borrowed.LIMIT // 10))
    assert borrowed.remarks(directory, exercise(1), course(None)) == [
        f"derivatives.py is larger than {borrowed.LIMIT >> 20} MB: not read for these remarks"
    ]


def test_a_submissions_files_are_read_once_for_all_its_exercises_and_read_as_one_exercise_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # grade reads each submission's remarks and fingerprints in one process: every file handed in was
    # parsed and put in normal form again for each exercise (about 2.5 s of a submission's 2.6 s)
    of = course(None)
    chosen = [exercise(n) for n in (1, 2, 3)]  # three of them: the once is the same for twelve
    copy = solutions_in(skeleton(tmp_path / "class" / "mallory"))
    own = skeleton(tmp_path / "class" / "alice")
    one_at_a_time = {
        directory: [[borrowed.remarks(directory, ex, of), borrowed.fingerprint(directory, ex)] for ex in chosen]
        for directory in (copy, own)
    }
    assert any(remark for remark, _ in one_at_a_time[copy])  # the copy is told: the readings compared say something
    read: list[Path] = []
    definitions = borrowed._definitions

    def counted(directory: Path) -> set[str]:
        read.append(directory)
        return definitions(directory)

    monkeypatch.setattr(borrowed, "_definitions", counted)
    for directory in (copy, own):
        assert borrowed.read_submission(directory, chosen, of) == one_at_a_time[directory]
    assert read == [copy, own]  # once each, whatever the number of exercises


@pytest.mark.slow  # a grading run
def test_a_file_handed_in_as_a_symbolic_link_is_graded_as_missing_and_the_student_is_told(tmp_path: Path) -> None:
    # the Gradescope autograder leaves links out of its copy: grade treats them alike, and says so
    directory = solutions_in(skeleton(tmp_path / "class" / "mallory"))
    (directory / "mine").mkdir()
    (directory / "derivatives.py").rename(directory / "mine" / "derivatives.py")
    (directory / "derivatives.py").symlink_to(Path("mine") / "derivatives.py")
    of = course(None)
    graded = gradebook.grade([directory], type(of)((exercise(1),)), timeout=120)
    (result,) = graded["mallory"]
    assert result.score() == 0
    report = gradebook.results_json(graded["mallory"], of)
    (visible, teachers) = report["tests"]
    assert "derivatives.py is a symbolic link in the submission" in visible["output"]
    assert "derivatives.py is a symbolic link: not read for these remarks" in teachers["output"]


@pytest.mark.parametrize("number", [6, 3])  # engine.py replaced whole (exercise 6), or spliced (exercise 3)
def test_independent_grading_writes_nothing_through_a_symbolic_link_handed_in(tmp_path: Path, number: int) -> None:
    # grade --independent puts the reference solution of the earlier exercises in a copy of the
    # submission: a link handed in as engine.py must not make the teacher's process write where it points
    from vjpgrad.course import depends

    directory = skeleton(tmp_path / "class" / "mallory")
    victim = tmp_path / "teachers" / "held_out" / "check_sigmoid.py"
    victim.parent.mkdir(parents=True)
    victim.write_text("# the teacher's file\n")
    (directory / "engine.py").unlink()
    (directory / "engine.py").symlink_to(victim)
    copy = depends.reference_copy(directory, exercise(number), course(None), tmp_path / "scratch" / "mallory")
    assert victim.read_text() == "# the teacher's file\n"
    assert not (copy / "engine.py").is_symlink()


def test_independent_grading_copies_and_removes_a_folder_tree_deeper_than_python_recurses(tmp_path: Path) -> None:
    # a submission holding a/a/a/... 1,200 folders deep (never imported): shutil.copytree recursed once
    # a folder and raised RecursionError out of grade --independent, nobody graded (a review of the grader)
    from vjpgrad.course import depends, trees

    directory = solutions_in(skeleton(tmp_path / "class" / "mallory"))
    deep = directory
    for _ in range(1200):  # made a folder at a time: Path.mkdir(parents=True) recurses too
        deep = deep / "a"
        deep.mkdir()
    (deep / "x.txt").write_text("hi")
    (directory / "link.py").symlink_to("engine.py")
    try:
        copy = depends.reference_copy(directory, exercise(3), course(None), tmp_path / "scratch" / "mallory")
        assert copy.joinpath(*["a"] * 1200, "x.txt").read_text() == "hi"
        assert (copy / "link.py").is_symlink()  # a link handed in is copied as a link, never followed
        trees.removed(copy)
        assert not copy.exists()
    finally:  # pytest's own removal of old temporary folders recurses too
        for made in (directory / "a", tmp_path / "scratch"):
            if made.exists():
                trees.removed(made)


def test_independent_grading_leaves_a_file_nested_deeper_than_the_parser_reads_as_handed_in(tmp_path: Path) -> None:
    # grade --independent splices the student's definitions into the reference engine.py, parsing the
    # student's file in the teacher's process: f()()()... of 130,000 calls killed it on Python 3.10, and
    # raised RecursionError out of grade on 3.13, nobody graded (found by a review of the grader)
    directory = solutions_in(skeleton(tmp_path / "class" / "mallory"))
    handed = (directory / "engine.py").read_text() + "\nx = f" + "()" * 130_000 + "\n"
    (directory / "engine.py").write_text(handed)
    into = tmp_path / "scratch" / "mallory"
    script = (
        "import sys; from pathlib import Path; from vjpgrad.course import depends; "
        "from vjpgrad.course.exercises import course, exercise; "
        "depends.reference_copy(Path(sys.argv[1]), exercise(3), course(None), Path(sys.argv[2]))"
    )
    done = subprocess.run([sys.executable, "-c", script, str(directory), str(into)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (into / "engine.py").read_text() == handed  # not spliced: graded as handed in


def test_independent_grading_gives_no_part_of_the_reference_for_a_part_the_student_left_out(tmp_path: Path) -> None:
    # exercise 3 on the reference engine.py with the student's parts spliced in: a part missing from their
    # file kept the reference's own, and an engine without exp, log, tanh, relu and ** scored 3 of 3
    # (found by a review of the grader); without --independent it scores 0. A part their file binds
    # another way (an alias of a def of another name, an assignment after the class) is not missing:
    # splicing an alias alone broke the whole engine with a NameError (a review of the change)
    import ast

    from vjpgrad.course import depends

    directory = solutions_in(skeleton(tmp_path / "class" / "lazy"))
    tree = ast.parse((directory / "engine.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Value":
            node.body = [n for n in node.body if not (isinstance(n, ast.FunctionDef) and n.name in ("exp", "log"))]
            for n in node.body:
                if isinstance(n, ast.FunctionDef) and n.name == "tanh":
                    n.name = "_tanh"
            node.body.append(ast.parse("tanh = _tanh").body[0])
    tree.body.append(ast.parse("def _log(self):\n    return self\nValue.log = _log").body[0])
    tree.body.append(ast.parse("Value.log = _log").body[0])
    # names bound where they do not reach the class: a module's import, a local, a loop variable
    tree.body.insert(0, ast.parse("from math import exp").body[0])
    tree.body.append(ast.parse("def helper():\n    for exp in range(1):\n        pass").body[0])
    (directory / "engine.py").write_text(ast.unparse(tree) + "\n")
    handed = (directory / "engine.py").read_text()
    copy = depends.reference_copy(directory, exercise(3), course(None), tmp_path / "scratch" / "lazy")
    text = (copy / "engine.py").read_text()
    # a part bound some other way (tanh = _tanh, Value.log = _log) is no def a splice can carry: the
    # reference's own would earn its marks (an engine whose parts were all `= _not_yet` scored 8), so
    # the file is graded as handed in, exp missing as in their own file (a review of the grader)
    assert text == handed
    namespace: dict[str, Any] = {}
    exec(compile(text, str(copy / "engine.py"), "exec"), namespace)  # the copy imports, no NameError
    assert not hasattr(namespace["Value"], "exp")
    assert namespace["Value"].tanh is namespace["Value"]._tanh


@pytest.mark.parametrize("where", ["in the class", "after it", "by a loop in the class"])
def test_independent_grading_never_gives_the_references_part_for_one_aliased_to_a_stub(
    where: str, tmp_path: Path
) -> None:
    """``__add__ = __mul__ = ... = _not_yet`` in the class: every part bound, none written. Kept as the
    reference's, it scored exercises 3 to 5 (8 points) under --independent, 0 without; so did a
    file that writes the defs, then binds them to a stub after the class."""
    import ast

    from vjpgrad.course import depends

    directory = solutions_in(skeleton(tmp_path / "class" / "sneaky"))
    engine = directory / "engine.py"
    tree = ast.parse(engine.read_text())
    value = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Value")
    parts = ("tanh", "exp", "log", "relu", "__pow__", "backward")
    stub = ast.parse("def _not_yet(self, *a):\n    raise NotImplementedError").body[0]
    if where == "in the class":
        value.body = [n for n in value.body if not (isinstance(n, ast.FunctionDef) and n.name in parts)]
        value.body += [stub, ast.parse(f"{' = '.join(parts)} = _not_yet").body[0]]
    elif where == "by a loop in the class":  # rebound after the defs: the loop's target binds them
        value.body += [stub, *ast.parse(f"for ({', '.join(parts)},) in ((_not_yet,) * {len(parts)},):\n    pass").body]
    else:
        tree.body += [stub, ast.parse(" = ".join(f"Value.{p}" for p in parts) + " = _not_yet").body[0]]
    engine.write_text(ast.unparse(tree) + "\n")
    for number in (3, 4, 5):
        copy = depends.reference_copy(directory, exercise(number), course(None), tmp_path / "scratch" / f"{number}")
        assert (copy / "engine.py").read_text() == engine.read_text(), number


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="a named pipe (POSIX)")
def test_independent_grading_copies_a_submission_that_holds_a_named_pipe(tmp_path: Path) -> None:
    # a submission unpacked from an archive can hold a named pipe: copytree stopped at it, and grade with it
    from vjpgrad.course import depends

    directory = solutions_in(skeleton(tmp_path / "class" / "mallory"))
    os.mkfifo(directory / "pipe")
    copy = depends.reference_copy(directory, exercise(3), course(None), tmp_path / "scratch" / "mallory")
    assert not (copy / "pipe").exists()
    assert (copy / "engine.py").read_text() != ""


# ---- what the student's process refuses (``guard``) ---------------------------------------------------------

ATTEMPTS = """
import gc, mmap, os, socket, subprocess, sys
from pathlib import Path


def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def fork_exec():  # out of sys.modules, _posixsubprocess's function is still subprocess's
    run = getattr(subprocess, "_fork_exec", None) or subprocess._posixsubprocess.fork_exec
    run()


def memfd():
    os.memfd_create("jacobian")


def system():
    os.system("true")


def popen():
    subprocess.run(["true"], check=True)


def graders_memory():
    with open(f"/proc/{os.getppid()}/mem", "rb") as memory:
        memory.read(1)


def graders_fds():
    return os.listdir(f"/proc/{os.getppid()}/fd")


def graders_pipe_by_a_dotted_path():  # /./proc is /proc: the grader's pipes, whose reports it reads
    found = os.readlink(f"/proc/{os.getppid()}/fd/0")  # no audit event: names only
    os.close(os.open(f"/./proc/{os.getppid()}/fd/0", os.O_RDONLY | os.O_NONBLOCK))
    return found


def graders_status_by_a_double_slash():
    with open(f"//proc/{os.getppid()}/status") as status:
        return status.read()


def unix_sockets():
    with open("/proc/net/unix") as table:
        return table.read()


def own_fds_by_a_link():
    return os.listdir("/dev/fd")  # a link to /proc/self/fd


def write(path):
    with open(path, "w") as file:
        file.write("x")


def remove(path):
    os.remove(path)


def readline_written(path):  # readline's history files are read and written without an audit event
    import readline
    readline.add_history("def central_difference(f, x): ...")
    readline.write_history_file(path)


def readline_read(path):
    import readline
    readline.read_history_file(path)
    return readline.get_history_item(1)


def sqlite_written(path):  # so is a database
    import sqlite3
    sqlite3.connect(path).execute("create table t (x)")


def fifo(path):  # and a named pipe
    os.mkfifo(path)


def touched(path):
    os.utime(path, (0, 0))


def tcl():  # Tcl opens files and sockets and starts processes with no audit event
    import tkinter
    return tkinter.Tcl().eval("exec true")


def subinterpreter():  # a subinterpreter runs code without this interpreter's audit hooks
    import _xxsubinterpreters
    return _xxsubinterpreters.create()


def unix_socket():
    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)


def shared_memory():
    mmap.mmap(-1, 1 << 20)


def objects():
    return len(gc.get_objects())


def pythonapi():
    import ctypes
    return ctypes.pythonapi["Py_Set" + "Recursion" + "Limit"]


def path_like():
    return Path(__file__).read_text()


def _solutions():
    return os.path.join(os.path.dirname(sys.modules["vjp" + "grad"].__file__), "course", "solutions")


def solutions_through_a_folder():  # a folder's descriptor: the path the hook is told is relative to it
    folder = os.open(os.path.dirname(_solutions()), os.O_RDONLY)
    return os.read(os.open("solutions/engine.py", os.O_RDONLY, dir_fd=folder), 100)


def solutions_walked():
    for _, _, files, folder in os.fwalk(_solutions()):
        return os.read(os.open(files[0], os.O_RDONLY, dir_fd=folder), 100)


def proc_through_the_root():
    root = os.open("/", os.O_RDONLY)
    return os.read(os.open("proc/self/status", os.O_RDONLY, dir_fd=root), 100)


def solutions_copied_elsewhere(path):  # a copy of the package's files (a build's, another install's)
    with open(path) as copy:
        return copy.read()


def loaded_ctypes():  # vjpgrad loaded it (libm's hypot): its memmove raises no audit event
    return sys.modules["ct" + "ypes"].memmove


def the_graders_setter():
    getattr(sys.modules["vjp" + "grad.course.probe"], "_set_" + "recursion_limit")(100_000)
    return sys.getrecursionlimit()


def limit():
    return sys.getrecursionlimit()


def chroot():  # a root of its own: paths the hook reads as written lead elsewhere
    os.chroot("/tmp")


def unshare():  # a user namespace of its own, where chroot is allowed to anyone (Python 3.12 and later)
    os.unshare(os.CLONE_NEWUSER | os.CLONE_NEWNS)


def fchdir():  # another current folder, through a folder's descriptor
    os.fchdir(os.open("/", os.O_RDONLY))


def fresh_posix():  # a new copy of the posix module, its functions C's own again
    import _imp
    import importlib.machinery as machinery
    fresh = _imp.create_builtin(machinery.ModuleSpec("po" + "six", machinery.BuiltinImporter))
    fresh.chroot("/tmp")


def fresh_posix_by_the_original():  # the C function the guarded create_builtin holds, taken from it
    import _imp
    import importlib.machinery as machinery
    original = _imp.create_builtin.__defaults__[0]
    original(machinery.ModuleSpec("po" + "six", machinery.BuiltinImporter)).chroot("/tmp")


def fresh_imp():  # a new _imp, whose create_builtin is C's again, then posix from it
    import _imp
    from types import SimpleNamespace
    fresh = _imp.create_builtin(SimpleNamespace(name="_imp"))
    fresh.create_builtin(SimpleNamespace(name="po" + "six")).chroot("/tmp")


def fresh_sys():  # a new sys, whose setrecursionlimit is C's again
    import _imp
    from types import SimpleNamespace
    _imp.create_builtin(SimpleNamespace(name="sys")).setrecursionlimit(100_000)


def original_through_a_traceback():  # the frames of a refusal, and what their locals hold
    import _imp
    from types import SimpleNamespace
    try:
        _imp.create_builtin(SimpleNamespace(name="po" + "six"))
    except PermissionError as refused:
        tb = refused.__traceback__
        while tb is not None:
            for value in tb.tb_frame.f_locals.values():
                if callable(value) and getattr(value, "__name__", "") in ("made", "create_builtin"):
                    for given in ("po" + "six", SimpleNamespace(name="po" + "six")):
                        try:
                            module = value(given)
                        except Exception:
                            module = None
                        if module is not None:
                            module.chroot("/tmp")
                            return "chroot through the traceback"
            tb = tb.tb_next
    raise PermissionError(
        "nothing in the traceback made posix: the course runs your code with nothing but the checks' requests: "
        "no other process, file written, socket, /proc or raw memory"
    )


def login_tty():  # a session of its own (setsid) without os.setsid
    os.login_tty(os.openpty()[1])


def graders_priority():  # the grader's process, slowed down (or, as root, sped up)
    os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)


def graders_cores():
    os.sched_setaffinity(os.getppid(), {0})


def another_user():
    os.setuid(os.getuid())


def terminal_keys():  # typed into the teacher's terminal, run by the teacher's shell once grade exits
    import fcntl, termios
    for fd in (0, 1, 2):
        fcntl.ioctl(fd, termios.TIOCSTI, b"i")


def terminal():  # a terminal opened to read, then keys typed into it (TIOCSTI) or its settings changed
    os.close(os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY))


def devices():  # what a program of numbers may read: nothing, zeros, random bytes
    for path in ("/dev/null", "/dev/zero", "/dev/urandom"):
        with open(path, "rb") as device:
            device.read(1)
    return "read"


def honest():
    import json, math
    with open(__file__) as source:
        lines = source.read().count("\\n")
    return json.dumps([math.exp(0.0), lines > 10])
"""
"""What a student's code may try in the process the course runs it in, one function a way."""


def test_the_students_process_refuses_what_reaches_outside_it_naming_the_rule(tmp_path: Path) -> None:
    directory = skeleton(tmp_path / "student")
    (directory / "attempts.py").write_text(ATTEMPTS)
    (tmp_path / "grader.txt").write_text("the grader's")
    context = grading._processes()
    process, ours = grading._student(context, directory, exercise(2), 60)
    try:
        checks = remote.Checks(ours)
        attempts = checks.module("attempts")
        assert attempts.honest() == "[1.0, true]"  # reading its own files, importing, computing: as before
        assert attempts.devices() == "read"  # the devices a program of numbers may read
        assert "def path_like" in attempts.path_like()  # by pathlib too
        refused = {}
        for name in (
            "fork", "fork_exec", "memfd", "system", "popen", "graders_memory", "graders_fds", "unix_sockets",
            "graders_pipe_by_a_dotted_path", "graders_status_by_a_double_slash",
            "own_fds_by_a_link", "unix_socket", "shared_memory", "objects", "pythonapi",
            "solutions_through_a_folder", "solutions_walked", "proc_through_the_root", "tcl", "subinterpreter",
            "chroot", "fchdir", "graders_priority", "graders_cores", "another_user", "fresh_posix", "terminal_keys",
            "terminal", "fresh_posix_by_the_original", "fresh_imp", "fresh_sys", "original_through_a_traceback",
            *(["login_tty"] if hasattr(os, "login_tty") else []),  # Python 3.11 and later
            *(["unshare"] if hasattr(os, "unshare") else []),  # Python 3.12 and later
        ):  # fmt: skip
            with pytest.raises(PermissionError) as error:
                getattr(attempts, name)()
            refused[name] = str(error.value)
        elsewhere = tmp_path / "build" / "lib" / "vjpgrad" / "course" / "solutions" / "engine.py"
        elsewhere.parent.mkdir(parents=True)
        elsewhere.write_text("the reference engine")
        for name, path in (
            ("write", tmp_path / "written.txt"),
            ("remove", tmp_path / "grader.txt"),
            ("solutions_copied_elsewhere", elsewhere),
            ("readline_written", tmp_path / "history.py"),
            ("readline_read", elsewhere),
            ("sqlite_written", tmp_path / "written.db"),
            ("fifo", tmp_path / "fifo"),
            ("touched", tmp_path / "grader.txt"),
        ):
            with pytest.raises(PermissionError) as error:
                getattr(attempts, name)(str(path))
            refused[name] = str(error.value)
        assert all(guard.RULE in text for text in refused.values()), refused
        said = {  # what each refusal names
            "fork": "os.fork (starting a process) is refused",
            "graders_memory": "under /proc",
            "graders_pipe_by_a_dotted_path": "under /proc",
            "graders_status_by_a_double_slash": "under /proc",
            "own_fds_by_a_link": "under /proc",
            "write": "to write it",
            "solutions_through_a_folder": "opening a folder",
            "proc_through_the_root": "opening a folder",
            "solutions_copied_elsewhere": guard.SOLUTIONS,
            "tcl": "importing tkinter",
            "subinterpreter": "importing _xxsubinterpreters",
            "readline_written": "importing readline",
            "readline_read": "importing readline",
            "sqlite_written": "importing sqlite3",
            "fifo": "unseen (no audit event)",
            "chroot": "the process's root, namespaces, user or priority",
            "graders_priority": "the process's root, namespaces, user or priority",
            "fresh_posix": "making a built-in module anew (_imp.create_builtin) is refused",
            "fresh_imp": "making a built-in module anew (_imp.create_builtin) is refused",
            "fresh_sys": "making a built-in module anew (_imp.create_builtin) is refused",
            "fresh_posix_by_the_original": "reading the __defaults__ of a function the checks run",
            "touched": "os.utime (changing files) is refused",
            "terminal_keys": "fcntl.ioctl",
            "terminal": "opening a device",
        }
        assert {name: text for name, text in said.items() if text not in refused[name]} == {}
        for written in ("written.txt", "history.py", "written.db", "fifo"):
            assert not (tmp_path / written).exists(), written
        assert (tmp_path / "grader.txt").stat().st_mtime > 0
        assert (tmp_path / "grader.txt").read_text() == "the grader's"
        with pytest.raises(AttributeError):  # no reference to the interpreter's setter is left there
            attempts.the_graders_setter()
        assert attempts.limit() == 1_000
        with pytest.raises(KeyError):  # ctypes, loaded by the grader, is no longer among the modules
            attempts.loaded_ctypes()
    finally:
        ours.close()
        process.join(10)


UNDOING = """
import os, posixpath, signal, sys


def _refused_still():
    import ctypes  # refused while the hook holds: PermissionError
    return "ctypes imported: the hook was undone"


def _guards(frame):  # the frames of the hook, up from a frame
    while frame is not None:
        if frame.f_code.co_filename.endswith("guard.py"):
            yield frame
        frame = frame.f_back


def _emptied(function):  # a function's code, made to do nothing, with the same free variables
    names = function.__code__.co_freevars
    made = "".join(f"    {name} = None\\n" for name in names)
    used = f"        {', '.join(names)}\\n" if names else ""
    space = {}
    exec(f"def outer():\\n{made}    def inner(*a, **k):\\n{used}        return None\\n    return inner\\n", space)
    return space["outer"]().__code__


def by_a_hash():  # a module's name whose __hash__ runs inside the hook, reaches its frames, empties its code
    found = []

    class Name(str):
        def __hash__(self):
            for frame in _guards(sys._getframe(1)):
                found.extend(v for v in frame.f_locals.values() if hasattr(v, "__code__"))
            return str.__hash__(self)

    try:
        __import__(Name("no_such_module_anywhere"))
    except ImportError:
        pass
    for function in found:
        try:
            function.__code__ = _emptied(function)
        except (PermissionError, ValueError):
            pass
    return _refused_still()


def by_its_traceback():  # a refusal's traceback holds the hook's frames; 3.13 writes their variables through
    try:
        import ctypes
    except PermissionError as error:
        traceback = error.__traceback__
        while traceback is not None:
            frame = traceback.tb_frame
            if frame.f_code.co_filename.endswith("guard.py"):
                for name, value in list(frame.f_locals.items()):
                    if isinstance(value, (frozenset, set)):
                        emptied = frozenset()
                    elif hasattr(value, "keys"):
                        emptied = {}
                    elif callable(value):
                        emptied = lambda *a, **k: None
                    else:
                        continue
                    try:
                        frame.f_locals[name] = emptied
                    except Exception:
                        pass
            traceback = traceback.tb_next
    return _refused_still()


def _hooks_functions():  # the functions the hook runs, from the frames a refusal's traceback holds
    try:
        os.kill(os.getpid(), 0)
    except PermissionError as error:
        found, traceback = [], error.__traceback__
        while traceback is not None:
            frame = traceback.tb_frame
            if frame.f_code.co_filename.endswith("guard.py"):
                found.extend(v for v in frame.f_locals.values() if type(v) is type(_guards))
            traceback = traceback.tb_next
        if found:
            return found
    raise AssertionError("no function of the hook found: the attempt would prove nothing")


def by_replacing_code():  # the code of a function the hook runs replaced by code that refuses nothing
    for function in _hooks_functions():
        function.__code__ = (lambda *a, **k: None).__code__
    return _refused_still()


def by_tracing():  # a trace function runs between the lines of the hook, its frame in hand
    sys.settrace(lambda frame, event, arg: None)


def by_a_signal():  # so does a signal's handler
    signal.signal(signal.SIGALRM, lambda number, frame: None)


def by_other_threads():
    return sys._current_frames()


def by_the_tables_own_dict():  # a mappingproxy's == hands its dict to the other side's __eq__
    class Grab:
        got = []

        def __eq__(self, other):
            Grab.got.append(other)
            return False

        __hash__ = object.__hash__

    try:
        os.kill(os.getpid(), 0)
    except PermissionError as error:
        traceback = error.__traceback__
        while traceback is not None:
            for value in list(traceback.tb_frame.f_locals.values()):
                for item in (value if type(value) is tuple else (value,)):
                    item == Grab()
            traceback = traceback.tb_next
    for found in Grab.got:
        if type(found) is dict:
            found.clear()
    os.kill(os.getpid(), 0)  # refused while the hook's table holds


def by_a_finalizer(path):  # a cycle's __del__, run by a collection inside the hook, changes what it resolved
    import gc
    armed, keep = [True], []

    class Pad:
        pass

    class Bomb:
        def __init__(self):
            self.me = self

        def __del__(self):
            if not armed[0]:
                return
            keep.append([Pad() for _ in range(50)])
            frame = sys._getframe(1)
            while frame is not None:
                if frame.f_code.co_filename.endswith("guard.py"):
                    for value in list(frame.f_locals.values()):
                        if type(value) is list and value and all(type(v) is str for v in value):
                            value.clear()
                            value.append("tmp")
                frame = frame.f_back
            Bomb()

    gc.set_threshold(1)
    Bomb()
    keep.append([Pad() for _ in range(50)])
    try:
        with open(path, "rb") as file:
            return file.read(60)
    finally:
        armed[0] = False
        gc.set_threshold(700, 10, 10)


def by_changing_folder():  # the hook reads a relative path against the folder another thread may change
    os.chdir("/")


def by_deleting_defaults():  # what a function the hook runs reads, in its defaults, taken away
    for function in _hooks_functions():
        del function.__defaults__
    return _refused_still()


def by_replacing_defaults():
    for function in _hooks_functions():
        if function.__defaults__:
            function.__defaults__ = tuple(None for _ in function.__defaults__)
    return _refused_still()


def own_functions():  # a student's own functions' defaults and code are theirs to set (namedtuple's defaults)
    import collections
    import typing

    def f(x=1):
        return x

    f.__defaults__ = (2,)
    f.__kwdefaults__ = None
    g = lambda: 3  # noqa: E731
    g.__code__ = f.__code__
    Point = collections.namedtuple("Point", "x y", defaults=(0.0,))

    class Pair(typing.NamedTuple):
        a: float
        b: float = 1.0

    del f.__defaults__
    return f.__defaults__, g(5), tuple(Point(1.0)), tuple(Pair(2.0))


def by_a_renamed_module():  # the loader finds PyInit__ctypes by the name's last part: "renamed._ctypes"
    import importlib.util
    folder = os.path.join(os.path.dirname(os.__file__), "lib-dynload")
    found = [n for n in os.listdir(folder) if n.startswith("_ctypes.") and n.endswith(".so")]
    spec = importlib.util.spec_from_file_location("renamed._ctypes", os.path.join(folder, found[0]))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return "loaded _ctypes under another name"


def by_a_folders_descriptor(solutions):  # os.scandir holds the folder's descriptor: a dir_fd open is unchecked
    listing = os.scandir(solutions)
    for fd in range(3, 64):
        try:
            return os.read(os.open("engine.py", os.O_RDONLY, dir_fd=fd), 60)
        except OSError:
            continue
    listing.close()


def by_a_process_descriptor():  # a signal sent through a pidfd raises no audit event
    import signal
    signal.pidfd_send_signal(os.pidfd_open(os.getppid()), 0)


def by_bytecode():  # a code object's bytes are not checked: a LOAD_CONST out of range reads any address
    return (lambda: 0).__code__.replace(co_code=bytes(4))


def by_a_semaphores_name():  # _multiprocessing removes /dev/shm's files with no audit event
    import _multiprocessing
    _multiprocessing.sem_unlink("/vjpgrad-no-such-semaphore")


def by_a_lone_pyc():  # a .pyc with no source is loaded by marshal, its bytecode unchecked
    import lone
    return lone.which()


def planted():  # its __pycache__ holds a .pyc made from other code than its .py
    import helper
    return helper.which()


def inherited_pipes():  # the fork server's pipes (the resource tracker's, its own) reach processes outside
    import stat
    found = []
    for fd in range(3, 256):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISFIFO(mode):
            found.append(fd)
    return found


def ctypes_left():  # the classes of _ctypes, reachable from object while any ctypes object lives
    seen, found, pending = set(), [], [object]
    while pending:
        kind = pending.pop()
        for sub in type.__subclasses__(kind):
            if id(sub) not in seen:
                seen.add(id(sub))
                pending.append(sub)
                if getattr(sub, "__module__", "") in ("_ctypes", "ctypes"):
                    found.append(sub.__name__)
    return sorted(found)


def by_rebinding_builtins(path):  # the hook's len() answering 0: an open's mode unread
    import builtins
    length = builtins.len
    builtins.len = lambda x: 0
    try:
        with open(path, "w") as file:
            file.write("written")
    finally:
        builtins.len = length


def by_rebinding(solutions):  # realpath's helpers, and the guard's own functions, rebound to say "elsewhere"
    guard = sys.modules["vjp" + "grad.course.guard"]
    for name in [n for n in vars(guard) if n.startswith("_") and callable(getattr(guard, n))]:
        setattr(guard, name, lambda *a, **k: None)
    posixpath.abspath = lambda path: "/nowhere"
    posixpath.normpath = lambda path: "/nowhere"
    if hasattr(posixpath, "_joinrealpath"):
        posixpath._joinrealpath = lambda *a, **k: ("/nowhere", True)
    os.lstat = lambda *a, **k: os.stat("/")
    with open(os.path.join(solutions, "engine.py")) as file:
        return file.read()


def by_rebinding_words(path):  # what the guard's functions return to refuse, rebound to None: "nothing refused"
    guard = sys.modules["vjp" + "grad.course.guard"]
    for name in [n for n in vars(guard) if isinstance(getattr(guard, n), str)]:
        setattr(guard, name, None)
    with open(path) as file:
        return file.read()
"""
"""What a student's code may try to undo the hook itself: run code of its own inside the hook and
reach the hook's frames, change what the hook reads, or run code between the hook's lines."""


@pytest.mark.parametrize(
    "attempt",
    [
        "by_a_hash", "by_its_traceback", "by_replacing_code", "by_tracing", "by_a_signal", "by_other_threads",
        "by_the_tables_own_dict", "by_changing_folder", "by_deleting_defaults", "by_replacing_defaults",
        "by_a_renamed_module", "by_a_process_descriptor", "by_bytecode", "by_a_semaphores_name",
    ],
)  # fmt: skip
def test_the_students_code_cannot_undo_the_hook(tmp_path: Path, attempt: str) -> None:
    with students_module(tmp_path, "undoing", UNDOING) as undoing, pytest.raises(PermissionError) as refused:
        getattr(undoing, attempt)()
    assert guard.RULE in str(refused.value)


def test_the_students_own_functions_code_and_defaults_are_theirs_to_set(tmp_path: Path) -> None:
    # the hook refuses a new code or defaults for the functions it runs, not for the student's own:
    # collections.namedtuple(defaults=...) and typing.NamedTuple's defaults set a function's __defaults__
    with students_module(tmp_path, "undoing", UNDOING) as undoing:
        defaults, called, point, pair = undoing.own_functions()
    assert defaults is None
    assert called == 5
    assert tuple(point) == (1.0, 0.0)
    assert tuple(pair) == (2.0, 1.0)


def test_a_copy_of_vjpgrad_as_an_archive_or_in_the_clones_history_is_not_read(tmp_path: Path) -> None:
    # a wheel of vjpgrad holds the reference solutions, and so does the .git of the clone it is installed
    # from: neither is the student's to read, whether or not the exercise may use vjpgrad
    hook = guard._hook(os.stat, os.path.realpath, "/solutions/", {}, frozenset(), "the rule", None)
    with pytest.raises(PermissionError, match=re.escape(guard.SOLUTIONS)):
        hook("open", (str(tmp_path / "cache" / "vjpgrad-0.1.0-py3-none-any.whl"), "r", 0))
    clone = guard.clone_history(str(folder("solutions")))
    if clone is None:
        pytest.skip("vjpgrad is not installed from a clone here")
    reading = f"def read():\n    return open({str(Path(clone) / 'HEAD')!r}).read()\n"
    with students_module(tmp_path, "history", reading) as history, pytest.raises(PermissionError, match=guard.KEPT):
        history.read()


def test_a_folders_descriptor_gives_no_file_the_hook_did_not_see(tmp_path: Path) -> None:
    with students_module(tmp_path, "undoing", UNDOING) as undoing, pytest.raises(PermissionError) as refused:
        undoing.by_a_folders_descriptor(str(folder("solutions")))
    assert guard.RULE in str(refused.value)


def test_no_object_of_ctypes_lives_in_a_fresh_students_process(tmp_path: Path) -> None:
    # a ctypes object made before the hook keeps _ctypes's classes reachable (type.__subclasses__), and with
    # them raw memory: vjpgrad loads the C library's hypot at its first call, never at import (a process
    # from the fork server holds what the server imported, which in some environments loads ctypes: the
    # instructor's page says so)
    with students_module(tmp_path, "undoing", UNDOING, 2) as undoing:
        assert undoing.ctypes_left() == []


def test_the_students_bytecode_is_compiled_from_their_source_never_read_from_a_pyc(tmp_path: Path) -> None:
    # a .pyc is bytecode nobody checks (a LOAD_CONST out of range reads any address): a planted
    # __pycache__ beside a .py is not read, and a .pyc with no source is not loaded
    import importlib.util

    directory = skeleton(tmp_path / "student")
    (directory / "undoing.py").write_text(UNDOING)
    source = directory / "helper.py"
    source.write_text("def which():\n    return 'from the source'\n")
    planted = compile("def which():\n    return 'from the pyc'\n", str(source), "exec")
    stat = source.stat()
    cache = Path(importlib.util.cache_from_source(str(source)))
    cache.parent.mkdir()
    data = importlib._bootstrap_external._code_to_timestamp_pyc(planted, stat.st_mtime, stat.st_size)  # type: ignore[attr-defined]
    cache.write_bytes(bytes(data))
    lone = importlib._bootstrap_external._code_to_timestamp_pyc(planted, 0, 0)  # type: ignore[attr-defined]
    (directory / "lone.pyc").write_bytes(bytes(lone))
    context = grading._processes()
    process, ours = grading._student(context, directory, exercise(2), 60)
    try:
        undoing = remote.Checks(ours).module("undoing")
        assert undoing.planted() == "from the source"
        with pytest.raises((PermissionError, ImportError)):
            undoing.by_a_lone_pyc()
    finally:
        ours.close()
        process.join(10)


@pytest.mark.parametrize("number", [2, 10])  # a fresh interpreter, and the fork server's
def test_the_students_process_holds_no_pipe_to_a_process_outside_it(tmp_path: Path, number: int) -> None:
    # the resource tracker's pipe unlinked /dev/shm's files as the grader, and the fork server's own
    # pipe killed it; the student's process keeps only its channel and /dev/null
    with students_module(tmp_path, "undoing", UNDOING, number) as undoing:
        assert undoing.inherited_pipes() == []


def test_rebinding_what_the_hook_calls_does_not_change_what_it_refuses(tmp_path: Path) -> None:
    solutions = folder("solutions")
    with students_module(tmp_path, "undoing", UNDOING) as undoing:
        with pytest.raises(PermissionError) as refused:
            undoing.by_rebinding_builtins(str(tmp_path / "written.txt"))
        assert "to write it" in str(refused.value)
        assert not (tmp_path / "written.txt").exists()
        with pytest.raises(PermissionError) as refused:
            undoing.by_a_finalizer(str(solutions / "engine.py"))
        assert guard.SOLUTIONS in str(refused.value)
        with pytest.raises(PermissionError) as refused:
            undoing.by_rebinding(str(solutions))
        assert guard.SOLUTIONS in str(refused.value)
        with pytest.raises(PermissionError) as refused:
            undoing.by_rebinding_words(str(solutions / "engine.py"))
        assert guard.SOLUTIONS in str(refused.value)


LYING_SCORES = """


_honest_train = train


class _Yes:
    def __eq__(self, other):
        return True


class _Data:
    def __gt__(self, other):
        return _Yes()


class _Out:
    data = _Data()


class _Model:
    def __call__(self, x):
        return _Out()


def train(points, labels, steps=60):
    if steps <= 2:  # the zero-gradients check's short run sees honest training
        return _honest_train(points, labels, steps)
    return _Model(), [1.0, 0.1]  # no training at all
"""
"""The end of an mlp.py whose model's scores answer every comparison "right"."""


@pytest.mark.slow  # a grading run: exercise 11 trains
def test_scores_that_answer_every_comparison_right_earn_no_accuracy(tmp_path: Path) -> None:
    # the comparisons of exercise 11's accuracy ran on the student's objects, in the student's process
    directory = solutions_in(skeleton(tmp_path / "student"))
    (directory / "mlp.py").write_text((directory / "mlp.py").read_text() + LYING_SCORES)
    (result,) = grading.run(directory, [exercise(11)], timeout=120)
    outcomes = {t.name: t for t in result.tests}
    accuracy = outcomes["at_least_95_percent_of_the_points_are_right"]
    assert accuracy.outcome == grading.FAILED
    assert "model(point).data" in accuracy.message


GIVING_UP = """


def _recursive_backward(self):  # micrograd's recursive topological sort, the bug the chain exists to catch
    order, seen = [], set()

    def build(node):
        if node not in seen:
            seen.add(node)
            for child in node._prev:
                build(child)
            order.append(node)

    try:
        build(self)
    except RecursionError:
        _give_up()
        return
    self.grad = 1.0
    for node in reversed(order):
        node._backward()


Value.backward = _recursive_backward
"""
"""An engine.py tail: a recursive backward that, where it fails, calls the ``_give_up`` written before it."""

AGREEING_GRADIENTS = (
    """


class _Whatever:  # answers every comparison yes, and shows itself as the number asked for
    def __eq__(self, other):
        return True

    def __float__(self):
        return 1.0

    def __repr__(self):
        return "1.0"


def _give_up():  # from now on every gradient claims to be what it is compared with
    Value.grad = property(lambda node: _Whatever(), lambda node, g: None)
"""
    + GIVING_UP
)
"""An engine.py tail: a recursive backward that, where it fails, leaves gradients that claim any number."""


def test_gradients_that_answer_every_comparison_right_earn_no_chain(tmp_path: Path) -> None:
    # exercise 4's check compared x.grad == 1.0 on the student's object, in the student's process
    directory = solutions_in(skeleton(tmp_path / "student"))
    (directory / "engine.py").write_text((directory / "engine.py").read_text() + AGREEING_GRADIENTS)
    (result,) = grading.run(directory, [exercise(4)], timeout=120)
    outcomes = {t.name: t for t in result.tests}
    chain = outcomes["a_chain_of_10_000_links_works_at_the_default_recursion_limit"]
    assert chain.outcome == grading.FAILED, chain
    assert "_Whatever, not a number" in chain.message, chain.message


ONES_FOR_A_CHAIN = (
    """


_MADE = []
_honest_init = Value.__init__


def _noted_init(self, *args, **kwargs):
    _honest_init(self, *args, **kwargs)
    _MADE.append(self)


Value.__init__ = _noted_init


def _give_up():  # the answer a chain of x * 1.0 * 1.0 ... expects
    for value in _MADE:
        value.grad = 1.0
"""
    + GIVING_UP
)
"""An engine.py tail (a second review's): a recursive backward that guesses the deep chain's answer."""


def test_a_backward_that_guesses_the_deep_chains_gradient_earns_no_chain(tmp_path: Path) -> None:
    directory = solutions_in(skeleton(tmp_path / "student"))
    (directory / "engine.py").write_text((directory / "engine.py").read_text() + ONES_FOR_A_CHAIN)
    (result,) = grading.run(directory, [exercise(4)], timeout=120)
    chain = {t.name: t for t in result.tests}["a_chain_of_10_000_links_works_at_the_default_recursion_limit"]
    assert chain.outcome == grading.FAILED, chain


SCALED_LOOKUP = """


class _Lookup:  # the nearest training point's label, times a parameter held at 1: at 0, it scores 0
    def __init__(self, seen, held):
        self.seen, self.held = seen, held

    def __call__(self, x):
        nearest = min(self.seen, key=lambda s: (s[0][0] - x[0]) ** 2 + (s[0][1] - x[1]) ** 2)
        return self.held[0] * float(nearest[1])

    def parameters(self):
        return self.held


def train(points, labels, steps=60):
    held = [Value(1.0)]
    for _ in range(2):
        loss = held[0] * 0.0
        held[0].grad = 0.0
        loss.backward()
    return _Lookup([(list(p), label) for p, label in zip(points, labels)], held), [1.0, 0.1]
"""
"""An mlp.py tail (a second review's): the lookup, its scores made to depend on one parameter."""


def test_a_lookup_scaled_by_a_parameter_earns_no_mlp(tmp_path: Path) -> None:
    directory = solutions_in(skeleton(tmp_path / "student"))
    (directory / "mlp.py").write_text((directory / "mlp.py").read_text() + SCALED_LOOKUP)
    (result,) = grading.run(directory, [exercise(11)], timeout=120)
    outcomes = {t.name: t for t in result.tests}
    assert outcomes["the_scores_come_from_the_parameters"].outcome == grading.PASSED  # what it fooled
    layers = outcomes["the_scores_are_the_mlps_layers_of_neurons"]
    assert layers.outcome == grading.FAILED, layers
    assert "model.layers" in layers.message, layers.message


LAYERS_READ_AS_ASKED = """


_LABELS = []


class _Neuron:
    def __init__(self, b):
        self.w, self.b, self.nonlin = [Value(0.0), Value(0.0)], Value(b), False


class _Layer:
    def __init__(self, b):
        self.neurons = [_Neuron(b)]


class _Shown:  # layers that answer each read with the next point's label as a bias
    def __init__(self, table):
        self.table, self.w, self.reads = table, [Value(1.0)], 0

    @property
    def layers(self):
        label = list(self.table.values())[self.reads % len(self.table)]
        self.reads += 1
        return [_Layer(float(label) * self.w[0].data)]

    def parameters(self):
        return list(self.w)

    def __call__(self, x):
        return self.w[0] * float(self.table.get(tuple(x), 1))


def train(points, labels, steps=60):
    model = _Shown({tuple(p): label for p, label in zip(points, labels)})
    for _ in range(2):
        loss = model.w[0] * 0.0
        model.w[0].grad = 0.0
        loss.backward()
    return model, [1.0, 0.1]
"""
"""An mlp.py tail (a third review's): layers whose every read answers the point the check works out next."""


def test_layers_that_answer_each_read_anew_earn_no_mlp(tmp_path: Path) -> None:
    directory = solutions_in(skeleton(tmp_path / "student"))
    (directory / "mlp.py").write_text((directory / "mlp.py").read_text() + LAYERS_READ_AS_ASKED)
    (result,) = grading.run(directory, [exercise(11)], timeout=120)
    layers = {t.name: t for t in result.tests}["the_scores_are_the_mlps_layers_of_neurons"]
    assert layers.outcome == grading.FAILED, layers


NO_NETWORK = """


class _Lookup:  # the nearest point seen in training: its label
    def __init__(self, seen, parameters):
        self.seen, self.held = seen, parameters

    def __call__(self, x):
        nearest = min(self.seen, key=lambda s: (s[0][0] - x[0]) ** 2 + (s[0][1] - x[1]) ** 2)
        return Value(float(nearest[1]))

    def parameters(self):
        return self.held


def train(points, labels, steps=60):
    held = [Value(0.5) for _ in range(HELD)]
    for _ in range(2):
        loss = sum((p * p for p in held), Value(0.0))
        for p in held:
            p.grad = 0.0
        loss.backward()
    return _Lookup([(list(p), label) for p, label in zip(points, labels)], held), [1.0, 0.1]
"""
"""An mlp.py tail: no network at all, the training points remembered, ``HELD`` parameters that do nothing."""


@pytest.mark.parametrize("held", [0, 3], ids=["no parameters", "parameters that do nothing"])
def test_a_lookup_of_the_training_points_earns_no_mlp(tmp_path: Path, held: int) -> None:
    # exercise 11 measured the accuracy on the points train() was given: remembering them scored 3/3
    directory = solutions_in(skeleton(tmp_path / "student"))
    (directory / "mlp.py").write_text((directory / "mlp.py").read_text() + f"\nHELD = {held}\n" + NO_NETWORK)
    (result,) = grading.run(directory, [exercise(11)], timeout=120)
    outcomes = {t.name: t for t in result.tests}
    assert outcomes["at_least_95_percent_of_the_points_are_right"].outcome == grading.PASSED  # what it fooled
    scores = outcomes["the_scores_come_from_the_parameters"]
    assert scores.outcome == grading.FAILED, scores
    said = "model.parameters() is empty" if not held else "still score other than 0"
    assert said in scores.message, scores.message


# ---- exercise 8's Jacobian kept where the count does not look, or in fewer bits -----------------------------

HONEST_SMALL = (
    "import math\nimport os\nimport struct\n\n\n"
    "def _softmax(x):\n"
    "    m = max(x)\n"
    "    e = [math.exp(t - m) for t in x]\n"
    "    return [t / sum(e) for t in e]\n\n\n"
    "def _row(s, i):\n"
    "    return [s[i] * ((i == j) - s[j]) for j in range(len(s))]\n\n\n"
    "def softmax_vjp(x, v):\n"
    "    if len(x) < 100:  # the small inputs' checks see an honest answer\n"
    "        s = _softmax(x)\n"
    "        dot = sum(a * b for a, b in zip(v, s))\n"
    "        return [b * (a - dot) for a, b in zip(v, s)]\n"
    "    return _jacobian_vjp(x, v)\n\n\n"
)
"""The head of a softmax.py that builds the Jacobian only on large inputs (``_jacobian_vjp``)."""

IN_A_CHILD = (
    "def _jacobian_vjp(x, v):\n"
    "    n = len(x)\n"
    "    read, write = os.pipe()\n"
    "    pid = os.fork()\n"
    "    if pid == 0:  # a child's memory is not the student's process's\n"
    "        s = _softmax(x)\n"
    "        jacobian = [_row(s, i) for i in range(n)]\n"
    "        out = [sum(v[i] * jacobian[i][j] for i in range(n)) for j in range(n)]\n"
    "        os.write(write, struct.pack(f'{n}d', *out))\n"
    "        os._exit(0)\n"
    "    os.close(write)\n"
    "    data = b''\n"
    "    while len(data) < 8 * n:\n"
    "        data += os.read(read, 8 * n - len(data))\n"
    "    os.waitpid(pid, 0)\n"
    "    return list(struct.unpack(f'{n}d', data))\n"
)

IN_A_FILE = (
    "def _jacobian_vjp(x, v):\n"
    "    n = len(x)\n"
    "    s = _softmax(x)\n"
    "    path = f'/dev/shm/softmax-{os.getpid()}'\n"
    "    with open(path, 'wb') as file:  # n x n doubles in memory the process does not hold\n"
    "        for i in range(n):\n"
    "            file.write(struct.pack(f'{n}d', *_row(s, i)))\n"
    "    out = [0.0] * n\n"
    "    with open(path, 'rb') as file:\n"
    "        for i in range(n):\n"
    "            row = struct.unpack(f'{n}d', file.read(8 * n))\n"
    "            for j in range(n):\n"
    "                out[j] += v[i] * row[j]\n"
    "    os.remove(path)\n"
    "    return out\n"
)

IN_HALF_PRECISION = (
    "def _jacobian_vjp(x, v):\n"
    "    n = len(x)\n"
    "    s = _softmax(x)\n"
    "    jacobian = bytearray(2 * n * n)  # 2 MB: under the limit\n"
    "    for i in range(n):\n"
    "        struct.pack_into(f'{n}e', jacobian, 2 * n * i, *_row(s, i))\n"
    "    out = [0.0] * n\n"
    "    for i in range(n):\n"
    "        row = struct.unpack_from(f'{n}e', jacobian, 2 * n * i)\n"
    "        for j in range(n):\n"
    "            out[j] += v[i] * row[j]\n"
    "    return out\n"
)


@pytest.mark.slow  # a grading run: the student's process and the checks'
@pytest.mark.parametrize(
    ("cheat", "why"),
    [(IN_A_CHILD, "os.fork (starting a process) is refused"), (IN_A_FILE, "to write it) is refused"),
     (IN_HALF_PRECISION, "where the VJP in double precision is")],
    ids=["in_a_forked_child", "in_dev_shm", "in_half_precision"],
)  # fmt: skip
def test_a_jacobian_built_where_the_count_does_not_look_or_in_fewer_bits_fails(
    tmp_path: Path, cheat: str, why: str
) -> None:
    directory = solutions_in(tmp_path / "student")
    (directory / "softmax.py").write_text(HONEST_SMALL + cheat)
    (result,) = grading.run(directory, [exercise(8)], timeout=120)
    outcomes = {t.name: t.outcome for t in result.tests}
    assert outcomes["three_inputs"] == grading.PASSED  # the small inputs' answer is right
    assert outcomes["it_does_not_build_the_jacobian"] == grading.FAILED
    message = next(t.message for t in result.tests if t.name == "it_does_not_build_the_jacobian")
    assert why in message
    assert not list(Path("/dev/shm").glob("softmax-*")) if Path("/dev/shm").is_dir() else True


@pytest.mark.slow  # a grading run
def test_the_reference_solution_passes_exercise_8_with_its_values_compared(tmp_path: Path) -> None:
    directory = solutions_in(tmp_path / "student")
    (result,) = grading.run(directory, [exercise(8)], timeout=120)
    assert {t.name: t.outcome for t in result.tests}["it_does_not_build_the_jacobian"] == grading.PASSED
    assert result.score() == exercise(8).points


# ---- exercise 4's recursion limit raised past the refused setter ---------------------------------------------

RAISED = {
    "pythonapi": "        import ctypes\n"
    "        getattr(ctypes.pythonapi, 'Py_Set' + 'Recursion' + 'Limit')(ctypes.c_int(100_000))\n",
    "the_graders_setter": "        import sys\n"
    "        getattr(sys.modules['vjp' + 'grad.course.probe'], '_set_' + 'recursion_limit')(100_000)\n",
    "a_walk_of_the_objects": "        import gc, sys\n"
    "        for o in gc.get_objects():\n"
    "            if type(o) is dict and o.get('__name__') == 'vjp' + 'grad.course.probe':\n"
    "                o['_set_' + 'recursion_limit'](100_000)\n",
}
"""Ways a recursive ``backward()`` reached the interpreter's own setter (``probe`` kept it)."""


@pytest.mark.slow  # a grading run
@pytest.mark.parametrize("way", sorted(RAISED))
def test_a_recursive_backward_that_reaches_the_real_setter_fails(tmp_path: Path, way: str) -> None:
    directory = solutions_in(tmp_path / "student")
    engine = directory / "engine.py"
    source = engine.read_text()
    recursive = RECURSIVE.replace(
        "        import sys\n        sys.setrecursionlimit(100_000)  # deep enough for the check's 10,000 links\n",
        RAISED[way],
    )
    engine.write_text(source.replace("        order = self.topological_order()\n", recursive, 1))
    (result,) = grading.run(directory, [exercise(4)], timeout=120)
    deep = next(t for t in result.tests if t.name == "a_chain_of_10_000_links_works_at_the_default_recursion_limit")
    assert deep.outcome == grading.FAILED
    assert result.score() < exercise(4).points


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the address space is limited on Linux")
@pytest.mark.slow  # a grading run
def test_a_students_process_may_not_take_the_machines_memory(tmp_path: Path) -> None:
    """A runaway allocation in a student's code raises MemoryError in their process (its address space
    is capped a few GiB above what it starts with) instead of taking the memory of the machine that
    grades a class; an engine that allocates nothing of the kind runs as before."""
    directory = solutions_in(skeleton(tmp_path / "student"))
    prepend(
        directory / "engine.py",
        "import resource\n"
        "if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:\n"
        "    raise RuntimeError('no limit on the memory this process may take')\n"
        "try:\n"
        "    _hoard = bytearray(64 << 30)\n"
        "except MemoryError:\n"
        "    _hoard = None\n"
        "else:\n"
        "    raise RuntimeError('64 GiB taken')\n",
    )
    (result,) = grading.run(directory, [exercise(2)], timeout=120)
    assert result.score() == exercise(2).points, result.tests[0].message


# ---- what the Gradescope autograder copies ----------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX's")
def test_the_autograder_copies_a_deep_folder_and_leaves_out_what_is_no_file(tmp_path: Path) -> None:
    # a folder 600 deep, as a zip holds one, made shutil.copytree recurse past Python's limit; a named
    # pipe made it raise: each took the whole submission's grade with it
    from vjpgrad.course import autograder

    submission = tmp_path / "submission"
    deep = submission.joinpath(*["d"] * 600)
    deep.mkdir(parents=True)
    (deep / "x.txt").write_text("deep")
    (submission / "engine.py").write_text("# mine\n")
    os.mkfifo(submission / "pipe")
    left = autograder.copy_without_links(submission, tmp_path / "copy")
    assert (tmp_path / "copy").joinpath(*["d"] * 600, "x.txt").read_text() == "deep"
    assert (tmp_path / "copy" / "engine.py").read_text() == "# mine\n"
    assert left == ["pipe"]
    assert not (tmp_path / "copy" / "pipe").exists()


@pytest.mark.parametrize("shared", [False, True])
def test_the_autograder_leaves_out_a_link_for_the_students_own_user_too(tmp_path: Path, shared: bool) -> None:
    # with --user (the bundle's run_autograder always passes it) the copy's files are made readable:
    # a link left out was then chmod-ed where no file was, FileNotFoundError, and the submission scored 0
    # (a committed .venv/bin/python link was enough: found by a review of the grader)
    from vjpgrad.course import autograder

    submission = tmp_path / "submission"
    (submission / ".venv" / "bin").mkdir(parents=True)
    (submission / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    (submission / "engine.py").write_text("# mine\n")
    left = autograder.copy_without_links(submission, tmp_path / "copy", shared=shared)
    assert left == [".venv/bin/python"]
    assert (tmp_path / "copy" / "engine.py").read_text() == "# mine\n"
    assert not os.path.lexists(tmp_path / "copy" / ".venv" / "bin" / "python")


@contextlib.contextmanager
def _nested(top: Path, depth: int) -> Iterator[Path]:
    """A folder ``depth`` deep under ``top``, made a level at a time (``mkdir(parents=True)``
    recurses), and taken away again from the bottom up (so is ``shutil.rmtree``, pytest's too)."""
    made = [top]
    top.mkdir()
    for _ in range(depth):
        made.append(made[-1] / "d")
        made[-1].mkdir()
    try:
        yield made[-1]
    finally:
        for folder in reversed(made):
            for entry in list(folder.iterdir()):
                if not entry.is_dir():
                    entry.unlink()
            folder.rmdir()


@pytest.mark.slow  # a grading run as another user
def test_the_autograder_grades_as_another_user_a_submission_with_a_folder_deeper_than_python_recurses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the copy handed to the student's user had its modes set by Path.rglob, which recursed (Python
    # 3.11): a folder 1,100 deep ended the grading in a zero that named a RecursionError
    import pwd

    from vjpgrad.course import autograder

    uid, _ = _unprivileged()
    real = gradebook.grade

    def exercise_two(
        directories: list[Path], of: object, timeout: float, more_time: grading.MoreTime
    ) -> dict[str, list[grading.ExerciseResult]]:
        return real(directories, type(course(None))((exercise(2),)), timeout, more_time=more_time)

    monkeypatch.setattr(gradebook, "grade", exercise_two)
    submission = solutions_in(tmp_path / "submission")
    results = tmp_path / "results" / "results.json"
    arguments = ["--submission", str(submission), "--results", str(results), "--user", pwd.getpwuid(uid).pw_name]
    with _nested(submission / "deep", 1100) as deep:
        (deep / "x.txt").write_text("deep")
        assert autograder.main(arguments) == 0
    report = json.loads(results.read_text())
    assert "could not be graded" not in report["output"], report["output"]
    (two,) = [t for t in report["tests"] if t["number"] == "2"]
    assert two["score"] == two["max_score"] == exercise(2).points


@pytest.mark.slow  # a grading run
def test_what_the_autograder_cannot_clean_up_costs_no_grade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a folder the student's code left unreadable (a grader that is no root cannot remove it) is left
    from vjpgrad.course import autograder

    real = gradebook.grade

    def exercise_two(
        directories: list[Path], of: object, timeout: float, more_time: grading.MoreTime
    ) -> dict[str, list[grading.ExerciseResult]]:
        return real(directories, type(course(None))((exercise(2),)), timeout, more_time=more_time)

    def refused(folder: Path) -> None:
        raise PermissionError(13, "Permission denied", str(folder / "locked"))

    monkeypatch.setattr(gradebook, "grade", exercise_two)
    monkeypatch.setattr(autograder, "removed", refused)  # then TemporaryDirectory's cleanup takes the rest
    submission = solutions_in(tmp_path / "submission")
    results = tmp_path / "results" / "results.json"
    assert autograder.main(["--submission", str(submission), "--results", str(results)]) == 0
    report = json.loads(results.read_text())
    assert "could not be graded" not in report["output"], report["output"]
    (two,) = [t for t in report["tests"] if t["number"] == "2"]
    assert two["score"] == two["max_score"] == exercise(2).points


def test_the_autograder_writes_a_results_json_whatever_goes_wrong_in_the_grading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Gradescope shows "the autograder failed" where no results.json is written, and the student's
    # work is graded nowhere: a submission the grader cannot grade gets a zero that says why
    from vjpgrad.course import autograder, gradebook

    def broken(*arguments: object, **keywords: object) -> None:
        raise RuntimeError("something the grader did not foresee")

    monkeypatch.setattr(gradebook, "grade", broken)
    submission = solutions_in(tmp_path / "submission")
    results = tmp_path / "results" / "results.json"
    assert autograder.main(["--submission", str(submission), "--results", str(results)]) == 0
    report = json.loads(results.read_text())
    assert report["score"] == 0
    assert report["tests"] == []
    assert "could not be graded" in report["output"]
    assert "RuntimeError: something the grader did not foresee" in report["output"]
    assert "something the grader did not foresee" in capsys.readouterr().err  # the traceback, in the log


def test_the_autograder_copies_no_symbolic_link_of_a_submission(tmp_path: Path) -> None:
    """Gradescope runs the autograder as root: a link in a submission to a file only root may read (the
    teacher's solution, a held-out check) copied as the file it points to would hand it to the student's
    code. Links are not copied, and the output says which were left out."""
    from vjpgrad.course import autograder

    teacher = tmp_path / "teacher"
    shutil.copytree(EXAMPLE, teacher)
    text = (teacher / "exercises.toml").read_text().replace("builtin = true", "builtin = false")
    (teacher / "exercises.toml").write_text(text[: text.index("[hints]")])
    (teacher / "held_out.toml").write_text('sigmoid = "held_out/check_sigmoid.py"\n')
    submission = solutions_in(tmp_path / "submission")
    (submission / "sigmoid.py").symlink_to(teacher / "solutions" / "sigmoid.py")
    (submission / "notes").mkdir()
    (submission / "notes" / "check.txt").symlink_to(teacher / "held_out" / "check_sigmoid.py")
    results = tmp_path / "results.json"
    arguments = ["--submission", str(submission), "--results", str(results), "--exercises", str(teacher)]
    assert autograder.main(arguments) == 0
    report = json.loads(results.read_text())
    assert report["score"] == 0
    assert f"{autograder.LINKS}: notes/check.txt, sigmoid.py" in report["output"]


def test_the_autograder_refuses_a_timeout_it_cannot_set(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from vjpgrad.course import autograder

    arguments = ["--submission", str(tmp_path), "--results", str(tmp_path / "r.json")]
    for timeout in ("inf", "nan", "0"):
        with pytest.raises(SystemExit) as stopped:
            autograder.main([*arguments, "--timeout", timeout])
        assert stopped.value.code == 2
        assert "--timeout must be" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("kind", [str, bytes])
def test_a_path_the_hook_cannot_follow_is_not_read(kind: type) -> None:
    """A path whose real place cannot be found (the resolution raises) may lead anywhere, among
    the reference solutions or vjpgrad's own code: the hook refuses to open it, as either."""

    def unfollowable(path: str) -> str:
        raise OSError(f"cannot follow {path}")

    path = "solution.py" if kind is str else b"solution.py"
    for package, refused in ((None, guard.SOLUTIONS), ("/elsewhere/vjpgrad/", guard.SOLUTIONS)):
        hook = guard._hook(os.stat, unfollowable, "/solutions/", {}, frozenset(), "the rule", package)
        with pytest.raises(PermissionError, match=re.escape(refused)):
            hook("open", (path, "r", 0))
    hook = guard._hook(os.stat, os.path.realpath, "/solutions/", {}, frozenset(), "the rule", None)
    hook("open", (path, "r", 0))  # a path that is followed, and leads to neither: opened


def test_a_refused_import_that_a_library_makes_names_the_library(tmp_path: Path) -> None:
    """A student who imports numpy meets numpy's own import of ctypes: the refusal names numpy
    (the module whose import statement ran, its file a library's: under the interpreter's
    prefixes or in a site-packages folder), so that the student knows which of their imports to
    take out; the student's own ``import ctypes`` is refused naming ctypes alone."""
    library = tmp_path / "lib" / "python3" / "site-packages" / "native" / "_loader.py"
    student = tmp_path / "student" / "engine.py"
    hook = guard._hook(os.stat, os.path.realpath, "/solutions/", {}, guard.MODULES, "the rule", None, ())
    refused = {}
    for name, path in (("native._loader", library), ("engine", student)):
        module = {"__name__": name, "__file__": str(path), "hook": hook}
        code = compile("def load():\n    hook('import', ('ctypes', None, [], [], []))\n", str(path), "exec")
        exec(code, module)
        with pytest.raises(PermissionError) as error:
            module["load"]()
        refused[name] = str(error.value)
    assert "(importing ctypes, which native loads: native cannot run under the checks" in refused["native._loader"]
    assert "(importing ctypes) is refused: the rule" in refused["engine"]
    stdlib = guard._hook(
        os.stat, os.path.realpath, "/solutions/", {}, guard.MODULES, "rule", None, (f"{tmp_path}{os.sep}",)
    )
    module = {"__name__": "uuid", "__file__": str(tmp_path / "uuid.py"), "hook": stdlib}  # the standard library's
    exec(compile("def load():\n    hook('import', ('ctypes', None, [], [], []))\n", "uuid.py", "exec"), module)
    with pytest.raises(PermissionError, match=r"importing ctypes, which uuid loads"):
        module["load"]()


def test_a_student_who_imports_numpy_is_told_numpy_cannot_run_under_the_checks(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    directory = skeleton(tmp_path / "student")
    (directory / "arrays.py").write_text("def load():\n    import numpy\n\n\ndef own():\n    import ctypes\n")
    context = grading._processes()
    process, ours = grading._student(context, directory, exercise(2), 60)
    try:
        arrays = remote.Checks(ours).module("arrays")
        with pytest.raises(PermissionError, match=r"importing ctypes, which numpy loads: numpy cannot run"):
            arrays.load()
        with pytest.raises(PermissionError) as own:
            arrays.own()
        assert "(importing ctypes) is refused" in str(own.value)
    finally:
        ours.close()
        process.join(10)


PADDINGS = {
    "assert True": "assert True",
    "if True: pass": "if True:\n    pass",
    "an unread assignment of a call": "_unused = repr(0)",
}
"""Statements an outside review put at the top of every function of the shipped engine to dodge the flag."""


def _padded(how: str, function: Any) -> None:
    """``function`` (an ``ast.FunctionDef``) padded as ``how`` says, changing nothing it does."""
    import ast

    if how in PADDINGS:
        function.body.insert(0, ast.parse(PADDINGS[how]).body[0])
    elif how == "if 0: ... else: the body":
        function.body = [ast.If(ast.Constant(0), [ast.Pass()], function.body)]
    elif how == "an identity decorator":
        function.decorator_list.insert(0, ast.parse("(lambda g: g)", mode="eval").body)
    else:  # an unread keyword argument
        function.args.kwonlyargs.append(ast.arg("_unused"))
        function.args.kw_defaults.append(ast.Constant(None))


@pytest.mark.parametrize(
    "how", [*PADDINGS, "if 0: ... else: the body", "an identity decorator", "an unread keyword argument"]
)
def test_a_copy_padded_in_every_function_with_code_that_changes_nothing_is_still_a_copy(
    tmp_path: Path, how: str
) -> None:
    """What an outside review handed in to dodge the flag, each in every function of the shipped
    engine: an ``assert`` of a constant, an ``if`` on a constant (its branch taken), an assignment to a
    name nothing reads (whatever it assigns), a decorator that hands the function back, a keyword
    argument nothing reads. Each changes nothing the function does."""
    import ast

    tree = ast.parse((folder("solutions") / "engine.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            _padded(how, node)
    padded = tmp_path / "padded"
    padded.mkdir()
    (padded / "engine.py").write_text(ast.unparse(ast.fix_missing_locations(tree)))
    assert borrowed.copied(padded, exercise(2)) == [f"engine.py (Value.__add__, Value.__mul__): {borrowed.COPIED}"]


def test_independent_grading_splices_a_part_whose_attribute_the_class_body_sets(tmp_path: Path) -> None:
    """``exp.__doc__ = "..."`` (or ``names[exp] = ...``) in the class reads ``exp``, binds nothing:
    the student's def is spliced as before (it counted as a second binding, and the whole file was
    graded as handed in, its broken ``+`` costing exercise 3 too, a review of the change)."""
    import ast

    from vjpgrad.course import depends

    directory = solutions_in(skeleton(tmp_path / "class" / "documented"))
    engine = directory / "engine.py"
    tree = ast.parse(engine.read_text())
    value = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Value")
    value.body += ast.parse(
        "exp.__doc__ = 'e to the self'\n_names = {}\n_names[exp] = 'exp'\n_all = [exp for exp in ('e',)]"
    ).body  # a comprehension's name is its own scope's
    engine.write_text(ast.unparse(tree) + "\n")
    copy = depends.reference_copy(directory, exercise(3), course(None), tmp_path / "scratch" / "documented")
    assert (copy / "engine.py").read_text() != engine.read_text()  # spliced into the reference
