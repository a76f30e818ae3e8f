"""Writing a recorded graph as array code: a forward pass, and a reverse pass seeded at the
outputs, each one line per operation or edge, as ``vjpgrad.compile`` writes its scalar code.

The names are made here (``x0`` for the inputs, ``p0`` for the Values the function reads from
outside, ``t1`` for the operations, ``g_t1`` for gradients, ``s0`` for the seeds) and numbers are
written with ``repr``: no user text reaches the code. The reverse pass takes the nodes in
decreasing order of creation and adds the contributions in that order, each node's first one
assigned (eager code adds it to -0.0, which leaves every number as it is), exactly as
``graph.propagate`` runs them; so each element of the arrays is the number eager code gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vjpgrad.batched.templates import FORWARD, forward_key, max_backward
from vjpgrad.codegen.symbols import ARRAY, Code, contribution, literal, operand
from vjpgrad.core import graph, ops


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
    """Writes ``forward(x0, ..., p0, ...)`` and ``backward(inputs, values, s0, ...)`` for one graph."""

    def __init__(self, recorded: Graph, arguments: int) -> None:
        self.graph = recorded
        self.names: dict[int, str] = {}
        for k, x in enumerate(recorded.inputs):
            self.names[id(x)] = f"x{k}" if k < arguments else f"p{k - arguments}"
        for k, node in enumerate(recorded.live, start=1):
            self.names[id(node)] = f"t{k}"
        self.input_names = [self.names[id(x)] for x in recorded.inputs]

    def term(self, x: Any) -> str:
        return self.names[id(x)] if isinstance(x, graph.Node) else literal(x)

    def symbol(self, x: Any) -> Any:
        return Code(self.names[id(x)], atomic=True, dialect=ARRAY) if isinstance(x, graph.Node) else x

    def forward_line(self, node: graph.Node) -> str:
        op = graph.op_of(node)
        name = self.names[id(node)]
        if op is None:
            return f"{name} = {literal(graph.number(node))}  # a Value made inside"
        if op not in ops.BUILTIN:
            raise UnsupportedError(
                "vmap writes array code for the operations of vjpgrad's table; a custom operation has none"
            )
        template = FORWARD[forward_key(op)]
        terms = [self.term(x) for x in graph.operands(node)]
        return f"{name} = {template(terms)}  # {op.shown}"

    def forward_source(self) -> str:
        lines = [f"def forward({', '.join(self.input_names)}):"]
        lines += [f"    {self.forward_line(node)}" for node in self.graph.live]
        values = ", ".join(self.names[id(node)] for node in self.graph.live)
        lines.append(f"    return ({values}{',' if len(self.graph.live) == 1 else ''})")
        return "\n".join(lines) + "\n"

    def backward_lines(self, node: graph.Node, gradient: str, edges: tuple[int, ...]) -> list[tuple[int, str]]:
        """``(operand position, code of its contribution)`` per edge; -1 for a line that prepares them."""
        op = graph.op_of(node)
        assert op is not None  # the reverse pass visits operations only
        operands = graph.operands(node)
        out = self.names[id(node)]
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
        of ``wrt`` (0.0 for one the outputs do not reach, as ``grad`` gives)."""
        recorded = self.graph
        seeds = [f"s{k}" for k in range(len(recorded.outputs))]
        lines = [f"def backward(inputs, values{''.join(', ' + s for s in seeds)}):"]
        live = [self.names[id(node)] for node in recorded.live]
        for names, holder in ((self.input_names, "inputs"), (live, "values")):
            if names:
                lines.append(f"    ({', '.join(names)}{',' if len(names) == 1 else ''}) = {holder}")
        started: set[int] = set()

        def add(target: graph.Node, code: str) -> None:
            name = f"g_{self.names[id(target)]}"
            lines.append(f"    {name} = {name} + {code}" if id(target) in started else f"    {name} = {code}")
            started.add(id(target))

        for output, seed in zip(recorded.outputs, seeds, strict=True):
            if output.requires_grad:
                add(output, seed)
        edges_of = {id(node): p for node, p in zip(recorded.live, recorded.positions, strict=True)}
        for node in reversed(recorded.live):
            if id(node) not in started or graph.op_of(node) is None:
                continue
            edges = edges_of[id(node)]
            if not edges:
                continue
            lines.append(f"    # {self.forward_line(node).split('  # ')[0]}")
            operands = graph.operands(node)
            for k, code in self.backward_lines(node, f"g_{self.names[id(node)]}", edges):
                if k == -1:
                    lines.append(f"    {code}")
                else:
                    add(operands[k], code)
        results = [f"g_{self.names[id(x)]}" if id(x) in started else "0.0" for x in recorded.wrt]
        lines.append(f"    return ({', '.join(results)}{',' if len(results) == 1 else ''})")
        return "\n".join(lines) + "\n"
