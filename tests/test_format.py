"""Printing like PyTorch: the formats of the Stack Overflow answer's printed gradients, and the rules that pick them."""

from __future__ import annotations

import math
import re

import pytest

from vjpgrad.core.format import format_scalar, format_vector


@pytest.mark.parametrize(
    ("numbers", "printed"),
    [
        ([0.3, 3.0, 0.0003], "tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])"),  # ratio > 1000
        ([0.1 / 6, 1 / 7, 0.0001 / 8], "tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])"),  # smallest < 1e-4
        ([3 * 1.1001], "tensor([3.3003])"),
        ([0.0], "tensor([0.])"),
        ([math.inf], "tensor([inf])"),
        ([-math.inf], "tensor([-inf])"),
        ([1.0, 2.0, 10.0], "tensor([ 1.,  2., 10.])"),  # whole numbers, padded to one width
        ([0.5, -1.25], "tensor([ 0.5000, -1.2500])"),
        ([1e9, 1.0], "tensor([1.0000e+09, 1.0000e+00])"),  # largest > 1e8
        ([math.nan, 1.5], "tensor([   nan, 1.5000])"),
        ([], "tensor([])"),
    ],
)
def test_vectors_print_as_pytorch_prints_tensors(numbers: list[float], printed: str) -> None:
    assert format_vector(numbers) == printed


@pytest.mark.parametrize(("x", "printed"), [(3.0, "tensor(3.)"), (10.0, "tensor(10.)"), (0.25, "tensor(0.2500)")])
def test_scalars_print_as_0d_tensors(x: float, printed: str) -> None:
    assert format_scalar(x) == printed


def test_long_vectors_wrap_at_80_columns_and_summarise_past_1000() -> None:
    wrapped = format_vector([0.5] * 20)
    assert all(len(line) <= 80 for line in wrapped.splitlines())
    assert len(wrapped.splitlines()) > 1
    # the style is chosen from the six numbers shown: 1999 / 1 > 1000, so scientific
    summary = format_vector([float(i) for i in range(2000)])
    assert summary.startswith("tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n")
    assert format_vector([5.0] * 1001) == "tensor([5., 5., 5.,  ..., 5., 5., 5.])"


@pytest.mark.parametrize(
    "numbers",
    [
        [0.3, 3.0, 0.0003],
        [1 / 3, -2 / 7, 1e-3],
        [1e-5, 0.5, -3.0] * 30,
        [float(i) for i in range(2000)],
        [math.inf, -2.0, math.nan, 0.0],
        [123456789.0, 1.0],
        [-0.0, 0.0],
        [2.5e-7],
    ],
)
def test_printing_agrees_with_pytorch(numbers: list[float]) -> None:
    torch = pytest.importorskip("torch")
    printed = str(torch.tensor(numbers, dtype=torch.float64))
    assert format_vector(numbers) == re.sub(r",\s*dtype=torch.float64", "", printed)
