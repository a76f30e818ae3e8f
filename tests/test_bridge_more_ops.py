"""More of PyTorch's operations a learner's code uses, held to PyTorch's own ``.grad`` over seeded
random passes: ``F.pad``, ``trace``, the diagonals, ``masked_select``, ``scatter_add`` and
``index_add``; ``nan_to_num``, ``lerp``, ``addcmul`` and ``addcdiv``; ``smooth_l1_loss`` and
``huber_loss``; ``var_mean`` and ``std_mean``. Each leaf's verdict is checked against the bits
(``struct.pack('<d')``, signed zeros and a nan's sign included), and each leaf must be equal,
unless its pass names a sum whose order the replay cannot be sure of."""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from _helpers import cases_of, nan_signs_alone, parts  # noqa: E402

import vjpgrad  # noqa: E402
from vjpgrad.bridge.replay import SPREAD_AND_MEAN_NAN_NOTE  # noqa: E402
from vjpgrad.bridge.watch import NAN_SIGNS_NOTE, SUM_NOTE  # noqa: E402

functional = torch.nn.functional
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, math.inf, -math.inf, math.nan]
DTYPES = [torch.float32, torch.float64]


def bits(numbers: list[float]) -> list[bytes]:
    return [struct.pack("<d", v) for v in numbers]


def grad_bits(t: Any) -> list[bytes]:
    return bits(t.grad.reshape(-1).tolist())


def every_leaf_equal_to_the_bit(w: Any, cases: list[dict[str, Any]], *, unless_summed: bool = False) -> tuple[int, int]:
    """Each pass replayed (``cases[i]``: the leaves of pass ``i`` by name), each leaf's verdict what
    its bits say, and each equal, unless (``unless_summed``) the pass names a sum whose order the
    replay cannot be sure of (a broadcast operand's gradient summed back over two dimensions, nans
    of both signs in one sum). Returns how many leaves were compared and how many were equal: with
    every leaf of every pass equal, ``leaves_of(cases)``."""
    assert len(w.passes) == len(cases), [str(p) for p in w.passes]
    compared = equal = 0
    for p, tensors in zip(w.passes, cases, strict=True):
        assert p.replayed, p.reason
        for leaf in p.leaves:
            same = bits(leaf.replayed) == grad_bits(tensors[leaf.name])
            assert leaf.matches == same, p.summary()  # never "equal to the bit" falsely
            # nans of both signs met where the pass says so: which sign a nan keeps is not reproducible
            excused = NAN_SIGNS_NOTE in p.reasons and nan_signs_alone(leaf.replayed, leaf.pytorch)
            assert same or excused or (unless_summed and SUM_NOTE in p.reasons), p.summary()
            compared += 1
            equal += same or excused
        assert p.matches == all(leaf.matches for leaf in p.leaves), p.summary()
    return compared, equal


def leaves_of(cases: list[dict[str, Any]]) -> tuple[int, int]:
    """What ``every_leaf_equal_to_the_bit`` returns when every leaf of every pass is equal."""
    n = sum(len(leaves) for leaves in cases)
    return n, n


def some_numbers(
    rng: random.Random, shape: tuple[int, ...], dtype: Any, special: float = 0.15, choices: list[float] = SPECIAL
) -> Any:
    """Random numbers of ``shape``, some of them signed zeros, infinities, nans (of ``choices``) or small
    integers."""
    numbers = [
        rng.choice(choices)
        if rng.random() < special
        else float(rng.randint(-1, 1))
        if rng.random() < 0.15
        else rng.gauss(0, 1)
        for _ in range(math.prod(shape))
    ]
    return torch.tensor(numbers, dtype=dtype).reshape(shape)


def a_shape(rng: random.Random, least: int = 0, most: int = 3, size: int = 5) -> tuple[int, ...]:
    return tuple(rng.randint(1, size) for _ in range(rng.randint(least, most)))


def with_minus_zeros(x: Any) -> Any:
    """``x * 1.5`` plus a path that hands every element of ``x`` -0.0 (or nan, for an infinite or nan
    element): an element the operation does not take gets PyTorch's +0.0, which turns that -0.0 into 0.0."""
    return x * 1.5 + (x * 0.0).sum() * -1.0


def seeded(rng: random.Random, y: Any, k: int) -> tuple[Any, Any]:
    """What to call ``backward`` on, and its seed: ``y`` and a general seed (signed zeros, infinities
    and nans among its numbers) one pass in two, else ``y.sum()`` and none. (Called in the test
    itself, whose locals name the leaves.)"""
    if k % 2:
        return y.sum(), None
    return y, some_numbers(rng, tuple(y.shape), y.dtype, special=0.2)


# ---- F.pad, constant mode (constant_pad_nd) ------------------------------------------------------


@pytest.mark.parametrize("part", parts())
def test_pad_in_constant_mode_copies_each_gradient_back_and_gives_a_cropped_element_plus_zero(part: int) -> None:
    """``F.pad(x, pad, value=c)`` (``constant_pad_nd``): its backward is ``constant_pad_nd(grad, -pad)``,
    each element's gradient its place's as it is; a negative pad crops, and a cropped element gets
    the +0.0 of the zeros the backward pads with. Over 1 to 3 dimensions, pads of -2 to 3 per side."""
    rng = random.Random(101 + 1000 * part)
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in cases_of(part, 240):
            dtype = rng.choice(DTYPES)
            shape = a_shape(rng, 1, 3)
            x = some_numbers(rng, shape, dtype).requires_grad_()
            cases.append({"x": x})
            pad: list[int] = []
            for d in range(rng.randint(1, len(shape))):
                size = shape[-1 - d]
                before = rng.randint(-min(2, size - 1), 3)
                pad += [before, rng.randint(-min(2, size - 1 - max(0, -before)), 3)]
            h = with_minus_zeros(x) if k % 3 else x.sin()
            root, seed = seeded(rng, functional.pad(h, pad, value=rng.choice([0.0, 2.5, -1.0, math.inf])), k)
            root.backward(seed)
    assert every_leaf_equal_to_the_bit(w, cases) == leaves_of(cases)


# ---- trace ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("part", parts())
def test_trace_writes_the_gradient_on_the_diagonal_and_plus_zero_elsewhere(part: int) -> None:
    """``torch.trace(m)``: ``trace_backward`` fills the diagonal of a tensor of zeros with the gradient
    (``index_fill``: written, not added), so every other element gets exactly +0.0. Square and not."""
    rng = random.Random(113 + 1000 * part)
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in cases_of(part, 240):
            m = some_numbers(rng, (rng.randint(1, 5), rng.randint(1, 5)), rng.choice(DTYPES)).requires_grad_()
            cases.append({"m": m})
            y = torch.trace(with_minus_zeros(m) if k % 2 else m.cos())
            y.backward(some_numbers(rng, (), y.dtype, special=0.3))
    assert every_leaf_equal_to_the_bit(w, cases) == leaves_of(cases)


# ---- the diagonals: diag, diagonal, diag_embed ---------------------------------------------------


def a_diagonal(rng: random.Random, h: Any, k: int) -> Any:
    """One of ``torch.diag`` (of a vector: ``diag_embed``; of a matrix: ``diagonal_copy``),
    ``torch.diagonal`` and ``torch.diag_embed``, with offsets and dimensions, negative too."""
    kind = k % 4
    if kind == 0:
        vector = h.reshape(-1)
        return torch.diag(vector, rng.randint(-2, 2))
    if kind == 1:
        matrix = h.reshape(h.shape[0] if h.dim() else 1, -1)
        return torch.diag(matrix, rng.randint(-matrix.shape[0] + 1, matrix.shape[1] - 1))
    if kind == 2 and h.dim() >= 2:
        dim1, dim2 = rng.sample(range(-h.dim(), 0), 2)
        return torch.diagonal(h, rng.randint(-2, 2), dim1, dim2)
    dims = rng.sample(range(-h.dim() - 1, 0), 2) if h.dim() else [-2, -1]
    return torch.diag_embed(h, rng.randint(-2, 2), *dims)


@pytest.mark.parametrize("part", parts())
def test_the_diagonals_copy_each_gradient_and_give_the_others_plus_zero(part: int) -> None:
    """``torch.diag``, ``torch.diagonal`` and ``torch.diag_embed``, as the dispatch shows them
    (``diag_embed``, ``diagonal_copy``, ``diagonal``): each backward a copy (``diagonal`` of the
    gradient, or the gradient written on a diagonal of zeros), an element a diagonal does not take
    getting +0.0. Offsets and dimensions negative too, empty diagonals among them."""
    rng = random.Random(127 + 1000 * part)
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in cases_of(part, 240):
            x = some_numbers(rng, a_shape(rng, 1, 3, 4), rng.choice(DTYPES)).requires_grad_()
            cases.append({"x": x})
            root, seed = seeded(rng, a_diagonal(rng, with_minus_zeros(x), k), k // 4)
            root.backward(seed)
    assert every_leaf_equal_to_the_bit(w, cases) == leaves_of(cases)


# ---- masked_select, scatter_add, index_add -------------------------------------------------------


@pytest.mark.parametrize("part", parts())
def test_masked_select_writes_each_gradient_back_and_plus_zero_elsewhere(part: int) -> None:
    """``torch.masked_select(x, mask)`` (a mask of ``x``'s shape or one that broadcasts to it):
    ``masked_select_backward`` scatters the gradient into zeros, so each picked element gets its
    gradient as it is and every other +0.0."""
    rng = random.Random(139 + 1000 * part)
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in cases_of(part, 240):
            shape = a_shape(rng, 0, 3)
            x = some_numbers(rng, shape, rng.choice(DTYPES)).requires_grad_()
            cases.append({"x": x})
            mask_shape = shape[rng.randint(0, len(shape)) :] if k % 2 else shape
            mask = torch.tensor([rng.random() < 0.5 for _ in range(math.prod(mask_shape))]).reshape(mask_shape)
            root, seed = seeded(rng, torch.masked_select(with_minus_zeros(x), mask), k // 2)
            root.backward(seed)
    assert every_leaf_equal_to_the_bit(w, cases) == leaves_of(cases)


@pytest.mark.parametrize("part", parts())
def test_scatter_add_and_index_add_hand_self_and_the_source_their_places_gradients(part: int) -> None:
    """``x.scatter_add(dim, index, src)``: ``x`` gets the gradient as it is, ``src`` the gradient at the
    place its index names (``grad.gather(dim, index)``); ``x.index_add(dim, index, source, alpha=a)``:
    ``x`` the gradient, ``source`` ``grad.index_select(dim, index) * a``. Repeated indices, empty
    ones, dimensions negative too, out of place and in place."""
    rng = random.Random(149 + 1000 * part)
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in cases_of(part, 240):
            dtype = rng.choice(DTYPES)
            shape = a_shape(rng, 1, 3, 4)
            dim = rng.randrange(-len(shape), len(shape))
            x = some_numbers(rng, shape, dtype).requires_grad_()
            if k % 2:
                index_shape = tuple(
                    rng.randint(0, 3) if d == dim % len(shape) else rng.randint(1, n) for d, n in enumerate(shape)
                )
                index = torch.randint(0, shape[dim], index_shape, generator=torch.Generator().manual_seed(k))
                src = some_numbers(rng, index_shape, dtype).requires_grad_()
                y = x.scatter_add(dim, index, src) if k % 4 == 1 else (x * 1.0).scatter_add_(dim, index, src)
            else:
                count = rng.randint(0, 5)
                index = torch.tensor([rng.randrange(shape[dim]) for _ in range(count)], dtype=torch.long)
                source_shape = tuple(count if d == dim % len(shape) else n for d, n in enumerate(shape))
                src = some_numbers(rng, source_shape, dtype).requires_grad_()
                alpha = rng.choice([1, 0.5, -3.0])
                y = x.index_add(dim, index, src, alpha=alpha) if k % 4 else (x * 1.0).index_add_(dim, index, src)
            cases.append({"x": x, "src": src})
            root, seed = seeded(rng, y, k // 2)
            root.backward(seed)
    assert every_leaf_equal_to_the_bit(w, cases) == leaves_of(cases)


def test_masked_select_with_a_mask_that_broadcasts_the_tensor_is_not_replayed_and_says_why() -> None:
    """``torch.masked_select(x, mask)`` with a mask of more dimensions than ``x``: its backward sums the
    broadcast zeros and gradients back to ``x``'s shape, which the replay does not follow. The pass is
    listed as not replayed, and PyTorch's ``.grad`` is as without the watch."""
    x = torch.tensor([0.5, -1.25, 3.0], requires_grad=True)
    mask = torch.tensor([[True, False, True], [True, True, False]])
    with vjpgrad.watch_torch() as w:
        torch.masked_select(x, mask).sum().backward()
    assert not w.passes[0].replayed
    assert "masked_select with a mask that broadcasts its tensor" in w.passes[0].reason
    assert x.grad is not None
    assert x.grad.tolist() == [2.0, 1.0, 1.0]


# ---- nan_to_num, and lerp, addcmul, addcdiv of three operands ------------------------------------


@pytest.mark.parametrize("part", parts())
def test_nan_to_num_hands_the_gradient_times_whether_the_element_was_finite(part: int) -> None:
    """``torch.nan_to_num(x, nan, posinf, neginf)``: ``grad * isfinite(x)``, a product, so that an
    element that was a nan or an infinity gets ``grad * 0`` (-0.0 for a negative gradient, nan for an
    infinite one), not a 0 whatever the gradient."""
    rng = random.Random(109 + 1000 * part)
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in cases_of(part, 240):
            x = some_numbers(rng, a_shape(rng), rng.choice(DTYPES), special=0.4).requires_grad_()
            cases.append({"x": x})
            options = rng.choice([{}, {"nan": 0.5}, {"posinf": 3.0, "neginf": -3.0}, {"nan": 1.0, "posinf": 9.0}])
            y = torch.nan_to_num(x * 1.0, **options) if k % 3 else (x * 2.0).nan_to_num_(**options)
            root, seed = seeded(rng, y, k)
            root.backward(seed)
    assert every_leaf_equal_to_the_bit(w, cases) == leaves_of(cases)


def shapes_that_broadcast(rng: random.Random, operands: int) -> list[tuple[int, ...]]:
    """A result's shape and, for each operand, a shape that broadcasts to it (a dimension of 1, or
    fewer dimensions); the first operand has the result's shape one time in two."""
    result = a_shape(rng, 0, 3, 4)
    shapes = []
    for _ in range(operands):
        kept = result[rng.randint(0, len(result)) :]
        shapes.append(tuple(1 if rng.random() < 0.3 else n for n in kept))
    if rng.random() < 0.5:
        shapes[0] = result
    return shapes


@pytest.mark.parametrize("part", parts())
def test_lerp_with_a_number_or_a_tensor_as_its_weight_is_replayed_to_the_bit(part: int) -> None:
    """``torch.lerp(start, end, weight)``: with a number, ``start`` gets ``grad * (1 - weight)`` (the
    number in double, then the tensor's type) and ``end`` ``grad * weight``; with a tensor,
    ``grad * (1 - weight)``, ``grad * weight`` and ``grad * (end - start)``, each summed back to its
    operand's shape where it was broadcast."""
    rng = random.Random(103 + 1000 * part)
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in cases_of(part, 240):
            dtype = rng.choice(DTYPES)
            if k % 2:
                shape = a_shape(rng)
                a, b = (
                    some_numbers(rng, shape, dtype).requires_grad_(),
                    some_numbers(rng, shape, dtype).requires_grad_(),
                )
                cases.append({"a": a, "b": b})
                y = torch.lerp(a * 1.0, b, rng.choice([0.0, 1.0, 0.3, -0.5, 2.0, 0.1]))
            else:
                s1, s2, s3 = shapes_that_broadcast(rng, 3)
                a, b, t = (
                    some_numbers(rng, s1, dtype).requires_grad_(),
                    some_numbers(rng, s2, dtype).requires_grad_(),
                    some_numbers(rng, s3, dtype).requires_grad_(),
                )
                cases.append({"a": a, "b": b, "t": t})
                y = torch.lerp(a, b, t)
            root, seed = seeded(rng, y, k // 2)
            root.backward(seed)
    compared, _ = every_leaf_equal_to_the_bit(w, cases, unless_summed=True)
    assert compared == leaves_of(cases)[0]
    assert sum(not p.matches for p in w.passes) <= 2  # a broadcast summed back over two dimensions: named


@pytest.mark.parametrize("part", parts())
def test_addcmul_and_addcdiv_are_replayed_with_pytorchs_factors(part: int) -> None:
    """``torch.addcmul(x, t1, t2, value=v)``: ``x`` gets the gradient, ``t1`` ``grad * (t2 * v)``, ``t2``
    ``grad * (t1 * v)``; ``torch.addcdiv``: ``t1`` gets ``grad * (v / t2)``, ``t2``
    ``-grad * ((t1 * v) / (t2 * t2))``, the negated gradient first. Broadcast, each operand's gradient
    summed back to its shape."""
    rng = random.Random(107 + 1000 * part)
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in cases_of(part, 240):
            dtype = rng.choice(DTYPES)
            s1, s2, s3 = shapes_that_broadcast(rng, 3)
            x, t1, t2 = (
                some_numbers(rng, s1, dtype).requires_grad_(),
                some_numbers(rng, s2, dtype).requires_grad_(),
                some_numbers(rng, s3, dtype).requires_grad_(),
            )
            cases.append({"x": x, "t1": t1, "t2": t2})
            value = rng.choice([1.0, 0.5, -2.0, 0.1, 3])
            y = (torch.addcmul if k % 2 else torch.addcdiv)(x, t1, t2, value=value)
            root, seed = seeded(rng, y, k // 2)
            root.backward(seed)
    compared, _ = every_leaf_equal_to_the_bit(w, cases, unless_summed=True)
    assert compared == leaves_of(cases)[0]
    assert sum(not p.matches for p in w.passes) <= 2  # a broadcast summed back over two dimensions: named


# ---- smooth_l1_loss and huber_loss ---------------------------------------------------------------


LOSSES: dict[str, tuple[Callable[..., Any], str]] = {
    "smooth_l1_loss": (functional.smooth_l1_loss, "beta"),
    "huber_loss": (functional.huber_loss, "delta"),
}


@pytest.mark.parametrize("part", parts())
@pytest.mark.parametrize("name", list(LOSSES))
def test_smooth_l1_and_huber_losses_follow_their_kernels_vectors_and_scalar_tail(name: str, part: int) -> None:
    """``F.smooth_l1_loss(x, t, beta=b)`` and ``F.huber_loss(x, t, delta=d)``, each reduction: their
    backward kernel computes its vectors' elements as ``(norm * out) * grad``, ``out`` being ``±1``
    or ``x / beta`` (``±delta`` or ``x``), and the elements past its last two vectors by its scalar
    loop, whose products and divisions come in another order (``beta`` and ``delta`` there in double):
    both, in float32 and float64, for an input that takes gradient and a target that does too. Sizes
    on either side of two vectors' width, differences of -inf, +inf, nan and ties with ``beta``."""
    function, keyword = LOSSES[name]
    rng = random.Random(131 + sum(map(ord, name)) + 1000 * part)
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in cases_of(part, 240):
            dtype = rng.choice(DTYPES)
            shape = rng.choice([(), (1,), (5,), (8,), (13,), (17,), (3, 7), (2, 3, 6), (40,)])
            size = rng.choice([1.0, 0.5, 0.1, 2.0, 1.3])
            t = some_numbers(rng, shape, dtype).requires_grad_()
            if k % 4 == 0:  # differences of exactly ±size, and of 0
                steps = [rng.choice([size, -size, 0.0]) for _ in range(math.prod(shape))]
                x = (t.detach() + torch.tensor(steps, dtype=dtype).reshape(shape)).requires_grad_()
            else:
                x = some_numbers(rng, shape, dtype).requires_grad_()
            cases.append({"x": x, "t": t})
            reduction = ("mean", "sum", "none")[k % 3]
            y = function(x * 1.0, t, reduction=reduction, **{keyword: size})
            root, seed = seeded(rng, y, k // 3)
            root.backward(seed)
    assert every_leaf_equal_to_the_bit(w, cases) == leaves_of(cases)


def test_a_smooth_l1_loss_of_a_transposed_input_is_not_replayed_and_says_why() -> None:
    """An input not laid out row-major takes another of the kernel's loops: not replayed, saying so."""
    x = torch.tensor([[0.5, -1.25, 3.0], [2.0, 0.0, -0.5]], requires_grad=True)
    with vjpgrad.watch_torch() as w:
        functional.smooth_l1_loss(x.t(), torch.zeros(3, 2)).backward()
    assert not w.passes[0].replayed
    assert "smooth_l1_loss of tensors not of one shape, or not laid out row-major" in w.passes[0].reason
    assert x.grad is not None


# ---- var_mean and std_mean -----------------------------------------------------------------------


@pytest.mark.parametrize("part", parts())
def test_var_mean_and_std_mean_add_the_means_share_after_the_variances(part: int) -> None:
    """``torch.var_mean(x, dim, correction=c, keepdim=k)`` and ``std_mean``: ``var_mean_backward`` hands
    each element ``var_backward(...) + mean_backward(...)``, one sum, in that order (one of them alone
    where a pass reaches one output only), as ``var`` and ``mean`` would each. Over finite inputs
    (signed zeros among them) and seeds of signed zeros, infinities and nans."""
    rng = random.Random(137 + 1000 * part)
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in cases_of(part, 240):
            shape = a_shape(rng, 1, 3)
            while math.prod(shape) < 2:
                shape = a_shape(rng, 1, 3)
            x = some_numbers(rng, shape, rng.choice(DTYPES), choices=SPECIAL[:5]).requires_grad_()
            cases.append({"x": x})
            dims = None if rng.random() < 0.3 else sorted(rng.sample(range(len(shape)), rng.randint(1, len(shape))))
            groups = math.prod(shape) if dims is None else math.prod(shape[d] for d in dims)
            correction = rng.choice([0, 1]) if groups > 1 else 0
            function = torch.var_mean if k % 2 else torch.std_mean
            spread, mean = function(x * 1.0, dim=dims, correction=correction, keepdim=rng.random() < 0.5)
            seeds = [some_numbers(rng, tuple(spread.shape), spread.dtype, special=0.2) for _ in range(2)]
            which = (k // 2) % 3
            if which == 0:
                torch.autograd.backward([spread, mean], seeds)
            else:
                ([spread, mean][which - 1] * seeds[0]).sum().backward()
    assert every_leaf_equal_to_the_bit(w, cases) == leaves_of(cases)


def test_var_mean_of_a_tensor_with_a_nan_names_the_nans_whose_sign_it_does_not_follow() -> None:
    """``std_mean`` of a tensor that holds an infinity and a nan: its result is a nan, and its backward
    multiplies that nan by another (``x - mean``); which one's sign PyTorch keeps depends on where the
    element lies in its kernel's vectors. Measured with torch 2.13: 17 elements of 20 kept the
    first's. The pass says so, and its verdict is the bits'."""
    numbers = [0.5 * k for k in range(20)]
    numbers[1], numbers[15] = math.inf, math.nan
    x = torch.tensor(numbers).reshape(2, 2, 5).requires_grad_()
    with vjpgrad.watch_torch() as w:
        spread, _ = torch.std_mean(x * 1.0, dim=[0, 1, 2], correction=0)
        (spread * -0.45).sum().backward()
    assert SPREAD_AND_MEAN_NAN_NOTE.format(name="std_mean") in w.passes[0].reasons
    assert w.passes[0].leaves[0].matches == (bits(w.passes[0].leaves[0].replayed) == grad_bits(x))


def test_var_mean_keeps_the_means_nan_where_both_of_its_gradients_are_nans() -> None:
    """Where the variance's share and the mean's are both nans, PyTorch's ``gself + aux`` keeps the
    mean's nan (measured with torch 2.13); Python's float addition keeps one or the other by whether
    its interpreter has specialised the line, so the replay adds the mean's share as PyTorch does.
    Run enough times in float64 for the interpreter to specialise the engine's additions."""
    nan = math.nan
    cases: list[dict[str, Any]] = []
    with vjpgrad.watch_torch() as w:
        for k in range(72):
            dtype = torch.float64 if k < 64 else torch.float32  # float64 in a row: Python's additions specialise
            x = torch.tensor([[0.5, -1.0, 2.0, 0.25] * 3] * 2, dtype=dtype, requires_grad=True)
            cases.append({"x": x})
            spread, mean = (torch.var_mean if k % 4 < 2 else torch.std_mean)(x * 1.0, dim=[1])
            signs = (nan, -nan) if k % 8 < 4 else (-nan, nan)
            seeds = [torch.full_like(spread, signs[0]), torch.full_like(mean, signs[1])]
            torch.autograd.backward([spread, mean], seeds)
            assert grad_bits(x) == bits([signs[1]] * 24)
    assert every_leaf_equal_to_the_bit(w, cases) == leaves_of(cases)
