"""Every kind of object in a compiled function's world is watched or refused, by construction.

``world.KINDS`` is one table: each kind of object, how its state is read, or why it is refused.
The tests enumerate the public types of Python's modules whose objects a function's world holds
(and NumPy's array, scalar and generator types, where NumPy is installed) and check that each
falls in a row made for it, not in the last row that holds any object: a new kind with no row
fails here. Each kind is then placed in a function's world and changed between calls (in place
where its objects change in place, or replaced by another of its objects, read by its content),
and every enumerated kind is checked to have such a scenario: the compiled function must give
eager's bits and gradient, or refuse (``DataDependentError``; the kinds whose row refuses, and
generators that draw, must); never another number, never another exception.
"""

from __future__ import annotations

import array
import ast
import builtins
import collections
import configparser
import contextlib
import contextvars
import ctypes
import dataclasses
import decimal
import enum
import fractions
import functools
import importlib.util
import io
import mmap
import operator
import os
import queue
import random
import string
import sys
import textwrap
import threading
import types
import typing
import unittest.mock
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _helpers import bits

import vjpgrad
from vjpgrad import Value
from vjpgrad.batched.run import Vmapped
from vjpgrad.compiler import DataDependentError, world

_MODULES = (
    builtins,
    collections,
    functools,
    operator,
    weakref,
    types,
    array,
    contextlib,
    dataclasses,
    enum,
    fractions,
    decimal,
)
_ANY_OBJECT = world.KINDS[-1][0]


def _numpy_types() -> Iterator[tuple[str, type]]:
    if importlib.util.find_spec("numpy") is None:
        return
    import numpy as np

    yield "numpy.ndarray", np.ndarray
    for kind in sorted(set(np.sctypeDict.values()), key=lambda k: k.__name__):
        yield f"numpy.{kind.__name__}", kind
    for kind in (np.random.Generator, np.random.RandomState, np.random.PCG64, np.random.MT19937):
        yield f"numpy.random.{kind.__name__}", kind


def _public_types() -> list[tuple[str, type]]:
    found = [
        (f"{module.__name__}.{name}", getattr(module, name))
        for module in _MODULES
        for name in sorted(dir(module))
        if not name.startswith("_") and isinstance(getattr(module, name), type)
    ]
    return found + list(_numpy_types())


def test_every_public_type_falls_in_a_row_made_for_it() -> None:
    kinds = _public_types()
    assert len(kinds) > 150  # the enumeration itself ran (about 200 with NumPy's types)
    without = [name for name, kind in kinds if world.row_of(kind)[0] == _ANY_OBJECT]
    assert without == [], f"kinds with no row of their own in world.KINDS: {without}"


def test_the_last_row_is_for_objects_of_classes_not_enumerated() -> None:
    class Users:
        pass

    assert world.row_of(Users)[0] == _ANY_OBJECT
    assert world.row_of(argparse_namespace())[0] != _ANY_OBJECT


def argparse_namespace() -> type:
    import argparse

    return argparse.Namespace


def _twin(make: Callable[[], tuple[Callable[[], float], Callable[[float], None]]]) -> str:
    """Calls with the world set to 2, 2, 3, 3 (``make()`` gives a fresh world: what the function
    reads, and how to change it), compiled and uncompiled: 'same' when the bits and gradients
    agree, 'refused' when compile refused; anything else fails the test."""

    def results(compiled: bool) -> list[Any]:
        read, change = make()
        fn = vjpgrad.compile(lambda x: x * read()) if compiled else (lambda x: x * read())
        found = []
        for k in (2.0, 2.0, 3.0, 3.0):
            change(k)
            x = Value(1.5)
            y = fn(x)
            y.backward()
            found.append((bits(y.data), bits(x.grad)))
        return found

    eager = results(compiled=False)
    try:
        compiled = results(compiled=True)
    except DataDependentError:
        return "refused"
    assert compiled == eager
    return "same"


def _in_place(make: Callable[[], Any], read: Callable[[Any], float], change: Callable[[Any, float], None]) -> Any:
    def made() -> tuple[Callable[[], float], Callable[[float], None]]:
        held = make()
        return (lambda: read(held)), (lambda k: change(held, k))

    return made


class _Indexed:
    """Reads the number its key holds: ``obj[key]`` is ``key[0]``."""

    def __getitem__(self, key: list[float]) -> float:
        return key[0]


def _held_by_an_itemgetter() -> tuple[Callable[[], float], Callable[[float], None]]:
    settings = [2.0]
    picker = operator.itemgetter(settings)  # the function reaches settings only through it
    return (lambda: picker(_Indexed())), (lambda k: settings.__setitem__(0, k))


def _held_class() -> type:
    """A class of its own, whose attribute ``s`` is 2.0: a type, as typing's aliases hold."""
    return type("Held", (), {"s": 2.0})


def _held_by_a_methodcaller() -> tuple[Callable[[], float], Callable[[float], None]]:
    settings = [2.0]
    caller = operator.methodcaller("__getitem__", settings)  # the function reaches settings only through it
    return (lambda: caller(_Indexed())), (lambda k: settings.__setitem__(0, k))


class _Held:
    """Hashable and weakly referable: a key or member of a weak container."""

    def __init__(self) -> None:
        self.s = 2.0


_CHANGED_IN_PLACE: dict[str, Any] = {
    "builtins.list": _in_place(lambda: [2.0], lambda h: h[0], lambda h, k: h.__setitem__(0, k)),
    "builtins.dict": _in_place(lambda: {"s": 2.0}, lambda h: h["s"], lambda h, k: h.__setitem__("s", k)),
    "builtins.set": _in_place(lambda: {2.0}, lambda h: max(h), lambda h, k: (h.clear(), h.add(k))),
    "builtins.bytearray": _in_place(
        lambda: bytearray([2]), lambda h: float(h[0]), lambda h, k: h.__setitem__(0, int(k))
    ),
    "builtins.memoryview": _in_place(
        lambda: memoryview(bytearray([2])), lambda h: float(h[0]), lambda h, k: h.__setitem__(0, int(k))
    ),
    "builtins.BaseException": _in_place(
        lambda: ValueError(2.0), lambda h: h.args[0], lambda h, k: setattr(h, "args", (k,))
    ),
    "collections.deque": _in_place(lambda: collections.deque([2.0]), lambda h: h[0], lambda h, k: h.__setitem__(0, k)),
    "collections.OrderedDict": _in_place(
        lambda: collections.OrderedDict(s=2.0), lambda h: h["s"], lambda h, k: h.__setitem__("s", k)
    ),
    "collections.defaultdict": _in_place(
        lambda: collections.defaultdict(float, s=2.0), lambda h: h["s"], lambda h, k: h.__setitem__("s", k)
    ),
    "collections.Counter": _in_place(
        lambda: collections.Counter(s=2), lambda h: float(h["s"]), lambda h, k: h.__setitem__("s", int(k))
    ),
    "collections.ChainMap": _in_place(
        lambda: collections.ChainMap({"s": 2.0}), lambda h: h["s"], lambda h, k: h.maps[0].__setitem__("s", k)
    ),
    "collections.UserDict": _in_place(
        lambda: collections.UserDict(s=2.0), lambda h: h["s"], lambda h, k: h.__setitem__("s", k)
    ),
    "collections.UserList": _in_place(
        lambda: collections.UserList([2.0]), lambda h: h[0], lambda h, k: h.__setitem__(0, k)
    ),
    "types.SimpleNamespace": _in_place(
        lambda: types.SimpleNamespace(s=2.0), lambda h: h.s, lambda h, k: setattr(h, "s", k)
    ),
    "functools.partial": _in_place(
        lambda: functools.partial(lambda s: s, s=2.0), lambda h: h(), lambda h, k: h.keywords.__setitem__("s", k)
    ),
    "array.array": _in_place(lambda: array.array("d", [2.0]), lambda h: h[0], lambda h, k: h.__setitem__(0, k)),
    "decimal.Context": _in_place(
        lambda: decimal.Context(prec=2), lambda h: float(h.prec), lambda h, k: setattr(h, "prec", int(k))
    ),
    "contextlib.nullcontext": _in_place(
        lambda: contextlib.nullcontext(2.0), lambda h: h.enter_result, lambda h, k: setattr(h, "enter_result", k)
    ),
    "weakref.WeakKeyDictionary": _in_place(
        lambda: (lambda key: (key, weakref.WeakKeyDictionary({key: 2.0})))(_Held()),
        lambda h: h[1][h[0]],
        lambda h, k: h[1].__setitem__(h[0], k),
    ),
    "weakref.WeakValueDictionary": _in_place(
        lambda: (lambda value: (value, weakref.WeakValueDictionary({"s": value})))(_Held()),
        lambda h: h[1]["s"].s,
        lambda h, k: setattr(h[0], "s", k),
    ),
    # what these hold is the user's, however they look (an outside review: each was read by identity alone)
    "builtins.slice": _in_place(
        lambda: slice(None, None, [2.0]), lambda h: h.step[0], lambda h, k: h.step.__setitem__(0, k)
    ),
    "types.GenericAlias": _in_place(
        lambda: types.GenericAlias(list, (_Held(),)),
        lambda h: h.__args__[0].s,
        lambda h, k: setattr(h.__args__[0], "s", k),
    ),
    "operator.methodcaller": lambda: _held_by_a_methodcaller(),
    "operator.itemgetter": lambda: _held_by_an_itemgetter(),
    "types.UnionType": _in_place(
        lambda: int | types.GenericAlias(list, (_Held(),)),
        lambda h: h.__args__[1].__args__[0].s,
        lambda h, k: setattr(h.__args__[1].__args__[0], "s", k),
    ),
    "dataclasses.InitVar": _in_place(
        lambda: dataclasses.InitVar(_Held()),  # type: ignore[arg-type]  # what it holds is the subject
        lambda h: h.type.s,
        lambda h, k: setattr(h.type, "s", k),
    ),
    "weakref.WeakSet": _in_place(
        lambda: (lambda a, b: ([a, b], weakref.WeakSet([a])))(_Held(), _Held()),
        lambda h: float(len(h[1])),
        lambda h, k: h[1].add(h[0][int(k) - 2]) if k == 3.0 else None,
    ),
}


@pytest.mark.parametrize("name", sorted(_CHANGED_IN_PLACE))
def test_a_kind_changed_in_place_gives_eagers_bits_or_a_refusal(name: str) -> None:
    assert _twin(_CHANGED_IN_PLACE[name]) in ("same", "refused")


_TYPING_ALIASES: dict[str, Any] = {
    "typing.List[x]": _in_place(
        lambda: typing.List[_held_class()],  # noqa: UP006 - typing's alias is the subject
        lambda h: h.__args__[0].s,
        lambda h, k: setattr(h.__args__[0], "s", k),
    ),
    "typing.Annotated": _in_place(
        lambda: typing.Annotated[float, {"s": 2.0}],
        lambda h: h.__metadata__[0]["s"],
        lambda h, k: h.__metadata__[0].__setitem__("s", k),
    ),
}
"""typing's aliases, which hold what they were made of (a class of the user's, settings in
``Annotated``'s metadata): an outside review found them read by identity, as a library's object."""


@pytest.mark.parametrize("name", sorted(_TYPING_ALIASES))
def test_what_a_typing_alias_holds_changed_gives_eagers_bits_or_a_refusal(name: str) -> None:
    assert _twin(_TYPING_ALIASES[name]) in ("same", "refused")


class _Private:
    """A private slot: Python stores it as ``_Private__factor``, not under the name declared."""

    __slots__ = ("__factor",)

    def __init__(self) -> None:
        self.__factor = 2.0

    def set(self, k: float) -> None:
        self.__factor = k

    def factor(self) -> float:
        return self.__factor


class _PrivateChild(_Private):
    __slots__ = ()


class _Reslotted:
    __slots__ = ("s",)

    def __init__(self) -> None:
        self.s = 2.0


_Reslotted.__slots__ = ()  # type: ignore[misc]  # the slot stays; its declaration no longer names it
_Generated: Any = type("_Generated", (), {"__slots__": iter(("s",)), "__module__": __name__})  # declared once, consumed


class _Checked:
    """A descriptor of the user's in a slot's place, reading and writing through the slot's own."""

    def __init__(self, member: Any) -> None:
        self.member = member

    def __get__(self, obj: Any, kind: Any = None) -> Any:
        return self if obj is None else self.member.__get__(obj)

    def __set__(self, obj: Any, value: float) -> None:
        self.member.__set__(obj, float(value))


class _Wrapped:
    __slots__ = ("s",)

    def __init__(self) -> None:
        self.s = 2.0


_Wrapped.s = _Checked(_Wrapped.__dict__["s"])  # type: ignore[assignment]  # the slot behind a validator


class _Unslotted:
    __slots__ = ("s",)

    def __init__(self) -> None:
        self.s = 2.0


del _Unslotted.__slots__  # type: ignore[misc]  # the slot stays, its descriptor too


class _Other:
    __slots__ = ("o",)


class _Aliasing:
    """A class attribute that holds another class's slot descriptor: no slot of its own objects."""

    __slots__ = ("s",)
    alias = _Other.o

    def __init__(self) -> None:
        self.s = 2.0


class _MethodInASlotsPlace:
    __slots__ = ("f", "s")

    def __init__(self) -> None:
        self.s = 2.0


_MethodInASlotsPlace.f = lambda self: 1.0  # type: ignore[assignment,method-assign]  # a method: no slot read


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    yield


class _UsedUp:
    """Holds what ``@contextmanager`` made, entered once: its function and arguments are gone."""

    def __init__(self) -> None:
        self.s = 2.0
        self.ctx = _quiet()
        with self.ctx:
            pass


@contextlib.contextmanager
def _setting_from(held: Any) -> Iterator[None]:
    old, _SETTING["k"] = _SETTING["k"], held.k
    try:
        yield
    finally:
        _SETTING["k"] = old


class _K:
    def __init__(self) -> None:
        self.k = 2.0


def _decorated_by_a_context_manager() -> tuple[Callable[[], float], Callable[[float], None]]:
    held = _K()

    @_setting_from(held)  # contextlib's object holds the user's argument, which sets the number read
    def read() -> float:
        return _SETTING["k"]

    return read, (lambda k: setattr(held, "k", k))


class _Window(list[float]):
    """A list whose iteration shows only its first ``n`` items: indexing reads them all."""

    n = 2

    def __iter__(self) -> Iterator[float]:
        return iter(list.__getitem__(self, slice(0, self.n)))


class _HiddenSet(set[float]):
    def __iter__(self) -> Iterator[float]:
        return iter(())


class _HiddenDeque(collections.deque[float]):
    def __iter__(self) -> Iterator[float]:
        return iter(())


class _HiddenTuple(tuple[list[float], ...]):
    def __iter__(self) -> Iterator[list[float]]:  # type: ignore[override]
        return iter(())


_SETTING = {"k": 1.0}


class _Setting(contextlib.ContextDecorator):
    """Sets ``_SETTING["k"]`` to its own ``k`` while the function it decorates runs."""

    def __init__(self, k: float) -> None:
        self.k = k
        self.old = _SETTING["k"]  # what __enter__ keeps here is this again: no side effect to refuse

    def __enter__(self) -> _Setting:
        self.old, _SETTING["k"] = _SETTING["k"], self.k
        return self

    def __exit__(self, *exc: object) -> None:
        _SETTING["k"] = self.old


def _decorated_by_a_context_decorator() -> tuple[Callable[[], float], Callable[[float], None]]:
    setting = _Setting(2.0)

    @setting  # the wrapper is contextlib's; the user's object it closes over sets the number read
    def read() -> float:
        return _SETTING["k"]

    return read, (lambda k: setattr(setting, "k", k))


def _slot_set(h: Any, k: float) -> None:
    h.s = k


_HIDDEN_FROM_A_DECLARATION: dict[str, Any] = {
    "a private slot": _in_place(_Private, lambda h: h.factor(), lambda h, k: h.set(k)),
    "a private slot of a base class": _in_place(_PrivateChild, lambda h: h.factor(), lambda h, k: h.set(k)),
    "a slot whose __slots__ was replaced": _in_place(_Reslotted, lambda h: h.s, _slot_set),
    "a slot declared by an iterator": _in_place(
        lambda: _slot_set(held := _Generated(), 2.0) or held, lambda h: h.s, _slot_set
    ),
    "a list whose __iter__ hides items": _in_place(
        lambda: _Window([1.0, 2.0, 2.0]), lambda h: h[2], lambda h, k: h.__setitem__(2, k)
    ),
    "a set whose __iter__ hides items": _in_place(
        lambda: _HiddenSet({2.0}), lambda h: max(set.__iter__(h)), lambda h, k: (h.clear(), h.add(k))
    ),
    "a deque whose __iter__ hides items": _in_place(
        lambda: _HiddenDeque([2.0]), lambda h: h[0], lambda h, k: h.__setitem__(0, k)
    ),
    "a tuple whose __iter__ hides a list": _in_place(
        lambda: _HiddenTuple(([2.0],)), lambda h: h[0][0], lambda h, k: h[0].__setitem__(0, k)
    ),
    "a context decorator's own object": _decorated_by_a_context_decorator,
    "a context manager's argument, used as a decorator": _decorated_by_a_context_manager,
    "a slot behind a descriptor of the user's": _in_place(_Wrapped, lambda h: h.s, _slot_set),
    "a slot whose place a method took": _in_place(_MethodInASlotsPlace, lambda h: h.s * h.f(), _slot_set),
    "an object beside what @contextmanager made, used up": _in_place(_UsedUp, lambda h: h.s, _slot_set),
    "a slot whose __slots__ was deleted": _in_place(_Unslotted, lambda h: h.s, _slot_set),
    "an attribute beside a class attribute holding another class's slot": _in_place(
        _Aliasing, lambda h: h.s, _slot_set
    ),
    "a named tuple's _fields, read by the library's _asdict": _in_place(
        lambda: collections.namedtuple("Pair", "a b")(2.0, 3.0),  # _asdict pairs _fields with the items
        lambda h: h._asdict()["a"],
        lambda h, k: setattr(type(h), "_fields", ("a", "b") if k == 2.0 else ("b", "a")),
    ),
}
"""State that the declaration or the iteration its own class writes does not show: an outside
review found each read once and never watched (a slot looked up by the name ``__slots__``
declares, not the mangled one Python stores; items read through a subclass's ``__iter__``; the
user's object a library's wrapper closes over), so the compiled function kept the first number."""


@pytest.mark.parametrize("name", sorted(_HIDDEN_FROM_A_DECLARATION))
def test_state_a_declaration_or_an_iteration_hides_changed_gives_eagers_bits(name: str) -> None:
    assert _twin(_HIDDEN_FROM_A_DECLARATION[name]) == "same"


class _Visits:
    """A library's function held in a class of the user's: ``ast.NodeVisitor.visit`` calls the
    method named after the node's class (``visit_Constant``), a name it computes."""

    visit = ast.NodeVisitor.visit

    def generic_visit(self, node: Any) -> float:
        return 1.0

    def visit_Constant(self, node: Any) -> float:  # the name visit computes
        return 2.0


def _visited() -> tuple[Callable[[], float], Callable[[float], None]]:
    visitor, node = _Visits(), ast.Constant(1)

    def change(k: float) -> None:
        type(visitor).visit_Constant = lambda self, node: k  # type: ignore[method-assign]

    return (lambda: visitor.visit(node)), change


def test_a_librarys_function_a_class_holds_that_computes_names_watches_every_entry() -> None:
    """A library's function in the user's class whose code computes names (``NodeVisitor.visit``:
    ``getattr(self, "visit_" + ...)``) may read any entry: every entry is watched, as for a library
    base class's code (a review found the method it calls changed and the first number kept)."""
    assert _twin(_visited) == "same"


def test_a_numpy_record_read_from_the_world_gives_eagers_bits_or_a_refusal() -> None:
    # table[0] of a structured array is a numpy.void that views the array's memory: not a scalar that never changes
    np = pytest.importorskip("numpy")

    def make() -> tuple[Callable[[], float], Callable[[float], None]]:
        table = np.zeros(2, dtype=[("a", "f8"), ("b", "f8")])
        row = table[0]
        return (lambda: float(row["a"])), (lambda k: table["a"].__setitem__(0, k))

    assert _twin(make) in ("same", "refused")


def _two_objects(kind: type) -> tuple[Any, Any] | None:
    """Two objects of ``kind`` made without arguments (or from a number, or a number and a unit:
    NumPy 2.5 warns that a timedelta64 without a unit is deprecated), or None."""
    for args in ((), (2.0,), (2,), (2, "s")):
        try:
            return kind(*args), kind(*args)
        except Exception:
            continue
    return None


_REPLACEABLE = [(name, kind) for name, kind in _public_types() if _two_objects(kind) is not None]


@pytest.mark.parametrize(("name", "kind"), _REPLACEABLE, ids=[name for name, _ in _REPLACEABLE])
def test_a_kind_replaced_by_another_of_its_objects_gives_eagers_bits_or_a_refusal(name: str, kind: type) -> None:
    def make() -> tuple[Callable[[], float], Callable[[float], None]]:
        pair = _two_objects(kind)
        assert pair is not None
        first, second = pair
        box = [first]

        def read() -> float:
            return 2.0 if box[0] is first else 3.0

        return read, lambda k: box.__setitem__(0, first if k == 2.0 else second)

    assert _twin(make) in ("same", "refused")


def test_every_row_is_reached_by_a_kind() -> None:
    """No row is dead: the enumeration, with the kinds of other modules a world holds (a file,
    a Value, a ``random.Random``, a dict view, an ``lru_cache`` wrapper, a compiled function, a
    user's object), reaches each."""

    class Users:
        pass

    others = [
        io.StringIO,
        Value,
        random.Random,
        random.SystemRandom,
        type({}.keys()),
        functools._lru_cache_wrapper,
        contextlib._GeneratorContextManager,  # what @contextlib.contextmanager makes
        type(vjpgrad.compile(lambda x: x)),
        type(functools.cmp_to_key(lambda a, b: 0)),
        configparser.ConfigParser,
        string.Template,
        textwrap.TextWrapper,
        ctypes.c_double,
        ctypes.POINTER(ctypes.c_double),
        ctypes.py_object,
        contextvars.ContextVar,
        mmap.mmap,
        threading.local,
        queue.SimpleQueue,
        unittest.mock.Mock,
        Vmapped,  # what vjpgrad.vmap makes (which needs NumPy to make one)
        Users,
    ]
    if importlib.util.find_spec("numpy") is not None:
        import numpy as np

        others += [np.vectorize, np.ufunc]
    if importlib.util.find_spec("torch") is not None:
        import torch

        others += [torch.Tensor, torch.nn.Linear, torch.optim.SGD, torch.Generator]
    rows = {world.row_of(kind)[0] for kind in [*(kind for _, kind in _public_types()), *others]}
    every = {name for name, _, _ in world.KINDS}
    if importlib.util.find_spec("numpy") is None:  # NumPy's rows are reached by NumPy's types alone
        every = {name for name in every if not name.startswith("NumPy")}
    if importlib.util.find_spec("torch") is None:  # PyTorch's row by PyTorch's types alone
        every = {name for name in every if not name.startswith("PyTorch")}
    assert rows == every


_SCALE = {"s": 2.0}
"""What a user's subclass's method reads: changed between calls."""


class _Referent:
    """What a subclass of a weak reference refers to (kept alive by the module)."""


_REFERENT = _Referent()
_ARGUMENTS: tuple[tuple[Any, ...], ...] = ((), (2.0,), (2,), (_REFERENT,), (float,), ("d",), ("name",))
"""What a user's subclass is made from: the first that its type accepts."""


def _users_subclass(kind: type) -> Any:
    """An object of a user's subclass of ``kind`` whose method reads ``_SCALE``, or None where
    ``kind`` cannot be subclassed (or made from one of ``_ARGUMENTS``)."""

    def users_scale(self: Any) -> float:
        return _SCALE["s"]

    try:  # named as a class statement in this module names it (an ABC's metaclass would name abc)
        subclass = type(f"Users{kind.__name__}", (kind,), {"__module__": __name__, "users_scale": users_scale})
    except Exception:  # final (bool, a function), or an enum's metaclass that wants its own namespace
        return None
    for args in _ARGUMENTS:
        try:
            made = subclass(*args)
        except Exception:
            continue
        return made if type(made) is subclass else None  # a NumPy scalar's subclass makes the NumPy scalar
    return None


def _subclassable() -> list[tuple[str, type]]:
    others = [io.StringIO, Value, random.Random, functools.partial, weakref.ref, decimal.Context]
    kinds = dict(_public_types())
    kinds.update({f"{kind.__module__}.{kind.__qualname__}": kind for kind in others})
    found = []
    for name, kind in sorted(kinds.items()):
        made = _users_subclass(kind)
        if made is not None and world.row_of(type(made))[1] is not world._Walk._refused:
            found.append((name, kind))
    return found


_SUBCLASSABLE = _subclassable()


@pytest.mark.parametrize(("name", "kind"), _SUBCLASSABLE, ids=[name for name, _ in _SUBCLASSABLE])
def test_a_users_subclass_of_each_kind_is_watched(name: str, kind: type) -> None:
    """A user's subclass of a kind (in whichever row of ``KINDS`` it falls) whose method reads a
    global: a change of the global gives eager's bits, or a refusal."""

    def make() -> tuple[Callable[[], float], Callable[[float], None]]:
        held = _users_subclass(kind)
        return (lambda: held.users_scale()), (lambda k: _SCALE.__setitem__("s", k))

    try:
        assert _twin(make) in ("same", "refused")
    finally:
        _SCALE["s"] = 2.0


def test_the_users_subclasses_reach_the_rows_whose_types_can_be_subclassed() -> None:
    """The enumeration above is not empty where it matters: the rows of Python's containers,
    buffers, weak references, generators, functools' and the class row are among those reached."""
    rows = {world.row_of(kind)[0] for _, kind in _SUBCLASSABLE}
    assert len(_SUBCLASSABLE) > 50
    for wanted in ("Value", "weak dict", "buffer", "random generator", "functools.partial", "property", "module"):
        assert any(row.startswith(wanted) for row in rows), wanted


# ---- every enumerated kind, behaviourally: read, changed, eager's bits or a refusal -----------------


class _Box:
    """What a kind holds or reaches, changed between calls: ``s``, and a method reading it."""

    __slots__ = ("__weakref__", "s")

    def __init__(self) -> None:
        self.s = 2.0

    def scale(self) -> float:
        return self.s


class _Slots:
    __slots__ = ("a", "b")


def _through_box(wrap: Callable[[Callable[..., float]], Any], call: Callable[[Any], float]) -> Any:
    """A kind that holds a function (``wrap`` of it) that reads a box: the box changes."""

    def make() -> tuple[_Box, Any]:
        box = _Box()
        return box, wrap(lambda *_: box.s)

    return _in_place(make, lambda h: call(h[1]), lambda h, k: setattr(h[0], "s", k))


def _holding_box(wrap: Callable[[_Box], Any], call: Callable[[Any], float]) -> Any:
    """A kind that holds a box (or refers to it): the box changes."""

    def make() -> tuple[_Box, Any]:
        box = _Box()
        return box, wrap(box)

    return _in_place(make, lambda h: call(h[1]), lambda h, k: setattr(h[0], "s", k))


def _attribute(make: Callable[[], Any]) -> Any:
    """A kind whose objects hold attributes of their own (``__dict__``): one set, then changed."""

    def made() -> Any:
        held = make()
        held.s = 2.0
        return held

    return _in_place(made, lambda h: h.s, lambda h, k: setattr(h, "s", k))


def _replaced(first: Callable[[], Any], second: Callable[[], Any], read: Callable[[Any], float]) -> Any:
    """An immutable kind: another of its objects in its place, read by its content."""

    def made() -> tuple[Callable[[], float], Callable[[float], None]]:
        box = [first()]
        return (lambda: read(box[0])), (lambda k: box.__setitem__(0, first() if k == 2.0 else second()))

    return made


def _by_name(first: Any, second: Any) -> Any:
    return _replaced(lambda: first, lambda: second, lambda h: 2.0 if h.__name__ == first.__name__ else 3.0)


def _read_only(make: Callable[[], Any], read: Callable[[Any], float]) -> Any:
    """A kind compile refuses to hold (an iterator, a proxy, a frame...): read once per call."""
    return _in_place(make, read, lambda h, k: None)


async def _async_generator() -> Any:
    yield 2.0


async def _coroutine() -> float:
    return 2.0


def _traceback() -> types.TracebackType | None:
    try:
        raise ValueError("kept")
    except ValueError as error:
        return error.__traceback__


def _enum_member(base: type) -> Any:
    """A member of a user's enum of ``base``, with an attribute of its own."""
    numbered = issubclass(base, (int, enum.Flag)) or base.__name__ == "ReprEnum"
    values = {"A": 1} if numbered else {"A": "a"}
    mixed = {"type": int} if base.__name__ == "ReprEnum" else {}  # a ReprEnum is mixed with a data type
    member = base("Users", values, module=__name__, **mixed).A
    member.s = 2.0
    return member


def _sized(h: list[float], k: float) -> None:
    h[:] = [0.0] * int(k)


def _exception_group(kind: type) -> Any:
    return _in_place(
        lambda: kind("group", [ValueError(2.0)]),
        lambda h: h.exceptions[0].args[0],
        lambda h, k: setattr(h.exceptions[0], "args", (k,)),
    )


def _unicode_error(kind: type, args: tuple[Any, ...]) -> Any:
    return _in_place(lambda: kind(*args), lambda h: float(h.end), lambda h, k: setattr(h, "end", int(k)))


_BEHAVIOUR: dict[Any, Any] = {
    # exceptions: their args and attributes
    UnicodeDecodeError: _unicode_error(UnicodeDecodeError, ("utf-8", b"abc", 0, 2, "bad")),
    UnicodeEncodeError: _unicode_error(UnicodeEncodeError, ("ascii", "abc", 0, 2, "bad")),
    UnicodeTranslateError: _unicode_error(UnicodeTranslateError, ("abc", 0, 2, "bad")),
    # wrappers of a function that reads what changes
    types.FunctionType: _through_box(lambda f: f, lambda h: h()),
    property: _through_box(property, lambda h: h.fget(None)),
    staticmethod: _through_box(staticmethod, lambda h: h.__func__()),
    classmethod: _through_box(classmethod, lambda h: h.__func__(None)),
    functools.cached_property: _through_box(functools.cached_property, lambda h: h.func(None)),
    functools.partialmethod: _through_box(lambda f: functools.partialmethod(f, 1.0), lambda h: h.func(*h.args)),
    functools.singledispatchmethod: _through_box(functools.singledispatchmethod, lambda h: h.func(None, None)),
    types.MethodType: _holding_box(lambda box: box.scale, lambda h: h()),
    types.CellType: _in_place(
        lambda: types.CellType(2.0), lambda h: h.cell_contents, lambda h, k: setattr(h, "cell_contents", k)
    ),
    # what refers to an object that changes
    weakref.ref: _holding_box(weakref.ref, lambda h: h().s),
    weakref.KeyedRef: _holding_box(lambda box: weakref.KeyedRef(box, None, "key"), lambda h: h().s),
    weakref.WeakMethod: _holding_box(lambda box: weakref.WeakMethod(box.scale), lambda h: h()()),
    operator.attrgetter: _holding_box(lambda box: (box, operator.attrgetter("s")), lambda h: h[1](h[0])),
    operator.methodcaller: _holding_box(lambda box: (box, operator.methodcaller("scale")), lambda h: h[1](h[0])),
    tuple: _holding_box(lambda box: (box,), lambda h: h[0].s),
    frozenset: _holding_box(lambda box: frozenset([box]), lambda h: next(iter(h)).s),
    types.MappingProxyType: _in_place(
        lambda: (lambda d: (d, types.MappingProxyType(d)))({"s": 2.0}),
        lambda h: h[1]["s"],
        lambda h, k: h[0].__setitem__("s", k),
    ),
    types.BuiltinMethodType: _in_place(
        lambda: (lambda d: (d, d.get))({"s": 2.0}), lambda h: h[1]("s"), lambda h, k: h[0].__setitem__("s", k)
    ),
    types.MethodWrapperType: _in_place(lambda: [0.0, 0.0], lambda h: float(h.__len__()), _sized),
    # objects with attributes of their own
    types.ModuleType: _attribute(lambda: types.ModuleType("users")),
    type: _attribute(lambda: type("Users", (), {})),
    enum.EnumMeta: _attribute(lambda: enum.Enum("Users", "A B")),
    collections.UserString: _in_place(
        lambda: collections.UserString("ab"), lambda h: float(len(h)), lambda h, k: setattr(h, "data", "a" * int(k))
    ),
    contextlib.AbstractContextManager: _attribute(
        lambda: type(
            "Users", (contextlib.AbstractContextManager,), {"__exit__": lambda *_: None, "__module__": __name__}
        )()
    ),
    contextlib.AbstractAsyncContextManager: _attribute(
        lambda: type(
            "Users", (contextlib.AbstractAsyncContextManager,), {"__aexit__": lambda *_: None, "__module__": __name__}
        )()
    ),
    contextlib.ExitStack: _attribute(contextlib.ExitStack),
    contextlib.AsyncExitStack: _attribute(contextlib.AsyncExitStack),
    contextlib.closing: _holding_box(contextlib.closing, lambda h: h.thing.s),
    contextlib.aclosing: _holding_box(contextlib.aclosing, lambda h: h.thing.s),
    contextlib.suppress: _attribute(lambda: contextlib.suppress(KeyError)),
    contextlib.redirect_stdout: _attribute(lambda: contextlib.redirect_stdout(None)),
    contextlib.redirect_stderr: _attribute(lambda: contextlib.redirect_stderr(None)),
    contextlib.ContextDecorator: _attribute(contextlib.ContextDecorator),
    contextlib.AsyncContextDecorator: _attribute(contextlib.AsyncContextDecorator),
    dataclasses.Field: _in_place(
        lambda: dataclasses.field(default=2.0), lambda h: h.default, lambda h, k: setattr(h, "default", k)
    ),
    weakref.finalize: _in_place(
        lambda: weakref.finalize(_REFERENT, lambda: None),
        lambda h: 1.0 + float(h.alive),
        lambda h, k: h.detach() if k == 3.0 else None,
    ),
    # enum members: a user's member's attributes
    enum.Enum: _in_place(lambda: _enum_member(enum.Enum), lambda h: h.s, lambda h, k: setattr(h, "s", k)),
    enum.IntEnum: _in_place(lambda: _enum_member(enum.IntEnum), lambda h: h.s, lambda h, k: setattr(h, "s", k)),
    enum.Flag: _in_place(lambda: _enum_member(enum.Flag), lambda h: h.s, lambda h, k: setattr(h, "s", k)),
    enum.IntFlag: _in_place(lambda: _enum_member(enum.IntFlag), lambda h: h.s, lambda h, k: setattr(h, "s", k)),
    # immutable kinds: another object in place, read by its content
    super: _replaced(
        lambda: super(_Box, _Box()), lambda: super(_Slots, _Slots()), lambda h: 2.0 + (h.__thisclass__ is _Slots)
    ),
    types.GenericAlias: _replaced(lambda: list[int], lambda: list[float], lambda h: 2.0 + (h.__args__[0] is float)),
    types.UnionType: _replaced(lambda: int | str, lambda: int | float, lambda h: 2.0 + (float in h.__args__)),
    types.CodeType: _replaced(
        lambda: (lambda a, b: 0).__code__, lambda: (lambda a, b, c: 0).__code__, lambda h: float(h.co_argcount)
    ),
    types.GetSetDescriptorType: _by_name(
        vars(types.FunctionType)["__name__"], vars(types.FunctionType)["__qualname__"]
    ),
    types.MemberDescriptorType: _by_name(vars(_Slots)["a"], vars(_Slots)["b"]),
    types.MethodDescriptorType: _by_name(vars(list)["append"], vars(list)["pop"]),
    types.WrapperDescriptorType: _by_name(vars(object)["__init__"], vars(object)["__repr__"]),
    types.ClassMethodDescriptorType: _by_name(vars(dict)["fromkeys"], vars(float)["fromhex"]),
    types.BuiltinFunctionType: _by_name(len, abs),
    decimal.DecimalTuple: _replaced(
        lambda: decimal.DecimalTuple(0, (2,), 0), lambda: decimal.DecimalTuple(0, (3,), 0), lambda h: float(h.digits[0])
    ),
    # refused: compile cannot watch their state
    enumerate: _read_only(lambda: enumerate([2.0]), lambda h: 2.0),
    filter: _read_only(lambda: filter(None, [2.0]), lambda h: 2.0),
    map: _read_only(lambda: map(float, [2.0]), lambda h: 2.0),
    reversed: _read_only(lambda: reversed([2.0]), lambda h: 2.0),
    zip: _read_only(lambda: zip([2.0]), lambda h: 2.0),
    types.GeneratorType: _read_only(lambda: (x for x in [2.0]), lambda h: 2.0),
    types.AsyncGeneratorType: _read_only(_async_generator, lambda h: 2.0),
    types.FrameType: _read_only(sys._getframe, lambda h: 2.0),
    types.TracebackType: _read_only(_traceback, lambda h: 2.0),
    weakref.ProxyType: _read_only(lambda: weakref.proxy(_REFERENT), lambda h: 2.0),
    weakref.CallableProxyType: _read_only(lambda: weakref.proxy(_callable_referent), lambda h: 2.0),
}


def _callable_referent() -> float:
    return 2.0


def _closed_coroutine() -> Any:
    made = _coroutine()
    made.close()  # never awaited: closed, so Python does not warn
    return made


_BEHAVIOUR[types.CoroutineType] = _read_only(_closed_coroutine, lambda h: 2.0)
if sys.version_info >= (3, 11):
    _BEHAVIOUR[builtins.BaseExceptionGroup] = _exception_group(builtins.BaseExceptionGroup)
    _BEHAVIOUR[builtins.ExceptionGroup] = _exception_group(builtins.ExceptionGroup)
    _BEHAVIOUR[enum.ReprEnum] = _in_place(
        lambda: _enum_member(enum.ReprEnum), lambda h: h.s, lambda h, k: setattr(h, "s", k)
    )
    _BEHAVIOUR[enum.StrEnum] = _in_place(
        lambda: _enum_member(enum.StrEnum), lambda h: h.s, lambda h, k: setattr(h, "s", k)
    )
    _BEHAVIOUR[enum.EnumCheck] = _replaced(
        lambda: enum.EnumCheck.UNIQUE, lambda: enum.EnumCheck.CONTINUOUS, lambda h: 2.0 + (h.value[0] == "n")
    )
    _BEHAVIOUR[enum.FlagBoundary] = _replaced(
        lambda: enum.FlagBoundary.STRICT, lambda: enum.FlagBoundary.KEEP, lambda h: 2.0 + (h.value == "keep")
    )
    _BEHAVIOUR[contextlib.chdir] = _attribute(lambda: contextlib.chdir("."))


def _numpy_behaviour() -> dict[Any, Any]:
    if importlib.util.find_spec("numpy") is None:
        return {}
    import numpy as np

    def draws(make: Callable[[], Any], draw: Callable[[Any], float]) -> Any:
        return _read_only(make, draw)

    return {
        np.ndarray: _in_place(lambda: np.array([2.0]), lambda h: float(h[0]), lambda h, k: h.__setitem__(0, k)),
        np.random.Generator: draws(lambda: np.random.default_rng(0), lambda h: 2.0 + h.random()),
        np.random.RandomState: draws(lambda: np.random.RandomState(0), lambda h: 2.0 + h.random_sample()),
        np.random.PCG64: draws(lambda: np.random.PCG64(0), lambda h: 2.0 + float(h.random_raw() % 2)),
        np.random.MT19937: draws(lambda: np.random.MT19937(0), lambda h: 2.0 + float(h.random_raw() % 2)),
    }


_BEHAVIOUR.update(_numpy_behaviour())
_MUST_REFUSE = frozenset(
    kind
    for kind, make in _BEHAVIOUR.items()
    if isinstance(kind, type) and world.row_of(kind)[1] is world._Walk._refused
) | frozenset(kind for kind in _BEHAVIOUR if getattr(kind, "__module__", "").startswith("numpy.random"))
"""The kinds whose scenario must be refused: their rows refuse, or the function draws."""


@pytest.mark.parametrize("kind", list(_BEHAVIOUR), ids=[f"{k.__module__}.{k.__qualname__}" for k in _BEHAVIOUR])
def test_each_kind_read_then_changed_gives_eagers_bits_or_a_refusal(kind: type) -> None:
    outcome = _twin(_BEHAVIOUR[kind])
    if kind in _MUST_REFUSE:
        assert outcome == "refused"


def test_every_enumerated_kind_is_read_and_changed_by_a_scenario() -> None:
    """Each of the enumerated kinds (aliases by their type) is placed in a function's world and
    changed: in place, by a scenario above, or replaced by another of its objects."""
    covered = set(_BEHAVIOUR) | {kind for _, kind in _REPLACEABLE}
    kinds = dict(_public_types())
    covered |= {kinds[name] for name in _CHANGED_IN_PLACE}
    left = sorted(name for name, kind in kinds.items() if kind not in covered)
    assert left == [], f"kinds no scenario reads and changes: {left}"


# ---- the user's code or data inside objects of Python's own kinds ------------------------------------


def _settings_read(read: Callable[[dict[str, float]], Callable[[], float]]) -> Any:
    """A world where ``read(settings)`` gives the function that reads the number, and a change
    sets ``settings["s"]``: the user's dict, reached only through the object under test."""

    def make() -> tuple[Callable[[], float], Callable[[float], None]]:
        settings = {"s": 2.0}
        return read(settings), lambda k: settings.__setitem__("s", k)

    return make


def _dynamic_attribute(settings: dict[str, float]) -> Callable[[], float]:
    class Holder:
        s = types.DynamicClassAttribute(lambda self: settings["s"])

    held = Holder()
    return lambda: held.s


def _enum_property(settings: dict[str, float]) -> Callable[[], float]:
    class Act(enum.Enum):
        RELU = "relu"

        @enum.property  # 3.11 on
        def gain(self) -> float:
            return settings["s"]

    return lambda: Act.RELU.gain


def _through_super(settings: dict[str, float]) -> Callable[[], float]:
    class Base:
        def get(self) -> float:
            return settings["s"]

    class Child(Base):
        def get(self) -> float:
            return 0.0

    held = super(Child, Child())
    return lambda: held.get()


def _cmp_to_key(settings: dict[str, float]) -> Callable[[], float]:
    key = functools.cmp_to_key(lambda a, b: (b - a) if settings["s"] == 3.0 else (a - b))
    return lambda: sorted([2.0, 3.0], key=key)[0]


def _default_factory(settings: dict[str, float]) -> Callable[[], float]:
    table = collections.defaultdict(lambda: settings["s"])
    return lambda: table.default_factory()


_HIDDEN = {
    "types.DynamicClassAttribute": _settings_read(_dynamic_attribute),
    "builtins.super": _settings_read(_through_super),
    "functools.cmp_to_key": _settings_read(_cmp_to_key),
    "collections.defaultdict.default_factory": _settings_read(_default_factory),
}
if sys.version_info >= (3, 11):
    _HIDDEN["enum.property"] = _settings_read(_enum_property)


@pytest.mark.parametrize("name", sorted(_HIDDEN))
def test_the_users_code_held_inside_pythons_own_kinds_is_walked_or_refused(name: str) -> None:
    """A descriptor's function (``DynamicClassAttribute``, ``enum.property``), the object a
    ``super`` holds, a ``defaultdict``'s ``default_factory``: walked, so a change the function
    reads through them is seen; ``cmp_to_key``'s comparison, which is C state: refused."""
    outcome = _twin(_HIDDEN[name])
    assert outcome == ("refused" if name == "functools.cmp_to_key" else "same")


def test_a_config_parser_changed_between_calls_gives_eagers_bits() -> None:
    """configparser.ConfigParser is plain data of Python's: its sections are walked."""

    def make() -> tuple[Callable[[], float], Callable[[float], None]]:
        parser = configparser.ConfigParser()
        parser.read_dict({"model": {"s": "2.0"}})
        return (lambda: parser.getfloat("model", "s")), (lambda k: parser.set("model", "s", str(k)))

    assert _twin(make) in ("same", "refused")


# ---- state held by the library's and C's kinds a function reads ----------------------------------


def _ctypes_double() -> Any:
    return _in_place(lambda: ctypes.c_double(2.0), lambda h: h.value, lambda h, k: setattr(h, "value", k))


def _ctypes_array() -> Any:
    return _in_place(lambda: (ctypes.c_double * 2)(2.0, 0.0), lambda h: h[0], lambda h, k: h.__setitem__(0, k))


def _mmap() -> Any:
    return _in_place(lambda: mmap.mmap(-1, 8), lambda h: float(h[0] or 2), lambda h, k: h.__setitem__(0, int(k)))


def _event() -> Any:
    return _in_place(
        threading.Event, lambda h: 3.0 if h.is_set() else 2.0, lambda h, k: h.set() if k == 3.0 else h.clear()
    )


def _queue() -> Any:
    def change(h: Any, k: float) -> None:
        while not h.empty():
            h.get_nowait()
        h.put(k)

    return _in_place(queue.Queue, lambda h: h.queue[0], change)


def _thread_local() -> Any:
    def make() -> Any:
        held = threading.local()
        held.s = 2.0
        return held

    return _in_place(make, lambda h: h.s, lambda h, k: setattr(h, "s", k))


def _environ() -> Any:
    def change(h: Any, k: float) -> None:
        h["VJPGRAD_TEST_SCALE"] = str(k)

    return _in_place(lambda: os.environ, lambda h: float(h.get("VJPGRAD_TEST_SCALE", "2.0")), change)


def _environ_through_os() -> Any:
    """``os.environ`` read where the code names it through the ``os`` module, as scripts do."""

    def made() -> tuple[Callable[[], float], Callable[[float], None]]:
        return (lambda: float(os.environ["VJPGRAD_TEST_SCALE"])), _set_scale

    return made


def _getenv() -> Any:
    """``os.getenv``, which reads ``os.environ`` inside the library's own code."""

    def made() -> tuple[Callable[[], float], Callable[[float], None]]:
        return (lambda: float(os.getenv("VJPGRAD_TEST_SCALE", "2.0"))), _set_scale

    return made


def _getenv_by_name() -> Any:
    """``from os import getenv``: the library's function, held, reads its module's ``environ``."""
    getenv = os.getenv

    def made() -> tuple[Callable[[], float], Callable[[float], None]]:
        return (lambda: float(getenv("VJPGRAD_TEST_SCALE", "2.0"))), _set_scale

    return made


def _set_scale(k: float) -> None:
    os.environ["VJPGRAD_TEST_SCALE"] = str(k)


def _argv_through_sys() -> Any:
    """``sys.argv`` read where the code names it through the ``sys`` module (a flag on the
    command line: ``"--double" in sys.argv``), changed as a notebook or a test changes it."""

    def made() -> tuple[Callable[[], float], Callable[[float], None]]:
        def change(k: float) -> None:
            sys.argv[:] = [arg for arg in sys.argv if arg != "--double"] + (["--double"] if k == 3.0 else [])

        return (lambda: 3.0 if "--double" in sys.argv else 2.0), change

    return made


def _masked_array() -> Any:
    np = pytest.importorskip("numpy")
    return _in_place(
        lambda: np.ma.array([2.0, 1.0], mask=[False, True]),
        lambda h: float(h.sum()),
        lambda h, k: setattr(h, "mask", [False, k == 2.0]),
    )


def _vectorize() -> Any:
    np = pytest.importorskip("numpy")

    def read(settings: dict[str, float]) -> Callable[[], float]:
        held = np.vectorize(lambda a: a * settings["s"])  # the settings are reached through it alone
        return lambda: float(held(1.0))

    return _settings_read(read)


def _frompyfunc() -> Any:
    np = pytest.importorskip("numpy")

    def read(settings: dict[str, float]) -> Callable[[], float]:
        held = np.frompyfunc(lambda a: a * settings["s"], 1, 1)
        return lambda: float(held(1.0))

    return _settings_read(read)


def _simple_queue() -> Any:
    def change(h: Any, k: float) -> None:
        h.put(k)

    return _in_place(queue.SimpleQueue, lambda h: float(h.qsize()) + 2.0, change)


def _context_var() -> Any:
    return _in_place(lambda: contextvars.ContextVar("scale", default=2.0), lambda h: h.get(), lambda h, k: h.set(k))


def _vectorize_otypes() -> Any:
    np = pytest.importorskip("numpy")

    def make() -> Any:
        return np.vectorize(lambda t: t * 2.5, otypes=[int])

    def change(h: Any, k: float) -> None:
        h.otypes = [int] if k == 2.0 else "d"

    return _in_place(make, lambda h: 2.0 + float(h(np.array([1.0]))[0] != 2), change)


def _ctypes_pointer() -> Any:
    def made() -> tuple[Callable[[], float], Callable[[float], None]]:
        target = ctypes.c_double(2.0)
        pointer = ctypes.pointer(target)
        return (lambda: pointer.contents.value), (lambda k: setattr(target, "value", k))

    return made


def _mmap_position() -> Any:
    return _in_place(lambda: mmap.mmap(-1, 8), lambda h: 2.0 + float(h.tell()), lambda h, k: h.seek(int(k) - 2))


def _py_object() -> Any:
    def made() -> tuple[Callable[[], float], Callable[[float], None]]:
        target = [2.0]
        held = ctypes.py_object(target)
        return (lambda: held.value[0]), (lambda k: target.__setitem__(0, k))

    return made


_LIBRARY_STATE = {
    "ctypes.c_double": (_ctypes_double, "same"),
    "ctypes array": (_ctypes_array, "same"),
    "mmap.mmap": (_mmap, "same"),
    "threading.Event": (_event, "same"),
    "queue.Queue": (_queue, "same"),
    "threading.local": (_thread_local, "same"),
    "os.environ": (_environ, "same"),
    "os.environ through os": (_environ_through_os, "same"),
    "os.getenv": (_getenv, "same"),
    "os.getenv imported": (_getenv_by_name, "same"),
    "sys.argv through sys": (_argv_through_sys, "same"),
    "numpy masked array": (_masked_array, "same"),
    "numpy.vectorize": (_vectorize, "same"),
    "numpy.frompyfunc": (_frompyfunc, "refused"),
    "queue.SimpleQueue": (_simple_queue, "refused"),
    "contextvars.ContextVar": (_context_var, "refused"),
    "numpy.vectorize otypes": (_vectorize_otypes, "same"),
    "mmap position": (_mmap_position, "same"),
    "ctypes pointer": (_ctypes_pointer, "refused"),
    "ctypes py_object": (_py_object, "refused"),
}


@pytest.mark.parametrize("name", sorted(_LIBRARY_STATE))
def test_state_the_library_and_c_keep_is_walked_where_it_shows_it_and_refused_where_it_hides_it(name: str) -> None:
    """A ctypes number or array, an mmap (their bytes, and the mmap's position); a threading.Event,
    a queue.Queue, os.environ (held, or read through the os module or os.getenv), a threading.local
    (their attributes: plain data of Python's); a
    NumPy masked array (its mask too) and np.vectorize (its function and settings): a change is
    seen. A SimpleQueue, a ContextVar, a ctypes pointer or py_object and a ufunc made by
    np.frompyfunc show nothing of what they hold: refused."""
    make, expected = _LIBRARY_STATE[name]
    try:
        assert _twin(make()) == expected, name
    finally:
        os.environ.pop("VJPGRAD_TEST_SCALE", None)
        sys.argv[:] = [arg for arg in sys.argv if arg != "--double"]


def _path_only(x: Value) -> Value:
    return x * float(os.path.basename("2.0"))


def _environ_read(x: Value) -> Value:
    return x * float(os.environ.get("VJPGRAD_TEST_SCALE", "2.0"))


def test_a_library_modules_state_is_walked_only_where_the_code_names_it() -> None:
    """``os.environ`` is walked where the code reads it (``os.environ``, ``os.getenv``), and the
    ``os`` module of a function that only calls ``os.path`` adds nothing to its guard: the rest of
    a library's module is watched by identity."""
    assert not any(name.endswith("environ") for name in world.observe([("f", _path_only)]).names)
    assert "os.environ" in world.observe([("f", _environ_read)]).names


def test_a_flag_combination_made_inside_is_enums_cache_not_a_side_effect() -> None:
    """``Flag.A & Flag.B`` makes a member for the value 0 and enum keeps it in the class's
    ``_value2member_map_``: enum's own cache, filled by any code that combines flags, not a change
    the function makes to its world (as Python's ``__slotnames__`` is not)."""

    class Flag(enum.IntFlag):
        A = 1
        B = 2

    def f(x: Value, flags: Flag) -> Value:
        return x * (2.0 if flags & Flag.B else 3.0)

    compiled = vjpgrad.compile(f)
    for flags in (Flag.A, Flag.A, Flag.B, Flag.A | Flag.B, Flag.A):
        a, b = Value(0.5), Value(0.5)
        ya, yb = compiled(a, flags), f(b, flags)
        ya.backward()
        yb.backward()
        assert (ya.data.hex(), a.grad.hex()) == (yb.data.hex(), b.grad.hex())
