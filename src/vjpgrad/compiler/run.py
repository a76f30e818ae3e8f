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
import threading
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from vjpgrad.compiler.guard import Guard, roots
from vjpgrad.compiler.record import Arguments, record
from vjpgrad.compiler.write import Program
from vjpgrad.core import graph
from vjpgrad.core.modes import state
from vjpgrad.core.ops import TIMES, Form, Op
from vjpgrad.core.value import Value
from vjpgrad.core.vector import wrap

CACHE_SIZE = 64
"""Recordings kept per compiled function (the least recently used goes first)."""
BACKWARDS_KEPT = 8
"""Reverse passes kept per recording, one per set of outputs a pass is seeded at."""

_number = graph.number
_numbers = itertools.count(1)


def _output_backward(node: graph.Node, g: Any) -> None:
    """An output of a compiled call hands its gradient to the call, kept apart per output (the
    call's reverse pass is seeded with one gradient per output)."""
    (call,) = graph.operands(node)
    graph.saved_of(call)[3][graph.saved_of(node)] = g


OUTPUT = Op(
    "output",
    1,
    lambda x: x,
    (lambda x, out: 0,),
    (Form("output", lambda g, s: g, lambda s: 1.0),),
    "{0}",
    doc="an output of a compiled call",
    backward=_output_backward,
)


class Entry:
    """One recording of a function: its code, and how to call and differentiate it."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], read: Arguments) -> None:
        recorded = record(fn, args, kwargs, read)
        self.recorded = recorded
        self.kind = recorded.kind
        self.arguments = recorded.arguments
        self.parameters = recorded.parameters
        self.parameter_flags = tuple(p.requires_grad for p in self.parameters)
        self.outputs = recorded.outputs
        internal_outputs = list(dict.fromkeys(k for kind, k in recorded.outputs if kind == "t"))
        self.program = Program(
            recorded.live,
            recorded.externals,
            recorded.names,
            recorded.constants,
            recorded.takes_grad,
            internal_outputs,
        )
        self.internal_outputs = internal_outputs
        self.objects = [_held(x) for x in read.objects]
        self.guard = Guard(roots(fn, read.objects), self.parameters)
        self.filename = f"<vjpgrad.compile #{next(_numbers)}>"
        self.forward = self._load(self.program.forward_source, "forward")
        self._backwards: dict[frozenset[int], Callable[..., tuple[Any, ...]]] = {}
        self.op = Op("compiled", 0, lambda *xs: 0.0, (), (TIMES,), "", doc="a compiled call", backward=self._backward)

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

    def matches(self, fn: Callable[..., Any], objects: list[Any]) -> bool:
        """Whether this recording replays for a call with these objects: the same objects, every
        parameter still where it was found and as it was flagged."""
        if any(held() is not x for held, x in zip(self.objects, objects, strict=True)):
            return False
        if self.parameter_flags != tuple(p.requires_grad for p in self.parameters):
            return False
        return self.guard.holds(roots(fn, objects))

    def _backward(self, node: graph.Node, g: Any) -> None:
        values, inputs, wrappers, slots = graph.saved_of(node)
        seeded = frozenset(slots)
        seeds = tuple(slots.get(i, 0.0) for i in range(len(self.internal_outputs)))
        slots.clear()  # handed on: the next pass through this call starts empty
        operands, edges = graph.operands(node), graph.edge_marks(node)
        # each argument and parameter starts from its cotangent so far, as in the eager pass; a
        # Value that stands at two places (an argument the function also closes over) starts
        # the second from -0.0, and its two sums are added
        first: dict[int, int] = {}
        for k, (x, edge) in enumerate(zip(operands, edges, strict=True)):
            if edge is not None:
                first.setdefault(id(x), k)
        start = tuple(
            graph.cotangent(x) if edge is not None and first[id(x)] == k else -0.0
            for k, (x, edge) in enumerate(zip(operands, edges, strict=True))
        )
        gradients, finals = self.backward_for(seeded)(seeds, values, inputs, start)
        for i, final in zip(sorted(seeded), finals, strict=True):  # an output's .grad, as eager's
            wrapper = wrappers[i]()
            if wrapper is not None and final is not None:
                graph.set_cotangent(wrapper, final)
        if state.detect_anomaly:
            for k, (edge, gradient) in enumerate(zip(edges, gradients, strict=True)):
                if edge is not None and gradient is not None and gradient != gradient:
                    raise FloatingPointError(
                        f"backward of a compiled call produced nan for its input {k} (anomaly mode checks the "
                        "call as one operation: call the function uncompiled to find the operation)"
                    )
        for k, (x, edge, gradient) in enumerate(zip(operands, edges, gradients, strict=True)):
            if edge is None or gradient is None:
                continue
            if first[id(x)] == k:
                graph.set_cotangent(x, gradient)
            else:
                graph.add_cotangent(x, gradient)

    def run(self, leaves: list[Any]) -> Any:
        for parameter, leaf in self.recorded.refreshed:  # Value(lr) inside: the number of this call's lr
            graph.set_number(self.parameters[parameter], float(leaves[leaf]))
        external_values: list[Any] = []
        seen: set[int] = set()
        for x, a in zip(leaves, self.arguments, strict=True):
            if id(a) in seen:
                continue
            seen.add(id(a))
            external_values.append(x)
        external_values += self.parameters
        data = [_number(x) if isinstance(x, Value) else x for x in external_values]
        values = self.forward(data)
        edges = tuple(True if isinstance(x, Value) and x.requires_grad else None for x in external_values)
        call = None
        if state.grad_enabled and any(edges):
            # the outputs are held weakly (they hold the call node): no reference cycle
            wrappers: list[Callable[[], Value | None]] = [_dead] * len(self.internal_outputs)
            slots: dict[int, Any] = {}  # the gradient each output hands the call in a pass
            saved = (values, data, wrappers, slots)
            call = graph.make(Value, 0.0, self.op, tuple(external_values), edges, None, saved)
        kept_place = self.program.kept_place
        made: dict[int, Value] = {}
        results: list[Any] = []
        for kind, k in self.outputs:
            if kind == "x":
                results.append(external_values[k])
            elif kind == "c":
                results.append(Value(k, requires_grad=False))
            elif k in made:
                results.append(made[k])
            else:
                node = self.recorded.live[k]
                position = self.internal_outputs.index(k)
                if call is not None and self.recorded.takes_grad[id(node)]:
                    value = graph.make(Value, values[kept_place[id(node)]], OUTPUT, call, position, None, None)
                    wrappers[position] = weakref.ref(value)
                else:
                    value = Value(values[kept_place[id(node)]], requires_grad=False)
                made[k] = value
                results.append(value)
        return results[0] if self.kind == "value" else wrap(results) if self.kind == "vector" else results


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

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """``@vjpgrad.compile`` on a method: the instance is its first argument (structure by
        identity, and where its parameters are found)."""
        return self if instance is None else types.MethodType(self, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if state.recording is not None:  # inside another compiled function's recording: be recorded
            return self.fn(*args, **kwargs)
        read = Arguments(args, kwargs)
        with self._lock:
            entry = self._cache.get(read.key)
            if entry is not None and not entry.matches(self.fn, read.objects):
                entry = None  # a parameter rebound, an object at a reused address: record anew
            if entry is None:
                entry = Entry(self.fn, args, kwargs, read)
                self._cache[read.key] = entry
                if len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(read.key)
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
