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

from vjpgrad.compiler.record import Arguments, Static, distinct, record
from vjpgrad.compiler.write import Program
from vjpgrad.core import graph
from vjpgrad.core.modes import USER_FRAMES, enable_grad, state
from vjpgrad.core.ops import TIMES, Form, Op
from vjpgrad.core.value import Value
from vjpgrad.core.vector import wrap

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


_OUTPUT_FORM = Form("output", lambda g, s: g, lambda s: 1.0)
OUTPUT = Op(
    "output", 0, lambda *xs: 0.0, (), (_OUTPUT_FORM,), "", doc="an output of a compiled call", backward=_output_backward
)
"""An output of a compiled call: its operands are the call, the arguments and parameters it was
computed from, and the other outputs it was computed from; their edges only say what a pass from
it reaches (the call hands them their gradients)."""


class Entry:
    """One recording of a function: its code, and how to call and differentiate it."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], read: Arguments) -> None:
        self.recorded = recorded = record(fn, args, kwargs, read, _roots(fn, read.objects))
        self.kind = recorded.kind
        self.arguments = recorded.arguments
        self.parameters = recorded.parameters
        self.parameter_ids = frozenset(id(p) for p in self.parameters)
        self.parameter_flags = [p.requires_grad for p in self.parameters]
        self.outputs = recorded.outputs
        self.internal_outputs = list(dict.fromkeys(k for kind, k in recorded.outputs if kind == "t"))
        self.program = Program(
            recorded.live,
            recorded.externals,
            recorded.names,
            recorded.constants,
            recorded.takes_grad,
            self.internal_outputs,
            recorded.recording.from_numbers,
        )
        self.objects = [_held(x) for x in read.objects]
        self.aliased = [(k, _held(distinct(self.arguments)[k])) for _, k in recorded.aliases]
        externals = recorded.externals
        place = {id(x): k for k, x in enumerate(externals)}
        output_place = {id(recorded.live[k]): i for i, k in enumerate(self.internal_outputs)}
        # what each output is computed from: the arguments and parameters, and the other outputs
        self.depends: list[tuple[list[int], list[int]]] = []
        for k in self.internal_outputs:
            node = recorded.live[k]
            reach = self.program.reach([node])
            self.depends.append(
                (
                    [place[key] for key in reach if key in place],
                    sorted(output_place[key] for key in reach if key in output_place and key != id(node)),
                )
            )
        self.takes_any = any(recorded.takes_grad[id(recorded.live[k])] for k in self.internal_outputs)
        self.filename = f"<vjpgrad.compile #{next(_numbers)}>"
        self.forward = self._load(self.program.forward_source, "forward")
        self._backwards: dict[frozenset[int], Callable[..., tuple[Any, ...]]] = {}
        self.op = Op(
            "compiled",
            0,
            lambda *xs: 0.0,
            (),
            (TIMES,),
            "",
            doc="a compiled call",
            backward=self._backward,
            shared=True,
        )

    @property
    def source(self) -> str:
        """Forward and reverse passes (every output seeded), as the code that runs."""
        return self.program.source

    def _load(self, source: str, name: str) -> Callable[..., Any]:
        namespace = self.program.namespace
        filename = f"{self.filename[:-1]} {name}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(builtins.compile(source, filename, "exec"), namespace)  # code written from the graph alone
        function: Callable[..., Any] = namespace.pop(name)
        return function

    def backward_for(self, seeded: frozenset[int]) -> Callable[..., tuple[Any, ...]]:
        function = self._backwards.get(seeded)
        if function is None:
            if len(self._backwards) >= BACKWARDS_KEPT:  # the oldest goes first
                del self._backwards[next(iter(self._backwards))]
            function = self._backwards[seeded] = self._load(self.program.backward_source(seeded), "backward")
        return function

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
        if self.aliased:
            arguments = distinct([x for x in read.leaves if isinstance(x, Value)])
            if any(k >= len(arguments) or held() is not arguments[k] for k, held in self.aliased):
                return False
        return self.recorded.guard.holds()

    def _backward(self, node: graph.Node, g: Any) -> None:
        values, inputs, wrappers, slots, edges = graph.saved_of(node)
        seeded = frozenset(slots)
        seeds = tuple(slots.get(i, 0.0) for i in range(len(self.internal_outputs)))
        slots.clear()  # handed on: the next pass through this call starts empty
        operands = graph.operands(node)
        backward = self.backward_for(seeded)
        # each argument and parameter the pass reaches starts from its cotangent so far, as in eager
        reached = self.program.reached_externals(seeded)
        start = tuple(graph.cotangent(x) if k in reached else -0.0 for k, x in enumerate(operands))
        gradients, finals = backward(seeds, values, inputs, start)
        for i, final in zip(sorted(seeded), finals, strict=True):  # an output's .grad, as eager's
            wrapper = wrappers[i]()
            if wrapper is not None and final is not None:
                graph.set_cotangent(wrapper, final)
        if state.detect_anomaly:
            for k, (edge, gradient) in enumerate(zip(edges, gradients, strict=True)):
                if edge and gradient is not None and gradient != gradient:
                    raise FloatingPointError(
                        f"backward of a compiled call produced nan for its input {k} (anomaly mode checks the "
                        "call as one operation: call the function uncompiled to find the operation)"
                    )
        for x, edge, gradient in zip(operands, edges, gradients, strict=True):
            if edge and gradient is not None:
                graph.set_cotangent(x, gradient)

    def run(self, leaves: list[Any]) -> Any:
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
        values = self.forward(data)
        made: dict[int, Value] = {}
        if self.takes_any:
            with enable_grad():  # a function under no_grad() may still take gradient inside (enable_grad)
                made = self._outputs(external_values, data, values)
        kept_place = self.program.kept_place
        results: list[Any] = []
        for kind, k in self.outputs:
            if kind == "x":
                results.append(external_values[k])
            elif kind == "c":
                results.append(Value(k, requires_grad=False))
            elif kind == "n":
                results.append(k)
            elif k in made:
                results.append(made[k])
            else:
                made[k] = Value(values[kept_place[id(self.recorded.live[k])]], requires_grad=False)
                results.append(made[k])
        if self.kind == "value":
            return results[0]
        if self.kind == "vector":
            return wrap(results)
        return tuple(results) if self.kind == "tuple" else results

    def _outputs(self, externals: list[Any], data: list[Any], values: tuple[Any, ...]) -> dict[int, Value]:
        """The outputs that take gradient, each an OUTPUT node on one node for the call."""
        edges = tuple(isinstance(x, Value) and x.requires_grad for x in externals)
        wrappers: list[Callable[[], Value | None]] = [_dead] * len(self.internal_outputs)
        slots: dict[int, Any] = {}  # the gradient each output hands the call in a pass
        saved = (values, data, wrappers, slots, edges)
        # no edges of its own: a pass reaches the arguments and parameters through the outputs it starts from
        call = graph.make(Value, 0.0, self.op, tuple(externals), (None,) * len(externals), None, saved)
        kept_place = self.program.kept_place
        made: dict[int, Value] = {}
        for position, k in sorted(enumerate(self.internal_outputs), key=lambda pair: pair[1]):  # as computed
            node = self.recorded.live[k]
            if not self.recorded.takes_grad[id(node)]:
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
        self._static: frozenset[int] = frozenset()  # float arguments used as Python numbers: structure
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
                        break
                    try:
                        entry = Entry(self.fn, args, kwargs, read)
                    except Static as static:  # a float argument used as a Python number: structure from now on
                        self._static = self._static | {static.position}
                        continue
                    self.times_recorded += 1
                    self._cache[read.key] = entry
                    self._cache.move_to_end(read.key)
                    if len(self._cache) > CACHE_SIZE:
                        self._cache.popitem(last=False)
                    break
                self._last = entry
            return entry.run(read.leaves)

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
