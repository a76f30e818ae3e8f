"""``explain``: the chain rule of one reverse pass, step by step, as data and as a table.

It runs the very pass ``backward`` runs (``graph.propagate``, same order, same formulas)
with an observer that keeps every edge: which node hands how much gradient to which
operand, and why (upstream gradient x local derivative). It changes no ``.grad`` and frees
nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vjpgrad.core import graph, ops
from vjpgrad.core.modes import USER_FRAMES, refuse_number
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector, outputs_and_seeds
from vjpgrad.display import text


@dataclass(frozen=True)
class Step:
    """One edge of the reverse pass: ``node`` hands ``upstream × local`` to ``operand``."""

    node: str
    op: str
    upstream: float
    operand: str
    local: float
    contribution: float
    total: float  # the operand's gradient so far, this contribution included


@dataclass(frozen=True)
class Explanation:
    """One reverse pass, explained. ``str()`` of it is a readable table; the fields are data.

    ``seeds`` are (output name, seed) pairs; ``steps`` the edges in the order backward
    walks them; ``gradients`` maps each reached Value to the gradient this pass gives it,
    which is what ``backward`` would add to its ``.grad``. ``handed_back`` names the call that
    returns those gradients instead (``torch.autograd.grad``, whose pass the PyTorch bridge
    explains), "" when they go into ``.grad``: the table then never says ``.grad +=``.
    """

    seeds: list[tuple[str, float]]
    steps: list[Step]
    gradients: dict[Value, float]
    names: dict[Value, str] = field(repr=False)
    formulas: dict[str, str] = field(repr=False)
    handed_back: str = field(default="", repr=False)

    def to_html(self, title: str | None = None, notes: Sequence[str] = ()) -> str:
        """A self-contained HTML page that steps through this pass: Next, Previous, Play;
        ``notes``, lines of text said under its title.

        No network, nothing fetched: save it and open it in any browser, offline."""
        from vjpgrad.display import stepper  # imported when a page is made: not by ``import vjpgrad``

        return stepper.stepper_html(self, title, notes)

    def _repr_html_(self) -> str:
        """In a notebook: the stepper, inline; its list of every step is the table (one view of the pass)."""
        from vjpgrad.display import stepper

        return stepper.stepper_fragment(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """In IPython's text display: the table, as ``str()`` gives it."""
        printer.text("Explanation(...)" if cycle else str(self))

    def contributions(self, value: Value) -> list[Step]:
        """The steps that handed gradient to ``value``."""
        name = self.names.get(value)
        return [step for step in self.steps if step.operand == name]

    def __str__(self) -> str:
        lines = [f"Seeds (the v of v^T J): {text.seeds_text(self)}", ""]
        if self.formulas:
            lines.append("Nodes:")
            lines += [f"  {name} = {formula}" for name, formula in self.formulas.items()]
            lines += ["", "The reverse pass, from the outputs back to the leaves:"]
        rows = [text.STEP_COLUMNS] + [text.step_cells(k, s) for k, s in enumerate(self.steps, start=1)]
        widths = [max(len(row[i]) for row in rows) for i in range(len(text.STEP_COLUMNS))]
        for row in rows:
            cells = [
                cell.rjust(w) if i in text.NUMBER_COLUMNS else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append(("  " + "  ".join(cells)).rstrip())
        sums = text.leaf_sums(self)
        if sums:
            lines += ["", text.sums_heading(self)]
        lines += [f"  {text.sum_line(self, name, terms, total)}" for name, terms, total in sums]
        return "\n".join(lines)


Arguments = tuple[tuple[bool | float, ...], tuple[tuple[str, float], ...]]
"""What a node's formula shows beside its operands' names, as numbers: the arguments of the
operation that take no gradient, those before the operands (``torch.where``'s condition of the
element: ``where(False, t1[0], t2[0])``) and those after them, by keyword (``clamp``'s bounds:
``clamp(t3[0], min=0, max=3)``), each number in full (``text.exact``). They pick the local
derivative a step multiplies by (0 or 1)."""


def formula(
    node: Value, names: Mapping[Value, str], shown: int | None = None, arguments: Arguments | None = None
) -> str:
    """How a node was computed, in terms of its operands' names: ``t3 * b[0]``, ``log(c[1])``;
    its first ``shown`` operands only, where given (``explained``'s ``shown_operands``), and the
    ``arguments`` beside them, where given."""

    def term(x: Value | float) -> str:
        if not isinstance(x, Value):
            return text.number(x)
        found = names.get(x)
        if found is None and not x.requires_grad:  # data no gradient reaches (take's index): its number
            return text.printable(x.label) if x.label else text.number(graph.number(x))
        return found or "?"

    op = graph.op_of(node)
    terms = [term(x) for x in graph.operands(node)[:shown]]
    if arguments is not None:
        before, after = arguments
        terms = [
            *(str(a) if isinstance(a, bool) else text.exact(a) for a in before), *terms,
            *(f"{key}={text.exact(value)}" for key, value in after),
        ]  # fmt: skip
        return f"{text.printable(node.op)}({', '.join(terms)})"
    if op is not None and op.symbol and len(terms) == 2:
        return f"{terms[0]} {op.symbol} {terms[1]}"
    if node.op == "neg":
        return f"-{terms[0]}"
    return f"{text.printable(node.op)}({', '.join(terms)})"  # a custom op's name is its function's: the user's


def _name_every_node(
    label: dict[Any, str], outputs: list[Value], order: list[Value], leaves: list[Value], given: Mapping[Value, str]
) -> None:
    """Give every node of a pass a name in ``label`` (which holds the given names, the labels and
    the outputs' ``y`` already): a leaf its label or ``x1``, ``x2``..., an operation its label or
    ``t1``, ``t2``..., each in the order they were made, the made-up names past every name the
    pass holds; an unlabelled output keeps ``y`` (``y[i]``) where no node is labelled so. Every
    name is then written printable (``text.printable``: ``\\x1b`` for a terminal's escape) before
    two nodes of one name are named apart, so a label that prints as another's is another name."""
    defaulted = [value for value in outputs if not value.label and value not in given]  # y, y[i]
    inner_names = _name_by_creation(label, order, leaves)
    labelled = {node.label for node in (*order, *leaves) if node.label}
    for value in defaulted:
        if label[value].split("[", 1)[0] in labelled:
            label[value] = next(inner_names)
    constants = _name_constants(label, order, given)
    for node, name in label.items():  # a terminal's colour code written as Python writes it, as every view does
        label[node] = text.printable(name)
    # a given name first, then the pass's own Values (whose gradients the table is about), then constants
    named = {*leaves, *order, *constants}
    apart(label, named, given)


def _name_by_creation(label: dict[Any, str], order: list[Value], leaves: list[Value]) -> Iterator[str]:
    """A leaf without a name its label or ``x1``, ``x2``..., an operation its label or ``t1``,
    ``t2``..., each in the order they were made, past every name the pass holds (a constant's
    label too); the operations' made-up names that are left."""
    read = [x for node in order for x in graph.operands(node) if isinstance(x, Value)]  # constants' labels too
    taken = {name for node in (*order, *leaves, *read) for name in (label.get(node), node.label) if name}
    leaf_names, inner_names = made_up("x", taken), made_up("t", taken)
    for leaf in sorted(leaves, key=graph.sequence):  # leaves by creation: x1 was made first
        if leaf not in label:
            label[leaf] = leaf.label or next(leaf_names)
    for node in reversed(order):  # operations by creation: t1 was computed first
        if node not in label:
            label[node] = node.label or next(inner_names)
    return inner_names


def _name_constants(label: dict[Any, str], order: list[Value], given: Mapping[Value, str]) -> list[Value]:
    """The Values the pass's operations read that no gradient reaches and that have a name (a
    constant of a formula: take's index, ``Value(5, requires_grad=False, label="c")``), named in
    ``label`` by their given name or label, so that they are named apart from the pass's own."""
    read = {x: None for node in order for x in graph.operands(node) if isinstance(x, Value)}
    constants = [x for x in read if not x.requires_grad and (x.label or x in given)]
    for x in constants:
        label.setdefault(x, given.get(x) or x.label or "")
    return constants


def apart(label: dict[Any, str], named: Iterable[Value], given: Container[Value]) -> None:
    """Two nodes of ``named`` of one name (two Values labelled ``a``; the PyTorch bridge's ``w from
    zeros`` for each use of ``w``; a name given beside a label alike) named apart: the first keeps
    it (one whose name is in ``given``, then one that takes gradient, then the first made), the
    next are ``a (2)``, ``a (3)``..., past every name in use, so that each name's formula and
    running total in the table are one node's. Every view names apart through here, in this order."""
    nodes = sorted(named, key=lambda node: (node not in given, not node.requires_grad, graph.sequence(node)))
    used = {label[node] for node in nodes}
    seen: dict[str, int] = {}
    for node in nodes:
        name = label[node]
        count = seen[name] = seen.get(name, 0) + 1
        if count > 1:
            while f"{name} ({count})" in used:
                count += 1
            label[node] = f"{name} ({count})"
            used.add(label[node])


def made_up(prefix: str, taken: set[str]) -> Iterator[str]:
    """``x1``, ``x2``... (or ``t1``...), past every name in ``taken`` (a label, a given name, or the
    name before ``[`` of an element's: ``t1[0]``): a made-up name never reads as another node's."""
    bases = taken | {name.split("[", 1)[0] for name in taken}
    return (name for name in (f"{prefix}{k}" for k in itertools.count(1)) if name not in bases)


EXPLAIN_AFTER_FREE = (
    "explain() needs the graph, and a backward() without retain_graph=True has already freed it: "
    "call explain() before backward(), or pass retain_graph=True to backward()"
)


def given_names(given: Mapping[str, Value | Vector] | None) -> dict[Value, str]:
    """The names a user gave (``{"a": a}``): a Value's, or ``a[0]``, ``a[1]``... for a Vector's."""
    names: dict[Value, str] = {}
    if given is not None and not isinstance(given, Mapping):
        raise TypeError(f"names must map names to Values or Vectors ({{'a': a}}), got {type(given).__name__}")
    for name, thing in (given or {}).items():
        if not isinstance(name, str):
            raise TypeError(f"a name in names must be a str, got {type(name).__name__} ({name!r})")
        if isinstance(thing, Vector):
            names.update((value, f"{name}[{i}]") for i, value in enumerate(thing))
        elif isinstance(thing, Value):
            names[thing] = name
        else:
            raise TypeError(f"names must map to Values or Vectors, {name!r} maps to {type(thing).__name__}")
    return names


def _names(outputs: list[Value], vector: bool, given: Mapping[str, Value | Vector] | None) -> dict[Value, str]:
    """A readable name for every node: given names, then labels, then y / y[i], then x1, t1..."""
    names = given_names(given)
    for i, value in enumerate(outputs):
        names.setdefault(value, value.label or (f"y[{i}]" if vector else "y"))
    return names


def explain(
    output: Value | Vector,
    seed: float | Sequence[float] | Vector | None = None,
    names: Mapping[str, Value | Vector] | None = None,
) -> Explanation:
    """Explain the reverse pass ``output.backward(seed)`` would run, without running it.

    ``seed`` is what ``backward`` takes: a number for a Value (1.0 by default), one number
    per element for a Vector. ``names`` (e.g. ``{"a": a, "b": b}``) names the inputs in the
    table; otherwise labels are used, then ``x1, x2...`` for leaves and ``t1, t2...`` for
    intermediate nodes. A name is written on one line, with what would move a terminal's cursor
    written as Python writes it (a terminal's escape character in a label shows as ``\\x1b``); two nodes whose
    names print alike are ``a`` and ``a (2)``, a name given in ``names`` keeping its own. Raises
    as ``backward`` would, before doing anything.

    In a notebook the result shows itself as a stepper; ``print`` writes it as a table;
    ``.steps`` holds each edge as data (upstream × local = contribution, and the operand's
    running total).

    >>> from vjpgrad import Value, explain, log
    >>> a, b, c = Value(0.1), Value(1.0), Value(0.1)
    >>> y = 3 * a + 2 * b * b + log(c)
    >>> e = explain(y, names={"a": a, "b": b, "c": c})
    >>> step = e.contributions(c)[0]   # log(c) hands c: 1 × 1/c
    >>> step.upstream, step.local, step.contribution
    (1.0, 10.0, 10.0)
    >>> e.gradients[b], b.grad          # what backward() would give b; nothing has run
    (4.0, 0.0)
    """
    return explained(output, seed, names)


def explained(
    output: Value | Vector,
    seed: float | Sequence[float] | Vector | None = None,
    names: Mapping[str, Value | Vector] | None = None,
    shown_operands: Mapping[Value, int] | None = None,
    arguments: Mapping[Value, Arguments] | None = None,
) -> Explanation:
    """``explain``, leaving out the edges of a node from its operand ``shown_operands[node]`` on:
    edges the graph holds for the bits alone, on which the node does not depend (the PyTorch
    bridge's +0.0 that a kernel starts a sum from), in the steps, the formulas and the sums; a
    node's formula shows its ``arguments`` beside its operands, where given (the bridge's
    ``where`` and ``clamp``: ``Arguments``)."""
    with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
        refuse_number("explain()", "call explain() on what the function returns, outside it")
        outputs, seeds = outputs_and_seeds(output, seed, "explain")
        label: dict[Any, str] = _names(outputs, isinstance(output, Vector), names)
        steps: list[Step] = []
        shown_of: Mapping[Any, int] = shown_operands or {}

        def keep(
            node: graph.Node, position: int, operand: graph.Node, upstream: float, saved: object, part: float
        ) -> None:
            if position >= shown_of.get(node, position + 1):  # an edge for the bits alone: not shown
                return
            local = ops.local_derivative(graph.gradient_of(node, position), saved)
            total = graph.cotangent(operand)
            shown = graph.op_of(node).shown  # type: ignore[union-attr]  # an edge's node is an operation
            steps.append(Step(label[node], text.printable(shown), upstream, label[operand], local, part, total))

        with graph.pass_lock:
            try:
                order, leaves = graph.reached(outputs)
            except RuntimeError as error:
                if graph.FREED_MESSAGE in str(error):
                    raise RuntimeError(EXPLAIN_AFTER_FREE) from None
                raise
            _name_every_node(label, outputs, order, leaves, given_names(names))
            graph.seed(outputs, seeds)
            graph.propagate(order, keep)
            grads: dict[Value, float] = {v: graph.cotangent(v) for v in (*order, *leaves)}
        seed_rows = [(label[value], s) for value, s in zip(outputs, seeds, strict=True)]
        reached = {value: name for value, name in label.items() if value in grads}  # given names first
        given_arguments: Mapping[Any, Arguments] = arguments or {}
        formulas = {
            label[node]: formula(node, label, shown_of.get(node), given_arguments.get(node)) for node in reversed(order)
        }
        return Explanation(seed_rows, steps, grads, reached, formulas)
