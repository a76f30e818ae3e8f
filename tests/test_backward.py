"""The reverse pass: how contributions are summed and accumulated into ``.grad``, constants and
detached values, ``retain_graph`` and freed graphs, the numbers a pass uses, ``.grad`` set to None,
threads and depth, and the length contracts of the graph module's helpers.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import pytest
from _helpers import answer_expression, bits, four_outputs, is_minus_zero, message

import vjpgrad
from vjpgrad import Value, Vector, explain, gradients
from vjpgrad.core import backward as _backward
from vjpgrad.core import graph as _graph
from vjpgrad.core import ops as _ops
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported

# ---- accumulation --------------------------------------------------------------------------------


def test_two_passes_give_exactly_twice_one_pass_where_micrograd_does_not() -> None:
    # micrograd gives 12, 18, -3 here: it re-propagates accumulated intermediate grads
    a, b, c = Value(1.0), Value(1.0), Value(1.0)
    y = answer_expression(a, b, c)
    y.backward(retain_graph=True)
    assert (a.grad, b.grad, c.grad) == (3.0, 4.0, -1.0)
    y.backward()
    assert (a.grad, b.grad, c.grad) == (6.0, 8.0, -2.0)


def test_two_passes_are_exactly_twice_one_pass_on_every_node() -> None:
    a, b = Value(0.7), Value(1.3)
    y = four_outputs(a, b)
    nodes = [a, b, *y]
    y.backward([1.0, -2.0, 0.5, 3.0], retain_graph=True)
    once = [n.grad for n in nodes]
    y.backward([1.0, -2.0, 0.5, 3.0])
    assert [n.grad for n in nodes] == [2 * g for g in once]


def test_shared_intermediates_accumulate_exactly() -> None:
    # micrograd's (a*a)*a at 2: 12 per pass, so 24 after two passes (micrograd gives 32)
    a = Value(2.0)
    square = a * a
    y = square * a
    y.backward(retain_graph=True)
    assert a.grad == 12.0
    assert square.grad == 2.0
    y.backward()
    assert a.grad == 24.0
    assert square.grad == 4.0
    assert y.grad == 2.0


def test_a_value_used_many_times_sums_its_contributions() -> None:
    x = Value(3.0)
    y = x * x + x * 4 + x
    y.backward()
    assert x.grad == 2 * 3.0 + 4 + 1


def test_intermediate_nodes_accumulate_grad_too() -> None:
    a = Value(3.0)
    h = a * 2
    y = h * h
    y.backward()
    assert (y.grad, h.grad, a.grad) == (1.0, 12.0, 24.0)


def test_vector_outputs_share_one_pass() -> None:
    x = Value(2.0)
    shared = x * x
    y = Vector([shared * 1.0, shared * 2.0, shared * 3.0])
    y.backward([1.0, 1.0, 1.0])
    assert shared.grad == 6.0  # one pass: the shared node gathers all three before handing on
    assert x.grad == 2 * 2.0 * (1 + 2 + 3)


def test_a_lone_negative_zero_contribution_keeps_its_sign() -> None:
    # the pass starts each sum at -0.0, the identity of +: a lone -0.0 stays -0.0, as in PyTorch
    x = Value(1.0)
    (g,) = gradients(x * -0.0, [x])
    assert is_minus_zero(g.data)
    y = Value(1.0)
    assert is_minus_zero(explain(y * -0.0).gradients[y])
    z = Value(1.0)
    (h,) = gradients(z * 0.0, [z])
    assert h.data == 0.0
    assert not is_minus_zero(h.data)


# ---- constants and detached values ---------------------------------------------------------------


def test_constants_and_detached_values_get_no_gradient() -> None:
    a = Value(2.0)
    k = Value(5.0, requires_grad=False)
    d = a.detach()
    y = a * k + d * a
    y.backward()
    assert a.grad == 5.0 + 2.0
    assert k.grad == 0.0
    assert d.grad == 0.0


def test_subgraphs_that_require_no_grad_are_not_visited() -> None:
    frozen = Value(1.0, requires_grad=False)
    constant_branch = frozen * 2 + frozen.exp()
    assert not constant_branch.requires_grad
    assert constant_branch.parents == ()
    a = Value(1.0)
    (a * constant_branch).backward()
    assert a.grad == constant_branch.data


def test_backward_from_a_constant_is_a_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="does not require grad"):
        (Value(1.0, requires_grad=False) * 2).backward()


def test_backward_from_an_output_that_takes_no_gradient_names_it() -> None:
    x = Value(1.0)
    constant = Value(2.0, requires_grad=False) * 3.0
    with pytest.raises(RuntimeError) as caught:
        Vector([x * 2.0, constant]).backward([1.0, 1.0])
    assert message(caught) == (
        "element 1 of the outputs does not require grad and has no graph: "
        "it was made from constants, detached values or under no_grad(), or it is a gradient "
        "gradients() returned without create_graph=True"
    )
    assert x.grad == 0.0


def test_differentiating_a_gradient_made_without_create_graph_names_the_flag() -> None:
    x = Value(2.0)
    (g,) = vjpgrad.gradients(x**3, [x])  # numbers: the learner forgot create_graph=True
    with pytest.raises(RuntimeError, match=r"a gradient gradients\(\) returned without create_graph=True"):
        vjpgrad.gradients(g, [x])


# ---- retain_graph, and a freed graph -------------------------------------------------------------


def test_retain_graph_must_be_a_bool() -> None:
    y = Value(1.0) * 2
    with pytest.raises(TypeError, match="retain_graph must be a bool, got str"):
        y.backward(retain_graph="yes")  # type: ignore[arg-type]


def test_a_second_pass_through_a_freed_graph_raises_and_changes_nothing() -> None:
    a, b, c = Value(1.0), Value(1.0), Value(1.0)
    y = answer_expression(a, b, c)
    y.backward()
    before = (a.grad, b.grad, c.grad, y.grad)
    with pytest.raises(RuntimeError, match=r"already freed.*retain_graph=True"):
        y.backward()
    assert (a.grad, b.grad, c.grad, y.grad) == before


def test_a_pass_from_a_new_output_through_a_freed_node_raises_before_any_change() -> None:
    a = Value(2.0)
    hidden = a * a
    hidden.backward()
    b = Value(3.0)
    z = b * 2 + hidden  # the b branch is fine, but hidden was freed
    with pytest.raises(RuntimeError, match="already freed"):
        z.backward()
    assert b.grad == 0.0
    assert a.grad == 4.0


@pytest.mark.parametrize(
    ("build", "made_by"),
    [(lambda x: x * x, "mul"), (lambda x: x.exp(), "exp"), (lambda x: F.max([x, x * 0.5, 1.0]), "max")],
)
def test_the_freed_graph_error_names_the_node_and_its_operation(build: Any, made_by: str) -> None:
    x = Value(2.0)
    y = build(x)
    y.backward()
    with pytest.raises(RuntimeError) as caught:
        y.backward()
    assert message(caught) == f"{_graph.FREED_MESSAGE} (the node is {y!r}, made by {made_by!r})"


def test_freed_values_keep_their_data_and_can_feed_new_computations() -> None:
    a = Value(2.0)
    y = a * a
    y.backward()
    assert y.data == 4.0
    assert y.parents == (a, a)
    a.zero_grad()
    z = y.detach() * a
    z.backward()
    assert a.grad == 4.0


def test_retained_graph_can_be_walked_many_times() -> None:
    a = Value(3.0)
    y = a.exp() * a
    for _ in range(5):
        y.backward(retain_graph=True)
    assert a.grad == pytest.approx(5 * (a.data + 1) * a.exp().data)


def test_a_node_is_freed_by_a_pass_that_does_not_retain_the_graph() -> None:
    from vjpgrad.core import graph as _graph

    x = Value(2.0)
    y = x * x
    z = y + 1.0
    constant = Value(1.0, requires_grad=False) * 2.0
    assert [_graph.is_freed(n) for n in (x, y, z, constant)] == [False, False, False, False]
    z.backward(retain_graph=True)
    assert [_graph.is_freed(n) for n in (x, y, z)] == [False, False, False]
    z.backward()
    assert [_graph.is_freed(n) for n in (x, y, z, constant)] == [False, True, True, False]
    w = Value(3.0)
    half = x * w  # one edge freed is not the node freed
    half.backward(retain_graph=True)
    assert not _graph.is_freed(half)


# ---- the numbers a pass uses: those of the forward pass ------------------------------------------


def test_a_seed_given_both_as_grad_and_as_gradient_is_refused() -> None:
    x = Value(2.0)
    y = x * x
    with pytest.raises(TypeError) as caught:
        y.backward(grad=1.0, gradient=1.0)
    assert str(caught.value) == "backward() got both grad= and gradient=: they are the same seed, pass one"
    assert x.grad == 0.0


def test_create_graph_points_to_gradients_and_changes_nothing() -> None:
    x = Value(2.0)
    y, v = x * x, Vector([x * 3.0, x * x])
    for output in (y, v):
        with pytest.raises(TypeError) as caught:
            output.backward([1.0, 1.0] if output is v else None, create_graph=True)  # type: ignore[arg-type]
        assert "vjpgrad.gradients(y, xs, create_graph=True)" in str(caught.value)
        assert x.grad == 0.0
    y.backward(create_graph=False)  # PyTorch's default, spelled out: the pass runs
    assert x.grad == 4.0
    grad_of_grad = gradients(gradients(x * x, [x], create_graph=True)[0], [x])[0]
    assert grad_of_grad == 2.0  # what the message sends the learner to


def test_a_differentiable_pass_adds_no_node_where_no_number_changed() -> None:
    # tanh's saved 1 - r*r is rounded once with Values too, so it needs no identity node to
    # carry the forward pass's number (the node that appears only after a .data assignment)
    for r in (0.3, 0.7, -0.9, 0.123456789):
        x = Value(r)
        (g,) = vjpgrad.gradients(vjpgrad.tanh(x), x, create_graph=True)
        ops_on_the_way = []
        stack = [g]
        while stack:
            node = stack.pop()
            ops_on_the_way.append(node.op)
            stack.extend(node.parents)
        assert "identity" not in ops_on_the_way, r


def test_a_differentiable_pass_divides_as_the_first_order_pass_does() -> None:
    # log's contribution is g / x, one rounding, as PyTorch's; (1 / x) * g would round twice
    x = Value(10.0)
    (first,) = vjpgrad.gradients(vjpgrad.log(x), x, 3.0, retain_graph=True)
    (differentiable,) = vjpgrad.gradients(vjpgrad.log(x), x, 3.0, create_graph=True)
    assert first.data == differentiable.data == 3.0 / 10.0 != (1.0 / 10.0) * 3.0
    (second,) = vjpgrad.gradients(differentiable, x)
    assert second.data == -3.0 / 100.0


def test_a_masked_edge_hands_on_a_zero_that_still_reads_its_operand() -> None:
    x = Value(-1.0)
    (g,) = vjpgrad.gradients(x.relu(), x, create_graph=True)
    assert (g.data, g.op, g.parents) == (0.0, "masked_zero", (x,))
    (again,) = vjpgrad.gradients(g, x)
    assert again.data == 0.0


def test_a_pass_uses_the_numbers_of_the_forward_pass_at_every_order() -> None:
    x = Value(3.0)
    y = x * x
    x.data = 5.0
    (first,) = vjpgrad.gradients(y, x, retain_graph=True)
    (differentiable,) = vjpgrad.gradients(y, x, create_graph=True)
    assert first.data == 6.0
    assert differentiable.data == 6.0


def test_the_saved_numbers_of_other_operations_are_those_of_the_forward_pass_too() -> None:
    x = Value(0.5)
    y = vjpgrad.tanh(x) * vjpgrad.exp(x)
    (before,) = vjpgrad.gradients(y, x, retain_graph=True)
    x.data = 2.0
    (first,) = vjpgrad.gradients(y, x, retain_graph=True)
    (differentiable,) = vjpgrad.gradients(y, x, create_graph=True)
    assert first.data == before.data
    assert differentiable.data == before.data


@pytest.mark.parametrize(
    ("before", "after"),
    [(3.0, 5.0), (-0.0, 0.0), (0.0, -0.0), (math.nan, 1.0), (2.0, math.nan), (math.nan, math.nan), (2.0, 2.0)],
)
def test_the_differentiable_pass_keeps_the_forward_passs_number_to_the_bit_and_differentiates_again(
    before: float, after: float
) -> None:
    # x * y saves y for x: y's number of the forward pass, its sign of zero and its nan kept
    x, y = Value(1.5), Value(before)
    z = x * y
    y.data = after
    (first,) = vjpgrad.gradients(z, x, retain_graph=True)
    (differentiable,) = vjpgrad.gradients(z, x, create_graph=True)
    assert bits(first.data) == bits(differentiable.data) == bits(before)
    (again,) = vjpgrad.gradients(differentiable, y)  # d/dy (y * 1): the new graph still reaches y
    assert again.data == 1.0


# ---- .grad set to None counts as zero, as in PyTorch ---------------------------------------------


def test_grad_none_on_an_intermediate_counts_as_zero() -> None:
    x = Value(3.0)
    t = x * 2
    y = t * t
    t.grad = None
    y.backward()
    assert x.grad == 24.0
    assert t.grad == 12.0


def test_grad_set_to_none_counts_as_zero_and_a_wrong_grad_is_refused_before_any_change() -> None:
    a, b = Value(1.0), Value(2.0)
    y = a * b
    a.grad = None  # PyTorch's way to zero a gradient
    y.backward(retain_graph=True)
    assert (a.grad, b.grad) == (2.0, 1.0)
    with pytest.raises(TypeError, match=r"\.grad of a Value must be a real number or None, got str"):
        b.grad = "oops"  # type: ignore[assignment]  # the wrong type is the subject
    assert (a.grad, b.grad, y.grad) == (2.0, 1.0, 1.0)  # nothing changed


# ---- threads and depth ---------------------------------------------------------------------------


@pytest.mark.slow  # eight threads
def test_eight_threads_build_and_differentiate_their_own_graphs_at_once() -> None:
    results: dict[int, float] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(k: int) -> None:
        try:
            start.wait(5)
            x = Value(float(k + 1))
            y = x
            for _ in range(2000):
                y = (y * 1.0001).tanh() + x * 0.001
            y.backward()
            results[k] = x.grad
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for k in range(8):  # each equals the same computation done alone
        x = Value(float(k + 1))
        y = x
        for _ in range(2000):
            y = (y * 1.0001).tanh() + x * 0.001
        y.backward()
        assert results[k] == x.grad


@pytest.mark.slow
def test_a_chain_a_million_links_deep_backpropagates() -> None:
    x = Value(1.0)
    y = x
    for _ in range(1_000_000):
        y = y + 1.0
    y.backward()
    assert x.grad == 1.0
    assert y.data == 1_000_001.0


def test_a_deep_multiplicative_chain_has_the_exact_gradient() -> None:
    x = Value(1.0)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.backward()
    assert x.grad == pytest.approx(1.0001**10_000, rel=1e-9)


# ---- the graph module's helpers keep their length contracts --------------------------------------
# One seed per output, one saved value per operand. A mismatch is a bug in the caller, and it must
# raise rather than silently drop seeds or edges (which would give wrong gradients without a word).


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
