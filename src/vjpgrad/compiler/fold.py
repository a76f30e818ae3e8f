"""Repeated blocks of a recorded graph, written once: a ``for`` loop over copies back to back,
a function each copy is sent into where the copies are apart.

A user's program is often a loop: micrograd's demo step runs the model on 100 points, so its
recording holds 100 copies of one block of 640 operations, back to back. microgpt's step runs
the model on each position of a name, and each position reads the earlier ones (attention), so
its copies are apart: between two copies runs code that differs from position to position.
Straight-line code pays for every copy when it is written and when CPython compiles it; this
module finds the copies and writes each block once, as a loop over its copies or as a function
(``_f1``) each copy is sent into, with the code between blocks (the *glue*: the margins, the
sum, the L2 term, the attention of growing length) straight-line as before.

**Finding the copies** (``keys``, ``find_apart``, ``find``). Each operation gets a local key:
its row of the table, the edges the recording made, whether it takes gradient, and per operand
the row of the operation it reads (where that operation is, inside the copy or before it, is
checked later), a placeholder (an argument, or a number: each copy may have its own) or the
parameter's position (a parameter: the copies share it). From each position the next few
occurrences of its key are tried as a second copy and the match extended with slices of the
key list compared in C; large blocks are found first (``find_apart``), then small loops in
what is left (``find``). A candidate is a block (``Block.of``) when every copy is wired inside
as the first and wires the values it reads from before it (arguments, glue, other copies'
outputs) alike; copies apart that differ from some offset on are cut there. A number that
differs between copies (a label) is an input of the block too.

**Eager's bits.** The reverse pass runs the units (glue and copies, contiguous runs of
creation order) in decreasing creation order, the last copy first, each copy's operations in
decreasing order; every parameter's running gradient goes through the units in that order
(a loop's variables, a function's arguments and results, or, for the parameters only one
block's copies read, its function's frame and one list its functions share), and every copy's
inputs and outputs hand their gradients in and out, so every accumulator sees exactly the
additions of the straight-line code, in its order. A copy's output or input that nothing has
handed gradient to yet starts at ``-0.0`` (``-0.0 + c`` is ``c`` to the bit, signed zeros and
nan included), and an operation runs only where the pass reaches it: for each set of seeded
outputs, a loop's copies are grouped by which of their operations the pass reaches, and a
function is written for each such set of its copies'.

**A reverse function keeps one frame.** The function of a block's reverse pass is a generator:
the pass makes it once, with the pass's own frame, which serves call after call
(``write.kept_frame``), and sends each copy's values into it.
CPython 3.11 and later put a call's frame on a stack of chunks, and a frame that does not fit
in what is left of the caller's chunk gets a fresh chunk of its own, mapped from the system,
touched page by page and handed back at the return. A block's reverse frame is large (microgpt's
layer: 5,500 locals and a stack of 2,741 for its results), the reverse pass's own frame leaves
little of its chunk, so a plain call paid a fresh chunk at every copy: resumed, a generator's
frame stays where it is (microgpt's step: 20 such chunks a step before, 4 after). The running
gradients of the parameters only the block reads stay in that frame's locals from one copy to
the next: read from the block's list (``_G1``) when a run of copies begins, written back when
the pass sends ``None``, which it does before another function of the block (another pattern of
reach) takes them on, and at its end. Before, each copy unpacked them from the list and stored
them back (2,049 of them in microgpt's layer). Together, microgpt's reverse pass runs in about a
fifth less time (``python benchmarks/gpt.py --floor``: 4.8-5.4 ms before, 3.8-3.9 after). The
numbers of the parameters the block's reverse reads are every copy's: each call of the pass fills
the block's list with them once (``_P3[:] = (p0, p1, ...)``), which the function reads when a run of
copies begins, and a copy hands it only its own values (2,480 parameters and 262 values of its own
in microgpt's layer, handed at each copy before). The pass sends ``None`` to every function in a run
before it ends, so that each reads the next call's numbers. The forward's blocks are generators too
(``_f1_run.send(...)``), made once with the forward's frame, their parameters' numbers in a list
the call fills, ``None`` sent as the call ends: microgpt's largest has 2,866 locals, and once the
forward's own frame grew (5,668 locals) a plain call of it paid a fresh chunk at each of its 9
copies, and making the generator afresh at each call paid one a call.

Only the recorded graph goes into the code: the names (``u1`` for a block's operations,
``i0`` for its inputs, ``c0`` for its numbers, ``_f1`` and ``_b1_2`` for its functions) are
made here, as ``compiler.write`` makes its own, and numbers are written by
``codegen.symbols.literal``.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import vjpgrad.recording as recording
from vjpgrad.codegen.symbols import literal
from vjpgrad.compiler.write import (
    OUTSIDE,
    VALUES_LINE,
    Edges,
    Program,
    Readers,
    Sums,
    exact,
    kept_frame,
    readers_of,
    row_codes,
    started_from,
    statements_apart,
)
from vjpgrad.core import graph

TRIES = 4
"""How many later occurrences of a key are tried as the start of the next copy."""
SMALLEST = 8
"""The fewest operations a block folds: a loop's bookkeeping for each copy (its inputs, its
outputs, the values its reverse pass reads) costs about what a few straight lines cost."""
SHARE = 0.25
"""The least part of a recording its blocks must hold for it to be written with loops and
functions: a few small blocks in a large program shorten little and cost a search and a slower
replay."""

SMALLEST_CALLED = 128
"""The fewest operations a block whose copies are apart (not back to back) folds into a
function: each copy is a call, whose arguments and results cost about what a few dozen
straight lines cost."""
TRIES_APART = 8
"""How many later occurrences of a key are tried as the start of a copy that is not adjacent."""

Run = tuple[int, int, int]
"""Copies back to back: where the first starts in creation order, their length, their number."""
StoredBlock = tuple[int, tuple[int, ...]]
"""A repeated block as the cache stores it: its length, and where each copy starts."""


def keys(
    live: Sequence[graph.Node],
    externals: Sequence[graph.Node],
    arguments: int,
    constants: dict[int, float],
    edges: Edges,
    returned: set[int],
    place: dict[int, int],
    columns: recording.Columns | None = None,
    readers: Readers | None = None,
) -> tuple[list[int], list[int]]:
    """Each operation's local key as a small int (equal keys, equal ints; a negative key, unique,
    for what never folds: a Value made inside, an operation outside the table, a returned
    output), and the position of each operation's last user (-1 for none). ``place``: each
    operation's position by its id; ``columns``: ``live``'s, as the reading of the recording
    kept them (``recording.Columns``), else read now; ``readers``: their ``readers_of``, if
    counted.

    A key is the operation's row, its edges, whether it takes gradient, and per operand what it
    is: an operation's row (``Block.of`` checks where it is), an argument, a parameter by its
    position, a constant by its bits, or a number (``Block.of`` compares them). A cold start
    pays for it over every node, so it is built a column at a time (``recording.columns_of``),
    each operand made here looked up by its place (``Columns.at``) among the rows, in C; then
    each made elsewhere (``Columns.elsewhere``), one by one, by its id among the arguments,
    parameters and constants; anything else is a number. The operations of many have their
    operands' kinds in their first slot."""
    if columns is None:
        columns = recording.columns_of(live)
    made, operands, at = columns.operations, columns.operands, columns.at
    rows = row_codes(made)  # a byte a node: its row of the table, 0 for a Value made inside
    outside: dict[int, Any] = {id(x): "a" if k < arguments else ("p", k) for k, x in enumerate(externals)}
    outside.update((key, ("c", exact(number))) for key, number in constants.items())
    by_place: dict[int | None, Any] = dict(enumerate(rows))  # a place -1 or None is no key
    row_at = by_place.get
    outside_get, numbers = outside.get, itertools.repeat("n")

    def kinds(places: Sequence[int | None], xs: Sequence[Any], elsewhere: Iterable[int]) -> list[Any]:
        """An operation by its row, an argument, a parameter, a constant, or a number ("n")."""
        found = list(map(row_at, places, numbers))  # a place -1 or None is no row: "n" for now
        for k in elsewhere:  # made elsewhere (at -1): an argument, a parameter, a constant
            found[k] = outside_get(id(xs[k]), "n")
        return found

    both = kinds(at, operands, columns.elsewhere)
    first_kinds, second_kinds = both[0::2], both[1::2]
    for i, places in columns.many_at.items():  # an operation of many: its operands' kinds in its first
        first_kinds[i] = tuple(kinds(places, columns.many[i], [k for k, j in enumerate(places) if j == -1]))
    parts = list(zip(rows, edges.in_order, columns.takes_grad, first_kinds, second_kinds, strict=True))
    number = dict(zip(dict.fromkeys(parts), itertools.count()))
    out = list(map(number.__getitem__, parts))
    for code in (0, OUTSIDE):  # a Value made inside, an operation outside the table
        i = -1
        for _ in range(rows.count(code)):
            i = rows.index(code, i + 1)
            out[i] = -1 - i
    for q in map(place.get, returned):
        if q is not None:
            out[q] = -1 - q
    return out, (readers if readers is not None else readers_of(columns)).last


def _following(key: list[int]) -> list[int]:
    """For each position, the next position with the same key (-1: none, or a key below 0,
    which never repeats)."""
    following = [-1] * len(key)
    latest: dict[int, int] = {}
    for q in range(len(key) - 1, -1, -1):
        x = key[q]
        if x >= 0:
            following[q] = latest.get(x, -1)
            latest[x] = q
    return following


def find(key: list[int]) -> list[Run]:
    """Runs of keys that repeat back to back: from each position, the next few occurrences of its
    key are tried as the start of a second copy, and a match is extended copy by copy (slices of
    the key list compared in C)."""
    n = len(key)
    following = _following(key)
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


def common(key: list[int], a: int, b: int, cap: int) -> int:
    """How many keys from ``a`` equal those from ``b``, at most ``cap``: slices compared in C,
    twice as long each time, then halved at the first mismatch (a short match costs little)."""
    n, step = 0, 4
    while n < cap:
        m = min(step, cap - n)
        if key[a + n : a + n + m] != key[b + n : b + n + m]:
            low, high = n, n + m  # key[a:a + low] matches; the first mismatch is before high
            while high - low > 1:
                middle = (low + high) // 2
                if key[a + low : a + middle] == key[b + low : b + middle]:
                    low = middle
                else:
                    high = middle
            return low
        n += m
        step *= 2
    return cap


def find_apart(key: list[int], smallest: int) -> list[list[int]]:
    """Copies of a block, back to back or apart (each position of a model that reads the
    earlier ones: code runs between them), as lists of where each copy starts, the block's
    length last. From each free position the next few occurrences of its key are tried as a
    second copy (the nearest back to back, else the longest match); later copies are found
    the same way after each copy's end. The block is as long as its shortest match, at
    least ``smallest`` (``Block.of`` may shorten it)."""
    search = _Search(key)
    found: list[list[int]] = []
    i, n = 0, len(key)
    while i < n:
        if search.blocked[i] or key[i] < 0:
            i += 1
            continue
        length, second = search.second(i)
        if length < smallest:
            i += 1
            continue
        starts, length = search.later(i, second, length, smallest)
        found.append([*starts, length])  # the length last: Block.of checks and may shorten it
        search.take(starts, length)
        i += length
    return found


class _Search:
    """What ``find_apart`` knows as it goes: for each position the next with the same key, the
    positions taken by copies found, and where each free stretch ends."""

    def __init__(self, key: list[int]) -> None:
        n = len(key)
        self.key = key
        self.blocked = [False] * n
        self.free_end = [n] * n  # for each position, where its stretch of free positions ends
        self.following = _following(key)

    def second(self, i: int) -> tuple[int, int]:
        """The match's length and start of the best second copy of a block starting at ``i``."""
        following, blocked, free_end = self.following, self.blocked, self.free_end
        j, tries = following[i], TRIES_APART
        best, best_at = 0, -1
        while j >= 0 and tries:
            if not blocked[j]:
                tries -= 1
                length = common(self.key, i, j, min(j - i, free_end[i] - i, free_end[j] - j))
                if length > best:
                    best, best_at = length, j
                    if length == j - i:  # back to back: the nearest such copy is the block
                        break
            j = following[j]
        return best, best_at

    def later(self, i: int, second: int, length: int, smallest: int) -> tuple[list[int], int]:
        """Every copy of the block at ``i`` whose second copy is at ``second``, each found after
        the one before it, about as far from it as that one was from its own; the length all match."""
        following, blocked, free_end = self.following, self.blocked, self.free_end
        starts = [i, second]
        j = following[second]
        while j >= 0 and j <= 2 * starts[-1] - starts[-2] + length:
            if j >= starts[-1] + length and not blocked[j]:
                match = common(self.key, i, j, min(free_end[j] - j, length))
                if match >= smallest:
                    starts.append(j)
                    length = match
            j = following[j]
        return starts, length

    def take(self, starts: list[int], length: int) -> None:
        """The copies at ``starts`` are found: no later match runs into them."""
        blocked, free_end = self.blocked, self.free_end
        for s in starts:
            blocked[s : s + length] = [True] * length
            for q in range(s - 1, -1, -1):  # the free stretch before the copy now ends at it
                if blocked[q] or free_end[q] <= s:
                    break
                free_end[q] = s


class Block:
    """One repeated block, checked to be a loop or a function: what each copy reads from before
    it (its *inputs*: for a loop, a parameter or a value the copies share is read by name and
    the others are the loop's columns; a function takes every value it reads as an argument),
    and which of its values are read after the copy (its *outputs*)."""

    def __init__(
        self,
        starts: list[int],
        length: int,
        varying: list[list[graph.Node]],
        shared: dict[int, graph.Node],
        input_of: dict[int, int],
        outputs: list[int],
        numbers: list[tuple[list[tuple[int, int]], list[Any]]],
    ) -> None:
        self.starts = starts  # where each copy starts, in creation order
        self.length = length
        self.start, self.copies = starts[0], len(starts)
        self.end_of_first = starts[0] + length
        # back to back: one ``for`` loop; apart (code runs between the copies): one function, called per copy
        self.adjacent = all(s == starts[0] + m * length for m, s in enumerate(starts))
        # the numbers that differ between copies: where each is read (offset, operand), and its
        # number in each copy (one input for all the places that read the same numbers)
        self.numbers = numbers
        self.varying = varying  # per input: its node in each copy
        self.shared = shared  # id -> node read by every copy of a loop (a parameter, or a value before the run)
        self.input_of = input_of  # id of the first copy's input node -> its input's position
        self.outputs = outputs  # offsets of the operations read after their copy

    @property
    def stored(self) -> StoredBlock:
        """The block as the cache stores it."""
        return (self.length, tuple(self.starts))

    @classmethod
    def of(
        cls,
        starts: list[int],
        length: int,
        live: Sequence[graph.Node],
        place: dict[int, int],
        external: dict[int, int],
        arguments: int,
        last: list[int],
        shorten: bool = False,
        columns: recording.Columns | None = None,
    ) -> Block | None:
        """The block of copies at ``starts`` if they can be one loop or one function, else None
        (they stay glue). The copies' keys are equal (the same operations, parameters and
        numbers); here each copy is checked to be wired inside as the first, and to read from
        before it alike. ``shorten``: a block whose copies differ from some offset on is cut
        there (found apart, a match may run on into the code after each copy). ``columns``:
        ``live``'s, if read: the copies are then first compared a column at a time
        (``_wired_alike``)."""
        adjacent = all(s == starts[0] + m * length for m, s in enumerate(starts))
        if columns is not None and _wired_alike(starts, length, columns, external, arguments, adjacent):
            bad = length
        else:
            bad = _first_difference(starts, length, live, place, external, arguments, adjacent)
        if bad < length:
            if not shorten or adjacent or bad < SMALLEST_CALLED:
                return None
            length = bad
        _, reads, constants = _first_copy(starts[0], length, live, place, external, arguments)
        inputs = [_reads_of(live, base, reads) for base in starts]
        if adjacent:
            split = _split_inputs(inputs, len(starts))
            if split is None:
                return None
            varying, shared, input_of = split
        else:  # a function takes each value it reads as an argument, shared or not
            varying = [[nodes[s] for nodes in inputs] for s in range(len(inputs[0]))]
            shared, input_of = {}, {id(x): s for s, x in enumerate(inputs[0])}
        outputs = {o for base in starts for o in range(length) if last[base + o] >= base + length}
        numbers = _numbers(starts, length, live, constants)
        return cls(starts, length, varying, shared, input_of, sorted(outputs), numbers)


def _first_difference(
    starts: list[int],
    length: int,
    live: Sequence[graph.Node],
    place: dict[int, int],
    external: dict[int, int],
    arguments: int,
    adjacent: bool,
) -> int:
    """The first offset at which any copy is wired unlike the first (an operand inside the
    first copy that is not at the same offset in this one, or one read from before the first
    copy that is inside this one, or values read from before wired in another order), or where
    a loop's copy reads an earlier copy's value; ``length`` when there is none. The smallest
    over all the copies: a block cut there is wired alike in every copy. Each copy's wiring is
    a list (``_wiring``), compared with the first's in C."""
    first = starts[0]
    reference = _wiring(live, first, length, place, external, arguments, first)
    differs = len(reference)  # the first operand, counted over the copy's operations, that differs
    for base in starts[1:]:
        wiring = _wiring(live, base, length, place, external, arguments, first if adjacent else base)
        if wiring[:differs] != reference[:differs]:
            differs = next(q for q, (a, b) in enumerate(zip(wiring, reference, strict=True)) if a != b)
    if differs == len(reference):
        return length
    ends = itertools.accumulate(len(graph.operands(node)) for node in live[first : first + length])
    return next(o for o, end in enumerate(ends) if end > differs)


def _wired_alike(
    starts: list[int],
    length: int,
    columns: recording.Columns,
    external: dict[int, int],
    arguments: int,
    adjacent: bool,
) -> bool:
    """Whether every copy is wired as the first (``_first_difference`` finds no difference),
    told from the places of the operands (``Columns.at``), mostly in C. The copies' keys are
    equal, so an operand is a number, a parameter or a constant in every copy or in none (the
    keys compared those), and an operation's in every copy or in none. What is left: an operand
    the first copy makes must be at the same offset in each copy (one slice of places picked
    and shifted, compared in C), and the values a copy reads from before it (arguments, and
    operations before the first copy, or before the copy itself for copies apart) must be
    before it and read in the same pattern (which of them is read again, and where). False
    for a block with an operation of many: ``_first_difference`` decides those."""
    first, at, operands = starts[0], columns.at, columns.operands
    if any(first <= i < first + length for i in columns.many_at):  # the keys: in every copy or in none
        return False
    reference = at[2 * first : 2 * (first + length)]
    inside: list[int] = []  # the slots reading an operation of the copy itself
    before: list[int] = []  # the slots reading an argument, or an operation before the copy
    for i, j in enumerate(reference):
        if j is None:
            continue
        if j >= first:
            inside.append(i)
        elif j >= 0 or external.get(id(operands[2 * first + i]), arguments) < arguments:
            before.append(i)

    def picked(slots: list[Any]) -> tuple[Any, ...]:
        """The places the slots ``inside`` read, in C."""
        return tuple(operator.itemgetter(*inside)(slots)) if len(inside) > 1 else tuple(slots[i] for i in inside)

    offsets = picked(reference)

    def read_before(base: int, slots: list[Any]) -> list[int] | None:
        """Where the copy at ``base`` reads each value from before it (an argument as ``-1 -
        id``), or None where one is not before it."""
        end = first if adjacent else base  # a loop's copy reading an earlier copy differs
        found: list[int] = []
        for i in before:
            j = slots[i]
            if j is None or j >= end:
                return None
            found.append(j if j >= 0 else -1 - id(operands[2 * base + i]))
        return found

    def pattern(values: list[int]) -> list[int]:
        order: dict[int, int] = {}
        return [order.setdefault(v, len(order)) for v in values]

    expected = pattern(read_before(first, reference) or [])
    for base in starts[1:]:
        slots = at[2 * base : 2 * (base + length)]
        if tuple(map(operator.sub, picked(slots), itertools.repeat(base - first))) != offsets:
            return False
        found = read_before(base, slots)
        if found is None or pattern(found) != expected:
            return False
    return True


_EARLIER = "an earlier copy"  # what a loop's copy reads of an earlier copy: never the first copy's wiring


def _wiring(
    live: Sequence[graph.Node],
    base: int,
    length: int,
    place: dict[int, int],
    external: dict[int, int],
    arguments: int,
    inside_from: int,
) -> list[Any]:
    """Per operand of the copy at ``base``: the offset it reads inside the copy, ``-1 - s`` for
    the ``s``-th value the copy reads from before it, None for a parameter or a number (the
    keys compared those), and ``_EARLIER`` for a value between ``inside_from`` and ``base``."""
    place_get, external_get, operands_of = place.get, external.get, graph.operands
    order: dict[int, int] = {}
    out: list[Any] = []
    append = out.append
    for node in live[base : base + length]:
        for x in operands_of(node):
            j = place_get(id(x))
            if j is None:
                k = external_get(id(x))
                if k is None or k >= arguments:
                    append(None)
                    continue
            elif j >= base:
                append(j - base)
                continue
            elif j >= inside_from:
                append(_EARLIER)
                continue
            append(-1 - order.setdefault(id(x), len(order)))
    return out


def _first_copy(
    start: int, length: int, live: Sequence[graph.Node], place: dict[int, int], external: dict[int, int], arguments: int
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]], list[tuple[int, int]]]:
    """What the first copy's operands are: ``(offset, operand, offset read)`` of those inside
    the copy, ``(offset, operand)`` of those read from before the copy (arguments, glue, other
    blocks), and ``(offset, operand)`` of its numbers."""
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


def _reads_of(live: Sequence[graph.Node], base: int, reads: list[tuple[int, int]]) -> list[graph.Node]:
    """The values a copy reads from before it, in the order it first reads them (the copies
    read them alike: ``_first_difference`` checked it)."""
    operands_of = graph.operands
    seen: set[int] = set()
    nodes: list[graph.Node] = []
    for o, n in reads:
        x = operands_of(live[base + o])[n]
        if id(x) not in seen:
            seen.add(id(x))
            nodes.append(x)
    return nodes


def _split_inputs(
    inputs: list[list[graph.Node]], copies: int
) -> tuple[list[list[graph.Node]], dict[int, graph.Node], dict[int, int]] | None:
    """The inputs every copy of a loop shares (read by name) and those each copy has of its
    own (the loop's columns); None for an input two copies share but not all."""
    varying: list[list[graph.Node]] = []
    shared: dict[int, graph.Node] = {}
    input_of: dict[int, int] = {}
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
        input_of[id(column[0])] = len(varying)
        varying.append(column)
    if not seen.isdisjoint(shared):
        return None
    return varying, shared, input_of


def _numbers(
    starts: list[int], length: int, live: Sequence[graph.Node], constants: list[tuple[int, int]]
) -> list[tuple[list[tuple[int, int]], list[Any]]]:
    """The numbers that differ between copies, inputs of the block: where each is read and its
    number in each copy (one input for all the places that read the same numbers)."""
    numbers: list[tuple[list[tuple[int, int]], list[Any]]] = []
    columns: dict[tuple[Any, ...], int] = {}
    for o, n in constants:
        column = [graph.operands(live[base + o])[n] for base in starts]
        bits = tuple(exact(x) for x in column)
        if all(b == bits[0] for b in bits):
            continue
        s = columns.setdefault(bits, len(numbers))
        if s == len(numbers):
            numbers.append(([], column))
        numbers[s][0].append((o, n))
    return numbers


def detect(
    live: Sequence[graph.Node],
    externals: Sequence[graph.Node],
    arguments: int,
    constants: dict[int, float],
    outputs: list[int],
    edges: Edges,
    table: Sequence[StoredBlock] | None = None,
    columns: recording.Columns | None = None,
    readers: Readers | None = None,
) -> tuple[list[Block], dict[int, int]]:
    """The blocks of a recording that fold: those of ``table`` (a stored one, each checked), else
    those found now (copies back to back, then copies apart in what is left); and each
    operation's position by its id. The arguments are ``make_program``'s (``readers``: the
    columns' ``readers_of``, if counted)."""
    returned = {id(live[k]) for k in outputs}
    place = dict(zip(map(id, live), itertools.count()))
    key, last = keys(live, externals, arguments, constants, edges, returned, place, columns, readers)
    external = {id(x): k for k, x in enumerate(externals)}
    blocks: list[Block] = []
    if table is not None:
        for length, given in table:
            starts = list(given)
            first = key[starts[0] : starts[0] + length]
            if any(key[at : at + length] != first for at in starts[1:]):
                raise ValueError(f"a stored block {(length, starts)!r} does not repeat in this recording")
            block = Block.of(starts, length, live, place, external, arguments, last, columns=columns)
            if block is None:
                raise ValueError(f"a stored block {(length, starts)!r} is not a loop in this recording")
            blocks.append(block)
        return blocks, place
    for *starts, length in find_apart(key, SMALLEST_CALLED):  # large blocks first, back to back or apart
        block = Block.of(starts, length, live, place, external, arguments, last, shorten=True, columns=columns)
        if block is not None:
            blocks.append(block)
    rest = list(key)  # then small loops in what is left
    for block in blocks:
        for base in block.starts:
            rest[base : base + block.length] = range(-1 - base, -1 - base - block.length, -1)
    for start, length, copies in find(rest):
        copied = [start + m * length for m in range(copies)]
        block = Block.of(copied, length, live, place, external, arguments, last, columns=columns)
        if block is not None:
            blocks.append(block)
    blocks.sort(key=lambda b: b.start)
    return blocks, place


class CodeTooLargeError(Exception):
    """``make_program`` refused a recording whose code, its repeated blocks written once, would
    hold more operations than the bound it was given: ``recorded`` operations, ``written`` of
    them in the code."""

    def __init__(self, recorded: int, written: int, limit: int) -> None:
        super().__init__(f"{recorded:,} operations recorded, {written:,} in the code (at most {limit:,})")
        self.recorded, self.written, self.limit = recorded, written, limit


def make_program(
    live: Sequence[graph.Node],
    externals: Sequence[graph.Node],
    arguments: int,
    constants: dict[int, float],
    outputs: list[int],
    sources: dict[int, graph.Node],
    edges: Edges,
    table: Sequence[StoredBlock] | None = None,
    columns: recording.Columns | None = None,
    limit: int | None = None,
) -> Program:
    """The writer of a recording's code: its repeated blocks folded into loops and functions
    when it has any (``table``: the blocks a cached payload was written with, else found now;
    ``columns``: ``live``'s columns as the reading of the recording kept them, if it did).
    ``limit``: the most operations the code may hold, each block's counted once (raises
    ``CodeTooLargeError`` past it, before any code is written)."""
    given = (live, externals, arguments, constants, outputs, sources, edges)
    if table is not None and not table:  # loaded code written straight-line: no search
        return Program(*given, columns)
    columns = columns if columns is not None else recording.columns_of(live)  # read once: search and writing
    readers = readers_of(columns)
    blocks, place = detect(*given[:5], edges, table=table, columns=columns, readers=readers)
    if table is None and sum(b.length * b.copies for b in blocks) < SHARE * len(live):
        blocks = []
    written = len(live) - sum(b.length * (b.copies - 1) for b in blocks)
    if limit is not None and written > limit:
        raise CodeTooLargeError(len(live), written, limit)
    if not blocks:
        return Program(*given, columns, readers, place)
    return FoldedProgram(*given, blocks, place, columns, readers)


class FoldedProgram(Program):
    """A ``Program`` whose repeated blocks are written once each, as loops (the module docstring).

    The forward pass hands the reverse pass the values of the glue it reads (``kept``), then,
    for each block, a list of what each copy's reverse pass reads."""

    def __init__(
        self,
        live: Sequence[graph.Node],
        externals: Sequence[graph.Node],
        arguments: int,
        constants: dict[int, float],
        outputs: list[int],
        sources: dict[int, graph.Node],
        edges: Edges,
        blocks: list[Block],
        place: dict[int, int],
        columns: recording.Columns | None = None,
        readers: Readers | None = None,
    ) -> None:
        """``Program``'s arguments, and the blocks ``detect`` found with each operation's position."""
        self._setup(live, externals, arguments, constants, outputs, sources, edges, columns, readers, place)
        self._fold(blocks)

    def _fold(self, blocks: list[Block]) -> None:
        """Write the code of a set-up program (``Program._setup``) with ``blocks`` as loops."""
        self.blocks = blocks
        self.table = tuple(b.stored for b in self.blocks)
        self._parameter_place = {id(x): k for k, x in enumerate(self.externals) if k >= self.arguments}
        self._parameters = [self._parameters_of(b) if not b.adjacent else [] for b in blocks]
        self._owned = self._owners()
        self._functions_written = 0  # the reverse passes' functions, named apart in the namespace they share
        self._full_lines: dict[int, tuple[list[str], set[int], set[int], set[str]]] = {}
        self._returned = {id(self.live[k]) for k in self.internal_outputs}
        self._locals = [self._local_names(b) for b in self.blocks]
        self._block_kept: list[list[str]] = []
        self._block_read: list[list[str]] = []  # the parameters a block's reverse function reads
        block_reads: set[str] = set()
        for k, block in enumerate(self.blocks):  # what a copy's reverse pass reads, every operation reached
            _, _, _, read = self._block_lines(k, (True,) * block.length, False, None)
            self._block_kept.append([name for name in self._copy_names(k) if name in read])
            self._block_read.append([name for name in self._parameters[k] if name in read])
            block_reads |= read  # and the values before a loop that all its copies read, by the program's names
        lines, read = self._backward_lines(self._every, checked=False)
        # a block's operations are read by name only where they are its outputs (the forward unpacks them)
        self._keep(read | block_reads)
        self._every_source = self._joined(lines)
        self.forward_source = self._forward_source()

    def _copy_names(self, k: int) -> list[str]:
        """The names of block ``k``'s code that each copy has its own value of, in the order a
        copy hands them to its reverse pass: its numbers ``c0``..., its inputs ``i0``..., its
        operations ``u1``... (The parameters are every copy's: a loop reads them by the
        program's names, a block's reverse function is handed them once a pass, ``_block_read``.)"""
        block = self.blocks[k]
        names = [f"c{s}" for s in range(len(block.numbers))]
        names += [f"i{s}" for s in sorted(set(block.input_of.values()))]
        return names + [f"u{o}" for o in range(1, block.length + 1)]

    # ---- names -------------------------------------------------------------------------------------

    def _local_names(self, block: Block) -> dict[int, str]:
        """The names the block's code uses, keyed by the first copy's nodes: ``u1``... for its
        operations, ``i0``... for its inputs, the program's names for what every copy shares."""
        names = {id(node): f"u{o}" for o, node in enumerate(self.live[block.start : block.start + block.length], 1)}
        names.update((key, f"i{s}") for key, s in block.input_of.items())
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
        over = []
        if block.varying:
            inputs = _listed([f"i{s}" for s in range(len(block.varying))])
            given = _listed([self.names[id(column[0])] for column in block.varying])
            over.append(f"each reading {inputs} of its own (the first copy's {given})")
        if block.numbers:
            names = _listed([f"c{s}" for s in range(len(block.numbers))])
            given = _listed([literal(column[0]) for _, column in block.numbers])
            over.append(f"{'and ' if over else 'each with '}numbers {names} of its own (the first copy's {given})")
        if block.adjacent:
            first, last = block.start + 1, block.start + block.length * block.copies
            copies = f"{block.copies} copies of {block.length} operations (t{first} to t{last})"
            return f"    # block {k + 1}, written once: {copies}, {' '.join(over) or 'all alike'}"
        where = _listed([f"t{s + 1}" for s in block.starts])
        copies = f"{block.copies} copies of {block.length} operations, apart (from {where})"
        return (
            f"    # block {k + 1}, written once as a function, each copy sent in: {copies}, "
            f"{' '.join(over) or 'all alike'}"
        )

    def units(self) -> list[tuple[int, int, int, int]]:
        """The units of the code in creation order: ``(first, end, block, copy)``, a block of -1
        for glue and a copy of -1 for a loop's copies together."""
        units: list[tuple[int, int, int, int]] = []
        parts = [(b.start, b.start + b.length * b.copies, k, -1) for k, b in enumerate(self.blocks) if b.adjacent]
        parts += [
            (s, s + b.length, k, m) for k, b in enumerate(self.blocks) if not b.adjacent for m, s in enumerate(b.starts)
        ]
        parts.sort()
        at = 0
        for first, end, k, m in parts:
            if at < first:
                units.append((at, first, -1, -1))
            units.append((first, end, k, m))
            at = end
        if at < len(self.live):
            units.append((at, len(self.live), -1, -1))
        return units

    # ---- the forward pass --------------------------------------------------------------------------

    def _forward_source(self) -> str:
        lines = []
        for k, block in enumerate(self.blocks):
            if not block.adjacent:
                lines += self._forward_function(k)
        body = [self._unpack([self.names[id(x)] for x in self.externals], "inputs").rstrip("\n")]
        made = []  # each block's function: one frame for all its copies, made with the pass's frame
        for k, block in enumerate(self.blocks):
            names = self._parameters[k]
            if block.adjacent:
                body += [f"    _P{k} = {_tuple(names)}"] if names else []
                continue
            made += [f"    _P{k} = []"] if names else []
            made.append(f"    _f{k}_run = _f{k}({f'_P{k}' if names else ''}); next(_f{k}_run)")
            body += [f"    _P{k}[:] = {_tuple(names)}"] if names else []  # this call's numbers
            body.append(f"    _k{k} = []")
        kept = {id(node) for node in self.kept}  # the glue's values the reverse pass reads, or the result
        for first, end, k, m in self.units():
            if k < 0:
                glue = self.inlined(first, end, kept)
                body += self.writer.forward_lines(self.live[first:end], glue, "    ")
            elif m < 0:
                body += self._forward_loop(k)
            else:
                body += self._forward_copy(k, m)
        # the call ends: each block's function waits for the next call's numbers
        body += [f"    _f{k}_run.send(None)" for k, block in enumerate(self.blocks) if not block.adjacent]
        values = [self.names[id(node)] for node in self.kept] + [f"_k{k}" for k in range(len(self.blocks))]
        lines += kept_frame("forward", "inputs,", body, _tuple(values), made)
        return "\n".join(line for line in lines if line) + "\n"

    def _forward_copy(self, k: int, m: int) -> list[str]:
        """Copy ``m`` of block ``k`` (whose copies are apart): its inputs and numbers sent into
        the block's function, its outputs and what its reverse pass reads sent back."""
        block = self.blocks[k]
        arguments = [self.names[id(column[m])] for column in block.varying]
        arguments += [literal(column[m]) for _, column in block.numbers]
        outputs = [self.names[id(self.live[block.starts[m] + o])] for o in block.outputs]
        return [f"    {', '.join([*outputs, '_v'])} = _f{k}_run.send({_tuple(arguments)})", f"    _k{k}.append(_v)"]

    def _inlined_in(self, k: int) -> set[int]:
        """The operations of block ``k``'s first copy that its forward code may write into the
        expression that reads them (``Program.inlined``): not its outputs, nor what a copy's
        reverse pass reads (the copies are wired alike, so the first copy says it for all)."""
        block = self.blocks[k]
        first = self.live[block.start : block.end_of_first]
        kept = set(self._block_kept[k])
        named = {id(first[o]) for o in block.outputs}
        named.update(id(node) for o, node in enumerate(first, start=1) if f"u{o}" in kept)
        return self.inlined(block.start, block.end_of_first, named)

    def _forward_function(self, k: int) -> list[str]:
        """The forward pass of block ``k``'s copies, a generator of the parameters the block reads
        (``_P``, unpacked once a pass) into which each copy's inputs and numbers are sent: it
        yields back the copy's outputs, then what its reverse pass reads. One frame serves every
        copy, made with the generator (the module's "A reverse function keeps one frame": a
        block's function has thousands of locals)."""
        block = self.blocks[k]
        arguments = [f"i{s}" for s in range(len(block.varying))] + [f"c{s}" for s in range(len(block.numbers))]
        lines = [self._described(k).lstrip(), f"def _f{k}({'_P' if self._parameters[k] else ''}):"]
        lines += ["    _a = yield", "    while True:  # a call: its numbers of the parameters, then its copies"]
        if self._parameters[k]:
            lines.append(f"        {', '.join(self._parameters[k])}, = _P")
        lines.append("        while _a is not None:")
        if arguments:
            lines.append(f"            {', '.join(arguments)}, = _a")
        with self._named(k):
            first = self.live[block.start : block.end_of_first]
            lines += self.writer.forward_lines(first, self._inlined_in(k), "            ")
        results = [f"u{o + 1}" for o in block.outputs] + [_tuple(self._block_kept[k])]
        lines.append(f"            _a = yield {', '.join(results)}")
        lines.append("        _a = yield  # the call ended (None sent)")
        return [*lines, ""]

    def _owners(self) -> list[set[int]]:
        """For each block, the ids of the parameters that only its copies read (none for a loop):
        their running gradients stay in one list through all its calls (``_G1``), where the
        other parameters' go in and out of each call. A block's copies read the same parameters,
        so its first copy says which; the rest of the recording is walked once."""
        read = [self._parameter_ids(range(b.start, b.end_of_first)) if not b.adjacent else set() for b in self.blocks]
        if not any(read):
            return read
        inside = [False] * len(self.live)
        for block in self.blocks:
            if not block.adjacent:
                for base in block.starts:
                    inside[base : base + block.length] = [True] * block.length
        elsewhere = self._parameter_ids(q for q, folded in enumerate(inside) if not folded)
        owned = []
        for k, ids in enumerate(read):
            others = set().union(*(other for j, other in enumerate(read) if j != k))
            owned.append(ids - elsewhere - others)
        return owned

    def _parameter_ids(self, positions: Iterable[int]) -> set[int]:
        """The ids of the parameters the operations at ``positions`` read."""
        parameters = self._parameter_place
        live, operands_of = self.live, graph.operands
        return {id(x) for q in positions for x in operands_of(live[q]) if id(x) in parameters}

    def _parameters_of(self, block: Block) -> list[str]:
        """The parameters a block reads, by name, in the order of ``externals``."""
        read = self._parameter_ids(range(block.start, block.end_of_first))
        return [self.names[key] for key in sorted(read, key=self._parameter_place.__getitem__)]

    def _forward_loop(self, k: int) -> list[str]:
        """The forward pass of block ``k``'s copies, back to back, as one loop."""
        block = self.blocks[k]
        lines = [self._described(k), f"    _k{k} = []"]
        lines += [f"    _o{k}_{o} = []" for o in block.outputs]
        lines.append(f"    for {self._loop_head(k)}:")
        with self._named(k):
            lines += self.writer.forward_lines(
                self.live[block.start : block.end_of_first], self._inlined_in(k), "        "
            )
        lines.append(f"        _k{k}.append({_tuple(self._block_kept[k])})")
        lines += [f"        _o{k}_{o}.append(u{o + 1})" for o in block.outputs]
        for o in block.outputs:
            names = [self.names[id(self.live[base + o])] for base in block.starts]
            lines.append(f"    {', '.join(names)}, = _o{k}_{o}")
        return lines

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

    def _handed_names(self) -> list[str]:
        """The glue's values the reverse pass reads, then each block's list of what its copies read."""
        return [self.names[id(n)] for n in self.kept] + [f"_k{k}" for k in range(len(self.blocks))]

    def _backward_lines(self, seeded: frozenset[int], checked: bool) -> tuple[list[str], set[str]]:
        """The reverse pass seeded at the outputs ``seeded``, its blocks as loops (``Program``'s)."""
        reach = self.reach_of(seeded)
        live_ids = self.place
        returned = {id(self.live[k]) for k in self.internal_outputs}
        lines = [self._unpack([self.names[id(x)] for x in self.externals], "inputs").rstrip("\n") or "    pass"]
        lines.append(VALUES_LINE)
        state = _Pass(self.names, {id(self.live[self.internal_outputs[i]]) for i in seeded})
        lines += self._starts(seeded, reach, state)
        for first, end, k, m in reversed(self.units()):
            if k < 0:
                for node in reversed(self.live[first:end]):
                    self._glue_lines(node, reach, state, returned, live_ids, checked, lines)
            elif m < 0:
                self._block_loops(k, reach, state, checked, lines)
            else:
                self._call(k, m, reach, state, checked, lines)
        lines += [f"    {line}" for line in state.sums.written()]
        for k in state.held:  # the gradients of the parameters only a block reads, back
            lines += state.hand_back(k)  # from the frame of the block's function that ran last, into its list
        lines += state.close()
        for k, held in state.held.items():
            if held:
                lines.append(f"    {', '.join(state.variable(key) for key in held)}, = _G{k}")
        started = state.started
        results = [f"g_{self.names[id(x)]}" if id(x) in started else "None" for x in self.externals]
        outputs = [f"g_{self.names[id(node)]}" if id(node) in started else "None" for node in self._seeded(seeded)]
        # the functions the calls above run, then the pass
        return state.defined + kept_frame(
            "backward", "seeds, values, inputs, start", lines, f"{_tuple(results)}, {_tuple(outputs)}", state.made
        ), state.reads

    def _seeded(self, seeded: frozenset[int]) -> list[graph.Node]:
        return [self.live[self.internal_outputs[i]] for i in sorted(seeded)]

    def _starts(self, seeded: frozenset[int], reach: set[int], state: _Pass) -> list[str]:
        """An argument's or parameter's gradient goes on from ``start``, then each seeded output's
        gradient takes its seed (``Program``'s ``_ReversePass.starts``)."""
        started = state.started
        lines = [started_from(self.externals, self.names, reach, started)]
        for i, node in zip(sorted(seeded), self._seeded(seeded), strict=True):
            if id(node) in reach:
                gradient = f"g_{self.names[id(node)]}"
                lines.append(
                    f"    {gradient} = seeds[{i}]" if id(node) not in started else f"    {gradient} += seeds[{i}]"
                )
                started.add(id(node))
        return lines

    def _call(self, k: int, m: int, reach: set[int], state: _Pass, checked: bool, lines: list[str]) -> None:
        """The reverse pass of copy ``m`` of block ``k`` (whose copies are apart): a call of the
        block's function for the operations the pass reaches in this copy (``_backward_function``).
        The gradients of the values the copy reads, of its outputs and of the parameters it reads
        go in and come back: the parameters' running gradients are threaded through each call,
        so each sees the additions of the straight-line code in its order. The function is a
        generator (the module's "A reverse function keeps one frame"): made at the first copy the
        pass runs, each copy's values sent in, its results yielded back; the running gradients
        of the parameters only the block reads stay in its frame until ``None`` is sent."""
        block = self.blocks[k]
        base = block.starts[m]
        pattern = tuple(id(node) in reach for node in self.live[base : base + block.length])
        if not any(pattern):
            return
        started = state.started
        lines += [f"    {line}" for line in state.sums.written()]  # the copy reads and writes the glue's sums
        if k not in state.held:  # the first call: the running gradients of the parameters only this block reads
            held = state.held[k] = [key for key in sorted(self._owned[k], key=self.names.__getitem__) if key in reach]
            lines.append(f"    _G{k}[:] = [{', '.join(state.variable(key) for key in held)}]")
            if self._block_read[k]:  # this call's numbers of the parameters the block reads
                lines.append(f"    _P{k}[:] = {_tuple(self._block_read[k])}")
        name, handed_inputs, reached, shared = self._backward_function(k, pattern, state, checked)
        for key in shared:
            if key not in started:  # nothing handed it gradient yet: -0.0, which the first addition keeps
                lines.append(f"    {state.variable(key)} = -0.0")
                started.add(key)

        def gradient(node: graph.Node) -> str:
            return state.variable(id(node)) if id(node) in started else "-0.0"

        nodes = [block.varying[s][m] for s in handed_inputs]
        threaded = [state.variable(key) for key in shared if key not in self._owned[k]]
        arguments = [f"_k{k}[{m}]"] + [gradient(self.live[base + o]) for o in reached]
        arguments += [gradient(x) for x in nodes] + threaded
        lines += state.resume(k, name)
        call = f"{name}_run.send({_tuple(arguments)})"
        lines.append(f"    # block {k + 1}: copy {m + 1} of {block.copies}")
        results = [state.variable(id(x)) for x in nodes] + threaded
        lines.append(f"    {', '.join(results)}, = {call}" if results else f"    {call}")
        started.update(id(x) for x in nodes)

    def _backward_function(
        self, k: int, pattern: tuple[bool, ...], state: _Pass, checked: bool
    ) -> tuple[str, list[int], list[int], list[int]]:
        """The function that runs the reverse pass of a copy of block ``k`` whose operations the
        pass reaches as ``pattern`` says, defined (in ``state.defined``) the first time a copy
        needs it: its name, the inputs and outputs whose gradients it takes, and the values
        (the parameters) whose running gradients it takes and returns. It is a generator of the
        block's list of held gradients (``_G``) and of the numbers of the parameters it reads
        (``_P``, every copy's: unpacked once, as the pass makes it): each copy's own values are
        sent in as a tuple and its results yielded back; a run of copies reads the list once,
        and ``None`` sent writes the list back."""
        known = state.functions.get((k, pattern))
        if known is not None and [state.variable(key) for key in known[3]] == known[4]:
            return known[0], known[1], known[2], known[3]
        block = self.blocks[k]
        body, inputs, found, reads = self._block_lines(k, pattern, checked, state)
        state.reads |= reads
        shared = sorted(found, key=lambda key: self.names[key])
        names = [state.variable(key) for key in shared]
        threaded = [state.variable(key) for key in shared if key not in self._owned[k]]
        held = [state.variable(key) for key in state.held[k]]
        reached = [o for o in block.outputs if pattern[o]]
        handed_inputs = sorted(inputs)
        self._functions_written += 1
        name = f"_b{k}_{self._functions_written}"
        state.functions[(k, pattern)] = (name, handed_inputs, reached, shared, names)
        parameters = ["_v"] + [f"g_u{o + 1}" for o in reached] + [f"g_i{s}" for s in handed_inputs] + threaded
        returned = [f"g_i{s}" for s in handed_inputs] + threaded
        defined = state.defined
        defined.append(f"def {name}(_G, _P):  # copies of block {k + 1}, backward: one frame, each copy sent in")
        defined.append("    _a = yield")
        defined.append("    while True:")
        if self._block_read[k]:  # a run of copies begins: the numbers of the parameters it reads, every copy's
            defined.append(f"        {', '.join(self._block_read[k])}, = _P")
        if held:  # and the parameters' running gradients from the list, into locals
            defined.append(f"        {', '.join(held)}, = _G")
        defined.append("        while _a is not None:")
        defined.append(f"            {', '.join(parameters)}, = _a")
        if self._block_kept[k]:
            defined.append(f"            {', '.join(self._block_kept[k])}, = _v")
        defined += [f"    {line}" for line in body]
        defined.append(f"            _a = yield {_tuple(returned)}" if returned else "            _a = yield")
        if held:  # the run ends (None sent): back to the list, for the block's other function or the pass
            defined.append(f"        _G[:] = {_tuple(held)}")
        defined.append("        _a = yield")
        defined.append("")
        return name, handed_inputs, reached, shared

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
        """One operation of the glue, as ``Program.backward_source`` writes it (contributions
        wait in the glue's sums until read, as there)."""
        op = graph.op_of(node)
        started = state.started
        if id(node) not in reach or id(node) not in started or op is None:
            return
        writer, sums = self.writer, state.sums
        waiting, gradient = sums.read(state.variable(id(node)), id(node) not in state.seeded)
        state.named[id(node)] = gradient
        lines += [f"    {line}" for line in waiting]
        lines.append(f"    # {writer.forward_line(node).split('  # ')[0]}")
        for edge in writer.backward_lines(node, gradient, checked):
            target, code, position, reads, _, alone = edge
            state.reads.update(reads)  # a dropped contribution's too: anomaly mode's pass writes it
            if target < 0:  # PREPARES or PICKS
                lines += [f"    {line}" for line in statements_apart(edge, started, state.variable, sums)]
                continue
            if checked:
                lines.append(f"    _c = {code}")
                lines.append(f"    if _c != _c: _anomaly({writer.anomaly_name(op)!r}, {position})")
                code, alone = "_c", False
            elif target in live_ids and target not in returned and graph.op_of(self.live[live_ids[target]]) is None:
                continue  # a Value made inside and not returned: its gradient goes nowhere
            added = sums.add(state.variable(target), target in started, code, alone, code == gradient)
            lines += [f"    {line}" for line in added]
            started.add(target)

    def _block_lines(
        self, k: int, pattern: tuple[bool, ...], checked: bool, state: _Pass | None
    ) -> tuple[list[str], set[int], set[int], set[str]]:
        """One copy's reverse pass, for copies whose operations the pass reaches as ``pattern``
        says: its lines (indented for the loop), the inputs it hands gradient to, the shared
        values it hands gradient to, and the names of the values its statements read. Without a
        pass's ``state``: every contribution, for what the lines read; those lines serve a pass
        that reaches every operation too, when each shared value's gradient is in its own
        variable and none is a Value made inside (whose gradient a pass drops)."""
        full = self._full_lines.get(k)
        if full is not None and state is not None and not checked and all(pattern):
            lines, inputs, shared, reads = full
            if all(state.variable(key) == f"g_{self.names[key]}" and not self._dropped(key) for key in shared):
                return lines, inputs, shared, reads
        found = self._written_block_lines(k, pattern, checked, state)
        if state is None and all(pattern):
            self._full_lines[k] = found
        return found

    def _dropped(self, key: int) -> bool:
        """Whether a pass drops the gradient of ``key``: a Value made inside, not returned."""
        node = self.node(key)
        return node is not None and graph.op_of(node) is None and key not in self._returned

    def _written_block_lines(
        self, k: int, pattern: tuple[bool, ...], checked: bool, state: _Pass | None
    ) -> tuple[list[str], set[int], set[int], set[str]]:
        block = self.blocks[k]
        names = self._locals[k]
        offset = {id(node): o for o, node in enumerate(self.live[block.start : block.start + block.length])}
        lines: list[str] = []
        inputs: set[int] = set()
        shared: set[int] = set()
        read: set[str] = set()  # by the block's names (``_local_names``)
        local = _Local(set(block.outputs))
        sums = local.sums
        handed: dict[int, str] = {}  # id -> the variable its gradient is in, once started: take's picks
        writer = self.writer
        with self._named(k):
            for o in reversed(range(block.length)):
                if not pattern[o]:
                    continue
                node = self.live[block.start + o]
                op = graph.op_of(node)
                lines += [f"        {line}" for line in local.read(o)]
                lines.append(f"        # {writer.forward_line(node).split('  # ')[0]}")
                gradient = local.variable(o)
                for edge in writer.backward_lines(node, gradient, checked):
                    target, code, position, reads, _, alone = edge
                    read.update(reads)
                    if target < 0:  # PREPARES or PICKS
                        statements = statements_apart(edge, handed, handed.__getitem__, sums)
                        lines += [f"        {line}" for line in statements]
                        continue
                    if checked:
                        lines.append(f"        _c = {code}")
                        lines.append(f"        if _c != _c: _anomaly({writer.anomaly_name(op)!r}, {position})")  # type: ignore[arg-type]  # an operation
                        code, alone = "_c", False
                    if target in offset:
                        added = local.add(offset[target], code, alone, code == gradient)
                        lines += [f"        {line}" for line in added]
                        handed[target] = local.variable(offset[target])
                        continue
                    if target in block.input_of:
                        inputs.add(block.input_of[target])
                        variable = f"g_i{block.input_of[target]}"
                    else:
                        if self._dropped(target) and not checked and state is not None:
                            continue
                        shared.add(target)
                        variable = state.variable(target) if state is not None else f"g_{names[target]}"
                    handed[target] = variable
                    added = sums.add(variable, True, code, alone)  # an input's or shared value's sum goes on
                    lines += [f"        {line}" for line in added]
        lines += [f"        {line}" for line in sums.written()]  # before the copy hands its sums on
        return lines, inputs, shared, read

    def _block_loops(self, k: int, reach: set[int], state: _Pass, checked: bool, lines: list[str]) -> None:
        """A block's copies, last first, one loop per run of copies the pass reaches alike."""
        block = self.blocks[k]
        patterns: list[tuple[bool, ...]] = []
        interned: dict[tuple[bool, ...], tuple[bool, ...]] = {}
        for base in block.starts:
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
        lines += [f"    {line}" for line in state.sums.written()]  # the copies read and write the glue's sums
        body, inputs, shared, reads = self._block_lines(k, pattern, checked, state)
        state.reads |= reads
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
            columns.append(_tuple([gradient(self.live[block.starts[m] + o]) for m in copies]))
            targets.append(f"g_u{o + 1}")
        handed_inputs = sorted(inputs)
        for s in handed_inputs:
            columns.append(_tuple([gradient(block.varying[s][m]) for m in copies]))
            targets.append(f"g_i{s}")
        lines.append(
            f"    # block {k + 1}: copies {end} to {first + 1} of {block.copies}, the last first, as eager's order"
        )
        lines += [f"    _g{k}_{s} = []" for s in handed_inputs]
        lines.append(f"    for {', '.join(targets)} in zip({', '.join(columns)}):")
        lines += body or ["        pass"]
        lines += [f"        _g{k}_{s}.append(g_i{s})" for s in handed_inputs]
        for s in handed_inputs:
            nodes = [block.varying[s][m] for m in copies]
            lines.append(f"    {', '.join(state.variable(id(x)) for x in nodes)}, = _g{k}_{s}")
            started.update(id(x) for x in nodes)


class _Local:
    """The gradients of a block's own operations as one copy's reverse pass is written: which
    have started, their sums (``Sums``: the copy's own, written out before the copy hands its
    sums on), and which variable holds each: its own, or its user's, when that was its one
    contribution (an addition's operands), as in the glue (``FoldedProgram._glue_lines``)."""

    def __init__(self, outputs: set[int]) -> None:
        self.outputs = outputs  # offsets whose gradients come in from outside the copy: they add
        self.started: set[int] = set()
        self.named: dict[int, str] = {}  # offset -> the variable holding its gradient, if not its own
        self.sums = Sums()

    def variable(self, o: int) -> str:
        return self.named.get(o) or f"g_u{o + 1}"

    def read(self, o: int) -> list[str]:
        """The statements that write what waits to be added to operation ``o``'s gradient, read
        as its reverse pass runs (none where the variable of its one contribution holds it)."""
        waiting, self.named[o] = self.sums.read(self.variable(o), o not in self.outputs)
        return waiting

    def add(self, t: int, code: str, alone: bool, name: bool) -> list[str]:
        """The statements, without their indent, that hand ``code`` to operation ``t``
        (``Sums.add``)."""
        started = t in self.outputs or t in self.started
        self.started.add(t)
        return self.sums.add(self.variable(t), started, code, alone, name)


class _Pass:
    """A reverse pass being written: what has gradient so far, and in which variable (its own,
    ``g_t5``, or its user's, when that was its one contribution: ``Sums.read``)."""

    def __init__(self, names: dict[int, str], seeded: set[int]) -> None:
        self.names = names
        self.seeded = seeded  # the seeded outputs: their own gradients are returned at the end
        self.started: set[int] = set()
        self.named: dict[int, str] = {}  # id -> the variable holding its gradient, if not its own
        # the functions of blocks whose copies are apart: by (block, reach), and their lines
        self.functions: dict[tuple[int, tuple[bool, ...]], tuple[str, list[int], list[int], list[int], list[str]]] = {}
        self.defined: list[str] = []
        self.held: dict[int, list[int]] = {}  # block -> the parameters whose gradients its list holds
        self.made: list[str] = []  # the lines that make the functions' frames, once, with the pass's frame
        self.framed: set[str] = set()  # the functions whose frame those lines make
        self.listed: set[int] = set()  # the blocks whose lists (_G, _P) those lines make
        self.open: list[str] = []  # the functions in a run of copies: None is sent to each before the pass ends
        self.holding: dict[int, str] = {}  # block -> its function whose frame holds the running gradients
        self.reads: set[str] = set()  # the names of the values the pass's statements read
        self.sums = Sums()  # the glue's: what waits to be added to each variable, which have had 0.0

    def variable(self, key: int) -> str:
        return self.named.get(key) or f"g_{self.names[key]}"

    def resume(self, k: int, name: str) -> list[str]:
        """The lines that make the frame of ``name``, a reverse function of block ``k``, ready
        for the block's next copy: another function of the block that holds the running
        gradients hands them back to the list first. The frame itself is made once, with the
        pass's own (``made``), handed the block's lists ``_G`` (the running gradients) and
        ``_P`` (the numbers of the parameters it reads), which each call fills."""
        lines = []
        holder = self.holding.get(k)
        if holder is not None and holder != name:
            lines += self.hand_back(k)
        if name not in self.framed:
            if k not in self.listed:
                self.listed.add(k)
                self.made += [f"    _G{k} = []", f"    _P{k} = []"]
            self.framed.add(name)
            self.made.append(f"    {name}_run = {name}(_G{k}, _P{k}); next({name}_run)")
        if name not in self.open:
            self.open.append(name)
        if self.held[k]:
            self.holding[k] = name
        return lines

    def hand_back(self, k: int) -> list[str]:
        """The line that has block ``k``'s function holding its running gradients write them
        back to the block's list (``None`` sent), if one holds them."""
        holder = self.holding.pop(k, None)
        if holder is None:
            return []
        self.open.remove(holder)
        return [f"    {holder}_run.send(None)"]

    def close(self) -> list[str]:
        """The lines that end the run of every function still in one (``None`` sent): at the next
        call each reads that call's numbers of its parameters again."""
        lines = [f"    {name}_run.send(None)" for name in self.open]
        self.open.clear()
        return lines


def _listed(names: Sequence[str]) -> str:
    """Names for a comment: all of a few, else the first three and the last."""
    return ", ".join(names) if len(names) <= 6 else f"{', '.join(names[:3])}, ..., {names[-1]}"


def _tuple(names: Sequence[str]) -> str:
    """A tuple display of ``names`` (one item takes its comma)."""
    return f"({', '.join(names)}{',' if len(names) == 1 else ''})"


def checked_table(table: Any, operations: int) -> tuple[StoredBlock, ...]:
    """A stored table of blocks, checked: each a length and the starts of two copies or more,
    the copies in creation order, apart from each other and from other blocks' copies, inside
    ``operations`` (a ValueError or TypeError for anything else: the cache then writes the
    code anew). ``detect`` then checks each against the recording."""
    blocks: list[StoredBlock] = []
    taken: list[tuple[int, int]] = []
    for stored in table:
        length, given = stored
        starts = tuple(given)
        if type(length) is not int or not all(type(s) is int for s in starts) or len(starts) < 2:
            raise ValueError(f"a stored block {stored!r} is not a block of the recording")
        smallest = SMALLEST if all(s == starts[0] + m * length for m, s in enumerate(starts)) else SMALLEST_CALLED
        if length < smallest or starts[0] < 0:
            raise ValueError(f"a stored block {stored!r} is not a block of the recording")
        if any(b < a + length for a, b in itertools.pairwise(starts)):
            raise ValueError(f"a stored block {stored!r} has copies that overlap or are out of order")
        if starts[-1] + length > operations:
            raise ValueError(f"a stored block {stored!r} runs past the recording's {operations} operations")
        taken += [(s, s + length) for s in starts]
        blocks.append((length, starts))
    taken.sort()
    if any(b[0] < a[1] for a, b in itertools.pairwise(taken)):
        raise ValueError("a stored table has blocks whose copies overlap")
    return tuple(blocks)
