"""Rich display in Jupyter: HTML for a Value, a Vector and an Explanation, plain text for
IPython's pretty printer (the picture ``draw()`` returns is ``dot.SVGDrawing``).

The functions here only read public attributes and return strings. Importing this module
gives Value and Vector their ``_repr_html_`` (and Vector its ``_repr_pretty_``): the core
classes never import the display built on them; ``vjpgrad/__init__.py`` imports this module.
An Explanation shows itself as the stepper (its own method); ``explanation_html`` is its table
as HTML, for a page that wants the table alone. Every text a
user wrote (labels, names, op names) goes through ``html.escape``.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Protocol

from vjpgrad.core.format import format_vector
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector
from vjpgrad.display import text
from vjpgrad.display.text import ExplanationData

VECTOR_COLUMNS = 16  # a longer Vector's table shows its first and last 8 elements
TABLE_ROWS = 500  # an explanation's HTML table shows at most this many steps

_STYLE = "border-collapse:collapse;font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px"


def _e(shown: object) -> str:
    return html.escape(text.printable(str(shown)), quote=True)


def value_html(value: Value) -> str:
    """One Value as a line of HTML: label, data, grad, the op that made it, whether it takes gradient."""
    if not isinstance(value, Value):
        raise TypeError(f"value_html() takes a Value, got {type(value).__name__}")
    parts = ["<b>Value</b>"]
    if value.label is not None:
        parts.append(f"<i>{_e(value.label)}</i>")
    parts.append(f"data <code>{_e(repr(value.data))}</code>")
    parts.append(f"grad <code>{_e(repr(value.grad))}</code>")
    parts.append("a leaf" if value.is_leaf else f"made by <code>{_e(value.op)}</code>")
    if not value.requires_grad:
        parts.append("requires no grad")
    return f'<span class="vjpgrad-value">{" &middot; ".join(parts)}</span>'


def _shown(n: int) -> list[int | None]:
    """The indices a table of n elements shows; None stands for the elided middle."""
    if n <= VECTOR_COLUMNS:
        return list(range(n))
    half = VECTOR_COLUMNS // 2
    return [*range(half), None, *range(n - half, n)]


def vector_html(vector: Vector) -> str:
    """A Vector as HTML: its tensor-like text, then a table of index, label, data and grad."""
    if not isinstance(vector, Vector):
        raise TypeError(f"vector_html() takes a Vector, got {type(vector).__name__}")
    values = list(vector)
    shown = _shown(len(values))

    def row(title: str, cell: Callable[[Value], str]) -> str:
        cells = "".join(
            "<td>&hellip;</td>"
            if i is None
            else f'<td style="padding:1px 6px;text-align:right">{_e(cell(values[i]))}</td>'
            for i in shown
        )
        return f'<tr><th style="text-align:left;padding:1px 6px">{title}</th>{cells}</tr>'

    header = "".join("<th>&hellip;</th>" if i is None else f'<th style="padding:1px 6px">{i}</th>' for i in shown)
    rows = [f"<tr><th></th>{header}</tr>"]
    if any(v.label is not None for v in values):
        rows.append(row("label", lambda v: v.label or ""))
    rows.append(row("data", lambda v: text.number(v.data)))
    if vector.requires_grad:  # a Vector of constants has no gradient to show
        rows.append(row("grad", lambda v: text.number(v.grad)))
    grad_note = "" if vector.requires_grad else ", requires no grad"
    return (
        f'<div class="vjpgrad-vector"><pre style="margin:0 0 4px">{_e(format_vector(vector.data))}</pre>'
        f'<table style="{_STYLE}">{"".join(rows)}</table>'
        f"<small>Vector of {len(values)} Values{grad_note}</small></div>"
    )


def explanation_html(explanation: ExplanationData) -> str:
    """An Explanation as HTML: the seeds, each node's formula, the table of steps, each leaf's sum."""
    if not all(hasattr(explanation, field) for field in ("seeds", "steps", "gradients", "names", "formulas")):
        raise TypeError(f"explanation_html() takes an Explanation, got {type(explanation).__name__}")
    parts = [f"<p><b>Seeds</b> (the v of v<sup>T</sup>J): {_e(text.seeds_text(explanation))}</p>"]
    if explanation.formulas:
        formulas = "".join(f"<li><code>{_e(name)} = {_e(f)}</code></li>" for name, f in explanation.formulas.items())
        parts.append(f'<p><b>Nodes</b></p><ul style="margin-top:0">{formulas}</ul>')
    cell = "padding:1px 8px"
    header = "".join(f'<th style="{cell}">{h}</th>' for h in text.STEP_COLUMNS)
    rows = []
    for k, s in enumerate(explanation.steps[:TABLE_ROWS], start=1):
        rows.append("<tr>" + "".join(f'<td style="{cell}">{_e(t)}</td>' for t in text.step_cells(k, s)) + "</tr>")
    more = len(explanation.steps) - TABLE_ROWS
    if more > 0:
        rows.append(f'<tr><td colspan="10" style="{cell}">&hellip; {more} more steps (str() shows them all)</td></tr>')
    parts.append("<p><b>The reverse pass</b>, from the outputs back to the leaves:</p>")
    parts.append(f'<table style="{_STYLE}"><tr>{header}</tr>{"".join(rows)}</table>')
    sums = text.leaf_sums(explanation)
    if sums:
        items = "".join(
            f"<li><code>{_e(text.sum_line(explanation, name, terms, total))}</code></li>" for name, terms, total in sums
        )
        parts.append(f"<p>{_e(text.sums_heading(explanation))}</p><ul>{items}</ul>")
    return f'<div class="vjpgrad-explanation">{"".join(parts)}</div>'


class PrettyPrinter(Protocol):
    """The part of IPython's pretty printer that ``repr_pretty`` uses."""

    def text(self, obj: str) -> None: ...


def repr_pretty(obj: object, printer: PrettyPrinter, cycle: bool) -> None:
    """``_repr_pretty_`` for classes whose ``str`` is what a person wants in a notebook
    (a Vector's tensor text, an Explanation's table)."""
    printer.text(f"{type(obj).__name__}(...)" if cycle else str(obj))


Value._repr_html_ = value_html  # type: ignore[attr-defined]  # attached, not declared: see the module docstring
Vector._repr_html_ = vector_html  # type: ignore[attr-defined]  # attached, as above
Vector._repr_pretty_ = repr_pretty  # type: ignore[attr-defined]  # attached, as above
