"""Repeated blocks of a recorded graph, written once: a ``for`` loop over their copies.

A user's program is often a loop: micrograd's demo step runs the model on 100 points, so its
recording holds 100 copies of one block of 640 operations. Straight-line code pays for every
copy when it is written and when CPython compiles it; this module finds the copies and writes
the block once, as a loop over them, with the code between blocks (the *glue*: the margins,
the sum, the L2 term) straight-line as before.

**Finding the copies** (``keys``, ``find``). Each operation gets a local key: its row of the
table, the edges the recording made, whether it takes gradient, and per operand the row of
the operation it reads (where that operation is, inside the copy or before it, is checked
later), a placeholder (an argument, or a number: each copy may have its own) or the
parameter's position (a parameter: the copies share it). A run of keys that repeats back to
back is a candidate block; it is one (``Block.of``) when every copy is wired inside as the
first, reads the same parameters, wires its own inputs (the values it reads from before the
run: arguments, glue, earlier blocks) alike, and reads no other copy's values. A number that
differs between copies (a label) is an input of the loop too, a column of literals.

**Eager's bits.** The reverse pass runs the units (glue and copies, contiguous runs of
creation order) in decreasing creation order, the last copy first, each copy's operations in
decreasing order; the parameters' running gradients stay in the same variables through the
loop and every copy's inputs and outputs hand their gradients in and out, so every
accumulator sees exactly the additions of the straight-line code, in its order. A copy's
output or input that nothing has handed gradient to yet starts at ``-0.0`` (``-0.0 + c`` is
``c`` to the bit, signed zeros and nan included), and an operation runs only where the pass
reaches it: copies are grouped, for each set of seeded outputs, by which of their operations
the pass reaches, one loop per run of copies alike.

Only the recorded graph goes into the code: the names (``u1`` for a block's operations,
``i0`` for its inputs, ``c0`` for its numbers) are made here, as ``compiler.write`` makes its
own, and numbers are written by ``codegen.symbols.literal``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from vjpgrad.codegen.symbols import literal
from vjpgrad.compiler.write import ROWS, VALUES_LINE, Edges, Program, exact
from vjpgrad.core import graph

TRIES = 4
"""How many later occurrences of a key are tried as the start of the next copy."""
SMALLEST = 8
"""The fewest operations a block folds: a loop's bookkeeping for each copy (its inputs, its
outputs, the values its reverse pass reads) costs about what a few straight lines cost."""
SHARE = 0.25
"""The least part of a recording its blocks must hold for it to be written with loops: a few
small loops in a large program shorten little and cost a search and a slower replay (microgpt's
step, whose positions interleave, folds about 10% this way; its code stays straight-line)."""

Run = tuple[int, int, int]
"""A repeated block: where its first copy starts in creation order, its length, its copies."""


def keys(
    live: Sequence[graph.Node],
    externals: Sequence[graph.Node],
    arguments: int,
    constants: dict[int, float],
    edges: Edges,
    returned: set[int],
    place: dict[int, int],
) -> tuple[list[int], list[int]]:
    """Each operation's local key as a small int (equal keys, equal ints; a negative key, unique,
    for what never folds: a Value made inside, an operation outside the table, a returned
    output), and the position of each operation's last user (-1 for none), in one walk.
    ``place``: each operation's position by its id."""
    fixed: dict[int, Any] = {id(x): "a" if k < arguments else ("p", k) for k, x in enumerate(externals)}
    fixed.update((key, ("c", exact(number))) for key, number in constants.items())
    place_get, fixed_get, rows_get = place.get, fixed.get, ROWS.get
    interned: dict[tuple[Any, ...], int] = {}
    intern = interned.setdefault
    out: list[int] = []
    last = [-1] * len(live)
    rows: list[str | None] = []
    op_of, operands_of = graph.op_of, graph.operands
    for i, (node, positions) in enumerate(zip(live, edges.in_order, strict=True)):
        op = op_of(node)
        row = rows_get(op) if op is not None else None
        parts: list[Any] = [row, positions, node.requires_grad]
        rows.append(row)
        for x in operands_of(node):
            j = place_get(id(x))
            if j is not None:  # an operation: by its row (Block.of checks where it is)
                parts.append(rows[j])
                last[j] = i
            else:
                known = fixed_get(id(x))
                parts.append(known if known is not None else "n")  # a number: Block.of compares them
        if row is None or id(node) in returned:
            out.append(-1 - i)
        else:
            out.append(intern(tuple(parts), len(interned)))
    return out, last


def find(key: list[int]) -> list[Run]:
    """Runs of keys that repeat back to back: from each position, the next few occurrences of its
    key are tried as the start of a second copy, and a match is extended copy by copy (slices of
    the key list compared in C)."""
    n = len(key)
    following = [-1] * n  # the next position with the same key
    latest: dict[int, int] = {}
    for q in range(n - 1, -1, -1):
        x = key[q]
        if x >= 0:
            following[q] = latest.get(x, -1)
            latest[x] = q
    runs: list[Run] = []
    mismatch: dict[int, int] = {}  # length -> a position q with key[q] != key[q + length], the last found
    i = 0
    while i < n:
        j, tries, found = following[i], TRIES, False
        while j >= 0 and tries:
            tries -= 1
            length = j - i
            if length < SMALLEST or mismatch.get(length, -1) >= i:
                j = following[j]
                continue  # too short, or a known mismatch inside this window: every start up to it fails
            if j + length > n:
                break
            stride = length // 16 + 1  # a few keys compared first: most candidates fail there, cheaply
            known = next((at for at in range(j - 1, i, -stride) if key[at] != key[at + length]), -1)
            if known < 0 and key[i:j] != key[j : j + length]:
                known = _first_mismatch(key, i, length)
            if known >= 0:
                mismatch[length] = known
                j = following[j]
                continue
            block = key[i:j]
            copies = 2
            while i + (copies + 1) * length <= n and key[i + copies * length : i + (copies + 1) * length] == block:
                copies += 1
            runs.append((i, length, copies))
            i += copies * length
            found = True
            break
        if not found:
            i += 1
    return runs


def _first_mismatch(key: list[int], i: int, length: int) -> int:
    """The first position q from ``i`` with ``key[q] != key[q + length]`` (there is one before
    ``i + length``), by halving with slice compares (in C)."""
    low, high = i, i + length  # key[i:low] matches; the first mismatch is before high
    while high - low > 1:
        middle = (low + high) // 2
        if key[low:middle] == key[low + length : middle + length]:
            low = middle
        else:
            high = middle
    return low


class Block:
    """One repeated block, checked to be a loop: what each copy reads from before the run (its
    *slots*: a parameter or a value the copies share is read by name, the others are the loop's
    inputs), and which of its values are read after the run (its *outputs*)."""

    def __init__(
        self,
        run: Run,
        varying: list[list[graph.Node]],
        shared: dict[int, graph.Node],
        slot_of: dict[int, int],
        outputs: list[int],
        numbers: list[tuple[list[tuple[int, int]], list[Any]]],
    ) -> None:
        self.start, self.length, self.copies = run
        # the numbers that differ between copies: where each is read (offset, operand), and its
        # number in each copy (one input for all the places that read the same numbers)
        self.numbers = numbers
        self.varying = varying  # per input: its node in each copy
        self.shared = shared  # id -> node read by every copy (a parameter, or a value before the run)
        self.slot_of = slot_of  # id of the first copy's input node -> its input's position
        self.outputs = outputs  # offsets of the operations read after the run

    @classmethod
    def of(
        cls,
        run: Run,
        live: Sequence[graph.Node],
        place: dict[int, int],
        external: dict[int, int],
        arguments: int,
        last: list[int],
    ) -> Block | None:
        """The block of ``run`` if its copies can be one loop, else None (the run stays glue).
        The copies' keys are equal (the same operations, parameters and numbers); here each copy
        is checked to be wired inside as the first, and to read from before the run alike."""
        start, length, copies = run
        end = start + length * copies
        inside, reads, constants = _first_copy(run, live, place, external, arguments)
        operands_of = graph.operands
        for m in range(1, copies):  # each copy wired inside as the first
            base = start + m * length
            for o, n, at in inside:
                if place.get(id(operands_of(live[base + o])[n])) != base + at:
                    return None
        inputs = _inputs(run, live, place, reads)
        if inputs is None:
            return None
        slots = _slots(inputs, copies)
        if slots is None:
            return None
        varying, shared, slot_of = slots
        outputs = {(j - start) % length for j in range(start, end) if last[j] >= end}
        return cls(run, varying, shared, slot_of, sorted(outputs), _numbers(run, live, constants))


def _first_copy(
    run: Run, live: Sequence[graph.Node], place: dict[int, int], external: dict[int, int], arguments: int
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]], list[tuple[int, int]]]:
    """What the first copy's operands are: ``(offset, operand, offset read)`` of those inside
    the copy, ``(offset, operand)`` of those read from before the run (arguments, glue, earlier
    blocks), and ``(offset, operand)`` of its numbers."""
    start, length, _ = run
    node_type = graph.Node
    inside: list[tuple[int, int, int]] = []
    reads: list[tuple[int, int]] = []
    constants: list[tuple[int, int]] = []
    for o, node in enumerate(live[start : start + length]):
        for n, x in enumerate(graph.operands(node)):
            if not isinstance(x, node_type):
                constants.append((o, n))
                continue
            j = place.get(id(x))
            k = external.get(id(x))
            if j is not None and j >= start:
                inside.append((o, n, j - start))
            elif j is not None or (k is not None and k < arguments):
                reads.append((o, n))
    return inside, reads, constants


def _inputs(
    run: Run, live: Sequence[graph.Node], place: dict[int, int], reads: list[tuple[int, int]]
) -> list[list[graph.Node]] | None:
    """Each copy's inputs, in the order the copy first reads them; None when the copies wire
    them differently or a copy reads an earlier copy's value (not one loop)."""
    start, length, copies = run
    operands_of = graph.operands
    wiring: list[int] | None = None
    inputs: list[list[graph.Node]] = []
    for m in range(copies):
        base = start + m * length
        order: dict[int, int] = {}
        nodes: list[graph.Node] = []
        wires: list[int] = []
        for o, n in reads:
            x = operands_of(live[base + o])[n]
            j = place.get(id(x))
            if j is not None and j >= start:
                return None
            slot = order.setdefault(id(x), len(order))
            if slot == len(nodes):
                nodes.append(x)
            wires.append(slot)
        if wiring is None:
            wiring = wires
        elif wires != wiring:
            return None
        inputs.append(nodes)
    return inputs


def _slots(
    inputs: list[list[graph.Node]], copies: int
) -> tuple[list[list[graph.Node]], dict[int, graph.Node], dict[int, int]] | None:
    """The inputs every copy shares (read by name) and those each copy has of its own (the
    loop's columns); None for an input two copies share but not all."""
    varying: list[list[graph.Node]] = []
    shared: dict[int, graph.Node] = {}
    slot_of: dict[int, int] = {}
    seen: set[int] = set()
    for s in range(len(inputs[0])):
        column = [nodes[s] for nodes in inputs]
        if all(x is column[0] for x in column):
            shared[id(column[0])] = column[0]
            continue
        ids = {id(x) for x in column}
        if len(ids) != copies or not ids.isdisjoint(seen):
            return None
        seen |= ids
        slot_of[id(column[0])] = len(varying)
        varying.append(column)
    if not seen.isdisjoint(shared):
        return None
    return varying, shared, slot_of


def _numbers(
    run: Run, live: Sequence[graph.Node], constants: list[tuple[int, int]]
) -> list[tuple[list[tuple[int, int]], list[Any]]]:
    """The numbers that differ between copies, inputs of the loop: where each is read and its
    number in each copy (one input for all the places that read the same numbers)."""
    start, length, copies = run
    numbers: list[tuple[list[tuple[int, int]], list[Any]]] = []
    columns: dict[tuple[Any, ...], int] = {}
    for o, n in constants:
        column = [graph.operands(live[start + m * length + o])[n] for m in range(copies)]
        bits = tuple(exact(x) for x in column)
        if all(b == bits[0] for b in bits):
            continue
        s = columns.setdefault(bits, len(numbers))
        if s == len(numbers):
            numbers.append(([], column))
        numbers[s][0].append((o, n))
    return numbers


def detect(program: Program, table: Sequence[Run] | None = None) -> tuple[list[Block], dict[int, int]]:
    """The blocks of ``program``'s recording that fold into loops: those of ``table`` (a stored
    one, each checked), else those found now; and each operation's position by its id."""
    returned = {id(program.live[k]) for k in program.internal_outputs}
    place = {id(node): k for k, node in enumerate(program.live)}
    constants = program.writer.constants
    key, last = keys(program.live, program.externals, program.arguments, constants, program.edges, returned, place)
    runs = find(key) if table is None else table
    external = {id(x): k for k, x in enumerate(program.externals)}
    blocks = []
    for run in runs:
        start, length, copies = run
        if table is not None and any(
            key[start : start + length] != key[at : at + length]
            for at in range(start + length, start + length * copies, length)
        ):
            raise ValueError(f"a stored block {run!r} does not repeat in this recording")
        block = Block.of(run, program.live, place, external, program.arguments, last)
        if block is not None:
            blocks.append(block)
        elif table is not None:
            raise ValueError(f"a stored block {run!r} is not a loop in this recording")
    return blocks, place


def make_program(
    live: Sequence[graph.Node],
    externals: Sequence[graph.Node],
    arguments: int,
    constants: dict[int, float],
    outputs: list[int],
    sources: dict[int, graph.Node],
    edges: Edges,
    table: Sequence[Run] | None = None,
) -> Program:
    """The writer of a recording's code: its repeated blocks folded into loops when it has any
    (``table``: the runs a cached payload was written with, else found now)."""
    program = Program.__new__(Program)
    program._setup(live, externals, arguments, constants, outputs, sources, edges)
    if table is not None and not table:  # loaded code written straight-line: no search
        program._write()
        return program
    blocks, place = detect(program, table)
    if table is None and sum(b.length * b.copies for b in blocks) < SHARE * len(live):
        blocks = []
    if not blocks:
        program._write()
        return program
    program.__class__ = FoldedProgram  # the same set-up, written with its blocks as loops
    assert isinstance(program, FoldedProgram)
    program._fold(blocks, place)
    return program


class FoldedProgram(Program):
    """A ``Program`` whose repeated blocks are written once each, as loops (the module docstring).

    The forward pass hands the reverse pass the values of the glue it reads (``kept``), then,
    for each block, a list of what each copy's reverse pass reads."""

    def _fold(self, blocks: list[Block], place: dict[int, int]) -> None:
        """Write the code of a set-up program (``Program._setup``) with ``blocks`` as loops."""
        self.blocks = blocks
        self.table = tuple((b.start, b.length, b.copies) for b in self.blocks)
        self.place = place
        self._locals = [self._local_names(b) for b in self.blocks]
        self._block_kept: list[list[str]] = []
        glue_reads: set[str] = set()
        for k, block in enumerate(self.blocks):  # what a copy's reverse pass reads, every operation reached
            lines, _, _ = self._block_lines(k, (True,) * block.length, False, None)
            text = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
            read = set(re.findall(r"\b[uic]\d+\b", text))
            self._block_kept.append(sorted(read, key=lambda name: (name[0], int(name[1:]))))
            glue_reads |= set(re.findall(r"\bt\d+\b", text))
        lines = self._backward_lines(self._every, checked=False)
        code = "\n".join(line for line in lines if line is not VALUES_LINE and not line.lstrip().startswith("#"))
        # a block's operations are read by name only where they are its outputs (the forward unpacks them)
        self._keep(set(re.findall(r"\bt\d+\b", code)) | self._skipped_reads | glue_reads)
        self._every_source = self._joined(lines)
        self.forward_source = self._forward_source()

    # ---- names -------------------------------------------------------------------------------------

    def _local_names(self, block: Block) -> dict[int, str]:
        """The names the block's code uses, keyed by the first copy's nodes: ``u1``... for its
        operations, ``i0``... for its inputs, the program's names for what every copy shares."""
        names = {id(node): f"u{o}" for o, node in enumerate(self.live[block.start : block.start + block.length], 1)}
        names.update((key, f"i{s}") for key, s in block.slot_of.items())
        names.update((key, self.names[key]) for key in block.shared)
        names.update((id(x), self.names[id(x)]) for x in self.externals[self.arguments :])
        return names

    @contextmanager
    def _named(self, k: int) -> Iterator[None]:
        """The writer names what block ``k``'s code reads by the block's names."""
        writer = self.writer
        before = writer.names
        writer.names = self._locals[k]
        block = self.blocks[k]
        first = self.live[block.start : block.start + block.length]
        writer.named_numbers = {
            (id(first[o]), n): f"c{s}" for s, (places, _) in enumerate(block.numbers) for o, n in places
        }
        try:
            yield
        finally:
            writer.names = before
            writer.named_numbers = {}

    def _described(self, k: int) -> str:
        """The comment above a block: what it is, how many copies run, over what."""
        block = self.blocks[k]
        first, last = block.start + 1, block.start + block.length * block.copies
        over = []
        if block.varying:
            inputs = ", ".join(f"i{s}" for s in range(len(block.varying)))
            given = ", ".join(self.names[id(column[0])] for column in block.varying)
            over.append(f"each reading {inputs} of its own (the first copy's {given})")
        if block.numbers:
            names = ", ".join(f"c{s}" for s in range(len(block.numbers)))
            given = ", ".join(literal(column[0]) for _, column in block.numbers)
            over.append(f"{'and ' if over else 'each with '}numbers {names} of its own (the first copy's {given})")
        copies = f"{block.copies} copies of {block.length} operations (t{first} to t{last})"
        return f"    # block {k + 1}, written once: {copies}, {' '.join(over) or 'all alike'}"

    # ---- the forward pass --------------------------------------------------------------------------

    def _forward_source(self) -> str:
        lines = [
            "def forward(inputs):",
            self._unpack([self.names[id(x)] for x in self.externals], "inputs").rstrip("\n"),
        ]
        at = 0
        for k, block in enumerate(self.blocks):
            lines += [f"    {self.writer.forward_line(node)}" for node in self.live[at : block.start]]
            lines.append(self._described(k))
            lines.append(f"    _k{k} = []")
            lines += [f"    _o{k}_{o} = []" for o in block.outputs]
            lines.append(f"    for {self._loop_head(k)}:")
            with self._named(k):
                lines += [
                    f"        {self.writer.forward_line(node)}"
                    for node in self.live[block.start : block.start + block.length]
                ]
            lines.append(f"        _k{k}.append({_tuple(self._block_kept[k])})")
            lines += [f"        _o{k}_{o}.append(u{o + 1})" for o in block.outputs]
            for o in block.outputs:
                names = [self.names[id(self.live[block.start + m * block.length + o])] for m in range(block.copies)]
                lines.append(f"    {', '.join(names)}, = _o{k}_{o}")
            at = block.start + block.length * block.copies
        lines += [f"    {self.writer.forward_line(node)}" for node in self.live[at:]]
        values = [self.names[id(node)] for node in self.kept] + [f"_k{k}" for k in range(len(self.blocks))]
        lines.append(f"    return {_tuple(values)}")
        return "\n".join(line for line in lines if line) + "\n"

    def _loop_head(self, k: int) -> str:
        block = self.blocks[k]
        if not block.varying and not block.numbers:
            return f"_ in range({block.copies})"
        columns = [_tuple([self.names[id(x)] for x in column]) for column in block.varying]
        columns += [_tuple([literal(x) for x in column]) for _, column in block.numbers]
        targets = ", ".join([f"i{s}" for s in range(len(block.varying))] + [f"c{s}" for s in range(len(block.numbers))])
        if len(columns) == 1:
            return f"{targets} in {columns[0]}"
        return f"{targets} in zip({', '.join(columns)})"

    # ---- the reverse pass --------------------------------------------------------------------------

    def backward_source(self, seeded: frozenset[int], checked: bool = False) -> str:
        """The reverse pass seeded at the outputs ``seeded``, its blocks as loops (``Program``'s)."""
        if seeded == self._every and not checked:
            return self._every_source
        return self._joined(self._backward_lines(seeded, checked))

    def _joined(self, lines: list[str]) -> str:
        """The lines of a reverse pass, the values it reads unpacked where ``VALUES_LINE`` stands."""
        values = [self.names[id(n)] for n in self.kept] + [f"_k{k}" for k in range(len(self.blocks))]
        unpack = self._unpack(values, "values").rstrip("\n") or "    pass"
        return "\n".join(unpack if line is VALUES_LINE else line for line in lines if line) + "\n"

    def _backward_lines(self, seeded: frozenset[int], checked: bool) -> list[str]:
        reach = self.reach_of(seeded)
        live_ids = self.place
        returned = {id(self.live[k]) for k in self.internal_outputs}
        lines = ["def backward(seeds, values, inputs, start):"]
        lines.append(self._unpack([self.names[id(x)] for x in self.externals], "inputs").rstrip("\n") or "    pass")
        lines.append(VALUES_LINE)
        state = _Pass(self.names, {id(self.live[self.internal_outputs[i]]) for i in seeded})
        started = state.started
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
        units: list[tuple[int, int, int]] = []  # (first, last + 1, block or -1), in creation order
        at = 0
        for k, block in enumerate(self.blocks):
            if at < block.start:
                units.append((at, block.start, -1))
            at = block.start + block.length * block.copies
            units.append((block.start, at, k))
        if at < len(self.live):
            units.append((at, len(self.live), -1))
        for first, end, k in reversed(units):
            if k < 0:
                for node in reversed(self.live[first:end]):
                    self._glue_lines(node, reach, state, returned, live_ids, checked, lines)
            else:
                self._block_loops(k, reach, state, checked, lines)
        results = [f"g_{self.names[id(x)]}" if id(x) in started else "None" for x in self.externals]
        outputs = [
            f"g_{self.names[id(self.live[self.internal_outputs[i]])]}"
            if id(self.live[self.internal_outputs[i]]) in started
            else "None"
            for i in sorted(seeded)
        ]
        lines.append(f"    return {_tuple(results)}, {_tuple(outputs)}")
        return lines

    def _glue_lines(
        self,
        node: graph.Node,
        reach: set[int],
        state: _Pass,
        returned: set[int],
        live_ids: dict[int, int],
        checked: bool,
        lines: list[str],
    ) -> None:
        """One operation of the glue, as ``Program.backward_source`` writes it (an operand whose
        first contribution is its user's gradient takes over that variable, as there)."""
        op = graph.op_of(node)
        started = state.started
        if id(node) not in reach or id(node) not in started or op is None:
            return
        writer = self.writer
        lines.append(f"    # {writer.forward_line(node).split('  # ')[0]}")
        gradient = state.variable(id(node))
        for target, code, position in writer.backward_lines(node, gradient):
            if target == -1:
                lines.append(f"    {code}")
                continue
            if checked:
                lines.append(f"    _c = {code}")
                lines.append(f"    if _c != _c: _anomaly({writer.comment(op)!r}, {position})")
                code = "_c"
            elif target in live_ids and target not in returned and graph.op_of(self.by_id[target]) is None:
                self._skipped_reads.update(re.findall(r"\bt\d+\b", code))
                continue
            if (
                not checked
                and code == gradient
                and target not in started
                and target in live_ids
                and id(node) not in state.seeded
                and state.holder.get(gradient, id(node)) == id(node)
            ):
                state.named[target] = gradient
                state.holder[gradient] = target
                started.add(target)
                continue
            lines.append(f"    {state.variable(target)} {'+=' if target in started else '='} {code}")
            started.add(target)

    def _block_lines(
        self, k: int, pattern: tuple[bool, ...], checked: bool, state: _Pass | None
    ) -> tuple[list[str], set[int], set[int]]:
        """One copy's reverse pass, for copies whose operations the pass reaches as ``pattern``
        says: its lines (indented for the loop), the inputs it hands gradient to, and the shared
        values it hands gradient to. Without a pass's ``state``: every contribution, for what
        the lines read."""
        block = self.blocks[k]
        names = self._locals[k]
        outputs = set(block.outputs)
        offset = {id(node): o for o, node in enumerate(self.live[block.start : block.start + block.length])}
        returned = {id(self.live[j]) for j in self.internal_outputs}
        lines: list[str] = []
        inputs: set[int] = set()
        shared: set[int] = set()
        local_started: set[int] = set()
        writer = self.writer
        with self._named(k):
            for o in reversed(range(block.length)):
                if not pattern[o]:
                    continue
                node = self.live[block.start + o]
                op = graph.op_of(node)
                lines.append(f"        # {writer.forward_line(node).split('  # ')[0]}")
                for target, code, position in writer.backward_lines(node, f"g_u{o + 1}"):
                    if target == -1:
                        lines.append(f"        {code}")
                        continue
                    if checked:
                        lines.append(f"        _c = {code}")
                        lines.append(f"        if _c != _c: _anomaly({writer.comment(op)!r}, {position})")  # type: ignore[arg-type]  # an operation
                        code = "_c"
                    if target in offset:
                        t = offset[target]
                        operator = "+=" if t in outputs or t in local_started else "="
                        local_started.add(t)
                        lines.append(f"        g_u{t + 1} {operator} {code}")
                    elif target in block.slot_of:
                        inputs.add(block.slot_of[target])
                        lines.append(f"        g_i{block.slot_of[target]} += {code}")
                    else:
                        skipped = (
                            target in self.place and target not in returned and graph.op_of(self.by_id[target]) is None
                        )
                        if skipped and not checked and state is not None:
                            continue
                        shared.add(target)
                        variable = state.variable(target) if state is not None else f"g_{names[target]}"
                        lines.append(f"        {variable} += {code}")
        return lines, inputs, shared

    def _block_loops(self, k: int, reach: set[int], state: _Pass, checked: bool, lines: list[str]) -> None:
        """A block's copies, last first, one loop per run of copies the pass reaches alike."""
        block = self.blocks[k]
        patterns: list[tuple[bool, ...]] = []
        interned: dict[tuple[bool, ...], tuple[bool, ...]] = {}
        for m in range(block.copies):
            base = block.start + m * block.length
            pattern = tuple(map(reach.__contains__, map(id, self.live[base : base + block.length])))
            patterns.append(interned.setdefault(pattern, pattern))
        m = block.copies
        while m > 0:
            first = m - 1
            while first > 0 and patterns[first - 1] is patterns[m - 1]:
                first -= 1
            pattern = patterns[m - 1]
            if any(pattern):
                self._loop(k, first, m, pattern, state, checked, lines)
            m = first

    def _loop(
        self,
        k: int,
        first: int,
        end: int,
        pattern: tuple[bool, ...],
        state: _Pass,
        checked: bool,
        lines: list[str],
    ) -> None:
        """The reverse pass of copies ``first`` to ``end - 1`` of block ``k``, the last first."""
        block = self.blocks[k]
        started = state.started
        body, inputs, shared = self._block_lines(k, pattern, checked, state)
        copies = list(reversed(range(first, end)))
        for key in sorted(shared, key=lambda key: self.names[key]):
            if key not in started:  # nothing handed it gradient yet: -0.0, which the first addition keeps
                lines.append(f"    {state.variable(key)} = -0.0")
                started.add(key)

        def gradient(node: graph.Node) -> str:
            return state.variable(id(node)) if id(node) in started else "-0.0"

        kept = _tuple(self._block_kept[k]) if self._block_kept[k] else "_"
        whole = first == 0 and end == block.copies
        columns = [f"reversed(_k{k})" if whole else f"reversed(_k{k}[{first}:{end}])"]
        targets = [kept]
        reached = [o for o in block.outputs if pattern[o]]
        for o in reached:
            columns.append(_tuple([gradient(self.live[block.start + m * block.length + o]) for m in copies]))
            targets.append(f"g_u{o + 1}")
        slots = sorted(inputs)
        for s in slots:
            columns.append(_tuple([gradient(block.varying[s][m]) for m in copies]))
            targets.append(f"g_i{s}")
        lines.append(
            f"    # block {k + 1}: copies {end} to {first + 1} of {block.copies}, the last first, as eager's order"
        )
        lines += [f"    _g{k}_{s} = []" for s in slots]
        lines.append(f"    for {', '.join(targets)} in zip({', '.join(columns)}):")
        lines += body or ["        pass"]
        lines += [f"        _g{k}_{s}.append(g_i{s})" for s in slots]
        for s in slots:
            nodes = [block.varying[s][m] for m in copies]
            lines.append(f"    {', '.join(state.variable(id(x)) for x in nodes)}, = _g{k}_{s}")
            started.update(id(x) for x in nodes)


class _Pass:
    """A reverse pass being written: what has gradient so far, and in which variable (its own,
    ``g_t5``, or the one it took over from its user)."""

    def __init__(self, names: dict[int, str], seeded: set[int]) -> None:
        self.names = names
        self.seeded = seeded  # the seeded outputs: their own gradients are returned at the end
        self.started: set[int] = set()
        self.named: dict[int, str] = {}  # id -> the variable holding its gradient, if not its own
        self.holder: dict[str, int] = {}  # variable -> id of the node whose gradient it holds

    def variable(self, key: int) -> str:
        return self.named.get(key) or f"g_{self.names[key]}"


def _tuple(names: Sequence[str]) -> str:
    """A tuple display of ``names`` (one item takes its comma)."""
    return f"({', '.join(names)}{',' if len(names) == 1 else ''})"


def checked_table(table: Any, operations: int) -> tuple[Run, ...]:
    """A stored table of blocks, checked to be runs of three ints in order inside ``operations``
    (a ValueError or TypeError for anything else: the cache then writes the code anew)."""
    runs: list[Run] = []
    at = 0
    for run in table:
        start, length, copies = run
        if not all(type(x) is int for x in run) or start < at or length < SMALLEST or copies < 2:
            raise ValueError(f"a stored block {run!r} is not a run of the recording")
        at = start + length * copies
        if at > operations:
            raise ValueError(f"a stored block {run!r} runs past the recording's {operations} operations")
        runs.append((start, length, copies))
    return tuple(runs)
