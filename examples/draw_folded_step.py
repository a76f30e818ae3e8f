"""Draw how vjpgrad.compile folds micrograd's demo step: docs/explanation/folded-demo-step.svg.

The step (MLP(2, [16, 16, 1]) on 100 points, the hinge loss and the L2 term) is recorded and its
code written; the picture is its recording in creation order, one band from left to right:
each copy of a repeated block (one point's forward through the model) a stripe, the glue
between them grey. Standard library only:

    python examples/draw_folded_step.py [OUT.svg]
"""

from __future__ import annotations

import sys
from pathlib import Path

import vjpgrad
from vjpgrad.compiler import fold
from vjpgrad.nn import MLP

sys.path.insert(0, str(Path(__file__).resolve().parent))
from moons import make_moons

WIDTH, BAND, LEFT, TOP = 900, 56, 20, 40
COLOURS = ["#4c78a8", "#72b7b2", "#f58518", "#e45756"]


def recorded_program() -> fold.FoldedProgram:
    """The demo step compiled and replayed once; the writer of its code."""
    points, labels = make_moons()
    model = MLP(2, [16, 16, 1], seed=1337)

    def loss(pts: list[tuple[float, float]]) -> vjpgrad.Value:
        scores = [model(list(p)) for p in pts]
        margins = [(1 + -y * s).relu() for y, s in zip(labels, scores, strict=True)]  # type: ignore[operator]
        total = margins[0]
        for m in margins[1:]:
            total = total + m
        reg = sum((p * p for p in model.parameters()), vjpgrad.Value(0.0, requires_grad=False))
        return total * (1.0 / len(margins)) + reg * 1e-4

    compiled = vjpgrad.compile(loss)
    compiled(points).backward()
    compiled(points).backward()
    program = compiled._last.program  # the writer of the code that ran
    assert isinstance(program, fold.FoldedProgram), "the demo step was not folded"
    return program


def svg(program: fold.FoldedProgram) -> str:
    """The recording as one band: blocks' copies as stripes, glue grey, with a legend."""
    total = len(program.live)
    scale = (WIDTH - 2 * LEFT) / total

    def x(position: int) -> float:
        return LEFT + position * scale

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{TOP + BAND + 110}" '
        f'viewBox="0 0 {WIDTH} {TOP + BAND + 110}" font-family="sans-serif" font-size="13">',
        f"<title>micrograd's demo step as compile writes it: {total:,} operations in creation order</title>",
        f'<text x="{LEFT}" y="22">{total:,} recorded operations, in creation order (left to right)</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - 2 * LEFT}" height="{BAND}" fill="#bbbbbb"/>',
    ]
    folded = 0
    legend = []
    for k, block in enumerate(program.blocks):
        colour = COLOURS[k % len(COLOURS)]
        for m in range(block.copies):
            start = block.start + m * block.length
            shade = colour if m % 2 == 0 else "#1f3b57" if k == 0 else colour
            parts.append(
                f'<rect x="{x(start):.2f}" y="{TOP}" width="{max(block.length * scale, 0.5):.2f}" '
                f'height="{BAND}" fill="{shade}" fill-opacity="{1.0 if m % 2 == 0 else 0.8}"/>'
            )
        folded += block.length * block.copies
        legend.append(
            (colour, f"block {k + 1}: {block.copies} copies of {block.length} operations, written once as a for loop")
        )
    legend.append(("#bbbbbb", f"glue: {total - folded:,} operations, written straight-line (margins, sum, L2 term)"))
    for row, (colour, text) in enumerate(legend):
        y = TOP + BAND + 24 + 22 * row
        parts.append(f'<rect x="{LEFT}" y="{y - 11}" width="14" height="14" fill="{colour}"/>')
        parts.append(f'<text x="{LEFT + 22}" y="{y}">{text}</text>')
    lines = len(program.source.splitlines())
    parts.append(
        f'<text x="{LEFT}" y="{TOP + BAND + 24 + 22 * len(legend)}">{100 * folded / total:.1f}% of the '
        f"operations fold; the code is {lines:,} lines</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    default = Path(__file__).resolve().parent.parent / "docs" / "explanation" / "folded-demo-step.svg"
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    target.write_text(svg(recorded_program()))
    print(target)
