"""vjpgrad.vmap side by side, in one run, medians over interleaved rounds.

1. Per-sample gradients of micrograd's MLP(2, [16, 16, 1]) (337 parameters) on a hinge loss:
   ``vmap(grad(loss), in_dims=(None, 0, 0))`` (exact, and ``fast=True``) against a loop of
   ``vjpgrad.compile``d calls (one forward and ``backward()`` per sample) and against
   ``torch.func.vmap(torch.func.grad(loss))`` on CPU in float64; at N = 1,000 and 100,000
   (the loop is timed on 1,000 samples and scaled). Every row is checked against the loop's.
2. examples/moons.py's training, full batch: eager steps against ``examples/moons_vmap.py``'s,
   the final parameters compared bit for bit.
3. Memory at N = 100,000: the peak NumPy allocates (tracemalloc) for the per-sample gradients.

    python benchmarks/vmap.py [--rounds 5] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import statistics
import struct
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import vjpgrad
from vjpgrad import Value

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import moons
import moons_vmap


def hinge(params: Any, x: Any, y: Any) -> Any:
    """One sample's hinge loss on micrograd's MLP, as examples/moons.py computes it."""
    return (1 + -y * moons_vmap.apply(params, x)).relu()


def data(n: int) -> tuple[list[float], Any, Any]:
    points, labels = moons.make_moons(max(n, 2))
    reps = -(-n // len(points))
    xs = np.array(points * reps)[:n]
    ys = np.array(labels * reps, dtype=np.float64)[:n]
    params = [p.data for p in vjpgrad.nn.MLP(2, [16, 16, 1], seed=1337).parameters()]
    return params, xs, ys


def compiled_loop(params: list[float], xs: Any, ys: Any) -> Any:
    """Per-sample gradients by a loop of compiled calls: the arguments as Values, one backward each."""
    step = vjpgrad.compile(hinge)
    values = [Value(p) for p in params]
    rows = np.empty((len(xs), len(params)))
    for i in range(len(xs)):
        for v in values:
            v.grad = 0.0
        out = step(values, [Value(float(xs[i, 0]), requires_grad=False), Value(float(xs[i, 1]), requires_grad=False)],
                   Value(float(ys[i]), requires_grad=False))  # fmt: skip
        out.backward()
        rows[i] = [v.grad for v in values]
    return rows


def median_time(function: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def same_bits(a: Any, b: Any) -> bool:
    return all(
        struct.pack("<d", x) == struct.pack("<d", y) or (x != x and y != y)
        for x, y in zip(np.ravel(a), np.ravel(b), strict=True)
    )


def per_sample(n: int, rounds: int, torch: Any) -> None:
    params, xs, ys = data(n)
    exact = vjpgrad.vmap(vjpgrad.grad(hinge), in_dims=(None, 0, 0))
    fast = vjpgrad.vmap(vjpgrad.grad(hinge), in_dims=(None, 0, 0), fast=True)
    exact(params, xs[:2], ys[:2])  # recorded and written once, outside the timings
    fast(params, xs[:2], ys[:2])
    looped = min(n, 1000)
    t_loop, rows_loop = median_time(lambda: compiled_loop(params, xs[:looped], ys[:looped]), max(1, rounds // 2))
    t_loop *= n / looped
    t_exact, rows = median_time(lambda: exact(params, xs, ys), rounds)
    t_fast, rows_fast = median_time(lambda: fast(params, xs, ys), rounds)
    print(f"\nper-sample gradients, MLP(2, [16, 16, 1]), N = {n:,} (medians of {rounds}):")
    scaled = f"  (timed on {looped:,}, scaled)" if looped < n else ""
    print(f"  loop of compiled calls   {t_loop * 1e3:10.1f} ms{scaled}")
    print(f"  vmap(grad) exact         {t_exact * 1e3:10.1f} ms   {t_loop / t_exact:6.0f}x the loop")
    print(f"  vmap(grad) fast=True     {t_fast * 1e3:10.1f} ms   {t_loop / t_fast:6.0f}x the loop")
    # .grad starts at 0.0 and 0.0 + -0.0 is 0.0: the loop's zeros are all positive, so it is compared
    # as numbers; grad(hinge), which returns the pass's own numbers, is compared bit for bit
    by_grad = [vjpgrad.grad(hinge)(params, list(x), float(y)) for x, y in zip(xs[:200], ys[:200], strict=True)]
    print(f"  exact rows equal the loop's: {bool(np.array_equal(rows[:looped], rows_loop))}; "
          f"equal to grad(loss) per sample to the bit (first 200): {same_bits(rows[:200], by_grad)}")  # fmt: skip
    print(f"  fast rows: largest difference from exact {np.max(np.abs(rows_fast - rows)):.3g}")
    if torch is not None:
        func = torch.func
        sizes = moons_vmap.SIZES

        def torch_loss(p: Any, x: Any, y: Any) -> Any:
            k, inputs = 0, x
            for layer in range(len(sizes) - 1):
                nin, nout = sizes[layer], sizes[layer + 1]
                w = p[k : k + nout * (nin + 1)].reshape(nout, nin + 1)
                k += nout * (nin + 1)
                total = w[:, nin] + (w[:, :nin] * inputs).sum(dim=1)
                inputs = total if layer == len(sizes) - 2 else torch.relu(total)
            return torch.relu(1 + -y * inputs[0])

        tp, tx, ty = torch.tensor(params, dtype=torch.float64), torch.from_numpy(xs), torch.from_numpy(ys)
        batched = func.vmap(func.grad(torch_loss), in_dims=(None, 0, 0))
        t_torch, rows_torch = median_time(lambda: batched(tp, tx, ty), rounds)
        ratio = t_torch / t_exact
        print(
            f"  torch.func vmap(grad)    {t_torch * 1e3:10.1f} ms   "
            + (f"vjpgrad exact {ratio:.2f}x faster" if ratio >= 1 else f"torch {1 / ratio:.2f}x faster")
            + f" (fast: {t_torch / t_fast:.2f}x)"
        )
        print(f"  torch's rows: largest difference from vjpgrad's {np.max(np.abs(rows_torch.numpy() - rows)):.3g}")


def training(steps: int, rounds: int) -> None:
    def eager() -> list[float]:
        with contextlib.redirect_stdout(io.StringIO()):
            model, *_ = moons.train(steps)
        return [p.data for p in model.parameters()]

    t_eager, params_eager = median_time(eager, max(1, rounds // 2))
    moons_vmap.train(1)  # the recording, once
    t_vmap, params_vmap = median_time(lambda: moons_vmap.train(steps), rounds)
    print(f"\nmoons training, {steps} full-batch steps of 100 samples (medians):")
    print(f"  eager                    {t_eager:10.2f} s")
    print(f"  vmap + batch_sum         {t_vmap:10.2f} s   {t_eager / t_vmap:6.0f}x eager")
    same = sum(struct.pack("<d", a) == struct.pack("<d", b) for a, b in zip(params_eager, params_vmap, strict=True))
    print(f"  final parameters equal to eager's to the bit: {same} of {len(params_eager)}")


def memory(n: int) -> None:
    params, xs, ys = data(n)
    exact = vjpgrad.vmap(vjpgrad.grad(hinge), in_dims=(None, 0, 0))
    exact(params, xs[:2], ys[:2])
    tracemalloc.start()
    rows = exact(params, xs, ys)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"\nmemory at N = {n:,}: peak {peak / 2**20:.0f} MiB allocated during the call; the result itself is "
          f"{rows.nbytes / 2**20:.0f} MiB ({rows.shape[0]:,} x {rows.shape[1]} float64)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    args = parser.parse_args(argv)
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
        print("(torch is not installed: the torch.func comparison is left out)")
    sizes = (200, 2000) if args.quick else (1000, 100_000)
    for n in sizes:
        per_sample(n, args.rounds, torch)
    training(3 if args.quick else args.steps, args.rounds)
    memory(sizes[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
