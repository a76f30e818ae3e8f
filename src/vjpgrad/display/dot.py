"""Graph pictures: ``to_dot`` writes Graphviz DOT text (no dependency); ``draw`` returns an
``SVGDrawing`` of it, which renders through the optional ``graphviz`` package and Graphviz's
``dot`` program, shows itself inline in a notebook, and saves to a file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from vjpgrad.core import graph
from vjpgrad.core.modes import USER_FRAMES
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector, outputs_and_seeds
from vjpgrad.display import text
from vjpgrad.display.explain import Step, explain, given_names

INSTALL_HINT = (
    "drawing needs the graphviz Python package and Graphviz's dot program: "
    "pip install graphviz (or pip install -e '.[viz]' in your clone of vjpgrad), "
    "and install Graphviz (e.g. apt-get install graphviz or brew install graphviz)"
)


def _quote(text: str) -> str:
    """A DOT string literal: any label text is safe inside it."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n")
    return f'"{escaped}"'


def to_dot(
    output: Value | Vector,
    seed: float | Sequence[float] | None = None,
    names: Mapping[str, Value | Vector] | None = None,
    edges: str | None = None,
) -> str:
    """Graphviz DOT text of the graph behind ``output``, drawn from the leaves to the output.

    Each Value is a box with its name (from ``names``, as ``explain`` takes them, e.g.
    ``{"a": a}`` names a Vector's elements ``a[0]``, ``a[1]``...; else its label), data and
    grad; each operation an ellipse between its operands and its result; number constants
    are small plain nodes; what takes no gradient is dashed. With ``seed`` (a number for a
    Value, one per element for a Vector) each output shows its seed.

    ``edges="local"`` labels each edge that carries gradient with its local derivative;
    ``edges="chain"`` with ``upstream x local = contribution`` of the pass
    ``backward(seed)`` would run (computed as ``explain`` does, changing no ``.grad``).
    """
    with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
        if edges not in (None, "local", "chain"):
            raise ValueError(f'to_dot() edges must be None, "local" or "chain", got {edges!r}')
        outputs, seeds, pass_seed = _outputs_and_seeds(output, seed, edges)
        steps, shown = _steps_by_edge(output, pass_seed, names, edges)
        named = given_names(names)
        nodes = graph.ancestry(outputs)
        ids = {node: f"n{k}" for k, node in enumerate(nodes)}
        lines = ["digraph vjpgrad {", "  rankdir=LR;", '  node [fontname="Helvetica", fontsize=11];']
        for node, name in ids.items():
            title = named.get(node) or shown.get(node) or node.label or ""
            lines += _node_lines(node, name, title, ids, shown, steps, edges)
        for k, node in enumerate(outputs):
            if seeds is not None:
                lines.append(f"  seed{k} [shape=plaintext, fontcolor=blue, label={_quote(f'seed {seeds[k]:g}')}];")
                lines.append(
                    f"  {ids[node]} -> seed{k} [style=dashed, color=blue, dir=back];  // the seed flows into the output"
                )
        lines.append("}")
        return "\n".join(lines) + "\n"


def _outputs_and_seeds(
    output: Value | Vector, seed: float | Sequence[float] | None, edges: str | None
) -> tuple[list[Value], list[float] | None, object]:
    """The outputs, the seeds to show (None: none), and the seed of the pass the edges show."""
    if seed is None and isinstance(output, Vector) and edges != "chain":
        outputs = list(output)
        return outputs, None, [1.0] * len(outputs)  # no seed to show (local derivatives need none)
    outputs, given = outputs_and_seeds(output, seed, "to_dot")
    return outputs, (None if seed is None else given), seed


_Steps = dict[tuple[str, str], list[Step]]


def _steps_by_edge(
    output: Value | Vector, pass_seed: object, names: Mapping[str, Value | Vector] | None, edges: str | None
) -> tuple[_Steps, dict[Value, str]]:
    """The steps of the pass ``explain`` runs, by (node, operand) name, and the names it gave
    (none of either when the edges show nothing)."""
    if edges is None:
        return {}, {}
    explanation = explain(output, pass_seed, names)  # type: ignore[arg-type]  # to_dot checked it
    steps: _Steps = {}
    for step in explanation.steps:
        steps.setdefault((step.node, step.operand), []).append(step)
    return steps, explanation.names


def _node_lines(
    node: Value, name: str, title: str, ids: dict[Value, str], shown: dict[Value, str], steps: _Steps, edges: str | None
) -> list[str]:
    """A Value's box and, for a result, its operation's ellipse and the edges from its operands."""
    label = f"{title}\ndata {text.short(node.data)}\ngrad {text.short(node.grad)}".lstrip("\n")
    style = "" if node.requires_grad else ', style=dashed, color="gray40"'
    lines = [f"  {name} [shape=box, label={_quote(label)}{style}];"]
    if node.is_leaf:
        return lines
    lines.append(f"  {name}_op [shape=ellipse, label={_quote(node.op)}];")
    lines.append(f"  {name}_op -> {name};")
    used: dict[tuple[str, str], int] = {}
    for k, operand in enumerate(graph.operands(node)):
        if not isinstance(operand, Value):
            lines.append(f"  {name}_c{k} [shape=plaintext, label={_quote(text.short(operand))}];")
            lines.append(f"  {name}_c{k} -> {name}_op;")
            continue
        label = ""
        key = (shown.get(node, ""), shown.get(operand, ""))
        found = steps.get(key, [])
        if found:  # the k-th use of the same operand by this node is its k-th step
            step = found[min(used.get(key, 0), len(found) - 1)]
            used[key] = used.get(key, 0) + 1
            label = f" [label={_quote(_edge_text(step, edges))}, fontsize=10]"
        lines.append(f"  {ids[operand]} -> {name}_op{label};")
    return lines


def _edge_text(step: Step, edges: str | None) -> str:
    """What an edge shows: its local derivative, or ``upstream x local = contribution``."""
    if edges == "local":
        return text.short(step.local)
    return f"{text.short(step.upstream)} x {text.short(step.local)} = {text.short(step.contribution)}"


def draw(
    output: Value | Vector,
    path: str | Path | None = None,
    seed: float | Sequence[float] | None = None,
    names: Mapping[str, Value | Vector] | None = None,
    edges: str | None = None,
) -> SVGDrawing:
    """The picture of ``to_dot(output, seed, names, edges)``: it shows itself inline in a
    notebook, and is written to ``path`` when one is given (``.svg``, ``.png`` or ``.pdf``,
    by the suffix). Rendering needs the ``viz`` extra and Graphviz's ``dot``."""
    drawing = SVGDrawing(to_dot(output, seed, names, edges))
    if path is not None:
        drawing.save(path)
    return drawing


class SVGDrawing:
    """A graph picture: shows itself inline in Jupyter as SVG; ``.source`` is its DOT text.

    ``save(path)`` writes ``.svg``, ``.png`` or ``.pdf`` (by the suffix), or the DOT text
    itself for ``.dot`` / ``.gv``. Rendering needs the optional ``graphviz`` package and
    Graphviz's ``dot`` program; without them it raises ``ImportError`` saying how to install
    them, while ``.source`` still works.
    """

    FORMATS = ("svg", "png", "pdf")

    def __init__(self, source: str) -> None:
        if not isinstance(source, str):
            raise TypeError(f"SVGDrawing() takes DOT text (a str), got {type(source).__name__}")
        self.source = source
        self._svg: str | None = None

    def __repr__(self) -> str:
        lines = self.source.count("\n")
        return f"<SVGDrawing: {lines} lines of DOT in .source; .save(path) writes .svg, .png or .pdf>"

    def _render(self, fmt: str) -> bytes:
        try:
            import graphviz
        except ImportError as error:
            raise ImportError(INSTALL_HINT) from error
        try:
            data: bytes = graphviz.Source(self.source).pipe(format=fmt)
        except graphviz.ExecutableNotFound as error:
            raise ImportError(INSTALL_HINT) from error
        return data

    def svg(self) -> str:
        """The picture as SVG text (rendered once, then kept)."""
        if self._svg is None:
            self._svg = self._render("svg").decode("utf-8")
        return self._svg

    def _repr_svg_(self) -> str:
        """In a notebook: the picture, no wider than the cell (Graphviz writes its size in points)."""
        svg = self.svg()
        start = svg.find("<svg")
        if start < 0:
            return svg
        return f'{svg[: start + 4]} style="max-width:100%;height:auto"{svg[start + 4 :]}'

    def save(self, path: str | Path) -> Path:
        """Write the picture to ``path``; its suffix picks the format. Returns the path."""
        if not isinstance(path, (str, Path)):
            raise TypeError(f"save() takes a path (str or pathlib.Path), got {type(path).__name__}")
        target = Path(path)
        fmt = target.suffix.lstrip(".").lower()
        if fmt in ("dot", "gv"):
            target.write_text(self.source, encoding="utf-8")
        elif fmt == "svg":
            target.write_text(self.svg(), encoding="utf-8")
        elif fmt in self.FORMATS:
            target.write_bytes(self._render(fmt))
        else:
            raise ValueError(f"save() writes .svg, .png, .pdf, .dot or .gv files, got {target.name!r}")
        return target
