"""``vjpgrad.compile``: record a function once, replay it as generated straight-line Python.

The first call with a given structure of arguments runs the function once, eagerly, while
``_graph`` records every operation it makes (``_graph.Recording``). ``_codegen`` writes the
recorded graph as two Python functions, forward and reverse, and this module runs them: each
later call reads the arguments and the parameters (the Values the function closes over) as
numbers, runs the forward code, and returns Values that stand on one node of the graph. A
``backward`` through that node runs the reverse code, which hands each argument and parameter
the gradient the eager graph would have handed it, bit for bit.

The rule: a compiled function gives exactly the bits eager code gives, or it refuses with
``DataDependentError`` naming the user's file and line. There is no third outcome.

- Structure fixes a recording: the kinds, nesting and lengths of the arguments, which of them
  are the same Value, whether each requires grad, the value of every int, bool, NumPy integer
  or bool, string or None argument, the identity of any other object passed (``self``), the
  names of keyword arguments, and grad mode. A new structure is a new recording.
- Floats, NumPy floats and Values are data: a new number replays the same code. A Value made
  inside from a float argument (``Value(lr)``) holds that argument's number at every call.
- Reading a Value's number while recording (``.data``, ``.grad``, ``float()``, ``int()``,
  ``.item()``, ``bool()``, ``if`` on a Value, any comparison including ``==``, formatting) is
  refused, whoever made the Value: the recording would fix the branch or the number it read.
- ``detach()`` inside is a cut: no gradient passes, the result requires no grad.
- Parameters are the Values the function reaches without being given them (closed over,
  globals, attributes of ``self``). Each is found again at every call by the path the
  recording found it by (``model.layers[0].w[2]``): a parameter rebound since
  (``m.w = Value(5.0)``, a checkpoint loaded) or a list of them that changed length makes a
  new recording, never a stale replay. Other Python state the function reads (a flag, a
  string attribute) is fixed when it is recorded, as ``jax.jit`` fixes it: call
  ``f.reset()`` after changing such state.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import linecache
import numbers
import re
import threading
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from vjpgrad import _graph
from vjpgrad._codegen import Writer
from vjpgrad._mode import DataDependentError, caller_location, refusing_numbers, state
from vjpgrad._ops import TIMES, Form, Op
from vjpgrad._value import Value, pow_base
from vjpgrad._vector import Vector, wrap

VALUES_LINE = "    # values"  # where the reverse pass unpacks the values it reads

CACHE_SIZE = 64
"""Recordings kept per compiled function (the least recently used goes first)."""
BACKWARDS_KEPT = 8
"""Reverse passes kept per recording, one per set of outputs a pass is seeded at."""
SEARCH_LIMIT = 200_000
"""Objects looked at, at most, to find the paths to a recording's parameters."""

_number = _graph.number


class _Number(Value):
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


def _is_numpy(x: object, *kinds: str) -> bool:
    kind = type(x)
    return kind.__module__ == "numpy" and kind.__name__ in kinds


class _Arguments:
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


def _rebuild(x: Any, leaves: Iterator[Any]) -> Any:
    """``x`` again, with every Value and float replaced by the next of ``leaves``."""
    if isinstance(x, Value):
        return next(leaves)
    if isinstance(x, numbers.Real) and not isinstance(x, (bool, numbers.Integral)):
        return next(leaves)
    if isinstance(x, Vector):
        return Vector([_rebuild(item, leaves) for item in x])
    if type(x) in (list, tuple) or (isinstance(x, tuple) and hasattr(x, "_fields")):
        items = [_rebuild(item, leaves) for item in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)  # a namedtuple takes fields
    return x


# ---- where the parameters are: paths from the function's roots, checked at every call --------------

_Step = tuple[str, Any]
"""One step of a path: ("attribute", name), ("slot", name), ("item", index), ("key", key),
("cell", index), ("global", name), ("self", None), ("function", None)."""


def _code_names(code: types.CodeType) -> set[str]:
    """The global names a code object and the code nested in it may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _children(x: Any) -> Iterator[tuple[_Step, Any]]:
    """The objects ``x`` holds that a path may go through, each with the step that reaches it."""
    if isinstance(x, (Value, str, bytes, int, float, complex, types.ModuleType, type)) or x is None:
        return
    if type(x) in (list, tuple) or isinstance(x, tuple):
        for i, item in enumerate(x):
            yield ("item", i), item
        return
    if type(x) is dict:
        for key, item in x.items():
            if isinstance(key, (str, int)):
                yield ("key", key), item
        return
    if isinstance(x, types.MethodType):
        yield ("self", None), x.__self__
        yield ("function", None), x.__func__
        return
    if isinstance(x, types.FunctionType):
        for i, cell in enumerate(x.__closure__ or ()):
            try:
                yield ("cell", i), cell.cell_contents
            except ValueError:  # an empty cell
                continue
        for name in sorted(_code_names(x.__code__)):
            if name in x.__globals__:
                yield ("global", name), x.__globals__[name]
        return
    if isinstance(x, functools.partial):
        yield ("partial", None), x.func
        return
    holder = getattr(x, "__dict__", None)
    if type(holder) is dict:
        for name, item in holder.items():
            yield ("attribute", name), item
    for kind in type(x).__mro__:
        for name in kind.__dict__.get("__slots__", ()):
            if name.startswith("__") or not hasattr(x, name):
                continue
            yield ("slot", name), getattr(x, name)


def _follow(x: Any, step: _Step) -> Any:
    """The object one step from ``x`` (raises if the step no longer leads anywhere)."""
    kind, key = step
    if kind == "item":
        return tuple.__getitem__(x, key) if isinstance(x, tuple) else list.__getitem__(x, key)
    if kind == "key":
        return dict.__getitem__(x, key)
    if kind == "attribute":
        return vars(x)[key]
    if kind == "slot":
        return getattr(x, key)
    if kind == "cell":
        return x.__closure__[key].cell_contents
    if kind == "global":
        return x.__globals__[key]
    if kind == "self":
        return x.__self__
    if kind == "function":
        return x.__func__
    return x.func  # "partial"


def _size(x: Any) -> int | None:
    """The length of a list, tuple or dict (a guard: items added or removed show), else None."""
    return len(x) if isinstance(x, (list, tuple, dict)) else None


class _Guard:
    """The paths from the roots of a call to each parameter, as a tree of steps, checked at every
    call: each step must still lead to an object, each container must keep its length, and each
    path must end at the very parameter the recording used."""

    def __init__(self, roots: list[Any], parameters: list[Value]) -> None:
        wanted = {id(p): k for k, p in enumerate(parameters)}
        found: dict[int, tuple[int, tuple[_Step, ...]]] = {}
        seen: set[int] = set()
        queue: list[tuple[int, tuple[_Step, ...], Any]] = [(r, (), root) for r, root in enumerate(roots)]
        looked = 0
        while queue and len(found) < len(wanted) and looked < SEARCH_LIMIT:  # breadth first: shortest paths
            next_queue: list[tuple[int, tuple[_Step, ...], Any]] = []
            for root, path, x in queue:
                looked += 1
                if id(x) in wanted and id(x) not in found:
                    found[id(x)] = (root, path)
                if id(x) in seen:
                    continue
                seen.add(id(x))
                next_queue.extend((root, (*path, step), child) for step, child in _children(x))
            queue = next_queue
        self.unguarded = [p for p in parameters if id(p) not in found]
        # a tree of steps: each node is (step, length of the container it reaches, children, parameter index)
        self.tree: dict[Any, Any] = {}
        for key, (root, path) in found.items():
            node = self.tree.setdefault(("root", root), [None, {}, None])
            target = roots[root]
            for step in path:
                node[0] = _size(target)
                target = _follow(target, step)
                node = node[1].setdefault(step, [None, {}, None])
            node[2] = wanted[key]
        self.parameters = parameters

    def holds(self, roots: list[Any]) -> bool:
        """Whether every parameter is still where the recording found it."""
        try:
            for (_, r), node in self.tree.items():
                if not self._holds(roots[r], node):
                    return False
        except (LookupError, AttributeError, TypeError, ValueError):
            return False  # a step leads nowhere now: record anew (the function says what is wrong)
        return True

    def _holds(self, x: Any, node: list[Any]) -> bool:
        size, children, parameter = node
        if parameter is not None and x is not self.parameters[parameter]:
            return False
        if size is not None and _size(x) != size:
            return False
        return all(self._holds(_follow(x, step), child) for step, child in children.items())


def _roots(fn: Callable[..., Any], objects: list[Any]) -> list[Any]:
    """Where a function's parameters can be found: the function itself (its closure, the
    globals it names, its ``self``) and the objects the call was given."""
    return [fn, *objects]


# ---- the node that stands for one call --------------------------------------------------------------


def _output_backward(node: _graph.Node, g: Any) -> None:
    """An output of a compiled call hands its gradient to the call, kept apart per output (the
    call's reverse pass is seeded with one gradient per output)."""
    (call,) = _graph.operands(node)
    _graph.saved_of(call)[3][_graph.saved_of(node)] = g


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


class _Entry:
    """One recording of a function: its generated code, and how to call and differentiate it."""

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any], read: _Arguments) -> None:
        leaves = read.leaves
        arguments = [
            Value(_number(x), requires_grad=x.requires_grad) if isinstance(x, Value) else _Number(x, False)
            for x in leaves
        ]
        distinct: dict[int, Value] = {}
        for x, a in zip(leaves, arguments, strict=True):
            if isinstance(x, Value):
                distinct.setdefault(id(x), a)
        arguments = [distinct[id(x)] if isinstance(x, Value) else a for x, a in zip(leaves, arguments, strict=True)]
        recording = _graph.Recording()
        feed = iter(arguments)
        rebuilt = [_rebuild(arg, feed) for arg in args]
        rebuilt_kwargs = {name: _rebuild(kwargs[name], feed) for name in sorted(kwargs)}
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
        self.kind, outputs = _outputs(result)
        self.objects = [_held(x) for x in read.objects]
        self._build(recording, arguments, outputs)
        self.guard = _Guard(_roots(fn, read.objects), self.parameters)

    def _build(self, recording: _graph.Recording, arguments: list[Value], outputs: list[Any]) -> None:
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
        # a leaf made inside from a float argument: a parameter whose number is that argument's
        argument_place = {id(a): k for k, a in enumerate(arguments)}
        self.refreshed: list[tuple[int, int]] = []  # (parameter index, leaf index of the argument)

        def outside(x: Value) -> None:
            if id(x) in recorded or id(x) in argument_ids or id(x) in names or id(x) in constants:
                return
            if id(x) in recording.from_numbers:
                self.refreshed.append((len(parameters), argument_place[id(recording.from_numbers[id(x)])]))
            elif _graph.op_of(x) is None and _graph.made_after(x, recording) and not x.requires_grad:
                constants[id(x)] = _number(x)  # a constant made inside: its number
                return
            names[id(x)] = f"p{len(parameters)}"  # a parameter, or a Value made inside that takes gradient
            parameters.append(x)

        for node in live:
            for x in _graph.operands(node):
                if isinstance(x, Value):
                    outside(x)
        for x in outputs:  # an output that is a parameter or a constant made inside
            if isinstance(x, Value):
                outside(x)
        externals += parameters
        for k, node in enumerate(live, start=1):
            names[id(node)] = f"t{k}"
        # gradient flows where the recording made edges: detach() and no_grad() made none
        takes_grad = {id(x): x.requires_grad for x in externals}
        for node in live:
            takes_grad[id(node)] = node.requires_grad
        self.arguments = arguments
        self.parameters = parameters
        self.externals = externals
        self.parameter_flags = tuple(p.requires_grad for p in parameters)
        self.live = live
        self.recorded_ids = {id(node) for node in live}
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
        self.filename = f"<vjpgrad.compile #{next(_numbers)}>"
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

    def _edges_of(self, node: _graph.Node) -> list[_graph.Node]:
        """The operands ``node`` hands gradient to, as the recording made its edges (none for an
        argument or a parameter: the pass stops there)."""
        if id(node) not in self.recorded_ids:
            return []
        return [x for _, x, _ in _graph.edges(node)]

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
            stack += self._edges_of(node)
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

    def matches(self, fn: Callable[..., Any], objects: list[Any]) -> bool:
        """Whether this recording replays for a call with these objects: the same objects, every
        parameter still where it was found and as it was flagged."""
        if any(held() is not x for held, x in zip(self.objects, objects, strict=True)):
            return False
        if self.parameter_flags != tuple(p.requires_grad for p in self.parameters):
            return False
        return self.guard.holds(_roots(fn, objects))

    def _backward(self, node: _graph.Node, g: Any) -> None:
        values, inputs, wrappers, slots = _graph.saved_of(node)
        seeded = frozenset(slots)
        seeds = tuple(slots.get(i, 0.0) for i in range(len(self.internal_outputs)))
        slots.clear()  # handed on: the next pass through this call starts empty
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
        for parameter, leaf in self.refreshed:  # Value(lr) inside: the number of this call's lr
            _graph.set_number(self.parameters[parameter], float(leaves[leaf]))
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
            call = _graph.make(Value, 0.0, self.op, tuple(external_values), edges, None, saved)
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


def _held(x: Any) -> Callable[[], Any]:
    """A reference to an object passed to a call: weak where the object allows it, so that a
    recording does not keep a model alive, and never confused with a new object at its address."""
    try:
        return weakref.ref(x)
    except TypeError:
        return lambda: x


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
    the forward pass, then the reverse pass, one operation a line. ``reset()`` drops every
    recording (after changing Python state the function reads, as with ``jax.jit``).
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
        read = _Arguments(args, kwargs)
        with self._lock:
            entry = self._cache.get(read.key)
            if entry is not None and not entry.matches(self.fn, read.objects):
                entry = None  # a parameter rebound, an object at a reused address: record anew
            if entry is None:
                entry = _Entry(self.fn, args, kwargs, read)
                self._cache[read.key] = entry
                if len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(read.key)
            self._last = entry
        return entry.run(read.leaves)

    def __repr__(self) -> str:
        return f"<vjpgrad.compile of {getattr(self.fn, '__qualname__', 'a function')}>"


_numbers = itertools.count(1)


def compile(fn: Callable[..., Any]) -> Compiled:
    """Record ``fn`` once per structure of its arguments and replay it as generated Python.

    ``fn(*args, **kwargs)`` returns a Value, a Vector or a list of Values and may use Values it
    closes over (parameters, found again at every call). The result behaves as ``fn``'s: the
    same numbers, and ``backward`` adds the same gradients, bit for bit; or, where the function
    depends on a Value's number, a ``DataDependentError`` naming the line. See the module
    docstring for what makes a new recording.
    """
    return Compiled(fn)


__all__ = ["Compiled", "DataDependentError", "caller_location", "compile"]
