"""The reverse pass: accumulation, retain_graph, constants, no_grad, threads, depth."""

from __future__ import annotations

import threading

import pytest

import vjpgrad
from vjpgrad import Value, Vector, no_grad


def seed_expression(a: Value, b: Value, c: Value) -> Value:
    return 3 * a + 2 * b * b + c**-1


def test_two_passes_give_exactly_twice_one_pass_where_micrograd_does_not() -> None:
    # micrograd gives 12, 18, -3 here: it re-propagates accumulated intermediate grads
    a, b, c = Value(1.0), Value(1.0), Value(1.0)
    y = seed_expression(a, b, c)
    y.backward(retain_graph=True)
    assert (a.grad, b.grad, c.grad) == (3.0, 4.0, -1.0)
    y.backward()
    assert (a.grad, b.grad, c.grad) == (6.0, 8.0, -2.0)


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


def test_backward_from_a_leaf_seeds_it() -> None:
    a = Value(1.0)
    a.backward(2.5)
    assert a.grad == 2.5


def test_the_seed_scales_every_gradient() -> None:
    a, b, c = Value(1.0), Value(2.0), Value(4.0)
    seed_expression(a, b, c).backward(0.5)
    assert (a.grad, b.grad, c.grad) == (1.5, 4.0, -0.5 / 16)


@pytest.mark.parametrize(("seed", "name"), [("1", "str"), ([1.0], "list"), (1j, "complex")])
def test_a_seed_that_is_not_a_number_is_a_type_error(seed: object, name: str) -> None:
    a = Value(1.0)
    y = a * 2
    with pytest.raises(TypeError, match=f"seed must be a real number.*got {name}"):
        y.backward(seed)  # type: ignore[arg-type]
    assert a.grad == 0.0
    y.backward()  # nothing was freed by the failed call
    assert a.grad == 2.0


def test_retain_graph_must_be_a_bool() -> None:
    y = Value(1.0) * 2
    with pytest.raises(TypeError, match="retain_graph must be a bool, got str"):
        y.backward(retain_graph="yes")  # type: ignore[arg-type]


def test_a_second_pass_through_a_freed_graph_raises_and_changes_nothing() -> None:
    a, b, c = Value(1.0), Value(1.0), Value(1.0)
    y = seed_expression(a, b, c)
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


def test_no_grad_records_no_graph_and_restores_on_exit() -> None:
    a = Value(2.0)
    with no_grad():
        assert not vjpgrad.is_grad_enabled()
        y = a * a
    assert vjpgrad.is_grad_enabled()
    assert not y.requires_grad
    assert y.parents == ()
    assert (a * a).requires_grad


def test_no_grad_nests_and_restores_after_an_exception() -> None:
    with no_grad():
        with no_grad():
            pass
        assert not vjpgrad.is_grad_enabled()
        with vjpgrad.enable_grad():
            assert (Value(1.0) * 2).requires_grad
    assert vjpgrad.is_grad_enabled()
    with pytest.raises(ZeroDivisionError), no_grad():
        1 / 0  # noqa: B018
    assert vjpgrad.is_grad_enabled()


def test_no_grad_as_a_decorator() -> None:
    @no_grad()
    def step(v: Value) -> Value:
        return v * 3

    assert not step(Value(1.0)).requires_grad
    assert vjpgrad.is_grad_enabled()
    assert step.__name__ == "step"


def test_no_grad_in_one_thread_does_not_leak_into_another() -> None:
    inside = threading.Event()
    checked = threading.Event()
    seen: list[bool] = []

    def other_thread() -> None:
        inside.wait(5)
        seen.append((Value(1.0) * 2).requires_grad)
        checked.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with no_grad():
        inside.set()
        checked.wait(5)
        assert not (Value(1.0) * 2).requires_grad
    thread.join()
    assert seen == [True]


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


def test_intermediate_nodes_accumulate_grad_too() -> None:
    a = Value(3.0)
    h = a * 2
    y = h * h
    y.backward()
    assert (y.grad, h.grad, a.grad) == (1.0, 12.0, 24.0)


def test_anomaly_mode_names_the_op_and_the_line_that_made_the_nan() -> None:
    a = Value(0.0)
    with vjpgrad.detect_anomaly():
        y = a.sqrt() * 0  # sqrt'(0) = inf, times 0 upstream is nan
        line = __import__("inspect").currentframe().f_lineno - 1  # type: ignore[union-attr]
        with pytest.raises(FloatingPointError, match=rf"'sqrt'.*test_backward.py:{line}"):
            y.backward()
    assert a.grad == 0.0


def test_without_anomaly_mode_nan_propagates_silently_as_in_pytorch() -> None:
    a = Value(0.0)
    (a.sqrt() * 0).backward()
    assert a.grad != a.grad


def test_vector_outputs_share_one_pass() -> None:
    x = Value(2.0)
    shared = x * x
    y = Vector([shared * 1.0, shared * 2.0, shared * 3.0])
    y.backward([1.0, 1.0, 1.0])
    assert shared.grad == 6.0  # one pass: the shared node gathers all three before handing on
    assert x.grad == 2 * 2.0 * (1 + 2 + 3)
