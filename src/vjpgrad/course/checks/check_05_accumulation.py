"""Exercise 5 (engine.py): a second backward() adds the same gradients again (case 4), and zero_grad.

Case 4 of the Stack Overflow answer to "Pytorch, what are the gradient arguments"
(https://stackoverflow.com/questions/43451125): y = 3a + 2b*b + log(c) at a = b = c = 1, two
passes, gives a.grad, b.grad, c.grad = 6, 8, 2: twice one pass.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given

from vjpgrad.course import expect
from vjpgrad.course.twins import SHORTCUT, SMALL, Instruction, Program, Twin, programs

EXAMPLE_4 = Program(
    (("a", 1.0), ("b", 1.0), ("c", 1.0)),
    (
        Instruction("t1", "*", (3.0, "a")),
        Instruction("t2", "*", (2.0, "b")),
        Instruction("t3", "*", ("t2", "b")),
        Instruction("t4", "+", ("t1", "t3")),
        Instruction("t5", "log", ("c",)),
        Instruction("y", "+", ("t4", "t5")),
    ),
)


@pytest.fixture(scope="session")
def engine(student: Any) -> Any:
    return student("engine")


def test_example_4_two_passes_give_6_8_2(engine: Any) -> None:
    """Case 4: two passes give a.grad, b.grad, c.grad = 6, 8, 2."""
    twin = Twin(EXAMPLE_4, engine.Value)
    twin.check_passes(2)
    grads = [twin.theirs[name].grad for name in "abc"]
    numbers = expect.floats(grads, 3, "a.grad, b.grad, c.grad", "three numbers")  # compared here, never by theirs
    assert numbers == pytest.approx([6.0, 8.0, 2.0]), f"a.grad, b.grad, c.grad are {grads}: the answer prints 6, 8, 2"


@example(SMALL)
@example(SHORTCUT)
@given(programs(("+", "*"), max_operations=8))
def test_two_passes_give_each_leaf_twice_one_pass(engine: Any, program: Program) -> None:
    """Two passes give each leaf twice the gradient of one pass."""
    Twin(program, engine.Value).check_passes(2)
    # the output may be a leaf itself: its seed of 1 is its gradient, added at each pass as any leaf's
    # (a review as a student found self.grad = 1.0 passing, where PyTorch and vjpgrad give 2)
    x = engine.Value(2.0)
    x.backward()
    x.backward()
    assert expect.floats([x.grad], 1, "x.grad", "a number")[0] == 2.0, (
        f"x = Value(2.0); x.backward(); x.backward() leaves x.grad at {x.grad!r}, not 2: x is the output and a "
        "leaf, and a leaf's gradients add up over passes, its seed of 1 too"
    )


@example(SMALL)
@given(programs(("+", "*"), max_operations=8))
def test_three_passes_give_each_leaf_three_times_one_pass(engine: Any, program: Program) -> None:
    """Three passes give each leaf three times the gradient of one pass."""
    Twin(program, engine.Value).check_passes(3)


@example(SMALL)
@given(programs(("+", "*"), max_operations=8))
def test_zero_grad_sets_every_gradient_to_0_and_the_next_pass_is_one_pass(engine: Any, program: Program) -> None:
    """zero_grad() sets every gradient to 0, and the next pass gives one pass's gradients."""
    twin = Twin(program, engine.Value)
    output = twin.theirs[program.output]
    output.backward()
    output.backward()
    output.zero_grad()
    for name in program.names:
        grad = twin.theirs[name].grad
        assert expect.number(grad) == 0, (  # compared here: an object's == would be theirs
            f"after two passes and {program.output}.zero_grad(), {name}.grad is {grad!r}, not 0: zero_grad must reach "
            f"every value the output was computed from\n  {program!r}"
        )
    twin.check_passes(1)
