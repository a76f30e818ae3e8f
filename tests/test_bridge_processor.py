"""The PyTorch bridge on the processor as it is: without the kernels the tests pick for PyTorch
(``conftest.py`` sets ``ATEN_CPU_CAPABILITY=avx2`` and ``MKL_CBWR=AVX``), PyTorch runs its fastest
kernels here (AVX-512 ones, MKL's AVX2 or AVX-512 path), some of whose sums add in another order
than the replay follows. Each pass is then equal to the bit, or says that it differs and why:
never "equal" where it is not, never a difference without its reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("torch")

SCRIPT = r"""
import json, torch, vjpgrad
torch.manual_seed(0)
verdicts = []
with vjpgrad.watch_torch() as w:
    for dtype in (torch.float32, torch.float64):
        for n in (7, 33, 100):
            x = torch.randn(n, 2, dtype=dtype)
            weights = torch.randn(2, dtype=dtype, requires_grad=True)
            torch.sigmoid(x @ weights).sum().backward()  # a matrix-vector product, summed over n
            h = torch.randn(3, n, dtype=dtype, requires_grad=True)
            torch.nn.functional.layer_norm(h, (n,)).pow(2).sum().backward()
            grads = [weights.grad.tolist(), h.grad.tolist()]
for p in w.passes:
    verdicts.append([p.replayed, p.matches, p.summary()])
wide = torch.cpu._is_avx512_supported()
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "verdicts": verdicts, "wide": wide}))
"""


def on_this_processors_own_kernels(script: str) -> Any:
    """What ``script`` prints (JSON), run with PyTorch's own kernels: the variables that pick the
    ones the replay follows taken out of its environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def on_avx512(script: str) -> Any:
    """``on_this_processors_own_kernels``, skipped where PyTorch does not run AVX-512 kernels."""
    found = on_this_processors_own_kernels(script)
    if found["capability"] != "AVX512":
        pytest.skip(f"this processor runs PyTorch's {found['capability']} kernels, not AVX-512")
    return found


def test_each_pass_on_this_processors_own_kernels_is_equal_or_says_why_it_differs() -> None:
    found = on_this_processors_own_kernels(SCRIPT)
    assert len(found["verdicts"]) == 12
    for replayed, matches, summary in found["verdicts"]:
        assert replayed, summary
        differing = [line for line in summary.splitlines() if "differ by" in line]
        assert bool(differing) is not matches, summary  # "differs" exactly where a leaf's line says by how much
        for line in differing:  # and why
            assert "matrix kernels may add in another order" in line or "on this processor" in line, line
        if differing and found["wide"]:  # and how to see it with the kernels the replay follows
            assert "ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX vjpgrad explain-torch script.py" in summary, summary


def test_a_pass_that_differs_under_the_kernels_the_replay_follows_says_nothing_of_kernels() -> None:
    """With ``ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX`` (as the tests run), a pass that differs for
    another reason (a hook that changes a gradient) does not send the learner to set them."""
    import torch

    import vjpgrad

    x = torch.tensor([0.5, 1.5], requires_grad=True)
    with vjpgrad.watch_torch() as w:
        y = x * 3.0
        y.register_hook(lambda g: g * 2.0)
        y.sum().backward()
    assert not w.passes[0].matches
    assert "ATEN_CPU_CAPABILITY" not in w.passes[0].summary()


NORMS = r"""
import json, torch, vjpgrad
torch.manual_seed(0)
with vjpgrad.watch_torch() as w:
    for dtype in (torch.float32, torch.float64):
        for n in (7, 9, 17, 33, 130):
            x = torch.randn(4, n, dtype=dtype, requires_grad=True)
            gamma = torch.randn(n, dtype=dtype, requires_grad=True)
            (torch.nn.functional.layer_norm(x, (n,)) * gamma).pow(2).sum().backward()
            bn = torch.nn.BatchNorm1d(n, dtype=dtype)
            h = torch.randn(6, n, 5, dtype=dtype, requires_grad=True)
            (bn(h) * torch.randn(6, n, 5, dtype=dtype)).sum().backward()
verdicts = [[p.matches, p.summary()] for p in w.passes]
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "verdicts": verdicts}))
"""


def test_layer_and_batch_norm_run_pytorchs_avx2_kernels_on_an_avx512_processor_and_are_replayed_so() -> None:
    # their kernels are registered without an AVX-512 build (REGISTER_DISPATCH), so an AVX-512
    # processor runs the AVX2 ones, as it does sum's: the replay took 512-bit vectors there and
    # differed by up to some hundreds of ulp, and the note blamed PyTorch's kernels (a review)
    found = on_avx512(NORMS)
    assert len(found["verdicts"]) == 20
    for matches, summary in found["verdicts"]:
        assert matches, summary


HUBER = r"""
import json, torch, vjpgrad
torch.manual_seed(0)
X, y = torch.randn(130, 9), torch.randn(130, 9)
w = torch.randn(9, requires_grad=True)
with vjpgrad.watch_torch() as watch:
    torch.nn.functional.huber_loss(X * w, y).backward()
p = watch.passes[0]
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "matches": p.matches, "summary": p.summary()}))
"""


def test_a_pass_that_differs_by_an_order_of_adding_beside_a_smooth_loss_is_not_sent_to_other_kernels() -> None:
    # the smooth loss's reason (a nan's sign on another processor) brought the note, and the rerun it
    # advised gave PyTorch's bits and the replay's difference unchanged (a review)
    found = on_avx512(HUBER)
    assert not found["matches"]
    assert "a sum of many numbers" in found["summary"]
    assert "ATEN_CPU_CAPABILITY" not in found["summary"], found["summary"]
