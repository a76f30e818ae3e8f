"""Recording a function: what its arguments are, what its world is, and what one run made.

``Arguments`` reads a call's arguments into a key (their structure: what fixes a recording)
and their leaves (the Values a replay reads). Numbers are structure, keyed by their bits, as
``torch.compile`` specializes Python scalars: a number that changes at every call is passed as
a Value. ``record`` observes the function's world (``world.observe``), runs the function once
on the call's own arguments while the core records every operation (into a
``vjpgrad.recording.Recording``) and refuses every read of a Value's number, observes the
world again and refuses any change the run made to it (a replay would not make it).
``Recorded`` then says which Values the code reads (arguments, parameters found in the world,
Values made inside), which are constants, and where the results come from.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import datetime
import dis
import functools
import gc
import importlib
import inspect
import marshal
import numbers
import os
import random
import re
import sys
import textwrap
import threading
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from vjpgrad.compiler import world
from vjpgrad.compiler.write import OUTSIDE, Edges, row_codes
from vjpgrad.core import graph
from vjpgrad.core.modes import DataDependentError, is_own_code, refusing_numbers, state
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector
from vjpgrad.recording import Columns, Recording, columns_of, positions_in, recorded_graph_with_columns

_number = graph.number
_exact = world.exact
_is_scalar = world.is_scalar


# ---- the arguments: their structure (the key of a recording) and their leaves ---------------------


_SEQUENCE_ARGUMENTS = (list, tuple, Vector, set, frozenset)
"""The containers of arguments read item by item, in their order (a set's: the order the function
iterates it in)."""
_DICT_ARGUMENTS = (dict, collections.OrderedDict, collections.Counter, collections.defaultdict)
"""The mappings of arguments read key by key, in their order: ``dict`` and the standard library's
dicts, whose methods run no code of the user's (a ``defaultdict``'s factory, which a missing key
calls, is an object of the call, by identity)."""


class Arguments:
    """The arguments of one call, read: their structure (a hashable key, keyword arguments in
    the call's order), their Values in order (``leaves``), and the other objects passed
    (``self``, a model: structure by identity, and roots of the function's world)."""

    __slots__ = ("args", "key", "kwargs", "leaves", "objects")

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.args, self.kwargs = args, kwargs
        key: list[Any] = []
        self.leaves: list[Value] = []
        self.objects: list[Any] = []
        places: dict[int, int] = {}
        visit = self._visit
        containers: dict[int, int] = {}
        try:
            for arg in args:
                visit(arg, key, places, containers)
            for name, arg in kwargs.items():  # in the call's order: a function may iterate them
                key.append(name)
                visit(arg, key, places, containers)
        except RecursionError:  # no test on the way: a call's arguments are read at every call
            raise TypeError(
                "an argument of a compiled function holds itself (a list or dict inside itself), or is nested too "
                "deep to read: it has no structure to key a recording by; pass what the function reads, or call it "
                "uncompiled"
            ) from None
        key.append(state.grad_enabled)
        self.key = tuple(key)

    def _visit(self, x: Any, key: list[Any], places: dict[int, int], containers: dict[int, int]) -> None:
        """Key ``x``: a part per Value, number and container, in the order met (``described_part``
        names a part by the same walk). A container met again is keyed as the same one (its place
        among the containers met): ``[[0.0] * 2] * 2`` holds one list twice, which code that copies
        or pickles it tells from two equal lists, as it tells a Value passed twice (``places``)."""
        kind = type(x)
        if kind is Value:
            place = places.setdefault(id(x), len(self.leaves))
            key.append((x.requires_grad, place))
            self.leaves.append(x)
        elif kind in _SEQUENCE_ARGUMENTS:  # a set's items in its order: as iterated
            count = len(containers)  # _container, inline: a list of rows is the common case
            first = containers.setdefault(id(x), count)
            key.append((kind, len(x)) if first == count else (kind, len(x), "again", first))
            leaves = self.leaves
            for item in x:
                if type(item) is Value:  # the branch above, inline: a row of Values is the common case
                    place = places.setdefault(id(item), len(leaves))
                    key.append((item.requires_grad, place))
                    leaves.append(item)
                else:
                    self._visit(item, key, places, containers)
        elif _is_scalar(x):
            key.append(_exact(x))  # structure: a number by its bits, a string, a flag
        elif isinstance(x, Value):  # a subclass of Value
            place = places.setdefault(id(x), len(self.leaves))
            key.append((kind, x.requires_grad, place))
            self.leaves.append(x)
        elif (isinstance(x, tuple) and hasattr(x, "_fields")) or isinstance(x, Vector):
            # a user's subclass with a __dict__ or slots of its own: what its instance carries too
            key.append(_container(kind, (len(x), _carried(x)) if _carries(kind) else len(x), x, containers))
            for item in x:
                self._visit(item, key, places, containers)
        elif kind in _DICT_ARGUMENTS:
            self._visit_mapping(x, key, places, containers)
        elif (numbers := _whole_numbers(x)) is not None:
            key.append((kind, *numbers))  # a range or slice: numbers that never change, by value as jax.jit
        elif kind.__module__ == "numpy" and kind.__name__ == "ndarray":
            key.append(("array", *world.content(x)))  # its numbers are structure, as in the world: by their bits
        elif hasattr(kind, "__array_interface__") or isinstance(x, (list, tuple, dict, set, frozenset)):
            raise _refused_argument(x, kind)
        else:  # any other object (self, a model, a float subclass): by identity; its world is watched
            key.append(("object", id(x)))
            self.objects.append(x)

    def _visit_mapping(self, x: Any, key: list[Any], places: dict[int, int], containers: dict[int, int]) -> None:
        """Key a dict: its keys as its values are, by value, a Value or an object by identity; a
        ``defaultdict``'s factory first (an object of the call)."""
        kind = type(x)
        key.append(_container(kind, len(x), x, containers))
        if kind is collections.defaultdict:
            self._visit(x.default_factory, key, places, containers)
        for k, item in x.items():
            self._visit(k, key, places, containers)
            self._visit(item, key, places, containers)

    def masked(self) -> tuple[Any, ...]:
        """The key with every number replaced by its type: calls that differ only in numbers
        have one masked key."""
        return tuple(world.number_masked(part) if _is_exact_number(part) else part for part in self.key)


def _refused_argument(x: Any, kind: type) -> TypeError:
    """Why ``x``, passed, is refused: an array-like whose numbers compile cannot tell apart between
    calls, a NumPy scalar that is no number (a ``datetime64``), or a subclass of Python's container,
    whose methods may run code of its own between calls."""
    if hasattr(kind, "__array_interface__"):
        scalar = kind.__module__ == "numpy" and getattr(x, "ndim", None) == 0  # a datetime64, a structured void
        what = (
            f"a NumPy scalar of dtype {x.dtype}, not a number: pass what the function needs of it as numbers"
            if scalar
            else "an array whose numbers it could not tell apart between calls: pass a list of Values (or a Vector)"
        )
        return TypeError(
            "a compiled function takes numbers, Values, Vectors, NumPy arrays, lists, tuples and dicts of them; "
            f"got {_a(kind.__name__)}, {what}"
        )
    return TypeError(
        f"a compiled function takes numbers, Values, Vectors, lists, tuples, sets and dicts of them, and "
        f"other objects by identity; got {_a(kind.__name__)} (a subclass of Python's container), whose "
        "methods may run code of its own between calls: pass a plain list, tuple, set or dict, or call the "
        "function uncompiled"
    )


def _container(kind: type, size: Any, x: Any, containers: dict[int, int]) -> tuple[Any, ...]:
    """A container's part of a call's key: its kind and size, and, for one met before in the same
    call, the place of its first meeting (the same object twice is not two equal ones)."""
    count = len(containers)
    first = containers.setdefault(id(x), count)
    return (kind, size) if first == count else (kind, size, "again", first)


AttributesKey = tuple[tuple[tuple[str, Any], ...], ...] | None


def _a(name: str) -> str:
    """``name`` (a type's) with its article, as a message reads it: "an Out", "a Rows", "an object"."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def argument_attributes(leaves: list[Value], names: frozenset[str] | None) -> AttributesKey:
    """The attributes the Values a call was given carry (a label, a user's ``x.scale``) that the
    code may read (``names``: None for all), each a number by its bits, a string, or an object
    by its identity, and, where the code may ask (``x.is_leaf``, ``x._op``), the operation that
    made each (``_made``): structure, as the numbers passed are. None where there are none: the
    common case, told in one pass in C."""
    made = names is None or not names.isdisjoint(world.GRAPH_NAMES)
    if not made and not any(map(vars, leaves)) and all(type(x) is Value for x in leaves):
        return None
    key = tuple(
        tuple(
            (name, _exact(item) if _is_scalar(item) else ("object", id(item)))
            for name, item in _own_attributes(x)
            if names is None or name in names
        )
        + (_made(x) if made else ())
        for x in leaves
    )
    return key if any(key) else None


def _own_attributes(x: Any) -> list[tuple[str, Any]]:
    """What an object of a user's subclass (of Value, Vector or a named tuple) carries: its
    class's slots (an empty one as missing), then its ``__dict__``."""
    kind: type = type(x)
    held = list(vars(x).items()) if kind.__dictoffset__ else []
    for name, slot in reversed(world.user_slots(kind)):
        try:
            held.insert(0, (name, slot.__get__(x)))  # the slot itself: no __getattr__ of the user's runs
        except AttributeError:
            held.insert(0, (name, world.MISSING))
    return held


def _made(x: Value) -> tuple[tuple[str, Any], ...]:
    """How a Value was made, as its own names tell (``op``, ``parents``, micrograd's ``_prev``):
    nothing for a leaf; for an operation's result, the operation and which objects its operands
    are (``u.parents[0]`` is read from the recording's ``u``: another ``u`` made from other Values
    records anew, where a number read from the old operand would be stale)."""
    if x.is_leaf:
        return ()
    parents = x.parents
    return (("(made by)", (x.op, tuple(("object", id(p)) for p in parents))),)


def argument_classes(read: Arguments) -> list[type]:
    """The user's classes among the kinds of the arguments (a subclass of Value, a named tuple's
    class with methods): their code and class attributes are part of the function's world,
    though its code need not name them; the key fixes which classes they are."""
    found: dict[int, type] = {}
    for part in read.key:
        if type(part) is tuple and part and isinstance(part[0], type) and not world.is_library(part[0]):
            found.setdefault(id(part[0]), part[0])
    return list(found.values())


def refuse_object_attributes(fn: Callable[..., Any], leaves: list[Value], names: frozenset[str] | None) -> None:
    """``DataDependentError`` for an object (not a number or string) kept on a Value the call was
    given, where the code may read it: its state would be a world compile does not walk. Raised
    before the function runs."""
    for x in leaves:
        for name, item in _own_attributes(x):
            if (names is None or name in names) and not _is_scalar(item):
                raise DataDependentError(
                    f"{_name(fn)} (defined at {where(fn)}) was given a Value that carries .{name}, a "
                    f"{type(item).__name__}, which its code may read: vjpgrad.compile keys the Values a call is "
                    "given by the numbers and strings they carry, and does not watch an object's state there. "
                    "Keep numbers or strings on the Value, or pass the object itself as an argument of its own "
                    "(its state is watched then), or call the function uncompiled"
                )


def _carries(kind: type) -> bool:
    """Whether instances of ``kind`` (a Vector or named tuple) can carry attributes of their own."""
    return bool(kind.__dictoffset__) or bool(world.user_slots(kind))


def _carried(x: Any) -> tuple[tuple[str, Any], ...]:
    """The attributes an instance of a user's Vector or named tuple carries (its class's slots, an
    empty one as missing, then its ``__dict__``), each a number by its bits or a string:
    structure. ``TypeError`` for an object there, whose state no key holds."""
    carried = []
    for name, item in _own_attributes(x):
        if not _is_scalar(item):
            raise TypeError(
                f"a compiled function keys {_a(type(x).__name__)} it is given by what it holds and the numbers and "
                f"strings it carries; got {_a(type(x).__name__)} carrying .{name}, {_a(type(item).__name__)}: pass "
                "that as an argument of its own, or call the function uncompiled"
            )
        carried.append((name, _exact(item)))
    return tuple(carried)


def _whole_numbers(x: Any) -> tuple[Any, Any, Any] | None:
    """A range's start, stop and step, or a slice's when they are whole numbers or None: what
    keys it; None for anything else (a slice of other objects is an object, by identity)."""
    if type(x) is range:
        return (x.start, x.stop, x.step)
    if type(x) is slice and all(type(p) is int or p is None for p in (x.start, x.stop, x.step)):
        return (x.start, x.stop, x.step)
    return None


def _is_exact_number(part: Any) -> bool:
    return type(part) is tuple and len(part) == 2 and isinstance(part[0], type) and world.is_number_type(part[0])


def number_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any], names: list[str] | None = None
) -> list[tuple[str, Any]]:
    """The numbers a call was given (in lists, tuples and dicts too), and those containers, each
    named, in the order ``Arguments`` reads them: keyed by their content, they are one recording
    whatever object holds them, and the guard compares their identities where the function uses
    ``is`` (``lr is DEFAULT``, ``options is DEFAULTS``)."""
    found: list[tuple[str, Any]] = []

    def visit(x: Any, name: str) -> None:
        if isinstance(x, (list, tuple, Vector, set, frozenset)):
            found.append((name, x))
            for k, item in enumerate(x):
                visit(item, f"{name}[{k}]")
        elif type(x) is dict:
            found.append((name, x))
            for key, item in x.items():
                visit(item, f"{name}[{key!r}]")
        elif _is_scalar(x) or type(x) in (range, slice):
            # a string is keyed by its text, a range or slice by its numbers: each one's identity as a number's
            found.append((name, x))

    for k, arg in enumerate(args):
        visit(arg, names[k] if names is not None else f"argument {k + 1}")
    for name, arg in kwargs.items():
        visit(arg, name)
    return found


def described_part(args: tuple[Any, ...], kwargs: dict[str, Any], names: list[str], index: int) -> str:
    """How a reader names the argument at part ``index`` of a call's key (``lr``, ``batch[2]``)."""
    parts: list[str] = []

    def visit(x: Any, name: str) -> None:  # a part per node, as ``Arguments._visit`` keys them
        kind = type(x)
        parts.append(name)
        if kind in _SEQUENCE_ARGUMENTS or (isinstance(x, tuple) and hasattr(x, "_fields")):
            for k, item in enumerate(x):
                visit(item, f"{name}[{k}]")
        elif kind in _DICT_ARGUMENTS:
            if kind is collections.defaultdict:
                visit(x.default_factory, f"{name}'s default_factory")
            for k, item in x.items():
                visit(k, f"{name} (its key {k!r})")
                visit(item, f"{name}[{k!r}]")

    for arg, name in zip(args, names, strict=False):
        visit(arg, name)
    for name, arg in kwargs.items():
        parts.append(name)
        visit(arg, name)
    return parts[index] if index < len(parts) else "grad mode"


# ---- the results: a structure of Values, numbers and None ---------------------------------------------


Shape = Any
"""A result's structure: ``("leaf", k)`` for its k-th Value, ``("same", x)`` for a number,
None or other object returned as it is (a container the function's world holds too),
``("given", path)`` for a container the call was given (``given_at``), ``("again", n)`` for the
n-th container made inside met again, ``("vector", [shapes])``, ``(list or tuple, [shapes])``,
``("dict", [(key, shape)])``."""

_RESULT_CONTAINERS = (list, tuple, dict, Vector)
"""The containers a result may hold (a namedtuple is a tuple): as ``Arguments`` reads them."""

_MUTABLE_CONTAINERS = (list, dict, Vector)
"""The containers whose identity a result keeps (``kept_containers``): a tuple cannot change, and
Python shares equal ones (``()``), so a result's tuples are made anew, as before."""


def kept_containers(fn: Callable[..., Any], read: Arguments, found: world.Snapshot) -> dict[int, Shape]:
    """The containers that existed before the call, by id, each with the shape that returns it
    itself, as eager code does (a copy would miss what the caller changes in it later): one the
    call was given by where it was given (``("given", path)``: each call's own), one of the
    function's world as it is (``("same", x)``: the guard checks it is the same one). One found at
    two places (given twice, or given and reached) would be returned from the wrong one by a
    replay given two: its shape is ``("twice", why)``, refused if the result holds it."""
    kept: dict[int, Shape] = {}
    names = argument_names(fn, len(read.args), list(read.kwargs))
    roots = [*zip(range(len(read.args)), names, read.args, strict=True), *((k, k, x) for k, x in read.kwargs.items())]
    found_at: dict[int, str] = {}

    def visit(x: Any, path: tuple[Any, ...], name: str) -> None:
        if isinstance(x, _MUTABLE_CONTAINERS):
            if id(x) in found_at:
                kept[id(x)] = ("twice", _given_twice(fn, x, found_at[id(x)], name))
                return
            found_at[id(x)], kept[id(x)] = name, ("given", path)
        elif not isinstance(x, tuple):
            return
        for key, item in x.items() if isinstance(x, dict) else enumerate(x):
            visit(item, (*path, key), f"{name}[{key!r}]")

    for place, name, x in roots:
        visit(x, (place,), name)
    for x in _world_objects(found):
        if isinstance(x, _MUTABLE_CONTAINERS):
            where_given = found_at.get(id(x))
            kept[id(x)] = ("same", x) if where_given is None else ("twice", _given_twice(fn, x, where_given, ""))
    return kept


def _world_objects(found: world.Snapshot) -> Iterator[Any]:
    """The objects of the function's world, each watched by identity: the snapshot's, and the
    items of its tuples (a default's list, an object's attributes: read as one tuple, an
    ``ids`` fact)."""
    for x in found.constants:
        yield x
        if isinstance(x, tuple):
            yield from x


def _given_twice(fn: Callable[..., Any], x: Any, first: str, second: str) -> str:
    kind = type(x).__name__
    places = f"{first} and {second}" if second else f"{first} and in its world"
    return (
        f"{where(fn)}: {_name(fn)} returns a {kind} that it reaches at two places ({places}): a replay given "
        f"two {kind}s there could not tell which one eager code returns; return a copy ({kind}() of it) "
        f"instead, or call {_name(fn)} uncompiled"
    )


def given_at(path: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The object at ``path`` in a call's arguments: a position (or a keyword's name), then
    the items' indices and keys (``kept_containers``)."""
    x = args[path[0]] if type(path[0]) is int else kwargs[path[0]]
    for key in path[1:]:
        x = x._values[key] if type(x) is Vector else x[key]
    return x


class _Shapes:
    """Reads a result's structure (``shape_of``); a container met twice is ``("again", n)``."""

    def __init__(self, leaves: list[Any], kept: dict[int, Shape]) -> None:
        self.leaves, self.kept = leaves, kept
        self.numbered: dict[int, int] = {}  # id -> n, the containers made inside, in the order met
        self.open: set[int] = set()  # the ids of the containers being read: one met again holds itself

    def of(self, result: Any) -> Shape:
        if isinstance(result, Value):
            self.leaves.append(result)
            return ("leaf", len(self.leaves) - 1)
        if result is None or isinstance(result, (numbers.Number, str, bytes)):
            return ("same", result)
        kept = self.kept.get(id(result))
        if kept is not None:
            if kept[0] == "twice":
                raise DataDependentError(kept[1])
            return kept
        n = self.numbered.get(id(result))
        if n is not None:
            if id(result) in self.open:
                raise TypeError(
                    f"a compiled function's result holds itself (a {type(result).__name__} inside itself), which "
                    "it cannot return anew at each call: return its parts, or call the function uncompiled"
                )
            return ("again", n)
        self.numbered[id(result)] = len(self.numbered)
        self.open.add(id(result))
        shape = self._container(result)
        self.open.discard(id(result))
        return shape

    def _container(self, result: Any) -> Shape:
        if type(result) is Vector:
            return ("vector", [self.of(item) for item in result])
        if (
            type(result) in (list, tuple)
            or isinstance(result, Vector)
            or (isinstance(result, tuple) and hasattr(result, "_fields"))
        ):
            if type(result) not in (list, tuple) and _carries(type(result)):
                _refuse_carried(result)
            return (type(result), [self.of(item) for item in result])
        if type(result) is dict:
            return ("dict", [(key, self.of(item)) for key, item in result.items()])
        raise TypeError(
            "a compiled function returns Values, Vectors, numbers, None, and lists, tuples or dicts of them; got "
            f"{_a(type(result).__name__)}"
        )


def _refuse_carried(result: Any) -> None:
    """A result of a user's Vector or named tuple subclass is made anew at each call from its
    items: ``TypeError`` if it carries attributes, which that one would lack."""
    carried = [name for name, item in _own_attributes(result) if item is not world.MISSING]
    if carried:
        kind = type(result).__name__
        raise TypeError(
            f"a compiled function returns a {kind} as a new one at each call, made from its items; got a {kind} "
            f"carrying .{carried[0]}, which that one would lack: return what it carries alongside it, or call the "
            "function uncompiled"
        )


def shape_of(result: Any, leaves: list[Any], kept: dict[int, Shape] | None = None) -> Shape:
    """The structure of a function's result; its Values are appended to ``leaves``. ``kept``:
    the containers returned as themselves (``kept_containers``)."""
    return _Shapes(leaves, kept or {}).of(result)


def build(shape: Shape, leaves: list[Any], args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
    """A result of ``shape`` again, with ``leaves`` in place of its Values and the call's
    arguments (``args``, ``kwargs``) for the containers it was given."""
    kind, parts = shape
    if kind == "leaf":  # the common result: one Value
        return leaves[parts]
    return _build(shape, leaves, args, kwargs or {}, [])


def _build(shape: Shape, leaves: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any], built: list[Any]) -> Any:
    """``build``, with the containers made so far in the order met (``built``: ``("again", n)``)."""
    kind, parts = shape
    if kind == "leaf":
        return leaves[parts]
    if kind == "same":
        return parts
    if kind == "given":
        return given_at(parts, args, kwargs)
    if kind == "again":
        return built[parts]
    n = len(built)
    built.append(None)
    items = [_build(part, leaves, args, kwargs, built) for part in (parts if kind != "dict" else [p for _, p in parts])]
    if kind == "vector" or (type(kind) is not str and issubclass(kind, Vector)):  # a user's subclass: its class
        made: Any = object.__new__(Vector if kind == "vector" else kind)
        made._values = items
    elif kind == "dict":
        made = {key: item for (key, _), item in zip(parts, items, strict=True)}
    else:
        made = tuple.__new__(kind, items) if hasattr(kind, "_fields") else kind(items)  # not the user's __new__
    built[n] = made
    return made


# ---- one run of the function, recorded --------------------------------------------------------------


@dataclass
class Recorded:
    """What one recorded run made, read for writing code.

    ``live``: the recorded operations the outputs need and the Values made inside that they
    read, in creation order. ``arguments``: the call's Values, in order. ``parameters``: the
    other Values the operations read (found in the function's world). ``constants``: numbers of
    Values made inside that take no gradient. ``shape``: the structure of the result;
    ``outputs``: where each of its Values comes from: ``("inside", index into live)``,
    ``("external", index into externals)``, ``("constant", number)`` for a constant Value.
    ``world``: the function's world as the recording found it (the guard is written from it).
    ``result``: what the recorded run returned, which is the first call's result.
    ``columns``: each operation's operation and operands and where each was made, as the
    reading of the recording found them (``recording.Columns``), for the cache's key to describe
    ``live`` without reading every node again; None where ``live`` is not every node the
    reading read (``describe`` then reads them), and once the key is made.
    """

    live: list[Value]
    arguments: list[Value]
    parameters: list[Value]
    constants: dict[int, float]
    shape: Shape
    outputs: list[tuple[str, Any]]
    recording: Recording
    world: world.Snapshot  # what the function could reach: the guard checks it at each call
    aliases: list[tuple[int, Value]]  # (leaf index, Value): an argument also reached as a parameter
    result: Any
    edges: Edges  # the edges and numbers the recording made, kept before any pass frees them
    columns: Columns | None = None  # the columns of ``live`` read with the recording, until the key is made

    @property
    def externals(self) -> list[Value]:
        """The Values the code reads from outside: the distinct arguments, then the parameters."""
        return [*distinct(self.arguments), *self.parameters]


_ADVICE = (
    "it cannot replay Python that depends on a Value's number: use a vjpgrad operation instead (max, relu, "
    "nn.functional...), move the decision outside the compiled function, or call it uncompiled"
)


def record(fn: Callable[..., Any], read: Arguments) -> Recorded:
    """Run ``fn`` once on the call's arguments, recording what it makes; ``DataDependentError``
    for what a replay could not do (read a Value's number, change its world)."""
    args, kwargs = read.args, read.kwargs
    name = _name(fn)
    # the user's classes among the arguments' kinds are roots of the world too, after the objects
    with world_watched(fn, [*read.objects, *argument_classes(read)], args, kwargs) as found:
        refuse_object_attributes(fn, read.leaves, found.attribute_names)  # before the function runs
        recording = Recording()
        state.recording = recording
        try:
            refusing = refusing_numbers(f"{name} is being recorded by vjpgrad.compile", advice=_ADVICE)
            with refusing, collection_paused():  # no collection meanwhile: the recording keeps every node alive
                result = fn(*args, **kwargs)
        except BaseException:
            if recording.failure is not None:  # the first refusal, whatever followed it
                raise recording.failure from None
            raise
        finally:
            state.recording = None
        if recording.failure is not None:  # a refusal the function's own `except` caught
            raise recording.failure
        if recording.caught is not None:  # an error raised for a number, which its `except` caught
            raise recording.caught
    with collection_paused():
        results: list[Any] = []
        shape = shape_of(result, results, kept_containers(fn, read, found))
        return _read(fn, shape, results, result, recording, read.leaves, found)


@contextlib.contextmanager
def world_watched(
    fn: Callable[..., Any],
    objects: list[Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    recorder: str = "vjpgrad.compile",
    numbers: list[tuple[str, Any]] | None = None,
) -> Iterator[world.Snapshot]:
    """Watch ``fn``'s world over one recorded run of it (the body of the ``with``): yields what
    the guard is written from (the world reachable from ``fn`` and the ``objects`` it was given,
    with the numbers it was given), and refuses with ``DataDependentError`` a run that drew random
    numbers or changed that world or its arguments, which a replay would not do again.
    ``vjpgrad.compile`` and ``vjpgrad.vmap`` (the ``recorder`` the refusals name) both record
    through it, so what one watches the other does. ``numbers``: the numbers given, named, whose
    identities the guard compares where the code uses ``is`` (``number_arguments`` of the
    arguments unless given)."""
    names = argument_names(fn, len(args), list(kwargs))
    name = _name(fn)
    root = name if type(fn) in _PLAIN_CALLABLES else "self"  # a callable object: self, as its __call__ names it
    given = [(n, x) for n, x in zip(names, args, strict=True) if not _is_scalar(x)]
    given += [(n, x) for n, x in kwargs.items() if not _is_scalar(x)]
    # an object passed is named as the argument it was (noise), one inside a container by its kind
    named = {id(x): n for n, x in reversed(given)}
    guard_roots = [(root, fn), *((named.get(id(x)) or f"an object it was given ({_kind_name(x)})", x) for x in objects)]
    with collection_paused():
        numbers = number_arguments(args, kwargs, names) if numbers is None else numbers
        found = _observed(fn, guard_roots, numbers, recorder)
        before = _observed(fn, [(root, fn), *given], recorder=recorder)
        generators = _global_generators()
        generators_held = [raw for fact, raw in zip(before.facts, before.raw, strict=True) if fact[0] == "generator"]
        draws = DrawWatch(generators_held, before.may_draw)
    with draws:
        yield found
    with collection_paused():
        # a functools.cached_property the run filled is the cache's own: no change (``world.observe``),
        # but a replay would not fill it: the recording is not kept (``Snapshot.filled``)
        after = _observed(fn, [(root, fn), *given], recorder=recorder, unfilled=before.unfilled)
        refuse_changes(fn, name, before, after, generators, draws, recorder)
        found.filled = [
            f"{type(x).__name__}.{name}"
            for (_, name), x in before.unfilled.items()
            if name in object.__getattribute__(x, "__dict__")
        ]


def _kind_name(x: Any) -> str:
    """How a root of the world is named: a class by its own name, any other object by its class's."""
    return x.__qualname__ if isinstance(x, type) else type(x).__name__


def refuse_changes(
    fn: Callable[..., Any],
    name: str,
    before: world.Snapshot,
    after: world.Snapshot,
    generators: list[tuple[str, Any]],
    draws: DrawWatch,
    recorder: str = "vjpgrad.compile",
) -> None:
    """``DataDependentError`` if recording ``fn`` drew random numbers (a generator's state moved, the
    draw watch saw a draw or the system's entropy read) or changed its world between the snapshots
    ``before`` and ``after``: a replay would do neither again. Says the line where it can."""
    changed = world.first_difference(before, after, registries=False)
    if draws.clock is not None:
        at, clock, what = draws.clock
        raise DataDependentError(
            f"{name} read {what} ({clock}) at {at} while {recorder} recorded it: a replay would not read it "
            f"again, and would use the recorded reading at every call. Read {what} outside the function and "
            f"pass the reading in as a Value (Value(t, requires_grad=False)), or {_otherwise(recorder)}"
        )
    if draws.seeded is not None and draws.drew is None:  # a draw, said below, is what matters most
        what, at = draws.seeded
        raise DataDependentError(
            f"{name} seeded {what} at {at} while {recorder} recorded it: a replay would not seed it again, and "
            "every number drawn after the call would differ from eager code's. Seed outside the function (once, "
            f"at the top of the program), or {_otherwise(recorder)}"
        )
    if draws.torch_read is not None:
        at, read = draws.torch_read
        raise DataDependentError(
            f"{name} read the seed or the state of PyTorch's global generator ({read}) at {at} while {recorder} "
            "recorded it: a replay would not read it again, and would use the recorded reading at every call "
            "(a torch.manual_seed between calls changes it). Read it outside the function and pass what you need "
            f"in as a Value (Value(s, requires_grad=False)), or {_otherwise(recorder)}"
        )
    drawn, line = _drawn(changed, generators, draws)
    if drawn is None and changed is not None and changed.aspect == "drawn":  # a generator of its world
        drawn = changed.place
    if drawn is not None:
        at = f"(defined at {where(fn)}) drew random numbers from {drawn}"
        if line is not None:
            at = f"drew random numbers from {drawn} at {line}"
        raise DataDependentError(
            f"{name} {at} while {recorder} recorded "
            "it: a replay would draw none and repeat the recorded draw at every call. Draw outside the "
            f"function and pass the numbers in as Values (Value(x, requires_grad=False)), or {_otherwise(recorder)}"
        )
    if changed is not None and changed.aspect == "called":
        cached = changed.place
        raise DataDependentError(
            f"{name} (defined at {where(fn)}) called {cached}, a functools.lru_cache, while {recorder} "
            f"recorded it: its cache is C state {recorder} cannot watch (eager code returns what it cached, "
            f"which a replay would not know): call {cached}.__wrapped__ inside instead, or call {cached} outside "
            f"and pass its result as an argument, or {_otherwise(recorder)}"
        )
    if changed is None:
        return
    lines = changing_lines(before, changed)
    at = f"{name} changed {changed} while {recorder} recorded it (at {', '.join(lines)})"
    if not lines:
        at = f"{name} (defined at {where(fn)}) changed {changed} while {recorder} recorded it"
    if changed.aspect == "flags":  # a decimal.Context's, which its arithmetic sets
        raise DataDependentError(
            f"{at}, which a replay would not do again: compute with a copy made inside ({changed.place}.copy(), "
            f"whose flags are its own), or {_otherwise(recorder)}"
        )
    raise DataDependentError(
        f"{at}, which a "
        "replay would not do again: return what it computes instead of keeping it, make the change "
        f"outside the {_RECORDERS[recorder][0]} function, or {_otherwise(recorder)}"
    )


_RECORDERS = {"vjpgrad.compile": ("compiled", "uncompiled"), "vjpgrad.vmap": ("vmapped", "per sample, without vmap")}
"""What the refusals call a function each recorder records, and how they offer to run it as it is."""


def _otherwise(recorder: str, it: str = "it") -> str:
    """What a refusal offers last: to run the function ``it`` as it is, without the recorder."""
    return f"call {it} {_RECORDERS[recorder][1]}"


def _drawn(
    changed: world.Difference | None, generators: list[tuple[str, Any]], draws: DrawWatch
) -> tuple[str | None, str | None]:
    """What a recording run drew from, if it drew, and where (None where it is not known): a
    global generator whose state moved, else (when no generator of the world moved either) the
    system's entropy read, a generator seeded from it, or a draw whose state was put back."""
    drawn = next((what for what, state in generators if _global_generator_state(what) != state), None)
    if drawn is not None or (changed is not None and changed.aspect == "drawn"):
        return drawn, draws.line
    if draws.entropy is not None:
        return "the system's entropy source (os.urandom: random.SystemRandom, secrets)", draws.entropy
    if draws.unseeded:
        return (
            "a random.Random seeded from the system's entropy (random.Random() or seed() with no seed; "
            "vjpgrad.nn's Neuron, Layer and MLP make one without seed=)"
        ), next(iter(draws.unseeded.values()))[1]
    if draws.drew is not None:
        return "a generator whose state it then put back", draws.drew
    if draws.read_state is not None:
        return "a generator it read the state of (getstate, a copy), which a replay would not read again", (
            draws.read_state
        )
    return None, draws.line


_ENTROPY = tuple(getattr(os, name) for name in ("urandom", "getrandom") if hasattr(os, name))
"""The system's entropy source (``random.SystemRandom`` and ``secrets`` draw from ``os.urandom``):
a call of one while recording is a random draw."""
_CLOCKS = (
    *(
        getattr(time, name)
        for name in (
            "time",
            "time_ns",
            "perf_counter",
            "perf_counter_ns",
            "monotonic",
            "monotonic_ns",
            "process_time",
            "process_time_ns",
            "thread_time",
            "thread_time_ns",
            "clock_gettime",
            "clock_gettime_ns",
        )
        if hasattr(time, name)
    ),
    datetime.datetime.now,
    datetime.datetime.utcnow,
    datetime.datetime.today,
    datetime.date.today,
)
"""The clock's readings (``time``'s and ``datetime``'s, C functions all): a call of one in the user's
code while recording is a reading a replay would repeat, refused as a draw is."""


_PROCESS_STATE = world.PROCESS_STATE
_OWN_READINGS = world.OWN_READINGS
_EXCEPTION_READERS = tuple(getattr(sys, name) for name in ("exc_info", "exception") if hasattr(sys, name))
"""What reads the exception being handled: the caller's is a reading a replay would repeat; one the
function's own code raised and handles is the same at every call (``DrawWatch._reading``)."""


def _outside_generated(frame: types.FrameType | None) -> types.FrameType | None:
    """The innermost frame from ``frame`` out whose code is not code made from text at run time
    (``<string>``: a dataclass's ``__init__``, a namedtuple's ``__new__``): whose it is decides
    whose reading of the clock it made (a library's dataclass with ``default_factory=time.time``
    reads it for the library)."""
    while frame is not None and frame.f_code.co_filename == "<string>":
        frame = frame.f_back
    return frame


def _is_clock(function: Any) -> bool:
    """Whether a C function called reads the clock (or the process's state, ``_PROCESS_STATE``):
    one of ``_CLOCKS``, or ``now``, ``utcnow`` or ``today`` of a subclass of ``datetime.date``
    (``datetime.datetime`` among them). A profiler sees a C function called from Python only: one
    a ``functools.partial`` calls is not seen."""
    if function in _CLOCKS or function in _PROCESS_STATE or function in _OWN_READINGS:
        return True
    owner = getattr(function, "__self__", None)
    return (
        isinstance(owner, type)
        and issubclass(owner, datetime.date)
        and getattr(function, "__name__", None) in ("now", "utcnow", "today")
    )


def _clock_name(function: Any) -> str:
    """How a refusal names a reading of the clock: ``time.perf_counter``, ``datetime.date.today``
    (or of the process's state: ``os.getcwd``)."""
    if function in _PROCESS_STATE:
        return _PROCESS_STATE[function]
    if function in _OWN_READINGS:
        return _OWN_READINGS[function]
    owner = getattr(function, "__self__", None)
    if isinstance(owner, type):
        module = "datetime." if owner.__module__ in ("datetime", "_datetime") else ""
        return f"{module}{owner.__qualname__}.{function.__name__}"
    return f"time.{function.__name__}"


_GLOBAL_RANDOM = getattr(random, "_inst", None)
"""``random``'s global generator (its functions are this one's methods)."""
_DRAWING_METHODS = frozenset({"random", "getrandbits"})
"""The C methods of ``random.Random`` that draw: every other draw (``uniform``, ``gauss``,
``choice``, ``shuffle``...) calls one of them."""
_TORCH_SEEDING_METHODS = frozenset({"manual_seed", "seed", "set_state"})
"""The C methods of PyTorch's ``torch.Generator`` that give it a state: on its global generator
(``torch.default_generator``), called by the user's code, a seeding a replay would not make."""
_TORCH_READING_METHODS = frozenset({"initial_seed", "get_state"})
"""The C methods of PyTorch's ``torch.Generator`` that read what its global generator was seeded
with, or its state: called for the user's code (directly, or by ``torch.initial_seed`` and
``torch.get_rng_state``, named in ``world.TORCH_SEED_READERS``), a reading a replay would repeat."""
_SEEDING_METHODS = frozenset({"seed", "setstate"})
"""The C methods of ``random.Random`` that give it a state (``random.seed``, ``Random.setstate``
call them): on a generator that was there before a recording, a change a replay would not make."""


_MUTATORS = frozenset(
    {
        "append",
        "appendleft",
        "extend",
        "extendleft",
        "insert",
        "pop",
        "popleft",
        "popitem",
        "remove",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "sort",
        "reverse",
        "rotate",
        "move_to_end",
        "fill",
        "put",
        "__setitem__",
        "__delitem__",
        "__iadd__",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
    }
)
"""Methods of Python's containers (and NumPy's arrays) that change them in place."""
_LAST_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\W*$")


def changing_lines(before: world.Snapshot, changed: world.Difference, most: int = 3) -> list[str]:
    """The lines (``file:line``, at most ``most``) of the user's code in the world that can make
    the change ``changed`` names (``self.steps``, ``cache[0] (added)``): those that set or delete
    that attribute or name, or that load the container and store into it or call a method that
    changes it in place. Read from the code, not traced: empty where no line fits. The name looked
    for is the last one of the place as a reader names it: what it decides is only which lines a
    message points at."""
    path = changed.place
    item = path.endswith("]")
    container = path[: path.rfind("[")] if item else path
    last = _LAST_NAME.search(container)
    if last is None:
        return []
    name = last.group(1)
    found: list[str] = []
    # a constructor sets up state before any call: its lines come last (``self.steps = 0``)
    for code in sorted(_codes(before.constants), key=lambda code: code.co_name in _SETS_UP):
        for line, instructions in _lines(code):
            where = f"{code.co_filename}:{line}"
            if _can_change(instructions, name, path, item) and where not in found:
                found.append(where)
                if len(found) == most:
                    return found
    return found


def _can_change(instructions: list[dis.Instruction], name: str, path: str, item: bool) -> bool:
    """Whether one line's instructions can make the change ``changing_lines`` looks for: set or
    delete ``name`` (an attribute, or the whole ``path`` as a name), or load it and store into it
    or call a method that changes it in place."""
    sets = not item and any(
        i.opname in _SETS_NAME and i.argval == name and (i.opname.endswith("ATTR") or path == name)
        for i in instructions
    )
    if sets:
        return True
    loads = any(
        i.opname.startswith("LOAD") and (i.argval == name or (type(i.argval) is tuple and name in i.argval))
        for i in instructions
    )
    return loads and any(
        i.opname in ("STORE_SUBSCR", "DELETE_SUBSCR")
        or (i.opname in ("LOAD_ATTR", "LOAD_METHOD") and i.argval in _MUTATORS)
        for i in instructions
    )


_SETS_UP = world._SETS_UP
_SETS_NAME = frozenset({"STORE_ATTR", "DELETE_ATTR", "STORE_GLOBAL", "DELETE_GLOBAL", "STORE_DEREF", "DELETE_DEREF"})


def _codes(objects: list[Any]) -> Iterator[types.CodeType]:
    """The code objects among ``objects`` (the user's functions' code a world holds) and the
    code nested in them (lambdas, comprehensions, inner functions), each once."""
    seen: set[int] = set()
    stack = [x for x in objects if type(x) is types.CodeType]
    stack.reverse()
    while stack:
        code = stack.pop()
        if id(code) in seen:
            continue
        seen.add(id(code))
        yield code
        stack.extend(reversed([c for c in code.co_consts if type(c) is types.CodeType]))


def _lines(code: types.CodeType) -> Iterator[tuple[int, list[dis.Instruction]]]:
    """A code object's instructions, grouped by the line they belong to, in order."""
    lines: dict[int, list[dis.Instruction]] = {}
    line = code.co_firstlineno
    for instruction in dis.get_instructions(code):
        positions = getattr(instruction, "positions", None)
        at = positions.lineno if positions is not None and positions.lineno is not None else None
        if at is None and instruction.starts_line:  # 3.10: the first instruction of a line says it
            at = instruction.starts_line
        line = at if at is not None else line
        lines.setdefault(line, []).append(instruction)
    yield from sorted(lines.items())


class DrawWatch:
    """Where a recording run first drew a random number: the user's ``file:line``, for the
    refusal to name (the refusal itself comes from the generators' states, compared after the
    run). A profiler (``sys.setprofile``) watches the run: a call of a ``random.Random`` method
    (``random``'s own functions are the methods of its global one) is a draw at the line that
    made it; NumPy's generators draw in compiled code that no profiler sees, so their states
    (NumPy's global one and ``generators``, those in the function's world) are compared at each
    event the profiler does see, and a change is a draw in the frame seen last. The line is that
    of the innermost frame outside vjpgrad and installed code. A profiler covers the thread it
    was set in: a draw in another thread the run started is refused without its line. The
    profiler that was set before is set back afterwards, whatever happens. A draw from the
    system's entropy (``os.urandom``, under ``random.SystemRandom`` and ``secrets``) changes no
    state: the profiler's sight of it is the refusal.

    The profiler is set only where the world may draw (``watch``: it holds a generator, or its
    code names a module or function of ``world.DRAWING_MODULES``): it doubles a recording's time. A draw
    elsewhere (a library's function that draws from ``random``'s global generator, though the
    user's code names no random module) is refused all the same, naming the function's
    definition instead of the line."""

    def __init__(self, generators: list[Any], watch: bool = True) -> None:
        self.watch = watch  # the world reaches what draws: else no profiler (it doubles a recording's time)
        # the generators that were there before the run (random's global one, the world's): a
        # draw from one is a draw even if the run puts its state back; a generator the run makes
        # with a seed of its own draws the same numbers at every call
        self.held = {id(g) for g in generators if isinstance(g, random.Random)} | {id(_GLOBAL_RANDOM)}
        self.drew: str | None = None  # where the run drew from one of them (the profiler saw it)
        # what the run seeded or set the state of among them, and where: refused even where the state
        # was that already (a program seeded with the same number at its top), as a replay would not seed
        self.seeded: tuple[str, str] | None = None
        self.read_state: str | None = None  # where the run read the state of one of them (getstate)
        # the generators the run seeded from the system's entropy and gave no state of their own
        # since (a copy is made unseeded, then given its original's state), each with the line;
        # kept alive, so that no later generator takes one's id
        self.unseeded: dict[int, tuple[random.Random, str]] = {}
        self.outer: DrawWatch | None = None  # this thread's recording around this one, if any
        numpy_random = sys.modules.get("numpy.random")
        legacy = getattr(getattr(numpy_random, "mtrand", None), "_rand", None)
        watched = [g for g in generators if not isinstance(g, random.Random)]
        numpy = watched + ([legacy] if legacy is not None and all(g is not legacy for g in watched) else [])
        self.numpy = [_cheap_state(g) for g in numpy]
        self.states: list[Any] = []
        self.line: str | None = None
        self.previous: Any = None
        self.users: dict[types.CodeType, bool] = {}  # code -> the user's (its states are compared)
        self.entropy: str | None = None  # where the system's entropy source was read (os.urandom)
        torch = sys.modules.get("torch")  # its global generator, seeded by its own C methods too
        self.torch_generator: Any = getattr(torch, "default_generator", None)
        self.torch_home = _home(torch)
        self.clock: tuple[str, str, str] | None = None  # where the user's code read the clock (or the
        # process's state), what it called, and which of the two it read
        self.torch_read: tuple[str, str] | None = None  # where it read PyTorch's global seed or state, and how
        self.handled = sys.exc_info()[1]  # the exception the caller handles as the recording starts, if any

    def __enter__(self) -> None:
        _Seeding.enter(self)
        if not self.watch:
            return
        self.states = [state() for state in self.numpy]
        self.previous = sys.getprofile()
        sys.setprofile(self.event)

    def __exit__(self, *_: object) -> None:
        _Seeding.exit(self)
        if self.watch:
            sys.setprofile(self.previous)

    def _reading(self, frame: types.FrameType, function: Any) -> None:
        """A reading of the clock or of the process's state (``function``), kept with the line that
        made it where it is the user's: the clock's where the user's code called it (a library's,
        a log record's, is its own), the process's state also where a library called it for the
        user (``Path.cwd()``), not where vjpgrad did (a path it resolves)."""
        if self.clock is not None:
            return
        if function in _EXCEPTION_READERS:
            handled = sys.exc_info()[1]  # by identity: an exception's own __eq__ is its code's
            if handled is not None and handled is not self.handled:
                return  # the exception the function's own code raised and handles: the same at every call
        name = _clock_name(function)
        if function in _PROCESS_STATE:
            reader = _caller_past_libraries(frame)
            users = reader is not None and not is_own_code(reader)
        else:
            reader = _outside_generated(frame)
            if reader is not None and reader.f_code.co_filename == world.THREADS_MODULE:
                while reader.f_back is not None and reader.f_back.f_code.co_filename == world.THREADS_MODULE:
                    reader = reader.f_back  # out to the function of threading's that the code outside called
                if reader.f_code.co_name not in world.THREAD_READERS:  # Thread(), join(): threading's own use
                    return
                name, reader = f"threading.{reader.f_code.co_name}", reader.f_back  # for the code that called it
            users = reader is not None and not world.is_library_file(reader.f_code.co_filename)
        if users and reader is not None:
            what = "the process's state" if function in _PROCESS_STATE or function in _OWN_READINGS else "the clock"
            self.clock = (f"{reader.f_code.co_filename}:{reader.f_lineno}", name, what)

    def event(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "c_call" and arg in _ENTROPY:  # random.SystemRandom, secrets: no generator's state shows it
            if self.entropy is None:
                self.entropy = _user_line(frame) or "<unknown>"
            return
        if event == "c_call" and _is_clock(arg):
            self._reading(frame, arg)
            return
        if event == "c_call" and isinstance(getattr(arg, "__self__", None), random.Random):
            self._random_call(frame, arg)
            return
        if event == "c_call" and self._torch_generator_call(frame, arg):
            return
        if self.line is not None:
            return
        site = frame.f_back if event == "call" else frame  # a call's frame is the one called: its caller drew
        if not self.numpy or site is None:
            return
        code = site.f_code
        user = self.users.get(code)
        if user is None:
            user = self.users[code] = not world.is_library_file(code.co_filename)
        if user and [state() for state in self.numpy] != self.states:
            self.line = self.drew = f"{code.co_filename}:{site.f_lineno}"  # a draw, even if its state is put back

    def _torch_generator_call(self, frame: types.FrameType, method: Any) -> bool:
        """Whether ``method`` is a C method of PyTorch's global generator (``torch.default_generator``).
        One that gives it a state called by the user's code (``manual_seed(0)``, ``set_state``) is a
        seeding a replay would not make: noted. PyTorch's own calls of them (under
        ``torch.manual_seed``, noted as a call of it, and ``fork_rng``, which sets back what it
        saved) are not."""
        if self.torch_generator is None or getattr(method, "__self__", None) is not self.torch_generator:
            return False
        name = getattr(method, "__name__", None)
        if name in _TORCH_SEEDING_METHODS and not frame.f_code.co_filename.startswith(self.torch_home):
            self.seeded_globally(_GLOBAL_GENERATORS[2], frame)
        elif name in _TORCH_READING_METHODS and self.torch_read is None and not _read_by_vjpgrad(frame):
            read = self._read_for_the_user(frame, name)
            if read is not None:
                self.torch_read = (_user_line(frame) or "<unknown>", read)
        return True

    def _read_for_the_user(self, frame: types.FrameType, method: str) -> str | None:
        """What the user's code called to read PyTorch's global generator's seed or state, where
        the generator's ``method`` was called for it: the generator's own method called by the
        user's code, or PyTorch's function (``torch.initial_seed``, ``torch.get_rng_state``) the
        user's code called, which called it. None where PyTorch's own code read it for itself
        (``fork_rng`` saving the state it puts back)."""
        if not frame.f_code.co_filename.startswith(self.torch_home):
            return f"torch.default_generator.{method}"
        entry = frame
        while entry.f_back is not None and entry.f_back.f_code.co_filename.startswith(self.torch_home):
            entry = entry.f_back  # out to the function of PyTorch's that the code outside called
        called = entry.f_code.co_name
        return f"torch.{called}" if called in world.TORCH_SEED_READERS else None

    def _random_call(self, frame: types.FrameType, method: Any) -> None:
        """A C method of a ``random.Random`` called: a draw from a generator that was there before
        the run (even if the run puts its state back), or a read of its state (a copy, a fork)."""
        name = method.__name__
        if id(method.__self__) not in self.held:
            if name in _DRAWING_METHODS:  # a generator of the run's own: the line, for a message
                self.line = self.line or _user_line(frame)
        elif name in _DRAWING_METHODS and self.drew is None:
            self.drew = _user_line(frame) or "<unknown>"
            self.line = self.line or self.drew
        elif name == "getstate" and self.read_state is None and not _read_by_vjpgrad(frame):
            self.read_state = _user_line(frame) or "<unknown>"
        elif name in _SEEDING_METHODS:
            self.seeding(method.__self__, frame)

    def seeded_globally(self, what: str, frame: types.FrameType) -> None:
        """A global generator (``what``) seeded by the code of ``frame``'s stack (``_noting_seeds``):
        noted with the user's line, unless vjpgrad's own code did it."""
        if self.seeded is None and not _read_by_vjpgrad(frame):
            self.seeded = (what, _user_line(frame) or "<unknown>")

    def put_back(self, frame: types.FrameType) -> None:
        """A global generator's state, which the run had moved (drawn from, or seeded), put back by
        its own library's code (``torch.random.fork_rng`` on leaving its block): a draw no state
        shows after the run, noted with the user's line, unless vjpgrad's own code did it."""
        if self.drew is None and self.seeded is None and not _read_by_vjpgrad(frame):  # a seed is said as such
            self.drew = _user_line(frame) or "<unknown>"
            self.line = self.line or self.drew

    def seeding(self, generator: random.Random, frame: types.FrameType) -> None:
        """A generator that was there before the run given a state (``seed``, ``setstate``) by the
        code of ``frame``'s stack: noted, with the user's line, unless vjpgrad's own code did it.
        Python's ``random.seed`` is seen by the profiler (it calls the C method); a generator's
        ``seed`` method by ``_Seeding``, which puts itself in the class while recording."""
        if id(generator) in self.held and self.seeded is None and not _read_by_vjpgrad(frame):
            what = _GLOBAL_GENERATORS[0] if generator is _GLOBAL_RANDOM else "a random.Random of its world"
            self.seeded = (what, _user_line(frame) or "<unknown>")


class _Seeding:
    """``random.Random.seed`` and ``setstate`` while any thread records: as they were, noting for
    the recording of the calling thread which generators are seeded from the system's entropy
    (``random.Random()``, ``seed()``: the C code that reads it is seen by no profiler, and the
    generator it seeds is none the world held) and which of them are then given a state of
    their own (a copy: made unseeded, then given its original's state). Put in place when the
    first recording begins and back when the last ends, under a lock; each thread's recordings
    stack (a compiled function recorded inside another's recording)."""

    lock = threading.Lock()
    recordings = 0
    original_seed: Any = None  # random.Random.seed
    original_setstate: Any = None  # random.Random.setstate
    current = threading.local()  # .watch: the DrawWatch of this thread's innermost recording
    replaced: ClassVar[list[tuple[Any, str, Any]]] = []  # (module, name, original) of each global seeder replaced

    @classmethod
    def enter(cls, watch: DrawWatch) -> None:
        with cls.lock:
            if cls.recordings == 0:
                cls.original_seed = random.Random.__dict__["seed"]
                cls.original_setstate = random.Random.__dict__["setstate"]
                random.Random.seed = cls.seeding  # type: ignore[method-assign,assignment]
                random.Random.setstate = cls.setting_state  # type: ignore[method-assign,assignment]
                cls.replace_global_seeders()
            cls.recordings += 1
        watch.outer = getattr(cls.current, "watch", None)
        cls.current.watch = watch

    @classmethod
    def exit(cls, watch: DrawWatch) -> None:
        cls.current.watch = watch.outer
        with cls.lock:
            cls.recordings -= 1
            if cls.recordings == 0:
                random.Random.seed = cls.original_seed  # type: ignore[method-assign]
                random.Random.setstate = cls.original_setstate  # type: ignore[method-assign]
                for module, name, original in reversed(cls.replaced):
                    setattr(module, name, original)
                cls.replaced = []

    @classmethod
    def replace_global_seeders(cls) -> None:
        """``random.seed`` (bound to the global generator when ``random`` was imported: the class's
        method above never sees it), NumPy's and PyTorch's, each replaced in its module (where
        imported) by one that notes the seeding for this thread's recording, then seeds: a library's
        helper that seeds for the user (``set_seed(0)``) is seen, with no profiler, and so is
        NumPy's seeding, which runs in compiled code no profiler sees."""
        for module_name, name, what in _GLOBAL_SEEDERS:
            module = sys.modules.get(module_name)
            original = getattr(module, name, None)
            if module is None or original is None:
                continue
            home = _home(sys.modules.get(module_name.split(".")[0]))
            cls.replaced.append((module, name, original))
            setattr(module, name, _noting_seeds(original, what, home, module_name, name))

    @staticmethod
    def seeding(generator: random.Random, a: Any = None, *args: Any, **kwargs: Any) -> None:
        watch: DrawWatch | None = getattr(_Seeding.current, "watch", None)
        if watch is not None:
            caller = sys._getframe(1)
            watch.seeding(generator, caller)
            if a is None:
                watch.unseeded[id(generator)] = (generator, _user_line(caller) or "<unknown>")
            else:  # a seed of its own: as deterministic as the function
                watch.unseeded.pop(id(generator), None)
        _Seeding.original_seed(generator, a, *args, **kwargs)

    @staticmethod
    def setting_state(generator: random.Random, state: Any) -> None:
        watch: DrawWatch | None = getattr(_Seeding.current, "watch", None)
        if watch is not None:  # a state of its own (a copy's, given its original's): no longer unseeded
            watch.seeding(generator, sys._getframe(1))
            watch.unseeded.pop(id(generator), None)
        _Seeding.original_setstate(generator, state)


def _home(module: Any) -> str:
    """Where a module's own code lies, as a file's name begins: a package's folder with its separator
    (``.../torch/``, never ``.../torchvision``), a module's own file (``.../random.py``, never the
    standard library's folder, which may hold site-packages); a string no file begins with if none."""
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        return "\0"
    if os.path.basename(path) == "__init__.py":
        return os.path.dirname(path) + os.sep
    return path


def _noting_seeds(original: Callable[..., Any], what: str, home: str, module: str, name: str) -> Callable[..., Any]:
    """``original`` (a global generator's seeding function, ``module.name``), noting each call for
    the recording of the calling thread (``DrawWatch.seeded_globally``) before it seeds; not a call
    from its own library's files (``home``: ``torch.random.fork_rng`` puts back the state it saved,
    which no replay needs), unless the state it puts back is not the one it finds: the run drew
    inside the block, noted as a draw (``DrawWatch.put_back``). Named ``module.name``, where it
    stands while recordings run: pickled meanwhile, it is read back as that name, the original
    once they end."""

    @functools.wraps(original)
    def seeding(*args: Any, **kwargs: Any) -> Any:
        watch: DrawWatch | None = getattr(_Seeding.current, "watch", None)
        caller = sys._getframe(1)
        if watch is None:
            return original(*args, **kwargs)
        if not caller.f_code.co_filename.startswith(home):
            watch.seeded_globally(what, caller)
            return original(*args, **kwargs)
        before = _global_generator_state(what)
        result = original(*args, **kwargs)
        if _global_generator_state(what) != before:  # fork_rng put back a state the run had moved: a draw
            watch.put_back(caller)
        return result

    seeding.__module__, seeding.__qualname__ = module, name
    return seeding


def _cheap_state(generator: Any) -> Callable[[], Any]:
    """How to read a NumPy generator's state at each event of a recording run, cheaply. The
    Mersenne Twister's (NumPy's global generator, a ``RandomState``) takes 0.2 ms to read whole,
    so only its position is read, from the C struct NumPy documents (``key[624]``, then ``pos``):
    a draw moves it, unless it drew exactly 624 words or a ``RandomState`` served a normal it had
    kept, where the refusal is made all the same, without the line."""
    bits: Any = getattr(generator, "bit_generator", None) or getattr(generator, "_bit_generator", None)
    if type(bits).__name__ == "MT19937":
        try:
            import ctypes

            position = bits.ctypes.state_address + 624 * ctypes.sizeof(ctypes.c_uint32)
            return lambda: ctypes.c_int.from_address(position).value
        except (ImportError, AttributeError, TypeError):  # no ctypes here: read it whole
            pass
    return lambda: world.generator_state(generator)


def _read_by_vjpgrad(frame: types.FrameType | None) -> bool:
    """Whether the innermost frame outside installed code on ``frame``'s stack is vjpgrad's own:
    a generator's state read by vjpgrad (a vmap recording inside this one watches for draws as
    this one does), not by the user's code."""
    while frame is not None:
        if is_own_code(frame):
            return True
        if not world.is_library_file(frame.f_code.co_filename):
            return False
        frame = frame.f_back
    return False


def _caller_past_libraries(frame: types.FrameType | None) -> types.FrameType | None:
    """The innermost frame of ``frame``'s stack that is not Python's or an installed package's
    code: the user's, or vjpgrad's own (``is_own_code``) where vjpgrad called the library."""
    while frame is not None and world.is_library_file(frame.f_code.co_filename) and not is_own_code(frame):
        frame = frame.f_back
    return frame


def _user_line(frame: types.FrameType | None) -> str | None:
    """``file:line`` of the innermost frame of ``frame``'s stack outside vjpgrad and installed code."""
    while frame is not None:
        if not world.is_library_file(frame.f_code.co_filename):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


_GLOBAL_GENERATORS = (
    "random's global generator",
    "NumPy's global generator (numpy.random)",
    "PyTorch's global generator (torch.manual_seed)",
)
_GLOBAL_SEEDERS = (
    ("random", "seed", _GLOBAL_GENERATORS[0]),
    ("random", "setstate", _GLOBAL_GENERATORS[0]),
    ("numpy.random", "seed", _GLOBAL_GENERATORS[1]),
    ("numpy.random", "set_state", _GLOBAL_GENERATORS[1]),
    ("torch", "manual_seed", _GLOBAL_GENERATORS[2]),
    ("torch.random", "manual_seed", _GLOBAL_GENERATORS[2]),
    ("torch", "set_rng_state", _GLOBAL_GENERATORS[2]),
    ("torch.random", "set_rng_state", _GLOBAL_GENERATORS[2]),
)
"""The functions that give a global generator a state, by module (``_Seeding`` replaces them while
recording, where their module was imported), and the generator each seeds."""


def _global_generator_state(what: str) -> Any:
    """The state of Python's, NumPy's or PyTorch's global generator (NumPy's and PyTorch's only
    where they were imported: never imported here); None where there is none."""
    if what == _GLOBAL_GENERATORS[0]:
        return random.getstate()
    if what == _GLOBAL_GENERATORS[2]:
        torch = sys.modules.get("torch")
        generator = getattr(torch, "default_generator", None)
        return None if generator is None else bytes(generator.get_state().numpy())
    numpy_random = sys.modules.get("numpy.random")
    legacy = getattr(getattr(numpy_random, "mtrand", None), "_rand", None)
    return None if legacy is None else world.generator_state(legacy)


def _global_generators() -> list[tuple[str, Any]]:
    """The global generators and their states, before a recording run: a draw changes one.
    ``import numpy`` leaves ``numpy.random`` to its first use: where NumPy is imported and it is
    not, it is imported here, so that its global generator, made at that import, is there before
    the run (a seeded ``np.random.default_rng(0)`` made inside is no draw from it, a draw still is)."""
    if "numpy" in sys.modules and "numpy.random" not in sys.modules:
        importlib.import_module("numpy.random")
    return [(what, _global_generator_state(what)) for what in _GLOBAL_GENERATORS]


def _observed(
    fn: Callable[..., Any],
    roots: list[tuple[str, Any]],
    numbers: list[tuple[str, Any]] | None = None,
    recorder: str = "vjpgrad.compile",
    unfilled: dict[tuple[int, str], Any] | None = None,
) -> world.Snapshot:
    try:
        return world.observe(roots, numbers=numbers, unfilled=unfilled)
    except world.WorldTooLargeError as large:
        raise DataDependentError(
            f"{_name(fn)} (defined at {where(fn)}) can reach {large.where}, which holds {large.size:,} objects or "
            f"items: more than {recorder} watches ({world.WORLD_LIMIT:,} in all, each checked at every call). "
            "Pass the part the function needs as an argument (a Vector, a list of Values), hold numbers in a NumPy "
            "array or an array.array (one buffer, watched by its bytes), keep large data out of its reach, or "
            f"{_otherwise(recorder)}"
        ) from None
    except world.UnwatchableError as unwatchable:
        raise DataDependentError(
            f"{_name(fn)} (defined at {where(fn)}) can reach {unwatchable.where}, {unwatchable.what}: "
            f"{unwatchable.instead}, or {_otherwise(recorder, _name(fn))}"
        ) from None


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a function is recorded and while compile builds
    its own tables of the recording (the world, the description, the code): the ``Recording`` keeps
    every node the function makes alive until it is read, so each collection the new objects set off walks
    them all again, finding nothing to free. Turned back on as it was, whatever happens; what
    the function leaves for the collector is collected at its next run. (Moving what the pause
    leaves to the oldest generation unwalked, ``gc.freeze()`` then ``gc.unfreeze()``, saved the
    10 ms that run takes after the demo step's first call, but the objects so moved escape the
    count that starts full collections, and garbage then waited for one: it was taken out.)"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _signature(fn: Callable[..., Any], count: int, keywords: Sequence[str]) -> inspect.Signature:
    """The signature a call's arguments bind to, for naming them: the wrapped function's behind a
    library's wrapper (``inspect.signature`` follows ``__wrapped__``), and behind a user's
    (``functools.wraps``) only where the wrapper passes its arguments on (it takes ``*args,
    **kwargs`` alone) and the wrapped function takes ``count`` of them and ``keywords``: a wrapper
    that adds an argument of its own (``fn(scale, *args)``) shifts them, and is named by its own."""
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn  # a decorated method: its function
    if "__wrapped__" not in (getattr(target, "__dict__", None) or {}) or world.is_library(target):
        return inspect.signature(fn)
    own = inspect.signature(fn, follow_wrapped=False)
    if not _passing_on_all_the_way(target):  # a decorator's object, or a wrapper that adds an argument
        return own
    wrapped = inspect.signature(fn)
    try:
        wrapped.bind(*([None] * count), **dict.fromkeys(keywords))
    except TypeError:  # not the arguments the wrapped function takes: the wrapper adds or takes some
        return own
    return wrapped


def _passing_on_all_the_way(fn: Any) -> bool:
    """Whether each of the user's wrappers from ``fn`` down its ``__wrapped__`` chain is a function
    that takes ``*args, **kwargs`` alone and passes them on (``_passes_on``): a decorator's object
    (``update_wrapper(self, fn)``), or one wrapper on the way that adds an argument, and the
    arguments are named by the outer wrapper's own parameters."""
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    for _ in range(16):  # a few layers at most
        if "__wrapped__" not in (getattr(fn, "__dict__", None) or {}) or world.is_library(fn):
            return True
        if type(fn) is not types.FunctionType:
            return False
        own = inspect.signature(fn, follow_wrapped=False)
        if not all(p.kind in variadic for p in own.parameters.values()) or not _passes_on(fn, own):
            return False
        fn = fn.__dict__["__wrapped__"]
    return False


def _passes_on(fn: types.FunctionType, own: inspect.Signature) -> bool:
    """Whether the wrapper ``fn`` (its signature ``own``: ``*args, **kwargs`` alone) passes its
    arguments on as they are, as its source reads: each call that spreads its ``*args`` passes
    exactly ``(*args, **kwargs)`` (``fn(ctx, *args)`` adds one of its own, in any branch); False
    where its source cannot be read."""
    names = {p.kind: p.name for p in own.parameters.values()}
    rest, keywords = names.get(inspect.Parameter.VAR_POSITIONAL), names.get(inspect.Parameter.VAR_KEYWORD)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn.__code__)))  # its own, not what it wraps
    except (OSError, TypeError, SyntaxError, ValueError):
        return False

    def spread(node: ast.expr, name: str | None) -> bool:
        return isinstance(node, ast.Name) and node.id == name

    # every call that spreads its *args: none may add an argument (fn(ctx, *args), log(*args, x=1))
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and any(isinstance(a, ast.Starred) and spread(a.value, rest) for a in node.args)
    ]
    return bool(calls) and all(
        len(call.args) == 1 and all(k.arg is None and spread(k.value, keywords) for k in call.keywords)
        for call in calls
    )


def argument_names(fn: Callable[..., Any], count: int, keywords: Sequence[str] = ()) -> list[str]:
    """The names of the first ``count`` positional parameters of ``fn``, as a reader would name
    them in a message (``argument 2`` where the signature does not say)."""
    try:
        parameters = list(_signature(fn, count, keywords).parameters.values())
    except Exception:  # a builtin or an odd callable (a __getattr__ raising KeyError): no signature to read
        parameters = []
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    rest = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), None)
    names = []
    for k in range(count):
        if k < len(positional):
            names.append(positional[k])
        elif rest is not None:
            names.append(f"{rest}[{k - len(positional)}]")
        else:
            names.append(f"argument {k + 1}")
    return names


def _code(fn: Any) -> Any:
    """The code object behind a function, a method, a partial or a callable object; behind a
    wrapper (``functools.wraps``, vjpgrad's ``no_grad``), the user's function it wraps. Read
    from Python's own types only: a callable object's ``__getattr__`` never runs."""
    for _ in range(8):  # unwrap a few layers at most
        kind = type(fn)
        if kind is types.FunctionType:
            wrapped = fn.__dict__.get("__wrapped__")
            if wrapped is None and world.is_library(fn):  # vjpgrad.grad's function: what it transforms
                wrapped = getattr(fn.__dict__.get("transformed"), "function", None)
            if wrapped is None or not world.is_library(fn):
                return fn.__code__
            fn = wrapped
        elif kind is types.MethodType:
            fn = fn.__func__
        elif kind is functools.partial:
            fn = fn.func
        elif kind.__module__ == "vjpgrad.compiler.run" and kind.__name__ == "Compiled":
            fn = fn.fn
        elif issubclass(kind, type) or not callable(fn):
            return None
        else:
            fn = kind.__call__
    return None


def where(fn: Callable[..., Any]) -> str:
    """``file:line`` of a function's definition (or of the method a callable object runs)."""
    code = _code(fn)
    return "<unknown>" if code is None else f"{code.co_filename}:{code.co_firstlineno}"


def _name(fn: Callable[..., Any]) -> str:
    """How a message names a function: its qualified name (the user's, behind a wrapper); a
    callable object by the method it runs (``Model.__call__``)."""
    code = _code(fn)
    if code is None:
        return (
            str(getattr(fn, "__qualname__", None) or "the function") if type(fn) in _PLAIN_CALLABLES else "the function"
        )
    # a code object has its qualified name from Python 3.11 on; 3.10's has its plain name
    name: str = getattr(code, "co_qualname", code.co_name)
    return name


_PLAIN_CALLABLES = (types.FunctionType, types.MethodType, functools.partial, types.BuiltinFunctionType)


def described(fn: Callable[..., Any]) -> str:
    """How a warning names a compiled function: its qualified name; a callable object by its class."""
    kind = type(fn)
    if kind in _PLAIN_CALLABLES or (kind.__module__ == "vjpgrad.compiler.run" and kind.__name__ == "Compiled"):
        return _name(fn)
    return f"the {kind.__qualname__} object"


def distinct(values: list[Any]) -> list[Any]:
    """``values`` without repeats, in order, by identity."""
    seen: set[int] = set()
    return [v for v in values if not (id(v) in seen or seen.add(id(v)))]  # type: ignore[func-returns-value]  # set.add is None: false


def _read(
    fn: Callable[..., Any],
    shape: Shape,
    outputs: list[Value],
    result: Any,
    recording: Recording,
    arguments: list[Value],
    found: world.Snapshot,
) -> Recorded:
    """Which Values the recorded operations read, and where the parameters are."""
    # every node the core records is a Value (the core's graph layer names them Nodes)
    live, positions, outside, columns = cast(
        "tuple[list[Value], list[tuple[int, ...]], list[Value], Columns | None]",
        recorded_graph_with_columns(recording, outputs),
    )
    argument_ids = {id(a) for a in arguments}
    parameters = [x for x in outside if id(x) not in argument_ids]
    check_found(fn, parameters, found)
    made = recording.leaves  # in creation order, as live
    needed = set(map(id, live)) if made else set()
    constants = {  # Values made inside (Value()) that take no gradient: numbers of the code
        key: _number(node) for key, node in made.items() if key in needed and not node.requires_grad
    }
    if constants:
        pairs = [(n, p) for n, p in zip(live, positions, strict=True) if id(n) not in constants]
        live, positions = [n for n, _ in pairs], [p for _, p in pairs]
        columns = None  # they describe the nodes with the constants: describe reads live anew
    sources = _sources(outputs, live, [*distinct(arguments), *parameters], constants)
    aliases = _aliases(arguments, found)
    edges = Edges(live, positions, recording.leaves)
    return Recorded(
        live, arguments, parameters, constants, shape, sources, recording, found, aliases, result, edges, columns
    )


def _aliases(arguments: list[Value], found: world.Snapshot) -> list[tuple[int, Value]]:
    """The arguments the replay holds to being the same objects, by their place: those the function
    also found in its world (``w is W``), and, where the code may read a Value's graph, those that are
    operands of another argument (``b``, with ``u = b * 2``): the code read one Value both ways."""
    leaf_of = {id(x): k for k, x in enumerate(arguments)}
    names = found.attribute_names
    graphs = names is None or not names.isdisjoint(world.GRAPH_NAMES)
    operands = {id(p) for a in arguments if graphs and not a.is_leaf for p in a.parents}
    return [(leaf_of[id(a)], a) for a in distinct(arguments) if id(a) in found.values or id(a) in operands]


def _sources(
    outputs: list[Value], live: list[Value], externals: list[Value], constants: dict[int, float]
) -> list[tuple[str, Any]]:
    """Where each output comes from: an operation inside, an argument or parameter, a constant.
    ``live`` is in creation order, so an output's place in it is found by its creation number
    (``positions_in``, which checks it by identity: a copy of a node keeps its number)."""
    external_place = {id(x): k for k, x in enumerate(externals)}
    sources: list[tuple[str, Any]] = []
    for x, k in zip(outputs, positions_in(live)(outputs), strict=True):
        if k is not None and k >= 0:
            sources.append(("inside", k))
        elif id(x) in external_place:
            sources.append(("external", external_place[id(x)]))
        else:
            sources.append(("constant", constants[id(x)]))
    return sources


def check_found(
    fn: Callable[..., Any], parameters: Sequence[graph.Node], found: world.Snapshot, recorder: str = "vjpgrad.compile"
) -> None:
    """Refuse a Value read from outside that is not in the function's world (one reached through
    another Value's graph, ``u.parents[0]``, or inside a library's object): nothing could tell at
    the next call whether it is still the same one. ``vmap`` refuses it alike."""
    missing = [x for x in parameters if id(x) not in found.values]
    if missing:
        outside = world.on_path_outside_the_project()
        raise DataDependentError(
            f"{where(fn)}: {recorder} cannot find where {_name(fn)} gets a Value it reads (made outside it), "
            "so it could not check at the next call that it is still the same one: keep such Values in "
            "attributes, lists, dicts, closures or globals of plain Python objects (not inside a library's "
            "objects, or in a rule of a custom operation), or pass them as arguments"
            + (
                f"; code found through sys.path outside the current folder counts as a library's, never looked "
                f"into: {', '.join(outside)} (run from your project's folder, or keep your code under it)"
                if outside
                else ""
            )
        )


def describe(recorded: Recorded, internal_outputs: list[int]) -> bytes | None:
    """The structure the code is written from, as bytes for the cache's key: every operation (its
    row of the table), where each operand comes from (an operation by its position; an argument
    or parameter by -1 in its column, then its position k, written -1 - k, in a list of those
    operands in the columns' order: first, second, first...; a number by its exact value), the
    edges the recording made, which Values take gradient, the Values made inside, and the outputs. None
    when an operation is not a row of the table (a custom operation: its code is the user's
    function, which a key cannot describe): such a recording is not cached. Written with marshal's
    version 2 (no shared references): the same structure gives the same bytes in every process,
    and a float's exact bits (-0.0 is not 0.0).

    A warm start's first replay pays for this key, so it reads no node again where the reading
    of the recording (call 1) kept what it read of them (``Recorded.columns``: each operation and
    operand, and where each operand was made); else it reads them now the same way
    (``recording.columns_of``). The operands made elsewhere are then named by their place among
    the arguments and parameters, in C. The few operands that are not Values of the code
    (numbers, constants, the operands of an operation of many, a Value made inside) are listed
    apart, each with its node and slot."""
    externals, live = recorded.externals, recorded.live
    columns = recorded.columns if recorded.columns is not None else columns_of(live)
    made, operands, many, many_at = columns.operations, columns.operands, columns.many, columns.many_at
    rows = row_codes(made)  # a byte a node: its row of the table, 0 for a Value made inside
    if OUTSIDE in rows:  # an operation outside the table
        return None
    external_place = {id(x): -1 - k for k, x in enumerate(externals)}
    constants, numbers, node_type = recorded.constants, recorded.edges.numbers, graph.Node
    # the operands made elsewhere (at -1 in the columns), in the columns' order (first, second,
    # first...): each argument or parameter k as -1 - k, found in C; a constant made inside by its number
    from_outside: list[Any] = list(map(external_place.get, map(id, map(operands.__getitem__, columns.elsewhere))))
    k = -1
    for _ in range(from_outside.count(None)):
        k = from_outside.index(None, k + 1)
        from_outside[k] = ("constant", constants[id(operands[columns.elsewhere[k]])])

    def apart(x: Any, place: int | None) -> Any:
        if place == -1:
            place = external_place.get(id(x))
        if place is not None:
            return place
        return ("constant", constants[id(x)]) if isinstance(x, node_type) else (x,)

    odd: list[tuple[int, int, Any]] = []
    at = columns.at  # each operand's position in live; -1: made elsewhere (from_outside); None: the rest
    found_columns = [at[0::2], at[1::2]]  # each operation's first operand's place, and its second's
    for slot, found in enumerate(found_columns):
        i = -1
        for _ in range(found.count(None)):  # the operands that are not Values of the code, in C
            i = found.index(None, i + 1)
            op = made[i]
            if op is None:  # a Value made inside from a number
                if slot == 0:
                    odd.append((i, 0, ("leaf", numbers[id(live[i])])))
            elif op.nary:
                if slot == 0:
                    odd.append((i, 0, ("many", tuple(map(apart, many[i], many_at[i])))))
            elif slot == 0 or op.arity != 1:
                odd.append((i, slot, apart(operands[2 * i + slot], None)))
    parts: list[Any] = [
        len(distinct(recorded.arguments)),
        tuple(x.requires_grad for x in externals),
        rows,
        *found_columns,
        from_outside,
        odd,
        recorded.edges.in_order,
        columns.takes_grad,
        tuple(internal_outputs),
    ]
    return marshal.dumps(parts, 2)
