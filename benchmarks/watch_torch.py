"""What ``vjpgrad.watch_torch()`` costs a learner's script: the time from entering the watch to
the replayed pass and its comparison, after ``import torch`` (not counted: it is PyTorch's).

    python benchmarks/watch_torch.py              # 7 rounds of each workload
    python benchmarks/watch_torch.py --rounds 3

Two workloads, the goals of the bridge: a 3x3 example (``A @ B + b`` through ``tanh``, its sum's
backward; goal under 0.5 s) and a 64x64 element-wise one (``tanh(x) * exp(x / 4) + sigmoid(x)``,
seeded with ones; goal under 2 s). Each round runs the same code without the watch first (the
plain PyTorch time, printed for scale) and then watched, and checks that every pass matches
PyTorch's ``.grad`` to the bit before any time is reported. The first round of a process
also pays PyTorch's one-off start-up of a dispatch mode (and of its matrix kernels); the medians
over the rounds are printed, with that first round's time beside them.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

import vjpgrad


def three_by_three() -> None:
    torch.manual_seed(0)
    A = torch.randn(3, 3, requires_grad=True)  # noqa: N806 - the tutorial's name
    B = torch.randn(3, 3, requires_grad=True)  # noqa: N806 - the tutorial's name
    b = torch.randn(3, requires_grad=True)
    torch.tanh(A @ B + b).sum().backward()


def element_wise_64() -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 64, requires_grad=True)
    y = torch.tanh(x) * torch.exp(x / 4) + torch.sigmoid(x)
    y.backward(torch.ones_like(y))


def timed(workload: Callable[[], None]) -> tuple[float, float]:
    start = time.perf_counter()
    workload()
    plain = time.perf_counter() - start
    start = time.perf_counter()
    with vjpgrad.watch_torch() as w:
        workload()
    watched = time.perf_counter() - start
    if not w.passes or not w.matches:
        raise SystemExit(f"{workload.__name__}: a pass does not match PyTorch's:\n{w.summary()}")
    return plain, watched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    for workload, goal in ((three_by_three, 0.5), (element_wise_64, 2.0)):
        plain, watched = zip(*(timed(workload) for _ in range(rounds)), strict=True)
        print(
            f"{workload.__name__}: watched median {statistics.median(watched):.3f} s (first round "
            f"{watched[0]:.3f} s; goal < {goal} s), plain PyTorch median {statistics.median(plain) * 1e3:.2f} ms, "
            f"{rounds} rounds"
        )


if __name__ == "__main__":
    main()
