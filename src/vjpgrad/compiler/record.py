"""Recording a function: what its arguments are, and what one run of it made.

``Arguments`` reads a call's arguments into a key (their structure: what fixes a recording)
and their leaves (their data: the Values and floats a replay reads). ``record`` runs the
function once while the core records every operation (``graph.Recording``) and refuses every
read of a Value's number; ``Recorded`` then says which Values the code reads (arguments,
parameters, Values made inside), which are constants, and where the outputs come from.

A float argument is data only where it meets a Value (``x * lr``): there it stands in the
recording as a ``NumberArgument``, a Value that operations take as eager code takes the
number. Any other use of it as a Python number (``lr * 2``, ``lr == 0``, ``round(lr)``,
``math.exp(lr)``) raises ``Static``: the call is recorded again with that argument as
structure (its value in the key), so Python computes with the real float, exactly.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from vjpgrad.compiler import guard
from vjpgrad.core import graph
from vjpgrad.core.modes import DataDependentError, refusing_numbers, state
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector

_number = graph.number


class Static(BaseException):
    """A float argument was used as a Python number while recording: record again with it as
    structure. A BaseException, so that a user's ``except Exception`` does not swallow it."""

    def __init__(self, position: int) -> None:
        super().__init__(position)
        self.position = position


_VALUE_NAMES = frozenset({"requires_grad", "number_argument", "label", "position"})
"""The attributes of a NumberArgument that vjpgrad's own code reads; any other public name is
the user's Python asking the float something, which makes the argument structure."""


class NumberArgument(Value):
    """A float argument while a function is recorded (see the module docstring).

    With a Value it is the number eager code would have there (``c / x`` is ``(1 / x) * c``,
    ``x ** c`` takes PyTorch's special exponents, ``c ** x`` is number ** Value), so the
    replay computes what eager computes. Everything else raises ``Static``. For
    ``isinstance``, it is a float."""

    __slots__ = ()
    number_argument = True

    @property  # type: ignore[misc]  # __class__ as a property: isinstance(lr, float) holds, as in eager code
    def __class__(self) -> type:
        return float

    def __init__(self, number: float, position: int) -> None:
        super().__init__(number, requires_grad=False)
        vars(self)["position"] = position

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_") or name in _VALUE_NAMES:
            return object.__getattribute__(self, name)
        self._static()

    def _static(self) -> NoReturn:
        raise Static(vars(self)["position"])

    def _with_value(self, other: Any, then: Callable[[Any], Any]) -> Any:
        if isinstance(other, Value) and not other.number_argument:
            return then(other)
        self._static()

    def __add__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: Value.__add__(self, v))  # type: ignore[no-any-return]  # a Value

    def __radd__(self, other: Any) -> Value:  # a Value on the left: Python asks this subclass first
        return self._with_value(other, lambda v: Value.__add__(v, self))  # type: ignore[no-any-return]  # a Value

    def __sub__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: Value.__sub__(self, v))  # type: ignore[no-any-return]  # a Value

    def __rsub__(self, other: Any) -> Value:  # a Value on the left: Python asks this subclass first
        return self._with_value(other, lambda v: Value.__sub__(v, self))  # type: ignore[no-any-return]  # a Value

    def __mul__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: Value.__mul__(self, v))  # type: ignore[no-any-return]  # a Value

    def __rmul__(self, other: Any) -> Value:  # a Value on the left: Python asks this subclass first
        return self._with_value(other, lambda v: Value.__mul__(v, self))  # type: ignore[no-any-return]  # a Value

    def __truediv__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: v.reciprocal() * self)  # type: ignore[no-any-return]  # a Value

    def __rtruediv__(self, other: Any) -> Value:  # a Value on the left: Python asks this subclass first
        return self._with_value(other, lambda v: Value.__truediv__(v, self))  # type: ignore[no-any-return]  # a Value

    def __pow__(self, other: Any) -> Value:
        return self._with_value(other, self._pow_base)  # type: ignore[no-any-return]  # a Value

    def __rpow__(self, other: Any) -> Value:  # a Value on the left: Python asks this subclass first
        return self._with_value(other, lambda v: Value.__pow__(v, self))  # type: ignore[no-any-return]  # a Value

    def __neg__(self) -> Value:
        self._static()

    def __abs__(self) -> Value:
        self._static()

    def __pos__(self) -> Value:
        self._static()

    def __float__(self) -> float:
        self._static()

    def __int__(self) -> int:
        self._static()

    def __bool__(self) -> bool:
        self._static()

    def __round__(self, digits: int | None = None) -> float:
        self._static()

    def __floor__(self) -> int:
        self._static()

    def __ceil__(self) -> int:
        self._static()

    def __trunc__(self) -> int:
        self._static()

    def __floordiv__(self, other: Any) -> float:
        self._static()

    def __rfloordiv__(self, other: Any) -> float:
        self._static()

    def __mod__(self, other: Any) -> float:
        self._static()

    def __rmod__(self, other: Any) -> float:
        self._static()

    def __divmod__(self, other: Any) -> tuple[float, float]:
        self._static()

    def __rdivmod__(self, other: Any) -> tuple[float, float]:
        self._static()

    def __eq__(self, other: object) -> bool:
        self._static()

    def __ne__(self, other: object) -> bool:
        self._static()

    def __lt__(self, other: object) -> bool:
        self._static()

    def __le__(self, other: object) -> bool:
        self._static()

    def __gt__(self, other: object) -> bool:
        self._static()

    def __ge__(self, other: object) -> bool:
        self._static()

    def __hash__(self) -> int:
        self._static()

    def __format__(self, spec: str) -> str:
        self._static()

    def __repr__(self) -> str:
        self._static()

    def __str__(self) -> str:
        self._static()


# ---- the arguments: their structure (the key of a recording) and their leaves ---------------------


def _is_numpy(x: object, *kinds: str) -> bool:
    kind = type(x)
    return kind.__module__ == "numpy" and kind.__name__ in kinds


def is_data_float(x: object) -> bool:
    """A float that is data: a Python float or a NumPy float64. Others (NumPy's float32, whose
    arithmetic rounds to float32, a Fraction, a float subclass) are structure, kept exactly."""
    return type(x) is float or _is_numpy(x, "float64")


class Arguments:
    """The arguments of one call, read: their structure (a hashable key), their leaves in order
    (Values and floats: the data), and the other objects passed (``self``: structure by
    identity, and roots from which parameters can be reached). ``static`` are the positions,
    among the float arguments, that this function uses as Python numbers: structure too."""

    def __init__(self, args: Sequence[Any], kwargs: dict[str, Any], static: frozenset[int] = frozenset()) -> None:
        self.key_parts: list[Any] = []
        self.leaves: list[Any] = []
        self.objects: list[Any] = []
        self.static = static
        self.floats = 0  # float arguments seen so far: a float's position
        self._first_place: dict[int, int] = {}
        for arg in args:
            self._visit(arg)
        for name in sorted(kwargs):
            self.key_parts.append(("keyword", name))
            self._visit(kwargs[name])
        self.key_parts.append(("grad mode", state.grad_enabled))
        self.key = tuple(self.key_parts)

    def _visit(self, x: Any) -> None:
        key = self.key_parts
        if isinstance(x, Value):
            place = self._first_place.setdefault(id(x), len(self.leaves))
            key.append(("V", x.requires_grad, place))
            self.leaves.append(x)
        elif isinstance(x, Vector):
            key.append(("Vector", len(x)))
            for item in x:
                self._visit(item)
        elif type(x) in (list, tuple) or (isinstance(x, tuple) and hasattr(x, "_fields")):
            key.append((type(x), len(x)))
            for item in x:
                self._visit(item)
        elif is_data_float(x):
            self._float(x)
        elif isinstance(x, (bool, numbers.Number, str, bytes)) or x is None or _is_numpy(x, "bool", "bool_"):
            key.append(("constant", type(x), x))  # structure: a length, an index, a flag, a name, an exact number
        elif _is_numpy(x, "ndarray") or hasattr(x, "__array_interface__"):
            raise TypeError(
                "a compiled function takes numbers, Values, Vectors, lists and tuples of them; got a NumPy array, "
                "whose numbers it could not tell apart between calls: pass a list of numbers (or a Vector) instead"
            )
        elif isinstance(x, (list, tuple, dict, set, frozenset)):
            raise TypeError(
                f"a compiled function takes numbers, Values, Vectors, lists and tuples of them, and other objects "
                f"by identity; got a {type(x).__name__}, which it cannot tell apart between calls: pass a list or a "
                "tuple, or call the function uncompiled"
            )
        else:  # any other object (self, a model): the same object replays, another is recorded anew
            key.append(("object", id(x)))
            self.objects.append(x)

    def _float(self, x: float) -> None:
        position = self.floats
        self.floats += 1
        if position in self.static:
            self.key_parts.append(("constant", type(x), x))  # used as a Python number: structure
            return
        self.key_parts.append(("float",))  # a Python float or a NumPy float64: the same data
        self.leaves.append(x)


def rebuild(x: Any, leaves: Iterator[Any]) -> Any:
    """``x`` again, with every Value and data float replaced by the next of ``leaves`` (a float
    that is structure stays as it is)."""
    if isinstance(x, Value):
        return next(leaves)
    if is_data_float(x):
        replacement = next(leaves)
        return x if replacement is _STATIC else replacement
    if isinstance(x, Vector):
        return Vector([rebuild(item, leaves) for item in x])
    if type(x) in (list, tuple) or (isinstance(x, tuple) and hasattr(x, "_fields")):
        items = [rebuild(item, leaves) for item in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)  # a namedtuple takes fields
    return x


_STATIC = object()
"""What ``rebuild`` is fed for a float that is structure: the float itself stays."""


def outputs_of(result: Any) -> tuple[str, list[Any]]:
    if isinstance(result, Value):
        return "value", [result]
    if isinstance(result, Vector):
        return "vector", list(result)
    if isinstance(result, (list, tuple)) and all(isinstance(x, (Value, numbers.Real)) for x in result):
        return type(result).__name__, list(result)
    raise TypeError(
        f"a compiled function must return a Value, a Vector or a list of Values, got {type(result).__name__}"
    )


# ---- one run of the function, recorded --------------------------------------------------------------


@dataclass
class Recorded:
    """What one recorded run made, read for writing code.

    ``live``: the recorded operations the outputs need and the Values made inside that they
    read, in creation order. ``arguments``: the Values and float stand-ins of the leaves, in
    order (the same Value twice is one). ``parameters``: the other Values the operations read
    (closed over, or made inside and kept by the function's objects). ``constants``: numbers
    of Values made inside from literal numbers that take no gradient. ``outputs``: where each
    output comes from: ``("t", index into live)``, ``("x", index into externals)``,
    ``("c", number)`` for a number result.
    """

    kind: str
    live: list[Value]
    arguments: list[Value]
    parameters: list[Value]
    names: dict[int, str]
    constants: dict[int, float]
    takes_grad: dict[int, bool]
    outputs: list[tuple[str, Any]]
    recording: graph.Recording
    guard: guard.Guard  # that every parameter is where it was found, checked at each call
    aliases: list[tuple[int, int]]  # (id, k): argument k is also reached as a parameter, by a path

    @property
    def externals(self) -> list[Value]:
        """The Values the code reads from outside: the distinct arguments, then the parameters."""
        return [*distinct(self.arguments), *self.parameters]


def record(
    fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any], read: Arguments, roots: list[Any]
) -> Recorded:
    """Run ``fn`` once on the call's Values and on stand-ins of its data floats, recording what it
    makes. Raises ``Static`` when a float argument turns out to be used as a Python number."""
    positions = iter(range(read.floats))
    leaves = iter(read.leaves)
    stand_ins: list[Any] = []  # in rebuild's order: the Value, a float's stand-in, or _STATIC for a static float
    for arg in [*args, *(kwargs[name] for name in sorted(kwargs))]:
        _stand_ins(arg, leaves, positions, read.static, stand_ins)
    arguments = [x for x in stand_ins if x is not _STATIC]
    recording = graph.Recording()
    supply = iter(stand_ins)
    rebuilt = [rebuild(arg, supply) for arg in args]
    rebuilt_kwargs = {name: rebuild(kwargs[name], supply) for name in sorted(kwargs)}
    given = _lists(rebuilt) + _lists(list(rebuilt_kwargs.values()))
    message = (
        f"{getattr(fn, '__qualname__', 'the function')} is being recorded by vjpgrad.compile, which cannot "
        "replay Python that depends on a Value's number: use a vjpgrad operation instead (max, relu, "
        "nn.functional...), move the decision outside the compiled function, or call it uncompiled"
    )
    state.recording = recording
    try:
        with refusing_numbers(message):
            result = fn(*rebuilt, **rebuilt_kwargs)
    finally:
        state.recording = None
    _check_unchanged(fn, given)
    kind, outputs = outputs_of(result)
    return _read(fn, kind, recording, arguments, outputs, roots)


def _stand_ins(x: Any, leaves: Iterator[Any], positions: Iterator[int], static: frozenset[int], out: list[Any]) -> None:
    """The Value, stand-in or static marker for each leaf or float of ``x``, in ``rebuild``'s order."""
    if isinstance(x, Value):
        out.append(next(leaves))
    elif is_data_float(x):
        position = next(positions)
        if position in static:
            out.append(_STATIC)
        else:
            out.append(NumberArgument(float(next(leaves)), position))
    elif isinstance(x, (Vector, list, tuple)):
        for item in x:
            _stand_ins(item, leaves, positions, static, out)


def _lists(rebuilt: list[Any]) -> list[tuple[list[Any], list[Any]]]:
    """Every list (and Vector's list) the function is handed, with its items now."""
    found: list[tuple[list[Any], list[Any]]] = []
    stack = list(rebuilt)
    while stack:
        x = stack.pop()
        if isinstance(x, Vector):
            found.append((x._values, list(x._values)))
            stack.extend(x._values)
        elif isinstance(x, (list, tuple)):
            if isinstance(x, list):
                found.append((x, list(x)))
            stack.extend(x)
    return found


def _check_unchanged(fn: Callable[..., Any], given: list[tuple[list[Any], list[Any]]]) -> None:
    """Refuse a function that changed a list it was given: a replay would not change it."""
    for items, before in given:
        if len(items) != len(before) or any(a is not b for a, b in zip(items, before, strict=True)):
            raise DataDependentError(
                f"{_where(fn)}: {getattr(fn, '__qualname__', 'the function')} changed a list it was given as an "
                "argument (append, assignment...), which vjpgrad.compile cannot replay: return the new items instead, "
                "or call it uncompiled"
            )


def _where(fn: Callable[..., Any]) -> str:
    """``file:line`` of a function's definition."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return "<unknown>" if code is None else f"{code.co_filename}:{code.co_firstlineno}"


def _live(recording: graph.Recording, outputs: list[Any]) -> list[Value]:
    """The recorded operations the outputs need, and the Values made inside that they read,
    found by walking back from the outputs through recorded operations only."""
    recorded = {id(node) for node in recording.nodes}
    seen: set[int] = set()
    found: list[Value] = []
    stack = [x for x in outputs if isinstance(x, Value)]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in recorded:
            found.append(node)
            stack.extend(x for x in graph.operands(node) if isinstance(x, Value))
        elif id(node) in recording.leaves:
            found.append(node)
    return sorted(found, key=graph.sequence)


def distinct(values: list[Value]) -> list[Value]:
    """``values`` without repeats, in order, by identity (a float's stand-in cannot be hashed)."""
    seen: set[int] = set()
    return [v for v in values if not (id(v) in seen or seen.add(id(v)))]  # type: ignore[func-returns-value]  # set.add is None: false


def _read(
    fn: Callable[..., Any],
    kind: str,
    recording: graph.Recording,
    arguments: list[Value],
    outputs: list[Any],
    roots: list[Any],
) -> Recorded:
    """Which Values the recorded operations read, where the parameters are, named for the code."""
    recorded = {id(node) for node in recording.nodes}
    argument_ids = {id(a) for a in arguments}
    live = _live(recording, outputs)
    made = [node for node in live if id(node) in recording.leaves]  # Values made by Value() inside
    read = distinct(
        [x for node in live for x in graph.operands(node) if isinstance(x, Value)]
        + [x for x in outputs if isinstance(x, Value)]
    )
    outside = [x for x in read if id(x) not in recorded and id(x) not in recording.leaves and id(x) not in argument_ids]
    wanted = {id(x) for x in outside} | {id(x) for x in made} | argument_ids | recorded
    found = guard.search(roots, wanted)
    for node in recording.nodes:  # a Value computed inside, kept by the function's objects
        if id(node) in found.paths:
            _refuse_kept(fn, node, found, "stores a Value it computes")
    kept = [x for x in made if id(x) in found.paths]  # made inside and kept: a weight made lazily
    for x in kept:
        if id(x) in recording.from_numbers:
            _refuse_kept(fn, x, found, "stores Value() of a float argument")
    missing = [x for x in outside if id(x) not in found.paths]
    if missing:
        raise DataDependentError(
            f"{_where(fn)}: vjpgrad.compile cannot find where {getattr(fn, '__qualname__', 'the function')} gets "
            f"the Value {missing[0]!r} (made outside it), so it could not check at the next call that it is still the "
            "same one: keep such Values in attributes, lists, dicts, closures or globals of plain Python objects, "
            f"or pass them as arguments{'' if found.complete else ' (the search stopped: too many objects)'}"
        )
    parameters = [*outside, *kept]
    kept_ids = {id(x) for x in kept}
    names: dict[int, str] = {}
    constants: dict[int, float] = {}
    for k, a in enumerate(distinct(arguments)):
        names[id(a)] = f"x{k}"
    for k, p in enumerate(parameters):
        names[id(p)] = f"p{k}"
    for node in made:  # made inside, not kept: a number, or a leaf of the code made at every call
        if id(node) not in kept_ids and id(node) not in recording.from_numbers and not node.requires_grad:
            constants[id(node)] = _number(node)
    live = [node for node in live if id(node) not in constants and id(node) not in kept_ids]
    externals = [*distinct(arguments), *parameters]
    for k, node in enumerate(live, start=1):
        names[id(node)] = f"t{k}"
    # gradient flows where the recording made edges: detach() and no_grad() made none
    takes_grad = {id(x): x.requires_grad for x in externals}
    for node in live:
        takes_grad[id(node)] = node.requires_grad
    place = {id(node): k for k, node in enumerate(live)}
    external_place = {id(x): k for k, x in enumerate(externals)}
    sources: list[tuple[str, Any]] = []
    for x in outputs:
        if isinstance(x, Value) and id(x) in place:
            sources.append(("t", place[id(x)]))
        elif isinstance(x, Value) and id(x) in external_place:
            sources.append(("x", external_place[id(x)]))
        elif isinstance(x, Value):
            sources.append(("c", constants[id(x)]))
        else:
            sources.append(("n", x))  # a number the function returned: returned as it is
    aliases = [(id(a), k) for k, a in enumerate(distinct(arguments)) if id(a) in found.paths]
    checked = guard.Guard(found, {id(x) for x in parameters} | {key for key, _ in aliases})
    return Recorded(
        kind, live, arguments, parameters, names, constants, takes_grad, sources, recording, checked, aliases
    )


def _refuse_kept(fn: Callable[..., Any], value: graph.Node, found: guard.Found, what: str) -> NoReturn:
    root, path = found.paths[id(value)]
    where = "the function" if root == 0 else f"an object it was given ({root})"
    raise DataDependentError(
        f"{_where(fn)}: {getattr(fn, '__qualname__', 'the function')} {what} ({where}{guard.described(path)}), "
        "which a replay would not store again: return it instead, or call the function uncompiled"
    )
