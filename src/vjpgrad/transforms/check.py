"""The core of both gradient checkers: ``gradcheck`` (functional) and ``assert_grad_close``
(vjpgrad.testing) are two faces of the functions here.

The engine's gradients of ``f`` at some inputs, seeded as ``backward(seed)`` takes a seed,
against central differences of ``sum_i seed[i] * f(...)[i]``; one rule for "close" (nan
agrees with nan, an infinity with itself); one table for a failure.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from vjpgrad.core.backward import reverse_pass
from vjpgrad.core.modes import enable_grad, no_grad
from vjpgrad.core.seeds import scalar_seed
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector, outputs_and_seeds


def points(inputs: object) -> list[float]:
    """The inputs of a check as floats: one number, or a sequence of them."""
    __tracebackhide__ = True
    if not isinstance(inputs, (numbers.Real, Value, Iterable)) or isinstance(inputs, (str, bytes)):
        raise TypeError(f"inputs must be a number or a sequence of numbers, got {type(inputs).__name__}")
    given: list[Any] = [inputs] if isinstance(inputs, (numbers.Real, Value)) else list(inputs)
    return [scalar_seed(x, f"inputs[{i}]") for i, x in enumerate(given)]


def seeded_outputs(out: object, seed: object, hint: str = "") -> tuple[list[Value | float], list[float]]:
    """``f``'s result as outputs, with one seed each (by the rules of ``core/seeds.py``)."""
    __tracebackhide__ = True
    if isinstance(out, (Value, Vector)):
        outputs, seeds = outputs_and_seeds(out, seed, "the check", hint=hint)
        return list(outputs), seeds
    if isinstance(out, numbers.Real):
        return [float(out)], [1.0 if seed is None else scalar_seed(seed, "seed")]
    raise TypeError(f"f must return a Value, a Vector or a number, got {type(out).__name__}")


def analytic(f: Callable[..., Any], xs: Sequence[float], seed: object, hint: str = "") -> list[float]:
    """The engine's gradient of ``sum_i seed[i] * f(xs)[i]`` with respect to each input, as
    ``.grad`` would hold it after ``backward(seed)`` from fresh leaves. The pass is ``gradients()``'s:
    it adds into no ``.grad`` and frees no graph, so Values ``f`` closes over (and graphs made
    before) stay as they were, as with ``torch.autograd.gradcheck``; and ``f`` records whatever
    the caller's grad mode, as ``grad`` does."""
    __tracebackhide__ = True
    leaves = [Value(x) for x in xs]
    with enable_grad():
        outputs, seeds = seeded_outputs(f(*leaves), seed, hint)
    live = [(y, s) for y, s in zip(outputs, seeds, strict=True) if isinstance(y, Value) and y.requires_grad]
    if not live:
        return [0.0 for _ in leaves]
    found = reverse_pass([y for y, _ in live], [s for _, s in live])
    return [0.0 + found.get(leaf, 0.0) for leaf in leaves]  # added into a .grad of 0.0, as backward adds


def tolerances(who: str, eps: object, atol: object, rtol: object) -> None:
    """Refuse an ``eps`` that is not a positive number, or an ``atol`` or ``rtol`` that is not a
    non-negative one (a bool is no number here), naming ``who`` was given it."""
    for name, number in (("eps", eps), ("atol", atol), ("rtol", rtol)):
        is_real = isinstance(number, numbers.Real) and not isinstance(number, bool)  # a bool is no tolerance
        amount = float(number) if is_real else math.nan  # type: ignore[arg-type]  # a Real: float() takes it
        if not amount >= 0 or (name == "eps" and amount == 0):
            kind = "positive" if name == "eps" else "non-negative"
            raise ValueError(f"{who} {name} must be a {kind} number, got {number!r}")


def numeric(f: Callable[..., Any], xs: Sequence[float], seed: object, eps: float) -> list[float]:
    """Central differences of ``sum_i seed[i] * f(xs)[i]``: ``(f(x + eps) - f(x - eps)) / 2 eps``."""
    __tracebackhide__ = True

    def weighted(at: list[float]) -> float:
        outputs, seeds = seeded_outputs(f(*[Value(x) for x in at]), seed)
        return math.fsum(float(y) * s for y, s in zip(outputs, seeds, strict=True))

    found = []
    with no_grad():
        for j in range(len(xs)):
            plus = weighted([x + (eps if k == j else 0.0) for k, x in enumerate(xs)])
            minus = weighted([x - (eps if k == j else 0.0) for k, x in enumerate(xs)])
            found.append((plus - minus) / (2 * eps))
    return found


def agree(got: float, want: float, atol: float, rtol: float) -> bool:
    """``|got - want| <= atol + rtol * |want|``, where nan agrees only with nan and an infinity only
    with itself (the tolerance of an infinite ``want`` is infinite: no number is that close to it)."""
    if math.isnan(got) or math.isnan(want):
        return math.isnan(got) and math.isnan(want)
    if math.isinf(got) or math.isinf(want):
        return got == want
    return abs(got - want) <= atol + rtol * abs(want)


def table(
    heading: str,
    columns: Sequence[str],
    rows: Sequence[tuple[Sequence[str], float, float, float, bool]],
    mark: str = "<-- differs",
) -> str:
    """A failure as a table: each row's label cells, its value, the two gradients, their
    difference, and a mark where they disagree. ``columns`` names the label cells, then the
    two gradients."""
    labels, (checked, reference) = list(columns[:-2]), columns[-2:]
    widths = [max(len(label), *(len(row[0][k]) for row in rows)) for k, label in enumerate(labels)]
    head = " ".join(f"{label:<{w}}" for label, w in zip(labels, widths, strict=True))
    lines = [heading, f"  {head} {'value':>12} {checked:>14} {reference:>14} {'difference':>12}"]
    for cells, x, g, w, ok in rows:
        label = " ".join(f"{cell:<{width}}" for cell, width in zip(cells, widths, strict=True))
        lines.append(f"  {label} {x:>12.6g} {g:>14.8g} {w:>14.8g} {g - w:>12.3g}  {'ok' if ok else mark}")
    return "\n".join(lines)
