"""Each operation: its value at the IEEE-754 edges, and its derivative against central
finite differences on generated inputs."""

from __future__ import annotations

import fractions
import math
import operator
from collections.abc import Callable

import pytest
from _helpers import central_difference, close
from hypothesis import given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value

inf, nan = math.inf, math.nan


def derivative(op: Callable[[Value], Value], x: float) -> float:
    v = Value(x)
    op(v).backward()
    return v.grad


def value_of(op: Callable[[Value], Value], x: float) -> float:
    return op(Value(x)).data


def finite(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


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


@given(st.floats(-25, 25) | st.sampled_from([0.0, -0.0, 1e-200, 0.8813735870195429, 19.0, 400.0]))
def test_tanhs_derivative_is_one_minus_the_square_rounded_once(x: float) -> None:
    # as PyTorch's tanh_backward kernel computes it (a fused multiply-add): 1 - r*r exactly,
    # then one rounding; with r*r rounded first the last bits (or all of them, near r = 1) go
    v = Value(x)
    r = v.tanh()
    r.backward()
    assert v.grad == float(1 - fractions.Fraction(r.data) ** 2)
