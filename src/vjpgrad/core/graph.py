"""The graph: how a node is laid out, and the one reverse pass that walks it.

This module owns the node's layout: ``Node.__slots__`` below is its one definition. The
engine's side of it is here: ``make`` fills a node (the operations of ``operators`` and
``value`` call it; ``make_inline`` writes its common case out for the generated operators,
which so write a new node's slots themselves), the readers below list what a node holds, and
the reverse pass reads and writes the pass's scratch slots. A Value's number is read from its
slot by the engine itself (``value``, which also reads ``_grad`` for its ``repr``, the
generated operators, ``ops.data_of``). Above the core, ``vjpgrad.recording`` (how compile and
vmap record a function and replay it as one node) reads and fills the slots too, through the
hooks ARCHITECTURE.md lists; the core never imports it. Everything else (``backward``,
``gradients``, the transforms, ``explain``, the pictures) goes through the functions below:

- ``make`` builds a node; ``init_leaf`` fills a Value the user makes, ``new_leaves`` many at
  once (a Vector of floats: the same slots, a test holds them equal); ``number`` reads a
  Value's number for vjpgrad's own code;
- ``op_of``, ``operands``, ``edges`` (the operands with what each edge saved), ``is_freed``,
  ``origin`` (where anomaly mode saw it made) read a node;
- ``reached`` lists the nodes a pass reaches, in the order the pass runs them;
- ``propagate`` runs the chain rule over that order, with floats, optionally telling an
  observer about every edge (``explain``, anomaly detection); ``propagate_differentiably``
  runs it with Values (``create_graph=True``); both are one walk, ``_walk``, of which
  ``propagate`` without an observer is the hot loop written out;
- ``accumulate`` adds a pass's gradients into ``.grad``; ``free`` drops what was saved.

A node is one slotted object: its data, the operation that made it, up to two operands
(``_first``, ``_second``: Values, or the float constant of ``3 * x``) and what each edge
saved for the backward pass (``_saved_first``, ``_saved_second``; None for an operand that
takes no gradient). An operation of many operands (``max``) keeps tuples in ``_first`` and
``_saved_first``. No closure, no set of children, no reference from a node to itself: a
graph has no reference cycles and is freed by reference counting the moment it is dropped
(the cyclic garbage collector was most of micrograd's time).

The order of a pass is PyTorch's: nodes run in decreasing order of creation (``_seq``),
so a node runs only after every node that uses it, and the contributions a node receives
are added in that order, starting from -0.0 (the sum's identity, so a lone contribution
keeps its sign). Each pass keeps its gradients in the nodes' ``_cotangent`` scratch,
apart from ``.grad``; ``backward`` adds them into ``.grad`` only when the pass has finished,
so two passes give exactly twice one, and a pass that fails changes nothing. Passes never
overlap (``pass_lock``), and each marks what it reached with a fresh token.
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

from vjpgrad.core import ops
from vjpgrad.core.modes import anomaly_switches, caller_location, grad_switches, refuse_number, state, switches_on
from vjpgrad.core.ops import MASKED, Op

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or to read its derivatives after "
    "they have been freed): the graph was already freed by an earlier backward pass. "
    "Specify retain_graph=True in the earlier backward call if you need to backward "
    "through the graph a second time."
)

OWN_BACKWARD_MESSAGE = (
    "create_graph=True, higher derivatives, forward mode (jvp) and explain do not go through a function "
    "compiled by vjpgrad.compile: call the function uncompiled for them (vjpgrad.grad of a compiled function "
    "given a Value builds the graph of its gradient, a higher derivative: give it plain floats, "
    "vjpgrad.grad(fast)(0.7), for a first derivative)"
)

pass_lock = threading.RLock()
"""Held by every pass: the scratch slots of the nodes belong to one pass at a time."""

_new = new_node = object.__new__
N = TypeVar("N", bound="Node")
_next_seq = next_seq = itertools.count(1).__next__
"""The next creation number: a node made later has a larger one (the order of a pass)."""
by_creation = operator.attrgetter("_seq")
"""A node's creation number, as a sort key (``sorted(nodes, key=by_creation)``)."""


class Node:
    """The layout of a graph node; ``Value`` adds the arithmetic. See the module docstring."""

    __slots__ = (
        "__dict__",
        "__weakref__",
        "_cotangent",
        "_data",
        "_first",
        "_grad",
        "_operation",
        "_origin",
        "_saved_first",
        "_saved_second",
        "_second",
        "_seen",
        "_seq",
        "requires_grad",
    )

    _data: float  # the number; read and written through the data property below
    _grad: float | None  # the gradient; None once a user sets it to None (it counts as 0.0)
    requires_grad: bool
    _operation: Op | None  # None for a leaf (made by the user) or a constant
    _first: Any  # Node | float | tuple[Node | float, ...] | None
    _second: Any  # Node | float | None
    _saved_first: Any  # the saved value of the edge to _first (a tuple for many operands), None: no edge
    _saved_second: Any
    _seq: int  # creation order of nodes that take gradient
    _origin: str  # "file:line" where the node was made; set only under detect_anomaly
    _seen: object  # the token of the last pass that reached this node
    _cotangent: float  # this pass's gradient here

    @property
    def label(self) -> str | None:
        """A name shown in tables and pictures, or ``None``: a ``str`` (another type is refused with
        ``TypeError``). Kept in the node's ``__dict__`` only once one is given, so a node without one
        costs nothing for it."""
        return self.__dict__.get("label")  # only the setter writes it

    @label.setter
    def label(self, label: str | None) -> None:
        if label is not None and not isinstance(label, str):
            raise TypeError(f"a Value's label must be a str or None, got {type(label).__name__}")
        self.__dict__["label"] = label

    @label.deleter
    def label(self) -> None:
        self.__dict__.pop("label", None)

    # ---- the numbers, as users read and write them ------------------------------------------
    # Properties over the slots, so that a function vjpgrad.compile is recording cannot read or
    # write a Value's number without being told (the recording would fix what it read). Outside a
    # recording they cost one check of ``switches_on``; the engine itself uses the slots.

    @property
    def data(self) -> float:
        """The number this Value holds. Assignable, so an optimizer can step it."""
        if switches_on[0] and state.refusal:
            refuse_number(".data of a Value")
        return self._data

    @data.setter
    def data(self, number: float) -> None:
        if switches_on[0] and state.refusal:
            refuse_number("assigning .data of a Value", _STEP_OUTSIDE)
        self._data = number if type(number) is float else _as_float(number, ".data")

    @property
    def grad(self) -> float:
        """The gradient that backward passes have added up here (0.0 before any).

        ``.grad = None`` clears it as in PyTorch: a pass counts None as 0.0, and an optimizer
        skips a parameter whose ``.grad`` is None."""
        if switches_on[0] and state.refusal:
            refuse_number(".grad of a Value", _STEP_OUTSIDE)
        return self._grad  # type: ignore[return-value]  # None only after a user sets it: see the docstring

    @grad.setter
    def grad(self, number: float | None) -> None:
        if switches_on[0] and state.refusal:
            refuse_number("assigning .grad of a Value", _ZERO_OUTSIDE)
        self._grad = number if type(number) is float or number is None else _as_float(number, ".grad")


_ZERO_OUTSIDE = (
    "zero the gradients (zero_grad(), .grad = 0.0) outside the compiled function (or vmapped one), before or "
    "after the call: compile the forward pass, then call backward() on its result and step() the optimizer outside"
)
"""What to do instead of a training step's chores inside a compiled (or vmapped) function: a
refusal's advice (``modes.refuse_number``'s ``instead``)."""
_STEP_OUTSIDE = (
    "read .grad and step() the optimizer (or change .data) outside the compiled function (or vmapped one): "
    "compile the forward pass, then call backward() on its result and step() outside"
)


def _as_float(number: object, what: str) -> float:
    """A real number as a float, or a TypeError naming ``what`` and the type received."""
    if isinstance(number, numbers.Real) and not isinstance(number, Node):
        return float(number)
    allowed = " or None" if what == ".grad" else ""
    raise TypeError(f"{what} of a Value must be a real number{allowed}, got {type(number).__name__}")


def init_leaf(node: Node, data: float, requires_grad: bool, label: str | None) -> None:
    """Fill the slots of a Value made by the user."""
    node._data = data
    node._grad = 0.0
    node.requires_grad = requires_grad
    if label is not None:
        node.label = label
    node._operation = node._first = node._second = node._saved_first = node._saved_second = node._seen = None
    node._seq = _next_seq()


def new_leaves(cls: type[N], numbers: Sequence[float], requires_grad: bool) -> list[N]:
    """Leaves made by the user from floats, many at once: each filled as ``init_leaf`` fills a
    Value without a label, in one loop rather than two calls a Value (a Vector of numbers, a
    row of data: a compiled step's tokens)."""
    made: list[N] = []
    append = made.append
    for number in numbers:
        node = _new(cls)
        node._data = number
        node._grad = 0.0
        node.requires_grad = requires_grad
        node._operation = node._first = node._second = node._saved_first = node._saved_second = node._seen = None
        node._seq = _next_seq()
        append(node)
    return made


def keeps_edges() -> bool:
    """Whether ``make`` would keep an operation's edges in this thread now: grad mode is on, or
    a function is being recorded (which decides for itself). Under ``no_grad`` it would not, so
    an operation need not compute what its edges save (a custom rule is not called for nothing)."""
    return not grad_switches[0] or state.grad_enabled or (switches_on[0] > 0 and state.recording is not None)


def make(cls: type[N], data: float, op: Op, a: Any, da: Any, b: Any, db: Any) -> N:
    """The result of an operation: a node on the graph when an edge takes gradient and grad
    mode is on, otherwise a constant leaf (PyTorch gives such a result no ``grad_fn``). While a
    function is recorded (``vjpgrad.compile``, ``vmap``), the ``Recording`` fills the node instead
    (``modes.Recorder.record``)."""
    node = _new(cls)
    node._data = data
    node._grad = 0.0
    node._seen = None
    if switches_on[0]:  # some thread has a switch on: this one may be recording
        recording = state.recording
        if recording is not None:  # vjpgrad.compile or vmap is recording
            recording.record(node, op, a, da, b, db)  # fills the node: a recording keeps constants too
            if anomaly_switches[0] and state.detect_anomaly:  # the recording call runs eagerly: its pass
                node._origin = caller_location()  # tells the line, as eager code's
            return node
    if (da is None and db is None) or (grad_switches[0] and not state.grad_enabled):
        node.requires_grad = False
        node._operation = node._first = node._second = node._saved_first = node._saved_second = None
        node._seq = 0
        return node
    node.requires_grad = True
    node._operation = op
    node._first = a
    node._second = b
    node._saved_first = da
    node._saved_second = db
    node._seq = _next_seq()
    if anomaly_switches[0] and state.detect_anomaly:
        node._origin = caller_location()
    return node


def number(node: Node) -> float:
    """A Value's number, for vjpgrad's own code: read from the slot, so a recording does not
    refuse it (``.data`` is the user's way, which compile watches)."""
    return node._data


def make_inline(indent: str, cls: str, data: str, op: str, a: str, da: str, b: str, db: str) -> list[str]:
    """The lines of Python that ``make`` runs, for code written from the table (the eager
    operators in ``core/operators.py``) to run in place of a call of ``make``: the common case
    (an edge takes gradient, no switch is on) inline, every other case through ``make``. This
    module stays the one place that knows how a node is filled. The arguments are the names of
    the writer's variables; ``make``, ``_new``, ``_next_seq`` and ``switches_on`` must be in its
    namespace (this module's ``make``, ``new_node``, ``next_seq`` and ``modes.switches_on``)."""
    edges = [f"{saved} is None" for saved in (da, db) if saved != "None"]
    no_edge = edges[0] if len(edges) == 1 else f"({' and '.join(edges)})"
    lines = [
        "# a node that takes gradient, made here; make() makes the rest (constants, no_grad, compile...)",
        f"if switches_on[0] or {no_edge}:",
        f"    return make({cls}, {data}, {op}, {a}, {da}, {b}, {db})",
        f"node = _new({cls})",
        f"node._data = {data}",
        "node._grad = 0.0",
        "node._seen = None",
        "node.requires_grad = True",
        f"node._operation = {op}",
        f"node._first = {a}",
        f"node._second = {b}",
        f"node._saved_first = {da}",
        f"node._saved_second = {db}",
        "node._seq = _next_seq()",
        "return node",
    ]
    return [f"{indent}{line}" for line in lines]


# ---- reading a node -----------------------------------------------------------------------------


def op_of(node: Node) -> Op | None:
    """The operation that made ``node``; None for a leaf or a constant."""
    return node._operation


def shown_op(node: Node) -> Op | None:
    """The operation a Value shows its user (``op``, ``parents``, ``is_leaf``): ``op_of``, but
    None for a constant a recording keeps. ``Recording.record`` keeps a result no gradient flows
    through (``detach()``, under ``no_grad``, of Values that require none) as an operation with
    no saved derivative, for compile to write its number as code; eager code makes it a leaf, so
    the function recorded reads it as one."""
    op = node._operation
    if op is None or (not node.requires_grad and node._saved_first is None and node._saved_second is None):
        return None
    return op


def operands(node: Node) -> tuple[Any, ...]:
    """Every operand of ``node`` in order: Values and number constants."""
    if node._operation is None:
        return ()
    if node._operation.nary:
        return tuple(node._first)
    return (node._first,) if node._operation.arity == 1 else (node._first, node._second)


def edges(node: Node) -> list[tuple[int, Node, Any]]:
    """The edges that carry gradient: ``(position, operand, saved)`` in operand order."""
    op = node._operation
    if op is None:
        return []
    if op.backward is not None:
        raise RuntimeError(OWN_BACKWARD_MESSAGE)
    if op.maskable and not op.masked_by_structure and state.recording is not None:
        # which operand gets 0 is decided by the numbers (relu's sign, max's ties): a recording
        # would keep this call's choice for every later call, so the recording refuses
        refuse_number(
            f"a gradient with create_graph through {op.name} (its rule depends on the number)",
            "take the gradient outside the function: vmap(grad(f)) over a batch, or grad(f) called uncompiled",
        )
    if op.nary:
        return [(k, x, s) for k, (x, s) in enumerate(zip(node._first, node._saved_first, strict=True)) if s is not None]
    found = []
    if node._saved_first is not None:
        found.append((0, node._first, node._saved_first))
    if node._saved_second is not None:
        found.append((1, node._second, node._saved_second))
    return found


def gradient_of(node: Node, position: int) -> Callable[..., Any]:
    """The gradient rule of the edge at ``position`` of ``node`` (``ops.times``...)."""
    assert node._operation is not None  # only called for an edge, which only an operation has
    gradients = node._operation.gradients
    return gradients[0] if node._operation.nary else gradients[position]


def is_freed(node: Node) -> bool:
    """Whether an earlier pass freed what ``node`` saved for the backward pass."""
    return node._operation is not None and node._saved_first is None and node._saved_second is None


def origin(node: Node) -> str | None:
    """Where ``node`` was made (``"file:line"``), if it was made under ``detect_anomaly``."""
    return getattr(node, "_origin", None)


def sequence(node: Node) -> int:
    """The creation order of a node that takes gradient (later nodes have larger numbers)."""
    return node._seq


def ancestry(outputs: Sequence[N]) -> list[N]:
    """Every node ``outputs`` were computed from, constants and detached ones too, each listed
    after its operands (for pictures, which show what takes no gradient as well)."""
    seen: set[int] = set()
    order: list[N] = []
    stack: list[tuple[N, bool]] = [(output, False) for output in reversed(outputs)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        parents = cast("list[N]", [x for x in operands(node) if isinstance(x, Node)])
        stack.extend((parent, False) for parent in reversed(parents) if id(parent) not in seen)
    return order


# ---- the reverse pass ---------------------------------------------------------------------------


def reached(outputs: Sequence[N]) -> tuple[list[N], list[N]]:
    """The nodes a pass from ``outputs`` reaches through edges that take gradient.

    Returns the operations in the order the pass runs them (decreasing creation) and the
    leaves. Sets each one's cotangent to -0.0. Raises ``RuntimeError`` for an output that
    requires no grad, or for a reached node an earlier pass freed: before anything changes.
    Call it holding ``pass_lock``.
    """
    for index, output in enumerate(outputs):
        if not output.requires_grad:
            raise RuntimeError(
                f"element {index} of the outputs does not require grad and has no graph: "
                "it was made from constants, detached values or under no_grad(), or it is a gradient "
                "gradients() returned without create_graph=True"
            )
    token = object()
    inner: list[N] = []
    leaves: list[N] = []
    stack = list(outputs)
    # the bound methods once, not per node: this loop visits every node of the graph
    pop, push, keep, keep_leaf = stack.pop, stack.append, inner.append, leaves.append
    while stack:
        node = pop()
        if node._seen is token:
            continue
        node._seen = token
        node._cotangent = -0.0
        op = node._operation
        if op is None:
            keep_leaf(node)
            continue
        keep(node)
        da = node._saved_first
        db = node._saved_second
        if op.nary:
            if da is None:
                raise RuntimeError(f"{FREED_MESSAGE} (the node is {node!r}, made by {op.name!r})")
            if None in da:  # some operands take no gradient
                stack.extend(x for x, s in zip(node._first, da, strict=True) if s is not None and x._seen is not token)
            else:  # every operand (a compiled call's output): in C; the pop skips those already reached
                stack.extend(node._first)
            continue
        if db is not None:
            b = node._second
            if b._seen is not token:
                push(b)
        elif da is None:
            raise RuntimeError(f"{FREED_MESSAGE} (the node is {node!r}, made by {op.name!r})")
        if da is not None:
            a = node._first
            if a._seen is not token:
                push(a)
    inner.sort(key=by_creation, reverse=True)
    return inner, leaves


Observer = Callable[[Node, int, Node, float, Any, float], None]
"""Told of every edge as the pass runs it: ``(node, position, operand, upstream, saved,
contribution)``; the operand's cotangent already includes the contribution."""


def seed(outputs: Sequence[Node], seeds: Sequence[Any]) -> None:
    """Add each output's seed into its cotangent (an output listed twice gets both)."""
    for output, value in zip(outputs, seeds, strict=True):
        output._cotangent += value


def propagate(order: Sequence[Node], observer: Observer | None = None, *, own_backward: bool = False) -> None:
    """Run the chain rule over ``order`` (from ``reached``), outputs already seeded.

    Afterwards each reached node's cotangent is the gradient of the seeded outputs with
    respect to it. With an ``observer`` (``explain``, anomaly mode) the pass is ``_walk``,
    which tells it of every edge; without one it is ``_walk`` written out for floats and
    nobody watching (the hot loop: the same order, the same formulas, the same bits), where
    operations whose every edge is ``g * saved`` multiply inline (most nodes) and the others
    apply their gradient rules.
    """
    if observer is not None:
        _walk(order, observer, own_backward, None)
        return
    contribution = ops.contribution
    for node in order:
        g = node._cotangent
        op: Op = node._operation  # type: ignore[assignment]  # reached() lists operations only
        if op.plain:
            da = node._saved_first
            if da is not None:
                node._first._cotangent += g * da
            db = node._saved_second
            if db is not None:
                node._second._cotangent += g * db
        elif op.backward is not None:
            op.backward(node, g)
        elif op.nary:
            gradient = op.gradients[0]
            for x, s in zip(node._first, node._saved_first, strict=True):
                if s is not None:
                    x._cotangent += contribution(gradient, g, s)
        else:
            gradients = op.gradients
            da = node._saved_first
            if da is not None:
                node._first._cotangent += contribution(gradients[0], g, da)
            db = node._saved_second
            if db is not None:
                node._second._cotangent += contribution(gradients[1], g, db)


def _walk(order: Sequence[Node], observer: Observer | None, own_backward: bool, grads: dict[Node, Any] | None) -> None:
    """The reverse pass, the one walk every pass is: each node of ``order`` hands each operand
    its edge's contribution (its gradient rule of the node's gradient ``g`` and what the edge
    saved), and ``observer`` is told of every edge.

    Two modes: on floats (``grads`` None) the gradients are the nodes' cotangents; an operation
    that runs its own backward (a compiled call) has no edges to show, so it runs as it is when
    ``own_backward`` (anomaly mode: it checks its results itself) and is refused otherwise
    (``explain``). Differentiably (``create_graph``: ``grads`` holds the seeded outputs'
    gradients) the saved values are computed again as Values and every contribution is a node
    of a new graph, kept in ``grads`` (a masked edge hands an exact 0.0 that is a node too)."""
    differentiable = grads is not None
    for node in order:
        g = grads[node] if grads is not None else node._cotangent
        op: Op = node._operation  # type: ignore[assignment]  # reached() lists operations only
        if own_backward and op.backward is not None:
            op.backward(node, g)
            continue
        for position, operand, saved in saved_as_values(node) if differentiable else edges(node):
            if saved is MASKED and differentiable:  # on the graph: it can be differentiated again (to 0)
                part: Any = make(type(operand), 0.0, ops.MASKED_ZERO, operand, MASKED, None, None)
            else:
                part = ops.contribution(gradient_of(node, position), g, saved)
            if grads is not None:
                grads[operand] = grads[operand] + part if operand in grads else part
            else:
                operand._cotangent += part
            if observer is not None:
                observer(node, position, operand, g, saved, part)


def cotangent(node: Node) -> float:
    """The gradient the pass that just ran gave ``node``."""
    return node._cotangent


def accumulate(nodes: Iterator[Node] | list[Node]) -> None:
    """Add each node's cotangent into its ``.grad``; a ``.grad`` set to None counts as 0.0."""
    for node in nodes:
        try:
            node._grad += node._cotangent  # type: ignore[operator]  # None raises, and is handled below
        except TypeError:  # None: cleared by its user (the only other thing the grad setter admits)
            node._grad = 0.0 + node._cotangent


def free(nodes: Iterator[Node] | list[Node]) -> None:
    """Drop what ``nodes`` saved for the backward pass: a later pass through them raises."""
    for node in nodes:
        op = node._operation
        if op is None:
            continue
        if op.release is None:
            node._saved_first = node._saved_second = None
        else:
            op.release(node)


# ---- the same pass with Values, for derivatives of derivatives -----------------------------------


def saved_as_values(node: Node) -> list[tuple[int, Node, Any]]:
    """The edges of ``node`` with their saved values computed again from the operands and the
    node themselves (Values), so that gradients built from them are differentiable."""
    op = node._operation
    assert op is not None  # only called for operations
    if op.backward is not None:
        raise RuntimeError(OWN_BACKWARD_MESSAGE)
    if op.nary:  # its rule decides by numbers (max's ties, take's index): the forward's decision stands
        values = op.saved[0](tuple(node._first), node)
        return [(k, x, _as_saved(values[k], s) if isinstance(values[k], Node) else s) for k, x, s in edges(node)]
    args = (node._first, node) if op.arity == 1 else (node._first, node._second, node)
    return [(k, x, _as_saved(op.saved[k](*args), saved)) for k, x, saved in edges(node)]


def _as_saved(value: Any, saved: Any) -> Any:
    """``value`` (a saved value computed again from Values) with the number the forward pass
    saved: if an operand's ``.data`` was assigned since, the gradient still uses the numbers of
    the forward pass, at every order, as the first-order pass does."""
    if not isinstance(value, Node) or type(saved) is not float:
        return value
    number = value._data
    unchanged = number == saved and math.copysign(1.0, number) == math.copysign(1.0, saved)
    if unchanged or (number != number and saved != saved):
        return value
    return make(type(value), saved, ops.IDENTITY, value, 1.0, None, None)


def propagate_differentiably(
    order: Sequence[Node], grads: dict[Node, Any], observer: Observer | None = None
) -> dict[Node, Any]:
    """``propagate`` with Values (``_walk``'s differentiable mode): ``grads`` holds the seeded
    outputs' gradients (Values or floats) and gains every reached node's, each built on a new
    graph (``create_graph``)."""
    _walk(order, observer, False, grads)
    return grads


__all__ = ["FREED_MESSAGE", "MASKED", "Node", "Observer"]
