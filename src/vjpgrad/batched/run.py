"""``vjpgrad.vmap``: a function recorded once on one sample's Values, run as array code on a
column of samples; and ``batch_sum``, the per-sample rows added in eager code's order.

A call reads its arguments: a batched one (``in_dims`` 0, or another axis) is a NumPy float64
array of samples, each a number or a list of numbers; an unbatched one (``None``) is shared by
every sample and passed to the function as it is, as torch.func.vmap passes it, and so is every
keyword argument (torch.func.vmap batches none either). The function is
recorded (as ``vjpgrad.compile`` records) with one Value per number of a sample: a sample that is
a number is a Value, one that is a list a Vector. An unbatched number stays a number (a float in a
list or a tuple too), so its operations take the table's number rows, as eager code given it
does; it fixes the recording, keyed by its bits (another number records anew, as compile's
numbers do), as does any other unbatched object (an int or a string by its value, a model object
by its identity) and each batched argument's sample shape. An unbatched Value, Vector or list of Values is passed
as it is too, its numbers read at every call. Values the function reads without being given them
(a model's weights it closes over) are read again at every call as well: the same Value objects,
whose numbers an optimizer changes. The function's world (what it reaches from its globals,
closures and defaults, and what the unbatched objects hold) is watched as ``vjpgrad.compile``
watches it, through the same ``record.world_watched`` and guard: a call whose world differs from
the recording's (a global rebound, ``settings.scale`` set, a parameter replaced by a new Value)
records anew (``_Program.fits``), and a recorded run that draws random numbers or changes that
world is refused. A transform's differentiated argument is data, as the transform makes it:
Values whose numbers each call gives.

``vmap(grad(f))``, ``vmap(value_and_grad(f))``, ``vmap(jacobian(f))`` and ``vmap(vjp_fn)`` (the
function ``vjp`` returns) read what the transform was made from and write the reverse pass of
``f`` as array code next to its forward, seeded as the transform seeds it: each sample's numbers
are those the transform gives for that sample alone.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import fractions
import functools
import itertools
import numbers
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from vjpgrad.batched import arrays, workspace
from vjpgrad.batched.write import ArrayWriter, Graph
from vjpgrad.compiler import guard, lines, record, world
from vjpgrad.core import backward, graph
from vjpgrad.core.modes import (
    DataDependentError,
    caller_location,
    enable_grad,
    is_own_code,
    refuse_number,
    refusing_numbers,
    state,
    warn_at_users_line,
)
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector
from vjpgrad.recording import RecompileWarning, Recording, recorded_graph, same_graph
from vjpgrad.transforms import functional as transforms_functional
from vjpgrad.transforms.functional import Transformed, checked_positions

CHUNK_BUDGET = 1 << 25
"""Bytes of intermediate arrays one chunk may hold (32 MiB): a batch whose forward and reverse
values would need more runs in chunks of samples (and small chunks stay in the caches)."""

PROGRAMS_KEPT = 8
"""Recordings one vmapped function keeps (the least recently used is dropped first): each keeps its
arrays, tens of MB for a large batch. Past them, a number recorded anew at every call is said once
(``RecompileWarning``), as compile says it."""

CHANGING = (
    "{name} has recorded {count} times: an unbatched number (in_dims None) is part of the recording, and so is "
    "a number the function reads from its world (a global, an object's attribute), so one that changes at every "
    "call (a learning rate, a weight that decays) is recorded anew each time; pass it as "
    "Value(k, requires_grad=False), whose number is read at each call, to record once"
)
"""What the warning says when a vmapped function records past ``PROGRAMS_KEPT``."""
FILLING = (
    "{name} has recorded {count} times: each recording filled a functools.cached_property that was empty "
    "again at the next call, which a recording's array code would not fill, so none is kept; compute that "
    "value inside the function, or keep it in a plain attribute set outside it, to record once"
)
"""The same warning where the last recording filled a ``functools.cached_property`` (none is kept)."""

_PASSES: frozenset[CodeType] = frozenset({backward.differentiable_reverse_pass.__code__})


class _Recording(Recording):
    """A ``Recording`` that refuses operations made by a reverse pass inside the function: such a
    pass decides its masks (relu's, max's ties) by the numbers of the one sample recorded, which
    array code cannot replay. ``vmap(grad(f))`` writes the pass as array code instead."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes = _Refusing(self)


GRADIENT_INSIDE = (
    "is a reverse or forward pass (grad, jvp, jacobian, vjp, a vjp_fn, gradients()) that vmap's array code "
    "does not run: transform the function from outside instead, vmap(grad(f)), vmap(jacobian(f)), or "
    "vmap(vjp_fn) for a vjp_fn made outside"
)
"""What vmap says of a transform (``grad``, ``jvp``, ``gradients``...) run inside the function it
records, after where (``_gradient_inside``)."""


def _gradient_inside(at: str) -> DataDependentError:
    """The refusal of a gradient taken inside the function vmap records, at the user's line ``at``."""
    return DataDependentError(f"a gradient taken inside a function vjpgrad.vmap records (at {at}) {GRADIENT_INSIDE}")


_TRANSFORMS = transforms_functional.__file__
"""The transforms' file: a refusal raised under one of its functions is a gradient taken inside."""


def _said_as_inside_a_transform(error: BaseException) -> BaseException:
    """A refusal raised inside a transform's code (``grad(g)(x)`` reads its results' numbers) as the
    transform inside the recorded function it is, where it named the ``.data`` that code read."""
    if not isinstance(error, DataDependentError):
        return error
    frames, users = error.__traceback__, "<unknown>"
    while frames is not None:
        if frames.tb_frame.f_code.co_filename == _TRANSFORMS:
            return _gradient_inside(users)
        if not is_own_code(frames.tb_frame):  # the user's line that called the transform, the last before it
            users = f"{frames.tb_frame.f_code.co_filename}:{frames.tb_lineno}"
        frames = frames.tb_next
    return error


class _Refusing(list):  # type: ignore[type-arg]  # the Recording's list of nodes: graph.Node
    def __init__(self, recording: _Recording) -> None:
        super().__init__()
        self.recording = recording

    def append(self, node: Any) -> None:
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code in _PASSES:
                error = _gradient_inside(caller_location())
                self.recording.fail(error)
                raise error
            frame = frame.f_back  # type: ignore[assignment]  # None ends the loop
        super().append(node)


def _exact(x: Any) -> Any:
    """A key part for an unbatched argument, which fixes the recording: its class (a list's
    subclass, a Counter, a named tuple's class: the class object, not its name) and its value (a
    float's or a NumPy number's bits, another number's repr, where -0 and a nan's payload show, a
    list's, tuple's, dict's or NumPy array's items, a defaultdict's factory), or for another object
    its identity. Two calls reuse a recording only if what the function was given is the same."""
    if isinstance(x, float):
        return (type(x), struct.pack("<d", x))
    if isinstance(x, (list, tuple)):
        return (type(x), tuple(_exact(item) for item in x))
    if isinstance(x, dict):  # its class too (a Counter, an OrderedDict), and a defaultdict's factory
        return (
            type(x),
            _exact(getattr(x, "default_factory", None)),
            tuple((_exact(k), _exact(v)) for k, v in x.items()),
        )
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray) and x.dtype.kind != "O":
        return ("ndarray", x.dtype.str, x.shape, x.tobytes())
    if np is not None and isinstance(x, np.generic) and x.dtype.kind != "O":  # a NumPy number: its bits
        return ("numpy", x.dtype.str, x.tobytes())
    if isinstance(x, numbers.Number) and not isinstance(x, (int, fractions.Fraction)):
        return (type(x), repr(x))  # a Decimal, a complex...: -0 and nan payloads are in its repr
    try:
        hash(x)
    except TypeError:
        return ("id", id(x))
    return (type(x), x)


def _is_number(x: object) -> bool:
    return type(x) is float or (isinstance(x, numbers.Real) and not isinstance(x, bool))


@dataclass
class _Argument:
    """One positional argument of a call, as the recording sees it."""

    # "batched"; "data": an unbatched number or list a transform differentiates; "values": an
    # unbatched Value, Vector or list of Values, whose numbers are read at each call; "static"
    kind: str
    value: Any  # the array (batched, samples along axis 0), the floats (data), the object as given
    width: int | None  # numbers per sample: None for a number, k for a list of k

    def key(self, differentiated: bool) -> tuple[Any, ...]:
        if self.kind == "static":
            return ("static", _exact(self.value))
        return (self.kind, self.width, differentiated)

    def lift(self, differentiated: bool) -> Any:
        """This argument as the recorded function sees it: a Value, a Vector or the object itself
        (an unbatched argument, Values included, is passed as it is)."""
        if self.kind in ("static", "values"):
            return self.value
        if self.kind == "batched":
            sample = self.value[0]
            numbers_ = [float(sample)] if self.width is None else [float(v) for v in sample]
        else:
            numbers_ = [float(self.value)] if self.width is None else [float(v) for v in self.value]
        values = [Value(v, requires_grad=differentiated) for v in numbers_]
        return values[0] if self.width is None else Vector(values)

    def stand_in(self) -> _Argument:
        """A batched argument of no samples as one sample of zeros: what an empty batch is
        recorded and run on, its results then cut to none."""
        np = arrays.numpy()
        return _Argument("batched", np.zeros((1, *self.value.shape[1:])), self.width)

    def columns(self, lo: int, hi: int) -> list[Any]:
        """The arrays (or numbers) that stand for its Values in the code, samples lo to hi: each
        number of a sample one contiguous array (``by_number``), an unbatched number a float, an
        unbatched Value's number as it is now."""
        if self.kind == "batched":
            return [column[lo:hi] for column in self.by_number]
        if self.kind == "values":
            return [graph.number(v) for v in ([self.value] if self.width is None else self.value)]
        return [self.value] if self.width is None else list(self.value)

    @property
    def by_number(self) -> list[Any]:
        """A batched argument as one contiguous array per number of its samples (made once)."""
        found: list[Any] | None = vars(self).get("_by_number")
        if found is None:
            np = arrays.numpy()
            if self.width is None:
                found = [np.ascontiguousarray(self.value)]
            else:
                found = list(np.ascontiguousarray(self.value.T))
            vars(self)["_by_number"] = found
        return found


@dataclass
class _Layout:
    """How a result of the function is made of the code's outputs: ``("one", item)`` a number,
    ``("list", [items])`` a list, ``("tuple", [layouts])``; an item is ``("value", index into the
    outputs)`` or ``("number", float)``."""

    form: str
    items: list[Any]


_MATRIX_REFUSED = (
    "{what}: the function returns a tuple or list holding Vectors or lists (rows of a matrix), whose jacobian "
    "vmap does not stack: return its numbers as one Vector (Vector([v for row in rows for v in row])) and "
    "reshape the result"
)
"""A transform's function that returns a matrix, inside vmap: refused, saying how to flatten it."""


def _layout(result: Any, outputs: list[Value], what: str, tuples: bool = True) -> _Layout:
    """How ``result`` is made of Values (appended to ``outputs``) and numbers. A tuple is a tuple
    of results, each stacked on its own, as torch.func.vmap returns them (``tuples``); for a
    transform's function a tuple of numbers is a list, as the transforms read it."""

    def item(x: Any) -> tuple[str, Any]:
        if isinstance(x, Value):
            outputs.append(x)
            return ("value", len(outputs) - 1)
        if _is_number(x):
            return ("number", float(x))
        if isinstance(x, (Vector, list, tuple)) and tuples:
            raise TypeError(
                f"{what}: the function returns a list of {type(x).__name__}s (a matrix), which vmap does not "
                "stack: give each row a place of its own in the tuple it returns (tuple(rows)), each stacked on its own"
            )
        if isinstance(x, (Vector, list, tuple)):
            raise TypeError(_MATRIX_REFUSED.format(what=what))
        raise TypeError(
            f"{what}: the function must return numbers, Values, Vectors or lists or tuples of them, "
            f"got {type(x).__name__}"
        )

    if isinstance(result, (Value, numbers.Real)) and not isinstance(result, bool):
        return _Layout("one", [item(result)])
    if isinstance(result, (Vector, list)):
        return _Layout("list", [item(x) for x in result])
    if isinstance(result, tuple):
        if not tuples and all(isinstance(x, (Value, numbers.Real)) for x in result):
            return _Layout("list", [item(x) for x in result])
        if not tuples:  # rows, as the transforms read a tuple of Vectors
            raise TypeError(_MATRIX_REFUSED.format(what=what))
        return _Layout("tuple", [_layout(x, outputs, what, tuples) for x in result])
    return _Layout("one", [item(result)])  # raises, naming the type


@dataclass
class _Program:
    """The array code of one recording and what calling it needs."""

    source: str
    forward: Callable[..., tuple[Any, ...]]
    backward: Callable[..., Any] | None  # returns the gradients as the rows of one array
    arguments: list[_Argument]  # the call's arguments at recording time (their kinds)
    leaves: list[int]  # for each argument, how many inputs it gives (0 for a static one)
    outside: list[graph.Node]  # Values read from outside: their numbers are read at every call
    names: dict[int, int]  # id(Value) -> index among forward's values (live) or -1 - input index
    outputs: list[Value]
    layout: _Layout
    wrt: list[tuple[int, int | None]]  # for each differentiated argument: its position and width
    nodes: int
    workspaces: workspace.Workspaces  # the arrays of its latest calls, written into by the next (workspace.py)
    guard: Callable[..., bool]  # the function's world as recorded (compiler/guard.py): false, record anew
    numbers_by_identity: bool  # the guard also compares which numbers given are one object
    picked: list[int] | None = None  # the leaves that are inputs, where a Value was given twice (first places)
    same_as: list[tuple[int, graph.Node]] = field(default_factory=list)  # a given Value read from outside too
    world_value_ids: frozenset[int] = frozenset()  # the Values of its world not given: one given now is told apart
    attribute_names: frozenset[str] | None = frozenset()  # what the code may read of a Value (None: anything)
    asks_attributes: bool = False  # what the Values given carry is checked at each call (as compile's Replay)
    argument_attributes: record.AttributesKey = None  # what they carried at recording
    recorded: list[Any] = field(default_factory=list)  # the arguments the function was recorded on, as it got them
    vjp_numbers: list[float] | None = None  # a vjp function's: the outside Values' numbers when it is vjp's graph
    kept: bool = True  # False where its recording filled a functools.cached_property: run once, not kept

    def fits(self, function: Callable[..., Any], given: _Given) -> bool:
        """Whether the function's world is still the one recorded (the one place that decides
        it, as ``compiler.run.Replay.stale_for`` does for compile): its globals, closures,
        defaults and what the unbatched objects hold, compared with the facts the recording
        found, and which Values given unbatched it read from outside too (``same_as``). The
        arguments' kinds and numbers are the program's key, compared before."""
        if any(given.values[k] is not x for k, x in self.same_as):
            return False
        if self.world_value_ids and not self.world_value_ids.isdisjoint(map(id, given.values)):
            return False  # a Value of its world given now: the recording kept them apart (``w is W``)
        if self.asks_attributes and (
            record.argument_attributes(given.values, self.attribute_names) != self.argument_attributes
        ):
            return False  # what the Values given carry (a label, ``is_leaf``): structure, as for compile
        if self.numbers_by_identity:
            return self.guard(function, *given.objects, _numbers=[x for _, x in given.numbers])
        return self.guard(function, *given.objects)


@dataclass
class _Given:
    """What of a call's arguments roots the function's world, as the guard reads it: the
    unbatched objects (a model, a settings object, a list: what is not a number, a string or a
    Value the call reads anyway), and the unbatched numbers, named (``record.number_arguments``),
    whose identities the guard compares where the function uses ``is``."""

    objects: list[Any]
    numbers: list[tuple[str, Any]]
    values: list[Value]  # the Values given unbatched, in order (``_given_values``)

    @classmethod
    def of(cls, read: list[_Argument], kwargs: dict[str, Any]) -> _Given:
        static = [a.value for a in read if a.kind == "static"]
        objects = [x for x in [*static, *kwargs.values()] if not world.is_scalar(x)]
        shown = tuple(a.value if a.kind == "static" else _SAMPLE for a in read)  # a sample's Values: no number
        return cls(objects, record.number_arguments(shown, kwargs), _given_values(read))


def _given_values(read: list[_Argument]) -> list[Value]:
    """The Values the call was given unbatched (``values`` arguments), in order: the function
    reads them as they are, so which of them are one object is structure."""
    found: list[Value] = []
    for a in read:
        if a.kind == "values":
            found.extend([a.value] if a.width is None else a.value)
    return found


def _values_watched(given: list[Value], found: world.Snapshot) -> dict[str, Any]:
    """What a program checks at each call of the Values given unbatched beyond their numbers, as
    compile's ``Replay`` checks the Values passed: that none is a Value of the function's world
    not given at recording (``w is W``; a Value given that it also found there is held to be that
    one, in ``same_as``), and, where the code may read them, what they carry (a label, an
    attribute of the user's, ``is_leaf``: ``record.argument_attributes``)."""
    passed = {id(v) for v in given}
    attributes = record.argument_attributes(given, found.attribute_names)
    return {
        "world_value_ids": frozenset(k for k in found.values if k not in passed),
        "attribute_names": found.attribute_names,
        "asks_attributes": attributes is not None or found.asks_attributes or any(type(v) is not Value for v in given),
        "argument_attributes": attributes,
    }


def _wired(
    leaves: list[Value], outside: list[graph.Node], given: list[Value], reads_graphs: bool = False
) -> tuple[list[int], list[tuple[int, graph.Node]], list[graph.Node]]:
    """How the Values a recording read become its code's inputs: the places among ``leaves`` of
    those that are inputs (a Value given twice is one, at its first place); the Values given
    unbatched that it read only from outside, not as a leaf of the arguments, by their place
    among ``given``, which the program holds to being those objects (``_Program.fits``); and the
    Values read from outside alone, whose numbers are read at every call. A Value given unbatched
    that is a leaf of the arguments is an input: its number is read from the argument at each
    call, whatever object it is (a ``Value(lr, requires_grad=False)`` made anew at each call),
    unless the code may read a Value's graph (``reads_graphs``: ``u.parents``, ``_prev``): then it
    may have reached that Value another way too (``u.parents[0] is b``), which the world does not
    follow, and the program holds it to being that object."""
    place: dict[int, int] = {}
    for k, x in enumerate(leaves):
        place.setdefault(id(x), k)
    first_given: dict[int, int] = {}
    for k, x in enumerate(given):
        first_given.setdefault(id(x), k)
    same_as = [
        (first_given[id(x)], x) for x in outside if id(x) in first_given and (reads_graphs or id(x) not in place)
    ]
    return sorted(place.values()), same_as, [x for x in outside if id(x) not in place]


def _reads_graphs(found: world.Snapshot, given: list[Value]) -> bool:
    """Whether the code may read a Value's graph (it names ``parents``, ``_prev``..., or computes the
    names it reads) and a Value given unbatched is an operation's result, through which alone a
    graph read reaches another Value given."""
    names = found.attribute_names  # None: the code computes the names it reads
    return (names is None or not names.isdisjoint(world.GRAPH_NAMES)) and any(not v.is_leaf for v in given)


def _one_objects(values: list[Value]) -> tuple[int, ...] | None:
    """Where among ``values`` each one first appears, where one appears twice (``[w, w]``); None
    where they are all other objects (the common case, told in one pass)."""
    if len(set(map(id, values))) == len(values):
        return None
    first: dict[int, int] = {}
    return tuple(first.setdefault(id(v), k) for k, v in enumerate(values))


_SAMPLE = object()
"""What stands for an argument the call makes Values of, among the numbers given: not a number."""


_programs_written = itertools.count(1)


def _compile_source(source: str, name: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """The functions of ``source``, compiled under a file name of their own (``#N``: two programs of
    functions named alike do not share their lines in tracebacks), its text shown for as long as
    they live (``compiler.lines``)."""
    filename = f"<vjpgrad.vmap {name} #{next(_programs_written)}>"
    lines.show(filename, source)
    scope = dict(namespace)
    exec(builtins.compile(source, filename, "exec"), scope)  # code written from the graph, no user text
    for value in list(scope.values()):
        if getattr(getattr(value, "__code__", None), "co_filename", None) == filename:
            lines.forget_with(value)
    return scope


def _record(
    function: Callable[..., Any], lifted: list[Any], kwargs: dict[str, Any], what: str, roots: _Given
) -> tuple[Recording, Any, world.Snapshot]:
    """Run ``function`` on one sample's arguments, recording what it makes, its world watched
    (from ``roots``: what it was given unbatched); a ``TypeError`` it raises with a NumPy array
    among its unbatched arguments says that they are not batched."""
    try:
        return _record_call(function, lifted, kwargs, roots)
    except TypeError as error:
        keywords = [f"keyword argument {name}" for name, v in kwargs.items() if _is_array(v)]
        unbatched = [k for k, v in enumerate(lifted) if _is_array(v)]
        given = keywords + [f"argument {k} (in_dims None)" for k in unbatched]
        if not given:
            raise
        ways = ["pass a batch positionally: vmap(f)(xs, ys)"] if keywords else []
        if unbatched:
            ways.append(f"give argument {unbatched[0]} an in_dims of 0 to batch it")
        raise TypeError(
            f"{what}: {getattr(function, '__name__', 'the function')} raised TypeError ({error}) given its "
            f"{', '.join(given)}, a NumPy array, as it is: vmap batches positional arguments only, by their in_dims, "
            f"and passes keyword arguments as they are, as torch.func.vmap does; {', or '.join(ways)}"
        ) from error


def _is_array(x: object) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def _record_call(
    function: Callable[..., Any], lifted: list[Any], kwargs: dict[str, Any], given: _Given
) -> tuple[Recording, Any, world.Snapshot]:
    """The recording, the result and the function's world as it was found: watched as
    ``vjpgrad.compile`` watches it (``record.world_watched``), so a call whose world differs
    records anew, and a run that draws random numbers or changes its world is refused."""
    recording = _Recording()
    name = getattr(function, "__name__", "the function")
    message = f"{name} is being recorded by vjpgrad.vmap"
    advice = (
        "array code cannot follow Python that depends on one sample's number: use a vjpgrad operation "
        "instead (max, relu, nn.functional...), or call the function per sample"
    )
    watched = record.world_watched(
        function, given.objects, tuple(lifted), kwargs, recorder="vjpgrad.vmap", numbers=given.numbers
    )
    with watched as found:
        outer = state.recording  # a compiled function's, where it is called inside one: its own again after
        state.recording = recording
        try:
            try:
                with refusing_numbers(message, advice=advice):
                    result = function(*lifted, **kwargs)
            except BaseException:
                if recording.failure is not None:
                    raise _said_as_inside_a_transform(recording.failure) from None
                raise
        finally:
            state.recording = outer
        if recording.failure is not None:
            raise _said_as_inside_a_transform(recording.failure)
        if recording.caught is not None:  # an error raised for a number, which its `except` caught
            raise recording.caught
    return recording, result, found


def _refuse_values_read(count: int) -> None:
    """A vmap that reads ``count`` Values (given unbatched, as a vjp function's primals, or found in
    its function's world) where they count (``_inside``): inside a function that compile or vmap
    records, which would keep this call's numbers, or inside a transform, whose gradient would not
    flow through them. Refused where it reads any; a vmap of constants (arrays, numbers) runs."""
    if not count:
        return
    what = (
        f"a vmap called inside the function reads {count} Value{'s' if count != 1 else ''} (given unbatched, "
        "a vjp function's primals, or found in the world of the function it vectorises)"
    )
    if state.recording is not None:
        refuse_number(
            what,
            "its array code runs outside the recorded graph, so the recording would keep this call's numbers and "
            "no gradient would flow through them: call the vmapped function outside, or write this part with "
            "Values",
        )
    raise DataDependentError(
        f"{what} that take gradient, inside grad, jvp, jacobian or vjp: its array code runs on their numbers, "
        "outside the graph, so no gradient would flow through them; call the vmapped function outside the "
        "transform, or pass numbers (or Values that take no gradient) if they are constants"
    )


def _values_in(x: Any, variables: frozenset[int] | None = None) -> int:
    """How many Values ``x`` holds (with ``variables``, those computed from them): itself, or in
    lists, tuples, dicts and Vectors at any depth."""
    if isinstance(x, graph.Node):
        return int(variables is None or _computed_from(x, variables))
    if isinstance(x, dict):
        return sum(_values_in(y, variables) for y in [*x, *x.values()])
    if isinstance(x, (list, tuple, Vector)):
        return sum(_values_in(y, variables) for y in x)
    return 0


def _computed_from(value: graph.Node, variables: frozenset[int]) -> bool:
    """Whether ``value`` is one of ``variables`` (ids) or is computed from one, through its graph."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if id(node) in variables:
            return True
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(x for x in graph.operands(node) if isinstance(x, graph.Node))
    return False


def _inside() -> tuple[bool, frozenset[int] | None]:
    """Whether a vmap runs where a Value it reads would lose what depends on it, and which Values
    count: inside another function's recording, every Value (None); inside a transform alone (grad
    mode on), those computed from its variables (their ids), a parameter it does not differentiate
    being a constant to it, as to eager code."""
    if state.recording is not None:
        return True, None
    if state.transform_depth > 0 and state.grad_enabled:
        return True, transforms_functional.differentiated_now()
    return False, None


def _given_inside(
    transformed: Transformed | None, given: list[Any], dims: Sequence[int | None], kwargs: dict[str, Any]
) -> int:
    """How many Values a vmap running inside a recording or a transform (``_inside``) is given:
    unbatched, as keyword arguments, or as the primals of a vjp function made in there (one made
    before holds its primals' numbers as vjp read them). 0 outside both."""
    inside, variables = _inside()
    if not inside:
        return 0
    unbatched = [arg for arg, dim in zip(given, dims, strict=True) if dim is None]
    primals: tuple[Any, ...] = ()
    if transformed is not None and transformed.kind == "vjp" and _made_here(transformed):
        primals = transformed.primals
    return sum(_values_in(x, variables) for x in [*unbatched, *kwargs.values(), *primals])


def _read_inside(outside: list[graph.Node]) -> int:
    """How many of the Values a vmap's program reads from its function's world count inside a
    recording or a transform (``_inside``); 0 outside both."""
    inside, variables = _inside()
    return sum(_values_in(x, variables) for x in outside) if inside else 0


def _made_here(transformed: Transformed) -> bool:
    """Whether a vjp function was made inside the recording running now (compile's, vmap's); inside
    a transform, its primals count where they are computed from its variables (``_inside``). One
    made before holds its primals' numbers as vjp read them."""
    return state.recording is None or transformed.made_in is state.recording


class Vmapped:
    """``f`` vectorised by ``vjpgrad.vmap``: call it with batched arrays; ``.source`` shows the
    array code of its latest recording."""

    def __init__(
        self,
        f: Callable[..., Any],
        in_dims: int | Sequence[int | None] | None,
        out_dims: int | Sequence[int],
        fast: bool,
        chunk_size: int | None,
    ) -> None:
        if not callable(f):
            raise TypeError(f"vmap takes a function, got {type(f).__name__}")
        if not isinstance(fast, bool):
            raise TypeError(f"vmap fast must be a bool, got {type(fast).__name__}")
        if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int)):
            raise TypeError(f"vmap chunk_size must be an int or None, got {type(chunk_size).__name__}")
        if chunk_size is not None and chunk_size < 1:
            raise ValueError(f"vmap chunk_size must be at least 1, got {chunk_size}")
        _check_dims(in_dims, "in_dims", allow_none=True)
        _check_dims(out_dims, "out_dims", allow_none=False)
        self.function = f
        self.in_dims = in_dims
        self.out_dims = out_dims
        self.fast = fast
        self.chunk_size = chunk_size
        self.transformed: Transformed | None = getattr(f, "transformed", None)
        if self.transformed is not None and self.transformed.kind not in ("grad", "value_and_grad", "jacobian", "vjp"):
            raise TypeError(f"vmap composes with grad, value_and_grad, jacobian and vjp; not {self.transformed.kind}")
        if self.transformed is not None and getattr(self.transformed.function, "transformed", None) is not None:
            raise TypeError(
                "vmap writes array code for one transform of a function (vmap(grad(f))); "
                f"a transform of a transform ({getattr(f, '__name__', 'f')}) is not supported"
            )
        self._programs: collections.OrderedDict[tuple[Any, ...], _Program] = collections.OrderedDict()
        self._latest: _Program | None = None
        self._recordings = 0  # made in all: past PROGRAMS_KEPT, said once
        self.__name__ = f"vmap({getattr(f, '__name__', 'f')})"

    @property
    def source(self) -> str:
        """The array code of the latest call's recording: ``forward`` and, for a transform, ``backward``."""
        if self._latest is None:
            raise RuntimeError(f"{self.__name__} has not been called yet: its code is written at its first call")
        return self._latest.source

    def __repr__(self) -> str:
        return f"<{self.__name__}{' fast' if self.fast else ''}>"

    # ---- a call ------------------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        np = arrays.numpy()
        transformed = self.transformed
        given = list(args)
        if transformed is not None and transformed.kind == "vjp" and (len(args) != 1 or kwargs):
            raise TypeError("a vjp function takes one cotangent: vmap(vjp_fn)(cotangents)")
        dims = self._dims(len(args))
        batch: int | None = None
        read: list[_Argument] = []
        for position, (arg, dim) in enumerate(zip(given, dims, strict=True)):
            argument = self._read(arg, dim, position)
            if argument.kind == "batched":
                size = argument.value.shape[0]
                if batch is not None and size != batch:
                    raise ValueError(
                        f"vmap: the batched arguments have different sizes along their batch axis: {batch} and {size} "
                        f"(argument {position})"
                    )
                batch = size
            read.append(argument)
        if batch is None:
            keywords = " (keyword arguments are never batched, as in torch.func.vmap: pass it by position)"
            raise ValueError(
                "vmap: at least one argument must be batched (in_dims not None), with a batch axis"
                + (keywords if kwargs else "")
            )
        if transformed is not None and state.detect_anomaly:
            self._passes_as_eager_code(read, kwargs, batch)
        _refuse_values_read(_given_inside(transformed, given, dims, kwargs))
        if transformed is not None and transformed.kind == "vjp":
            return self._call_vjp(read[0], batch)
        if not batch:  # as torch.func.vmap: results with no samples, of the shapes one sample gives
            read = [a.stand_in() if a.kind == "batched" else a for a in read]
        program = self._program(read, kwargs)
        _refuse_values_read(_read_inside(program.outside))
        with arrays.arithmetic(np):
            columns = self._run(program, read, max(batch, 1))
        return self._shape(program, columns[:, :batch], batch)

    def _passes_as_eager_code(self, read: list[_Argument], kwargs: dict[str, Any], batch: int) -> None:
        """Under ``detect_anomaly()``: each sample's pass run as eager code too, before the array code,
        which would hand a nan on where eager code raises ``FloatingPointError`` naming the operation
        and the line (SPEC 6); the error then names the sample. Slow, as anomaly mode is."""
        for k in range(batch):
            sample = [a.value[k].tolist() if a.kind == "batched" else a.value for a in read]
            try:
                self.function(*sample, **kwargs)
            except FloatingPointError as error:
                raise FloatingPointError(f"vmap, at sample {k} of {batch}: {error}") from None

    def _dims(self, count: int) -> list[int | None]:
        if isinstance(self.in_dims, (int, type(None))):
            return [self.in_dims] * count
        dims = list(self.in_dims)
        if len(dims) != count:
            raise ValueError(f"vmap: in_dims has {len(dims)} entries, but the function was given {count} arguments")
        return dims

    def _read(self, arg: Any, dim: int | None, position: int) -> _Argument:
        """One positional argument: unbatched (``dim`` None), passed to the function as it is, as
        torch.func.vmap passes it (a float stays a float); batched, an array of real numbers with
        its samples along axis 0."""
        if dim is None:
            if isinstance(arg, Value):
                return _Argument("values", arg, None)
            if isinstance(arg, (Vector, list, tuple)) and len(arg) and all(isinstance(v, Value) for v in arg):
                return _Argument("values", arg, len(arg))
            return _Argument("static", arg, None)
        if _is_tuple_of_arrays(arg):
            raise TypeError(_tuple_refused(type(arg).__name__, len(arg), position, self.transformed))
        array = _real_array(arg, position)
        if array.ndim == 0:
            raise ValueError(f"vmap: batched argument {position} has no axis {dim} to map over (it is a number)")
        if not -array.ndim <= dim < array.ndim:
            raise ValueError(f"vmap: in_dims {dim} is out of range for argument {position} of {array.ndim} axes")
        if dim % array.ndim:  # the samples along another axis than the first
            array = arrays.numpy().moveaxis(array, dim, 0)
        if array.ndim > 2:
            raise ValueError(
                f"vmap: each sample of argument {position} must be a number or a list of numbers; "
                f"its samples have shape {array.shape[1:]}"
            )
        return _Argument("batched", array, None if array.ndim == 1 else array.shape[1])

    def _program(self, read: list[_Argument], kwargs: dict[str, Any]) -> _Program:
        transformed = self.transformed
        function = self.function if transformed is None else transformed.function
        positions = self._argnums(len(read))
        for k in positions:  # a differentiated int, or list with ints, is a variable, as the transforms take it
            read[k] = _differentiable(read[k], k)
        given = _Given.of(read, kwargs)
        key = (
            tuple(a.key(k in positions) for k, a in enumerate(read)),
            tuple(sorted((name, _exact(v)) for name, v in kwargs.items())),
            _one_objects(given.values),
            tuple(v.requires_grad for v in given.values),  # as compile's key has it: structure
        )
        return self._recorded(key, function, given, lambda: self._write(function, read, kwargs, positions, given))

    def _recorded(
        self, key: tuple[Any, ...], function: Callable[..., Any], given: _Given, write: Callable[[], _Program]
    ) -> _Program:
        """The program recorded for ``key`` whose world still fits (``_Program.fits``), else a new
        one (``write``): the ``PROGRAMS_KEPT`` latest are kept, the least recently used dropped
        first (each unbatched number has its own, so a number that changes at every call would
        otherwise keep them all). A program stays in the table while it is looked at: a thread
        calling meanwhile finds it too (one taken out and put back was recorded anew by another
        thread in between)."""
        programs = self._programs
        program = programs.get(key)
        if program is not None and not program.fits(function, given):
            program = None  # its world changed (a global, an attribute): recorded anew, as compile does
        if program is None:
            program = write()
            self._recordings += 1
            oldest = next(iter(programs), None) if len(programs) >= PROGRAMS_KEPT and key not in programs else None
            if oldest is not None:
                programs.pop(oldest, None)  # another thread may have dropped it already
            if self._recordings == PROGRAMS_KEPT + 1:
                changing = FILLING if not program.kept else CHANGING
                warn_at_users_line(changing.format(name=self.__name__, count=self._recordings), RecompileWarning)
            if program.kept:
                programs[key] = program
        with contextlib.suppress(KeyError):  # another thread may have dropped it meanwhile
            programs.move_to_end(key)  # the latest used last, in one step
        self._latest = program
        return program

    def _argnums(self, count: int) -> list[int]:
        transformed = self.transformed
        if transformed is None:
            return []
        return checked_positions(transformed.argnums, count)  # as the transform checks them, eagerly

    def _write(
        self,
        function: Callable[..., Any],
        read: list[_Argument],
        kwargs: dict[str, Any],
        positions: list[int],
        given: _Given,
    ) -> _Program:
        transformed = self.transformed
        lifted = [a.lift(k in positions) for k, a in enumerate(read)]
        # a transform differentiates whatever the grad mode, as eager grad does (torch.func's too): its
        # function is recorded with the graph on, also when the first call comes inside no_grad()
        with enable_grad() if transformed is not None else contextlib.nullcontext():
            recording, result, world_found = _record(function, lifted, kwargs, self.__name__, given)
        outputs: list[Value] = []
        layout = _layout(result, outputs, self.__name__, tuples=transformed is None)
        if transformed is not None and transformed.kind in ("grad", "value_and_grad") and layout.form != "one":
            raise TypeError(
                f"grad requires a function with a scalar output, but it returned {len(layout.items)} values: "
                "use jacobian(f) for the full Jacobian, or vjp(f, ...) for a vector-Jacobian product"
            )
        leaves: list[Value] = []
        counts = []
        for argument, x in zip(read, lifted, strict=True):
            found = [] if argument.kind == "static" else [x] if isinstance(x, Value) else list(x)
            leaves.extend(found)
            counts.append(len(found))
        live, edges, outside = recorded_graph(recording, outputs)
        picked, same_as, from_outside = _wired(leaves, outside, given.values, _reads_graphs(world_found, given.values))
        record.check_found(function, from_outside, world_found, recorder="vjpgrad.vmap")  # read anew at each call
        held = {k for k, _ in same_as}  # a Value given that the function also found in its world: that one
        same_as += [(k, v) for k, v in enumerate(given.values) if id(v) in world_found.values and k not in held]
        inputs = [*(leaves[k] for k in picked), *from_outside]
        wrt = [v for k in positions for v in ([lifted[k]] if isinstance(lifted[k], Value) else list(lifted[k]))]
        writer = ArrayWriter(Graph(live, edges, inputs, outputs, wrt), len(picked))
        source = writer.source(reverse=transformed is not None)
        name = getattr(function, "__name__", "f")
        namespace = arrays.namespace(self.fast)
        namespace.update(arrays.custom_helpers(arrays.numpy(), writer.custom))
        scope = _compile_source(source, name, namespace)
        namespace.update(workspace.helpers(arrays.numpy(), namespace))
        workspaces = workspace.Workspaces(
            source, lambda text: _compile_source(text, f"{name}, in a workspace", namespace)
        )
        names = dict(writer.value_index)
        names.update((id(x), -1 - k) for k, x in enumerate(inputs))
        return _Program(
            source=source,
            forward=scope["forward"],
            backward=scope.get("backward"),
            arguments=read,
            leaves=counts,
            outside=from_outside,
            names=names,
            outputs=outputs,
            layout=layout,
            wrt=[(k, read[k].width) for k in positions],
            nodes=len(live),
            workspaces=workspaces,
            guard=guard.loaded(world_found)[0],
            numbers_by_identity=bool(world_found.numbers),
            picked=None if len(picked) == len(leaves) else picked,
            same_as=same_as,
            **_values_watched(given.values, world_found),
            recorded=lifted,
            kept=not world_found.filled,
        )

    def _chunks(self, program: _Program, batch: int) -> list[tuple[int, int]]:
        size = self.chunk_size
        if size is None:
            size = max(256, CHUNK_BUDGET // (8 * max(1, 2 * program.nodes)))
        return [(lo, min(batch, lo + size)) for lo in range(0, batch, size)]

    def _run(self, program: _Program, read: list[_Argument], batch: int) -> Any:
        """The results as rows of ``batch`` numbers (one array), chunk by chunk."""
        np = arrays.numpy()
        columns: Any = None
        chunks = self._chunks(program, batch)
        for lo, hi in chunks:
            parts, whole = self._run_chunk(program, read, lo, hi, len(chunks) == 1)
            if whole is not None:
                return whole
            if columns is None or columns.shape != (len(parts), batch):
                columns = np.empty((len(parts), batch))
            for column, part in zip(columns, parts, strict=True):
                column[lo:hi] = part  # a number shared by the samples fills its row
        assert columns is not None  # the batch has at least one chunk
        return columns

    def _run_chunk(
        self, program: _Program, read: list[_Argument], lo: int, hi: int, alone: bool
    ) -> tuple[list[Any], Any]:
        """The results of the samples ``lo`` to ``hi``: the values asked for, then each reverse
        pass's gradients (a pass per output for a Jacobian), each a row or a number the samples
        share; and, for the batch's one chunk (``alone``), the whole as one array where it can be
        had without a copy row by row (else None)."""
        np = arrays.numpy()
        transformed = self.transformed
        with _code(program, hi - lo) as (forward, backward):
            inputs, values, outputs = self._forward(program, forward, read, lo, hi)
            parts: list[Any] = []
            if transformed is None or transformed.kind == "value_and_grad":
                parts += self._numbers(program.layout, outputs)
            found: list[Any] = []
            if transformed is not None:
                assert backward is not None  # a transform's program has its reverse pass
                passes = _bases(program.layout, transformed.kind == "jacobian")
                found = [backward(inputs, values, *seeds) for seeds in passes]  # arrays of rows
            # the values may be arrays of the workspace, which the next call (another thread's) writes into
            parts = [x.copy() if isinstance(x, np.ndarray) else x for x in parts]
        if transformed is not None:
            if alone and not parts and len(found) == 1 and found[0].shape[1] == hi - lo:
                return parts, found[0]  # grad's rows, as the reverse pass returned them
            for rows in found:
                parts += list(rows)
        if alone:
            try:
                whole = np.array(parts, dtype=np.float64)  # every part a column of the batch: in C
            except ValueError:  # columns and numbers together
                return parts, None
            if whole.shape == (len(parts), hi - lo):
                return parts, whole
        return parts, None

    def _forward(
        self, program: _Program, forward: Callable[..., Any], read: list[_Argument], lo: int, hi: int
    ) -> tuple[list[Any], Any, list[Any]]:
        """The forward pass (``forward``, the program's or its workspace's) on the samples ``lo``
        to ``hi``: its inputs (the arguments' columns, then the numbers from outside), the values
        it made, and the function's outputs."""
        inputs = [column for a in read if a.kind != "static" for column in a.columns(lo, hi)]
        if program.picked is not None:  # a Value given twice: one input
            inputs = [inputs[k] for k in program.picked]
        inputs += [graph.number(x) for x in program.outside]
        values = forward(*inputs)
        outputs = [values[k] if k >= 0 else inputs[-1 - k] for k in (program.names[id(y)] for y in program.outputs)]
        return inputs, values, outputs

    def _numbers(self, layout: _Layout, outputs: list[Any]) -> list[Any]:
        found: list[Any] = []
        for item in layout.items:
            if isinstance(item, _Layout):
                found += self._numbers(item, outputs)
            else:
                kind, x = item
                found.append(outputs[x] if kind == "value" else x)
        return found

    def _shape(self, program: _Program, columns: Any, batch: int) -> Any:
        np = arrays.numpy()
        transformed = self.transformed
        taker = _Taker(columns)
        take = taker.take
        value = taker.rebuilt(program.layout) if transformed is None or transformed.kind == "value_and_grad" else None
        if transformed is None:
            return self._out(value)
        argnums = transformed.argnums
        if transformed.kind in ("grad", "value_and_grad"):
            grads = [take(width) for _, width in program.wrt]
            shaped = grads[0] if isinstance(argnums, int) else tuple(grads)
            return self._out(shaped if transformed.kind == "grad" else (value, shaped))
        # jacobian: one reverse pass per output, each giving every argument's gradient
        rows = [[take(width) for _, width in program.wrt] for _ in _items(program.layout)]
        per_argument = []
        for k, (_, width) in enumerate(program.wrt):
            column = [row[k] for row in rows]
            if not column:  # no outputs: no rows, as eager jacobian's [] (torch.func's (batch, 0, ...))
                per_argument.append(np.zeros((batch, 0, *(() if width is None else (width,)))))
                continue
            per_argument.append(column[0] if program.layout.form == "one" else np.stack(column, axis=1))
        return self._out(per_argument[0] if isinstance(argnums, int) else tuple(per_argument))

    def _out(self, result: Any) -> Any:
        out_dims = self.out_dims
        if isinstance(out_dims, int):
            if out_dims == 0:
                return result
            return _map(result, lambda a: _moved(a, out_dims))
        if not isinstance(result, tuple) or len(result) != len(out_dims):
            raise ValueError("vmap: out_dims as a tuple needs one entry per item of the function's tuple result")
        return tuple(_map(a, functools.partial(_moved, dim=d)) for a, d in zip(result, out_dims, strict=True))

    def _call_vjp(self, cotangent: _Argument, batch: int) -> Any:
        """``vmap(vjp_fn)(cotangents)``: the primals fixed, one reverse pass per cotangent, of the
        graph ``vjp`` made. The array code is recorded from the function in the world of the call
        (the key: the primals' numbers; the guard: the world), and runs where its recording is the
        graph ``vjp`` made, number for number (``recording.same_graph``), and the Values it reads
        from outside still hold the numbers they held then; else ``vjp_fn`` runs once per
        cotangent, as eager code would (a weight, a primal list or a global changed since ``vjp``)."""
        np = arrays.numpy()
        transformed = self.transformed
        assert transformed is not None
        primals = transformed.primals
        read = [_differentiable(self._read(p, None, k), k) for k, p in enumerate(primals)]
        key = ("vjp", tuple(a.key(True) for a in read), tuple(_exact(a.value) for a in read))
        roots = _Given.of(read, {})

        def write() -> _Program:
            made = self._write(transformed.function, read, {}, list(range(len(read))), roots)
            return _as_vjp_made_it(made, transformed)

        program = self._recorded(key, transformed.function, roots, write)
        width = None if program.layout.form == "one" else len(program.layout.items)
        if cotangent.width != width:
            raise ValueError(
                f"vmap: each cotangent must have the shape of the function's output ({width or 'a number'}), "
                f"got {cotangent.width or 'a number'}"
            )
        _refuse_values_read(_read_inside(program.outside))
        now = [graph.number(x) for x in program.outside]
        if program.vjp_numbers is None or not _same_bits(now, program.vjp_numbers):
            return self._vjp_one_by_one(cotangent, batch)
        if not batch:  # no cotangents: the results of one, without it (as torch.func.vmap gives no rows)
            cotangent = cotangent.stand_in()
        size = max(batch, 1)
        with arrays.arithmetic(np), _code(program, size) as (forward, backward):
            inputs = [column for a in read for column in a.columns(0, 1)]
            inputs += [graph.number(x) for x in program.outside]
            values = forward(*inputs)
            given = cotangent.columns(0, size)  # one column per item of the output
            seeds = [given[k] for k, item in enumerate(_items(program.layout)) if item[0] == "value"]
            assert backward is not None  # a vjp's program has its reverse pass
            parts = backward(inputs, values, *seeds)
            columns = [np.broadcast_to(np.asarray(p, dtype=np.float64), (size,))[:batch].copy() for p in parts]
        return self._out(_per_argument(columns, program.wrt))

    def _vjp_one_by_one(self, cotangent: _Argument, batch: int) -> Any:
        """``vjp_fn`` called on each cotangent (a number, or a list of the output's numbers), its
        cotangents stacked as vmap returns them: one array per primal, a row per sample."""
        np = arrays.numpy()
        transformed = self.transformed
        assert transformed is not None
        assert transformed.graph is not None
        given = cotangent.value
        rows = [self.function(float(c) if cotangent.width is None else [float(v) for v in c]) for c in given]
        result = []
        for k, values in enumerate(transformed.graph[1]):
            width = None if not isinstance(transformed.primals[k], (list, tuple, Vector)) else len(values)
            shape = (batch,) if width is None else (batch, width)
            found = [_float(row[k]) if width is None else [_float(v) for v in row[k]] for row in rows]
            result.append(np.array(found, dtype=np.float64).reshape(shape))
        return self._out(tuple(result))


def _float(x: Any) -> float:
    """A gradient ``vjp_fn`` returned as a float: a number as it is, a Value's number."""
    return graph.number(x) if isinstance(x, graph.Node) else float(x)


def _as_vjp_made_it(program: _Program, transformed: Transformed) -> _Program:
    """``program`` with the numbers of the Values it reads from outside as they are now
    (``vjp_numbers``), where its recording is the graph ``vjp`` made (``recording.same_graph``: the
    same operations on the same operands, every number and saved local derivative the same bits),
    which its calls then compare with theirs; None where it is not (the world changed since)."""
    if transformed.graph is None:
        return program
    items = _items(program.layout)
    outputs = [program.outputs[i] if kind == "value" else i for kind, i in items]
    inputs = [[x] if isinstance(x, Value) else list(x) for x in program.recorded]
    if same_graph((outputs, inputs), transformed.graph):
        program.vjp_numbers = [graph.number(x) for x in program.outside]
    return program


def _per_argument(columns: list[Any], wrt: list[tuple[int, int | None]]) -> tuple[Any, ...]:
    """A vjp's columns of gradients as one array per primal: a number's column, a list's columns as
    the rows of one array (a row per sample)."""
    np = arrays.numpy()
    result = []
    place = 0
    for _, width in wrt:
        if width is None:
            result.append(columns[place])
            place += 1
        else:
            result.append(np.stack(columns[place : place + width], axis=1))
            place += width
    return tuple(result)


def _same_bits(numbers: list[float], others: list[float]) -> bool:
    """Two lists of numbers alike, bit for bit (a nan its own)."""
    return len(numbers) == len(others) and all(
        struct.pack("<d", a) == struct.pack("<d", b) for a, b in zip(numbers, others, strict=True)
    )


@contextmanager
def _code(program: _Program, size: int) -> Iterator[tuple[Callable[..., Any], Callable[..., Any] | None]]:
    """The forward and reverse passes for a batch of ``size`` samples: the program's own, or for
    a batch whose arrays are large (``workspace.WORKSPACE_BYTES``) the code that writes into the
    program's workspace for that size, held for the call."""
    if size * max(1, program.nodes) * 8 < workspace.WORKSPACE_BYTES:
        yield program.forward, program.backward
        return
    with program.workspaces.held(size) as code:
        yield code


class _Taker:
    """The results of a call taken from its rows in order, as views (a class, not closures: a
    recursive closure is a reference cycle, which would hold the rows until the garbage
    collector runs and keep ``workspace`` from filling them again)."""

    def __init__(self, columns: Any) -> None:
        self.columns = columns
        self.place = 0

    def take(self, width: int | None) -> Any:
        k = self.place
        self.place += 1 if width is None else width
        if width is None:
            return self.columns[k]
        return self.columns[k : k + width].T

    def rebuilt(self, layout: _Layout) -> Any:
        if layout.form == "one":
            return self.take(None)
        if layout.form == "list":
            return self.take(len(layout.items))
        return tuple(self.rebuilt(item) for item in layout.items)


def _differentiable(argument: _Argument, position: int) -> _Argument:
    """An unbatched argument that a transform differentiates: a number, or a list, tuple or 1-d
    NumPy array of numbers (ints included), as data (a Value, a Vector, as the transforms make
    them); anything else refused."""
    if argument.kind in ("batched", "data"):
        return argument
    value = argument.value
    if argument.kind == "values":
        value = graph.number(value) if argument.width is None else [graph.number(v) for v in value]
    if _is_number(value) or type(value) is bool:  # a bool differentiated is the number it is, as eager grad takes it
        return _Argument("data", float(value), None)
    np = arrays.numpy()
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "biuf":
        value = value.tolist()
    if isinstance(value, (list, tuple)) and value:
        if set(map(type, value)) == {float}:  # a model's parameters, as a list of floats: checked in C
            return _Argument("data", list(value), len(value))
        if all(_is_number(v) or type(v) is bool for v in value):
            return _Argument("data", [float(v) for v in value], len(value))
    raise TypeError(
        f"vmap: argument {position} is differentiated, so it must be a number or a list of numbers, "
        f"got {type(value).__name__}"
    )


_KINDS = {"c": "complex numbers", "U": "strings", "S": "bytes", "M": "dates", "m": "time deltas", "V": "records"}
"""What a NumPy array holds, by its dtype's kind, for the arrays vmap refuses (not bool, int or float)."""


def _reals(arg: Any) -> tuple[Any, str]:
    """``arg`` as a float64 array, if it holds real numbers (bools, ints, floats, NumPy's real
    types), and ""; else None and what it held. ``np.asarray(..., float64)`` alone would drop a
    complex number's imaginary part, read None as nan and parse strings."""
    np = arrays.numpy()
    try:
        array = np.asarray(arg)
    except (TypeError, ValueError):  # a ragged list
        return None, f"a {type(arg).__name__} NumPy cannot make an array of (rows of different lengths?)"
    kind = array.dtype.kind
    if kind == "O":  # a list of mixed objects: each must be a real number
        bad = [v for v in array.flat if not isinstance(v, numbers.Real)][:1]
        if bad:
            return None, "None" if bad[0] is None else f"a {type(bad[0]).__name__}"
    elif kind not in "biuf":
        return None, f"{_KINDS.get(kind, 'other values')} ({type(arg).__name__} of dtype {array.dtype})"
    return (array if array.dtype == np.float64 else array.astype(np.float64)), ""


def _holds_values(arg: Any) -> bool:
    """Whether ``arg`` (an argument refused as no real numbers) holds Values anywhere."""
    try:
        return any(isinstance(x, graph.Node) for x in arrays.numpy().asarray(arg, dtype=object).flat)
    except (TypeError, ValueError):  # nested too raggedly for any array
        return False


def _is_tuple_of_arrays(arg: Any) -> bool:
    """Whether a batched argument is a tuple holding an array or a sequence, ``(xs, ys)``, or a list
    holding an array, ``[xs, ys]``: torch.func.vmap reads either as a pytree (it maps over each array),
    NumPy as one array whose samples are ``xs`` and ``ys``. A tuple of numbers, and a list of rows of
    numbers (lists or tuples), are one array to every reading that takes them."""
    if isinstance(arg, tuple):
        return any(isinstance(item, (list, tuple, Vector)) or _has_axes(item) for item in arg)
    return isinstance(arg, list) and any(_has_axes(item) for item in arg)


def _has_axes(item: Any) -> bool:
    """An array of one axis or more (NumPy's, PyTorch's)."""
    return (getattr(item, "ndim", 0) or 0) >= 1


def _tuple_refused(kind: str, count: int, position: int, transformed: Transformed | None) -> str:
    """What vmap says of a batched tuple or list of arrays (``_is_tuple_of_arrays``): refused, as
    reading it as one array would give other numbers than torch.func.vmap does, with no error."""
    said = (
        f"vmap: batched argument {position} is a {kind} of {count} arrays or lists: torch.func.vmap reads a {kind} "
        "as a pytree and maps over each of them"
    )
    if transformed is not None and transformed.kind == "vjp":
        return (
            f"{said} (one array of cotangents per output), where vmap(vjp_fn) takes one array, a row of cotangents "
            "per sample; pass np.stack((first, second), axis=1)"
        )
    return (
        f"{said} (the samples (xs[i], ys[i])), where vjpgrad.vmap takes one array of samples per argument, and "
        "refuses rather than read it otherwise; pass each as an argument of its own, vmap(f)(xs, ys) with f(x, y), "
        "or samples that are rows as a list or a NumPy array (np.stack((xs, ys), axis=1))"
    )


def _real_array(arg: Any, position: int) -> Any:
    """A batched argument as a float64 array, refused unless it holds real numbers (``_reals``),
    before anything runs."""
    array, held = _reals(arg)
    if array is None:
        values = _holds_values(arg)
        if values and isinstance(state.recording, _Recording):  # another vmap's recording's
            inside = (
                ": a vmap inside a function vmap records (vmap(vmap(f))) is given Values, and is not supported; "
                "vmap f once, over every sample as one batch (the array reshaped to one batch axis)"
            )
        elif values and state.transform_depth:  # a transform's Values: grad(vmap(f))
            inside = (
                ": vmap takes numbers, and differentiating through it (grad(vmap(f))) is not supported; "
                "vmap(grad(f)) gives per-sample gradients, and batch_sum adds them up"
            )
        elif values:
            inside = (
                ": a batch is numbers, one row a sample; pass the Values' numbers ([v.data for v in values]), "
                "or the Values unbatched (in_dims None), which the function then reads as they are"
            )
        else:
            inside = ""
        raise TypeError(
            f"vmap: batched argument {position} must hold real numbers (bool, int, float), got {held}{inside}"
        )
    return array


def _items(layout: _Layout) -> list[tuple[str, Any]]:
    """The items of a function's result, in order (a transform's function returns no tuple of them)."""
    return [item for item in layout.items if not isinstance(item, _Layout)]


def _bases(layout: _Layout, jacobian: bool) -> list[list[float]]:
    """The seeds of the outputs for each reverse pass: 1.0 for ``grad``; for ``jacobian`` one pass
    per item of the result, 1.0 at its output and 0.0 at the others (a number's item seeds none),
    as the transforms seed them."""
    items = _items(layout)
    if not jacobian:
        return [[1.0 for item in items if item[0] == "value"]]
    return [[1.0 if k == j else 0.0 for k, item in enumerate(items) if item[0] == "value"] for j in range(len(items))]


def _moved(result: Any, dim: int) -> Any:
    """A result's batch axis (its first) moved to ``dim`` (``out_dims``), which must be one of its axes."""
    if not -result.ndim <= dim < result.ndim:
        axes = "1 axis" if result.ndim == 1 else f"{result.ndim} axes"
        raise ValueError(f"vmap: out_dims {dim} is out of range for a result of {axes} (the batch axis included)")
    return arrays.numpy().moveaxis(result, 0, dim)


def _map(result: Any, function: Callable[[Any], Any]) -> Any:
    if isinstance(result, tuple):
        return tuple(_map(x, function) for x in result)
    return function(result)


def _check_dims(dims: Any, name: str, *, allow_none: bool) -> None:
    listed = list(dims) if isinstance(dims, (tuple, list)) else [dims]
    for d in listed:
        if d is None and allow_none:
            continue
        if isinstance(d, bool) or not isinstance(d, int):
            kinds = "an int, None, or a tuple of them" if allow_none else "an int or a tuple of ints"
            raise TypeError(f"vmap {name} must be {kinds}, got {d!r}")


def vmap(
    f: Callable[..., Any],
    in_dims: int | Sequence[int | None] | None = 0,
    out_dims: int | Sequence[int] = 0,
    *,
    fast: bool = False,
    chunk_size: int | None = None,
) -> Vmapped:
    """``f`` vectorised over a batch axis, as ``torch.func.vmap``: called on arrays of samples, it
    returns what ``f`` returns for each sample, stacked along axis 0 (``out_dims``).

    ``in_dims`` says, per positional argument, which axis holds the samples (``0``), or ``None``
    for an argument every sample shares, which ``f`` gets as it is, as in ``torch.func.vmap``: a
    float stays a float (in a list too), a Value a Value. Keyword arguments are not batched
    either; they are passed as they are, as ``torch.func.vmap`` passes them. A sample of a batched
    argument is a number, which ``f`` gets as a Value, or a list of numbers (a Vector), as
    ``torch.func.vmap``'s samples are tensors.

    Composes with ``grad``, ``value_and_grad``, ``jacobian`` and the function ``vjp`` returns:
    ``vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)`` has shape ``(N, len(params))``, row
    ``i`` equal to the bit to eager code given Values for the batched data,
    ``grad(loss)(params, Value(xs[i], requires_grad=False), Value(ys[i], requires_grad=False))``.
    Eager code given plain floats for them can differ: a number and a Value take other rows of
    the table than two Values (``y / pred`` with ``y`` a float is ``y * (1 / pred)``, PyTorch's
    rdiv; ``x ** k`` with ``k`` a float takes PyTorch's special exponents, ``x ** 0.5`` is
    ``sqrt(x)``), as they do in PyTorch. A batch of no samples gives results with no rows, as
    ``torch.func.vmap`` does (the function is recorded on a stand-in sample of zeros).

    The function is recorded once per structure of arguments and unbatched numbers (as
    ``vjpgrad.compile`` records, and refusing what it refuses: Python that reads a Value's
    number; which unbatched Values are one object, a Value given twice or one the function also
    reads from its world, is structure too) and run as array code, ``.source``; the
    ``PROGRAMS_KEPT`` latest recordings are kept (8). An unbatched number that changes at every
    call is recorded at every call, and past 8 recordings a ``RecompileWarning`` says so: pass
    it as a Value (``Value(lr, requires_grad=False)``), whose number is read at each call. Exact by
    default: every number is the one eager code gives for that sample (given Values for its
    data), edge values included (each C library call runs per element); ``fast=True`` uses
    NumPy's ufuncs, faster, with last-bit differences that depend on the processor and the NumPy
    build (the docs quote one machine's, ``benchmarks/fast_mode.py`` counts them). Large batches
    run in chunks of samples (``chunk_size``, chosen from the size of the graph when None); the
    arrays of a large batch are kept from call to call and written into by the next call of the
    same size (its workspace: fresh memory costs a page fault per 4 KiB), and the gradients go
    into an array an earlier call returned once nothing holds it any more. The array code runs
    with NumPy's warnings off and its ufunc buffer at ``arrays.BUFFER`` elements (faster on
    arrays of mixed shapes; the numbers are the same), the caller's settings given back after
    the call. Needs NumPy (``pip install numpy``, or ``pip install -e '.[vmap]'`` in a clone of
    vjpgrad).
    """
    arrays.numpy()
    return Vmapped(f, in_dims, out_dims, fast, chunk_size)


def batch_sum(rows: Any, start: Any = None) -> Any:
    """The rows of ``rows`` (per-sample gradients, shape ``(N, P)``) added one at a time from the
    last to the first, onto ``start`` when given: the order in which eager code's reverse pass
    through ``f(x0) + f(x1) + ...`` (or ``sum([...])``) adds the samples' contributions to a
    parameter that each sample uses once. Summed so, a full-batch gradient through ``vmap``
    equals eager code's to the bit (``np.sum`` adds pairwise: other bits). A parameter a sample
    uses twice gets its contributions interleaved across samples in eager code: pass each use as
    an argument of its own, and give ``batch_sum`` the uses' rows in the order eager code made
    them (sample 0's first use, its second, sample 1's first...).

    The additions run in one NumPy reduction (``ordered_sum``): the rows are copied, last first
    and after ``start``, into a C-ordered array of at least two columns, and reduced along its
    first axis, which NumPy adds row after row into the running total."""
    np = arrays.numpy()
    if isinstance(rows, tuple) and any(_has_axes(item) for item in rows):
        raise TypeError(
            f"batch_sum takes one array of rows, got a tuple of {len(rows)} arrays: a tuple of arrays is what "
            "vmap(grad(f, argnums=(0, 1))) returns, one array per argument (sum each, batch_sum(rows[k])), "
            "which NumPy would read as one array, adding the arguments together; rows of samples are one "
            "array (np.stack(rows)) or a list"
        )
    block, held = _reals(rows)
    if block is None:
        raise TypeError(f"batch_sum takes an array of real numbers (rows of per-sample gradients), got {held}")
    if block.ndim == 0:
        raise ValueError("batch_sum takes an array of rows (samples along axis 0), got a number")
    count, shape = block.shape[0], block.shape[1:]
    first = [] if start is None else [_start(start, shape).reshape(-1)]
    if start is None and not count:
        return np.zeros(shape)
    flat = block.reshape((count, int(np.prod(shape))))
    with np.errstate(all="ignore"):
        total = arrays.ordered_sum(np, first, flat[::-1]).reshape(shape)
    return total[()] if total.ndim == 0 else total


def _start(start: Any, shape: tuple[int, ...]) -> Any:
    """``batch_sum``'s ``start`` as an array of the rows' shape: a number, or an array of that
    shape (or one NumPy broadcasts to it)."""
    np = arrays.numpy()
    array, held = _reals(start)
    if array is None:
        raise TypeError(f"batch_sum start must be a number or an array of real numbers, got {held}")
    try:
        return np.broadcast_to(array, shape)
    except ValueError:
        raise ValueError(
            f"batch_sum start has shape {array.shape}, but each row has shape {shape}: give a start of the rows' "
            "shape (the gradient of what was built after the samples), or a number"
        ) from None
