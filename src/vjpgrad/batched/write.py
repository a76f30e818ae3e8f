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

Three rewrites then keep the products run as one from making arrays of all of them (a layer of
16 neurons: 16 copies x 16 products x the batch, megabytes at a thousand samples) where nothing
reads them whole, each the same multiplications and additions in the same order, so the same
bits: a neuron's chain of additions ``b + p0 + p1 + ...`` becomes one ``_sum_products`` call
that multiplies each product just before adding it (``sums_of_products``); a block's shares of
the values its copies read are multiplied copy by copy as ``_across_products`` adds them
(``_products_across``); and the weights' gradients are multiplied straight into the rows of the
result (``_product``, which ``_rows`` fills: ``_products_into_rows``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vjpgrad.batched.blocks import ArrayBlock, find, reached
from vjpgrad.batched.templates import FORWARD, forward_key, max_backward, take_backward
from vjpgrad.codegen.symbols import ARRAY, Code, contribution, literal, operand
from vjpgrad.core import graph, ops


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


def _rows_of(places: list[tuple[str, int] | None]) -> str | None:
    """The rows ``places`` of one array, one after the other (up or down), as a slice of it
    (a view, no copy); None when they are not."""
    if len(places) < 2 or any(p is None for p in places):
        return None
    found = [p for p in places if p is not None]
    name, first = found[0]
    step = found[1][1] - first
    if step not in (1, -1) or any(p != (name, first + k * step) for k, p in enumerate(found)):
        return None
    last = first + (len(found) - 1) * step
    stop = last + step
    return f"{name}[{first}:{'' if stop < 0 else stop}:{step}]"


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


class UnsupportedError(TypeError):
    """The recorded graph holds something array code cannot compute (an operation outside the table)."""


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

    def term(self, x: Any) -> str:
        return self.names[id(x)] if isinstance(x, graph.Node) else literal(x)

    def symbol(self, x: Any) -> Any:
        return Code(self.names[id(x)], atomic=True, dialect=ARRAY) if isinstance(x, graph.Node) else x

    def forward_line(self, node: graph.Node) -> str:
        """``node``'s line of the forward pass: its statement, and what it is as a comment."""
        op = graph.op_of(node)
        return f"{self.forward_statement(node)}  # {'a Value made inside' if op is None else op.shown}"

    def forward_statement(self, node: graph.Node) -> str:
        """``node``'s statement of the forward pass (``t3 = _exp(t2)``), which the reverse pass
        also shows as a comment above the node's edges."""
        op = graph.op_of(node)
        name = self.names[id(node)]
        if op is None:
            return f"{name} = {literal(graph.number(node))}"
        if op not in ops.BUILTIN:
            raise UnsupportedError(
                "vmap writes array code for the operations of vjpgrad's table; a custom operation has none"
            )
        template = FORWARD[forward_key(op)]
        terms = [self.term(x) for x in graph.operands(node)]
        return f"{name} = {template(terms)}"

    def forward_source(self) -> str:
        live = self.graph.live
        lines = [f"def forward({', '.join(self.input_names)}):"]
        starts = {block.start: (j, block) for j, block in enumerate(self.blocks)}
        fused = {k for group in self.products.values() for k in group}
        k = 0
        while k < len(live):
            if k in starts:
                j, block = starts[k]
                lines += [f"    {line}" for line in self._block_forward(j, block)]
                k = block.end
                continue
            if k in self.products:
                nodes = [live[p] for p in self.products[k]]
                names = [self.names[id(node)] for node in nodes]
                lines += [f"    {line}" for line in self._fused_forward(f"_{k}", nodes, names)]
            if k not in fused:
                lines.append(f"    {self.forward_line(live[k])}")
            k += 1
        values = ", ".join(self.value_names)
        lines.append(f"    return ({values}{',' if len(self.value_names) == 1 else ''})")
        return "\n".join(lines) + "\n"

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

    def _block_forward(self, j: int, block: ArrayBlock) -> list[str]:
        """A block's copies as one array each operation (copies along the first axis), then each
        copy's outputs taken out under their own names; the block's products (``fused``) as one
        operation, their operands stacked (``pa``, ``pb``: a product per row)."""
        live = self.graph.live
        lines = [f"# {block.copies} copies of a block of {block.length} operations, run as one"]
        for s, column in enumerate(block.varying):
            lines.append(f"i{j}_{s} = _stack(({', '.join(self.term(x) for x in column)},))")
        group = self.fused.get(j, [])
        replaced = self._named(self._local(j, block))
        try:
            if group:
                firsts = [live[block.start + o] for o in group]
                lines += self._fused_forward(str(j), firsts, [f"f{j}_{o}" for o in group])
            lines += [
                self.forward_line(node)
                for o, node in enumerate(live[block.start : block.start + block.length])
                if o not in group
            ]
        finally:
            self.names.update(replaced)
        varies = _varies(live, block)
        for o in block.outputs:
            for m in range(block.copies):
                taken = f"f{j}_{o}[{m}]" if varies[o] else f"f{j}_{o}"  # the same in every copy: one array
                lines.append(f"{self.names[id(live[block.start + m * block.length + o])]} = {taken}")
        return lines

    def backward_lines(self, node: graph.Node, gradient: str, edges: tuple[int, ...]) -> list[tuple[int, str]]:
        """``(operand position, code of its contribution)`` per edge; -1 for a line that prepares them."""
        op = graph.op_of(node)
        assert op is not None  # the reverse pass visits operations only
        operands = graph.operands(node)
        out = self.names[id(node)]
        if op is ops.TAKE:
            return take_backward([self.term(x) for x in operands], gradient, edges)
        if op.nary:
            return max_backward([self.term(x) for x in operands], out, gradient, edges)
        g = Code(gradient, atomic=True, dialect=ARRAY)
        found = []
        for k in edges:
            arguments = [self.symbol(x) for x in operands]
            saved = op.saved[k](*arguments, Code(out, atomic=True, dialect=ARRAY))
            part = contribution(op.gradients[k], g, saved)
            found.append((k, operand(part) if isinstance(part, Code) else literal(part)))
        return found

    def backward_source(self) -> str:
        """The reverse pass: seeded with ``s0``... at the outputs, it returns the gradient of each
        of ``wrt`` as one array, a row each (0.0 for one the outputs do not reach, as ``grad``
        gives; a row of one number when it is the same for every sample)."""
        recorded = self.graph
        seeds = [f"s{k}" for k in range(len(recorded.outputs))]
        lines = [f"def backward(inputs, values{''.join(', ' + s for s in seeds)}):"]
        for names, holder in ((self.input_names, "inputs"), (self.value_names, "values")):
            if names:
                lines.append(f"    ({', '.join(names)}{',' if len(names) == 1 else ''}) = {holder}")
        started: set[int] = set()
        self.pending = {}
        self.sliced = set()

        def add(target: graph.Node, code: str) -> None:
            name = f"g_{self.names[id(target)]}"
            lines.extend(f"    {line}" for line in self._taken([target]))
            lines.append(f"    {name} = {name} + {code}" if id(target) in started else f"    {name} = {code}")
            started.add(id(target))

        for output, seed in zip(recorded.outputs, seeds, strict=True):
            if output.requires_grad:
                add(output, seed)
        ends = {block.end - 1: (j, block) for j, block in enumerate(self.blocks)}
        later = {k for group in self.products.values() for k in group[1:]}
        k = len(recorded.live) - 1
        while k >= 0:
            if k in ends:
                j, block = ends[k]
                lines += [f"    {line}" for line in self._block_backward(j, block, started)]
                k = block.start - 1
                continue
            node, edges = recorded.live[k], recorded.positions[k]
            if id(node) in started and graph.op_of(node) is not None and edges and k not in later:
                self._node_backward(k, edges, lines, add)
            k -= 1
        lines.append(f"    return {self._rows(started)}")
        lines = _products_into_rows(lines, self.product_parts, self.sliced)
        return "\n".join(_products_across(lines, self.product_parts)) + "\n"

    def summed(self, source: str) -> str:
        """``source`` (the forward pass, and the reverse pass when there is one) with each sum of
        products run as one (``sums_of_products``), the function's outputs kept."""
        kept = {self.names[id(y)] for y in self.graph.outputs if id(y) in self.value_index}
        return sums_of_products(source, kept)

    def _node_backward(
        self, k: int, edges: tuple[int, ...], lines: list[str], add: Callable[[graph.Node, str], None]
    ) -> None:
        """The reverse pass's lines for ``live[k]``, reached with a gradient, appended to ``lines``
        (its contributions through ``add``, which appends too, in the order they are made): the
        products run as one, when it is the first of them, all taken here."""
        recorded = self.graph
        node = recorded.live[k]
        if k in self.products:
            nodes = [recorded.live[p] for p in self.products[k]]
            gradients = [f"g_{self.names[id(x)]}" for x in nodes]
            found, contributions = self._fused_backward(f"_{k}", nodes, gradients, edges)
            lines += [f"    {line}" for line in found]
            for x, array, row in contributions:
                add(x, f"{array}[{row}]")
            return
        lines.append(f"    # {self.forward_statement(node)}")
        operands = graph.operands(node)
        for position, code in self.backward_lines(node, f"g_{self.names[id(node)]}", edges):
            if position == -1:
                lines.append(f"    {code}")
            else:
                add(operands[position], code)

    def _taken(self, nodes: Sequence[graph.Node]) -> list[str]:
        """The lines that take the gradients of ``nodes`` out of a block's stacked array, for
        those whose taking was left until their gradient is read (``pending``)."""
        lines = []
        for x in nodes:
            found = self.pending.pop(id(x), None)
            if found is not None:
                lines.append(f"g_{self.names[id(x)]} = _row({found[0]}, {found[1]})")
        return lines

    def _rows(self, started: set[int]) -> str:
        """The call that returns the gradients of ``wrt`` as one array, a row each: the rows of a
        block's stacked gradient placed in one operation, each other gradient alone (0.0 where
        the outputs do not reach)."""
        groups: dict[str, list[tuple[int, int]]] = {}
        singles = []
        for k, x in enumerate(self.graph.wrt):
            found = self.pending.get(id(x))
            if found is not None:
                groups.setdefault(found[0], []).append((k, found[1]))
            else:
                singles.append((k, f"g_{self.names[id(x)]}" if id(x) in started else "0.0"))
        placed = []
        for name, rows in groups.items():  # all of an array's rows in order (None), or those picked
            every = [m for _, m in rows] == list(range(self.copies[name]))
            picked = "None" if every else _tuple(str(m) for _, m in rows)
            placed.append(f"({name}, {_places([k for k, _ in rows])}, {picked})")
            if _spaced([k for k, _ in rows]) is not None:
                self.sliced.add(name)
        alone = _tuple(f"({k}, {code})" for k, code in singles)
        return f"_rows({len(self.graph.wrt)}, {_tuple(placed)}, {alone})"

    def _block_backward(self, j: int, block: ArrayBlock, started: set[int]) -> list[str]:
        """A block's reverse pass across its copies: the gradients its outputs and inputs have so
        far stacked (-0.0 where a copy's has none yet: -0.0 + c is c to the bit), each operation's
        edges in decreasing order as one array, each input's gradient taken back out per copy,
        and each shared value's contributions added copy by copy, the last copy first."""
        live = self.graph.live
        lines: list[str] = []
        local_started: set[str] = set()
        for o in block.outputs:
            copies = [live[block.start + m * block.length + o] for m in range(block.copies)]
            lines += self._stacked(copies, f"gf{j}_{o}", started, local_started)
        for s, column in enumerate(block.varying):
            lines += self._stacked(column, f"gi{j}_{s}", started, local_started)
        local = self._local(j, block)
        shared: dict[int, tuple[graph.Node, list[str]]] = {}
        replaced = self._named(local)
        try:
            lines += self._block_edges(j, block, local, local_started, shared)
        finally:
            self.names.update(replaced)
        lines += self._across_lines(shared, started, block.copies)
        inputs = {id(x) for x in self.graph.inputs}
        for s, column in enumerate(block.varying):
            if f"gi{j}_{s}" in local_started:
                for m, x in enumerate(column):
                    if id(x) in inputs:  # taken out when read, or placed in the result by _rows
                        self.pending[id(x)] = (f"gi{j}_{s}", m)
                        self.copies[f"gi{j}_{s}"] = len(column)
                    else:
                        lines.append(f"g_{self.names[id(x)]} = _row(gi{j}_{s}, {m})")
                    started.add(id(x))
        return lines

    def _stacked(self, nodes: list[graph.Node], name: str, started: set[int], local_started: set[str]) -> list[str]:
        """The gradients ``nodes`` (one per copy) have so far, as one array named ``name``."""
        if not any(id(x) in started for x in nodes):
            return []
        local_started.add(name)
        terms = [f"g_{self.names[id(x)]}" if id(x) in started else "-0.0" for x in nodes]
        return [*self._taken(nodes), f"{name} = _stack(({', '.join(terms)},))"]

    def _block_edges(
        self,
        j: int,
        block: ArrayBlock,
        local: dict[int, str],
        local_started: set[str],
        shared: dict[int, tuple[graph.Node, list[str]]],
    ) -> list[str]:
        """The edges of the first copy's operations, in decreasing order, written for every copy
        at once; what they hand a value every copy reads is kept in ``shared``, in order."""
        live, positions = self.graph.live, self.graph.positions
        lines: list[str] = []
        group = self.fused.get(j, [])
        for o in range(block.length - 1, -1, -1):
            node, edges = live[block.start + o], positions[block.start + o]
            if id(node) not in self.reach or not edges or (o in group and o != group[0]):
                continue
            # (operand or None for a line that prepares them, code, the products' array and row it is)
            contributions: list[tuple[Any, str, tuple[str, int] | None]]
            if o in group:  # the last of the products the pass reaches: all of them at once
                firsts = [live[block.start + p] for p in group]
                found = self._fused_backward(str(j), firsts, [f"gf{j}_{p}" for p in group], edges)
                lines += found[0]
                contributions = [(x, f"{array}[{row}]", (array, row)) for x, array, row in found[1]]
            else:
                lines.append(f"# {self.forward_statement(node)}")
                operands = graph.operands(node)
                contributions = [
                    (operands[k] if k >= 0 else None, code, None)
                    for k, code in self.backward_lines(node, f"gf{j}_{o}", edges)
                ]
            for x, code, place in contributions:
                if x is None:  # a line that prepares the contributions
                    lines.append(code)
                    continue
                target = local.get(id(x))
                if target is None:  # a value every copy reads: added across the copies later
                    name = f"c{j}_{sum(len(parts) for _, parts in shared.values())}"
                    lines.append(f"{name} = {code}")
                    if place is not None:
                        self.parts[name] = place
                    shared.setdefault(id(x), (x, []))[1].append(name)
                    continue
                gradient = f"g{target}"
                lines.append(
                    f"{gradient} = {gradient} + {code}" if gradient in local_started else f"{gradient} = {code}"
                )
                local_started.add(gradient)
        return lines

    def _fused_backward(
        self, tag: str, nodes: list[graph.Node], gradients: list[str], edges: tuple[int, ...]
    ) -> tuple[list[str], list[tuple[Any, str, int]]]:
        """The reverse pass of products run as one (``nodes``, named ``pa``/``pb``/``pp`` + ``tag``
        in the forward) at once: their gradients stacked (``pg``), the table's rule of each edge
        applied to the stacked operands (``pc``), and each product's share, in decreasing order,
        each product's edges in order, as the pass takes them one product at a time (no other
        operation between them hands gradient to their operands, so when the shares are added
        changes no bit): the operand, and the array and row of ``pc`` that is its share. An edge
        whose rule is ``times`` of an array (``pg * pb``) is noted in ``product_parts`` with its
        factors, for the rewrites that multiply its rows where they are read."""
        lines = [f"# {len(nodes)} products at once", f"pg{tag} = _stack_as({_tuple(gradients)}, pa{tag})"]
        symbols = [Code(f"pa{tag}", atomic=True, dialect=ARRAY), Code(f"pb{tag}", atomic=True, dialect=ARRAY)]
        out = Code(f"pp{tag}", atomic=True, dialect=ARRAY)
        gradient = Code(f"pg{tag}", atomic=True, dialect=ARRAY)
        contributions: list[tuple[Any, str, int]] = []
        for k in edges:
            saved = ops.MUL.saved[k](*symbols, out)
            part = contribution(ops.MUL.gradients[k], gradient, saved)
            text = operand(part) if isinstance(part, Code) else literal(part)
            lines.append(f"pc{tag}_{k} = {text}")
            if ops.MUL.gradients[k] is ops.times and isinstance(saved, Code):  # pg * pb: g times an array
                self.product_parts[f"pc{tag}_{k}"] = (f"pg{tag}", saved.text)
        for row in range(len(nodes) - 1, -1, -1):
            operands = graph.operands(nodes[row])
            contributions += [(operands[k], f"pc{tag}_{k}", row) for k in edges]
        return lines, contributions

    def _fused_forward(self, tag: str, nodes: list[graph.Node], names: list[str]) -> list[str]:
        """Products run as one: their operands stacked a product per row, one multiplication,
        each product's row under its own name."""
        sides = [_tuple(self.term(graph.operands(node)[k]) for node in nodes) for k in (0, 1)]
        return [
            f"pa{tag}, pb{tag} = _sides({sides[0]}, {sides[1]})",
            f"pp{tag} = {FORWARD['mul']([f'pa{tag}', f'pb{tag}'])}  # {len(nodes)} products at once",
            f"{', '.join(names)}, = pp{tag}",
        ]

    def _across_lines(
        self, shared: dict[int, tuple[graph.Node, list[str]]], started: set[int], copies: int
    ) -> list[str]:
        """Each shared value's gradient: the copies' contributions added the last copy first,
        the values that each copy reads as often added together."""
        groups: dict[int, list[tuple[graph.Node, list[str]]]] = {}
        for x, parts in shared.values():
            groups.setdefault(len(parts), []).append((x, parts))
        lines = []
        for reads, members in groups.items():
            lines += self._taken([x for x, _ in members])
            names = [f"g_{self.names[id(x)]}" for x, _ in members]
            starts = [name if id(x) in started else "-0.0" for name, (x, _) in zip(names, members, strict=True)]
            parts = [part for _, found in members for part in found]
            rows = _rows_of([self.parts.get(part) for part in parts])
            if rows is not None:  # the parts are the rows of one array in order: read where they are
                lines.append(f"{', '.join(names)}, = _across_stacked(({', '.join(starts)},), {reads}, {rows})")
            else:
                lines.append(
                    f"{', '.join(names)}, = _across(({', '.join(starts)},), {reads}, {copies}, {', '.join(parts)})"
                )
            started.update(id(x) for x, _ in members)
        return lines


# ---- rewrites of the finished passes ----------------------------------------------------------------
# _products_into_rows, _products_across and sums_of_products read the code the writer has finished,
# by the exact statement forms the writer itself writes (``pc = (pg * pb)``, ``gi = pc[r]``,
# ``_across_stacked(..., pc[a:b:s])``, ``x = a + b``). What they decide (the products' gradients,
# made by _fused_backward, are known from ``product_parts``; the arrays _rows places through a slice
# from ``sliced``) comes from the writer where it keeps it; what it does not keep is a count over the
# whole function: that no statement other than the few they rewrite reads a product's gradient, a
# row of it or a partial sum (``_uses``). The writer appends its statements as text from several
# places (the edges, the blocks, the products run as one, _rows), so that count exists only once the
# function is written. Deciding it from data needs the writer to keep its statements with the names
# each reads and writes; until then these passes match the forms above, and tests/test_vmap_blocks.py
# pins that they fire (the moons MLP's layers) and that every number stays eager's.


def _products_into_rows(lines: list[str], parts: dict[str, tuple[str, str]], sliced: set[str]) -> list[str]:
    """The reverse pass's ``lines`` with the products' gradients that only fill rows of the result
    left unmade: where ``pc = (pg * pb)`` is read only by lines ``gi = pc[r]`` whose ``gi`` is read
    only by ``_rows`` (the gradients of inputs, a row each), each ``gi`` becomes
    ``_product(pg, pb, r)``, row ``r`` of ``pg * pb``, which ``_rows`` multiplies straight into the
    rows of the result it fills (the rows of one ``pg * pb`` together, in one multiplication where
    they fill rows in a regular pattern): the same multiplications, element by element, without
    the array of all of them (16 copies x 16 products x the batch, for a layer of 16 neurons) and
    without the copy of it into the result. Row ``r`` of ``pg * pb`` is ``pg[r] * pb[r]``: both
    have a product per row. ``sliced``: the arrays ``_rows`` places through a slice of the
    result's rows (``ArrayWriter._rows``), the only ones it multiplies in place."""
    if not parts:
        return lines
    uses = _uses(lines)
    taken = re.compile(r"^    (\w+) = (\w+)\[(\d+)\]$")
    rows: dict[str, list[tuple[int, str, int]]] = {}  # pc -> (line, gi, row)
    for k, line in enumerate(lines):
        found = taken.match(line)
        if found is not None and found.group(2) in parts:
            rows.setdefault(found.group(2), []).append((k, found.group(1), int(found.group(3))))
    changed: list[str | None] = list(lines)
    for name, (left, right) in parts.items():
        found_rows = rows.get(name, [])
        if not found_rows or uses.get(name, 0) != 1 + len(found_rows):  # read elsewhere: made as before
            continue
        if any(uses.get(gi, 0) != 2 or gi not in sliced for _, gi, _ in found_rows):
            continue
        for k, gi, r in found_rows:
            changed[k] = f"    {gi} = _product({left}, {right}, {r})"
        changed = [None if line is not None and line.startswith(f"    {name} = ") else line for line in changed]
    return [line for line in changed if line is not None]


def _uses(lines: Sequence[str]) -> dict[str, int]:
    """How often each name is read or written in ``lines``, comments left out. A count of words
    over the finished text, as the passes that call it read it: counting the names of the parsed
    functions (``ast``) gives the same counts and took half as long again to write a program
    (measured: an MLP(2, [64, 64, 1])'s first call, 0.22 s against 0.31 s)."""
    uses: dict[str, int] = {}
    for line in lines:
        code = line.split("  # ")[0]
        if code.strip().startswith("#"):
            continue
        for word in re.findall(r"[A-Za-z_]\w*", code):
            uses[word] = uses.get(word, 0) + 1
    return uses


def _products_across(lines: list[str], parts: dict[str, tuple[str, str]]) -> list[str]:
    """The reverse pass's ``lines`` with the products' gradients that only go to values every
    copy of a block reads left unmade: where ``pc = (pg * pa)`` is read only by
    ``_across_stacked(..., pc[a:b:s])`` (and by lines ``c = pc[r]`` nothing reads), the call is
    ``_across_products(..., pg[a:b:s], pa[a:b:s])``, which multiplies each copy's share just
    before adding it, into an array of one copy's size: the same products, added in the same
    order, without the array of all of them."""
    if not parts:
        return lines
    uses = _uses(lines)
    taken = re.compile(r"^    (\w+) = (\w+)\[(\d+)\]$")
    across = re.compile(r"^(    .* = )_across_stacked\((.*), (\w+)\[([-\d]*:[-\d]*:-?\d+)\]\)$")
    changed: list[str | None] = list(lines)
    for name, (left, right) in parts.items():
        rows = [k for k, line in enumerate(lines) if (found := taken.match(line)) and found.group(2) == name]
        calls = [k for k, line in enumerate(lines) if (found := across.match(line)) and found.group(3) == name]
        if len(calls) != 1 or uses.get(name, 0) != 2 + len(rows):
            continue
        if any(uses.get(lines[k].split(" = ")[0].strip(), 0) != 1 for k in rows):
            continue
        found = across.match(lines[calls[0]])
        assert found is not None
        head, arguments, _, where = found.groups()
        changed[calls[0]] = f"{head}_across_products({arguments}, {left}[{where}], {right}[{where}])"
        for k in rows:
            changed[k] = None
        changed = [None if line is not None and line.startswith(f"    {name} = ") else line for line in changed]
    return [line for line in changed if line is not None]


_PRODUCTS = re.compile(r"^    (pp\w*) = (pa\w*) \* (pb\w*)(  # .*)?$")
_ADD = re.compile(r"^    (\w+) = ([\w.-]+) \+ ([\w.-]+)(  # .*)?$")


def sums_of_products(source: str, kept: set[str]) -> str:
    """``source`` with each chain of additions of the products run as one (``pp = pa * pb``, its
    rows under their own names) written as one call, ``_sum_products``: where the chain adds every
    row, one after another (``x1 = s + p0``, ``x2 = x1 + p1``...), and nothing else reads the
    products or the partial sums (the reverse pass of an addition reads neither; ``kept``, the
    function's outputs, are read by name), the call multiplies each row just before adding it,
    into arrays of one row's size, each addition with its operands in their order: the same
    numbers, without the array of all the products and the partial sums. The names left unmade
    are None (the forward returns them; nothing reads them)."""
    lines = source.split("\n")
    counted = [line for line in lines if not line.startswith("    return (") and not line.endswith(") = values")]
    uses = _uses(counted)
    out: list[str] = []
    k = 0
    while k < len(lines):
        found = _PRODUCTS.match(lines[k])
        if found is None or k + 1 >= len(lines):
            out.append(lines[k])
            k += 1
            continue
        name, left, right = found.group(1), found.group(2), found.group(3)
        unpacked = lines[k + 1].strip()
        if not unpacked.endswith(f", = {name}"):
            out.append(lines[k])
            k += 1
            continue
        rows = {row: r for r, row in enumerate(unpacked[: -len(f", = {name}")].split(", "))}
        chain = _chain(lines, k + 2, rows, uses, kept)
        if chain is None or uses.get(name, 0) != 2:
            out.append(lines[k])
            k += 1
            continue
        last, start, order, dead = chain
        terms = ", ".join(f"({r}, {int(first)})" for r, first in order)
        out.append(
            f"    {last} = _sum_products({start}, {left}, {right}, ({terms},))  # {len(order)} products added in order"
        )
        out.append(f"    {' = '.join([*dead, *rows, name])} = None")
        k += 2 + len(order)
    return "\n".join(out)


def _chain(
    lines: list[str], k: int, rows: dict[str, int], uses: dict[str, int], kept: set[str]
) -> tuple[str, str, list[tuple[int, bool]], list[str]] | None:
    """The chain of additions from ``lines[k]`` that adds every one of ``rows`` once, one after
    another: its last sum, its start, each row's place with whether it is the left operand, and
    the partial sums; None when there is none that ``sums_of_products`` may write as one."""
    order: list[tuple[int, bool]] = []
    sums: list[str] = []
    previous: str | None = None
    start = ""
    while k < len(lines) and len(order) < len(rows):
        found = _ADD.match(lines[k])
        if found is None:
            return None
        target, a, b = found.group(1), found.group(2), found.group(3)
        if previous is None:
            if (a in rows) == (b in rows):
                return None
            start = b if a in rows else a
        elif previous not in (a, b) or (a == b):
            return None
        row = a if a in rows and a != previous else b
        if row not in rows or uses.get(row, 0) != 2 or any(r == rows[row] for r, _ in order):
            return None
        order.append((rows[row], row == a))
        sums.append(target)
        previous = target
        k += 1
    if len(order) != len(rows):
        return None
    dead = sums[:-1]
    if any(uses.get(x, 0) != 2 or x in kept for x in dead):
        return None
    return sums[-1], start, order, dead
