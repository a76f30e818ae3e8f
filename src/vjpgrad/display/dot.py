"""Graph pictures: ``to_dot`` writes Graphviz DOT text (no dependency); ``draw`` returns an
``SVGDrawing``, which shows itself inline in a notebook and saves to a file. Its SVG comes from
Graphviz when the optional ``graphviz`` package and Graphviz's ``dot`` program are there, and
otherwise from the stepper's own pure-Python layout (``stepper.picture_svg``), so a default
install draws too; PNG and PDF need Graphviz."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from vjpgrad.core import graph
from vjpgrad.core.modes import USER_FRAMES
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector, outputs_and_seeds
from vjpgrad.display import text
from vjpgrad.display.explain import EXPLAIN_AFTER_FREE, Step, apart, explain, formula, given_names, made_up

INSTALL_HINT = (
    "rendering with Graphviz (PNG and PDF, and any SVG draw() did not make) needs "
    "the graphviz Python package and Graphviz's dot program: "
    "pip install graphviz (or pip install -e '.[viz]' in your clone of vjpgrad), "
    "and install Graphviz (e.g. apt-get install graphviz or brew install graphviz)"
)


def _quote(*lines: str) -> str:
    """A DOT string literal of ``lines``, one under the other: any text is safe inside it, and shows
    as written, on its line (``text.printable``: a newline in a label is written ``\\n``; Graphviz
    reads entities in a label, so ``&`` is written ``&amp;``)."""
    escaped = [text.printable(line).replace("&", "&amp;").replace("\\", "\\\\").replace('"', '\\"') for line in lines]
    return '"' + "\\n".join(escaped) + '"'


def _chain_text(step: Step) -> str:
    """``upstream × local = contribution``: an edge's share of the chain rule, as a picture labels it."""
    return f"{text.short(step.upstream)} {text.TIMES} {text.short(step.local)} = {text.short(step.contribution)}"


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
    ``edges="chain"`` with ``upstream × local = contribution`` of the pass
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
        titles = _dot_titles(nodes, named, shown)
        lines = ["digraph vjpgrad {", "  rankdir=LR;", '  node [fontname="Helvetica", fontsize=11];']
        for node, name in ids.items():
            lines += _node_lines(node, name, titles.get(node, ""), ids, shown, steps, edges)
        for k, node in enumerate(outputs):
            if seeds is not None:
                lines.append(f"  seed{k} [shape=plaintext, fontcolor=blue, label={_quote(f'seed {seeds[k]:g}')}];")
                lines.append(
                    f"  {ids[node]} -> seed{k} [style=dashed, color=blue, dir=back];  // the seed flows into the output"
                )
        lines.append("}")
        return "\n".join(lines) + "\n"


def _dot_titles(nodes: Sequence[Value], named: Mapping[Value, str], shown: Mapping[Value, str]) -> dict[Value, str]:
    """Each titled box's name: the name given, or explain's, or the label, printable (a terminal's
    escape written ``\\x1b``), and two boxes of one name named apart as explain names them (a
    given name keeps it, then a Value that takes gradient, then the first made)."""
    titles = {node: text.printable(named.get(node) or shown.get(node) or node.label or "") for node in nodes}
    titles = {node: title for node, title in titles.items() if title}
    apart(titles, titles, named)
    return titles


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
    try:
        explanation = explain(output, pass_seed, names)  # type: ignore[arg-type]  # to_dot checked it
    except RuntimeError as error:
        if str(error) != EXPLAIN_AFTER_FREE:
            raise
        raise RuntimeError(  # in the words of the call the learner made
            f"edges={edges!r} labels each edge from the pass backward() would run, which needs the graph, and "
            "a backward() without retain_graph=True has already freed it: draw the picture before backward(), "
            "or pass retain_graph=True to backward()"
        ) from None
    steps: _Steps = {}
    for step in explanation.steps:
        steps.setdefault((step.node, step.operand), []).append(step)
    return steps, explanation.names


def _node_lines(
    node: Value, name: str, title: str, ids: dict[Value, str], shown: dict[Value, str], steps: _Steps, edges: str | None
) -> list[str]:
    """A Value's box and, for a result, its operation's ellipse and the edges from its operands."""
    box = [title] if title else []
    box += [f"data {text.short(node.data)}", f"grad {text.short(node.grad)}"]
    style = "" if node.requires_grad else ', style=dashed, color="gray40"'
    lines = [f"  {name} [shape=box, label={_quote(*box)}{style}];"]
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
    """What an edge shows: its local derivative, or ``upstream × local = contribution``."""
    return text.short(step.local) if edges == "local" else _chain_text(step)


def draw(
    output: Value | Vector,
    path: str | Path | None = None,
    seed: float | Sequence[float] | None = None,
    names: Mapping[str, Value | Vector] | None = None,
    edges: str | None = None,
) -> SVGDrawing:
    """The picture of the graph behind ``output``: it shows itself inline in a notebook, and is
    written to ``path`` when one is given (``.svg``, ``.png`` or ``.pdf``, by the suffix).

    ``seed``, ``names`` and ``edges`` are ``to_dot``'s. With Graphviz (the ``graphviz``
    package: ``pip install graphviz``, or ``pip install -e '.[viz]'`` in your clone; and
    Graphviz's ``dot`` program) the picture is Graphviz's drawing of
    ``to_dot(output, seed, names, edges)``. Without it, the SVG is drawn in pure Python, in the
    stepper's layout (leaves on the left, the output on the right), each Value a box with its
    data and ``.grad``; PNG and PDF need Graphviz.

    >>> from vjpgrad import Value, draw
    >>> a, b = Value(2.0), Value(3.0)
    >>> y = a * b + a
    >>> picture = draw(y, names={"a": a, "b": b}, edges="local")  # in a notebook: the picture
    >>> picture.source.splitlines()[0]                            # the DOT text it was drawn from
    'digraph vjpgrad {'
    >>> "<svg" in picture.svg()                                   # with Graphviz or without
    True
    """
    with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
        source = to_dot(output, seed, names, edges)
        drawing = SVGDrawing(source, plain_svg=_plain_svg(output, seed, names, edges))
    if path is not None:
        drawing.save(path)
    return drawing


def _plain_svg(
    output: Value | Vector,
    seed: float | Sequence[float] | None,
    names: Mapping[str, Value | Vector] | None,
    edges: str | None,
) -> str:
    """The pure-Python picture of the graph ``to_dot`` describes, in the stepper's layout: each
    Value a box (number constants are written into the formulas), edges labelled as ``to_dot``'s."""
    from vjpgrad.display import stepper  # its layout, and the libraries it needs, when a picture is drawn

    outputs = list(output) if isinstance(output, Vector) else [output]
    nodes = graph.ancestry(outputs)
    steps, named = _picture_steps(output, seed, names, edges)
    for k, value in enumerate(outputs):
        named.setdefault(value, value.label or (f"y[{k}]" if isinstance(output, Vector) else "y"))
    title = _picture_titles(nodes, named)
    output_ids = {id(value) for value in outputs}
    boxes = [
        stepper.PictureNode(
            title[node],
            leaf=node.is_leaf,
            output=id(node) in output_ids,
            constant=not node.requires_grad,
            formula="" if node.is_leaf else formula(node, title),
            data=node.data,
            grad=node.grad,
        )
        for node in nodes
    ]
    return stepper.picture_svg(boxes, _picture_arrows(nodes, title, steps, edges), [title[v] for v in outputs])


def _picture_steps(
    output: Value | Vector,
    seed: float | Sequence[float] | None,
    names: Mapping[str, Value | Vector] | None,
    edges: str | None,
) -> tuple[dict[tuple[Value, Value], Step], dict[Value, str]]:
    """The first step of the pass on each (node, operand) edge when the edges are labelled, and
    the names of the Values: the given ones, then ``explain``'s."""
    named = given_names(names)
    steps: dict[tuple[Value, Value], Step] = {}
    if edges is None:
        return steps, named
    # to_dot has run explain on the same arguments: this cannot raise
    pass_seed: object = [1.0] * len(output) if seed is None and isinstance(output, Vector) else seed
    explanation = explain(output, pass_seed, names)  # type: ignore[arg-type]
    by_name = {name: value for value, name in explanation.names.items()}
    for step in explanation.steps:
        steps.setdefault((by_name[step.node], by_name[step.operand]), step)
    return steps, {**explanation.names, **named}


def _picture_titles(nodes: Sequence[Value], named: Mapping[Value, str]) -> dict[Value, str]:
    """Each Value's title in the picture, as explain and ``to_dot`` name it: its name or label,
    printable, else x1, x2... for leaves and t1, t2... for results (past every name in use); two
    Values of one name are ``a`` and ``a (2)``, a name given keeping its own."""
    title = {node: text.printable(named.get(node) or node.label or "") for node in nodes}
    taken = {name for name in title.values() if name}
    leaf_names, inner_names = made_up("x", taken), made_up("t", taken)
    for node in nodes:
        if not title[node]:
            title[node] = next(leaf_names) if node.is_leaf else next(inner_names)
    apart(title, nodes, named)
    return title


def _picture_arrows(
    nodes: Sequence[Value], title: Mapping[Value, str], steps: Mapping[tuple[Value, Value], Step], edges: str | None
) -> list[tuple[str, str, str]]:
    """An arrow from each Value operand to its result, labelled as ``to_dot`` labels the edge."""
    arrows = []
    for node in nodes:
        for operand in graph.operands(node):
            if isinstance(operand, Value):
                on_edge = steps.get((node, operand))
                label = "" if on_edge is None else _edge_text(on_edge, edges)
                arrows.append((title[operand], title[node], label))
    return arrows


class SVGDrawing:
    """A graph picture: shows itself inline in Jupyter as SVG; ``.source`` is its DOT text.

    ``save(path)`` writes ``.svg``, ``.png`` or ``.pdf`` (by the suffix), or the DOT text
    itself for ``.dot`` / ``.gv``. Graphviz renders it when the optional ``graphviz`` package
    and Graphviz's ``dot`` program are installed; without them the SVG is ``plain_svg`` (the
    pure-Python picture ``draw`` makes), and PNG, PDF, or SVG of a drawing without
    ``plain_svg``, raise ``ImportError`` saying how to install Graphviz.
    """

    FORMATS = ("svg", "png", "pdf")

    def __init__(self, source: str, plain_svg: str | None = None) -> None:
        if not isinstance(source, str):
            raise TypeError(f"SVGDrawing() takes DOT text (a str), got {type(source).__name__}")
        if plain_svg is not None and not isinstance(plain_svg, str):
            raise TypeError(f"SVGDrawing() plain_svg must be SVG text (a str) or None, got {type(plain_svg).__name__}")
        self.source = source
        self.plain_svg = plain_svg
        self._svg: str | None = None

    def __repr__(self) -> str:
        lines = self.source.count("\n")
        return f"<SVGDrawing: {lines} lines of DOT in .source; .save(path) writes .svg (.png/.pdf need Graphviz)>"

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
        """The picture as SVG text (rendered once, then kept): Graphviz's, or the pure-Python one."""
        if self._svg is None:
            try:
                self._svg = self._render("svg").decode("utf-8")
            except ImportError:
                if self.plain_svg is None:
                    raise
                self._svg = self.plain_svg
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
