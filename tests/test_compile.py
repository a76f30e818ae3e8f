"""vjpgrad.compile: the same numbers and the same gradients as eager, bit for bit, and the
refusals of Python that a recording cannot replay."""

from __future__ import annotations

import math
import struct
import threading
from typing import Any

import pytest
from _helpers import GRAPH_OPS
from hypothesis import given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector


def bits(x: float) -> int | str:
    """A float's bits, every nan alike (nan payloads are not part of the contract)."""
    return "nan" if math.isnan(x) else struct.unpack("<q", struct.pack("<d", x))[0]


EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, 1e-300, 1e300, 700.0, -800.0, math.inf, -math.inf, math.nan]
numbers = st.sampled_from(EDGES) | st.floats(-5, 5)

# every operation of the table, as a step of a random program: (name, function of two nodes)
OPS: list[tuple[str, Any]] = [
    *GRAPH_OPS,
    ("div_raw", lambda x, y: x / y),
    ("rdiv", lambda x, y: 2.0 / x),
    ("pow_raw", lambda x, y: x**y),
    ("rpow", lambda x, y: 2.0**x),
    ("pow_half", lambda x, y: x**0.5),
    ("pow_zero", lambda x, y: x**0),
    ("pow_minus_half", lambda x, y: x**-0.5),
    ("cube", lambda x, y: x**3),
    ("log_raw", lambda x, y: x.log()),
    ("sqrt_raw", lambda x, y: x.sqrt()),
    ("tan", lambda x, y: x.tan()),
    ("neg", lambda x, y: -x),
    ("reciprocal", lambda x, y: x.reciprocal()),
    ("max", lambda x, y: vjpgrad.nn.functional.max([x, y, x * 0.5]) if _has_max() else x + y),
    ("rsub", lambda x, y: 1.0 - y),
]


def _has_max() -> bool:
    return hasattr(vjpgrad, "nn") and hasattr(getattr(vjpgrad, "nn", None), "functional")


programs = st.tuples(
    st.lists(numbers, min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, len(OPS) - 1), st.integers(0, 10**6), st.integers(0, 10**6)), max_size=20),
    st.integers(1, 3),  # outputs
)


def build(program: Any, leaves: list[Any]) -> list[Any]:
    _, steps, n_out = program
    nodes = list(leaves)
    for op, i, j in steps:
        nodes.append(OPS[op][1](nodes[i % len(nodes)], nodes[j % len(nodes)]))
    return nodes[-n_out:]


def eager_and_compiled(program: Any, seeds: list[float]) -> tuple[list[Any], list[Any]]:
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


@given(programs, st.lists(st.floats(-3, 3) | st.sampled_from([0.0, math.inf]), min_size=3, max_size=3))
def test_compiled_equals_eager_bit_for_bit(program: Any, seeds: list[float]) -> None:
    eager, compiled = eager_and_compiled(program, seeds)
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


def test_parameters_are_read_at_every_call() -> None:
    w = Value(2.0)
    f = vjpgrad.compile(lambda x: w * x * x)
    x = Value(3.0)
    assert f(x).data == 18.0
    w.data = 5.0  # an optimizer's step
    y = f(x)
    assert y.data == 45.0
    y.backward()
    assert (w.grad, x.grad) == (9.0, 30.0)
    assert f.recordings == 1


def test_floats_are_data_and_ints_fix_the_recording() -> None:
    f = vjpgrad.compile(lambda x, k: sum((x**i for i in range(k)), Value(0.0, requires_grad=False)))
    x = Value(2.0)
    assert f(x, 3).data == 7.0
    assert f(x, 4).data == 15.0  # a new int: a new recording
    assert f.recordings == 2
    g = vjpgrad.compile(lambda x, c: x * c)
    assert [g(x, c).data for c in (1.5, 2.5, 4.0)] == [3.0, 5.0, 8.0]
    assert g.recordings == 1


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


def test_a_compiled_result_feeds_eager_operations() -> None:
    a = Value(1.5)
    f = vjpgrad.compile(lambda a: a.sin() * a)
    z = f(a).exp() * 2.0
    z.backward()
    b = Value(1.5)
    (((b.sin() * b).exp()) * 2.0).backward()
    assert a.grad == b.grad


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


def test_no_grad_gives_constants() -> None:
    a = Value(2.0)
    f = vjpgrad.compile(lambda a: a * 3.0)
    with vjpgrad.no_grad():
        y = f(a)
    assert (y.data, y.requires_grad) == (6.0, False)
    assert f(a).requires_grad


def test_create_graph_through_a_compiled_call_says_to_call_it_uncompiled() -> None:
    a = Value(2.0)
    f = vjpgrad.compile(lambda a: a * a)
    assert vjpgrad.gradients(f(a), [a], create_graph=True)[0].data == 4.0  # the first call is eager code
    y = f(a)
    with pytest.raises(RuntimeError, match="call the function uncompiled"):
        vjpgrad.gradients(y, [a], create_graph=True)


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (lambda x: x * 2 if x.data > 0 else x, r"\.data of a Value"),
        (lambda x: x * float(x), r"float\(\) of a Value"),
        (lambda x: x if x else -x, r"bool\(\) of a Value"),
        (lambda x: x if x > 0 else -x, "comparing a Value"),
        (lambda x: [x, x][int(x)], r"int\(\) of a Value"),
        (lambda x: x * x.item(), r"Value.item\(\)"),
    ],
)
def test_data_dependent_python_is_refused_naming_the_line(body: Any, what: str) -> None:
    f = vjpgrad.compile(body)
    with pytest.raises(RuntimeError, match=what) as error:
        f(Value(1.0))
    assert "test_compile.py:" in str(error.value)
    assert "call it uncompiled" in str(error.value)
    assert f.recordings == 0


def test_the_source_is_the_code_that_runs_one_operation_a_line() -> None:
    f = vjpgrad.compile(lambda a, b, c: 3 * a + 2 * b * b + vjpgrad.log(c))
    f(Value(1.0), Value(3.0), Value(6.0))
    source = f.source
    assert source.startswith("def forward(inputs):")
    assert "def backward(seeds, values, inputs, start):" in source
    assert "t5 = _log(x2)  # log" in source
    assert "g_x2 += g_t5 / x2" in source  # log's gradient is g / x, as PyTorch's


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


def test_arguments_of_any_nesting() -> None:
    f = vjpgrad.compile(lambda pair, v: pair[0] * v.sum() + pair[1][0])
    a, b = Value(2.0), Value(5.0)
    v = Vector([1.0, 2.0])
    y = f((a, [b]), v)
    y.backward()
    assert (y.data, a.grad, b.grad, v.grad.tolist()) == (11.0, 3.0, 1.0, [2.0, 2.0])


def test_the_same_value_twice_is_its_own_recording() -> None:
    f = vjpgrad.compile(lambda x, y: x * y)
    a, b = Value(3.0), Value(4.0)
    f(a, b).backward()
    f(a, a).backward()
    assert a.grad == 4.0 + 6.0
    assert f.recordings == 2


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="takes a function"):
        vjpgrad.compile(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got a set"):
        vjpgrad.compile(lambda x: x)({1.0})
    with pytest.raises(TypeError, match=r"returns Values, Vectors, numbers, None.*got a object"):
        vjpgrad.compile(lambda x: object())(Value(1.0))


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
