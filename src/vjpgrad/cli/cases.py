"""The four cases of the Stack Overflow answer, computed with vjpgrad.

The question, Stack Overflow's "Pytorch, what are the gradient arguments"
(https://stackoverflow.com/questions/43451125): in PyTorch's ``y.backward(gradients)``, what
are the gradients? An answer there worked four cases of ``y = 3*a + 2*b*b + log(c)``; each
case below holds the code of one, written as the answer wrote it, and the output it printed.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from vjpgrad.core.format import format_scalar
from vjpgrad.core.functions import log
from vjpgrad.core.seeds import SummedSeedWarning
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector


@dataclass(frozen=True)
class Case:
    """One case of the answer: what it does, the output the answer printed (``documented``), the
    code, why the numbers are what they are (``why``, one line), each gradient's rule (``rules``:
    ``"v × 4b"``, written with the case's names, ``v`` the seed) and, where a current PyTorch runs
    the answer's code differently, what it does and why (``pytorch_today``, lines)."""

    title: str
    call: str
    documented: dict[str, str]
    compute: Callable[[], dict[str, str]]
    why: str = ""
    rules: dict[str, str] = field(default_factory=dict)
    pytorch_today: tuple[str, ...] = ()


def _printed(x: Value | Vector | float) -> str:
    if isinstance(x, Vector):
        return str(x)
    return format_scalar(float(x))


def example_1() -> dict[str, str]:
    a = Vector([1.0, 2.0, 3.0])
    b = Vector([3.0, 4.0, 5.0])
    c = Vector([6.0, 7.0, 8.0])
    y = 3 * a + 2 * b * b + log(c)
    gradients = [0.1, 1.0, 0.0001]
    y.backward(gradients, retain_graph=True)
    return {"a.grad": _printed(a.grad), "b.grad": _printed(b.grad), "c.grad": _printed(c.grad)}


def example_2() -> dict[str, str]:
    a = Value(0.1)
    b = Value(1.0)
    c = Value(0.1)
    y = 3 * a + 2 * b * b + log(c)
    y.backward()
    return {"a.grad": _printed(a.grad), "b.grad": _printed(b.grad), "c.grad": _printed(c.grad)}


def example_3() -> dict[str, str]:
    a = Vector.empty(1)
    b = Vector.empty(1)
    c = Vector.empty(1)
    y = 3 * a + 2 * b * b + log(c)
    gradients = [0.1, 1.0, 0.0001]
    with warnings.catch_warnings():  # the summed seed is this case's subject: the report says so
        warnings.simplefilter("ignore", SummedSeedWarning)
        y.backward(gradients)
    return {"a.grad": _printed(a.grad), "b.grad": _printed(b.grad), "c.grad": _printed(c.grad)}


def example_4() -> dict[str, str]:
    a = Value(1.0)
    b = Value(1.0)
    c = Value(1.0)
    y = 3 * a + 2 * b * b + log(c)
    y.backward(retain_graph=True)
    y.backward()
    return {"a.grad": _printed(a.grad), "b.grad": _printed(b.grad), "c.grad": _printed(c.grad)}


CASES = (
    Case(
        "Case 1: a, b, c = [1, 2, 3], [3, 4, 5], [6, 7, 8]",
        "y.backward([0.1, 1.0, 0.0001], retain_graph=True)",
        {
            "a.grad": "tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])",
            "b.grad": "tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])",
            "c.grad": "tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])",
        },
        example_1,
        "each y[i] has its own weight v[i], so each gradient is v times the plain derivative",
        {"a.grad": "v × 3", "b.grad": "v × 4b", "c.grad": "v / c"},
    ),
    Case(
        "Case 2: scalars a, b, c = 0.1, 1.0, 0.1",
        "y.backward()",
        {"a.grad": "tensor(3.)", "b.grad": "tensor(4.)", "c.grad": "tensor(10.)"},
        example_2,
        "y is one number, so backward() weighs it by 1: these are the plain derivatives",
        {"a.grad": "3", "b.grad": "4b", "c.grad": "1 / c"},
    ),
    Case(
        "Case 3: a, b, c = Vector.empty(1) (zeros), one element each",
        "y.backward([0.1, 1.0, 0.0001])",
        {"a.grad": "tensor([3.3003])", "b.grad": "tensor([0.])", "c.grad": "tensor([inf])"},
        example_3,
        "y has one element, so its three weights are added into one: 0.1 + 1 + 0.0001 = 1.1001",
        {"a.grad": "(0.1 + 1 + 0.0001) × 3", "b.grad": "(0.1 + 1 + 0.0001) × 4b", "c.grad": "(0.1 + 1 + 0.0001) / c"},
        (
            "current PyTorch (1.3 and later) refuses this call: RuntimeError: Mismatch in shape: grad_output[0]",
            "has a shape of torch.Size([3]) and output[0] has a shape of torch.Size([1]). Its Python front end",
            "now checks that the seed has y's shape before the engine would sum it (its C++ engine still",
            "sums it); the answer ran on a PyTorch before 1.3, which summed it. vjpgrad keeps the answer's",
            "numbers, with a warning; on a current PyTorch, pass y.backward(torch.tensor([1.1001])) for the",
            "same gradients.",
        ),
    ),
    Case(
        "Case 4: scalars a, b, c = 1.0, 1.0, 1.0, two passes",
        "y.backward(retain_graph=True); y.backward()",
        {"a.grad": "tensor(6.)", "b.grad": "tensor(8.)", "c.grad": "tensor(2.)"},
        example_4,
        "gradients accumulate: the second backward() adds the same gradients again",
        {"a.grad": "3 + 3", "b.grad": "4b + 4b", "c.grad": "1 / c + 1 / c"},
    ),
)

_NUMBER = re.compile(r"-?(?:inf|nan|\d+\.?\d*(?:e[+-]\d+)?)")


def agrees(documented: str, computed: str) -> bool:
    """Same printed text, and the same numbers to the 5 significant digits printed."""
    expected = [float(x) for x in _NUMBER.findall(documented)]
    actual = [float(x) for x in _NUMBER.findall(computed)]
    return (
        documented == computed
        and len(expected) == len(actual)
        and all(x == y or math.isclose(x, y, rel_tol=1e-4) for x, y in zip(expected, actual, strict=True))
    )


GENERAL_RULE = (
    "The rule behind every case: y.backward(v) adds to each x.grad",
    "    x.grad = Σᵢ v[i] · ∂y[i]/∂x",
    "(the vector-Jacobian product vᵀJ: one weighted sum over all of y's elements). Below, y[i] depends",
    "on a[i], b[i], c[i] only, so the sum keeps one term and reads as v times a derivative, element",
    "by element; where one x feeds several y[i], every y[i] adds its term.",
)
"""The general rule, printed once before the cases' own rules, which are its element-wise form."""

QUESTION = "https://stackoverflow.com/questions/43451125"
"""Stack Overflow's "Pytorch, what are the gradient arguments", whose answer works the four cases."""


def report() -> tuple[str, bool]:
    """The four cases, the gradients the answer shows beside vjpgrad's, and whether all agree."""
    lines = [
        'The four cases of the Stack Overflow answer to "Pytorch, what are the gradient arguments"',
        f"({QUESTION}), y = 3*a + 2*b*b + log(c):",
        "the gradients the answer shows beside the ones vjpgrad computes, and the rule that gives them.",
        "",
        *GENERAL_RULE,
        "",
    ]
    all_agree = True
    for case in CASES:
        computed = case.compute()
        lines.append(f"{case.title}; {case.call}")
        if case.why:
            lines.append(f"  {case.why}")
        width = max(len(text) for text in case.documented.values())
        named = {name: f"{name} = {case.rules[name]}" if name in case.rules else name for name in case.documented}
        left = max(len(text) for text in named.values())
        lines.append(f"    {'':{left}}   {'the answer':{width}}   {'vjpgrad':{width}}")
        for name, documented in case.documented.items():
            ok = agrees(documented, computed[name])
            all_agree = all_agree and ok
            row = f"{named[name]:{left}}   {documented:{width}}   {computed[name]:{width}}"
            lines.append(f"    {row}   {'ok' if ok else 'DIFFERS'}")
        lines.extend(f"  {line}" for line in case.pytorch_today)
        lines.append("")
    lines.append("all four cases agree with the answer." if all_agree else "SOME CASES DIFFER from the answer.")
    return "\n".join(line.rstrip() for line in lines), all_agree
