"""Your own operation: a float function plus its derivative rule, in every feature."""

from __future__ import annotations

import math

import pytest
from _helpers import central_difference, close
from hypothesis import given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector, custom_op, grad, gradcheck, hessian


@custom_op
def softplus(x: float) -> float:
    """log(1 + e^x), stable for any x."""
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


@softplus.derivative
def _softplus_derivative(x: float | Value, out: float | Value) -> float | Value:
    return vjpgrad.sigmoid(x)


@custom_op
def logaddexp(x: float, y: float) -> float:
    """log(e^x + e^y), stable for any x and y."""
    m = max(x, y)
    return m + math.log(math.exp(x - m) + math.exp(y - m))


@logaddexp.derivative
def _logaddexp_derivative(
    x: float | Value, y: float | Value, out: float | Value
) -> tuple[float | Value, float | Value]:
    return vjpgrad.exp(x - out), vjpgrad.exp(y - out)


def test_on_numbers_it_is_the_float_function() -> None:
    assert softplus(0.0) == math.log(2.0)
    assert softplus(1000.0) == 1000.0  # no overflow
    assert logaddexp(1000.0, 1000.0) == 1000.0 + math.log(2.0)


def test_on_values_it_is_an_operation_with_its_name() -> None:
    x = Value(0.5)
    y = softplus(x)
    assert (y.op, y.parents) == ("softplus", (x,))
    y.backward()
    assert x.grad == pytest.approx(1 / (1 + math.exp(-0.5)))


@given(st.floats(-30, 30), st.floats(-30, 30))
def test_derivatives_match_central_differences(x: float, y: float) -> None:
    a, b = Value(x), Value(y)
    logaddexp(a, b).backward()
    assert close(a.grad, central_difference(lambda t: logaddexp(t, y), x))
    assert close(b.grad, central_difference(lambda t: logaddexp(x, t), y))
    assert close(grad(softplus)(x), central_difference(softplus, x))


def test_numbers_and_values_mix_in_either_order() -> None:
    b = Value(2.0)
    assert logaddexp(1.0, b).parents == (b,)
    assert logaddexp(b, 1.0).data == logaddexp(2.0, 1.0)
    (logaddexp(1.0, b) * 2).backward()
    assert b.grad == pytest.approx(2 * math.exp(2.0 - logaddexp(1.0, 2.0)))


def test_it_applies_elementwise_to_vectors_with_broadcasting() -> None:
    v = Vector([-1.0, 0.0, 1.0])
    assert softplus(v).data == [softplus(-1.0), softplus(0.0), softplus(1.0)]
    assert logaddexp(v, 0.0).data == [logaddexp(x, 0.0) for x in (-1.0, 0.0, 1.0)]
    assert logaddexp(0.0, v).data == [logaddexp(0.0, x) for x in (-1.0, 0.0, 1.0)]
    w = logaddexp(v, Vector([5.0]))
    w.backward([1.0, 1.0, 1.0])
    assert sum(v.grad.data) + 0 == pytest.approx(sum(math.exp(x - logaddexp(x, 5.0)) for x in (-1.0, 0.0, 1.0)))


def test_a_rule_written_with_vjpgrad_functions_gives_higher_orders() -> None:
    # softplus'' = sigmoid' = sigmoid (1 - sigmoid)
    s = 1 / (1 + math.exp(-0.3))
    assert grad(grad(softplus))(0.3) == pytest.approx(s * (1 - s), rel=1e-12)
    h = hessian(lambda v: logaddexp(v[0], v[1]))([0.2, -0.4])
    p = math.exp(0.2 - logaddexp(0.2, -0.4))
    assert h == [
        [pytest.approx(p * (1 - p)), pytest.approx(-p * (1 - p))],
        [pytest.approx(-p * (1 - p)), pytest.approx(p * (1 - p))],
    ]


def test_gradcheck_passes_a_correct_rule() -> None:
    assert gradcheck(lambda a, b: logaddexp(a, b) * softplus(a), [0.3, -1.2])


def test_gradcheck_catches_a_wrong_rule_and_names_the_input() -> None:
    @custom_op
    def cube(x: float) -> float:
        return x**3

    @cube.derivative
    def _wrong(x: float | Value, out: float | Value) -> float | Value:
        return 3 * x  # should be 3 * x**2

    with pytest.raises(AssertionError) as failure:
        gradcheck(cube, [2.0])
    message = str(failure.value)
    assert "gradcheck failed" in message
    assert "<-- differs" in message
    assert "6" in message  # the analytic 3 * 2
    assert "12" in message  # the numeric 3 * 2**2


def test_without_a_rule_it_works_on_numbers_but_refuses_values() -> None:
    @custom_op
    def double(x: float) -> float:
        return 2 * x

    assert double(3.0) == 6.0
    with pytest.raises(RuntimeError, match=r"double has no derivative rule yet: define one with @double\.derivative"):
        double(Value(1.0))


def test_bad_definitions_and_calls_are_type_errors() -> None:
    with pytest.raises(TypeError, match="a function of one or two numbers; three takes 3"):

        @custom_op
        def three(x: float, y: float, z: float) -> float:
            return x

    with pytest.raises(TypeError, match=r"softplus\(\) takes 1 argument, got 2"):
        softplus(1.0, 2.0)
    with pytest.raises(TypeError, match=r"softplus\(\) takes numbers, Values or Vectors, got str"):
        softplus("1")

    @custom_op
    def pair(x: float, y: float) -> float:
        return x * y

    @pair.derivative
    def _single(x: float | Value, y: float | Value, out: float | Value) -> float | Value:
        return y

    with pytest.raises(TypeError, match=r"must return a pair \(d/dx, d/dy\), got float"):
        pair(Value(1.0), Value(2.0))
