"""The repeated blocks of a recording that array code runs as one operation across their copies.

``vjpgrad.compile``'s folding (``compiler.fold``) finds copies of one block back to back: the
16 neurons of a layer, each ``b + w0 * x0 + w1 * x1 + ...`` on the same inputs with weights of
its own. Array code already runs each operation on a column of samples; a block's copies become
a second axis beside the samples (an array of shape ``(copies, samples)``), so a layer costs one
operation per operation of one neuron instead of one per weight. Each element still sees the
operations of its own copy in their order, so every number is the one eager code gives.

A block is kept only where that holds simply: its copies are back to back, read from before
them the same values (``shared``) or one value each (``varying``), hold no number that differs
between copies, hold only operations of the table with a fixed number of operands, and the
reverse pass reaches the same operations in every copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vjpgrad.compiler import fold
from vjpgrad.compiler.write import Edges
from vjpgrad.core import graph, ops

SMALLEST = 4
"""The fewest operations of a block run across its copies: each copy's inputs are stacked and its
outputs taken out, which costs about what a few operations cost."""
TRIES = 64
"""How many later occurrences of an operation's key are tried as the start of its block's second
copy: a neuron of 16 inputs repeats its first operation's key 16 times inside itself."""
WORK = 64
"""The search's budget, in keys compared and operations checked per operation of the recording:
a recording that repeats one operation many times over (a long chain) offers a candidate at
every position, each as long as the chain, and would otherwise cost its length squared."""


@dataclass
class ArrayBlock:
    """Copies ``copies`` of ``length`` operations from ``start`` (creation order) run as one."""

    start: int
    length: int
    copies: int
    varying: list[list[graph.Node]]  # per input of the block: its node in each copy
    shared: set[int]  # ids of the values every copy reads
    outputs: list[int]  # offsets of the operations read after their copy

    @property
    def end(self) -> int:
        return self.start + self.length * self.copies


def reached(live: Sequence[graph.Node], positions: Sequence[tuple[int, ...]], seeded: Sequence[graph.Node]) -> set[int]:
    """The ids of the operations and Values the reverse pass from ``seeded`` hands gradient to."""
    found = {id(x) for x in seeded if x.requires_grad}
    for node, edges in zip(reversed(live), reversed(positions), strict=True):
        if id(node) in found and edges and graph.op_of(node) is not None:
            operands = graph.operands(node)
            found.update(id(operands[k]) for k in edges)
    return found


def find(
    live: Sequence[graph.Node],
    positions: Sequence[tuple[int, ...]],
    inputs: Sequence[graph.Node],
    outputs: Sequence[graph.Node],
    reach: set[int],
) -> list[ArrayBlock]:
    """The blocks of the recording that array code runs across their copies, in creation order."""
    if len(live) < 2 * SMALLEST:
        return []
    search = _Search(live, positions, inputs, outputs, reach)
    found = []
    i, n = 0, len(live)
    while i < n and search.work <= WORK * n:
        taken = search.at(i)
        if taken is None:
            i += 1
            continue
        found.append(taken)
        i = taken.end
    return found


class _Search:
    """What the search knows: each operation's key (``fold.keys``), where the same key comes next,
    and the work done so far (keys compared and operations checked)."""

    def __init__(
        self,
        live: Sequence[graph.Node],
        positions: Sequence[tuple[int, ...]],
        inputs: Sequence[graph.Node],
        outputs: Sequence[graph.Node],
        reach: set[int],
    ) -> None:
        self.live, self.inputs, self.reach = live, inputs, reach
        self.place = {id(node): k for k, node in enumerate(live)}
        constants = {id(node): graph.number(node) for node in live if graph.op_of(node) is None}
        returned = {id(y) for y in outputs}
        edges = Edges(live, positions, {})
        self.key, self.last = fold.keys(live, inputs, len(inputs), constants, edges, returned, self.place)
        self.external = {id(x): k for k, x in enumerate(inputs)}
        self.following = fold._following(self.key)
        self.work = 0

    def at(self, i: int) -> ArrayBlock | None:
        """The block whose first copy starts at ``i``: the nearest later occurrences of its key
        tried as the start of the second copy, the first that makes a block taken."""
        j, tries = self.following[i], TRIES
        while j >= 0 and tries:
            tries -= 1
            self.work += 1
            block = self._block(i, j - i)
            if block is not None:
                return block
            j = self.following[j]
        return None

    def _block(self, i: int, length: int) -> ArrayBlock | None:
        key, n = self.key, len(self.key)
        j = i + length
        if length < SMALLEST or j + length > n or key[i] != key[j] or key[i:j] != key[j : j + length]:
            return None
        copies = 2
        while i + (copies + 1) * length <= n and key[i + copies * length : i + (copies + 1) * length] == key[i:j]:
            copies += 1
        self.work += 2 * copies * length
        starts = [i + m * length for m in range(copies)]
        block = fold.Block.of(starts, length, self.live, self.place, self.external, len(self.inputs), self.last)
        if block is None or block.numbers or not _simple(self.live, starts, length, self.reach):
            return None
        return ArrayBlock(i, length, copies, block.varying, set(block.shared), block.outputs)


def _simple(live: Sequence[graph.Node], starts: list[int], length: int, reach: set[int]) -> bool:
    """Operations of the table with fixed operands, and the same operations reached in every copy."""
    for node in live[starts[0] : starts[0] + length]:
        op = graph.op_of(node)
        if op is None or op not in ops.BUILTIN or op.nary:
            return False
    pattern = [id(node) in reach for node in live[starts[0] : starts[0] + length]]
    return all([id(node) in reach for node in live[s : s + length]] == pattern for s in starts[1:])
