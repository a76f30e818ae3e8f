"""vjpgrad.compile's replays: the same numbers and the same gradients as eager code, bit for bit, on
every operation of the table at the IEEE-754 edges and on random programs; gradients accumulated,
graphs retained and freed, outputs seeded and left unseeded as eager code does; calls from many
threads; the straight-line code it writes; and the corners: constants of either sign of zero,
passes that free what two calls of one function ran, anomaly mode, Values made inside and
returned, float arguments returned as they were given, and the labels of the results. (What is
structure, data or refused is in test_compile_rules.py; random programs with refusals in
test_compile_fuzz.py.)
"""

from __future__ import annotations

import ast
import dataclasses
import math
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from _helpers import GRAPH_OPS, bits
from hypothesis import given
from hypothesis import strategies as st
from op_cases import CASES, EDGES, MAX_WITH_CONSTANTS, OpCase, Spelling, value_points

import vjpgrad
from vjpgrad import Value, Vector, explain, gradients
from vjpgrad.compiler import write
from vjpgrad.compiler.record import describe
from vjpgrad.compiler.run import FRAMES_KEPT, Frames

# ---- every operation of the table, eager and compiled --------------------------------------------


def eager_and_compiled(fn: Callable[..., Any], points: Sequence[tuple[float, ...]], seed: float) -> None:
    compiled = vjpgrad.compile(fn)
    for point in points:
        results = []
        for f in (fn, compiled):
            xs = [Value(x) for x in point]
            out = f(*xs)
            if out.requires_grad:
                out.backward(seed)
            results.append((bits(out.data), [bits(x.grad) for x in xs]))
        assert results[1] == results[0], (point, seed)
    assert compiled.recordings == 1


FORMS = [(case, form) for case in CASES for form in case.spellings()]


@pytest.mark.slow  # random programs, or every operation compiled: seconds
@pytest.mark.parametrize(("case", "form"), FORMS, ids=[f"{case.name}: {form.text}" for case, form in FORMS])
@pytest.mark.parametrize("seed", [1.0, -0.5, 0.0])
def test_each_operation_compiled_equals_eager_bit_for_bit(case: OpCase, form: Spelling, seed: float) -> None:
    for numbers in form.number_choices():  # each number a constant of its own compiled function
        eager_and_compiled(form.of_values(numbers), value_points(form.values), seed)


@pytest.mark.parametrize(("name", "fn", "count"), MAX_WITH_CONSTANTS, ids=[m[0] for m in MAX_WITH_CONSTANTS])
@pytest.mark.parametrize("seed", [1.0, -0.5, 0.0])
def test_max_with_constants_compiled_equals_eager_bit_for_bit(
    name: str, fn: Callable[..., Any], count: int, seed: float
) -> None:
    eager_and_compiled(fn, value_points(count), seed)


@pytest.mark.parametrize("exponent", [4.0, -1.0])
def test_a_power_with_a_constant_made_inside_compiles_to_eagers_gradient(exponent: float) -> None:
    def fn(x: Value) -> Value:
        return x ** Value(exponent, requires_grad=False)

    compiled = vjpgrad.compile(fn)
    differ = []
    for k in range(200):
        x0 = 1.0 + k / 97.0
        grads = []
        for f in (fn, compiled):
            x = Value(x0)
            f(x).backward()
            grads.append(bits(x.grad))
        differ += [x0] if grads[0] != grads[1] else []
    assert differ == []


def test_a_custom_rule_that_divides_by_zero_works_while_recording() -> None:
    @vjpgrad.custom_op
    def root(x: float) -> float:
        return math.sqrt(x)

    @root.derivative
    def _(x: Any, out: Any) -> Any:
        return 0.5 / out

    f = vjpgrad.compile(lambda x: root(x) * 2.0)
    x = Value(0.0)
    f(x).backward()
    assert x.grad == math.inf


def test_a_custom_rule_runs_in_the_compiled_backward_and_one_that_raises_raises_there_adding_nothing() -> None:
    """Eager code calls a custom rule as the operation runs; compiled code, as a pass reaches the
    operation (docs/how-to/custom-ops.md, "When the rule runs"): the numbers are the same, and a
    rule that raises for an input raises in the compiled backward, before any .grad changes."""

    @vjpgrad.custom_op
    def double(x: float) -> float:
        return 2.0 * x

    @double.derivative
    def _(x: Any, out: Any) -> Any:
        if x > 1.0:
            raise ValueError("only for x <= 1")
        return 2.0

    f = vjpgrad.compile(lambda x, w: double(x) * w)
    w = Value(1.5)
    for _call in range(3):  # recorded (eagerly: the rule runs with the operation), compiled, replayed
        x = Value(0.5)
        f(x, w).backward()
        assert (x.grad, w.grad) == (3.0, 1.0)
        w.grad = 0.0
    x = Value(3.0)
    y = f(x, w)  # the compiled forward does not call the rule
    assert y.data == 9.0
    with pytest.raises(ValueError, match="only for x <= 1"):
        y.backward()
    assert (x.grad, w.grad) == (0.0, 0.0)  # nothing was added, not even to w, whose edge needs no rule
    with pytest.raises(ValueError, match="only for x <= 1"):
        double(Value(3.0))  # eager code: as the operation runs


# ---- random programs -----------------------------------------------------------------------------


numbers = st.sampled_from(EDGES) | st.floats(-5, 5)


def table_step(form: Spelling) -> Callable[[Any, Any, int], Any]:
    """A form as a step of a random program: of one or two earlier nodes, and an index that picks
    its numbers (x ** k for each k of the row)."""
    choices = form.number_choices()
    return lambda x, y, k: form.of_values(choices[k % len(choices)])(*(x, y)[: form.values])


# every operation of the table, as a step of a random program: (name, function of two nodes and an index)
OPS: list[tuple[str, Callable[[Any, Any, int], Any]]] = [
    *[(name, lambda x, y, k, f=f: f(x, y)) for name, f in GRAPH_OPS],
    *[(f"{case.name}: {form.text}", table_step(form)) for case, form in FORMS],
    *[(name, lambda x, y, k, f=f, n=count: f(*(x, y)[:n])) for name, f, count in MAX_WITH_CONSTANTS],
]


programs = st.tuples(
    st.lists(numbers, min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, len(OPS) - 1), st.integers(0, 10**6), st.integers(0, 10**6)), max_size=20),
    st.integers(1, 3),  # outputs
)


def build(program: Any, leaves: list[Any]) -> list[Any]:
    _, steps, n_out = program
    nodes = list(leaves)
    for op, i, j in steps:
        nodes.append(OPS[op][1](nodes[i % len(nodes)], nodes[j % len(nodes)], j))
    return nodes[-n_out:]


def program_eager_and_compiled(program: Any, seeds: list[float]) -> tuple[list[Any], list[Any]]:
    """Run a program eagerly and compiled (twice: the second call replays), seeded alike;
    returns (outputs' data, leaves' grads) of each."""
    xs = program[0]
    results = []
    for compiled in (False, True):
        leaves = [Value(x) for x in xs]
        half = len(leaves) // 2
        params, args = leaves[:half], leaves[half:]

        def fn(*arguments: Value, params: list[Value] = params) -> Vector:
            return Vector(build(program, [*params, *arguments]))

        f = vjpgrad.compile(fn) if compiled else fn
        if compiled:
            f(*args)  # the recording; the call below replays
        out = f(*args)
        outputs = [y.data for y in out]
        live = [k for k, y in enumerate(out) if y.requires_grad]
        if live:
            Vector([out[k] for k in live]).backward([seeds[k] for k in live])
        results.append(([bits(d) for d in outputs], [bits(v.grad) for v in leaves]))
    return results[0], results[1]


@pytest.mark.slow  # random programs, or every operation compiled: seconds
@given(programs, st.lists(st.floats(-3, 3) | st.sampled_from([0.0, math.inf]), min_size=3, max_size=3))
def test_compiled_equals_eager_bit_for_bit(program: Any, seeds: list[float]) -> None:
    eager, compiled = program_eager_and_compiled(program, seeds)
    assert compiled == eager


def test_the_stack_overflow_answers_example_1_compiled() -> None:
    f = vjpgrad.compile(lambda a, b, c: 3 * a + 2 * b * b + vjpgrad.log(c))
    for _ in range(2):
        a, b, c = Vector([1.0, 2.0, 3.0]), Vector([3.0, 4.0, 5.0]), Vector([6.0, 7.0, 8.0])
        f(a, b, c).backward([0.1, 1.0, 0.0001])
        assert (a.grad.tolist(), b.grad.tolist()) == (
            [0.30000000000000004, 3.0, 0.00030000000000000003],
            [1.2000000000000002, 16.0, 0.002],
        )
        assert c.grad.tolist() == [0.1 / 6, 1.0 / 7, 0.0001 / 8]
    assert f.recordings == 1


# ---- accumulation, retained and freed graphs -----------------------------------------------------


def test_accumulation_and_retain_graph_are_eager_semantics() -> None:
    a = Value(2.0)
    f = vjpgrad.compile(lambda a: a * a * a)
    y = f(a)
    y.backward(retain_graph=True)
    y.backward()
    assert a.grad == 2 * 12.0
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    assert a.grad == 24.0  # the refused pass changed nothing


def test_gradients_from_outside_the_call_add_in_eagers_order() -> None:
    w = Value(0.7)

    def step(x: float) -> Value:
        return (w * x).tanh() * w

    compiled = vjpgrad.compile(step)
    compiled(0.2)
    grads = []
    for f in (step, compiled):
        w.grad = 0.0
        (f(1.4) + f(1.0) + f(-0.3) + w * w * 0.3).backward()
        grads.append(bits(w.grad))
    assert grads[0] == grads[1]


def test_a_value_both_passed_and_closed_over_sums_in_eagers_order() -> None:
    x = Value(1.0)

    def g(a: Value) -> Value:
        return a * 1e16 + x * 1.0 + a * -1e16

    compiled = vjpgrad.compile(g)
    compiled(x)
    for fn in (g, compiled):
        x.grad = 0.0
        fn(x).backward()
        assert x.grad == 0.0


def test_two_outputs_sharing_a_node_free_it_as_eager_code_does() -> None:
    def f(x: Value) -> tuple[Value, Value]:
        h = x * x
        return h * 2.0, h * 3.0

    compiled = vjpgrad.compile(f)
    compiled(Value(1.0))
    for fn in (f, compiled):
        x = Value(1.5)
        y1, y2 = fn(x)
        y1.backward()
        with pytest.raises(RuntimeError, match="retain_graph=True"):
            y2.backward()
        assert x.grad == 6.0  # the failed pass changed nothing
    for fn in (f, compiled):  # with retain_graph, both passes go through
        x = Value(1.5)
        y1, y2 = fn(x)
        y1.backward(retain_graph=True)
        y2.backward()
        assert x.grad == 15.0


def test_a_compiled_result_feeds_eager_operations() -> None:
    a = Value(1.5)
    f = vjpgrad.compile(lambda a: a.sin() * a)
    z = f(a).exp() * 2.0
    z.backward()
    b = Value(1.5)
    (((b.sin() * b).exp()) * 2.0).backward()
    assert a.grad == b.grad


def test_a_compiled_function_inside_another_is_recorded_by_it() -> None:
    inner = vjpgrad.compile(lambda x: x * x)
    inner(Value(1.0))
    outer = vjpgrad.compile(lambda x: inner(x) + 1.0)
    assert [outer(Value(2.0)).data, outer(Value(3.0)).data] == [5.0, 10.0]
    fresh_inner = vjpgrad.compile(lambda x: x * x)
    outer2 = vjpgrad.compile(lambda x: fresh_inner(x) * 2.0 + 1.0)
    assert [outer2(Value(2.0)).data, outer2(Value(3.0)).data] == [9.0, 19.0]


def test_a_compiled_function_sees_the_requires_grad_that_eager_gives() -> None:
    def f(x: Value) -> tuple[Value, bool, bool, bool]:
        y = x * x * 3.0
        with vjpgrad.no_grad():
            z = x * 2.0
        k = Value(3.0, requires_grad=False) * 2.0
        return y + z + k, y.requires_grad, z.requires_grad, k.requires_grad

    eager = f(Value(1.0))[1:]
    assert vjpgrad.compile(f)(Value(1.0))[1:] == eager == (True, False, False)


def test_a_gradient_taken_inside_a_compiled_function() -> None:
    def f(x: Value, y: Value) -> Value:
        t = x * y * 3.0
        gx, gy = gradients(t, [x, y], create_graph=True)  # 3y, 3x
        return gx * x + gy

    compiled = vjpgrad.compile(f)
    for a, b in [(2.0, 5.0), (-1.0, 0.5)]:
        assert compiled(Value(a), Value(b)).data == f(Value(a), Value(b)).data == 3 * b * a + 3 * a


# ---- outputs -------------------------------------------------------------------------------------


def test_compiled_vector_outputs_with_shared_nodes_equal_eager() -> None:
    def fn(x: Value, y: Value) -> Vector:
        t = x * y
        return Vector([t.sin(), t + x, (t - y).relu(), t])

    compiled = vjpgrad.compile(fn)
    for point in [(0.5, -1.5), (2.0, 3.0), (-1.0, 0.0)]:
        results = []
        for f in (fn, compiled):
            x, y = Value(point[0]), Value(point[1])
            f(x, y).backward([1.0, -2.0, 0.5, 3.0])
            results.append((bits(x.grad), bits(y.grad)))
        assert results[0] == results[1]


def test_a_compiled_leaf_that_is_also_an_output_gets_its_seed_first_as_eager() -> None:
    def fn(x: Value) -> Vector:
        return Vector([x, (1.0 + x * x) ** (x * 0.5)])

    compiled = vjpgrad.compile(fn)
    compiled(Value(0.3))  # the recording; the calls below replay
    results = []
    for f in (fn, compiled):
        x = Value(-1.0)
        f(x).backward([1.0, 1.0])
        results.append(bits(x.grad))
    assert results[1] == results[0]


def test_one_output_of_a_vector_backward_alone_is_what_eager_gives() -> None:
    for compiled in (False, True):
        x = Value(0.0)

        def f(x: Value) -> Vector:
            return Vector([x.log(), x * 2.0])

        g = vjpgrad.compile(f) if compiled else f
        g(Value(1.0))
        out = g(x)
        out[1].backward()  # log's inf derivative at 0 is not reached: no nan
        assert x.grad == 2.0


def test_an_outputs_grad_has_what_the_operations_inside_handed_it() -> None:
    def fn(x: Value) -> Vector:
        a = x * 3
        return Vector([a, a * 2])

    compiled = vjpgrad.compile(fn)
    compiled(Value(1.0))
    for f in (fn, compiled):
        x = Value(1.0)
        y = f(x)
        y.backward([1.0, 1.0])
        assert (y[0].grad, y[1].grad, x.grad) == (3.0, 1.0, 9.0)


def test_an_argument_the_seeded_outputs_do_not_use_is_not_reached() -> None:
    def f(a: Value, b: Value) -> Value:
        return a * 2.0

    def args() -> tuple[Value, Value]:
        x = Value(2.0)
        return x, x * math.inf

    compiled = vjpgrad.compile(f)
    compiled(Value(1.0), Value(1.0))
    for fn in (f, compiled):
        x, b = args()
        fn(x, b).backward()
        assert x.grad == 2.0


def test_an_output_that_is_not_seeded_gets_what_a_seeded_one_hands_it() -> None:
    def g(x: Value) -> list[Value]:
        h = x * 3.0
        return [h, h * h]

    compiled = vjpgrad.compile(g)
    compiled(Value(1.0))
    for fn in (g, compiled):
        h, loss = fn(Value(2.0))
        loss.backward()
        assert h.grad == 12.0


def test_a_tuple_result_is_a_tuple_and_a_number_result_a_number() -> None:
    f = vjpgrad.compile(lambda x, lr: (x * 2.0, lr * 2))
    _, n = f(Value(1.0), 0.25)
    assert isinstance(f(Value(1.0), 0.25), tuple)
    assert n == 0.5
    assert isinstance(n, float)


def test_backward_of_many_outputs_one_at_a_time_keeps_its_code() -> None:
    f = vjpgrad.compile(lambda x: [x * float(k) for k in range(1, 21)])
    x = Value(1.0)
    for _ in range(2):
        for out in f(x):
            out.backward()
    assert x.grad == 2 * sum(range(1, 21))
    kept = f._last.code._backwards  # type: ignore[union-attr]  # the last recording's reverse passes
    assert sum(1 for seeded, _ in kept if len(seeded) == 1) == 20  # each written once, all kept


# ---- anomaly mode through a compiled call --------------------------------------------------------


def test_anomaly_mode_sees_a_nan_a_compiled_call_makes() -> None:
    f = vjpgrad.compile(lambda x: x.sqrt() * 0.0)
    f(Value(1.0))
    with vjpgrad.detect_anomaly(), pytest.raises(FloatingPointError, match=r"vjpgrad\.compile replays"):
        f(Value(0.0)).backward()


def test_anomaly_mode_sees_a_nan_inside_a_compiled_call() -> None:
    def f(x: Value) -> Value:
        return x.relu().sqrt() * 0.0  # sqrt'(0) = inf, 0 * inf = nan, then masked by relu

    compiled = vjpgrad.compile(f)
    compiled(Value(-2.0))
    for fn in (f, compiled):
        with pytest.raises(FloatingPointError, match="sqrt"), vjpgrad.detect_anomaly():
            fn(Value(-1.0)).backward()


def test_anomaly_mode_names_the_operation_and_its_line_as_eager_code_does_at_every_call() -> None:
    """The operation is named as eager code names it (``'mul'``, not the ``*`` a comment shows) at
    every call; the first call, which records while it runs eagerly, tells the line that made the
    node, as eager code does (the replays cannot: they say to call the function uncompiled)."""

    def f(a: Value, b: Value) -> Value:
        return (a * b).log()  # log'(0) = inf, and mul's 0.0 * -inf is nan

    def refused(fn: Any) -> str:
        with pytest.raises(FloatingPointError) as error, vjpgrad.detect_anomaly():
            fn(Value(0.0), Value(-1.0)).backward()
        return str(error.value)

    eager = refused(f)
    assert eager.startswith("backward of 'mul' produced nan for its operand 1")
    assert "test_compile_replay.py:" in eager
    compiled = vjpgrad.compile(f)
    assert refused(compiled) == eager  # recorded as it ran eagerly: the same words, the same line
    for _ in range(2):
        assert refused(compiled).startswith("backward of 'mul' produced nan for its operand 1 (in a function vjpgrad")


def test_anomaly_mode_goes_through_a_compiled_call_and_explain_says_to_call_it_uncompiled() -> None:
    def inner(x: Value) -> Value:
        return x * x + x.sin()

    compiled = vjpgrad.compile(inner)
    compiled(Value(0.1))
    x = Value(0.5)
    y = compiled(x) * 2.0 + x
    with pytest.raises(RuntimeError, match="call the function uncompiled"):
        explain(y)
    with vjpgrad.detect_anomaly():
        y.backward(retain_graph=True)
    expected = 2.0 * (2 * 0.5 + math.cos(0.5)) + 1.0
    assert math.isclose(x.grad, expected, rel_tol=1e-15)
    x.grad = 0.0
    y.backward()
    assert math.isclose(x.grad, expected, rel_tol=1e-15)


def test_anomaly_mode_goes_on_past_a_compiled_call() -> None:
    compiled = vjpgrad.compile(lambda z: z * z)
    compiled(Value(1.0))
    x = Value(1.5)
    y = compiled(x * 3.0)  # the pass runs the compiled call, then the multiplication before it
    with vjpgrad.detect_anomaly():
        y.backward()
    assert x.grad == 27.0


# ---- threads -------------------------------------------------------------------------------------


def test_threads_each_get_their_own_results() -> None:
    w = Value(1.5)
    f = vjpgrad.compile(lambda x: (w * x).tanh() + x * x)
    results: dict[float, float] = {}

    def work(x0: float) -> None:
        for _ in range(50):
            x = Value(x0)
            f(x).backward()
            results[x0] = x.grad

    threads = [threading.Thread(target=work, args=(float(k),)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x0, grad in results.items():
        x = Value(x0)
        ((w * x).tanh() + x * x).backward()
        assert grad == x.grad


def test_a_pass_called_while_it_runs_gets_a_frame_of_its_own_and_one_that_raised_is_dropped() -> None:
    # a pass is a generator whose frame serves call after call (write.kept_frame); a call that
    # comes while it runs (another thread, a custom operation's code calling the function again)
    # must not be sent into the running frame
    made = []

    def body() -> Any:
        made.append(1)
        (n,) = yield
        while True:
            if n < 0:
                raise ValueError(n)
            (n,) = yield (n if n == 0 else n + frames(n - 1))

    frames = Frames(body)
    assert frames(3) == 6  # 3 + 2 + 1 + 0, each call inside the one before
    assert len(made) == 4
    assert frames(3) == 6
    assert len(made) == 6  # FRAMES_KEPT idle frames served again; the two past them were dropped
    assert FRAMES_KEPT == 2
    with pytest.raises(ValueError, match="-1"):
        frames(-1)
    assert frames(0) == 0  # the frame that raised is gone, not sent into again; the other serves
    assert len(made) == 6


def _first_replays_at_once(fast: Any, failures: list[str]) -> None:
    """Eight threads make the first replays of ``fast`` (recorded on 40 Values) at once, each
    differentiating one output; what went wrong in any is added to ``failures``."""
    barrier = threading.Barrier(8)

    def work() -> None:
        xs = [Value(float(k)) for k in range(40)]
        barrier.wait()
        try:
            outs = fast(xs)
            outs[3].backward()
            if [y.data for y in outs] != [x * 0.5 + x for x in range(40)] or xs[3].grad != 1.5:
                failures.append("numbers differ from eager's")
        except Exception as error:  # any error here is the failure
            failures.append(f"{type(error).__name__}: {error}")

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_threads_replaying_a_recording_for_the_first_time_at_once_each_get_eagers_numbers() -> None:
    # The first replay of each output notes which operands it takes and how to pick them; a thread
    # that found the first note made and not the second raised KeyError. Found by an outside
    # review fuzzing compile from several threads.
    w = Value(0.5)
    failures: list[str] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: the window is a few bytecodes wide
    try:
        for _ in range(25):
            fast = vjpgrad.compile(lambda xs: [x * w + x for x in xs])
            fast([Value(1.0) for _ in range(40)])  # recorded: the next calls are the first replays
            _first_replays_at_once(fast, failures)
    finally:
        sys.setswitchinterval(interval)
    assert failures == []


class _HoldingNamespace(dict):  # type: ignore[type-arg]
    """The code's namespace, holding the thread named "first" for a moment right after its
    reverse pass's source defines ``backward`` and before the loader takes it out: the window in
    which a second thread writing another pass into the same namespace could land on top."""

    def __init__(self, base: dict[str, Any], inside: threading.Event, other_done: threading.Event) -> None:
        super().__init__(base)
        self.inside, self.other_done = inside, other_done

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        if key == "backward" and threading.current_thread().name == "first":
            self.inside.set()
            self.other_done.wait(timeout=0.5)


def test_threads_writing_two_reverse_passes_of_one_recording_at_once_each_get_their_own() -> None:
    # Each set of seeded outputs gets its reverse pass written and loaded into the code's
    # namespace on its first use. Two threads doing it at once could take each other's
    # ``backward`` (an outside review asked); they cannot, because every pass holds
    # ``graph.pass_lock``: here the first thread is held inside the window, and the second
    # waits for it instead of landing on top.
    def f(xs: list[Value]) -> list[Value]:
        return [xs[0] * xs[1] + xs[0], (xs[0] + xs[1]).tanh() * xs[1]]

    compiled = vjpgrad.compile(f)
    compiled([Value(0.5), Value(-1.5)])  # recorded
    Vector(compiled([Value(0.5), Value(-1.5)])).backward([1.0, 1.0])  # the code written: the pass of both
    assert compiled._last is not None
    code = compiled._last.code
    inside, other_done = threading.Event(), threading.Event()
    code.program.writer.namespace = _HoldingNamespace(code.program.namespace, inside, other_done)
    grads: dict[int, list[Any]] = {}
    errors: list[BaseException] = []

    def seed(output: int) -> None:
        try:
            xs = [Value(0.25), Value(2.0)]
            compiled(xs)[output].backward()
            grads[output] = [bits(x.grad) for x in xs]
        except BaseException as error:  # reported by the assertion below
            errors.append(error)
        finally:
            if threading.current_thread().name == "second":
                other_done.set()

    first = threading.Thread(target=seed, args=(0,), name="first")
    first.start()
    assert inside.wait(timeout=10)
    second = threading.Thread(target=seed, args=(1,), name="second")
    second.start()
    first.join()
    second.join()
    assert errors == []
    for output in (0, 1):
        xs = [Value(0.25), Value(2.0)]
        f(xs)[output].backward()
        assert grads[output] == [bits(x.grad) for x in xs]


def test_threads_each_get_their_own_float_argument() -> None:
    import threading

    compiled = vjpgrad.compile(lambda x, lr: x * Value(lr, requires_grad=False))
    compiled(Value(1.0), 1.0)
    wrong: list[float] = []

    def worker(lr: float) -> None:
        for _ in range(300):
            got = compiled(Value(1.0), lr).data
            if got != lr:
                wrong.append(got)

    threads = [threading.Thread(target=worker, args=(float(k),)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


@pytest.mark.slow  # random programs, or every operation compiled: seconds
def test_a_call_leaves_no_reference_cycles_behind() -> None:
    # cycles would keep every call's arguments and graph alive until the cyclic collector ran
    import gc

    w = Value(0.5)
    f = vjpgrad.compile(lambda xs: (Vector(xs) * w).relu().sum())
    f([Value(1.0), Value(-2.0)]).backward()
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            f([Value(1.0), Value(-2.0)]).backward()
        assert gc.collect() == 0
    finally:
        gc.enable()


# ---- the code it writes --------------------------------------------------------------------------


def test_the_source_is_the_code_that_runs_a_value_read_once_written_into_its_reader() -> None:
    f = vjpgrad.compile(lambda a, b, c: 3 * a + 2 * b * b + vjpgrad.log(c))
    f(Value(1.0), Value(3.0), Value(6.0))
    source = f.source
    # each pass a generator whose one frame serves every call, its arguments sent in
    assert source.startswith("def forward():  # one frame for every call: each call's arguments sent in\n")
    assert "\n    inputs, = yield\n    while True:\n        x0, x1, x2, = inputs\n" in source
    assert "\ndef backward():  # one frame for every call" in source
    assert "\n    seeds, values, inputs, start = yield\n    while True:\n" in source
    # t2 = 2b is read twice (by t3 and by the reverse pass): its own line; t3 = t2*b, t4 and the
    # log are read once each and no reverse pass reads them: written into t6's expression, in
    # the order the lines ran (t1 was made before t2: its line comes first)
    assert (
        "\n        t1 = 3.0 * x0  # *\n        t2 = 2.0 * x1  # *\n        t6 = (t1 + (t2 * x1)) + (_log(x2))  # +\n"
        in source
    )
    assert "\n        inputs, = yield (t2, t6)\n" in source  # what the reverse pass reads, and the result
    # log's gradient is g / x, as PyTorch's; t5's gradient is t6's (an addition's operand), read there
    assert "g_x2 += g_t6 / x2" in source
    assert "g_x1 = g_x1 + (g_t6 * t2) + (g_t2 * 2.0)" in source  # x1's two contributions, one statement
    assert "# t5 = _log(x2)" in source  # the reverse pass shows each operation's own line


def test_expressions_written_into_their_readers_keep_eagers_order_of_operations() -> None:
    # each forward line's operands are evaluated left to right: an operation read once is
    # written into its reader only where that keeps the order in which the operations run
    # (which of two failing operations fails first shows it), and adding in another order
    # changes the bits
    @vjpgrad.custom_op
    def checked(x: float) -> float:
        if x < 0.0:
            raise ValueError(f"checked({x})")
        return x * 1.0

    @checked.derivative
    def _(x: float, out: float) -> float:
        return 1.0

    def f(a: Value, b: Value, c: Value, d: Value, e: Value) -> Value:
        first = checked(a)  # read once, by the line of `both`, after `second` ran
        second = checked(b) * 2.0
        both = second + first
        total = (c + d) + e  # (1e16 + 1.0) + -1e16 is 0.0; 1e16 + (1.0 + -1e16) is 2.0
        return both * c + total

    def run(g: Any, numbers: list[float]) -> list[Any]:
        # a and b take no gradient: no reverse pass reads what is computed from them
        xs = [Value(x, requires_grad=k >= 2) for k, x in enumerate(numbers)]
        y = g(*xs)
        y.backward()
        return [bits(y.data), *(bits(x.grad) for x in xs)]

    compiled = vjpgrad.compile(f)
    numbers = [3.0, 0.5, 1e16, 1.0, -1e16]
    assert [run(compiled, numbers) for _ in range(3)] == [run(f, numbers)] * 3
    for g in (f, compiled):
        with pytest.raises(ValueError, match=r"checked\(-1\.0\)"):
            run(g, [-1.0, -2.0, 1e16, 1.0, -1e16])


def test_a_long_sum_is_written_in_expressions_cpython_parses_with_eagers_bits() -> None:
    # 3,000 terms read once each: one expression would be nested 3,000 deep (CPython's parser
    # stops at 200 parentheses), so the forward pass starts a new line every ``NESTED`` levels
    def f(xs: list[Value]) -> Value:
        total = xs[0] * xs[1]
        for k in range(2, len(xs)):
            total = total + xs[k] * 1.5
        return total

    def run(g: Any) -> list[Any]:
        xs = [Value(0.1 * k - 7.3) for k in range(3000)]
        y = g(xs)
        y.backward()
        return [bits(y.data), *(bits(x.grad) for x in xs)]

    compiled = vjpgrad.compile(f)
    assert [run(compiled) for _ in range(2)] == [run(f)] * 2
    forward = compiled.source.split("def backward(")[0]
    depth = max(
        len(line) - len(line.lstrip("(")) for line in (line.split(" = ", 1)[-1] for line in forward.splitlines())
    )
    assert 8 <= depth <= write.NESTED + 1


def test_an_operand_a_template_reads_twice_keeps_its_own_line() -> None:
    # relu is written ``0.0 if x < 0.0 else x``: an expression in place of x would run twice
    # (a and b take no gradient: no reverse pass reads their product, which is read once)
    f = vjpgrad.compile(lambda a, b, c: (a * b).relu() + c)
    for _ in range(2):
        y = f(Value(-2.0, requires_grad=False), Value(3.0, requires_grad=False), Value(0.5))
        y.backward()
    forward = f.source.split("def backward(")[0]
    assert "\n        t1 = x0 * x1  # *\n" in forward
    assert forward.count("x0 * x1") == 1


INLINE: list[tuple[str, list[Callable[..., Any]], int]] = [
    *[
        (f"{case.name}: {form.text}", [form.of_values(numbers) for numbers in form.number_choices()], form.values)
        for case, form in FORMS
        if case.op.arity  # not max, whose tie count is a number found as the code runs
    ],
    ("x ** a constant made inside", [lambda x: x ** Value(2.5, requires_grad=False)], 1),
    ("a constant made inside ** x", [lambda x: Value(0.0, requires_grad=False) ** x], 1),
]
"""Each form of each operation of the table, once for each of its numbers."""


@pytest.mark.slow  # random programs, or every operation compiled: seconds
@pytest.mark.parametrize(("name", "functions", "arity"), INLINE, ids=[i[0] for i in INLINE])
def test_the_backward_of_a_built_in_operation_is_generated_inline(
    name: str, functions: list[Callable[..., Any]], arity: int
) -> None:
    # straight-line code: every edge of a table operation is written out, masks as conditional
    # expressions; only a rule that needs numbers (a custom operation's) is called as the code runs
    for fn in functions:
        compiled = vjpgrad.compile(fn)
        xs = [Value(0.5 + k) for k in range(arity)]
        compiled(*xs).backward()
        backward = compiled.source.split("def backward")[1]
        assert "_s = " not in backward, compiled.source


def test_masks_are_inline_conditionals() -> None:
    compiled = vjpgrad.compile(lambda x, y: x**y + x.relu() + abs(y))
    compiled(Value(0.5), Value(2.0)).backward()
    backward = compiled.source.split("def backward")[1]
    assert "0.0 if x1 == 0.0 else" in backward
    assert "0.0 if (x0 == 0.0) and (x1 >= 0.0) else" in backward
    assert "0.0 if t2 <= 0.0 else" in backward
    assert "_sign(x1)" in backward


def test_user_text_never_reaches_the_code() -> None:
    hostile = "\nimport os; os.system('touch /tmp/vjpgrad-pwned')\n"
    w = Value(2.0, label=hostile)

    @vjpgrad.custom_op
    def twice(x: float) -> float:
        return 2 * x

    twice.__name__ = hostile

    @twice.derivative
    def _(x: Any, out: Any) -> float:
        return 2.0

    f = vjpgrad.compile(lambda x: twice(Value(1.0, label=hostile) + w * x))
    y = f(Value(3.0, label=hostile))
    y.backward()
    assert "import" not in f.source
    assert "os.system" not in f.source
    assert w.grad == 6.0


# ---- the corners ------------------------------------------------------------------------------------


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


def test_a_result_that_takes_no_gradient_looks_to_the_function_as_eager_codes_does() -> None:
    """In eager code a result no gradient flows through (``detach()``, an operation under
    ``no_grad``, one of Values that require none) is a leaf: no operation, no parents, and
    ``detach()`` keeps the label. While compile records, the function's own Python reads them
    so too, and decides as eager code does at every call; a detached result returned keeps its
    label (an outside review found the recording showed them as operations)."""

    def shape_of_constants(x: Value, c: Value) -> Value:
        with vjpgrad.no_grad():
            n = x * 2.0
        k = c * 2.0
        d = x.detach()
        seen = [(v.is_leaf, v.op, len(v.parents), v._op, len(v._prev), v.requires_grad) for v in (n, k, d)]
        as_leaves = seen == [(True, "", 0, "", 0, False)] * 3
        return x * (2.0 if d.label == "in" else 3.0) * (5.0 if as_leaves else 7.0)

    def arguments() -> tuple[Value, Value]:
        return Value(1.5, label="in"), Value(5.0, requires_grad=False)

    compiled = vjpgrad.compile(shape_of_constants)
    assert shape_of_constants(*arguments()).data == 15.0
    assert [compiled(*arguments()).data for _ in range(3)] == [15.0] * 3
    detached = vjpgrad.compile(lambda x: x.detach())
    assert [detached(Value(1.0, label="in")).label for _ in range(3)] == ["in"] * 3
    assert [detached(Value(1.0, label=k)).label for k in ("other", None, "in")] == ["other", None, "in"]


def test_the_attributes_given_to_a_value_returned_are_given_at_every_call() -> None:
    """Not only a label: every attribute the function gives a Value it returns (a string, a
    number, None) is given to every call's result, as eager code's has it, a result that takes
    no gradient included."""

    def tagged(x: Value) -> list[Value]:
        y = x * 2.0
        y.tag, y.step = "hidden", 3
        with vjpgrad.no_grad():
            z = x * 3.0
        z.note = None
        return [y, z]

    compiled = vjpgrad.compile(tagged)
    eager = [vars(v) for v in tagged(Value(1.0))]
    assert eager == [{"tag": "hidden", "step": 3}, {"note": None}]
    assert [[vars(v) for v in compiled(Value(1.0))] for _ in range(3)] == [eager] * 3


def test_an_object_kept_on_a_value_returned_is_refused_naming_it() -> None:
    """An attribute that holds an object (a list, a Value) cannot be given again: a replay makes
    the Value anew, and not what the function put there. Refused, naming the attribute."""

    def keeping(x: Value) -> Value:
        y = x * 2.0
        y.parts = [x]
        return y

    with pytest.raises(vjpgrad.DataDependentError, match=r"keeping .*\.parts \(a list\).*return it"):
        vjpgrad.compile(keeping)(Value(1.0))


# ---- the containers of the result: eager's own objects ------------------------------------------


def test_a_container_of_the_world_returned_is_that_container() -> None:
    """A list or dict the function reaches and returns is returned itself, as eager code returns
    it (not a copy, which the caller's changes would miss)."""
    w = Value(2.0)
    history, settings = [0.5], {"scale": 2.0}

    def f(x: Value) -> tuple[Any, ...]:
        return x * w, history, settings

    compiled = vjpgrad.compile(f)
    for _ in range(3):
        _, got_history, got_settings = compiled(Value(1.0))
        assert got_history is history
        assert got_settings is settings


def test_a_container_the_world_holds_in_a_tuple_or_an_object_is_that_container() -> None:
    """A default's list, a model's list and dict (reached through ``self``, its attributes read
    as one tuple), an object given's list: eager code returns those objects, not copies."""
    defaults = [Value(5.0)]

    def with_default(x: Value, d: list[Value] = defaults) -> tuple[Any, ...]:
        return d, x * d[0]

    class Model:
        def __init__(self) -> None:
            self.params, self.table = [Value(1.0), Value(2.0)], {"w": Value(3.0)}

        def __call__(self, x: Value) -> tuple[Any, ...]:
            return self.params, self.table, x * self.params[0]

    def of_object(model: Model, x: Value) -> tuple[Any, ...]:
        return model.params, x * model.params[1]

    model = Model()
    compiled_default, compiled_model, compiled_of = map(vjpgrad.compile, (with_default, model, of_object))
    for _ in range(3):
        assert compiled_default(Value(1.0))[0] is defaults
        params, table, _ = compiled_model(Value(1.0))
        assert params is model.params
        assert table is model.table
        assert compiled_of(model, Value(1.0))[0] is model.params


def test_a_container_given_and_returned_is_the_one_each_call_gives() -> None:
    """A list, dict, tuple or Vector the call was given, returned (or one inside it), is that
    call's own object, as in eager code."""

    def f(xs: list[Value], table: dict[str, Any], v: Vector) -> tuple[Any, ...]:
        return xs[0] * 2.0, xs, table, table["rows"], v

    compiled = vjpgrad.compile(f)
    for _ in range(3):
        xs, rows, v = [Value(1.0)], [Value(2.0)], Vector([1.0, 2.0])
        table = {"rows": rows}
        _, *returned = compiled(xs, table, v)
        assert [got is given for got, given in zip(returned, (xs, table, rows, v), strict=True)] == [True] * 4


def test_a_value_that_takes_no_gradient_returned_twice_is_one_object_at_the_first_call() -> None:
    """The recorded run's result, too: a Value made under ``no_grad`` returned at two places is
    one object, as eager code's (it was two at the first call)."""

    def f(x: Value) -> tuple[Value, Value]:
        with vjpgrad.no_grad():
            z = x * 3.0
        return z, z

    compiled = vjpgrad.compile(f)
    for _ in range(3):
        first, second = compiled(Value(1.0))
        assert first is second


def test_a_container_returned_at_two_places_is_one_object() -> None:
    def f(x: Value) -> tuple[Any, ...]:
        h = [x * 2.0]
        return h, {"again": h}

    compiled = vjpgrad.compile(f)
    for _ in range(3):
        h, table = compiled(Value(1.0))
        assert table["again"] is h


def test_a_container_given_at_two_places_and_returned_is_refused() -> None:
    """``f(rows, rows)`` returning ``b``: which place it came from, a replay given two lists could
    not tell. Refused, saying to return a copy."""

    def f(a: list[Value], b: list[Value]) -> tuple[Any, ...]:
        return a[0] * 2.0, b

    rows = [Value(1.0)]
    with pytest.raises(vjpgrad.DataDependentError, match=r"f returns a list .* at two places.*list\(\)"):
        vjpgrad.compile(f)(rows, rows)


def test_a_result_that_holds_itself_is_refused_as_a_type_error() -> None:
    def f(x: Value) -> list[Any]:
        out: list[Any] = [x * 2.0]
        out.append(out)
        return out

    with pytest.raises(TypeError, match="holds itself"):
        vjpgrad.compile(f)(Value(1.0))


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


@pytest.mark.parametrize("nan", [math.nan, -math.nan], ids=["nan", "negative nan"])
def test_a_nan_constant_keeps_its_sign_in_the_replay(nan: float) -> None:
    # x + c hands on c's nan as it is (IEEE-754 returns the nan operand), sign bit included;
    # bits() takes every nan alike (which nan an operation of two nans returns is the
    # hardware's choice), so the sign is compared here on its own
    def f(x: Value) -> Value:
        return x + nan

    compiled = vjpgrad.compile(f)
    assert math.copysign(1.0, f(Value(1.0)).data) == math.copysign(1.0, nan)
    for _ in range(3):  # the call that records, then replays
        assert math.copysign(1.0, compiled(Value(1.0)).data) == math.copysign(1.0, nan)


PAIRS_ONE_DETAIL_APART = {
    "a number operand": (lambda x, y: x * 2.0 + y, lambda x, y: x * 3.0 + y),
    "which operand is a number": (lambda x, y: (x - 2.0) * y, lambda x, y: (2.0 - x) * y),
    "which operand is which": (lambda x, y: x - y, lambda x, y: y - x),
    "an argument for itself": (lambda x, y: x * x, lambda x, y: x * y),
    "an operand of max": (
        lambda x, y: vjpgrad.nn.functional.max([x, y, 1.0]) * y,
        lambda x, y: vjpgrad.nn.functional.max([x, y, 2.0]) * y,
    ),
    "the order of max's operands": (
        lambda x, y: vjpgrad.nn.functional.max([x, y]) * y,
        lambda x, y: vjpgrad.nn.functional.max([y, x]) * y,
    ),
    "a Value made inside": (
        lambda x, y: x * Value(2.0, requires_grad=True),
        lambda x, y: x * Value(3.0, requires_grad=True),
    ),
    "a constant made inside": (lambda x, y: x * Value(2.0) + y, lambda x, y: x * Value(-2.0) + y),
    "the operation": (lambda x, y: (x + y).tanh(), lambda x, y: (x + y).exp()),
}


@pytest.mark.parametrize(("first", "second"), PAIRS_ONE_DETAIL_APART.values(), ids=PAIRS_ONE_DETAIL_APART.keys())
def test_describe_tells_apart_recordings_one_detail_apart_and_gives_equal_ones_equal_bytes(
    first: Any, second: Any
) -> None:
    """The cache's key is exact: two functions whose recordings differ in one operand, number,
    Value made inside or operation never share a key, and recording one function again gives
    the same key."""

    def key_of(fn: Any) -> bytes | None:
        compiled = vjpgrad.compile(fn)
        compiled(Value(0.5), Value(-1.5))
        entry = compiled._last
        return describe(entry.recorded, entry.internal_outputs)

    assert key_of(first) is not None
    assert key_of(first) == key_of(first)
    assert key_of(first) != key_of(second)


def _names_read(source: str) -> set[str]:
    """The names a piece of generated code reads (loads), found by Python's own parser."""
    return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def test_the_forward_pass_hands_on_exactly_the_values_the_reverse_pass_reads() -> None:
    # c is made inside and not returned: the contribution to it goes nowhere and is left out of
    # the pass, but anomaly mode's pass checks it for nan as eager's does, so x * 2.0 is kept for it
    def f(x: Value) -> Value:
        c = Value(3.0)
        return (c * (x * 2.0)).tanh() + x.exp()

    compiled = vjpgrad.compile(f)
    for _ in range(2):
        compiled(Value(0.5)).backward()
    program = compiled._last.program
    every = frozenset(range(len(program.internal_outputs)))
    live = {program.names[id(n)] for n in program.live}
    returned = {program.names[id(program.live[k])] for k in program.internal_outputs}
    kept = [program.names[id(n)] for n in program.kept]
    checked = _names_read(program.backward_source(every, checked=True)) & live
    assert len(kept) == len(set(kept))
    assert set(kept) == checked | returned
    assert checked - _names_read(program.backward_source(every)) == {program.names[id(program.live[1])]}
    assert len(kept) < len(live)


# ---- the classes of the results: eager's ------------------------------------------------------


class Tagged(Value):
    """A user's Value subclass, made inside the function and returned."""


class Slotted(Value):
    """A user's Value subclass with a slot of its own."""

    __slots__ = ("scale",)


class Row(Vector):
    """A user's Vector subclass."""


class NamedRow(Vector):
    """A user's Vector subclass that carries attributes."""

    def __init__(self, items: Any, name: str) -> None:
        super().__init__(items)
        self.name = name


def test_a_value_of_a_users_subclass_made_inside_and_returned_keeps_its_class() -> None:
    """``Tagged(2.0)`` made inside and returned is a ``Tagged`` at every call, as eager code's,
    whether it takes gradient or not, alone or in a container, and it takes its gradient."""

    def f(x: Value) -> tuple[Value, Value, Value]:
        made = Tagged(2.0)
        made.note = "made"
        return made, x * made, Tagged(3.0, requires_grad=False)

    compiled = vjpgrad.compile(f)
    eager = f(Value(1.0))
    assert [type(v) for v in eager] == [Tagged, Value, Tagged]
    for _ in range(3):
        made, y, constant = compiled(Value(1.0))
        assert [type(v) for v in (made, y, constant)] == [Tagged, Value, Tagged]
        assert (vars(made), constant.requires_grad) == ({"note": "made"}, False)
        y.backward()
        assert made.grad == 1.0


def test_a_value_of_a_users_subclass_with_slots_made_inside_and_returned_is_refused() -> None:
    """A replay could not make it again with what its slots hold: refused, naming its class."""

    def f(x: Value) -> Value:
        made = Slotted(2.0)
        made.scale = 3.0
        return made

    with pytest.raises(vjpgrad.DataDependentError, match=r"f returns a Slotted.*slots of its own"):
        vjpgrad.compile(f)(Value(1.0))


def test_a_vector_of_a_users_subclass_returned_keeps_its_class() -> None:
    """A ``Row`` the function makes and returns is a ``Row`` at every call, the first included."""

    def f(x: Value) -> Vector:
        return Row([x * 2.0, x, 1.0])

    compiled = vjpgrad.compile(f)
    assert type(f(Value(1.0))) is Row
    for _ in range(3):
        row = compiled(Value(1.0))
        assert type(row) is Row
        assert [v.data for v in row] == [2.0, 1.0, 1.0]


def test_a_vector_of_a_users_subclass_that_carries_attributes_returned_is_refused() -> None:
    """What it carries is the recorded call's, which a replay making it anew could not give
    again: refused as a result the compiled function cannot return."""

    def f(x: Value) -> Vector:
        return NamedRow([x * 2.0], "doubled")

    with pytest.raises(TypeError, match=r"NamedRow carrying \.name"):
        vjpgrad.compile(f)(Value(1.0))


class Doubled(NamedTuple):
    """A user's named tuple whose ``__new__`` takes other arguments than its fields."""

    value: Any
    doubled: Any


class Pair(Doubled):
    __slots__ = ()

    def __new__(cls, x: Any) -> Pair:  # one argument: the fields are made from it
        return super().__new__(cls, x, x * 2.0)


def test_a_named_tuple_returned_is_made_from_its_items_without_calling_its_new() -> None:
    """A named tuple of the user's class returned is made as eager code's holds its items, of
    its class, whatever its ``__new__`` takes (it ran once, in the function): not a TypeError
    from calling it with the fields."""

    def f(x: Value) -> Pair:
        return Pair(x)

    compiled = vjpgrad.compile(f)
    for _ in range(3):
        pair = compiled(Value(1.5))
        assert type(pair) is Pair
        assert [v.data for v in pair] == [1.5, 3.0]


class Fielded:
    """Not a tuple, though it has ``_fields`` and its items (as some libraries' records do)."""

    __slots__ = ("value",)
    _fields = ("value",)

    def __init__(self, value: Value) -> None:
        self.value = value

    def __iter__(self) -> Iterator[Value]:
        return iter((self.value,))


@dataclasses.dataclass
class Outcome:
    value: Value


def test_an_object_with_fields_that_is_no_tuple_is_refused_naming_its_type() -> None:
    """Only a tuple with ``_fields`` is a named tuple: another object that has the attribute is
    refused as a result compile cannot return, naming its type, as any other object is."""
    compiled = vjpgrad.compile(lambda x: Fielded(x * 2.0))
    with pytest.raises(TypeError, match=r"returns Values, Vectors, numbers.*got a Fielded$"):
        compiled(Value(1.5))
    other = vjpgrad.compile(lambda x: Outcome(x * 2.0))  # its article as a sentence reads it
    with pytest.raises(TypeError, match=r"returns Values, Vectors, numbers.*got an Outcome$"):
        other(Value(1.5))


def test_a_replays_result_was_made_by_the_compiled_call_and_a_function_given_one_answers_as_eager_code() -> None:
    """How a replay's Value was made is the call (``op`` "output", as a torch.compile'd output's grad_fn
    is CompiledFunctionBackward); a compiled function that branches on how its argument was made answers,
    given such a Value, what its eager code answers given the same Value."""

    def step(h: Value) -> Value:
        return h + 1.0 if h.op == "*" else h * 2.0

    fast = vjpgrad.compile(step)
    x = Value(0.3)
    first = fast(x)  # recorded: eager code's own result
    assert (first.op, first.parents) == ("*", (x,))
    second = fast(x)  # replayed
    assert second.op == "output"
    assert x in second.parents
    assert not second.is_leaf
    for h in (first, second, fast(first), fast(second)):
        eager, compiled = step(h), fast(h)
        assert compiled.data == eager.data
        x.grad = 0.0
        eager.backward(retain_graph=True)
        by_eager = x.grad
        x.grad = 0.0
        compiled.backward(retain_graph=True)
        assert x.grad == by_eager


# ---- what a recording holds goes with it ---------------------------------------------------------


def _shown_sources() -> list[str]:
    """The generated sources ``linecache`` holds for tracebacks: compile's guards and passes."""
    import gc
    import linecache

    gc.collect()
    vjpgrad.compile(lambda x: x * 2.0)(Value(1.0))  # what was collected is settled at the next recording
    return [name for name, entry in linecache.cache.items() if name.startswith("<vjpgrad.compile") and entry[2]]


@pytest.mark.parametrize("cached", ["1", "0"])
def test_the_source_a_recording_shows_in_tracebacks_goes_with_the_recording(
    cached: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each recording's guard and passes are shown in tracebacks (``linecache``) by their text:
    once the recording is dropped (``reset()``, or the compiled function collected), so is the text.
    Before, every recording left its guard's text (and, without the compiled-code cache, its passes')
    behind for good: 300 recordings of an MLP held 50 MB."""
    monkeypatch.setenv("VJPGRAD_CACHE", cached)
    model = vjpgrad.nn.MLP(2, [4, 1], seed=1)

    def loss(a: Value, b: Value) -> Value:
        return model([a, b])

    before = len(_shown_sources())
    compiled = vjpgrad.compile(loss)
    for _ in range(6):
        compiled.reset()
        for _ in range(2):  # recorded, then written and replayed
            compiled(Value(0.3), Value(-0.2)).backward()
    assert len(_shown_sources()) <= before + 3  # the last recording's guard, forward and backward
    for _ in range(6):
        again = vjpgrad.compile(loss)
        for _ in range(2):
            again(Value(0.3), Value(-0.2)).backward()
    del again, compiled
    assert len(_shown_sources()) <= before


def _lines_of(compiled: Any) -> list[int]:
    """How many lines ``linecache`` holds for the forward and each reverse pass of the last recording."""
    import linecache

    code = compiled._last.code
    functions = [code.forward, *code._backwards.values()]
    return [len(linecache.getlines(f.function.__code__.co_filename)) for f in functions]


def test_a_live_recording_keeps_its_lines_when_another_of_its_structure_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two recordings of one structure share their code's file name (the compiled-code cache's key):
    the second loads the code the first wrote. The lines stay while either lives (dropping the
    first, by ``reset()``, took the second's lines with it, so that a traceback through it showed
    none)."""
    import gc

    monkeypatch.setenv("VJPGRAD_CACHE", "1")
    monkeypatch.setenv("VJPGRAD_CACHE_DIR", str(tmp_path))  # the first recording writes its code

    model = vjpgrad.nn.MLP(2, [4, 1], seed=1)

    def loss(a: Value, b: Value) -> Value:
        return model([a, b])

    compiled = vjpgrad.compile(loss)
    for _ in range(2):
        compiled(Value(0.3), Value(-0.2)).backward()
    first = _lines_of(compiled)
    compiled.reset()
    for _ in range(2):
        compiled(Value(0.3), Value(-0.2)).backward()
    gc.collect()
    assert first
    assert all(first)
    assert _lines_of(compiled) == first


@pytest.mark.slow  # threads race for about 3 s
def test_forgetting_a_recordings_lines_never_breaks_linecache_in_another_thread() -> None:
    """A recording is often freed by the cyclic collector, at any allocation of any thread:
    forgetting its lines there (deleting from ``linecache.cache`` in a finalizer) made
    ``linecache.checkcache()`` in another thread (IPython after each cell, pdb, traceback) raise
    ``KeyError`` some 1,300 times in 47,000 calls."""
    import linecache
    import time

    w = Value(0.3)
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            compiled = vjpgrad.compile(lambda x: (x * w).tanh())
            for _ in range(2):
                compiled(Value(0.5)).backward()
            del compiled

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    errors = 0
    thread = threading.Thread(target=churn)
    thread.start()
    try:
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            try:
                linecache.checkcache()
            except KeyError:
                errors += 1
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(switch)
    assert errors == 0


def test_the_reverse_passes_kept_are_the_ones_used_last(monkeypatch: pytest.MonkeyPatch) -> None:
    """``BACKWARDS_KEPT`` reverse passes are kept per recording, one per set of outputs a pass is
    seeded at; past it the one used longest ago goes (it was the one written first, so a pass used
    at every call was written again and again)."""
    import vjpgrad.compiler.run as run

    monkeypatch.setattr(run, "BACKWARDS_KEPT", 2)
    written: list[frozenset[int]] = []
    source = write.Program.backward_source

    def counted(self: Any, seeded: frozenset[int], checked: bool = False) -> str:
        written.append(seeded)
        return source(self, seeded, checked=checked)

    monkeypatch.setattr(write.Program, "backward_source", counted)
    w = [Value(0.25 * (k + 1)) for k in range(3)]

    def f(x: Value) -> tuple[Value, ...]:
        return tuple((x * wk).tanh() * wk for wk in w)

    compiled = vjpgrad.compile(f)
    for step in range(12):
        ys = compiled(Value(0.5))
        if step < 2:
            continue  # recorded, then written (every output's pass)
        # every other call from the first two outputs; between them, the first and last, or the last two
        (ys[0] + ys[1] if step % 2 == 0 else ys[0] + ys[2] if step % 4 == 1 else ys[1] + ys[2]).backward()
    assert written.count(frozenset({0, 1})) == 1, written  # used every other call: never written again


def test_a_thread_that_waited_while_another_gave_up_runs_the_function_uncompiled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thread that called while another was finding the code past ``OPERATIONS_LIMIT`` runs the
    function uncompiled once the other has given up: it records nothing more (before, it recorded
    anew and that recording, of more than the bound, was kept until ``reset()``)."""
    import time
    import warnings

    import vjpgrad.compiler.run as run

    monkeypatch.setattr(run, "OPERATIONS_LIMIT", 30)
    w = [Value(0.3), Value(-0.4)]

    def f(xs: list[Value]) -> Value:
        t = Value(0.0)
        for x in xs:
            t = t + (x * w[0]).tanh() * w[1]
        return t

    compiled = vjpgrad.compile(f)
    results: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vjpgrad.RecompileWarning)
        compiled([Value(0.1 * i) for i in range(20)])  # recorded
        with compiled._lock:  # the other thread waits for the lock, having seen that it is not eager
            other = threading.Thread(target=lambda: results.append(compiled([Value(0.1 * i) for i in range(20)]).data))
            other.start()
            time.sleep(0.2)
            compiled([Value(0.1 * i) for i in range(20)])  # the code found past the bound: gives up
        other.join()
    assert compiled.eager
    assert compiled.times_recorded == 1
    assert compiled.recordings == 0
    assert results == [f([Value(0.1 * i) for i in range(20)]).data]


def test_a_value_read_through_an_arguments_graph_is_never_read_stale() -> None:
    """``u.parents[0]`` is read from the recorded ``u``'s graph: an outside review found ``[10, 15]``
    where eager code gives ``[8, 11]`` once ``u`` was made from another Value, and a stale number
    again with the same ``u`` and another ``b``. Each such call records anew, and a Value found only
    in an argument's graph is refused (DataDependentError), never read stale."""

    def f(x: Value, u: Value, b: Value) -> Value:
        return x * u.parents[0] + b

    compiled = vjpgrad.compile(f)
    b = Value(10.0)
    u = b * 2
    assert compiled(Value(1.0), u, b).data == 20.0
    for call in (lambda: compiled(Value(1.0), Value(3.0) * 2, Value(5.0)), lambda: compiled(Value(1.0), u, Value(5.0))):
        with pytest.raises(vjpgrad.DataDependentError, match="cannot find where"):
            call()
    b2 = Value(4.0)
    assert compiled(Value(1.0), b2 * 2, b2).data == f(Value(1.0), b2 * 2, b2).data == 8.0
