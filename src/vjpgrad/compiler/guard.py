"""Where a recording's parameters are, checked at every call.

A parameter is a Value the function reaches without being given it: closed over, a global
it names, an attribute of ``self`` or of an object it was passed. ``Guard`` finds, once, the
shortest path from the function's roots to each parameter (``cell 0 -> .model -> .layers ->
[1] -> .w -> [2]``) and checks at every call that each path still leads to the very same
Value, and that each list, tuple or dict on the way keeps its length. A Value rebound since
(``m.w = Value(5.0)``, a checkpoint loaded, ``params[0] = ...``) or a list of parameters
that grew makes the call record anew, instead of replaying code that reads the old Value.

The walk reads only plain data (instance attributes from ``vars()``, slots, items of lists,
tuples and dicts, closure cells, named globals): it never calls a property or user code.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

from vjpgrad.core.value import Value

SEARCH_LIMIT = 200_000
"""Objects looked at, at most, to find the paths to a recording's parameters."""

_Step = tuple[str, Any]
"""One step of a path: ("attribute", name), ("slot", name), ("item", index), ("key", key),
("cell", index), ("global", name), ("self", None), ("function", None)."""


def _code_names(code: types.CodeType) -> set[str]:
    """The global names a code object and the code nested in it may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _children(x: Any) -> Iterator[tuple[_Step, Any]]:
    """The objects ``x`` holds that a path may go through, each with the step that reaches it."""
    if isinstance(x, (Value, str, bytes, int, float, complex, types.ModuleType, type)) or x is None:
        return
    if type(x) in (list, tuple) or isinstance(x, tuple):
        for i, item in enumerate(x):
            yield ("item", i), item
        return
    if type(x) is dict:
        for key, item in x.items():
            if isinstance(key, (str, int)):
                yield ("key", key), item
        return
    if isinstance(x, types.MethodType):
        yield ("self", None), x.__self__
        yield ("function", None), x.__func__
        return
    if isinstance(x, types.FunctionType):
        for i, cell in enumerate(x.__closure__ or ()):
            try:
                yield ("cell", i), cell.cell_contents
            except ValueError:  # an empty cell
                continue
        for name in sorted(_code_names(x.__code__)):
            if name in x.__globals__:
                yield ("global", name), x.__globals__[name]
        return
    if isinstance(x, functools.partial):
        yield ("partial", None), x.func
        return
    holder = getattr(x, "__dict__", None)
    if type(holder) is dict:
        for name, item in holder.items():
            yield ("attribute", name), item
    for kind in type(x).__mro__:
        for name in kind.__dict__.get("__slots__", ()):
            if name.startswith("__") or not hasattr(x, name):
                continue
            yield ("slot", name), getattr(x, name)


def _follow(x: Any, step: _Step) -> Any:
    """The object one step from ``x`` (raises if the step no longer leads anywhere)."""
    kind, key = step
    if kind == "item":
        return tuple.__getitem__(x, key) if isinstance(x, tuple) else list.__getitem__(x, key)
    if kind == "key":
        return dict.__getitem__(x, key)
    if kind == "attribute":
        return vars(x)[key]
    if kind == "slot":
        return getattr(x, key)
    if kind == "cell":
        return x.__closure__[key].cell_contents
    if kind == "global":
        return x.__globals__[key]
    if kind == "self":
        return x.__self__
    if kind == "function":
        return x.__func__
    return x.func  # "partial"


def _size(x: Any) -> int | None:
    """The length of a list, tuple or dict (a guard: items added or removed show), else None."""
    return len(x) if isinstance(x, (list, tuple, dict)) else None


class Guard:
    """The paths from the roots of a call to each parameter, as a tree of steps, checked at every
    call: each step must still lead to an object, each container must keep its length, and each
    path must end at the very parameter the recording used."""

    def __init__(self, roots: list[Any], parameters: list[Value]) -> None:
        wanted = {id(p): k for k, p in enumerate(parameters)}
        found: dict[int, tuple[int, tuple[_Step, ...]]] = {}
        seen: set[int] = set()
        queue: list[tuple[int, tuple[_Step, ...], Any]] = [(r, (), root) for r, root in enumerate(roots)]
        looked = 0
        while queue and len(found) < len(wanted) and looked < SEARCH_LIMIT:  # breadth first: shortest paths
            next_queue: list[tuple[int, tuple[_Step, ...], Any]] = []
            for root, path, x in queue:
                looked += 1
                if id(x) in wanted and id(x) not in found:
                    found[id(x)] = (root, path)
                if id(x) in seen:
                    continue
                seen.add(id(x))
                next_queue.extend((root, (*path, step), child) for step, child in _children(x))
            queue = next_queue
        self.unguarded = [p for p in parameters if id(p) not in found]
        # a tree of steps: each node is (step, length of the container it reaches, children, parameter index)
        self.tree: dict[Any, Any] = {}
        for key, (root, path) in found.items():
            node = self.tree.setdefault(("root", root), [None, {}, None])
            target = roots[root]
            for step in path:
                node[0] = _size(target)
                target = _follow(target, step)
                node = node[1].setdefault(step, [None, {}, None])
            node[2] = wanted[key]
        self.parameters = parameters

    def holds(self, roots: list[Any]) -> bool:
        """Whether every parameter is still where the recording found it."""
        try:
            for (_, r), node in self.tree.items():
                if not self._holds(roots[r], node):
                    return False
        except (LookupError, AttributeError, TypeError, ValueError):
            return False  # a step leads nowhere now: record anew (the function says what is wrong)
        return True

    def _holds(self, x: Any, node: list[Any]) -> bool:
        size, children, parameter = node
        if parameter is not None and x is not self.parameters[parameter]:
            return False
        if size is not None and _size(x) != size:
            return False
        return all(self._holds(_follow(x, step), child) for step, child in children.items())


def roots(fn: Callable[..., Any], objects: list[Any]) -> list[Any]:
    """Where a function's parameters can be found: the function itself (its closure, the
    globals it names, its ``self``) and the objects the call was given."""
    return [fn, *objects]
