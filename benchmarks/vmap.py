"""vjpgrad.vmap side by side, in one run, medians over interleaved rounds. Every figure is
printed with its unit and the baseline its ratio is taken against.

1. Per-sample gradients of micrograd's MLP(2, [16, 16, 1]) (337 parameters) on a hinge loss,
   at N = 1,000 and 100,000, in milliseconds for the whole batch:
   ``vmap(grad(loss), in_dims=(None, 0, 0))`` (exact, and ``fast=True``) against two loops of
   one sample at a time, both baselines timed on (at most) 1,000 samples and scaled:
   - the eager loop: ``grad(loss)(params, x, y)`` per sample, each building and walking its graph;
   - a loop of compiled calls: one ``vjpgrad.compile``d function, recorded and written before
     the timing, called per sample with the sample passed as Values (so it replays, never
     records anew), then ``backward()``;
   and ``torch.func.vmap(torch.func.grad(loss))`` on CPU in float64, one thread. Every row is
   checked against ``grad(loss)`` per sample before a time is printed.
2. The full-batch gradient of the moons MLP 2-16-16-1 (hinge loss + L2, float64) against
   PyTorch's own tensor code, written as docs/tutorials/to-pytorch.md writes it (three matrix
   products, one thread), at N = 100 and 1,000, in milliseconds per gradient:
   ``vmap(grad(margin))`` + ``batch_sum`` (exact, and ``fast=True``; the L2 term's gradient by
   ``vmap(grad(penalty))`` over the parameters, as examples/moons_vmap.py takes it), the compiled
   step and the eager step; the exact batch gradient is checked equal to eager's to the bit.
   PyTorch's and vmap's figures are timed taking turns, a call each per round (4 x ``--rounds``),
   with the collector off after one collection (``interleaved``), and again each called 20 times
   in a row, the blocks taking turns (``in_blocks``: warm, as a training loop calls its step,
   which is the fairer of the two to PyTorch); the compiled and eager steps,
   which make graphs of tens of thousands of Values, each with a full collection before it
   (``median_time``).
3. examples/moons.py's training, full batch: eager steps against ``examples/moons_vmap.py``'s,
   the final parameters compared bit for bit.
4. Memory at N = 100,000: the peak NumPy allocates (tracemalloc) for the per-sample gradients.

    python benchmarks/vmap.py [--rounds 5] [--quick] [--sizes 1000 100000]
                              [--only per-sample|full-batch|training|memory] [--clock wall|cpu]

``--clock cpu`` times each figure in CPU time of the process (``time.process_time``) instead of
the wall clock: on a loaded machine, what the code itself costs (PyTorch runs on one thread).
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
from vjpgrad.compiler.record import collection_paused

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


def eager_loop(params: list[float], xs: Any, ys: Any) -> Any:
    """Per-sample gradients by the eager loop: ``grad(loss)`` on each sample, a graph built and
    walked per sample."""
    by_sample = vjpgrad.grad(hinge)
    return np.array([by_sample(params, [float(x[0]), float(x[1])], float(y)) for x, y in zip(xs, ys, strict=True)])


def compiled_loop(step: Any, values: list[Value], xs: Any, ys: Any) -> Any:
    """Per-sample gradients by a loop of calls of one compiled function (recorded and written
    before): the sample passed as Values, so every call replays; one ``backward()`` each."""
    rows = np.empty((len(xs), len(values)))
    for i in range(len(xs)):
        for v in values:
            v.grad = 0.0
        out = step(values, [Value(float(xs[i, 0]), requires_grad=False), Value(float(xs[i, 1]), requires_grad=False)],
                   Value(float(ys[i]), requires_grad=False))  # fmt: skip
        out.backward()
        rows[i] = [v.grad for v in values]
    return rows


CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
clock = time.perf_counter  # --clock


def median_time(function: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(rounds):
        gc.collect()
        start = clock()
        result = function()
        times.append(clock() - start)
    return statistics.median(times), result


def interleaved(functions: dict[str, Callable[[], Any]], rounds: int) -> dict[str, tuple[float, Any]]:
    """Each function's median time and last result, the functions taking turns round after round
    (one call each per round), so that a change of the machine's load falls on all of them.

    The collector runs once before the rounds and is off during them, as a training loop's steps
    run between its rare full collections. A full collection before each call (``median_time``'s
    way, for code that makes millions of objects) walks the whole heap, torch's 170,000 objects
    and more, which evicts the caches and the TLB: measured on the N = 1,000 case, it added 1.2 ms
    to vmap's call (2.0 ms warm) and 0.75 ms to PyTorch's (0.75 ms warm), a cost that is neither's
    and that brought their ratio towards 1."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    results: dict[str, Any] = {}
    gc.collect()
    with collection_paused():  # compile's own pause of the collector, turned back on as it was
        for _ in range(rounds):
            for name, function in functions.items():
                start = clock()
                results[name] = function()
                times[name].append(clock() - start)
    return {name: (statistics.median(times[name]), results[name]) for name in functions}


def in_blocks(functions: dict[str, Callable[[], Any]], rounds: int, calls: int = 20) -> dict[str, float]:
    """Each function's median time a call, each called ``calls`` times in a row (a block, after
    one call not timed), the blocks taking turns round after round: the way a training loop calls
    one step again and again, its code and data warm in the caches. Taking turns a call at a time
    (``interleaved``) leaves each call the caches the others left: on this machine that tripled
    PyTorch's time at N = 100 (1.46 against 0.55 ms) and added less to vmap's, which brought their
    ratio towards 1. The collector is off during the blocks, as in ``interleaved``."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    gc.collect()
    with collection_paused():
        for _ in range(rounds):
            for name, function in functions.items():
                function()
                for _ in range(calls):
                    start = clock()
                    function()
                    times[name].append(clock() - start)
    return {name: statistics.median(times[name]) for name in functions}


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
    step = vjpgrad.compile(hinge)
    values = [Value(p) for p in params]
    compiled_loop(step, values, xs[:3], ys[:3])  # recorded (call 1) and written (call 2) outside the timings
    recordings = step.recordings
    looped = min(n, 1000)
    t_eager, rows_eager = median_time(lambda: eager_loop(params, xs[:looped], ys[:looped]), max(1, rounds // 2))
    t_loop, rows_loop = median_time(lambda: compiled_loop(step, values, xs[:looped], ys[:looped]), max(1, rounds // 2))
    if step.recordings != recordings:
        sys.exit("the loop of compiled calls recorded anew: its figure would not be a replay's")
    t_eager *= n / looped
    t_loop *= n / looped
    t_exact, rows = median_time(lambda: exact(params, xs, ys), rounds)
    t_fast, rows_fast = median_time(lambda: fast(params, xs, ys), rounds)
    scaled = f", timed on {looped:,} and scaled" if looped < n else ""
    print(
        f"\nper-sample gradients, MLP(2, [16, 16, 1]) on a hinge loss, N = {n:,}: "
        f"ms for the whole batch (medians of {rounds})"
    )
    print(f"  eager loop of grad(loss), one sample at a time          {t_eager * 1e3:10.1f} ms{scaled}")
    print(f"  loop of compiled calls, samples as Values (replays)     {t_loop * 1e3:10.1f} ms"
          f"  ({t_loop / n * 1e6:.0f} us a sample{scaled})")  # fmt: skip
    for label, t in (("vmap(grad) exact", t_exact), ("vmap(grad) fast=True", t_fast)):
        print(
            f"  {label:55} {t * 1e3:10.1f} ms  {t_eager / t:7.1f}x the eager loop, {t_loop / t:6.1f}x the compiled loop"
        )
    # .grad starts at 0.0 and 0.0 + -0.0 is 0.0: the compiled loop's zeros are all positive, so it is compared
    # as numbers; grad(hinge), which returns the pass's own numbers, is compared bit for bit
    print(f"  exact rows equal to grad(loss) per sample to the bit: {same_bits(rows[:looped], rows_eager)}; "
          f"equal to the compiled loop's as numbers: {bool(np.array_equal(rows[:looped], rows_loop))}")  # fmt: skip
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
        print(f"  {'torch.func vmap(grad), float64, one thread':55} {t_torch * 1e3:10.1f} ms  "
              f"{t_torch / t_exact:7.2f}x vmap exact's time, {t_torch / t_fast:.2f}x fast's")  # fmt: skip
        print(f"  torch's rows: largest difference from vjpgrad's {np.max(np.abs(rows_torch.numpy() - rows)):.3g}")


def full_batch(n: int, rounds: int, torch: Any) -> None:
    """The moons MLP's full-batch gradient (mean hinge loss + L2) by PyTorch's tensor code and by
    vjpgrad's vmap + batch_sum, compiled and eager steps, side by side."""
    points, labels = moons.make_moons(n)
    xs, ys = np.array(points), np.array(labels, dtype=np.float64)
    model = vjpgrad.nn.MLP(2, [16, 16, 1], seed=1337)
    start = [p.data for p in model.parameters()]

    def loss() -> Value:
        scores = [model(list(p)) for p in points]
        margins = [(1 + -label * score).relu() for label, score in zip(labels, scores, strict=True)]
        data_loss = sum(margins, Value(0.0, requires_grad=False)) * (1.0 / len(margins))
        return data_loss + 1e-4 * sum((p * p for p in model.parameters()), Value(0.0, requires_grad=False))

    def eager() -> list[float]:
        for p in model.parameters():
            p.grad = 0.0
        loss().backward()
        return [p.grad for p in model.parameters()]

    compiled_loss = vjpgrad.compile(loss)

    def compiled() -> list[float]:
        for p in model.parameters():
            p.grad = 0.0
        compiled_loss().backward()
        return [p.grad for p in model.parameters()]

    def batched(per_sample: Any) -> Any:
        rows = per_sample(start, xs, ys, n)
        return 0.0 + vjpgrad.batch_sum(rows, start=regularised(params))  # .grad was zeroed: 0.0 + the pass

    # the L2 term's gradient as examples/moons_vmap.py takes it: vmap(grad(penalty)) over the parameters,
    # grad(regularisation)'s numbers to the bit (the gradient below is checked against eager's)
    params = np.array(start)
    regularised = vjpgrad.vmap(vjpgrad.grad(moons_vmap.penalty))
    regularised_eager = vjpgrad.grad(moons_vmap.regularisation)
    exact = vjpgrad.vmap(vjpgrad.grad(moons_vmap.margin), in_dims=(None, 0, 0, None))
    fast = vjpgrad.vmap(vjpgrad.grad(moons_vmap.margin), in_dims=(None, 0, 0, None), fast=True)
    batched(exact), batched(fast), compiled(), compiled()  # recorded and written outside the timings
    slow = max(1, rounds // 2) if n <= 100 else 1
    t_eager, g_eager = median_time(eager, slow)
    t_compiled, g_compiled = median_time(compiled, rounds)
    turns: dict[str, Callable[[], Any]] = {
        "exact": lambda: batched(exact),
        "fast": lambda: batched(fast),
        "l2": lambda: regularised(params),
        "l2 eager": lambda: regularised_eager(start),
    }
    t_torch = None
    if torch is not None:
        sizes = moons_vmap.SIZES
        tx, ty = torch.from_numpy(xs), torch.from_numpy(ys)

        def pytorch() -> Any:
            flat = torch.tensor(start, dtype=torch.float64, requires_grad=True)
            h, k = tx, 0
            for layer in range(len(sizes) - 1):
                nin, nout = sizes[layer], sizes[layer + 1]
                block = flat[k : k + nout * (nin + 1)].reshape(nout, nin + 1)
                k += nout * (nin + 1)
                h = h @ block[:, :nin].T + block[:, nin]
                if layer < len(sizes) - 2:
                    h = torch.relu(h)
            total = torch.relu(1 - ty * h[:, 0]).mean() + 1e-4 * (flat * flat).sum()
            total.backward()
            return flat.grad.numpy()

        pytorch()
        turns["torch"] = pytorch
    # vmap's figures and PyTorch's taking turns, 4 x rounds each: each a few milliseconds
    timed = interleaved(turns, 4 * rounds)
    warm = in_blocks({name: turns[name] for name in ("torch", "exact", "fast") if name in turns}, rounds)
    (t_exact, g_exact), (t_fast, g_fast) = timed["exact"], timed["fast"]
    t_l2, t_l2_eager = timed["l2"][0], timed["l2 eager"][0]
    if torch is not None:
        t_torch, g_torch = timed["torch"]
    print(f"\nfull-batch gradient of the moons MLP 2-16-16-1 (hinge + L2, float64), N = {n:,}: ms per gradient")
    unit = "PyTorch's tensor code" if t_torch is not None else "eager"
    base = t_torch if t_torch is not None else t_eager
    if t_torch is not None:
        print(f"  {'PyTorch tensor code (to-pytorch.md), one thread':50} {t_torch * 1e3:10.3f} ms  (the baseline)")
    for label, t in (
        ("vmap(grad) exact + batch_sum", t_exact),
        ("vmap(grad) fast=True + batch_sum", t_fast),
        ("vjpgrad.compile'd step", t_compiled),
        ("eager step", t_eager),
    ):
        print(f"  {label:50} {t * 1e3:10.3f} ms  {t / base:8.2f}x {unit}'s time")
    print(f"  (of vmap's figures, the L2 term's gradient by vmap(grad(penalty)): {t_l2 * 1e3:.3f} ms; "
          f"by eager grad(regularisation), the same numbers: {t_l2_eager * 1e3:.3f} ms)")  # fmt: skip
    worst = np.max(np.abs(g_fast - g_eager))
    print(f"  vmap exact's gradient equal to eager's to the bit: {same_bits(g_exact, g_eager)}; "
          f"compiled's: {same_bits(g_compiled, g_eager)}; fast's largest difference {worst:.3g}")  # fmt: skip
    if t_torch is not None:
        print(f"  PyTorch's largest difference from eager's {np.max(np.abs(g_torch - np.array(g_eager))):.3g}")
        print(f"  the same, each called 20 times in a row (blocks taking turns, {rounds} rounds), as a loop calls it:")
        w_torch = warm["torch"]
        print(f"  {'PyTorch tensor code, in blocks':50} {w_torch * 1e3:10.3f} ms  (the baseline)")
        for label, name in (("vmap(grad) exact + batch_sum", "exact"), ("vmap(grad) fast=True + batch_sum", "fast")):
            row = f"{label}, in blocks"
            print(f"  {row:50} {warm[name] * 1e3:10.3f} ms  {warm[name] / w_torch:8.2f}x PyTorch's in blocks")


def training(steps: int, rounds: int) -> None:
    def eager() -> list[float]:
        with contextlib.redirect_stdout(io.StringIO()):
            model, *_ = moons.train(steps)
        return [p.data for p in model.parameters()]

    t_eager, params_eager = median_time(eager, max(1, rounds // 2))
    moons_vmap.train(1)  # NumPy's first calls, once
    t_vmap, params_vmap = median_time(lambda: moons_vmap.train(steps), rounds)
    print(f"\nmoons training, {steps} full-batch steps of 100 samples: s for the whole training, each run")
    print("  making its model (and vmap its recording) inside the timing (medians):")
    print(f"  eager (examples/moons.py)                    {t_eager:10.2f} s  (the baseline)")
    print(f"  vmap + batch_sum (examples/moons_vmap.py)    {t_vmap:10.2f} s  {t_eager / t_vmap:6.0f}x eager")
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
    parser.add_argument("--sizes", type=int, nargs="+", help="batch sizes of the per-sample part (default 1000 100000)")
    parser.add_argument("--only", choices=["per-sample", "full-batch", "training", "memory"], help="one part")
    parser.add_argument("--clock", choices=sorted(CLOCK), default="wall", help="wall-clock or CPU time (the process's)")
    args = parser.parse_args(argv)
    global clock
    clock = CLOCK[args.clock]
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
        print("(torch is not installed: the PyTorch comparisons are left out)")
    print(
        f"Python {sys.version.split()[0]}, NumPy {np.__version__}"
        + (f", torch {torch.__version__}" if torch else "")
        + f"; times are {'CPU time of the process' if args.clock == 'cpu' else 'wall-clock time'}"
    )
    sizes = args.sizes or ((200, 2000) if args.quick else (1000, 100_000))
    if args.only in (None, "per-sample"):
        for n in sizes:
            per_sample(n, args.rounds, torch)
    if args.only in (None, "full-batch"):
        for n in (100, 300) if args.quick else (100, 1000):
            full_batch(n, args.rounds, torch)
    if args.only in (None, "training"):
        training(3 if args.quick else args.steps, args.rounds)
    if args.only in (None, "memory"):
        memory(sizes[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
