"""The guard of a recording: straight-line Python that checks, at every call, that the
function's world is the one it was recorded in.

``written`` turns the facts ``world.observe`` saw into one line per fact, as ``torch.compile``
writes its guards: read an object (``o7 = o3.__dict__``), then check it (``if o7 is not K4:
return False``). An object's identity is checked with ``is`` against the object itself, which the
guard's namespace keeps alive (so its address is never another's). Every Value of the world is
checked at the end, in one list (``values = [o85, *o84, ...]``): each list's length, their
identities (one pass in C), then their ``requires_grad`` and attributes together (one
comprehension: the flags of those without attributes); a list of numbers is checked in two
lines. The code is built from the facts alone: every name, key and number a user wrote is a
constant of the namespace (``K12``), never text of the code. A step that no longer leads
anywhere (an attribute deleted, a list shorter) raises, and the guard answers False: the call
records anew.
"""

from __future__ import annotations

import builtins
import collections
import itertools
import operator
import struct
from collections.abc import Callable
from typing import Any

from vjpgrad.compiler import lines
from vjpgrad.compiler.world import (
    MEMBERS,
    MISSING,
    Fact,
    Snapshot,
    content,
    exact,
    groups,
    registry_changed,
)

_float_bits = struct.Struct("<d").pack
_names = itertools.count(1)


def _empty_cell(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  # read only to see whether it raises
    except ValueError:
        return True
    return False


def _empty_slot(descriptor: Any, x: Any) -> bool:
    try:
        descriptor.__get__(x)
    except AttributeError:
        return True
    return False


_HELPERS: dict[str, Any] = {
    "_bits": _float_bits,
    "_exact": exact,
    "_rg": operator.attrgetter("requires_grad"),
    "_is_not": operator.is_not,
    "_attrs": operator.attrgetter("__dict__"),
    "_dict_keys": dict.keys,
    "_dict_values": dict.values,
    "_odict_keys": collections.OrderedDict.keys,
    "_odict_values": collections.OrderedDict.values,
    "_empty_cell": _empty_cell,
    "_empty_slot": _empty_slot,
    "_MISSING": MISSING,
    "_groups": groups,
    "_content": content,
    "_registry_changed": registry_changed,
}


class _Writer:
    def __init__(self, objects: dict[int, Any]) -> None:
        self.namespace: dict[str, Any] = dict(_HELPERS)
        self.lines: list[str] = []
        self.objects = objects  # id -> the object a fact names by identity (the snapshot keeps them)
        self.named: dict[int, str] = {}  # id -> the constant that holds an object checked by identity
        # the Values of the world, checked together at the end: (variable, is it a list of them,
        # the Values, their requires_grad, their attributes)
        self.values: list[tuple[str, bool, tuple[Any, ...], tuple[bool, ...], list[dict[str, Any]]]] = []

    def constant(self, x: Any) -> str:
        name = f"K{len(self.namespace)}"
        self.namespace[name] = x
        return name

    def identical(self, expression: str, key: int) -> str:
        """The condition that ``expression`` is not the object whose id is ``key``: ``is not`` that
        object (one constant per object), or ``id()`` where the snapshot did not keep it."""
        if key not in self.objects:
            return f"id({expression}) != {key}"
        name = self.named.get(key)
        if name is None:
            name = self.named[key] = self.constant(self.objects[key])
        return f"{expression} is not {name}"

    def identities(self, expression: str, keys: tuple[int, ...]) -> str:
        """The condition that the items of ``expression`` are not the objects of ``keys``, in order."""
        if not all(key in self.objects for key in keys):
            return f"tuple(map(id, {expression})) != {self.constant(keys)}"
        objects = self.constant(tuple(self.objects[key] for key in keys))
        return f"len({expression}) != {len(keys)} or any(map(_is_not, {expression}, {objects}))"

    def flags(self, expression: str, flags: tuple[bool, ...]) -> str:
        """The condition that the items of ``expression`` do not have ``requires_grad`` ``flags``."""
        return f"[x.requires_grad for x in {expression}] != {self.constant(list(flags))}"

    def attributes(self, expression: str, raw: list[dict[str, Any]]) -> str:
        """The condition that the items of ``expression`` do not have the attributes ``raw``."""
        if not any(raw):
            return f"any(map(_attrs, {expression}))"
        return f"list(map(_attrs, {expression})) != {self.constant(raw)}"

    def attributes_of(self, o: str, raw: dict[str, Any]) -> str:
        """The condition that the Value ``o`` does not have the attributes ``raw``."""
        return f"{o}.__dict__" if not raw else f"{o}.__dict__ != {self.constant(raw)}"

    def check(self, condition: str) -> None:
        self.lines.append(f"        if {condition}: return False")

    def get(self, child: int, parent: int, how: str, key: Any) -> None:
        self.lines.append(f"        o{child} = {self.expression(parent, how, key)}")

    def expression(self, parent: int, how: str, key: Any) -> str:
        """The expression that reads a step's object from its parent."""
        o = f"o{parent}"
        if how == "items":
            value = o if key is True else f"tuple({self.iterated(o, key)})"
        elif how == "keys":
            value = f"tuple({o})" if key is True else f"tuple({_READERS[key]}keys({o}))"
        elif how == "values":
            value = f"tuple({o}.values())" if key is True else f"tuple({_READERS[key]}values({o}))"
        elif how == "member":
            if key not in MEMBERS:  # Python's own attribute names only: never a user's text
                raise ValueError(f"no such member: {key!r}")
            value = f"{o}.{key}"
        elif how == "dict":
            value = f"{o}.__dict__"
        elif how == "call":
            value = f"{o}()"
        elif how == "class":
            value = f"type({o})"
        elif how == "slot":
            value = f"{self.constant(key)}.__get__({o})"
        elif how == "entry":
            value = f"{o}[{self.constant(key)}]"
        elif how == "constant":  # an object every world holds (the Value class), whatever the parent
            value = self.constant(key)
        else:
            raise ValueError(f"no such step: {how!r}")
        return value

    def iterated(self, o: str, key: Any) -> str:
        """What iterates over a sequence's items: the object itself, or where its class overrides
        ``__iter__`` (the step's key: the container type it subclasses) that type's own iteration."""
        return o if isinstance(key, bool) else f"{self.constant(key)}.__iter__({o})"

    def same(self, var: int, x: Any) -> None:
        o = f"o{var}"
        if x is None or x is True or x is False or x is MISSING:
            self.check(f"{o} is not {'_MISSING' if x is MISSING else repr(x)}")
        elif type(x) is float and x == x and x != 0.0:  # equal non-zero floats have equal bits
            self.check(f"type({o}) is not float or {o} != {self.constant(x)}")
        elif type(x) is float:
            self.check(f"type({o}) is not float or _bits({o}) != {self.constant(_float_bits(x))}")
        elif type(x) in (int, str, bytes):
            self.check(f"type({o}) is not {type(x).__name__} or {o} != {self.constant(x)}")
        else:
            self.check(f"_exact({o}) != {self.constant(exact(x))}")

    def scalars(self, var: int | str, items: tuple[Any, ...], names: bool = False) -> None:
        """Every item of a tuple by value; ``names``: attribute names, whose type needs no check."""
        o = f"o{var}" if isinstance(var, int) else var
        if not items:
            self.check(f"{o}")
            return
        self.check(f"{o} != {self.constant(items)}")
        if not (names and all(type(x) is str for x in items)):
            self.check(f"tuple(map(type, {o})) != {self.constant(tuple(map(type, items)))}")
        for k, x in enumerate(items):  # what == does not tell apart: -0.0 and 0.0, a nan, NumPy's kinds
            if type(x) in (int, str, bytes, bool, type(None)) or (type(x) is float and x == x and x != 0.0):
                continue
            self.check(f"_exact({o}[{k}]) != {self.constant(exact(x))}")

    def values_checked(self) -> None:
        """The Values of the world, put off until every object is read: one list of them all
        (``[o85, *o84, ...]``), each list's length, their identities (one pass in C), then their
        ``requires_grad`` and attributes (one comprehension). A Value is never read into, so
        putting its checks off changes no read before them; the guard's answer is the same."""
        if not self.values:
            return
        self.lines.append("        # the Values read above, together: their identities, requires_grad, attributes")
        lists = [o for o, many, *_ in self.values if many]
        self.lines.append(f"        values = [{', '.join(f'*{o}' if many else o for o, many, *_ in self.values)}]")
        if lists:
            lengths = tuple(len(items) for _, many, items, *_ in self.values if many)
            self.check(f"tuple(map(len, ({', '.join(lists)},))) != {self.constant(lengths)}")
        known = tuple(x for _, _, items, _, _ in self.values for x in items)
        flags = tuple(flag for *_, found, _ in self.values for flag in found)
        raw = [attributes for *_, found in self.values for attributes in found]
        self.check(f"any(map(_is_not, values, {self.constant(known)}))")
        self.check(self.flags_and_attributes("values", known, flags, raw))

    def flags_and_attributes(
        self, expression: str, known: tuple[Any, ...], flags: tuple[bool, ...], raw: list[dict[str, Any]]
    ) -> str:
        """The condition that the Values of ``expression`` (the Values ``known``, their identities
        checked before) do not have ``requires_grad`` ``flags`` and the attributes ``raw``, in one
        pass: the flags of the Values without attributes (``x.requires_grad for x in values if
        not x.__dict__``). A Value that gained an attribute drops out and one that lost its
        attributes comes in, so either changes the list; the Values that had attributes are
        checked apart, on the Values themselves (their identities are known): their attributes,
        then their flags."""
        bare = [flag for flag, attributes in zip(flags, raw, strict=True) if not attributes]
        condition = f"[x.requires_grad for x in {expression} if not x.__dict__] != {self.constant(bare)}"
        attributed = [k for k, attributes in enumerate(raw) if attributes]
        if attributed:
            holders = self.constant(tuple(known[k] for k in attributed))
            had = self.constant([raw[k] for k in attributed])
            condition += f" or [x.__dict__ for x in {holders}] != {had}"
            condition += f" or {self.flags(holders, tuple(flags[k] for k in attributed))}"
        return condition

    def partition(self, members: tuple[tuple[int, int], ...], expected: tuple[int, ...]) -> None:
        """Which numbers are one object (``world._partition``): number arguments come in
        ``_numbers``; the numbers of one tuple variable are picked from it at once."""
        read = []
        for var, items in itertools.groupby(members, key=operator.itemgetter(0)):
            places = [k for _, k in items]
            if var < 0:
                read.append("*_numbers")
            elif places == [-1]:
                read.append(f"o{var}")
            elif len(places) == 1:
                read.append(f"o{var}[{places[0]}]")
            else:
                read.append(f"*{self.constant(operator.itemgetter(*places))}(o{var})")
        self.check(f"_groups(({', '.join(read)},)) != {self.constant(expected)}")

    def fact(self, fact: Fact, raw: Any) -> None:
        kind, var = fact[0], fact[1]
        o = f"o{var}"
        if kind == "get":
            self.get(var, fact[2], fact[3], fact[4])
        elif kind == "unpack":
            self.lines.append(f"        {''.join(f'o{v}, ' for v in fact[2])}= {o}")
        elif kind == "same":
            self.same(var, raw)
        elif kind == "scalars":
            self.scalars(var, raw)
        elif kind == "partition":
            self.partition(fact[2], fact[3])
        elif kind in ("generator", "calls"):
            pass  # compared before and after the recording only: drawing (or calling a cache) outside is fine
        elif kind in _CHECKS:
            self.check(_CHECKS[kind](self, o, fact, raw))
        else:
            raise ValueError(f"no such fact: {kind!r}")


_READERS = {False: "_dict_", "ordered": "_odict_"}
"""How a mapping's keys and values are read where its own methods may be a user's (a ``keys``
step's key): dict's (a subclass of dict), or OrderedDict's, whose order ``move_to_end`` keeps."""

_CHECKS: dict[str, Callable[[_Writer, str, Fact, Any], str]] = {
    "is": lambda w, o, fact, raw: w.identical(o, fact[2]),
    "rg": lambda w, o, fact, raw: f"{o}.requires_grad is not {fact[2]!r}",
    "attrs": lambda w, o, fact, raw: w.attributes_of(o, raw),
    "ids": lambda w, o, fact, raw: w.identities(o, fact[2]),
    "rgs": lambda w, o, fact, raw: w.flags(o, fact[2]),
    "attrses": lambda w, o, fact, raw: w.attributes(o, raw),
    "absent": lambda w, o, fact, raw: f"not {o}.keys().isdisjoint({w.constant(fact[2])})",
    "code": lambda w, o, fact, raw: w.identical(f"{o}.__code__", fact[2]),
    "names": lambda w, o, fact, raw: " or ".join(
        w.identical(f"{o}.{attribute}", key) for attribute, key in zip(fact[2], fact[3], strict=True)
    ),
    "bare": lambda w, o, fact, raw: (
        f"{o}.__closure__ is not None or {o}.__defaults__ is not None or {o}.__kwdefaults__ is not None or {o}.__dict__"
        f" or {o}.__annotations__"
    ),
    "no attributes": lambda w, o, fact, raw: f"{o}.__dict__",
    "state": lambda w, o, fact, raw: f"_content({o}) != {w.constant(raw)}",
    "registry": lambda w, o, fact, raw: f"_registry_changed({o}, {w.constant(raw)})",
    "builtins": lambda w, o, fact, raw: (
        f"any(map(_is_not, map({o}.get, {w.constant(fact[2])}, {w.constant((MISSING,) * len(fact[2]))}), "
        f"{w.constant(raw)}))"
    ),
    "empty": lambda w, o, fact, raw: f"not _empty_cell({o})",
    "annotated": lambda w, o, fact, raw: f"bool({o}.get('__annotations__')) is not {fact[2]!r}",
    "no slot": lambda w, o, fact, raw: f"not _empty_slot({w.constant(fact[2])}, {o})",
}
"""The condition that a fact no longer holds, for each kind of fact that is one check."""


def _uses(facts: list[Fact]) -> dict[int, int]:
    """How many facts read each variable (its own ``get`` aside)."""
    uses: dict[int, int] = {}
    for fact in facts:
        if fact[0] == "partition":
            for var, _ in fact[2]:
                uses[var] = uses.get(var, 0) + 1
            continue
        var = fact[2] if fact[0] == "get" else fact[1]
        uses[var] = uses.get(var, 0) + 1
    return uses


def _folded(writer: _Writer, facts: list[tuple[Fact, Any]], k: int, uses: dict[int, int]) -> int:
    """Write facts ``k`` and after as one line where they allow it (a step read once, a list of
    Values, a Value's three checks); how many facts that line covers, 0 if none."""
    for fold in (_folded_step, _folded_list, _folded_value):
        covered = fold(writer, facts, k, uses)
        if covered:
            return covered
    return 0


def _folded_step(writer: _Writer, facts: list[tuple[Fact, Any]], k: int, uses: dict[int, int]) -> int:
    """A step whose object only the next fact reads: read inside that fact's line."""
    fact = facts[k][0]
    following = facts[k + 1][0] if k + 1 < len(facts) else None
    if fact[0] != "get" or following is None or following[1] != fact[1] or uses.get(fact[1]) != 1:
        return 0
    _, _, parent, how, key = fact
    if following[0] == "is":
        writer.check(writer.identical(writer.expression(parent, how, key), following[2]))
        return 2
    if following[0] == "builtins":
        writer.check(_CHECKS["builtins"](writer, writer.expression(parent, how, key), following, facts[k + 1][1]))
        return 2
    if following[0] == "scalars" and how == "keys":
        writer.scalars(writer.expression(parent, how, key), facts[k + 1][1], names=True)
        return 2
    if following[0] == "unpack" and how in ("values", "items"):
        source = writer.iterated(f"o{parent}", key) if how == "items" else f"o{parent}"
        if how == "values":
            source = f"o{parent}.values()" if key is True else f"{_READERS[key]}values(o{parent})"
        writer.lines.append(f"        {''.join(f'o{v}, ' for v in following[2])}= {source}")
        return 2
    return 0


def _folded_list(writer: _Writer, facts: list[tuple[Fact, Any]], k: int, uses: dict[int, int]) -> int:
    """A list of Values: its identities, flags and attributes read from the list itself, in C."""
    fact = facts[k][0]
    if fact[0] != "get" or fact[3] != "items" or fact[4] or k + 3 >= len(facts) or uses.get(fact[1]) != 3:
        return 0
    checks = [f for f, _ in facts[k + 1 : k + 4]]
    if [c[:2] for c in checks] != [("ids", fact[1]), ("rgs", fact[1]), ("attrses", fact[1])]:
        return 0
    o = f"o{fact[2]}"
    if all(key in writer.objects for key in checks[0][2]):  # checked with the world's other Values
        items = tuple(writer.objects[key] for key in checks[0][2])
        writer.values.append((o, True, items, checks[1][2], list(facts[k + 3][1])))
        return 4
    checked = f"{writer.identities(o, checks[0][2])} or {writer.flags(o, checks[1][2])}"
    writer.check(f"{checked} or {writer.attributes(o, facts[k + 3][1])}")
    return 4


def _folded_value(writer: _Writer, facts: list[tuple[Fact, Any]], k: int, uses: dict[int, int]) -> int:
    """A Value: its identity, its flag and its attributes in one line."""
    fact = facts[k][0]
    if fact[0] != "is" or k + 2 >= len(facts):
        return 0
    rg, attrs = facts[k + 1][0], facts[k + 2]
    if rg[:2] != ("rg", fact[1]) or attrs[0][:2] != ("attrs", fact[1]):
        return 0
    o = f"o{fact[1]}"
    if fact[2] in writer.objects:  # checked with the world's other Values
        writer.values.append((o, False, (writer.objects[fact[2]],), (rg[2],), [attrs[1]]))
        return 3
    checked = f"{writer.identical(o, fact[2])} or {o}.requires_grad is not {rg[2]!r}"
    writer.check(f"{checked} or {writer.attributes_of(o, attrs[1])}")
    return 3


def written(snapshot: Snapshot) -> tuple[str, dict[str, Any]]:
    """The guard's source (``def guard(o0, o1...)``: the roots, in order, then ``_numbers``, the
    number arguments, where the guard watches their identities) and its namespace."""
    objects = {id(x): x for x in snapshot.constants}
    for x in snapshot.constants:  # a list's items are kept as one tuple
        if type(x) is tuple:
            objects.update((id(item), item) for item in x)
    writer = _Writer(objects)
    facts = list(zip(snapshot.facts, snapshot.raw, strict=True))
    uses = _uses(snapshot.facts)
    k = 0
    while k < len(facts):
        covered = _folded(writer, facts, k, uses)
        if not covered:
            writer.fact(*facts[k])
            covered = 1
        k += covered
    writer.values_checked()
    roots = ", ".join([*(f"o{k}" for k in range(snapshot.roots)), *(["_numbers"] if snapshot.numbers else [])])
    source = "\n".join(
        [
            f"def guard({roots}):",
            "    try:",
            *(writer.lines or ["        pass"]),
            "    except Exception:  # a step that leads nowhere now: record anew",
            "        return False",
            "    return True",
            "",
        ]
    )
    writer.namespace["_keep"] = snapshot.constants  # what the identities are of: kept alive, never reused
    return source, writer.namespace


def loaded(snapshot: Snapshot) -> tuple[Callable[..., bool], str]:
    """The guard of ``snapshot``, loaded, and its source (shown under a name of its own in
    tracebacks and ``linecache``)."""
    source, namespace = written(snapshot)
    filename = f"<vjpgrad.compile guard {next(_names)}>"
    lines.show(filename, source)
    exec(builtins.compile(source, filename, "exec"), namespace)  # code written from the facts alone
    function: Callable[..., bool] = namespace["guard"]
    lines.forget_with(function)
    return function, source


__all__ = ["loaded", "written"]
