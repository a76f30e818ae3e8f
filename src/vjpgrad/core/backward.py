"""``backward`` and ``gradients``' pass: seeds in, one reverse pass, gradients out.

The walk itself is ``graph``'s; this module decides what a pass does with it: read the
seeds (``seeds``), run the pass under the pass lock, then add into ``.grad`` (backward) or
hand the gradients back (``gradients``, the transforms), and free what the pass used unless
the graph is retained. Under ``detect_anomaly()`` the pass watches every edge for nan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vjpgrad.core import graph
from vjpgrad.core.graph import Node
from vjpgrad.core.modes import enable_grad, refuse_number, state
from vjpgrad.core.seeds import seeds_for


def check_flag(flag: object, name: str) -> bool:
    """``flag`` if it is a bool, else a TypeError that names it."""
    if not isinstance(flag, bool):
        raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    return flag


def _anomaly_observer(node: Node, position: int, operand: Node, upstream: Any, saved: Any, part: Any) -> None:
    """Under detect_anomaly(): a nan from any edge stops the pass, as PyTorch's
    "Function 'XBackward' returned nan values" does."""
    number = part.data if isinstance(part, Node) else part
    if number != number:
        op = graph.op_of(node)
        where = graph.origin(node) or "an unknown place (made outside detect_anomaly())"
        raise FloatingPointError(
            f"backward of {op.name if op else '?'!r} produced nan for its operand {position} "
            f"(upstream gradient {upstream!r}, saved {saved!r}); the node was made at {where}"
        )


def _observer() -> graph.Observer | None:
    return _anomaly_observer if state.detect_anomaly else None


def _run(outputs: Sequence[Node], seeds: Sequence[float]) -> tuple[list[Node], list[Node]]:
    order, leaves = graph.reached(outputs)
    graph.seed(outputs, seeds)
    graph.propagate(order, _observer(), own_backward=True)
    return order, leaves


def _ran_alone(output: Node, seed: Any, retain_graph: bool) -> bool:
    """Whether ``output``'s operation ran a whole pass from it by itself (``Op.whole_pass``: a
    compiled call's output, when nothing else is in the pass); if not, nothing changed."""
    op = graph.op_of(output)
    return op is not None and op.whole_pass is not None and op.whole_pass(output, seed, retain_graph)


CREATE_GRAPH = (
    "backward(create_graph=True) is PyTorch's way to differentiate a gradient again; in vjpgrad, "
    "vjpgrad.gradients(y, xs, create_graph=True) returns the gradients as Values you can differentiate"
)
"""What ``backward(create_graph=True)`` says: the pass adds numbers into ``.grad``, never Values."""


def backward(
    outputs: Sequence[Node], count: int | None, seed: object, *, retain_graph: bool, create_graph: bool = False
) -> None:
    """Run one reverse pass from ``outputs`` seeded by ``seed`` (see ``seeds``) and add its
    gradients into ``.grad``; free the graph unless ``retain_graph``. ``create_graph=True``, PyTorch's
    way to differentiate the gradients again, is refused, pointing to ``vjpgrad.gradients``."""
    if create_graph:
        raise TypeError(CREATE_GRAPH)
    refuse_number("backward()", "a replay would not add into .grad: call backward() on what the function returns")
    seeds = seeds_for(count, seed, name="the seed")
    check_flag(retain_graph, "retain_graph")
    with graph.pass_lock:
        if len(outputs) == 1 and not state.detect_anomaly and _ran_alone(outputs[0], seeds[0], retain_graph):
            return  # an operation that runs a whole pass by itself (a compiled call's output) ran it
        order, leaves = graph.reached(outputs)
        graph.seed(outputs, seeds)
        graph.propagate(order, _observer(), own_backward=True)  # a compiled call checks its own results
        graph.accumulate(order)
        graph.accumulate(leaves)
        if not retain_graph:
            graph.free(order)


def reverse_pass(outputs: Sequence[Node], seeds: Sequence[float]) -> dict[Node, float]:
    """The gradient of ``sum_i seeds[i] * outputs[i]`` with respect to every node reached.
    Touches no ``.grad`` and frees nothing."""
    refuse_number(
        "a reverse pass to numbers (gradients() without create_graph=True, grad...)",
        "take gradients of what the function returns, outside it",
    )
    with graph.pass_lock:
        order, leaves = _run(outputs, seeds)
        return {node: graph.cotangent(node) for node in (*order, *leaves)}


def differentiable_reverse_pass(outputs: Sequence[Node], seeds: Sequence[Any]) -> dict[Node, Any]:
    """As ``reverse_pass``, but every gradient is built from Values, so it can be
    differentiated again (``create_graph=True``). Touches no ``.grad``."""
    with graph.pass_lock:
        order, _ = graph.reached(outputs)
    grads: dict[Node, Any] = {}
    with enable_grad():
        for output, value in zip(outputs, seeds, strict=True):
            grads[output] = grads[output] + value if output in grads else value
        return graph.propagate_differentiably(order, grads, _observer())


def free(nodes: Sequence[Node] | dict[Node, Any]) -> None:
    """Drop what ``nodes`` saved for the backward pass: a later pass through them raises."""
    graph.free(list(nodes))
