"""The sigmoid exercise's held-out checks: the teacher's, run by `vjpgrad course grade`, never handed out."""

import math

from hypothesis import example, given
from hypothesis import strategies as st


@example(2.0)
@given(st.floats(-5, 5))
def test_sigmoid_is_symmetric(student, x):
    """sigmoid(x) + sigmoid(-x) is 1."""
    value_type, sigmoid = student("engine").Value, student("sigmoid").sigmoid
    total = sigmoid(value_type(x)).data + sigmoid(value_type(-x)).data
    assert math.isclose(total, 1.0), f"sigmoid({x!r}) + sigmoid({-x!r}) is {total!r}, not 1"
