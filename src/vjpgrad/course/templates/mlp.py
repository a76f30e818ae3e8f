"""Exercise 11: a small neural network trained with your engine, on the two moons.

micrograd's demo: a multi-layer perceptron learns to tell apart two interleaving half circles.
The check gives train() 60 points and their labels (-1 or +1), and wants the loss to fall to
under half and at least 95% of the points right, in under a minute, with scores that are the
MLP's (worked out again from model.layers' weights; every parameter set to 0, every score is 0);
it also trains two steps (steps=2) and looks at the gradients when each backward() starts. Check
it with

    vjpgrad course check . 11
"""

import random

from engine import Value


class Neuron:
    """tanh(w . x + b), or w . x + b for the last layer (nonlin=False)."""

    def __init__(self, nin, nonlin=True, rng=random):
        self.w = [Value(rng.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0.0)
        self.nonlin = nonlin

    def __call__(self, x):
        """The neuron's output for the inputs x (numbers or Values)."""
        raise NotImplementedError("exercise 11: write Neuron.__call__")

    def parameters(self):
        return [*self.w, self.b]


class Layer:
    def __init__(self, nin, nout, nonlin=True, rng=random):
        self.neurons = [Neuron(nin, nonlin, rng) for _ in range(nout)]

    def __call__(self, x):
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self):
        return [p for n in self.neurons for p in n.parameters()]


class MLP:
    def __init__(self, nin, nouts, seed=0):
        rng = random.Random(seed)
        sizes = [nin, *nouts]
        self.layers = [Layer(sizes[i], sizes[i + 1], i != len(nouts) - 1, rng) for i in range(len(nouts))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


def train(points, labels, steps=60):
    """Train an MLP(2, [...]) for ``steps`` steps on the points (pairs of floats) and labels (-1 or +1).

    Returns (model, losses): the trained model, whose model(point).data is a score (its sign is
    the predicted label), and the loss at each step, as floats.
    """
    raise NotImplementedError("exercise 11: write train")
