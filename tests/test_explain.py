"""explain: the reverse pass as data and as a table, equal to what backward does."""

from __future__ import annotations

import math

import pytest
from _helpers import Program, programs, run
from hypothesis import given
from hypothesis import strategies as st

from vjpgrad import Step, Value, Vector, explain, log


def seed_example() -> tuple[Vector, Vector, Vector, Vector]:
    a, b, c = Vector([1.0, 2.0, 3.0]), Vector([3.0, 4.0, 5.0]), Vector([6.0, 7.0, 8.0])
    return a, b, c, 3 * a + 2 * b * b + log(c)


def test_example_1_step_by_step() -> None:
    a, b, c, y = seed_example()
    e = explain(y, [0.1, 1.0, 0.0001], names={"a": a, "b": b, "c": c})
    assert e.seeds == [("y[0]", 0.1), ("y[1]", 1.0), ("y[2]", 0.0001)]
    # b[1] is used twice in t = (2 * b[1]) * b[1]: it is handed 1 x 2b = 8, then 4 x 2 = 8
    assert [(s.upstream, s.local, s.contribution) for s in e.contributions(b[1])] == [(1.0, 8.0, 8.0), (4.0, 2.0, 8.0)]
    assert e.contributions(b[1])[-1].total == 16.0
    assert e.gradients[c[0]] == 0.1 / 6
    text = str(e)
    assert text.startswith("Seeds (the v of v^T J): y[0] = 0.1, y[1] = 1, y[2] = 0.0001")
    assert "  b[1].grad += 1 x 8 + 4 x 2 = 16" in text
    assert "  c[2].grad += 0.0001 x 0.125 = 1.25e-05" in text


def test_explain_changes_no_grad_and_frees_nothing() -> None:
    a, _, _, y = seed_example()
    explain(y, [0.1, 1.0, 0.0001])
    assert a.grad.data == [0.0, 0.0, 0.0]
    y.backward([0.1, 1.0, 0.0001])  # the graph is still there
    assert a.grad.data == pytest.approx([0.3, 3.0, 0.0003])


def test_every_step_is_upstream_times_local_and_totals_add_up() -> None:
    x = Value(0.5, label="x")
    y = (x * x).sin() * x.exp()
    e = explain(y)
    running: dict[str, float] = {}
    for step in e.steps:
        assert isinstance(step, Step)
        assert step.contribution == step.upstream * step.local
        running[step.operand] = running.get(step.operand, 0.0) + step.contribution
        assert step.total == running[step.operand]
    assert e.gradients[x] == running["x"]
    assert "Nodes:" in str(e)
    assert "  t1 = x * x\n  t2 = sin(t1)\n  t3 = exp(x)\n  y = t2 * t3\n" in str(e)  # as written, left to right


@given(programs, st.floats(-3, 3))
def test_explain_totals_equal_backward_on_random_graphs(program: Program, seed: float) -> None:
    leaves, nodes = run(program, Value)
    output = nodes[-1]
    if not output.requires_grad:
        return
    e = explain(output, seed)
    output.backward(seed)
    for leaf in leaves:
        assert e.gradients.get(leaf, 0.0) == leaf.grad  # the same order of operations, so exactly equal


@given(programs, st.lists(st.floats(-3, 3), min_size=4, max_size=4))
def test_explain_totals_equal_backward_with_vector_seeds(program: Program, seeds: list[float]) -> None:
    leaves, nodes = run(program, Value)
    outputs = [node for node in nodes[-4:] if node.requires_grad]
    if not outputs:
        return
    y, v = Vector(outputs), seeds[: len(outputs)]
    e = explain(y, v)
    y.backward(v)
    for leaf in leaves:
        assert math.isclose(e.gradients.get(leaf, 0.0), leaf.grad, rel_tol=1e-12, abs_tol=1e-12)


def test_explain_refuses_what_backward_refuses() -> None:
    a = Value(1.0)
    y = a * a
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        explain(Vector([y, y]))
    with pytest.raises(ValueError, match="seed has length 1 but the output has length 2"):
        explain(Vector([y, y]), [1.0])
    with pytest.raises(TypeError, match=r"explain\(\) takes a Value or a Vector, got float"):
        explain(3.0)  # type: ignore[arg-type]
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        explain(y)


def test_explain_after_backward_says_what_to_do() -> None:
    x = Value(2.0)
    z = x * x
    z.backward()
    with pytest.raises(RuntimeError, match=r"call explain\(\) before backward\(\), or pass retain_graph=True"):
        explain(z)
    y = x * x
    y.backward(retain_graph=True)
    assert explain(y).gradients[x] == 4.0  # a retained graph explains after backward


def test_an_explanation_is_a_page_and_shows_itself_in_a_notebook() -> None:
    a = Value(3.0, label="<b>a</b>")
    e = explain(a * a)
    page = e.to_html()
    assert page.startswith("<!DOCTYPE html>")
    assert "<b>a</b>" not in page  # a label is text, never markup
    html = e._repr_html_()
    assert "<table" in html
    assert 'class="vjs-root"' in html  # the table, then the stepper
