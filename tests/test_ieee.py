"""Forward values and derivatives at the IEEE-754 edges, torch-free.

Every expected value below is written from IEEE-754 (and C99 Annex F for ``pow``, ``log``,
``sqrt`` and the trigonometric functions), not read off the code: a mistake in the float
layer (``_floats``) shows as a wrong row. Signs of zeros and infinities are checked, and nan
is compared as nan.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

import pytest

import vjpgrad
from vjpgrad import Value, Vector

inf, nan = math.inf, math.nan


def same(actual: float, expected: float) -> bool:
    """Equal as IEEE values, nan equal to nan, and the sign of a zero counted."""
    if math.isnan(expected):
        return math.isnan(actual)
    return actual == expected and math.copysign(1.0, actual) == math.copysign(1.0, expected)


def bits(x: float) -> int:
    return int(struct.unpack("<q", struct.pack("<d", x))[0])


# x / 0 for both zeros: a nonzero finite or infinite x gives an infinity signed by the signs of
# x and of the zero; 0 / 0 and nan / 0 are nan (IEEE-754, "division by zero" and "invalid").
DIVISION_BY_ZERO = [
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
]


@pytest.mark.parametrize(("x", "zero", "expected"), DIVISION_BY_ZERO)
def test_division_by_a_signed_zero(x: float, zero: float, expected: float) -> None:
    assert same((Value(x) / Value(zero)).data, expected)
    assert same((Value(x) / zero).data, expected)
    assert same((Vector([x]) / zero).data[0], expected)


@pytest.mark.parametrize(
    ("zero", "expected"),
    [(0.0, inf), (-0.0, -inf)],
)
def test_reciprocal_of_a_signed_zero(zero: float, expected: float) -> None:
    assert same(Value(zero).reciprocal().data, expected)
    assert same((1 / Value(zero)).data, expected)  # a number over a Value is number * reciprocal


# Division that does not divide by zero is Python's own, which is IEEE's
@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [(1.0, 4.0, 0.25), (-3.0, 2.0, -1.5), (0.0, -5.0, -0.0), (inf, inf, nan), (1.0, -inf, -0.0), (nan, 1.0, nan)],
)
def test_division_by_a_nonzero(x: float, y: float, expected: float) -> None:
    assert same((Value(x) / Value(y)).data, expected)


# The derivatives of x / y where y is a zero: d/dx = 1 / y, d/dy = -(x / y) / y
@pytest.mark.parametrize(
    ("x", "zero", "dx", "dy"),
    [
        (1.0, 0.0, inf, -inf),  # -(inf / +0) = -inf
        (1.0, -0.0, -inf, -inf),  # -(-inf / -0) = -inf
        (-1.0, 0.0, inf, inf),
        (0.0, 0.0, inf, nan),
    ],
)
def test_the_derivatives_of_a_division_by_zero(x: float, zero: float, dx: float, dy: float) -> None:
    a, b = Value(x), Value(zero)
    (a / b).backward()
    assert same(a.grad, dx)
    assert same(b.grad, dy)


# C99 Annex F pow: special cases the float layer must keep
POWER = [
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
]


@pytest.mark.parametrize(("x", "y", "expected"), POWER)
def test_power_with_a_value_exponent(x: float, y: float, expected: float) -> None:
    assert same((Value(x) ** Value(y)).data, expected)
    assert same((x ** Value(y)).data, expected)


# x ** k with a constant k is computed as PyTorch computes it: k = 0.5 is sqrt, -0.5 is
# 1 / sqrt, -1 is 1 / x, 2 is x * x, 3 is x * x * x, -2 is 1 / (x * x); the rest is pow.
POWER_SCALAR = [
    (-inf, 0.5, nan),  # sqrt(-inf); C's pow would give inf
    (-inf, 0.25, inf),  # pow(-inf, 0.25) = +inf: the general path
    (-0.0, 0.5, -0.0),  # sqrt(-0) = -0, pow(-0, 0.5) would be +0
    (-0.0, -0.5, -inf),  # 1 / sqrt(-0)
    (-4.0, -0.5, nan),
    (4.0, -0.5, 0.5),
    (-0.0, -1.0, -inf),  # 1 / -0
    (0.0, -1.0, inf),
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
    (-8.0, 1.0 / 3.0, nan),
    (2.0, 10.0, 1024.0),
    (0.0, -3.0, inf),
    (-0.0, -3.0, -inf),
]


@pytest.mark.parametrize(("x", "k", "expected"), POWER_SCALAR)
def test_power_with_a_number_exponent(x: float, k: float, expected: float) -> None:
    assert same((Value(x) ** k).data, expected)


def test_a_cube_is_rounded_twice_as_x_times_x_times_x() -> None:
    # x * x * x and C's pow(x, 3) differ in the last bit for some x; the cube must be the former
    differing = [x for x in (1.0 + k / 97.0 for k in range(200)) if (x * x) * x != math.pow(x, 3.0)]
    assert differing, "no x where the two roundings differ: pick other inputs"
    for x in differing[:5]:
        assert bits((Value(x) ** 3).data) == bits((x * x) * x)
        assert bits((Value(x) ** 3.0).data) == bits((x * x) * x)


def test_x_to_the_minus_1_is_the_reciprocal_not_cs_pow() -> None:
    x = 5.288940500365528e93  # C's pow(x, -1) rounds differently from 1 / x here
    assert math.pow(x, -1.0) != 1.0 / x
    assert bits((Value(x) ** -1).data) == bits(1.0 / x)
    v = Value(x)
    (v**-1).backward()
    assert bits(v.grad) == bits(-1.0 * (1.0 / (x * x)))  # -1 * x ** -2, with x ** -2 as 1 / (x * x)


def test_a_reciprocal_square_is_one_over_x_times_x() -> None:
    differing = [x for x in (1.0 + k / 89.0 for k in range(300)) if 1.0 / (x * x) != math.pow(x, -2.0)]
    assert differing, "no x where the two roundings differ: pick other inputs"
    for x in differing[:5]:
        assert bits((Value(x) ** -2).data) == bits(1.0 / (x * x))


FUNCTIONS: list[tuple[str, float, float]] = [
    ("exp", 1000.0, inf),  # overflow
    ("exp", -inf, 0.0),
    ("exp", inf, inf),
    ("exp", nan, nan),
    ("exp", 0.0, 1.0),
    ("log", 0.0, -inf),
    ("log", -0.0, -inf),
    ("log", -1.0, nan),
    ("log", -inf, nan),
    ("log", inf, inf),
    ("log", 1.0, 0.0),
    ("log", nan, nan),
    ("sqrt", -1.0, nan),
    ("sqrt", -0.0, -0.0),
    ("sqrt", 0.0, 0.0),
    ("sqrt", inf, inf),
    ("sqrt", -inf, nan),
    ("sqrt", 4.0, 2.0),
    ("sin", inf, nan),
    ("sin", -inf, nan),
    ("sin", -0.0, -0.0),
    ("cos", inf, nan),
    ("cos", -inf, nan),
    ("cos", 0.0, 1.0),
    ("tan", inf, nan),
    ("tan", -inf, nan),
    ("tan", -0.0, -0.0),
    ("tanh", inf, 1.0),
    ("tanh", -inf, -1.0),
    ("tanh", -0.0, -0.0),
    ("sigmoid", inf, 1.0),
    ("sigmoid", -inf, 0.0),  # 1 / (1 + exp(inf)) = 1 / inf
    ("sigmoid", 0.0, 0.5),
    ("sigmoid", -1000.0, 0.0),
    ("sigmoid", nan, nan),
    ("relu", -1.0, 0.0),
    ("relu", 0.0, 0.0),
    ("relu", 2.0, 2.0),
    ("relu", nan, nan),
    ("relu", inf, inf),
    ("relu", -inf, 0.0),
]


@pytest.mark.parametrize(("name", "x", "expected"), FUNCTIONS)
def test_functions_at_the_edges(name: str, x: float, expected: float) -> None:
    assert same(getattr(Value(x), name)().data, expected)
    assert same(getattr(vjpgrad, name)(x), expected)  # the module function on a number
    assert same(getattr(Vector([x]), name)().data[0], expected)


def test_abs_and_neg_keep_ieee_signs() -> None:
    assert same(abs(Value(-0.0)).data, 0.0)
    assert same(abs(Value(-inf)).data, inf)
    assert same((-Value(0.0)).data, -0.0)
    assert same((-Value(nan)).data, nan)


# Derivatives at the edges (PyTorch's conventions, which SPEC §2 lists)
DERIVATIVES: list[tuple[str, Callable[[Value], Value], float, float]] = [
    ("abs at 0", abs, 0.0, 0.0),
    ("abs at -0", abs, -0.0, 0.0),
    ("abs at nan", abs, nan, 0.0),
    ("abs at -2", abs, -2.0, -1.0),
    ("abs at 3", abs, 3.0, 1.0),
    ("relu at 0", Value.relu, 0.0, 0.0),
    ("relu at -1", Value.relu, -1.0, 0.0),
    ("relu at 2", Value.relu, 2.0, 1.0),
    ("relu at nan", Value.relu, nan, 1.0),  # out = nan is not <= 0: g passes
    ("sqrt at 0", Value.sqrt, 0.0, inf),
    ("log at 0", Value.log, 0.0, inf),
    ("log at -1", Value.log, -1.0, -1.0),  # 1/x even where the forward is nan
    ("log at -0", Value.log, -0.0, -inf),
    ("exp at 1000", Value.exp, 1000.0, inf),
    ("tanh at inf", Value.tanh, inf, 0.0),
    ("sigmoid at -inf", Value.sigmoid, -inf, 0.0),
    ("sigmoid at 0", Value.sigmoid, 0.0, 0.25),
    ("reciprocal at 0", Value.reciprocal, 0.0, -inf),
    ("reciprocal at 2", Value.reciprocal, 2.0, -0.25),
    ("x**0 at nan", lambda v: v**0, nan, 0.0),  # masked: exactly 0 whatever x is
    ("x**0 at 0", lambda v: v**0, 0.0, 0.0),
    ("x**0.5 at 0", lambda v: v**0.5, 0.0, inf),
    ("x**2 at -3", lambda v: v**2, -3.0, -6.0),
    ("x**-1 at 2", lambda v: v**-1, 2.0, -0.25),
    ("x**1 at nan", lambda v: v**1, nan, 1.0),  # 1 * x ** 0 = 1
    ("2**x at 3", lambda v: 2**v, 3.0, 8.0 * math.log(2.0)),
    ("0**x at 2", lambda v: 0**v, 2.0, 0.0),  # d/db a**b = 0 where a = 0 and b >= 0
    ("0**x at 0", lambda v: 0**v, 0.0, 0.0),
]


@pytest.mark.parametrize(("name", "op", "x", "expected"), DERIVATIVES, ids=[d[0] for d in DERIVATIVES])
def test_derivatives_at_the_edges(name: str, op: Callable[[Value], Value], x: float, expected: float) -> None:
    v = Value(x)
    op(v).backward()
    assert same(v.grad, expected), (name, v.grad)


def test_the_exponent_derivative_where_the_base_is_zero_and_the_exponent_negative() -> None:
    # 0 ** -1 = inf; d/db = out * log(0) = inf * -inf = -inf: no mask, since b < 0
    b = Value(-1.0)
    (0.0**b).backward()
    assert same(b.grad, -inf)
    a, c = Value(0.0), Value(-1.0)
    (a**c).backward()
    assert same(c.grad, -inf)
    assert same(a.grad, -inf)  # d/da = b * a ** (b - 1) = -1 * 0 ** -2 = -inf


def test_the_base_derivative_of_a_value_power_is_masked_where_the_exponent_is_zero() -> None:
    a, b = Value(nan), Value(0.0)
    (a**b).backward()
    assert same(a.grad, 0.0)  # masked: not 0 * nan
    assert same(b.grad, nan)  # 1 * log(nan)
    a, b = Value(0.0), Value(2.0)
    (a**b).backward()
    assert same(a.grad, 0.0)  # 2 * 0 ** 1
    assert same(b.grad, 0.0)  # masked where a = 0 and b >= 0


def test_a_masked_edge_passes_exactly_zero_even_from_an_infinite_upstream_gradient() -> None:
    x = Value(-1.0)
    x.relu().backward(inf)
    assert same(x.grad, 0.0)  # not inf * 0 = nan
    y = Value(2.0)
    (y**0).backward(nan)
    assert same(y.grad, 0.0)
    z = Value(0.0)
    (z ** Value(0.0)).backward(inf)
    assert same(z.grad, 0.0)


def test_relu_of_minus_zero_is_minus_zero_as_in_pytorch() -> None:
    assert same(Value(-0.0).relu().data, -0.0)
    assert same(vjpgrad.relu(-0.0), -0.0)
