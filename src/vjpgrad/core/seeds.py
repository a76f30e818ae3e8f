"""The seed rules: every entry point that takes the ``v`` of ``v^T J`` reads it here.

``backward``, ``gradients``, ``vjp``, ``explain``, ``to_dot``/``draw``, ``vjpgrad.testing``
and the command line all turn their seed argument into one number per output through
``seeds_for``, so a seed means the same thing, and is refused with the same message,
wherever it is given.

The rules are PyTorch's: a Value output takes a number (1.0 when left out); ``n`` outputs
take ``n`` numbers (a sequence, a Vector or a NumPy array); leaving the seed out is allowed
only for a single output ("grad can be implicitly created only for scalar outputs"). A
seed longer than a length-1 Vector output is summed into it, because that output was
broadcast: PyTorch's engine reduces such a seed this way, which is why case 3 of the
answer to Stack Overflow's "Pytorch, what are the gradient arguments"
(https://stackoverflow.com/questions/43451125) prints 3.3003 = 3 × (0.1 + 1.0 + 0.0001).

A Value output given a sequence of seeds is read the same way, as PyTorch's engine reads a
0-d output: ``Value(1.0).backward([0.1, 1, 0.0001])`` is the answer's case 3 on one number
(seed 1.1001), and a one-element list is that element. PyTorch's front end has refused a
seed longer than its output since version 1.3 ("Mismatch in shape"), and a learner who
passes one by mistake (``loss.backward([1.0] * 3)`` on a summed loss) gets the gradient
several times over, so every summing of several seeds into one warns, at the user's line.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from vjpgrad.core.graph import Node
from vjpgrad.core.modes import warn_at_users_line


class SummedSeedWarning(UserWarning):
    """Several seeds were summed into an output of one number (case 3 of the Stack Overflow
    question "Pytorch, what are the gradient arguments"; PyTorch before 1.3): meant there, a
    mistake on a loss (``loss.backward([1.0] * 3)``). ``warnings.filterwarnings("ignore",
    category=vjpgrad.SummedSeedWarning)`` where the summing is meant."""


def scalar_seed(seed: object, what: str, *, differentiable: bool = False, single: bool = False) -> Any:
    """One seed as a float (a Value stays a Value when ``differentiable``), or a TypeError."""
    if isinstance(seed, Node):
        return seed if differentiable and seed.requires_grad else seed.data
    if isinstance(seed, numbers.Real):
        return float(seed)
    module = type(seed).__module__
    if module == "numpy" and getattr(seed, "shape", None) == ():
        return float(seed)  # type: ignore[arg-type]  # a 0-d NumPy array
    tensor = module.partition(".")[0] == "torch"
    if tensor and tuple(getattr(seed, "shape", (0,))) == () and _real_dtype(seed):
        return float(seed.detach().item())  # type: ignore[attr-defined]  # a 0-d tensor: y.backward(torch.tensor([...]))
    advice = " (a PyTorch tensor: pass its real numbers, tensor.tolist())" if tensor else ""
    raise TypeError(
        f"{what} must be a real number{' for a single output' if single else ''}, got {type(seed).__name__}{advice}"
    )


def _real_dtype(tensor: Any) -> bool:
    """A PyTorch tensor of real numbers: floating or integer, not complex, not bool."""
    dtype = getattr(tensor, "dtype", None)
    return dtype is not None and not getattr(dtype, "is_complex", True) and str(dtype) != "torch.bool"


def _is_sequence(seed: object) -> bool:
    """A list, tuple, Vector or 1-d NumPy array of seeds (not a string, a mapping or a set)."""
    if isinstance(seed, (str, bytes, Node, Mapping, AbstractSet)) or not isinstance(seed, Iterable):
        return False
    return getattr(seed, "shape", None) != ()


def seeds_for(count: int | None, seed: object, *, name: str, hint: str = "", differentiable: bool = False) -> list[Any]:
    """The seeds of ``count`` outputs (``None``: one Value output), one per output.

    ``name`` is the argument's name in messages; ``hint`` says how to pass a seed in the
    caller's own terms (the command line says ``--seed``).
    """
    if count is None:
        if seed is None:
            return [1.0]
        if _is_sequence(seed):  # several weights of one number: summed, as into a one-element output
            return seeds_for(1, seed, name=name, hint=hint, differentiable=differentiable)
        return [scalar_seed(seed, f"{name}", differentiable=differentiable, single=True)]
    if seed is None:
        if count != 1:
            raise RuntimeError(
                f"grad can be implicitly created only for scalar outputs: the output has {count} elements, "
                f"so pass a seed of one number per element, {hint or f'e.g. [1.0] * {count}'}"
            )
        return [1.0]
    if isinstance(seed, (Mapping, AbstractSet)):
        raise TypeError(
            f"{name} must be a sequence of numbers, one number per output in order, got a {type(seed).__name__}: "
            "a dict would give its keys and a set its own order"
        )
    if isinstance(seed, (str, bytes, Node)) or not isinstance(seed, Iterable):
        raise TypeError(
            f"{name} must be a sequence of numbers (a list, a Vector or a NumPy array) with one number per output, "
            f"got {type(seed).__name__}"
        )
    seeds = [_element(s, f"{name}[{i}]", count, differentiable) for i, s in enumerate(seed)]
    if len(seeds) == count:
        return seeds
    if count == 1 and len(seeds) > 1:
        total = seeds[0]
        for s in seeds[1:]:
            total = total + s
        warn_at_users_line(_summed(name, len(seeds), total), SummedSeedWarning)
        return [total]
    if count == 1:  # not "one number per element": several would be summed, above
        raise ValueError(f"{name} is empty, for an output of one number: pass one number, or no seed for 1.0")
    raise ValueError(f"{name} has length {len(seeds)} but the output has length {count}: pass one number per element")


def _element(seed: object, what: str, count: int, differentiable: bool) -> Any:
    """One element of a sequence of seeds: a number; a row (a nested seed) is refused saying how
    a seed is laid out."""
    if _is_sequence(seed):
        numbers = f"{count} number{'' if count == 1 else 's'}"
        raise TypeError(
            f"{what} is a {type(seed).__name__}, not a number: a seed is one number per element of the output, "
            f"in the output's order ({numbers} here); a matrix-shaped seed is laid out row by row, as the "
            "output's elements are: [w for row in seed for w in row] (see \"What shape is the seed for a "
            "matrix-shaped output?\" in the documentation's questions learners ask)"
        )
    return scalar_seed(seed, what, differentiable=differentiable)


def _summed(name: str, count: int, total: object) -> str:
    """What the warning says when ``count`` seeds were summed into a one-number output."""
    number = float(total.data if isinstance(total, Node) else total)  # type: ignore[arg-type]
    return (
        f"{name} has {count} numbers for an output of one number, so they were summed into one seed, {number!r}: "
        'this reproduces PyTorch before version 1.3 (case 3 of the Stack Overflow question "Pytorch, what are '
        'the gradient arguments"); PyTorch now refuses it (RuntimeError: Mismatch in shape). A one-number '
        f"output takes one number: pass {number!r}, or no seed for 1.0"
    )
