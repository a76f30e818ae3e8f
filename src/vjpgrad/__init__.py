"""vjpgrad: small, exact and fast reverse-mode automatic differentiation in pure Python.

A scalar ``Value`` records how it was computed; ``backward(seed)`` walks the graph back
and fills ``.grad``. A ``Vector`` of Values takes PyTorch's ``y.backward(gradients)``:
the ``gradients`` are the ``v`` of the vector-Jacobian product ``v^T J``.
"""

# the public API, from the layers: core (the engine), transforms, compiler, display
from typing import TYPE_CHECKING

from vjpgrad._version import __version__ as __version__  # the one place it is written
from vjpgrad.core import functions as _functions
from vjpgrad.core.functions import *  # noqa: F403 - the table's functions: exp, log... (their __all__)
from vjpgrad.core.modes import DataDependentError, detect_anomaly, enable_grad, is_grad_enabled, no_grad
from vjpgrad.core.seeds import SummedSeedWarning
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector
from vjpgrad.display import notebook as _notebook  # noqa: F401 - gives Value and Vector their notebook display
from vjpgrad.display.dot import SVGDrawing, draw, to_dot
from vjpgrad.display.explain import Explanation, Step, explain
from vjpgrad.recording import RecompileWarning
from vjpgrad.transforms.custom import CustomOp, custom_op

if TYPE_CHECKING:
    from vjpgrad.batched import Vmapped, batch_sum, vmap
    from vjpgrad.bridge import TorchReplayError
    from vjpgrad.bridge.watch import Watch
    from vjpgrad.compiler import Compiled, compile
from vjpgrad.transforms.functional import grad, gradcheck, gradients, hessian, jacobian, jvp, value_and_grad, vjp

_SUBMODULES = ("nn", "optim", "testing")
_LAZY = {
    "compile": "compiler",
    "Compiled": "compiler",
    "vmap": "batched",
    "Vmapped": "batched",
    "batch_sum": "batched",
    "TorchReplayError": "bridge",  # the bridge's package, which imports torch only when watch_torch() is called
}
"""The names of ``vjpgrad.compile`` and ``vjpgrad.vmap``, by the package that defines them: imported
at their first use, not by ``import vjpgrad`` (two thirds of its time; the core never imports them)."""


def watch_torch(*, strict: bool = False) -> "Watch":
    """Replay the backward passes of your own PyTorch code as Values, element by element, exact
    to the bit where PyTorch's are (``with vjpgrad.watch_torch() as w:``; see
    ``vjpgrad.bridge.watch_torch``). PyTorch is imported only now, and only this needs it:
    pip install torch (or pip install -e '.[torch]' in your clone of vjpgrad)."""
    from vjpgrad.bridge import watch_torch as watch

    return watch(strict=strict)


def __getattr__(name: str) -> object:
    """``vjpgrad.nn``, ``vjpgrad.optim`` and ``vjpgrad.testing`` after ``import vjpgrad``, as
    ``torch.nn`` after ``import torch``, and ``compile`` and ``vmap`` with their kin (``_LAZY``):
    imported when first used, then kept in the module like any other name."""
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"vjpgrad.{name}")
    if name in _LAZY:
        found = getattr(importlib.import_module(f"vjpgrad.{_LAZY[name]}"), name)
        globals()[name] = found
        return found
    raise AttributeError(f"module 'vjpgrad' has no attribute {name!r}")


def __dir__() -> list[str]:
    """What ``dir(vjpgrad)`` lists (tab completion, ``help``): the names imported at first use too."""
    return sorted({*globals(), *_LAZY, *_SUBMODULES})


__all__ = [
    "Compiled",
    "CustomOp",
    "DataDependentError",
    "Explanation",
    "RecompileWarning",
    "SVGDrawing",
    "Step",
    "SummedSeedWarning",
    "TorchReplayError",
    "Value",
    "Vector",
    "Vmapped",
    "batch_sum",
    "compile",
    "custom_op",
    "detect_anomaly",
    "draw",
    "enable_grad",
    "explain",
    "grad",
    "gradcheck",
    "gradients",
    "hessian",
    "is_grad_enabled",
    "jacobian",
    "jvp",
    "no_grad",
    "to_dot",
    "value_and_grad",
    "vjp",
    "vmap",
    "watch_torch",
]
__all__ += _functions.__all__  # one per function of the table (exp, log, ...): they follow from it
