"""What compile reads of a recording (``vjpgrad.recording.recorded_graph``): the operations the
outputs need, in creation order, with the operands each hands gradient to, and the Values from outside
they read, each once, in the order read.

The reference below says it the plain way (a walk from the outputs, then a scan in creation
order); the core's reading works a column at a time and finds where an operand was made by its
creation number when nothing else was made meanwhile, by a dict of ids otherwise. Both must
give the same answer on random graphs, with and without a gap in the creation numbers, and a
copy of a node (which keeps its creation number) must count as a Value from outside.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vjpgrad import Value
from vjpgrad.core import graph
from vjpgrad.core.modes import refusing_numbers, state
from vjpgrad.nn import functional
from vjpgrad.recording import Recording, recorded_graph


def _recorded(fn: Callable[[], Any]) -> tuple[Recording, Any]:
    """Run ``fn`` as compile records it: every operation and ``Value()`` goes to a Recording."""
    recording = Recording()
    state.recording = recording
    try:
        with refusing_numbers("a test records it"):
            result = fn()
    finally:
        state.recording = None
    return recording, result


def _operands(node: graph.Node) -> list[Any]:
    op = node._operation
    if op is None:
        return []
    if op.nary:
        return list(node._first)
    return [node._first] if op.arity == 1 else [node._first, node._second]


def _reference(recording: Recording, outputs: list[Value]) -> tuple[list[Any], list[Any], list[Any]]:
    """The plain reading: what the outputs need by a walk over operands, then the needed nodes in
    creation order, their edges, and the outside Values in the order the needed nodes read them."""
    inside = {id(n): n for n in [*recording.nodes, *recording.leaves.values()]}
    needed: set[int] = set()
    stack = [x for x in outputs if id(x) in inside]
    while stack:
        node = stack.pop()
        if id(node) in needed:
            continue
        needed.add(id(node))
        stack.extend(x for x in _operands(node) if isinstance(x, graph.Node) and id(x) in inside)
    live = sorted((inside[k] for k in needed), key=lambda n: n._seq)
    edges = []
    for node in live:
        op, saved = node._operation, [node._saved_first, node._saved_second]
        if op is None or not node.requires_grad:
            edges.append(())
        elif op.nary:
            edges.append(tuple(k for k, s in enumerate(node._saved_first) if s is not None))
        else:
            edges.append(tuple(k for k in range(op.arity) if saved[k] is not None))
    outside: dict[int, Any] = {}
    for node in live:
        for x in _operands(node):
            if isinstance(x, graph.Node) and id(x) not in inside:
                outside.setdefault(id(x), x)
    for x in outputs:
        if id(x) not in inside:
            outside.setdefault(id(x), x)
    return live, edges, list(outside.values())


def _same(found: tuple[list[Any], list[Any], list[Any]], expected: tuple[list[Any], list[Any], list[Any]]) -> None:
    live, edges, outside = found
    assert [id(n) for n in live] == [id(n) for n in expected[0]]
    assert edges == expected[1]
    assert [id(x) for x in outside] == [id(x) for x in expected[2]]


def test_a_step_needs_every_operation_and_reads_parameters_in_the_order_used() -> None:
    w1, w2, b = Value(0.5), Value(-2.0), Value(0.25)
    x = Value(3.0, requires_grad=False)
    recording, loss = _recorded(lambda: (w2 * (x * w1 + b)).relu() + w1)
    live, edges, outside = recorded_graph(recording, [loss])
    assert live == recording.nodes
    assert [id(v) for v in outside] == [id(x), id(w1), id(b), id(w2)]
    assert edges[0] == (1,)  # x * w1: only w1 takes gradient
    _same((live, edges, outside), _reference(recording, [loss]))


def test_operations_the_outputs_do_not_need_are_left_out_with_what_only_they_read() -> None:
    w, unused = Value(2.0), Value(5.0)

    def fn() -> Value:
        dead = (unused * w).exp()  # computed, never used
        del dead
        return w * w + 1.0

    recording, out = _recorded(fn)
    live, edges, outside = recorded_graph(recording, [out])
    assert len(live) == 2
    assert len(recording.nodes) == 4
    assert [id(v) for v in outside] == [id(w)]
    _same((live, edges, outside), _reference(recording, [out]))


def test_an_output_from_outside_is_read_and_a_value_made_inside_is_kept_in_creation_order() -> None:
    w = Value(1.5)

    def fn() -> list[Value]:
        c = Value(4.0)  # made inside: a leaf of the recording
        return [w * c, w]

    recording, outs = _recorded(fn)
    live, edges, outside = recorded_graph(recording, outs)
    assert [n._operation is None for n in live] == [True, False]
    assert [id(v) for v in outside] == [id(w)]
    _same((live, edges, outside), _reference(recording, outs))


def test_an_operation_of_many_operands_reads_each_and_hands_gradient_to_those_that_take_it() -> None:
    a, b = Value(1.0), Value(3.0, requires_grad=False)
    recording, out = _recorded(lambda: functional.max([a * 2.0, b, a + b]))
    found = recorded_graph(recording, [out])
    _same(found, _reference(recording, [out]))
    assert [id(x) for x in found[2]] == [id(a), id(b)]
    assert found[1][-1] == (0, 2)  # b takes no gradient


def test_a_copy_of_a_recorded_node_is_a_value_from_outside_not_the_node_it_copies() -> None:
    w = Value(2.0)
    holder: list[Value] = []

    def fn() -> Value:
        h = w * 3.0
        saved = state.recording, state.refusal
        state.recording, state.refusal = None, ""  # (a copy made while recording is refused)
        twin = copy.copy(h)  # the same creation number as h, made without the recording
        state.recording, state.refusal = saved
        holder.append(twin)
        return h * twin

    recording, out = _recorded(fn)
    live, edges, outside = recorded_graph(recording, [out])
    twin = holder[0]
    assert twin._seq == live[0]._seq
    assert [id(v) for v in outside] == [id(w), id(twin)]
    _same((live, edges, outside), _reference(recording, [out]))


def test_a_node_made_meanwhile_outside_the_recording_leaves_a_gap_read_the_same() -> None:
    w = Value(2.0)

    def fn() -> Value:
        h = w * 3.0
        state.recording, saved = None, state.recording
        stranger = Value(7.0)  # as another thread might make: a gap in the creation numbers
        state.recording = saved
        return (h + stranger) * h

    recording, out = _recorded(fn)
    numbers = [n._seq for n in recording.nodes]
    assert numbers[-1] - numbers[0] != len(numbers) - 1  # the gap is there
    live, edges, outside = recorded_graph(recording, [out])
    assert len(outside) == 2
    assert outside[0] is w
    _same((live, edges, outside), _reference(recording, [out]))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), gap=st.booleans())
def test_random_graphs_are_read_as_the_plain_walk_reads_them(seed: int, gap: bool) -> None:
    rng = random.Random(seed)
    parameters = [Value(rng.uniform(-2, 2), requires_grad=rng.random() < 0.8) for _ in range(rng.randint(1, 6))]

    def fn() -> list[Value]:
        made: list[Any] = list(parameters)
        for _ in range(rng.randint(1, 30)):
            kind = rng.random()
            x = rng.choice(made)
            if kind < 0.1:
                made.append(Value(rng.uniform(-1, 1)))
            elif kind < 0.2 and gap:
                state.recording, saved = None, state.recording
                made.append(Value(rng.uniform(-1, 1)))
                state.recording = saved
            elif kind < 0.35:
                made.append(x.tanh() if rng.random() < 0.5 else -x)
            elif kind < 0.45:
                made.append(functional.max([rng.choice(made) for _ in range(rng.randint(1, 4))]))
            elif kind < 0.55:
                made.append(rng.uniform(-3, 3) * x)
            else:
                made.append(x * rng.choice(made) if rng.random() < 0.5 else x + rng.choice(made))
        return rng.sample(made, rng.randint(1, min(3, len(made))))

    recording, outs = _recorded(fn)
    _same(recorded_graph(recording, outs), _reference(recording, outs))
