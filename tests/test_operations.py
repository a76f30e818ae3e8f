"""Each operation of the table: its value at the IEEE-754 edges, its derivative there (PyTorch's
conventions) and against central finite differences on generated inputs, and the module functions.
"""

from __future__ import annotations

import fractions
import math
import operator
from collections.abc import Callable

import pytest
from _helpers import bits, central_difference, close, same
from hypothesis import given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector, explain, gradients
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported

inf, nan = math.inf, math.nan


def derivative(op: Callable[[Value], Value], x: float) -> float:
    v = Value(x)
    op(v).backward()
    return v.grad


def value_of(op: Callable[[Value], Value], x: float) -> float:
    return op(Value(x)).data


def finite(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


# ---- derivatives against central finite differences ----------------------------------------------


# (name, operation, domain where it is smooth and finite differences are well conditioned)
UNARY = [
    ("neg", lambda v: -v, finite(-1e3, 1e3)),
    ("abs", abs, finite(0.01, 1e3) | finite(-1e3, -0.01)),
    ("exp", Value.exp, finite(-30, 30)),
    ("log", Value.log, finite(1e-3, 1e6)),
    ("sqrt", Value.sqrt, finite(1e-3, 1e6)),
    ("sin", Value.sin, finite(-100, 100)),
    ("cos", Value.cos, finite(-100, 100)),
    ("tan", Value.tan, finite(-1.4, 1.4)),
    ("tanh", Value.tanh, finite(-10, 10)),
    ("sigmoid", Value.sigmoid, finite(-20, 20)),
    ("relu", Value.relu, finite(0.01, 1e3) | finite(-1e3, -0.01)),
    ("reciprocal", Value.reciprocal, finite(0.01, 1e3) | finite(-1e3, -0.01)),
    ("square", lambda v: v**2, finite(-1e3, 1e3)),
    ("cube", lambda v: v**3, finite(-100, 100)),
    ("power 2.5", lambda v: v**2.5, finite(1e-2, 100)),
    ("power -1.5", lambda v: v**-1.5, finite(1e-2, 100)),
    ("power 0.5", lambda v: v**0.5, finite(1e-2, 100)),
    ("power -0.5", lambda v: v**-0.5, finite(1e-2, 100)),
    ("power -2", lambda v: v**-2, finite(1e-1, 100)),
    ("2 ** x", lambda v: 2**v, finite(-30, 30)),
    ("3 - x", lambda v: 3 - v, finite(-1e3, 1e3)),
    ("3 / x", lambda v: 3 / v, finite(0.01, 1e3) | finite(-1e3, -0.01)),
    ("x / 4", lambda v: v / 4, finite(-1e3, 1e3)),
    ("x * 5", lambda v: v * 5, finite(-1e3, 1e3)),
    ("5 * x", lambda v: 5 * v, finite(-1e3, 1e3)),
    ("x + 7", lambda v: v + 7, finite(-1e3, 1e3)),
    ("7 + x", lambda v: 7 + v, finite(-1e3, 1e3)),
    ("x - 7", lambda v: v - 7, finite(-1e3, 1e3)),
]


@pytest.mark.parametrize(("name", "op", "domain"), UNARY, ids=[u[0] for u in UNARY])
@given(data=st.data())
def test_derivative_matches_central_differences(
    name: str, op: Callable[[Value], Value], domain: st.SearchStrategy[float], data: st.DataObject
) -> None:
    x = data.draw(domain, label="x")
    analytic = derivative(op, x)
    numeric = central_difference(lambda t: value_of(op, t), x)
    assert close(analytic, numeric, rel=1e-4, abs_tol=1e-6), (name, x, analytic, numeric)


BINARY = [
    ("+", operator.add, finite(-1e3, 1e3), finite(-1e3, 1e3)),
    ("-", operator.sub, finite(-1e3, 1e3), finite(-1e3, 1e3)),
    ("*", operator.mul, finite(-1e3, 1e3), finite(-1e3, 1e3)),
    ("/", operator.truediv, finite(-1e3, 1e3), finite(0.1, 1e3) | finite(-1e3, -0.1)),
    ("**", operator.pow, finite(0.1, 10), finite(-3, 3)),
]


@pytest.mark.parametrize(("name", "op", "xs", "ys"), BINARY, ids=[b[0] for b in BINARY])
@given(data=st.data())
def test_binary_derivatives_match_central_differences(
    name: str,
    op: Callable[[Value, Value], Value],
    xs: st.SearchStrategy[float],
    ys: st.SearchStrategy[float],
    data: st.DataObject,
) -> None:
    x, y = data.draw(xs, label="x"), data.draw(ys, label="y")
    a, b = Value(x), Value(y)
    op(a, b).backward()
    assert close(a.grad, central_difference(lambda t: op(Value(t), Value(y)).data, x))
    assert close(b.grad, central_difference(lambda t: op(Value(x), Value(t)).data, y))


# ---- forward values at the IEEE-754 edges --------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (lambda: Value(0.0).log(), -inf),
        (lambda: Value(-1.0).log(), nan),
        (lambda: Value(1.0) / 0, inf),
        (lambda: Value(-1.0) / 0, -inf),
        (lambda: Value(0.0) / 0, nan),
        (lambda: 1 / Value(0.0), inf),
        (lambda: 1 / Value(-0.0), -inf),
        (lambda: Value(-1.0).sqrt(), nan),
        (lambda: Value(1000.0).exp(), inf),
        (lambda: Value(1e200) * 1e200, inf),
        (lambda: Value(10.0) ** 400, inf),
        (lambda: Value(-10.0) ** 401, -inf),
        (lambda: Value(-8.0) ** (1 / 3), nan),
        (lambda: Value(0.0) ** -1, inf),
        (lambda: Value(-inf) ** 0.5, nan),
        (lambda: Value(inf).sin(), nan),
        (lambda: Value(-1000.0).sigmoid(), 0.0),
        (lambda: Value(nan).relu(), nan),
    ],
    ids=[
        "log(0)",
        "log(-1)",
        "1/0",
        "-1/0",
        "0/0",
        "1/x at 0",
        "1/x at -0",
        "sqrt(-1)",
        "exp overflow",
        "mul overflow",
        "pow overflow",
        "odd pow overflow",
        "fractional pow of negative",
        "0**-1",
        "(-inf)**0.5 is sqrt",
        "sin(inf)",
        "sigmoid(-1000)",
        "relu(nan)",
    ],
)
def test_forward_follows_ieee_754_and_never_raises(expression: Callable[[], Value], expected: float) -> None:
    assert close(expression().data, expected)


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


def test_relu_of_minus_zero_is_minus_zero_as_in_pytorch() -> None:
    assert same(Value(-0.0).relu().data, -0.0)
    assert same(vjpgrad.relu(-0.0), -0.0)


# ---- derivatives at the edges: PyTorch's conventions ---------------------------------------------


@pytest.mark.parametrize(
    ("op", "x", "expected"),
    [
        (Value.log, 0.0, inf),  # d/dc log(c) at 0
        (Value.log, -2.0, -0.5),  # 1/x even where log is nan
        (abs, 0.0, 0.0),
        (abs, nan, 0.0),
        (Value.relu, 0.0, 0.0),
        (Value.sqrt, 0.0, inf),
        (lambda v: v**2, inf, inf),
        (lambda v: v**0, 0.0, 0.0),  # masked: not 0 * 0**-1 = nan
        (lambda v: 0**v, 2.0, 0.0),  # d/db a**b = 0 where a = 0 <= b
        (lambda v: Value(0.0, requires_grad=False) ** v, 0.0, 0.0),
        (Value.reciprocal, 0.0, -inf),
        (Value.exp, 1000.0, inf),
    ],
    ids=[
        "log'(0)",
        "log'(-2)",
        "abs'(0)",
        "abs'(nan)",
        "relu'(0)",
        "sqrt'(0)",
        "square'(inf)",
        "pow0'",
        "0**b wrt b",
        "0**b wrt b (Value base)",
        "recip'(0)",
        "exp' overflow",
    ],
)
def test_derivatives_follow_pytorch_conventions_at_the_edges(
    op: Callable[[Value], Value], x: float, expected: float
) -> None:
    assert close(derivative(op, x), expected)


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


@given(st.floats(-25, 25) | st.sampled_from([0.0, -0.0, 1e-200, 0.8813735870195429, 19.0, 400.0]))
def test_tanhs_derivative_is_one_minus_the_square_rounded_once(x: float) -> None:
    # as PyTorch's tanh_backward kernel computes it (a fused multiply-add): 1 - r*r exactly,
    # then one rounding; with r*r rounded first the last bits (or all of them, near r = 1) go
    v = Value(x)
    r = v.tanh()
    r.backward()
    assert v.grad == float(1 - fractions.Fraction(r.data) ** 2)


# ---- max: of any number of operands (vjpgrad.nn.functional.max) ----------------------------------


def test_max_by_hand() -> None:
    a, b, c = Value(1.0), Value(3.0), Value(2.0)
    m = F.max([a, b, c])
    assert m.data == 3.0
    m.backward(5.0)
    assert (a.grad, b.grad, c.grad) == (0.0, 5.0, 0.0)


def test_max_splits_the_gradient_evenly_among_ties() -> None:
    a, b, c = Value(3.0), Value(1.0), Value(3.0)
    F.max([a, b, c]).backward(1.0)
    assert (a.grad, b.grad, c.grad) == (0.5, 0.0, 0.5)
    xs = [Value(2.0) for _ in range(3)]
    F.max(xs).backward(3.0)
    assert [x.grad for x in xs] == [1.0, 1.0, 1.0]


def test_max_with_nan_is_nan_and_the_gradient_goes_to_the_nans() -> None:
    a, b, c = Value(1.0), Value(nan), Value(nan)
    m = F.max([a, b, c])
    assert math.isnan(m.data)
    m.backward(4.0)
    assert (a.grad, b.grad, c.grad) == (0.0, 2.0, 2.0)
    first = F.max([Value(nan), Value(5.0)])
    assert math.isnan(first.data)


def test_max_of_one_element_and_of_constants() -> None:
    x = Value(-2.0)
    F.max([x]).backward()
    assert x.grad == 1.0
    y = Value(1.0)
    m = F.max([y, 4.0, Value(2.0, requires_grad=False)])
    assert m.data == 4.0
    m.backward()  # the constant wins: nothing reaches y
    assert y.grad == 0.0
    e = explain(F.max([y, 0.5, Value(0.0, requires_grad=False)]))
    assert y in e.gradients
    assert len(e.gradients) == 2  # y and the output: the pass reaches no constant


def test_max_of_a_signed_zero_tie_is_the_first_operand() -> None:
    assert math.copysign(1.0, F.max([-0.0, 0.0]).data) == -1.0
    assert math.copysign(1.0, F.max([0.0, -0.0]).data) == 1.0
    assert math.copysign(1.0, F.max([0.0, -0.0, 0.0]).data) == 1.0


def test_max_through_the_differentiable_pass_and_explain() -> None:
    a, b = Value(2.0), Value(2.0)
    c = Value(1.0)
    m = F.max([a * 1.0, b, c])
    ga, gb, gc = gradients(m, [a, b, c], create_graph=True)
    assert (ga.data, gb.data, gc.data) == (0.5, 0.5, 0.0)
    e = explain(m, names={"a": a, "b": b, "c": c})
    assert [(s.operand, s.local, s.contribution) for s in e.steps if s.op == "max"] == [
        ("t1", 0.5, 0.5),
        ("b", 0.5, 0.5),
        ("c", 0.0, 0.0),
    ]
    assert e.gradients[a] == 0.5


def test_max_under_anomaly_mode_and_compiled() -> None:
    def f(x: Value, y: Value) -> Value:
        return F.max([x * x, y, 1.0])

    for point, expected in [((3.0, 2.0), (6.0, 0.0)), ((0.5, 2.0), (0.0, 1.0)), ((1.0, 1.0), (2 / 3, 1 / 3))]:
        for run in (f, vjpgrad.compile(f)):
            x, y = Value(point[0]), Value(point[1])
            with vjpgrad.detect_anomaly():
                run(x, y).backward()
            assert (x.grad, y.grad) == expected


# ---- the module functions: vjpgrad.exp and the others --------------------------------------------


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu"])
def test_module_functions_take_numbers_values_and_vectors(name: str) -> None:
    function = getattr(vjpgrad, name)
    method = getattr(Value, name)
    assert function(0.7) == method(Value(0.7)).data
    assert function(2) == method(Value(2.0)).data
    value = function(Value(0.7))
    assert isinstance(value, Value)
    assert value.op == name
    vector = function(vjpgrad.Vector([0.3, 0.9]))
    assert isinstance(vector, vjpgrad.Vector)
    assert vector.data == [method(Value(0.3)).data, method(Value(0.9)).data]


def test_module_function_refuses_other_types() -> None:
    with pytest.raises(TypeError, match=r"log\(\) takes a number, a Value or a Vector, got str"):
        vjpgrad.log("e")  # type: ignore[call-overload]


def test_log_of_zero_as_a_number_is_minus_inf_not_an_exception() -> None:
    assert vjpgrad.log(0) == -inf
