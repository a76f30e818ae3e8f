"""Which earlier exercises an exercise's checks run on: one engine bug, charged once.

Exercise 6's checks call the student's ``seeds.py``, which imports their ``engine.py``: when the
engine's ``+`` is wrong, exercise 6 fails because exercise 2 did. ``on(ex, course)`` is the earlier
exercises whose files ``ex``'s checks run: its own files (an earlier exercise written in the same
file, as exercises 2 to 5 share ``engine.py``), the student files those import (read from the
skeletons), and those its check files ask for by name (``student("engine")``). ``blame`` names, in
an exercise that failed, the first of them not done; ``reference_copy`` (``grade --independent``)
makes a copy of a student's directory where those earlier exercises are the reference solution's,
so that later exercises are graded on a correct engine.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Sequence
from pathlib import Path

from vjpgrad.course import trees
from vjpgrad.course.borrowed import parse_handed_in, source_tree
from vjpgrad.course.exercises import Course, Exercise


def _tree(path: Path) -> ast.Module | None:
    try:
        return source_tree(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


def _local_imports(path: Path, names: set[str]) -> set[str]:
    """The student files (of ``names``) that the file ``path`` imports."""
    tree = _tree(path)
    found: set[str] = set()
    if tree is None:
        return found
    for node in ast.walk(tree):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        found |= {f"{m.split('.')[0]}.py" for m in modules if f"{m.split('.')[0]}.py" in names}
    return found


def _asked_by_name(check: Path, names: set[str]) -> set[str]:
    """The student files a check file asks for: ``student("engine")``."""
    tree = _tree(check)
    found: set[str] = set()
    if tree is None:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "student":
            found |= {f"{a.value}.py" for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return found & names


def files_used(ex: Exercise, course: Course) -> set[str]:
    """The student files ``ex``'s checks run: its own, those its check asks for, and what they import."""
    return used_of(ex, course.student_files())


def used_of(ex: Exercise, templates: dict[str, Path]) -> set[str]:
    """``files_used``, the student's files being ``templates`` (their skeletons, by name)."""
    names = set(templates)
    used = set(ex.files) | _asked_by_name(ex.check, names)
    for path in ex.held_out:
        used |= _asked_by_name(path, names)
    todo = list(used)
    while todo:
        name = todo.pop()
        if name not in templates:  # a file an exercise names that has no skeleton: it imports nothing known
            continue
        for found in _local_imports(templates[name], names) - used:
            used.add(found)
            todo.append(found)
    return used


def on(ex: Exercise, course: Course) -> list[Exercise]:
    """The earlier exercises whose files ``ex``'s checks run, in order."""
    used = files_used(ex, course)
    return [e for e in course.exercises if e.number < ex.number and used & set(e.files)]


def blame(ex: Exercise, course: Course, done: dict[int, bool]) -> str | None:
    """The note on a failing ``ex`` whose checks run an earlier exercise that is not done (``done``:
    by number, for the exercises checked); none when every earlier one it runs on is done."""
    first = next((e for e in on(ex, course) if e.number in done and not done[e.number]), None)
    if first is None:
        return None
    return (
        f"these checks run your exercise {first.number} ({', '.join(first.files)}), which is not done: "
        f"fix exercise {first.number} first, and this one may pass with it"
    )


def _scope(module: ast.Module, part: str) -> list[ast.stmt] | None:
    """The statements of the scope that defines ``part`` (``Value.exp``: the class ``Value``'s body),
    or None where that class is not there."""
    scope: list[ast.stmt] = module.body
    for owner in part.split(".")[:-1]:
        cls = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == owner), None)
        if cls is None:
            return None
        scope = cls.body
    return scope


def _binds_in_block(block: list[ast.stmt], name: str) -> bool:
    """Whether the statements of a class's body (through its ``if``, ``try``, ``with`` and loops,
    not into the defs and classes it holds) bind ``name``: a def or class, an assignment, an
    import."""
    for statement in block:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if statement.name == name:
                return True
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)) and any(
            (alias.asname or alias.name.partition(".")[0]) == name for alias in statement.names
        ):
            return True
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                return True
        inner = [getattr(statement, f, []) for f in ("body", "orelse", "finalbody")]
        inner += [handler.body for handler in getattr(statement, "handlers", [])]
        if any(_binds_in_block(b, name) for b in inner if isinstance(b, list)):
            return True
    return False


def _rebinds(block: list[ast.stmt], name: str) -> bool:
    """Whether statements of a class's body (not the defs and classes they hold, but for their own
    names) bind ``name``: a def or class of that name, an import as it, or ``name`` stored or
    deleted as a name (an assignment, ``for``, ``with ... as``, ``:=``, ``del``, a ``match``
    capture). ``exp.__doc__ = ...`` or ``table[exp] = ...`` only read it: no binding."""
    stack: list[ast.AST] = list(block)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return True
            stack.extend(node.decorator_list)  # what runs in the class's body; the body runs later
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue  # a scope of its own: [exp for exp in ...] binds no exp of the class
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.partition(".")[0]) == name:
            return True
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name:
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _bound_for_class(module: ast.Module, part: str) -> bool:
    """Whether ``module`` gives the class of ``part`` (``Value.exp``) that name some way other than
    a def in its body: a binding in its body (``tanh = _tanh``, a def inside an ``if``), an
    assignment to the class's attribute (``Value.exp = exp`` after it), a ``setattr(Value, "exp",
    ...)``. A name bound elsewhere (``from math import exp``, a local of another function) does
    not reach the class."""
    *owners, name = part.split(".")
    if not owners:
        return False
    owner = owners[-1]
    if any(isinstance(n, ast.ClassDef) and n.name == owner and _binds_in_block(n.body, name) for n in ast.walk(module)):
        return True
    return _bound_from_outside(module, owner, name)


def _bound_from_outside(module: ast.Module, owner: str, name: str) -> bool:
    """Whether ``module`` gives the class ``owner`` the attribute ``name`` from outside its body: an
    assignment (``Value.exp = exp``) or a ``setattr(Value, "exp", ...)``."""
    for node in ast.walk(module):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == name
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == owner
        ):
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == owner
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == name
        ):
            return True
    return False


def _inherits(module: ast.Module, part: str) -> bool:
    """Whether a class on the way to ``part`` in ``module`` has bases, a metaclass or a decorator
    (a mixin of the student's, or a decorator, may give it the part)."""
    scope: list[ast.stmt] = module.body
    for owner in part.split(".")[:-1]:
        cls = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == owner), None)
        if cls is None:
            return False
        if cls.bases or cls.keywords or cls.decorator_list:  # a mixin, a metaclass, a decorator may add it
            return True
        scope = cls.body
    return False


class _NotSplicedError(Exception):
    """A part the student's file binds some other way than a def in its scope: no splice carries it."""


def _splice(reference: str, theirs: ast.Module, parts: Sequence[str]) -> str:
    """The reference file with the student's definitions of ``parts`` (in ``theirs``, their file as
    parsed) in place of its own (``_spliced``); ``_NotSplicedError`` where one cannot be."""
    tree = source_tree(reference)
    for part in parts:
        name = part.rsplit(".", 1)[-1]
        mine = _scope(tree, part)
        if mine is None:
            continue
        index = next(
            (k for k, n in enumerate(mine) if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name), None
        )
        if index is not None:
            _spliced(mine, index, theirs, part, name)
    return ast.unparse(tree) + "\n"


def _spliced(mine: list[ast.stmt], index: int, theirs: ast.Module, part: str, name: str) -> None:
    """The reference's def of ``part`` (``mine[index]``) replaced by the student's. A part their file
    defines in that scope is theirs; one their file binds nowhere is taken out, so that it is missing
    here as in their own file, never graded on the reference's. One it binds some other way
    (``tanh = _tanh``, ``Value.exp = exp`` after the class, a mixin; ``__add__ = __mul__ =
    _not_yet``), or binds again after its def, cannot be carried by a splice, and the reference's
    own would earn its marks: ``_NotSplicedError``, and the file is graded as handed in."""
    yours = _scope(theirs, part) or []
    defined = next((n for n in yours if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name), None)
    if defined is not None:
        owner = part.split(".")[-2] if "." in part else None
        again = _rebinds([n for n in yours if n is not defined], name)
        if again or (owner is not None and _bound_from_outside(theirs, owner, name)):
            raise _NotSplicedError(part)  # bound again after its def (Value.tanh = _not_yet): that one counts
        mine[index] = defined
    elif _bound_for_class(theirs, part) or _inherits(theirs, part):
        raise _NotSplicedError(part)
    else:
        del mine[index]
        if not mine:  # every part of the class left out: a class body holds a statement
            mine.append(ast.Pass())


def reference_copy(directory: Path, ex: Exercise, course: Course, into: Path) -> Path:
    """A copy of ``directory`` in ``into`` where the earlier exercises ``ex`` runs on are the reference
    solution's: a file of theirs alone is the solution; a file ``ex`` shares with them (engine.py) is
    the solution with the student's own definitions of ``ex``'s parts (as handed in where one of
    those parts is bound some other way than a def, ``_splice``). A symbolic link handed in
    where a file is written is removed first, never written through (it could point at any file of
    the teacher's), and is read as no file; the student's file is read only as ``parse_handed_in``
    reads it (a regular file of at most ``borrowed.LIMIT`` bytes, nested no deeper than the parser
    reads: else it is left as handed in), and what is neither a folder, a file nor a link is not
    copied (``trees.copied``)."""
    trees.copied(directory, into)
    for earlier in on(ex, course):
        for name in earlier.files:
            solution, target, theirs = earlier.solution(name), into / name, directory / name
            if not solution.is_file():
                continue
            if target.is_symlink():  # a link handed in is never written through: it may point at your files
                target.unlink()
            if name not in ex.files:
                shutil.copyfile(solution, target)
            elif ex.parts and name == ex.files[0] and (parsed := parse_handed_in(theirs)) is not None:
                try:
                    text = _splice(solution.read_text(encoding="utf-8"), parsed, ex.parts)
                except (RecursionError, MemoryError, _NotSplicedError):  # too deep, or a part bound another way:
                    continue  # graded as handed in
                target.write_text(text, encoding="utf-8")
    return into
