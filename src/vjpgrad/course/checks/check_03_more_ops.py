"""Exercise 3 (engine.py): **, exp, log, tanh and relu, each with its local derivative."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from vjpgrad.course.twins import Instruction, Program, Twin, chained, programs, smallest

OPERATIONS = ["**", "exp", "log", "tanh", "relu"]


@pytest.fixture(scope="session")
def engine(student: Any) -> Any:
    return student("engine")


@pytest.mark.parametrize("op", OPERATIONS)
def test_the_operation_computes_its_number_and_records_its_operand(engine: Any, op: str) -> None:
    """{op} computes its number and records its operand."""
    Twin(smallest(op), engine.Value).check_forward()  # first alone, then in generated graphs

    @given(programs(("+", "*", op), must_use=op))
    def in_any_graph(program: Program) -> None:
        Twin(program, engine.Value).check_forward()

    in_any_graph()


@pytest.mark.parametrize("op", OPERATIONS)
def test_the_operation_hands_upstream_times_its_local_derivative(engine: Any, op: str) -> None:
    """{op} hands out.grad times its local derivative to its operand."""
    Twin(smallest(op), engine.Value).check_closures()  # first alone, then where out.grad is not 1, then anywhere
    Twin(chained(op), engine.Value).check_closures()

    @given(programs(("+", "*", op), must_use=op))
    def in_any_graph(program: Program) -> None:
        Twin(program, engine.Value).check_closures()

    in_any_graph()


def test_relu_hands_nothing_back_at_zero(engine: Any) -> None:
    """relu hands nothing back at 0."""
    Twin(Program((("x", 0.0),), (Instruction("t1", "relu", ("x",)),)), engine.Value).check_closures()
