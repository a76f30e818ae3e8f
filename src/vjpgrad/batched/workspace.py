"""Array code that writes into the memory of its previous call: each array a line makes is kept
in a slot of a workspace, and the next call of the same code on batches of the same size writes
that line's numbers into it (a ufunc's ``out=``) instead of asking for a new array.

Why: at a thousand samples the code's arrays hold megabytes (a layer's products alone are 16
copies x 16 products x 1,000 samples), and memory the allocator has handed back to the system
costs a page fault per 4 KiB at its first touch; measured on the moons MLP at N = 1,000 the
faults took most of a call's time (forward 4.3 ms with 1,068 faults a call, 1.0 ms without them;
the reverse pass 7.7 ms with 1,903, 1.5 ms without). Written into, the same memory stays mapped.
The gradients a call returns go into an array of an earlier call that nothing holds any more
(``_returned``). A batch whose arrays are small (under ``WORKSPACE_BYTES``) runs the plain code,
which ``.source`` shows; this code is that code with its array-making lines rewritten
(``slotted``), compiled at the first call that needs it.

What is written where changes no number: a line computes what it computed before, by the same
ufunc (``np.multiply(a, b, out=...)`` is ``a * b``), into a buffer no other line of the call
uses and that nothing handed to the caller points into (``vmap`` copies its results out of the
arrays of the code, and ``_rows`` fills an array the caller has let go of, or a new one:
``_returned``). A slot is filled at its line's first run with the array the line made (nothing
filled when it made a number), so a slot's shape is the one the line makes for that program and
batch size: the shapes of a program's arrays depend only on the kinds of its arguments, which
the program is keyed by, and on the size of the batch, which the workspaces are keyed by.
"""

from __future__ import annotations

import ast
import functools
import operator
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

_BINARY = {ast.Add: "_in_add", ast.Sub: "_in_sub", ast.Mult: "_in_mul"}
_CALLS = {"_stack": 1, "_stack_as": 1, "_sides": 2, "_rows": 1, "_sum_products": 1, "_across_products": 1}
"""The helpers written into slots, and how many slots each takes."""
KEPT = 2
"""Workspaces kept per program, by batch size: a batch run in chunks has two sizes (its chunks
and the last one)."""


def _atom(node: ast.expr) -> bool:
    """A name, a number, a negative number or a row of a name (``pc0_1[3]``)."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant)
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant)


def _into(value: ast.expr, slot: int) -> tuple[str, int] | None:
    """The text of ``value`` computed into the workspace from ``slot`` and the slots it takes, or
    None when it is not one of the forms written so (a ufunc of atoms, or a helper that makes an
    array)."""
    if isinstance(value, ast.BinOp) and type(value.op) in _BINARY and _atom(value.left) and _atom(value.right):
        name = _BINARY[type(value.op)]
        return f"{name}({ast.unparse(value.left)}, {ast.unparse(value.right)}, _w, {slot})", 1
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and isinstance(value.operand, ast.Name):
        return f"_in_neg({value.operand.id}, _w, {slot})", 1
    called = _called(value)
    if isinstance(value, ast.Call) and called in _CALLS:
        if value.keywords or any(isinstance(a, ast.Starred) for a in value.args):
            return None
        arguments = ", ".join(ast.unparse(a) for a in value.args)
        return f"_in{called}({arguments}, _w, {slot})", _CALLS[called]
    return None


def _called(node: ast.expr | None) -> str | None:
    """The name of the helper ``node`` calls (``_rows`` of ``_rows(...)``), or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id
    return None


def slotted(source: str) -> tuple[str, int]:
    """``source`` (array code, one statement a line) with each line that makes an array by a
    ufunc of atoms or by ``_stack``, ``_stack_as``, ``_sides`` (and the other ``_CALLS``) written
    into its own slot of the workspace ``_w``, which each function takes as a keyword; and the
    number of slots. ``_where`` (a relu and its mask) is left to make its array: NumPy has no
    ``where`` into a buffer as fast as its own, and a masked copy into one (``np.copyto(...,
    where=...)``) took 41 us on 16 x 1,000 numbers against 16 us for ``np.where``'s new array
    (measured on the moons MLP's layers, whose masks the allocator takes from its heap).

    A pass over the finished source by design: the workspace's code is the code ``.source`` shows,
    written again at the first call that needs it (most programs never need it: their batches are
    small), so nothing of the writer is kept alive for it. What each line is comes from the parsed
    program (``ast``: a function's definition, an assignment, the ``return`` of ``_rows``), and
    each line is decided from its own statement alone, not from a count over the function as the
    rewrites of ``statements`` decide; a line is rewritten with the new value in place of the
    statement's, so its targets and its comment stay as written."""
    lines = source.split("\n")
    statements = {
        node.lineno - 1: node
        for function in ast.parse(source).body
        if isinstance(function, ast.FunctionDef)
        for node in (function, *function.body)
    }
    slots = 0
    for k, statement in sorted(statements.items()):
        line = lines[k].encode()  # the parse's offsets count bytes
        if isinstance(statement, ast.FunctionDef):  # the workspace as a keyword: def forward(x0, *, _w):
            names = [argument.arg for argument in statement.args.args]
            lines[k] = f"def {statement.name}({', '.join([*names, '*', '_w'])}):"
            continue
        value: ast.expr | None
        if isinstance(statement, ast.Assign):
            head, value = line[: statement.targets[-1].end_col_offset] + b" = ", statement.value
        elif isinstance(statement, ast.Return) and _called(statement.value) == "_rows":  # into an array let go
            head, value = line[: statement.col_offset] + b"return ", statement.value
        else:
            continue
        written = _into(value, slots) if value is not None and statement.end_lineno == statement.lineno else None
        if written is not None:  # the value, parentheses and all, in the statement's place; its comment kept
            lines[k] = (head + written[0].encode() + line[statement.end_col_offset :]).decode()
            slots += written[1]
    return "\n".join(lines), slots


def _binary(np: ModuleType, function: Callable[[Any, Any], Any], ufunc: Any) -> Callable[..., Any]:
    ndarray = np.ndarray

    def into(a: Any, b: Any, w: list[Any], k: int) -> Any:
        buffer = w[k]
        if buffer is not None:
            return ufunc(a, b, out=buffer)
        found = function(a, b)  # the operator, as the code without a workspace: two floats give a float
        if type(found) is ndarray:
            w[k] = found
        return found

    return into


def _negative(np: ModuleType) -> Callable[..., Any]:
    ndarray, negative = np.ndarray, np.negative

    def into(a: Any, w: list[Any], k: int) -> Any:
        buffer = w[k]
        if buffer is not None:
            return negative(a, out=buffer)
        found = -a
        if type(found) is ndarray:
            w[k] = found
        return found

    return into


def _filled(np: ModuleType, make: Callable[[tuple[Any, ...]], Any]) -> Callable[..., Any]:
    """A stacking helper (``make(items)``, a new array of the items a row each) into a slot: the
    rows copied into the slot's array, each item broadcast to its row as ``make`` broadcasts."""
    array = np.array

    def fill(items: tuple[Any, ...], w: list[Any], k: int) -> Any:
        buffer = w[k]
        if buffer is None:
            found = make(items)
            w[k] = found
            return found
        if type(items[0]) is float and set(map(type, items)) == {float}:  # a neuron's weights: read in C
            buffer.reshape(len(items), -1)[...] = array(items)[:, None]
        else:  # arrays (a row each, or broadcast to it) and numbers: a copy a row
            for row, x in enumerate(items):
                buffer[row] = x
        return buffer

    return fill


RETURNED = 3
"""Arrays of gradients a program keeps after handing them to its callers, to fill again once the
caller has let go of one: a training loop's ``rows = f(...)`` holds the previous call's rows
while the next call runs, so the one before it is the one free."""


def _returned(np: ModuleType, rows: Callable[..., Any]) -> Callable[..., Any]:
    """``_rows`` filling an array it returned before and that nothing holds any more: no name,
    no view (a view holds its base), no other object of the caller's. CPython counts every
    reference: an array referred to only by this workspace's list, by the loop's name and by
    ``getrefcount``'s argument is one nobody else can read, so writing into it changes no
    number anyone holds; otherwise (or under another Python) a new array."""
    empty = np.empty
    getrefcount = getattr(sys, "getrefcount", None)

    def into(count: int, placed: tuple[Any, ...], alone: tuple[tuple[int, Any], ...], w: list[Any], k: int) -> Any:
        kept = w[k]
        if kept is None:
            kept = w[k] = []

        def make(shape: tuple[int, int]) -> Any:
            if getrefcount is not None:
                for candidate in kept:  # as _unheld counts: the list, the loop's name, the argument
                    if candidate.shape == shape and getrefcount(candidate) == _UNHELD:
                        kept[:] = [x for x in kept if x is not candidate] + [candidate]  # the latest last
                        return candidate
            found = empty(shape)
            kept.append(found)
            if len(kept) > RETURNED:
                del kept[0]
            return found

        return rows(count, placed, alone, make)

    return into


def _unheld() -> int:
    """``getrefcount`` of an array that only a list and a loop's name refer to, measured (one for
    the list, one for the name, one for the argument), as ``_returned``'s loop holds it."""
    kept = [object()]
    for candidate in kept:
        return sys.getrefcount(candidate) if hasattr(sys, "getrefcount") else -1
    return -1


_UNHELD = _unheld()


def helpers(np: ModuleType, namespace: dict[str, Any]) -> dict[str, Any]:
    """The ``_in_`` helpers that ``slotted`` code calls, made from ``namespace``'s own."""
    stack_as, aligned = namespace["_stack_as"], namespace["_aligned"]
    stacked = _filled(np, namespace["_stacked"])

    def in_sides(lefts: tuple[Any, ...], rights: tuple[Any, ...], w: list[Any], k: int) -> tuple[Any, Any]:
        a, b = stacked(lefts, w, k), stacked(rights, w, k + 1)
        axes = max(a.ndim, b.ndim, 2)  # as _sides: numbers alone get a samples axis
        return aligned(a, axes), aligned(b, axes)

    def in_stack_as(items: tuple[Any, ...], like: Any, w: list[Any], k: int) -> Any:
        first = items[0]
        if isinstance(first, np.ndarray) and all(x is first for x in items):  # one gradient: a view, as _stack_as
            return stack_as(items, like)
        return aligned(stacked(items, w, k), like.ndim)

    def buffered(name: str) -> Callable[..., Any]:
        """A helper that takes the list of its arrays last (``_sum_products``): the slot's list."""
        function = namespace[name]

        def into(*arguments: Any) -> Any:
            *given, w, k = arguments
            if w[k] is None:
                w[k] = []
            return function(*given, w[k])

        return into

    return {
        "_in_sum_products": buffered("_sum_products"),
        "_in_across_products": buffered("_across_products"),
        "_in_add": _binary(np, operator.add, np.add),
        "_in_sub": _binary(np, operator.sub, np.subtract),
        "_in_mul": _binary(np, operator.mul, np.multiply),
        "_in_neg": _negative(np),
        "_in_stack": _filled(np, namespace["_stack"]),
        "_in_sides": in_sides,
        "_in_stack_as": in_stack_as,
        "_in_rows": _returned(np, namespace["_rows"]),
    }


WORKSPACE_BYTES = 1 << 20
"""The size from which a batch runs in a workspace: its arrays, estimated as 8 bytes per sample
per operation of the recording, at least 1 MiB. A smaller batch's arrays are few pages each,
which the allocator reuses without faults, and the plain code, without the helpers' calls, is
faster there."""


class Workspaces:
    """A program's code written into workspaces (``slotted``, compiled at the first call that
    needs it by ``compile``, which returns the scope the code ran in) and its workspaces, one per
    batch size (the ``KEPT`` latest), for one call at a time: a call while another holds them
    (another thread) runs on a new workspace of its own."""

    def __init__(self, source: str, compile: Callable[[str], dict[str, Any]]) -> None:
        self.source = source
        self.compile = compile
        self.slots = 0
        self.code: tuple[Callable[..., Any], Callable[..., Any] | None] | None = None
        self.lock = threading.Lock()  # held by the call that uses the workspaces
        self.compiling = threading.Lock()
        self.by_size: dict[int, list[Any]] = {}

    def _functions(self) -> tuple[Callable[..., Any], Callable[..., Any] | None]:
        if self.code is None:
            text, self.slots = slotted(self.source)
            scope = self.compile(text)
            self.code = (scope["forward"], scope.get("backward"))
        return self.code

    @contextmanager
    def held(self, size: int) -> Iterator[tuple[Callable[..., Any], Callable[..., Any] | None]]:
        """The forward and reverse passes bound to the workspace of batches of ``size`` samples."""
        with self.compiling:
            forward, backward = self._functions()
        if not self.lock.acquire(blocking=False):
            yield _bound(forward, backward, [None] * self.slots)
            return
        try:
            found = self.by_size.pop(size, None)
            if found is None:
                found = [None] * self.slots
            self.by_size[size] = found  # the latest last
            while len(self.by_size) > KEPT:
                self.by_size.pop(next(iter(self.by_size)))
            yield _bound(forward, backward, found)
        finally:
            self.lock.release()


def _bound(
    forward: Callable[..., Any], backward: Callable[..., Any] | None, w: list[Any]
) -> tuple[Callable[..., Any], Callable[..., Any] | None]:
    return functools.partial(forward, _w=w), None if backward is None else functools.partial(backward, _w=w)
