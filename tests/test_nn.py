"""vjpgrad.nn: micrograd's layer shapes, seeded initialisation, training to full accuracy."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

import vjpgrad
from vjpgrad import Value
from vjpgrad.nn import MLP, Layer, Module, Neuron
from vjpgrad.optim import SGD

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_mlp_has_micrograds_shape_and_parameter_count() -> None:
    model = MLP(2, [16, 16, 1], seed=0)
    assert len(model.parameters()) == (2 * 16 + 16) + (16 * 16 + 16) + (16 + 1)
    assert [len(layer.neurons) for layer in model.layers] == [16, 16, 1]
    assert repr(model).startswith("MLP of [Layer of [ReluNeuron(2)")
    assert "LinearNeuron(16)" in repr(model)


def test_weights_are_uniform_in_minus_1_1_biases_zero_and_a_seed_fixes_them() -> None:
    a, b = MLP(3, [4, 2], seed=7), MLP(3, [4, 2], seed=7)
    assert [p.data for p in a.parameters()] == [p.data for p in b.parameters()]
    assert [p.data for p in a.parameters()] != [p.data for p in MLP(3, [4, 2], seed=8).parameters()]
    for neuron in (n for layer in a.layers for n in layer.neurons):
        assert all(-1.0 <= w.data <= 1.0 for w in neuron.w)
        assert neuron.b.data == 0.0
    shared = random.Random(3)
    assert [p.data for p in Neuron(2, seed=shared).parameters()] != [
        p.data for p in Neuron(2, seed=shared).parameters()
    ]


def test_a_single_output_is_a_value_and_several_a_list() -> None:
    assert isinstance(MLP(2, [3, 1], seed=0)([1.0, 2.0]), Value)
    out = MLP(2, [3, 2], seed=0)([1.0, 2.0])
    assert isinstance(out, list)
    assert len(out) == 2


def test_a_neuron_computes_activation_of_w_dot_x_plus_b() -> None:
    n = Neuron(2, seed=0)
    n.w[0].data, n.w[1].data, n.b.data = 0.5, -2.0, 0.25
    assert n([1.0, 1.0]).data == 0.0  # relu(0.5 - 2 + 0.25) = relu(-1.25)
    assert n([3.0, 0.0]).data == 1.75
    t = Neuron(2, activation="tanh", seed=0)
    t.w[0].data, t.w[1].data = 1.0, 0.0
    assert t([0.5, 9.0]).data == Value(0.5).tanh().data
    assert Neuron(2, nonlin=False, seed=0).activation == "linear"


def test_activations_per_hidden_layer() -> None:
    model = MLP(2, [3, 3, 1], activation=["tanh", "relu"], seed=0)
    assert [layer.neurons[0].activation for layer in model.layers] == ["tanh", "relu", "linear"]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: MLP(2, [3, 1], seed=0)([1.0]), ValueError, "this MLP takes 2 inputs, got 1"),
        (lambda: MLP(2, [3, 1], seed=0)("ab"), TypeError, "an MLP takes a list of inputs, got str"),
        (lambda: MLP(2, [3, 1], seed=0)([1.0, "x"]), TypeError, "MLP input 1 must be a number or a Value, got str"),
        (lambda: MLP(0, [1]), ValueError, "MLP nin must be at least 1, got 0"),
        (lambda: MLP(2, []), TypeError, "nouts must be a non-empty list"),
        (lambda: MLP(2, [3, 1], activation=["tanh", "relu"]), ValueError, "1 hidden layers but 2 activations"),
        (lambda: Neuron(2, activation="gelu"), ValueError, "activation must be one of relu, tanh, sigmoid, linear"),
        (lambda: Layer(2, 0), ValueError, "Layer nout must be at least 1, got 0"),
        (lambda: MLP(2, [1], seed="x"), TypeError, "seed must be an int, a random.Random or None, got str"),
    ],
)
def test_bad_construction_and_calls_name_the_problem(make: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make()  # type: ignore[operator]


def test_zero_grad_on_a_module() -> None:
    model = MLP(2, [2, 1], seed=0)
    out = model([1.0, -1.0])
    assert isinstance(out, Value)
    (out * out + 1).backward()
    model.zero_grad()
    assert all(p.grad == 0.0 for p in model.parameters())
    assert Module().parameters() == []


def test_a_small_net_learns_a_small_two_moons_set_to_full_accuracy() -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        from moons import loss, make_moons
    finally:
        sys.path.remove(str(EXAMPLES))
    points, labels = make_moons(n=30, noise=0.05, seed=3)
    model = MLP(2, [8, 8, 1], seed=1)
    optimizer = SGD(model.parameters(), lr=0.5)
    accuracy = 0.0
    for _ in range(150):
        total, accuracy = loss(model, points, labels)
        if accuracy == 1.0:
            break
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
    assert accuracy == 1.0


def test_the_moons_example_reaches_full_accuracy(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "moons.py"), "--steps", "60", "--out", str(tmp_path / "m.png")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "training accuracy 100%" in result.stdout
    assert "wrote" in result.stdout or "pip install matplotlib (or pip install -e '.[plot]'" in result.stdout


def test_no_grad_inside_training_leaves_no_graph_on_parameters() -> None:
    model = MLP(2, [2, 1], seed=0)
    with vjpgrad.no_grad():
        out = model([1.0, 2.0])
    assert isinstance(out, Value)
    assert not out.requires_grad
