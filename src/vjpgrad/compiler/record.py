"""Recording a function: what its arguments are, and what one run of it made.

``Arguments`` reads a call's arguments into a key (their structure: what fixes a recording)
and their leaves (their data: the Values and floats a replay reads). ``record`` runs the
function once on stand-ins for the leaves while the core records every operation
(``graph.Recording``) and refuses every read of a Value's number; ``Recorded`` then says which
Values the code reads (arguments, parameters), which are constants, and where the outputs
come from.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from vjpgrad.core import graph
from vjpgrad.core.modes import refusing_numbers, state
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector

_number = graph.number


class NumberArgument(Value):
    """A float argument while a function is recorded: a Value, so that the code reads the
    number of each call, that takes part in operations as a number does in eager mode
    (``c / x`` is ``(1 / x) * c``, ``x ** c`` takes PyTorch's special exponents, ``c ** x``
    is number ** Value), so the replay computes what eager computes."""

    __slots__ = ()
    number_argument = True

    def __truediv__(self, other: Any) -> Value:
        if isinstance(other, Value) and not other.number_argument:
            product: Value = other.reciprocal() * self
            return product
        return Value.__truediv__(self, other)

    def __pow__(self, other: Any) -> Value:
        if isinstance(other, Value) and not other.number_argument:
            return self._pow_base(other)
        return Value.__pow__(self, other)


# ---- the arguments: their structure (the key of a recording) and their leaves ---------------------


def _is_numpy(x: object, *kinds: str) -> bool:
    kind = type(x)
    return kind.__module__ == "numpy" and kind.__name__ in kinds


class Arguments:
    """The arguments of one call, read: their structure (a hashable key), their leaves in order
    (Values and floats: the data), and the other objects passed (``self``: structure by
    identity, and roots from which parameters can be reached)."""

    def __init__(self, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        self.key_parts: list[Any] = []
        self.leaves: list[Any] = []
        self.objects: list[Any] = []
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
        elif isinstance(x, bool) or _is_numpy(x, "bool", "bool_"):
            key.append(("bool", bool(x)))  # structure: a flag
        elif isinstance(x, numbers.Integral):
            key.append(("int", int(x)))  # structure: a length, an index (a NumPy integer of any width)
        elif isinstance(x, numbers.Real):
            key.append(("float",))
            self.leaves.append(float(x))
        elif x is None or isinstance(x, (str, bytes)):
            key.append(("constant", type(x), x))
        elif isinstance(x, (list, tuple, dict, set, frozenset)):
            raise TypeError(
                f"a compiled function takes numbers, Values, Vectors, lists and tuples of them, and other objects "
                f"by identity; got a {type(x).__name__}, which it cannot tell apart between calls: pass a list or a "
                "tuple, or call the function uncompiled"
            )
        else:  # any other object (self, a model): the same object replays, another is recorded anew
            key.append(("object", id(x)))
            self.objects.append(x)


def rebuild(x: Any, leaves: Iterator[Any]) -> Any:
    """``x`` again, with every Value and float replaced by the next of ``leaves``."""
    if isinstance(x, Value):
        return next(leaves)
    if isinstance(x, numbers.Real) and not isinstance(x, (bool, numbers.Integral)):
        return next(leaves)
    if isinstance(x, Vector):
        return Vector([rebuild(item, leaves) for item in x])
    if type(x) in (list, tuple) or (isinstance(x, tuple) and hasattr(x, "_fields")):
        items = [rebuild(item, leaves) for item in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)  # a namedtuple takes fields
    return x


def outputs_of(result: Any) -> tuple[str, list[Any]]:
    if isinstance(result, Value):
        return "value", [result]
    if isinstance(result, Vector):
        return "vector", list(result)
    if isinstance(result, (list, tuple)) and all(isinstance(x, (Value, numbers.Real)) for x in result):
        return "list", list(result)
    raise TypeError(
        f"a compiled function must return a Value, a Vector or a list of Values, got {type(result).__name__}"
    )


# ---- one run of the function, recorded --------------------------------------------------------------


@dataclass
class Recorded:
    """What one recorded run made, read for writing code.

    ``live``: the recorded operations the outputs need, in creation order. ``arguments``: the
    stand-ins of the leaves, in order (the same Value twice is one stand-in). ``parameters``:
    the other Values the operations read (closed over, or made inside and taking gradient).
    ``constants``: numbers of leaves made inside that take no gradient. ``refreshed``: the
    parameters made from a float argument (``Value(lr)``), with that argument's leaf index.
    ``outputs``: where each output comes from: ``("t", index into live)``, ``("x", index into
    externals)``, ``("c", number)``.
    """

    kind: str
    live: list[Value]
    arguments: list[Value]
    parameters: list[Value]
    names: dict[int, str]
    constants: dict[int, float]
    takes_grad: dict[int, bool]
    refreshed: list[tuple[int, int]]
    outputs: list[tuple[str, Any]]

    @property
    def externals(self) -> list[Value]:
        """The Values the code reads from outside: the distinct arguments, then the parameters."""
        return [*dict.fromkeys(self.arguments), *self.parameters]


def record(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any], read: Arguments) -> Recorded:
    """Run ``fn`` once on stand-ins of the call's leaves, recording what it makes."""
    leaves = read.leaves
    arguments = [
        Value(_number(x), requires_grad=x.requires_grad) if isinstance(x, Value) else NumberArgument(x, False)
        for x in leaves
    ]
    distinct: dict[int, Value] = {}
    for x, a in zip(leaves, arguments, strict=True):
        if isinstance(x, Value):
            distinct.setdefault(id(x), a)
    arguments = [distinct[id(x)] if isinstance(x, Value) else a for x, a in zip(leaves, arguments, strict=True)]
    recording = graph.Recording()
    feed = iter(arguments)
    rebuilt = [rebuild(arg, feed) for arg in args]
    rebuilt_kwargs = {name: rebuild(kwargs[name], feed) for name in sorted(kwargs)}
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
    kind, outputs = outputs_of(result)
    return _read(kind, recording, arguments, outputs)


def _read(kind: str, recording: graph.Recording, arguments: list[Value], outputs: list[Any]) -> Recorded:
    """Which Values the recorded operations read, named for the code."""
    recorded = {id(node) for node in recording.nodes}
    argument_ids = {id(a) for a in arguments}
    reached = graph.ancestry([x for x in outputs if isinstance(x, Value)])
    live = sorted((n for n in reached if id(n) in recorded), key=graph.sequence)  # in creation order
    names: dict[int, str] = {}
    constants: dict[int, float] = {}
    for k, a in enumerate(dict.fromkeys(arguments)):  # distinct, in order
        names[id(a)] = f"x{k}"
    parameters: list[Value] = []
    argument_place = {id(a): k for k, a in enumerate(arguments)}
    refreshed: list[tuple[int, int]] = []

    def outside(x: Value) -> None:
        if id(x) in recorded or id(x) in argument_ids or id(x) in names or id(x) in constants:
            return
        if id(x) in recording.from_numbers:  # Value(lr) of a float argument: that argument's number
            refreshed.append((len(parameters), argument_place[id(recording.from_numbers[id(x)])]))
        elif graph.op_of(x) is None and graph.made_after(x, recording) and not x.requires_grad:
            constants[id(x)] = _number(x)  # a constant made inside: its number
            return
        names[id(x)] = f"p{len(parameters)}"  # a parameter, or a Value made inside that takes gradient
        parameters.append(x)

    for node in live:
        for x in graph.operands(node):
            if isinstance(x, Value):
                outside(x)
    for x in outputs:  # an output that is a parameter or a constant made inside
        if isinstance(x, Value):
            outside(x)
    externals = [*dict.fromkeys(arguments), *parameters]
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
            sources.append(("c", float(x)))
    return Recorded(kind, live, arguments, parameters, names, constants, takes_grad, refreshed, sources)
