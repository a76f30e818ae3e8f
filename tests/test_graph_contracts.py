"""The graph module's helpers keep their length contracts: one seed per output, one saved
value per operand. A mismatch is a bug in the caller, and it must raise rather than silently
drop seeds or edges (which would give wrong gradients without a word)."""

from __future__ import annotations

import pytest

from vjpgrad import Value
from vjpgrad.core import backward as _backward
from vjpgrad.core import graph as _graph
from vjpgrad.core import ops as _ops


def test_seed_takes_one_seed_per_output() -> None:
    x = Value(1.0)
    y = x * 2.0
    with _graph.pass_lock:
        _graph.reached([y])
        _graph.seed([y], [3.0])
        assert _graph.cotangent(y) == 3.0
        _graph.reached([y])
        with pytest.raises(ValueError, match="zip"):
            _graph.seed([y], [1.0, 2.0])
        _graph.reached([y, y])
        _graph.seed([y, y], [1.0, 2.0])  # an output listed twice gets both
        assert _graph.cotangent(y) == 3.0


def test_the_differentiable_pass_takes_one_seed_per_output() -> None:
    x = Value(1.0)
    y = x * 2.0
    with pytest.raises(ValueError, match="zip"):
        _backward.differentiable_reverse_pass([y], [1.0, 2.0])
    with pytest.raises(ValueError, match="zip"):
        _backward.differentiable_reverse_pass([y, y], [1.0])
    grads = _backward.differentiable_reverse_pass([y, y], [1.0, 2.0])
    assert float(grads[x]) == 6.0  # (1 + 2) * 2


def test_edges_of_a_node_need_one_saved_value_per_operand() -> None:
    a, b = Value(1.0), Value(2.0)
    good = _graph.make(Value, 2.0, _ops.MAX, (a, b), (_ops.MASKED, 1.0), None, None)
    assert _graph.edges(good) == [(0, a, _ops.MASKED), (1, b, 1.0)]
    broken = _graph.make(Value, 2.0, _ops.MAX, (a, b), (1.0,), None, None)
    with pytest.raises(ValueError, match="zip"):
        _graph.edges(broken)
