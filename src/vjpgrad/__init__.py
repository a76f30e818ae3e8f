"""vjpgrad: small, exact and fast reverse-mode automatic differentiation in pure Python.

A scalar ``Value`` records how it was computed; ``backward(seed)`` walks the graph back
and fills ``.grad``. A ``Vector`` of Values takes PyTorch's ``y.backward(gradients)``:
the ``gradients`` are the ``v`` of the vector-Jacobian product ``v^T J``.
"""

from vjpgrad import _notebook  # noqa: F401  # rich display in Jupyter
from vjpgrad._compile import Compiled, compile
from vjpgrad._custom import CustomOp, custom_op
from vjpgrad._dot import SVGDrawing, draw, to_dot
from vjpgrad._explain import Explanation, Step, explain
from vjpgrad._functions import cos, exp, log, relu, sigmoid, sin, sqrt, tan, tanh
from vjpgrad._mode import detect_anomaly, enable_grad, is_grad_enabled, no_grad
from vjpgrad._value import Value
from vjpgrad._vector import Vector
from vjpgrad.functional import grad, gradcheck, gradients, hessian, jacobian, jvp, value_and_grad, vjp

__version__ = "0.1.0"

_SUBMODULES = ("nn", "optim", "testing")


def __getattr__(name: str) -> object:
    """``vjpgrad.nn``, ``vjpgrad.optim`` and ``vjpgrad.testing`` after ``import vjpgrad``, as
    ``torch.nn`` after ``import torch``: imported when first used."""
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"vjpgrad.{name}")
    raise AttributeError(f"module 'vjpgrad' has no attribute {name!r}")


__all__ = [
    "Compiled",
    "CustomOp",
    "Explanation",
    "SVGDrawing",
    "Step",
    "Value",
    "Vector",
    "compile",
    "cos",
    "custom_op",
    "detect_anomaly",
    "draw",
    "enable_grad",
    "exp",
    "explain",
    "grad",
    "gradcheck",
    "gradients",
    "hessian",
    "is_grad_enabled",
    "jacobian",
    "jvp",
    "log",
    "no_grad",
    "relu",
    "sigmoid",
    "sin",
    "sqrt",
    "tan",
    "tanh",
    "to_dot",
    "value_and_grad",
    "vjp",
]
