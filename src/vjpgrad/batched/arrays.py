"""The helpers array code calls: NumPy, imported when first needed, and each function of the
table twice over, exact (by default) and fast (``fast=True``).

Exact helpers give, element by element, the number the scalar code gives: arithmetic (``+``,
``-``, ``*``, ``/``), comparisons and ``np.where`` are IEEE-754 operations, the same in NumPy
and in Python; every call of a C library function (``exp``, ``log``, ``tanh``, ``pow``...) goes
through the very float function eager code calls (the row's forward), once per element
(``np.frompyfunc``), because NumPy's own vectorised versions differ from the C library in the
last bits on a share of inputs. Where Python and NumPy disagree about a result that is not a
rounding (the sign of the nan of ``0 / 0``, ``sqrt(-1)``), the exact helpers follow Python.

Fast helpers are NumPy's ufuncs: one pass over the array, no Python call per element. The
differences they make depend on the processor and the NumPy build (NumPy's SIMD loops):
``benchmarks/fast_mode.py`` counts them, and the docs' page on exactness quotes one machine's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, NamedTuple

from vjpgrad.codegen.symbols import HELPERS
from vjpgrad.core import floats, ops, powers
from vjpgrad.core.ops import Op

INSTALL = (
    "vjpgrad.vmap and vjpgrad.batch_sum need NumPy: pip install numpy (or pip install -e '.[vmap]' in your clone "
    "of vjpgrad)"
)


def numpy() -> ModuleType:
    """NumPy, imported on first use; without it an ImportError that says how to install it."""
    try:
        import numpy as np
    except ImportError as error:
        raise ImportError(INSTALL) from error
    return np


BUFFER = 1 << 10
"""NumPy's ufunc buffer, in elements, while array code runs (NumPy's own is 8,192). With 8,192, a
ufunc of arrays of different shapes, as a layer's ``w * x`` (16 weights against a row of 1,000
samples), went through the iterator's buffers: measured with NumPy 2.4 on 16 x 1,000 numbers,
11 us against 4 us with 1,024; on 16 x 16 x 1,000 products, 155 us against 73 us. An elementwise
ufunc gives the same numbers whatever the buffer: it changes how the elements are walked, not
what each one is (array code reduces no numbers: its one reduction, ``np.any`` of a mask in the
exact division, gives the same truth whatever the grouping)."""


@contextmanager
def arithmetic(np: ModuleType) -> Iterator[None]:
    """How array code runs: no warnings (a nan or an infinity is a number like any other here,
    as in eager code) and NumPy's buffer at ``BUFFER``, both given back after, an error or not
    (NumPy's settings of the current thread; from NumPy 2 on, of the current context)."""
    before = np.setbufsize(BUFFER)
    try:
        with np.errstate(all="ignore"):
            yield
    finally:
        np.setbufsize(before)


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """``np.broadcast_shapes`` for shapes that are tuples of ints, in a few Python operations (NumPy's
    makes an array per shape: about 3 us a call, and the helpers below call it on every line they
    run); a ValueError where the shapes do not broadcast, as NumPy's."""
    first = shapes[0]
    if all(shape == first for shape in shapes):
        return tuple(first)
    ndim = max(map(len, shapes))
    result = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, n in enumerate(shape):
            m = result[offset + i]
            if m == 1:
                result[offset + i] = n
            elif n not in (1, m):
                raise ValueError(f"shape mismatch: shapes {shapes} cannot be broadcast to a single shape")
    return tuple(result)


def _per_element(np: ModuleType, function: Callable[..., float], count: int) -> Callable[..., Any]:
    """``function`` (a ``core.floats`` function of Python floats) called on every element: NumPy
    hands it Python floats and broadcasts scalars against arrays."""
    ufunc = np.frompyfunc(function, count, 1)
    float64 = np.float64

    def call(*xs: Any) -> Any:
        return np.asarray(ufunc(*xs), dtype=float64)

    call.__name__ = function.__name__
    return call


def _sign(np: ModuleType) -> Callable[[Any], Any]:
    """-1.0, 0.0 or 1.0, and 0.0 for nan, as ``floats.sign`` (``np.sign(nan)`` is nan)."""

    def sign(x: Any) -> Any:
        return np.multiply(x > 0.0, 1.0) - np.multiply(x < 0.0, 1.0)

    return sign


def _max(np: ModuleType) -> Callable[..., Any]:
    """The n-ary max of the table, element-wise with its tie rules: the first of equal operands
    (``max(-0.0, 0.0)`` is -0.0), and the first nan when there is one."""
    where = np.where

    def largest(*xs: Any) -> Any:
        best = xs[0]
        for x in xs[1:]:
            best = where(x > best, x, best)
        for x in reversed(xs):  # a nan wins, the first one in order last
            best = where(x != x, x, best)
        return best

    return largest


def _max_hits(np: ModuleType) -> Callable[..., tuple[list[Any], Any]]:
    """The backward of the n-ary max: which operands equal the maximum (each nan, when it is nan),
    and how many (``float``), per element, as the table's rule counts them."""

    def hits(xs: tuple[Any, ...], top: Any) -> tuple[list[Any], Any]:
        top_nan = top != top
        found = [(x == top) | (top_nan & (x != x)) for x in xs]
        count: Any = np.multiply(found[0], 1.0)
        for hit in found[1:]:
            count = count + np.multiply(hit, 1.0)
        return found, count

    return hits


def _take(np: ModuleType) -> tuple[Callable[..., Any], Callable[[Any, int], Any]]:
    """``take`` on arrays: each sample's index checked (``positions``: a whole number in
    ``range(count)``, else IndexError naming the first that is not, as the table's forward does),
    and the element each picks, exactly (``take``)."""

    def positions(index: Any, count: int) -> Any:
        found = np.asarray(index, dtype=np.float64)
        good = (found == np.floor(found)) & (found >= 0) & (found < count)
        if not np.all(good):
            ops.take_position(float(found[~good].flat[0]), count)  # raises, naming it
        return found.astype(np.intp)

    def take(index: Any, *xs: Any) -> Any:
        at = positions(index, len(xs))
        if np.ndim(at) == 0:
            return xs[int(at)]
        arrays = np.broadcast_arrays(at, *(np.asarray(x, dtype=np.float64) for x in xs))
        return np.take_along_axis(np.stack(arrays[1:]), arrays[0][None], axis=0)[0]

    return take, positions


def _fast_pow_scalar(np: ModuleType) -> Callable[[Any, float], Any]:
    """``x ** k`` for a constant ``k`` with PyTorch's special exponents (``floats.POWER_STEPS``,
    their steps run by NumPy's ufuncs), any other by ``np.power``."""
    steps: dict[str, Callable[[Any], Any]] = {
        "one": lambda x: np.ones_like(x, dtype=np.float64),
        "sqrt": np.sqrt,
        "reciprocal": lambda x: 1.0 / x,
        "square": lambda x: x * x,
        "cube": lambda x: x * x * x,
    }

    def pow_scalar(x: Any, k: float) -> Any:
        found = floats.POWER_STEPS.get(float(k))
        if found is None:
            return np.power(x, k)
        for step in found:
            x = steps[step](x)
        return x

    return pow_scalar


def exact_helpers(given: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    """The exact helper, element by element, of each name a rule or a template calls that ``given``
    has not: every operation of the table of one operand (a rule may call any: ``x.relu()`` writes
    ``_relu(x)``) and every function of two (``atan2``: a row without an operator ``symbol``, which
    array code calls as ``_atan2(y, x)``; an operator is written inline, ``x * y``, or has its
    helper in ``given``, ``_div``), whatever module its forward comes from (``floats.exp``, or
    Python's ``math.erf`` where it has PyTorch's edges), and ``symbols.HELPERS``, each the very
    float function, so that a new operation needs no line here."""
    functions: dict[str, tuple[Callable[..., float], int]] = {f"_{n}": (f, 1) for n, f in HELPERS.items()}
    for op in ops.BUILTIN:
        if op.arity == 1 or (op.arity == 2 and not op.symbol):
            functions.setdefault(f"_{op.name}", (op.forward, op.arity))
    return {name: _per_element(numpy(), f, count) for name, (f, count) in functions.items() if name not in given}


def _copies(np: ModuleType) -> tuple[Callable[[Any, int], Any], Callable[[Any, int], Any]]:
    """A block's gradient has the copies along its first axis, or fewer than two axes: a number or
    a column of samples, which every copy has alike (``** 0`` hands its base 0.0 whatever reaches
    it); or a first axis of length 1, which broadcasting gave it (that 0.0 times an operand every
    copy shares), alike for every copy too. ``copies_of(found, copies)`` gives each as ``copies``
    rows; ``row(found, m)`` copy m's."""

    def copies_of(found: Any, copies: int) -> Any:
        if np.ndim(found) < 2:
            return np.broadcast_to(found, (copies, *(np.shape(found) or (1,))))
        return np.broadcast_to(found, (copies, *found.shape[1:])) if found.shape[0] == 1 < copies else found

    def row(found: Any, m: int) -> Any:
        if np.ndim(found) < 2:
            return found
        return found[0] if found.shape[0] == 1 else found[m]

    return copies_of, row


def _stack(np: ModuleType) -> Callable[[tuple[Any, ...]], Any]:
    """The copies of a block's input (or gradient) as one array, the copies along the first axis:
    ``(copies, samples)``, or ``(copies, 1)`` when none of them is a column of samples."""
    array, broadcast, stack, float64 = np.array, np.broadcast_arrays, np.stack, np.float64

    def stacked(items: tuple[Any, ...]) -> Any:
        try:
            found = array(items, dtype=float64)  # numbers, or columns of one length: in C
        except ValueError:  # numbers and columns together
            found = stack(broadcast(*items))
        return found[:, None] if found.ndim == 1 else found

    return stacked


ORDERED_BYTES = 1 << 19
"""Bytes of the buffer ``ordered_sum`` copies rows into, a chunk at a time (512 KiB): one buffer
a call, filled again chunk after chunk, small enough to stay in a core's second-level cache
(measured on 1,000 rows of 337: 401 us a sum with a new buffer of 128 KiB a chunk, 317 us with
this one)."""


def ordered_sum(np: ModuleType, first: list[Any], rows: Any) -> Any:
    """``first[0] + first[1] + ... + rows[0] + rows[1] + ...``, each column added in that order,
    one addition after another, every column at once: ``rows`` is an array ``(count, width)``,
    each of ``first`` a row of ``width`` numbers. Returns the ``width`` sums.

    NumPy adds pairwise (or in blocks of 8) only along the fast axis of a reduction: reducing
    along the first axis of a C-ordered ``(count, width)`` array with ``width`` at least 2, it
    adds each row into the running total, row after row, the columns side by side (the
    ``out[k] = out[k] + row[k]`` loop of a binary ufunc). So the rows are copied, a chunk at a
    time, behind the total so far into such an array (a single column is given a second, of
    zeros, so that the first axis is never the fast one), and reduced from ``-0.0``
    (``-0.0 + x`` is ``x`` to the bit; NumPy's own start for ``add``, ``0.0``, would turn a sum of
    ``-0.0`` into ``0.0``). ``tests/test_vmap.py`` pins the bits against a Python loop of
    additions on sums that cancel, signed zeros, infinities and nan."""
    width = rows.shape[1]
    columns = max(width, 2)
    count = rows.shape[0]
    if not count and not first:  # the sum of nothing
        return np.full(width, -0.0)
    chunk = max(1, ORDERED_BYTES // (8 * columns) - 1)
    buffer = np.empty((max(1, len(first)) + min(chunk, count), columns))  # a chunk of rows behind what comes first
    if width < columns:
        buffer[:, width:] = 0.0
    head, lo = list(first), 0
    while True:
        hi = min(count, lo + chunk)
        used = len(head) + hi - lo
        for k, row in enumerate(head):
            buffer[k, :width] = row
        buffer[len(head) : used, :width] = rows[lo:hi]
        total = np.add.reduce(buffer[:used], axis=0, initial=-0.0)[:width]
        if hi >= count:
            return total
        head, lo = [total], hi


def _across(np: ModuleType) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The values every copy of a block reads: their gradients so far (``starts``, -0.0 for one
    that has none yet: ``-0.0 + c`` is ``c`` to the bit) plus each copy's contributions
    (``parts``: ``reads`` arrays per value, one after the other, each with the copies along its
    first axis, in the order one copy adds them; one with fewer than two axes, a number or a
    column of samples, is the same for each of the ``copies``), added the last copy first, one addition after
    another as eager code adds them; all the values at once, one array operation a
    contribution of a copy. Returns the gradients, one row per value."""

    copies_of = _copies(np)[0]

    def across(starts: tuple[Any, ...], reads: int, copies: int, *parts: Any) -> Any:
        if any(np.ndim(part) < 2 or np.shape(part)[0] == 1 < copies for part in parts):  # alike in every copy
            parts = tuple(copies_of(part, copies) for part in parts)
        try:
            block = np.array(parts, dtype=np.float64)  # (values * reads, copies, samples), in C
        except ValueError:  # numbers and columns together
            block = np.stack(np.broadcast_arrays(*parts))
        return stacked(starts, reads, block)

    def stacked(starts: tuple[Any, ...], reads: int, block: Any) -> Any:
        """``across`` with the parts already one array (the rows of products run as one)."""
        block = block.reshape((len(starts), reads, *block.shape[1:]))
        trailing = block.shape[3:]
        try:
            total = np.array(starts, dtype=np.float64)
        except ValueError:
            total = np.stack(np.broadcast_arrays(*starts))
        if total.ndim == 1:
            total = total[:, None]
        trailing = broadcast_shapes(total.shape[1:], trailing)
        if total.shape[1:] != trailing:
            total = np.broadcast_to(total, (len(starts), *trailing)).copy()
        for m in range(block.shape[2] - 1, -1, -1):
            for r in range(reads):
                total += block[:, r, m]  # in place: the same additions, no new array each
        return total

    return across, stacked


def _negative_zero(x: Any) -> bool:
    """Whether ``x`` is the float -0.0, the start of a gradient that has none yet."""
    return type(x) is float and x == 0.0 and math.copysign(1.0, x) < 0.0


PRODUCTS_BYTES = 1 << 18
"""The size up to which ``_sum_products`` makes all its products in one multiplication (256 KiB:
a neuron of 16 inputs on 2,000 samples); above it, as a layer's 16 x 16 x 1,000 products, one
product at a time, into an array of one row's size."""


def _products(np: ModuleType) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Sums of products without the array of all the products (``statements.sums_of_products``,
    ``statements.products_across``): each product made into an array of one row's size just before
    it is added, by the same ufuncs in the same order as the lines they stand for. Each takes
    ``buffers`` (a list, the workspace's slot or a new one) to hold its arrays between calls."""
    multiply, add, empty, shape_of = np.multiply, np.add, np.empty, np.shape

    def arrays(buffers: list[Any], *shapes: tuple[int, ...]) -> list[Any]:
        if [b.shape for b in buffers] != list(shapes):
            buffers[:] = [empty(shape) for shape in shapes]
        return buffers

    def sum_products(start: Any, a: Any, b: Any, terms: tuple[tuple[int, bool], ...], buffers: Any = None) -> Any:
        """``start + a[r0] * b[r0] + a[r1] * b[r1] + ...`` added left to right, each addition's
        operands in the order the code had them (``first``: the product is the left one). Where
        all the products together are small (``PRODUCTS_BYTES``: one neuron's, not a layer's) they
        are made in one multiplication first, the same numbers: a few ufunc calls fewer."""
        row = broadcast_shapes(a.shape[1:], b.shape[1:])
        held = [] if buffers is None else buffers
        together = (len(terms), *row)
        if 8 * math.prod(together) <= PRODUCTS_BYTES and a.shape[0] == b.shape[0] == len(terms):
            total, products = arrays(held, broadcast_shapes(shape_of(start), row), together)
            multiply(a, b, out=products)
            for k, (r, first) in enumerate(terms):
                left = start if k == 0 else total
                if first:
                    add(products[r], left, out=total)
                else:
                    add(left, products[r], out=total)
            return total
        total, product = arrays(held, broadcast_shapes(shape_of(start), row), row)
        for k, (r, first) in enumerate(terms):
            multiply(a[r], b[r], out=product)
            left = start if k == 0 else total
            if first:
                add(product, left, out=total)
            else:
                add(left, product, out=total)
        return total

    def across_products(starts: tuple[Any, ...], reads: int, left: Any, right: Any, buffers: Any = None) -> Any:
        """``_across_stacked(starts, reads, left * right)``, each copy's shares multiplied just
        before they are added."""
        left = left.reshape((len(starts), reads, *left.shape[1:]))
        right = right.reshape((len(starts), reads, *right.shape[1:]))
        # a side with a copies axis of length 1 (a constant 0.0 gradient, ``** 0``'s) read copy by copy
        left, right = np.broadcast_arrays(left, right)
        share = left.shape
        first = np.array(starts, dtype=np.float64) if all(type(x) is float for x in starts) else None
        if first is None:
            first = np.stack(np.broadcast_arrays(*starts))
        if first.ndim == 1:
            first = first[:, None]
        trailing = (len(starts), *broadcast_shapes(first.shape[1:], share[3:]))
        total, product = arrays([] if buffers is None else buffers, trailing, (len(starts), *share[3:]))
        order = [(m, r) for m in range(share[2] - 1, -1, -1) for r in range(reads)]
        if order and total.shape == product.shape and all(map(_negative_zero, starts)):
            m, r = order.pop(0)  # -0.0 + c is c to the bit: the first share is the total
            multiply(left[:, r, m], right[:, r, m], out=total)
        else:
            np.copyto(total, first)
        for m, r in order:
            multiply(left[:, r, m], right[:, r, m], out=product)
            add(total, product, out=total)
        return total

    return sum_products, across_products


def _sides(np: ModuleType) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    """Operands of a block's products, stacked a product per row: ``sides(lefts, rights)`` gives
    both stacks with as many axes each, so that ``a * b`` multiplies row k of one by row k of the
    other as ``lefts[k] * rights[k]`` broadcasts; ``stack_as(items, like)`` stacks the products'
    gradients with ``like``'s number of axes; and the two steps of ``sides``, ``stacked(items)``
    and ``aligned(array, axes)``, for the workspace's helpers (``workspace.helpers``)."""
    array, broadcast, stack, float64 = np.array, np.broadcast_arrays, np.stack, np.float64

    def stacked(items: tuple[Any, ...]) -> Any:
        try:
            return array(items, dtype=float64)  # numbers, or arrays of one shape: in C
        except ValueError:  # numbers and arrays together
            return stack(broadcast(*items))

    def aligned(found: Any, axes: int) -> Any:
        """Axes of length 1 put after the first, as broadcasting puts them before each row."""
        if found.ndim >= axes:
            return found
        return found.reshape((found.shape[0],) + (1,) * (axes - found.ndim) + found.shape[1:])

    def sides(lefts: tuple[Any, ...], rights: tuple[Any, ...]) -> tuple[Any, Any]:
        a, b = stacked(lefts), stacked(rights)
        axes = max(a.ndim, b.ndim, 2)  # numbers alone get a samples axis: their gradients have one
        return aligned(a, axes), aligned(b, axes)

    ndarray = np.ndarray

    def repeated(first: Any, count: int) -> Any:
        """``first`` seen ``count`` times along a new first axis (``np.broadcast_to``'s read-only
        view, made directly for a contiguous array: 1 us against 5)."""
        if not first.flags.c_contiguous:
            return np.broadcast_to(first, (count, *first.shape))
        view = ndarray((count, *first.shape), first.dtype, first, 0, (0, *first.strides))
        view.flags.writeable = False
        return view

    def stack_as(items: tuple[Any, ...], like: Any) -> Any:
        first = items[0]
        if isinstance(first, np.ndarray) and all(x is first for x in items):  # a sum's terms: one gradient
            return aligned(repeated(first, len(items)), like.ndim)
        return aligned(stacked(items), like.ndim)

    return sides, stack_as, stacked, aligned


class Product:
    """Row ``row`` of ``left * right``, not yet multiplied (``left[row] * right[row]``): a gradient
    that only fills rows of the reverse pass's result, which ``_rows`` multiplies straight into
    them (``statements.products_into_rows``)."""

    __slots__ = ("left", "right", "row")

    def __init__(self, left: Any, right: Any, row: int) -> None:
        self.left, self.right, self.row = left, right, row


class Pattern(NamedTuple):
    """Where the rows of one ``left * right`` lie in the result of ``_rows``: product row
    ``first + i`` (for ``i`` below ``rows``) fills the ``length`` result rows from
    ``place + i * place_step`` by ``step``."""

    first: int
    rows: int
    place: int
    place_step: int
    step: int
    length: int


def _regular(entries: list[tuple[Product, slice]], count: int) -> Pattern | None:
    """For the rows of one ``left * right`` (``entries``, each a Product and the slice of the
    result's rows it fills): their ``Pattern`` when one multiplication can fill them all, as the
    rows one by one would: consecutive rows of the product, each a block of copies (a row of
    ``left * right`` is ``(copies, samples)``, as many copies as its slice has result rows),
    filling result rows in a regular pattern that no two of them share. Else None."""
    left, right = entries[0][0].left, entries[0][0].right
    if len(entries) < 2 or left.ndim != 3 or right.ndim != 3:  # a row without its copies axis: one by one
        return None
    by_row = {product.row: where.indices(count) for product, where in entries}
    first = min(by_row)
    start, _, step = by_row[first]
    length = len(range(*by_row[first]))
    if len(by_row) != len(entries) or first + 1 not in by_row or step <= 0 or not length:
        return None
    pattern = Pattern(first, len(entries), start, by_row[first + 1][0] - start, step, length)
    if pattern.place_step <= 0 or max(left.shape[1], right.shape[1]) not in (1, length):
        return None  # rows listed backwards, or a product row of another number of copies
    return pattern if _follows(pattern, by_row) else None


def _follows(pattern: Pattern, by_row: dict[int, tuple[int, int, int]]) -> bool:
    """Whether the product rows' spans (``by_row``: each row's ``slice.indices``) are the
    ``pattern``'s, and no two of them fill one result row."""
    first, many, start, place_step, step, length = pattern
    for i in range(many):
        span = by_row.get(first + i)
        if span is None or span[0] != start + i * place_step or span[2] != step or len(range(*span)) != length:
            return False
    if place_step * many <= step or step * length <= place_step:  # a layer's: a copy's rows in a gap of their own
        return True
    filled = {start + i * place_step + c * step for i in range(many) for c in range(length)}
    return len(filled) == many * length


PATTERNS_KEPT = 256
"""Patterns ``_rows`` keeps (``_regular``'s answers, by call site), cleared when full."""


def _rows(np: ModuleType) -> Callable[..., Any]:
    """The gradients a reverse pass returns, as one array of ``count`` rows: ``placed`` holds the
    arrays of a block's inputs' gradients (copies along the first axis), each with the rows of
    the result they fill (a tuple of them, or a slice) and the copies they are taken from (None:
    all, in order), in one operation each; ``alone`` every other gradient (a column of samples or
    a number) with its row. A gradient that is one number for every sample fills its row.
    ``Product`` rows of one ``left * right`` that fill the result in a regular pattern
    (``_regular``) are multiplied into it in one operation, each element the same product
    (measured at the moons MLP's second layer, 1,000 samples: 72 us against 109 us for its 16
    rows one by one); they are multiplied after the other entries are placed, which changes
    nothing because the writer places each gradient in a row of its own.
    ``make(shape)`` gives the array to fill (a new one unless given: ``workspace.helpers`` gives
    one the caller has let go)."""
    asarray, empty, float64, multiply = np.asarray, np.empty, np.float64, np.multiply
    ndarray = np.ndarray
    patterns: dict[tuple[Any, ...], Pattern | None] = {}

    def regular(entries: list[tuple[Product, slice]], count: int) -> Pattern | None:
        """``_regular``, kept by what it reads (the rows, the slices, the operands' shapes): a
        program's call site asks the same at every call."""
        left, right = entries[0][0].left, entries[0][0].right
        key = (count, np.shape(left), np.shape(right), *((p.row, w.start, w.stop, w.step) for p, w in entries))
        if key not in patterns:
            if len(patterns) >= PATTERNS_KEPT:
                patterns.clear()
            patterns[key] = _regular(entries, count)
        return patterns[key]

    def rows(
        count: int,
        placed: tuple[Any, ...],
        alone: tuple[tuple[int, Any], ...],
        make: Callable[[tuple[int, int]], Any] = empty,
    ) -> Any:
        width = 1
        arrays: list[tuple[Any, Any]] = []
        products: dict[tuple[int, int], list[tuple[Product, slice]]] = {}
        for array, where, picked in placed:
            if type(array) is Product:
                if isinstance(where, slice) and picked is None:  # multiplied into its rows below
                    products.setdefault((id(array.left), id(array.right)), []).append((array, where))
                    continue
                array = multiply(array.left[array.row], array.right[array.row])
            found = asarray(array, dtype=float64)
            if found.ndim:
                width = max(width, found.shape[-1])
                if picked is not None and found.ndim >= 2:  # fewer axes: the same in every copy
                    found = found[list(picked)]
            arrays.append((found, where if isinstance(where, slice) else list(where)))
        for entries in products.values():
            shape = broadcast_shapes(np.shape(entries[0][0].left)[1:], np.shape(entries[0][0].right)[1:])
            width = max(width, shape[-1]) if shape else width
        for _, x in alone:
            if isinstance(x, np.ndarray) and x.ndim:
                width = max(width, x.shape[-1])
        out = make((count, width))
        for found, where in arrays:
            out[where] = found
        for entries in products.values():
            pattern = regular(entries, count) if out.flags.c_contiguous else None
            if pattern is None:
                for product, where in entries:  # each element the product, as pg[r] * pb[r]
                    multiply(product.left[product.row], product.right[product.row], out=out[where])
                continue
            rows_stride, column_stride = out.strides
            target = ndarray(  # the rows filled, as an array (product row, copy, sample) of ``out``'s memory
                (pattern.rows, pattern.length, width),
                float64,
                out,
                pattern.place * rows_stride,
                (pattern.place_step * rows_stride, pattern.step * rows_stride, column_stride),
            )
            taken = slice(pattern.first, pattern.first + pattern.rows)  # [i, c, s]: left[first + i][c][s] * right[...]
            multiply(entries[0][0].left[taken], entries[0][0].right[taken], out=target)
        for k, x in alone:
            out[k] = x
        return out

    return rows


def custom_helpers(np: ModuleType, custom: dict[str, Op]) -> dict[str, Callable[..., Any]]:
    """The functions array code calls for the custom operations it holds (``ArrayWriter.custom``):
    by the name it calls each, the operation's function, and by that name and ``_d0``, ``_d1``...
    its rule for each operand, each called on each sample's numbers (``np.frompyfunc``), as eager
    code calls them on a Value's: the same numbers, the same bits, at a Python call a number."""
    found: dict[str, Callable[..., Any]] = {}
    for name, op in custom.items():
        found[name] = _elementwise(np, op.forward, op.arity)
        for k, saved in enumerate(op.saved):
            found[f"{name}_d{k}"] = _elementwise(np, saved, op.arity + 1)
    return found


def _elementwise(np: ModuleType, function: Callable[..., Any], arity: int) -> Callable[..., Any]:
    ufunc = np.frompyfunc(function, arity, 1)

    def each(*columns: Any) -> Any:
        result = ufunc(*columns)  # an array of Python floats, or one float where every operand is a number
        return result.astype(np.float64) if isinstance(result, np.ndarray) else float(result)

    return each


def namespace(fast: bool) -> dict[str, Any]:
    """What array code runs in: each name the writer's symbols and templates call."""
    np = numpy()
    shared: dict[str, Any] = {
        "_where": np.where,
        "_and": np.logical_and,
        "_abs": np.abs,
        # both modes' division: IEEE's quotient and, for a zero divisor, the processor's own answers,
        # as ``floats.div`` gives them (a nan divided is itself, ``0 / 0`` the default nan)
        "_div": np.true_divide,
        "_sign": _sign(np),
        "_max": _max(np),
        "_max_hits": _max_hits(np),
        "_take": _take(np)[0],
        "_take_positions": _take(np)[1],
        "_zero": lambda x: np.zeros_like(x, dtype=np.float64),
        "_stack": _stack(np),
        "_row": _copies(np)[1],
        "_across": _across(np)[0],
        "_across_stacked": _across(np)[1],
        "_rows": _rows(np),
        "_product": Product,
        "_sum_products": _products(np)[0],
        "_across_products": _products(np)[1],
        "_sides": _sides(np)[0],
        "_stack_as": _sides(np)[1],
        "_stacked": _sides(np)[2],
        "_aligned": _sides(np)[3],
        "_inf": math.inf,
        "_nan": math.nan,
    }
    if fast:
        shared.update(
            _pow=np.power,
            _pow_scalar=_fast_pow_scalar(np),
            _exp=np.exp,
            _log=np.log,
            _log1p=np.log1p,
            _sqrt=np.sqrt,
            _sin=np.sin,
            _cos=np.cos,
            _tan=np.tan,
            _tanh=np.tanh,
            _sigmoid=lambda x: 1.0 / (1.0 + np.exp(-x)),
            _one_minus_square=lambda r: 1.0 - r * r,
            _atan2=np.arctan2,
            _hypot=np.hypot,
        )
        shared.update(exact_helpers(shared))  # an operation NumPy has no ufunc for: its exact helper
        return shared
    shared.update(
        _pow=_per_element(np, floats.power, 2),
        _pow_scalar=_per_element(np, powers.power_scalar, 2),
    )
    shared.update(exact_helpers(shared))  # _exp, _atan2...: each the very float function, per element
    return shared
