"""Graph pictures: ``to_dot`` writes Graphviz DOT text (no dependency); ``draw`` renders it
through the optional ``graphviz`` package and Graphviz's ``dot`` program."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vjpgrad import _graph
from vjpgrad._value import Value
from vjpgrad._vector import Vector, outputs_and_seeds

INSTALL_HINT = (
    "drawing needs the graphviz Python package and Graphviz's dot program: "
    "pip install 'vjpgrad[viz]', and install Graphviz (e.g. apt-get install graphviz or brew install graphviz)"
)


def _quote(text: str) -> str:
    """A DOT string literal: any label text is safe inside it."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n")
    return f'"{escaped}"'


def to_dot(output: Value | Vector, seed: float | Sequence[float] | None = None) -> str:
    """Graphviz DOT text of the graph behind ``output``, drawn from the leaves to the output.

    Each Value is a box with its label, data and grad; each operation an ellipse between
    its operands and its result; number constants are small plain nodes. With ``seed``
    (a number for a Value, one per element for a Vector) each output shows its seed.
    """
    outputs, given = outputs_and_seeds(output, seed, "to_dot")
    seeds = None if seed is None else given
    ids = {node: f"n{k}" for k, node in enumerate(_graph.ancestry(outputs))}
    lines = ["digraph vjpgrad {", "  rankdir=LR;", '  node [fontname="Helvetica", fontsize=11];']
    for node, name in ids.items():
        title = node.label if node.label is not None else ""
        text = f"{title}\ndata {node.data:.4g}\ngrad {node.grad:.4g}".lstrip("\n")
        style = "" if node.requires_grad else ', style=dashed, color="gray40"'
        lines.append(f"  {name} [shape=box, label={_quote(text)}{style}];")
        if node.is_leaf:
            continue
        lines.append(f"  {name}_op [shape=ellipse, label={_quote(node.op)}];")
        lines.append(f"  {name}_op -> {name};")
        for k, operand in enumerate(_graph.operands(node)):
            if isinstance(operand, Value):
                lines.append(f"  {ids[operand]} -> {name}_op;")
            else:
                lines.append(f"  {name}_c{k} [shape=plaintext, label={_quote(f'{operand:g}')}];")
                lines.append(f"  {name}_c{k} -> {name}_op;")
    for k, node in enumerate(outputs):
        if seeds is not None:
            lines.append(f"  seed{k} [shape=plaintext, fontcolor=blue, label={_quote(f'seed {seeds[k]:g}')}];")
            lines.append(
                f"  {ids[node]} -> seed{k} [style=dashed, color=blue, dir=back];  // the seed flows into the output"
            )
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw(output: Value | Vector, path: str | Path, seed: float | Sequence[float] | None = None) -> Path:
    """Render the graph of ``output`` to ``path``; the suffix (``.svg``, ``.png``, ``.pdf``)
    picks the format. Needs the ``viz`` extra and Graphviz's ``dot``; returns the path."""
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower()
    if fmt not in ("svg", "png", "pdf"):
        raise ValueError(f"draw() writes .svg, .png or .pdf files, got {target.name!r}")
    text = to_dot(output, seed)
    try:
        import graphviz
    except ImportError as error:
        raise ImportError(INSTALL_HINT) from error
    try:
        graphviz.Source(text).render(outfile=target, format=fmt, cleanup=True)
    except graphviz.ExecutableNotFound as error:
        raise ImportError(INSTALL_HINT) from error
    return target
