"""What every view of a reverse pass shares: how a number is written, the table of steps, and
the shape of an explanation.

``explain``'s ``Explanation`` is shown four ways: as text (``str``), in a notebook (HTML),
in the stepper page and in pictures. Each takes its numbers and its table from here, so that
all four write the same number the same way. The renderers (``notebook``, ``stepper``) read
an explanation through ``ExplanationData``, the shape ``Explanation`` has, so they need not
import ``explain``, which imports them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from vjpgrad.core.value import Value

TIMES = "\u00d7"


_UNPRINTABLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069"
    "\ud800-\udfff\ufeff\ufffe\uffff]"
)
"""What no XML document may hold (a terminal's colour codes, a NUL...), so that a saved SVG with one
is no picture, and what moves a terminal's cursor or turns the text around where a label is written
(a tab, a newline, a carriage return, DEL, C1's codes, the line separators, the marks that turn text
right to left), and the spaces of no width that make two labels print alike (``a`` and ``a\u200b``)."""


def printable(label: str) -> str:
    """``label`` with each character that no XML may hold, or that moves the cursor or turns the
    text, written as Python writes it (``\\x1b``, ``\\r``, ``\\u202e``): what every view (the
    table's text, HTML, SVG, DOT) escapes first, so a label shows as typed, one line, and every
    picture stays well-formed."""
    return _UNPRINTABLE.sub(lambda found: ascii(found.group())[1:-1], label)


def number(x: float) -> str:
    """A number as the explanation's table, the notebook and the stepper write it: 6 significant digits."""
    return f"{x:.6g}"


def exact(x: float) -> str:
    """A number as Python's ``repr`` writes it, the shortest text that reads back as the same float,
    without a trailing ``.0`` (``3``, ``-0``, ``1.0000004``): an argument a comparison is made against
    (``clamp``'s bound), which 6 digits would blur beside the number compared."""
    written = repr(float(x))
    return written[:-2] if written.endswith(".0") else written


def short(x: float) -> str:
    """A number as a picture's label writes it: 4 significant digits."""
    return f"{x:.4g}"


class StepData(Protocol):
    """One edge of the reverse pass (``explain.Step``): ``node`` hands ``upstream × local`` to ``operand``."""

    @property
    def node(self) -> str: ...
    @property
    def op(self) -> str: ...
    @property
    def upstream(self) -> float: ...
    @property
    def operand(self) -> str: ...
    @property
    def local(self) -> float: ...
    @property
    def contribution(self) -> float: ...
    @property
    def total(self) -> float: ...


class ExplanationData(Protocol):
    """One reverse pass, explained (``explain.Explanation``): what the renderers read."""

    @property
    def seeds(self) -> list[tuple[str, float]]: ...
    @property
    def steps(self) -> Sequence[StepData]: ...
    @property
    def gradients(self) -> Mapping[Value, float]: ...
    @property
    def names(self) -> Mapping[Value, str]: ...
    @property
    def formulas(self) -> Mapping[str, str]: ...
    @property
    def handed_back(self) -> str: ...


STEP_COLUMNS = ("step", "node", "op", "upstream", "", "local", "=", "contribution", "to", "its total")
"""The columns of the table of steps (the unnamed ones hold the signs of upstream × local = contribution)."""
NUMBER_COLUMNS = (0, 3, 5, 7, 9)
"""The columns that hold numbers (right-aligned in text)."""


def step_cells(k: int, step: StepData, times: str = TIMES) -> tuple[str, ...]:
    """Row ``k`` of the table of steps, one text per column of ``STEP_COLUMNS``."""
    return (
        str(k), step.node, step.op, number(step.upstream), times, number(step.local), "=",
        number(step.contribution), step.operand, number(step.total),
    )  # fmt: skip


def seeds_text(explanation: ExplanationData) -> str:
    """``y[0] = 0.1, y[1] = 1, ...``: the seed of each output."""
    return ", ".join(f"{name} = {number(seed)}" for name, seed in explanation.seeds)


def leaves_are(explanation: ExplanationData) -> str:
    """What the leaves' totals are to the learner: what ``backward`` adds into ``.grad``, or what
    a call that hands its gradients back returns (``torch.autograd.grad``, ``.grad`` untouched)."""
    if explanation.handed_back:
        return f"handed back by {explanation.handed_back}, not added into .grad"
    return "what backward adds to .grad"


def sums_heading(explanation: ExplanationData) -> str:
    """The line above ``leaf_sums``'s lines."""
    if explanation.handed_back:
        return f"Each leaf's gradient is the sum of what it was handed ({leaves_are(explanation)}):"
    return "Each leaf's gradient is the sum of what it was handed:"


def sum_line(explanation: ExplanationData, name: str, terms: str, total: str) -> str:
    """One of ``leaf_sums``'s sums as a line: ``x.grad += ...`` after a backward, ``x's gradient =
    ...`` when the pass hands its gradients back."""
    if explanation.handed_back:
        return f"{name}'s gradient = {terms} = {total}"
    return f"{name}.grad += {terms} = {total}"


def leaf_sums(explanation: ExplanationData, times: str = TIMES) -> list[tuple[str, str, str]]:
    """For each leaf the pass reached: its name, the sum of what it was handed, and the total (the
    steps grouped by operand in one walk: a walk per leaf took minutes on a layer's weights)."""
    handed: dict[str, list[str]] = {}
    for name, seed in explanation.seeds:  # a leaf that is an output: its seed comes first, as the pass adds it
        handed.setdefault(name, []).append(f"{number(seed)} (its seed)")
    for s in explanation.steps:
        handed.setdefault(s.operand, []).append(f"{number(s.upstream)} {times} {number(s.local)}")
    sums = []
    for value, name in explanation.names.items():
        if not value.is_leaf or value not in explanation.gradients:
            continue
        sums.append((name, " + ".join(handed.get(name, [])), number(explanation.gradients[value])))
    return sums
