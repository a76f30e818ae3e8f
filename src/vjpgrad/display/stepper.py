"""The reverse-pass stepper: one self-contained HTML page that walks a learner through
``backward`` one edge at a time.

``stepper_html(explain(y))`` is a whole page: inline CSS and JavaScript, nothing fetched,
so it works from a file, offline. ``stepper_fragment`` is the same stepper as a piece of
HTML for a notebook's output cell or any other page: its ids are unique per call and its
CSS touches only its own ``vjs-`` classes.

Python lays the graph out (columns by depth, leaves on the left, outputs on the right; an
edge that skips a column goes round its boxes, through a free band) and draws it as inline
SVG; the page's script only replays the explanation's steps, so what it shows is exactly
``explain``'s data: step 0 is the seeds, step k the k-th edge of the pass, the last step
leaves every node at the gradient ``backward`` gives it.

Everything a user wrote (labels, names, op names of custom ops, the title) is escaped: the
markup through ``html.escape``, the data as JSON with ``<``, ``>`` and ``&`` written as
``\\u003c``, ``\\u003e`` and ``\\u0026`` so that nothing in it can close the ``<script>``
element that holds it; the script puts text on the page only through ``textContent``.
The whole page also carries a Content-Security-Policy that lets only its own script run.
"""

from __future__ import annotations

import base64
import hashlib
import html
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from vjpgrad.display import text
from vjpgrad.display.text import ExplanationData

MISSING = "\u2014"  # the running total of a node the pass has not reached yet

# Layout, in SVG pixels. Node text is 12px monospace, so a line's width is its length times CHAR_WIDTH.
CHAR_WIDTH = 7.3
LINE_HEIGHT = 15.0
PADDING = 8.0
COLUMN_GAP = 80.0
ROW_GAP = 16.0
MARGIN = 16.0
MIN_WIDTH = 96.0
CLIP = 36  # longest name or formula drawn in a node; the full text is in its tooltip
SMALLEST_SCALE = 11 / 12  # the graph shrinks to fit its box no further: node text (12px) stays 11px or more,
# and a narrower box (a phone) scrolls the graph sideways instead

_page_numbers = itertools.count(1)


def json_number(x: float) -> float | str:
    """A float for JSON: finite ones as numbers, the others as strings ``float()`` and JS's ``Number()`` read."""
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def script_json(data: object) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` in it at all."""
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _escape(label: str) -> str:
    """``label`` as HTML text or an attribute's value: printable (``text.printable``), escaped, and a
    carriage return as a character reference (HTML reads a bare one as a newline, and the script
    finds a node by the name its data holds: ``_named``)."""
    return html.escape(text.printable(label), quote=True).replace("\r", "&#13;")


def _named(name: str) -> str:
    """A node's name as the page's data holds it: as its drawing shows it (``text.printable``)."""
    return text.printable(name)


def _clip(text: str, limit: int = CLIP) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _fmt(x: float) -> str:
    """An SVG coordinate."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


@dataclass
class _Node:
    name: str
    kinds: list[str]  # "leaf", "inner", "output"
    formula: str
    data: float
    gradient: float
    depth: int = 0
    order: int = 0
    x: float = 0.0
    y: float = 0.0
    width: float = 0.0
    height: float = 0.0


@dataclass(frozen=True)
class _Edge:
    index: int
    operand: str
    node: str


def _check(explanation: object, title: object) -> None:
    if not all(hasattr(explanation, field) for field in ("seeds", "steps", "gradients", "names", "formulas")):
        raise TypeError(f"the stepper takes an Explanation (vjpgrad.explain(y)), got {type(explanation).__name__}")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None, got {type(title).__name__}")


def _nodes(explanation: ExplanationData) -> tuple[dict[str, _Node], list[str]]:
    """One node per name, and the names that more than one Value share (drawn as one node)."""
    outputs = {name for name, _ in explanation.seeds}
    nodes: dict[str, _Node] = {}
    shared: list[str] = []
    for value, name in explanation.names.items():
        if name in nodes:
            shared.append(name)
            continue
        kinds = ["leaf" if value.is_leaf else "inner"] + (["output"] if name in outputs else [])
        formula = explanation.formulas.get(name, "") if not value.is_leaf else ""
        nodes[name] = _Node(name, kinds, formula, value.data, explanation.gradients.get(value, 0.0))
    for step in explanation.steps:  # cannot happen with explain's data; keeps the page whole if it does
        for name in (step.node, step.operand):
            nodes.setdefault(name, _Node(name, ["inner"], "", math.nan, math.nan))
    return nodes, sorted(set(shared))


def _edges(explanation: ExplanationData) -> tuple[list[_Edge], list[int]]:
    """The drawn edges (an operand used twice, as in ``b * b``, has two) and each step's edge."""
    keys: dict[tuple[str, str, int], _Edge] = {}
    seen: dict[tuple[str, str], int] = {}
    step_edges = []
    last_node = None
    for step in explanation.steps:
        if step.node != last_node:  # backward hands on a node's gradient in one go
            seen = {}
            last_node = step.node
        occurrence = seen.get((step.node, step.operand), 0)
        seen[(step.node, step.operand)] = occurrence + 1
        key = (step.node, step.operand, occurrence)
        if key not in keys:
            keys[key] = _Edge(len(keys), step.operand, step.node)
        step_edges.append(keys[key].index)
    return list(keys.values()), step_edges


def _layout(
    nodes: dict[str, _Node], edges: list[_Edge], outputs: list[str], widest: dict[str, int], gap: float = COLUMN_GAP
) -> tuple[float, float]:
    """Columns by depth (leaves 0), rows in the order a walk from the outputs meets the nodes."""
    operands: dict[str, list[str]] = {name: [] for name in nodes}
    for edge in edges:
        operands[edge.node].append(edge.operand)
    # Depth: an iterative post-order, so a chain of any length is fine.
    order: list[str] = []
    visited: set[str] = set()
    for root in [*outputs, *nodes]:
        stack: list[tuple[str, bool]] = [(root, False)]
        while stack:
            name, expanded = stack.pop()
            if expanded:
                node = nodes[name]
                node.depth = max((nodes[o].depth + 1 for o in operands[name]), default=0)
                node.order = len(order)
                order.append(name)
                continue
            if name in visited:
                continue
            visited.add(name)
            stack.append((name, True))
            stack.extend((o, False) for o in reversed(operands[name]) if o not in visited)
    columns: dict[int, list[_Node]] = {}
    for node in sorted(nodes.values(), key=lambda n: (n.depth, n.order)):
        lines = [node.name, f"= {node.formula}" if node.formula else "", f"data {text.number(node.data)}"]
        longest = max(len(_clip(line)) for line in lines)
        longest = max(longest, len("grad ") + widest.get(node.name, 1))
        node.width = max(MIN_WIDTH, longest * CHAR_WIDTH + 2 * PADDING)
        node.height = (4 if node.formula else 3) * LINE_HEIGHT + 2 * PADDING - 4
        columns.setdefault(node.depth, []).append(node)
    # Rows: leaves in the order of the walk; every other node as near the middle of its operands
    # as the nodes above it in its column allow, so a graph reads left to right with few crossings.
    x = MARGIN
    bottom = MARGIN
    for depth in sorted(columns):
        column = columns[depth]
        wanted: dict[str, float] = {}
        for node in column:
            centres = [nodes[o].y + nodes[o].height / 2 for o in operands[node.name]]
            wanted[node.name] = sum(centres) / len(centres) - node.height / 2 if centres else 0.0
        column.sort(key=lambda n: (wanted[n.name], n.order))
        _outputs_in_order(column, outputs)
        y = MARGIN
        for node in column:
            node.x, node.y = x, max(y, wanted[node.name])
            y = node.y + node.height + ROW_GAP
        bottom = max(bottom, y - ROW_GAP)
        x += max(n.width for n in column) + gap
    total_height = bottom + MARGIN
    return max(x - gap, MARGIN) + MARGIN, total_height  # no node (an empty Vector): the margins alone


def _outputs_in_order(column: list[_Node], outputs: list[str]) -> None:
    """Put the outputs of a column in the order of ``outputs`` (y[0] above y[1]), in the rows they hold."""
    rank = {name: k for k, name in reversed(list(enumerate(outputs)))}
    rows = [k for k, node in enumerate(column) if node.name in rank]
    for k, node in zip(rows, sorted((column[k] for k in rows), key=lambda n: rank[n.name]), strict=True):
        column[k] = node


def _node_svg(node: _Node, grad_text: str = MISSING) -> str:
    kinds = " ".join(f"vjs-{kind}" for kind in node.kinds)
    texts = [f'<text class="vjs-name" x="{_fmt(PADDING)}" y="{_fmt(PADDING + 11)}">{_escape(_clip(node.name))}</text>']
    line = 1
    if node.formula:
        y = PADDING + 11 + LINE_HEIGHT * line
        texts.append(
            f'<text class="vjs-formula" x="{_fmt(PADDING)}" y="{_fmt(y)}">= {_escape(_clip(node.formula))}</text>'
        )
        line += 1
    y = PADDING + 11 + LINE_HEIGHT * line
    texts.append(
        f'<text class="vjs-data" x="{_fmt(PADDING)}" y="{_fmt(y)}">data {_escape(text.number(node.data))}</text>'
    )
    y += LINE_HEIGHT
    texts.append(f'<text class="vjs-total" x="{_fmt(PADDING)}" y="{_fmt(y)}">grad {_escape(grad_text)}</text>')
    tooltip = node.name + (f" = {node.formula}" if node.formula else "")
    return (
        f'<g class="vjs-node {kinds}" data-node="{_escape(node.name)}" '
        f'transform="translate({_fmt(node.x)},{_fmt(node.y)})"><title>{_escape(tooltip)}</title>'
        f'<rect width="{_fmt(node.width)}" height="{_fmt(node.height)}" rx="6"></rect>{"".join(texts)}</g>'
    )


_Run = tuple[float, float, float]  # a level stretch of an edge: from x, to x, at y


def _edge_svg(edge: _Edge, route: list[_Run], uid: str) -> str:
    points = _route_points(_middle(route, 1))
    mx, my = points[len(points) // 2]
    return (
        f'<path class="vjs-edge" data-edge="{edge.index}" data-from="{_escape(edge.operand)}" '
        f'data-to="{_escape(edge.node)}" data-mx="{_fmt(mx)}" data-my="{_fmt(my)}" '
        f'd="{_route_path(route)}" marker-end="url(#{uid}-arrow)"></path>'
    )


def _middle(route: list[_Run], curves: int) -> list[_Run]:
    """The stretches around the middle of a route, joined by ``curves`` curves at most."""
    start = max(0, (len(route) - 1 - curves) // 2)
    return route[start : start + curves + 1]


def _route_path(route: list[_Run]) -> str:
    """SVG path data of a route: its level stretches joined by S-curves that leave and arrive level.
    Stretches at one height are one line (an S-curve between them would be a straight line too): an
    edge that runs level across many columns, as each sum of a chain over one leaf does back to the
    leaf, is two points, so a page grows with its steps, not with their square."""
    route = _level_joined(route)
    x0, x1, y = route[0]
    parts = [f"M{_fmt(x0)},{_fmt(y)}"] + ([f"L{_fmt(x1)},{_fmt(y)}"] if x1 > x0 else [])
    for (_, xa, ya), (xb, xe, yb) in itertools.pairwise(route):
        bend = (xb - xa) / 2
        parts.append(f"C{_fmt(xa + bend)},{_fmt(ya)} {_fmt(xb - bend)},{_fmt(yb)} {_fmt(xb)},{_fmt(yb)}")
        if xe > xb:
            parts.append(f"L{_fmt(xe)},{_fmt(yb)}")
    return " ".join(parts)


def _level_joined(route: list[_Run]) -> list[_Run]:
    """``route`` with each run of stretches at one height as written (``_fmt``) joined into one stretch."""
    joined = [route[0]]
    for start, end, y in route[1:]:
        if _fmt(y) == _fmt(joined[-1][2]):
            joined[-1] = (joined[-1][0], end, y)
        else:
            joined.append((start, end, y))
    return joined


def _route_points(route: list[_Run], per_curve: int = 12) -> list[tuple[float, float]]:
    """Points along the S-curves of a route, in order: the parts of an edge between columns."""
    points = []
    for (_, xa, ya), (xb, _, yb) in itertools.pairwise(route):
        for k in range(1, per_curve):
            t = k / per_curve
            # the curve's control points are (xa, ya), (m, ya), (m, yb), (xb, yb), m halfway from xa to xb
            across = 1.5 * t * (1 - t) + t**3
            points.append((xa + (xb - xa) * across, ya + (yb - ya) * (3 * t * t - 2 * t**3)))
    return points


def _columns(nodes: dict[str, _Node]) -> dict[int, tuple[float, float, list[tuple[float, float]]]]:
    """Each column's left and right and its boxes' (top, bottom), top to bottom."""
    columns: dict[int, tuple[float, float, list[tuple[float, float]]]] = {}
    for node in sorted(nodes.values(), key=lambda n: n.y):
        left, right, boxes = columns.get(node.depth, (node.x, node.x, []))
        boxes.append((node.y, node.y + node.height))
        columns[node.depth] = (min(left, node.x), max(right, node.x + node.width), boxes)
    return columns


def _lanes(boxes: list[tuple[float, float]], height: float) -> list[tuple[float, float]]:
    """The free bands of a column, (top, bottom): above its first box, between boxes, below its last."""
    bounds = [0.0] + [y for box in boxes for y in box] + [height]
    return [(bounds[k], bounds[k + 1]) for k in range(0, len(bounds), 2)]


def _spread(wanted: list[float], low: float, high: float, step: float = 4.0) -> list[float]:
    """Ys as near ``wanted`` (sorted) as they can be, ``step`` apart, all in [low, high]."""
    if len(wanted) > 1 and (high - low) / (len(wanted) - 1) < step:
        step = (high - low) / (len(wanted) - 1)
    ys = [min(max(y, low), high) for y in wanted]
    for k in range(1, len(ys)):  # down, keeping them apart; then up, back under high
        ys[k] = max(ys[k], ys[k - 1] + step)
    ys[-1] = min(ys[-1], high)
    for k in range(len(ys) - 2, -1, -1):
        ys[k] = min(ys[k], ys[k + 1] - step)
    return ys


def _routes(nodes: dict[str, _Node], edges: list[_Edge], height: float) -> dict[int, list[_Run]]:
    """Each edge's way from its operand's right side to its node's left: level across the
    operand's column, then, for each column it skips, level across a free band of that column
    (the one nearest the straight line; edges sharing a band are spread apart in it), joined by
    S-curves in the gaps between columns, where no box is. So no edge runs behind a box."""
    ends = _edge_ends(nodes, edges)
    columns = _columns(nodes)
    lanes = {depth: _lanes(boxes, height) for depth, (_, _, boxes) in columns.items()}
    crossings: dict[tuple[int, int], list[tuple[float, int]]] = {}  # (column, band): (wanted y, edge)
    for edge in edges:
        source, target = nodes[edge.operand], nodes[edge.node]
        (y1, y2), span = ends[edge.index], target.depth - source.depth
        for depth in range(source.depth + 1, target.depth):
            ideal = y1 + (y2 - y1) * (depth - source.depth) / span
            bands = lanes[depth]
            band = min(range(len(bands)), key=lambda k: abs(min(max(ideal, bands[k][0]), bands[k][1]) - ideal))
            crossings.setdefault((depth, band), []).append((ideal, edge.index))
    lane: dict[tuple[int, int], float] = {}
    for (depth, band), group in crossings.items():
        top, bottom = lanes[depth][band]
        group.sort()
        clear = min(6.0, (bottom - top) / 2)
        for (_, index), y in zip(group, _spread([y for y, _ in group], top + clear, bottom - clear), strict=True):
            lane[(depth, index)] = y
    routes = {}
    for edge in edges:
        source, target = nodes[edge.operand], nodes[edge.node]
        y1, y2 = ends[edge.index]
        route = [(source.x + source.width, columns[source.depth][1], y1)]
        route += [(columns[d][0], columns[d][1], lane[(d, edge.index)]) for d in range(source.depth + 1, target.depth)]
        routes[edge.index] = [*route, (target.x, target.x, y2)]
    return routes


def _edge_ends(nodes: dict[str, _Node], edges: list[_Edge]) -> dict[int, tuple[float, float]]:
    """Where each edge leaves its operand and enters its node: spread down the box's side in
    the order of the other ends, so that edges sharing a side do not cross there."""
    outgoing: dict[str, list[_Edge]] = {}
    incoming: dict[str, list[_Edge]] = {}
    for edge in edges:
        outgoing.setdefault(edge.operand, []).append(edge)
        incoming.setdefault(edge.node, []).append(edge)
    starts: dict[int, float] = {}
    finishes: dict[int, float] = {}
    for name, group in outgoing.items():
        group.sort(key=lambda e: (nodes[e.node].y, e.index))
        for j, e in enumerate(group):
            starts[e.index] = nodes[name].y + nodes[name].height * (j + 1) / (len(group) + 1)
    for name, group in incoming.items():
        group.sort(key=lambda e: (nodes[e.operand].y, e.index))
        for j, e in enumerate(group):
            finishes[e.index] = nodes[name].y + nodes[name].height * (j + 1) / (len(group) + 1)
    return {e.index: (starts[e.index], finishes[e.index]) for e in edges}


def _markers(uid: str) -> str:
    return "".join(
        f'<marker id="{uid}-arrow{suffix}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="{size}" '
        f'markerHeight="{size}" markerUnits="userSpaceOnUse" orient="auto-start-reverse">'
        f'<path d="M0,0 L10,5 L0,10 z" fill="{color}"></path></marker>'
        for suffix, color, size in (("", "#8a96a8", 8), ("-hot", "#c0392b", 12))
    )


def _graph_svg(nodes: dict[str, _Node], edges: list[_Edge], width: float, height: float, uid: str) -> str:
    routes = _routes(nodes, edges, height)
    markers = _markers(uid)
    return (
        f'<svg class="vjs-graph" xmlns="http://www.w3.org/2000/svg" width="{_fmt(width)}" height="{_fmt(height)}" '
        f'viewBox="0 0 {_fmt(width)} {_fmt(height)}" style="min-width:{math.ceil(width * SMALLEST_SCALE)}px" '
        'role="img" '
        'aria-label="the graph: arrows go from operand to result">'
        f"<defs>{markers}</defs>"
        f'<g class="vjs-edges">{"".join(_edge_svg(e, routes[e.index], uid) for e in edges)}</g>'
        f'<g class="vjs-nodes">{"".join(_node_svg(n) for n in nodes.values())}</g>'
        '<text class="vjs-edge-label" data-role="edge-label" x="0" y="0"></text></svg>'
    )


_PICTURE_CSS = (
    "svg.vjs-picture text{font:12px ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;fill:#1d2330}"
    "svg.vjs-picture .vjs-name{font-weight:700}"
    "svg.vjs-picture .vjs-formula,svg.vjs-picture .vjs-data{fill:#4a5568}"
    "svg.vjs-picture .vjs-node rect{fill:#f4f6fa;stroke:#7a8aa6;stroke-width:1.2}"
    "svg.vjs-picture .vjs-leaf rect{fill:#eef7ee;stroke:#4f8f4f}"
    "svg.vjs-picture .vjs-output rect{fill:#fff4e5;stroke:#c98a2a}"
    "svg.vjs-picture .vjs-constant rect{fill:#fff;stroke:#8a96a8;stroke-dasharray:4 3}"
    "svg.vjs-picture .vjs-edge{fill:none;stroke:#8a96a8;stroke-width:1.3}"
    "svg.vjs-picture .vjs-edge-label{fill:#c0392b;font-size:11px;paint-order:stroke;stroke:#fff;stroke-width:4px}"
    "svg.vjs-picture .vjs-label-ground{fill:#fff;fill-opacity:.85}"
)


@dataclass(frozen=True)
class PictureNode:
    """One box of a still picture: its name (unique in the picture), whether it is a leaf, an
    output, or takes no gradient, how it was computed, its data and its ``.grad``."""

    name: str
    leaf: bool
    output: bool
    constant: bool
    formula: str
    data: float
    grad: float


def picture_svg(nodes: list[PictureNode], edges: list[tuple[str, str, str]], outputs: list[str] | None = None) -> str:
    """A still picture of a graph in the stepper's layout (leaves on the left, outputs on the
    right), as one standalone SVG: ``edges`` are (operand, result, label) triples, an arrow
    from the operand to the result with the label's text on it (when not empty); ``outputs``
    are the outputs' names, in the order they are drawn top to bottom where they share a
    column (by default, the order of ``nodes``).

    Pure Python: this is the picture ``draw`` gives without Graphviz.
    """
    placed: dict[str, _Node] = {}
    for node in nodes:
        kinds = ["leaf" if node.leaf else "inner"] + ["output"] * node.output + ["constant"] * node.constant
        placed[node.name] = _Node(node.name, kinds, node.formula, node.data, node.grad)
    drawn = [_Edge(k, operand, result) for k, (operand, result, _) in enumerate(edges)]
    shown = {node.name: text.number(node.grad) for node in nodes}
    widest = {name: len(grad) for name, grad in shown.items()}
    longest_label = max((len(label) for _, _, label in edges), default=0)
    gap = max(COLUMN_GAP, 1.5 * longest_label * LABEL_CHAR_WIDTH + 2 * PADDING)  # room to stagger labels
    order = outputs if outputs is not None else [node.name for node in nodes if node.output]
    width, height = _layout(placed, drawn, order, widest, gap)
    routes = _routes(placed, drawn, height)
    labels = _labels(placed, routes, {k: label for k, (_, _, label) in enumerate(edges) if label}, width, height)
    body = (
        f'<g class="vjs-edges">{"".join(_edge_svg(e, routes[e.index], "UID") for e in drawn)}</g>'
        f'<g class="vjs-nodes">{"".join(_node_svg(n, shown[n.name]) for n in placed.values())}</g>'
        f"{labels}"
    )
    uid = "vjs-picture-" + hashlib.sha256(body.encode()).hexdigest()[:10]  # the same picture, the same ids
    return (
        f'<svg class="vjs-picture" xmlns="http://www.w3.org/2000/svg" width="{_fmt(width)}" '
        f'height="{_fmt(height)}" viewBox="0 0 {_fmt(width)} {_fmt(height)}" role="img" '
        'aria-label="the graph: arrows go from operand to result">'
        f"<style>{_PICTURE_CSS}</style><defs>{_markers(uid)}</defs>"
        f"{body.replace('url(#UID-arrow)', f'url(#{uid}-arrow)')}</svg>\n"
    )


LABEL_CHAR_WIDTH = CHAR_WIDTH * 11 / 12  # edge labels are 11px monospace
LABEL_HEIGHT = 14.0
LABEL_NUDGES = (0.0, -6.0, 6.0, -12.0, 12.0, -18.0, 18.0, -24.0, 24.0, -30.0, 30.0)
HIDING = 100.0  # the cost of a place per other edge under the label: a label on a crossing names neither edge

_Box = tuple[float, float, float, float]  # left, top, right, bottom


def _labels(nodes: dict[str, _Node], routes: dict[int, list[_Run]], labels: dict[int, str], w: float, h: float) -> str:
    """Each edge's label on a white ground, on a clear part of its edge between two columns:
    as near the middle of the edge as it can be, nudged up or down off boxes and other labels,
    and where it hides as few other edges as it can."""
    if not labels:
        return ""
    taken: _Taken = {}
    for n in nodes.values():
        _take(taken, (n.x - 10, n.y - 2, n.x + n.width + 10, n.y + n.height + 2))  # off the arrowheads too
    cells = _edge_cells(routes)
    out = []
    for index, label in labels.items():
        size = len(label) * LABEL_CHAR_WIDTH + 6
        points = _route_points(_middle(routes[index], 3))  # a label sits near the middle of its edge
        x, y = _label_place(points, size, taken, (0.0, 0.0, w, h), cells, index)
        _take(taken, (x - size / 2, y - LABEL_HEIGHT / 2, x + size / 2, y + LABEL_HEIGHT / 2))
        out.append(
            f'<rect class="vjs-label-ground" x="{_fmt(x - size / 2)}" y="{_fmt(y - LABEL_HEIGHT / 2)}" '
            f'width="{_fmt(size)}" height="{_fmt(LABEL_HEIGHT)}" rx="3"></rect>'
            f'<text class="vjs-edge-label" x="{_fmt(x)}" y="{_fmt(y + 4)}" text-anchor="middle">{_escape(label)}</text>'
        )
    return "".join(out)


CELL = 12.0  # the grid that records where edges run, in SVG pixels
BLOCK = 64.0  # the grid that records which boxes are taken

_Taken = dict[tuple[int, int], list[_Box]]


def _blocks(box: _Box) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i in range(int(box[0] // BLOCK), int(box[2] // BLOCK) + 1)
        for j in range(int(box[1] // BLOCK), int(box[3] // BLOCK) + 1)
    ]


def _take(taken: _Taken, box: _Box) -> None:
    for block in _blocks(box):
        taken.setdefault(block, []).append(box)


def _free(taken: _Taken, box: _Box) -> bool:
    return not any(_overlap(box, other) for block in _blocks(box) for other in taken.get(block, ()))


_Cells = dict[tuple[int, int], set[int]]


def _edge_cells(routes: dict[int, list[_Run]]) -> _Cells:
    """Which edges run through each cell of a grid ``CELL`` pixels wide."""
    cells: _Cells = {}
    for index, route in routes.items():
        for x, y in _route_points(route, 16):
            cells.setdefault((int(x // CELL), int(y // CELL)), set()).add(index)
        for xa, xb, y in route:
            for i in range(int(xa // CELL), int(xb // CELL) + 1):
                cells.setdefault((i, int(y // CELL)), set()).add(index)
    return cells


def _hidden(box: _Box, cells: _Cells, own: int) -> int:
    """How many edges other than ``own`` run under ``box``."""
    found: set[int] = set()
    for i in range(int(box[0] // CELL), int(box[2] // CELL) + 1):
        for j in range(int(box[1] // CELL), int(box[3] // CELL) + 1):
            found |= cells.get((i, j), set())
    return len(found - {own})


def _label_place(
    points: list[tuple[float, float]], size: float, taken: _Taken, frame: _Box, cells: _Cells, own: int
) -> tuple[float, float]:
    """The centre of a label ``size`` wide: of the points of its edge (and nudges off them) whose
    box is in ``frame`` and meets no box ``taken``, the one nearest the edge's middle that
    hides fewest other edges; failing all, the middle."""
    middle = (len(points) - 1) / 2
    candidates = sorted(
        (abs(k - middle) + abs(dy) / 3, x, y + dy) for k, (x, y) in enumerate(points) for dy in LABEL_NUDGES
    )
    best: tuple[float, float, float] | None = None
    for cost, x, y in candidates:
        box = (x - size / 2, y - LABEL_HEIGHT / 2, x + size / 2, y + LABEL_HEIGHT / 2)
        inside = frame[0] <= box[0] and box[2] <= frame[2] and frame[1] <= box[1] and box[3] <= frame[3]
        if best is not None and cost >= best[0]:
            break  # sorted by cost before hiding: nothing further can do better
        if inside and _free(taken, box):
            total = cost + HIDING * _hidden(box, cells, own)
            if best is None or total < best[0]:
                best = (total, x, y)
    return (best[1], best[2]) if best is not None else (candidates[0][1], candidates[0][2])


def _overlap(a: _Box, b: _Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _table(explanation: ExplanationData, start_text: str) -> str:
    # the unnamed column (the sign of upstream x local) is named for a screen reader alone
    header = "".join(f"<th>{h}</th>" if h else '<th><span class="vjs-sr">times</span></th>' for h in text.STEP_COLUMNS)
    rows = [f'<tr data-step="0" class="vjs-seed-row"><td>0</td><td colspan="9">seeds: {_escape(start_text)}</td></tr>']
    for k, s in enumerate(explanation.steps, start=1):
        cells = text.step_cells(k, s)
        rows.append(f'<tr data-step="{k}">' + "".join(f"<td>{_escape(c)}</td>" for c in cells) + "</tr>")
    return f'<table class="vjs-table"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _start(explanation: ExplanationData) -> dict[str, float]:
    """Each output's gradient before the first step: its seed (an output listed twice gets both, as in explain)."""
    start: dict[str, float] = {}
    for name, seed in explanation.seeds:
        start[name] = start.get(name, 0.0) + seed
    return start


def page_data(explanation: ExplanationData, title: str | None = None) -> dict[str, object]:
    """What the page's script reads: seeds, starting totals, nodes, steps (numbers exact, texts for show)."""
    _check(explanation, title)
    start = _start(explanation)
    _, step_edges = _edges(explanation)
    running = dict(start)
    steps = []
    last_contribution: dict[str, int] = {}
    for k, (s, edge) in enumerate(zip(explanation.steps, step_edges, strict=True), start=1):
        before = running.get(s.operand)
        running[s.operand] = s.total
        last_contribution[s.operand] = k
        steps.append({
            "node": _named(s.node), "op": s.op, "operand": _named(s.operand), "edge": edge,
            "upstream": json_number(s.upstream), "local": json_number(s.local),
            "contribution": json_number(s.contribution), "total": json_number(s.total),
            "text": {
                "upstream": text.number(s.upstream), "local": text.number(s.local),
                "contribution": text.number(s.contribution), "total": text.number(s.total),
                "before": None if before is None else text.number(before),
            },
        })  # fmt: skip
    nodes, shared = _nodes(explanation)
    return {
        "title": title,
        "seeds": [
            {"name": _named(name), "seed": json_number(seed), "text": text.number(seed)}
            for name, seed in explanation.seeds
        ],
        "start": [{"name": _named(name), "value": json_number(v), "text": text.number(v)} for name, v in start.items()],
        "nodes": [
            {
                "name": _named(n.name),
                "kinds": n.kinds,
                "formula": n.formula,
                "data": json_number(n.data),
                "gradient": json_number(n.gradient),
                "final_at": last_contribution.get(n.name, 0),
            }
            for n in nodes.values()
        ],
        "shared_names": [_named(name) for name in shared],
        "steps": steps,
        "leaves_are": text.leaves_are(explanation),
    }


def _default_title(explanation: ExplanationData) -> str:
    outputs = ", ".join(name for name, _ in explanation.seeds)
    return f"The reverse pass of {_clip(outputs, 60)}, step by step"


def stepper_fragment(explanation: ExplanationData, title: str | None = None) -> str:
    """The stepper as an HTML fragment (a ``<div>`` with its style and scripts) with ids unique to this call.

    For a notebook's output cell or any page; ``stepper_html`` wraps it in a whole page.
    """
    return _fragment(explanation, title)[0]


def _fragment(explanation: ExplanationData, title: str | None, notes: Sequence[str] = ()) -> tuple[str, str]:
    """The fragment and its script's text (whose hash the whole page's CSP allows); ``notes``
    are lines said under the title, each a paragraph."""
    if isinstance(notes, str) or not isinstance(notes, (list, tuple)):
        raise TypeError(f"notes must be a list of str (lines said under the title), got {type(notes).__name__}")
    odd = next((note for note in notes if not isinstance(note, str)), None)
    if odd is not None:
        raise TypeError(f"notes must be a list of str (lines said under the title), holding a {type(odd).__name__}")
    data = page_data(explanation, title)
    shown_title = title if title is not None else _default_title(explanation)
    digest = hashlib.sha256(script_json(data).encode()).hexdigest()[:10]
    uid = f"vjs-{digest}-{next(_page_numbers)}"
    nodes, shared = _nodes(explanation)
    edges, _ = _edges(explanation)
    widest: dict[str, int] = {}
    for s in explanation.steps:
        widest[s.operand] = max(widest.get(s.operand, 1), len(text.number(s.total)))
    for name, value in _start(explanation).items():
        widest[name] = max(widest.get(name, 1), len(text.number(value)))
    width, height = _layout(nodes, edges, [name for name, _ in explanation.seeds], widest)
    start_text = text.seeds_text(explanation)
    warning = ""
    if shared:
        warning = (
            '<p class="vjs-warning" data-role="warning">More than one value is named '
            + ", ".join(_escape(repr(name)) for name in shared)
            + "; each such name is drawn as one node. Pass names= to explain() to tell them apart.</p>"
        )
    script = _SCRIPT.replace("__ROOT_ID__", json.dumps(uid))
    n = len(explanation.steps)
    fragment = (
        f'<div class="vjs-root" id="{uid}" tabindex="0" data-step="0" data-steps="{n}">'
        f"<style>{_CSS}</style>"
        f'<div class="vjs-title" data-role="title">{_escape(shown_title)}</div>{warning}'
        + "".join(f'<p class="vjs-note" data-role="note">{_escape(note)}</p>' for note in notes)
        + '<p class="vjs-note" data-role="no-script">The buttons that step through the pass need JavaScript, '
        "which has not run here: the table below lists every step.</p>"
        '<div class="vjs-controls" data-role="controls" hidden>'
        '<button type="button" data-role="reset" title="back to the seeds (Home)">Reset</button>'
        '<button type="button" data-role="prev" title="one step back (\u2190)">\u25c0 Previous</button>'
        '<button type="button" data-role="next" title="one step on (\u2192)">Next \u25b6</button>'
        '<button type="button" data-role="play" title="play the pass (space)">\u25b6 Play</button>'
        '<label class="vjs-speed">speed <select data-role="speed">'
        '<option value="1200">slow</option><option value="600" selected>normal</option>'
        '<option value="150">fast</option><option value="20">fastest</option></select></label>'
        f'<span class="vjs-counter">step <b data-role="step-index">0</b> of <b data-role="step-count">{n}</b>'
        ' <span data-role="current-edge" class="vjs-current-edge"></span></span></div>'
        '<div class="vjs-panel" data-role="panel" aria-live="polite" hidden></div>'
        '<p class="vjs-scroll-cue" data-role="graph-cue" hidden>\u21c6 The graph is wider than this box: '
        "scroll it sideways (or step: the nodes of each step come into view).</p>"
        '<div class="vjs-graph-box" data-role="graph-box" tabindex="0" role="region" '
        f'aria-label="the graph of {_escape(shown_title)} (scrolls)">'
        f"{_graph_svg(nodes, edges, width, height, uid)}</div>"
        '<details class="vjs-steps" open><summary>Every step of the pass (click one to go there)</summary>'
        '<p class="vjs-scroll-cue" data-role="table-cue" hidden>\u21c6 The table is wider than this box: '
        "scroll it sideways for the contribution, \u201cto\u201d and running-total columns.</p>"
        '<div class="vjs-table-box" data-role="table-box" tabindex="0" role="region" '
        f'aria-label="every step of {_escape(shown_title)} (scrolls)">{_table(explanation, start_text)}</div></details>'
        '<p class="vjs-help">Arrows go from an operand to the result made from it; the reverse pass sends '
        "gradient back along them, from the outputs to the leaves."
        '<span data-role="keys" hidden> Keys (click the stepper or Tab to it): '
        "\u2190 \u2192 step, Home / End, space plays; \u2191 \u2193 scroll the graph or the table "
        "(and \u2190 \u2192 the table, when it is wider than its box).</span></p>"
        f'<script type="application/json" id="{uid}-data">{script_json(data)}</script>'
        f"<script>{script}</script></div>"
    )
    return fragment, script


def stepper_html(explanation: ExplanationData, title: str | None = None, notes: Sequence[str] = ()) -> str:
    """One self-contained HTML page stepping through the reverse pass of ``explanation``, with
    ``notes`` (lines of text, such as a PyTorch pass's verdict) under its title.

    Next, Previous, Play and Reset move through the steps (arrow keys too): step 0 shows
    the seeds; each step highlights the edge the gradient crosses, shows
    ``upstream × local = contribution`` and the operand's running total; every node shows
    its running total, and the last step leaves each at the gradient ``backward`` gives.
    Nothing is fetched from the network; all user text is escaped.
    """
    fragment, script = _fragment(explanation, title, notes)
    shown_title = title if title is not None else _default_title(explanation)
    script_hash = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_escape(shown_title)}</title></head>\n<body>{fragment}</body></html>\n"
    )


_CSS = """
.vjs-root{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1d2330;
  background:#fff;border:1px solid #d5dbe5;border-radius:8px;padding:12px;max-width:100%;box-sizing:border-box;
  outline:none}
.vjs-root:focus-visible{box-shadow:0 0 0 3px #9cc1f5}
.vjs-root .vjs-title{font-weight:600;font-size:16px;margin-bottom:8px}
.vjs-root .vjs-note{margin:2px 0;white-space:pre-wrap}
.vjs-root .vjs-warning{background:#fff4d6;border:1px solid #e0b341;padding:4px 8px;border-radius:4px}
.vjs-root .vjs-controls{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin-bottom:8px}
.vjs-root .vjs-controls[hidden],.vjs-root .vjs-note[hidden],.vjs-root .vjs-panel[hidden]{display:none}
.vjs-root button{font:inherit;padding:3px 10px;border:1px solid #aab4c4;border-radius:5px;background:#f4f6fa;
  cursor:pointer;color:#1d2330}
.vjs-root button:hover:enabled{background:#e6ecf5}
.vjs-root button:disabled{opacity:.45;cursor:default}
.vjs-root select{font:inherit}
.vjs-root .vjs-counter{margin-left:8px}
.vjs-root .vjs-current-edge{color:#c0392b;font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;
  margin-left:6px}
.vjs-root .vjs-panel{background:#f7f9fc;border:1px solid #e1e6ee;border-radius:6px;padding:8px 12px;
  margin-bottom:8px;min-height:4.6em}
.vjs-root .vjs-panel .vjs-big{font-size:20px;font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;
  margin:4px 0}
.vjs-root .vjs-term{display:inline-block;text-align:center;vertical-align:top;margin:0 4px}
.vjs-root .vjs-term small{display:block;font-size:11px;color:#5b6678;font-family:system-ui,sans-serif}
.vjs-root .vjs-contribution{color:#c0392b;font-weight:600}
.vjs-root .vjs-done-line{color:#1e7b34;font-weight:600}
.vjs-root .vjs-graph-box,.vjs-root .vjs-table-box{
  background:linear-gradient(to right,#fff 30%,rgba(255,255,255,0)),
    linear-gradient(to left,#fff 30%,rgba(255,255,255,0)) 100% 0,
    linear-gradient(to right,rgba(29,35,48,.22),rgba(29,35,48,0)),
    linear-gradient(to left,rgba(29,35,48,.22),rgba(29,35,48,0)) 100% 0;
  background-repeat:no-repeat;background-color:#fff;background-size:40px 100%,40px 100%,14px 100%,14px 100%;
  background-attachment:local,local,scroll,scroll}
.vjs-root .vjs-graph-box:focus-visible,.vjs-root .vjs-table-box:focus-visible{outline:3px solid #9cc1f5;
  outline-offset:1px}
.vjs-root .vjs-graph-box{overflow:auto;max-height:70vh;border:1px solid #eef1f5;border-radius:6px}
.vjs-root .vjs-scroll-cue{color:#5b6678;font-size:12px;margin:4px 0}
.vjs-root .vjs-scroll-cue[hidden]{display:none}
.vjs-root svg.vjs-graph{display:block;max-width:100%;height:auto}
.vjs-root svg text{font:12px ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;fill:#1d2330}
.vjs-root svg .vjs-name{font-weight:700}
.vjs-root svg .vjs-formula,.vjs-root svg .vjs-data{fill:#4a5568}
.vjs-root svg .vjs-node rect{fill:#f4f6fa;stroke:#7a8aa6;stroke-width:1.2}
.vjs-root svg .vjs-leaf rect{fill:#eef7ee;stroke:#4f8f4f}
.vjs-root svg .vjs-output rect{fill:#fff4e5;stroke:#c98a2a}
.vjs-root svg .vjs-node.vjs-final .vjs-total{fill:#1e7b34;font-weight:700}
.vjs-root svg .vjs-node.vjs-giving rect{stroke:#1f5fbf;stroke-width:3}
.vjs-root svg .vjs-node.vjs-receiving rect{stroke:#c0392b;stroke-width:3;fill:#fdecea}
.vjs-root svg .vjs-edge{fill:none;stroke:#8a96a8;stroke-width:1.3}
.vjs-root svg .vjs-edge.vjs-hot{stroke:#c0392b;stroke-width:3}
.vjs-root svg .vjs-edge-label{fill:#c0392b;font-weight:700;paint-order:stroke;stroke:#fff;stroke-width:4px}
.vjs-root .vjs-steps summary{cursor:pointer;margin:8px 0 4px}
.vjs-root .vjs-table-box{position:relative;max-height:14em;overflow:auto;border:1px solid #eef1f5;border-radius:6px}
.vjs-root table.vjs-table{border-collapse:collapse;font:12px ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace}
.vjs-root .vjs-table th{position:sticky;top:0;background:#eef1f5;text-align:left;padding:2px 6px}
.vjs-root .vjs-table td{padding:1px 6px;white-space:nowrap;cursor:pointer}
.vjs-root .vjs-table tr.vjs-current td{background:#fdecea}
.vjs-root .vjs-table tr.vjs-seed-row td{text-align:left}
.vjs-root .vjs-help{color:#5b6678;font-size:12px;margin:6px 0 0}
.vjs-root .vjs-sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
"""

_SCRIPT = """
(function () {
  "use strict";
  var root = document.getElementById(__ROOT_ID__);
  if (!root || root.getAttribute("data-ready") === "1") { return; }
  var data = JSON.parse(document.getElementById(__ROOT_ID__ + "-data").textContent);
  root.setAttribute("data-ready", "1");
  ["controls", "panel", "keys"].forEach(function (name) {  // the buttons, the panel and the keys work now:
    root.querySelector('[data-role="' + name + '"]').hidden = false;  // shown, and the note that says
  });  // they need a script hidden
  root.querySelector('[data-role="no-script"]').hidden = true;
  var steps = data.steps, n = steps.length, k = 0, timer = null;
  var arrow = __ROOT_ID__ + "-arrow";
  function num(x) { return typeof x === "string" ? Number(x) : x; }
  function role(name) { return root.querySelector('[data-role="' + name + '"]'); }
  function each(selector, f) { Array.prototype.forEach.call(root.querySelectorAll(selector), f); }
  function toggle(el, cls, on) { if (on) { el.classList.add(cls); } else { el.classList.remove(cls); } }
  function add(parent, tag, cls, text) {
    var el = document.createElement(tag);
    if (cls) { el.className = cls; }
    if (text !== undefined) { el.textContent = text; }
    parent.appendChild(el);
    return el;
  }
  var nodes = Object.create(null), finalAt = Object.create(null), formulas = Object.create(null);
  each("[data-node]", function (el) { nodes[el.getAttribute("data-node")] = el; });
  data.nodes.forEach(function (node) { finalAt[node.name] = node.final_at; formulas[node.name] = node.formula; });
  var edges = [];
  each("[data-edge]", function (el) { edges[Number(el.getAttribute("data-edge"))] = el; });
  var rows = [];
  each("tr[data-step]", function (el) {
    var index = Number(el.getAttribute("data-step"));
    rows[index] = el;
    el.addEventListener("click", function () { stop(); go(index); });
  });
  var panel = role("panel"), label = role("edge-label"), currentEdge = role("current-edge");
  var buttons = { reset: role("reset"), prev: role("prev"), next: role("next"), play: role("play") };
  var tableBox = root.querySelector(".vjs-table-box");

  function totalsAt(upto) {
    var totals = Object.create(null);
    data.start.forEach(function (s) { totals[s.name] = { value: s.value, text: s.text }; });
    for (var i = 0; i < upto; i++) { totals[steps[i].operand] = { value: steps[i].total, text: steps[i].text.total }; }
    return totals;
  }

  function term(parent, text, note, cls) {
    var box = add(parent, "span", "vjs-term" + (cls ? " " + cls : ""));
    add(box, "span", "", text);
    add(box, "small", "", note);
  }

  function showPanel(cur) {
    panel.textContent = "";
    if (cur === null) {
      var seeds = data.seeds.map(function (s) { return s.name + " = " + s.text; }).join(", ");
      add(panel, "div", "", "Step 0: the seeds. " + seeds);
      add(panel, "div", "", "Each output starts with its seed (the v of v\\u1d40J); other gradients start empty.");
      add(panel, "div", "", n ? "Press Next to send it back through the graph, one edge at a time."
                              : "No edge takes gradient.");
      return;
    }
    var made = formulas[cur.node] ? cur.node + " = " + formulas[cur.node] : cur.node + " (" + cur.op + ")";
    add(panel, "div", "", "Step " + k + ": " + made + " hands gradient to " + cur.operand);
    var big = add(panel, "div", "vjs-big");
    term(big, cur.text.upstream, "gradient of " + cur.node);
    add(big, "span", "", "\\u00d7");
    term(big, cur.text.local, "\\u2202" + cur.node + "/\\u2202" + cur.operand);
    add(big, "span", "", "=");
    term(big, cur.text.contribution, "to " + cur.operand, "vjs-contribution");
    var sum = cur.text.before === null
      ? cur.text.total + " (its first contribution)"
      : cur.text.before + " + " + cur.text.contribution + " = " + cur.text.total;
    add(panel, "div", "", cur.operand + "'s running total: " + sum);
    if (k === n) {
      var leaves = data.nodes.filter(function (node) { return node.kinds.indexOf("leaf") >= 0; });
      var totals = totalsAt(n);
      add(panel, "div", "vjs-done-line", "Done: every gradient is complete. The leaves: " + leaves.map(function (node) {
        var t = totals[node.name];
        return node.name + " = " + (t ? t.text : "\\u2014");
      }).join(", ") + " (" + data.leaves_are + ").");
    }
  }

  function render() {
    var totals = totalsAt(k), cur = k > 0 ? steps[k - 1] : null;
    Object.keys(nodes).forEach(function (name) {
      var el = nodes[name], t = totals[name];
      el.querySelector(".vjs-total").textContent = "grad " + (t ? t.text : "\\u2014");
      if (t) { el.setAttribute("data-total", String(num(t.value))); } else { el.removeAttribute("data-total"); }
      toggle(el, "vjs-giving", cur !== null && cur.node === name);
      toggle(el, "vjs-receiving", cur !== null && cur.operand === name);
      toggle(el, "vjs-final", t !== undefined && k >= (finalAt[name] || 0));
    });
    edges.forEach(function (el, i) {
      var hot = cur !== null && cur.edge === i;
      toggle(el, "vjs-hot", hot);
      el.setAttribute("marker-end", "url(#" + arrow + (hot ? "-hot" : "") + ")");
      if (hot) {
        el.parentNode.appendChild(el);
        label.setAttribute("x", el.getAttribute("data-mx"));
        label.setAttribute("y", String(Number(el.getAttribute("data-my")) - 6));
      }
    });
    label.textContent = cur ? "\\u00d7 " + cur.text.local : "";
    currentEdge.textContent = cur ? cur.node + " \\u2192 " + cur.operand : "";
    if (cur) {
      currentEdge.setAttribute("data-from", cur.node);
      currentEdge.setAttribute("data-to", cur.operand);
    } else {
      currentEdge.removeAttribute("data-from");
      currentEdge.removeAttribute("data-to");
    }
    role("step-index").textContent = String(k);
    root.setAttribute("data-step", String(k));
    var focused = document.activeElement;
    buttons.reset.disabled = k === 0 && timer === null;
    buttons.prev.disabled = k === 0;
    buttons.next.disabled = k === n;
    keepFocus(focused);
    rows.forEach(function (row, i) { toggle(row, "vjs-current", i === k); });
    var row = rows[k];
    if (row && tableBox && (row.offsetTop < tableBox.scrollTop + row.offsetHeight ||
        row.offsetTop + row.offsetHeight > tableBox.scrollTop + tableBox.clientHeight)) {
      tableBox.scrollTop = Math.max(0, row.offsetTop - tableBox.clientHeight / 2);
    }
    showPanel(cur);
    reveal(named());
  }

  // The graph is scaled to the box's width, down to 11 px text (CSS), then scrolls; it is panned
  // so that the nodes the current step names are in view: the node handing on gradient first,
  // then the one receiving it if both fit in the box. At step 0 (the seeds) the output where the
  // pass starts (the node of the first step), then every other output that fits with it.
  var graphBox = root.querySelector(".vjs-graph-box");
  var startNode = (n ? nodes[steps[0].node] : null) || root.querySelector(".vjs-node.vjs-output");
  var outputs = Array.prototype.filter.call(root.querySelectorAll(".vjs-node.vjs-output"),
                                            function (el) { return el !== startNode; });
  function named() {
    return k ? [nodes[steps[k - 1].node], nodes[steps[k - 1].operand]] : [startNode].concat(outputs);
  }
  function reveal(els) {
    els = els.filter(Boolean);
    if (!els.length || !graphBox) { return; }
    var box = graphBox.getBoundingClientRect(), r = els[0].getBoundingClientRect();
    var top = r.top, bottom = r.bottom, left = r.left, right = r.right;
    els.slice(1).forEach(function (el) {
      var o = el.getBoundingClientRect();
      if (Math.max(bottom, o.bottom) - Math.min(top, o.top) <= box.height &&
          Math.max(right, o.right) - Math.min(left, o.left) <= box.width) {
        top = Math.min(top, o.top); bottom = Math.max(bottom, o.bottom);
        left = Math.min(left, o.left); right = Math.max(right, o.right);
      }
    });
    if (top < box.top || bottom > box.bottom) {
      graphBox.scrollTop += (top + bottom) / 2 - (box.top + box.bottom) / 2;
    }
    if (left < box.left || right > box.right) {
      graphBox.scrollLeft += (left + right) / 2 - (box.left + box.right) / 2;
    }
  }

  // A button that disables under the keyboard's focus (Next at the last step, Previous and Reset
  // at step 0) hands the focus on within the stepper, so the keys go on working: to the button
  // that steps the other way, or to the stepper itself.
  function keepFocus(focused) {
    if (!focused || !focused.disabled || !root.contains(focused)) { return; }
    var order = focused === buttons.next ? [buttons.prev, buttons.reset] : [buttons.next, buttons.play];
    var target = order.filter(function (b) { return !b.disabled; })[0] || root;
    target.focus({ preventScroll: true });
  }

  // A box narrower than what it holds (a phone) says so above it: it scrolls sideways.
  var cues = [[graphBox, role("graph-cue")], [tableBox, role("table-cue")]];
  function showCues() {
    cues.forEach(function (pair) {
      if (pair[0] && pair[1]) { pair[1].hidden = pair[0].scrollWidth <= pair[0].clientWidth + 1; }
    });
  }

  function go(to) { k = Math.max(0, Math.min(n, to)); render(); }
  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    buttons.play.textContent = "\\u25b6 Play";
    root.removeAttribute("data-playing");
    buttons.reset.disabled = k === 0;
  }
  function tick() { go(k + 1); if (k >= n) { stop(); } }
  function play() {
    if (timer !== null) { stop(); return; }
    if (k >= n) { go(0); }
    if (n === 0) { return; }
    timer = setInterval(tick, Number(role("speed").value));
    buttons.play.textContent = "\\u275a\\u275a Pause";
    root.setAttribute("data-playing", "1");
  }
  buttons.reset.addEventListener("click", function () { stop(); go(0); });
  buttons.prev.addEventListener("click", function () { stop(); go(k - 1); });
  buttons.next.addEventListener("click", function () { stop(); go(k + 1); });
  buttons.play.addEventListener("click", play);
  role("speed").addEventListener("change", function () {
    if (timer !== null) { clearInterval(timer); timer = setInterval(tick, Number(role("speed").value)); }
  });
  root.addEventListener("keydown", function (event) {
    var tag = event.target && event.target.tagName;
    if (tag === "SELECT" || tag === "INPUT" || event.altKey || event.ctrlKey || event.metaKey) { return; }
    var key = event.key;
    var inBox = event.target === graphBox || event.target === tableBox;
    // a table wider than its box (a phone) scrolls sideways too, to its contribution and running
    // total columns, which the keyboard would not reach otherwise (the graph pans by itself)
    var sideways = event.target === tableBox && tableBox.scrollWidth > tableBox.clientWidth + 1;
    if ((inBox && (key === "ArrowUp" || key === "ArrowDown")) ||
        (sideways && (key === "ArrowLeft" || key === "ArrowRight"))) {
      event.stopPropagation();  // the box scrolls, and the page's own keys (a notebook's) do not run
      return;
    }
    if (key === "ArrowRight" || key === "ArrowDown") { stop(); go(k + 1); }
    else if (key === "ArrowLeft" || key === "ArrowUp") { stop(); go(k - 1); }
    else if (key === "Home") { stop(); go(0); }
    else if (key === "End") { stop(); go(n); }
    else if (key === " " && tag !== "BUTTON") { play(); }
    else { return; }
    event.preventDefault();
    event.stopPropagation();
  });
  render();
  showCues();
  // The page may lay out again once it has loaded (fonts, a theme's sidebar) or when the window
  // changes: the current step's nodes are brought back into view, and the cues updated.
  function again() {
    showCues();
    reveal(named());
  }
  window.addEventListener("load", again);
  window.addEventListener("resize", again);
}());
"""
