"""``vjpgrad.compile``: record a function once, replay it as generated straight-line Python.

The first call with a given structure of arguments runs the function once, eagerly, while
``_graph`` records every operation it makes (``_graph.Recording``). ``_codegen`` writes the
recorded graph as two Python functions, forward and reverse, and this module runs them: each
later call reads the arguments and the parameters (the Values the function closes over) as
numbers, runs the forward code, and returns Values that stand on one node of the graph. A
``backward`` through that node runs the reverse code, which hands each argument and parameter
the gradient the eager graph would have handed it, bit for bit.

What fixes a recording: the kinds, nesting and lengths of the arguments, which of them are
the same Value, whether each requires grad, the value of every int or bool argument (ints
are structure: lengths, indices, flags), and grad mode. Floats and Values are data: a new
number replays the same code. Python that depends on a Value's number (``.data``, ``float``,
``if`` on a Value, comparisons, indexing) is refused while recording, since the recording
would silently fix the branch it took.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import linecache
import numbers
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from vjpgrad import _graph
from vjpgrad._codegen import Writer
from vjpgrad._mode import OWN_CODE, DataDependentError, caller_location, refuse_number, refusing_numbers, state
from vjpgrad._ops import TIMES, Form, Op
from vjpgrad._value import Value, pow_base
from vjpgrad._vector import Vector, wrap

VALUES_LINE = "    # values"  # where the reverse pass unpacks the values it reads

CACHE_SIZE = 64
"""Recordings kept per compiled function (the least recently used goes first)."""
BACKWARDS_KEPT = 8
"""Reverse passes kept per recording, one per set of outputs a pass is seeded at."""

_data_slot: Any = _graph.Node.__dict__["data"]  # the slot under Value.data, for vjpgrad's own reads


class _Recorded(Value):
    """A Value made while a function is recorded: reading its ``.data`` from the function
    is refused, because the recording would fix the number it read."""

    __slots__ = ()

    @property
    def data(self) -> float:
        frame = __import__("sys")._getframe(1)
        if not frame.f_code.co_filename.startswith(OWN_CODE):
            raise DataDependentError(
                f".data of a Value at {caller_location()} depends on its number, which vjpgrad.compile cannot "
                "replay: use a vjpgrad operation instead (max, relu, nn.functional...), move the decision "
                "outside the compiled function, or call it uncompiled"
            )
        number: float = _data_slot.__get__(self)
        return number

    @data.setter
    def data(self, value: float) -> None:
        _data_slot.__set__(self, value)

    def __index__(self) -> int:
        refuse_number("using a Value as an index")
        raise TypeError("a Value cannot be used as an index")

    def __int__(self) -> int:
        refuse_number("int() of a Value")
        return int(_data_slot.__get__(self))


class _Number(_Recorded):
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
            return pow_base(self, other)
        return Value.__pow__(self, other)


# ---- the arguments: their structure (the cache key) and their leaves -----------------------------


def _flatten(args: Sequence[Any]) -> tuple[tuple[Any, ...], list[Any]]:
    """The structure of ``args`` (a hashable key) and their leaves in order: Values and floats."""
    key: list[Any] = []
    leaves: list[Any] = []
    first_place: dict[int, int] = {}
    for arg in args:
        _visit(arg, key, leaves, first_place)
    key.append(("grad mode", state.grad_enabled))
    return tuple(key), leaves


def _visit(x: Any, key: list[Any], leaves: list[Any], first_place: dict[int, int]) -> None:
    # a module function, not a closure: a recursive closure is a reference cycle, which would
    # keep every call's arguments alive until the cyclic collector ran
    if isinstance(x, Value):
        place = first_place.setdefault(id(x), len(leaves))
        key.append(("V", x.requires_grad, place))
        leaves.append(x)
    elif isinstance(x, Vector):
        key.append(("Vector", len(x)))
        for item in x:
            _visit(item, key, leaves, first_place)
    elif isinstance(x, (list, tuple)):
        key.append((type(x).__name__, len(x)))
        for item in x:
            _visit(item, key, leaves, first_place)
    elif isinstance(x, (bool, int)):
        key.append(("int", type(x).__name__, int(x)))
    elif isinstance(x, numbers.Real):
        key.append(("float",))
        leaves.append(float(x))
    else:
        raise TypeError(
            f"a compiled function takes numbers, Values, Vectors and lists or tuples of them, got {type(x).__name__}"
        )


def _rebuild(args: Sequence[Any], leaves: Iterator[Any]) -> list[Any]:
    """``args`` again, with every Value and float replaced by the next of ``leaves``."""

    return [_build(arg, leaves) for arg in args]


def _build(x: Any, leaves: Iterator[Any]) -> Any:
    if isinstance(x, Value) or (isinstance(x, numbers.Real) and not isinstance(x, (bool, int))):
        return next(leaves)
    if isinstance(x, Vector):
        return Vector([_build(item, leaves) for item in x])
    if isinstance(x, (list, tuple)):
        items = [_build(item, leaves) for item in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)  # a namedtuple takes fields
    return x


# ---- the node that stands for one call --------------------------------------------------------------


class _Slot:
    """The gradient one output hands the call node: kept apart per output, never summed."""

    __slots__ = ("gradient", "index")

    def __init__(self, index: int, gradient: float) -> None:
        self.index, self.gradient = index, gradient

    def __radd__(self, start: float) -> _Slots:
        return _Slots({self.index: self.gradient})


class _Slots(dict[int, float]):
    """The call node's cotangent: one gradient per output the pass reached."""

    def __add__(self, slot: _Slot) -> _Slots:  # gathers a slot, as the pass adds
        self[slot.index] = slot.gradient
        return self

    def __radd__(self, grad: float) -> float:
        return grad  # the call node's .grad means nothing: it stays as it was


SLOT = Form("slot", lambda g, index: _Slot(index, g), lambda index: 1.0)
OUTPUT = Op("output", 1, lambda x: x, (lambda x, out: 0,), (SLOT,), "{0}", doc="an output of a compiled call")


class _Entry:
    """One recording of a function: its generated code, and how to call and differentiate it."""

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any], leaves: list[Any], number: int) -> None:
        arguments = [
            _new_recorded(x.data, x.requires_grad) if isinstance(x, Value) else _new_recorded(x, False, _Number)
            for x in leaves
        ]
        distinct: dict[int, Value] = {}
        for x, a in zip(leaves, arguments, strict=True):
            if isinstance(x, Value):
                distinct.setdefault(id(x), a)
        arguments = [distinct[id(x)] if isinstance(x, Value) else a for x, a in zip(leaves, arguments, strict=True)]
        recording = _graph.Recording(_Recorded)
        rebuilt = _rebuild(args, iter(arguments))
        message = (
            f"{getattr(fn, '__qualname__', 'the function')} is being recorded by vjpgrad.compile, which cannot "
            "replay Python that depends on a Value's number: use a vjpgrad operation instead (max, relu, "
            "nn.functional...), move the decision outside the compiled function, or call it uncompiled"
        )
        state.recording = recording
        try:
            with refusing_numbers(message):
                result = fn(*rebuilt)
        finally:
            state.recording = None
        self.kind, outputs = _outputs(result)
        self._build(recording, arguments, outputs, number)

    def _build(self, recording: _graph.Recording, arguments: list[Value], outputs: list[Any], number: int) -> None:
        recorded = {id(node): k for k, node in enumerate(recording.nodes)}
        argument_ids = {id(a) for a in arguments}
        reached = _graph.ancestry([x for x in outputs if isinstance(x, Value)])
        live = sorted((n for n in reached if id(n) in recorded), key=_graph.sequence)  # in creation order
        names: dict[int, str] = {}
        constants: dict[int, float] = {}
        externals: list[Value] = []
        for k, a in enumerate(dict.fromkeys(arguments)):  # distinct, in order
            names[id(a)] = f"x{k}"
            externals.append(a)
        parameters: list[Value] = []
        for node in live:
            for x in _graph.operands(node):
                if not isinstance(x, Value) or id(x) in recorded or id(x) in argument_ids or id(x) in names:
                    continue
                if id(x) in constants:
                    continue
                if _graph.op_of(x) is None and _graph.made_after(x, recording) and not x.requires_grad:
                    constants[id(x)] = _data_slot.__get__(x)  # a constant made inside: its number
                else:  # a parameter, or a Value made inside that takes gradient (a weight made lazily)
                    names[id(x)] = f"p{len(parameters)}"
                    parameters.append(x)
        for x in outputs:  # an output that is a parameter or a constant made inside
            if isinstance(x, Value) and id(x) not in recorded and id(x) not in names and id(x) not in constants:
                if _graph.op_of(x) is None and _graph.made_after(x, recording) and not x.requires_grad:
                    constants[id(x)] = _data_slot.__get__(x)
                else:
                    names[id(x)] = f"p{len(parameters)}"
                    parameters.append(x)
        externals += parameters
        for k, node in enumerate(live, start=1):
            names[id(node)] = f"t{k}"
        takes_grad = {id(x): x.requires_grad for x in externals}
        enabled = {id(node): recording.grad_enabled[recorded[id(node)]] for node in live}
        for node in live:
            takes_grad[id(node)] = enabled[id(node)] and any(
                isinstance(x, Value) and takes_grad.get(id(x), False) for x in _graph.operands(node)
            )
        self.arguments = arguments
        self.parameters = parameters
        self.externals = externals
        self.parameter_flags = tuple(p.requires_grad for p in parameters)
        self.live = live
        self.names = names
        self.takes_grad = takes_grad
        self.writer = Writer(live, names, constants, takes_grad)
        # where each output comes from: ("t", index into live) / ("x", external index) / ("c", number)
        place = {id(node): k for k, node in enumerate(live)}
        external_place = {id(x): k for k, x in enumerate(externals)}
        self.outputs: list[tuple[str, Any]] = []
        for x in outputs:
            if isinstance(x, Value) and id(x) in place:
                self.outputs.append(("t", place[id(x)]))
            elif isinstance(x, Value) and id(x) in external_place:
                self.outputs.append(("x", external_place[id(x)]))
            elif isinstance(x, Value):
                self.outputs.append(("c", constants[id(x)]))
            else:
                self.outputs.append(("c", float(x)))
        self.internal_outputs = list(dict.fromkeys(k for kind, k in self.outputs if kind == "t"))
        self.filename = f"<vjpgrad.compile #{number}>"
        # the forward hands on only the values a reverse pass reads (and the outputs): written
        # once with every output seeded, the reverse pass says which; fewer seeds read fewer
        self.kept = list(self.live)
        self._every = frozenset(range(len(self.internal_outputs)))
        head, _, body = self.backward_source(self._every).split("\n", 3)[1:]
        code = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("#"))
        read = set(re.findall(r"\bt\d+\b", code))
        returned = {id(self.live[k]) for k in self.internal_outputs}
        self.kept = [n for n in self.live if self.names[id(n)] in read or id(n) in returned]
        self.kept_place = {id(n): k for k, n in enumerate(self.kept)}
        unpack = self._unpack([self.names[id(n)] for n in self.kept], "values").rstrip("\n") or "    pass"
        self._every_source = "\n".join(["def backward(seeds, values, inputs, start):", head, unpack, body])
        self.forward_source = self._forward_source()
        self.forward = self._load(self.forward_source, "forward")
        self._backwards: dict[frozenset[int], Callable[..., tuple[Any, ...]]] = {}
        self.op = Op("compiled", 0, lambda *xs: 0.0, (), (TIMES,), "", doc="a compiled call", backward=self._backward)

    # ---- the code ---------------------------------------------------------------------------

    def _unpack(self, names: list[str], source: str) -> str:
        if not names:
            return ""
        return f"    {', '.join(names)}, = {source}\n"

    def _forward_source(self) -> str:
        head = "def forward(inputs):\n" + self._unpack([self.names[id(x)] for x in self.externals], "inputs")
        body = "".join(f"    {self.writer.forward_line(node)}\n" for node in self.live)
        values = ", ".join(self.names[id(node)] for node in self.kept)
        return head + body + f"    return ({values}{',' if len(self.kept) == 1 else ''})\n"

    def backward_source(self, seeded: frozenset[int]) -> str:
        """The reverse pass seeded at the outputs ``seeded`` (positions in internal_outputs)."""
        if seeded == getattr(self, "_every", None) and hasattr(self, "_every_source"):
            return self._every_source  # written once already, to learn which values it reads
        roots = [self.live[self.internal_outputs[i]] for i in sorted(seeded)]
        live = {id(n) for n in self.live}
        reach: set[int] = set()  # what the eager pass from these outputs would reach
        stack = [n for n in roots if self.takes_grad[id(n)]]
        while stack:
            node = stack.pop()
            if id(node) in reach:
                continue
            reach.add(id(node))
            if id(node) in live:
                stack += [x for x in _graph.operands(node) if isinstance(x, Value) and self.takes_grad.get(id(x))]
        lines = ["def backward(seeds, values, inputs, start):"]
        lines.append(self._unpack([self.names[id(x)] for x in self.externals], "inputs").rstrip("\n") or "    pass")
        lines.append(VALUES_LINE)  # the values the lines below read: known once they are written
        started: set[int] = set()
        # an argument's or parameter's gradient goes on from what the pass has handed it so far
        # (later operations, or its own seed), and takes each contribution in eager's order
        for k, x in enumerate(self.externals):
            if id(x) in reach:
                lines.append(f"    g_{self.names[id(x)]} = start[{k}]")
                started.add(id(x))
        for i in sorted(seeded):
            node = self.live[self.internal_outputs[i]]
            if id(node) in reach:
                gradient = f"g_{self.names[id(node)]}"
                lines.append(
                    f"    {gradient} = seeds[{i}]" if id(node) not in started else f"    {gradient} += seeds[{i}]"
                )
                started.add(id(node))
        # A node whose first contribution is its user's gradient itself (an addition's) takes
        # over that variable instead of copying it, when the user is done with it: which node
        # holds which variable is tracked so that no variable serves two live gradients.
        named: dict[int, str] = {}  # id(node) -> the variable holding its gradient, if not its own
        holder: dict[str, int] = {}  # variable -> id of the node whose gradient it holds
        outputs_seeded = {id(self.live[self.internal_outputs[i]]) for i in seeded}

        def variable(key: int) -> str:
            return named.get(key, f"g_{self.names[key]}")

        for node in reversed(self.live):
            if id(node) not in reach or id(node) not in started:
                continue
            op = _graph.op_of(node)
            assert op is not None
            lines.append(f"    # {self.writer.forward_line(node).split('  # ')[0]}")
            gradient = variable(id(node))
            for target, code in self.writer.backward_lines(node, gradient):
                if target == -1:
                    lines.append(f"    {code}")
                    continue
                if (
                    code == gradient
                    and target not in started
                    and target in live
                    and id(node) not in outputs_seeded  # an output's own gradient is returned at the end
                    and holder.get(gradient, id(node)) == id(node)
                ):
                    named[target] = gradient
                    holder[gradient] = target
                    started.add(target)
                    continue
                lines.append(f"    {variable(target)} {'+=' if target in started else '='} {code}")
                started.add(target)
        results = [f"g_{self.names[id(x)]}" if id(x) in started else "None" for x in self.externals]
        # and each seeded output's own gradient: its seed and what the operations inside handed it
        outputs = [
            f"g_{self.names[id(self.live[self.internal_outputs[i]])]}"
            if id(self.live[self.internal_outputs[i]]) in started
            else "None"
            for i in sorted(seeded)
        ]
        lines.append(
            f"    return ({', '.join(results)}{',' if len(results) == 1 else ''}), "
            f"({', '.join(outputs)}{',' if len(outputs) == 1 else ''})"
        )
        unpack = self._unpack([self.names[id(n)] for n in self.kept], "values").rstrip("\n") or "    pass"
        return "\n".join(unpack if line is VALUES_LINE else line for line in lines if line) + "\n"

    def _load(self, source: str, name: str) -> Callable[..., Any]:
        namespace = self.writer.namespace
        filename = f"{self.filename[:-1]} {name}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(builtins.compile(source, filename, "exec"), namespace)
        function: Callable[..., Any] = namespace.pop(name)
        return function

    def backward_for(self, seeded: frozenset[int]) -> Callable[..., tuple[Any, ...]]:
        function = self._backwards.get(seeded)
        if function is None:
            if len(self._backwards) >= BACKWARDS_KEPT:  # the oldest goes first
                del self._backwards[next(iter(self._backwards))]
            function = self._backwards[seeded] = self._load(self.backward_source(seeded), "backward")
        return function

    @property
    def source(self) -> str:
        """Forward and reverse passes (every output seeded), as the code that runs."""
        return self.forward_source + "\n\n" + self.backward_source(frozenset(range(len(self.internal_outputs))))

    # ---- a call --------------------------------------------------------------------------------

    def _backward(self, node: _graph.Node, slots: Any) -> None:
        seeded = frozenset(slots)
        seeds = tuple(slots.get(i, 0.0) for i in range(len(self.internal_outputs)))
        values, inputs, wrappers = _graph.saved_of(node)
        operands, edges = _graph.operands(node), _graph.edge_marks(node)
        # each argument and parameter starts from its cotangent so far, as in the eager pass; a
        # Value that stands at two places (an argument the function also closes over) starts
        # the second from -0.0, and its two sums are added
        first: dict[int, int] = {}
        for k, (x, edge) in enumerate(zip(operands, edges, strict=True)):
            if edge is not None:
                first.setdefault(id(x), k)
        start = tuple(
            _graph.cotangent(x) if edge is not None and first[id(x)] == k else -0.0
            for k, (x, edge) in enumerate(zip(operands, edges, strict=True))
        )
        gradients, finals = self.backward_for(seeded)(seeds, values, inputs, start)
        for i, final in zip(sorted(seeded), finals, strict=True):  # an output's .grad, as eager's
            wrapper = wrappers[i]()
            if wrapper is not None and final is not None:
                _graph.set_cotangent(wrapper, final)
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
                _graph.set_cotangent(x, gradient)
            else:
                _graph.add_cotangent(x, gradient)

    def run(self, leaves: list[Any]) -> Any:
        external_values: list[Any] = []
        seen: set[int] = set()
        for x, a in zip(leaves, self.arguments, strict=True):
            if id(a) in seen:
                continue
            seen.add(id(a))
            external_values.append(x)
        external_values += self.parameters
        data = [x.data if isinstance(x, Value) else x for x in external_values]
        values = self.forward(data)
        edges = tuple(True if isinstance(x, Value) and x.requires_grad else None for x in external_values)
        call = None
        if state.grad_enabled and any(edges):
            # the outputs are held weakly (they hold the call node): no reference cycle
            wrappers: list[Callable[[], Value | None]] = [_dead] * len(self.internal_outputs)
            call = _graph.make(Value, 0.0, self.op, tuple(external_values), edges, None, (values, data, wrappers))
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
                node = self.live[k]
                position = self.internal_outputs.index(k)
                if call is not None and self.takes_grad[id(node)]:
                    value = _graph.make(Value, values[self.kept_place[id(node)]], OUTPUT, call, position, None, None)
                    wrappers[position] = weakref.ref(value)
                else:
                    value = Value(values[self.kept_place[id(node)]], requires_grad=False)
                made[k] = value
                results.append(value)
        return results[0] if self.kind == "value" else wrap(results) if self.kind == "vector" else results


def _dead() -> None:
    """The weak reference of an output that has none."""
    return None


def _new_recorded(data: float, requires_grad: bool, cls: type[Value] = _Recorded) -> Value:
    value = Value(data, requires_grad=requires_grad)
    value.__class__ = cls
    return value


def _outputs(result: Any) -> tuple[str, list[Any]]:
    if isinstance(result, Value):
        return "value", [result]
    if isinstance(result, Vector):
        return "vector", list(result)
    if isinstance(result, (list, tuple)) and all(isinstance(x, (Value, numbers.Real)) for x in result):
        return "list", list(result)
    raise TypeError(
        f"a compiled function must return a Value, a Vector or a list of Values, got {type(result).__name__}"
    )


class Compiled:
    """A function recorded once per structure of its arguments and replayed as generated code.

    Call it as the function itself. ``source`` is the generated code of the last recording:
    the forward pass, then the reverse pass, one operation a line.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"vjpgrad.compile takes a function, got {type(fn).__name__}")
        self.fn = fn
        self._cache: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
        self._lock = threading.RLock()
        self._last: _Entry | None = None
        functools.update_wrapper(self, fn)

    @property
    def source(self) -> str:
        """The generated code of the last recording (empty before the first call)."""
        return "" if self._last is None else self._last.source

    @property
    def recordings(self) -> int:
        """How many recordings are kept."""
        return len(self._cache)

    def __call__(self, *args: Any) -> Any:
        if state.recording is not None:  # inside another compiled function's recording: be recorded
            return self.fn(*args)
        key, leaves = _flatten(args)
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None and entry.parameter_flags != tuple(p.requires_grad for p in entry.parameters):
                entry = None
            if entry is None:
                entry = _Entry(self.fn, args, leaves, next(_numbers))
                self._cache[key] = entry
                if len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(key)
            self._last = entry
        return entry.run(leaves)

    def __repr__(self) -> str:
        return f"<vjpgrad.compile of {getattr(self.fn, '__qualname__', 'a function')}>"


_numbers = itertools.count(1)


def compile(fn: Callable[..., Any]) -> Compiled:
    """Record ``fn`` once per structure of its arguments and replay it as generated Python.

    ``fn(*args)`` returns a Value or a Vector and may use Values it closes over (parameters,
    read again at every call). Arguments are numbers, Values, Vectors and lists or tuples of
    them. The result behaves as ``fn``'s: the same numbers, and ``backward`` adds the same
    gradients, bit for bit. Inside ``fn``, Python that depends on a Value's number is refused.
    """
    return Compiled(fn)
