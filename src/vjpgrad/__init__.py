"""vjpgrad: small, exact and fast reverse-mode automatic differentiation in pure Python.

A scalar ``Value`` records how it was computed; ``backward(seed)`` walks the graph back
and fills ``.grad``. A ``Vector`` of Values takes PyTorch's ``y.backward(gradients)``:
the ``gradients`` are the ``v`` of the vector-Jacobian product ``v^T J``.
"""

from vjpgrad._functions import cos, exp, log, relu, sigmoid, sin, sqrt, tan, tanh
from vjpgrad._mode import detect_anomaly, enable_grad, is_grad_enabled, no_grad
from vjpgrad._value import Value
from vjpgrad._vector import Vector

__version__ = "0.1.0"

__all__ = [
    "Value",
    "Vector",
    "cos",
    "detect_anomaly",
    "enable_grad",
    "exp",
    "is_grad_enabled",
    "log",
    "no_grad",
    "relu",
    "sigmoid",
    "sin",
    "sqrt",
    "tan",
    "tanh",
]
