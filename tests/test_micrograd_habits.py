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


# ---- micrograd's constructor, Value(data, _children, _op) ----------------------------------------------


@pytest.mark.parametrize(
    ("children", "op", "instead"),
    [
        (lambda a, b: (a, b), "+", "write a + b instead"),
        (lambda a, b: [a, b], "*", "write a * b instead"),
        (lambda a, b: {a}, "tanh", "write a.tanh() instead"),
        (lambda a, b: (a,), "**2", "write a**2 instead"),
        (lambda a, b: (a, b), "", "write a + b, a * b, a.tanh()... instead"),
        (lambda a, b: (), "", "write Value(data) instead"),
    ],
)
def test_micrograds_children_argument_is_explained_with_what_to_write(children: Any, op: str, instead: str) -> None:
    a, b = Value(2.0), Value(3.0)
    with pytest.raises(TypeError) as caught:
        Value(5.0, children(a, b), op)  # micrograd's Value(data, _children, _op)
    message = str(caught.value)
    assert "micrograd's Value(data, _children, _op)" in message
    assert (
        "vjpgrad records the children itself (there is no _children argument: the operators build the graph)" in message
    )
    assert instead in message
    assert "requires_grad must be a bool" not in message


def test_a_second_argument_that_is_no_collection_of_values_is_still_a_bad_requires_grad() -> None:
    with pytest.raises(TypeError, match="requires_grad must be a bool, got tuple"):
        Value(5.0, (1.0, 2.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="requires_grad must be a bool, got str"):
        Value(5.0, "yes")  # type: ignore[arg-type]


def test_label_is_none_until_one_is_given_as_the_docs_say() -> None:
    # micrograd's lecture Value has label='' and its draw_dot prints n.label; vjpgrad keeps None (documented,
    # typed str | None): docs/coming-from-micrograd.md says to write n.label or '' in that draw_dot
    assert Value(1.0).label is None
    assert "{ %s | data %.4f }" % (Value(1.0).label or "", 1.0) == "{  | data 1.0000 }"  # noqa: UP031 - micrograd's
