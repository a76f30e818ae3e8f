"""Writing a recorded graph as array code: a forward pass, and a reverse pass seeded at the
outputs, each one line per operation or edge, as ``vjpgrad.compile`` writes its scalar code
(a repeated block's lines once for all its copies).

The names are made here (``x0`` for the inputs, ``p0`` for the Values the function reads from
outside, ``t1`` for the operations, ``g_t1`` for gradients, ``s0`` for the seeds; for a block run
across its copies (``blocks``), ``i0_1`` for its inputs stacked, ``f0_1`` for its operations,
``gf0_1`` and ``gi0_1`` for their gradients, ``c0_1`` for what it hands the values its copies
share; ``pa0``, ``pb0``, ``pp0`` for a block's products run as one operation, their operands and
results stacked a product per row, ``pg0`` and ``pc0_1`` for their gradients and contributions)
and numbers are written with ``repr``: no user text reaches the code.

A block's copies run as one array with the copies along its first axis (``blocks``); each
element sees its own copy's operations in their order. In the reverse pass, a value every copy
reads gets the copies' contributions added from the last copy to the first, each copy's in
decreasing order of creation, one after the other (``_across``: ``np.add.accumulate``, which
adds in order), as the straight-line pass adds them. The reverse pass takes the nodes in
decreasing order of creation and adds the contributions in that order, each node's first one
assigned (eager code adds it to -0.0, which leaves every number as it is), exactly as
``graph.propagate`` runs them; so each element of the arrays is the number eager code gives.

Each statement is kept as data (``statements.Statement``: its code, the names it writes and
reads, and the form the rewrites look for) until both passes are made; ``source`` then has the
three rewrites of ``statements`` keep the products run as one from making arrays of all of them
(a layer of 16 neurons: 16 copies x 16 products x the batch, megabytes at a thousand samples)
where nothing reads them whole, deciding from the statements' reads and writes, and writes the
code out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vjpgrad.batched import statements
from vjpgrad.batched.blocks import ArrayBlock, find, reached
from vjpgrad.batched.statements import Added, Product, Statement
from vjpgrad.batched.templates import FORWARD, forward_key, max_backward, take_backward
from vjpgrad.codegen.symbols import ARRAY, Code, call, contribution, literal, operand
from vjpgrad.core import graph, ops
from vjpgrad.core.ops import Op


def _spaced(rows: list[int]) -> range | None:
    """The rows of a result as a range when they are evenly spaced upwards, else None."""
    step = rows[1] - rows[0] if len(rows) > 1 else 1
    if step > 0 and rows == list(range(rows[0], rows[-1] + 1, step)):
        return range(rows[0], rows[-1] + 1, step)
    return None


def _places(rows: list[int]) -> str:
    """The rows of a result as an index: a slice when they are evenly spaced (NumPy writes
    through a slice about 3x faster than through a tuple of rows, which it gathers)."""
    spaced = _spaced(rows)
    if spaced is not None:
        return f"slice({spaced.start}, {spaced.stop}, {spaced.step})"
    return _tuple(str(k) for k in rows)


def _rows_of(places: list[tuple[str, int] | None]) -> tuple[str, str] | None:
    """The rows ``places`` of one array, one after the other (up or down), as that array and a
    slice of it (``first:stop:step``, a view, no copy); None when they are not."""
    if len(places) < 2 or any(p is None for p in places):
        return None
    found = [p for p in places if p is not None]
    name, first = found[0]
    step = found[1][1] - first
    if step not in (1, -1) or any(p != (name, first + k * step) for k, p in enumerate(found)):
        return None
    last = first + (len(found) - 1) * step
    stop = last + step
    return name, f"{first}:{'' if stop < 0 else stop}:{step}"


FUSED = 3
"""The fewest products of a block run as one array operation (their operands are stacked first)."""


def _varies(live: Sequence[graph.Node], block: ArrayBlock) -> list[bool]:
    """Per operation of the block: whether it reads, itself or through the block's earlier
    operations, an input that differs between copies. Only those have the copies axis; the others
    (all of a block whose copies read the same values) compute one array every copy shares."""
    varying = {id(column[0]) for column in block.varying}
    found = []
    for node in live[block.start : block.start + block.length]:
        varies = any(id(x) in varying for x in graph.operands(node))
        if varies:
            varying.add(id(node))
        found.append(varies)
    return found


def _tuple(items: Any) -> str:
    """Python's text of a tuple of the texts ``items``."""
    listed = list(items)
    return f"({', '.join(listed)}{',' if len(listed) == 1 else ''})"


@dataclass
class Graph:
    """What the writer reads of a recording: ``live`` the operations and Values made inside, in
    creation order, with ``positions`` (the operands each hands gradient to); ``inputs`` the
    Values the code takes, in order (the arguments' leaves, then the Values read from outside);
    ``outputs`` the Values whose numbers are returned; ``wrt`` the inputs whose gradients the
    reverse pass returns (none: no reverse pass)."""

    live: Sequence[graph.Node]
    positions: Sequence[tuple[int, ...]]
    inputs: Sequence[graph.Node]
    outputs: Sequence[graph.Node]
    wrt: Sequence[graph.Node]


class ArrayWriter:
    """Writes ``forward(x0, ..., p0, ...)`` and ``backward(inputs, values, s0, ...)`` for one graph.

    ``forward`` returns ``values``, the arrays named in ``value_names`` (``value_index`` gives
    the place of each operation's among them), which ``backward`` reads; ``backward`` returns
    the gradients of ``wrt`` as the rows of one array (``_rows``)."""

    def __init__(self, recorded: Graph, arguments: int, fold: bool = True) -> None:
        self.graph = recorded
        self.names: dict[int, str] = {}
        for k, x in enumerate(recorded.inputs):
            self.names[id(x)] = f"x{k}" if k < arguments else f"p{k - arguments}"
        for k, node in enumerate(recorded.live, start=1):
            self.names[id(node)] = f"t{k}"
        self.input_names = [self.names[id(x)] for x in recorded.inputs]
        self.reach = reached(recorded.live, recorded.positions, recorded.outputs if recorded.wrt else [])
        found = find(recorded.live, recorded.positions, recorded.inputs, recorded.outputs, self.reach) if fold else []
        self.blocks: list[ArrayBlock] = found
        self.pending: dict[int, tuple[str, int]] = {}  # an input's gradient left in a block's array: its row
        self.copies: dict[str, int] = {}  # such an array: its rows (the block's copies)
        self.fused: dict[int, list[int]] = {}  # per block: the offsets of its products run as one
        self.parts: dict[str, tuple[str, int]] = {}  # a shared value's share from products run as one: array, row
        self.product_parts: dict[str, tuple[str, str]] = {}  # products' gradients (pc...): the factors, as text
        self.sliced: set[str] = set()  # the arrays _rows places in the result through a slice of its rows
        self.value_names: list[str] = []
        self.value_index: dict[int, int] = {}
        self.custom: dict[str, Op] = {}  # the custom operations the code calls, by the name it calls them
        self._custom_names: dict[int, str] = {}
        inside: set[int] = set()
        for j, block in enumerate(found):
            firsts = recorded.live[block.start : block.start + block.length]
            inside.update(id(node) for node in recorded.live[block.start : block.end])
            for o in block.outputs:
                for m in range(block.copies):
                    inside.discard(id(recorded.live[block.start + m * block.length + o]))
            self.value_names += [f"i{j}_{s}" for s in range(len(block.varying))]
            group = self._products(block)
            if group:
                self.fused[j] = group
                self.value_names += [f"pa{j}", f"pb{j}", f"pp{j}"]
            self.value_names += [f"f{j}_{o}" for o in range(len(firsts))]
        for node in recorded.live:
            if id(node) not in inside:
                self.value_index[id(node)] = len(self.value_names)
                self.value_names.append(self.names[id(node)])
        self.products: dict[int, list[int]] = {}  # outside the blocks: the first's index -> products run as one
        bounds = [0, *(k for block in found for k in (block.start, block.end)), len(recorded.live)]
        for first, last in zip(bounds[::2], bounds[1::2], strict=True):  # the stretches between blocks
            group = self._fusable(range(first, last))
            if group:
                self.products[group[0]] = group
                self.value_names += [f"pa_{group[0]}", f"pb_{group[0]}", f"pp_{group[0]}"]

    def _local(self, j: int, block: ArrayBlock) -> dict[int, str]:
        """The names a block's code uses for its first copy's operations and inputs."""
        live = self.graph.live
        local = {id(live[block.start + o]): f"f{j}_{o}" for o in range(block.length)}
        local.update((id(column[0]), f"i{j}_{s}") for s, column in enumerate(block.varying))
        return local

    def _named(self, local: dict[int, str]) -> dict[int, str]:
        """Puts ``local`` into ``names``; returns the names it replaced, to put back."""
        replaced = {key: self.names[key] for key in local if key in self.names}
        self.names.update(local)
        return replaced

    def _custom(self, op: Op) -> str:
        """The name the code calls a custom operation by (``_custom0``; ``_custom0_d0`` its rule for
        edge 0): a number of the writer's, never the operation's own name, which is the user's text."""
        name = self._custom_names.get(id(op))
        if name is None:
            name = self._custom_names[id(op)] = f"_custom{len(self._custom_names)}"
            self.custom[name] = op
        return name

    def term(self, x: Any) -> str:
        return self.names[id(x)] if isinstance(x, graph.Node) else literal(x)

    def symbol(self, x: Any) -> Any:
        """``x`` as a rule takes it: a Node as the ``Code`` of its name (which reads that name), a number as it is."""
        if isinstance(x, graph.Node):
            return _named_code(self.names[id(x)])
        return x

    def _read(self, nodes: Any) -> frozenset[str]:
        """The names of those of ``nodes`` that are Nodes (the others are written as numbers)."""
        return frozenset(self.names[id(x)] for x in nodes if isinstance(x, graph.Node))

    def forward_statement(self, node: graph.Node) -> Statement:
        """``node``'s statement of the forward pass (``t3 = _exp(t2)``) with what it is as a
        comment; the reverse pass also shows its code as a comment above the node's edges. Each
        template writes every operand it is given, so the statement reads the names of the
        operands that are Nodes."""
        op = graph.op_of(node)
        name = self.names[id(node)]
        if op is None:
            return statements.assign(name, literal(graph.number(node)), comment="a Value made inside")
        if op not in ops.BUILTIN:  # its function called on each sample's numbers (``arrays.custom_helpers``)
            operands = graph.operands(node)
            text = f"{self._custom(op)}({', '.join(self.term(x) for x in operands)})"
            return statements.assign(name, text, self._read(operands), "a custom operation")
        operands = graph.operands(node)
        terms = [self.term(x) for x in operands]
        form = Added(terms[0], terms[1]) if op is ops.ADD else None  # what sums_of_products looks for
        return statements.assign(name, FORWARD[forward_key(op)](terms), self._read(operands), op.shown, form)

    def forward_statements(self) -> list[Statement]:
        """The forward pass's statements, its ``return`` of ``values`` last."""
        live = self.graph.live
        body: list[Statement] = []
        starts = {block.start: (j, block) for j, block in enumerate(self.blocks)}
        fused = {k for group in self.products.values() for k in group}
        k = 0
        while k < len(live):
            if k in starts:
                j, block = starts[k]
                body += self._block_forward(j, block)
                k = block.end
                continue
            if k in self.products:
                nodes = [live[p] for p in self.products[k]]
                body += self._fused_forward(f"_{k}", nodes, [self.names[id(node)] for node in nodes])
            if k not in fused:
                body.append(self.forward_statement(live[k]))
            k += 1
        values = ", ".join(self.value_names)
        returned = f"return ({values}{',' if len(self.value_names) == 1 else ''})"
        body.append(statements.handover(returned, reads=self.value_names))
        return body

    def source(self, reverse: bool) -> str:
        """The code: ``forward``, and for ``reverse`` ``backward``, with the rewrites of
        ``statements`` made (the reverse pass's, then the sums of products, whose uses are counted
        over both passes; the function's outputs kept)."""
        forward = self.forward_statements()
        backward = self.backward_statements() if reverse else []
        if backward:
            backward = statements.products_into_rows(backward, self.product_parts, self.sliced)
            backward = statements.products_across(backward, self.product_parts)
        kept = {self.names[id(y)] for y in self.graph.outputs if id(y) in self.value_index}
        forward = statements.sums_of_products(forward, backward, kept)
        text = statements.render(f"def forward({', '.join(self.input_names)}):", forward)
        if reverse:
            seeds = "".join(f", s{k}" for k in range(len(self.graph.outputs)))
            text += "\n\n" + statements.render(f"def backward(inputs, values{seeds}):", backward)
        return text

    def _products(self, block: ArrayBlock) -> list[int]:
        """The offsets of the block's products (``a * b``) that run as one array operation: those
        whose operands are made before the block (its inputs, values every copy reads, numbers),
        when ``_fusable`` (a neuron's ``w_i * x_i``), and when each reads an input that differs
        between copies: a product every copy shares has no copies axis, where the reverse pass
        stacks the copies' gradients of the products as one array."""
        found = [k - block.start for k in self._fusable(range(block.start, block.start + block.length))]
        varies = _varies(self.graph.live, block)
        return found if all(varies[o] for o in found) else []

    def _fusable(self, span: range) -> list[int]:
        """The products of ``span`` (indices into ``live``) whose operands are made before it, to
        run as one array operation: at least ``FUSED`` of them. Each product's number is the same
        computed earlier, so the forward is free to; for the reverse pass every one is reached,
        hands gradient along the same edges, and no other operation of the span hands gradient
        to their operands, so that taking all their contributions at once, when the pass reaches
        the first of them, adds nothing in another order."""
        live, positions = self.graph.live, self.graph.positions
        inside = {id(live[k]) for k in span}
        group = [
            k
            for k in span
            if graph.op_of(live[k]) is ops.MUL
            and not any(isinstance(x, graph.Node) and id(x) in inside for x in graph.operands(live[k]))
        ]
        if len(group) < FUSED:
            return []
        if not self.graph.wrt:
            return group
        edges = {positions[k] for k in group}
        if len(edges) != 1 or not next(iter(edges)) or any(id(live[k]) not in self.reach for k in group):
            return []
        return [] if self._others_hand_to(span, group, next(iter(edges))) else group

    def _others_hand_to(self, span: range, group: list[int], taking: tuple[int, ...]) -> bool:
        """Whether an operation of ``span`` outside ``group`` (the products) hands gradient to an
        operand the products hand gradient to (through their edges ``taking``): then taking the
        products' contributions all at once would add in another order than eager's."""
        live, positions = self.graph.live, self.graph.positions
        targets = {id(graph.operands(live[k])[e]) for k in group for e in taking}
        members = set(group)
        for k in span:
            if k not in members and id(live[k]) in self.reach and graph.op_of(live[k]) is not None:
                operands = graph.operands(live[k])
                if any(id(operands[e]) in targets for e in positions[k]):
                    return True
        return False

    def _block_forward(self, j: int, block: ArrayBlock) -> list[Statement]:
        """A block's copies as one array each operation (copies along the first axis), then each
        copy's outputs taken out under their own names; the block's products (``fused``) as one
        operation, their operands stacked (``pa``, ``pb``: a product per row)."""
        live = self.graph.live
        body = [statements.note(f"{block.copies} copies of a block of {block.length} operations, run as one")]
        for s, column in enumerate(block.varying):
            stacked = f"_stack(({', '.join(self.term(x) for x in column)},))"
            body.append(statements.assign(f"i{j}_{s}", stacked, self._read(column)))
        group = self.fused.get(j, [])
        replaced = self._named(self._local(j, block))
        try:
            if group:
                firsts = [live[block.start + o] for o in group]
                body += self._fused_forward(str(j), firsts, [f"f{j}_{o}" for o in group])
            body += [
                self.forward_statement(node)
                for o, node in enumerate(live[block.start : block.start + block.length])
                if o not in group
            ]
        finally:
            self.names.update(replaced)
        varies = _varies(live, block)
        for o in block.outputs:
            for m in range(block.copies):
                name = self.names[id(live[block.start + m * block.length + o])]
                if varies[o]:
                    body.append(statements.taken(name, f"f{j}_{o}", m))
                else:  # the same in every copy: one array
                    body.append(statements.assign(name, f"f{j}_{o}", (f"f{j}_{o}",)))
        return body

    def backward_lines(
        self, node: graph.Node, gradient: str, edges: tuple[int, ...]
    ) -> tuple[list[Statement], list[tuple[int, str, frozenset[str]]]]:
        """The statements that prepare ``node``'s contributions (``max`` and ``take``'s), and per
        edge ``(operand position, code of its contribution, the names the code reads)``."""
        op = graph.op_of(node)
        assert op is not None  # the reverse pass visits operations only
        operands = graph.operands(node)
        g = _named_code(gradient)
        out = _named_code(self.names[id(node)])
        arguments = [self.symbol(x) for x in operands]
        prepared: list[Statement] = []
        parts: list[tuple[int, Any]]
        if op is ops.TAKE or op.nary:
            first, parts = (
                take_backward(arguments, g, edges) if op is ops.TAKE else max_backward(arguments, out, g, edges)
            )
            prepared.append(Statement(f"{', '.join(first.names)} = {first.value.text}", first.names, first.value.reads))
        elif op not in ops.BUILTIN:  # its rule called on each sample's numbers, as eager code calls it
            base = self._custom(op)
            parts = [
                (k, contribution(op.gradients[k], g, call(f"{base}_d{k}", *arguments, out, dialect=ARRAY)))
                for k in edges
            ]
        else:
            parts = [(k, contribution(op.gradients[k], g, op.saved[k](*arguments, out))) for k in edges]
        found = [(k, operand(part) if isinstance(part, Code) else literal(part), _reads(part)) for k, part in parts]
        return prepared, found

    def backward_statements(self) -> list[Statement]:
        """The reverse pass: seeded with ``s0``... at the outputs, it returns the gradient of each
        of ``wrt`` as one array, a row each (0.0 for one the outputs do not reach, as ``grad``
        gives; a row of one number when it is the same for every sample)."""
        recorded = self.graph
        body: list[Statement] = []
        if self.input_names:
            names = self.input_names
            unpacked = f"({', '.join(names)}{',' if len(names) == 1 else ''}) = inputs"
            body.append(Statement(unpacked, tuple(names), frozenset({"inputs"})))
        if self.value_names:
            names = self.value_names
            unpacked = f"({', '.join(names)}{',' if len(names) == 1 else ''}) = values"
            body.append(statements.handover(unpacked, writes=names, reads=("values",)))
        started: set[int] = set()
        self.pending = {}
        self.sliced = set()

        def add(target: graph.Node, code: str, reads: frozenset[str], place: tuple[str, int] | None = None) -> None:
            name = f"g_{self.names[id(target)]}"
            body.extend(self._taken([target]))
            body.append(self._contribution(name, code, reads, place, id(target) in started))
            started.add(id(target))

        for k, output in enumerate(recorded.outputs):
            if output.requires_grad:
                add(output, f"s{k}", frozenset({f"s{k}"}))
        ends = {block.end - 1: (j, block) for j, block in enumerate(self.blocks)}
        later = {k for group in self.products.values() for k in group[1:]}
        k = len(recorded.live) - 1
        while k >= 0:
            if k in ends:
                j, block = ends[k]
                body += self._block_backward(j, block, started)
                k = block.start - 1
                continue
            node, edges = recorded.live[k], recorded.positions[k]
            if id(node) in started and graph.op_of(node) is not None and edges and k not in later:
                self._node_backward(k, edges, body, add)
            k -= 1
        returned, reads = self._rows(started)
        body.append(Statement(f"return {returned}", reads=reads))
        return body

    @staticmethod
    def _contribution(
        gradient: str, code: str, reads: frozenset[str], place: tuple[str, int] | None, started: bool
    ) -> Statement:
        """``gradient = code``, or ``gradient = gradient + code`` once ``started``; ``place``: the
        array and row ``code`` takes, when it is one row of an array (``pc[3]``)."""
        if started:
            return statements.accumulate(gradient, code, reads)
        if place is not None:
            return statements.taken(gradient, *place)
        return statements.assign(gradient, code, reads)

    def _node_backward(
        self,
        k: int,
        edges: tuple[int, ...],
        body: list[Statement],
        add: Callable[[graph.Node, str, frozenset[str], tuple[str, int] | None], None],
    ) -> None:
        """The reverse pass's statements for ``live[k]``, reached with a gradient, appended to
        ``body`` (its contributions through ``add``, which appends too, in the order they are
        made): the products run as one, when it is the first of them, all taken here."""
        recorded = self.graph
        node = recorded.live[k]
        if k in self.products:
            nodes = [recorded.live[p] for p in self.products[k]]
            gradients = [f"g_{self.names[id(x)]}" for x in nodes]
            found, contributions = self._fused_backward(f"_{k}", nodes, gradients, edges)
            body += found
            for x, array, row in contributions:
                add(x, f"{array}[{row}]", frozenset({array}), (array, row))
            return
        body.append(statements.note(self.forward_statement(node).code))
        operands = graph.operands(node)
        prepared, found_edges = self.backward_lines(node, f"g_{self.names[id(node)]}", edges)
        body += prepared
        for position, code, reads in found_edges:
            add(operands[position], code, reads, None)

    def _taken(self, nodes: Sequence[graph.Node]) -> list[Statement]:
        """The statements that take the gradients of ``nodes`` out of a block's stacked array, for
        those whose taking was left until their gradient is read (``pending``)."""
        body = []
        for x in nodes:
            found = self.pending.pop(id(x), None)
            if found is not None:
                body.append(statements.assign(f"g_{self.names[id(x)]}", f"_row({found[0]}, {found[1]})", (found[0],)))
        return body

    def _rows(self, started: set[int]) -> tuple[str, frozenset[str]]:
        """The call that returns the gradients of ``wrt`` as one array, a row each, and the names
        it reads: the rows of a block's stacked gradient placed in one operation, each other
        gradient alone (0.0 where the outputs do not reach)."""
        groups: dict[str, list[tuple[int, int]]] = {}
        singles = []
        for k, x in enumerate(self.graph.wrt):
            found = self.pending.get(id(x))
            if found is not None:
                groups.setdefault(found[0], []).append((k, found[1]))
            elif id(x) in started:
                singles.append((k, f"g_{self.names[id(x)]}"))
            else:
                singles.append((k, "0.0"))
        placed = []
        for name, rows in groups.items():  # all of an array's rows in order (None), or those picked
            every = [m for _, m in rows] == list(range(self.copies[name]))
            picked = "None" if every else _tuple(str(m) for _, m in rows)
            placed.append(f"({name}, {_places([k for k, _ in rows])}, {picked})")
            if _spaced([k for k, _ in rows]) is not None:
                self.sliced.add(name)
        alone = _tuple(f"({k}, {code})" for k, code in singles)
        reads = frozenset([*groups, *(code for _, code in singles if code != "0.0")])
        return f"_rows({len(self.graph.wrt)}, {_tuple(placed)}, {alone})", reads

    def _block_backward(self, j: int, block: ArrayBlock, started: set[int]) -> list[Statement]:
        """A block's reverse pass across its copies: the gradients its outputs and inputs have so
        far stacked (-0.0 where a copy's has none yet: -0.0 + c is c to the bit), each operation's
        edges in decreasing order as one array, each input's gradient taken back out per copy,
        and each shared value's contributions added copy by copy, the last copy first."""
        live = self.graph.live
        body: list[Statement] = []
        local_started: set[str] = set()
        for o in block.outputs:
            copies = [live[block.start + m * block.length + o] for m in range(block.copies)]
            body += self._stacked(copies, f"gf{j}_{o}", started, local_started)
        for s, column in enumerate(block.varying):
            body += self._stacked(column, f"gi{j}_{s}", started, local_started)
        local = self._local(j, block)
        shared: dict[int, tuple[graph.Node, list[str]]] = {}
        replaced = self._named(local)
        try:
            body += self._block_edges(j, block, local, local_started, shared)
        finally:
            self.names.update(replaced)
        body += self._across_lines(shared, started, block.copies)
        inputs = {id(x) for x in self.graph.inputs}
        for s, column in enumerate(block.varying):
            if f"gi{j}_{s}" in local_started:
                for m, x in enumerate(column):
                    if id(x) in inputs:  # taken out when read, or placed in the result by _rows
                        self.pending[id(x)] = (f"gi{j}_{s}", m)
                        self.copies[f"gi{j}_{s}"] = len(column)
                    else:
                        body.append(
                            statements.assign(f"g_{self.names[id(x)]}", f"_row(gi{j}_{s}, {m})", (f"gi{j}_{s}",))
                        )
                    started.add(id(x))
        return body

    def _stacked(
        self, nodes: list[graph.Node], name: str, started: set[int], local_started: set[str]
    ) -> list[Statement]:
        """The gradients ``nodes`` (one per copy) have so far, as one array named ``name``."""
        if not any(id(x) in started for x in nodes):
            return []
        local_started.add(name)
        terms = [f"g_{self.names[id(x)]}" if id(x) in started else "-0.0" for x in nodes]
        reads = [term for term in terms if term != "-0.0"]
        return [*self._taken(nodes), statements.assign(name, f"_stack(({', '.join(terms)},))", reads)]

    def _block_edges(
        self,
        j: int,
        block: ArrayBlock,
        local: dict[int, str],
        local_started: set[str],
        shared: dict[int, tuple[graph.Node, list[str]]],
    ) -> list[Statement]:
        """The edges of the first copy's operations, in decreasing order, written for every copy
        at once; what they hand a value every copy reads is kept in ``shared``, in order."""
        live, positions = self.graph.live, self.graph.positions
        body: list[Statement] = []
        group = self.fused.get(j, [])
        for o in range(block.length - 1, -1, -1):
            node, edges = live[block.start + o], positions[block.start + o]
            if id(node) not in self.reach or not edges or (o in group and o != group[0]):
                continue
            # (operand, code, the names it reads, the products' array and row it is)
            contributions: list[tuple[Any, str, frozenset[str], tuple[str, int] | None]]
            if o in group:  # the last of the products the pass reaches: all of them at once
                firsts = [live[block.start + p] for p in group]
                found, fused = self._fused_backward(str(j), firsts, [f"gf{j}_{p}" for p in group], edges)
                body += found
                contributions = [(x, f"{a}[{row}]", frozenset({a}), (a, row)) for x, a, row in fused]
            else:
                body.append(statements.note(self.forward_statement(node).code))
                operands = graph.operands(node)
                prepared, found_edges = self.backward_lines(node, f"gf{j}_{o}", edges)
                body += prepared
                contributions = [(operands[k], code, reads, None) for k, code, reads in found_edges]
            for x, code, reads, place in contributions:
                body.append(self._block_contribution(j, x, code, reads, place, local, local_started, shared))
        return body

    def _block_contribution(
        self,
        j: int,
        x: Any,
        code: str,
        reads: frozenset[str],
        place: tuple[str, int] | None,
        local: dict[int, str],
        local_started: set[str],
        shared: dict[int, tuple[graph.Node, list[str]]],
    ) -> Statement:
        """What an edge of a block hands ``x``: added to its gradient when ``x`` is the block's
        (``local``), else, for a value every copy reads, kept under a name of its own in
        ``shared``, to be added across the copies later."""
        target = local.get(id(x))
        if target is None:
            name = f"c{j}_{sum(len(parts) for _, parts in shared.values())}"
            if place is not None:
                self.parts[name] = place
            shared.setdefault(id(x), (x, []))[1].append(name)
            return self._contribution(name, code, reads, place, False)
        gradient = f"g{target}"
        statement = self._contribution(gradient, code, reads, place, gradient in local_started)
        local_started.add(gradient)
        return statement

    def _fused_backward(
        self, tag: str, nodes: list[graph.Node], gradients: list[str], edges: tuple[int, ...]
    ) -> tuple[list[Statement], list[tuple[Any, str, int]]]:
        """The reverse pass of products run as one (``nodes``, named ``pa``/``pb``/``pp`` + ``tag``
        in the forward) at once: their gradients stacked (``pg``), the table's rule of each edge
        applied to the stacked operands (``pc``), and each product's share, in decreasing order,
        each product's edges in order, as the pass takes them one product at a time (no other
        operation between them hands gradient to their operands, so when the shares are added
        changes no bit): the operand, and the array and row of ``pc`` that is its share. An edge
        whose rule is ``times`` of an array (``pg * pb``) is noted in ``product_parts`` with its
        factors, for the rewrites that multiply its rows where they are read."""
        body = [
            statements.note(f"{len(nodes)} products at once"),
            statements.assign(f"pg{tag}", f"_stack_as({_tuple(gradients)}, pa{tag})", [*gradients, f"pa{tag}"]),
        ]
        symbols = [_named_code(f"pa{tag}"), _named_code(f"pb{tag}")]
        gradient = _named_code(f"pg{tag}")
        contributions: list[tuple[Any, str, int]] = []
        for k in edges:
            saved = ops.MUL.saved[k](*symbols, _named_code(f"pp{tag}"))
            part = contribution(ops.MUL.gradients[k], gradient, saved)
            text = operand(part) if isinstance(part, Code) else literal(part)
            body.append(statements.assign(f"pc{tag}_{k}", text, _reads(part)))
            if ops.MUL.gradients[k] is ops.times and isinstance(saved, Code):  # pg * pb: g times an array
                self.product_parts[f"pc{tag}_{k}"] = (f"pg{tag}", saved.text)
        for row in range(len(nodes) - 1, -1, -1):
            operands = graph.operands(nodes[row])
            contributions += [(operands[k], f"pc{tag}_{k}", row) for k in edges]
        return body, contributions

    def _fused_forward(self, tag: str, nodes: list[graph.Node], names: list[str]) -> list[Statement]:
        """Products run as one: their operands stacked a product per row, one multiplication,
        each product's row under its own name."""
        operands = [[graph.operands(node)[k] for node in nodes] for k in (0, 1)]
        sides = [_tuple(self.term(x) for x in side) for side in operands]
        stacked = f"_sides({sides[0]}, {sides[1]})"
        return [
            Statement(
                f"pa{tag}, pb{tag} = {stacked}", (f"pa{tag}", f"pb{tag}"), self._read([*operands[0], *operands[1]])
            ),
            statements.assign(
                f"pp{tag}",
                FORWARD["mul"]([f"pa{tag}", f"pb{tag}"]),
                (f"pa{tag}", f"pb{tag}"),
                f"{len(nodes)} products at once",
                Product(f"pa{tag}", f"pb{tag}"),
            ),
            statements.rows(names, f"pp{tag}"),
        ]

    def _across_lines(
        self, shared: dict[int, tuple[graph.Node, list[str]]], started: set[int], copies: int
    ) -> list[Statement]:
        """Each shared value's gradient: the copies' contributions added the last copy first,
        the values that each copy reads as often added together."""
        groups: dict[int, list[tuple[graph.Node, list[str]]]] = {}
        for x, parts in shared.values():
            groups.setdefault(len(parts), []).append((x, parts))
        body = []
        for reads, members in groups.items():
            body += self._taken([x for x, _ in members])
            names = [f"g_{self.names[id(x)]}" for x, _ in members]
            starts = [name if id(x) in started else "-0.0" for name, (x, _) in zip(names, members, strict=True)]
            given = [start for start in starts if start != "-0.0"]
            parts = [part for _, found in members for part in found]
            arguments = f"({', '.join(starts)},), {reads}"
            rows = _rows_of([self.parts.get(part) for part in parts])
            if rows is not None:  # the parts are the rows of one array in order: read where they are
                body.append(statements.across_stacked(names, arguments, rows[0], rows[1], given))
            else:
                code = f"{', '.join(names)}, = _across({arguments}, {copies}, {', '.join(parts)})"
                body.append(Statement(code, tuple(names), frozenset([*given, *parts])))
            started.update(id(x) for x, _ in members)
        return body


def _named_code(name: str) -> Code:
    """The symbol of the array named ``name``, which reads it."""
    return Code(name, atomic=True, dialect=ARRAY, reads=frozenset({name}))


def _reads(part: Any) -> frozenset[str]:
    """The names a contribution (a ``Code`` or a number) reads."""
    return part.reads if isinstance(part, Code) else frozenset()
