"""detect_anomaly(): a nan anywhere in the reverse pass raises FloatingPointError, as
PyTorch's anomaly mode does ("Function 'XBackward' returned nan values"); a finite pass is
left exactly as it is without it."""

from __future__ import annotations

import inspect
import math
import re

import pytest

import vjpgrad
from vjpgrad import Value, Vector


def here() -> int:
    """The line of the caller."""
    frame = inspect.currentframe()
    assert frame is not None
    assert frame.f_back is not None
    return frame.f_back.f_lineno


def finite_graph(a: Value, b: Value) -> Vector:
    t = a * b + a.exp()
    return Vector([t.sin() * b, (t / b).log(), abs(a - b) ** 1.5, a.sigmoid().relu()])


def test_a_finite_pass_under_anomaly_mode_raises_nothing_and_gives_the_same_gradients() -> None:
    grads = []
    for anomaly in (False, True):
        a, b = Value(0.7), Value(1.3)
        if anomaly:
            with vjpgrad.detect_anomaly():
                finite_graph(a, b).backward([1.0, -2.0, 0.5, 3.0])
        else:
            finite_graph(a, b).backward([1.0, -2.0, 0.5, 3.0])
        grads.append((a.grad, b.grad))
    assert grads[0] == grads[1]
    assert all(math.isfinite(g) for g in grads[0])


def test_a_finite_pass_under_anomaly_mode_with_create_graph_gives_the_same_gradients() -> None:
    results = []
    for anomaly in (False, True):
        a, b = Value(0.7), Value(1.3)
        if anomaly:
            with vjpgrad.detect_anomaly():
                ga, gb = vjpgrad.gradients(finite_graph(a, b), [a, b], [1.0, -2.0, 0.5, 3.0], create_graph=True)
        else:
            ga, gb = vjpgrad.gradients(finite_graph(a, b), [a, b], [1.0, -2.0, 0.5, 3.0], create_graph=True)
        results.append((ga.data, gb.data))
    assert results[0] == results[1]


def test_a_nan_made_by_a_backward_formula_raises_naming_the_op() -> None:
    a = Value(0.0)
    with vjpgrad.detect_anomaly():
        y = a.sqrt() * 0  # sqrt'(0) = inf, times the 0 upstream: nan
        with pytest.raises(FloatingPointError, match=r"backward of 'sqrt' produced nan.*the node was made at \S+:\d+"):
            y.backward()
    assert a.grad == 0.0  # the failed pass changed nothing


def test_a_nan_seed_raises_at_the_first_node() -> None:
    x = Value(1.0)
    with vjpgrad.detect_anomaly():
        y = x.sin()
        with pytest.raises(FloatingPointError, match=r"backward of 'sin' produced nan"):
            y.backward(math.nan)
    assert x.grad == 0.0


def test_a_nan_seed_of_one_element_of_a_vector_raises() -> None:
    x = Value(1.0)
    with vjpgrad.detect_anomaly():
        y = Vector([x * 2.0, x.cos()])
        with pytest.raises(FloatingPointError, match=r"backward of 'cos' produced nan"):
            y.backward([1.0, math.nan])
    assert x.grad == 0.0


def test_inf_and_minus_inf_summing_to_nan_raise_at_the_next_node() -> None:
    # t receives inf from one output and -inf from the other: neither contribution is nan, their
    # sum is; t's own backward (exp) then hands nan on, and that raises, naming exp
    x = Value(0.5)
    with vjpgrad.detect_anomaly():
        t = x.exp()
        y = Vector([t * 2.0, t * 3.0])
        with pytest.raises(FloatingPointError, match=r"backward of 'exp' produced nan for its operand 0"):
            y.backward([math.inf, -math.inf])
    assert x.grad == 0.0
    assert t.grad == 0.0


def test_without_anomaly_mode_the_same_passes_give_nan_silently() -> None:
    x = Value(0.5)
    t = x.exp()
    Vector([t * 2.0, t * 3.0]).backward([math.inf, -math.inf])
    assert math.isnan(x.grad)
    z = Value(1.0)
    z.sin().backward(math.nan)
    assert math.isnan(z.grad)


def test_anomaly_mode_watches_the_differentiable_pass_too() -> None:
    a = Value(0.0)
    with vjpgrad.detect_anomaly():
        y = a.sqrt() * 0
        with pytest.raises(FloatingPointError, match=r"backward of 'sqrt' produced nan"):
            vjpgrad.gradients(y, [a], create_graph=True)


def test_a_node_made_outside_anomaly_mode_is_still_checked_but_has_no_place() -> None:
    a = Value(0.0)
    y = a.sqrt() * 0
    with vjpgrad.detect_anomaly(), pytest.raises(FloatingPointError, match=r"made outside detect_anomaly\(\)"):
        y.backward()


def test_anomaly_mode_ends_with_its_block() -> None:
    a = Value(0.0)
    with vjpgrad.detect_anomaly():
        pass
    (a.sqrt() * 0).backward()
    assert math.isnan(a.grad)


def test_anomaly_mode_names_the_file_and_line_of_the_users_code() -> None:
    # mutmut deselects this test (pyproject.toml): its trampoline is a frame between this line and vjpgrad
    a, b = Value(0.0), Value(1.0)
    with vjpgrad.detect_anomaly():
        s = a.sqrt()
        made = here() - 1
        y = s * 0 + b
        with pytest.raises(FloatingPointError) as error:
            y.backward()
    message = str(error.value)
    assert "'sqrt'" in message
    assert re.search(rf"test_anomaly\.py:{made}\b", message), message
