"""The test cases of every operation of the table (src/vjpgrad/core/ops.py): one row per operation.

The tests that hold each operation to something read their operations from here, never from a
list of their own: the derivative against central differences and the IEEE-754 edges
(test_operations.py), compiled against eager code (test_compile_replay.py), the differentiable pass
and second derivatives (test_transforms.py) and PyTorch, to the bit (test_torch_parity.py).
test_operations.py's guard fails, naming the operation, when an operation of the table has no row
here (or a row one the table does not have).

A row says how a user calls the operation (``call``, on Values, and on a number where ``operands``
says so), how PyTorch computes it (``torch``), where central differences are well conditioned
(``domain``), and what IEEE-754 (C99 Annex F for the functions) gives at its edges: 0, -0.0, +-inf,
nan and the boundaries of its domain (``edges``), with the derivatives PyTorch's formulas give there
(``derivatives``). Adding an operation to the table is adding its row here, for example::

    OpCase(
        "log1p",
        ops.LOG1P,
        lambda x: x.log1p(),
        "v",
        torch=lambda torch, x: torch.log1p(x),
        domain=operands(finite(-0.999, 1e6)),
        edges=((-1.0, -inf), (-2.0, nan), (-0.0, -0.0), (0.0, 0.0), (inf, inf), (-inf, nan), (nan, nan)),
        derivatives=((0.0, 1.0), (-1.0, inf), (-2.0, -1.0)),
        vectorised=kernel("log1p"),
    ),
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

import vjpgrad
from vjpgrad.core import ops
from vjpgrad.core.ops import Op
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported

inf, nan = math.inf, math.nan
TINY = 5e-324

EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, 1e-300, 1e300, 700.0, -800.0, inf, -inf, nan]
"""Inputs at the IEEE-754 edges that every operation is tried at, besides its own ``edges``."""

PAIRS = [(x, y) for x in (0.0, -0.0, 1.0, -2.0, 0.5, inf, nan) for y in (0.0, -0.0, 2.0, -1.0, 0.5, -inf, nan)]
"""Two operands at the edges, for the operations of two Values."""

CONSTANTS = (0.0, -0.0, 1.0, 2.0, -3.0, 0.5, 2.7, 3, -1, 1e300, TINY, inf, -inf, nan)
"""The numbers tried where a number is an operand (``x + c``, ``c ** x``): ints and floats, edges."""

POWERS = (0, 0.5, -0.5, 1, -1, 2, 3, -2, 1.5, -1.5, 2.5, 0.3, -3, 4, 7, 0.0, 2.0, 1e300, -inf, inf, nan)
"""The exponents tried for ``x ** k``: each of PyTorch's special cases (0.5 is sqrt, 2 is x * x...)
as an int and as a float, other powers, and the edges."""


def finite(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def away_from_zero(lo: float, hi: float) -> st.SearchStrategy[float]:
    """lo <= |x| <= hi, either sign: away from a kink or a pole at 0."""
    return finite(lo, hi) | finite(-hi, -lo)


def operands(*each: st.SearchStrategy[float]) -> st.SearchStrategy[tuple[float, ...]]:
    """A domain: one strategy per operand."""
    return st.tuples(*each)


Kernels = tuple[tuple[str, float] | None, tuple[tuple[str, float], ...]]
"""PyTorch's vectorised kernels at some operands: the one that computes the forward, with its
argument (None: none does), and those the backward formula evaluates, each with its argument."""


def no_kernel(*_: float) -> Kernels:
    return None, ()


def kernel(name: str, *backward: Callable[..., tuple[str, float]]) -> Callable[..., Kernels]:
    """The forward is PyTorch's vectorised ``name`` of the first operand (``torch.<name>``, and
    ``math.<name>`` the C library's); ``backward`` gives each kernel the backward formula
    evaluates, with its argument, from the operands."""
    return lambda *xs: ((name, xs[0]), tuple(each(*xs) for each in backward))


@dataclass(frozen=True)
class Spelling:
    """One way the tests call an operation: ``text`` shows it, ``call`` takes the operands in
    order, ``operands`` says which are Values (``v``) and which are numbers (``n``), and ``numbers``
    are the numbers tried for an ``n``."""

    text: str
    call: Callable[..., Any]
    operands: str
    numbers: tuple[float, ...] = ()
    torch: Callable[..., Any] | None = None
    """How PyTorch computes it, as ``OpCase.torch``; None: ``call`` on tensors, as a PyTorch user
    writes a number with a tensor (the path vjpgrad copies: ``c / x`` is ``reciprocal(x) * c``)."""
    vectorised: Callable[..., Kernels] = no_kernel
    zero_ties_differ: bool = False

    @property
    def values(self) -> int:
        """How many operands are Values."""
        return self.operands.count("v")

    def number_choices(self) -> list[tuple[float, ...]]:
        """Each choice of its number operands from ``numbers`` (one empty choice when it takes none)."""
        return list(itertools.product(self.numbers, repeat=self.operands.count("n")))

    def of_values(self, numbers: tuple[float, ...] = ()) -> Callable[..., Any]:
        """The form as a function of its Values alone, with ``numbers`` for its number operands."""

        def call(*values: Any) -> Any:
            given_values, given_numbers = iter(values), iter(numbers)
            return self.call(*(next(given_values) if kind == "v" else next(given_numbers) for kind in self.operands))

        return call


def constant(torch: Any, c: float) -> Any:
    """A number as PyTorch's functions of two tensors take it: a float64 tensor with no gradient."""
    return torch.tensor(float(c), dtype=torch.float64)


def value_points(count: int) -> list[tuple[float, ...]]:
    """Operands at the edges for a function of ``count`` Values: ``EDGES`` for one, ``PAIRS`` for two."""
    return [(x,) for x in EDGES] if count == 1 else list(PAIRS)


@dataclass(frozen=True)
class OpCase:
    """The test cases of one operation of the table.

    - ``name``: the row's name in test ids (``ops.POW_SCALAR`` is ``pow_scalar``);
    - ``op``: the row of the table it covers;
    - ``call``: the operation as a user calls it, on its operands in order; PyTorch's tensors
      spell it alike (``x.exp()``, ``x ** k``), so the parity tests run it on tensors too;
    - ``operands``: ``v`` for a Value and ``n`` for a number, one letter per operand;
    - ``torch``: how PyTorch computes it, given ``torch`` and the operands (float64 tensors, and
      numbers where ``operands`` says so): its function, ``lambda torch, x: torch.exp(x)``;
    - ``domain``: a strategy of operands where it is smooth and central differences are well
      conditioned (finite, away from kinks and poles);
    - ``edges``: operands at the edges and the value IEEE-754 (C99 Annex F for ``pow`` and the
      functions) gives there: ``(x, expected)``, ``(x, y, expected)``;
    - ``derivatives``: operands at the edges and the derivative PyTorch's formula gives there for
      each Value operand: ``(x, dx)``, ``(x, y, dx, dy)``, ``(c, x, dx)``;
    - ``numbers``: the numbers tried for an ``n`` operand;
    - ``with_a_number``: a number may stand for either Value (``x + c``, ``c + x``), the tests try
      those forms too, with ``CONSTANTS``;
    - ``vectorised``: the vectorised kernels PyTorch runs at given operands (MKL or SLEEF, whose
      results may be one or two ulps from the C library's), as ``kernel`` writes them;
    - ``zero_ties_differ``: PyTorch's result for a tie of 0.0 and -0.0 may be either zero (a known
      difference, which the docs list): the parity tests compare such a forward without its sign;
    - ``leading``: the numbers the row's operation takes before the call's operands, which the
      call fixes (``take``'s index: ``call`` picks its second Value, so the row's operands are
      ``(1.0, x, y)``).
    """

    name: str
    op: Op
    call: Callable[..., Any]
    operands: str
    torch: Callable[..., Any]
    domain: st.SearchStrategy[tuple[float, ...]]
    edges: tuple[tuple[float, ...], ...]
    derivatives: tuple[tuple[float, ...], ...] = ()
    numbers: tuple[float, ...] = CONSTANTS
    with_a_number: bool = False
    vectorised: Callable[..., Kernels] = no_kernel
    zero_ties_differ: bool = False
    leading: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if set(self.operands) - {"v", "n"} or "v" not in self.operands:
            raise ValueError(f"{self.name}: operands must be v and n letters, with a v, got {self.operands!r}")
        width = len(self.operands)
        for edge in self.edges:
            if len(edge) != width + 1:
                raise ValueError(f"{self.name}: the edge {edge} is not {width} operands and the result")
        for edge in self.derivatives:
            if len(edge) != width + self.operands.count("v"):
                raise ValueError(f"{self.name}: the derivatives {edge} are not operands, then one per Value")

    @property
    def text(self) -> str:
        """The operation as a user writes it, with x, y for Values and c, k for numbers."""
        names = iter("xy")
        number = "k" if self.operands == "vn" else "c"  # x ** k: an exponent; c ** x: a constant
        shown = [next(names) if kind == "v" else number for kind in self.operands]
        if self.op.symbol:
            return f"{shown[0]} {self.op.symbol} {shown[1]}" if len(shown) == 2 else f"{self.op.symbol}{shown[0]}"
        if self.op is ops.ABS:
            return "abs(x)"
        if self.op is ops.NEG:
            return "-x"
        if self.op is ops.MAX:
            return f"max([{', '.join(shown)}])"
        if self.op is ops.TAKE:  # the index is data: a Value that takes no gradient
            return f"embedding(Value(1.0), [[{shown[0]}], [{shown[1]}]])[0]"
        if self.op.arity == 2:  # a function of two operands: vjpgrad.atan2(x, y)
            return f"{self.op.name}({', '.join(shown)})"
        return f"x.{self.op.name}()"

    def spellings(self) -> list[Spelling]:
        """Every way the tests call it: as ``call`` says, then with a number for either Value."""
        numbers = self.numbers if "n" in self.operands else ()
        found = [
            Spelling(self.text, self.call, self.operands, numbers, self.torch, self.vectorised, self.zero_ties_differ)
        ]
        if self.with_a_number and self.op.symbol:
            symbol = self.op.symbol
            found.append(Spelling(f"x {symbol} c", self.call, "vn", CONSTANTS))
            found.append(Spelling(f"c {symbol} x", self.call, "nv", CONSTANTS))
        elif self.with_a_number:  # a function: torch takes the number as a tensor that requires no grad
            name, torch_call = self.op.name, self.torch
            found.append(
                Spelling(f"{name}(x, c)", self.call, "vn", CONSTANTS, lambda t, x, c: torch_call(t, x, constant(t, c)))
            )
            found.append(
                Spelling(f"{name}(c, x)", self.call, "nv", CONSTANTS, lambda t, c, x: torch_call(t, constant(t, c), x))
            )
        return found

    def points(self, form: Spelling) -> list[tuple[float, ...]]:
        """The operands a form is tried at: ``EDGES`` for a Value (``PAIRS`` for two Values), the
        form's ``numbers`` for a number, and the operands of the row's own ``edges``."""
        if form.operands == "vv":
            found: list[tuple[float, ...]] = list(PAIRS)
        else:
            found = list(itertools.product(*(EDGES if kind == "v" else form.numbers for kind in form.operands)))
        return found + [edge[:-1] for edge in self.edges if edge[:-1] not in found]


POWER_EDGES = (
    (0.0, -1.0, inf),  # pole at +0, odd negative integer: +inf
    (-0.0, -1.0, -inf),  # pole at -0, odd negative integer: -inf
    (-0.0, -2.0, inf),  # even: +inf
    (0.0, -0.5, inf),  # not an integer: +inf
    (-0.0, -3.0, -inf),
    (-0.0, -2.5, inf),
    (-2.0, 0.5, nan),  # negative base, non-integer exponent
    (-2.0, 3.0, -8.0),
    (-2.0, 2.0, 4.0),
    (2.0, 1024.0, inf),  # overflow
    (-2.0, 1025.0, -inf),  # overflow, odd: negative
    (-2.0, 1024.0, inf),  # overflow, even: positive
    (0.5, -1025.0, inf),  # overflow of a positive base, odd exponent: positive
    (-2.0, 1e300, inf),  # a huge even integer
    (10.0, -400.0, 0.0),  # underflow
    (1.0, nan, 1.0),  # 1 ** anything is 1
    (nan, 0.0, 1.0),  # anything ** 0 is 1
    (inf, -1.0, 0.0),
    (0.5, inf, 0.0),
    (2.0, -inf, 0.0),
    (-8.0, 1.0 / 3.0, nan),
)
"""C99 Annex F's pow: the special cases ``x ** y`` keeps, with a Value exponent or a number base."""


CASES: list[OpCase] = [
    OpCase(
        "add",
        ops.ADD,
        lambda x, y: x + y,
        "vv",
        torch=lambda torch, x, y: torch.add(x, y),
        domain=operands(finite(-1e3, 1e3), finite(-1e3, 1e3)),
        edges=(
            (inf, -inf, nan),  # invalid
            (-0.0, -0.0, -0.0),  # the only sum of zeros that is -0.0
            (0.0, -0.0, 0.0),
            (-0.0, 0.0, 0.0),
            (1e308, 1e308, inf),  # overflow
            (nan, 1.0, nan),
            (2.5, 0.5, 3.0),
        ),
        derivatives=((2.0, 3.0, 1.0, 1.0), (inf, -inf, 1.0, 1.0), (nan, 1.0, 1.0, 1.0)),
        with_a_number=True,
    ),
    OpCase(
        "sub",
        ops.SUB,
        lambda x, y: x - y,
        "vv",
        torch=lambda torch, x, y: torch.sub(x, y),
        domain=operands(finite(-1e3, 1e3), finite(-1e3, 1e3)),
        edges=(
            (inf, inf, nan),
            (-0.0, 0.0, -0.0),
            (0.0, 0.0, 0.0),
            (0.0, -0.0, 0.0),
            (-0.0, -0.0, 0.0),
            (-1e308, 1e308, -inf),
            (nan, 1.0, nan),
            (1.0, 0.25, 0.75),
        ),
        derivatives=((1.0, 2.0, 1.0, -1.0), (nan, inf, 1.0, -1.0)),
        with_a_number=True,
    ),
    OpCase(
        "mul",
        ops.MUL,
        lambda x, y: x * y,
        "vv",
        torch=lambda torch, x, y: torch.mul(x, y),
        domain=operands(finite(-1e3, 1e3), finite(-1e3, 1e3)),
        edges=(
            (inf, 0.0, nan),
            (-0.0, 3.0, -0.0),
            (-2.0, 0.0, -0.0),
            (-0.0, -0.0, 0.0),
            (1e200, 1e200, inf),
            (-1e200, 1e200, -inf),
            (1e-200, 1e-200, 0.0),  # underflow
            (nan, 0.0, nan),
            (1.5, -2.0, -3.0),
        ),
        derivatives=((2.0, 3.0, 3.0, 2.0), (inf, 0.0, 0.0, inf), (nan, 2.0, 2.0, nan)),
        with_a_number=True,
    ),
    OpCase(
        "div",
        ops.DIV,
        lambda x, y: x / y,
        "vv",
        torch=lambda torch, x, y: torch.div(x, y),
        domain=operands(finite(-1e3, 1e3), away_from_zero(0.1, 1e3)),
        edges=(
            # x / 0 for both zeros: a nonzero finite or infinite x gives an infinity signed by the signs
            # of x and of the zero; 0 / 0 and nan / 0 are nan ("division by zero" and "invalid")
            (1.0, 0.0, inf),
            (1.0, -0.0, -inf),
            (-1.0, 0.0, -inf),
            (-1.0, -0.0, inf),
            (0.0, 0.0, nan),
            (0.0, -0.0, nan),
            (-0.0, 0.0, nan),
            (-0.0, -0.0, nan),
            (nan, 0.0, nan),
            (nan, -0.0, nan),
            (inf, 0.0, inf),
            (inf, -0.0, -inf),
            (-inf, 0.0, -inf),
            (-inf, -0.0, inf),
            (2.5e-308, 0.0, inf),
            (-1e308, -0.0, inf),
            # division that does not divide by zero is Python's own, which is IEEE's
            (1.0, 4.0, 0.25),
            (-3.0, 2.0, -1.5),
            (0.0, -5.0, -0.0),
            (inf, inf, nan),
            (1.0, -inf, -0.0),
            (nan, 1.0, nan),
        ),
        # d/dx = 1 / y, d/dy = -(x / y) / y
        derivatives=(
            (1.0, 0.0, inf, -inf),  # -(inf / +0) = -inf
            (1.0, -0.0, -inf, -inf),  # -(-inf / -0) = -inf
            (-1.0, 0.0, inf, inf),
            (0.0, 0.0, inf, nan),
            (3.0, 2.0, 0.5, -0.75),
        ),
        with_a_number=True,
    ),
    OpCase(
        "pow",
        ops.POW,
        lambda x, y: x**y,
        "vv",
        torch=lambda torch, x, y: torch.pow(x, y),
        domain=operands(finite(0.1, 10), finite(-3, 3)),
        edges=POWER_EDGES,
        derivatives=(
            (0.0, -1.0, -inf, -inf),  # d/dx = y * x ** (y - 1) = -1 * 0 ** -2; d/dy = out * log(0) = inf * -inf
            (nan, 0.0, 0.0, nan),  # d/dx masked where y == 0 (not 0 * nan); d/dy = 1 * log(nan)
            (0.0, 2.0, 0.0, 0.0),  # d/dx = 2 * 0 ** 1; d/dy masked where x == 0 <= y
            (0.0, 0.0, 0.0, 0.0),
        ),
        vectorised=lambda x, y: (None, (("log", x),)),  # the exponent's gradient is out * log(x)
    ),
    OpCase(
        "pow_scalar",
        ops.POW_SCALAR,
        lambda x, k: x**k,
        "vn",
        torch=lambda torch, x, k: torch.pow(x, k),
        domain=st.one_of(
            operands(finite(0.01, 100), finite(-3, 3)),  # any exponent of a positive base
            operands(finite(-100, 100), st.sampled_from([0, 1, 2, 3, 0.0, 1.0, 2.0, 3.0])),  # whole powers
            operands(away_from_zero(0.1, 100), st.sampled_from([-1, -2, -3, -1.0, -2.0])),
        ),
        # x ** k with a number k is computed as PyTorch computes it: k = 0.5 is sqrt, -0.5 is
        # 1 / sqrt, -1 is 1 / x, 2 is x * x, 3 is x * x * x, -2 is 1 / (x * x); the rest is pow
        edges=(
            (-inf, 0.5, nan),  # sqrt(-inf); C's pow would give inf
            (-inf, 0.25, inf),  # pow(-inf, 0.25) = +inf: the general path
            (-0.0, 0.5, -0.0),  # sqrt(-0) = -0, pow(-0, 0.5) would be +0
            (-0.0, -0.5, -inf),  # 1 / sqrt(-0)
            (-4.0, -0.5, nan),
            (4.0, -0.5, 0.5),
            (-0.0, -1.0, -inf),  # 1 / -0
            (0.0, -1.0, inf),
            (0.0, -1, inf),
            (nan, 0.0, 1.0),
            (inf, 0.0, 1.0),
            (nan, 1.0, nan),
            (-3.0, 1.0, -3.0),
            (-3.0, 2.0, 9.0),
            (-3.0, 3.0, -27.0),
            (-0.0, -2.0, inf),  # 1 / (-0 * -0)
            (-2.0, -2.0, 0.25),
            (1e200, 2.0, inf),
            (-1e200, 3.0, -inf),
            (10.0, 400, inf),
            (-10.0, 401, -inf),
            (-8.0, 1.0 / 3.0, nan),
            (2.0, 10.0, 1024.0),
            (0.0, -3.0, inf),
            (-0.0, -3.0, -inf),
        ),
        # d/dx = k * x ** (k - 1), masked (exactly 0) where k == 0
        derivatives=(
            (nan, 0, 0.0),
            (0.0, 0, 0.0),
            (0.0, 0.5, inf),
            (-3.0, 2, -6.0),
            (2.0, -1, -0.25),
            (nan, 1, 1.0),  # 1 * x ** 0 = 1
            (inf, 2, inf),
        ),
        numbers=POWERS,
        # x ** 0.5 is sqrt; the gradient of x ** 1.5 is 1.5 * x ** 0.5
        vectorised=lambda x, k: (("sqrt", x) if k == 0.5 else None, (("sqrt", x),) if k == 1.5 else ()),
    ),
    OpCase(
        "pow_base",
        ops.POW_BASE,
        lambda c, x: c**x,
        "nv",
        torch=lambda torch, c, x: torch.pow(c, x),
        domain=operands(finite(0.1, 10), finite(-30, 30)),
        edges=POWER_EDGES,
        derivatives=(
            (2.0, 3.0, 8.0 * math.log(2.0)),  # out * log(c)
            (0.0, 2.0, 0.0),  # 0 where c == 0 <= x
            (0.0, 0.0, 0.0),
            (0.0, -1.0, -inf),  # x < 0: out * log(0) = inf * -inf
        ),
    ),
    OpCase(
        "neg",
        ops.NEG,
        lambda x: -x,
        "v",
        torch=lambda torch, x: torch.neg(x),
        domain=operands(finite(-1e3, 1e3)),
        edges=((0.0, -0.0), (-0.0, 0.0), (nan, nan), (inf, -inf), (2.5, -2.5)),
        derivatives=((2.0, -1.0), (nan, -1.0)),
    ),
    OpCase(
        "abs",
        ops.ABS,
        lambda x: abs(x),
        "v",
        torch=lambda torch, x: torch.abs(x),
        domain=operands(away_from_zero(0.01, 1e3)),
        edges=((-0.0, 0.0), (0.0, 0.0), (-inf, inf), (nan, nan), (-2.0, 2.0)),
        derivatives=((0.0, 0.0), (-0.0, 0.0), (nan, 0.0), (-2.0, -1.0), (3.0, 1.0)),
    ),
    OpCase(
        "sign",
        ops.SIGN,
        lambda x: x.sign(),
        "v",
        torch=lambda torch, x: torch.sign(x),
        domain=operands(away_from_zero(0.01, 1e3)),
        edges=((0.0, 0.0), (-0.0, 0.0), (nan, 0.0), (-2.0, -1.0), (1e-300, 1.0), (inf, 1.0), (-inf, -1.0)),
        derivatives=((2.0, 0.0), (0.0, 0.0), (nan, 0.0)),
    ),
    OpCase(
        "reciprocal",
        ops.RECIPROCAL,
        lambda x: x.reciprocal(),
        "v",
        torch=lambda torch, x: torch.reciprocal(x),
        domain=operands(away_from_zero(0.01, 1e3)),
        edges=((0.0, inf), (-0.0, -inf), (inf, 0.0), (-inf, -0.0), (nan, nan), (2.0, 0.5)),
        derivatives=((0.0, -inf), (2.0, -0.25)),
    ),
    OpCase(
        "exp",
        ops.EXP,
        lambda x: x.exp(),
        "v",
        torch=lambda torch, x: torch.exp(x),
        domain=operands(finite(-30, 30)),
        edges=((1000.0, inf), (-inf, 0.0), (inf, inf), (nan, nan), (0.0, 1.0)),
        derivatives=((1000.0, inf), (0.0, 1.0)),
        vectorised=kernel("exp"),
    ),
    OpCase(
        "log",
        ops.LOG,
        lambda x: x.log(),
        "v",
        torch=lambda torch, x: torch.log(x),
        domain=operands(finite(1e-3, 1e6)),
        edges=((0.0, -inf), (-0.0, -inf), (-1.0, nan), (-inf, nan), (inf, inf), (1.0, 0.0), (nan, nan)),
        # 1/x, even where log is nan
        derivatives=((0.0, inf), (-0.0, -inf), (-1.0, -1.0), (-2.0, -0.5)),
        vectorised=kernel("log"),
    ),
    OpCase(
        "log1p",
        ops.LOG1P,
        lambda x: x.log1p(),
        "v",
        torch=lambda torch, x: torch.log1p(x),
        domain=operands(finite(-0.999, 1e6)),
        edges=((-1.0, -inf), (-2.0, nan), (-0.0, -0.0), (0.0, 0.0), (inf, inf), (-inf, nan), (nan, nan)),
        # 1/(1 + x), even where log1p is nan
        derivatives=((0.0, 1.0), (-0.0, 1.0), (-1.0, inf), (-2.0, -1.0)),
        vectorised=kernel("log1p"),
    ),
    OpCase(
        "sqrt",
        ops.SQRT,
        lambda x: x.sqrt(),
        "v",
        torch=lambda torch, x: torch.sqrt(x),
        domain=operands(finite(1e-3, 1e6)),
        edges=((-1.0, nan), (-0.0, -0.0), (0.0, 0.0), (inf, inf), (-inf, nan), (4.0, 2.0)),
        derivatives=((0.0, inf), (4.0, 0.25)),
        vectorised=kernel("sqrt"),
    ),
    OpCase(
        "sin",
        ops.SIN,
        lambda x: x.sin(),
        "v",
        torch=lambda torch, x: torch.sin(x),
        domain=operands(finite(-100, 100)),
        edges=((inf, nan), (-inf, nan), (-0.0, -0.0), (nan, nan)),
        derivatives=((0.0, 1.0), (inf, nan)),  # cos(x)
        vectorised=kernel("sin", lambda x: ("cos", x)),
    ),
    OpCase(
        "cos",
        ops.COS,
        lambda x: x.cos(),
        "v",
        torch=lambda torch, x: torch.cos(x),
        domain=operands(finite(-100, 100)),
        edges=((inf, nan), (-inf, nan), (0.0, 1.0), (nan, nan)),
        derivatives=((0.0, -0.0), (inf, nan)),  # -sin(x)
        vectorised=kernel("cos", lambda x: ("sin", x)),
    ),
    OpCase(
        "tan",
        ops.TAN,
        lambda x: x.tan(),
        "v",
        torch=lambda torch, x: torch.tan(x),
        domain=operands(finite(-1.4, 1.4)),
        edges=((inf, nan), (-inf, nan), (-0.0, -0.0), (nan, nan)),
        derivatives=((0.0, 1.0),),
        vectorised=kernel("tan"),
    ),
    OpCase(
        "tanh",
        ops.TANH,
        lambda x: x.tanh(),
        "v",
        torch=lambda torch, x: torch.tanh(x),
        domain=operands(finite(-10, 10)),
        edges=((inf, 1.0), (-inf, -1.0), (-0.0, -0.0), (nan, nan)),
        derivatives=((inf, 0.0), (0.0, 1.0)),
        vectorised=kernel("tanh"),
    ),
    OpCase(
        "sigmoid",
        ops.SIGMOID,
        lambda x: x.sigmoid(),
        "v",
        torch=lambda torch, x: torch.sigmoid(x),
        domain=operands(finite(-20, 20)),
        # sigmoid(-inf) = 1 / (1 + exp(inf)) = 1 / inf
        edges=((inf, 1.0), (-inf, 0.0), (0.0, 0.5), (-1000.0, 0.0), (nan, nan)),
        derivatives=((-inf, 0.0), (0.0, 0.25)),
    ),
    OpCase(
        "relu",
        ops.RELU,
        lambda x: x.relu(),
        "v",
        torch=lambda torch, x: torch.relu(x),
        domain=operands(away_from_zero(0.01, 1e3)),
        # relu(-0.0) is -0.0, as PyTorch's clamp_min(x, 0) gives it
        edges=((-1.0, 0.0), (0.0, 0.0), (-0.0, -0.0), (2.0, 2.0), (nan, nan), (inf, inf), (-inf, 0.0)),
        # g passes where the output is > 0 (nan included: nan is not <= 0), exactly 0 elsewhere
        derivatives=((0.0, 0.0), (-1.0, 0.0), (2.0, 1.0), (nan, 1.0)),
    ),
    OpCase(
        "max",
        ops.MAX,
        lambda x, y: F.max([x, y]),
        "vv",
        torch=lambda torch, x, y: torch.max(torch.stack([x, y])),
        domain=operands(finite(-1e3, 1e3), finite(-1e3, 1e3)).filter(lambda xy: abs(xy[0] - xy[1]) > 1e-2),
        # nan if either is nan; of equal ones the first, as Python's max: max(-0.0, 0.0) is -0.0
        edges=(
            (1.0, nan, nan),
            (nan, 5.0, nan),
            (3.0, 1.0, 3.0),
            (-inf, -1.0, -1.0),
            (-0.0, 0.0, -0.0),
            (0.0, -0.0, 0.0),
        ),
        # g / count to each operand equal to the maximum (to each nan when it is nan), 0 to the others
        derivatives=((1.0, 3.0, 0.0, 1.0), (3.0, 3.0, 0.5, 0.5), (1.0, nan, 0.0, 1.0), (nan, nan, 0.5, 0.5)),
        zero_ties_differ=True,
    ),
    OpCase(
        "take",
        ops.TAKE,
        # the second row of a one-column weight, picked by an index that is data (a Value)
        lambda x, y: F.embedding(vjpgrad.Value(1.0, requires_grad=False), [[x], [y]])[0],
        "vv",
        torch=lambda torch, x, y: torch.nn.functional.embedding(torch.tensor(1), torch.stack([x, y]).unsqueeze(1))[0],
        domain=operands(finite(-1e3, 1e3), finite(-1e3, 1e3)),
        # the element picked, whatever the other is: its bits, nan and signed zeros included
        edges=((1.0, nan, nan), (nan, 5.0, 5.0), (0.0, -0.0, -0.0), (-0.0, 0.0, 0.0), (inf, -inf, -inf)),
        # g to the element picked, exactly 0.0 to the other (PyTorch's dense embedding gradient)
        derivatives=((1.0, 3.0, 0.0, 1.0), (nan, 3.0, 0.0, 1.0), (inf, nan, 0.0, 1.0)),
        leading=(1.0,),
    ),
]
"""One row per operation of the table, in the table's order."""

CASES += [
    OpCase(
        "atan2",
        ops.ATAN2,
        lambda y, x: vjpgrad.atan2(y, x),
        "vv",
        torch=lambda torch, y, x: torch.atan2(y, x),
        # away from the origin and from the branch cut (y = 0, x < 0), where atan2 jumps from pi to -pi
        domain=operands(finite(-1e3, 1e3), finite(-1e3, 1e3)).filter(lambda yx: abs(yx[0]) > 0.1 or yx[1] > 0.1),
        # C99 Annex F: the signs of zeros and infinities choose the quadrant
        edges=(
            (0.0, 0.0, 0.0),
            (-0.0, 0.0, -0.0),
            (0.0, -0.0, math.pi),
            (-0.0, -0.0, -math.pi),
            (0.0, -1.0, math.pi),
            (-0.0, -1.0, -math.pi),
            (-0.0, 1.0, -0.0),
            (1.0, 0.0, math.pi / 2),
            (-1.0, -0.0, -math.pi / 2),
            (1.0, -inf, math.pi),
            (-1.0, -inf, -math.pi),
            (-1.0, inf, -0.0),
            (inf, 1.0, math.pi / 2),
            (-inf, 1.0, -math.pi / 2),
            (inf, -inf, 3 * math.pi / 4),
            (-inf, inf, -math.pi / 4),
            (nan, 1.0, nan),
            (1.0, nan, nan),
        ),
        # recip = 1 / (y * y + x * x), 0 where y * y + x * x is 0; d/dy = (g * x) * recip, d/dx = (g * -y) * recip
        derivatives=(
            (1.0, 2.0, 0.4, -0.2),
            (0.0, 0.0, 0.0, -0.0),  # recip is 0 at the origin
            (1e-200, 1e-200, 0.0, -0.0),  # the squares underflow to 0: recip is 0 there too
            (2.3e-162, 0.0, nan, -inf),  # the sum is the least subnormal, 5e-324: recip overflows, 0 * inf
            (inf, 1.0, 0.0, nan),  # recip = 0: 1 * 0, -inf * 0
            (1e200, 1e200, 0.0, -0.0),  # the squares overflow
        ),
        with_a_number=True,
    ),
    OpCase(
        "hypot",
        ops.HYPOT,
        lambda x, y: vjpgrad.hypot(x, y),
        "vv",
        torch=lambda torch, x, y: torch.hypot(x, y),
        domain=operands(finite(-1e3, 1e3), finite(-1e3, 1e3)).filter(lambda xy: abs(xy[0]) + abs(xy[1]) > 0.1),
        # C99 Annex F: an infinity wins over a nan
        edges=(
            (3.0, 4.0, 5.0),
            (-3.0, -4.0, 5.0),
            (0.0, 0.0, 0.0),
            (-0.0, -0.0, 0.0),
            (-0.0, 5.0, 5.0),
            (inf, nan, inf),
            (nan, -inf, inf),
            (nan, 1.0, nan),
            (1e308, 1e308, 1.4142135623730951e308),  # no overflow inside
            (TINY, 0.0, TINY),
        ),
        # d/dx = (g * x) / out, d/dy = (g * y) / out
        derivatives=(
            (3.0, 4.0, 0.6, 0.8),
            (-3.0, 4.0, -0.6, 0.8),
            (0.0, 0.0, nan, nan),  # 0 / 0
            (inf, 1.0, nan, 0.0),  # inf / inf, 1 / inf
        ),
        with_a_number=True,
    ),
]

MAX_WITH_CONSTANTS: list[tuple[str, Callable[..., Any], int]] = [
    ("max([x, 1.0, x * 0.5])", lambda x: F.max([x, 1.0, x * 0.5]), 1),
    ("max([x, 0.0, y])", lambda x, y: F.max([x, 0.0, y]), 2),
]
"""max with numbers among its operands (the row's ``call`` takes two Values): (text, function of
its Values, how many Values), tried at ``value_points`` where the rows' forms are."""

NOT_CALLED_BY_USERS: dict[Op, str] = {
    ops.MASKED_ZERO: "what a masked edge hands on in a differentiable pass; tested through relu, abs and x ** 0",
    ops.IDENTITY: "a transform's own variable on top of an outer one; tested through nested transforms",
    ops.DETACH: "x.detach() inside a compiled function; tested in test_compile_rules.py",
}
"""The rows of the table that no user calls: they have no row of cases of their own."""

BY_NAME: dict[str, OpCase] = {case.name: case for case in CASES}
