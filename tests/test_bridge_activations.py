"""The activations of the PyTorch bridge held to PyTorch's own ``.grad`` over seeded random passes:
elu (selu, celu), mish, hardswish, hardsigmoid, logsigmoid, logit, threshold, relu6 and softsign.
Each pass's input holds the numbers where the backward kernels branch (0, the bounds, nan, the
infinities) and its seed signed zeros, infinities and nans; each leaf's verdict is checked against
the bits (``struct.pack('<d')``, signed zeros and a nan's sign included), and every leaf must be
equal to the bit."""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from _helpers import cases_of, parts  # noqa: E402

import vjpgrad  # noqa: E402

functional = torch.nn.functional
SEED_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, math.inf, -math.inf, math.nan]
SHAPES = [(), (1,), (7,), (8,), (16,), (17,), (3, 11), (2, 3, 9), (40,)]
"""Shapes below, at and past one and two vectors of either type (8 and 4 lanes with AVX2), so that
both ways of the kernels, their vectors and their scalar loop, are taken."""
DTYPES = [torch.float32, torch.float64]


def bits(numbers: list[float]) -> list[bytes]:
    return [struct.pack("<d", v) for v in numbers]


def every_leaf_equal_to_the_bit(w: Any, cases: list[dict[str, Any]]) -> int:
    """Each pass replayed (``cases[i]``: the leaves of pass ``i`` by name), each leaf's verdict what
    its bits say, and each equal to the bit. Returns how many leaves were compared."""
    assert len(w.passes) == len(cases), [str(p) for p in w.passes]
    compared = 0
    for p, tensors in zip(w.passes, cases, strict=True):
        assert p.replayed, p.reason
        for leaf in p.leaves:
            theirs = tensors[leaf.name].grad.reshape(-1).tolist()
            same = bits(leaf.replayed) == bits(theirs)
            assert leaf.matches == same, p.summary()  # never "equal to the bit" falsely
            assert same, p.summary()
            compared += 1
        assert p.matches, p.summary()
    return compared


def an_input(rng: random.Random, shape: tuple[int, ...], dtype: Any, special: list[float], scale: float = 2.0) -> Any:
    """Random numbers of ``shape``, a fifth of them taken from ``special``."""
    numbers = [rng.choice(special) if rng.random() < 0.2 else rng.gauss(0, 1) * scale for _ in range(math.prod(shape))]
    return torch.tensor(numbers, dtype=dtype).reshape(shape)


def a_seed(rng: random.Random, shape: tuple[int, ...], dtype: Any, special: list[float] = SEED_SPECIAL) -> Any:
    numbers = [rng.choice(special) if rng.random() < 0.2 else rng.gauss(0, 1) for _ in range(math.prod(shape))]
    return torch.tensor(numbers, dtype=dtype).reshape(shape)


def passes_of(
    part: int,
    seed: int,
    special: list[float],
    apply: Callable[[Any, int], Any],
    *,
    total: int = 200,
    scale: float = 2.0,
    low: float | None = None,
    seed_special: list[float] = SEED_SPECIAL,
) -> int:
    """``total`` seeded random passes of ``apply(x, k)`` (part ``part``'s tenth), over random shapes and
    both types, seeded by a random tensor or by ``.sum()``; the leaves compared, each equal to the bit.
    ``low``: inputs drawn uniformly from ``[low, 1 - low]`` in place of the normal ones (logit's);
    ``seed_special``: the numbers a fifth of the seed's elements are taken from."""
    rng = random.Random(seed + 1000 * part)
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in cases_of(part, total):
            shape, dtype = rng.choice(SHAPES), rng.choice(DTYPES)
            x = an_input(rng, shape, dtype, special, scale)
            if low is not None:
                uniform = torch.tensor([rng.uniform(low, 1 - low) for _ in range(x.numel())], dtype=dtype)
                mostly = torch.tensor([rng.random() < 0.8 for _ in range(x.numel())], dtype=torch.bool)
                x = torch.where(mostly.reshape(shape), uniform.reshape(shape), x)
            x.requires_grad_()
            cases.append({"x": x})
            y = apply(x, k)
            if k % 5 == 0:
                y.sum().backward()
            else:
                y.backward(a_seed(rng, tuple(y.shape), y.dtype, seed_special))
    return every_leaf_equal_to_the_bit(w, cases)


def test_celu_of_a_negative_alpha_is_not_replayed_and_says_why() -> None:
    """A celu of a negative alpha (an ``input_scale`` below 0) is not replayed, saying so."""
    with vjpgrad.watch_torch() as w:
        x = torch.randn(5, dtype=torch.float64, requires_grad=True)
        functional.celu(x, alpha=-1.0).sum().backward()
    assert not w.passes[0].replayed
    assert "celu with a negative alpha" in (w.passes[0].reason or "")


# ---- elu, selu, celu ---------------------------------------------------------------------------

ELU_SPECIAL = [0.0, -0.0, math.nan, math.inf, -math.inf, -1e-30, 1e-30, -100.0]


@pytest.mark.parametrize("part", parts())
def test_elu_is_replayed_with_its_kernels_exp_in_both_ways(part: int) -> None:
    """``F.elu(x, alpha)`` / ``nn.ELU``: ``elu_backward`` hands each element ``dy * scale`` above 0,
    else ``dy * input_scale * (alpha * scale) * exp(x * input_scale)`` left to right, the exp the
    kernel's vectorised one in its vectors, the C library's one number at a time; a nan goes the
    first way one at a time, the second in vectors; in place, from the result."""

    def apply(x: Any, k: int) -> Any:
        alpha = (1.0, 0.7, 2.5, 1e-3)[k % 4]
        if k % 3 == 0:
            return functional.elu(x * 1.5, alpha=alpha, inplace=True)
        return functional.elu(x, alpha) if k % 3 == 1 else torch.nn.ELU(alpha)(x * 4)

    assert passes_of(part, 71, ELU_SPECIAL, apply) == 20


@pytest.mark.parametrize("part", parts())
def test_selu_is_replayed_as_an_elu_with_a_scale(part: int) -> None:
    """``F.selu(x)`` / ``nn.SELU``: an ``elu`` of alpha 1.6732632423543772 and scale 1.0507009873554805
    (``elu_`` in place)."""

    def apply(x: Any, k: int) -> Any:
        if k % 3 == 0:
            return functional.selu(x * 1.5, inplace=True)
        return functional.selu(x) if k % 3 == 1 else torch.nn.SELU()(x * 4)

    assert passes_of(part, 73, ELU_SPECIAL, apply) == 20


@pytest.mark.parametrize("part", parts())
def test_celu_is_replayed_as_an_elu_of_input_scale_one_over_alpha(part: int) -> None:
    """``F.celu(x, alpha)`` / ``nn.CELU``: ``elu_backward`` with scale 1 and ``input_scale``
    ``1.0 / alpha.toFloat()``, in double, then in the tensor's type (``celu_`` in place)."""

    def apply(x: Any, k: int) -> Any:
        alpha = (1.0, 1.3, 0.3, 7.0)[k % 4]
        if k % 3 == 0:
            return functional.celu(x * 1.5, alpha=alpha, inplace=True)
        return functional.celu(x, alpha) if k % 3 == 1 else torch.nn.CELU(alpha)(x * 4)

    assert passes_of(part, 79, ELU_SPECIAL, apply) == 20


# ---- mish, hardswish, hardsigmoid, logsigmoid, softsign ------------------------------------------


@pytest.mark.parametrize("part", parts())
def test_mish_is_replayed_with_its_kernels_derivative(part: int) -> None:
    """``F.mish`` / ``nn.Mish``: ``mish_backward`` hands ``dy * (tanh_sp + x * sigmoid * (1 - tanh_sp²))``,
    the factor PyTorch's kernel's own (its exp, log1p and tanh in vectors or one at a time)."""

    def apply(x: Any, k: int) -> Any:
        if k % 3 == 0:
            return functional.mish(x * 1.5, inplace=True)
        return functional.mish(x) if k % 3 == 1 else torch.nn.Mish()(x * 4)

    assert passes_of(part, 83, [0.0, -0.0, math.nan, math.inf, -math.inf, 30.0, -30.0], apply) == 20


HARD_SPECIAL = [3.0, -3.0, 0.0, -0.0, math.nan, math.inf, -math.inf, 2.9999998, -2.9999998]


@pytest.mark.parametrize("part", parts())
def test_hardswish_is_replayed_with_its_two_ways_at_nan(part: int) -> None:
    """``F.hardswish`` / ``nn.Hardswish``: ``hardswish_backward`` hands exactly 0 at -3 and below,
    ``dy * ((x / 3) + 0.5)`` between -3 and 3 and ``dy`` from 3 on; for a nan its vectors compute the
    product, one number at a time it takes ``dy``."""

    def apply(x: Any, k: int) -> Any:
        if k % 3 == 0:
            return functional.hardswish(x * 1.0, inplace=True)
        return functional.hardswish(x) if k % 3 == 1 else torch.nn.Hardswish()(x * 2)

    assert passes_of(part, 89, HARD_SPECIAL, apply, scale=3.0) == 20


@pytest.mark.parametrize("part", parts())
def test_hardsigmoid_is_replayed_with_the_float_one_sixth(part: int) -> None:
    """``F.hardsigmoid`` / ``nn.Hardsigmoid``: ``hardsigmoid_backward`` hands ``dy * (1.0f / 6.0f)``
    strictly between -3 and 3 (the float constant, float64 tensors too), else exactly 0."""

    def apply(x: Any, k: int) -> Any:
        if k % 3 == 0:
            return functional.hardsigmoid(x * 1.0, inplace=True)
        return functional.hardsigmoid(x) if k % 3 == 1 else torch.nn.Hardsigmoid()(x * 2)

    assert passes_of(part, 97, HARD_SPECIAL, apply, scale=3.0) == 20


@pytest.mark.parametrize("part", parts())
def test_logsigmoid_is_replayed_with_its_buffer_and_the_factor_first(part: int) -> None:
    """``F.logsigmoid`` / ``nn.LogSigmoid`` (``log_sigmoid_forward``): ``log_sigmoid_backward`` hands
    ``(max_deriv - sign * (buffer / (1 + buffer))) * dy``, the buffer the forward's ``exp(-|x|)``."""

    def apply(x: Any, k: int) -> Any:
        return functional.logsigmoid(x) if k % 2 else torch.nn.LogSigmoid()(x * 4)

    assert passes_of(part, 101, [0.0, -0.0, math.nan, math.inf, -math.inf, 100.0, -100.0], apply, scale=5.0) == 20


@pytest.mark.parametrize("part", parts())
def test_softsign_is_replayed_as_what_it_decomposes_into(part: int) -> None:
    """``F.softsign`` / ``nn.Softsign``: ``x / (1 + |x|)`` in Python, PyTorch's ``abs``, ``add`` and
    ``div``, each replayed, over finite inputs and seeds without nan (``div``'s replay computes
    ``grad * -((x / y) / y)`` where PyTorch computes ``-grad * ((x / y) / y)``: of a nan it may keep the
    other sign, and says it is not equal)."""

    def apply(x: Any, k: int) -> Any:
        return functional.softsign(x) if k % 2 else torch.nn.Softsign()(x * 3)

    special = [0.0, -0.0, 1e30, -1e30, 1e-30, -1e-30]
    assert passes_of(part, 103, special, apply, seed_special=[0.0, -0.0, 1.0, -1.0, math.inf, -math.inf]) == 20


# ---- logit, threshold, relu6 ---------------------------------------------------------------------

LOGIT_SPECIAL = [0.0, -0.0, 1.0, math.nan, math.inf, -math.inf, 1e-4, 1 - 1e-4, -0.5, 1.5, 1e-3]


@pytest.mark.parametrize("part", parts())
def test_logit_is_replayed_without_eps_and_with_one(part: int) -> None:
    """``torch.logit(x, eps)``: ``logit_backward`` hands ``dy / (x * (1 - x))`` inside ``[eps, 1 - eps]``
    (``[0, 1]`` without ``eps``), outside it nan without ``eps`` and exactly 0 with one; one number at
    a time ``dy * inf`` at 0 and 1 (at -0.0 too, where its vectors divide by -0.0) and the quotient for
    a nan (its vectors: nan without ``eps``, 0 with one)."""

    def apply(x: Any, k: int) -> Any:
        eps = (None, 1e-3, 0.0, 1e-6, 0.25)[k % 5]
        if k % 3 == 0:
            return (x * 1.0).logit_(eps)
        return torch.logit(x, eps) if k % 3 == 1 else torch.special.logit(x * 1.0, eps=eps)

    assert passes_of(part, 107, LOGIT_SPECIAL, apply, scale=0.5, low=0.0) == 20


@pytest.mark.parametrize("part", parts())
def test_threshold_is_replayed_as_a_mask_at_the_threshold(part: int) -> None:
    """``F.threshold(x, threshold, value)`` / ``nn.Threshold``: ``threshold_backward`` hands 0 where
    the input is at most the threshold (in the tensor's type), else ``dy``."""

    def apply(x: Any, k: int) -> Any:
        threshold, value = ((0.1, 20.0), (0.0, -1.0), (-0.5, 0.0), (1.0, math.nan))[k % 4]
        if k % 3 == 0:
            return functional.threshold(x * 1.0, threshold, value, inplace=True)
        return functional.threshold(x, threshold, value) if k % 3 == 1 else torch.nn.Threshold(threshold, value)(x * 2)

    special = [0.1, 0.0, -0.0, -0.5, 1.0, math.nan, math.inf, -math.inf]
    assert passes_of(part, 109, special, apply, scale=1.0) == 20


@pytest.mark.parametrize("part", parts())
def test_relu6_is_replayed_as_the_hardtanh_it_calls(part: int) -> None:
    """``F.relu6`` / ``nn.ReLU6``: ``hardtanh(x, 0, 6)``, its backward 0 at and outside 0 and 6
    (a nan aside: hardtanh's vectors and scalar loop differ there, a note of its own)."""

    def apply(x: Any, k: int) -> Any:
        if k % 3 == 0:
            return functional.relu6(x * 1.0, inplace=True)
        return functional.relu6(x) if k % 3 == 1 else torch.nn.ReLU6()(x * 2)

    special = [0.0, -0.0, 6.0, -6.0, math.inf, -math.inf, 5.9999995]
    assert passes_of(part, 113, special, apply, scale=4.0) == 20


# ---- a nan gradient meeting a nan ----------------------------------------------------------------

NAN_MEETS_NAN: list[tuple[str, Callable[[Any], Any]]] = [
    ("elu", lambda x: functional.elu(x, 0.7)),
    ("elu_", lambda x: functional.elu(x * 1.0, 0.7, inplace=True)),
    ("selu", functional.selu),
    ("celu_", lambda x: functional.celu(x * 1.0, 1.3, inplace=True)),
    ("mish", functional.mish),
    ("hardswish", functional.hardswish),
    ("hardsigmoid", functional.hardsigmoid),
    ("logsigmoid", functional.logsigmoid),
    ("logit", torch.logit),
    ("logit with eps", lambda x: torch.logit(x, 1e-3)),
    ("threshold", lambda x: functional.threshold(x, 0.1, 2.0)),
]


@pytest.mark.parametrize(("name", "apply"), NAN_MEETS_NAN, ids=[name for name, _ in NAN_MEETS_NAN])
def test_a_nan_gradient_meeting_a_nan_keeps_the_nan_pytorch_keeps(name: str, apply: Callable[[Any], Any]) -> None:
    """Of two nans multiplied (the gradient and a factor the kernel made of a nan), a kernel keeps one
    by the order its compiler gave the product, elu the gradient's and the others the factor's;
    Python's product keeps one by its operands' types. Nans of both signs meet, in the kernels'
    vectors and in their scalar loops (54 numbers: 48 in vectors, 6 past them), in both types."""
    nan = math.nan
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for dtype in DTYPES:
            for seed_nan in (nan, -nan):
                x = torch.tensor([(nan, -nan, -1.0, 0.5, 2.0, 0.0)[i % 6] for i in range(54)], dtype=dtype)
                x.requires_grad_()
                cases.append({"x": x})
                seed = torch.tensor([(seed_nan, -seed_nan, 1.0)[i % 3] for i in range(54)], dtype=dtype)
                apply(x).backward(seed)
    assert every_leaf_equal_to_the_bit(w, cases) == 4


# ---- a gradient laid out otherwise ---------------------------------------------------------------

LAID_OUT_OTHERWISE: list[tuple[str, Callable[[Any], Any], bool]] = [
    ("elu", functional.elu, False),
    ("celu", lambda x: functional.celu(x, 1.3), False),
    ("mish", functional.mish, False),
    ("hardswish", functional.hardswish, True),
    ("logit", lambda x: torch.logit(x.sigmoid()), True),
    ("logsigmoid", functional.logsigmoid, True),
]


@pytest.mark.parametrize(("name", "apply", "nans"), LAID_OUT_OTHERWISE, ids=[n for n, _, _ in LAID_OUT_OTHERWISE])
def test_a_gradient_laid_out_otherwise_may_differ_and_the_pass_says_why(
    name: str, apply: Callable[[Any], Any], nans: bool
) -> None:
    """The result used transposed hands the activation a gradient laid out column after column, whose
    kernel then computes every number one at a time: its exp (elu's), its exp, log1p and tanh
    (mish's), or what it makes of a nan (hardswish's, logit's, logsigmoid's) differ from the
    replay's, which follows a gradient laid out row-major. Every pass that differs names that
    reason; none says "equal" falsely. (The exp's differ in some pass; whether a nan's sign does
    varies with the tests run before in the process: measured, logit's float64 passes differed alone
    and were equal after tests/test_bridge.py.)"""
    rng = random.Random(127)
    with vjpgrad.watch_torch() as w:
        for dtype in DTYPES:
            for _ in range(5):
                x = an_input(rng, (8, 9), dtype, [math.nan] if nans else [0.0], 1.0).requires_grad_()
                weights = an_input(rng, (9, 8), dtype, [math.nan] if nans else [1.0], 1.0)
                (apply(x).t() * weights).sum().backward()
    assert nans or any(not p.matches for p in w.passes)
    for p in w.passes:
        assert p.replayed, p.reason
        if not p.matches:
            assert any(reason.startswith(name) and "lies in memory" in reason for reason in p.reasons), p.summary()
