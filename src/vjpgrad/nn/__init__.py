"""A small neural-network layer: micrograd's ``Module``, ``Neuron``, ``Layer`` and ``MLP``.

``MLP(2, [16, 16, 1])`` is micrograd's constructor: two inputs, two hidden layers of 16
neurons, one output. Hidden layers apply an activation (relu by default, tanh or sigmoid on
request, per layer); the last layer is linear. Weights are drawn uniformly from [-1, 1] and
biases start at 0, as in micrograd, by a ``random.Random`` that ``seed=`` fixes.

``vjpgrad.nn.functional`` has PyTorch's functions on lists of Values: ``softmax``,
``log_softmax``, ``cross_entropy``, ``rms_norm``, ``linear``, ``max``.
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Sequence

from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector
from vjpgrad.nn import functional as functional  # vjpgrad.nn.functional, as torch.nn.functional

ACTIVATIONS = ("relu", "tanh", "sigmoid", "linear")


def _rng(seed: int | random.Random | None) -> random.Random:
    if isinstance(seed, random.Random):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TypeError(f"seed must be an int, a random.Random or None, got {type(seed).__name__}")
    return random.Random(seed)


def _activation(name: object) -> str:
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {name!r}")
    return str(name)


def _nonlin(nonlin: object, who: str) -> bool:
    if not isinstance(nonlin, bool):
        raise TypeError(f"{who} nonlin must be a bool, got {type(nonlin).__name__}")
    return nonlin


def _positive_int(n: object, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{what} must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"{what} must be at least 1, got {n}")
    return n


class Module:
    """Anything with parameters: ``parameters()`` lists them, ``zero_grad()`` zeroes their grads."""

    def parameters(self) -> list[Value]:
        """Every trainable Value of this module."""
        return []

    def zero_grad(self, set_to_none: bool = False) -> None:
        """Set the gradient of every parameter to 0.0, or to None with ``set_to_none=True``
        (PyTorch's default: an optimizer then skips a parameter no pass reached since)."""
        if not isinstance(set_to_none, bool):
            raise TypeError(f"set_to_none must be a bool, got {type(set_to_none).__name__}")
        cleared = None if set_to_none else 0.0
        for p in self.parameters():
            p.grad = cleared


class Neuron(Module):
    """``activation(w · x + b)`` for ``nin`` inputs."""

    def __init__(
        self, nin: int, nonlin: bool = True, *, activation: str = "relu", seed: int | random.Random | None = None
    ) -> None:
        nin = _positive_int(nin, "Neuron nin")
        activation = _activation(activation)
        nonlin = _nonlin(nonlin, "Neuron")
        rng = _rng(seed)
        self.w = [Value(rng.uniform(-1.0, 1.0)) for _ in range(nin)]
        self.b = Value(0.0)
        self.activation = activation if nonlin else "linear"

    def __call__(self, x: Sequence[Value | float]) -> Value:
        try:
            count = len(x)
        except TypeError:
            raise TypeError(f"a Neuron takes a list of inputs, got {type(x).__name__}") from None
        if count != len(self.w):
            raise ValueError(f"this Neuron takes {len(self.w)} inputs, got {count}")
        total = self.b
        try:
            for wi, xi in zip(self.w, x, strict=True):
                total = total + wi * xi
        except TypeError:  # checked only here: the checks cost nothing on the way a model's inputs take
            for index, xi in enumerate(x):
                if not isinstance(xi, (Value, numbers.Real)):
                    raise TypeError(
                        f"Neuron input {index} must be a number or a Value, got {type(xi).__name__}"
                    ) from None
            raise
        if self.activation == "linear":
            return total
        activated: Value = getattr(total, self.activation)()  # relu, tanh or sigmoid: a Value method
        return activated

    def parameters(self) -> list[Value]:
        return [*self.w, self.b]

    def __repr__(self) -> str:
        return f"{self.activation.capitalize()}Neuron({len(self.w)})"


class Layer(Module):
    """``nout`` neurons, each seeing all ``nin`` inputs."""

    def __init__(
        self,
        nin: int,
        nout: int,
        nonlin: bool = True,
        *,
        activation: str = "relu",
        seed: int | random.Random | None = None,
    ) -> None:
        rng = _rng(seed)
        nout = _positive_int(nout, "Layer nout")
        nonlin = _nonlin(nonlin, "Layer")
        self.neurons = [Neuron(nin, nonlin, activation=activation, seed=rng) for _ in range(nout)]

    def __call__(self, x: Sequence[Value | float]) -> Value | list[Value]:
        out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self) -> list[Value]:
        return [p for n in self.neurons for p in n.parameters()]

    def __repr__(self) -> str:
        return f"Layer of [{', '.join(str(n) for n in self.neurons)}]"


class MLP(Module):
    """A multi-layer perceptron: ``MLP(nin, [n1, n2, ..., nout])``.

    Calling it on ``nin`` inputs (numbers or Values, in a list or a Vector: what ``grad`` makes
    of a list, and ``vmap`` of a sample) returns a Value when the last layer has one output and a
    list of Values otherwise. ``activation`` is one name for every hidden layer or a list, one
    per hidden layer; the last layer is linear.
    """

    def __init__(
        self,
        nin: int,
        nouts: Sequence[int],
        *,
        activation: str | Sequence[str] = "relu",
        seed: int | random.Random | None = None,
    ) -> None:
        nin = _positive_int(nin, "MLP nin")
        if isinstance(nouts, (str, bytes)) or not isinstance(nouts, Sequence) or not nouts:
            raise TypeError(f"MLP nouts must be a non-empty list of layer sizes, got {nouts!r}")
        hidden = len(nouts) - 1
        if isinstance(activation, str):
            activations = [activation] * hidden
        elif isinstance(activation, Sequence):
            activations = list(activation)
        else:
            raise TypeError(f"activation must be a name or a list of names, got {activation!r}")
        for name in [activation] if isinstance(activation, str) else activations:
            _activation(name)  # refused even where no hidden layer uses it
        if len(activations) != hidden:
            raise ValueError(f"MLP has {hidden} hidden layers but {len(activations)} activations were given")
        rng = _rng(seed)
        sizes = [nin, *nouts]
        self.layers = [
            Layer(
                sizes[i], sizes[i + 1], nonlin=i < hidden, activation=activations[i] if i < hidden else "relu", seed=rng
            )
            for i in range(len(nouts))
        ]

    def __call__(self, x: Sequence[Value | float | numbers.Real] | Vector) -> Value | list[Value]:
        # a Vector is a list of Values: what grad gives for a list, and vmap for a sample of a batch
        if isinstance(x, (str, bytes)) or not isinstance(x, (Sequence, Vector)):
            raise TypeError(f"an MLP takes a list of inputs, got {type(x).__name__}")
        nin = len(self.layers[0].neurons[0].w)
        if len(x) != nin:
            raise ValueError(f"this MLP takes {nin} inputs, got {len(x)}")
        out: list[Value | float] = []
        for index, xi in enumerate(x):
            if not isinstance(xi, (Value, numbers.Real)):
                raise TypeError(f"MLP input {index} must be a number or a Value, got {type(xi).__name__}")
            out.append(xi if isinstance(xi, Value) else float(xi))
        for layer in self.layers:
            result = layer(out)
            out = [result] if isinstance(result, Value) else list(result)
        return out[0] if len(out) == 1 else out  # type: ignore[return-value]  # all Values after a layer

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self) -> str:
        return f"MLP of [{', '.join(str(layer) for layer in self.layers)}]"
