"""The statements of vmap's array code, kept as data until the code is written out, and the
rewrites that keep products run as one from making arrays nothing reads whole.

The writer (``write.ArrayWriter``) makes each statement as a ``Statement``: its code, the names
it writes and the names it reads, and, for the few forms the rewrites look for, its ``form``
with the fields they need (``Product``: ``pp = pa * pb``; ``Rows``: ``f0_1, f0_2, ..., = pp``;
``Taken``: ``gi = pc[r]``; ``Added``: a forward's ``x = a + b``; ``AcrossStacked``: an
``_across_stacked`` call on a slice of an array). A statement's text is made with it, from the
same fields (the forward's by the table's templates, ``templates.FORWARD``; the others by the
constructors here), and the code is text only at the end (``render``).

The rewrites decide from these records: which names a statement writes and reads, counted over
the whole function (``uses``). Each writes the same multiplications and additions in the same
order (``arrays.py``'s helpers), so every number stays the one the statements they replace give:

- ``sums_of_products``: a neuron's chain of additions ``b + p0 + p1 + ...`` of the rows of products
  run as one becomes one ``_sum_products`` call that multiplies each product just before adding it;
- ``products_across``: a block's shares of the values its copies read are multiplied copy by copy
  as ``_across_products`` adds them;
- ``products_into_rows``: the weights' gradients are multiplied straight into the rows of the
  result (``_product``, which ``_rows`` fills).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Product:
    """``pp = pa * pb``: products run as one, a product per row of ``left`` and ``right``."""

    left: str
    right: str


@dataclass(frozen=True)
class Rows:
    """``r0, r1, ..., = source``: each row of ``source`` under its own name (the statement's writes)."""

    source: str


@dataclass(frozen=True)
class Taken:
    """``x = source[row]``: one row of an array."""

    source: str
    row: int


@dataclass(frozen=True)
class Added:
    """A forward's addition ``x = left + right``: each operand a name or a number, as written."""

    left: str
    right: str


@dataclass(frozen=True)
class AcrossStacked:
    """``g_a, g_b, = _across_stacked(arguments, source[where])``: the contributions to values every
    copy of a block reads, read as a slice of the rows of ``source``."""

    arguments: str
    source: str
    where: str


@dataclass(frozen=True)
class Handover:
    """The forward's ``return`` of its values or the reverse pass's unpacking of them: the same
    arrays under the same names, handed from one pass to the other, which no rewrite counts as a
    use."""


Form = Product | Rows | Taken | Added | AcrossStacked | Handover


@dataclass(frozen=True)
class Statement:
    """One statement of the code: ``code`` as written (no indentation; empty for a comment line),
    the names it ``writes`` and ``reads``, what it is where a rewrite looks for it (``form``), and
    the comment shown after it (or alone)."""

    code: str
    writes: tuple[str, ...] = ()
    reads: frozenset[str] = frozenset()
    form: Form | None = None
    comment: str = ""

    def line(self) -> str:
        if not self.code:
            return f"# {self.comment}"
        return f"{self.code}  # {self.comment}" if self.comment else self.code


def assign(
    target: str, value: str, reads: Iterable[str] = (), comment: str = "", form: Form | None = None
) -> Statement:
    """``target = value``: ``value`` reads ``reads``; ``form``, for a ``Product`` or an ``Added``."""
    return Statement(f"{target} = {value}", (target,), frozenset(reads), form, comment)


def accumulate(target: str, value: str, reads: Iterable[str] = ()) -> Statement:
    """``target = target + value``."""
    return Statement(f"{target} = {target} + {value}", (target,), frozenset({target, *reads}))


def note(text: str) -> Statement:
    """A comment on a line of its own."""
    return Statement("", comment=text)


def rows(names: Sequence[str], source: str) -> Statement:
    return Statement(f"{', '.join(names)}, = {source}", tuple(names), frozenset({source}), Rows(source))


def taken(target: str, source: str, row: int) -> Statement:
    return Statement(f"{target} = {source}[{row}]", (target,), frozenset({source}), Taken(source, row))


def across_stacked(names: Sequence[str], arguments: str, source: str, where: str, reads: Iterable[str]) -> Statement:
    code = f"{', '.join(names)}, = _across_stacked({arguments}, {source}[{where}])"
    return Statement(code, tuple(names), frozenset({*reads, source}), AcrossStacked(arguments, source, where))


def handover(code: str, writes: Sequence[str] = (), reads: Iterable[str] = ()) -> Statement:
    return Statement(code, tuple(writes), frozenset(reads), Handover())


def render(header: str, body: Sequence[Statement]) -> str:
    """A function's text: ``header`` (``def forward(x0):``), then each statement a line, indented."""
    return "\n".join([header, *(f"    {statement.line()}" for statement in body)]) + "\n"


def uses(statements: Iterable[Statement]) -> dict[str, int]:
    """How many times each name is written or read by ``statements``: once per statement that
    writes it, once per statement that reads it (a statement that does both, twice); the values
    handed between the passes (``Handover``) left out."""
    found: dict[str, int] = {}
    for statement in statements:
        if isinstance(statement.form, Handover):
            continue
        for name in (*statement.writes, *statement.reads):
            found[name] = found.get(name, 0) + 1
    return found


# ---- the rewrites ---------------------------------------------------------------------------------


def _without(statements: list[Statement | None], name: str) -> None:
    """Leaves out (None) the statement that makes ``name`` alone."""
    for k, statement in enumerate(statements):
        if statement is not None and statement.writes == (name,):
            statements[k] = None


def products_into_rows(body: list[Statement], parts: dict[str, tuple[str, str]], sliced: set[str]) -> list[Statement]:
    """The reverse pass's ``body`` with the products' gradients that only fill rows of the result
    left unmade: where ``pc = (pg * pb)`` (``parts``: ``pc`` and its two factors) is read only by
    statements ``gi = pc[r]`` whose ``gi`` is read only by ``_rows`` (the gradients of inputs, a
    row each), each ``gi`` becomes ``_product(pg, pb, r)``, row ``r`` of ``pg * pb``, which
    ``_rows`` multiplies straight into the rows of the result it fills (the rows of one ``pg * pb``
    together, in one multiplication where they fill rows in a regular pattern): the same
    multiplications, element by element, without the array of all of them (16 copies x 16
    products x the batch, for a layer of 16 neurons) and without the copy of it into the result.
    Row ``r`` of ``pg * pb`` is ``pg[r] * pb[r]``: both have a product per row. ``sliced``: the
    arrays ``_rows`` places through a slice of the result's rows (``ArrayWriter._rows``), the
    only ones it multiplies in place."""
    if not parts:
        return body
    counted = uses(body)
    found: dict[str, list[tuple[int, str, int]]] = {}  # pc -> (statement, gi, row)
    for k, statement in enumerate(body):
        if isinstance(statement.form, Taken) and statement.form.source in parts:
            found.setdefault(statement.form.source, []).append((k, statement.writes[0], statement.form.row))
    changed: list[Statement | None] = list(body)
    for name, (left, right) in parts.items():
        taking = found.get(name, [])
        if not taking or counted.get(name, 0) != 1 + len(taking):  # read elsewhere: made as before
            continue
        if any(counted.get(gi, 0) != 2 or gi not in sliced for _, gi, _ in taking):
            continue
        for k, gi, r in taking:
            changed[k] = assign(gi, f"_product({left}, {right}, {r})", (left, right))
        _without(changed, name)
    return [statement for statement in changed if statement is not None]


def products_across(body: list[Statement], parts: dict[str, tuple[str, str]]) -> list[Statement]:
    """The reverse pass's ``body`` with the products' gradients that only go to values every copy
    of a block reads left unmade: where ``pc = (pg * pa)`` is read only by
    ``_across_stacked(..., pc[a:b:s])`` (and by statements ``c = pc[r]`` whose ``c`` nothing
    reads), the call is ``_across_products(..., pg[a:b:s], pa[a:b:s])``, which multiplies each
    copy's share just before adding it, into an array of one copy's size: the same products,
    added in the same order, without the array of all of them."""
    if not parts:
        return body
    counted = uses(body)
    changed: list[Statement | None] = list(body)
    for name, (left, right) in parts.items():
        taking = [k for k, s in enumerate(body) if isinstance(s.form, Taken) and s.form.source == name]
        calls = [k for k, s in enumerate(body) if isinstance(s.form, AcrossStacked) and s.form.source == name]
        if len(calls) != 1 or counted.get(name, 0) != 2 + len(taking):
            continue
        if any(counted.get(body[k].writes[0], 0) != 1 for k in taking):
            continue
        call = body[calls[0]]
        assert isinstance(call.form, AcrossStacked)
        where = call.form.where
        code = f"{', '.join(call.writes)}, = _across_products({call.form.arguments}, {left}[{where}], {right}[{where}])"
        changed[calls[0]] = Statement(code, call.writes, (call.reads - {name}) | {left, right})
        for k in taking:
            changed[k] = None
        _without(changed, name)
    return [statement for statement in changed if statement is not None]


def sums_of_products(forward: list[Statement], backward: Sequence[Statement], kept: set[str]) -> list[Statement]:
    """The ``forward`` pass with each chain of additions of the products run as one (``pp = pa *
    pb``, then its rows under their own names) written as one call, ``_sum_products``: where the
    chain adds every row, one after another (``x1 = s + p0``, ``x2 = x1 + p1``...), and nothing
    else in either pass (``backward``: the reverse pass's statements, as rewritten) reads the
    products or the partial sums (the reverse pass of an addition reads neither; ``kept``, the
    function's outputs, are read by name), the call multiplies each row just before adding it,
    into arrays of one row's size, each addition with its operands in their order: the same
    numbers, without the array of all the products and the partial sums. The names left unmade
    are None (the forward returns them; nothing reads them)."""
    counted = uses([*forward, *backward])
    out: list[Statement] = []
    k = 0
    while k < len(forward):
        statement = forward[k]
        unpacked = forward[k + 1] if k + 1 < len(forward) else None
        made = statement.writes[0] if isinstance(statement.form, Product) else None
        if made is None or unpacked is None or not (isinstance(unpacked.form, Rows) and unpacked.form.source == made):
            out.append(statement)
            k += 1
            continue
        assert isinstance(statement.form, Product)
        named = {row: r for r, row in enumerate(unpacked.writes)}
        chain = _chain(forward, k + 2, named, counted, kept)
        if chain is None or counted.get(made, 0) != 2:
            out.append(statement)
            k += 1
            continue
        last, start, order, dead = chain
        terms = ", ".join(f"({r}, {int(first)})" for r, first in order)
        left, right = statement.form.left, statement.form.right
        reads = {left, right} | ({start} if start in forward[k + 2].reads else set())
        comment = f"{len(order)} products added in order"
        out.append(assign(last, f"_sum_products({start}, {left}, {right}, ({terms},))", reads, comment))
        left_unmade = [*dead, *unpacked.writes, made]
        out.append(Statement(f"{' = '.join(left_unmade)} = None", tuple(left_unmade)))
        k += 2 + len(order)
    return out


def _chain(
    forward: list[Statement], k: int, rows: dict[str, int], counted: dict[str, int], kept: set[str]
) -> tuple[str, str, list[tuple[int, bool]], list[str]] | None:
    """The chain of additions from ``forward[k]`` that adds every one of ``rows`` once, one after
    another: its last sum, its start, each row's place with whether it is the left operand, and
    the partial sums; None when there is none that ``sums_of_products`` may write as one."""
    order: list[tuple[int, bool]] = []
    sums: list[str] = []
    previous: str | None = None
    start = ""
    while k < len(forward) and len(order) < len(rows):
        form = forward[k].form
        if not isinstance(form, Added):
            return None
        a, b = form.left, form.right
        if previous is None:
            if (a in rows) == (b in rows):
                return None
            start = b if a in rows else a
        elif previous not in (a, b) or (a == b):
            return None
        row = a if a in rows and a != previous else b
        if row not in rows or counted.get(row, 0) != 2 or any(r == rows[row] for r, _ in order):
            return None
        order.append((rows[row], row == a))
        sums.append(forward[k].writes[0])
        previous = sums[-1]
        k += 1
    if len(order) != len(rows):
        return None
    dead = sums[:-1]
    if any(counted.get(x, 0) != 2 or x in kept for x in dead):
        return None
    return sums[-1], start, order, dead
