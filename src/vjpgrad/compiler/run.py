"""Running a recorded function: its code loaded, called, and differentiated as one node.

Each call reads the arguments and the parameters as numbers, runs the forward code, and
returns Values that stand on one node of the graph (the *call*). A ``backward`` through that
node runs the reverse code, which hands each argument and parameter the gradient the eager
graph would have handed it, bit for bit. The call and its outputs are operations with their
own backward (``Op.backward``, the core's interface for them): each output hands its
gradient to the call, which runs the reverse code once per pass for all of them.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import linecache
import operator
import threading
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from vjpgrad.compiler import cache
from vjpgrad.compiler.record import Arguments, Recorded, Static, build, collection_paused, describe, distinct, record
from vjpgrad.compiler.write import Program, namespace
from vjpgrad.core import graph
from vjpgrad.core.modes import USER_FRAMES, enable_grad, state
from vjpgrad.core.ops import Op, times
from vjpgrad.core.value import Value

CACHE_SIZE = 64
"""Recordings kept per compiled function (the least recently used goes first)."""
BACKWARDS_KEPT = 64
"""Reverse passes kept per recording, one per set of outputs a pass is seeded at."""

_number = graph.number
_numbers = itertools.count(1)


def _output_backward(node: graph.Node, g: Any) -> None:
    """An output of a compiled call hands its gradient to the call, kept apart per output: the
    call's reverse pass is seeded with one gradient per output it is reached from."""
    call = graph.operands(node)[0]
    graph.saved_of(call)[3][graph.saved_of(node)] = g


def _hands_on(g: Any, s: Any) -> Any:
    """An output's edge to its call: ``g`` itself (the call's own backward reads it)."""
    return g


OUTPUT = Op(
    "output", 0, lambda *xs: 0.0, (), (_hands_on,), "", doc="an output of a compiled call", backward=_output_backward
)
"""An output of a compiled call: its operands are the call, the arguments and parameters it was
computed from, and the other outputs it was computed from; their edges only say what a pass from
it reaches (the call hands them their gradients)."""


class Entry:
    """One recording of a function: its code, and how to call and differentiate it.

    The recorded run is eager code, so the first call returns its own result (``first``); the
    code is written and loaded when the recording is first replayed (``program``)."""

    def __init__(self, fn: Callable[..., Any], read: Arguments) -> None:
        self.recorded = recorded = record(fn, read, _roots(fn, read.objects))
        self.arguments = recorded.arguments
        self.parameters = recorded.parameters
        self.parameter_ids = frozenset(id(p) for p in self.parameters)
        self.parameter_flags = [p.requires_grad for p in self.parameters]
        self.outputs = recorded.outputs
        self.internal_outputs = list(dict.fromkeys(k for kind, k in recorded.outputs if kind == "t"))
        self.objects = [_held(x) for x in read.objects]
        self.aliased = [(k, _held(value)) for k, value in recorded.aliases]
        self.takes_any = any(recorded.live[k].requires_grad for k in self.internal_outputs)
        self.leaf_outputs = frozenset(  # outputs that are Values made inside: leaves, as in eager code
            i for i, k in enumerate(self.internal_outputs) if graph.op_of(recorded.live[k]) is None
        )
        self._program: Program | None = None
        self._key: str | None = None
        self.forward: Callable[..., Any] | None = None  # set last: once set, the code is ready
        self._preparing = threading.Lock()
        self.kept_place: dict[int, int] = {}
        self.depends: list[tuple[list[int], list[int]]] = []
        self._backwards: dict[tuple[frozenset[int], bool], Callable[..., tuple[Any, ...]]] = {}
        self._reached: dict[frozenset[int], tuple[frozenset[int], frozenset[int]]] = {}
        self.op = Op(
            "compiled",
            0,
            lambda *xs: 0.0,
            (),
            (times,),
            "",
            doc="a compiled call",
            backward=self._backward,
            release=self._release,
        )
        first = [
            read.given[k] if kind == "f" else node
            for (kind, k), node in zip(recorded.outputs, _outputs_of(recorded), strict=True)
        ]
        # the labels the function gave the Values it returns, given again to each call's (kept as data)
        self.labels = [
            x.label if kind in ("t", "c") and isinstance(x, Value) else None
            for (kind, _), x in zip(recorded.outputs, first, strict=True)
        ]
        self.first: Any = build(recorded.shape, first)  # the recorded run's result: the first call's
        recorded.result = None

    @property
    def program(self) -> Program:
        """The writer of this recording's code, made the first time it is needed: to write the
        code on a cache miss, for ``source``, and for reverse passes other than the one cached."""
        if self._program is None:
            recorded = self.recorded
            self._program = Program(
                recorded.live,
                recorded.externals,
                len(distinct(recorded.arguments)),
                recorded.constants,
                self.internal_outputs,
                recorded.recording.from_numbers,
                recorded.edges,
            )
        return self._program

    def prepare(self) -> None:
        """Make the forward pass and the reverse pass of every output ready: loaded from the
        compiled-code cache (``compiler.cache``) when this structure was compiled before on this
        machine, else written from the recording, compiled, and stored there."""
        if self.forward is not None:
            return
        with self._preparing, collection_paused():  # one thread prepares; the others wait for it
            if self.forward is None:
                self._prepare()

    def _prepare(self) -> None:
        description = describe(self.recorded, self.internal_outputs)
        key = cache.key(description) if description is not None and cache.enabled() else None
        payload = cache.load(key) if key is not None else None
        if payload is None or not self._use(payload, key):
            payload = self.program.payload(self._code_name(key))
            self._use(payload, key)
            if key is not None and payload["cacheable"]:
                cache.store(key, payload)

    def _code_name(self, key: str | None) -> str:
        """The file name the code is compiled under: the cache key's start when it has one."""
        return f"<vjpgrad.compile {key[:12]}" if key is not None else f"<vjpgrad.compile #{next(_numbers)}"

    def _use(self, payload: Any, key: str | None) -> bool:
        """Load a payload's code and what it says of the program; False for one not of this shape."""
        try:
            bound = namespace(payload["helpers"]) if payload["cacheable"] else self.program.namespace
            exec(payload["forward"], bound)  # code written from the graph alone, or read back as stored
            exec(payload["backward"], bound)
            forward, backward = bound.pop("forward"), bound.pop("backward")
            live = self.recorded.live
            kept_place = {id(live[k]): i for i, k in enumerate(payload["kept"])}
            reached, inside = payload["reached"]
            depends = [(list(a), list(b)) for a, b in payload["depends"]]
        except (KeyError, TypeError, ValueError, IndexError):  # a payload of another shape: write the code
            return False
        every = frozenset(range(len(self.internal_outputs)))
        self.kept_place, self.depends = kept_place, depends
        self._backwards[(every, False)] = backward
        self._reached[every] = (frozenset(reached), frozenset(id(live[k]) for k in inside))
        self._key = key
        self.forward = forward  # last: another thread that sees it finds the rest in place
        return True

    @property
    def source(self) -> str:
        """Forward and reverse passes (every output seeded), as the code that runs."""
        return self.program.source

    def _load(self, source: str, name: str) -> Callable[..., Any]:
        namespace = self.program.namespace
        filename = f"{self._code_name(self._key)} {name}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(builtins.compile(source, filename, "exec"), namespace)  # code written from the graph alone
        function: Callable[..., Any] = namespace.pop(name)
        return function

    def backward_for(self, seeded: frozenset[int], checked: bool = False) -> Callable[..., tuple[Any, ...]]:
        """The reverse pass seeded at ``seeded``; ``checked``: the one anomaly mode runs, which
        raises at the first contribution that is nan, as eager code does."""
        function = self._backwards.get((seeded, checked))
        if function is None:
            if len(self._backwards) >= BACKWARDS_KEPT:  # the oldest goes first
                del self._backwards[next(iter(self._backwards))]
            source = self.program.backward_source(seeded, checked=checked)
            function = self._backwards[(seeded, checked)] = self._load(source, "backward")
        return function

    def reached(self, seeded: frozenset[int]) -> tuple[frozenset[int], frozenset[int]]:
        """What a pass from the outputs ``seeded`` reaches: the positions of the arguments and
        parameters, and the ids of the operations inside."""
        known = self._reached.get(seeded)
        if known is None:
            known = self._reached[seeded] = (
                self.program.reached_externals(seeded),
                self.program.reached_inside(seeded),
            )
        return known

    # ---- a call --------------------------------------------------------------------------------

    def matches(self, read: Arguments) -> bool:
        """Whether this recording replays for a call: the same objects passed, every parameter
        still where it was found and as it was flagged, and no Value both passed and closed over
        unless it was so when recorded."""
        if any(held() is not x for held, x in zip(self.objects, read.objects, strict=True)):
            return False
        if list(map(_requires_grad, self.parameters)) != self.parameter_flags:  # read in C
            return False
        if not self.parameter_ids.isdisjoint(map(id, read.leaves)):
            return False  # a parameter passed as an argument: the recording kept them apart
        if any(held() is not read.leaves[k] for k, held in self.aliased):
            return False  # an argument the function also reaches itself: the same one, or record anew
        return self.recorded.guard.holds()

    def _backward(self, node: graph.Node, g: Any) -> None:
        values, inputs, wrappers, slots, edges, freed, ran = graph.saved_of(node)
        # a Value made inside and returned is a leaf, reached when an output reached is computed
        # from it; its gradient so far (its seed, later operations') starts its sum, as eager's
        leaves = {j for i in slots for j in self.depends[i][1] if j in self.leaf_outputs}
        for j in leaves:
            leaf = wrappers[j]()
            slots[j] = graph.cotangent(leaf) if leaf is not None else 0.0
        seeded = frozenset(slots)
        seeds = tuple(slots.get(i, 0.0) for i in range(len(self.internal_outputs)))
        slots.clear()  # handed on: the next pass through this call starts empty
        reached, inside = self.reached(seeded)
        if not freed.isdisjoint(inside):  # an operation an earlier pass freed, as eager code would say
            raise RuntimeError(f"{graph.FREED_MESSAGE} (inside a compiled call)")
        ran[:] = [inside]  # this call's operations this pass ran: what _release frees, if the pass frees
        operands = graph.operands(node)
        backward = self.backward_for(seeded, checked=state.detect_anomaly)
        # each argument and parameter the pass reaches starts from its cotangent so far, as in eager
        start = tuple(graph.cotangent(x) if k in reached else -0.0 for k, x in enumerate(operands))
        gradients, finals = backward(seeds, values, inputs, start)
        for i, final in zip(sorted(seeded), finals, strict=True):  # an output's .grad, as eager's
            wrapper = wrappers[i]()
            if wrapper is not None and final is not None:
                graph.set_cotangent(wrapper, final)
        for x, edge, gradient in zip(operands, edges, gradients, strict=True):
            if edge and gradient is not None:
                graph.set_cotangent(x, gradient)

    def _release(self, node: graph.Node) -> None:
        """A pass that frees the graph went through this call: the operations it ran are freed,
        as eager code frees them; a later pass that needs one of them raises."""
        freed, ran = graph.saved_of(node)[5:]
        for inside in ran:
            freed.update(inside)

    def run(self, leaves: list[Any], given: list[Any]) -> Any:
        external_values: list[Any] = []  # the distinct Values passed and every float, then the parameters
        seen: set[int] = set()
        for x in leaves:
            if isinstance(x, Value):
                if id(x) in seen:
                    continue
                seen.add(id(x))
            external_values.append(x)
        external_values += self.parameters
        data = [_number(x) if isinstance(x, Value) else x for x in external_values]
        self.prepare()  # the code, on the first replay: from the cache, or written now
        values = self.forward(data)  # type: ignore[misc]  # prepared just above
        made: dict[int, Value] = {}
        if self.takes_any:
            with enable_grad():  # a function under no_grad() may still take gradient inside (enable_grad)
                made = self._outputs(external_values, data, values)
        kept_place = self.kept_place
        results: list[Any] = []
        for kind, k in self.outputs:
            if kind == "x":
                results.append(external_values[k])
            elif kind == "c":
                results.append(Value(k, requires_grad=False))
            elif kind == "f":  # a float argument returned: the object the call was given
                results.append(given[k])
            elif k in made:
                results.append(made[k])
            else:
                made[k] = Value(values[kept_place[id(self.recorded.live[k])]], requires_grad=False)
                results.append(made[k])
        for result, label in zip(results, self.labels, strict=True):
            if label is not None:
                result.label = label
        return build(self.recorded.shape, results)

    def _outputs(self, externals: list[Any], data: list[Any], values: tuple[Any, ...]) -> dict[int, Value]:
        """The outputs that take gradient, each an OUTPUT node on one node for the call."""
        edges = tuple(isinstance(x, Value) and x.requires_grad for x in externals)
        wrappers: list[Callable[[], Value | None]] = [_dead] * len(self.internal_outputs)
        slots: dict[int, Any] = {}  # the gradient each output hands the call in a pass
        freed: set[int] = set()  # the operations inside (their ids) that a pass has freed
        ran: list[frozenset[int]] = []  # the operations inside that the last pass through this call ran
        saved = (values, data, wrappers, slots, edges, freed, ran)
        # no edges of its own: a pass reaches the arguments and parameters through the outputs it starts from
        call = graph.make(Value, 0.0, self.op, tuple(externals), (None,) * len(externals), None, saved)
        kept_place = self.kept_place
        made: dict[int, Value] = {}
        for position, k in sorted(enumerate(self.internal_outputs), key=lambda pair: pair[1]):  # as computed
            node = self.recorded.live[k]
            if not node.requires_grad:
                continue
            if position in self.leaf_outputs:  # a Value made inside, returned: a leaf, as eager code's
                made[k] = Value(values[kept_place[id(node)]])
                wrappers[position] = weakref.ref(made[k])
                continue
            from_externals, from_outputs = self.depends[position]
            operands = [call, *(externals[j] for j in from_externals if edges[j])]
            operands += [made[self.internal_outputs[j]] for j in from_outputs if self.internal_outputs[j] in made]
            value = graph.make(
                Value, values[kept_place[id(node)]], OUTPUT, tuple(operands), (True,) * len(operands), None, position
            )
            wrappers[position] = weakref.ref(value)
            made[k] = value
        return made


_requires_grad = operator.attrgetter("requires_grad")


def _roots(fn: Callable[..., Any], objects: list[Any]) -> list[Any]:
    """Where a function's parameters can be found: the function itself (its closure, the globals
    it names, its defaults, its ``self``) and the objects the call was given."""
    return [fn, *objects]


def _dead() -> None:
    """The weak reference of an output that has none."""
    return None


def _held(x: Any) -> Callable[[], Any]:
    """A reference to an object passed to a call: weak where the object allows it, so that a
    recording does not keep a model alive, and never confused with a new object at its address."""
    try:
        return weakref.ref(x)
    except TypeError:
        return lambda: x


class Compiled:
    """A function recorded once per structure of its arguments and replayed as generated code.

    Call it as the function itself. ``source`` is the generated code of the last recording:
    the forward pass, then the reverse pass, one operation a line. ``reset()`` drops every
    recording (after changing Python state the function reads, as with ``jax.jit``).
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"vjpgrad.compile takes a function, got {type(fn).__name__}")
        self.fn = fn
        self._cache: OrderedDict[tuple[Any, ...], Entry] = OrderedDict()
        self._lock = threading.RLock()
        self._last: Entry | None = None
        self._static: frozenset[Any] = frozenset()  # float arguments used as Python numbers: structure
        self.times_recorded = 0
        """How many times the function was recorded (a new structure, a parameter rebound...)."""
        functools.update_wrapper(self, fn)

    @property
    def source(self) -> str:
        """The generated code of the last recording (empty before the first call)."""
        return "" if self._last is None else self._last.source

    @property
    def recordings(self) -> int:
        """How many recordings are kept."""
        return len(self._cache)

    def reset(self) -> None:
        """Drop every recording: the next call records the function again."""
        with self._lock:
            self._cache.clear()
            self._last = None
            self._static = frozenset()

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """``@vjpgrad.compile`` on a method: the instance is its first argument (structure by
        identity, and where its parameters are found)."""
        return self if instance is None else types.MethodType(self, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
            if state.recording is not None:  # inside another compiled function's recording: be recorded
                return self.fn(*args, **kwargs)
            with self._lock:
                while True:
                    read = Arguments(args, kwargs, self._static)
                    entry = self._cache.get(read.key)
                    if entry is not None and entry.matches(read):
                        self._cache.move_to_end(read.key)
                        self._last = entry
                        break
                    try:
                        entry = Entry(self.fn, read)
                    except Static as static:  # a float argument used as a Python number: structure from now on
                        self._static = self._static | {static.path}
                        continue
                    self.times_recorded += 1
                    self._cache[read.key] = entry
                    self._cache.move_to_end(read.key)
                    if len(self._cache) > CACHE_SIZE:
                        self._cache.popitem(last=False)
                    self._last = entry
                    first, entry.first = entry.first, None
                    return first  # the recorded run is eager code: its result is this call's
            return entry.run(read.leaves, read.given)

    def __repr__(self) -> str:
        return f"<vjpgrad.compile of {getattr(self.fn, '__qualname__', 'a function')}>"


def compile(fn: Callable[..., Any]) -> Compiled:
    """Record ``fn`` once per structure of its arguments and replay it as generated Python.

    ``fn(*args, **kwargs)`` returns a Value, a Vector or a list of Values and may use Values it
    closes over (parameters, found again at every call). The result behaves as ``fn``'s: the
    same numbers, and ``backward`` adds the same gradients, bit for bit; or, where the function
    depends on a Value's number, a ``DataDependentError`` naming the line. See
    ``vjpgrad.compiler`` for what makes a new recording.
    """
    return Compiled(fn)


def _outputs_of(recorded: Recorded) -> list[Value]:
    """The Values of the recorded run's result, in the order of ``recorded.outputs``."""
    values: list[Any] = []
    _values_of(recorded.shape, recorded.result, values)
    return values


def _values_of(shape: Any, result: Any, out: list[Any]) -> None:
    kind, parts = shape
    if kind == "leaf":
        out.append(result)
    elif kind == "vector":
        for part, item in zip(parts, result, strict=True):
            _values_of(part, item, out)
    elif kind == "dict":
        for key, part in parts:
            _values_of(part, result[key], out)
    elif kind != "same":
        for part, item in zip(parts, result, strict=True):
            _values_of(part, item, out)
