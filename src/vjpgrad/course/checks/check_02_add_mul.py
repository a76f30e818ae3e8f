"""Exercise 2 (engine.py): + and * record the graph, and their closures hand back the gradient.

The same generated graphs are built in the student's engine and in vjpgrad; the closures are
called in vjpgrad's order, so that this exercise is checked before the student has a backward().
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given

from vjpgrad.course.twins import SMALL, Instruction, Program, Twin, programs


@pytest.fixture(scope="session")
def engine(student: Any) -> Any:
    return student("engine")


@example(SMALL)
@given(programs(("+", "*")))
def test_plus_and_times_compute_the_number_and_record_their_operands(engine: Any, program: Program) -> None:
    """+ and * compute the number and record their operands."""
    Twin(program, engine.Value).check_forward()


@example(SMALL)
@given(programs(("+", "*")))
def test_each_closure_hands_upstream_times_local_derivative_to_its_operands(engine: Any, program: Program) -> None:
    """Each closure hands out.grad times the local derivative to its operands."""
    Twin(program, engine.Value).check_closures()


@pytest.mark.parametrize("op", ["+", "*"])
def test_a_node_used_twice_receives_both_shares(engine: Any, op: str) -> None:
    """A value used twice in one {op} receives both shares."""
    program = Program((("a", 1.5),), (Instruction("t1", op, ("a", "a")),))  # a + a, a * a
    Twin(program, engine.Value).check_closures()
