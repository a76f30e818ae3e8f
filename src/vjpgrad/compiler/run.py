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
import inspect
import itertools
import operator
import threading
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vjpgrad.compiler import cache, fold, guard, lines, world
from vjpgrad.compiler.record import (
    Arguments,
    Recorded,
    argument_attributes,
    argument_classes,
    argument_names,
    build,
    collection_paused,
    describe,
    described,
    described_part,
    distinct,
    number_arguments,
    record,
    where,
)
from vjpgrad.compiler.write import Program, namespace
from vjpgrad.core import graph
from vjpgrad.core.modes import FOR_A_NUMBER, USER_FRAMES, DataDependentError, enable_grad, state, warn_at_users_line
from vjpgrad.core.ops import Op, times
from vjpgrad.core.value import Value
from vjpgrad.recording import (
    RecompileWarning,
    add_gradients,
    cotangents,
    numbers_of,
    saved_of,
    set_cotangent,
    set_cotangents,
)

CACHE_SIZE = 64
"""Recordings kept per compiled function (the least recently used goes first)."""
BACKWARDS_KEPT = 64
"""Reverse passes kept per recording, one per set of outputs a pass is seeded at."""

_number = graph.number
_numbers = itertools.count(1)


@dataclass(slots=True)
class CallState:
    """What a compiled call's node keeps for its reverse pass (the node's saved data, read back
    with ``state_of``): one per call, made when the call returns outputs that take gradient."""

    values: tuple[Any, ...]
    """What the forward code handed the reverse code (``CompiledCode.kept_place`` says where each is)."""
    inputs: list[Any]
    """The numbers of the arguments and parameters, as the forward code read them."""
    outputs: list[Callable[[], Value | None]]
    """Per output of the recording: a weak reference to the Value this call returned for it."""
    handed: dict[int, Any]
    """The gradient each output (by its position) has handed the call in the pass under way."""
    edges: tuple[bool, ...]
    """Per argument and parameter: whether it takes gradient (the call's operands that do)."""
    freed: list[frozenset[int]]
    """The operations inside (their positions in the recording) that earlier passes freed."""
    ran: list[frozenset[int]]
    """The operations inside that the last pass through this call ran (what a freeing pass frees)."""
    replayed: ReplayedCall
    """How the recording this call replayed runs (its reverse pass, a whole pass alone)."""


def state_of(call: graph.Node) -> CallState:
    """The state a compiled call's node keeps (``CallState``)."""
    saved: CallState = saved_of(call)
    return saved


def _output_backward(node: graph.Node, g: Any) -> None:
    """An output of a compiled call hands its gradient to the call, kept apart per output: the
    call's reverse pass is seeded with one gradient per output it is reached from."""
    call = graph.operands(node)[0]
    state_of(call).handed[saved_of(node)] = g


def _hands_on(g: Any, s: Any) -> Any:
    """An output's edge to its call: ``g`` itself (the call's own backward reads it)."""
    return g


def _output_whole_pass(node: graph.Node, seed: Any, retain_graph: bool) -> bool:
    """``backward()`` called on an output of a compiled call alone: the call's recording runs the
    pass by itself when nothing else is in it (``ReplayedCall.whole_pass``)."""
    call = graph.operands(node)[0]
    return state_of(call).replayed.whole_pass(node, call, seed, retain_graph)


OUTPUT = Op(
    "output",
    0,
    lambda *xs: 0.0,
    (),
    (_hands_on,),
    "",
    doc="an output of a compiled call",
    backward=_output_backward,
    whole_pass=_output_whole_pass,
)
"""An output of a compiled call: its operands are the call, the arguments and parameters it was
computed from, and the other outputs it was computed from; their edges only say what a pass from
it reaches (the call hands them their gradients)."""


FRAMES_KEPT = 2
"""How many idle frames a pass keeps: one serves a program called once at a time, the second a
call inside a call (a custom operation's code that calls the function again) or a second
thread. An idle frame holds the numbers of the call it last ran (about 0.25 MB for each of the
GPT step's two passes); frames made past these are dropped after their call."""


class Frames:
    """A pass of generated code (``write.kept_frame``: a generator whose frame serves call after
    call), called as the function it stands for: ``frames(*arguments)`` sends the arguments into
    an idle frame and returns what it yields. Frames are made as needed and up to
    ``FRAMES_KEPT`` kept while idle, so a call that comes while another runs (another thread, a
    custom operation's code that calls the compiled function again) gets a frame of its own; a
    frame whose code raised is dropped. ``function``: the generator function, for what its code
    says (``__code__``)."""

    __slots__ = ("_idle", "function")

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function
        self._idle: list[Any] = []

    def __call__(self, *arguments: Any) -> Any:
        idle = self._idle
        if idle:
            frame = idle.pop()
        else:
            frame = self.function()
            next(frame)
        result = frame.send(arguments)  # a frame whose code raises here is not kept
        if len(idle) < FRAMES_KEPT:
            idle.append(frame)
        return result


class CompiledCode:
    """A recording's code: the forward pass and the reverse pass of each set of outputs a pass is
    seeded at, loaded from the compiled-code cache (``compiler.cache``) or written from the
    recording (``program``), each when a call first needs it."""

    def __init__(self, recorded: Recorded, internal_outputs: list[int]) -> None:
        self.recorded = recorded
        self.internal_outputs = internal_outputs
        self._program: Program | None = None
        self._too_large: fold.CodeTooLargeError | None = None  # the search found the code past OPERATIONS_LIMIT
        self._table: tuple[fold.StoredBlock, ...] | None = None
        self._key: str | None = None
        self.forward: Callable[..., Any] | None = None  # set last: once set, the code is ready
        self._preparing = threading.Lock()
        self.kept_place: dict[int, int] = {}
        self.depends: list[tuple[list[int], list[int]]] = []
        self._backwards: dict[tuple[frozenset[int], bool], Callable[..., tuple[Any, ...]]] = {}
        self._reached: dict[frozenset[int], tuple[frozenset[int], frozenset[int]]] = {}

    @property
    def program(self) -> Program:
        """The writer of this recording's code, made the first time it is needed: to write the
        code on a cache miss, for ``source``, and for reverse passes other than the one cached.
        Raises ``fold.CodeTooLargeError`` (every time asked, searching once) where the code found would
        hold more than ``OPERATIONS_LIMIT`` operations; code loaded from the cache was within it."""
        if self._too_large is not None:
            raise self._too_large
        if self._program is None:
            recorded = self.recorded
            try:
                self._program = fold.make_program(
                    recorded.live,
                    recorded.externals,
                    len(distinct(recorded.arguments)),
                    recorded.constants,
                    self.internal_outputs,
                    {},  # no Value made inside reads an argument: numbers are structure
                    recorded.edges,
                    self._table,  # the blocks the loaded code was written with, if it was loaded
                    columns=recorded.columns,  # what the first call read of live, until the code is ready
                    limit=OPERATIONS_LIMIT if self._table is None else None,
                )
            except fold.CodeTooLargeError as error:
                self._too_large = error
                raise
        return self._program

    def prepare(self) -> None:
        """Make the forward pass and the reverse pass of every output ready: loaded from the
        compiled-code cache (``compiler.cache``) when this structure was compiled before on this
        machine, else written from the recording, compiled, and stored there."""
        if self.forward is not None:
            return
        with self._preparing, collection_paused():  # one thread prepares; the others wait for it
            if self._too_large is not None:  # found past the bound by the thread they waited for
                raise self._too_large
            if self.forward is None:
                self._prepare()

    def _prepare(self) -> None:
        try:
            description = describe(self.recorded, self.internal_outputs) if cache.enabled() else None
            key = cache.key(description) if description is not None else None
            payload = cache.load(key) if key is not None else None
            if payload is None or not self._use(payload, key):
                program = self.program
                self.recorded.columns = None  # the search has read them: the writing needs the memory more
                payload = program.payload(self._code_name(key))
                if not self._use(payload, key):  # code just written that its own checks refuse
                    raise RuntimeError(
                        "vjpgrad.compile wrote code for this function that it cannot load (a bug in vjpgrad: "
                        "please report it); call the function uncompiled meanwhile"
                    )
                if key is not None and payload["cacheable"]:
                    cache.store(key, payload)
        finally:  # read for the key and the search alone: the memory goes back once the code is ready
            self.recorded.columns = None

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
            if not (inspect.isgeneratorfunction(forward) and inspect.isgeneratorfunction(backward)):
                return False  # passes written as functions, not as frames kept between calls
            lines.forget_with(forward)  # their text, where it was written in this process, goes with them
            lines.forget_with(backward)
            forward, backward = Frames(forward), Frames(backward)
            live = self.recorded.live
            returned = set(self.internal_outputs)  # only the outputs' values are looked up among those kept
            kept_place = {id(live[k]): i for i, k in enumerate(payload["kept"]) if k in returned}
            reached, inside = payload["reached"]
            depends = [(list(a), list(b)) for a, b in payload["depends"]]
            table = fold.checked_table(payload["fold"], len(live))
        except (KeyError, TypeError, ValueError, IndexError):  # a payload of another shape: write the code
            return False
        every = frozenset(range(len(self.internal_outputs)))
        self.kept_place, self.depends = kept_place, depends
        self._backwards[(every, False)] = backward
        self._reached[every] = (frozenset(reached), frozenset(inside))
        self._key = key
        if self._program is None:  # a reverse pass written later folds the blocks the loaded forward did
            self._table = table
        self.forward = forward  # last: another thread that sees it finds the rest in place
        return True

    def _load(self, source: str, name: str) -> Callable[..., Any]:
        """A reverse pass written after the first: under a file name of its own (another pass's
        lines are not its), its text shown in tracebacks for as long as it is kept."""
        namespace = self.program.namespace
        filename = f"{self._code_name(self._key)} {name} {next(_numbers)}>"
        lines.show(filename, source)
        exec(builtins.compile(source, filename, "exec"), namespace)  # code written from the graph alone
        function = namespace.pop(name)
        lines.forget_with(function)
        return Frames(function)

    def backward_for(self, seeded: frozenset[int], checked: bool = False) -> Callable[..., tuple[Any, ...]]:
        """The reverse pass seeded at ``seeded``; ``checked``: the one anomaly mode runs, which
        raises at the first contribution that is nan, as eager code does. Past ``BACKWARDS_KEPT``,
        the one used longest ago goes."""
        key = (seeded, checked)
        backwards = self._backwards
        function = backwards.get(key)
        if function is None:
            if len(backwards) >= BACKWARDS_KEPT:
                del backwards[next(iter(backwards))]
            source = self.program.backward_source(seeded, checked=checked)
            function = backwards[key] = self._load(source, "backward")
        elif len(backwards) > 1:  # used now: the last to go
            backwards[key] = backwards.pop(key)
        return function

    def reached(self, seeded: frozenset[int]) -> tuple[frozenset[int], frozenset[int]]:
        """What a pass from the outputs ``seeded`` reaches: the positions of the arguments and
        parameters, and the positions (in the recording) of the operations inside."""
        known = self._reached.get(seeded)
        if known is None:
            known = self._reached[seeded] = (
                self.program.reached_externals(seeded),
                self.program.reached_inside(seeded),
            )
        return known


class Replay:
    """One recording of a function, kept to replay it: what it recorded, what a call is checked against
    (``stale_for``), its code (``code``, a ``CompiledCode``), and how a call runs and is
    differentiated (``call``, a ``ReplayedCall``).

    The recorded run is eager code, so the first call returns its own result (``first``); the
    code is written and loaded when the recording is first replayed (``CompiledCode.prepare``)."""

    def __init__(self, fn: Callable[..., Any], read: Arguments) -> None:
        self.recorded = recorded = record(fn, read)
        self.arguments = recorded.arguments
        self.parameters = recorded.parameters
        # every Value of the world but those passed at recording too (``aliased``): one passed
        # now may be told apart by the code (``x is w``, ``table.get(x)``) even if no operation reads it
        passed = {id(value) for _, value in recorded.aliases}
        self.world_value_ids = frozenset(k for k in recorded.world.values if k not in passed)
        self.outputs = recorded.outputs
        self.fn = fn
        self.guard, self.guard_source = guard.loaded(recorded.world)
        self.numbers_by_identity = bool(recorded.world.numbers)
        self.attribute_names = recorded.world.attribute_names
        self.argument_attributes = argument_attributes(read.leaves, self.attribute_names)
        # checked at each call where the code may read what the Values passed carry: they
        # carried attributes it reads, it asks (``hasattr``, ``x.label``), or a subclass's
        self.asks_attributes = (
            self.argument_attributes is not None
            or recorded.world.asks_attributes
            or any(type(x) is not Value for x in read.leaves)
        )
        self.internal_outputs = list(dict.fromkeys(k for kind, k in recorded.outputs if kind == "inside"))
        self.objects = [_held(x) for x in read.objects]
        self.classes = argument_classes(read)  # the guard's roots after the objects: fixed by the key
        self.distinct_leaves = len(distinct(read.leaves)) == len(read.leaves)
        self.argument_count = len(distinct(read.leaves))
        self.aliased = [(k, _held(value)) for k, value in recorded.aliases]
        self.takes_any = any(recorded.live[k].requires_grad for k in self.internal_outputs)
        self.leaf_outputs = frozenset(  # outputs that are Values made inside: leaves, as in eager code
            i for i, k in enumerate(self.internal_outputs) if graph.op_of(recorded.live[k]) is None
        )
        self.code = CompiledCode(recorded, self.internal_outputs)
        as_eager: dict[int, Value] = {}  # one per node: a Value returned at two places is one object
        first = [
            as_eager.setdefault(id(node), _as_eager(node)) if kind == "inside" else node
            for (kind, k), node in zip(recorded.outputs, _outputs_of(recorded), strict=True)
        ]
        # the attributes the function gave the Values it makes and returns (a label...) and the
        # class of one of the user's Value subclasses, given again to each call's (kept as data)
        self.dressed = _dressing(fn, recorded.outputs, first)
        self.first: Any = build(recorded.shape, first, read.args, read.kwargs)  # the recorded run's result
        recorded.result = None
        self.call = ReplayedCall(self)

    @property
    def program(self) -> Program:
        """The writer of this recording's code (``CompiledCode.program``)."""
        return self.code.program

    @property
    def source(self) -> str:
        """Forward and reverse passes (every output seeded), as the code that runs."""
        return self.code.program.source

    def stale_for(self, read: Arguments) -> bool:
        """Whether this recording is stale for a call (the one place that decides it): the call
        then records anew. ``Compiled`` keeps recordings by the structure of the arguments
        (``Arguments.key``: kinds, lengths, which Values are one, ``requires_grad``, grad mode),
        so only recordings of the call's structure are asked; one of them is stale when

        - an object passed (``self``, a model: structure by identity) is not the one recorded;
        - a Value the function found in its world (a parameter, a dict's key) is passed as an
          argument (the recording kept them apart);
        - an argument the function also reached in its world is not that same object now;
        - the guard fails: the function's world differs from the facts observed while recording
          (``compiler.world``: identities, numbers' bits, lengths and orders, Values'
          ``requires_grad``), or which numbers passed are one object differs where the code
          compares them with ``is``.

        (How many recordings are made before compile gives up and runs the function uncompiled is
        ``RECOMPILE_LIMIT`` and its siblings, counted by ``Compiled``: not a question of staleness.)"""
        objects = read.objects
        if objects and any(held() is not x for held, x in zip(self.objects, objects, strict=True)):
            return True
        if not self.world_value_ids.isdisjoint(map(id, read.leaves)):
            return True  # a Value of the world passed as an argument: the recording kept them apart
        if self.aliased and any(held() is not read.leaves[k] for k, held in self.aliased):
            return True  # an argument the function also reaches itself: the same one, or record anew
        if self.asks_attributes and argument_attributes(read.leaves, self.attribute_names) != self.argument_attributes:
            return True  # what the Values passed carry (a label the code reads): structure
        if self.numbers_by_identity:  # the code compares with `is`: which numbers passed are one object
            numbers = [x for _, x in number_arguments(read.args, read.kwargs)]
            return not self.guard(self.fn, *objects, *self.classes, _numbers=numbers)
        return not self.guard(self.fn, *objects, *self.classes)


class ReplayedCall:
    """How the calls of a recording run and are differentiated: each call reads the arguments'
    and parameters' numbers, runs the forward code and returns Values that stand on one node of
    the user's graph (``op``; its state a ``CallState``), whose backward runs the reverse code.
    What it keeps between calls is what the code's shape fixes (which operands take gradient,
    item getters), found at the first call that needs it."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.code = replay.code
        self.recorded = replay.recorded
        self.parameters = replay.parameters
        self.outputs = replay.outputs
        self.dressed = replay.dressed
        self.internal_outputs = replay.internal_outputs
        self.leaf_outputs = replay.leaf_outputs
        self.takes_any = replay.takes_any
        self.distinct_leaves = replay.distinct_leaves
        self.argument_count = replay.argument_count
        self._edges: tuple[bool, ...] | None = None
        self._handed: dict[frozenset[int], tuple[Any, int]] = {}
        self._gather: dict[frozenset[int], tuple[Any, Any, bool, bool]] = {}
        self._operands_of: dict[int, list[int]] = {}
        self._pick: dict[int, Callable[[Sequence[Any]], tuple[Any, ...]]] = {}  # per output: its operands, picked
        self._flags: dict[int, tuple[bool, ...]] = {}  # (True,) * n: every edge of an output takes gradient
        self._argument_operands: dict[int, int] = {}  # per output: its leaves that are arguments, -1: not all leaves
        self._handed_alone: dict[int, Callable[[Any], tuple[Any, ...]]] = {}  # per output: its leaves' gradients
        self._alone: dict[int, tuple[frozenset[int], frozenset[int]]] = {}  # per output: seeded alone, what runs
        self._code_alone: dict[int, Callable[..., tuple[Any, ...]]] = {}  # per output: its pass's reverse code
        self._zeros_kept: tuple[float, ...] = ()
        self._no_edges: tuple[None, ...] = ()  # the call's own edges: none
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

    def _backward(self, node: graph.Node, g: Any) -> None:
        call = state_of(node)
        handed = call.handed
        # a Value made inside and returned is a leaf, reached when an output reached is computed
        # from it; its gradient so far (its seed, later operations') starts its sum, as eager's
        code = self.code
        leaves = {j for i in handed for j in code.depends[i][1] if j in self.leaf_outputs}
        for j in leaves:
            leaf = call.outputs[j]()
            handed[j] = graph.cotangent(leaf) if leaf is not None else 0.0
        seeded = frozenset(handed)
        seeds = tuple(handed.get(i, 0.0) for i in range(len(self.internal_outputs)))
        handed.clear()  # handed on: the next pass through this call starts empty
        reached, inside = code.reached(seeded)
        if _any_freed(call.freed, inside):  # an operation an earlier pass freed, as eager code would say
            raise RuntimeError(f"{graph.FREED_MESSAGE} (inside a compiled call)")
        call.ran[:] = [inside]  # this call's operations this pass ran: what _release frees, if the pass frees
        operands = graph.operands(node)
        backward = code.backward_for(seeded, checked=state.detect_anomaly)
        # each argument and parameter the pass reaches starts from its cotangent so far, as in eager
        start = self._start(seeded, reached, operands)
        gradients, finals = backward(seeds, call.values, call.inputs, start)
        for i, final in zip(sorted(seeded), finals, strict=True):  # an output's .grad, as eager's
            output = call.outputs[i]()
            if output is not None and final is not None:
                set_cotangent(output, final)
        self._hand_on(seeded, operands, call.edges, gradients)

    def whole_pass(self, node: graph.Node, call: graph.Node, seed: Any, retain_graph: bool) -> bool:
        """``backward()`` from the output ``node`` of ``call`` alone, run without the engine's walk
        when the pass holds nothing else: the output is computed from no other output, and every
        argument and parameter it hands gradient to is a leaf. The pass is then the table's pass
        exactly: the output's seed runs the reverse code from -0.0 at every leaf (no other
        operation hands them anything), each leaf's gradient is added into its ``.grad``, then the
        output's and the call's own, and the two nodes are freed unless ``retain_graph``. Anything
        else (another output, a leaf that is an operation, a freed node) returns False, changing
        nothing, and the engine runs the pass."""
        position = saved_of(node)
        if graph.is_freed(node) or self.code.depends[position][1]:
            return False
        saved = state_of(call)
        seeded, inside = self._alone.get(position) or self._reached_alone(position)
        if saved.handed or _any_freed(saved.freed, inside):
            return False
        leaves = graph.operands(node)[1:]
        taking = self._operands_of[position]
        arguments = self._argument_operands.get(position)
        if arguments is None:  # the parameters' leafness is the guard's: their identities are fixed
            parameters = [x for j, x in zip(taking, leaves, strict=True) if j >= self.argument_count]
            if any(map(graph.op_of, parameters)):
                self._argument_operands[position] = -1
                return False
            arguments = self._argument_operands[position] = sum(j < self.argument_count for j in taking)
        if arguments < 0 or (arguments and any(map(graph.op_of, leaves[:arguments]))):
            return False
        g = -0.0 + seed  # the output's cotangent: its seed added to the pass's -0.0, as seed() does
        gradients, finals = self._reverse_alone(position, seeded, g, saved.values, saved.inputs)
        pick = self._handed_alone.get(position)
        if pick is None:
            pick = _picker(taking)
            if None in pick(gradients):  # each leaf the output reaches has a gradient: the engine's pass if not
                return False
            self._handed_alone[position] = pick  # where the code returns None is fixed by its text: seen once
        found = pick(gradients)
        saved.ran[:] = [inside]
        final = finals[0]  # the engine adds into the operations' .grad first (the output, then the call)
        add_gradients((node, call), (g if final is None else final, -0.0))
        add_gradients(leaves, found)
        if not retain_graph:
            graph.free([node, call])
        return True

    def _reverse_alone(
        self, position: int, seeded: frozenset[int], g: Any, values: tuple[Any, ...], inputs: list[Any]
    ) -> tuple[Any, Any]:
        """The reverse code of a pass from the output ``position`` alone, seeded with ``g``, run
        from -0.0 at every argument and parameter: their gradients, and the output's own."""
        backward = self._code_alone.get(position)
        if backward is None:
            backward = self._code_alone[position] = self.code.backward_for(seeded)
        count = len(self.internal_outputs)
        seeds = (g,) if count == 1 else tuple(g if i == position else 0.0 for i in range(count))
        return backward(seeds, values, inputs, self._zeros(len(inputs)))

    def _reached_alone(self, position: int) -> tuple[frozenset[int], frozenset[int]]:
        """The outputs a pass from the output ``position`` alone seeds, and the positions of the operations
        inside that it runs: the same at every call, found once."""
        seeded = frozenset((position,))
        found = self._alone[position] = (seeded, self.code.reached(seeded)[1])
        return found

    def _zeros(self, count: int) -> tuple[float, ...]:
        """-0.0 for each argument and parameter: where a pass with nothing else in it starts."""
        zeros = self._zeros_kept
        if len(zeros) != count:
            zeros = self._zeros_kept = (-0.0,) * count
        return zeros

    def _hand_on(
        self, seeded: frozenset[int], operands: tuple[Any, ...], edges: tuple[bool, ...], gradients: tuple[Any, ...]
    ) -> None:
        """Each argument's and parameter's gradient so far, as the reverse pass gave it: set in C
        by item getters made once per set of seeded outputs."""
        handed = self._handed.get(seeded)
        if handed is None:  # the positions that take gradient in this pass
            positions = [k for k, (edge, g) in enumerate(zip(edges, gradients, strict=True)) if edge and g is not None]
            handed = self._handed[seeded] = (
                (operator.itemgetter(*positions), len(positions)) if positions else (None, 0)
            )
        getter, count = handed
        if getter is None:
            return
        targets, found = getter(operands), getter(gradients)
        if count == 1:
            targets, found = (targets,), (found,)
        if None in found:  # a pass that reaches less than the first one did: one by one
            for x, edge, gradient in zip(operands, edges, gradients, strict=True):
                if edge and gradient is not None:
                    set_cotangent(x, gradient)
        else:
            set_cotangents(targets, found)

    def _start(self, seeded: frozenset[int], reached: frozenset[int], operands: tuple[Any, ...]) -> tuple[Any, ...]:
        """The cotangent so far of each argument and parameter the pass reaches, -0.0 for the
        others, gathered in C by two item getters made once per set of seeded outputs."""
        if len(reached) == len(operands):
            return cotangents(operands)
        gather = self._gather.get(seeded)
        if gather is None:
            order = sorted(reached)
            at = {k: i for i, k in enumerate(order)}
            picked = operator.itemgetter(*order) if order else (lambda xs: ())
            placed = operator.itemgetter(*(at.get(k, len(order)) for k in range(len(operands))))
            gather = self._gather[seeded] = (picked, placed, len(order) == 1, len(operands) == 1)
        picked, placed, one_picked, one_placed = gather
        chosen: Any = picked(operands)  # the item getters' results: a tuple, or one item
        found = (*cotangents((chosen,) if one_picked else chosen), -0.0)
        result: Any = placed(found)
        return (result,) if one_placed else tuple(result)

    def _release(self, node: graph.Node) -> None:
        """A pass that frees the graph went through this call: the operations it ran are freed,
        as eager code frees them; a later pass that needs one of them raises. The sets are kept
        as they are, not merged: a pass with nothing freed before it then costs nothing here."""
        call = state_of(node)
        call.freed.extend(inside for inside in call.ran if inside not in call.freed)

    def run(self, read: Arguments) -> Any:
        leaves = read.leaves
        # the distinct Values passed, then the parameters
        external_values = (leaves if self.distinct_leaves else distinct(leaves)) + self.parameters
        data = numbers_of(external_values)
        code = self.code
        code.prepare()  # the code, on the first replay: from the cache, or written now
        values = code.forward(data)  # type: ignore[misc]  # prepared just above
        made: dict[int, Value] = {}
        if self.takes_any and state.grad_enabled:
            made = self._outputs(external_values, data, values)
        elif self.takes_any:
            with enable_grad():  # a function under no_grad() may still take gradient inside (enable_grad)
                made = self._outputs(external_values, data, values)
        kept_place = code.kept_place
        results: list[Any] = []
        for kind, k in self.outputs:
            if kind == "external":
                results.append(external_values[k])
            elif kind == "constant":
                results.append(Value(k, requires_grad=False))
            elif k in made:
                results.append(made[k])
            else:
                made[k] = Value(values[kept_place[id(self.recorded.live[k])]], requires_grad=False)
                results.append(made[k])
        for position, attributes, cls in self.dressed:  # a label, a class of the user's
            result = results[position]
            if cls is not None:
                result.__class__ = cls
            if attributes is not None:
                vars(result).update(attributes)
        return build(self.recorded.shape, results, read.args, read.kwargs)

    def _outputs(self, externals: list[Any], data: list[Any], values: tuple[Any, ...]) -> dict[int, Value]:
        """The outputs that take gradient, each an OUTPUT node on one node for the call."""
        edges = self._edges  # the same at every call: the key fixes the arguments', the guard the parameters'
        if edges is None:
            edges = self._edges = tuple(isinstance(x, Value) and x.requires_grad for x in externals)
        outputs: list[Callable[[], Value | None]] = [_dead] * len(self.internal_outputs)
        saved = CallState(values, data, outputs, {}, edges, [], [], self)
        # no edges of its own: a pass reaches the arguments and parameters through the outputs it starts from
        if len(self._no_edges) != len(externals):
            self._no_edges = (None,) * len(externals)
        every = tuple(externals)
        call = graph.make(Value, 0.0, self.op, every, self._no_edges, None, saved)
        code = self.code
        kept_place = code.kept_place
        made: dict[int, Value] = {}
        for position, k in sorted(enumerate(self.internal_outputs), key=lambda pair: pair[1]):  # as computed
            node = self.recorded.live[k]
            if not node.requires_grad:
                continue
            if position in self.leaf_outputs:  # a Value made inside, returned: a leaf, as eager code's
                made[k] = Value(values[kept_place[id(node)]])
                outputs[position] = weakref.ref(made[k])
                continue
            from_externals, from_outputs = code.depends[position]
            pick = self._pick.get(position)
            if pick is None:  # noted once; another thread may be noting it too: the same notes
                taking = [j for j in from_externals if edges[j]]
                pick = _picker(taking)
                self._operands_of[position] = taking  # first: a thread that finds the picker finds these
                self._pick[position] = pick
            operands = (call,) + pick(every)  # noqa: RUF005  # one copy; (call, *x) makes two
            if from_outputs:
                internal = self.internal_outputs
                operands += tuple(made[internal[j]] for j in from_outputs if internal[j] in made)
            flags = self._flags.get(len(operands))
            if flags is None:
                flags = self._flags[len(operands)] = (True,) * len(operands)
            value = graph.make(Value, values[kept_place[id(node)]], OUTPUT, operands, flags, None, position)
            outputs[position] = weakref.ref(value)
            made[k] = value
        return made


def _dressing(
    fn: Callable[..., Any], outputs: list[tuple[str, Any]], first: list[Any]
) -> list[tuple[int, dict[str, Any] | None, type | None]]:
    """For each Value the function makes and returns that has them, its position among the
    outputs, the attributes the function gave it (a label...) and its class, where it is one of
    the user's subclasses of Value: given again to each call's result."""
    dressed = []
    for position, ((kind, _), x) in enumerate(zip(outputs, first, strict=True)):
        if kind in ("inside", "constant"):
            attributes, cls = _attributes_of(fn, x), _class_of(fn, x)
            if attributes is not None or cls is not None:
                dressed.append((position, attributes, cls))
    return dressed


def _attributes_of(fn: Callable[..., Any], value: Any) -> dict[str, Any] | None:
    """The attributes the function gave a Value it makes and returns (its label, a tag), to give
    each call's result, or None for none. Only strings, numbers, bools and None can be given
    again: an object kept there (a list, a Value) is the recorded call's, which a replay could
    not make anew, so it is refused, naming the attribute."""
    if not isinstance(value, Value):
        return None
    attributes = vars(value)
    if not attributes:
        return None
    for name, item in attributes.items():
        if not world.is_scalar(item):
            raise DataDependentError(
                f"{where(fn)}: {described(fn)} keeps an object on a Value it returns (.{name} ({_a(item)})), which "
                "a replay, making that Value anew, could not give it again: return it alongside the Value instead "
                "(keep strings, numbers and None there), or call the function uncompiled"
            )
    return dict(attributes)


def _class_of(fn: Callable[..., Any], value: Any) -> type | None:
    """The class of a Value the function makes and returns, where it is one of the user's
    subclasses of Value (given to each call's result, made as a Value), or None. One with slots
    of its own cannot be made as a Value and given its class: refused, naming it."""
    kind: type = type(value)
    if kind is Value or not isinstance(value, Value):
        return None
    if world.user_slots(kind):
        raise DataDependentError(
            f"{where(fn)}: {described(fn)} returns a {kind.__name__} it makes, a subclass of Value with slots of "
            "its own, which a replay could not make again with what they hold: return a Value (and what the slots "
            "hold alongside it), or call the function uncompiled"
        )
    return kind


def _a(x: Any) -> str:
    name = type(x).__name__
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _as_eager(node: Value) -> Value:
    """A recorded operation's result as eager code returns it: one that takes no gradient (made
    under ``no_grad``, or from constants) is a leaf there, with no operation."""
    if node.requires_grad or graph.op_of(node) is None:
        return node
    leaf = Value(_number(node), requires_grad=False)
    vars(leaf).update(vars(node))  # its label and the other attributes the function gave it
    return leaf


def _picker(positions: list[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """A function that picks the items at ``positions`` of a sequence, as a tuple, in C: a slice
    when they follow each other (the parameters, and the arguments that take gradient, usually
    do), else an item getter."""
    if not positions:
        return lambda items: ()
    first, last = positions[0], positions[-1] + 1
    if positions == list(range(first, last)):
        return lambda items: tuple(items[first:last])
    if len(positions) == 1:
        return lambda items: (items[first],)
    return operator.itemgetter(*positions)


def _any_freed(freed: list[frozenset[int]], inside: frozenset[int]) -> bool:
    """Whether any operation in ``inside`` (their positions) is in a set an earlier pass freed."""
    return any(not done.isdisjoint(inside) for done in freed)


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


RECOMPILE_LIMIT = 8
"""Recordings of a structure already recorded (only numbers differ), in all, at most
(``torch.compile``'s recompile limit): past it, compile warns once and calls the function
uncompiled from then on."""
STRUCTURE_LIMIT = 8
"""Structures of the function's world (numbers left out) it is recorded for, at most: past it,
compile warns once, naming what kept changing, and calls the function uncompiled from then on (a
history list it can reach, growing at every call, is one)."""
ARGUMENT_STRUCTURE_LIMIT = 64
"""Structures of the arguments (their lengths and kinds, numbers left out) a function is recorded
for, at most, in one world: each is a program of its own, as a sequence of each length is for a
GPT (where ``torch.compile`` would mark the length dynamic); past it, compile warns as above."""
OPERATIONS_LIMIT = 500_000
"""The most operations the code of a recording may hold for compile to write it, each repeated
block's counted once (``fold``: a loop's copies are written once): writing and compiling the
code takes time and memory that grow faster than the operations (on CPython 3.11, 200,000
straight-line operations took some 14 s and 1.1 GB, a million 107 s and 5.4 GB, ten million more
memory than the machine had), where a replay gains at most what an eager call costs. Past it,
found when the code is first needed (the second call), compile warns once and calls the
function uncompiled from then on, as past the bounds on recordings. The moons MLP's full batch
of 1,000 samples records 644,677 operations and writes 4,239 lines."""
RECORDED_LIMIT = 2_000_000
"""The most operations a recording may hold for compile to search it for repeated blocks at all:
the search and the writing of 1.9 million (the moons MLP's full batch of 3,000 samples) took
13 s and 2.2 GB, and its steps then 54 ms against 5 s uncompiled. Past it, compile warns at the
first call and calls the function uncompiled from then on. A recording within it whose code would
still be past ``OPERATIONS_LIMIT`` (straight-line code, no loop to fold) pays the search once, at
its second call, before it is refused: some 10 s at 600,000 operations, 47 s at 1.9 million, about
ten of its uncompiled calls."""
_SMALLER = "Compile a smaller function instead (one step of a loop, one sample), and call it from the loop"
RECORDINGS_PER_KEY = 8
"""Recordings kept for one structure of the arguments (different worlds: a model in training
and in evaluation mode), the most recently used first."""


class Compiled:
    """A function recorded once per structure of its arguments and world, and replayed as
    generated code.

    Call it as the function itself. ``source`` is the generated code of the last recording:
    the forward pass, then the reverse pass, one operation a line (a result read once, and by no
    reverse pass, inside the expression that reads it). ``reset()`` drops every
    recording.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"vjpgrad.compile takes a function, got {type(fn).__name__}")
        _refuse_clashing_attributes(fn)
        self.fn = fn
        self._cache: OrderedDict[tuple[Any, ...], list[Replay]] = OrderedDict()
        self._lock = threading.RLock()
        self._last: Replay | None = None
        self._shapes: dict[Any, tuple[int, tuple[Any, ...], world.Snapshot]] = {}
        self._repeats = 0  # recordings of a structure already recorded
        self._previous: tuple[tuple[Any, ...], world.Snapshot] | None = None  # the last recording's key and world
        self.eager = False
        """True once numbers kept changing (``RecompileWarning``): the function runs uncompiled."""
        self.times_recorded = 0
        """How many times the function was recorded (a new structure, a changed world...)."""
        _wraps(self, fn)

    @property
    def source(self) -> str:
        """The generated code of the last recording (empty before the first call)."""
        last = self._last
        if last is None:
            return ""
        try:
            return last.source
        except fold.CodeTooLargeError as error:  # read before the second call: the code is past the bound
            self._give_up(self._too_large_code(error))
            return ""

    @property
    def guard_source(self) -> str:
        """The guard of the last recording: the checks each call runs before replaying it."""
        return "" if self._last is None else self._last.guard_source

    @property
    def recordings(self) -> int:
        """How many recordings are kept."""
        return sum(map(len, self._cache.values()))

    def reset(self) -> None:
        """Drop every recording (and the count of recordings that made it run uncompiled)."""
        with self._lock:
            self._cache.clear()
            self._shapes.clear()
            self._repeats = 0
            self._previous = None
            self._last = None
            self.eager = False

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """``@vjpgrad.compile`` on a method: the instance is its first argument (structure by
        identity, and a root of the function's world)."""
        return self if instance is None else types.MethodType(self, instance)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
            if state.recording is not None or self.eager:  # inside another recording: be recorded
                return self.fn(*args, **kwargs)
            with self._lock:
                if self.eager:  # given up by another thread while this one waited for the lock
                    replay = None
                else:
                    read = Arguments(args, kwargs)
                    replay = self._kept(read)
                    if replay is None:
                        return self._record(read)
            if replay is None:
                return self.fn(*args, **kwargs)
            try:
                return replay.call.run(read)
            except fold.CodeTooLargeError as error:  # the code, found when first needed, past the bound
                self._give_up(self._too_large_code(error))
                return self.fn(*args, **kwargs)
            except Exception as error:
                if not getattr(error, FOR_A_NUMBER, False):  # not an index out of range, a custom op's error
                    raise
            return self.fn(*args, **kwargs)  # as eager code, whose own `except` may take it; its error alone

    def _kept(self, read: Arguments) -> Replay | None:
        """The recording kept for a call that is not stale for it (now the first of its key's, and
        the last used), or None: the call records anew."""
        replays = self._cache.get(read.key)
        if replays is None:
            return None
        for k, replay in enumerate(replays):
            if not replay.stale_for(read):
                if k:
                    replays.insert(0, replays.pop(k))
                self._last = replay
                return replay
        return None

    def _record(self, read: Arguments) -> Any:
        replay = Replay(self.fn, read)
        self.times_recorded += 1
        too_many = self._too_large(replay) or self._too_many(read, replay)
        if too_many is not None:
            self._give_up(too_many)
        elif replay.recorded.world.filled:  # its run filled a functools.cached_property: a replay would not
            pass
        else:
            replays = self._cache.setdefault(read.key, [])
            replays.insert(0, replay)
            del replays[RECORDINGS_PER_KEY:]
            self._cache.move_to_end(read.key)
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
            self._last = replay
        first, replay.first = replay.first, None
        return first  # the recorded run is eager code: its result is this call's

    def _give_up(self, message: str) -> None:
        """Run the function uncompiled from now on, every recording dropped, and say why once."""
        with self._lock:
            if self.eager:  # another thread gave up first, and said so
                return
            self.eager = True  # before the warning: under warnings-as-errors it raises, once
            self._cache.clear()
            self._last = None
        warn_at_users_line(message, RecompileWarning)

    def _too_large(self, replay: Replay) -> str | None:
        """The warning's message for a recording of more than ``RECORDED_LIMIT`` operations,
        which compile does not search for blocks; None for one within the bound."""
        operations = len(replay.recorded.live)
        if operations <= RECORDED_LIMIT:
            return None
        return (
            f"{described(self.fn)} recorded {operations:,} operations, more than vjpgrad.compile searches for "
            f"repeated blocks ({RECORDED_LIMIT:,}: the search and the code would take minutes and gigabytes): "
            f"it runs uncompiled from now on. {_SMALLER}"
        )

    def _too_large_code(self, error: fold.CodeTooLargeError) -> str:
        """The warning's message for a recording whose code would hold more than
        ``OPERATIONS_LIMIT`` operations."""
        return (
            f"{described(self.fn)} recorded {error.recorded:,} operations, whose code would hold {error.written:,} "
            f"(its repeated blocks written once), more than vjpgrad.compile writes ({error.limit:,}: the code would "
            f"take minutes and gigabytes to write): it runs uncompiled from now on. {_SMALLER}"
        )

    def _too_many(self, read: Arguments, replay: Replay) -> str | None:
        """Count the recordings (``STRUCTURE_LIMIT`` structures of the world,
        ``ARGUMENT_STRUCTURE_LIMIT`` of the arguments and the world together, ``RECOMPILE_LIMIT``
        more of a structure already recorded, in all); past any, warn once naming what changed
        since the recording before (of this structure, or the last one): the warning's message,
        or None within the bounds."""
        snapshot = replay.recorded.world
        shape = (read.masked(), snapshot.shape(), _masked_attributes(replay.argument_attributes))
        seen = self._shapes.get(shape)
        previous = self._previous
        self._previous = (read.key, snapshot)
        if seen is None:
            self._shapes[shape] = (1, read.key, snapshot)
            worlds = len({world_shape for _, world_shape, _ in self._shapes})
            if worlds <= STRUCTURE_LIMIT and len(self._shapes) <= ARGUMENT_STRUCTURE_LIMIT:
                return None
            key, last = previous if previous is not None else (read.key, snapshot)
            limit = STRUCTURE_LIMIT if worlds > STRUCTURE_LIMIT else ARGUMENT_STRUCTURE_LIMIT
            why = f"for {limit + 1} structures"
        else:
            count, key, last = seen
            self._shapes[shape] = (count + 1, read.key, snapshot)
            self._repeats += 1
            if self._repeats <= RECOMPILE_LIMIT:
                return None
            why = f"{RECOMPILE_LIMIT + 1} times for numbers alone"
        if snapshot.filled:  # no recording kept: each filled the cache, emptied again before the next call
            times = why.removesuffix(" for numbers alone")
            return (
                f"{described(self.fn)} was recorded by vjpgrad.compile {times}, each time filling the "
                f"functools.cached_property {', '.join(snapshot.filled)}, which was empty again at the next call "
                "(a replay would not fill it): it runs uncompiled from now on. Compute that value inside the "
                "function, or keep it in a plain attribute set outside it, and call reset() to compile it again"
            )
        changed, number, argument = _what_changed(self.fn, last, snapshot, key, read)
        away = "keep it out of the function's reach (not on the objects it reads)"
        if number:
            advice = (
                "Numbers are structure to compile: if the function reads it, pass a number that changes at every "
                f"call as a Value (Value(lr, requires_grad=False)) or in a Vector; if it does not, {away}"
            )
        elif argument and _object_argument(key, read):
            advice = (
                "An object argument is keyed by its identity (its state is watched through it): pass the same "
                "object at every call, or the numbers it holds as Values, or in a list, tuple or dict"
            )
        elif argument:
            advice = (
                "The structure of its arguments is the recording's key: each length of a list, each kind of "
                "argument, each string or flag passed is recorded apart. Call it with few structures (lists of "
                "a few lengths, padded or batched; numbers that change passed as Values)"
            )
        else:
            advice = f"If the function reads it, pass it as an argument; if it does not, {away}"
        reached = "the structure of its arguments" if argument else "something it can reach"
        return (
            f"{described(self.fn)} was recorded by vjpgrad.compile {why}, each time because {reached} "
            f"changed (last: {changed}): it runs uncompiled from now on. {advice}, and call reset() to compile it "
            "again"
        )

    def __repr__(self) -> str:
        return f"<vjpgrad.compile of {described(self.fn)}>"


def _object_argument(key: tuple[Any, ...], read: Arguments) -> bool:
    """Whether the first part of two calls' keys that differs is an object passed by identity."""
    index = next((k for k, (a, b) in enumerate(zip(key, read.key, strict=False)) if a != b), len(key))
    part = read.key[index] if index < len(read.key) else None
    return type(part) is tuple and len(part) == 2 and part[0] == "object"


def _what_changed(
    fn: Callable[..., Any], last: world.Snapshot, snapshot: world.Snapshot, key: tuple[Any, ...], read: Arguments
) -> tuple[str, bool, bool]:
    """What differs between two recordings, as a reader names it (a part of the world, or an
    argument), whether it is a number, and whether it is an argument."""
    changed = world.first_difference(last, snapshot)
    if changed is not None:
        return str(changed), world.differs_in_number(last, snapshot), False
    index = next((k for k, (a, b) in enumerate(zip(key, read.key, strict=False)) if a != b), len(key))
    if index == len(key) == len(read.key):  # the same arguments and world: what the Values passed carry
        return "what the Values it was given carry (a label or an attribute its code reads)", False, False
    names = argument_names(fn, len(read.args))
    part = key[index] if index < len(key) else None
    number = type(part) is tuple and len(part) >= 1 and isinstance(part[0], type) and world.is_number_type(part[0])
    return f"the argument {described_part(read.args, read.kwargs, names, index)}", number, True


def _masked_attributes(key: Any) -> Any:
    """What the Values a call is given carry (``record.argument_attributes``) with each number's
    value left out: a label is structure, as a string passed is; a number there counts as one."""
    if key is None:
        return None
    return tuple(
        tuple((name, world.number_masked(part) if type(part) is tuple and part else part) for name, part in leaf)
        for leaf in key
    )


def _refuse_clashing_attributes(fn: Any) -> None:
    """``TypeError`` for a function with an attribute of the name of compile's own state (``f.eager``,
    ``f._cache``): rebound to what compile returns (``f = vjpgrad.compile(f)``), its body reading
    ``f.eager`` would read compile's. A callable object keeps its own (its code reads ``self.fn``)."""
    if type(fn) is not types.FunctionType:
        return
    wrapped = fn.__dict__.get("__wrapped__")  # functools.wraps copied what it wraps has: not the user's
    copied = {k for k, v in fn.__dict__.items() if wrapped is not None and getattr(wrapped, k, object()) is v}
    clash = sorted(k for k in fn.__dict__ if k in world.COMPILED_STATE and k != "__wrapped__" and k not in copied)
    if clash:
        raise TypeError(
            f"{described(fn)} has the attribute {clash[0]}, which is vjpgrad.compile's own (a compiled function's "
            f"{clash[0]}): its code would read compile's once compiled; rename the attribute"
        )


def _wraps(compiled: Compiled, fn: Any) -> None:
    """``functools.update_wrapper``, reading nothing that runs the function's own code wrongly: an
    attribute whose access raises (a ``__getattr__`` raising KeyError) is left out, and so is one
    that has the name of compile's own state (``world.COMPILED_STATE``: ``fn``, ``eager``...)."""
    for attribute in functools.WRAPPER_ASSIGNMENTS:
        try:
            value = getattr(fn, attribute)
        except Exception:  # whatever a user's __getattr__ raises: not copied
            continue
        setattr(compiled, attribute, value)
    try:
        attributes = getattr(fn, "__dict__", {})
    except Exception:  # as above
        attributes = {}
    if type(attributes) is dict:  # never over compile's own state: an object's self.fn is not the function
        compiled.__dict__.update((k, v) for k, v in attributes.items() if k not in world.COMPILED_STATE)
    compiled.__dict__["__wrapped__"] = fn


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
    if kind in ("same", "given", "again"):  # returned as it is, or met already: no Value of the code
        return
    if kind == "leaf":
        out.append(result)
    elif kind == "vector":
        for part, item in zip(parts, result, strict=True):
            _values_of(part, item, out)
    elif kind == "dict":
        for key, part in parts:
            _values_of(part, result[key], out)
    else:
        for part, item in zip(parts, result, strict=True):
            _values_of(part, item, out)
