"""The reverse pass: one walk from the outputs back to the leaves.

It runs in two loops (no recursion, so a chain of a million links is fine):

1. ``topological_order`` lists every node the outputs reach through edges that take
   gradient, each after all of its operands (a depth-first post-order). It is also the
   check: a freed node raises here, before anything has changed.
2. ``reverse_pass`` walks that list backwards, from the outputs with their seeds, so a node
   is reached only when every node that uses it has handed in its gradient; it hands on
   gradient times local derivative to each operand.

The gradients of one pass live in a dict local to that pass; only when the pass has
finished does ``backward`` add them into ``.grad``. That is why two passes give exactly
twice one pass (micrograd re-propagates the accumulated ``.grad`` of intermediates), and
why a pass that fails leaves every ``.grad`` as it was.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import cast

from vjpgrad._mode import state
from vjpgrad._value import Value

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or to read its derivatives after "
    "they have been freed): the graph was already freed by an earlier backward pass. "
    "Specify retain_graph=True in the earlier backward call if you need to backward "
    "through the graph a second time."
)

_EMIT = Value(0.0, requires_grad=False, label="<emit marker>")
"""On the walk's stack, this says: the node below me has had all its operands listed."""


def topological_order(outputs: Sequence[Value]) -> list[Value]:
    """Every node reached from ``outputs`` through edges that take gradient, operands first.

    Raises ``RuntimeError`` for an output that requires no grad, or for a reached node
    whose derivatives an earlier pass freed.
    """
    for index, output in enumerate(outputs):
        if not output.requires_grad:
            raise RuntimeError(
                f"element {index} of the outputs does not require grad and has no graph: "
                "it was made from constants, detached values or under no_grad()"
            )
    listed: set[Value] = set()
    order: list[Value] = []
    stack = list(outputs)
    while stack:
        node = stack.pop()
        if node is _EMIT:
            order.append(stack.pop())
            continue
        if node in listed:  # pushed by two users before it was reached
            continue
        listed.add(node)
        stack.append(node)
        stack.append(_EMIT)
        da = node._da
        db = node._db
        if da is None and db is None:
            if node._op is not None:
                raise RuntimeError(f"{FREED_MESSAGE} (the node is {node!r}, made by {node.op!r})")
            continue
        # An operand with a local derivative is always a Value (constants have none).
        if da is not None and node._a not in listed:
            stack.append(node._a)  # type: ignore[arg-type]
        if db is not None and node._b not in listed:
            stack.append(node._b)  # type: ignore[arg-type]
    return order


def reverse_pass(outputs: Sequence[Value], seeds: Sequence[float]) -> dict[Value, float]:
    """The gradient of ``sum_i seeds[i] * outputs[i]`` with respect to every node reached.

    Touches no ``.grad``. Raises ``RuntimeError`` on a freed graph and, under
    ``detect_anomaly()``, ``FloatingPointError`` when an edge produces nan.
    """
    order = topological_order(outputs)
    grads: dict[Value, float] = {}
    for output, seed in zip(outputs, seeds, strict=True):
        grads[output] = grads.get(output, 0.0) + seed
    if state.detect_anomaly:
        _check_for_nan(order, grads)
    get = grads.get
    for node in reversed(order):
        grad = grads[node]
        da = node._da
        if da is not None:
            a: Value = node._a  # type: ignore[assignment]
            grads[a] = get(a, 0.0) + grad * da
        db = node._db
        if db is not None:
            b: Value = node._b  # type: ignore[assignment]
            grads[b] = get(b, 0.0) + grad * db
    return grads


def _check_for_nan(order: list[Value], seeds: dict[Value, float]) -> None:
    """The anomaly-mode pass: as ``reverse_pass``, but it stops at the first nan an edge makes."""
    grads = dict(seeds)
    for node in reversed(order):
        grad = grads[node]
        for position, (operand, local) in enumerate(((node._a, node._da), (node._b, node._db))):
            if local is None:
                continue
            contribution = grad * local
            if contribution != contribution and grad == grad:  # this edge made the nan
                _raise_nan(node, position, grad, local)
            grads[cast(Value, operand)] = grads.get(cast(Value, operand), 0.0) + contribution


def _raise_nan(node: Value, operand: int, grad: float, local: object) -> None:
    where = getattr(node, "_origin", "an unknown place (made outside detect_anomaly())")
    raise FloatingPointError(
        f"backward of {node.op!r} produced nan for its operand {operand} "
        f"(upstream gradient {grad!r} x local derivative {local!r}); the node was made at {where}"
    )


def check_seed(seed: object, what: str) -> float:
    """A seed as a float, or a TypeError that names what was given."""
    if isinstance(seed, Value):
        return seed.data
    if not isinstance(seed, numbers.Real):
        raise TypeError(f"{what} must be a real number, got {type(seed).__name__}")
    return float(seed)


def check_flag(flag: object, name: str) -> bool:
    if not isinstance(flag, bool):
        raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    return flag


def backward(outputs: Sequence[Value], seeds: Sequence[object], *, retain_graph: bool) -> None:
    """Run one reverse pass and add its gradients into ``.grad``; free the graph unless retained."""
    floats = [check_seed(seed, "the gradient seed") for seed in seeds]
    check_flag(retain_graph, "retain_graph")
    grads = reverse_pass(outputs, floats)
    if retain_graph:
        for node, grad in grads.items():
            node.grad += grad
    else:
        for node, grad in grads.items():
            node.grad += grad
            node._da = node._db = None
