"""Exercise 4 (engine.py): backward() fills every gradient, in a topological order built by a loop."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given

from vjpgrad.course import expect, remote
from vjpgrad.course.twins import SHORTCUT, SMALL, Program, Twin, close, programs

LINKS = 10_000
FACTOR = 1.0001
"""Each link's factor: the chain's gradient, FACTOR ** LINKS (about 2.718), is no number a backward
that gives up could guess (1, the seed, was)."""


def _shown(x: Any) -> str:
    return repr(x) if expect.number(x) is not None else f"a {remote.type_name(x)}, not a number"


@pytest.fixture(scope="session")
def engine(student: Any) -> Any:
    return student("engine")


@example(SMALL)
@example(SHORTCUT)
@given(programs(("+", "*"), max_operations=8))
def test_backward_gives_every_node_vjpgrads_gradient(engine: Any, program: Program) -> None:
    """backward() gives every node the gradient vjpgrad gives it."""
    Twin(program, engine.Value).check_backward()


def test_a_leaf_is_its_own_output(engine: Any) -> None:
    """backward() on a leaf gives it the gradient 1."""
    x = engine.Value(2.0)
    x.backward()
    # the number itself, checked here: a comparison run on the student's object would be theirs to answer
    assert expect.number(x.grad) == 1.0, f"x = Value(2.0); x.backward() leaves x.grad = {_shown(x.grad)}: dx/dx is 1"


def test_a_chain_of_10_000_links_works_at_the_default_recursion_limit(student: Any, engine: Any) -> None:
    """backward() works on a chain of 10,000 links at Python's default recursion limit."""
    x, y = student.probe("chain", engine.Value, 1.0, FACTOR, LINKS)  # built where the student's code runs
    try:
        student.probe("at_recursion_limit", 1000, y.backward)  # Python's default, whatever ran before
    except RecursionError:
        pytest.fail(
            f"RecursionError: backward() on a chain of {LINKS:,} links went deeper than Python allows (about "
            "1,000 calls): build the topological order with a loop and a list as your own stack, not with recursion",
            pytrace=False,
        )
    expected = 1.0
    for _ in range(LINKS):
        expected = FACTOR * expected  # as the pass multiplies, link after link
    found = expect.number(x.grad)
    assert found is not None, f"y = x * {FACTOR} * {FACTOR} ... ({LINKS:,} times): x.grad is {_shown(x.grad)}"
    assert close(found, expected), (
        f"y = x * {FACTOR} * {FACTOR} ... ({LINKS:,} times): dy/dx is {FACTOR} ** {LINKS:,} = {expected!r}, yours "
        f"is {found!r}"
    )
