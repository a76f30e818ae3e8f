"""Borrowed work: a student's file that imports an engine it should have written, or copies a
shipped reference solution.

Two things are told to the teacher (never to the student; ``gradebook`` puts them in a hidden test
and the gradebook's ``remarks`` column), both read from the student's source, in the grading
process, without running it:

- ``imports``: the modules a file imports that are ``BORROWED`` (vjpgrad, torch, and through
  vjpgrad the reference solutions, ``vjpgrad.course.solutions``) and that the exercise's own skeleton
  does not import (exercise 10's skeleton imports vjpgrad: its rule is a vjpgrad custom op);
- ``copied``: an exercise whose parts are all a shipped solution's, once names, docstrings, comments,
  whitespace and statements that do nothing (``pass``, a lone string or ``...``) are set aside
  (``normal``), each part the last ``def`` of its name (the one Python keeps): a copy with its
  variables renamed, padded, or under a stub of the same name is still a copy. A remark, not a
  verdict: a part of a few lines (exercise 2's ``+``) is often written the same way independently.
  What a student's process loads at run time is not read here: the reference solutions it cannot
  open at all (``guard``), and ``gradebook.grade`` remarks on an exercise that tried.
- ``recursion_limit``: a file whose code names ``setrecursionlimit`` in any way (``sys``'s, imported
  under another name, a string given to ``getattr``, CPython's ``Py_SetRecursionLimit`` through
  ``ctypes``): exercise 4's check of a deep graph at Python's default recursion limit cannot tell a
  recursive ``backward()`` from a loop where the limit is raised. The student's process refuses
  ``sys.setrecursionlimit`` (``probe.refuse_recursion_limit``); code that reaches the interpreter's
  own setter some other way is what this remark points the teacher to; so is a file that names
  ``pythonapi`` or ``/proc`` (the grader's processes, the interpreter's memory), which the student's
  process also refuses (``guard``), and a file that runs code made from text (``runs_text``: a
  solution kept in a string and run has no ``def`` for ``copied`` to read).

The checks' processes also refuse those imports from the student's files (``_plugin``'s import
guard, given ``allowed``): an engine that is vjpgrad's earns nothing from vjpgrad's code.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterable
from pathlib import Path

from vjpgrad.course.exercises import Course, Exercise

BORROWED = ("vjpgrad", "torch")
"""The packages whose code a student's engine must not use in its place."""
COPIED = "the shipped reference solution, names and layout aside"
"""What a remark on a copy says (``gradebook`` gathers them into one phrase per directory)."""


RECURSION_LIMIT = "exercise 4's check cannot tell a recursive backward() from a loop (recursion limit raised?)"
"""What a remark on a file that names ``setrecursionlimit`` says, after the file's name."""
SETTER = "setrecursionlimit"
"""What ``recursion_limit`` looks for, in any case, in the names, attributes and strings of a file."""
REACHING = (
    "the grader's processes or the interpreter's memory reached for (the course refuses it; trust marks given --user)"
)
"""What a remark on a file that names ``pythonapi`` or ``/proc`` says, after the file's name."""


PARSING = threading.Lock()
"""Held while the course parses Python: the checks' threads parse files at once, and CPython 3.11
before 3.11.8 keeps the parser's recursion count per interpreter, not per thread, so two parses at
once can fail with "SystemError: AST constructor recursion depth mismatch"."""


def source_tree(text: str) -> ast.Module:
    """``ast.parse(text)``, one parse at a time (``PARSING``)."""
    with PARSING:
        return ast.parse(text)


def parse(path: Path) -> ast.Module | None:
    try:
        return source_tree(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None


def imported(tree: ast.AST) -> set[str]:
    """The top-level packages of ``BORROWED`` that ``tree`` imports, or names as a module in a string
    (``importlib.import_module("vjpgrad")``, ``sys.modules["torch"]``, a path into vjpgrad's package)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        names: Iterable[str] = ()
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip()
            names = [text] if text in BORROWED or text.startswith(tuple(f"{b}." for b in BORROWED)) else []
            if "vjpgrad/course" in text.replace("\\", "/") or "site-packages/torch" in text.replace("\\", "/"):
                names = ["vjpgrad" if "vjpgrad" in text else "torch"]
        found |= {name.split(".")[0] for name in names if name.split(".")[0] in BORROWED}
    return found


def allowed(course: Course) -> dict[str, set[str]]:
    """For each student file of ``course``, the packages of ``BORROWED`` its skeleton imports itself."""
    result: dict[str, set[str]] = {}
    for name, template in course.student_files().items():
        tree = parse(template)
        result[name] = imported(tree) if tree is not None else set()
    return result


def imports(directory: Path, ex: Exercise, course: Course) -> list[str]:
    """What the teacher is told of ``ex``'s files in ``directory`` that import borrowed code."""
    permitted = allowed(course)
    remarks = []
    for name in ex.files:
        tree = parse(directory / name)
        if tree is None:
            continue
        extra = sorted(imported(tree) - permitted.get(name, set()))
        if extra:
            remarks.append(f"{name} imports {' and '.join(extra)}: its checks ran without it (borrowed engine?)")
    return remarks


def _words(tree: ast.AST) -> Iterable[str]:
    """The names, attributes, imported names and aliases, and strings of ``tree``."""
    for node in ast.walk(tree):
        words: Iterable[object] = ()
        if isinstance(node, ast.Name):
            words = [node.id]
        elif isinstance(node, ast.Attribute):
            words = [node.attr]
        elif isinstance(node, ast.alias):
            words = [node.name, node.asname]
        elif isinstance(node, ast.Constant):
            words = [node.value]
        yield from (word for word in words if isinstance(word, str))


def names_setter(tree: ast.AST) -> bool:
    """Whether ``tree`` names ``setrecursionlimit`` (any case): as a name, an attribute, an imported
    name or its alias, or within a string (``getattr(sys, "setrecursionlimit")``), or in pieces
    (``"Py_Set" + "Recursion" + "Limit"``, ``"_set_" + "recursion_limit"``; ``recursionlimit`` in a
    name but ``getrecursionlimit``)."""
    for word in _words(tree):
        bare = word.lower().replace("_", "")
        if SETTER in bare or bare.startswith("setrecursion") or bare == "recursion":
            return True
        if "recursionlimit" in bare and "getrecursionlimit" not in bare:
            return True
    return False


def names_outside(tree: ast.AST) -> bool:
    """Whether ``tree`` names ``pythonapi`` (CPython's own functions, through ``ctypes``) or ``/proc``."""
    return any("pythonapi" in word.lower() or "/proc" in word for word in _words(tree))


FROM_TEXT = "the copy check reads only the code written as code (a solution kept in a string and run?)"
"""What a remark on a file that runs code made from text says, after the file's name."""
RUNNING_TEXT = frozenset(("exec", "eval", "compile", "FunctionType", "CodeType", "marshal"))
"""The names through which a file runs code made from text: Python's ``exec``, ``eval`` and
``compile`` (as names or strings: an attribute named ``compile`` is ``re``'s or vjpgrad's), a code
object or function made by hand (``types``), ``marshal``'s code objects."""


def _folded(node: ast.AST) -> str | None:
    """A string constant, or a sum of them (``'ex' + 'ec'``), as the text it makes; else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return None if left is None or right is None else left + right
    return None


def runs_text(tree: ast.AST) -> bool:
    """Whether ``tree`` names one of ``RUNNING_TEXT``: as a name, an imported name or alias, a
    string (pieces added together too), or an attribute (but ``compile``)."""
    for node in ast.walk(tree):
        words: list[str | None] = []
        if isinstance(node, ast.Name):
            words = [node.id]
        elif isinstance(node, ast.Attribute) and node.attr != "compile":
            words = [node.attr]
        elif isinstance(node, ast.alias):
            words = [node.name, node.asname]
        elif isinstance(node, (ast.Constant, ast.BinOp)):
            words = [_folded(node)]
        if any(word in RUNNING_TEXT for word in words if word is not None):
            return True
    return False


def recursion_limit(directory: Path, ex: Exercise) -> list[str]:
    """What the teacher is told of ``ex``'s files in ``directory`` that name ``setrecursionlimit``,
    ``pythonapi`` or ``/proc``."""
    remarks = []
    for name in ex.files:
        tree = parse(directory / name)
        if tree is not None and names_setter(tree):
            remarks.append(f"{name} names sys.setrecursionlimit: {RECURSION_LIMIT}")
        if tree is not None and names_outside(tree):
            remarks.append(f"{name} names ctypes.pythonapi or /proc: {REACHING}")
        if tree is not None and runs_text(tree):
            remarks.append(f"{name} runs code made from text: {FROM_TEXT}")
    return remarks


class _Names(ast.NodeTransformer):
    """Every name a piece of code chooses, renamed by its first appearance: ``n0``, ``n1``..."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _new(self, name: str) -> str:
        return self.names.setdefault(name, f"n{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._new(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._new(node.arg)
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._new(node.name)
        node.returns = None
        self.generic_visit(node)
        return node


def _does_nothing(statement: ast.stmt) -> bool:
    """``pass``, or an expression that is a constant alone (a docstring, ``...``, a number)."""
    return isinstance(statement, ast.Pass) or (
        isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
    )


def _without_idle_statements(tree: ast.AST) -> ast.AST:
    """``tree`` with every statement that does nothing (``_does_nothing``: docstrings among them)
    taken out of every block, a block left empty holding one ``pass``."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and all(isinstance(s, ast.stmt) for s in block):
                kept = [s for s in block if not _does_nothing(s)]
                setattr(node, field, kept or [ast.Pass()])
    return tree


def normal(node: ast.AST) -> str:
    """``node`` as a string that is the same for two copies of the same code whatever their names,
    docstrings, comments, layout and statements that do nothing (``pass``, a string or ``...``)."""
    copy = _without_idle_statements(source_tree(ast.unparse(node)))
    return ast.dump(_Names().visit(copy), annotate_fields=False, include_attributes=False)


def _part(tree: ast.Module, part: str) -> ast.AST | None:
    scope: list[ast.stmt] = tree.body
    *owners, last = part.split(".")
    for owner in owners:
        classes = [n for n in scope if isinstance(n, ast.ClassDef) and n.name == owner]
        if not classes:
            return None
        scope = classes[-1].body
    found = [n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == last]
    return found[-1] if found else None  # the last of a name: the one Python keeps


def copied(directory: Path, ex: Exercise) -> list[str]:
    """What the teacher is told of the parts of ``ex`` in ``directory`` that are a shipped solution's."""
    if ex.teachers or not ex.files:
        return []
    name = ex.files[0]
    mine, theirs = parse(directory / name), parse(ex.solution(name))
    if mine is None or theirs is None:
        return []
    given = parse(ex.template(name))

    def handed_out(part: str) -> bool:  # the skeleton gives it whole: a copy of it is no copy
        ours, theirs_part = (None if given is None else _part(given, part)), _part(theirs, part)
        return ours is not None and theirs_part is not None and normal(ours) == normal(theirs_part)

    everything = [n.name for n in theirs.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    parts = [p for p in ex.parts if not handed_out(p)] or [p for p in everything if not handed_out(p)]
    if not parts:
        return []
    for part in parts:
        a, b = _part(mine, part), _part(theirs, part)
        if a is None or b is None or normal(a) != normal(b):
            return []
    return [f"{name} ({', '.join(parts)}): {COPIED}"]


def remarks(directory: Path, ex: Exercise, course: Course) -> list[str]:
    """Everything the teacher is told of borrowed work in ``ex``'s files in ``directory``."""
    return [*imports(directory, ex, course), *copied(directory, ex), *recursion_limit(directory, ex)]
