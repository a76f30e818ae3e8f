"""gradcheck: True for correct gradients, an AssertionError with a table otherwise."""

from __future__ import annotations

import math

import pytest

from vjpgrad import Vector, gradcheck


def test_correct_gradients_pass() -> None:
    assert gradcheck(lambda a, b: (a * b).sin() + a.exp() / b, [0.5, 2.0]) is True
    assert gradcheck(lambda x: x.log(), 3.0) is True


def test_vector_outputs_check_every_row_of_the_jacobian() -> None:
    assert gradcheck(lambda a, b: Vector([a * b, a + b, a.tanh()]), [0.3, 0.7])


def test_a_kink_inside_eps_is_reported_with_a_table() -> None:
    # relu'(0) = 0 by convention; central differences straddle the kink and see 1/2 x b = 1
    with pytest.raises(AssertionError) as failure:
        gradcheck(lambda a, b: a.relu() * b, [0.0, 2.0])
    lines = str(failure.value).splitlines()
    assert lines[0].startswith("gradcheck failed: analytic gradient differs from central differences")
    assert lines[1].split() == ["input", "value", "analytic", "numeric", "difference"]
    assert lines[2].split() == ["0", "0", "0", "1", "-1", "<--", "differs"]
    assert lines[3].split() == ["1", "2", "0", "0", "0", "ok"]


def test_a_vector_output_names_the_output_row() -> None:
    with pytest.raises(AssertionError) as failure:
        gradcheck(lambda a: Vector([a * 2, a.relu()]), [0.0])
    lines = str(failure.value).splitlines()
    assert lines[1].split()[:2] == ["output", "input"]
    assert lines[2].split() == ["0", "0", "0", "2", "2", "0", "ok"]
    assert lines[3].split()[-2:] == ["<--", "differs"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"eps": 0.0}, "eps must be a positive number"),
        ({"atol": -1.0}, "atol must be a non-negative number"),
        ({"rtol": math.nan}, "rtol must be a non-negative number"),
    ],
)
def test_bad_tolerances_are_value_errors(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gradcheck(lambda x: x, [1.0], **kwargs)


def test_bad_inputs_are_type_errors() -> None:
    with pytest.raises(TypeError, match=r"inputs\[1\] must be a real number, got str"):
        gradcheck(lambda a, b: a * b, [1.0, "2"])  # type: ignore[list-item]
