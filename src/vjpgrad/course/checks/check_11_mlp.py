"""Exercise 11 (mlp.py): an MLP trained with the student's engine on two moons: the loss falls and
at least 95% of the points come out right, in under a minute."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from vjpgrad.course import expect
from vjpgrad.course.expect import advice
from vjpgrad.course.twins import close

ACCURACY = 0.95
SECONDS = 60.0
"""CPU seconds train() may take: a micrograd-shaped engine trains MLP(2, [6, 6, 1]) for 60 steps in about 5."""
POINTS = 60


def make_moons(n: int = POINTS, noise: float = 0.1, seed: int = 1) -> tuple[list[list[float]], list[int]]:
    """Two interleaving half circles, labels -1 and +1, with Gaussian noise (examples/moons.py's data)."""
    rng = random.Random(seed)
    points, labels = [], []
    for i in range(n):
        t = math.pi * (i // 2) / (n // 2 - 1)
        if i % 2 == 0:
            x, y, label = math.cos(t), math.sin(t), -1
        else:
            x, y, label = 1 - math.cos(t), 0.5 - math.sin(t), 1
        points.append([x + rng.gauss(0, noise), y + rng.gauss(0, noise)])
        labels.append(label)
    return points, labels


def test_each_step_starts_from_zeroed_gradients(student: Any) -> None:
    """Each training step starts from zeroed gradients."""
    value_type = student("engine").Value
    points, labels = make_moons()
    before: list[list[tuple[Any, Any]]] = []  # at each backward(): every leaf, and its grad then
    original = value_type.backward

    def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
        before.append(student.probe("leaf_gradients", self))  # the graph walked where it is
        return original(self, *args, **kwargs)

    value_type.backward = watched
    try:
        result = student("mlp").train([list(p) for p in points], list(labels), steps=2)
    finally:
        value_type.backward = original
    model, _ = expect.items(result, 2, "train(points, labels, steps=2)", "(model, losses)")
    assert len(before) >= 2, (
        f"train(points, labels, steps=2) called backward() {len(before)} times: once per step, on the loss"
    )
    parameters = {id(p) for p in model.parameters()}
    held = [grad for leaf, grad in before[1] if id(leaf) in parameters and grad != 0]
    largest = max(held, key=abs) if held else 0.0
    assert not held, (
        f"at the 2nd step, when backward() was called, {len(held)} of the model's {len(parameters)} parameters "
        f"still held the 1st step's gradient (the largest {largest!r}): backward() adds into .grad, so "
        "the 2nd step moved the parameters by both steps' gradients"
        + advice(". Zero every parameter's gradient before each backward()")
    )


@pytest.fixture(scope="session")
def trained(student: Any) -> tuple[Any, list[float], float]:
    """The student's train() on the moons, once: (model, losses, seconds)."""
    points, labels = make_moons()
    # CPU time, counted by the kernel from outside where it can, with the collector as a training script would set it
    train = student("mlp").train
    result, seconds, _ = student.cpu_seconds(train, [list(p) for p in points], list(labels))
    model, losses = expect.items(result, 2, "train(points, labels)", "(model, losses)")
    steps = len(losses) if isinstance(losses, (list, tuple)) else 0
    expected = "the loss at each step, as a list of floats (loss.data), at least one"
    return model, expect.floats(losses, max(steps, 1), "train(points, labels)'s losses:", expected), seconds


def test_the_loss_falls_to_under_half_its_start(trained: tuple[Any, list[float], float]) -> None:
    """The loss falls to under half its start."""
    _, losses, _ = trained
    assert losses[-1] < losses[0] / 2, (
        f"the loss went from {losses[0]:.4g} to {losses[-1]:.4g} in {len(losses)} steps: it should fall to under "
        "half"
        + advice(". Are the gradients zeroed before each backward(), and is each parameter moved against its gradient?")
    )


def test_at_least_95_percent_of_the_points_are_right(trained: tuple[Any, list[float], float]) -> None:
    """At least 95% of the points are right."""
    model, _, _ = trained
    points, labels = make_moons()
    # each score's number, checked a float here: comparisons run on the student's objects would be theirs to answer
    scores = expect.floats(
        [model(list(p)).data for p in points], len(points), "model(point).data over the points", "a number a point"
    )
    right = sum((score > 0) == (label > 0) for score, label in zip(scores, labels, strict=True))
    assert right / len(points) >= ACCURACY, (
        f"{right} of {len(points)} points are right ({right / len(points):.0%})"
        + advice(
            f": train until at least {ACCURACY:.0%} are (more steps, or a learning rate that falls)",
            f", not at least {ACCURACY:.0%}",
        )
    )


def test_the_scores_come_from_the_parameters(trained: tuple[Any, list[float], float]) -> None:
    """The scores come from the parameters: with every one at 0, every score is 0."""
    model, _, _ = trained
    points, _ = make_moons()
    parameters = list(model.parameters())
    assert parameters, "model.parameters() is empty: the scores must come from parameters that training moves"
    saved = expect.floats([p.data for p in parameters], len(parameters), "p.data over model.parameters()", "numbers")
    try:
        for p in parameters:
            p.data = 0.0
        # an MLP's last layer is w . h + b: with every weight and bias 0, it scores 0 whatever h is
        scores = expect.floats(
            [model(list(p)).data for p in points], len(points), "model(point).data over the points", "a number a point"
        )
    finally:
        for p, data in zip(parameters, saved, strict=True):
            p.data = data
    moved = sum(score != 0.0 for score in scores)
    assert not moved, (
        f"with every one of model.parameters() set to 0, {moved} of {len(points)} points still score other than 0 "
        f"(one scores {next(score for score in scores if score != 0.0)!r}): the scores must come from the "
        "parameters, as an MLP's do, the last layer's w . h + b"
    )


Layers = list[list[tuple[list[float], float, bool]]]
"""Each layer's neurons, each its weights, bias and whether it is nonlinear: numbers read once."""


def _layers(model: Any) -> Layers:
    """``model.layers``' neurons as numbers, read once (each read of the student's objects could
    answer anew), before any score is worked out from them."""
    layers: Layers = []
    for layer in list(model.layers):
        neurons = []
        for neuron in list(layer.neurons):
            weights = list(neuron.w)
            numbers = expect.floats([w.data for w in weights], len(weights), "a neuron's w .data", "a number each")
            bias = expect.floats([neuron.b.data], 1, "a neuron's b.data", "a number")[0]
            neurons.append((numbers, bias, neuron.nonlin is True))
        layers.append(neurons)
    return layers


def _worked_out(layers: Layers, point: list[float], activation: Any) -> float:
    """The score of ``point`` worked out here as the template's MLP computes it: each neuron
    ``activation(b + w . x)``, the last layer's ``b + w . x`` (``nonlin=False``)."""
    x = list(point)
    for layer in layers:
        out = []
        for weights, bias, nonlinear in layer:
            z = bias
            for w, xi in zip(weights, x, strict=True):
                z += w * xi
            out.append(activation(z) if nonlinear else z)
        x = out
    return x[0]


def test_the_scores_are_the_mlps_layers_of_neurons(trained: tuple[Any, list[float], float]) -> None:
    """The scores are the MLP's: its layers of neurons, worked out from their weights, at every point."""
    model, _, _ = trained
    points, _ = make_moons()
    try:
        layers = _layers(model)
        worked = [(_worked_out(layers, p, math.tanh), _worked_out(layers, p, lambda z: max(z, 0.0))) for p in points]
    except Exception as error:  # the student's object: what it lacks is said, not raised
        raise AssertionError(
            f"model.layers of neurons could not be read ({type(error).__name__}: {error}): the model must be "
            "mlp.py's MLP, whose layers hold Neurons with w, b and nonlin"
        ) from None
    for point, (tanh, relu) in zip(points, worked, strict=True):
        score = expect.floats([model(list(point)).data], 1, "model(point).data", "a number")[0]
        assert close(score, tanh) or close(score, relu), (
            f"model({point}).data is {score!r}, but its layers' weights give {tanh!r} (tanh neurons) or {relu!r} "
            "(relu): the score must be the MLP's, computed from model.layers' neurons"
        )


def test_training_takes_under_a_minute(trained: tuple[Any, list[float], float]) -> None:
    """Training takes under a minute of CPU."""
    seconds = trained[2]
    assert seconds < SECONDS, f"train took {seconds:.0f} s of CPU" + advice(
        f": keep it under {SECONDS:.0f} s (fewer steps, a smaller model)", f", not under {SECONDS:.0f} s"
    )
