"""One backward pass of the learner's PyTorch code, replayed: its graph, its seed, and how each
leaf's ``.grad`` compares with PyTorch's, element by element."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vjpgrad.core.value import Value
from vjpgrad.display import text
from vjpgrad.display.explain import Explanation


@dataclass(frozen=True)
class LeafReport:
    """How the replay's ``.grad`` of one leaf tensor compares with PyTorch's after the pass (or its
    gradient with the one ``torch.autograd.grad`` returns, for a leaf or a tensor inside the graph)."""

    name: str
    shape: tuple[int, ...]
    replayed: list[float]  # the .grad the replay computes, element by element (row-major)
    pytorch: list[float] | None  # PyTorch's .grad after the pass; None where PyTorch ran no such pass
    distances: list[int | None]  # ulps apart per element (None: nan against a number, or inf against another)
    what: str = ".grad"  # what is compared: a leaf's .grad, or "'s gradient (returned)" by torch.autograd.grad
    held: list[float] | None = None  # the .grad the leaf held before the pass, where not zeros: added onto
    added: list[float] | None = None  # this pass's gradient, where ``held`` is given
    single: bool = False  # a float32 tensor's: its numbers are float32's, widened (a nan's payload printed so)

    @property
    def equal(self) -> int:
        return sum(d == 0 for d in self.distances)

    @property
    def matches(self) -> bool:
        return self.pytorch is not None and self.equal == len(self.distances)

    def line(self, reasons: Sequence[str], below: bool = False) -> str:
        """The leaf's line of a pass's summary: its ``.grad``, and how it compares; ``reasons``, why
        it may differ, inline, or (``below``) said once under the pass's leaves."""
        shown = f"{self.name}{self.what} = {_numbers(self.replayed, self.shape)}"
        if self.pytorch is not None and not self.matches:
            shown += " in the replay"  # not the learner's .grad, which holds PyTorch's (written last)
        if self.held is not None and self.added is not None:  # an explanation's totals end at the pass's own
            held, added = _numbers(self.held, self.shape), _numbers(self.added, self.shape)
            shown += f", the {held} it held plus this pass's {added}"
        if self.pytorch is None:
            return f"  {shown}"
        total = len(self.distances)
        if self.matches:
            return f"  {shown}: equal to PyTorch's to the bit ({total}/{total} elements)"
        why = f" ({'; '.join(reasons)})" if reasons else " (the reason is not known)"
        if below and reasons:
            why = " (why: below)"
        others = "all" if self.equal == 0 else "the others"
        return (
            f"  {shown}: {self.equal}/{total} elements equal to PyTorch's to the bit; {others} differ "
            f"{self._difference()}{why}; {self._differing()}; PyTorch's: {_numbers(self.pytorch, self.shape)}"
        )

    def _differing(self, shown: int = 3) -> str:
        """The first ``shown`` elements that differ, each by its index and both numbers in full (``repr``:
        printed to 6 digits, numbers an ulp apart look the same), and how many more differ."""
        assert self.pytorch is not None
        at = [k for k, d in enumerate(self.distances) if d != 0]
        parts = [
            f"{_index(k, self.shape)}: {_signed(self.replayed[k], self.single)} here, "
            f"{_signed(self.pytorch[k], self.single)} in PyTorch's"
            for k in at[:shown]
        ]
        more = f" ({len(at) - shown} more)" if len(at) > shown else ""
        return "; ".join(parts) + more

    def _difference(self) -> str:
        """How far apart the elements that differ are: a nan or an infinity, only the sign of a zero
        (0 and -0 are equal numbers with other bits: "1 ulp, 0 apart" would puzzle), or the most ulp."""
        assert self.pytorch is not None
        pairs = [(a, b) for a, b, d in zip(self.replayed, self.pytorch, self.distances, strict=True) if d != 0]
        if all(math.isnan(a) and math.isnan(b) for a, b in pairs):  # nan against nan: its sign, its payload
            signs = {math.copysign(1.0, a) != math.copysign(1.0, b) for a, b in pairs}
            payloads = {_payload(a) != _payload(b) for a, b in pairs}
            if signs == {True} and payloads == {False}:
                return "only in the sign of a nan (nan against nan, with another sign bit)"
            if signs == {False}:
                return "only in a nan's payload (nan against nan, other bits: printed nan(0x...))"
            return "only in a nan's sign or payload (nan against nan, other bits)"
        if None in self.distances:
            return "by up to a nan or an infinity apart"
        if all(a == 0.0 and b == 0.0 for a, b in pairs):
            return "only in the sign of a zero (0 against -0: equal numbers, other bits)"
        # across zero a tiny difference is a huge count of ulp: the distance says how tiny
        apart = max(abs(a - b) for a, b in pairs)
        return f"by up to {max(d for d in self.distances if d is not None)} ulp (at most {text.number(apart)} apart)"


def _index(flat: int, shape: tuple[int, ...]) -> str:
    """The element at row-major position ``flat`` of a tensor of ``shape``, as the learner indexes it:
    ``[1,0]``; ``[0]`` for a number (a 0-d tensor)."""
    place = []
    for size in reversed(shape):
        flat, k = divmod(flat, size)
        place.append(k)
    return "[" + ",".join(map(str, reversed(place or [0]))) + "]"


_QUIET = 1 << 51
_QUIET_SINGLE = 1 << 22
"""The payload of the nan an invalid operation makes (the quiet bit alone)."""


def _payload(x: float, single: bool = False) -> int:
    """A nan's payload: the 52 low bits of its float64 number, or the 23 of its float32's."""
    if single:
        return int.from_bytes(struct.pack("<f", x), "little") & ((1 << 23) - 1)
    return int.from_bytes(struct.pack("<d", x), "little") & ((1 << 52) - 1)


def _signed(x: float, single: bool = False) -> str:
    """``x`` in full (``repr``); a nan with its sign as PyTorch prints one (``-nan``), and its
    payload where it is not an invalid operation's (``nan(0x8000000000001)``; float32's where
    ``single``, whose nans were widened to float64 for the comparison: ``nan(0x400001)``)."""
    if not math.isnan(x):
        return repr(x)
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    payload = _payload(x, single)
    return f"{sign}nan" if payload == (_QUIET_SINGLE if single else _QUIET) else f"{sign}nan({payload:#x})"


SHOWN_WHOLE = 8
"""The most elements a summary writes of a tensor (a seed, a ``.grad``); of more, the first ones, flat."""


def _numbers(values: list[float], shape: tuple[int, ...]) -> str:
    """``values``, a tensor of ``shape``'s elements in row-major order, as PyTorch prints the tensor:
    nested in its shape (``[[2, 0.4], [0.06, 0.008]]``); of more than ``SHOWN_WHOLE``, the first
    ones flat, then how many there are and the shape (``... (12 elements, 3×4)``); an empty one of
    several dimensions ``[]`` and its shape (PyTorch's ``tensor([], size=(0, 3))``)."""
    if not shape:
        return text.number(values[0])
    if not values and len(shape) > 1:
        return f"[] (0 elements, {'×'.join(map(str, shape))})"
    if len(values) > SHOWN_WHOLE:
        of = f"{len(values)} elements" + (f", {'×'.join(map(str, shape))}" if len(shape) > 1 else "")
        return "[" + ", ".join(text.number(v) for v in values[:SHOWN_WHOLE]) + f", ... ({of})]"
    if math.prod(shape) != len(values):  # (never met: a shape that does not hold the values is not written)
        shape = (len(values),)

    def nested(start: int, dims: tuple[int, ...]) -> str:
        if len(dims) == 1:
            return "[" + ", ".join(text.number(v) for v in values[start : start + dims[0]]) + "]"
        step = math.prod(dims[1:])
        return "[" + ", ".join(nested(start + k * step, dims[1:]) for k in range(dims[0])) + "]"

    return nested(0, shape)


SEED_IS_V = {
    "backward": "  the seed is the v of a vector-Jacobian product: this pass adds Σᵢ v[i] · ∂y[i]/∂x (vᵀJ) into each "
    "x.grad below",
    "torch.autograd.grad": "  the seed is the v of a vector-Jacobian product: the gradient of each x below is "
    "Σᵢ v[i] · ∂y[i]/∂x (vᵀJ)",
}
"""What a summary says under a pass from one tensor ``y`` of several elements, seeded by the
learner (the question its learners bring: what are the numbers ``y.backward(gradients)`` takes?)."""


@dataclass
class Pass:
    """One backward pass: ``outputs`` seeded with ``seed`` (the ``gradient`` argument, one number per
    element), where the learner called it, and what the replay made of it.

    ``replayed`` is False when a PyTorch operation on the way could not be replayed: ``reason``
    then names it and the learner's line. ``matches`` is True only when every ``.grad`` element
    the pass produced equals PyTorch's to the bit. ``explanation`` is the pass as
    ``vjpgrad.explain`` shows it (its stepper page: ``explanation.to_html()``).
    """

    number: int
    location: str
    outputs: list[Value]
    seed: list[float]
    retain_graph: bool
    replayed: bool = True
    reason: str = ""
    explainer: Callable[[], Explanation] | None = field(default=None, repr=False)
    leaves: list[LeafReport] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # known reasons a gradient may differ
    pytorch_error: str | None = None  # PyTorch refused the pass (or it raised during it): its message
    pytorch_ran: bool = False  # PyTorch's pass ran, in part, before its error (a .grad changed)
    raised_in: str = ""  # where the learner's code PyTorch's pass called (a hook) raised it: "mine (hook.py:6)"
    raised_by_library: bool = False  # raised_in is an installed function PyTorch called (register_hook(json.dumps))
    call: str = "backward"  # what ran it: backward, or torch.autograd.grad or torch.func (never replayed)
    ran_as: str = ""  # how the replay ran a pass PyTorch refused
    notes: list[str] = field(default_factory=list)  # lines under the leaves' (a leaf with no name: where it is)
    kernels: str = ""  # where PyTorch ran kernels other than those the replay follows: how to pick those
    learners_reasons: list[str] = field(default_factory=list)  # those of reasons the learner's code gives (a hook)
    vector: bool = False  # it started from one tensor of several elements, seeded by the learner (y.backward(v))
    seed_shapes: list[tuple[int, ...]] | None = None  # the shape of each output it started from (of its seed)

    _explanation: Explanation | None = field(default=None, init=False, repr=False)

    @property
    def learners_cause(self) -> bool:
        """Whether the learner's code explains a difference (a hook, a change the watch missed)."""
        return bool(self.learners_reasons)

    @property
    def matches(self) -> bool:
        return self.replayed and self.pytorch_error is None and all(leaf.matches for leaf in self.leaves)

    @property
    def explanation(self) -> Explanation | None:
        """The pass, edge by edge, as ``vjpgrad.explain`` gives it (None for a pass not replayed);
        made when first read: a pass's comparison does not need it."""
        if self._explanation is None and self.explainer is not None:
            self._explanation = self.explainer()
        return self._explanation

    def summary(self) -> str:
        """What the pass did, leaf by leaf, and whether each ``.grad`` is PyTorch's to the bit."""
        lines = self._header()
        if self.pytorch_error is not None:
            if self.raised_in:  # the learner's hook, not PyTorch: its error, as a traceback's last line says it
                who = "A function PyTorch's pass called" if self.raised_by_library else "Your code"
                said = f"{who} raised during PyTorch's pass, in {self.raised_in}"
            else:
                said = "PyTorch raised during its pass" if self.pytorch_ran else "PyTorch refused it"
            lines.append(f"  {said}: {self.pytorch_error}")
        if self.ran_as:
            lines.append(f"  Replayed {self.ran_as}:")
        if not self.replayed:
            lines.append(f"  not replayed: {self.reason}")
            lines += [f"  {note}" for note in self.notes]
            return "\n".join(lines)
        differing = [leaf for leaf in self.leaves if leaf.pytorch is not None and not leaf.matches]
        below = len(differing) > 1 and bool(self.reasons)  # said once, not on every leaf's line
        lines += [leaf.line(self.reasons, below) for leaf in self.leaves]
        if below:
            lines.append("  Why elements may differ here (what the pass ran that PyTorch may compute otherwise):")
            lines += [f"    - {reason}" for reason in self.reasons]
        if differing and self.kernels:
            if self.learners_cause:  # a hook or a change the watch missed: other kernels would change nothing there
                lines.append("  Where the hook or the change named above does not explain a difference:")
            lines.append(f"  {self.kernels}")
        if not self.leaves:
            lines.append("  no leaf tensor that requires grad was reached")
        lines += [f"  {note}" for note in self.notes]
        return "\n".join(lines)

    def _header(self) -> list[str]:
        """The summary's first line (the pass, where, its seed) and, under a seed of several
        numbers PyTorch took, what that seed is (``SEED_IS_V``)."""
        seeded = self.call in ("backward", "torch.autograd.grad") and self.seed  # its grad_outputs
        seed = f", {self._seed()}" if seeded else ""
        lines = [f"Pass {self.number}: {self.call} at {self.location}{seed}"]
        if seeded and self.vector and self.pytorch_error is None and not self.ran_as:
            lines.append(SEED_IS_V[self.call])
        return lines

    def _seed(self) -> str:
        """The seed, in the shape of the output it seeds (a number's: ``seed [1]``), and of several
        outputs each one's apart (``seeds [[1, 2], [3, 4]] and [10, 20]``); flat where the shapes are
        not known or do not hold its numbers. A seed PyTorch refused is written in its own shape,
        a number's as a number (its message tells ``torch.Size([])`` from ``torch.Size([1])``)."""
        shapes = self.seed_shapes
        if not shapes or sum(math.prod(shape) for shape in shapes) != len(self.seed):
            return f"seed {_numbers(self.seed, (len(self.seed),))}"
        if len(shapes) == 1:
            refused = self.pytorch_error is not None and not self.raised_in
            return f"seed {_numbers(self.seed, shapes[0] or (() if refused else (1,)))}"
        parts, start = [], 0
        for shape in shapes:
            parts.append(_numbers(self.seed[start : start + math.prod(shape)], shape))
            start += math.prod(shape)
        return f"seeds {', '.join(parts[:-1])} and {parts[-1]}"

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        state = "matches" if self.matches else ("differs" if self.replayed else "not replayed")
        return f"<Pass {self.number} at {self.location}: {state}>"
