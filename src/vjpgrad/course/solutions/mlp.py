"""The reference solution of exercise 11: micrograd's demo, smaller, with this course's engine."""

import random

from engine import Value


class Neuron:
    """tanh(w . x + b), or w . x + b for the last layer (nonlin=False)."""

    def __init__(self, nin, nonlin=True, rng=random):
        self.w = [Value(rng.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0.0)
        self.nonlin = nonlin

    def __call__(self, x):
        act = self.b
        for wi, xi in zip(self.w, x, strict=True):
            act = act + wi * xi
        return act.tanh() if self.nonlin else act

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
    model = MLP(2, [6, 6, 1])
    losses = []
    for k in range(steps):
        scores = [model(p) for p in points]
        margins = [(1 - label * score).relu() for label, score in zip(labels, scores, strict=True)]
        data_loss = sum(margins, Value(0.0)) * (1.0 / len(margins))
        reg_loss = 1e-4 * sum((p * p for p in model.parameters()), Value(0.0))
        loss = data_loss + reg_loss
        loss.zero_grad()
        loss.backward()
        learning_rate = 1.0 - 0.9 * k / steps
        for p in model.parameters():
            p.data -= learning_rate * p.grad
        losses.append(loss.data)
    return model, losses
