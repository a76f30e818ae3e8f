"""Numbers printed the way PyTorch prints a tensor, so an example's output can be held
against PyTorch's documented output: 4 decimals, scientific notation when the magnitudes
call for it (largest over smallest above 1000, largest above 1e8 or smallest below 1e-4),
``3.`` for a tensor of whole numbers, lines wrapped at 80 columns, long ones summarised.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

PRECISION = 4
LINE_WIDTH = 80
SUMMARY_THRESHOLD = 1000
EDGE_ITEMS = 3


class _Style:
    """How every number of one tensor is written: one style and one width for all."""

    def __init__(self, numbers: Sequence[float]) -> None:
        self.whole = True
        self.scientific = False
        self.width = 1
        shown = [x for x in numbers if math.isfinite(x) and x != 0.0]
        if not shown:
            return
        magnitudes = [abs(x) for x in shown]
        smallest, largest = min(magnitudes), max(magnitudes)
        self.whole = all(x == math.ceil(x) for x in shown)
        self.scientific = largest / smallest > 1000.0 or largest > 1.0e8 or smallest < 1.0e-4
        if self.scientific:
            self.width = max(len(f"{x:.{PRECISION}e}") for x in shown)
        elif self.whole:
            self.width = max(len(f"{x:.0f}") + 1 for x in shown)
        else:
            self.width = max(len(f"{x:.{PRECISION}f}") for x in shown)

    def format(self, x: float) -> str:
        if self.scientific:
            text = f"{x:.{PRECISION}e}"
        elif self.whole:
            text = f"{x:.0f}" + ("" if math.isinf(x) or math.isnan(x) else ".")
        else:
            text = f"{x:.{PRECISION}f}"
        return text.rjust(self.width)


def format_scalar(x: float) -> str:
    """``tensor(3.)``: one number as PyTorch prints a 0-d tensor."""
    return f"tensor({_Style([x]).format(x)})"


def format_vector(numbers: Sequence[float]) -> str:
    """``tensor([0.3000, 3.0000])``: a list of numbers as PyTorch prints a 1-d tensor."""
    summarise = len(numbers) > SUMMARY_THRESHOLD
    shown = list(numbers[:EDGE_ITEMS]) + list(numbers[-EDGE_ITEMS:]) if summarise else list(numbers)
    style = _Style(shown)
    texts = [style.format(x) for x in shown]
    if summarise:
        texts[EDGE_ITEMS:EDGE_ITEMS] = [" ..."]
    indent = len("tensor(")
    per_line = max(1, (LINE_WIDTH - indent) // (style.width + 2))
    lines = [", ".join(texts[i : i + per_line]) for i in range(0, len(texts), per_line)]
    return "tensor([" + (",\n" + " " * (indent + 1)).join(lines) + "])"
