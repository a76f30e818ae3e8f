"""The recording hooks: how ``vjpgrad.compile`` and ``vjpgrad.vmap`` record a function and
replay a compiled call as one node of the user's graph. Every name of this module is listed
here, and in ARCHITECTURE.md (a test checks both).

This module stands on a line of its own above the core (ARCHITECTURE.md's diagram): it reads
and fills the core's nodes, and compile and vmap are its only users. The core never imports
it, not even for a type: it calls a ``Recording`` through ``modes.Recorder``, the one
interface in code between the two, and calls the replay hooks as fields of an operation.

Recording a function, this module's side:

- ``Recording``: what ``modes.state.recording`` holds while a function is recorded (a
  ``modes.Recorder``); ``Recording.record`` fills each node ``graph.make`` hands it,
  ``Recording.made_leaf`` keeps each Value made by ``Value()`` (or by a Vector of floats,
  ``value.from_floats``), ``Recording.fail`` keeps the first refusal (``Recording.failure``,
  raised again when the function returns);
- ``recorded_graph``: what compile and vmap read of a ``Recording`` (the operations the outputs
  need, their edges, the Values from outside), a column at a time: ``slots_of`` (each node's
  operation and operands, as lists) and ``positions_in`` (where each operand was made), which
  compile's block search (``compiler/fold.py``) reads too, gathered by ``columns_of`` into
  ``Columns``; ``recorded_graph_with_columns`` also hands compile the ``Columns`` it read when
  it returns every node, from which compile's cache key (``compiler.record.describe``) and
  block search read the recording without reading the nodes again.

Recording a function, the core's side: ``graph.make`` hands every operation to
``state.recording`` (``Recorder.record``) instead of filling the node itself; ``Value()`` and
``value.from_floats`` (a Vector of floats) call ``Recorder.made_leaf``, and ``Value.detach`` is
recorded as an operation (``ops.DETACH``); a read of a Value's number raises under
``modes.refusing_numbers`` (which compile and vmap turn on with the recording) and is handed to
``Recorder.fail``; an error raised for a Value's number (an index out of range, a custom
operation's function: ``modes.raised_for_a_number``) is handed to ``Recorder.raised``, refused
if the function catches it and returns; a gradient with ``create_graph`` through an operation
whose rule depends on the number (``graph.edges``, for a row with ``maskable=True``; tanh's
once-rounded saved value in ``ops``) is refused likewise.

Replaying a compiled call, this module's side: the call's node keeps its state where an edge
keeps its saved value (``saved_of`` reads it back); its pass reads the numbers of its inputs
(``numbers_of``) and the cotangents of its outputs (``cotangents``), hands gradients back in
the pass under way (``set_cotangent`` for one node, ``set_cotangents`` for many, in C), and,
when it runs a whole pass alone, adds them into ``.grad`` (``add_gradients``), as the engine's
pass would, to the same bits.

Comparing two graphs of one function: ``same_graph`` (operation for operation, every number and
saved local derivative by its bits), with which ``vmap(vjp_fn)`` checks that its recording is the
graph ``vjp`` made.

What compile and vmap tell the user of a recording: ``RecompileWarning``, when a function kept
being recorded because numbers it reads changed.

Replaying a compiled call, the core's side: its operation (``ops.Op``) runs its own backward
(``Op.backward``: ``graph.propagate`` calls it instead of the table's gradients), frees its own
state (``Op.release``: ``graph.free`` calls it) and may run a whole pass alone
(``Op.whole_pass``: ``backward()`` on its one output offers it the pass first);
``graph.is_freed`` tells it whether an earlier pass freed its node; and what cannot go through
it (``create_graph``, ``explain``, ``jvp``) raises ``graph.OWN_BACKWARD_MESSAGE``.

The node's layout is ``graph``'s (``graph.Node.__slots__``): ``graph`` writes the slots and
reads them, this module too (for the hooks above), and the generated ``core/operators.py``
fills a new node through the lines ``graph.make_inline`` writes; a Value's number (``_data``)
is read by the engine itself (``core/value.py``, which also reads ``_grad`` for its ``repr``,
the generated operators, ``ops.data_of``) and by everyone else through ``graph.number``.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import struct
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from vjpgrad.core.graph import Node, by_creation, next_seq, pass_lock, reached
from vjpgrad.core.modes import grad_switches, state
from vjpgrad.core.ops import Op


class RecompileWarning(UserWarning):
    """A compiled or vmapped function kept being recorded because numbers it reads changed:
    compile runs it uncompiled from then on, vmap goes on recording. Pass a number that changes
    at every call as a Value (``Value(lr, requires_grad=False)``) or in a Vector: its number is
    then read at each call. Compile also runs uncompiled a function whose code would hold more
    operations than it writes (``compiler.run.OPERATIONS_LIMIT``), or whose recording holds more
    than it searches (``compiler.run.RECORDED_LIMIT``)."""


# ---- recording ----------------------------------------------------------------------------------


class Recording:
    """What ``vjpgrad.compile`` (and ``vjpgrad.vmap``) collects while it runs a function once.

    While ``state.recording`` holds a Recording, the core:

    - hands every operation it makes to it (``graph.make`` calls ``record``), whether or not it
      takes gradient (a constant's operands can be parameters that change between calls);
    - records ``detach()`` as an operation with no edge (a cut whose number changes per call);
    - tells it of every Value made by ``Value()`` or ``value.from_floats`` (``made_leaf``).

    Compile also sets ``state.refusal`` (``modes.refusing_numbers``) for the recording, under
    which every read of a Value's number raises. Nothing else in the core knows of compile:
    the function is recorded running on the call's own arguments, numbers included.
    """

    def __init__(self) -> None:
        self.nodes: list[Node] = []  # every operation made, in creation order
        self.leaves: dict[int, Node] = {}  # id -> every Value made by Value() inside the function

    failure: BaseException | None = None
    """The first refusal raised while recording: compile raises it again when the function
    returns, so a user's ``except`` around the read cannot swallow it and record a fallback."""

    def fail(self, error: BaseException) -> None:
        """Note a refusal (the first one counts)."""
        if self.failure is None:
            self.failure = error

    caught: BaseException | None = None
    """The refusal of an error raised for a Value's number (``modes.raised_for_a_number``): the
    recorder raises it if the function returns all the same (its ``except`` took it)."""

    def raised(self, refusal: BaseException) -> None:
        """Note an error raised for a Value's number, as the refusal to raise if it is caught."""
        if self.caught is None:
            self.caught = refusal

    def made_leaf(self, leaf: Node) -> None:
        """``Value(...)`` made ``leaf`` inside the function."""
        self.leaves[id(leaf)] = leaf

    def record(self, node: Node, op: Op, a: Any, da: Any, b: Any, db: Any) -> None:
        """Fill ``node`` (``graph.make``'s new node, its number set) as the operation ``op`` of
        ``a`` and ``b``, and keep it. Unlike ``make`` outside a recording, a constant (no operand
        takes gradient) keeps its operation and operands too: compile writes it as code, for its
        operands can be parameters whose numbers change between calls."""
        node.requires_grad = (da is not None or db is not None) and (not grad_switches[0] or state.grad_enabled)
        node._operation = op
        node._first = a
        node._second = b
        node._saved_first = da if node.requires_grad else None
        node._saved_second = db if node.requires_grad else None
        node._seq = next_seq()
        self.nodes.append(node)


_POSITIONS: tuple[tuple[int, ...], ...] = ((), (1,), (0,), (0, 1))
"""The positions of the operands a node hands gradient to, by which of its two slots saved a
derivative: 2 for the first, plus 1 for the second."""


class Columns(NamedTuple):
    """Each of some nodes' operation and operands, and where each operand was made, a column at
    a time (``columns_of``): what ``recorded_graph`` reads of a recording's nodes, kept
    (``recorded_graph_with_columns``) for compile's cache key and block search to read the same
    nodes without reading them again."""

    operations: list[Op | None]
    """Each node's operation (None for a leaf: a Value made inside)."""
    operands: list[Any]
    """Each node's first and second operands, in one list (first, second, first...): None where
    unused (a leaf's, an operation of one operand's second, an operation of many's two)."""
    many: dict[int, tuple[Any, ...]]
    """The operands of each operation of many, by its position."""
    at: list[int | None]
    """Where each of ``operands`` was made: its position among the nodes, -1 for a node made
    elsewhere (an argument, a parameter), None for anything else (a number, an unused slot)."""
    many_at: dict[int, list[int | None]]
    """Where each operand of an operation of many was made, as ``at`` says it."""
    elsewhere: list[int]
    """The places in ``operands`` (and ``at``) of the operands made elsewhere (``at`` -1), in order."""
    takes_grad: list[bool]
    """Whether each node takes gradient (its ``requires_grad``)."""


def columns_of(nodes: Sequence[Node]) -> Columns:
    """The ``Columns`` of ``nodes`` (in creation order): their operations and operands read by
    one comprehension a slot (``slots_of``), and the place of each operand found by its
    creation number (``positions_in``)."""
    operations, operands, many = _operands_of(nodes)
    position_of = positions_in(nodes)
    at = position_of(operands)
    many_at = {i: position_of(xs) for i, xs in many.items()}
    elsewhere = list(itertools.compress(range(len(at)), map(operator.eq, at, itertools.repeat(-1))))
    return Columns(operations, operands, many, at, many_at, elsewhere, [n.requires_grad for n in nodes])


def recorded_graph(
    recording: Recording, outputs: Sequence[Node]
) -> tuple[list[Node], list[tuple[int, ...]], list[Node]]:
    """What compile and vmap read of a recording (the ``Recording`` it was collected in): the
    operations and the Values made inside (``Value()``) that ``outputs`` need, in creation
    order; for each, the positions of the operands it hands gradient to (none for a Value made
    inside); and the other Values they read (arguments, parameters), each once, in the order
    the operations read them (creation order, an operation's first operand before its second),
    then the outputs that are such Values.

    It reads every node of a recording of tens of thousands of operations, on every function's
    first call, so it reads a column at a time (``columns_of``: ``slots_of``, and
    ``positions_in`` for where each operand was made), and makes each further pass in C where
    it can. What the outputs need: in a graph, following readers from any node ends at a node
    nothing reads, so when every node nothing reads is an output (a step's recording), every
    node is needed; otherwise one sweep back through creation order marks them."""
    live, edges, outside, _ = recorded_graph_with_columns(recording, outputs)
    return live, edges, outside


def recorded_graph_with_columns(
    recording: Recording, outputs: Sequence[Node]
) -> tuple[list[Node], list[tuple[int, ...]], list[Node], Columns | None]:
    """``recorded_graph``, and the ``Columns`` it read of the operations it returns when it
    returns every node of the recording (as a training step's recording is: every node is
    needed), None otherwise: compile's cache key and block search read the same nodes from them."""
    made = recording.leaves
    every = sorted([*recording.nodes, *made.values()], key=by_creation) if made else recording.nodes
    columns = columns_of(every)
    operand_at, many_at = columns.at, columns.many_at
    outputs_at = positions_in(every)(outputs)
    read = {*operand_at, *itertools.chain.from_iterable(many_at.values()), *outputs_at}
    read.discard(None)
    read.discard(-1)
    needed = None if len(read) == len(every) else _needed(operand_at, many_at, outputs_at)  # None: every node
    outside = _outside(columns, needed)
    for x, at in zip(outputs, outputs_at, strict=True):
        if at == -1:
            outside.setdefault(id(x), x)
    edges = _edges(every, columns.many)
    if needed is not None:
        return (
            list(itertools.compress(every, needed)),
            list(itertools.compress(edges, needed)),
            [*outside.values()],
            None,
        )
    return list(every), edges, [*outside.values()], columns


def _operands_of(every: Sequence[Node]) -> tuple[list[Op | None], list[Any], dict[int, tuple[Any, ...]]]:
    """Each node's operation; its first and second operands, in one list (first, second,
    first...; None where unused: a leaf's, an operation of one operand's second); and the
    operands of each operation of many by its position (its first and second are None in the
    list)."""
    operations, firsts, seconds = slots_of(every)
    many: dict[int, tuple[Any, ...]] = {}
    for op in [op for op in set(operations) if op is not None and (op.nary or op.arity == 1)]:
        i = -1
        for _ in range(operations.count(op)):
            i = operations.index(op, i + 1)
            seconds[i] = None  # an operation of one operand, or of many, leaves its second unused
            if op.nary:
                many[i], firsts[i] = firsts[i], None
    operands: list[Any] = [None] * (2 * len(firsts))
    operands[0::2], operands[1::2] = firsts, seconds
    return operations, operands, many


def _outside(columns: Columns, needed: bytearray | None) -> dict[int, Node]:
    """The Values from outside that the needed nodes read (``needed`` None: every node), by id,
    in the order read: creation order, an operation's first operand before its second, the
    operands of an operation of many at its place. Found in C: the operands made elsewhere,
    in order, then those of the operations of many put in at their places."""
    operands, many, places = columns.operands, columns.many, columns.elsewhere
    if needed is not None:
        places = [j for j in places if needed[j >> 1]]
    found = list(map(operands.__getitem__, places))
    if many:
        parts: list[list[Any]] = []
        start = 0
        for i in sorted(many):
            if needed is not None and not needed[i]:
                continue
            cut = bisect.bisect_left(places, 2 * i)  # the operations of many read theirs here
            parts.append(found[start:cut])
            parts.append([x for x, k in zip(many[i], columns.many_at[i], strict=True) if k == -1])
            start = cut
        parts.append(found[start:])
        found = list(itertools.chain.from_iterable(parts))
    return dict(zip(map(id, found), found, strict=True))


def _edges(every: Sequence[Node], many: dict[int, tuple[Any, ...]]) -> list[tuple[int, ...]]:
    """For each node, the positions of the operands it hands gradient to: what ``Recording.record`` saved."""
    # a node that takes no gradient saved nothing (``Recording.record``, a Value made inside): no edge
    edges = [_POSITIONS[(n._saved_first is not None) * 2 + (n._saved_second is not None)] for n in every]
    for i in many:
        if edges[i]:
            edges[i] = tuple(k for k, s in enumerate(every[i]._saved_first) if s is not None)
    return edges


def positions_in(every: Sequence[Node], outside: dict[int, int] | None = None) -> Callable[[Sequence[Any]], list[Any]]:
    """A function that gives, for each of some objects, its position in ``every`` (nodes in
    creation order); for a node made elsewhere, ``outside``'s entry for its id (None when it has
    none), or -1 without ``outside``; None for anything else (a number). When the creation
    numbers of ``every`` have no gap (nothing else was made meanwhile), a node's number less the
    first one is its place, checked by identity (a copy of a node keeps its number); else a dict
    of ids finds it."""
    n = len(every)
    base = every[0]._seq if every else 0
    elsewhere = outside.get if outside is not None else None
    if every and every[-1]._seq - base == n - 1:

        def positions(xs: Sequence[Any]) -> list[Any]:
            if elsewhere is None:  # -1 written in: a call per operand from outside costs more than the test
                return [
                    (at if 0 <= (at := x._seq - base) < n and every[at] is x else -1) if isinstance(x, Node) else None
                    for x in xs
                ]
            return [
                (at if 0 <= (at := x._seq - base) < n and every[at] is x else elsewhere(id(x)))
                if isinstance(x, Node)
                else None
                for x in xs
            ]

        return positions
    place = dict(zip(map(id, every), itertools.count()))

    def positions_by_id(xs: Sequence[Any]) -> list[Any]:
        return [
            (place.get(id(x)) if id(x) in place else elsewhere(id(x)) if elsewhere is not None else -1)
            if isinstance(x, Node)
            else None
            for x in xs
        ]

    return positions_by_id


def _needed(
    operand_at: list[int | None], many_at: dict[int, list[int | None]], outputs_at: list[int | None]
) -> bytearray:
    """Which nodes the outputs need, by one sweep back through creation order (every reader of a
    node comes after it). ``operand_at`` holds each node's first and second operands' positions
    (``positions_in``), ``many_at`` those of an operation of many."""
    needed = bytearray(len(operand_at) // 2)
    for at in outputs_at:
        if at is not None and at >= 0:
            needed[at] = 1
    for i in range(len(needed) - 1, -1, -1):
        if needed[i]:
            for at in (operand_at[2 * i], operand_at[2 * i + 1], *many_at.get(i, ())):
                if at is not None and at >= 0:
                    needed[at] = 1
    return needed


def slots_of(nodes: Sequence[Node]) -> tuple[list[Op | None], list[Any], list[Any]]:
    """For each of ``nodes``: the operation that made it (None for a leaf), its first operand
    and its second, as three lists, each read by one comprehension (a cache key reads every node
    of a recording on a warm start; a comprehension's slot reads are faster than ``map`` with
    ``attrgetter`` from Python 3.11 on). An operation of many operands keeps the tuple of them as
    its first operand (its second is unused); an operation of one operand leaves its second
    unused; a leaf both."""
    return [n._operation for n in nodes], [n._first for n in nodes], [n._second for n in nodes]


# ---- two graphs of one function, compared (vmap of a vjp function) -------------------------------


def same_graph(
    first: tuple[Sequence[Any], Sequence[Sequence[Node]]], second: tuple[Sequence[Any], Sequence[Sequence[Node]]]
) -> bool:
    """Whether two graphs of one function are the same, node for node, in the order they were made:
    each operation, each operand (a node at the same place, an input at the same place, the same
    Value from outside, or a number of the same bits), each number and each saved local
    derivative. The inputs are where each graph starts: an input that is itself an operation's
    result (``vjp`` hands the function a Value of its own over a Value it was given) is compared as
    an input, and what made it is not walked."""
    (outputs_a, inputs_a), (outputs_b, inputs_b) = first, second
    if len(outputs_a) != len(outputs_b) or [len(v) for v in inputs_a] != [len(v) for v in inputs_b]:
        return False
    walked_a, walked_b = _walked(outputs_a, inputs_a), _walked(outputs_b, inputs_b)
    if len(walked_a[0]) != len(walked_b[0]):
        return False
    place_a, place_b = _places(inputs_a, *walked_a), _places(inputs_b, *walked_b)
    if not all(_same_part(a, b, place_a, place_b) for a, b in zip(outputs_a, outputs_b, strict=True)):
        return False
    return all(_same_node(a, b, place_a, place_b) for a, b in zip(walked_a[0], walked_b[0], strict=True))


def _walked(outputs: Sequence[Any], inputs: Sequence[Sequence[Node]]) -> tuple[list[Node], list[Node]]:
    """The operations a pass from ``outputs`` reaches (``graph.reached``) down to ``inputs``, which
    it does not go past, and the leaves."""
    live = [y for y in outputs if isinstance(y, Node) and y.requires_grad]
    if not live:
        return [], []
    with pass_lock:
        order, leaves = reached(live)
    starts = {id(x) for xs in inputs for x in xs}
    if not starts.intersection(map(id, order)):
        return order, leaves
    below: set[int] = set()  # what made an input that is an operation's result: not the function's
    stack = [x for x in order if id(x) in starts]
    while stack:
        for operand in _operands(stack.pop()):
            if id(operand) not in below and id(operand) not in starts:
                below.add(id(operand))
                stack.append(operand)
    return [x for x in order if id(x) not in starts and id(x) not in below], leaves


def _operands(node: Node) -> list[Node]:
    """The nodes an operation read (its first, its second, or the tuple of many)."""
    first = node._first
    found = list(first) if isinstance(first, tuple) else [first, node._second]
    return [x for x in found if isinstance(x, Node)]


def _places(inputs: Sequence[Sequence[Node]], order: list[Node], leaves: list[Node]) -> dict[int, Any]:
    """Where each node of a graph is, as two graphs of one function can compare them: an input by
    its place among the inputs, an operation by its place in the pass, a Value from outside as itself."""
    place: dict[int, Any] = {id(x): ("input", k) for k, x in enumerate(v for vs in inputs for v in vs)}
    for k, node in enumerate(order):
        place.setdefault(id(node), ("node", k))
    for leaf in leaves:
        place.setdefault(id(leaf), ("outside", id(leaf)))
    return place


def _same_node(a: Node, b: Node, place_a: dict[int, Any], place_b: dict[int, Any]) -> bool:
    """Two operations alike: the same operation, operands, number and saved local derivatives."""
    if a._operation is not b._operation:
        return False
    pairs = [
        (a._data, b._data), (a._first, b._first), (a._second, b._second),
        (a._saved_first, b._saved_first), (a._saved_second, b._saved_second),
    ]  # fmt: skip
    return all(_same_part(x, y, place_a, place_b) for x, y in pairs)


def _same_part(a: Any, b: Any, place_a: dict[int, Any], place_b: dict[int, Any]) -> bool:
    """One part of two graphs' nodes alike (``same_graph``): numbers by their bits, nodes by their place."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_part(x, y, place_a, place_b) for x, y in zip(a, b, strict=True))
    if isinstance(a, Node) and isinstance(b, Node):
        if id(a) in place_a or id(b) in place_b:
            return place_a.get(id(a)) == place_b.get(id(b))
        return _same_part(a._data, b._data, place_a, place_b)  # a constant Value: its number
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and (a is b or a == b)


# ---- replaying: the node of a compiled call ------------------------------------------------------


def saved_of(node: Node) -> Any:
    """What an operation with its own backward saved (``Op.backward``): for one of many operands
    (a compiled call), its second slot; for one operand (an output of a call), its edge's."""
    op = node._operation
    assert op is not None  # only operations with their own backward keep their own data
    assert op.backward is not None
    return node._saved_second if op.nary else node._saved_first


_cotangent_of = operator.attrgetter("_cotangent")


def numbers_of(nodes: Sequence[Node]) -> list[float]:
    """Each node's number (a compiled call reads its arguments and parameters so). A list
    comprehension: Python 3.11 and later read a slot faster there than through ``attrgetter``."""
    return [node._data for node in nodes]


def cotangents(nodes: Sequence[Node]) -> tuple[Any, ...]:
    """Each node's gradient in the pass that is running (every node must have been reached)."""
    return tuple(map(_cotangent_of, nodes))


def set_cotangents(nodes: Sequence[Node], gradients: Sequence[Any]) -> None:
    """``set_cotangent`` of each node, in C."""
    for _ in map(setattr, nodes, itertools.repeat("_cotangent"), gradients):
        pass


def set_cotangent(node: Node, gradient: Any) -> None:
    """Replace ``node``'s cotangent in the pass that is running (a compiled call hands back the
    running total it continued from the node's own)."""
    node._cotangent = gradient


def add_gradients(nodes: Sequence[Node], gradients: Sequence[Any]) -> None:
    """Add each gradient into its node's ``.grad``, as ``graph.accumulate`` adds a node's cotangent (a
    ``.grad`` set to None counts as 0.0): for a pass that hands many leaves their gradients at
    once (a compiled call's), without setting their cotangents first."""
    for node, gradient in zip(nodes, gradients, strict=True):
        try:
            node._grad += gradient  # None raises, and is handled below
        except TypeError:  # None: cleared by its user
            node._grad = 0.0 + gradient
