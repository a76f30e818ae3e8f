"""micrograd's habits carry over: its notebooks' graph-drawing code runs on vjpgrad's Values.

micrograd's ``trace`` and ``draw_dot`` (and Eureka Labs' copy of them) walk ``v._prev`` (a
set of parents) and draw ``v._op`` (the operation's symbol), ``v.data``, ``v.grad`` and
``v.label``. The functions below are written the way that code is written, here, so the test
holds vjpgrad to the attributes such code reads.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from vjpgrad import Value


def trace(root: Value) -> tuple[set[Value], set[tuple[Value, Value]]]:
    """Every node and edge behind ``root``, found through ``_prev`` as micrograd's notebooks do."""
    nodes: set[Value] = set()
    edges: set[tuple[Value, Value]] = set()

    def build(v: Value) -> None:
        if v not in nodes:
            nodes.add(v)
            for child in v._prev:
                edges.add((child, v))
                build(child)

    build(root)
    return nodes, edges


def draw_dot(root: Value) -> Any:
    """A graphviz Digraph of ``root``'s graph: a record per Value, an oval per operation."""
    graphviz = pytest.importorskip("graphviz")
    dot = graphviz.Digraph(format="svg", graph_attr={"rankdir": "LR"})
    nodes, edges = trace(root)
    for n in nodes:
        uid = str(id(n))
        dot.node(name=uid, label="{ %s | data %.4f | grad %.4f }" % (n.label, n.data, n.grad), shape="record")  # noqa: UP031 - written as micrograd's notebooks write it
        if n._op:
            dot.node(name=uid + n._op, label=n._op)
            dot.edge(uid + n._op, uid)
    for n1, n2 in edges:
        dot.edge(str(id(n1)), str(id(n2)) + n2._op)
    return dot


def example() -> tuple[Value, Value, Value, Value]:
    """micrograd's README example, a little shorter."""
    a = Value(2.0, label="a")
    b = Value(-3.0, label="b")
    c = a * b
    c.label = "c"
    d = (c + a.tanh()).relu()
    d.label = "d"
    d.backward()
    return a, b, c, d


def test_trace_finds_every_node_and_edge_through_prev() -> None:
    a, b, c, d = example()
    nodes, edges = trace(d)
    assert {n.label for n in nodes if n.label} == {"a", "b", "c", "d"}
    assert len(nodes) == 6  # a, b, c, tanh(a), c + tanh(a) and d, the relu of it
    assert (a, c) in edges
    assert (b, c) in edges


def test_ops_are_symbols_and_leaves_have_none() -> None:
    a, b, c, d = example()
    assert (a._op, c._op, d._op) == ("", "*", "relu")
    assert a._prev == set()
    assert c._prev == {a, b}


def test_micrograds_draw_dot_runs_on_vjpgrad_values() -> None:
    a, _, _, d = example()
    dot = draw_dot(d)
    source = dot.source
    assert f"{{ a | data 2.0000 | grad {a.grad:.4f} }}" in source
    assert source.count("shape=record") == 6
    assert {"*", "+", "tanh", "relu"} <= set(re.findall(r'label=["]?([*+a-z]+)["]?[\]\s]', source))
