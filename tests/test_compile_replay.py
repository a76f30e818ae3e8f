"""Replaying a recording gives what eager code gives in the corners: constants of either sign of
zero, passes that free what two calls of one function ran, anomaly mode, Values made inside and
returned, float arguments returned as they were given, and the labels of the results."""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import pytest

import vjpgrad
from vjpgrad import Value
from vjpgrad.compiler.record import describe


def bits(x: float) -> Any:
    return "nan" if math.isnan(x) else struct.pack("<d", x)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache directory for one test: what a replay runs is written here, not loaded."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("VJPGRAD_CACHE_DIR", str(folder))
    monkeypatch.delenv("VJPGRAD_CACHE", raising=False)
    monkeypatch.delenv("VJPGRAD_CACHE_MAX_MB", raising=False)
    return folder


# ---- a constant 0.0 and a constant -0.0 share one template of the reverse pass ------------------


def divided_by_zeros(x: Value, y: Value) -> Value:
    return x / 0.0 + y / -0.0


def test_a_constant_zero_of_each_sign_gets_its_own_gradient_line(cache_dir: Path) -> None:
    """``x / 0.0`` and ``y / -0.0`` hand different gradients (``+inf``, ``-inf``): the lines that
    compute them are told apart by the constant's bits, not by ``==`` (for which ``-0.0 == 0.0``)."""

    def grads(fn: Any) -> list[Any]:
        x, y = Value(2.0), Value(3.0)
        out = fn(x, y)
        out.backward()
        return [bits(out.data), bits(x.grad), bits(y.grad)]

    eager = grads(divided_by_zeros)
    assert eager[1] == bits(math.inf)
    assert eager[2] == bits(-math.inf)
    compiled = vjpgrad.compile(divided_by_zeros)
    assert [grads(compiled) for _ in range(3)] == [eager] * 3


# ---- the operations a freeing pass ran are kept per recording, not per call ----------------------


def three_outputs(a: Value, b: Value) -> list[Value]:
    s = b * b
    return [a * a, s + 1.0, s + 2.0]


def two_calls_then_passes(fn: Any) -> list[Any]:
    """Two calls, one pass through an output of each (freeing), then a pass from each of the
    second call's other outputs: the first reaches nothing freed, the second reaches ``s``."""
    calls = [([Value(1.0 + k), Value(2.0 + k)], None) for k in range(3)]
    calls = [(xs, fn(*xs)) for xs, _ in calls]  # the first one records a compiled function
    (_, first), (inputs, second) = calls[1], calls[2]
    (first[0] + second[1]).backward()
    outcome: list[Any] = []
    for output in (second[0], second[2]):
        try:
            output.backward()
            outcome.append(("ok", inputs[0].grad, inputs[1].grad))
        except RuntimeError:
            outcome.append("RuntimeError")
    return outcome


def test_a_freeing_pass_through_two_calls_frees_what_each_call_ran(cache_dir: Path) -> None:
    """A freeing pass through outputs of two calls of one function frees, in each call, what that
    call's part of the pass ran: eager code then runs a pass from ``second[0]`` and refuses one
    from ``second[2]``, which goes through the freed ``s``; so does the replay."""
    eager = two_calls_then_passes(three_outputs)
    assert eager == [("ok", 6.0, 8.0), "RuntimeError"]
    assert two_calls_then_passes(vjpgrad.compile(three_outputs)) == eager


# ---- anomaly mode and a Value made inside that takes gradient ------------------------------------


def scaled_square(x: Value) -> Value:
    return (x * x) * Value(0.5)  # Value() makes a leaf that requires grad, by default


def test_anomaly_mode_runs_a_function_that_makes_a_value_taking_gradient(cache_dir: Path) -> None:
    """Anomaly mode checks the gradient eager code computes for a Value made inside and not returned,
    so the forward hands on the values that check reads."""

    def backward_under_anomaly(fn: Any) -> Any:
        x = Value(3.0)
        y = fn(x)
        with vjpgrad.detect_anomaly():
            y.backward()
        return bits(x.grad)

    eager = backward_under_anomaly(scaled_square)
    compiled = vjpgrad.compile(scaled_square)
    assert [backward_under_anomaly(compiled) for _ in range(3)] == [eager] * 3


# ---- a fresh leaf returned: eager gives a leaf, the replay an output of the call ----------------


def weight_and_product(x: Value) -> list[Value]:
    w = Value(0.5)  # a new leaf that takes gradient at each call (not kept: not a parameter)
    return [x * w, w]


def test_a_fresh_leaf_returned_stays_a_leaf_that_survives_a_freeing_pass(cache_dir: Path) -> None:
    """A Value made inside and returned is a leaf, as in eager code: passes from it free nothing, and
    a pass from an output computed from it still runs afterwards."""

    def outcome(fn: Any) -> list[Any]:
        y, w = fn(Value(3.0))
        seen: list[Any] = [w.is_leaf]
        for output in (w, w, y):
            try:
                output.backward()
                seen.append(w.grad)
            except RuntimeError:
                seen.append("RuntimeError")
        return seen

    eager = outcome(weight_and_product)
    assert eager == [True, 1.0, 2.0, 5.0]
    compiled = vjpgrad.compile(weight_and_product)
    assert [outcome(compiled) for _ in range(3)] == [eager] * 3


# ---- a NumPy float64 argument returned as it is ----------------------------------------------------


def test_a_numpy_float_argument_returned_keeps_its_type() -> None:
    """A float argument returned as it is comes back as the object given (a ``numpy.float64``),
    as in eager code, not as the float the code computed with."""
    np = pytest.importorskip("numpy")

    def f(x: Value, k: Any) -> list[Any]:
        return [x * k, k]

    compiled = vjpgrad.compile(f)
    eager = type(f(Value(1.0), np.float64(0.5))[1])
    assert [type(compiled(Value(1.0), np.float64(0.5))[1]) for _ in range(3)] == [eager] * 3


# ---- labels given inside the function ----------------------------------------------------------


def labelled(x: Value) -> list[Value]:
    y = x * 2.0
    y.label = "loss"
    return [y, Value(1.0, requires_grad=False, label="one")]


def test_the_labels_of_the_results_are_those_eager_code_gives() -> None:
    """The labels the function gives the Values it returns are given to every call's results."""
    compiled = vjpgrad.compile(labelled)
    eager = [v.label for v in labelled(Value(1.0))]
    assert eager == ["loss", "one"]
    assert [[v.label for v in compiled(Value(1.0))] for _ in range(3)] == [eager] * 3


# ---- the cache's key tells the zeros apart ---------------------


def test_describe_separates_the_zero_constants_so_a_fix_of_1_is_not_masked_by_the_cache() -> None:
    """The cache's key tells ``x / 0.0`` from ``x / -0.0`` (marshal writes a float's bits): code
    written for one is never loaded for the other."""

    def entry_of(fn: Any) -> Any:
        compiled = vjpgrad.compile(fn)
        compiled(Value(1.0))
        return compiled._last

    a, b = entry_of(lambda x: x / 0.0), entry_of(lambda x: x / -0.0)
    assert describe(a.recorded, a.internal_outputs) != describe(b.recorded, b.internal_outputs)


def test_a_fresh_leaf_returned_takes_its_seed_and_outer_gradients_in_eagers_order() -> None:
    def f(x: Value) -> list[Value]:
        w = Value(0.1)
        return [x * w + w * 0.3, w]

    def outcome(fn: Any) -> list[float]:
        x = Value(3.7)
        y, w = fn(x)
        z = w * 1.3 + y * 0.7  # the leaf used again outside the call
        vjpgrad.Vector([y, w, z]).backward([0.9, 0.45, 1.1])
        return [x.grad, w.grad, y.grad]

    compiled = vjpgrad.compile(f)
    assert [outcome(compiled) for _ in range(3)] == [outcome(f)] * 3
