"""Random small PyTorch programs under watch_torch: every pass that claims exactness is bit-equal to
PyTorch's .grad, and every other pass reports a difference that is really there."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import vjpgrad  # noqa: E402

UNARY = [torch.exp, torch.tanh, torch.sigmoid, torch.relu, torch.sin, torch.cos, torch.abs, torch.neg]
BINARY = [torch.add, torch.sub, torch.mul, lambda x, y: x / (abs(y) + 1)]
REDUCE = [lambda x: x.sum(), lambda x: x.mean(), lambda x: x.sum(dim=0), lambda x: x.mean(dim=-1)]
OTHER = [
    lambda x: x.t() if x.dim() == 2 else x,
    lambda x: x.reshape(-1),
    lambda x: x.unsqueeze(0),
    lambda x: torch.cat([x, x * 2]),
    lambda x: x[..., :1],
    lambda x: x.clamp(-0.5, 0.5),
    lambda x: x**2,
    lambda x: (x.abs() + 0.1).log(),
    lambda x: (x.abs() + 0.1).sqrt(),
    lambda x: torch.where(x > 0, x, x * 0.5),
    lambda x: torch.softmax(x, dim=-1),
    lambda x: torch.stack([x, x.exp()]).sum(dim=0),
    lambda x: x.max() + x,
]


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 4),
    cols=st.integers(1, 4),
    double=st.booleans(),
    steps=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20)), min_size=1, max_size=5),
    reduce=st.integers(0, 3),
    seed=st.integers(0, 2**16),
)
def test_random_programs(
    rows: int, cols: int, double: bool, steps: list[tuple[int, int]], reduce: int, seed: int
) -> None:
    check_program(rows, cols, double, steps, reduce, seed)


def test_one_program_with_a_step_of_every_kind_in_each_precision() -> None:
    for double in (False, True):
        check_program(3, 3, double, [(0, 1), (1, 2), (2, 10), (3, 0)], 0, 7)


def check_program(rows: int, cols: int, double: bool, steps: list[tuple[int, int]], reduce: int, seed: int) -> None:
    """Runs the program the numbers describe under watch_torch; its one pass claims exactness exactly
    where its bits are PyTorch's, and names a difference it reports."""
    torch.manual_seed(seed)
    dtype = torch.float64 if double else torch.float32
    with vjpgrad.watch_torch() as w:
        a = torch.randn(rows, cols, dtype=dtype, requires_grad=True)
        b = torch.randn(cols, dtype=dtype, requires_grad=True)
        x = a
        for kind, k in steps:
            if kind == 0:
                x = UNARY[k % len(UNARY)](x)
            elif kind == 1:
                x = BINARY[k % len(BINARY)](x, b if x.shape[-1:] == b.shape else 1.5)
            elif kind == 2:
                x = OTHER[k % len(OTHER)](x)
            else:
                x = x @ b if x.dim() == 2 and x.shape[-1] == cols else x * 3
        y = REDUCE[reduce](x) if x.dim() else x
        y.backward(torch.ones_like(y))
    (p,) = w.passes
    assert p.replayed, p.reason
    for leaf in p.leaves:
        tensor = {"a": a, "b": b}[leaf.name]
        pytorch = tensor.grad.reshape(-1).tolist()
        bits = [torch.tensor(v, dtype=dtype).view(torch.int64 if double else torch.int32).item() for v in pytorch]
        ours = [torch.tensor(v, dtype=dtype).view(torch.int64 if double else torch.int32).item() for v in leaf.replayed]
        assert leaf.matches == (bits == ours), p.summary()  # exact exactly when the bits are equal
        if not leaf.matches:
            said = ("ulp", "nan", "only in the sign of a zero")
            assert any(words in p.summary() for words in said), p.summary()
