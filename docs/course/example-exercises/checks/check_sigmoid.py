"""The sigmoid exercise (sigmoid.py): sigmoid's number and gradient, against vjpgrad's."""

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import vjpgrad


def vjpgrads(x):
    """sigmoid's number and derivative at x, by vjpgrad."""
    value = vjpgrad.Value(x)
    y = 1 / (1 + vjpgrad.exp(-value))
    y.backward()
    return y.data, value.grad


def test_sigmoid_of_0_is_a_half(student):
    """sigmoid(0) is 0.5."""
    y = student("sigmoid").sigmoid(student("engine").Value(0.0))
    assert math.isclose(y.data, 0.5), f"sigmoid(Value(0.0)).data is {y.data!r}, not 0.5"


@pytest.mark.weight(3)
@example(1.5)
@given(st.floats(-5, 5))
def test_sigmoid_gives_vjpgrads_number_and_derivative(student, x):
    """sigmoid gives vjpgrad's number and derivative at any x."""
    value = student("engine").Value(x)
    y = student("sigmoid").sigmoid(value)
    y.backward()
    number, derivative = vjpgrads(x)
    assert math.isclose(y.data, number, rel_tol=1e-9), f"sigmoid({x!r}) is {y.data!r}, vjpgrad's is {number!r}"
    assert math.isclose(value.grad, derivative, rel_tol=1e-6, abs_tol=1e-12), (
        f"after sigmoid(x).backward() at x = {x!r}, x.grad is {value.grad!r}; vjpgrad's is {derivative!r}"
    )
