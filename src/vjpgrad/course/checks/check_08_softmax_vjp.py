"""Exercise 8 (softmax.py): softmax's VJP, against vjpgrad's backward through softmax, in linear memory."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from vjpgrad import Value, Vector
from vjpgrad.course import expect
from vjpgrad.nn.functional import softmax
from vjpgrad.testing import assert_grad_close

LARGE = 1_000
MEMORY = 4_000_000
"""Bytes that importing softmax.py and running softmax_vjp on LARGE inputs may take at their peak,
counted from before the import, in a process of the student's code that nothing else has run in
(``student.peak_memory``): so memory the import fills, frees and keeps resident counts, and cannot
hide the call's. Counted by the kernel (the growth of that process's resident set), the reference
solution's import and call take about 0.39 MB (0.41 MB when softmax.py also imports the student's
engine.py; the skeleton's imports alone, 8 kB), a J of Python floats 38.6 MB; by ``tracemalloc`` (the
fallback without ``/proc``), about 0.21 MB and 33 MB (Python 3.11, Linux). The limit is ten times the
reference's and a tenth of J's: a few lists of LARGE floats fit many times, J does not, nor J as one
block of LARGE x LARGE doubles (8 MB). The values returned are compared too (``TOLERANCE``), so a J
kept small by storing it in fewer bits (half precision: 2 MB) fails."""

TOLERANCE = 1e-12
"""How far (relative to the size of its terms) each of softmax_vjp's numbers on LARGE inputs may be
from the VJP computed here in double precision: float rounding in a different order stays far
inside; a Jacobian stored in single (1e-7) or half (1e-3) precision does not."""


def reference_vjp(x: list[float], v: list[float]) -> tuple[list[float], list[float]]:
    """softmax's VJP at ``x`` with seed ``v``, in double precision (``math.fsum``), and, for each
    entry, the size of the terms it is made of (its tolerance's scale)."""
    top = max(x)
    e = [math.exp(t - top) for t in x]
    total = math.fsum(e)
    s = [t / total for t in e]
    dot = math.fsum(vi * si for vi, si in zip(v, s, strict=True))
    scale = math.fsum(abs(vi) * si for vi, si in zip(v, s, strict=True))
    return [sj * (vj - dot) for sj, vj in zip(s, v, strict=True)], [
        sj * (abs(vj) + scale) for sj, vj in zip(s, v, strict=True)
    ]


def softmax_of(*xs: Value) -> Vector:
    return softmax(Vector(list(xs)))


def check(softmax_vjp: Any, x: list[float], v: list[float]) -> None:
    __tracebackhide__ = True
    call = f"softmax_vjp({x}, {v})"
    yours = expect.floats(softmax_vjp(list(x), list(v)), len(x), call, f"{len(x)} numbers")
    names = [f"x[{i}]" for i in range(len(x))]
    try:
        assert_grad_close(softmax_of, x, expected=yours, seed=v, names=names, yours="expected")
    except AssertionError as error:
        raise AssertionError(f"{call}:\n{error}") from None


def test_three_inputs(student: Any) -> None:
    """softmax_vjp gives vjpgrad's gradients for three inputs."""
    check(student("softmax").softmax_vjp, [1.0, 2.0, 3.0], [0.1, 1.0, 0.0001])


def pairs_of_lists(n: int) -> st.SearchStrategy[tuple[list[float], list[float]]]:
    """An input x of n numbers and a seed v of n numbers."""
    x = st.lists(st.floats(-5, 5), min_size=n, max_size=n)
    return st.tuples(x, st.lists(st.floats(-2, 2), min_size=n, max_size=n))


@example(([0.5, -1.0], [1.0, 2.0]))
@given(st.integers(1, 6).flatmap(pairs_of_lists))
def test_any_inputs_and_seeds(student: Any, xv: tuple[list[float], list[float]]) -> None:
    """softmax_vjp gives vjpgrad's gradients for any inputs and seeds."""
    check(student("softmax").softmax_vjp, *xv)


def test_large_inputs_do_not_overflow(student: Any) -> None:
    """Large inputs do not overflow."""
    check(student("softmax").softmax_vjp, [1000.0, 1000.5, 999.0], [1.0, -1.0, 0.5])


def test_it_does_not_build_the_jacobian(student: Any) -> None:
    """softmax_vjp does not build the Jacobian (its memory stays linear)."""
    x = [((i * 37) % 101) / 50 - 1 for i in range(LARGE)]
    v = [((i * 53) % 97) / 48 - 1 for i in range(LARGE)]
    measured = student.peak_memory("softmax", "softmax_vjp", x, v)  # import and call, counted from before the import
    peak = measured[0]
    assert peak < MEMORY, (
        f"softmax_vjp on {LARGE:,} inputs used {peak / 1e6:.1f} MB at its peak, counting what it takes as "
        f"softmax.py is imported: J has {LARGE:,} x {LARGE:,} entries, the VJP needs only a few lists of "
        f"{LARGE:,} numbers (stay under {MEMORY / 1e6:.0f} MB)"
    )
    call = f"softmax_vjp on {LARGE:,} inputs"
    yours = expect.floats(measured.result, LARGE, call, f"{LARGE:,} numbers")
    expected, scales = reference_vjp(x, v)
    for i, (mine, theirs, scale) in enumerate(zip(yours, expected, scales, strict=True)):
        assert abs(mine - theirs) <= TOLERANCE * scale, (
            f"{call} gave {mine!r} for x[{i}], where the VJP in double precision is {theirs!r} (within "
            f"{TOLERANCE:g} of the size of its terms): the memory limit is met only by the right numbers"
        )
