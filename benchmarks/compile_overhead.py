"""What a compiled call costs beside its generated code, on a small graph.

micrograd's ``MLP(2, [16, 16, 1])`` (Neuron, Layer and MLP classes as micrograd writes them, on
vjpgrad's Values) on one sample: the hinge loss of one point, forward and backward, called

- eager: the function itself, then ``backward()``;
- compiled: through ``vjpgrad.compile`` (recorded and compiled before timing), then ``backward()``;
- the generated code alone: the recording's forward and reverse passes called directly on the
  numbers (what a compiled call cannot avoid).

``overhead`` is a compiled call minus the generated code: reading the arguments, the guard that
checks the function's world, wrapping the outputs and handing the gradients back. The guard is
also timed alone, and so are the two passes over the parameters a call cannot avoid beside it:
reading their numbers and adding their gradients into ``.grad``. All are timed side by side in
one process, alternating, over ``--rounds`` rounds of ``--calls`` calls each; the figures are
medians, in microseconds per call, of the wall clock, or with ``--cpu`` of the process's CPU time
(steadier on a machine shared with other work).

    python benchmarks/compile_overhead.py [--rounds 31] [--calls 200] [--cpu]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import vjpgrad
from vjpgrad import Value, recording
from vjpgrad.compiler.record import Arguments


class Neuron:
    def __init__(self, nin: int, nonlin: bool = True) -> None:
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0.0)
        self.nonlin = nonlin

    def __call__(self, x: list[Value]) -> Value:
        act = sum((wi * xi for wi, xi in zip(self.w, x, strict=True)), self.b)
        return act.relu() if self.nonlin else act

    def parameters(self) -> list[Value]:
        return [*self.w, self.b]


class Layer:
    def __init__(self, nin: int, nout: int, **kwargs: Any) -> None:
        self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]

    def __call__(self, x: list[Value]) -> Any:
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self) -> list[Value]:
        return [p for n in self.neurons for p in n.parameters()]


class MLP:
    def __init__(self, nin: int, nouts: list[int]) -> None:
        sz = [nin, *nouts]
        self.layers = [Layer(sz[i], sz[i + 1], nonlin=i != len(nouts) - 1) for i in range(len(nouts))]

    def __call__(self, x: list[Value]) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument(
        "--cpu", action="store_true", help="time the process's CPU time, not the wall clock (a shared machine)"
    )
    options = parser.parse_args()
    random.seed(1337)
    model = MLP(2, [16, 16, 1])

    def loss(x: list[Value], y: Value) -> Value:
        return (1 + -y * model(x)).relu()  # micrograd's max-margin loss of one point

    compiled = vjpgrad.compile(loss)
    point = [Value(0.5, requires_grad=False), Value(-0.25, requires_grad=False)]
    label = Value(1.0, requires_grad=False)
    for _ in range(3):  # recorded, then the code written and loaded
        compiled(point, label).backward()
    replay = compiled._last  # the recording the calls replay
    assert replay is not None
    assert replay.code.forward is not None
    assert compiled.times_recorded == 1
    data = [0.5, -0.25, 1.0] + [p._data for p in replay.parameters]
    backward = replay.code.backward_for(frozenset({0}))
    start = tuple(-0.0 for _ in data)

    def eager_call() -> None:
        loss(point, label).backward()

    def compiled_call() -> None:
        compiled(point, label).backward()

    def generated_code() -> None:
        values = replay.code.forward(data)
        backward((1.0,), values, data, start)

    def guard() -> None:
        replay.stale_for(Arguments((point, label), {}))

    externals = [*point, label, *replay.parameters]
    gradients = backward((1.0,), replay.code.forward(data), data, start)[0][3:]
    sink = [Value(0.0) for _ in replay.parameters]  # Values of their own: the model's .grad stays as it was

    def reading_numbers() -> None:
        recording.numbers_of(externals)

    def adding_gradients() -> None:
        recording.add_gradients(sink, gradients)

    probes: dict[str, Callable[[], None]] = {
        "eager": eager_call,
        "compiled": compiled_call,
        "generated code": generated_code,
        "arguments + guard": guard,
        "reading numbers": reading_numbers,
        "adding gradients": adding_gradients,
    }
    times: dict[str, list[float]] = {name: [] for name in probes}
    clock = time.process_time if options.cpu else time.perf_counter
    for round_ in range(options.rounds):
        order = list(probes.items())
        if round_ % 2:
            order.reverse()
        for name, probe in order:
            start_time = clock()
            for _ in range(options.calls):
                probe()
            times[name].append((clock() - start_time) / options.calls * 1e6)
    medians = {name: statistics.median(found) for name, found in times.items()}
    overhead = medians["compiled"] - medians["generated code"]
    print(f"micrograd's MLP(2, [16, 16, 1]), one sample, forward + backward ({len(model.parameters())} parameters)")
    what = "CPU time" if options.cpu else "wall-clock time"
    print(f"medians of {options.rounds} rounds of {options.calls} calls, {what}, microseconds per call:")
    for name, median in medians.items():
        print(f"  {name:<20} {median:9.1f} us")
    print(f"  {'overhead':<20} {overhead:9.1f} us  (compiled - generated code)")
    parts = ("arguments + guard", "reading numbers", "adding gradients")
    rest = overhead - sum(medians[name] for name in parts)
    print(f"  {'the rest':<20} {rest:9.1f} us  (overhead - {' - '.join(parts)}: outputs, call node, freeing)")
    print(f"compiled / eager speed-up: {medians['eager'] / medians['compiled']:.2f}x")
    print(f"overhead / generated code: {overhead / medians['generated code']:.2f}")


if __name__ == "__main__":
    main()
