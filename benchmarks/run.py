"""Side-by-side benchmarks: vjpgrad against micrograd 0.1.0, PyTorch 0-d float64 tensors and
hand-written float code (the limit), in one run.

    python benchmarks/run.py            # the full suite (several minutes)
    python benchmarks/run.py --quick    # small sizes, a smoke test

Peers run when installed (``pip install micrograd==0.1.0 torch==2.13.0``). Engines run
interleaved, in a fresh order each round, so machine drift hits all alike; each figure is
the median over the rounds. Every timed region charges build + backward + teardown: the
graph is dropped and ``gc.collect()`` runs inside it, with the garbage collector on as users
run it. Before any time is reported, every engine's gradients are checked against
vjpgrad's. Ratios are peer time / vjpgrad time: above 1, vjpgrad is faster.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib.util
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.setrecursionlimit(20_000)  # micrograd's sort recurses once per level of depth

from engines import Engine, available  # noqa: E402
from workloads import (  # noqa: E402
    Program,
    build_dag,
    dag_by_hand,
    dag_from,
    deep_chain,
    random_program,
    seed_expression,
    seed_expression_by_hand,
    seed_inputs,
)

import vjpgrad  # noqa: E402

Run = Callable[[], tuple[list[float], float, float]]  # grads, forward seconds, backward seconds
LIMIT = "hand-written"


def collection_cost() -> float:
    """Seconds of a full ``gc.collect()`` with nothing to free: a walk of the whole heap
    (torch's modules included) that every engine would pay alike, whatever its graph.
    The median of five, as one collection's time varies by a millisecond."""
    costs = []
    for _ in range(5):
        gc.collect()
        start = time.perf_counter()
        gc.collect()
        costs.append(time.perf_counter() - start)
    return statistics.median(costs)


def timed(run: Run, collect: bool = True) -> tuple[list[float], float, float, float]:
    """Run once: grads, forward, backward and total seconds (total includes the teardown).

    The teardown is the graph's freeing: reference counting frees it as ``run`` returns,
    inside the timed region, and what it cannot free (cycles), a collection frees: timed with
    it, and the cost of an empty collection, measured just before, taken off. When that
    collection finds nothing, the run left nothing for a collector and its time is not
    counted: a full collection walks the whole heap (the compiled code, every engine's
    model) and varies by milliseconds on a loaded machine, which taken off a step of a few
    milliseconds left noise, even negative totals. The hand-written limit makes only floats
    and lists, nothing for a collector: it runs without one (``collect=False``).
    """
    if not collect:
        gc.collect()
        start = time.perf_counter()
        grads, forward, backward = run()
        return grads, forward, backward, time.perf_counter() - start
    baseline = collection_cost()
    start = time.perf_counter()
    grads, forward, backward = run()  # the graph dies when run returns ...
    returned = time.perf_counter()
    found = gc.collect()  # ... and what reference counting cannot free, the collector frees here
    if not found:
        return grads, forward, backward, returned - start
    return grads, forward, backward, time.perf_counter() - start - baseline


def dag_run(engine: Engine, program: Program) -> Run:
    def run() -> tuple[list[float], float, float]:
        t0 = time.perf_counter()
        leaves, out = build_dag(engine, program)
        t1 = time.perf_counter()
        engine.backward(out)
        t2 = time.perf_counter()
        return [engine.grad(x) for x in leaves], t1 - t0, t2 - t1

    return run


COMPILED = "vjpgrad compiled"
FIRST_CALLS: list[tuple[float, float]] = []  # seconds of a compiled workload's first two calls, shown after its table


def first_two_calls(call: Callable[[], Any]) -> tuple[float, float]:
    """Seconds of a compiled function's first call (it runs eagerly while recorded) and second
    (its code is written and compiled, or loaded from the cache), each with its backward."""
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        call().backward()
        seconds.append(time.perf_counter() - start)
    return seconds[0], seconds[1]


def compiled_dag_run(program: Program) -> Run:
    """The DAG through vjpgrad.compile: recorded and compiled here, replayed by every run."""
    compiled = vjpgrad.compile(lambda *leaves: dag_from(leaves, vjpgrad.relu, program))
    FIRST_CALLS.append(first_two_calls(lambda: compiled(*[vjpgrad.Value(x) for x in program.leaves])))

    def run() -> tuple[list[float], float, float]:
        t0 = time.perf_counter()
        leaves = [vjpgrad.Value(x) for x in program.leaves]
        out = compiled(*leaves)
        t1 = time.perf_counter()
        out.backward()
        t2 = time.perf_counter()
        return [x.grad for x in leaves], t1 - t0, t2 - t1

    return run


def by_hand(function: Callable[[], list[float]]) -> Run:
    def run() -> tuple[list[float], float, float]:
        t0 = time.perf_counter()
        grads = function()
        return grads, time.perf_counter() - t0, 0.0

    return run


def seed_run(engine: Engine, inputs: tuple[list[float], ...], use_log: bool) -> Run:
    def run() -> tuple[list[float], float, float]:
        t0 = time.perf_counter()
        leaves, outputs = seed_expression(engine, inputs, use_log)
        t1 = time.perf_counter()
        engine.backward_seeded(outputs, inputs[3])
        t2 = time.perf_counter()
        return [engine.grad(x) for x in leaves], t1 - t0, t2 - t1

    return run


def agree(reference: Sequence[float], grads: Sequence[float]) -> bool:
    return len(reference) == len(grads) and all(
        math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9) for x, y in zip(reference, grads, strict=True)
    )


def compare(title: str, nodes: int, runs: dict[str, Run], rounds: int) -> dict[str, dict[str, float]]:
    """Run every engine ``rounds`` times, interleaved; print and return medians per node."""
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in runs}
    failed: set[str] = set()
    reference: list[float] | None = None
    names = list(runs)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            if name in failed:
                continue
            try:
                grads, forward, backward, total = timed(runs[name], collect=name != LIMIT)
            except RecursionError:
                failed.add(name)
                continue
            if reference is None or name == "vjpgrad":
                reference = reference if name != "vjpgrad" and reference is not None else grads
            if not agree(reference, grads):
                sys.exit(f"{title}: {name}'s gradients differ from the others'; no time reported")
            samples[name].append((forward, backward, total))
    print(f"\n{title}  ({nodes:,} graph nodes, median of {rounds})")
    print(f"  {'engine':16} {'forward':>10} {'backward':>10} {'total':>10}   {'total vs vjpgrad':>16}")
    base = statistics.median(t for _, _, t in samples["vjpgrad"])
    result = {}
    for name in runs:
        if name in failed:
            print(f"  {name:16} fails: RecursionError (its topological sort recurses)")
            continue
        forward, backward, total = (statistics.median(s[k] for s in samples[name]) for k in range(3))
        per_node = [1e6 * t / nodes for t in (forward, backward, total)]
        split = f"{per_node[0]:8.3f}µs {per_node[1]:8.3f}µs" if name != LIMIT else f"{'':10} {'':10}"
        print(f"  {name:16} {split} {per_node[2]:8.3f}µs   {total / base:15.2f}x")
        result[name] = {"forward_us": per_node[0], "backward_us": per_node[1], "total_us": per_node[2]}
        result[name]["ratio"] = total / base
    if LIMIT in result and COMPILED in result:
        print(f"  {COMPILED} vs {LIMIT}: {result[COMPILED]['total_us'] / result[LIMIT]['total_us']:.2f}x the time")
    if COMPILED in result:
        eager_step = result["vjpgrad"]["total_us"] * nodes / 1e6
        for first, second in FIRST_CALLS:
            print(
                f"  {COMPILED}: first call (eager, recorded) {first:.2f}s = {first / eager_step:.1f} eager calls; "
                f"second (code written and compiled, or loaded from the cache) {second:.2f}s = "
                f"{second / eager_step:.1f}, {1e6 * second / nodes:.1f}µs per node"
            )
    FIRST_CALLS.clear()
    return result


def random_dag(engines: list[Engine], sizes: Sequence[int], rounds: int) -> dict[str, Any]:
    results = {}
    for size in sizes:
        program = random_program(size)
        runs: dict[str, Run] = {engine.name: dag_run(engine, program) for engine in engines}
        if size <= 100_000 and hasattr(vjpgrad, "compile"):  # a million lines of generated Python take minutes
            runs[COMPILED] = compiled_dag_run(program)
        runs[LIMIT] = by_hand(lambda program=program: dag_by_hand(program))  # type: ignore[misc]
        results[size] = compare(f"1. random DAG, {size:,} steps", program.nodes, runs, rounds)
    return results


def seed_at_scale(engines: list[Engine], sizes: Sequence[int], rounds: int) -> dict[str, Any]:
    results = {}
    for use_log in (False, True):
        for n in sizes:
            inputs = seed_inputs(n)
            runs = {e.name: seed_run(e, inputs, use_log) for e in engines if e.has_log or not use_log}
            runs[LIMIT] = by_hand(lambda inputs=inputs, use_log=use_log: seed_expression_by_hand(inputs, use_log))  # type: ignore[misc]
            term = "log(c)" if use_log else "c**-1"
            title = f"2. seeded VJP of y = 3a + 2b*b + {term}, n = {n:,}"
            results[f"{term} {n}"] = compare(title, 6 * n, runs, rounds)
    return results


def chain(engines: list[Engine], links: int, rounds: int) -> None:
    print(f"\n3. a chain of {links:,} links (y = y * 0.999999 + 0.000001), build + backward + teardown")
    for engine in engines:
        times = []
        try:
            for _ in range(rounds):
                _, _, _, total = timed(lambda engine=engine: ([*map(engine.grad, deep_chain(engine, links))], 0.0, 0.0))  # type: ignore[misc]
                times.append(total)
        except RecursionError:
            depth = sys.getrecursionlimit()
            print(f"  {engine.name:14} fails: RecursionError (its topological sort recurses; limit {depth:,})")
            continue
        per_link = 1e6 * statistics.median(times) / links
        print(f"  {engine.name:14} {per_link:8.3f}µs per link, {statistics.median(times):6.2f}s in all")


def memory_child(engine_name: str, size: int) -> None:
    """In a fresh process: live bytes per node of a built random DAG, all nodes alive."""
    engine = next(e for e in available() if e.name == engine_name)
    program = random_program(size)
    gc.collect()
    tracemalloc.start()
    rss_before = _rss()
    kept = build_dag(engine, program)
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0]
    rss = _rss() - rss_before
    print(json.dumps({"traced": traced / program.nodes, "rss": rss / program.nodes, "alive": kept is not None}))


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory(engines: list[Engine], size: int) -> dict[str, Any]:
    print(f"\n5. memory: live bytes per node of a random DAG of {size:,} steps, all nodes alive (fresh process each)")
    print(f"  {'engine':14} {'tracemalloc':>12} {'RSS growth':>12}   {'traced vs vjpgrad':>10}  {'RSS vs vjpgrad':>9}")
    results = {}
    for engine in engines:
        child = [sys.executable, __file__, "--memory-child", engine.name, str(size)]
        out = subprocess.run(child, capture_output=True, text=True, check=True).stdout
        results[engine.name] = json.loads(out.splitlines()[-1])
    base = results["vjpgrad"]
    for name, m in results.items():
        # tracemalloc does not see PyTorch's C++ allocations: compare RSS growth for torch
        ratio = f"{m['traced'] / base['traced']:9.2f}x" if name != "torch 0-d" else f"{'':10}"
        print(f"  {name:14} {m['traced']:10.0f} B {m['rss']:10.0f} B   {ratio}  {m['rss'] / base['rss']:9.2f}x")
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and few rounds (a smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per engine (default 5, quick 2)")
    parser.add_argument("--only", choices=["dag", "seed", "chain", "memory", "mlp", "gpt"], action="append")
    parser.add_argument("--json", type=Path, help="also write the medians to this file")
    parser.add_argument("--memory-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        memory_child(args.memory_child[0], int(args.memory_child[1]))
        return
    rounds = args.rounds or (2 if args.quick else 5)
    only = set(args.only or ["dag", "seed", "chain", "memory", "mlp", "gpt"])
    engines = available()
    print(f"engines: {', '.join(e.name for e in engines)}, {LIMIT}; Python {sys.version.split()[0]}; gc on")
    if "VJPGRAD_CACHE_DIR" not in os.environ:  # compile's second calls measured with an empty cache
        os.environ["VJPGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="vjpgrad-benchmark-cache-")
        atexit.register(shutil.rmtree, os.environ["VJPGRAD_CACHE_DIR"], ignore_errors=True)
        print("compile's cache: a new, empty directory (benchmarks/first_call.py measures a warm one)")
    results: dict[str, Any] = {}
    if "dag" in only:
        sizes = [1_000, 10_000] if args.quick else [10_000, 100_000, 1_000_000]
        results["dag"] = random_dag(engines, sizes, rounds)
    if "seed" in only:
        results["seed"] = seed_at_scale(engines, [1_000, 5_000] if args.quick else [1_000, 20_000, 100_000], rounds)
    if "chain" in only:
        chain(engines, 10_000 if args.quick else 1_000_000, 1 if args.quick else 3)
    if "mlp" in only:
        from mlp import mlp_step

        results["mlp"] = mlp_step(engines, rounds, compare, FIRST_CALLS)
    if "memory" in only:
        results["memory"] = memory(engines, 10_000 if args.quick else 100_000)
    if "gpt" in only:
        # by its path: examples/, on the path for the models, has a gpt.py of its own
        spec = importlib.util.spec_from_file_location("gpt_benchmark", Path(__file__).resolve().parent / "gpt.py")
        assert spec is not None
        assert spec.loader is not None
        gpt_benchmark = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gpt_benchmark)
        results["gpt"] = gpt_benchmark.gpt_step(rounds, compare)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
