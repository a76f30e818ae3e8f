"""Where a recording's parameters are, checked at every call; what a function kept.

A parameter is a Value the function reaches without being given it: closed over, a global
it names, a default argument, an attribute of ``self``, of its class or of an object it was
passed, an entry of a list, tuple, deque, dict or set. ``search`` walks, once, the plain data
reachable from the function's roots and notes every way to each Value the recording read
(``cell 0 -> .model -> .layers -> [1] -> .w -> [2]``). ``Guard`` then checks at every call:

- that each step of those ways still leads to the same object, and that each container on
  the way kept its size (a list that grew, an attribute added that now shadows a class's);
- that the Python numbers, strings and flags the function can read directly (its globals,
  closure variables and defaults) and those held by the objects on the way (``self.training``,
  ``self.temperature``) are still what they were.

A Value rebound since (``m.w = Value(5.0)``, a checkpoint loaded), a list of parameters that
grew, or a flag or a number attribute changed, makes the call record anew, instead of
replaying code that reads the old state. The checks run mostly in C (``operator.itemgetter``,
``map(operator.is_, ...)``). Python state the walk does not reach (a dict the function reads
a default from, ``random.random()``) is fixed when the function is recorded.

The same walk tells what the function kept: a Value it computed, or a float argument, stored
where it can be reached (``self.last = h``), is refused (a replay would not store it); a Value
it made and stored (a weight made on the first call) is a parameter from then on.

The walk reads plain data only (``vars()``, slots, items, closure cells, named globals,
defaults, a ``functools.partial``'s parts, user classes and their bases): it never calls a
property or any user code. Python's library, installed packages and vjpgrad are not walked
into; containers whose items are all numbers or strings are skipped at C speed.
"""

from __future__ import annotations

import collections
import functools
import operator
import os
import struct
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
_SEQUENCES = (list, tuple, collections.deque)
_SIZED = (list, tuple, dict, set, frozenset, collections.deque, types.MappingProxyType)

Step = tuple[str, Any]
"""One step of a path: ("item", index or key), ("attribute", name), ("slot", name), ("cell", index),
("global", name), ("class", None), ("base", index), ("element", id) of a set, ("call", None) for a
weak reference, or ("member", name) for a part of a function, method or partial (``__defaults__``...)."""


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


def _stable(key: Any) -> bool:
    """A dict key that stays itself: a scalar, an object hashed by identity, a tuple of those."""
    if isinstance(key, _SCALARS):
        return True
    if type(key) is tuple:
        return all(_stable(part) for part in key)
    return type(key).__hash__ is object.__hash__  # type: ignore[comparison-overlap]  # hashed by identity


def _plain(items: Any) -> bool:
    """Whether a container holds nothing but numbers and strings (checked in C)."""
    return set(map(type, items)) <= set(_SCALARS)


def _children(x: Any) -> Iterator[tuple[Step, Any]]:
    """The objects ``x`` holds that a path may go through, each with the step that reaches it."""
    if isinstance(x, _SEQUENCES):
        if not _plain(x):
            for i, item in enumerate(x):
                yield ("item", i), item
    elif isinstance(x, dict):
        if not _plain(x.values()):
            for key, item in x.items():
                if _stable(key):
                    yield ("item", key), item
    elif isinstance(x, (set, frozenset)):
        if not _plain(x):
            for item in x:
                yield ("element", id(item)), item
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
            for i, base in enumerate(getattr(x, "__bases__", ())):
                yield ("base", i), base
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
        return dict.__getitem__(x, key) if isinstance(x, dict) else x[key]
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
    if kind == "base":
        return x.__bases__[key]
    if kind == "element":
        for item in x:
            if id(item) == key:
                return item
        raise LookupError("the set no longer holds it")
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
        elif kind in ("class", "base"):
            text.append(".__class__" if kind == "class" else f".__bases__[{key}]")
        else:
            text.append("()" if kind == "call" else "{...}")
    return "".join(text)


class Found:
    """What ``search`` found: every object looked at, every way into it (``parents``), the first
    path to it, and the numbers, strings and flags each holds (``scalars``)."""

    def __init__(self) -> None:
        self.objects: dict[int, Any] = {}  # id -> every object looked at (kept alive while checking)
        self.parents: dict[int, list[tuple[int, Step]]] = {}  # id(child) -> (id(parent), step) for each way in
        self.paths: dict[int, tuple[int, tuple[Step, ...]]] = {}  # id -> (root, first path found)
        self.scalars: dict[int, list[tuple[Step, Any]]] = {}  # id(container) -> (step, scalar) it holds
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
                key = id(child)
                if isinstance(child, Value):  # before the scalars: a float argument's stand-in says float
                    if key in wanted:
                        found.objects.setdefault(key, child)
                        found.paths.setdefault(key, (root, (*path, step)))
                        found.parents.setdefault(key, []).append((parent, step))
                    continue
                if isinstance(child, _SCALARS):
                    if step[0] in ("attribute", "global", "cell", "slot") or isinstance(x, types.FunctionType):
                        found.scalars.setdefault(parent, []).append((step, child))
                    continue
                found.parents.setdefault(key, []).append((parent, step))
                if key not in found.objects:
                    found.objects[key] = child
                    found.paths[key] = (root, (*path, step))
                    next_queue.append(key)
        queue = next_queue
    return found


class Guard:
    """The checks that every wanted Value is still where ``search`` found it (every step from
    every object on a way to one, and each container's size), and that the scalars the function
    can read on the way are unchanged."""

    def __init__(self, found: Found, targets: set[int]) -> None:
        useful = set(targets)  # the objects from which a target can be reached, and the targets
        frontier = list(targets)
        while frontier:
            key = frontier.pop()
            for parent, _ in found.parents.get(key, ()):
                if parent not in useful:
                    useful.add(parent)
                    frontier.append(parent)
        roots = {key for key, (_, path) in found.paths.items() if not path}
        steps: dict[int, list[tuple[Step, Any]]] = {}
        for child in useful:
            for parent, step in found.parents.get(child, ()):
                if parent in useful:
                    steps.setdefault(parent, []).append((step, found.objects[child]))
        for root in roots:  # what the function reads directly: its globals, cells and defaults
            for key, ways in found.parents.items():
                for parent, step in ways:
                    if parent == root and key not in useful:
                        steps.setdefault(root, []).append((step, found.objects[key]))
        holders = (set(steps) | roots) & (useful | roots)
        self.checks = [
            _check(found.objects[key], steps.get(key, []), found.scalars.get(key, []) if key in holders else [])
            for key in holders
        ]

    def holds(self) -> bool:
        """Whether every step still leads where it led when the recording was made."""
        try:
            return all(check() for check in self.checks)
        except (LookupError, AttributeError, TypeError, ValueError, StopIteration):
            return False  # a step leads nowhere now: record anew (the function will say what is wrong)


def _same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same scalar: the same type and, for floats, the same bits."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    return bool(a == b)


def _reference(x: Any) -> Callable[[], Any]:
    """A weak reference where the object allows one (a recording does not keep a model alive)."""
    try:
        return weakref.ref(x)
    except TypeError:
        return lambda: x


def _check(container: Any, children: list[tuple[Step, Any]], scalars: list[tuple[Step, Any]]) -> Callable[[], bool]:
    """One test of a container: its size (or its attributes' number), each step from it to the
    object it led to (items and attributes read in C), and the scalars it held."""
    held = _reference(container)
    size = len(container) if isinstance(container, _SIZED) else None
    attributes = getattr(container, "__dict__", None)
    count = len(attributes) if size is None and isinstance(attributes, (dict, types.MappingProxyType)) else None
    plain = [(step[1], child) for step, child in children if step[0] == "item"]
    named_children = [(step[1], child) for step, child in children if step[0] == "attribute"]
    others = [(step, child) for step, child in children if step[0] not in ("item", "attribute")]
    keys, expected = [k for k, _ in plain], [c for _, c in plain]
    names, named = [k for k, _ in named_children], [c for _, c in named_children]
    exact_dict = type(container) is dict
    items = operator.itemgetter(*keys) if keys else None
    fields = operator.itemgetter(*names) if names else None
    is_ = operator.is_

    def holds() -> bool:
        x = held()
        if x is None:
            return False
        if size is not None and len(x) != size:
            return False
        if count is not None and len(vars(x)) != count:
            return False
        if items is not None:
            if exact_dict or not isinstance(x, dict):
                got = items(x)
                got = got if len(keys) > 1 else (got,)
            else:  # a dict subclass: its own __getitem__ could run user code (a defaultdict's __missing__)
                got = tuple(dict.__getitem__(x, k) for k in keys)
            if not all(map(is_, got, expected)):
                return False
        if fields is not None:
            got = fields(vars(x))
            if not all(map(is_, got if len(names) > 1 else (got,), named)):
                return False
        if not all(follow(x, step) is child for step, child in others):
            return False
        return all(_same(follow(x, step), value) for step, value in scalars)

    return holds
