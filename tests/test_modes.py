"""The per-thread switches: ``no_grad`` and ``enable_grad`` (records no graph, nests, decorates
functions and generators as PyTorch's do, stays in its thread), and ``detect_anomaly()``: a nan
anywhere in the reverse pass raises FloatingPointError naming the operation and the line that made
its node, as PyTorch's anomaly mode does ("Function 'XBackward' returned nan values"), held against
PyTorch's case by case; a finite pass is left exactly as it is. And what a traceback shows.
"""

from __future__ import annotations

import inspect
import math
import re
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from _helpers import message

import vjpgrad
from vjpgrad import Value, Vector, gradients, no_grad

THIS_FILE = re.escape(Path(__file__).name)
"""This file's name, as the anomaly error names the line a node was made at."""


# ---- no_grad and enable_grad ---------------------------------------------------------------------


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


def test_no_grad_without_parentheses_decorates_like_pytorchs() -> None:
    @no_grad
    def step(v: Value) -> Value:
        """Doubles v."""
        return v * 2

    out = step(Value(1.0))
    assert not out.requires_grad
    assert out.data == 2.0
    assert step.__name__ == "step"
    assert step.__doc__ == "Doubles v."
    assert vjpgrad.is_grad_enabled()


def test_enable_grad_without_parentheses_too() -> None:
    @vjpgrad.enable_grad
    def records(v: Value) -> bool:
        return (v * 2).requires_grad

    with no_grad():
        assert records(Value(1.0))
        assert not vjpgrad.is_grad_enabled()


def test_no_grad_refuses_an_argument_that_is_not_a_function() -> None:
    with pytest.raises(TypeError, match=r"no_grad takes no arguments.*got int"):
        no_grad(3)  # type: ignore[call-overload]  # the wrong call under test


def test_no_grad_on_a_generator_function_runs_its_body_without_grad() -> None:
    @no_grad()
    def steps(v: Value) -> Iterator[bool]:
        yield (v * 2).requires_grad
        yield vjpgrad.is_grad_enabled()

    seen = []
    for flag in steps(Value(1.0)):
        seen.append(flag)
        assert vjpgrad.is_grad_enabled()  # the caller's code between steps keeps its own mode
        assert (Value(1.0) * 2).requires_grad
    assert seen == [False, False]


def test_a_bare_no_grad_generator_receives_sent_values_and_thrown_errors() -> None:
    @no_grad
    def echo() -> Iterator[Any]:
        received = yield "ready"
        while True:
            try:
                received = yield (received, vjpgrad.is_grad_enabled())
            except KeyError as error:
                received = yield ("caught", error.args[0], vjpgrad.is_grad_enabled())

    gen = echo()
    assert next(gen) == "ready"
    assert gen.send(5) == (5, False)
    assert gen.throw(KeyError("k")) == ("caught", "k", False)
    assert vjpgrad.is_grad_enabled()
    gen.close()
    assert vjpgrad.is_grad_enabled()


def test_a_no_grad_generator_returns_its_value_and_closes_inside_the_mode() -> None:
    closed_with: list[bool] = []

    @no_grad()
    def counted() -> Iterator[int]:
        try:
            yield 1
            yield 2
        finally:
            closed_with.append(vjpgrad.is_grad_enabled())

    @no_grad()
    def gives() -> Generator[int, None, str]:
        yield 1
        return "done"

    gen = counted()
    assert next(gen) == 1
    gen.close()
    assert closed_with == [False]
    assert list(counted()) == [1, 2]
    assert closed_with == [False, False]
    finishing = gives()
    assert next(finishing) == 1
    with pytest.raises(StopIteration) as stop:
        next(finishing)
    assert stop.value.value == "done"


def test_pytorch_also_runs_a_no_grad_generator_without_grad() -> None:
    torch = pytest.importorskip("torch")

    @torch.no_grad()
    def steps() -> Iterator[bool]:
        yield torch.is_grad_enabled()

    @torch.no_grad
    def bare() -> bool:
        return bool(torch.is_grad_enabled())

    assert list(steps()) == [False]
    assert bare() is False


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


# ---- detect_anomaly ------------------------------------------------------------------------------


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


def test_gradients_through_a_compiled_call_under_anomaly_mode_are_the_eager_ones() -> None:
    # a compiled call runs its own backward, and checks its own results: anomaly mode lets it
    def f(x: Value, y: Value) -> Value:
        return (x * y).tanh() + x / y

    compiled = vjpgrad.compile(f)
    compiled(Value(0.5), Value(2.0))  # the recording call
    found = []
    for run in (f, compiled):
        x, y = Value(0.7), Value(1.3)
        with vjpgrad.detect_anomaly():
            found.append([g.data for g in gradients(run(x, y), [x, y])])
    assert found[0] == found[1]


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


def test_without_anomaly_mode_nan_propagates_silently_as_in_pytorch() -> None:
    a = Value(0.0)
    (a.sqrt() * 0).backward()
    assert a.grad != a.grad


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


# ---- what the anomaly error says -----------------------------------------------------------------


def test_anomaly_mode_names_the_op_and_the_line_that_made_the_nan() -> None:
    a = Value(0.0)
    with vjpgrad.detect_anomaly():
        y = a.sqrt() * 0  # sqrt'(0) = inf, times 0 upstream is nan
        line = __import__("inspect").currentframe().f_lineno - 1  # type: ignore[union-attr]
        with pytest.raises(FloatingPointError, match=rf"'sqrt'.*{THIS_FILE}:{line}"):
            y.backward()
    assert a.grad == 0.0


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
    assert re.search(rf"{THIS_FILE}:{made}\b", message), message


def test_anomaly_mode_message_in_the_differentiable_pass_names_the_edge() -> None:
    a = Value(0.0)
    with vjpgrad.detect_anomaly():
        y = a.sqrt() * 0.0
        with pytest.raises(FloatingPointError) as caught:
            gradients(y, [a], create_graph=True)
    text = message(caught)
    assert text.startswith("backward of 'sqrt' produced nan for its operand 0 (upstream gradient ")
    assert ", saved " in text
    assert "saved None" not in text
    assert "upstream gradient None" not in text
    assert "the node was made at " in text
    assert "unknown place" not in text


def test_anomaly_mode_message_in_the_float_pass_shows_the_numbers() -> None:
    a = Value(0.0)
    with vjpgrad.detect_anomaly():
        y = a.sqrt() * 0.0
        with pytest.raises(FloatingPointError) as caught:
            y.backward()
    assert message(caught).startswith(
        "backward of 'sqrt' produced nan for its operand 0 (upstream gradient 0.0, saved 0.0); the node was made at "
    )


def test_a_node_made_under_another_switch_but_outside_anomaly_mode_has_no_place() -> None:
    a = Value(0.0)
    with vjpgrad.enable_grad():  # a switch is on, anomaly mode is not
        y = a.sqrt() * 0.0
    with vjpgrad.detect_anomaly(), pytest.raises(FloatingPointError) as caught:
        y.backward()
    assert message(caught).endswith("the node was made at an unknown place (made outside detect_anomaly())")


# ---- detect_anomaly held against PyTorch's anomaly mode ------------------------------------------


nan = math.nan


class Ours:
    """The few calls the cases need, in vjpgrad."""

    error: type[Exception] = FloatingPointError

    @staticmethod
    def leaf(x: float) -> Any:
        return Value(x)

    @staticmethod
    def backward(outputs: Sequence[Any], seeds: Sequence[float]) -> None:
        if len(outputs) == 1:
            outputs[0].backward(seeds[0])
        else:
            Vector(list(outputs)).backward(list(seeds))

    @staticmethod
    def grad(output: Any, inputs: Sequence[Any], seed: float, create_graph: bool = False) -> None:
        vjpgrad.gradients(output, list(inputs), seed, create_graph=create_graph)

    @staticmethod
    def anomaly() -> Any:
        return vjpgrad.detect_anomaly()


class Torch:
    """The same calls in PyTorch (float64)."""

    error: type[Exception] = RuntimeError

    def __init__(self) -> None:
        self.torch = pytest.importorskip("torch")

    def leaf(self, x: float) -> Any:
        return self.torch.tensor(x, dtype=self.torch.float64, requires_grad=True)

    def seed(self, s: float) -> Any:
        return self.torch.tensor(s, dtype=self.torch.float64)

    def backward(self, outputs: Sequence[Any], seeds: Sequence[float]) -> None:
        self.torch.autograd.backward(list(outputs), [self.seed(s) for s in seeds])

    def grad(self, output: Any, inputs: Sequence[Any], seed: float, create_graph: bool = False) -> None:
        self.torch.autograd.grad(output, list(inputs), self.seed(seed), create_graph=create_graph)

    def anomaly(self) -> Any:
        return self.torch.autograd.detect_anomaly()


def cancelling_square_roots(e: Any, x: Any) -> tuple[Any, Any]:
    """y = sqrt(h) - sqrt(h * 1) at h = 0: h's two contributions are inf and -inf, whose sum
    is nan; no single backward formula makes it."""
    h = x * 1.0
    return h, h.sqrt() - (h * 1.0).sqrt()


def _sum_of_inf_and_minus_inf(e: Any) -> None:
    _, y = cancelling_square_roots(e, e.leaf(0.0))
    e.backward([y], [1.0])


def _the_same_sum_at_a_leaf(e: Any) -> None:
    x = e.leaf(0.0)  # the nan is only in x's own gradient: no backward function returns it
    y = x.sqrt() - (x * 1.0).sqrt()
    e.backward([y], [1.0])


def _the_same_sum_with_create_graph(e: Any) -> None:
    x = e.leaf(0.0)
    _, y = cancelling_square_roots(e, x)
    e.grad(y, [x], 1.0, create_graph=True)


def _a_nan_seed(e: Any) -> None:
    e.backward([e.leaf(2.0) * 3.0], [nan])


def _a_nan_seed_with_create_graph(e: Any) -> None:
    x = e.leaf(2.0)
    e.grad(x * 3.0, [x], nan, create_graph=True)


def _a_nan_seed_that_a_mask_stops(e: Any) -> None:
    e.backward([e.leaf(-1.0).relu()], [nan])  # relu's mask gives exactly 0


def _a_nan_seed_that_x_to_the_0_stops(e: Any) -> None:
    e.backward([e.leaf(2.0) ** 0], [nan])


def _a_nan_sum_that_a_mask_stops(e: Any) -> None:
    r = (e.leaf(0.0) - 1.0).relu()
    e.backward([r.sqrt() - (r * 1.0).sqrt()], [1.0])


def _sqrt_at_0_times_0(e: Any) -> None:
    e.backward([e.leaf(0.0).sqrt() * 0], [1.0])


def _a_nan_input_with_a_finite_gradient(e: Any) -> None:
    e.backward([e.leaf(nan) * 3.0], [1.0])


def _a_nan_seed_on_a_leaf(e: Any) -> None:
    e.backward([e.leaf(0.0)], [nan])


def _a_nan_seed_among_several_outputs(e: Any) -> None:
    x = e.leaf(0.0)
    e.backward([x * 1.0, x * 2.0], [1.0, nan])


CASES: list[tuple[Callable[[Any], None], bool]] = [
    (_sum_of_inf_and_minus_inf, True),
    (_the_same_sum_at_a_leaf, False),
    (_the_same_sum_with_create_graph, True),
    (_a_nan_seed, True),
    (_a_nan_seed_with_create_graph, True),
    (_a_nan_seed_that_a_mask_stops, False),
    (_a_nan_seed_that_x_to_the_0_stops, False),
    (_a_nan_sum_that_a_mask_stops, False),
    (_sqrt_at_0_times_0, True),
    (_a_nan_input_with_a_finite_gradient, False),
    (_a_nan_seed_on_a_leaf, False),
    (_a_nan_seed_among_several_outputs, True),
]
"""Each case and whether PyTorch's anomaly mode raises for it (vjpgrad must agree)."""


def raises_under_anomaly(engine: Any, case: Callable[[Any], None]) -> bool:
    try:
        with engine.anomaly():
            case(engine)
    except engine.error:
        return True
    return False


@pytest.mark.parametrize(("case", "raises"), CASES, ids=[case.__name__.strip("_") for case, _ in CASES])
def test_detect_anomaly_raises_exactly_where_pytorch_does(case: Callable[[Any], None], raises: bool) -> None:
    assert raises_under_anomaly(Ours, case) == raises


@pytest.mark.filterwarnings("ignore::UserWarning")  # PyTorch warns that anomaly mode is slow, and where
@pytest.mark.parametrize(("case", "raises"), CASES, ids=[case.__name__.strip("_") for case, _ in CASES])
def test_pytorch_raises_in_the_same_cases(case: Callable[[Any], None], raises: bool) -> None:
    assert raises_under_anomaly(Torch(), case) == raises


def _gradient_with_respect_to_the_node_before_the_nan(e: Any) -> None:
    h, y = cancelling_square_roots(e, e.leaf(0.0))
    e.grad(y, [h], 1.0)  # h's gradient is nan, but nothing below h is needed


def _a_nan_seed_of_an_output_taken_as_its_own_input(e: Any) -> None:
    y = e.leaf(2.0) * 1.0
    e.grad(y, [y], nan)  # no backward function is needed at all


def _a_nan_seed_among_several_outputs_that_a_mask_stops(e: Any) -> None:
    x = e.leaf(-1.0)
    e.backward([x.relu(), x * 2.0], [nan, 1.0])  # PyTorch checks the seeds of several outputs


KNOWN_DIFFERENCES = [
    (_gradient_with_respect_to_the_node_before_the_nan, False),
    (_a_nan_seed_of_an_output_taken_as_its_own_input, False),
    (_a_nan_seed_among_several_outputs_that_a_mask_stops, True),
]


@pytest.mark.xfail(
    strict=True,
    reason="vjpgrad's pass runs every node it reaches, where PyTorch's runs only those the inputs "
    "of gradients() need, and PyTorch checks the seeds of several outputs (its GraphRoot) for nan",
)
@pytest.mark.parametrize(
    ("case", "raises"), KNOWN_DIFFERENCES, ids=[case.__name__.strip("_") for case, _ in KNOWN_DIFFERENCES]
)
def test_detect_anomaly_known_differences_from_pytorch(case: Callable[[Any], None], raises: bool) -> None:
    assert raises_under_anomaly(Ours, case) == raises


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    ("case", "raises"), KNOWN_DIFFERENCES, ids=[case.__name__.strip("_") for case, _ in KNOWN_DIFFERENCES]
)
def test_what_pytorch_does_in_the_known_differences(case: Callable[[Any], None], raises: bool) -> None:
    assert raises_under_anomaly(Torch(), case) == raises


def test_the_anomaly_error_names_the_operation_that_passed_the_nan_on() -> None:
    with vjpgrad.detect_anomaly():
        x = Value(0.0)
        _, y = cancelling_square_roots(Ours, x)
        with pytest.raises(FloatingPointError, match=rf"backward of 'mul' produced nan.*{THIS_FILE}:\d+"):
            y.backward()
    assert x.grad == 0.0  # a pass that fails changes no .grad


def test_without_anomaly_mode_the_same_nan_arrives_silently() -> None:
    x = Value(0.0)
    cancelling_square_roots(Ours, x)[1].backward()
    assert math.isnan(x.grad)


# ---- what a traceback shows: the user's frames, every frame on request ---------------------------


def test_full_tracebacks_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    import traceback

    monkeypatch.setenv("VJPGRAD_FULL_TRACEBACK", "1")
    y = Vector([1.0, 2.0]) * 2
    with pytest.raises(RuntimeError) as caught:
        y.backward()
    names = [f.name for f in traceback.extract_tb(caught.value.__traceback__)]
    assert "seeds_for" in names
