"""``explain``: the chain rule of one reverse pass, step by step, as data and as a table.

It walks the graph exactly as ``backward`` does (the same topological order, reversed) but
keeps every edge: which node hands how much gradient to which operand, and why
(upstream gradient x local derivative). It changes no ``.grad`` and frees nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vjpgrad._backward import check_seed, topological_order
from vjpgrad._value import Value
from vjpgrad._vector import Vector


@dataclass(frozen=True)
class Step:
    """One edge of the reverse pass: ``node`` hands ``upstream x local`` to ``operand``."""

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
    which is what ``backward`` would add to its ``.grad``.
    """

    seeds: list[tuple[str, float]]
    steps: list[Step]
    gradients: dict[Value, float]
    names: dict[Value, str] = field(repr=False)
    formulas: dict[str, str] = field(repr=False)

    def contributions(self, value: Value) -> list[Step]:
        """The steps that handed gradient to ``value``."""
        name = self.names.get(value)
        return [step for step in self.steps if step.operand == name]

    def __str__(self) -> str:
        lines = ["Seeds (the v of v^T J): " + ", ".join(f"{name} = {_number(s)}" for name, s in self.seeds), ""]
        if self.formulas:
            lines.append("Nodes:")
            lines += [f"  {name} = {formula}" for name, formula in self.formulas.items()]
            lines += ["", "The reverse pass, from the outputs back to the leaves:"]
        header = ("step", "node", "op", "upstream", "", "local", "=", "contribution", "to", "its total")
        rows = [header]
        for k, s in enumerate(self.steps, start=1):
            rows.append(
                (str(k), s.node, s.op, _number(s.upstream), "x", _number(s.local), "=",
                 _number(s.contribution), s.operand, _number(s.total))
            )  # fmt: skip
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        numeric_columns = (0, 3, 5, 7, 9)
        for row in rows:
            cells = [
                cell.rjust(w) if i in numeric_columns else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append(("  " + "  ".join(cells)).rstrip())
        leaves = [value for value in self.names if value.is_leaf and value in self.gradients]
        if leaves:
            lines += ["", "Each leaf's gradient is the sum of what it was handed:"]
        for value in leaves:
            terms = [f"{_number(s.upstream)} x {_number(s.local)}" for s in self.contributions(value)]
            total = _number(self.gradients[value])
            sum_text = " + ".join(terms) if terms else "(it is an output)"
            lines.append(f"  {self.names[value]}.grad += {sum_text} = {total}")
        return "\n".join(lines)


def _number(x: float) -> str:
    return f"{x:.6g}"


def _formula(node: Value, names: Mapping[Value, str]) -> str:
    """How a node was computed, in terms of its operands' names: ``t3 * b[0]``, ``log(c[1])``."""

    def term(x: Value | float | None) -> str:
        return names.get(x, "?") if isinstance(x, Value) else _number(x or 0.0)

    if node._b is None:
        return f"-{term(node._a)}" if node.op == "neg" else f"{node.op}({term(node._a)})"
    return f"{term(node._a)} {node.op} {term(node._b)}"


def _output_seeds(output: Value | Vector, seed: object) -> tuple[list[Value], list[float]]:
    if isinstance(output, Value):
        return [output], [1.0 if seed is None else check_seed(seed, "seed")]
    if isinstance(output, Vector):
        return list(output), output._seeds(seed)  # type: ignore[arg-type]
    raise TypeError(f"explain() takes a Value or a Vector, got {type(output).__name__}")


def _names(outputs: list[Value], vector: bool, given: Mapping[str, Value | Vector] | None) -> dict[Value, str]:
    """A readable name for every node: given names, then labels, then y / y[i], then x1, t1..."""
    names: dict[Value, str] = {}
    for name, thing in (given or {}).items():
        if isinstance(thing, Vector):
            names.update((value, f"{name}[{i}]") for i, value in enumerate(thing))
        elif isinstance(thing, Value):
            names[thing] = name
        else:
            raise TypeError(f"names must map to Values or Vectors, {name!r} maps to {type(thing).__name__}")
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
    intermediate nodes. Raises as ``backward`` would, before doing anything.
    """
    outputs, seeds = _output_seeds(output, seed)
    label = _names(outputs, isinstance(output, Vector), names)
    order = topological_order(outputs)
    leaf_numbers, inner_numbers = itertools.count(1), itertools.count(1)
    for node in order:  # operands come first, so names read in the order values were made
        if node not in label:
            label[node] = node.label or (f"x{next(leaf_numbers)}" if node.is_leaf else f"t{next(inner_numbers)}")
    grads: dict[Value, float] = {}
    for value, s in zip(outputs, seeds, strict=True):
        grads[value] = grads.get(value, 0.0) + s
    steps = []
    for node in reversed(order):
        upstream = grads[node]
        for operand, local in ((node._a, node._da), (node._b, node._db)):
            if local is None or not isinstance(operand, Value):
                continue
            contribution = upstream * local
            grads[operand] = grads.get(operand, 0.0) + contribution
            steps.append(Step(label[node], node.op, upstream, label[operand], local, contribution, grads[operand]))
    seed_rows = [(label[value], s) for value, s in zip(outputs, seeds, strict=True)]
    reached = {value: name for value, name in label.items() if value in grads}  # given names first
    formulas = {label[node]: _formula(node, label) for node in order if not node.is_leaf}
    return Explanation(seed_rows, steps, grads, reached, formulas)
