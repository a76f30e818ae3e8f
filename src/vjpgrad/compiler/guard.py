"""Where a recording's parameters are, checked at every call; what a function kept.

A parameter is a Value the function reaches without being given it: closed over, a global
it names, a default argument, an attribute of ``self``, of an object it was passed or of a
module. ``search`` walks, once, the plain data reachable from the function's roots and finds
a path to each Value the recording read (``cell 0 -> .model -> .layers -> [1] -> .w -> [2]``),
every path where there are several. ``Guard`` then checks at every call that each step of
those paths still leads to the same object and that each list, tuple or dict on the way kept
its length: a Value rebound since (``m.w = Value(5.0)``, a checkpoint loaded,
``params[0] = ...``) or a list of parameters that grew makes the call record anew, instead
of replaying code that reads the old Value. The checks run in C (``operator.itemgetter``,
``map(operator.is_, ...)``): a few tens of nanoseconds per parameter.

The same walk tells what the function kept: a Value it computed, stored where it can be
reached (``self.last = h``), is refused (a replay would not store it); a Value it made and
stored (a weight made on the first call) is a parameter from then on.

The walk reads plain data only (instance attributes from ``vars()``, slots, items of lists,
tuples and dicts, closure cells, named globals, defaults, a ``functools.partial``'s parts, a
user class's attributes): it never calls a property or any user code. Python's library and
installed packages are not walked into.
"""

from __future__ import annotations

import functools
import operator
import os
import sys
import sysconfig
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from vjpgrad.core.modes import OWN_CODE
from vjpgrad.core.value import Value

SEARCH_LIMIT = 500_000
"""Objects with parts looked at, at most, to find the Values a recording read."""

_LIBRARY = tuple(
    {
        os.path.join(p, "")
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (p := sysconfig.get_paths().get(key))
    }
)
_SCALARS = (int, float, complex, str, bytes, bool, type(None))

Step = tuple[str, Any]
"""One step of a path: ("item", index or key), ("attribute", name), ("slot", name), ("cell", index),
("global", name), ("class", None), ("call", None) for a weak reference, or ("member", name) for
a part of a function, method or partial (``__defaults__``, ``__self__``, ``args``...)."""


def _code_names(code: types.CodeType) -> set[str]:
    """The global names a code object and the code nested in it may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _is_library(x: Any) -> bool:
    """A module or class of Python's library, an installed package or vjpgrad (never walked into)."""
    if isinstance(x, types.ModuleType):
        path = getattr(x, "__file__", None)
        if not isinstance(path, str):  # built into Python, or made by the user's code (types.ModuleType)
            return x.__name__ in sys.builtin_module_names
        return os.path.abspath(path).startswith((*_LIBRARY, *OWN_CODE))
    module = sys.modules.get(getattr(x, "__module__", "") or "")
    return module is None or _is_library(module) or module.__name__ == "builtins"


def _children(x: Any) -> Iterator[tuple[Step, Any]]:
    """The objects ``x`` holds that a path may go through, each with the step that reaches it."""
    if isinstance(x, (list, tuple)):
        for i, item in enumerate(x):
            yield ("item", i), item
    elif isinstance(x, dict):
        for key, item in x.items():
            if isinstance(key, _SCALARS) or type(key).__hash__ is object.__hash__:  # type: ignore[comparison-overlap]  # an identity hash: a key that stays itself
                yield ("item", key), item
    elif isinstance(x, types.FunctionType):
        for i, cell in enumerate(x.__closure__ or ()):
            try:
                yield ("cell", i), cell.cell_contents
            except ValueError:  # an empty cell
                continue
        for name in sorted(_code_names(x.__code__)):
            if name in x.__globals__:
                yield ("global", name), x.__globals__[name]
        yield ("member", "__defaults__"), x.__defaults__
        yield ("member", "__kwdefaults__"), x.__kwdefaults__
    elif isinstance(x, types.MethodType):
        yield ("member", "__self__"), x.__self__
        yield ("member", "__func__"), x.__func__
    elif isinstance(x, functools.partial):
        yield ("member", "func"), x.func
        yield ("member", "args"), x.args
        yield ("member", "keywords"), x.keywords
    elif isinstance(x, weakref.ref):
        yield ("call", None), x()
    elif isinstance(x, (types.ModuleType, type)):
        if not _is_library(x):
            for name, item in vars(x).items():
                if not name.startswith("__"):
                    yield ("attribute", name), item
    else:
        holder = getattr(x, "__dict__", None)
        if type(holder) is dict:
            for name, item in holder.items():
                yield ("attribute", name), item
        for kind in type(x).__mro__:
            for name in kind.__dict__.get("__slots__", ()):
                if not name.startswith("__") and hasattr(x, name):
                    yield ("slot", name), getattr(x, name)
        yield ("class", None), type(x)


def follow(x: Any, step: Step) -> Any:
    """The object one step from ``x`` (raises if the step no longer leads anywhere)."""
    kind, key = step
    if kind == "item":
        return x[key] if isinstance(x, (list, tuple)) else dict.__getitem__(x, key)
    if kind == "attribute":
        return vars(x)[key]
    if kind in ("slot", "member"):
        return getattr(x, key)
    if kind == "cell":
        return x.__closure__[key].cell_contents
    if kind == "global":
        return x.__globals__[key]
    if kind == "class":
        return type(x)
    return x()  # "call": a weak reference


def described(path: tuple[Step, ...]) -> str:
    """A path as a reader writes it: ``.model.layers[1].w[2]``."""
    text = []
    for kind, key in path:
        if kind == "item":
            text.append(f"[{key!r}]")
        elif kind in ("attribute", "slot", "member", "global"):
            text.append(f".{key}")
        elif kind == "cell":
            text.append(f"<closure {key}>")
        elif kind == "class":
            text.append(".__class__")
        else:
            text.append("()")
    return "".join(text)


class Found:
    """What ``search`` found: for each wanted Value, every ``(parent, step)`` that leads to it;
    for each object on the way, the same; and the Values of ``stored`` met (with a path)."""

    def __init__(self) -> None:
        self.objects: dict[int, Any] = {}  # id -> every object looked at (kept alive while checking)
        self.parents: dict[int, list[tuple[int, Step]]] = {}  # id(child) -> (id(parent), step) for each way in
        self.paths: dict[int, tuple[int, tuple[Step, ...]]] = {}  # id -> (root, first path found)
        self.complete = True  # False when SEARCH_LIMIT stopped the walk


def search(roots: list[Any], wanted: set[int]) -> Found:
    """Walk the plain data reachable from ``roots`` (breadth first) and note every way to each
    Value whose id is in ``wanted``, and to every object that leads to one."""
    found = Found()
    for r, root in enumerate(roots):
        found.objects[id(root)] = root
        found.paths[id(root)] = (r, ())
    queue = [id(root) for root in roots]
    expanded = 0
    while queue:
        next_queue: list[int] = []
        for parent in queue:
            if expanded >= SEARCH_LIMIT:
                found.complete = False
                break
            expanded += 1
            x = found.objects[parent]
            root, path = found.paths[parent]
            for step, child in _children(x):
                if child is None or isinstance(child, _SCALARS):
                    continue
                key = id(child)
                if isinstance(child, Value):
                    if key in wanted:
                        found.objects.setdefault(key, child)
                        found.paths.setdefault(key, (root, (*path, step)))
                        found.parents.setdefault(key, []).append((parent, step))
                    continue
                found.parents.setdefault(key, []).append((parent, step))
                if key not in found.objects:
                    found.objects[key] = child
                    found.paths[key] = (root, (*path, step))
                    next_queue.append(key)
        queue = next_queue
    return found


class Guard:
    """The checks that every wanted Value is still where ``search`` found it: for every object on
    a path to one, each step from it to the next object on such a path, and its length."""

    def __init__(self, found: Found, targets: set[int]) -> None:
        useful = set(targets)  # the objects from which a target can be reached, and the targets
        frontier = list(targets)
        while frontier:
            key = frontier.pop()
            for parent, _ in found.parents.get(key, ()):
                if parent not in useful:
                    useful.add(parent)
                    frontier.append(parent)
        steps: dict[int, list[tuple[Step, Any]]] = {}
        for child in useful:
            for parent, step in found.parents.get(child, ()):
                if parent in useful:
                    steps.setdefault(parent, []).append((step, found.objects[child]))
        self.checks = [_check(found.objects[parent], children) for parent, children in steps.items()]

    def holds(self) -> bool:
        """Whether every step still leads where it led when the recording was made."""
        try:
            return all(check() for check in self.checks)
        except (LookupError, AttributeError, TypeError, ValueError):
            return False  # a step leads nowhere now: record anew (the function will say what is wrong)


def _check(container: Any, children: list[tuple[Step, Any]]) -> Callable[[], bool]:
    """One test of a container: its length if it is a list, tuple or dict, and each step from it
    to the object it led to, with the items read in C where the steps allow it."""
    size = len(container) if type(container) in (list, tuple, dict) else None
    plain = [(step[1], child) for step, child in children if step[0] == "item"]
    attributes = [(step[1], child) for step, child in children if step[0] == "attribute"]
    others = [(step, child) for step, child in children if step[0] not in ("item", "attribute")]
    keys, expected = [k for k, _ in plain], [c for _, c in plain]
    names, named = [k for k, _ in attributes], [c for _, c in attributes]
    items = operator.itemgetter(*keys) if keys else None
    fields = operator.itemgetter(*names) if names else None
    is_ = operator.is_

    def holds() -> bool:
        if size is not None and len(container) != size:
            return False
        if items is not None:
            got = items(container)
            if not all(map(is_, got if len(keys) > 1 else (got,), expected)):
                return False
        if fields is not None:
            got = fields(vars(container))
            if not all(map(is_, got if len(names) > 1 else (got,), named)):
                return False
        return all(follow(container, step) is child for step, child in others)

    return holds
