"""vjpgrad.compile, held to eager where an outside review found them apart: each case runs
the same function eagerly and compiled (recorded on other numbers first) and compares bits."""

from __future__ import annotations

import math
import struct
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import pytest

import vjpgrad
from vjpgrad import Value, Vector


def bits(x: float) -> bytes | str:
    return "nan" if math.isnan(x) else struct.pack("<d", x)


def both(fn: Callable[..., Any], make_args: Callable[[], tuple[Any, ...]], record: tuple[Any, ...]) -> list[Any]:
    """(output bits, leaf grad bits) of fn eagerly and compiled, each on fresh arguments."""
    compiled = vjpgrad.compile(fn)
    compiled(*record)
    found = []
    for f in (fn, compiled):
        args = make_args()
        out = f(*args)
        outs = list(out) if isinstance(out, Vector) else [out]
        live = [y for y in outs if y.requires_grad]
        if live:
            Vector(live).backward([1.0 + k for k in range(len(live))])
        leaves = [a for a in args if isinstance(a, Value)]
        found.append(([bits(y.data) for y in outs], [bits(v.grad) for v in leaves]))
    return found


def test_detach_inside_takes_each_calls_number() -> None:
    eager, compiled = both(lambda x: x * x.detach(), lambda: (Value(3.0),), (Value(2.0),))
    assert compiled == eager


def test_a_weight_made_inside_on_the_first_call_is_a_parameter() -> None:
    class Model:
        w: Value | None = None

    model = Model()

    def lazy(x: Value) -> Value:
        if model.w is None:
            model.w = Value(0.5)
        return model.w * x

    f = vjpgrad.compile(lazy)
    f(Value(1.0))
    f(Value(2.0)).backward()
    assert model.w is not None
    assert model.w.grad == 2.0


def test_a_compiled_function_inside_another_is_recorded_by_it() -> None:
    inner = vjpgrad.compile(lambda x: x * x)
    inner(Value(1.0))
    outer = vjpgrad.compile(lambda x: inner(x) + 1.0)
    assert [outer(Value(2.0)).data, outer(Value(3.0)).data] == [5.0, 10.0]
    fresh_inner = vjpgrad.compile(lambda x: x * x)
    outer2 = vjpgrad.compile(lambda x: fresh_inner(x) * 2.0 + 1.0)
    assert [outer2(Value(2.0)).data, outer2(Value(3.0)).data] == [9.0, 19.0]


def test_forward_mode_and_explain_refuse_a_compiled_call() -> None:
    f = vjpgrad.compile(lambda x: (x * x).sin())
    f(Value(1.0))  # recorded: later calls replay
    with pytest.raises(RuntimeError, match="call the function uncompiled"):
        vjpgrad.jvp(f, (1.5,), (1.0,))
    with pytest.raises(RuntimeError, match="call the function uncompiled"):
        vjpgrad.explain(f(Value(1.5)))


def test_reading_a_vector_arguments_data_is_refused() -> None:
    with pytest.raises(RuntimeError, match=r"Vector.data"):
        vjpgrad.compile(lambda v: v[0] * v.data[1])(Vector([1.0, 2.0]))


@pytest.mark.parametrize(
    ("fn", "numbers"),
    [
        (lambda x, c: c / x, (7.0, 0.1)),  # eager: (1 / x) * c
        (lambda x, c: x**c, (-math.inf, 0.5)),  # eager: PyTorch's x ** 0.5 is sqrt(x)
        (lambda x, c: x**c, (2.5, 3.0)),  # eager: x * x * x
        (lambda x, c: c**x, (0.5, 0.0)),  # eager: number ** Value
        (lambda x, c: x * c - c / (x + c), (1.3, 0.7)),
    ],
)
def test_a_float_argument_is_a_number_as_in_eager(fn: Callable[..., Any], numbers: tuple[float, float]) -> None:
    x, c = numbers
    eager, compiled = both(fn, lambda: (Value(x), c), (Value(2.0), 1.5))
    assert compiled == eager


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


def test_anomaly_mode_sees_a_nan_a_compiled_call_makes() -> None:
    f = vjpgrad.compile(lambda x: x.sqrt() * 0.0)
    f(Value(1.0))
    with vjpgrad.detect_anomaly(), pytest.raises(FloatingPointError, match=r"vjpgrad\.compile replays"):
        f(Value(0.0)).backward()


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


def test_a_namedtuple_argument() -> None:
    Pair = namedtuple("Pair", "a b")
    f = vjpgrad.compile(lambda p: p.a * p.b)
    a, b = Value(2.0), Value(3.0)
    f(Pair(a, b)).backward()
    assert (a.grad, b.grad) == (3.0, 2.0)
