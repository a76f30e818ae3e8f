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
  process also refuses (``guard``), a file that runs code made from text (``runs_text``: a
  solution kept in a string and run has no ``def`` for ``copied`` to read), and one that looks
  modules up at run time (``looks_up_modules``: vjpgrad, loaded in the student's process, taken from
  ``sys.modules`` or a frame's globals with no import to read). These read the exercise's files and
  the student's own modules they import (``own_files``).

A student's file is read here only where it is a regular file, not a symbolic link, of at most
``LIMIT`` bytes (``handed_in``): a link to ``/dev/zero`` or to a named pipe handed in (git stores
links) would otherwise be read for ever, before anyone is graded. What is not read is said to the
teacher (``unread``) and never remarked on as a copy.

The checks' processes also refuse those imports from the student's files (``_plugin``'s import
guard, given ``allowed``): an engine that is vjpgrad's earns nothing from vjpgrad's code.
"""

from __future__ import annotations

import ast
import collections
import copy
import functools
import hashlib
import importlib.util
import json
import os
import pickle
import re
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from vjpgrad.course import paths
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


PARSE_STACK = 64 << 20
"""The stack (64 MiB) a parse runs on in the teacher's process on CPython 3.10, whose parser has no
bound on nesting and overflows its C stack past about 100,000 levels on 8 MiB: in a thread of its
own with this much, four times what the parse alone (``too_deep``) had to survive with."""
PROBE_STACK = 16 << 20
"""The stack of the parse alone that tells on CPython 3.10 whether a large file is too deep."""


def source_tree(text: str | bytes) -> ast.Module:
    """``ast.parse(text)``, one parse at a time (``PARSING``); on CPython 3.10 on a stack of
    ``PARSE_STACK`` (``_on_a_deep_stack``)."""
    with PARSING:
        if sys.version_info >= (3, 11):
            return ast.parse(text)
        return _on_a_deep_stack(text)


def _on_a_deep_stack(text: str | bytes) -> ast.Module:
    """``ast.parse(text)`` in a thread of ``PARSE_STACK`` bytes of stack; its error raised here."""
    found: list[ast.Module] = []
    failed: list[BaseException] = []

    def parse() -> None:
        try:
            found.append(ast.parse(text))
        except BaseException as error:  # handed to the caller, whatever it is
            failed.append(error)

    size = threading.stack_size(PARSE_STACK)
    try:
        thread = threading.Thread(target=parse, name="vjpgrad-course-parse")
        thread.start()
    finally:
        threading.stack_size(size)
    thread.join()
    if failed:
        raise failed[0]
    return found[0]


def parse(path: Path) -> ast.Module | None:
    """The teacher's file at ``path`` (a skeleton, a reference solution), read as Python reads it
    (``parsed``); none when Python could not read it either. A student's file: ``parse_handed_in``."""
    try:
        return parsed(path.read_bytes())
    except OSError:
        return None


def parsed(source: bytes) -> ast.Module | None:
    """``source`` read as Python reads it: its bytes decoded as its ``coding`` line says (a file that
    declares ``utf-7`` runs ``+AGUAeABlAGM-(...)`` as ``exec(...)``), else as UTF-8; none when Python
    could not read it either."""
    try:
        return source_tree(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # nested past the parser's stack too
        return None


LIMIT = 4 << 20
"""The largest student's file the teacher's process reads, in bytes (4 MiB; the reference solutions
are a few kB each): a larger one is not read for the remarks (``unread``), and is graded as any other."""


def unread(path: Path) -> str | None:
    """Why the student's file at ``path`` is not read in the teacher's process, found without following
    it (``os.lstat``): "a symbolic link" (to ``/dev/zero``, to a named pipe, to your files), "not a
    regular file" (a named pipe, a socket, a device), or "larger than 4 MB"; None where it is read, or
    is not there."""
    try:
        found = os.lstat(path)
    except (OSError, ValueError):  # not there, or a name the system cannot take
        return None
    if stat.S_ISLNK(found.st_mode):
        return "a symbolic link"
    if not stat.S_ISREG(found.st_mode):
        return "not a regular file"
    return f"larger than {LIMIT >> 20} MB" if found.st_size > LIMIT else None


def handed_in(path: Path) -> bytes | None:
    """The bytes of the student's file at ``path``, where ``unread`` has nothing against it, read
    through a descriptor that follows no link and waits on nothing (``O_NOFOLLOW``, ``O_NONBLOCK``),
    checked again once open (the file could have changed between the two), and never more than
    ``LIMIT`` bytes; None where it is not read."""
    if unread(path) is not None:
        return None
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except (OSError, ValueError):
        return None
    with os.fdopen(descriptor, "rb") as stream:
        found = os.fstat(stream.fileno())
        if not stat.S_ISREG(found.st_mode) or found.st_size > LIMIT:
            return None
        source = stream.read(LIMIT + 1)
    return source if len(source) <= LIMIT else None


def parse_handed_in(path: Path) -> ast.Module | None:
    """The student's file at ``path`` (``handed_in``), read as Python reads it (``parsed``); none
    where it is not read, where it names too long a dotted name (``too_long_a_name``), where it is
    nested deeper than the parser reads (``too_deep``), or where Python could not read it either."""
    source = handed_in(path)
    return None if source is None or too_long_a_name(source) or too_deep(source) else parsed(source)


DOTTED_PARTS = 200
"""The most parts of a dotted name (``a.b.c``: 3) in a student's file that the teacher's process
parses: CPython's parser holds memory growing with the square of a dotted name's parts (``import
a.a.a...`` of 100,000 parts, a line of 200 kB, took 11 GB), and no code a course asks for comes near."""
_NAME = re.compile(r"[^\W\d]\w*")
_DOT = re.compile(r"(?:\s|\\\n)*\.(?:\s|\\\n)*")


def too_long_a_name(source: bytes) -> bool:
    """Whether ``source``, decoded as Python decodes it, holds a dotted name of more than
    ``DOTTED_PARTS`` parts: its names found left to right, each once, a chain counted while only a
    dot (and space) lies between two, in time linear in the text (a pattern of the whole chain was
    tried again from every letter: one run of 40,000 letters took 26 s). A file Python cannot
    decode (an unknown coding, or one such as ``undefined`` that refuses) holds none."""
    try:
        text = importlib.util.decode_source(source)
    except (SyntaxError, ValueError, LookupError):  # no text Python would run either (UnicodeError too)
        return False
    chain, end = 0, -1
    for found in _NAME.finditer(text):
        chain = chain + 1 if end >= 0 and _DOT.fullmatch(text, end, found.start()) else 1
        if chain > DOTTED_PARTS:
            return True
        end = found.end()
    return False


SAFE_TO_PARSE = 64 << 10
"""The largest student's file (64 KiB) that CPython 3.10 parses in the teacher's process without a
parse alone first (``too_deep``): at most 32,768 levels of nesting (two characters each; a unary
operator's one, which 3.10's parser bounds at 100,000 levels itself), well within ``PARSE_STACK``."""
_DEEP: dict[bytes, bool] = {}
"""``too_deep``'s verdicts by the file's digest: a file is read several times for the remarks."""
TOO_DEEP_EXIT = 3
"""The exit status of the parse alone where the parser itself refused the nesting."""
_PARSE_ALONE = f"""
import ast, sys, threading
source, status = sys.stdin.buffer.read(), []
def parse():
    try:
        ast.parse(source)
    except (RecursionError, MemoryError):
        status.append({TOO_DEEP_EXIT})
    except Exception:
        status.append(1)
threading.stack_size({PROBE_STACK})
thread = threading.Thread(target=parse)
thread.start()
thread.join()
sys.exit(status[0] if status else 0)
"""


def too_deep(source: bytes) -> bool:
    """Whether ``source`` is nested deeper than Python's parser reads: the parse raises
    ``RecursionError`` or ``MemoryError`` (CPython 3.11 and later bound nesting; 3.10 bounds a chain
    of unary operators), or, on 3.10, the tree nests deeper than ``DEEPEST``. 3.10's parser has no
    other bound, and nesting past its C stack (``f()()()...`` of 130,000 calls, a line of 260 kB)
    kills the process that parses it: there a file of more than ``SAFE_TO_PARSE`` bytes is parsed
    first by a process of its own, on a quarter of the stack the teacher's parse has
    (``PROBE_STACK``), and is too deep where that parse fails so, dies, cannot start, or takes more
    than a minute."""
    digest = hashlib.sha256(source).digest()
    if digest not in _DEEP:
        if len(_DEEP) >= 16384:
            _DEEP.clear()
        _DEEP[digest] = _parse_fails_by_depth(source)
    return _DEEP[digest]


def _parse_fails_by_depth(source: bytes) -> bool:
    if sys.version_info < (3, 11) and len(source) > SAFE_TO_PARSE:
        try:
            alone = subprocess.run(
                [sys.executable, "-I", "-c", _PARSE_ALONE], input=source, capture_output=True, timeout=60, check=False
            )
        except (subprocess.TimeoutExpired, OSError):
            return True
        if alone.returncode < 0 or alone.returncode == TOO_DEEP_EXIT:  # a signal, or the parser's own refusal
            return True
    try:
        tree = source_tree(source)
    except (RecursionError, MemoryError):
        return True
    except (SyntaxError, ValueError):  # not Python: not read either, and no remark of nesting
        return False
    return sys.version_info < (3, 11) and _depth(tree) > DEEPEST


DEEPEST = 10_000
"""The deepest nesting of a student's file read on CPython 3.10, whose parser does not refuse
deeper: as deep as 3.13's reads (3.11 and 3.12 read some 3,000 levels)."""


def _depth(tree: ast.AST) -> int:
    """How deeply ``tree`` nests, found without recursion (a walk that recursed would overflow)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


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


def imports(directory: Path, ex: Exercise, course: Course, files: Iterable[str] | None = None) -> list[str]:
    """What the teacher is told of ``ex``'s files in ``directory`` (or of ``files``) that import
    borrowed code."""
    permitted = allowed(course)
    remarks = []
    for name in ex.files if files is None else files:
        tree = parse_handed_in(directory / name)
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
BUILTIN_RUNNERS = frozenset(("exec", "eval", "compile"))
"""Python's own functions that run (or make code from) text: remarked on where the file does not
bind the name itself (``from re import compile``, a method named ``eval`` are other things)."""
RUNNERS = frozenset((
    "marshal", "pickle", "runpy", "run_path", "run_module", "InteractiveInterpreter", "InteractiveConsole",
    "compile_command", "SourceLoader", "InspectLoader", "ExecutionLoader", "SourceFileLoader",
    "SourcelessFileLoader", "source_to_code", "exec_module", "__code__", "FunctionType", "CodeType",
))  # fmt: skip
"""Other names through which a file runs code made from text (a loader that compiles a string, a
code object made or read by hand): remarked on as a name, an attribute or an import; ``FunctionType``
and ``CodeType`` only where called (``isinstance(f, FunctionType)`` runs nothing)."""
_CALLED_ONLY = frozenset(("FunctionType", "CodeType"))


def _bound(tree: ast.AST) -> set[str]:
    """The names ``tree`` binds itself: assigned, imported, defined, or a parameter."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name.partition(".")[0])
    return bound


def _through_builtins(node: ast.AST) -> bool:
    """``builtins.exec`` or ``getattr(builtins, <anything>)``: Python's functions reached by name."""
    base = {"builtins", "__builtins__"}
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in base:
        return node.attr in BUILTIN_RUNNERS
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
        and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id in base
    )  # fmt: skip


def _runner(node: ast.AST, bound: set[str]) -> bool:
    """Whether ``node`` is one of the ways ``runs_text`` looks for."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        return node.id in BUILTIN_RUNNERS and node.id not in bound
    if isinstance(node, ast.Call):
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if called in _CALLED_ONLY:
            return True
    if _through_builtins(node):
        return True
    if isinstance(node, ast.Attribute):
        return node.attr in RUNNERS - _CALLED_ONLY
    if isinstance(node, ast.alias):
        return bool({node.name.partition(".")[0], node.name.rpartition(".")[2]} & (RUNNERS - _CALLED_ONLY))
    return isinstance(node, ast.Name) and node.id in RUNNERS - _CALLED_ONLY


def runs_text(tree: ast.AST) -> bool:
    """Whether ``tree`` runs code made from text: Python's ``exec``, ``eval`` or ``compile`` where
    the file does not bind that name itself (called or held), reached through ``builtins``
    (``getattr(builtins, ...)`` with any name), or one of ``RUNNERS``."""
    bound = _bound(tree)
    return any(_runner(node, bound) for node in ast.walk(tree))


LOOKED_UP = "the borrowed-engine check reads only imports written as imports (vjpgrad's engine taken at run time?)"
"""What a remark on a file that looks modules up at run time says, after the file's name."""
LOOKUPS = frozenset((
    "__import__", "importlib", "import_module", "find_spec", "spec_from_file_location", "module_from_spec",
    "load_module", "__loader__", "__spec__", "meta_path", "path_hooks", "path_importer_cache", "getmodule",
    "__subclasses__", "__globals__", "__closure__", "cell_contents", "_getframe", "currentframe",
    "getouterframes", "getinnerframes", "f_globals", "f_locals", "f_builtins", "f_back", "tb_frame", "gi_frame",
    "cr_frame", "__traceback__", "__builtins__", "__self__", "__getattribute__",
))  # fmt: skip
"""The names through which code reaches a module, or the grader's objects and their globals, without
an import written as one: vjpgrad is loaded in the student's process (the grader's code there is
vjpgrad's), so ``sys.modules`` or a frame's globals hand its engine over (``_opens_sys`` looks for
``sys.modules``: ``self.modules`` of a network is no such thing)."""


def _sys_names(tree: ast.AST) -> set[str]:
    """The names ``tree`` binds to the ``sys`` module (``import sys``, ``import sys as s``)."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree) if isinstance(node, ast.Import)
        for alias in node.names if alias.name == "sys"
    }  # fmt: skip


def _opens_sys(node: ast.AST, names: set[str]) -> bool:
    """``sys.modules``, ``from sys import modules``, or ``sys`` opened by a name the code computes
    (``getattr(sys, ...)``, ``vars(sys)``, ``sys.__dict__``); ``os.sys`` is ``sys`` too."""

    def is_sys(value: ast.AST) -> bool:
        return (isinstance(value, ast.Name) and value.id in names) or (
            isinstance(value, ast.Attribute) and value.attr == "sys"
        )

    if isinstance(node, ast.Attribute) and node.attr in ("modules", "__dict__"):
        return is_sys(node.value)
    if isinstance(node, ast.ImportFrom) and node.module == "sys":
        return any(alias.name in ("modules", "*") for alias in node.names)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "vars"):
        return bool(node.args) and is_sys(node.args[0])
    return False


def looks_up_modules(tree: ast.AST) -> bool:
    """Whether ``tree`` names one of ``LOOKUPS`` (a name, an attribute, an import, a string), or
    opens ``sys`` for its modules (``_opens_sys``): the ways a file takes vjpgrad's engine with no
    import of it."""
    words = {part for word in _words(tree) for part in word.strip().split(".")}
    names = _sys_names(tree)
    return bool(words & LOOKUPS) or any(_opens_sys(node, names) for node in ast.walk(tree))


def _a_file(path: Path) -> bool:
    """Whether ``path`` is a file; not when it cannot be asked (a name too long for the system)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _a_folder(path: Path) -> bool:
    """Whether ``path`` is a folder; not when it cannot be asked (``import aaa...a.b``, a name of 300
    letters, raised "File name too long" out of the teacher's grade)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _module_files(base: Path, dotted: str) -> list[Path]:
    """The files of module ``dotted`` and of the packages it is in, under ``base``, that exist."""
    found: list[Path] = []
    parts = [part for part in dotted.split(".") if part]
    for k in range(1, len(parts) + 1):
        folder = base.joinpath(*parts[:k])
        found += [path for path in (folder.with_suffix(".py"), folder / "__init__.py") if _a_file(path)]
        if k < len(parts) and not _a_folder(folder):  # nothing deeper can be there
            break
    return found


def _imported_files(directory: Path, path: Path, tree: ast.AST) -> list[Path]:
    """The student's own modules in ``directory`` that ``tree`` (the file ``path``) imports: not a
    file named as a module of the standard library, which their code imports instead (their folder
    is on ``sys.path`` after the standard library's: ``paths``)."""
    found: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not paths.in_the_standard_library(alias.name):
                    found += _module_files(directory, alias.name)
        elif isinstance(node, ast.ImportFrom) and node.level <= len(path.parents):  # none above the root
            if node.level == 0 and paths.in_the_standard_library(node.module or ""):
                continue
            base = directory if node.level == 0 else path.parents[node.level - 1]
            module = node.module or ""
            for alias in node.names:
                found += _module_files(base, f"{module}.{alias.name}")
    inside = directory.resolve()
    return [found_path for found_path in found if found_path.resolve().is_relative_to(inside)]


def own_files(directory: Path, ex: Exercise, course: Course) -> list[str]:
    """``ex``'s files in ``directory``, then the student's own modules they import, at any depth
    (``helpers.py``, ``more/engine_parts.py``): what the teacher's remarks read. Another exercise's
    file is left to that exercise's remarks."""
    others = set(course.student_files()) - set(ex.files)
    names = list(ex.files)
    for name in names:  # grows as modules are found
        tree = parse_handed_in(directory / name)
        if tree is None:
            continue
        for path in _imported_files(directory, directory / name, tree):
            found = path.relative_to(directory).as_posix()
            if found not in names and found not in others:
                names.append(found)
    return names


def recursion_limit(directory: Path, ex: Exercise, files: Iterable[str] | None = None) -> list[str]:
    """What the teacher is told of ``ex``'s files in ``directory`` (or of ``files``) that name
    ``setrecursionlimit``, ``pythonapi`` or ``/proc``, run code made from text, or look modules up at
    run time."""
    remarks = []
    for name in ex.files if files is None else files:
        tree = parse_handed_in(directory / name)
        if tree is None:
            continue
        if names_setter(tree):
            remarks.append(f"{name} names sys.setrecursionlimit: {RECURSION_LIMIT}")
        if names_outside(tree):
            remarks.append(f"{name} names ctypes.pythonapi or /proc: {REACHING}")
        if runs_text(tree):
            remarks.append(f"{name} runs code made from text: {FROM_TEXT}")
        if looks_up_modules(tree):
            remarks.append(f"{name} looks modules up at run time: {LOOKED_UP}")
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
    """``pass``, an expression that is a constant alone (a docstring, ``...``, a number), or an
    ``assert`` of a constant that holds (``assert True``)."""
    return (
        isinstance(statement, ast.Pass)
        or (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
        or (
            isinstance(statement, ast.Assert)
            and isinstance(statement.test, ast.Constant)
            and bool(statement.test.value)
        )
    )


def _unread_assignment(statement: ast.stmt, read: set[str]) -> bool:
    """An assignment to names the function never reads (``_ = None``, ``_ = len(xs)``): whatever it
    computes, nothing the function does reads it back."""
    return isinstance(statement, ast.Assign) and all(
        isinstance(t, ast.Name) and t.id not in read for t in statement.targets
    )


def _as_taken(statement: ast.stmt) -> list[ast.stmt]:
    """An ``if`` on a constant as the branch it takes (``if True: pass`` is ``pass``); any other
    statement as it is."""
    if isinstance(statement, ast.If) and isinstance(statement.test, ast.Constant):
        return [s for taken in (statement.body if statement.test.value else statement.orelse) for s in _as_taken(taken)]
    return [statement]


def _without_idle_wrapping(function: ast.FunctionDef | ast.AsyncFunctionDef, read: set[str]) -> None:
    """``function`` without a decorator that hands it back unchanged (``@(lambda g: g)``) and without
    the keyword arguments with defaults its body never reads (``_unused=None``)."""
    function.decorator_list = [d for d in function.decorator_list if not _hands_back(d)]
    arguments = function.args
    pairs = zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    kept = [(a, d) for a, d in pairs if d is None or a.arg in read]
    arguments.kwonlyargs, arguments.kw_defaults = [a for a, _ in kept], [d for _, d in kept]
    while arguments.defaults and arguments.args and arguments.args[-1].arg not in read:
        arguments.args.pop()
        arguments.defaults.pop()


def _hands_back(decorator: ast.expr) -> bool:
    """Whether a decorator is ``lambda f: f``."""
    return (
        isinstance(decorator, ast.Lambda)
        and len(decorator.args.args) == 1
        and isinstance(decorator.body, ast.Name)
        and decorator.body.id == decorator.args.args[0].arg
    )


def _without_idle_statements(tree: ast.AST) -> ast.AST:
    """``tree`` with every statement that does nothing taken out of every block (``_does_nothing``:
    docstrings among them; and in a function, ``_unread_assignment``), an ``if`` on a constant as
    the branch it takes (``_as_taken``), a block left empty holding one ``pass``, and each function
    without what wraps it to no effect (``_without_idle_wrapping``)."""
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    read = {
        id(f): {n.id for n in ast.walk(f) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} for f in functions
    }
    for function in functions:
        _without_idle_wrapping(function, read[id(function)])
    for scope in [tree, *functions]:
        names = read.get(id(scope))
        for node in ast.walk(scope):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if isinstance(block, list) and block and all(isinstance(s, ast.stmt) for s in block):
                    setattr(node, field, _kept_statements(block, names))
    return tree


def _kept_statements(block: list[ast.stmt], read: set[str] | None) -> list[ast.stmt]:
    """A block's statements that do something, an ``if`` on a constant as the branch it takes; in a
    function (``read``: the names it reads), without an assignment to names it never reads; one
    ``pass`` where nothing is left."""
    kept = [
        s for s in (part for statement in block for part in _as_taken(statement))
        if not _does_nothing(s) and not (read is not None and _unread_assignment(s, read))
    ]  # fmt: skip
    return kept or [ast.Pass()]


def _unlike(node: ast.AST) -> str:
    """The form of code nested too deep to read again (``ast.unparse`` and the visitors recurse):
    like nothing else, so never a copy."""
    return f"\0too deep to read: {id(node)}"


def normal(node: ast.AST) -> str:
    """``node`` as a string that is the same for two copies of the same code whatever their names,
    docstrings, comments, layout and statements that do nothing (``pass``, a string or ``...``)."""
    try:
        copy = _without_idle_statements(source_tree(ast.unparse(node)))
        return ast.dump(_Names().visit(copy), annotate_fields=False, include_attributes=False)
    except (RecursionError, MemoryError):
        return _unlike(node)


class _AnyName(ast.NodeTransformer):
    """Every name a piece of code chooses made one name, ``n``: what is left does not depend on the
    order the names first appear in (which ``_Names`` numbers them by)."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = "n"
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg, node.annotation = "n", None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name, node.returns = "n", None
        self.generic_visit(node)
        return node


BLOCKS = ("body", "orelse", "finalbody", "handlers")
"""The fields of a node that hold a block of statements (a handler's too)."""


def _sorted_blocks(node: ast.AST, form: Callable[[ast.AST], str]) -> None:
    """Each block under ``node`` put in the order of its statements' ``form``, innermost first."""
    for field in BLOCKS:
        block = getattr(node, field, None)
        if isinstance(block, list) and block and all(isinstance(s, ast.AST) for s in block):
            for statement in block:
                _sorted_blocks(statement, form)
            setattr(node, field, sorted(block, key=form))  # stable: statements alike keep their order


def _anonymous(node: ast.AST) -> str:
    """``node``'s form with every name it chooses alike (``_AnyName``), the node itself unchanged."""
    return ast.dump(_AnyName().visit(copy.deepcopy(node)), annotate_fields=False, include_attributes=False)


def _plain(node: ast.AST) -> str:
    return ast.dump(node, annotate_fields=False, include_attributes=False)


def loose(node: ast.AST) -> str:
    """``node`` as a string that is the same for two copies of the same code whatever their names,
    docstrings, comments, layout, statements that do nothing, and the order of the statements of a
    block that differ in more than their names (two independent lines swapped; ``a, b = x, y``
    written as two lines): what ``copied`` looks for besides ``normal``. The statements of each block
    are put in one order by their forms with every name alike, the names then numbered by where they
    first appear in that order (``_Names``, a function's parameters first, so ``a * b`` written
    ``b * a`` is still another form), and the blocks put in order again by those numbered forms."""
    try:
        return _loose(node)
    except (RecursionError, MemoryError):
        return _unlike(node)


def _loose(node: ast.AST) -> str:
    tree = _without_idle_statements(source_tree(ast.unparse(node)))
    for statement in list(ast.walk(tree)):  # ``a, b = x, y`` as ``a = x`` and ``b = y``
        for field in ("body", "orelse", "finalbody"):
            block = getattr(statement, field, None)
            if isinstance(block, list) and block and all(isinstance(s, ast.stmt) for s in block):
                setattr(statement, field, [part for s in block for part in _unpacked(s)])
    _sorted_blocks(tree, _anonymous)
    tree = _Names().visit(tree)
    _sorted_blocks(tree, _plain)
    return "loose " + _plain(tree)


def _unpacked(statement: ast.stmt) -> list[ast.stmt]:
    """An assignment of a tuple to a tuple of the same length as one assignment per item; else itself."""
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(target := statement.targets[0], ast.Tuple)
        and isinstance(statement.value, ast.Tuple)
        and len(target.elts) == len(statement.value.elts)
        and not any(isinstance(x, ast.Starred) for x in (*target.elts, *statement.value.elts))
    ):
        return [ast.Assign([t], v) for t, v in zip(target.elts, statement.value.elts, strict=True)]
    return [statement]


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


def _written_parts(ex: Exercise) -> tuple[str, ast.Module, list[str]] | None:
    """The file of ``ex`` the student writes in, its shipped solution, and the parts they write
    (its ``parts``, or every def and class of the solution where it names none), leaving out a part
    the skeleton gives whole (a copy of it is no copy); None where there is none (a teacher's
    exercise, or no solution to read)."""
    if ex.teachers or not ex.files:
        return None
    name = ex.files[0]
    theirs = parse(ex.solution(name))
    if theirs is None:
        return None
    given = parse(ex.template(name))

    def handed_out(part: str) -> bool:
        ours, theirs_part = (None if given is None else _part(given, part)), _part(theirs, part)
        return ours is not None and theirs_part is not None and normal(ours) == normal(theirs_part)

    everything = [n.name for n in theirs.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    parts = [p for p in ex.parts if not handed_out(p)] or [p for p in everything if not handed_out(p)]
    return (name, theirs, parts) if parts else None


def copied(directory: Path, ex: Exercise, definitions: Callable[[], set[str]] | None = None) -> list[str]:
    """What the teacher is told of the parts of ``ex`` in ``directory`` that are a shipped solution's.
    ``definitions``: what gives ``_definitions(directory)``, where one reading serves every exercise
    of a submission (``read_submission``)."""
    found = _written_parts(ex)
    if found is None or parse_handed_in(directory / found[0]) is None:
        return []
    name, theirs, parts = found
    # every def and class of every file handed in, by its normal form
    written = _definitions(directory) if definitions is None else definitions()
    for part in parts:
        b = _part(theirs, part)
        if b is None or (normal(b) not in written and loose(b) not in written):
            return []
    return [f"{name} ({', '.join(parts)}): {COPIED}"]


CLASSMATES = "the same program as the one handed in by"
"""What the teacher is told of an exercise whose parts two or more submissions graded together hand
in alike (``fingerprint``), followed by the others' names."""
SMALLEST_COPY = 60
"""The fewest nodes of Python's syntax tree an exercise's parts must hold together to be compared
at all (``fingerprint``): a few lines are often written the same way by students who never met."""
LARGE_COPY = 250
"""The nodes from which one exercise alike is told on its own; two submissions alike in smaller
exercises are told where they are alike in two of them or more (``gradebook._alike``): two
students who never met both write the obvious loop of exercise 4 (about 120 nodes), rarely the
same code for two exercises."""


def fingerprint(directory: Path, ex: Exercise) -> str | None:
    """The parts of ``ex`` the student wrote in ``directory`` (``_written_parts``), as one hash of
    their ``loose`` forms (names, docstrings, comments, layout, idle statements and the order of
    independent lines set aside): two submissions with the same fingerprint hand in one program,
    which ``gradebook.grade`` tells the teacher (``CLASSMATES``). None where a part is missing, where
    the parts are small (``SMALLEST_COPY``: written alike by chance), and where they are the shipped
    solution's (told already, ``COPIED``). It starts with ``L`` where the parts are large enough to
    be told alike on their own (``LARGE_COPY``), ``S`` where not. Read from the files as handed in,
    never run."""
    found = _written_parts(ex)
    if found is None:
        return None
    name, theirs, parts = found
    mine = parse_handed_in(directory / name)
    if mine is None:
        return None
    nodes = [node for node in (_part(mine, part) for part in parts) if node is not None]
    if len(nodes) < len(parts) or _shipped(theirs, parts, nodes):
        return None
    given = parse(ex.template(name))
    own = _own_names(mine, set() if given is None else _names_in(given))
    helpers = _helpers(mine, nodes, own, {part.rpartition(".")[2] for part in parts})
    size = sum(1 for node in (*nodes, *helpers) for _ in ast.walk(node))
    if size < SMALLEST_COPY:
        return None
    renamed = _OwnNames(own)  # one numbering for all: the parts' names first, then the helpers' as called
    forms = [loose(renamed.visit(copy.deepcopy(node))) for node in (*nodes, *helpers)]
    return ("L" if size >= LARGE_COPY else "S") + hashlib.sha256("\0".join(forms).encode()).hexdigest()


def _shipped(theirs: ast.Module, parts: list[str], nodes: list[ast.AST]) -> bool:
    """Whether the parts found (``nodes``) are the shipped solution's (``theirs``), as ``loose`` reads them."""
    shipped = [_part(theirs, part) for part in parts]
    return all(b is not None for b in shipped) and [loose(n) for n in nodes] == [loose(b) for b in shipped if b]


def _names_in(tree: ast.AST) -> set[str]:
    """Every name ``tree`` writes: its variables', arguments', functions', classes' and attributes'."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
    return found


def _own_names(tree: ast.Module, given: set[str]) -> set[str]:
    """The names of methods, functions and attributes that the student's file ``tree`` defines
    (a ``def``, a name assigned in a class or at the top: ``_as = _lift``, an attribute assigned:
    ``self._locals = ...``) and that the skeleton does not give (``given``): chosen by the student,
    so set aside as a local's name is (``_OwnNames``). A name the skeleton gives (``data``,
    ``_prev``) is the exercise's, and kept."""
    defined = set(_definitions_of(tree))
    defined |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    return defined - given


def _definitions_of(tree: ast.Module) -> dict[str, list[ast.stmt]]:
    """What defines each name at the top of ``tree`` and in its classes: a ``def``, or an
    assignment to the name alone (``_as = _lift``, ``_lift = staticmethod(lambda x: ...)``)."""
    found: dict[str, list[ast.stmt]] = {}
    bodies = [tree.body, *(n.body for n in _defined(tree) if isinstance(n, ast.ClassDef))]
    for body in bodies:
        last: dict[str, ast.stmt] = {}  # the last of a name in a body: the one Python keeps (a stub above is idle)
        for statement in body:
            if isinstance(statement, ast.FunctionDef):
                last[statement.name] = statement
            elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target = statement.targets[0]
                if isinstance(target, ast.Name):
                    last[target.id] = statement
        for name, statement in last.items():
            found.setdefault(name, []).append(statement)
    return found


def _helpers(tree: ast.Module, parts: list[ast.AST], own: set[str], named: set[str]) -> list[ast.AST]:
    """What the student's file ``tree`` defines under names of their own (``own``: a function, a
    method, a name assigned, ``_definitions_of``) that the ``parts`` use, or the helpers they use
    use (``self._lift(other)``), in the order first used: code of the parts, compared with them (a
    copy's helper renamed was no copy). A part's own name (``named``) is a part, not a helper."""
    defs = {name: found for name, found in _definitions_of(tree).items() if name in own and name not in named}
    found: list[ast.AST] = []
    pending, seen = collections.deque(parts), set()
    while pending:
        for node in ast.walk(pending.popleft()):
            name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
            if name in defs and name not in seen:
                seen.add(name)
                found += defs[name]
                pending += defs[name]
    return found


class _OwnNames(ast.NodeTransformer):
    """The names the student chose for methods and attributes (``own``) renamed by their first
    appearance, ``own0``, ``own1``..., as ``_Names`` does with variables': which of their helpers a
    part calls tells two programs apart (one name for all told an engine whose ``__mul__`` rounds
    and one whose ``__add__`` does "the same program")."""

    def __init__(self, own: set[str]) -> None:
        self.own = own
        self.names: dict[str, str] = {}

    def _renamed(self, name: str) -> str:
        return self.names.setdefault(name, f"own{len(self.names)}") if name in self.own else name

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        node.attr = self._renamed(node.attr)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._renamed(node.id)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._renamed(node.name)
        self.generic_visit(node)
        return node


def _definitions(directory: Path) -> set[str]:
    """The normal form (``normal``: names set aside, the def's own among them) of every function
    and class the checks could import (``_defined``: not one inside a function) in every Python
    file of ``directory`` and every module of the submission they import
    (in a folder: ``mine/engine_parts.py``): a part of a solution is found there under any name,
    behind a later stub of its name, or in another module the exercise's file imports. A folder
    nothing imports (a virtual environment, with vjpgrad's solutions installed in it) is not read."""
    found: set[str] = set()
    files = sorted(directory.glob("*.py"))
    for path in files:  # grows as the modules they import, in folders of the submission, are found
        tree = parse_handed_in(path)
        if tree is not None:
            defined = _defined(tree)
            found.update(normal(n) for n in defined)
            found.update(loose(n) for n in defined)
            files += [module for module in _imported_files(directory, path, tree) if module not in files]
    return found


def _defined(tree: ast.Module) -> list[ast.FunctionDef | ast.ClassDef]:
    """The functions and classes ``tree`` defines where the checks can import them: at its top level
    (in an ``if``, a ``try``...) and in its classes, not inside a function (99 defs nested in one
    another, each read again with every def around it, took 300 s of the teacher's process)."""
    found: list[ast.FunctionDef | ast.ClassDef] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
    return found


def not_read(directory: Path, files: Iterable[str]) -> list[str]:
    """What the teacher is told of the student's ``files`` in ``directory`` that are not read
    (``unread``, ``too_long_a_name``, ``too_deep``)."""
    said = []
    for name in files:
        why = unread(directory / name)
        if why is not None:
            said.append(f"{name} is {why}: not read for these remarks")
            continue
        source = handed_in(directory / name)
        if source is not None and too_long_a_name(source):
            said.append(f"{name} names a dotted name of more than {DOTTED_PARTS} parts: not read")
        elif source is not None and too_deep(source):
            said.append(f"{name} is nested deeper than Python's parser reads: not read")
    return said


def remarks(
    directory: Path, ex: Exercise, course: Course, definitions: Callable[[], set[str]] | None = None
) -> list[str]:
    """Everything the teacher is told of borrowed work in ``ex``'s files in ``directory``, and of those
    of its files not read (``not_read``). ``definitions``: as ``copied`` takes it."""
    files = own_files(directory, ex, course)
    return [
        *not_read(directory, files), *imports(directory, ex, course, files), *copied(directory, ex, definitions),
        *recursion_limit(directory, ex, files),
    ]  # fmt: skip


def read_submission(directory: Path, exercises: Sequence[Exercise], course: Course) -> list[list[object]]:
    """``[remarks, fingerprint]`` of each of ``exercises`` in ``directory``: what ``remarks_apart``'s
    process writes. Every file of the submission is parsed and put in normal form once for all the
    exercises (``_definitions``, read at the first exercise whose part is handed in), not once per
    exercise: that was about 2.5 s of each graded submission's 2.6 s of reading."""
    definitions = functools.cache(functools.partial(_definitions, directory))
    return [[remarks(directory, ex, course, definitions), fingerprint(directory, ex)] for ex in exercises]


REMARKS_SECONDS = 120.0
"""The most time the remarks on one submission (every exercise graded) may take: a few seconds for
any honest one."""
REMARKS_MEMORY = 4 << 30
"""The most address space (4 GiB) the process that reads one submission's remarks may hold."""
NOT_READ_IN_TIME = (
    "the remarks on borrowed work were not read: reading this submission's files took more than {seconds:g} s "
    "(a file that makes them slow: look at it yourself)"
)
NOT_READ_AT_ALL = (
    "the remarks on borrowed work were not read: the process reading this submission's files {why} "
    "(a file that breaks them: look at it yourself)"
)
_REMARKS_ALONE = """
import json, pickle, sys
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), int(sys.argv[2])))
except (ImportError, ValueError, OSError):
    pass
sys.path.insert(0, sys.argv[1])
from vjpgrad.course import borrowed
directory, exercises, course = pickle.load(sys.stdin.buffer)
json.dump(borrowed.read_submission(directory, exercises, course), sys.stdout)
"""


Read = tuple[list[list[str]], list[str | None]]
"""What ``remarks_apart`` reads of one submission: each exercise's remarks, and its ``fingerprint``."""


def _read(found: object, count: int) -> Read | None:
    """The reading process's output, where it is what that process writes: one ``[remarks,
    fingerprint]`` for each of ``count`` exercises."""
    if not isinstance(found, list) or len(found) != count:
        return None
    said: list[list[str]] = []
    prints: list[str | None] = []
    for item in found:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)):
            return None
        lines, mark = item
        if not all(isinstance(line, str) for line in lines):
            return None
        if mark is not None and not (isinstance(mark, str) and re.fullmatch(r"[LS][0-9a-f]{64}", mark)):
            return None
        said.append(lines)
        prints.append(mark)
    return said, prints


def remarks_apart(directory: Path, exercises: Sequence[Exercise], course: Course) -> Read:
    """``remarks`` on each of ``exercises`` in ``directory``, and its ``fingerprint``, read by a
    process of the teacher's own (isolated: ``python -I``, vjpgrad imported from where this one
    was) with at most ``REMARKS_SECONDS`` and ``REMARKS_MEMORY``: one student's files, read before
    any of their code runs, can make a parser or a codec slow (a file declaring the punycode coding
    took 500 s, a thousand files importing one another 25 minutes) or kill it, and the whole class
    waited or was not graded. Where that process does not finish, each exercise's remarks say so
    (and it has no fingerprint), and the grading goes on."""
    home = str(Path(__file__).resolve().parents[2])  # the folder the vjpgrad package is in
    given = pickle.dumps((directory, list(exercises), course))
    command = [sys.executable, "-I", "-c", _REMARKS_ALONE, home, str(REMARKS_MEMORY)]
    try:
        done = subprocess.run(command, input=given, capture_output=True, timeout=REMARKS_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return [[NOT_READ_IN_TIME.format(seconds=REMARKS_SECONDS)] for _ in exercises], [None] * len(exercises)
    except OSError as error:
        why = f"could not start ({error.strerror or error})"
        return [[NOT_READ_AT_ALL.format(why=why)] for _ in exercises], [None] * len(exercises)
    if done.returncode == 0:
        try:
            read = _read(json.loads(done.stdout), len(exercises))
        except ValueError:
            read = None
        if read is not None:
            return read
    last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"status {done.returncode}"]
    why = f"ended with {last[0][:200]}" if done.returncode >= 0 else f"was killed by signal {-done.returncode}"
    return [[NOT_READ_AT_ALL.format(why=why)] for _ in exercises], [None] * len(exercises)
