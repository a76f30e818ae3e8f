"""The PyTorch bridge: the learner's own PyTorch code, its backward passes replayed as Values.

``watch_torch()`` (``watch``) records the operations of unchanged PyTorch code and replays
each backward pass element by element (``replay``, in float32 where PyTorch ran float32:
``single``), then compares every ``.grad`` element with PyTorch's, bit for bit (``passes``).

PyTorch is an optional extra (pip install torch, or pip install -e '.[torch]' in a clone of
vjpgrad): this package imports it only when ``watch_torch()`` is called, and ``import vjpgrad``
never imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vjpgrad.bridge.watch import Watch

SUPPORTED = ((2, 1), (2, 15))
"""The torch versions the bridge takes: from 2.1 up to, not including, 2.15. CI runs its tests on
2.13; they were run by hand on 2.14.1 and 2.5.1 too (docs/explanation/exactness.md says what
differs there)."""
INSTALL = "pip install torch (or pip install -e '.[torch]' in your clone of vjpgrad)"


class TorchReplayError(RuntimeError):
    """Under ``watch_torch(strict=True)``: a pass that could not be replayed, or whose gradients
    differ from PyTorch's; the message is the pass's summary. Defined here, where torch is not
    imported, so that ``vjpgrad.TorchReplayError`` names it without importing torch."""

    __module__ = "vjpgrad"  # a traceback names it as learners import it: vjpgrad.TorchReplayError


def _version(text: str) -> tuple[int, int]:
    parts = text.split("+")[0].split(".")
    return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)


def watch_torch(*, strict: bool = False) -> Watch:
    """Watch the PyTorch code run inside ``with vjpgrad.watch_torch() as w:`` and replay each backward
    pass as Values, element by element, with PyTorch's own numbers.

    ``w.passes`` holds one ``Pass`` per backward call, in order: its graph (``outputs``) and
    ``seed``, ``matches`` (every ``.grad`` element the pass produced equal to PyTorch's, to the
    bit), ``summary()`` (leaf by leaf: equal, or by how many ulp they differ and why where that is
    known), ``explanation`` (what ``vjpgrad.explain`` gives: print it, or ``to_html()`` for the
    stepper) and, for a pass that could not be replayed, ``replayed`` False and ``reason``
    naming PyTorch's operation and the line of the code.

    The code runs exactly as it does without the watch: the watch never changes a number
    PyTorch computes. With ``strict=True`` a pass that does not match raises ``TorchReplayError``
    from its ``backward()`` (or ``torch.autograd.grad``) call: a ``RuntimeError``, so the code's own
    ``except RuntimeError`` around that call catches it too; ``w.matches`` after the block says
    for sure.
    """
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be True or False, got {type(strict).__name__}")
    try:
        import torch
    except ImportError:
        raise ImportError(f"watch_torch() needs PyTorch: {INSTALL}") from None
    low, high = SUPPORTED
    if not low <= _version(torch.__version__) < high:
        raise ImportError(
            f"watch_torch() supports torch >= {low[0]}.{low[1]} and < {high[0]}.{high[1]}; "
            f"this is torch {torch.__version__}: {INSTALL}"
        )
    from vjpgrad.bridge.watch import Watch

    return Watch(strict)


__all__ = ["SUPPORTED", "watch_torch"]
