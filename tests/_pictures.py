"""Geometry read back from the SVG that the stepper and ``draw`` make: each node's box, points
along each edge's path, each edge label's box. The tests hold the drawings to it: no edge runs
behind a box other than its two ends, no label sits on a box or on another label."""

from __future__ import annotations

import html
import itertools
import re

Box = tuple[float, float, float, float]  # left, top, right, bottom

LABEL_FONT = 11.0  # edge labels are 11px monospace: a character is about 0.6 of that wide
NODE = re.compile(
    r'<g class="vjs-node[^"]*" data-node="([^"]*)" transform="translate\(([-\d.]+),([-\d.]+)\)">'
    r'<title>[^<]*</title><rect width="([\d.]+)" height="([\d.]+)"'
)
EDGE = re.compile(r'<path class="vjs-edge" [^>]*data-from="([^"]*)" data-to="([^"]*)" [^>]* d="([^"]*)"')
LABEL = re.compile(r'<text class="vjs-edge-label" x="([-\d.]+)" y="([-\d.]+)" text-anchor="middle">([^<]*)</text>')


def node_boxes(svg: str) -> dict[str, Box]:
    boxes = {}
    for name, x, y, width, height in NODE.findall(svg):
        left, top = float(x), float(y)
        boxes[html.unescape(name)] = (left, top, left + float(width), top + float(height))
    return boxes


def path_points(d: str, per_segment: int = 40) -> list[tuple[float, float]]:
    """Points along SVG path data made of M, L and C commands (what the drawings use)."""
    tokens = re.findall(r"[MLC]|-?[\d.]+", d)
    points: list[tuple[float, float]] = []
    k, command = 0, ""
    x, y = 0.0, 0.0
    while k < len(tokens):
        if tokens[k] in ("M", "L", "C"):
            command, k = tokens[k], k + 1
        count = 6 if command == "C" else 2
        values = [float(t) for t in tokens[k : k + count]]
        k += count
        if command == "M":
            x, y = values
            points.append((x, y))
            continue
        controls = [(x, y), *zip(values[::2], values[1::2], strict=True)]
        for step in range(1, per_segment + 1):
            points.append(_bezier(controls, step / per_segment))
        x, y = controls[-1]
    return points


def _bezier(controls: list[tuple[float, float]], t: float) -> tuple[float, float]:
    """De Casteljau: a point of the line (two controls) or the cubic (four)."""
    while len(controls) > 1:
        controls = [(a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t) for a, b in itertools.pairwise(controls)]
    return controls[0]


def edges_behind_boxes(svg: str) -> list[tuple[str, str, str]]:
    """(from, to, the box it runs behind) for every edge with a point inside a box not its own end."""
    boxes = node_boxes(svg)
    found = []
    for start, end, d in EDGE.findall(svg):
        ends = {html.unescape(start), html.unescape(end)}
        for name, (left, top, right, bottom) in boxes.items():
            if name in ends:
                continue
            inside = [(x, y) for x, y in path_points(d) if left + 1 < x < right - 1 and top + 1 < y < bottom - 1]
            if inside:
                found.append((html.unescape(start), html.unescape(end), name))
    return found


def label_boxes(svg: str) -> list[tuple[str, Box]]:
    """Each edge label's text and box, its width estimated from its length."""
    boxes = []
    for x, y, text in LABEL.findall(svg):
        label = html.unescape(text)
        half = len(label) * LABEL_FONT * 0.6 / 2
        boxes.append((label, (float(x) - half, float(y) - 9.0, float(x) + half, float(y) + 3.0)))
    return boxes


def overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def labels_on_other_edges(svg: str) -> list[tuple[str, str, str]]:
    """(label, from, to) for every edge label whose box another edge runs through: a reader could
    not tell which of the crossing edges the label names. Labels follow their edges' order."""
    edges = EDGE.findall(svg)
    labels = label_boxes(svg)
    assert len(labels) == len(edges)  # every edge labelled (edges="chain")
    found = []
    for k, (label, (left, top, right, bottom)) in enumerate(labels):
        for j, (start, end, d) in enumerate(edges):
            if j != k and any(left < x < right and top < y < bottom for x, y in path_points(d)):
                found.append((label, html.unescape(start), html.unescape(end)))
    return found
