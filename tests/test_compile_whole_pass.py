"""A compiled call's backward pass run by the call alone, and the guard's checks of many Values at
once: each gives eager code's bits, or records anew, exactly as the engine's walk and a check per
Value would.

``backward()`` on a compiled call's output, with nothing else in the pass, is run by the call
itself without the engine's walk over every parameter (``Op.whole_pass``); anything else in the
pass (another output, an argument or a parameter that is an operation, a freed graph, anomaly
mode) goes through the engine. The guard checks every Value of the function's world in one list:
their identities, ``requires_grad`` and attributes, and the length of each list they came from.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from _helpers import bits

import vjpgrad
from vjpgrad import Value
from vjpgrad.core import graph


class Model:
    """A layer of micrograd's shape: a list of weights and a bias per neuron."""

    def __init__(self, seed: int, nin: int = 3, nout: int = 2) -> None:
        rng = random.Random(seed)
        self.neurons = [
            {"w": [Value(rng.uniform(-1, 1)) for _ in range(nin)], "b": Value(rng.uniform(-1, 1))} for _ in range(nout)
        ]

    def __call__(self, xs: list[Value]) -> Value:
        total = Value(0.0, requires_grad=False)
        for neuron in self.neurons:
            act = sum((w * x for w, x in zip(neuron["w"], xs, strict=True)), neuron["b"])
            total = total + act.tanh()
        return total

    def parameters(self) -> list[Value]:
        return [p for neuron in self.neurons for p in [*neuron["w"], neuron["b"]]]


def twins(build: Callable[[], tuple[Callable[..., Any], list[Value]]]) -> list[tuple[Callable[..., Any], list[Value]]]:
    """The same function and parameters twice: one run eagerly, one compiled."""
    fn, params = build()
    compiled_fn, compiled_params = build()
    return [(fn, params), (vjpgrad.compile(compiled_fn), compiled_params)]


def grads(values: list[Value]) -> list[Any]:
    return [bits(v.grad) for v in values]


def each_output_seeded_alone(f: Callable[..., Any], params: list[Value], order: Iterable[int]) -> list[Any]:
    """A call of ``f`` for each position in ``order``, the output there alone passed to
    ``backward()``: the parameters', the argument's and the outputs' ``.grad`` bits after each."""
    f(Value(1.0))
    seen = []
    for seeded in order:
        x = Value(1.5)
        outs = f(x)
        outs[seeded].backward()
        seen.append((grads(params), bits(x.grad), [bits(o.grad) for o in outs]))
    return seen


def model_loss(seed: int = 1) -> tuple[Callable[..., Any], list[Value]]:
    model = Model(seed)

    def loss(xs: list[Value]) -> Value:
        return (model(xs) * 0.5).relu() + model(xs) * model(xs)

    return loss, model.parameters()


def points(k: int) -> list[Value]:
    return [Value(0.25 * k - 0.5, requires_grad=False), Value(0.1 * k), Value(-0.3, requires_grad=False)]


def count_walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the engine's walks (``graph.reached``) from here on."""
    walks: list[int] = []
    reached = graph.reached

    def counted(outputs: Any) -> Any:
        walks.append(len(outputs))
        return reached(outputs)

    monkeypatch.setattr(graph, "reached", counted)
    return walks


def test_repeated_calls_accumulate_into_grad_as_eager_code_does(monkeypatch: pytest.MonkeyPatch) -> None:
    results = []
    for f, params in twins(model_loss):
        seen = []
        for k in range(5):
            xs = points(k)
            out = f(xs)
            out.backward()
            seen.append((bits(out.data), bits(out.grad), grads(params), grads(xs)))
        results.append(seen)
    assert results[1] == results[0]
    f, params = twins(model_loss)[1]
    f(points(0)).backward()  # recorded: the engine's pass
    walks = count_walks(monkeypatch)
    f(points(1)).backward()
    assert walks == []  # the replay's pass ran without the engine's walk


def test_retained_passes_add_again_and_a_freed_output_raises_as_eager() -> None:
    results = []
    for f, params in twins(model_loss):
        f(points(0)).backward()  # the recording
        xs = points(1)
        out = f(xs)
        out.backward(retain_graph=True)
        out.backward(2.5, retain_graph=True)
        out.backward(-0.0)
        with pytest.raises(RuntimeError, match="retain_graph=True"):
            out.backward()
        results.append((grads(params), grads(xs), bits(out.grad)))
    assert results[1] == results[0]


@pytest.mark.parametrize("seed", [1.0, -0.0, 0.0, -3.5, float("inf")])
def test_the_seed_and_a_grad_set_to_none_give_eagers_bits(seed: float) -> None:
    results = []
    for f, params in twins(model_loss):
        f(points(0)).backward()
        params[0].grad = None  # counts as 0.0, as in PyTorch
        params[1].grad = -0.0
        xs = points(2)
        xs[1].grad = None
        out = f(xs)
        out.backward(seed)
        results.append((grads(params), grads(xs), bits(out.grad)))
    assert results[1] == results[0]


def test_a_value_both_passed_and_in_the_world_gets_eagers_gradient() -> None:
    def build() -> tuple[Callable[..., Any], list[Value]]:
        w = Value(0.75)

        def f(x: Value) -> Value:
            return x * w + w.tanh() * x

        return f, [w]

    results = []
    for f, (w,) in twins(build):
        for _ in range(3):
            f(w).backward()  # the parameter passed as the argument too
            f(Value(2.0)).backward()
        results.append(bits(w.grad))
    assert results[1] == results[0]


def test_a_value_twice_in_the_world_gets_each_contribution_once_as_eager() -> None:
    def build() -> tuple[Callable[..., Any], list[Value]]:
        w = Value(-1.25)
        first, second = [w, Value(0.5)], [Value(2.0), w]

        def f(x: Value) -> Value:
            return sum((p * x for p in first), x) * sum(second, x)

        return f, [w, first[1], second[0]]

    results = []
    for f, params in twins(build):
        for k in range(3):
            f(Value(0.5 + k)).backward()
        results.append(grads(params))
    assert results[1] == results[0]


def test_one_output_of_many_seeded_alone_gives_eagers_bits() -> None:
    def build() -> tuple[Callable[..., Any], list[Value]]:
        a, b = Value(0.3), Value(-2.0)

        def f(x: Value) -> list[Value]:
            first = x * a
            return [first.exp(), x * b, first * 2.0, (first.exp() * b).tanh()]

        return f, [a, b]

    eager, compiled = (each_output_seeded_alone(f, params, range(4)) for f, params in twins(build))
    assert compiled == eager


def test_an_output_computed_from_another_output_takes_the_engines_pass() -> None:
    def build() -> tuple[Callable[..., Any], list[Value]]:
        a = Value(0.3)

        def f(x: Value) -> list[Value]:
            first = (x * a).exp()
            return [first, first * a + x]  # the second is computed from the first, returned

        return f, [a]

    eager, compiled = (each_output_seeded_alone(f, params, (1, 0, 1)) for f, params in twins(build))
    assert compiled == eager


def test_a_parameter_that_is_an_operation_takes_the_engines_pass() -> None:
    def build() -> tuple[Callable[..., Any], list[Value]]:
        leaf, other = Value(0.5), Value(-0.75)
        scaled = leaf * 3.0  # its gradient goes on to leaf

        def f(x: Value) -> Value:
            return (x * scaled).tanh() + x * other

        return f, [leaf, other]

    results = []
    for f, params in twins(build):
        seen = []
        for k in range(3):
            x = Value(0.2 * k)
            f(x).backward(retain_graph=True)
            seen.append((grads(params), bits(x.grad)))
        results.append(seen)
    assert results[1] == results[0]


def test_an_argument_that_is_an_operation_takes_the_engines_pass() -> None:
    def build() -> tuple[Callable[..., Any], list[Value]]:
        w = Value(0.5)

        def f(x: Value, y: Value) -> Value:
            return (x * w).tanh() * y

        return f, [w]

    results = []
    for f, (w,) in twins(build):
        seen = []
        for k in range(3):
            root, y = Value(0.2 * k), Value(1.5)
            x = root * root + 1.0  # its gradient goes on to root
            f(x, y).backward()
            seen.append((bits(w.grad), bits(root.grad), bits(y.grad)))
        results.append(seen)
    assert results[1] == results[0]


def test_an_output_used_further_takes_the_engines_pass() -> None:
    results = []
    for f, params in twins(model_loss):
        for k in range(3):
            xs = points(k)
            out = f(xs)
            (out * out + params[0]).backward()
            results.append((grads(params), grads(xs), bits(out.grad)))
    assert results[3:] == results[:3]


def test_anomaly_mode_takes_the_engines_pass_and_raises_at_a_nan() -> None:
    def build() -> tuple[Callable[..., Any], list[Value]]:
        w = Value(0.0)

        def f(x: Value) -> Value:
            return (x * w).log() + w

        return f, [w]

    _, (compiled, w) = twins(build)
    compiled(Value(1.0))
    with vjpgrad.detect_anomaly(), pytest.raises(FloatingPointError):
        compiled(Value(float("nan"))).backward()
    assert bits(w[0].grad) == bits(0.0)  # a pass that fails changes nothing


# ---- the guard: every Value of the world checked at once ------------------------------------------


def records_and_matches_eager(change: Callable[[Any], None], read: Callable[[Any, Value], Value]) -> None:
    """Record with one world, change it, and call again: eager's numbers and gradients, from a
    new recording."""

    class World:
        def __init__(self) -> None:
            self.first = [Value(0.5), Value(-1.5)]
            self.second = [Value(2.0)]
            self.bias = Value(0.25)

    worlds = [World(), World()]
    compiled = vjpgrad.compile(lambda x: read(worlds[1], x))
    results = []
    for world, f in ((worlds[0], lambda x: read(worlds[0], x)), (worlds[1], compiled)):
        f(Value(1.0)).backward()  # the recording, for the compiled one
        change(world)
        x = Value(1.5)
        out = f(x)
        out.backward()
        every = [*world.first, *world.second, world.bias]
        results.append((bits(out.data), bits(x.grad), grads(every)))
    assert results[1] == results[0]
    assert compiled.times_recorded == 2


def layered(world: Any, x: Value) -> Value:
    total = x * world.bias
    for p in world.first:
        total = total + p * x
    for p in world.second:
        total = total * p
    return total


def move_across(world: Any) -> None:  # every Value in the same order, the lists' lengths changed
    world.second.insert(0, world.first.pop())


def replace_in_list(world: Any) -> None:  # the same number, another Value
    world.first[1] = Value(-1.5)


def replace_single(world: Any) -> None:
    world.bias = Value(0.25)


def freeze_in_list(world: Any) -> None:
    world.first[0].requires_grad = False


def freeze_single(world: Any) -> None:
    world.bias.requires_grad = False


@pytest.mark.parametrize(
    "change", [move_across, replace_in_list, replace_single, freeze_in_list, freeze_single], ids=lambda f: f.__name__
)
def test_a_change_to_the_worlds_values_records_anew(change: Callable[[Any], None]) -> None:
    records_and_matches_eager(change, layered)


def test_an_attribute_set_on_a_value_in_a_list_records_anew() -> None:
    def scaled(world: Any, x: Value) -> Value:
        return sum((p * x * getattr(p, "scale", 1.0) for p in world.first), world.bias)

    def label(world: Any) -> None:
        world.first[1].scale = 3.0

    records_and_matches_eager(label, scaled)


def shared_square(a: Value, b: Value) -> list[Value]:
    s = b * b
    return [s + 1.0, a * a, s + 2.0]


def passes_after_a_freeing_one(fn: Callable[..., Any], order: list[int]) -> list[Any]:
    """A call's outputs passed from one at a time, freeing, in ``order``: each pass's gradients of
    the arguments, or the error of a pass through an operation an earlier one freed."""
    fn(Value(0.5), Value(1.5))  # the recording
    a, b = Value(0.75), Value(-1.25)
    outputs = fn(a, b)
    outcome: list[Any] = []
    for k in order:
        try:
            outputs[k].backward()
            outcome.append((k, bits(a.grad), bits(b.grad)))
        except RuntimeError as error:
            outcome.append((k, type(error).__name__, "retain_graph=True" in str(error)))
    return outcome


@pytest.mark.parametrize("order", [[0, 1, 2], [1, 0, 2], [0, 2, 1], [1, 2, 0, 2]])
def test_a_pass_after_a_freeing_pass_from_another_output_raises_where_eager_does(
    order: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outputs 0 and 2 share ``s = b * b``; output 1 shares nothing: after a freeing pass from one
    of them, a pass from the other raises, a pass from output 1 gives eager's bits, and every pass
    the compiled call ran alone frees what it ran, however many passes freed before it."""
    eager = passes_after_a_freeing_one(shared_square, order)
    assert sum(isinstance(found[1], str) for found in eager) == len(order) - 2  # the check checks something
    compiled = vjpgrad.compile(shared_square)
    compiled(Value(0.5), Value(1.5))  # recorded: the engine's passes from here on are the replay's
    walks = count_walks(monkeypatch)
    assert passes_after_a_freeing_one(compiled, order) == eager
    assert len(walks) == sum(isinstance(found[1], str) for found in eager)  # only the refused passes walk
