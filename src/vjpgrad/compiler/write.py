"""Writing a recorded function's code: its forward and reverse passes as straight-line Python.

The forward pass is one line per operation, in the order the operations were made, except
that an operation read once, and by no reverse pass, is written into the expression of the
operation that reads it (``Writer.forward_lines``: Python evaluates that expression in the
order the lines ran); the reverse pass one contribution per edge, nodes in decreasing order
of creation, each operand's contributions added in that order, exactly as ``graph.propagate``
runs them (those that wait are added in one statement where the operand's gradient is read:
``Sums``). The lines of the reverse pass are not written by hand: each edge's saved rule and
gradient from ``core/ops.py`` are called with ``codegen.symbols.Code`` names instead of floats,
and what they build is the text of the line.
So the code computes the eager engine's numbers, bit for bit, by construction. ``x ** k`` with
an exponent written in the code runs the branch ``powers.power_scalar`` takes for it, written
out by the symbols (``x * x`` for 2); ``max`` is the one operation written here rather than by
its rule: Python's ``max`` where no operand is nan, and its saved rule's comparisons
(``ops._max_saved``) written out in ``Writer._max_lines``, each tested against the table's.

Only the graph goes into the code: the names are made here (``x0`` for arguments, ``p0`` for
parameters, ``t1`` for intermediates, ``g_t1`` for their gradients), numbers are written with
``repr``, and no label, name or other user text is ever placed in it.
"""

from __future__ import annotations

import builtins
import collections
import functools
import itertools
import numbers
import operator
import string
import struct
from collections.abc import Callable, Container, Sequence
from typing import Any, NamedTuple, cast

import vjpgrad.recording as recording
from vjpgrad.codegen.symbols import INLINE, NAMESPACE, Code, contribution, literal, operand, operand_text, saved_names
from vjpgrad.compiler import lines
from vjpgrad.core import graph, ops
from vjpgrad.core.ops import Op

VALUES_LINE = "    # values"  # where the reverse pass unpacks the values it reads


def kept_frame(name: str, received: str, body: Sequence[str], result: str, made: Sequence[str] = ()) -> list[str]:
    """The lines of a pass written as a generator whose one frame serves call after call
    (``compiler.run.Frames`` keeps it): each call's arguments are sent in as ``received`` (the
    names a function would take), ``body`` runs (its lines indented as a function's; empty ones
    dropped, ``VALUES_LINE`` left for ``Program._joined``), and ``result`` is yielded back.
    CPython 3.11 to 3.13 give a plain call of a function with thousands of locals a chunk of
    frame memory of its own, mapped from the system at the call and unmapped at the return, and
    fill every local: a GPT step's reverse pass (10,000 locals) paid about 50 µs a call for it,
    measured alone.
    A generator's frame is made once and stays, with the last call's numbers in it until the
    next call. ``made``: lines that run once, as the frame is made (indented as a function's):
    the frames of the blocks' functions it calls, kept with it."""
    lines = [f"def {name}():  # one frame for every call: each call's arguments sent in", *made]
    lines += [f"    {received} = yield", "    while True:"]
    lines += [line if line is VALUES_LINE else f"    {line}" for line in body if line]
    lines.append(f"        {received} = yield {result}")
    return lines


NESTED = 32
"""How deep the forward pass nests the expressions it writes into their readers (a sum of many
terms would otherwise be one expression as deep as it is long, past what CPython's parser takes)."""

ROWS: dict[Op, str] = {op: name for name, op in vars(ops).items() if isinstance(op, Op) and name.isupper()}
"""Each row of the table by its name in ``core/ops.py`` (what a cached program's helpers are)."""

OUTSIDE = 255
"""``ROW_CODES``'s byte for an operation outside the table (a custom operation, a compiled call)."""
ROW_CODES: dict[Op | None, int] = {None: 0} | {op: k for k, op in enumerate(sorted(ROWS, key=ROWS.__getitem__), 1)}
"""Each row of the table as a byte, by the order of the rows' names, and 0 for no operation (a
Value made inside): what the cache's key and the block search say of each node's operation,
a column at a time in C (``row_codes``)."""
if len(ROW_CODES) >= OUTSIDE:
    raise RuntimeError(f"the table has {len(ROWS)} rows: a row's code no longer fits a byte")


def row_codes(operations: Sequence[Op | None]) -> bytes:
    """Each operation's ``ROW_CODES`` byte, ``OUTSIDE`` for one outside the table, in C."""
    return bytes(map(ROW_CODES.get, operations, itertools.repeat(OUTSIDE)))


def namespace(helpers: Sequence[tuple[str, str, int]]) -> dict[str, Any]:
    """What code loaded from the cache runs in: the helpers every program calls, and its own."""
    bound = dict(NAMESPACE, _anomaly=_anomaly)
    for k, (row, part, index) in enumerate(helpers, start=1):
        op = getattr(ops, row)
        bound[f"_helper{k}"] = op.forward if part == "forward" else op.saved[index]
    return bound


def exact(x: Any) -> Any:
    """``x`` as a key part that tells apart what ``==`` does not: ``-0.0`` from ``0.0`` (whose code
    differs: ``x / 0.0`` is ``inf`` where ``x / -0.0`` is ``-inf``), ``1`` from ``True``, a nan from
    nothing else (``nan != nan``: a key holding one would never be found again)."""
    if isinstance(x, float):
        return ("float", struct.pack("<d", x))
    tobytes = getattr(x, "tobytes", None)
    if tobytes is not None and isinstance(x, numbers.Number):  # a NumPy scalar: its bytes
        return (type(x).__name__, tobytes())
    if isinstance(x, bool):
        return ("bool", x)
    return x


def _anomaly(op: str, position: int) -> None:
    """Anomaly mode's verdict inside a compiled call, in the words of the eager pass."""
    raise FloatingPointError(
        f"backward of {op!r} produced nan for its operand {position} (in a function vjpgrad.compile replays: "
        "call it uncompiled under detect_anomaly() to find the line that made the node)"
    )


PREPARES = -1
"""``Contribution.target`` of a line that prepares the contributions after it (``_s = ...``)."""
PICKS = -2
"""``Contribution.target`` of a statement that adds ``code`` to the one operand of ``picks`` whose
position ``_at`` holds as the code runs (``take``'s picked element): each pass writes it with
``picked_addition``, over the operands of ``picks`` that have started a sum (each by the 0.0
before it; an operand a pass drops, a Value made inside and not returned, has none)."""
ZERO = "0.0"
"""The code of a contribution of exactly 0.0. Adding 0.0 only turns a sum of -0.0 into 0.0, and
does that wherever it comes in a sum: so once a sum has had one 0.0 added (or started at 0.0), a
pass drops every other 0.0 it is handed (``Sums``), with the same bits as adding each."""


class Contribution(NamedTuple):
    """One statement of a reverse pass that ``Writer.backward_lines`` writes for an edge."""

    target: int
    """The id of the operand the contribution goes to; ``PREPARES`` for a line that prepares the
    next ones, ``PICKS`` for an addition to the operand of ``picks`` the code picks."""
    code: str
    """The code of the contribution (or of the preparing line)."""
    position: int
    """The operand's position in its operation (-1 for a preparing line)."""
    reads: tuple[str, ...]
    """The names of the values the code reads, as the writer put them in (operands, the operation's
    own result, numbers named by ``compiler.fold``): what the forward pass must hand on for it."""
    picks: tuple[tuple[int, int], ...] = ()
    """For ``PICKS``: each operand it may add to, as (its position, its id)."""
    alone: bool = False
    """The code reads only the operation's gradient and values the forward pass named, no
    variable a preparing line sets: it may wait to be added where its operand's sum is read
    (``Sums``)."""


class Sums:
    """The sums of one function's reverse code: what each gradient variable is handed, written as
    statements. A contribution that reads only its user's gradient and values the forward pass
    named (``Contribution.alone``) waits, and the variable's waiting contributions are written as
    one statement where the sum is read (``read``), before a statement that adds to it otherwise,
    and wherever the function hands its variables on (``written``): ``g = g + (a) + (b)``, added
    left to right, the bits of ``g += a`` then ``g += b``. A sum so written loads and stores its
    variable once, not once a contribution, and adds each product into the float the sum already
    holds: a linear layer's reverse pass, whose inputs each take a contribution from every
    output, runs about a fifth faster on CPython 3.11 to 3.13.

    A contribution that waits reads only variables that no later statement writes: the gradient
    of an operation the pass has run (a pass runs each operation after every one that reads it,
    so nothing adds to that gradient again) and the forward pass's values. So a waiting sum is
    written anywhere up to its read with the same numbers. A sum whose one contribution is its
    user's gradient itself (an addition's operand), read where its operation runs, is not copied:
    ``read`` names the variable that holds it, which the pass reads in its place.

    A contribution of exactly 0.0 (``ZERO``) only turns a sum of -0.0 into 0.0, and does that
    wherever it comes in a sum: so once a sum has had one 0.0 added (or started at 0.0), a later
    0.0 handed to it is dropped. A variable that starts anew (``=`` of anything but 0.0) leaves
    that set. The glue's set holds across the blocks' calls and loops between its lines: a block
    only adds to the glue's variables (its results go on from what it was sent), and a sum that
    has had 0.0 is never -0.0 again, whatever is added to it. A block's function keeps a set of
    its own, for one copy's lines."""

    def __init__(self) -> None:
        self._zeroed: set[str] = set()
        # variable -> its waiting contributions, in order, each (code, whether it is a variable's
        # name); the first is the variable itself when its sum had started before they came
        self._waiting: dict[str, list[tuple[str, bool]]] = {}

    def add(self, variable: str, started: bool, code: str, wait: bool = False, name: bool = False) -> list[str]:
        """The statements, without their indent, that add ``code`` to ``variable`` now (``=`` if it
        has not ``started``): none for a 0.0 its sum has had, or for a contribution that may
        ``wait`` (``Contribution.alone``), which waits unless the variable's sum has ``NESTED``
        terms. ``name``: ``code`` is a variable (its user's gradient)."""
        if code == ZERO:
            if started and variable in self._zeroed:
                return []
            self._zeroed.add(variable)
        elif not started and self._zeroed:
            self._zeroed.discard(variable)
        if not wait:
            return [*self.written(variable), f"{variable} {'+=' if started else '='} {code}"]
        terms = self._waiting.get(variable)
        if terms is None:
            terms = self._waiting[variable] = [(variable, True)] if started else []
        terms.append((code, name))
        return self.written(variable) if len(terms) > NESTED else []

    def read(self, variable: str, shared: bool = True) -> tuple[list[str], str]:
        """Where the sum in ``variable`` is read as its operation runs (it takes no contribution
        after): the statements that write what waits, and the variable that holds the sum, which
        is another when its one contribution is that variable (``shared``: the caller may read
        it there; an output's own gradient, which the pass returns, may not)."""
        terms = self._waiting.get(variable)
        if shared and terms is not None and len(terms) == 1 and terms[0][1]:
            del self._waiting[variable]
            return [], terms[0][0]
        return self.written(variable), variable

    def written(self, variable: str | None = None) -> list[str]:
        """The statements that write the waiting contributions of ``variable`` (of every variable
        for None: before the function hands its variables on), without their indent."""
        if variable is None:
            return [line for waiting in list(self._waiting) for line in self.written(waiting)]
        terms = self._waiting.pop(variable, None)
        if not terms:
            return []
        if len(terms) == 2 and terms[0][0] == variable:
            return [f"{variable} += {terms[1][0]}"]
        if len(terms) == 1:
            return [f"{variable} = {terms[0][0]}"]
        return [f"{variable} = {' + '.join(code if name or code == ZERO else f'({code})' for code, name in terms)}"]


def started_from(externals: Sequence[Any], names: dict[int, str], reach: Container[int], started: set[int]) -> str:
    """The line that starts the gradient of each argument and parameter a pass reaches from
    ``start`` (what it has had so far), in one unpacking (``_`` for one the pass does not
    reach), and adds them to ``started``; "" for none."""
    targets = []
    for x in externals:
        if id(x) in reach:
            targets.append(f"g_{names[id(x)]}")
            started.add(id(x))
        else:
            targets.append("_")
    if all(target == "_" for target in targets):
        return ""
    return f"    {', '.join(targets)}, = start"


def statements_apart(
    contribution: Contribution, started: Container[int], variable: Callable[[int], str], sums: Sums
) -> list[str]:
    """The statements of a contribution that goes to no one operand (a target below 0), without
    their indent: a line that prepares the next ones (``PREPARES``), as it is; take's picked
    addition (``PICKS``), over the operands that have ``started`` a sum (``variable``: where each
    one's is), after what waits to be added to them (``sums``)."""
    if contribution.target == PICKS:
        leaves = [(k, variable(x)) for k, x in contribution.picks if x in started]
        waiting = [line for _, name in leaves for line in sums.written(name)]
        return waiting + picked_addition(contribution.code, leaves)
    return [contribution.code]


def picked_addition(share: str, leaves: Sequence[tuple[int, str]]) -> list[str]:
    """The statements that add ``share`` to the variable of the leaf whose position ``_at`` holds
    (``take``'s picked element), to none if no leaf has it: an ``if``/``elif`` chain, one line a
    leaf (``elif _at == 5: g_p5 += share``). ``leaves``: (position, variable), by position. A
    chain of tests rather than a search in one expression: a few more comparisons as it runs
    (about 150 ns a take of 27 elements), but CPython's parser took a search nested in one
    expression of assignment expressions at about a millisecond a take, and takes the chain at a
    third of that."""
    return [f"{'elif' if n else 'if'} _at == {k}: {variable} += {share}" for n, (k, variable) in enumerate(leaves)]


_FIELDS = string.Formatter()


def _fields(template: str) -> frozenset[str]:
    """The names a template's ``{...}`` fields take (``0``, ``1``, ``g``, ``out``): what
    ``template.format`` fills in."""
    return frozenset(field for _, field, _, _ in _FIELDS.parse(template) if field is not None)


class Edges:
    """What the recording made, kept apart from the nodes (a backward pass through the first
    call's result frees them): for each node, the positions of the operands it hands gradient to,
    and for each Value made inside, its number."""

    def __init__(
        self, live: Sequence[graph.Node], positions: Sequence[tuple[int, ...]], made: dict[int, graph.Node]
    ) -> None:
        self._live = live
        self.in_order = list(positions)  # the positions, in the order of ``live``
        inside = set(map(id, live)) if made else set()
        self.numbers = {key: graph.number(node) for key, node in made.items() if key in inside}

    @functools.cached_property
    def positions(self) -> dict[int, tuple[int, ...]]:
        """The positions by the node's id: made when code is first written (a warm start loads
        the code and never needs them)."""
        return dict(zip(map(id, self._live), self.in_order, strict=True))


class Writer:
    """Writes the forward and reverse passes of one recorded graph."""

    def __init__(
        self,
        nodes: Sequence[graph.Node],
        names: dict[int, str],
        constants: dict[int, float],
        takes_grad: dict[int, bool],
        sources: dict[int, graph.Node],
        edges: Edges,
    ) -> None:
        self.nodes = nodes  # the live operations and Values made inside, in creation order
        self.sources = sources  # id(Value made inside from a float argument) -> that argument
        self.edges = edges  # which operands each node hands gradient to, and the numbers of Values made inside
        self.names = names  # id(Value) -> variable name, for externals and operations
        self.constants = constants  # id(leaf made inside the function) -> its number
        self.takes_grad = takes_grad  # id(Value) -> whether gradient flows to it
        self.namespace = dict(NAMESPACE, _anomaly=_anomaly)
        self._helpers = 0
        self.helpers: list[tuple[str, str, int] | None] = []  # what each _helperN is, in order
        self._lines: dict[int, str] = {}
        self._forms: dict[int, tuple[str, list[str], str] | None] = {}
        self._templates: dict[tuple[Any, ...], tuple[str, frozenset[str]] | None] = {}
        # (id of an operation, operand position) -> the name a number operand goes by instead of
        # its literal: set by ``compiler.fold`` for a number that differs between a block's copies
        self.named_numbers: dict[tuple[int, int], str] = {}

    def term(self, x: Any) -> str:
        """An operand as text: a variable name or a number."""
        if isinstance(x, graph.Node):
            key = id(x)
            return self.names[key] if key in self.names else literal(self.constants[key])
        return literal(x)

    def terms(self, node: graph.Node, operands: Sequence[Any]) -> list[str]:
        """``node``'s operands as text (``term``), a number by its name where it has one."""
        named = self.named_numbers
        if not named:
            return [self.term(x) for x in operands]
        key = id(node)
        return [named.get((key, k)) or self.term(x) for k, x in enumerate(operands)]

    def symbol(self, x: Any) -> Any:
        """An operand as a rule's argument: a Code symbol, or a float for a number constant."""
        if isinstance(x, graph.Node):
            key = id(x)
            return Code(self.names[key], atomic=True) if key in self.names else self.constants[key]
        return x

    def helper(self, op: Op, part: str, k: int = 0) -> str:
        """Bind ``op``'s forward (``part="forward"``) or its ``k``-th saved rule (``"saved"``) under
        a fresh name of our own making. ``helpers`` lists them, so that code loaded from the cache
        can have them bound again (a row of the table is named by ``ROWS``; an operation outside the
        table, a custom one, makes the code uncacheable: ``None``)."""
        self._helpers += 1
        name = f"_helper{self._helpers}"
        self.namespace[name] = op.forward if part == "forward" else op.saved[k]
        self.helpers.append((ROWS[op], part, k) if op in ROWS else None)
        return name

    def comment(self, op: Op) -> str:
        """The operation's name, from our table only (never a user's text)."""
        return op.shown if op in ops.BUILTIN else "custom operation"

    def anomaly_name(self, op: Op) -> str:
        """The operation as anomaly mode names it, in eager code's words (``'mul'``, where the
        comment shows ``*``), from our table only (never a user's text)."""
        return op.name if op in ops.BUILTIN else "custom operation"

    def forward_line(self, node: graph.Node) -> str:
        """The line of the forward pass that computes ``node`` alone (written once: the reverse
        pass shows it again as a comment above the node's contributions)."""
        line = self._lines.get(id(node))
        if line is None:
            line = self._lines[id(node)] = self._forward_line(node)
        return line

    def _forward_line(self, node: graph.Node) -> str:
        form = self._form(node)
        if form is None:  # a Value made inside: Value(lr) of a float argument, or a new leaf's number
            source = self.sources.get(id(node))
            if source is not None:
                return f"{self.names[id(node)]} = {self.names[id(source)]}  # Value() of a float argument"
            return f"{self.names[id(node)]} = {literal(self.edges.numbers[id(node)])}  # a Value made inside"
        template, texts, comment = form
        return f"{self.names[id(node)]} = {template.format(*texts)}  # {comment}"

    def _form(self, node: graph.Node) -> tuple[str, list[str], str] | None:
        """How ``node``'s forward expression is written: a template with a field ``{k}`` per
        operand, each operand's text as the template takes it, and the comment; None for a Value
        made inside. Made once per node (a helper it calls is bound once)."""
        known = self._forms.get(id(node), self)
        if known is not self:
            return known  # type: ignore[return-value]  # a form or None, as stored below
        op = graph.op_of(node)
        form = None
        if op is not None:
            terms = self.terms(node, graph.operands(node))
            fields = ", ".join(f"{{{k}}}" for k in range(len(terms)))
            if op is ops.MAX and len(terms) > 1:
                form = (_max_template(len(terms)), [operand_text(t) for t in terms], self.comment(op))
            elif op is ops.TAKE:
                form = (_take_template(len(terms)), [operand_text(t) for t in terms], self.comment(op))
            elif op.nary:
                form = (f"{self.helper(op, 'forward')}({fields})", terms, self.comment(op))
            elif op.code in INLINE:
                form = (op.code, [operand_text(t) for t in terms], self.comment(op))
            elif op is ops.POW_SCALAR and self._constant_exponent(node):
                form = (_power_template(graph.operands(node)[1]), [operand_text(t) for t in terms], self.comment(op))
            elif op in ops.BUILTIN:  # a call of a helper in NAMESPACE, e.g. _pow_scalar(x0, 0.5)
                form = (op.code, terms, self.comment(op))
            else:
                form = (f"{self.helper(op, 'forward')}({fields})", terms, self.comment(op))
        self._forms[id(node)] = form
        return form

    def _constant_exponent(self, node: graph.Node) -> bool:
        """Whether ``x ** k``'s exponent is a number written in the code (not one ``compiler.fold``
        passes to each copy of a block, nor a Value)."""
        k = graph.operands(node)[1]
        return type(k) in (float, int) and (id(node), 1) not in self.named_numbers

    def forward_lines(self, nodes: Sequence[graph.Node], inlined: Container[int], indent: str) -> list[str]:
        """The lines of the forward pass that compute ``nodes`` (creation order), each operation
        of ``inlined`` written into the expression of the one operation that reads it instead of
        into a variable of its own: a float kept in a variable lives until the function returns,
        where one inside an expression is freed as soon as it is read, so the next result reuses
        its memory (a linear layer's products and partial sums, which no reverse pass reads).

        Python evaluates an expression's operands left to right, each before the operation, so
        an expression whose inlined operands are the latest expressions not yet written, in the
        order it reads them, computes exactly what the lines computed, in the same order (the
        same numbers, the same first error). Any other expression first writes every expression
        still waiting, in creation order, as lines of their own; so does a template that reads an
        operand twice (relu's), and an expression nested ``NESTED`` deep. ``inlined``: the ids
        of operations read exactly once, by an operation among ``nodes``, whose value nothing
        else needs (the reverse pass, a later unit, the result)."""
        lines: list[str] = []
        names = self.names
        waiting: list[tuple[int, str, str, int]] = []  # (id, expression, comment, depth) not written yet
        waiting_ids: set[int] = set()

        def write_waiting() -> None:
            lines.extend(f"{indent}{names[key]} = {expression}  # {comment}" for key, expression, comment, _ in waiting)
            waiting.clear()
            waiting_ids.clear()

        positions: dict[tuple[str, int], str] = {}  # (an index, a count) -> its position's name
        for node in nodes:
            form = self._form(node)
            if form is None:
                write_waiting()
                lines.append(f"{indent}{self.forward_line(node)}")
                continue
            template, texts, comment = form
            if graph.op_of(node) is ops.TAKE and id(graph.operands(node)[0]) not in waiting_ids:
                # the index's position, checked once for every take of it (an embedding's columns)
                key = (texts[0], len(texts) - 1)
                if key not in positions:
                    write_waiting()
                    positions[key] = f"_n{len(positions)}"
                    lines.append(f"{indent}{positions[key]} = _take_position({key[0]}, {key[1]})  # take's position")
                template = _take_template(len(texts), positions[key])
            depth = 0
            if waiting:
                operands = graph.operands(node)
                read = [k for k, x in enumerate(operands) if id(x) in waiting_ids]
                if read:
                    top = waiting[-len(read) :]
                    if len(top) == len(read) and all(
                        w[0] == id(operands[k]) and template.count(f"{{{k}}}") == 1
                        for w, k in zip(top, read, strict=True)
                    ):
                        texts = list(texts)
                        for w, k in zip(top, read, strict=True):
                            texts[k] = f"({w[1]})"
                        depth = 1 + max(w[3] for w in top)
                        del waiting[-len(read) :]
                        waiting_ids.difference_update(w[0] for w in top)
                    else:
                        write_waiting()
            expression = template.format(*texts)
            if id(node) in inlined and depth < NESTED:
                waiting.append((id(node), expression, comment, depth))
                waiting_ids.add(id(node))
            else:
                write_waiting()
                lines.append(f"{indent}{names[id(node)]} = {expression}  # {comment}")
        write_waiting()
        return lines

    def read_names(self, node: graph.Node, operands: Sequence[Any]) -> list[str | None]:
        """The name each operand of ``node`` goes by in the code (``terms``), None for one written
        as a number: what a statement that uses the operand reads."""
        named, names, key = self.named_numbers, self.names, id(node)
        return [
            named.get((key, k)) or (names.get(id(x)) if isinstance(x, graph.Node) else None)
            for k, x in enumerate(operands)
        ]

    def backward_lines(self, node: graph.Node, gradient: str, checked: bool = False) -> list[Contribution]:
        """A ``Contribution`` for each edge that carries gradient (and ``PREPARES`` for a line that
        prepares them, ``PICKS`` for take's picked element), with the names each reads; for
        anomaly mode's pass (``checked``), one contribution an edge."""
        op = graph.op_of(node)
        assert op is not None
        positions = self.edges.positions[id(node)]  # the edges the recording made
        if not positions:
            return []
        operands = graph.operands(node)
        out = self.names[id(node)]
        read = self.read_names(node, operands)
        every = (*(name for name in read if name is not None), out)  # a saved rule's helper reads them all
        if op.nary:
            return self._nary_lines(node, op, positions, gradient, every, checked)
        terms = self.terms(node, operands)
        node_type, named, key = graph.Node, self.named_numbers, id(node)
        pattern = tuple(None if isinstance(x, node_type) or (key, k) in named else x for k, x in enumerate(operands))
        lines: list[Contribution] = []
        for k in positions:
            known = self._template(op, k, pattern)
            if known is None:  # a rule that needs numbers: call it on them as the code runs
                helper = self.helper(op, "saved", k)
                numbers = saved_names("_s", op.saves[k])
                part = operand(contribution(op.gradients[k], Code(gradient, atomic=True), numbers))
                lines.append(Contribution(PREPARES, f"_s = {helper}({', '.join(terms)}, {out})", -1, every))
                lines.append(Contribution(id(operands[k]), f"0.0 if _s is _MASKED else {part}", k, ()))
                continue
            template, fields = known
            reads = tuple(name for i, name in enumerate(read) if name is not None and str(i) in fields)
            code = template.format(*terms, g=gradient, out=out)
            reads = (*reads, out) if "out" in fields else reads
            lines.append(Contribution(id(operands[k]), code, k, reads, alone=True))
        return lines

    def _nary_lines(
        self, node: graph.Node, op: Op, positions: tuple[int, ...], gradient: str, every: tuple[str, ...], checked: bool
    ) -> list[Contribution]:
        """The edges of an operation of any number of operands: its saved rule called as the code
        runs (``max``'s written out, ``_max_lines``), each edge's gradient of what it saved."""
        operands = graph.operands(node)
        if op is ops.MAX and len(operands) > 1:
            return self._max_lines(node, positions, gradient, every)
        if op is ops.TAKE:
            return self._take_lines(node, positions, gradient, checked)
        g = Code(gradient, atomic=True)
        rule = op.gradients[0]
        saved = f"{self.helper(op, 'saved')}(({', '.join(self.terms(node, operands))},), {self.names[id(node)]})"
        parts = []
        one = len(positions) == 1
        for k in positions:
            s = Code(f"{saved}[{k}]", atomic=True) if one else Code(f"_s[{k}]", atomic=True)
            code = f"0.0 if {s.text} is _MASKED else {operand(contribution(rule, g, s))}"
            parts.append(Contribution(id(operands[k]), code, k, every if one else ()))
        if not one:
            parts.insert(0, Contribution(PREPARES, f"_s = {saved}", -1, every))
        return parts

    def _max_lines(
        self, node: graph.Node, positions: tuple[int, ...], gradient: str, every: tuple[str, ...]
    ) -> list[Contribution]:
        """``max``'s edges, its saved rule (``ops._max_saved``) written out: an operand is a hit
        where it equals the maximum (where the maximum is nan, where it is nan itself), and each
        hit is handed ``g / count`` (the rule's gradient, ``divided``), each other operand 0.0."""
        terms = [operand_text(t) for t in self.terms(node, graph.operands(node))]
        out = self.names[id(node)]
        equal = ", ".join(f"{t} == {out}" for t in terms)
        nan = ", ".join(f"{t} != {t}" for t in terms)
        share = operand(contribution(ops.MAX.gradients[0], Code(gradient, atomic=True), Code("_count", atomic=True)))
        lines = [
            Contribution(PREPARES, f"_hits = ({equal},) if {out} == {out} else ({nan},)", -1, every),
            Contribution(PREPARES, "_count = float(_hits.count(True))", -1, ()),
        ]
        for k in positions:
            lines.append(Contribution(id(graph.operands(node)[k]), f"{share} if _hits[{k}] else 0.0", k, ()))
        return lines

    def _take_lines(
        self, node: graph.Node, positions: tuple[int, ...], gradient: str, checked: bool
    ) -> list[Contribution]:
        """``take``'s edges, its saved rule (``ops._take_saved``) written out: the element the index
        picks is handed the rule's gradient of ``g`` and its saved zero (``0.0 + g``), every other
        element exactly 0.0, and the index (if it takes gradient) exactly 0.0.

        Written as every operand handed 0.0 (``ZERO``: a pass drops those a sum has had), then
        the statements (``PICKS``: ``picked_addition``) that add the share to the picked element
        alone: its sum gets 0.0 and ``0.0 + g`` where eager code adds ``0.0 + g`` alone, the same
        bits (its share adds 0.0 itself). Anomaly mode's pass (``checked``) tests each edge's contribution
        for nan, so it is handed one contribution an edge, picked or 0.0, as eager code hands them."""
        operands = graph.operands(node)
        index = self.read_names(node, operands)[0]
        terms = [operand_text(t) for t in self.terms(node, operands)]
        saved = Code(literal(ops.TAKE_SAVED), atomic=True)
        share = operand(contribution(ops.TAKE.gradients[0], Code(gradient, atomic=True), saved))
        at = f"_at = int({terms[0]}) + 1"  # the forward checked the index it read, as it read it
        lines = [Contribution(PREPARES, at, -1, (index,) if index else ())]
        if checked:
            for k in positions:
                code = ZERO if k == 0 else f"{share} if _at == {k} else {ZERO}"
                lines.append(Contribution(id(operands[k]), code, k, ()))
            return lines
        lines += [Contribution(id(operands[k]), ZERO, k, (), alone=True) for k in positions]
        picks = tuple((k, id(operands[k])) for k in positions if k > 0)
        if picks:
            lines.append(Contribution(PICKS, share, -1, (), picks))
        return lines

    def _template(self, op: Op, k: int, pattern: tuple[Any, ...]) -> tuple[str, frozenset[str]] | None:
        """The code of edge ``k``'s contribution with ``{0}``, ``{1}``, ``{g}`` and ``{out}`` for
        the names, and which of them it uses: the rule called once per operation, edge and
        constant operands, not per node."""
        key = (op, k, tuple(c if c is None else exact(c) for c in pattern))
        known = self._templates.get(key, self)  # self: not written yet (None is a template's answer)
        if known is not self:
            return known  # type: ignore[return-value]  # a template or None, as stored below
        template = None
        if op in ops.BUILTIN:
            args = [Code(f"{{{i}}}", atomic=True) if c is None else c for i, c in enumerate(pattern)]
            try:
                code = contribution(
                    op.gradients[k], Code("{g}", atomic=True), op.saved[k](*args, Code("{out}", atomic=True))
                )
                text = code.text if isinstance(code, Code) else literal(code)
                template = (text, _fields(text))
            except TypeError:  # the rule branches on a number: it runs on numbers instead
                template = None
        self._templates[key] = template
        return template


def _power_template(k: float) -> str:
    """The forward of ``x ** k`` for the exponent ``k``, with ``{0}`` for ``x``: the operations
    ``powers.power_scalar`` runs for that exponent (``floats.POWER_STEPS``), written out (``{0} * {0}`` for 2)."""
    power = Code("{0}", atomic=True).pow_scalar(k)
    return power.text if isinstance(power, Code) else literal(power)


def _max_template(count: int) -> str:
    """The forward of ``max`` of ``count`` operands (two or more), with ``{0}``, ``{1}``... for
    them: Python's ``max``, in C, where no operand is nan (it keeps the first of equal ones and
    replaces it only by a greater one, as the table's forward does: ``max(-0.0, 0.0)`` is -0.0),
    and the table's forward itself where one is (it returns the first nan, which Python's ``max``
    would not)."""
    fields = ", ".join(f"{{{k}}}" for k in range(count))
    numbers = " and ".join(f"{{{k}}} == {{{k}}}" for k in range(count))
    return f"_max_of({fields}) if {numbers} else _max({fields})"


def _take_template(count: int, at: str | None = None) -> str:
    """The forward of ``take`` of an index and ``count - 1`` elements, with ``{0}`` for the index:
    the element it picks from a tuple of them, the index checked as the table's forward checks it
    (``_take_position``), or the position ``at`` names, found by an earlier line of the code."""
    elements = ", ".join(f"{{{k}}}" for k in range(1, count))
    return f"({elements},)[{at or f'_take_position({{0}}, {count - 1})'}]"


class Readers(NamedTuple):
    """Who reads each operation of a recording, by position (``readers_of``)."""

    last: list[int]
    """The position of each operation's last reader, -1 for none."""
    once: list[int]
    """The position of each operation's one reader when one operand of one operation reads it
    (``x * x`` reads ``x`` twice), -1 otherwise."""


def readers_of(columns: recording.Columns) -> Readers:
    """The ``Readers`` of the nodes ``columns`` describe, counted a column at a time in C: the
    first and second operands' places (``Columns.at``: ``Counter``, and ``dict(zip(...))``,
    whose later readers overwrite the earlier), then those of each operation of many. A place
    that is no node's (-1, None) is counted too, harmlessly: no position looks it up."""
    at, many_at = columns.at, columns.many_at
    users = range(len(columns.operations))
    counts = collections.Counter(at)
    latest = dict(zip(at, itertools.chain.from_iterable(zip(users, users, strict=True)), strict=True))
    for i, places in many_at.items():
        counts.update(places)
        for j in places:
            if latest.get(j, -1) < i:
                latest[j] = i
    last = list(map(latest.get, users, itertools.repeat(-1)))
    count = list(map(counts.get, users, itertools.repeat(0)))
    return Readers(last, [q if c == 1 else -1 for q, c in zip(last, count, strict=True)])


class Program:
    """The code of one recorded graph: ``forward_source``, and ``backward_source(seeded)`` for
    each set of outputs a pass is seeded at.

    ``live`` are the recorded operations the outputs need, in creation order; ``externals``
    the arguments, then the parameters; ``outputs`` the positions in ``live`` of the outputs
    made inside. The forward hands the reverse pass only the values it reads (``kept``):
    written once with every output seeded, the reverse pass says which.
    """

    table: tuple[tuple[int, tuple[int, ...]], ...] = ()
    """The repeated blocks written once (``compiler.fold``: each its length and where each copy
    starts): none in straight-line code."""

    forward_source: str
    """The forward pass."""
    _every_source: str
    """The reverse pass of every output, written with the program (it says what is kept)."""

    def __init__(
        self,
        live: Sequence[graph.Node],
        externals: Sequence[graph.Node],
        arguments: int,
        constants: dict[int, float],
        outputs: list[int],
        sources: dict[int, graph.Node],
        edges: Edges,
        columns: recording.Columns | None = None,
        readers: Readers | None = None,
        place: dict[int, int] | None = None,
    ) -> None:
        self._setup(live, externals, arguments, constants, outputs, sources, edges, columns, readers, place)
        self._write()

    def _write(self) -> None:
        """Write the code: the reverse pass of every output (which says what it reads), the forward."""
        lines, read = self._backward_lines(self._every, checked=False)
        self._keep(read)
        self._every_source = self._joined(lines)
        self.forward_source = self._forward_source()

    def _keep(self, read: set[str]) -> None:
        """The values the forward pass hands the reverse pass: those its statements read (by the
        names the writer gave them, ``Contribution.reads``) and the outputs made inside, which are
        returned."""
        names = self.names
        wanted = read | {names[self.ids[k]] for k in self.internal_outputs}  # a name is one node's
        self.kept = list(itertools.compress(self.live, map(wanted.__contains__, map(names.__getitem__, self.ids))))
        self.kept_place = {id(n): k for k, n in enumerate(self.kept)}

    def _setup(
        self,
        live: Sequence[graph.Node],
        externals: Sequence[graph.Node],
        arguments: int,
        constants: dict[int, float],
        outputs: list[int],
        sources: dict[int, graph.Node],
        edges: Edges,
        columns: recording.Columns | None,
        readers: Readers | None = None,
        place: dict[int, int] | None = None,
    ) -> None:
        """The names, what takes gradient and the writer: what every way of writing the code
        starts from. ``columns``: ``live``'s, as the reading of the recording kept them, else
        read now (``recording.columns_of``); ``readers``: their ``readers_of``, if counted;
        ``place``: each operation's position by its id, if the search made it."""
        self.live = live
        self.externals = externals
        self.arguments = arguments
        # each operation and its operands, and where each was made, read once: every pass below
        # (the reach, the readers) reads these columns, not the nodes
        self.columns = columns = columns if columns is not None else recording.columns_of(live)
        self._readers = readers
        if place is not None:
            self.place = place  # else made the first time it is asked (``place``)
        # the names of the code: x0... for the arguments' numbers, p0... for parameters, t1... inside
        ids = self.ids = list(map(id, live))  # each operation's id, read once: every pass below keys by it
        names = {id(x): f"x{k}" if k < arguments else f"p{k - arguments}" for k, x in enumerate(externals)}
        names.update(zip(ids, [f"t{k}" for k in range(1, len(live) + 1)], strict=True))
        self.names = names
        # gradient flows where the recording made edges: detach() and no_grad() made none
        takes_grad = {id(x): x.requires_grad for x in externals}
        takes_grad.update(zip(ids, columns.takes_grad, strict=True))
        self.takes_grad = takes_grad
        self.internal_outputs = outputs
        self._reached: dict[frozenset[int], frozenset[int]] = {}
        self._inside: dict[frozenset[int], frozenset[int]] = {}
        self._reach_of: dict[frozenset[int], set[int]] = {}
        self.edges = edges
        self.writer = Writer(live, names, constants, takes_grad, sources, edges)
        self.kept = list(self.live)
        self._every: frozenset[int] = frozenset(range(len(self.internal_outputs)))

    @property
    def readers(self) -> Readers:
        """Who reads each operation (``readers_of``), counted the first time it is asked."""
        if self._readers is None:
            self._readers = readers_of(self.columns)
        return self._readers

    @functools.cached_property
    def place(self) -> dict[int, int]:
        """Each operation's position in ``live`` by its id."""
        return dict(zip(self.ids, itertools.count()))

    def node(self, key: int) -> graph.Node | None:
        """The operation whose id is ``key``, None for a Value from outside."""
        at = self.place.get(key)
        return None if at is None else self.live[at]

    def payload(self, name: str) -> dict[str, Any]:
        """The forward pass and the reverse pass of every output, compiled under ``name``, with
        what running them needs to know, as data ``marshal`` writes (what the cache stores): the
        values the forward hands on (``kept``), the helpers the code calls, what the pass reaches,
        and what each output is computed from (``depends``)."""
        every = self._every
        sources = {"forward": self.forward_source, "backward": self.backward_source(every)}
        code = {}
        for part, source in sources.items():
            filename = f"{name} {part}>"
            lines.show(filename, source)
            code[part] = builtins.compile(source, filename, "exec")
        outputs = [id(self.live[k]) for k in self.internal_outputs]
        externals = list(map(id, self.externals))
        depends = []
        for own in outputs:  # each output: the arguments and parameters, the outputs it is computed from
            # one output's reach is the whole pass's, which the reverse pass's writing found already
            reach = self.reach_of(every) if len(outputs) == 1 else self.reach([self.live[self.place[own]]])
            depends.append(
                (
                    tuple(k for k, key in enumerate(externals) if key in reach),
                    tuple(sorted({i for i, key in enumerate(outputs) if key in reach and key != own})),
                )
            )
        place = self.place
        return {
            **code,
            "kept": tuple(place[id(node)] for node in self.kept),
            "helpers": tuple(self.writer.helpers),
            "cacheable": None not in self.writer.helpers,
            "reached": (tuple(self.reached_externals(every)), tuple(self._inside_in_order(every))),
            "depends": tuple(depends),
            "fold": self.table,
        }

    @property
    def namespace(self) -> dict[str, Any]:
        """What the code calls: the helpers of ``codegen.symbols.NAMESPACE`` and this program's own."""
        return self.writer.namespace

    @property
    def source(self) -> str:
        """Forward and reverse passes (every output seeded), as the code that runs."""
        return self.forward_source + "\n\n" + self.backward_source(self._every)

    def _unpack(self, names: list[str], source: str) -> str:
        if not names:
            return ""
        return f"    {', '.join(names)}, = {source}\n"

    def _forward_source(self) -> str:
        body = [self._unpack([self.names[id(x)] for x in self.externals], "inputs").rstrip("\n")]
        inlined = self.inlined(0, len(self.live), {id(node) for node in self.kept})
        body += self.writer.forward_lines(self.live, inlined, "    ")
        values = ", ".join(self.names[id(node)] for node in self.kept)
        result = f"({values}{',' if len(self.kept) == 1 else ''})"
        return "\n".join(kept_frame("forward", "inputs,", body, result)) + "\n"

    def inlined(self, first: int, end: int, named: Container[int]) -> set[int]:
        """The operations of ``live[first:end]`` that the forward pass may write into the
        expression of the one operation that reads them (``Writer.forward_lines``): read exactly
        once, by an operation of the same stretch, and not ``named`` (what the reverse pass reads,
        what the forward returns or hands a block)."""
        once, ids = self.readers.once, self.ids
        out = set()
        for q in range(first, end):
            if first <= once[q] < end and ids[q] not in named:
                out.add(ids[q])
        return out

    def reach_of(self, seeded: frozenset[int]) -> set[int]:
        """What a pass from the outputs ``seeded`` reaches (``reach``, kept per set of outputs)."""
        known = self._reach_of.get(seeded)
        if known is None:
            known = self._reach_of[seeded] = self.reach([self.live[self.internal_outputs[i]] for i in sorted(seeded)])
        return known

    def reached_externals(self, seeded: frozenset[int]) -> frozenset[int]:
        """The positions in ``externals`` that a pass from the outputs ``seeded`` reaches."""
        known = self._reached.get(seeded)
        if known is None:
            reach = self.reach_of(seeded)
            known = self._reached[seeded] = frozenset(k for k, x in enumerate(self.externals) if id(x) in reach)
        return known

    def reach(self, roots: Sequence[graph.Node]) -> set[int]:
        """The ids of what an eager pass from ``roots`` reaches: the recorded nodes through the
        edges the recording made, and the arguments and parameters at their ends.

        Most often it reaches every operation that takes gradient: when each of them is a root
        or an edge's end, a pass reaches them all (an edge goes from a node that takes gradient
        to an earlier one, so, from the last node back, each one's user is reached before it).
        That is checked with sets of positions built in C (``_edge_ends``); else one sweep in
        decreasing creation order follows the edges from the reached nodes (``_swept``)."""
        place, takes_grad = self.place, self.takes_grad
        rooted = {place[id(n)] for n in roots if takes_grad[id(n)]}
        inside, outside, taking = self._edge_ends
        if inside | rooted == taking:
            return set(itertools.compress(self.ids, self.columns.takes_grad)) | outside
        return self._swept(rooted)

    @functools.cached_property
    def _edge_ends(self) -> tuple[set[int], set[int], set[int]]:
        """Where the recording's edges end: the positions of the operations, and the ids of the
        arguments and parameters; and the positions of the operations that take gradient. An
        operand's place in ``Columns.at`` is the node's position twice plus its slot: the edges
        of slot 0 and of slot 1 pick them, in C. Made once: every reach asks the same."""
        columns, in_order = self.columns, self.edges.in_order
        at, operands = columns.at, columns.operands
        slot = [False] * len(at)  # whether each place of ``at`` has an edge
        slot[0::2] = map(operator.contains, in_order, itertools.repeat(0))
        slot[1::2] = map(operator.contains, in_order, itertools.repeat(1))
        inside: set[int | None] = set(itertools.compress(at, slot))
        outside = {id(operands[j]) for j in columns.elsewhere if slot[j]}
        for i, places in columns.many_at.items():  # an edge of an operation of many is an operand's index
            operands_of = columns.many[i]
            for k in in_order[i]:
                if places[k] == -1:
                    outside.add(id(operands_of[k]))
                else:
                    inside.add(places[k])
        inside.discard(None)
        inside.discard(-1)
        taking = set(itertools.compress(range(len(self.ids)), columns.takes_grad))
        return cast("set[int]", inside), outside, taking

    def _swept(self, rooted: set[int]) -> set[int]:
        """``reach`` by one sweep in decreasing creation order from the positions ``rooted``:
        every edge goes to an earlier node, so a node's users have all been seen when it is."""
        columns, in_order, ids = self.columns, self.edges.in_order, self.ids
        at, operands, many, many_at = columns.at, columns.operands, columns.many, columns.many_at
        reached = bytearray(len(ids))
        for q in rooted:
            reached[q] = 1
        outside: set[int] = set()
        for q in range(len(ids) - 1, -1, -1):
            positions = in_order[q]
            if not positions or not reached[q]:
                continue
            if q in many_at:
                places, xs = many_at[q], many[q]
                found = [(places[k], xs[k]) for k in positions]
            else:  # an edge's position is its slot: 0 the first operand, 1 the second
                found = [(at[2 * q + k], operands[2 * q + k]) for k in positions]
            for j, x in found:
                if j is not None and j >= 0:
                    reached[j] = 1
                else:
                    outside.add(id(x))
        return set(itertools.compress(ids, reached)) | outside

    def reached_inside(self, seeded: frozenset[int]) -> frozenset[int]:
        """The positions in ``live`` of the recorded operations a pass from the outputs ``seeded`` runs."""
        known = self._inside.get(seeded)
        if known is None:
            known = self._inside[seeded] = frozenset(self._inside_in_order(seeded))
        return known

    def _inside_in_order(self, seeded: frozenset[int]) -> list[int]:
        """``reached_inside``, in increasing order, found in C."""
        reach = self.reach_of(seeded)
        operation = map(operator.is_not, self.columns.operations, itertools.repeat(None))
        reached = map(operator.and_, map(reach.__contains__, self.ids), operation)
        return list(itertools.compress(range(len(self.ids)), reached))

    def backward_source(self, seeded: frozenset[int], checked: bool = False) -> str:
        """The reverse pass seeded at the outputs ``seeded`` (positions in internal_outputs).
        ``checked``: anomaly mode's, which tests each contribution for nan before adding it, as
        the eager pass does, and raises naming the operation."""
        if seeded == self._every and not checked:
            return self._every_source  # written with the program: it says which values are kept
        return self._joined(self._backward_lines(seeded, checked)[0])

    def _joined(self, lines: list[str]) -> str:
        """The lines of a reverse pass, the values it reads unpacked where ``VALUES_LINE`` stands."""
        unpack = self._unpack(self._handed_names(), "values").rstrip("\n") or "    pass"
        in_loop = f"    {unpack}"  # the pass's body runs in its frame's loop (``kept_frame``)
        return "\n".join(in_loop if line is VALUES_LINE else line for line in lines if line) + "\n"

    def _handed_names(self) -> list[str]:
        """The names of what the forward pass hands the reverse pass, in order."""
        return [self.names[id(n)] for n in self.kept]

    def _backward_lines(self, seeded: frozenset[int], checked: bool) -> tuple[list[str], set[str]]:
        """The lines of the reverse pass seeded at ``seeded`` (``VALUES_LINE`` where the values it
        reads are unpacked), and the names of the values its statements read."""
        pass_ = _ReversePass(self, seeded, checked)
        body = [self._unpack([self.names[id(x)] for x in self.externals], "inputs").rstrip("\n") or "    pass"]
        body.append(VALUES_LINE)  # the values the lines below read: known once they are written
        body += pass_.starts()
        for node in reversed(self.live):
            body += pass_.lines_of(node)
        waiting, result = pass_.returned()
        return kept_frame("backward", "seeds, values, inputs, start", body + waiting, result), pass_.reads


class _ReversePass:
    """The lines of one reverse pass of a ``Program``, written node by node in decreasing
    creation order (eager's): which gradient variables have started, their sums (``Sums``), and
    which variable holds a node's gradient when its one contribution was its user's gradient."""

    def __init__(self, program: Program, seeded: frozenset[int], checked: bool) -> None:
        self.program, self.seeded, self.checked = program, seeded, checked
        self.live = program.place  # the ids of the operations (their positions, unread here)
        self.reach = program.reach_of(seeded)
        self.returned_ids = {id(program.live[k]) for k in program.internal_outputs}
        self.outputs_seeded = {id(program.live[program.internal_outputs[i]]) for i in seeded}
        self.started: set[int] = set()
        self.named: dict[int, str] = {}  # id(node) -> the variable holding its gradient, if not its own
        # the names of the values the pass's statements read (and those of the contributions it
        # drops, which anomaly mode's pass writes): what the forward pass hands on
        self.reads: set[str] = set()
        self.sums = Sums()

    def variable(self, key: int) -> str:
        return self.named.get(key, f"g_{self.program.names[key]}")

    def starts(self) -> list[str]:
        """An argument's or parameter's gradient goes on from what the pass has handed it so far
        (later operations, or its own seed), then each seeded output's gradient takes its seed."""
        program = self.program
        lines = [started_from(program.externals, program.names, self.reach, self.started)]
        for i in sorted(self.seeded):
            node = program.live[program.internal_outputs[i]]
            if id(node) in self.reach:
                gradient = f"g_{program.names[id(node)]}"
                lines.append(
                    f"    {gradient} = seeds[{i}]" if id(node) not in self.started else f"    {gradient} += seeds[{i}]"
                )
                self.started.add(id(node))
        return lines

    def lines_of(self, node: Any) -> list[str]:
        """The lines of one recorded operation's edges (none for a node the pass does not run)."""
        key = id(node)
        op = graph.op_of(node)
        if key not in self.reach or key not in self.started or op is None:
            return []
        writer, sums = self.program.writer, self.sums
        waiting, gradient = sums.read(self.variable(key), key not in self.outputs_seeded)
        self.named[key] = gradient
        lines = [f"    {line}" for line in waiting]
        lines.append(f"    # {writer.forward_line(node).split('  # ')[0]}")
        for edge in writer.backward_lines(node, gradient, self.checked):
            target, code, position, reads, _, alone = edge
            self.reads.update(reads)
            if target < 0:  # PREPARES or PICKS
                lines += [f"    {line}" for line in statements_apart(edge, self.started, self.variable, sums)]
            elif self.checked:  # anomaly mode: each contribution tested before it is added, as in eager code
                lines.append(f"    _c = {code}")
                lines.append(f"    if _c != _c: _anomaly({writer.anomaly_name(op)!r}, {position})")
                lines += self._add(target, "_c")
            elif self._goes_nowhere(target):
                # a Value made inside and not returned: its gradient goes nowhere, but anomaly
                # mode's pass checks it as eager's does, so the values it reads (in ``reads``
                # above) are handed on
                continue
            else:
                lines += self._add(target, code, alone, code == gradient)
        return lines

    def _goes_nowhere(self, target: int) -> bool:
        if target not in self.live or target in self.returned_ids:
            return False
        return graph.op_of(self.program.live[self.program.place[target]]) is None

    def _add(self, target: int, code: str, alone: bool = False, name: bool = False) -> list[str]:
        added = self.sums.add(self.variable(target), target in self.started, code, alone, name)
        self.started.add(target)
        return [f"    {line}" for line in added]

    def returned(self) -> tuple[list[str], str]:
        """The lines that write what waits to be added, and what the pass returns: each
        argument's and parameter's gradient, then each seeded output's own (its seed and what
        the operations inside handed it); None where the pass gave none."""
        program = self.program

        def gradient_of(node: Any) -> str:
            return f"g_{program.names[id(node)]}" if id(node) in self.started else "None"

        results = [gradient_of(x) for x in program.externals]
        outputs = [gradient_of(program.live[program.internal_outputs[i]]) for i in sorted(self.seeded)]
        waiting = [f"    {line}" for line in self.sums.written()]
        return waiting, (
            f"({', '.join(results)}{',' if len(results) == 1 else ''}), "
            f"({', '.join(outputs)}{',' if len(outputs) == 1 else ''})"
        )
