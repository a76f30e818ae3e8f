"""PyTorch's operations replayed as Values, one node per element.

Each tensor the learner's code makes is kept as an ``Entry``: its elements in row-major order,
each a ``Value`` (an element that takes gradient) or a float (a constant). An operation's
result gets PyTorch's own numbers (its vectorised ``exp`` and ``tanh`` differ from the C
library's by an ulp or two), and each edge saves what PyTorch's backward formula
(``tools/autograd/derivatives.yaml``) multiplies or divides the incoming gradient by,
computed by PyTorch itself on the whole tensor, so that the last step, ``g * saved`` in the
engine, rounds as PyTorch's kernel does. For a float32 tensor the saved numbers are
``Single``: the engine's products and sums then round to float32 after every operation.

Where PyTorch's backward sums inside one operation (a broadcast operand, ``expand``, the
rows of ``mm``), the operand gets a node of its own per element, an ``expand`` node, that adds
the contributions in the order PyTorch's kernel adds them before passing one sum on, as
PyTorch's engine passes one gradient per operation. Views and copies are a node per element
too, so a view's gradient is summed on its own first, as PyTorch's ``ViewBackward`` does.
The outputs of an operation are made last element first, so that the reverse pass (which
runs the latest node first) visits them in row-major order.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import itertools
import math
import platform
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from vjpgrad.bridge.single import Fused, Single, fused, in_dtype, round32
from vjpgrad.core import graph
from vjpgrad.core.ops import MASKED, Op, divided, times
from vjpgrad.core.value import Value
from vjpgrad.display.explain import Arguments

Item = Value | float
"""One element of a replayed tensor: a Value when it takes gradient, else its number."""


class NotReplayableError(Exception):
    """An operation the replay cannot reproduce exactly; the message names it."""


@dataclass
class Entry:
    """A tensor of the learner's code, as the replay holds it."""

    tensor: torch.Tensor  # kept alive, so that its id names it as long as the watch runs
    items: list[Item]
    single: bool  # float32 (else float64, or a type the replay does not differentiate)
    fingerprint: bytes  # its numbers when last seen, to notice a change the watch did not see
    leaf: bool = False
    poisoned: str | None = None  # why a pass through this tensor cannot be replayed
    notes: frozenset[str] = field(default_factory=frozenset)  # known reasons its gradients may differ
    seen_at: str = ""  # a leaf's: the learner's file:line where the watch first saw it read
    changed_unseen: bool = False  # a leaf's generation made for numbers that changed by no operation the watch saw
    large: str | None = None  # constants too many to hold (a dataset): why a pass that reads them is not replayed
    version: int = -1  # the tensor's version counter when the watch made this entry (views share their base's)

    @property
    def takes_gradient(self) -> bool:
        return any(isinstance(x, Value) for x in self.items)


def numbers_of(t: torch.Tensor) -> list[float]:
    """A tensor's elements in row-major order, as Python floats (exact for float32 and float64); a
    sparse tensor's too (an embedding's ``sparse=True`` gradient, and an optimizer's step with it)."""
    dense = t.detach() if t.layout == torch.strided else t.detach().to_dense()
    flat: list[float] = dense.reshape(-1).tolist()
    return flat


def fingerprint(t: torch.Tensor, numbers: Sequence[float]) -> bytes:
    """The bits of ``numbers``, ``t``'s (nan compares equal to itself here, unlike ``==``), and its
    type: ``model.double()`` keeps a parameter and its numbers and changes only its type, which
    the replay must then follow."""
    return array("d", numbers).tobytes() + str(t.dtype).encode()


def is_single(t: torch.Tensor) -> bool:
    return bool(t.dtype == torch.float32)


DIFFERENTIABLE = (torch.float32, torch.float64)


def unfollowed_type(t: torch.Tensor, where: str) -> str | None:
    """Why a tensor that takes gradient cannot be replayed, when its type is one PyTorch takes
    gradient through and the replay does not follow (float16, bfloat16, complex); None for
    float32, float64 and the types no gradient goes through (integers, bool)."""
    if t.dtype in DIFFERENTIABLE or not (t.dtype.is_floating_point or t.dtype.is_complex):
        return None
    return f"a {t.dtype} tensor {where}, which takes gradient: the replay follows float32 and float64 only"


# ---- the operations' faces in the engine ---------------------------------------------------------


def _unused(*_: Any) -> Any:
    raise NotImplementedError("a replayed node has PyTorch's number; it is never computed again")


MASKING = {
    "relu",
    "mm",
    "bmm",
    "addmm",
    "mv",
    "threshold",
    "hardswish",
    "hardsigmoid",
    "logit",
    "clamp",
    "where",
    "pow",
    "max",
    "min",
    "amax",
    "amin",
    "masked_fill",
    "tril",
    "triu",
    "hardtanh",
    "maximum",
    "minimum",
}
"""The operations whose edges may be MASKED (exactly 0.0 whatever the incoming gradient)."""


@functools.cache
def engine_op(name: str, arity: int, gradients: tuple[Callable[..., Any], ...], symbol: str = "") -> Op:
    """The engine's operation for a replayed PyTorch operation: its name as PyTorch writes it and
    one gradient per operand (one for all, for an operation of many operands)."""
    saved = tuple(_unused for _ in gradients)
    masking = name in MASKING or arity == 0  # (an operation of many operands is never multiplied inline)
    return Op(name, arity, _unused, saved, gradients, "", doc=f"PyTorch's {name}", symbol=symbol, maskable=masking)


def onto(g: Any, zero: Any) -> Any:
    """``zero + g``: a gradient added onto a tensor's +0.0 (``from_zeros``)."""
    return zero + g


def onto_widened(g: Any, zero: Any) -> Any:
    """``zero + g`` in float32, then that sum as a float64 number (exact): a float32 gradient handed
    to a float64 operand, as PyTorch's engine turns a gradient into its operand's type."""
    return float(zero + g)


def from_zeros(call: Call, x: Value, single: bool, widened: bool = False) -> Value:
    """The "into zeros" node in front of ``x``: what reaches it is added onto +0.0, as a PyTorch
    backward that sums into a tensor of zeros adds it (a sum of -0.0 alone becomes 0.0).
    ``widened``: the sum is a float32 one handed to ``x``, a float64 operand."""
    op = engine_op("into zeros", 1, (onto_widened if widened else onto,))
    node = graph.make(Value, x.data, op, x, in_dtype(0.0, single or widened), None, None)
    call.described.append((node, x, "{} from zeros"))
    return node


def in_turn(g: Any, first: Any, then: Any) -> Any:
    """``(g * first) * then``: a backward formula of two factors, multiplied in PyTorch's order
    (``sigmoid_backward``'s ``(g * (1 - y)) * y``, ``exp2``'s ``(grad * result) * ln 2``)."""
    return (g * first) * then


SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rsub": "-"}
X86_64 = ("x86_64", "amd64")
"""``platform.machine()`` of an x86-64 processor, lowercased."""


def expanded_text(n: int) -> str:
    """The name of an ``expand`` node that adds ``n`` contributions, ``{}`` standing for the
    element's own name (``Call.described``)."""
    return f"{{}} expanded ×{n}: PyTorch adds these {n} in this order"


def expand_nodes(call: Call, items: Sequence[Item], uses: Sequence[int], single: bool) -> list[Item]:
    """``items`` with each Value that ``uses`` lists more than once standing behind an ``expand``
    node: the node where that element's contributions are added up, in turn, before reaching it."""
    counts = Counter(uses)
    call.sums_over = max(call.sums_over, max(counts.values(), default=0))
    out = list(items)
    one = in_dtype(1.0, single)
    op = engine_op("expand", 1, (times,))
    for i, n in counts.items():
        x = items[i]
        if n > 1 and isinstance(x, Value):
            out[i] = node = graph.make(Value, x.data, op, x, one, None, None)
            call.described.append((node, x, expanded_text(n)))
    return out


Tree = list[Any]
"""An accumulator of PyTorch's sum kernel: the positions (ints) it adds, in order, then the
accumulators (Trees) it adds after them."""


def _vector_width(single: bool) -> int:
    """The lanes of the vectors PyTorch's CPU kernels compute with (its ``Vectorized``): 512 bits
    where it runs its AVX-512 kernels, 256 bits elsewhere on x86-64 (AVX2, and its default
    kernels), 128 bits on other processors (aarch64's NEON)."""
    capability = torch.backends.cpu.get_cpu_capability()
    bits = 512 if "512" in capability else 256 if platform.machine().lower() in X86_64 else 128
    return bits // (32 if single else 64)


def _avx2_width(single: bool) -> int:
    """The lanes of the vectors of a CPU kernel registered without its AVX-512 build
    (``REGISTER_DISPATCH``, not ``ALSO_REGISTER_AVX512_DISPATCH``): an AVX-512 processor runs its
    AVX2 build, 256 bits. So do sum (``_sum_width``), layer_norm's and batch_norm's kernels
    (measured with torch 2.13.0: their gradients' bits the same with and without
    ``ATEN_CPU_CAPABILITY=avx2``, float32 and float64, rows of 7 to 130)."""
    return min(_vector_width(single), 256 // (32 if single else 64))


def _avx2_build_runs() -> bool:
    """Whether a kernel registered without its AVX-512 build runs the AVX2 build measured here: on
    x86-64 where PyTorch runs its AVX2 or AVX-512 kernels (``_avx2_width``)."""
    return torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512") and platform.machine().lower() in X86_64


def _sum_width(single: bool) -> int:
    """The lanes of the vectors PyTorch's CPU sum kernel adds with. ``sum_stub`` is registered
    without its AVX-512 kernel (SumKernel.cpp finds it slower there), so an AVX-512 processor runs
    the AVX2 kernel (``_avx2_width``): measured with torch 2.13.0 against every length from 2 to
    129, float32 and float64."""
    return _avx2_width(single)


def _row_sum(units: list[Any]) -> Tree:
    """PyTorch's ``row_sum`` (SumKernel.cpp) over ``units`` (positions or vectors' lanes), four
    accumulators side by side; its cascade of levels starts past 64 units, which the caller notes."""
    rows = len(units) // 4
    accumulators: list[Tree] = [[units[r * 4 + k] for r in range(rows)] for k in range(4)]
    accumulators[0] += units[rows * 4 :]
    return [*accumulators[0], *accumulators[1:]]


def sum_tree(n: int, single: bool) -> Tree:
    """The order in which PyTorch's CPU kernel adds ``n`` contiguous numbers (an inner reduction):
    ``vectorized_inner_sum`` from one vector's width up (each lane summed by ``row_sum``, then the
    tail, then the lanes in turn), ``row_sum`` of the numbers below it."""
    width = _sum_width(single)
    if n < width:
        return _flatten(_row_sum([*range(n)]))
    vectors = n // width
    lanes = [_flatten(_row_sum([v * width + lane for v in range(vectors)])) for lane in range(width)]
    return [*range(vectors * width, n), *lanes]


def _cascade(units: list[Any]) -> Tree:
    """PyTorch's ``multi_row_sum`` (SumKernel.cpp) of one accumulator over ``units``: blocks of 16
    added in turn from zero, each block's sum added into a second level, a second level's sum into
    a third every 256 units, a third's into a fourth every 4,096; the units past the last block
    from zero, then the levels onto them (below 2**16 units, where a level is 16)."""
    levels: list[Tree] = [[], [], [], []]
    i = 0
    while i + 16 <= len(units):
        levels[0] = units[i : i + 16]
        i += 16
        for j in range(1, 4):
            levels[j].append(levels[j - 1])  # acc[j] += acc[j - 1]; acc[j - 1] = 0
            levels[j - 1] = []
            if i & (15 << (4 * j)):
                break
    return [*levels[0], *units[i:], *(level for level in levels[1:] if level)]


def outer_tree(where: Sequence[int], total: int, single: bool) -> Tree | None:
    """The order in which PyTorch's CPU kernel adds the places ``where`` of one element down the
    rows of a row-major gradient (an outer reduction: a row of ``step`` columns kept, the rows
    summed), or None where it is not one (places not evenly spaced; a gradient of
    ``at::internal::GRAIN_SIZE`` numbers or more, which several threads may sum in parts; 64 rows
    or more for a column ``row_sum`` adds, whose cascade the tree cannot hold).

    ``vectorized_outer_sum`` from one vector's width of columns up, ``scalar_outer_sum`` below it:
    the columns in blocks of four (four vectors wide, or four numbers) each add the rows in turn,
    in ``multi_row_sum``'s cascade (``_cascade``); every column after the last block adds them with
    ``row_sum``'s four accumulators side by side (``_row_sum``)."""
    step = where[1] - where[0]
    if step < 2 or any(b - a != step for a, b in itertools.pairwise(where)):
        return None
    if total >= PARALLEL_ACCUMULATION and torch.get_num_threads() > 1:
        return None
    rows, column = len(where), where[0] % step
    width = _sum_width(single)
    block = 4 * width if step >= width else 4
    if column < step // block * block:
        return _cascade([*range(rows)])
    return _flatten(_row_sum([*range(rows)])) if rows < 64 else None


def _flatten(tree: Tree) -> Tree:
    """A tree whose sub-accumulators hold nothing but positions ahead of ones that hold more."""
    return [x if isinstance(x, int) else _flatten(x) for x in tree]


def expanded(
    call: Call,
    items: Sequence[Item],
    uses: Sequence[int],
    single: bool,
    summed_to_size: bool = False,
    summed_single: bool | None = None,
) -> list[Item]:
    """The operand of each position of a broadcast or a copy (``uses[p]``: the element it reads):
    an element read at several positions stands behind ``expand`` nodes that add the positions'
    contributions as PyTorch's sum kernel adds them: ``sum_tree`` for contiguous positions; for
    a broadcast or an ``expand`` (``summed_to_size``: its backward is one ``sum_to_size``),
    ``outer_tree`` for positions evenly spaced down the rows; in turn otherwise. Each is the
    kernel's order for a gradient laid out row-major, and every sum is noted as one in an order the
    replay may not follow: the gradient reaching it may be laid out otherwise (the result used
    transposed), a long sum's cascade is not all followed, and a copy such as ``repeat`` sums one
    dimension at a time. ``sum_to_size`` sums from +0.0 (a sum of -0.0 alone is 0.0): there each
    element the result reads stands behind an "into zeros" node (``from_zeros``).

    ``summed_single``: the type the sum is made in, the result's, when it is not the operand's (a
    float32 operand broadcast into a float64 result: summed in float64, then rounded once to
    float32 by the operand's "into zeros" node; a 0-d float64 operand of a float32 result, which
    type promotion leaves float32: summed in float32, then handed on as a float64 number)."""
    if summed_single is None:
        summed_single = single
    positions: dict[int, list[int]] = {}
    for p, i in enumerate(uses):
        positions.setdefault(i, []).append(p)
    out: list[Item] = [items[i] for i in uses]
    op = engine_op("expand", 1, (times,))
    one = in_dtype(1.0, summed_single)
    for i, where in positions.items():
        x = items[i]
        n = len(where)
        if not isinstance(x, Value) or (n < 2 and not summed_to_size):
            continue
        start: Value = x
        if summed_to_size:  # sum_to_size adds from +0.0
            start = from_zeros(call, x, single, widened=summed_single and not single)
            if n == 1:
                out[where[0]] = start
                continue
        contiguous = where[-1] - where[0] == n - 1
        outer = outer_tree(where, len(uses), summed_single) if summed_to_size and not contiguous else None
        tree: Tree = sum_tree(n, summed_single) if contiguous else outer if outer is not None else list(range(n))
        call.sums_over = max(call.sums_over, n)  # the layout of the gradient reaching it is not known

        def build(
            parent: Value, tree: Tree, part: str = "", x: Value = x, where: list[int] = where, n: int = n
        ) -> None:
            node = graph.make(Value, x.data, op, parent, one, None, None)
            text = expanded_text(n) if not part else f"{{}} expanded ×{n}, partial sum {part}"
            call.described.append((node, x, text))  # each accumulator of the kernel a name of its own
            for k in tree:
                if isinstance(k, int):
                    out[where[k]] = node
            subs = [k for k in tree if not isinstance(k, int)]
            for number, sub in reversed(list(enumerate(subs, start=1))):
                build(node, sub, f"{part}.{number}" if part else str(number), x, where, n)

        build(start, tree)
    return out


PARALLEL_ACCUMULATION = 32_768
"""``at::internal::GRAIN_SIZE``: from this many numbers on, PyTorch may split a kernel's work
between threads. ``index_put_`` with ``accumulate=True`` then adds float32 numbers on several
threads at once, in an order that changes from run to run, and a sum's parts may be added apart."""


def accumulated(
    call: Call, items: Sequence[Item], uses: Sequence[int | None], single: bool, layout_free: bool
) -> list[Item]:
    """The operand of each place of the result of a copy whose backward adds the places'
    gradients, one after another, into a tensor of zeros (``index_put_`` with ``accumulate=True``,
    ``embedding_dense_backward``): ``uses[p]`` is the element place ``p`` reads, None for a place
    that hands nothing back (embedding's ``padding_idx``). Every element read stands behind a node
    that adds onto +0.0 what reaches it ("into zeros": a first addition onto zeros turns -0.0 into
    0.0), and one read at several places behind an ``expand`` node that adds them in turn, in the
    places' row-major order.

    That is PyTorch's order when the gradient reaching the operation is laid out row-major, as
    ``embedding`` makes it first (``layout_free``). Indexing adds in the order of the gradient's
    memory, another order when the result is used transposed and one element's places differ in
    two dimensions or more; and from ``PARALLEL_ACCUMULATION`` places on, in float32, in no fixed
    order: the call then notes a sum in an order the replay may not follow (``sums_over``)."""
    positions: dict[int, list[int]] = {}
    for p, i in enumerate(uses):
        if i is not None:
            positions.setdefault(i, []).append(p)
    out: list[Item] = [0.0 if i is None else items[i] for i in uses]  # a place that reads nothing: a constant
    expand = engine_op("expand", 1, (times,))
    one = in_dtype(1.0, single)
    shape = tuple(call.out.shape)
    threads = single and len(uses) >= PARALLEL_ACCUMULATION and torch.get_num_threads() > 1
    for i, where in positions.items():
        x = items[i]
        if not isinstance(x, Value):
            continue
        node = from_zeros(call, x, single)
        n = len(where)
        if n > 1:
            node = graph.make(Value, x.data, expand, node, one, None, None)
            call.described.append((node, x, expanded_text(n)))
            if threads or not (layout_free or _one_line(where, shape)):
                call.sums_over = max(call.sums_over, n)
        for p in where:
            out[p] = node
    return out


def _one_line(places: list[int], shape: tuple[int, ...]) -> bool:
    """Whether the row-major ``places`` of a result of ``shape`` differ in one dimension at most:
    then any layout of the result walks them in the same order."""
    differing = 0
    for dim, size in enumerate(shape):
        inner = math.prod(shape[dim + 1 :])  # the places one step along this dimension apart
        differing += len({(p // inner) % size for p in places}) > 1
    return differing <= 1


def make_outputs(
    name: str,
    data: Sequence[float],
    operands: Sequence[Sequence[Item]],
    saved: Sequence[Sequence[Any] | None],
    gradients: Sequence[Callable[..., Any]],
    *,
    many: bool = False,
) -> list[Item]:
    """The nodes of one operation's result, element ``p`` with operands ``operands[k][p]`` and saved
    values ``saved[k][p]``; made last element first (see the module docstring).

    ``many``: one node of many operands per element (``operands[p]`` and ``saved[p]`` are its lists)."""
    n = len(data)
    out: list[Item] = [0.0] * n
    if many:
        op = engine_op(name, 0, (gradients[0],))
        for p in reversed(range(n)):
            xs = operands[p]
            kept = tuple(s if isinstance(x, Value) else None for x, s in zip(xs, saved[p] or (), strict=True))
            if any(s is not None for s in kept):
                out[p] = graph.make(Value, data[p], op, tuple(xs), kept, None, None)
            else:
                out[p] = data[p]
        return out
    arity = len(operands)
    op = engine_op(name, arity, tuple(gradients), SYMBOLS.get(name, "") if arity == 2 else "")
    if arity == 1:
        (xs,), (ss,) = operands, saved
        assert ss is not None  # an operation of one operand that takes gradient saves for it
        for p in reversed(range(n)):
            x = xs[p]
            out[p] = graph.make(Value, data[p], op, x, ss[p], None, None) if isinstance(x, Value) else data[p]
        return out
    xs, ys = operands
    sx, sy = saved
    for p in reversed(range(n)):
        x, y = xs[p], ys[p]
        dx = sx[p] if isinstance(x, Value) and sx is not None else None
        dy = sy[p] if isinstance(y, Value) and sy is not None else None
        out[p] = data[p] if dx is None and dy is None else graph.make(Value, data[p], op, x, dx, y, dy)
    return out


# ---- a call, as the rules see it -----------------------------------------------------------------


@dataclass
class Call:
    """One PyTorch operation: its name (``mul.Tensor``), its arguments as they were before it ran
    (a tensor it changed in place is a copy of what it held), its tensor arguments' entries by
    id, and its result(s)."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    entries: dict[int, Entry]
    outputs: list[torch.Tensor]
    sums_over: int = 0  # the most contributions one expand node adds up
    # the nodes that stand for no tensor (expand nodes, a softmax's sums): how to name each once the
    # tensors are named, as (node, the element it is made from or None, a text whose {} is that name)
    described: list[tuple[Value, Value | None, str]] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)  # known reasons its gradients may differ from PyTorch's
    # a node with edges held for the bits alone from an operand on (``_zero_edges``): (node, that position),
    # left out of an explanation, since the node does not depend on what they reach
    onto_zero: list[tuple[Value, int]] = field(default_factory=list)
    # what a node's formula shows beside its operands (``explain.Arguments``): where's condition, clamp's bounds
    arguments: list[tuple[Value, Arguments]] = field(default_factory=list)

    def entry(self, t: torch.Tensor) -> Entry:
        return self.entries[id(t)]

    @property
    def out(self) -> torch.Tensor:
        return self.outputs[0]

    @property
    def single(self) -> bool:
        return is_single(self.out)


Rule = Callable[[Call], list[list[Item]]]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def register(function: Rule) -> Rule:
        for name in names:
            RULES[name] = function
        return function

    return register


def broadcast_column(call: Call, x: Any, wide: bool = False) -> tuple[list[Item], bool]:
    """Operand ``x`` element by element, one per element of the result (a number: itself); and
    whether it is a tensor that takes gradient. ``wide``: its edge computes in float64 in a
    float32 result (``_widened_edge``), so a broadcast operand's gradient is summed in float64."""
    out = call.out
    n = out.numel()
    if not isinstance(x, torch.Tensor):
        return [float(x)] * n, False
    entry = call.entry(x)
    if tuple(x.shape) == tuple(out.shape):
        return entry.items, entry.takes_gradient
    uses = numbers_of_index(torch.arange(x.numel()).reshape(x.shape).broadcast_to(out.shape))
    # summed in the result's type (a float32 operand of a float64 result, a 0-d float64 one of a
    # float32 result), then turned into the operand's
    made = expanded(call, entry.items, uses, entry.single, summed_to_size=True, summed_single=call.single and not wide)
    return made, entry.takes_gradient


def numbers_of_index(t: torch.Tensor) -> list[int]:
    flat: list[int] = t.reshape(-1).tolist()
    return flat


def column(call: Call, saved: Any) -> list[Any]:
    """What an edge saves, one per element of the result, in the result's type: a tensor computed
    by PyTorch (broadcast to the result), a number, or MASKED where a boolean mask is True."""
    out = call.out
    single = call.single
    if isinstance(saved, torch.Tensor):
        numbers = numbers_of(saved.broadcast_to(out.shape).to(out.dtype))
        return [in_dtype(v, single) for v in numbers]
    return [in_dtype(float(saved), single)] * out.numel()


def masked(call: Call, mask: torch.Tensor, saved: Any) -> list[Any]:
    """``saved``'s column with MASKED (a contribution of exactly 0.0) where ``mask`` is True."""
    values = column(call, saved)
    flags = numbers_of_index(mask.broadcast_to(call.out.shape).to(torch.int64))
    return [MASKED if f else v for v, f in zip(values, flags, strict=True)]


def elementwise(
    call: Call, name: str, operands: Sequence[Any], edges: Sequence[tuple[Any, Callable[..., Any]]]
) -> list[list[Item]]:
    """An element-wise operation of one or two operands (tensors or numbers, broadcast): each
    operand's edge saves ``edges[k][0]`` (a column, see ``column``) and has gradient ``edges[k][1]``."""
    columns = []
    saved: list[Sequence[Any] | None] = []
    gradients = []
    for x, (s, gradient) in zip(operands, edges, strict=True):
        wide = _widened_edge(call, x, s)
        items, takes = broadcast_column(call, x, wide)
        columns.append(items)
        if wide:  # in float64, the saved numbers as they are, then the operand's type (a broadcast one's: summed first)
            saved.append(numbers_of(s.broadcast_to(call.out.shape).to(torch.float64)) if takes else None)
            gradients.append(_in_float64(gradient, is_single(x) and tuple(x.shape) == tuple(call.out.shape)))
            continue
        saved.append((s if isinstance(s, list) else column(call, s)) if takes else None)
        gradients.append(_then_float32(gradient) if _promoted(x, call.out) else gradient)
    return [make_outputs(name, numbers_of(call.out), columns, saved, gradients)]


def _widened_edge(call: Call, x: Any, saved: Any) -> bool:
    """Whether an edge of a float32 result (an in-place operation's: ``z.mul_(y)``, ``z`` float32,
    ``y`` float64) computes in float64: its formula reads a float64 tensor that takes part in the
    type (not a 0-d one beside a tensor of dimensions), so PyTorch computes ``g * y`` in float64
    (and sums a broadcast operand's gradient back in float64)."""
    if not (call.single and isinstance(saved, torch.Tensor) and isinstance(x, torch.Tensor)):
        return False
    return bool(torch.result_type(call.out, saved) == torch.float64)


@functools.cache
def _in_float64(gradient: Callable[..., Any], single: bool) -> Callable[..., Any]:
    """``gradient`` of a float32 result's gradient computed in float64 (the float32 number read
    as it is), then in the operand's type: rounded once to float32 for a float32 operand."""

    def widened(g: Any, *saved: Any) -> Any:
        found = float(gradient(float(g), *saved))
        return in_dtype(round32(found), True) if single else found

    return widened


def _promoted(x: Any, out: torch.Tensor) -> bool:
    """Whether ``x`` is a float32 operand, of the result's shape, of a float64 result (type
    promotion: ``h * b`` with ``b`` float64). A broadcast one's gradient is summed, and rounded
    to float32 once, by the nodes ``expanded`` puts in front of it."""
    return isinstance(x, torch.Tensor) and is_single(x) and out.dtype == torch.float64 and x.shape == out.shape


@functools.cache
def _then_float32(gradient: Callable[..., Any]) -> Callable[..., Any]:
    """``gradient`` computed in float64, as PyTorch computes a float64 result's backward, then
    rounded to float32, as its engine turns a gradient into its float32 operand's type."""

    def rounded(g: Any, *saved: Any) -> Any:  # one saved number, or several (binary_cross_entropy's)
        return in_dtype(round32(float(gradient(g, *saved))), True)

    return rounded


def rounded_back(call: Call, t: torch.Tensor) -> list[Item]:
    """The elements of ``t``, an operand of ``call`` read element by element (not broadcast), as
    the operand of a node of many operands, each behind a node that turns the gradient reaching it
    into ``t``'s type, as PyTorch's engine does: a float32 tensor in a float64 result rounds it
    once to float32 (what ``_then_float32`` does inside an edge of one operand); a float64 tensor
    in a float32 result (an in-place operation's) takes the float32 number as it is, in float64."""
    items = call.entry(t).items
    if is_single(t) == call.single:
        return items
    widened = not is_single(t)
    op = engine_op("to float64" if widened else "to float32", 1, (_as_float64 if widened else _as_float32,))
    out = list(items)
    for i, x in enumerate(items):
        if isinstance(x, Value):
            out[i] = node = graph.make(Value, x.data, op, x, 1.0, None, None)
            call.described.append((node, x, f"{{}}'s gradient as {'float64' if widened else 'float32'}"))
    return out


def _alpha(call: Call, position: int = 2) -> float:
    alpha = call.kwargs.get("alpha", call.args[position] if len(call.args) > position else 1)
    return float(alpha)


@rule("add.Tensor", "add_.Tensor", "add.Scalar", "add_.Scalar")
def _add(call: Call) -> list[list[Item]]:
    x, y = call.args[:2]
    return elementwise(call, "add", (x, y), ((1.0, times), (_alpha(call), times)))


@rule("sub.Tensor", "sub_.Tensor", "sub.Scalar", "sub_.Scalar")
def _sub(call: Call) -> list[list[Item]]:
    x, y = call.args[:2]  # other: -grad times alpha (maybe_multiply), the gradient negated first
    return elementwise(call, "sub", (x, y), ((1.0, times), (_alpha(call), _negated_times)))


@rule("rsub.Scalar", "rsub.Tensor")
def _rsub(call: Call) -> list[list[Item]]:
    x, y = call.args[:2]  # y - alpha * x; self: -grad times alpha, the gradient negated first
    return elementwise(call, "rsub", (y, x), ((1.0, times), (_alpha(call), _negated_times)))


@rule("mul.Tensor", "mul_.Tensor", "mul.Scalar", "mul_.Scalar")
def _mul(call: Call) -> list[list[Item]]:
    x, y = call.args[:2]
    return elementwise(call, "mul", (x, y), ((y, times), (x, times)))


@rule("div.Tensor", "div_.Tensor", "div.Scalar", "div_.Scalar")
def _div(call: Call) -> list[list[Item]]:
    x, y = call.args[:2]
    if call.kwargs.get("rounding_mode") is not None:
        raise NotReplayableError("div with a rounding_mode")
    # derivatives.yaml: self: grad / other; other: -grad * ((self / other) / other), the gradient
    # negated first (the same number as grad * -q, but for which sign a nan keeps)
    other = (x / y) / y if isinstance(y, torch.Tensor) or isinstance(x, torch.Tensor) else 0.0
    return elementwise(call, "div", (x, y), ((y, divided), (other, _negated_times)))


def _negated_times(g: Any, s: Any) -> Any:
    """``-g * s``: PyTorch's formula negates the gradient, then multiplies (a nan's sign is then
    the gradient's flipped, or the factor's as it is)."""
    return -g * s


def _unary(call: Call, name: str, saved: Any, gradient: Callable[..., Any] = times) -> list[list[Item]]:
    return elementwise(call, name, (call.args[0],), ((saved, gradient),))


def _negated(g: Any, s: Any) -> Any:
    """``-g``: NegBackward's ``grad.neg()``, which flips a nan's sign bit where ``g * -1.0`` keeps
    it (a product hands on its nan operand as it is); the same number otherwise."""
    return -g


@rule("neg.default", "neg_.default")
def _neg(call: Call) -> list[list[Item]]:
    return _unary(call, "neg", -1.0, _negated)


@rule("abs.default", "abs_.default")
def _abs(call: Call) -> list[list[Item]]:
    return _unary(call, "abs", torch.sgn(call.args[0]))


@rule("exp.default", "exp_.default")
def _exp(call: Call) -> list[list[Item]]:
    return _unary(call, "exp", call.out)  # grad * result


@rule("log.default", "log_.default")
def _log(call: Call) -> list[list[Item]]:
    return _unary(call, "log", call.args[0], divided)  # grad.div(self)


@rule("sqrt.default", "sqrt_.default")
def _sqrt(call: Call) -> list[list[Item]]:
    return _unary(call, "sqrt", 2 * call.out, divided)  # grad / (2 * result)


@rule("reciprocal.default", "reciprocal_.default")
def _reciprocal(call: Call) -> list[list[Item]]:
    # -grad * (result * result): the same bits as grad * -(result * result), negation being exact
    return _unary(call, "reciprocal", -(call.out * call.out))


@rule("sin.default", "sin_.default")
def _sin(call: Call) -> list[list[Item]]:
    return _unary(call, "sin", torch.cos(call.args[0]))


@rule("cos.default", "cos_.default")
def _cos(call: Call) -> list[list[Item]]:
    return _unary(call, "cos", -torch.sin(call.args[0]))


@rule("tanh.default", "tanh_.default")
def _tanh(call: Call) -> list[list[Item]]:
    # tanh_backward(grad, y) is grad * (1 - y*y), its (1 - y*y) fused: PyTorch's kernel gives it
    y = call.out
    return _unary(call, "tanh", torch.ops.aten.tanh_backward(torch.ones_like(y), y))


@rule("sigmoid.default", "sigmoid_.default")
def _sigmoid(call: Call) -> list[list[Item]]:
    y = call.out
    ones = column(call, 1 - y)
    ys = column(call, y)
    return _unary(call, "sigmoid", list(zip(ones, ys, strict=True)), in_turn)


@rule("relu.default", "relu_.default")
def _relu(call: Call) -> list[list[Item]]:
    return _unary(call, "relu", masked(call, call.out <= 0, 1.0))  # threshold_backward(grad, result, 0)


@rule("clamp.default", "clamp_.default", "clamp_min.default", "clamp_max.default")
def _clamp(call: Call) -> list[list[Item]]:
    x = call.args[0]
    low = call.args[1] if len(call.args) > 1 and "max" not in call.name else call.kwargs.get("min")
    high = call.args[2] if len(call.args) > 2 else call.kwargs.get("max")
    if "clamp_max" in call.name:
        low, high = None, call.args[1]
    inside = torch.ones_like(x, dtype=torch.bool)
    if low is not None:
        inside = inside & (x >= low)
    if high is not None:
        inside = inside & (x <= high)
    made = _unary(call, "clamp", masked(call, ~inside, 1.0))
    bounds = tuple((key, float(bound)) for key, bound in (("min", low), ("max", high)) if bound is not None)
    call.arguments += [(node, ((), bounds)) for node in made[0] if isinstance(node, Value)]
    return made


CLAMP_BOUNDS = {"clamp": ("min", "max"), "clamp_min": ("min",), "clamp_max": ("max",)}
"""The bounds each of the clamps whose bounds are tensors takes, in order."""


@rule(*(f"{name}{tail}.Tensor" for name in CLAMP_BOUNDS for tail in ("", "_")))
def _clamp_by_tensors(call: Call) -> list[list[Item]]:
    """``torch.clamp(x, min=t1, max=t2)`` with tensors as its bounds (``clamp_min``, ``clamp_max``
    too): a node per element over ``x`` and the bounds, each edge a ``where`` of the gradient and
    exactly 0. ``clamp_backward`` hands ``x`` the gradient where ``min <= x <= max``;
    ``clamp_backward_min_max`` hands ``min`` the gradient where ``x < min`` and ``min < max``,
    ``max`` where ``x > max`` or ``max < min`` (with one bound: ``x < min``, ``x > max``)."""
    x = call.args[0]
    base = call.name.split(".")[0].rstrip("_")
    given = dict(zip(CLAMP_BOUNDS[base], call.args[1:], strict=False)) | call.kwargs
    low, high = given.get("min"), given.get("max")
    inside = torch.ones_like(x, dtype=torch.bool)
    to_low = to_high = inside
    if low is not None:
        inside, to_low = inside & (x >= low), x < low
    if high is not None:
        inside, to_high = inside & (x <= high), x > high
    if low is not None and high is not None:
        to_low, to_high = to_low & (low < high), to_high | (high < low)
    edges = [(x, inside), (low, to_low), (high, to_high)]
    return [_selections(call, "clamp", [(t, ~keep) for t, keep in edges if isinstance(t, torch.Tensor)])]


def _selections(call: Call, name: str, edges: list[tuple[torch.Tensor, torch.Tensor]]) -> list[Item]:
    """An element-wise operation of several operands (broadcast) whose backward hands each operand
    ``where(stop, 0, grad)``: the gradient as it is, or exactly 0 where ``stop`` is True; one node
    per element over every operand that takes gradient (each gets its gradient in its own type:
    ``rounded_back``, or ``broadcast_column`` for one broadcast)."""
    out = call.out
    columns: list[list[Item]] = []
    saved: list[list[Any]] = []
    for t, stop in edges:
        items, takes = broadcast_column(call, t)
        if takes:
            columns.append(rounded_back(call, t) if tuple(t.shape) == tuple(out.shape) else items)
            saved.append(masked(call, stop, 1.0))
    n = out.numel()
    operands = [[c[p] for c in columns] for p in range(n)]
    kept = [[s[p] for s in saved] for p in range(n)]
    return make_outputs(name, numbers_of(out), operands, kept, [times], many=True)


HARDTANH_NAN_NOTE = (
    "hardtanh of nan, whose backward PyTorch's vectorised kernel makes 0 and its scalar loop the "
    "gradient (the replay hands back the gradient)"
)


@rule("hardtanh.default", "hardtanh_.default")
def _hardtanh(call: Call) -> list[list[Item]]:
    x = call.args[0]
    low = call.args[1] if len(call.args) > 1 else call.kwargs.get("min_val", -1.0)
    high = call.args[2] if len(call.args) > 2 else call.kwargs.get("max_val", 1.0)
    # hardtanh_backward(grad, self, min, max): 0 where self <= min or self >= max, else grad
    if bool(torch.isnan(x).any()):
        call.notes.add(HARDTANH_NAN_NOTE)
    return _unary(call, "hardtanh", masked(call, (x <= low) | (x >= high), 1.0))


@rule("atan2.default", "atan2_.default")
def _atan2(call: Call) -> list[list[Item]]:
    # atan2_backward: recip = (self * self + other * other).reciprocal() once, made 0 where the sum
    # is 0 (atan2(0, 0), or squares that round to 0: measured, torch 2.13), then self gets
    # (grad * other) * recip and other (grad * -self) * recip, each product rounded
    x, y = call.args[:2]
    squares = x * x + y * y
    recips = column(call, torch.where(squares == 0, torch.zeros_like(squares), squares.reciprocal()))
    first = list(zip(column(call, y), recips, strict=True))
    second = list(zip(column(call, -x), recips, strict=True))
    return elementwise(call, "atan2", (x, y), ((first, in_turn), (second, in_turn)))


@rule("gelu.default", "gelu_.default")
def _gelu(call: Call) -> list[list[Item]]:
    x = call.args[0]
    approximate = call.args[1] if len(call.args) > 1 else call.kwargs.get("approximate", "none")
    # gelu_backward(grad, self) is grad * (its derivative), the last multiplication: PyTorch's kernel
    # gives it, with a row-major gradient of ones as a pass's gradient is (the kernel takes its vectors
    # or its scalar loop by the two tensors' layouts, whose erf and tanh can differ in the last bits)
    derivative = torch.ops.aten.gelu_backward(torch.ones(x.shape, dtype=x.dtype), x, approximate=approximate)
    if x.numel() >= 2 * _vector_width(call.single):
        call.notes.add(LAYOUT_NOTE.format(name="gelu", what="erf" if approximate == "none" else "tanh"))
    return _unary(call, "gelu", derivative)


@rule("silu.default", "silu_.default")
def _silu(call: Call) -> list[list[Item]]:
    # silu_backward: dy * sigmoid * (1 + x * (1 - sigmoid)), left to right, where sigmoid is
    # 1 / (1 + exp(-x)) with the kernel's own exp, in its vectors or alone at a loop's end, as
    # torch.sigmoid computes it element by element (measured with torch 2.13: 4,470 of 4,470
    # elements, float32 and float64), and 1 + x * (...) one fused multiply-add where the kernels fuse
    x = call.args[0]
    single = call.single
    sigmoids = column(call, torch.sigmoid(x))
    xs = column(call, x)
    if _kernels_fuse():
        factors = [fused(v, 1.0 - s, 1.0, single) for v, s in zip(xs, sigmoids, strict=True)]
    else:
        factors = [1.0 + v * (1.0 - s) for v, s in zip(xs, sigmoids, strict=True)]
    if x.numel() >= 2 * _vector_width(single):
        call.notes.add(LAYOUT_NOTE.format(name="silu", what="exp"))
    return _unary(call, "silu", list(zip(sigmoids, factors, strict=True)), in_turn)


@rule("softplus.default")
def _softplus(call: Call) -> list[list[Item]]:
    """``F.softplus(x, beta, threshold)``, ``nn.Softplus``: ``softplus_backward`` hands each element
    ``(dy * z) / (z + 1)``, ``z = exp(x * beta)``, or ``dy`` itself where ``x * beta`` is above the
    threshold (both in the tensor's type). Its kernel computes ``z`` with its vectorised exp, two
    vectors at a time, and the C library's ``exp`` for the numbers past the last two vectors: the
    replay reads the first from PyTorch's own vectorised exp (``_kernel_exps``) and calls the second
    (measured with torch 2.13 on x86-64 with AVX2: 200 of 200 random passes, 22,983 of 22,983 elements,
    float32 and float64)."""
    x = call.args[0]
    beta = call.args[1] if len(call.args) > 1 else call.kwargs.get("beta", 1.0)
    threshold = call.args[2] if len(call.args) > 2 else call.kwargs.get("threshold", 20.0)
    single = call.single
    scaled = x * beta  # in the tensor's type, as the kernel's x * beta
    over = numbers_of_index((scaled > threshold).reshape(-1).to(torch.int64))
    numbers = numbers_of(scaled)
    n = len(numbers)
    pair = 2 * _vector_width(single)
    vectors = n - n % pair  # the numbers the kernel's vector loop computes
    exps = _kernel_exps(scaled.detach().reshape(1, n), 1)[:vectors] if vectors else []
    exps = [0.0 if z == 0 else z for z in exps]  # exp is never -0.0 (the kernel's 0 - exp * 1, negated, is)
    exps += [_c_exp(v, single) for v in numbers[vectors:]]
    one = in_dtype(1.0, single)
    saved = [
        (one, one) if high else (in_dtype(z, single), in_dtype(z, single) + one)
        for z, high in zip(exps, over, strict=True)
    ]
    if n >= pair:
        call.notes.add(LAYOUT_NOTE.format(name="softplus", what="exp"))
    if n >= PARALLEL_ACCUMULATION:
        call.notes.add(SOFTPLUS_THREADS_NOTE)
    return _unary(call, "softplus", saved, _scaled_gradient)


SOFTPLUS_THREADS_NOTE = (
    "softplus over so many numbers that PyTorch's kernel may split them among threads, each part's last "
    "numbers' exp computed one at a time"
)


@functools.cache
def _c_expf() -> Callable[[float], float] | None:
    """The C library's ``expf``, which PyTorch's scalar loops call for a float32 ``std::exp``; None
    where it cannot be found (then ``exp`` in double, rounded once, is the nearest float32 number,
    which ``expf`` is almost always)."""
    try:
        function = ctypes.CDLL(None).expf
    except (OSError, AttributeError, TypeError):
        return None
    function.restype = ctypes.c_float
    function.argtypes = [ctypes.c_float]
    found: Callable[[float], float] = function
    return found


def _c_exp(v: float, single: bool) -> float:
    """``std::exp`` of a number of the tensor's type, as PyTorch's scalar loops compute it: the C
    library's ``exp`` (Python's ``math.exp`` is that function) or ``expf``."""
    if not single:
        try:
            return math.exp(v)
        except OverflowError:
            return math.inf
    expf = _c_expf()
    if expf is not None:
        return float(expf(v))
    try:
        return round32(math.exp(v))
    except OverflowError:
        return math.inf


LAYOUT_NOTE = (
    "{name}, whose backward kernel computes its {what} in vectors or one number at a time by how the gradient "
    "reaching it lies in memory (a gradient a sum along a dimension hands back is one number a row, and takes "
    "the second way), which the replay cannot see"
)
"""Why a pass through an activation whose backward reads ``exp`` (or ``erf``, ``tanh``) may differ: the
replay reads those numbers as PyTorch's kernel computes them for a gradient laid out row after row."""


def _kernels_fuse() -> bool:
    """Whether PyTorch's CPU kernels compute ``a + b * c`` as one fused multiply-add: where they run
    their AVX2 or AVX-512 builds (compiled with FMA, which the compiler contracts such code into) and
    on aarch64; not in the default x86-64 build (SSE, no FMA)."""
    capability = torch.backends.cpu.get_cpu_capability()
    return "AVX2" in capability or "AVX512" in capability or platform.machine().lower() in ("aarch64", "arm64")


@rule("rsqrt.default", "rsqrt_.default")
def _rsqrt(call: Call) -> list[list[Item]]:
    # -0.5 * grad * result.pow(3): (grad * -0.5) * result³, a product of two numbers being either way round
    halves = column(call, -0.5)
    cubes = column(call, call.out.pow(3))
    return _unary(call, "rsqrt", list(zip(halves, cubes, strict=True)), in_turn)


@rule("tan.default", "tan_.default")
def _tan(call: Call) -> list[list[Item]]:
    return _unary(call, "tan", 1 + call.out.pow(2))  # grad * (1 + result.pow(2))


@rule("exp2.default", "exp2_.default")
def _exp2(call: Call) -> list[list[Item]]:
    results = column(call, call.out)
    logs = column(call, math.log(2.0))  # M_LN2, in the tensor's type
    return _unary(call, "exp2", list(zip(results, logs, strict=True)), in_turn)  # (grad * result) * M_LN2


# ---- more of the element-wise functions, each saving what derivatives.yaml multiplies or divides by


@rule("sinh.default", "sinh_.default")
def _sinh(call: Call) -> list[list[Item]]:
    return _unary(call, "sinh", torch.cosh(call.args[0]))  # grad * self.cosh()


@rule("cosh.default", "cosh_.default")
def _cosh(call: Call) -> list[list[Item]]:
    return _unary(call, "cosh", torch.sinh(call.args[0]))  # grad * self.sinh()


@rule("expm1.default", "expm1_.default")
def _expm1(call: Call) -> list[list[Item]]:
    return _unary(call, "expm1", call.out + 1)  # grad * (result + 1)


@rule("log2.default", "log2_.default")
def _log2(call: Call) -> list[list[Item]]:
    return _unary(call, "log2", call.args[0] * 0.6931471805599453, divided)  # grad / (self * M_LN2)


@rule("log10.default", "log10_.default")
def _log10(call: Call) -> list[list[Item]]:
    return _unary(call, "log10", call.args[0] * 2.3025850929940456, divided)  # grad / (self * M_LN10)


@rule("erf.default", "erf_.default")
def _erf(call: Call) -> list[list[Item]]:
    # 2 / sqrt(pi) * exp(-(self.pow(2))) * grad: the factor made first, then times the gradient
    return _unary(call, "erf", 2.0 / math.sqrt(math.pi) * torch.exp(-call.args[0].pow(2)))


@rule("asin.default", "asin_.default")
def _asin(call: Call) -> list[list[Item]]:
    x = call.args[0]
    return _unary(call, "asin", (-x * x + 1).rsqrt())  # grad * (-self * self + 1).rsqrt()


@rule("acos.default", "acos_.default")
def _acos(call: Call) -> list[list[Item]]:
    x = call.args[0]
    return _unary(call, "acos", -((-x * x + 1).rsqrt()))  # grad * -((-self * self + 1).rsqrt())


@rule("atan.default", "atan_.default")
def _atan(call: Call) -> list[list[Item]]:
    x = call.args[0]
    return _unary(call, "atan", x * x + 1, divided)  # grad / (self * self + 1)


@rule("asinh.default", "asinh_.default")
def _asinh(call: Call) -> list[list[Item]]:
    return _unary(call, "asinh", (call.args[0].pow(2) + 1).rsqrt())  # grad * (self.pow(2) + 1).rsqrt()


@rule("acosh.default", "acosh_.default")
def _acosh(call: Call) -> list[list[Item]]:
    return _unary(call, "acosh", (call.args[0].pow(2) - 1).rsqrt())  # grad * (self.pow(2) - 1).rsqrt()


@rule("atanh.default", "atanh_.default")
def _atanh(call: Call) -> list[list[Item]]:
    return _unary(call, "atanh", 1 - call.args[0].pow(2), divided)  # grad * 1 / (1 - self.pow(2)): grad * 1 is grad


@rule("pow.Tensor_Scalar", "pow_.Scalar")
def _pow(call: Call) -> list[list[Item]]:
    x, exponent = call.args[:2]
    if float(exponent) == 0.0:
        return _unary(call, "pow", masked(call, torch.ones_like(x, dtype=torch.bool), 0.0))
    # pow_backward: grad * (exponent * self.pow(exponent - 1))
    return elementwise(call, "pow", (x, exponent), ((exponent * x.pow(exponent - 1), times), (0.0, times)))


@rule("pow.Tensor_Tensor", "pow_.Tensor")
def _pow_of_tensors(call: Call) -> list[list[Item]]:
    """``x ** e`` with a tensor exponent. PyTorch's pow_backward_self hands ``x`` exactly 0 where
    ``e == 0`` (a ``where`` around the product) and ``grad * (e * x.pow(e - 1))`` elsewhere;
    pow_backward_exponent hands ``e`` ``grad * where(e >= 0 & x == 0, 0, result * x.log())``, the
    ``where`` inside the product (so a negative or nan ``grad`` times that 0 is -0 or nan)."""
    x, exponent = call.args[:2]
    base = x.to(torch.result_type(x, exponent))
    factor = torch.where((exponent >= 0) & (base == 0), torch.zeros((), dtype=call.out.dtype), call.out * base.log())
    edges = ((masked(call, exponent == 0, exponent * x.pow(exponent - 1)), times), (factor, times))
    return elementwise(call, "pow", (x, exponent), edges)


@rule("pow.Scalar")
def _pow_of_a_number(call: Call) -> list[list[Item]]:
    """``b ** e``, a number to a tensor's power: pow_backward_exponent hands ``e``
    ``grad * (result * log(b))``, ``log(b)`` the C library's in double and then a number of the
    tensor's type in PyTorch's product; for ``b == 0``, ``grad * where(e >= 0, 0, result * log(0))``."""
    number, exponent = call.args[:2]
    b = float(number)
    log = math.log(b) if b > 0 else (-math.inf if b == 0 else math.nan)  # C's log, which raises for none
    factor = call.out * log
    if b == 0:
        factor = torch.where(exponent >= 0, torch.zeros((), dtype=call.out.dtype), factor)
    return elementwise(call, "pow", (number, exponent), ((0.0, times), (factor, times)))


@rule("where.self")
def _where(call: Call) -> list[list[Item]]:
    condition, x, y = call.args[:3]
    condition = condition.bool()  # a uint8 condition (deprecated, still taken): nonzero is True, as PyTorch reads it
    made = elementwise(
        call, "where", (x, y), ((masked(call, ~condition, 1.0), times), (masked(call, condition, 1.0), times))
    )
    chosen = torch.broadcast_to(condition, call.out.shape).reshape(-1).tolist()
    call.arguments += [
        (node, ((bool(c),), ())) for node, c in zip(made[0], chosen, strict=True) if isinstance(node, Value)
    ]
    return made


@rule("maximum.default", "minimum.default")
def _extreme_of_two(call: Call) -> list[list[Item]]:
    x, y = call.args[:2]
    # max_other's: at::where(self == other, grad / 2, grad).masked_fill_(self < other, 0) for self,
    # masked where self > other for other (min's the other way round); grad / 2 is grad * 0.5
    bigger = (x < y) if call.name.startswith("maximum") else (x > y)
    smaller = (x > y) if call.name.startswith("maximum") else (x < y)
    halves = torch.where(x == y, 0.5, 1.0)
    return elementwise(
        call,
        call.name.split(".")[0],
        (x, y),
        ((masked(call, bigger, halves), times), (masked(call, smaller, halves), times)),
    )


@rule("masked_fill.Scalar", "masked_fill_.Scalar", "masked_fill.Tensor", "masked_fill_.Tensor")
def _masked_fill(call: Call) -> list[list[Item]]:
    mask, value = call.args[1:3]
    if isinstance(value, torch.Tensor) and value.requires_grad:
        raise NotReplayableError("masked_fill with a value that takes gradient")
    return _unary(call, "masked_fill", masked(call, mask, 1.0))  # grad.masked_fill(mask, 0)


@rule("tril.default", "tril_.default", "triu.default", "triu_.default")
def _triangle(call: Call) -> list[list[Item]]:
    x = call.args[0]
    diagonal = call.args[1] if len(call.args) > 1 else call.kwargs.get("diagonal", 0)
    keep = torch.ones_like(x, dtype=torch.bool)
    keep = keep.tril(diagonal) if call.name.startswith("tril") else keep.triu(diagonal)
    return _unary(call, call.name.split(".")[0].rstrip("_"), masked(call, ~keep, 1.0))  # grad.tril(k), grad.triu(k)


@rule("log1p.default", "log1p_.default")
def _log1p(call: Call) -> list[list[Item]]:
    return _unary(call, "log1p", call.args[0] + 1, divided)  # log1p_backward: grad / (self + 1)


@rule("leaky_relu.default", "leaky_relu_.default")
def _leaky_relu(call: Call) -> list[list[Item]]:
    x = call.args[0]
    slope = call.args[1] if len(call.args) > 1 else call.kwargs.get("negative_slope", 0.01)
    # leaky_relu_backward(grad, self, slope): self > 0 ? grad : grad * slope (self before an in-place op)
    return _unary(call, "leaky_relu", torch.where(x > 0, torch.ones_like(x), torch.full_like(x, float(slope))))


# ---- more activations: elu (selu, celu), mish, hardswish, hardsigmoid, logsigmoid, logit, threshold


VECTOR_WAY_NOTE = (
    "{name} of {what}, whose backward kernel gives it another gradient in its vectors than one number at a time, "
    "which it takes by how the gradient reaching it lies in memory (a gradient a sum along a dimension hands back "
    "is one number a row), which the replay cannot see"
)
"""Why a pass through an activation whose backward kernel branches otherwise in its vectors than in its
scalar loop, at the numbers named, may differ: the replay follows the kernel for a gradient laid out row
after row."""


KERNEL_THREADS_NOTE = (
    "{name} over so many numbers that PyTorch's kernel may split them among threads, each part's last "
    "numbers computed one at a time"
)


def _in_vectors(x: torch.Tensor) -> list[bool]:
    """Which elements of ``x`` (row-major) PyTorch's element-wise backward kernels (``cpu_kernel_vec``)
    compute in vectors, two at a time, rather than one number at a time (the numbers past the last two
    vectors), for a gradient laid out row-major and ``x`` laid out as it is. Read from a kernel whose
    two ways differ: ``logit_backward`` at -0.0 divides 1 by ``-0.0 * (1 - -0.0)`` in its vectors (-inf)
    and multiplies it by inf one at a time (inf)."""
    probe = torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype).fill_(-0.0)
    found = torch.ops.aten.logit_backward(torch.ones(x.shape, dtype=x.dtype), probe)
    return [bool(v) for v in numbers_of_index((found < 0).reshape(-1))]


def _vector_way_notes(call: Call, x: torch.Tensor, differing: torch.Tensor, what: str, name: str = "") -> None:
    """The notes of a pass through an activation whose two ways differ where ``differing`` is True."""
    name = name or call.name.split(".")[0].rstrip("_")
    if x.numel() >= 2 * _vector_width(call.single) and bool(differing.any()):
        call.notes.add(VECTOR_WAY_NOTE.format(name=name, what=what))
    if x.numel() >= PARALLEL_ACCUMULATION:
        call.notes.add(KERNEL_THREADS_NOTE.format(name=name))


def _factor_nan_kept(g: Any, s: Any) -> Any:
    """``g * s``, of two nans ``s``'s kept, as the kernels of mish, logsigmoid, hardswish and elu in place
    keep it, in their vectors and one at a time (measured with torch 2.13); Python's product keeps one
    or the other by its operands' types (``float * Single`` is ``Single.__rmul__``)."""
    return s if math.isnan(s) and math.isnan(g) else g * s


def _gradient_nan_kept(g: Any, s: Any) -> Any:
    """``g * s``, of two nans ``g``'s kept, as elu's kernel keeps it (measured with torch 2.13)."""
    return g if math.isnan(s) and math.isnan(g) else g * s


def _elu_below(g: Any, negiptcoef: Any, negcoef: Any, e: Any) -> Any:
    """``((g * negiptcoef) * negcoef) * exp(...)``: elu_backward at or below 0."""
    return _gradient_nan_kept((g * negiptcoef) * negcoef, e)


def _elu_below_in_place(g: Any, negiptcoef: Any, shifted: Any) -> Any:
    """``(g * negiptcoef) * (y + negcoef)``: elu_backward at or below 0, from the result."""
    return _factor_nan_kept(g * negiptcoef, shifted)


@rule("elu.default", "elu_.default", "celu.default", "celu_.default")
def _elu(call: Call) -> list[list[Item]]:
    """``F.elu(x, alpha)``, ``nn.ELU``, ``F.selu`` (an ``elu`` with a ``scale``), ``F.celu(x, alpha)``
    (``input_scale`` ``1.0 / alpha.toFloat()``, in double): ``elu_backward`` hands each element
    ``dy * poscoef`` where it is above 0, else ``dy * negiptcoef * negcoef * exp(x * negiptcoef)``, left
    to right, with ``negcoef = alpha * scale``, ``poscoef = scale``, ``negiptcoef = input_scale``, each in
    the tensor's type; in place (``elu_``), from the result: ``dy * negiptcoef * (y + negcoef)`` where
    the result is at most 0. The kernel's exp is its vectorised one in its vectors, the C library's one
    number at a time: the replay reads it from ``elu_backward`` itself (of a gradient of ones, ``alpha``,
    ``scale`` and ``input_scale`` 1, at ``x * negiptcoef``). A nan goes the first way one number at a
    time (``b <= 0`` is false) and the second in vectors (``b > 0`` is false)."""
    x = call.args[0]
    base = call.name.split(".")[0].rstrip("_")
    single = call.single
    if base == "celu":
        alpha = float(call.args[1] if len(call.args) > 1 else call.kwargs.get("alpha", 1.0))
        scale, input_scale = 1.0, 1.0 / round32(alpha)
    else:
        given = dict(zip(("alpha", "scale", "input_scale"), call.args[1:], strict=False)) | call.kwargs
        alpha, scale, input_scale = (float(given.get(k, 1.0)) for k in ("alpha", "scale", "input_scale"))
    if not input_scale > 0:
        raise NotReplayableError(f"{base} with a negative alpha or input_scale")
    negcoef = in_dtype(alpha, single) * in_dtype(scale, single)
    poscoef, negiptcoef = in_dtype(scale, single), in_dtype(input_scale, single)
    in_place = call.name.startswith(f"{base}_")
    b = call.out if in_place else x  # elu_'s formula reads the result
    numbers = [in_dtype(v, single) for v in numbers_of(b)]
    exps: list[Any] = []
    if not in_place:  # exp(b * negiptcoef), b * negiptcoef in the tensor's type
        scaled = b * torch.tensor(negiptcoef, dtype=b.dtype)
        exps = column(call, torch.ops.aten.elu_backward(torch.ones(b.shape, dtype=b.dtype), 1, 1, 1, False, scaled))
    saved: list[tuple[Any, ...]] = []
    for i, (v, vector) in enumerate(zip(numbers, _in_vectors(b), strict=True)):
        if not (v <= 0 or (vector and math.isnan(v))):
            saved.append((times, poscoef))
        elif in_place:
            saved.append((_elu_below_in_place, negiptcoef, v + negcoef))  # (y + negcoef) in the tensor's type
        else:
            saved.append((_elu_below, negiptcoef, negcoef, exps[i]))
    _vector_way_notes(call, b, torch.isnan(b), "nan")
    if not in_place and b.numel() >= 2 * _vector_width(single):
        call.notes.add(LAYOUT_NOTE.format(name=base, what="exp"))
    return _unary(call, base, saved, _rule_of)


@rule("mish.default", "mish_.default")
def _mish(call: Call) -> list[list[Item]]:
    # mish_backward(dy, x) is dy * (its derivative), the last multiplication: PyTorch's kernel gives
    # it, its exp, log1p and tanh in vectors or one at a time (see gelu)
    x = call.args[0]
    derivative = torch.ops.aten.mish_backward(torch.ones(x.shape, dtype=x.dtype), x)
    if x.numel() >= 2 * _vector_width(call.single):
        call.notes.add(LAYOUT_NOTE.format(name="mish", what="exp, log1p and tanh"))
    if x.numel() >= PARALLEL_ACCUMULATION:
        call.notes.add(KERNEL_THREADS_NOTE.format(name="mish"))
    return _unary(call, "mish", derivative, _factor_nan_kept)


@rule("hardswish.default", "hardswish_.default")
def _hardswish(call: Call) -> list[list[Item]]:
    """``F.hardswish``: ``hardswish_backward`` hands each element exactly 0 at -3 and below (MASKED),
    ``dy * ((x / 3) + 0.5)`` between -3 and 3, ``dy`` from 3 on (measured with torch 2.13). For a nan
    its vectors compute the product and its scalar loop takes ``dy``: PyTorch's kernel gives the
    factor of each (of a gradient of ones: ``1 * f`` is ``f``)."""
    x = call.args[0]
    factors = torch.ops.aten.hardswish_backward(torch.ones(x.shape, dtype=x.dtype), x)
    _vector_way_notes(call, x, torch.isnan(x), "nan")
    return _unary(call, "hardswish", masked(call, x <= -3, factors), _factor_nan_kept)


@rule("hardsigmoid.default", "hardsigmoid_.default")
def _hardsigmoid(call: Call) -> list[list[Item]]:
    # hardsigmoid_backward: dy * one_sixth strictly between -3 and 3, else exactly 0; one_sixth is the
    # float 1.0f / 6.0f (a float32 constant, float64 tensors too)
    x = call.args[0]
    return _unary(call, "hardsigmoid", masked(call, ~((x > -3) & (x < 3)), round32(1.0 / 6.0)))


@rule("log_sigmoid_forward.default")
def _log_sigmoid(call: Call) -> list[list[Item]]:
    """``F.logsigmoid``, ``nn.LogSigmoid`` (``log_sigmoid_forward``, which also returns its ``buffer``,
    ``exp(-|x|)``): ``log_sigmoid_backward`` hands each element
    ``(max_deriv - sign * (buffer / (1 + buffer))) * dy``, the factor first (1 and 1 below 0, else 0
    and -1), the same in vectors and one at a time: PyTorch's kernel gives the factor (of a gradient
    of ones: ``f * 1`` is ``f``). Of a nan factor (a nan input) and a nan gradient, the kernel keeps
    the factor's in one of the two vectors it computes at a time and in its scalar loop, the
    gradient's in the other (measured with torch 2.13): read from the kernel itself
    (``_gradient_nan_places``)."""
    x = call.args[0]
    _, buffer = call.outputs
    factors = column(call, torch.ops.aten.log_sigmoid_backward(torch.ones(x.shape, dtype=x.dtype), x, buffer))
    kept = _gradient_nan_places(x) if bool(torch.isnan(x).any()) else [False] * len(factors)
    _vector_way_notes(call, x, torch.isnan(x), "nan", "logsigmoid")
    saved = [(_gradient_nan_kept if k else _factor_nan_kept, f) for f, k in zip(factors, kept, strict=True)]
    return [*_unary(call, "log_sigmoid", saved, _rule_of), list(numbers_of(buffer))]


def _gradient_nan_places(x: torch.Tensor) -> list[bool]:
    """Where ``log_sigmoid_backward`` keeps a nan gradient's nan over its nan factor's (row-major), for a
    gradient laid out row-major and ``x`` laid out as it is: the kernel run at nan inputs with a
    gradient of nans of the other sign than their factors."""
    nans = torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype).fill_(math.nan)
    _, buffer = torch.ops.aten.log_sigmoid_forward(nans)
    factors = torch.ops.aten.log_sigmoid_backward(torch.ones(x.shape, dtype=x.dtype), nans, buffer)
    found = torch.ops.aten.log_sigmoid_backward(-factors.contiguous(), nans, buffer)
    return [bool(v) for v in numbers_of_index((found.signbit() != factors.signbit()).reshape(-1))]


@functools.cache
def _default_nan() -> float:
    """The nan this processor's division makes of 0 / 0 (x86-64's has its sign bit set)."""
    zero = torch.zeros(1, dtype=torch.float64)
    return float((zero / zero).item())


def _quotient(g: Any, s: Any) -> Any:
    """``g / s`` as the processor divides: 0 / 0 its default nan, a nan divided by 0 that nan."""
    if s == 0 and (g == 0 or math.isnan(g)):
        return in_dtype(g if math.isnan(g) else _default_nan(), isinstance(s, Single))
    return divided(g, s)


def _constant(_g: Any, c: Any) -> Any:
    """``c`` whatever the gradient: logit_backward's nan outside [0, 1]; a smooth loss's nan
    difference, which its kernel hands on whatever the gradient (a nan gradient's too)."""
    return c


@rule("logit.default", "logit_.default")
def _logit(call: Call) -> list[list[Item]]:
    """``torch.logit(x, eps)``: ``logit_backward`` hands each element ``dy / (x * (1 - x))`` inside
    ``[lo, hi]`` (``eps`` and ``1 - eps`` in the tensor's type; without ``eps``, ``[0, 1]``), outside
    it nan without ``eps`` and exactly 0 with one. One number at a time it takes ``dy * inf`` at 0 and
    1 (where its vectors divide by ``x * (1 - x)``, -0.0 at -0.0) and divides for a nan (where its
    vectors give nan without ``eps``, 0 with one)."""
    x = call.args[0]
    eps = call.args[1] if len(call.args) > 1 else call.kwargs.get("eps")
    single = call.single
    eps = -1.0 if eps is None else float(eps)  # PyTorch's "no eps"
    given = eps >= 0
    lo = in_dtype(eps, single) if given else in_dtype(0.0, single)
    hi = in_dtype(1.0, single) - lo if given else in_dtype(1.0, single)
    outside = MASKED if given else (_constant, in_dtype(math.nan, single))
    products = [in_dtype(v, single) for v in numbers_of(x * (1 - x))]
    saved: list[Any] = []
    for v, product, vector in zip(numbers_of(x), products, _in_vectors(x), strict=True):
        if vector:
            inside = lo <= v <= hi
            saved.append((_quotient, product) if inside else outside)
        elif v < lo or v > hi:
            saved.append(outside)
        elif v in (0.0, 1.0):
            saved.append((times, in_dtype(math.inf, single)))
        else:
            saved.append((_quotient, product))
    _vector_way_notes(call, x, (x == 0) | (x == 1) | torch.isnan(x), "0, 1 or nan")
    return _unary(call, "logit", saved, _rule_of)


@rule("threshold.default", "threshold_.default")
def _threshold(call: Call) -> list[list[Item]]:
    x, threshold = call.args[:2]
    # threshold_backward(grad, self, threshold): 0 where self <= threshold, else grad (self before an in-place op)
    return _unary(call, "threshold", masked(call, x <= threshold, 1.0))


# ---- reductions ----------------------------------------------------------------------------------


def _into_another_dtype(call: Call) -> NotReplayableError:
    """A reduction into another type than its input's (``sum``, ``mean``, ``cumsum``, ``prod``,
    ``vector_norm`` with ``dtype=``): PyTorch turns the gradient into the input's type as it
    reaches it, which the replay does not follow. One sentence for all of them."""
    return NotReplayableError(f"{call.name.split('.')[0]} with a dtype other than its input's")


def _reduced_dims(x: torch.Tensor, dims: Any) -> list[int]:
    if dims is None or (isinstance(dims, Sequence) and len(dims) == 0):
        return list(range(x.dim()))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted(d % max(x.dim(), 1) for d in dims)


def _groups(x: torch.Tensor, dims: Sequence[int], count: int) -> list[list[int]]:
    """For each element of a reduction's result, the elements of ``x`` it reduces, in row-major order."""
    kept = [1 if d in dims else s for d, s in enumerate(x.shape)]
    owner = numbers_of_index(torch.arange(count).reshape(kept).broadcast_to(x.shape)) if x.dim() else [0]
    groups: list[list[int]] = [[] for _ in range(count)]
    for i, j in enumerate(owner):
        groups[j].append(i)
    return groups


@rule("sum.default", "sum.dim_IntList", "mean.default", "mean.dim")
def _sum(call: Call) -> list[list[Item]]:
    """``x.sum(dims)`` and ``x.mean(dims)``: each element's gradient the gradient of its group's
    result (divided by the group's size for a mean). Into another type than the input's
    (``dtype=``), PyTorch turns the gradient into the input's type as it reaches it, which the
    replay does not follow: not replayed, as ``cumsum`` and ``prod`` so."""
    x = call.args[0]
    if call.out.dtype != x.dtype:
        raise _into_another_dtype(call)
    dims = _reduced_dims(x, call.args[1] if len(call.args) > 1 and "dim" in call.name else call.kwargs.get("dim"))
    entry = call.entry(x)
    groups = _groups(x, dims, call.out.numel())
    mean = call.name.startswith("mean")
    size = in_dtype(float(len(groups[0]) if groups else 0), call.single)
    saved = [[size if mean else in_dtype(1.0, call.single)] * len(g) for g in groups]
    operands = [[entry.items[i] for i in g] for g in groups]
    name = "mean" if mean else "sum"
    return [make_outputs(name, numbers_of(call.out), operands, saved, [divided if mean else times], many=True)]


# ---- cumsum: its backward a running sum from the end, in double --------------------------------


def _passed_on(g: Any, _unit: Any) -> Any:
    """A running sum handed on as it is (a double: the kernel's accumulator)."""
    return g


def _widened_onto_zero(g: Any, _unit: Any) -> float:
    """The first gradient the running sum takes: added onto the accumulator's +0.0 (a -0.0 becomes 0.0)."""
    return 0.0 + float(g)


def _stored(g: Any, single: bool) -> Any:
    """The running sum stored in the tensor's type: what the element's gradient is."""
    return in_dtype(g, single)


@rule("cumsum.default")
def _cumsum(call: Call) -> list[list[Item]]:
    """``x.cumsum(dim)``: ``cumsum_backward`` hands back ``grad.flip(dim).cumsum(dim).flip(dim)``, each
    element's gradient the sum of the gradients from its place to the line's end, added from the end
    in one running sum held in double (the CPU kernel's ``acc_type``, float32's too) onto +0.0, and
    each place's sum stored in the tensor's type; a line of one element (or a tensor of one) hands
    the gradient back as it is. Along each line, node ``c[i]`` holds the running sum: made before
    ``y[i]`` and after ``y[i - 1]``, so that the reverse pass adds ``c[i + 1]``'s sum into it before
    ``y[i]``'s gradient, as the kernel adds."""
    x, dim = call.args[0], call.args[1] if len(call.args) > 1 else call.kwargs["dim"]
    if call.kwargs.get("dtype") is not None and call.kwargs["dtype"] != x.dtype:
        raise _into_another_dtype(call)
    single, items, data = call.single, call.entry(x).items, numbers_of(call.out)
    out: list[Item] = list(data)
    if x.numel() <= 1 or x.dim() == 0 or x.shape[dim] == 1:
        one = in_dtype(1.0, single)
        return [make_outputs("cumsum", data, [items], [[one] * len(items)], [times])]
    n = x.shape[dim]
    inner = math.prod(x.shape[dim % x.dim() + 1 :])
    chain = engine_op("cumsum's running sum", 2, (_passed_on, _stored))
    first = engine_op("cumsum's running sum", 1, (_stored,))
    taken = (engine_op("cumsum", 1, (_as_float64,)), engine_op("cumsum", 1, (_widened_onto_zero,)))
    for start in (o * n * inner + i for o in range(x.numel() // (n * inner)) for i in range(inner)):
        running: Item = 0.0
        for k in range(n):
            p = start + k * inner
            x_p = items[p]
            if isinstance(running, Value):
                running = graph.make(
                    Value, data[p], chain, running, 1.0, x_p, single if isinstance(x_p, Value) else None
                )
            elif isinstance(x_p, Value):
                running = graph.make(Value, data[p], first, x_p, single, None, None)
            if isinstance(running, Value):
                out[p] = graph.make(Value, data[p], taken[k == n - 1], running, 1.0, None, None)
                call.described.append((running, x_p if isinstance(x_p, Value) else None, "cumsum's running sum at {}"))
    return [out]


def _spread(g: Any, twice: Any, factor: Any, centered: Any) -> Any:
    """``std``'s edge: the gradient divided by twice the result (+0.0 where the result is 0, as
    ``masked_fill_`` makes it: whatever the gradient, but its sign still the product's below, for
    a mean computed by a sum need not be exact where the result is 0), then ``var``'s
    ``(g * (2 / dof)) * (x - mean)``."""
    share = g / twice if twice != 0 else twice - twice  # +0.0, in the tensor's type
    return (share * factor) * centered


@rule("var.correction", "std.correction")
def _variance(call: Call) -> list[list[Item]]:
    """``var`` and ``std`` (any ``dim``, ``correction``, ``keepdim``): each result element is a node
    over the elements it reduces. ``var_backward`` is ``((2 / dof) * grad) * (self - mean)``, the
    mean PyTorch's own (over everything when no ``dim`` is given); ``std_backward`` first makes
    the gradient ``grad / (result * 2)``, 0 where the result is 0."""
    x = call.args[0]
    given = call.args[1] if len(call.args) > 1 else call.kwargs.get("dim")
    if given is not None and len(given) == 0:  # its forward reduces every dimension, its backward counts one
        raise NotReplayableError(f"{call.name.split('.')[0]} over an empty list of dimensions")
    correction = call.kwargs.get("correction")
    correction = 1.0 if correction is None else float(correction)
    dims = _reduced_dims(x, given)
    groups = _groups(x, dims, call.out.numel())
    freedom = float(len(groups[0]) if groups else 0) - correction
    if freedom <= 0:
        raise NotReplayableError(f"{call.name.split('.')[0]} with no degrees of freedom (correction {correction:g})")
    single = call.single
    mean = x.mean() if given is None else x.mean(dims, keepdim=True)
    centered = [in_dtype(v, single) for v in numbers_of(x - mean)]
    factor = in_dtype(2.0 / freedom, single)  # a double scalar times the gradient: in the tensor's type
    items = call.entry(x).items
    operands = [[items[i] for i in group] for group in groups]
    saved: list[list[Any]]  # per element: the numbers its edge saved, a tuple
    if call.name.startswith("var"):
        saved = [[(factor, centered[i]) for i in group] for group in groups]
        return [make_outputs("var", numbers_of(call.out), operands, saved, [in_turn], many=True)]
    twice = [in_dtype(v, single) for v in numbers_of(call.out * 2)]
    saved = [[(twice[k], factor, centered[i]) for i in group] for k, group in enumerate(groups)]
    return [make_outputs("std", numbers_of(call.out), operands, saved, [_spread], many=True)]


def _along(call: Call, x: torch.Tensor, given: Any, factors: Callable[[torch.Tensor], torch.Tensor]) -> list[Item]:
    """A reduction of ``x`` along ``given`` dimensions (all for None) whose backward hands each
    element ``grad * factor``, the result's gradient unsqueezed back: ``factors`` makes the factors
    from the result in the shape ``keepdim`` gives it (PyTorch computes them on the whole tensor)."""
    dims = _reduced_dims(x, given)
    kept = [1 if d in dims else s for d, s in enumerate(x.shape)]
    numbers = [in_dtype(v, call.single) for v in numbers_of(factors(call.out.reshape(kept)))]
    groups = _groups(x, dims, call.out.numel())
    items = call.entry(x).items
    operands = [[items[i] for i in group] for group in groups]
    saved = [[numbers[i] for i in group] for group in groups]
    return make_outputs(call.name.split(".")[0], numbers_of(call.out), operands, saved, [times], many=True)


@rule("logsumexp.default")
def _logsumexp(call: Call) -> list[list[Item]]:
    # logsumexp_backward: grad * (self - result).exp()
    x = call.args[0]
    given = call.args[1] if len(call.args) > 1 else call.kwargs.get("dim")
    return [_along(call, x, given, lambda result: (x - result).exp())]


@rule("linalg_vector_norm.default")
def _vector_norm(call: Call) -> list[list[Item]]:
    """``x.norm()``, ``torch.linalg.vector_norm(x, dim=...)`` of order 2: norm_backward hands each
    element ``grad * (self / norm)``, the quotient 0 where the norm is 0 (``masked_fill_``: a
    gradient that is inf or nan still makes nan)."""
    x = call.args[0]
    order = float(call.args[1] if len(call.args) > 1 else call.kwargs.get("ord", 2))
    if call.kwargs.get("dtype") not in (None, x.dtype):
        raise _into_another_dtype(call)
    if order != 2.0:
        raise NotReplayableError(f"linalg_vector_norm of order {order:g}")
    given = call.args[2] if len(call.args) > 2 else call.kwargs.get("dim")
    return [_along(call, x, given, lambda norm: (x / norm).masked_fill(norm == 0, 0))]


@rule("amax.default", "amin.default")
def _extreme_counted(call: Call) -> list[list[Item]]:
    """``x.amax(dim=..., keepdim=...)`` (and ``amin``; no ``dim``: the whole tensor): PyTorch's
    backward (``scale_grad_by_count``) hands each element ``(grad / count) * mask``, ``count`` the
    elements of its row equal to the result, ``mask`` 1 for those and 0 for the others: an element
    not picked gets ``(grad / count) * 0``, -0.0 for a negative gradient, nan for an infinite one."""
    x = call.args[0]
    y = call.out
    given = call.args[1] if len(call.args) > 1 else call.kwargs.get("dim", ())
    dims = sorted({d % x.dim() for d in ([given] if isinstance(given, int) else list(given))}) if x.dim() else []
    reduced = dims or list(range(x.dim()))
    keepdim = bool(call.args[2] if len(call.args) > 2 else call.kwargs.get("keepdim", False))
    kept = y if keepdim or not x.dim() else y.reshape([1 if d in reduced else s for d, s in enumerate(x.shape)])
    hits = x == kept
    counts = hits.sum(reduced, keepdim=True).to(x.dtype).broadcast_to(x.shape) if x.dim() else hits.to(x.dtype)
    flags = [in_dtype(v, call.single) for v in numbers_of(hits.to(x.dtype))]
    each = [in_dtype(v, call.single) for v in numbers_of(counts)]
    groups = _groups(x, reduced, y.numel())
    items = call.entry(x).items
    operands = [[items[i] for i in group] for group in groups]
    saved = [[(each[i], flags[i]) for i in group] for group in groups]
    return [make_outputs(call.name.split(".")[0], numbers_of(y), operands, saved, [_counted], many=True)]


def _counted(g: Any, count: Any, hit: Any) -> Any:
    """``(g / count) * hit``: ``scale_grad_by_count``'s share of one element (``hit`` 1 or 0)."""
    return divided(g, count) * hit


@rule("max.default", "min.default")
def _extreme(call: Call) -> list[list[Item]]:
    x = call.args[0]
    y = call.out
    # evenly_distribute_backward: grad / count on each element equal to the result (nan: each nan)
    hits = torch.isnan(x) if bool(torch.isnan(y)) else x == y
    count = in_dtype(float(hits.sum()), call.single)
    flags = numbers_of_index(hits.reshape(-1).to(torch.int64))
    saved = [[count if f else MASKED for f in flags]]
    return [make_outputs(call.name.split(".")[0], numbers_of(y), [call.entry(x).items], saved, [divided], many=True)]


# ---- softmax and the losses, with PyTorch's own backward formulas ---------------------------------

SOFTMAX_NOTE = (
    "a softmax over a dimension of a vector's width or more, whose backward kernel adds its vectors "
    "in an order of its own"
)


SOFTMAX_OUTER_NOTE = (
    "a softmax along a dimension that is not the last, whose backward kernel computes in an order and grouping "
    "of its own, which the replay does not follow"
)


def _unit(single: bool) -> float:
    return in_dtype(1.0, single)


def _softmax_notes(x: torch.Tensor, dim: int, single: bool) -> set[str]:
    """Where PyTorch's softmax kernels may round otherwise than the replay, and why."""
    notes = set()
    if x.dim() and x.shape[dim] >= _vector_width(single):
        notes.add(SOFTMAX_NOTE)
    if x.dim() > dim + 1:  # not the last dimension, one of size 1 after it too: its own kernel
        notes.add(SOFTMAX_OUTER_NOTE)
    return notes


SOFTMAX_FORMULAS = {
    "log_softmax": ("logsumexp", "Σg", "g − exp(y)·Σg"),
    "softmax": ("Σy", "Σ g·y", "(g − Σ g·y)·y"),
}
"""What the nodes the replay adds for a softmax's row are named by: what the row's node holds (its
value: the row's logsumexp, or the sum of softmax's row, 1), the sum of gradients PyTorch's
backward gathers there first (``logsumexp's Σg along dim 1 through x[0]``, ``Σ g·y along dim 0
through x[0]``), and the formula that gives each element its gradient from it (``x[1] in g −
exp(y)·Σg``). Its factors on those rows (``1`` into the
sum, ``-exp(y)`` or ``y`` out) are the formula's, not entries of the Jacobian ∂y[i]/∂x[j]: written as
the chain rule of ``y = x - logsumexp(x)`` (factors ``-1`` in, ``exp(y)`` out), the sum of negated
gradients differs from the negated sum where they cancel (``1 + -1`` is +0, ``-(1 - 1)`` is -0), and
a nan takes another sign: no longer PyTorch's bits."""


def _softmax_rule(call: Call, log: bool) -> list[list[Item]]:
    """``_softmax`` and ``_log_softmax`` along ``dim``: per row, an input node per element and one
    node for the row's sum that PyTorch's backward computes first (``sum(g)``, or ``sum(g * y)``),
    then each element's gradient as its kernel writes it: ``g - exp(y) * sum`` for log_softmax,
    ``(g - sum) * y`` for softmax (named by ``SOFTMAX_FORMULAS``)."""
    x, dim = call.args[0], call.args[1] % max(call.args[0].dim(), 1)
    y = call.out
    single = call.single
    entry = call.entry(x)
    call.notes.update(_softmax_notes(x, dim, single))
    rows = _groups(x, [dim] if x.dim() else [], x.numel() // max(x.shape[dim] if x.dim() else 1, 1))
    ys = [in_dtype(v, single) for v in numbers_of(y)]
    exps = [in_dtype(v, single) for v in (_kernel_exps(y, dim) if log else [])]
    sums = numbers_of(torch.logsumexp(x, dim)) if log else [1.0] * len(rows)
    name = "log_softmax" if log else "softmax"
    holds, gathers, formula = SOFTMAX_FORMULAS[name]
    inputs = _softmax_inputs(call, entry.items, [_unit(single)] * len(ys) if log else ys, name, f"{{}} in {formula}")
    row_of = [0] * len(inputs)
    totals: list[Item] = []
    sum_label = (
        f"{holds}'s {gathers} along dim {dim} through {{}}" if log else f"{gathers} along dim {dim} through {{}}"
    )
    for r, row in enumerate(rows):
        for i in row:
            row_of[i] = r
        saved = [-exps[i] if log else -_unit(single) for i in row]
        kept = [inputs[i] for i in row]
        totals.append(_softmax_sum(call, [entry.items[i] for i in row], kept, saved, sums[r], name, sum_label, log))
    operands_y = [inputs, [totals[row_of[i]] for i in range(len(inputs))]]
    saved_y = [[_unit(single)] * len(inputs), [_unit(single) if log else ys[i] for i in range(len(inputs))]]
    return [make_outputs(name, numbers_of(y), operands_y, saved_y, [times, times])]


def _softmax_inputs(call: Call, items: list[Item], saved: list[Any], name: str, label: str = "") -> list[Item]:
    """A node per element that takes gradient, where its two contributions (its own, and the row
    sum's) are added before one passes on (``saved``: what that one is multiplied by); named by
    ``label`` (``{}``: the element), ``x[0] in name`` by default."""
    inputs = list(items)
    op = engine_op(f"{name} input", 1, (times,))
    for i, item in enumerate(items):
        if isinstance(item, Value):
            inputs[i] = node = graph.make(Value, item.data, op, item, saved[i], None, None)
            call.described.append((node, item, label or f"{{}} in {name}"))
    return inputs


def _softmax_sum(
    call: Call, row: list[Item], inputs: list[Item], saved: list[Any], number: float, name: str, label: str, log: bool
) -> Item:
    """The node of one row's sum, named by ``label`` (``{}``: its first element): the contributions
    of the row's results add up here, in PyTorch's order, and hand each input ``sum * saved`` (for
    log_softmax, a product its input adds onto its own gradient with one rounding: ``fused_times``)."""
    kept = tuple(s if isinstance(x, Value) else None for x, s in zip(inputs, saved, strict=True))
    if all(s is None for s in kept):
        return number
    op = engine_op(f"{name} sum", 0, (fused_times if log else times,))
    total = graph.make(Value, number, op, tuple(inputs), kept, None, None)
    first = next(x for x in row if isinstance(x, Value))
    call.described.append((total, first, label))
    return total


def fused_times(g: Any, s: Any) -> Any:
    """``g * s`` left unrounded until it is added onto the gradient its operand holds, with one
    rounding (``Fused``): log_softmax's backward kernel computes ``g - exp(y) * sum`` as a fused
    multiply-add (measured with torch 2.13, float32 and float64: the plain product and sum differ
    from its result by an ulp in one element of twenty)."""
    return Fused(g, s, isinstance(s, Single))


def _kernel_exps(y: torch.Tensor, dim: int) -> list[float]:
    """``exp(y)`` as log_softmax's backward kernel computes it, element by element: its vectorised
    exp, which differs from torch.exp's by an ulp now and then. Read from the kernel itself: with
    a gradient of 1 at one place of each row and 0 elsewhere (its sum 1), the kernel's result at
    every other place is ``0 - exp(y) * 1``, exactly ``-exp(y)``; a second gradient, 1 at another
    place, gives the first place's. A row of one number (``y`` 0, its exp 1) is read by torch.exp."""
    size = y.shape[dim] if y.dim() else 1
    if size < 2:
        return numbers_of(torch.exp(y))
    backward = torch.ops.aten._log_softmax_backward_data.default
    first, second = torch.zeros_like(y), torch.zeros_like(y)
    first.select(dim, 0).fill_(1)
    second.select(dim, 1).fill_(1)
    exps = -backward(first, y, dim, y.dtype)
    exps.select(dim, 0).copy_(-backward(second, y, dim, y.dtype).select(dim, 0))
    return numbers_of(exps + 0.0)  # an exp(y) of 0 read back as -(0 - 0) is -0: exp(y) is +0 (-0 + 0)


@rule("_log_softmax.default")
def _log_softmax(call: Call) -> list[list[Item]]:
    return _softmax_rule(call, log=True)


@rule("_softmax.default")
def _softmax(call: Call) -> list[list[Item]]:
    return _softmax_rule(call, log=False)


# ---- layer_norm: its backward kernel's sums and fused multiply-adds, per row -----------------------

LAYER_NORM_THREADS_NOTE = (
    "layer_norm's weight and bias gradients, which its backward kernel sums down the rows in one part per "
    "thread and then adds the parts: the replay splits the rows among the threads PyTorch had when the "
    "operation ran, and another number at the backward pass splits them otherwise"
)

LAYER_NORM_NAN_NOTE = (
    "layer_norm of a row whose gradient holds an infinity or a nan, which makes the row's gradient nan: "
    "which nan's sign the kernel's fused multiply-adds keep, the replay does not follow"
)

LAYER_NORM_MEASURED_NOTE = (
    "layer_norm, whose backward kernel's order of adding and fused multiply-adds were measured on x86-64 "
    "with AVX2 (torch 2.13); on this processor its kernel may add or fuse otherwise"
)


def _rule_of(g: Any, rule: Callable[..., Any], *saved: Any) -> Any:
    """An edge of a node whose edges compute in several ways: its saved tuple names its own rule."""
    return rule(g, *saved)


def _fused_after(g: Any, a: Any, b: Any) -> Any:
    """``(g * a) * b``, its second product left unrounded until it is added onto the running sum
    with one rounding (``Fused``): a vector kernel's ``acc + (g * a) * b`` contracted into a fused
    multiply-add."""
    return Fused(g * a, b, isinstance(b, Single))


def _cubed_scaled(g: Any, a: Any, scale: Any) -> Any:
    """``g * a * a * a * scale``, left to right, each product rounded (layer_norm's ``b``)."""
    return (((g * a) * a) * a) * scale


def _row_parts(call: Call, root: Value, n: int, single: bool, name: str, first: Value) -> list[tuple[Value, bool]]:
    """The node each of a row's ``n`` contributions is added into as layer_norm's backward kernel
    adds them (``vec::map_reduce_all`` and ``reduce_all``), and whether the kernel fuses its last
    product into that addition. Below a vector's width the row is one vector, its lanes added in
    turn. From one width up, lane ``k`` adds the numbers ``k``, ``k + width``... (the first vector as
    it is), the tail's numbers added onto the first lanes with the last product fused (measured:
    the compiler contracts the tail's ``acc + map(...)``, not the loop's); the lanes are then added
    pairwise, halves onto halves (float32: each lane onto the one half a vector away, down to one),
    or in turn (float64)."""
    width = _avx2_width(single)
    op = engine_op(f"{name} part", 1, (times,))
    one = in_dtype(1.0, single)
    if n < width:
        return [(root, False)] * n
    levels: list[list[Value]] = [[root]]
    if single:
        size = 2
        while size <= width:  # a level of `size` nodes; node k adds nodes k and k + size of the next
            parents = levels[-1]
            level: list[Value] = [root] * size
            for k in reversed(range(size)):  # the first made last: it runs first
                level[k] = node = graph.make(Value, 0.0, op, parents[k % (size // 2)], one, None, None)
                call.described.append(
                    (node, first, f"{name}, its {k + 1} of {size} partial sums, over the row of {{}}")
                )
            levels.append(level)
            size *= 2
    else:
        lanes: list[Value] = [root] * width
        for k in reversed(range(width)):
            lanes[k] = node = graph.make(Value, 0.0, op, root, one, None, None)
            call.described.append((node, first, f"{name}, lane {k + 1} of {width}, over the row of {{}}"))
        levels.append(lanes)
    lanes = levels[-1]
    tail = n - n % width
    return [(lanes[j % width], j >= tail and j >= width) for j in range(n)]


def _thread_rows(m: int) -> list[range]:
    """The rows each thread of layer_norm's backward kernel sums the weight's and bias's gradients over
    (``at::parallel_for`` over ``m`` rows, one at least each: ``min(threads, m)`` threads, ``ceil(m /
    threads)`` rows apiece, in order), for the threads PyTorch has now."""
    threads = min(torch.get_num_threads(), m) if m > 1 else 1
    chunk = -(-m // max(threads, 1))
    return [range(start, min(m, start + chunk)) for start in range(0, m, chunk)] if m else []


def _down_the_rows(call: Call, item: Item, parts: int, single: bool, name: str) -> list[Item]:
    """The nodes one element of layer_norm's weight or bias gets its gradient through: a thread's
    part of the rows each (added onto zeros, as the kernel's buffer of zeros adds), the parts then
    added in turn onto +0.0 (``from_zeros``)."""
    if not isinstance(item, Value):
        return [item] * parts
    total = from_zeros(call, item, single)
    if parts == 1:
        return [total]
    op = engine_op(f"{name} part", 1, (times,))
    out: list[Item] = [total] * parts
    for t in reversed(range(parts)):
        out[t] = node = graph.make(Value, item.data, op, total, in_dtype(1.0, single), None, None)
        call.described.append((node, item, f"{{}}'s gradient from the rows of thread {t + 1} of {parts}"))
    return out


@rule("native_layer_norm.default")
def _layer_norm(call: Call) -> list[list[Item]]:
    """``F.layer_norm``, ``nn.LayerNorm`` (``native_layer_norm``): over the last dimensions, ``m`` rows
    of ``n`` numbers. Its CPU backward kernel (``LayerNormBackwardKernelImplInternal``), per row,
    with ``a`` the row's rstd and ``mean`` its mean (the forward's): ``ds`` and ``db``, the row's sums
    of ``dy * x * γ`` and ``dy * γ`` (``_row_parts``); ``b = fma(db, mean, -ds) * a * a * a * (1/n)``
    and ``c = fma(-b, mean, -(db * a) * (1/n))``; ``dx = fma(b, x, (a * dy) * γ) + c``. Down the
    rows, one part per thread (``_thread_rows``): the weight's ``fma(dy, fma(a, x, -a * mean), part)``
    and the bias's ``part + dy``. Measured with torch 2.13 on x86-64 with AVX2, every element equal:
    the kernel's fused multiply-adds are the compiler's contractions there.

    The replay's nodes per row: the row's ``ds`` and ``db`` (and the partial sums they add),
    ``t = fma(db, mean, -ds)``, ``b``, ``c``, and one input node per element, where ``(a * dy) * γ``
    arrives first, ``b * x`` is added onto it with one rounding, then ``c``."""
    x, shape, weight, bias = call.args[:4]
    out, mean, rstd = call.outputs
    single = call.single
    n = math.prod(shape)
    m = x.numel() // n if n else 0
    _layer_norm_refusals_and_notes(call, x, weight, bias)
    fuse = _kernels_fuse()
    product = fused_times if fuse else times
    after = _fused_after if fuse else in_turn
    xs = call.entry(x).items
    gammas, betas = _items_of(call, weight), _items_of(call, bias)
    x_numbers = [in_dtype(v, single) for v in numbers_of(x)]
    g_numbers = [in_dtype(v, single) for v in numbers_of(weight)] if weight is not None else []
    means = [in_dtype(v, single) for v in numbers_of(mean)]
    rstds = [in_dtype(v, single) for v in numbers_of(rstd)]
    scale = in_dtype(1.0 / n, single) if n else 0.0
    rows = _thread_rows(m)
    if len(rows) > 1 and any(isinstance(v, Value) for v in (*gammas, *betas)):
        call.notes.add(LAYER_NORM_THREADS_NOTE)
    operands: list[list[Item]] = [[] for _ in range(m * n)]
    saved: list[list[Any]] = [[] for _ in range(m * n)]
    for i in range(m):
        a, mu = rstds[i], means[i]
        row = range(i * n, (i + 1) * n)
        if any(isinstance(xs[p], Value) for p in row):
            _layer_norm_row(call, i, n, xs, x_numbers, g_numbers, (a, mu, scale), operands, saved, (product, after))
    _layer_norm_parameters(call, (gammas, betas), x_numbers, (rstds, means), rows, n, operands, saved)
    name = "layer_norm"
    made = make_outputs(name, numbers_of(out), operands, [tuple(s) for s in saved], [_rule_of], many=True)
    return [made, list(numbers_of(mean)), list(numbers_of(rstd))]


def _layer_norm_refusals_and_notes(call: Call, x: torch.Tensor, weight: Any, bias: Any) -> None:
    """A weight or bias of another type than the input refused; the reasons a pass may differ,
    known before the pass (the processor it was measured on, a nan's sign in the gradient)."""
    for t in (weight, bias):
        if isinstance(t, torch.Tensor) and t.dtype != x.dtype:
            raise NotReplayableError("layer_norm with a weight or bias of another type than its input")
    if not _avx2_build_runs():
        call.notes.add(LAYER_NORM_MEASURED_NOTE)
    call.notes.add(LAYER_NORM_NAN_NOTE)  # the gradient is not known yet: the reason a nan's sign may differ


def _items_of(call: Call, t: Any) -> list[Item]:
    """An optional operand's elements (a weight or bias: none where it is None)."""
    if t is None:
        return []
    entry = call.entries.get(id(t))
    return entry.items if entry is not None else constant_items(t)


def _layer_norm_parameters(
    call: Call,
    parameters: tuple[list[Item], list[Item]],
    x_numbers: list[Any],
    stats: tuple[list[Any], list[Any]],
    rows: list[range],
    n: int,
    operands: list[list[Item]],
    saved: list[list[Any]],
) -> None:
    """Each element's edges to the weight's and the bias's part of its thread (``_down_the_rows``):
    the weight's ``dy * x̂`` (``x̂ = fma(a, x, -a * mean)``, one rounding where the kernels fuse),
    the bias's ``dy``."""
    gammas, betas = parameters
    rstds, means = stats
    single, fuse = call.single, _kernels_fuse()
    product = fused_times if fuse else times
    one = in_dtype(1.0, single)
    thread_of = [t for t, part in enumerate(rows) for _ in part]
    weight_parts = [_down_the_rows(call, v, len(rows), single, "layer_norm weight") for v in gammas]
    bias_parts = [_down_the_rows(call, v, len(rows), single, "layer_norm bias") for v in betas]
    for i in range(len(thread_of)):
        a, mu = rstds[i], means[i]
        row = range(i * n, (i + 1) * n)
        if gammas:
            shift = -a * mu  # the kernel's -a * mean, rounded once
            for j, p in enumerate(row):
                xh = fused(a, x_numbers[p], shift, single) if fuse else a * x_numbers[p] + shift
                operands[p].append(weight_parts[j][thread_of[i]])
                saved[p].append((product, xh))
        if betas:
            for j, p in enumerate(row):
                operands[p].append(bias_parts[j][thread_of[i]])
                saved[p].append((times, one))


def _layer_norm_row(
    call: Call,
    i: int,
    n: int,
    xs: list[Item],
    x_numbers: list[Any],
    g_numbers: list[Any],
    constants: tuple[Any, Any, Any],
    operands: list[list[Item]],
    saved: list[list[Any]],
    rules: tuple[Callable[..., Any], Callable[..., Any]],
) -> None:
    """Row ``i``'s nodes of layer_norm's ``dx`` (made in the order that has each run as the kernel
    computes: the reverse pass runs the latest first), and each of its results' edges into them."""
    a, mu, scale = constants
    product, after = rules
    single = call.single
    one = in_dtype(1.0, single)
    row = range(i * n, (i + 1) * n)
    first = next(x for x in (xs[p] for p in row) if isinstance(x, Value))
    op = engine_op("layer_norm", 0, (_rule_of,))

    def node(kept: Sequence[Item], rules: Sequence[tuple[Any, ...]], text: str) -> Value:
        made = graph.make(Value, 0.0, op, tuple(kept), tuple(rules), None, None)
        call.described.append((made, first, text))
        return made

    inputs: dict[int, Value] = {}
    for p in row:
        x = xs[p]
        if isinstance(x, Value):
            inputs[p] = node([x], [(times, one)], "")
            call.described[-1] = (inputs[p], x, "{} in layer_norm")
    kept = list(inputs.values())
    c = node(kept, [(times, one)] * len(kept), "layer_norm's c for the row of {}")
    b = node(
        [c, *kept], [(product, -mu), *((product, x_numbers[p]) for p in inputs)], "layer_norm's b for the row of {}"
    )
    t = node([b], [(_cubed_scaled, a, scale)], "layer_norm's fma(db, mean, -ds) for the row of {}")
    db = node([t, c], [(product, mu), (in_turn, a, -scale)], "layer_norm's db, the row's sum of dy·γ, for {}")
    ds = node([t], [(times, -one)], "layer_norm's ds, the row's sum of dy·x·γ, for {}")
    ds_parts = _row_parts(call, ds, n, single, "layer_norm's ds", first)
    db_parts = _row_parts(call, db, n, single, "layer_norm's db", first)
    for j, p in enumerate(row):
        gamma = g_numbers[j] if g_numbers else None
        if p in inputs:
            operands[p].append(inputs[p])
            saved[p].append((times, a) if gamma is None else (in_turn, a, gamma))
        (s_node, s_fused), (b_node, b_fused) = ds_parts[j], db_parts[j]
        operands[p] += [s_node, b_node]
        if gamma is None:
            saved[p] += [(product if s_fused else times, x_numbers[p]), (times, one)]
        else:
            saved[p] += [(after if s_fused else in_turn, x_numbers[p], gamma), (product if b_fused else times, gamma)]


# ---- batch_norm: its backward kernel's sums per channel, in its two paths --------------------------

BATCH_NORM_LAYOUT_NOTE = (
    "batch_norm, replayed as its backward kernel runs for a gradient laid out row-major, as its input is: a "
    "gradient that reaches it laid out otherwise (the one number y.sum().backward() hands back, expanded; the "
    "result used transposed) takes PyTorch's other path, whose sums the replay does not follow"
)

BATCH_NORM_THREADS_NOTE = (
    "batch_norm of one number per channel and example, whose backward kernel sums each channel's gradient in "
    "one part per thread and then adds the parts: the replay splits the batch among the threads PyTorch had "
    "when the operation ran, and another number at the backward pass splits it otherwise"
)

BATCH_NORM_NAN_NOTE = (
    "batch_norm of a channel whose gradient holds an infinity or a nan, which makes the channel's gradient nan: "
    "which nan's sign the kernel's sums and fused multiply-adds keep, the replay does not follow"
)

NAN_ONLY_NOTES = frozenset({LAYER_NORM_NAN_NOTE, BATCH_NORM_NAN_NOTE})
"""Reasons known at the forward pass only as possible, which apply where a gradient holds an
infinity or a nan: a pass whose gradients are all finite does not give them."""

BATCH_NORM_MEASURED_NOTE = (
    "batch_norm, whose backward kernel's order of adding and fused multiply-adds were measured on x86-64 "
    "with AVX2 (torch 2.13); on this processor its kernel may add or fuse otherwise"
)

PROCESSOR_NOTES = frozenset({LAYER_NORM_MEASURED_NOTE, BATCH_NORM_MEASURED_NOTE})
"""The reasons of operations whose backward kernels were measured as their AVX2 build runs and are
given only where another runs: a pass with one may match under the kernels the replay follows
(``watch.kernels_note``). The other reasons (an order of adding, a nan's sign, a smooth loss's nan
on another processor) are the same whatever the kernels' settings; the matrix products' are
MKL's, whose path the note also picks (``watch.MATRIX_NOTES``)."""


@dataclass
class _Channel:
    """What batch_norm's backward kernel reads for one channel: its mean and ``invstd`` (the batch's,
    or in eval mode the running ones), its weight (1 without one), the batch's size and the numbers
    per example in its plane, the type, whether it runs the channels-last path (one number per
    channel and example: its sums are stored back in the tensor's type, the channel in a full vector
    or the tail), and whether the kernel's products fuse into the additions after them
    (``_kernels_fuse``)."""

    mean: Any
    invstd: Any
    weight: Any
    batch: int
    plane: int
    single: bool
    stored: bool
    full_vector: bool
    fuse: bool


class _Subtracted(Single):
    """A number a kernel subtracts from a running value (``acc - v``): read alone it is ``-v``; added
    onto a number ``acc``, from either side, it gives ``acc - v`` in its type. The same but for a nan:
    ``acc - v`` keeps ``v``'s nan as it is (x86-64 hands on a nan operand's bits), ``acc + (-v)`` its
    sign flipped."""

    __slots__ = ("_single", "_subtrahend")

    _single: bool
    _subtrahend: float

    def __new__(cls, v: float, single: bool) -> _Subtracted:
        self = super().__new__(cls, -float(v))
        self._single = single
        self._subtrahend = float(v)
        return self

    def __add__(self, other: float) -> float:  # type: ignore[override]  # a Single, or a float for float64
        return in_dtype(float(other) - self._subtrahend, self._single)

    __radd__ = __add__  # type: ignore[assignment]  # as __add__


def _count(channel: _Channel) -> int:
    """``N``, the numbers of the channel the kernel divides by."""
    return channel.batch * channel.plane


def _summed(g: Any, channel: _Channel) -> float:
    """A channel's sum as the kernel holds it: added onto +0.0 in double (the engine starts from -0.0:
    ``+ 0.0`` turns a sum of zeros of either sign into +0.0), stored back in the tensor's type on the
    channels-last path."""
    total = float(g) + 0.0
    return round32(total) if channel.stored and channel.single else total


def _minus_grad_mean(g: Any, channel: _Channel) -> Any:
    """``-grad_mean``, the sum of the channel's ``dy`` divided by ``N`` rounded to the tensor's type,
    subtracted from ``dy`` (``_Subtracted``: a nan's sign kept, as the kernel's subtraction keeps it)."""
    return _Subtracted(in_dtype(_summed(g, channel) / _count(channel), channel.single), channel.single)


def _k_of(g: Any, channel: _Channel) -> Any:
    """``k = (scalar_t) dotp * invstd * invstd / N``, left to right in the tensor's type."""
    single = channel.single
    dotp = in_dtype(float(g) + 0.0, single)
    return ((dotp * channel.invstd) * channel.invstd) / in_dtype(float(_count(channel)), single)


def _minus_centered_k(g: Any, centered: Any, channel: _Channel) -> Any:
    """``-(x - mean) * k``, added onto ``dy - grad_mean``: fused into that subtraction where the
    compiler contracts it (the contiguous path; the channels-last path's full vectors, not its tail:
    measured)."""
    k = _k_of(g, channel)
    if channel.fuse and (channel.full_vector or not channel.stored):
        return Fused(-centered, k, channel.single)
    return _Subtracted(centered * k, channel.single)


def _weight_of_dotp(g: Any, channel: _Channel) -> Any:
    """The weight's gradient, ``dotp * invstd``: in double on the contiguous path (``dotp`` held in
    double for float32), in the tensor's type from the stored ``dotp`` on the channels-last path."""
    return in_dtype(_summed(g, channel) * float(channel.invstd), channel.single)


def _bias_of_sum(g: Any, channel: _Channel) -> Any:
    """The bias's gradient, the channel's sum of ``dy``, in the tensor's type."""
    return in_dtype(_summed(g, channel), channel.single)


def _in_double(g: Any) -> float:
    """A part's sum handed on as a double: the kernel adds its parts in double (``acc_type``)."""
    return float(g)


def _through_input(g: Any, channel: _Channel) -> Any:
    """``dx``'s last step, ``(...) * invstd * w``, left to right (``w`` 1 without a weight: exact)."""
    return (g * channel.invstd) * channel.weight


@rule("native_batch_norm.default")
def _batch_norm(call: Call) -> list[list[Item]]:
    """``F.batch_norm``, ``nn.BatchNorm1d``/``2d``/``3d`` (``native_batch_norm``), training (the batch's
    statistics) and in eval mode (the running ones), as ``batch_norm_cpu_backward_kernel`` computes it
    for an input and a gradient laid out row-major. Per channel it sums ``dy`` and ``dotp``, the sum
    of ``(x - mean) * dy``; training, ``dx = (dy - sum / N - (x - mean) * k) * invstd * w`` with
    ``k = dotp * invstd * invstd / N``; in eval mode ``dx = dy * invstd * w``; the weight's gradient
    is ``dotp * invstd``, the bias's the sum.

    Its sums follow the kernel's two paths. One number per channel and example (an (N, C) batch,
    ``image_size`` 1) runs the channels-last path: the batch split among the threads
    (``_thread_rows``), each thread's part summed in the tensor's type (``dotp``'s products fused
    into it), the parts added in double, stored back in the tensor's type. A plane of several
    numbers per channel and example runs the contiguous path: each plane summed in vectors
    (``_row_parts``, the tail's product fused into its sum), the planes added in double. Measured
    with torch 2.13 on x86-64 with AVX2, for a gradient laid out row-major: 400 of 400 random passes
    (147,913 elements) equal to the bit with two threads, 100 of 100 with one."""
    x, weight, bias, _, _, training = call.args[:6]
    out, save_mean, save_invstd = call.outputs
    _batch_norm_refusals_and_notes(call, x, weight, bias)
    single = call.single
    kept = _batch_norm_channels(call)
    batch, channels, plane = kept[0].batch if kept else 0, len(kept), kept[0].plane if kept else 0
    rows = _thread_rows(batch) if plane == 1 else [range(n, n + 1) for n in range(batch)]
    if plane == 1 and len(rows) > 1:
        call.notes.add(BATCH_NORM_THREADS_NOTE)
    operands: list[list[Item]] = [[] for _ in range(x.numel())]
    saved: list[list[Any]] = [[] for _ in range(x.numel())]
    xs = call.entry(x).items
    x_numbers = [in_dtype(v, single) for v in numbers_of(x)]
    gammas, betas = _items_of(call, weight), _items_of(call, bias)
    for c in range(channels):
        places = [(n * channels + c) * plane + i for n in range(batch) for i in range(plane)]
        centered = {p: x_numbers[p] - kept[c].mean for p in places}
        parameters = (gammas[c] if gammas else None, betas[c] if betas else None)
        _batch_norm_channel(call, kept[c], places, (xs, centered), parameters, bool(training), rows, (operands, saved))
    made = make_outputs("batch_norm", numbers_of(out), operands, [tuple(s) for s in saved], [_rule_of], many=True)
    return [made, list(numbers_of(save_mean)), list(numbers_of(save_invstd))]


def _batch_norm_channels(call: Call) -> list[_Channel]:
    """What the backward kernel reads for each channel (``_Channel``): training, the batch's mean
    and ``invstd`` PyTorch's forward saved; in eval mode the running mean, and ``invstd`` from the
    running variance as the kernel computes it (``_inverse_root``), both as the operation read them."""
    x, weight, _, running_mean, running_var, training = call.args[:6]
    eps = float(call.args[7]) if len(call.args) > 7 else float(call.kwargs.get("eps", 1e-5))
    _, save_mean, save_invstd = call.outputs
    single = call.single
    batch, channels = x.shape[0], x.shape[1]
    plane = x.numel() // (batch * channels) if batch * channels else 0
    if training:
        means = [in_dtype(v, single) for v in numbers_of(save_mean)]
        invstds = [in_dtype(v, single) for v in numbers_of(save_invstd)]
    else:
        means = [in_dtype(v, single) for v in numbers_of(running_mean)]
        invstds = [in_dtype(_inverse_root(v, eps), single) for v in numbers_of(running_var)]
    one = in_dtype(1.0, single)
    weights = [in_dtype(v, single) for v in numbers_of(weight)] if weight is not None else [one] * channels
    full = channels - channels % _avx2_width(single)
    fuse = _kernels_fuse()
    return [
        _Channel(means[c], invstds[c], weights[c], batch, plane, single, plane == 1, c < full, fuse)
        for c in range(channels)
    ]


def _inverse_root(v: float, eps: float) -> float:
    """``1 / std::sqrt(var + eps)`` in double, as the kernel computes a running variance's ``invstd``
    (a negative sum's root nan, a zero's inverse inf, where Python would raise)."""
    total = v + eps
    if total < 0 or math.isnan(total):
        return math.nan
    return 1.0 / math.sqrt(total) if total > 0 else math.inf


def _channels_last(x: torch.Tensor) -> bool:
    """Whether PyTorch reads ``x``'s strides as channels-last images (``suggest_memory_format``, by
    c10's ``is_channels_last_strides_2d`` and ``_3d``), whose kernels then take their channels-last
    paths: also a tensor contiguous row-major at once (one channel, or images of one pixel, made
    with ``memory_format=torch.channels_last``), which ``is_contiguous()`` does not tell apart."""
    order = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}.get(x.dim())
    sizes, strides = x.shape, x.stride()
    if order is None or strides[1] == 0:
        return False
    least = 0
    for d in order:
        if sizes[d] == 0 or strides[d] < least or (d == 0 and least == strides[1]):
            return False  # (the last: N111 with equal strides, read as row-major)
        least = strides[d] * (sizes[d] if sizes[d] > 1 else 1)
    return True


def _batch_norm_refusals_and_notes(call: Call, x: torch.Tensor, *others: Any) -> None:
    """An input not laid out row-major (transposed, channels-last images), which takes other paths
    of PyTorch's kernels, or a weight, bias or running statistic of another type than the input,
    refused; the reasons a pass may differ, known before the pass (the gradient's layout and a nan's
    sign are not known yet; the processor it was measured on)."""
    if not x.is_contiguous() or _channels_last(x):
        raise NotReplayableError("batch_norm of an input not laid out row-major")
    for t in (*others, *call.args[3:5]):
        if isinstance(t, torch.Tensor) and t.dtype != x.dtype:
            raise NotReplayableError(
                "batch_norm with a weight, bias or running statistic of another type than its input"
            )
    if not _avx2_build_runs():
        call.notes.add(BATCH_NORM_MEASURED_NOTE)
    call.notes |= {BATCH_NORM_LAYOUT_NOTE, BATCH_NORM_NAN_NOTE}


def _batch_norm_channel(
    call: Call,
    channel: _Channel,
    places: list[int],
    items: tuple[list[Item], dict[int, Any]],
    parameters: tuple[Item | None, Item | None],
    training: bool,
    rows: list[range],
    edges: tuple[list[list[Item]], list[list[Any]]],
) -> None:
    """One channel's nodes (made in the order that has each run as the kernel computes: the reverse
    pass runs the latest first) and each of its results' edges into them (``edges``: the results'
    operands and saved rules, by place). Training, each input element's node gets ``dy`` first, then
    ``-grad_mean`` from the channel's sum, then ``-(x - mean) * k`` from its ``dotp``, and hands on
    ``(...) * invstd * w``; in eval mode a result hands its element ``dy * invstd * w`` directly. The
    sum and ``dotp`` add their parts (``_batch_norm_parts``) in double and hand the weight and the bias
    theirs."""
    xs, centered = items
    gamma, beta = parameters
    operands, saved = edges
    takes = [p for p in places if isinstance(xs[p], Value)]
    op = engine_op("batch_norm", 0, (_rule_of,))
    first = next((v for v in (*(xs[p] for p in takes), gamma, beta) if isinstance(v, Value)), None)
    if first is None:
        return

    def node(kept: Sequence[Item], rules: Sequence[tuple[Any, ...]], text: str, named: Value = first) -> Value:
        made = graph.make(Value, 0.0, op, tuple(kept), tuple(rules), None, None)
        call.described.append((made, named, text))
        return made

    inputs: dict[int, Value] = {}
    for p in takes:
        x = xs[p]
        assert isinstance(x, Value)
        if training:
            inputs[p] = node([x], [(_through_input, channel)], "{} in batch_norm", x)
            operands[p].append(inputs[p])
            saved[p].append((times, in_dtype(1.0, channel.single)))
        else:
            operands[p].append(x)
            saved[p].append((_through_input, channel))
    dotp_edges: list[tuple[Value, tuple[Any, ...]]] = [
        (inputs[p], (_minus_centered_k, centered[p], channel)) for p in inputs
    ]
    sum_edges: list[tuple[Value, tuple[Any, ...]]] = [(inputs[p], (_minus_grad_mean, channel)) for p in inputs]
    if isinstance(gamma, Value):
        dotp_edges.append((gamma, (_weight_of_dotp, channel)))
    if isinstance(beta, Value):
        sum_edges.append((beta, (_bias_of_sum, channel)))
    totals: list[Value | None] = [None, None]
    for k, (kept, text) in enumerate(((dotp_edges, "dotp, the sum of (x - mean)·dy"), (sum_edges, "sum of dy"))):
        if kept:
            made = node([v for v, _ in kept], [r for _, r in kept], f"batch_norm's {text} over the channel of {{}}")
            totals[k] = made
    _batch_norm_parts(call, channel, places, centered, rows, totals, edges, first)


def _batch_norm_parts(
    call: Call,
    channel: _Channel,
    places: list[int],
    centered: dict[int, Any],
    rows: list[range],
    totals: list[Value | None],
    edges: tuple[list[list[Item]], list[list[Any]]],
    first: Value,
) -> None:
    """The parts a channel's ``dotp`` and sum (``totals``, None where nothing needs one) add in double,
    made last part first, and each result's edges into them. The channels-last path: one part per
    thread's rows of the batch, summed in the tensor's type, ``dotp``'s products fused into it. The
    contiguous path: one part per example, its plane summed in vectors (``_row_parts``), the tail's
    products fused into ``dotp``'s lanes."""
    operands, saved = edges
    single, fuse = channel.single, channel.fuse
    product = fused_times if fuse else times
    one = in_dtype(1.0, single)
    op = engine_op("batch_norm part", 0, (_rule_of,))
    names = ("batch_norm's dotp", "batch_norm's sum of dy")
    plane, parts = channel.plane, rows
    for t in reversed(range(len(parts))):
        for k in (1, 0):
            total = totals[k]
            if total is None:
                continue
            part = graph.make(Value, 0.0, op, (total,), ((_in_double,),), None, None)
            where = f"thread {t + 1} of {len(parts)}'s rows" if channel.stored else f"example {t + 1}'s plane"
            call.described.append((part, first, f"{names[k]} over {where} of the channel of {{}}"))
            if channel.stored:
                lanes = [(part, fuse) for _ in parts[t]]
            else:
                lanes = _row_parts(call, part, plane, single, names[k], first)
            positions = [places[n * plane + i] for n in parts[t] for i in range(plane)]
            for p, (lane, fused_here) in zip(positions, lanes, strict=True):
                operands[p].append(lane)
                if k == 0:
                    saved[p].append((product if fused_here else times, centered[p]))
                else:
                    saved[p].append((times, one))


def _reduction(call: Call, position: int) -> int:
    return int(call.kwargs.get("reduction", call.args[position] if len(call.args) > position else 1))


def _loss(
    call: Call, name: str, columns: list[tuple[list[Item], list[Any]]], gradient: Callable[..., Any]
) -> list[Item]:
    """A loss reduced to one number (mean or sum): one node over every element that takes gradient."""
    operands = [x for items, _ in columns for x in items]
    saved = [s for _, ss in columns for s in ss]
    return make_outputs(name, numbers_of(call.out), [operands], [saved], [gradient], many=True)


@rule("mse_loss.default")
def _mse_loss(call: Call) -> list[list[Item]]:
    # mse_loss_backward: norm * (self - target) * grad, norm = 2 / numel for a mean, else 2
    x, target = call.args[:2]
    reduction = _reduction(call, 2)
    single = call.single
    norm = in_dtype(2.0 / x.numel() if reduction == 1 else 2.0, single)
    difference = [in_dtype(v, single) for v in numbers_of(x - target)]
    saved = [norm * d for d in difference]
    if reduction == 0:
        return elementwise(call, "mse_loss", (x, target), ((saved, times), ([-s for s in saved], times)))
    if tuple(x.shape) != tuple(target.shape):
        raise NotReplayableError("mse_loss with a broadcast target")
    # a float32 operand beside a float64 one (a NumPy target): its float64 gradient rounded to
    # float32, the other's kept in float64
    columns = [(rounded_back(call, x), saved), (rounded_back(call, target), [-s for s in saved])]
    return [_loss(call, "mse_loss", columns, times)]


def _scaled_gradient(g: Any, s: Any, n: Any) -> Any:
    """``(g * s) / n``: a loss's gradient divided by its element count (a mean), as PyTorch orders it."""
    return (g * s) / n


@rule("binary_cross_entropy_with_logits.default")
def _bce_with_logits(call: Call) -> list[list[Item]]:
    # binary_cross_entropy_with_logits_backward: (sigmoid(self) - target) * grad, then / numel (mean)
    x, target = call.args[:2]
    weight = call.args[2] if len(call.args) > 2 else call.kwargs.get("weight")
    pos_weight = call.args[3] if len(call.args) > 3 else call.kwargs.get("pos_weight")
    if weight is not None or pos_weight is not None or call.entry(target).takes_gradient:
        raise NotReplayableError("binary_cross_entropy_with_logits with weights, or a target that takes gradient")
    reduction = _reduction(call, 4)
    single = call.single
    factor = [in_dtype(v, single) for v in numbers_of(torch.sigmoid(x) - target)]
    if reduction == 0:
        return elementwise(call, "binary_cross_entropy_with_logits", (x,), ((factor, times),))
    count = in_dtype(float(x.numel()) if reduction == 1 else 1.0, single)
    columns = [(call.entry(x).items, [(f, count) for f in factor])]
    return [_loss(call, "binary_cross_entropy_with_logits", columns, _scaled_gradient)]


def _bce_gradient(g: Any, a: Any, d: Any, n: Any) -> Any:
    """``((g * (p - y)) / max((1 - p) * p, eps)) / n``: binary_cross_entropy's gradient, in
    PyTorch's order (``n``: the element count of a mean, else 1)."""
    return ((g * a) / d) / n


@rule("binary_cross_entropy.default")
def _bce(call: Call) -> list[list[Item]]:
    # binary_cross_entropy_backward: grad * (input - target) / max((1 - input) * input, EPSILON),
    # then / numel (mean); EPSILON is the float 1e-12 (a float32 constant, float64 tensors too)
    p, target = call.args[:2]
    weight = call.args[2] if len(call.args) > 2 else call.kwargs.get("weight")
    if weight is not None or call.entry(target).takes_gradient:
        raise NotReplayableError("binary_cross_entropy with weights, or a target that takes gradient")
    reduction = _reduction(call, 3)
    single = call.single
    one, eps = in_dtype(1.0, single), in_dtype(round32(1e-12), single)
    probabilities = [in_dtype(v, single) for v in numbers_of(p)]
    targets = [in_dtype(v, single) for v in numbers_of(target.broadcast_to(p.shape))]
    count = in_dtype(float(p.numel()) if reduction == 1 else 1.0, single)
    saved = [(x - t, max((one - x) * x, eps), count) for x, t in zip(probabilities, targets, strict=True)]
    if reduction == 0:
        return elementwise(call, "binary_cross_entropy", (p,), ((saved, _bce_gradient),))
    return [_loss(call, "binary_cross_entropy", [(call.entry(p).items, saved)], _bce_gradient)]


@rule("nll_loss_forward.default")
def _nll_loss(call: Call) -> list[list[Item]]:
    # nll_loss_backward: each row's target element gets -(grad / total_weight) (mean), -grad (sum),
    # or -grad[row] (none: one loss a row, an ignored row's 0 handing nothing back)
    x, target, weight, reduction, ignore = call.args[:5]
    if weight is not None:
        raise NotReplayableError("nll_loss with class weights")
    single = call.single
    classes = x.shape[-1]
    targets = numbers_of_index(target.reshape(-1))
    picked = [r * classes + t for r, t in enumerate(targets) if t != ignore]
    items = call.entry(x).items
    total = call.outputs[1]
    if reduction == 0:
        column = [items[r * classes + t] if t != ignore else 0.0 for r, t in enumerate(targets)]
        minus = [-_unit(single)] * len(column)
        made = make_outputs("nll_loss", numbers_of(call.outputs[0]), [column], [minus], [times])
        return [made, list(numbers_of(total))]
    if reduction == 1:
        saved = [-in_dtype(numbers_of(total)[0], single)] * len(picked)
        gradient: Callable[..., Any] = divided
    else:
        saved, gradient = [-_unit(single)] * len(picked), times
    loss = _loss(call, "nll_loss", [([items[i] for i in picked], saved)], gradient)
    return [loss, list(numbers_of(total))]


@rule("max.dim", "min.dim")
def _extreme_along(call: Call) -> list[list[Item]]:
    """``values, indices = x.max(dim)`` (and ``min``): PyTorch's backward
    (``value_selecting_reduction_backward``) scatters the gradient into a tensor of zeros: each
    result's gradient is written, as it is, at the element its index names, and every other
    element of the row it reduced gets exactly +0.0, whatever the gradient (MASKED): a 0 that the
    operations before it multiply (to -0.0 by a negative number) and that another path's -0.0 is
    added to."""
    x = call.args[0]
    values, indices = call.outputs
    groups = _groups(x, [call.args[1] % x.dim()] if x.dim() else [], values.numel())
    items = call.entry(x).items
    one = _unit(call.single)
    picks = numbers_of_index(indices.reshape(-1))
    operands = [[items[i] for i in group] for group in groups]
    saved = [[one if k == pick else MASKED for k in range(len(g))] for g, pick in zip(groups, picks, strict=True)]
    made = make_outputs(call.name.split(".")[0], numbers_of(values), operands, saved, [times], many=True)
    return [made, [float(i) for i in picks]]


def _selection_dim(call: Call) -> int:
    """The dimension ``sort`` (``dim``, keyword-only in ``sort.stable``) or ``topk`` (after ``k``) runs along."""
    position = 2 if call.name.startswith("topk") else 1
    if call.name == "sort.stable" or len(call.args) <= position:
        return int(call.kwargs.get("dim", -1))
    return int(call.args[position])


@rule("sort.default", "sort.stable", "topk.default")
def _sorted(call: Call) -> list[list[Item]]:
    """``values, indices = x.sort(dim)`` and ``x.topk(k, dim)``: PyTorch's backward
    (``value_selecting_reduction_backward``) scatters the gradient into a tensor of zeros: each
    value's gradient is written, as it is, at the element its index names, and an element ``topk``
    did not pick gets exactly +0.0, whatever the gradient (MASKED, on the first value of its line)."""
    x = call.args[0]
    values, indices = call.outputs
    items = call.entry(x).items
    one = _unit(call.single)
    picks = numbers_of_index(indices.reshape(-1))
    shape = tuple(values.shape) or (1,)
    dim = _selection_dim(call) % len(shape)
    inner, taken, size = math.prod(shape[dim + 1 :]), shape[dim], (tuple(x.shape) or (1,))[dim]
    operands: list[list[Item]] = []
    saved: list[list[Any]] = []
    for p, pick in enumerate(picks):
        line = (p // (taken * inner)) * size * inner + p % inner  # the line's first element in x
        operands.append([items[line + pick * inner]])
        saved.append([one])
        if (p // inner) % taken == 0:  # the line's first value: the elements no value picked get +0.0
            line_picks = {picks[p + j * inner] for j in range(taken)}
            others = [items[line + j * inner] for j in range(size) if j not in line_picks]
            operands[-1] += others
            saved[-1] += [MASKED] * len(others)
    made = make_outputs(call.name.split(".")[0], numbers_of(values), operands, saved, [times], many=True)
    return [made, [float(i) for i in picks]]


@rule("prod.default", "prod.dim_int")
def _prod(call: Call) -> list[list[Item]]:
    """``x.prod()`` and ``x.prod(dim, keepdim)``: ``prod_backward`` hands each element ``grad`` times
    a factor PyTorch computes with its own operations, which the replay computes with the same
    ones on the same numbers (so the same bits): ``result / x`` where no element of ``x`` is 0, else
    the product of the others, as two running products (``cumprod``) from either side
    (``prod_safe_zeros_backward``: the whole tensor flattened, or along ``dim``); of the whole
    tensor with two zeros or more, exactly +0.0 (``zeros_like``)."""
    x = call.args[0]
    y = call.out
    if y.dtype != x.dtype:
        raise _into_another_dtype(call)
    whole = call.name == "prod.default"
    if x.dim() == 0:
        factors = torch.ones_like(x)  # prod_backward: grad itself
    elif whole:
        zeros = int((x == 0).sum())
        if zeros > 1:  # every product of the others is 0: PyTorch's zeros_like, +0.0 whatever the gradient
            made = [[MASKED] * x.numel()]
            return [make_outputs("prod", numbers_of(y), [call.entry(x).items], made, [times], many=True)]
        factors = _others_product(x.contiguous().view(-1), 0).view_as(x) if zeros else y / x
    else:
        dim = call.args[1] % x.dim()
        kept = y if (len(call.args) > 2 and call.args[2]) or call.kwargs.get("keepdim") else y.unsqueeze(dim)
        factors = _others_product(x, dim) if bool((x == 0).any()) else kept / x
    groups = _groups(x, list(range(x.dim())) if whole else [call.args[1] % max(x.dim(), 1)], y.numel())
    items, flat = call.entry(x).items, [in_dtype(v, call.single) for v in numbers_of(factors)]
    operands = [[items[i] for i in group] for group in groups]
    saved = [[flat[i] for i in group] for group in groups]
    return [make_outputs("prod", numbers_of(y), operands, saved, [times], many=True)]


def _others_product(x: torch.Tensor, dim: int) -> torch.Tensor:
    """For each element of ``x``, the product of the others along ``dim``, as PyTorch's
    ``prod_safe_zeros_backward`` makes it: the running product of those before it times the
    running product of those after it."""
    ones = torch.ones_like(x.narrow(dim, 0, 1))
    before = torch.cat([ones, x.narrow(dim, 0, x.shape[dim] - 1)], dim).cumprod(dim)
    after = torch.cat([ones, x.narrow(dim, 1, x.shape[dim] - 1).flip(dim)], dim).cumprod(dim).flip(dim)
    return before * after


# ---- matrix products -----------------------------------------------------------------------------

MATMUL_NOTE = (
    "a matrix product: PyTorch's matrix kernels may add in another order or use fused multiply-adds "
    "(one rounding for a product and a sum)"
)
MATMUL32_NOTE = MATMUL_NOTE + ", of float32 numbers"
"""``MATMUL_NOTE`` of a float32 product: where PyTorch may also multiply in a lower precision."""


def _product(call: Call, a: torch.Tensor, b: torch.Tensor, name: str, bias: Any = None) -> list[list[Item]]:
    """``a @ b`` (2-D by 2-D, 2-D by 1-D, 1-D by 1-D; for ``bmm``, 3-D by 3-D, each batch's matrices
    alone), plus a bias broadcast to the result."""
    ea, eb = call.entry(a), call.entry(b)
    batches = a.shape[0] if name == "bmm" else 1
    a_shape, b_shape = (a.shape[1:], b.shape[1:]) if name == "bmm" else (a.shape, b.shape)
    m = a_shape[0] if len(a_shape) == 2 else 1
    k = a_shape[-1]
    n = b_shape[1] if len(b_shape) == 2 else 1
    single = call.single

    # each batch's elements; PyTorch adds the gradient for mat2 after self's: its expand nodes are
    # made first, run last (an element of b is read by m results, one of a by n)
    b_batches = [eb.items[t * k * n : (t + 1) * k * n] for t in range(batches)]
    a_batches = [ea.items[t * m * k : (t + 1) * m * k] for t in range(batches)]
    if m > 1:
        b_uses = [j for _ in range(m) for j in range(k * n)]
        b_batches = [expand_nodes(call, part, b_uses, single) for part in b_batches]
    if n > 1:
        a_uses = [i for _ in range(n) for i in range(m * k)]
        a_batches = [expand_nodes(call, part, a_uses, single) for part in a_batches]
    operands: list[list[Item]] = []
    saved: list[list[Any]] = []
    for a_items, b_items in zip(a_batches, b_batches, strict=True):
        _dot_products(a_items, b_items, (m, k, n), single, operands, saved)
    if bias is not None:  # addmm: the bias first, saved beta
        bias_items, _ = broadcast_column(call, bias)
        beta = in_dtype(float(call.kwargs.get("beta", 1)), single)
        for p, (xs, ss) in enumerate(zip(operands, saved, strict=True)):
            xs.insert(0, bias_items[p])
            ss.insert(0, beta)
    a_onto, b_onto = _onto_zero(name, m, k, n)
    onto = [*(ea.items if a_onto else ()), *(eb.items if b_onto else ())]
    return [_with_zero_edges(call, name, onto, operands, saved)]


def _with_zero_edges(
    call: Call, name: str, items: Sequence[Item], operands: list[list[Item]], saved: list[list[Any]]
) -> list[Item]:
    """The product's nodes, the first with ``_zero_edges`` to ``items``, noted in ``call.onto_zero``
    (from which operand on its edges are there for the bits alone)."""
    shown = len(operands[0]) if operands else 0
    _zero_edges(items, operands, saved)
    made = make_outputs(name, numbers_of(call.out), operands, saved, [times], many=True)
    if made and isinstance(made[0], Value) and len(graph.operands(made[0])) > shown:
        call.onto_zero.append((made[0], shown))
    return made


def _zero_edges(items: Sequence[Item], operands: list[list[Item]], saved: list[list[Any]]) -> None:
    """An edge of exactly +0.0 (MASKED) from the product's first element to each Value of ``items``
    (``_onto_zero``)."""
    values = [x for x in items if isinstance(x, Value)]
    if operands and values:
        operands[0] += values
        saved[0] += [MASKED] * len(values)


def _onto_zero(name: str, m: int, k: int, n: int) -> tuple[bool, bool]:
    """Whether the gradient of each operand of an ``m × k`` by ``k × n`` product is a matrix product
    whose kernel adds each element's terms onto +0.0, so that an element whose terms are all zeros is
    +0.0 even where they are -0.0 (a gradient of zeros, as a causal mask's first row hands back through
    a softmax): ``bmm``'s both and ``mv``'s vector's (``self.t().mv(grad)``) always; ``mm``'s and
    ``addmm``'s (``grad.mm(mat2.t())``, ``self.t().mm(grad)``) unless that product's inner size is 1
    and both its outer sizes at least 2, where PyTorch's kernel makes each element its one product
    (measured with torch 2.13, float32 and float64). ``dot``'s gradients (``grad * other``) and
    ``mv``'s matrix's (``grad.ger(vec)``) are one product an element, and keep -0.0. The replay gives
    the first element of the result an edge of exactly +0.0 (MASKED) to each element of such an
    operand: added anywhere in a sum, a +0.0 gives what a sum started from it gives."""
    if name == "bmm":
        return True, True
    if name == "mv":
        return False, True
    if name in ("mm", "addmm"):  # a's gradient: (m x n) by (n x k); b's: (k x m) by (m x n)
        return not (n == 1 and m >= 2 and k >= 2), not (m == 1 and k >= 2 and n >= 2)
    return False, False


def _dot_products(
    a_items: Sequence[Item],
    b_items: Sequence[Item],
    sizes: tuple[int, int, int],
    single: bool,
    operands: list[list[Item]],
    saved: list[list[Any]],
) -> None:
    """Append each element of one ``m × k`` by ``k × n`` product, row-major: its operands (the row
    of a, then the column of b) and what each edge saves (the other factor)."""
    m, k, n = sizes
    for i in range(m):
        for j in range(n):
            row = [a_items[i * k + t] for t in range(k)]
            col = [b_items[t * n + j] for t in range(k)]
            row_numbers = [in_dtype(x.data if isinstance(x, Value) else x, single) for x in row]
            col_numbers = [in_dtype(x.data if isinstance(x, Value) else x, single) for x in col]
            operands.append([*row, *col])
            saved.append([*col_numbers, *row_numbers])


@rule("mm.default", "mv.default", "dot.default", "bmm.default")
def _mm(call: Call) -> list[list[Item]]:
    a, b = call.args[:2]
    return _product(call, a, b, call.name.split(".")[0])


@rule("addmm.default")
def _addmm(call: Call) -> list[list[Item]]:
    bias, a, b = call.args[:3]
    if float(call.kwargs.get("alpha", 1)) != 1.0:
        raise NotReplayableError("addmm with alpha other than 1")
    return _product(call, a, b, "addmm", bias)


# ---- views and copies: each element of the result is one element of an operand ------------------

COPIES = {
    "view.default",
    "_unsafe_view.default",
    "reshape.default",
    "t.default",
    "transpose.int",
    "permute.default",
    "unsqueeze.default",
    "squeeze.default",
    "squeeze.dim",
    "squeeze.dims",
    "squeeze_.dim",  # in place: the shape changes, each element stays (matmul of a vector and a matrix)
    "squeeze_.default",
    "squeeze_.dims",
    "unsqueeze_.default",
    "select.int",
    "slice.Tensor",
    "expand.default",
    "clone.default",
    "alias.default",
    "cat.default",
    "stack.default",
    "index.Tensor",
    "gather.default",
    "flip.default",
    "repeat.default",
    "roll.default",
    "index_select.default",
    "unbind.int",
    "split.Tensor",
    "split_with_sizes.default",
    "narrow.default",
    "contiguous.default",
    "_to_copy.default",
    "lift_fresh_copy.default",
    "detach_copy.default",
    "view_copy.default",
    "expand_copy.default",
    "copy_.default",
}


SUMMED_TO_SIZE = {"expand.default", "expand_copy.default"}
"""The copies whose backward is one ``sum_to_size``, a broadcast's, which sums when the shape
changes: see ``expanded``."""


ACCUMULATING = {"index.Tensor", "gather.default", "index_select.default"}
"""The copies whose backward adds the gradients of an element's places one after another into a
tensor of zeros (``index_put_`` with ``accumulate=True``: ``x[indices]``'s; ``scatter_add_``:
``gather``'s, whose places of one element lie along ``dim``, added in turn): see ``accumulated``."""


def _as_float32(g: Any, _one: Any) -> Any:
    """A float64 gradient turned into float32 (``ToCopyBackward``'s ``grad.to(float32)``): rounded once."""
    return in_dtype(round32(float(g)), True)


def _as_float64(g: Any, _one: Any) -> Any:
    """A float32 gradient turned into float64: the same number, added on in float64 from here."""
    return float(g)


def _converted(call: Call) -> list[Item]:
    """``x.to(torch.float64)``, ``x.double()``, ``x.float()``: each element the same number in the
    other type (float64 to float32 rounds, forward); the backward turns the gradient into ``x``'s
    type, element by element."""
    x = call.args[0]
    if {x.dtype, call.out.dtype} != {torch.float32, torch.float64}:
        raise NotReplayableError("_to_copy (a conversion to another type)")
    back = _as_float32 if is_single(x) else _as_float64
    items = call.entry(x).items
    return make_outputs("to", numbers_of(call.out), [items], [[1.0] * len(items)], [back])


def _copies(call: Call) -> list[list[Item]]:
    """Apply the operation to tensors of element numbers (``arange``) in place of the operands:
    its result says which operand element each element of the result is."""
    sources: list[Item] = []
    notes: list[Entry] = []

    def index_of(x: Any) -> Any:
        # an operand of numbers; the indices and masks of index.Tensor (integers, booleans) stay
        if isinstance(x, torch.Tensor) and id(x) in call.entries and x.dtype in DIFFERENTIABLE:
            entry = call.entries[id(x)]
            start = len(sources)
            sources.extend(entry.items)
            notes.append(entry)
            return torch.arange(start, start + x.numel(), dtype=torch.int64).reshape(x.shape)
        if isinstance(x, (list, tuple)):
            return type(x)(index_of(y) for y in x)
        return x

    name = call.name.split(".")[0].rstrip("_")
    if call.name == "gather.default" and call.kwargs.get("sparse_grad"):  # a keyword of its own
        raise NotReplayableError("gather with sparse gradients")
    if call.name == "copy_.default":  # copy_(self, src): the result is src, broadcast to self's shape
        src = call.args[1]
        if src.dtype != call.out.dtype:
            raise NotReplayableError("copy_ between types")
        arranged = index_of(src).broadcast_to(call.out.shape)
        results = [arranged]
        name = "copy"
    else:
        if call.name == "_to_copy.default" and call.kwargs.get("dtype", call.out.dtype) != call.args[0].dtype:
            return [_converted(call)]
        args = index_of(call.args)
        kwargs = {
            k: v
            for k, v in call.kwargs.items()
            if k not in ("dtype", "memory_format", "layout", "device", "pin_memory")
        }
        base, overload = call.name.split(".")
        # looked up as any code does: a packet's __getattr__ called itself makes a new operator in place
        # of the one PyTorch's dispatcher holds (torch 2.5 then reads a freed object)
        produced = getattr(getattr(torch.ops.aten, base), overload)(*args, **kwargs)
        results = list(produced) if isinstance(produced, (list, tuple)) else [produced]
    single = call.single
    uses = [i for r in results for i in numbers_of_index(r)]
    if call.name in ACCUMULATING:
        operands = accumulated(call, sources, uses, single, layout_free=False)
    else:
        reduced = call.name in SUMMED_TO_SIZE and tuple(call.args[0].shape) != tuple(call.out.shape)
        operands = expanded(call, sources, uses, single, summed_to_size=reduced)
    one = in_dtype(1.0, single)
    made = []
    start = 0
    for out in call.outputs:
        column = operands[start : start + out.numel()]
        start += out.numel()
        made.append(make_outputs(name, numbers_of(out), [column], [[one] * len(column)], [times]))
    if len(made) == 1 and made[0]:
        made[0][0] = _with_zeros_for_the_rest(name, made[0][0], column[0], sources, uses, one)
    return made


def _with_zeros_for_the_rest(
    name: str, first: Item, operand: Item, sources: list[Item], uses: list[int], one: Any
) -> Item:
    """The first element of a copy's result, made again to hand +0.0 (MASKED) to each element of the
    operands the copy does not take: its backward writes or adds the gradient into a tensor of zeros
    (``slice_backward``, ``select_backward``, ``index_put_``, ``scatter_add_``, ``index_add_``), so
    such an element gets +0.0, which turns another path's -0.0 into 0.0. Made after the result's
    other elements, as it was (they are made last first): the reverse pass still visits it first."""
    taken = set(uses)
    rest = [x for i, x in enumerate(sources) if i not in taken and isinstance(x, Value)]
    if not rest:
        return first
    data = first.data if isinstance(first, Value) else first
    operands = (operand, *rest)
    kept = (one if isinstance(operand, Value) else None, *([MASKED] * len(rest)))
    return graph.make(Value, data, engine_op(name, 0, (times,)), operands, kept, None, None)


@rule("embedding.default")
def _embedding(call: Call) -> list[list[Item]]:
    """``F.embedding(indices, weight)``, ``nn.Embedding``: each element of the result is one element
    of ``weight``, a copy of the row its index picks. Its backward (``embedding_dense_backward`` on
    the CPU) makes the incoming gradient row-major, then adds each place's gradient into the row it
    picked, one index after another in the indices' order, into rows of zeros, and hands nothing
    back from the places whose index is ``padding_idx`` (``accumulated``): a row no index picks, and
    the padding row, keep their zeros, +0.0 (``_with_zeros_for_the_rest``). ``scale_grad_by_freq``
    and ``sparse`` are other backward passes, not replayed."""
    weight, indices = call.args[:2]
    options = {**dict(zip(("padding_idx", "scale_grad_by_freq", "sparse"), call.args[2:], strict=False)), **call.kwargs}
    if options.get("scale_grad_by_freq", False):
        raise NotReplayableError("embedding with scale_grad_by_freq")
    if options.get("sparse", False):
        raise NotReplayableError("embedding with sparse gradients")
    padding = options.get("padding_idx", -1)  # F.embedding passes -1 for none, a row's number for one
    width = weight.shape[-1]
    entry = call.entries.get(id(weight))
    items = entry.items if entry is not None else constant_items(weight)
    uses = [None if row == padding else row * width + j for row in numbers_of_index(indices) for j in range(width)]
    operands = accumulated(call, items, uses, call.single, layout_free=True)
    one = in_dtype(1.0, call.single)
    made = make_outputs("embedding", numbers_of(call.out), [operands], [[one] * len(operands)], [times])
    if made:  # the rows no index picks, and the padding row, keep the zeros PyTorch's rows start from
        taken = [k for k in uses if k is not None]
        made[0] = _with_zeros_for_the_rest("embedding", made[0], operands[0], items, taken, one)
    return [made]


# ---- more of a learner's operations: padding, diagonals, picking and placing ---------------------


def _placed(call: Call, name: str, x: torch.Tensor, places: list[int | None]) -> list[list[Item]]:
    """A copy of ``x`` into a result of constants (``places[p]``: the element of ``x`` at place ``p``,
    None where the result holds a constant): its backward copies each place's gradient back, as it
    is, and gives an element no place takes the +0.0 of the tensor of zeros it writes into."""
    items = call.entry(x).items
    data = numbers_of(call.out)
    one = _unit(call.single)
    column: list[Item] = [data[p] if i is None else items[i] for p, i in enumerate(places)]
    made = make_outputs(name, data, [column], [[one] * len(column)], [times])
    if made:
        taken = [i for i in places if i is not None]
        made[0] = _with_zeros_for_the_rest(name, made[0], column[0], items, taken, one)
    return [made]


def _arranged(x: torch.Tensor, start: int = 0) -> torch.Tensor:
    """The numbers of ``x``'s elements, from ``start``, in its shape: an operation applied to it in
    place of ``x`` says which element each place of its result is."""
    return torch.arange(start, start + x.numel(), dtype=torch.int64).reshape(x.shape)


@rule("constant_pad_nd.default")
def _constant_pad(call: Call) -> list[list[Item]]:
    """``F.pad(x, pad, mode="constant", value=c)``: ``constant_pad_nd``, whose backward is
    ``constant_pad_nd(grad, -pad)``: each element gets its place's gradient as it is, and an element a
    negative pad crops gets +0.0 (``_placed``)."""
    x, pad = call.args[:2]
    arranged = torch.ops.aten.constant_pad_nd.default(_arranged(x), pad, -1)
    return _placed(call, "constant_pad_nd", x, [None if i < 0 else i for i in numbers_of_index(arranged)])


@rule("diag_embed.default")
def _diag_embed(call: Call) -> list[list[Item]]:
    """``torch.diag_embed(x, offset, dim1, dim2)``, and ``torch.diag`` of a vector: its backward is the
    gradient's ``diagonal``, each element its place's gradient as it is; the rest of the result is
    constant zeros."""
    x = call.args[0]
    arranged = torch.ops.aten.diag_embed.default(_arranged(x, 1), *call.args[1:], **call.kwargs)
    return _placed(call, "diag_embed", x, [i - 1 if i else None for i in numbers_of_index(arranged)])


COPIES.update({"diagonal.default", "diagonal_copy.default"})
"""``torch.diagonal`` (a view) and ``torch.diag`` of a matrix (``diagonal_copy``) are copies: their
backward (``diagonal_backward``) writes the gradient on the diagonal of a tensor of zeros."""


@rule("masked_select.default")
def _masked_select(call: Call) -> list[list[Item]]:
    """``torch.masked_select(x, mask)``: a copy, whose backward ``masked_scatter``s the gradient into
    zeros (an element not picked gets +0.0). A mask that broadcasts ``x`` to a larger shape makes the
    backward sum the broadcast zeros and gradients back (``sum_to_size``): not replayed."""
    x, mask = call.args[:2]
    if tuple(torch.broadcast_shapes(x.shape, mask.shape)) != tuple(x.shape):
        raise NotReplayableError("masked_select with a mask that broadcasts its tensor")
    return _copies(call)


@rule("trace.default")
def _trace(call: Call) -> list[list[Item]]:
    """``torch.trace(m)``: ``trace_backward`` fills the diagonal of a tensor of zeros with the gradient
    (``index_fill``: written as it is); every other element gets exactly +0.0 (MASKED)."""
    x = call.args[0]
    rows, columns = x.shape
    one = _unit(call.single)
    diagonal = {i * columns + i for i in range(min(rows, columns))}
    saved = [[one if p in diagonal else MASKED for p in range(x.numel())]]
    return [make_outputs("trace", numbers_of(call.out), [call.entry(x).items], saved, [times], many=True)]


def _same_type(call: Call, operands: Sequence[Any]) -> None:
    """An operation of several tensors, each of the result's type: refused otherwise (the replay does
    not follow a mixed one's conversions)."""
    for t in operands:
        if isinstance(t, torch.Tensor) and t.dtype != call.out.dtype:
            raise NotReplayableError(f"{call.name.split('.')[0]} of tensors of different types")


def _scattered(call: Call, x: torch.Tensor, source: torch.Tensor, targets: torch.Tensor, factor: Any) -> list[Item]:
    """``x`` with ``source``'s elements added at the places ``targets`` names (``targets[q]``: the place
    of ``x`` source element ``q`` is added into; its shape ``source``'s, or the part of it the operation
    reads): a node per element over the element of ``x`` at its place and the source elements added
    there, in order. Its backward hands ``x`` the gradient as it is, and each source element its
    place's gradient times ``factor`` (1: as it is)."""
    _same_type(call, (x, source))
    name = call.name.split(".")[0].rstrip("_")
    one = _unit(call.single)
    xs, sources = call.entry(x).items, call.entry(source).items
    read = _arranged(source)[tuple(slice(0, n) for n in targets.shape)] if targets.dim() else _arranged(source)
    operands: list[list[Item]] = [[item] for item in xs]
    saved: list[list[Any]] = [[one] for _ in xs]
    for q, p in zip(numbers_of_index(read), numbers_of_index(targets), strict=True):
        operands[p].append(sources[q])
        saved[p].append(in_dtype(float(factor), call.single))
    return make_outputs(name, numbers_of(call.out), operands, saved, [times], many=True)


@rule("scatter_add.default", "scatter_add_.default")
def _scatter_add(call: Call) -> list[list[Item]]:
    """``x.scatter_add(dim, index, src)``: ``x`` gets the gradient, ``src`` ``grad.gather(dim, index)``,
    each element its place's gradient as it is."""
    x, dim, index, src = call.args[:4]
    return [_scattered(call, x, src, _arranged(x).gather(dim, index), 1)]


@rule("index_add.default", "index_add_.default")
def _index_add(call: Call) -> list[list[Item]]:
    """``x.index_add(dim, index, source, alpha=a)``: ``x`` gets the gradient, ``source``
    ``grad.index_select(dim, index) * a`` (``maybe_multiply``: as it is for ``a`` 1)."""
    x, dim, index, source = call.args[:4]
    alpha = call.kwargs.get("alpha", call.args[4] if len(call.args) > 4 else 1)
    targets = _arranged(x).index_select(dim, index) if x.dim() else _arranged(x).reshape(-1)[index]
    return [_scattered(call, x, source, targets.reshape(source.shape), alpha)]


# ---- element-wise: nan_to_num, and lerp, addcmul, addcdiv of three operands ----------------------


@rule("nan_to_num.default", "nan_to_num_.default")
def _nan_to_num(call: Call) -> list[list[Item]]:
    # grad * at::isfinite(self): a product, so an element that was not finite gets grad * 0 (-0.0, nan)
    return _unary(call, "nan_to_num", torch.isfinite(call.args[0]))


def _element_wise_of_many(
    call: Call, name: str, edges: Sequence[tuple[Any, Any, Callable[..., Any]]]
) -> list[list[Item]]:
    """An element-wise operation of several operands of the result's type (tensors, broadcast):
    operand ``t`` of each edge ``(t, saved, gradient)`` gets ``gradient(grad, saved)``, ``saved`` a
    tensor PyTorch computed (``column``), summed back to ``t``'s shape where it was broadcast; one
    node per element over every operand that takes gradient."""
    _same_type(call, [t for t, _, _ in edges])
    columns: list[list[Item]] = []
    saved: list[list[Any]] = []
    for t, s, gradient in edges:
        items, takes = broadcast_column(call, t)
        if takes:
            columns.append(items)
            saved.append([(gradient, v) for v in column(call, s)])
    n = call.out.numel()
    operands = [[c[p] for c in columns] for p in range(n)]
    kept = [[s[p] for s in saved] for p in range(n)]
    return [make_outputs(name, numbers_of(call.out), operands, kept, [_rule_of], many=True)]


@rule("lerp.Scalar", "lerp_.Scalar")
def _lerp(call: Call) -> list[list[Item]]:
    # self: grad * (1 - weight.toDouble()), a number in double, then the tensor's type; end: grad * weight
    start, end, weight = call.args[:3]
    _same_type(call, (start, end))
    w = float(weight)
    return elementwise(call, "lerp", (start, end), ((1.0 - w, times), (w, times)))


@rule("lerp.Tensor", "lerp_.Tensor")
def _lerp_by_a_tensor(call: Call) -> list[list[Item]]:
    # self: grad * (1 - weight); end: grad * weight; weight: grad * (end - self)
    start, end, weight = call.args[:3]
    edges = ((start, 1 - weight, times), (end, weight, times), (weight, end - start, times))
    return _element_wise_of_many(call, "lerp", edges)


@rule("addcmul.default", "addcmul_.default")
def _addcmul(call: Call) -> list[list[Item]]:
    # self: grad; tensor1: grad * (tensor2 * value); tensor2: grad * (tensor1 * value)
    x, t1, t2 = call.args[:3]
    value = call.kwargs.get("value", call.args[3] if len(call.args) > 3 else 1)
    edges = ((x, 1.0, times), (t1, t2 * value, times), (t2, t1 * value, times))
    return _element_wise_of_many(call, "addcmul", edges)


@rule("addcdiv.default", "addcdiv_.default")
def _addcdiv(call: Call) -> list[list[Item]]:
    # self: grad; tensor1: grad * (value / tensor2), value filled into tensor2's type first;
    # tensor2: -grad * (value * tensor1 / (tensor2 * tensor2))
    x, t1, t2 = call.args[:3]
    value = call.kwargs.get("value", call.args[3] if len(call.args) > 3 else 1)
    edges = (
        (x, 1.0, times),
        (t1, torch.full_like(t2, value) / t2, times),
        (t2, (t1 * value) / (t2 * t2), _negated_times),
    )
    return _element_wise_of_many(call, "addcdiv", edges)


# ---- smooth_l1_loss and huber_loss ---------------------------------------------------------------

# Their backward kernel (PointwiseOpsKernel.cpp) computes each element in its vectors, two at a time;
# the elements past its last two vectors in its scalar loop, which orders its products and divisions
# otherwise and reads beta (delta) in double where the vectors read it in the tensor's type. The
# compiler vectorises that loop in turn, 128 bits at a time, its last elements one by one: the same
# numbers, but for a nan gradient where the difference is beta or more, whose sign it flips (measured
# with torch 2.13 on x86-64 with AVX2).

SMOOTH_LOSS_LAYOUT_NOTE = (
    "{name} with reduction='none', whose backward kernel computes an element in its vectors or in its scalar "
    "loop by where it lies in the gradient reaching it: the replay follows a gradient laid out row-major"
)

SMOOTH_LOSS_MEASURED_NOTE = (
    "{name}, whose backward kernel's paths (its vectors, its scalar loop and the compiler's vectors of that "
    "loop) were measured on x86-64 with AVX2 (torch 2.13); on this processor a nan's sign may differ"
)


def _in_double_then(g: Any, first: Any, then: float, single: bool) -> Any:
    """``(first * g) * then``, ``then`` a double: the product in the tensor's type, then in double,
    then the result in the tensor's type (a float32 kernel's ``norm * grad * delta``)."""
    return in_dtype(float(first * g) * then, single)


def _over_double(g: Any, first: Any, then: float, single: bool) -> Any:
    """``(first * g) / then``, ``then`` a double, as ``_in_double_then`` (``norm * x * grad / beta``)."""
    return in_dtype(float(first * g) / then, single)


def _negated_back(g: Any, s: Any) -> Any:
    """``-(s * g)``: the compiler's vectors of the scalar loop, ``norm * grad`` as the negation of
    ``-norm * grad`` (the same number; a nan gradient's sign flipped)."""
    return -(s * g)


def _negated_back_in_double(g: Any, first: Any, then: float, single: bool) -> Any:
    """``-((first * g) * then)``, as ``_in_double_then`` then negated (``_negated_back``)."""
    return -_in_double_then(g, first, then, single)


def _vector_out(x: Any, huber: bool, wide: Any) -> Any:
    """The vectors' ``out`` for a difference ``x`` (not a nan): ``±1`` (``±1 * delta``) where
    ``|x| >= beta``, else ``x / beta`` (``x``), ``wide`` being beta (delta) in the tensor's type."""
    if abs(x) < wide:
        return x if huber else x / wide
    one = in_dtype(1.0, isinstance(x, Single))
    sign = one if x > 0 else -one
    return sign * wide if huber else sign


def _smooth_edge(x: Any, path: int, huber: bool, size: float, norm: Any) -> tuple[Any, ...]:
    """One element's rule and saved numbers (``_rule_of``), ``x`` its difference (input - target, or
    target - input for the target) in the tensor's type, ``size`` beta or delta; ``path`` 0 for the
    kernel's vectors, 1 for the compiler's vectors of its scalar loop, 2 for that loop one by one."""
    single = isinstance(x, Single)
    if x != x:  # a nan difference: the result is that nan, in every path
        return (_constant, x)
    if path == 0:
        return (times, norm * _vector_out(x, huber, in_dtype(size, single)))
    if x <= -size:
        return (_in_double_then, -norm, size, single) if huber else (times, -norm)
    if x >= size and path == 1:
        return (_negated_back_in_double, -norm, size, single) if huber else (_negated_back, -norm)
    if x >= size:
        return (_in_double_then, norm, size, single) if huber else (times, norm)
    return (times, norm * x) if huber else (_over_double, norm * x, size, single)


def _smooth_paths(n: int, single: bool) -> list[int]:
    """Each element's path through the kernel (``_smooth_edge``), for ``n`` elements laid out row-major."""
    vectors = n - n % (2 * _vector_width(single))
    lanes = 4 if single else 2  # 128 bits
    compiled = vectors + (n - vectors) // lanes * lanes
    return [0 if p < vectors else 1 if p < compiled else 2 for p in range(n)]


def _smooth_refusals_and_notes(call: Call, name: str, laid_out: bool) -> None:
    """Tensors of two shapes or types, not laid out row-major (which take the kernel's other loops), or
    so many numbers that its threads may split them, refused; the reasons a pass may differ, known
    before it (``laid_out``: whether where an element lies in the gradient decides its path)."""
    x, target = call.args[:2]
    _same_type(call, (x, target))
    if tuple(x.shape) != tuple(target.shape) or not (x.is_contiguous() and target.is_contiguous()):
        raise NotReplayableError(f"{name} of tensors not of one shape, or not laid out row-major")
    if x.numel() >= PARALLEL_ACCUMULATION:
        raise NotReplayableError(f"{name} over so many numbers that its kernel may split them among threads")
    if laid_out:
        call.notes.add(SMOOTH_LOSS_LAYOUT_NOTE.format(name=name))
    if torch.backends.cpu.get_cpu_capability() != "AVX2" or platform.machine().lower() not in X86_64:
        call.notes.add(SMOOTH_LOSS_MEASURED_NOTE.format(name=name))


def _smooth_loss(call: Call, huber: bool) -> list[list[Item]]:
    """``F.smooth_l1_loss(x, t, reduction, beta)`` and ``F.huber_loss(x, t, reduction, delta)``: each
    operand's gradient, as the kernel computes it for ``x - t`` (``t - x`` for the target), the
    difference computed here as the kernel computes it (a nan operand's sign kept). Per element,
    in the vectors: ``(norm * out) * grad``, ``out`` being ``±1`` or ``x / beta`` (``±1 * delta`` or
    ``x``); in the scalar loop: ``-norm * grad``, ``norm * grad`` or ``norm * x * grad / beta``
    (``±norm * grad * delta`` or ``norm * x * grad``), left to right; ``norm`` is ``1 / numel`` for a
    mean, else 1; a nan difference hands on that nan."""
    x, target = call.args[:2]
    name = "huber_loss" if huber else "smooth_l1_loss"
    reduction = _reduction(call, 2)
    size = float(call.args[3] if len(call.args) > 3 else call.kwargs.get("delta" if huber else "beta", 1.0))
    single = call.single
    n = x.numel()
    norm = in_dtype(1.0 / n if reduction == 1 else 1.0, single)
    paths = _smooth_paths(n, single)
    _smooth_refusals_and_notes(call, name, reduction == 0 and any(path != 2 for path in paths))
    xs = [in_dtype(v, single) for v in numbers_of(x)]
    ts = [in_dtype(v, single) for v in numbers_of(target)]
    edges = [
        [_smooth_edge(a - b, path, huber, size, norm) for a, b, path in zip(first, second, paths, strict=True)]
        for first, second in ((xs, ts), (ts, xs))
    ]
    if reduction == 0:
        return elementwise(call, name, (x, target), tuple((column, _rule_of) for column in edges))
    columns = [(call.entry(t).items, column) for t, column in zip((x, target), edges, strict=True)]
    return [_loss(call, name, columns, _rule_of)]


@rule("smooth_l1_loss.default")
def _smooth_l1_loss(call: Call) -> list[list[Item]]:
    return _smooth_loss(call, huber=False)


@rule("huber_loss.default")
def _huber_loss(call: Call) -> list[list[Item]]:
    return _smooth_loss(call, huber=True)


# ---- var_mean and std_mean -----------------------------------------------------------------------

SPREAD_AND_MEAN_NAN_NOTE = (
    "{name} of a tensor that holds an infinity or a nan, whose gradient then multiplies two nans: which one's "
    "sign the kernel keeps depends on where the element lies in its vectors, which the replay does not follow"
)


class _AddedAfter(Single):
    """A gradient that its operand adds onto what it holds as the second operand of PyTorch's ``a + b``:
    the sum in the operand's type, and of two nans, this one (``var_mean_backward``'s ``gself + aux``
    keeps ``aux``'s: measured with torch 2.13). Python's own float addition keeps the first operand's
    nan or the second's, by whether the interpreter has specialised the line that adds."""

    __slots__ = ("_single",)

    _single: bool

    def __new__(cls, v: float, single: bool) -> _AddedAfter:
        self = super().__new__(cls, v)
        self._single = single
        return self

    def __add__(self, other: float) -> float:  # type: ignore[override]  # a Single, or a float for float64
        if self != self:
            return in_dtype(float(self), self._single)
        return in_dtype(float(other) + float(self), self._single)

    __radd__ = __add__  # type: ignore[assignment]  # as __add__


def _mean_share(g: Any, count: Any) -> Any:
    """``mean_backward``'s ``grad / count``, added after the variance's share (``_AddedAfter``)."""
    return _AddedAfter(divided(g, count), isinstance(count, Single))


@rule("var_mean.correction", "std_mean.correction")
def _spread_and_mean(call: Call) -> list[list[Item]]:
    """``torch.var_mean(x, dim, correction=c, keepdim=k)`` and ``std_mean``: ``var_mean_backward`` hands
    each element ``var_backward(...) + mean_backward(...)``, one sum (one of them alone where a pass
    reaches one output only): a node per element of ``x`` where the two arrive, behind the nodes of
    ``var`` (``std``: ``_variance``'s, which run first) and of ``mean``, whose ``grad / count`` is added
    as PyTorch adds it (``_mean_share``)."""
    x = call.args[0]
    name = call.name.split(".")[0]
    if not bool(torch.isfinite(x).all()):
        call.notes.add(SPREAD_AND_MEAN_NAN_NOTE.format(name=name))
    entry = call.entry(x)
    inputs = _softmax_inputs(call, entry.items, [_unit(call.single)] * len(entry.items), name)
    given = call.args[1] if len(call.args) > 1 else call.kwargs.get("dim")
    spread, mean = call.outputs
    groups = _groups(x, _reduced_dims(x, given), mean.numel())
    count = in_dtype(float(len(groups[0]) if groups else 0), call.single)
    operands = [[inputs[i] for i in group] for group in groups]
    saved = [[count] * len(group) for group in groups]
    means = make_outputs("mean", numbers_of(mean), operands, saved, [_mean_share], many=True)
    operation = f"{name[:3]}.correction"  # its nodes made after the mean's: they run first
    entries = {**call.entries, id(x): dataclasses.replace(entry, items=inputs)}
    part = Call(operation, (x, given), {"correction": call.kwargs.get("correction")}, entries, [spread])
    part.described, part.notes = call.described, call.notes
    return [RULES[operation](part)[0], means]


def replay(call: Call) -> list[list[Item]]:
    """The items of each tensor the call returns; raises NotReplayableError for an operation the
    replay does not know (or one of its forms it cannot reproduce)."""
    if call.name in COPIES:
        return _copies(call)
    found = RULES.get(call.name)
    if found is None:
        raise NotReplayableError(call.name.split(".")[0])
    return found(call)


def constant_items(t: torch.Tensor) -> list[Item]:
    return list(numbers_of(t))


def leaf_items(t: torch.Tensor) -> list[Item]:
    return [Value(v) for v in numbers_of(t)]


def finite(x: float) -> bool:
    return math.isfinite(x)
