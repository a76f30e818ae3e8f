"""A/B of the eager engine between two checkouts: is a change slower?

    python benchmarks/ab.py OLD_SRC NEW_SRC [--rounds 15]

OLD_SRC and NEW_SRC are the ``src`` folders of two checkouts (e.g. a ``git worktree`` of the
previous commit and this one). Each round runs every probe once per checkout, each in a fresh
process (alternating which goes first), so the machine's drift hits both alike; the figures are
medians over the rounds. The probes, all eager:

- ``a*b``: one multiplication of two Values that take gradient (node creation), in ns;
- ``dag 1e5``: a random graph of 100,000 operations built and backpropagated (workloads.py);
- ``mlp step``: micrograd's demo step, MLP(2, [16, 16, 1]) on 100 points (mlp.py).

A ratio above 1 means NEW is slower.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

PROBE = r"""
import gc, json, sys, time, timeit
sys.path.insert(0, {benchmarks!r})
import vjpgrad
from vjpgrad import Value
out = {{}}
a, b = Value(1.5), Value(2.5)
t = timeit.Timer("a * b", globals={{"a": a, "b": b}})
out["a*b"] = min(t.repeat(5, 200_000)) / 200_000 * 1e9
from engines import available
from workloads import build_dag, random_program
engine = [e for e in available() if e.name == "vjpgrad"][0]
program = random_program(100_000)
start = time.perf_counter()
leaves, root = build_dag(engine, program)
engine.backward(root)
del leaves, root
gc.collect()
out["dag 1e5"] = (time.perf_counter() - start) * 1e3
import mlp
from moons import make_moons
points, labels = make_moons(100, noise=0.1, seed=1)
model = mlp.GenericMLP(engine)
mlp.training_step(engine, model, points, labels)
times = []
for _ in range(3):
    start = time.perf_counter()
    mlp.training_step(engine, model, points, labels)
    times.append(time.perf_counter() - start)
out["mlp step"] = min(times) * 1e3
print(json.dumps(out))
"""

UNITS = {"a*b": "ns", "dag 1e5": "ms", "mlp step": "ms"}


def probe(src: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(src))
    code = PROBE.format(benchmarks=str(HERE))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path, help="the src folder of the checkout before the change")
    parser.add_argument("new", type=Path, help="the src folder of the checkout with the change")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for k in range(args.rounds):
        order = ["old", "new"] if k % 2 == 0 else ["new", "old"]
        for side in order:
            runs[side].append(probe(getattr(args, side)))
        print(f"round {k + 1}/{args.rounds}", file=sys.stderr)
    print(f"{'probe':<10} {'old':>10} {'new':>10} {'new/old':>8}   (medians of {args.rounds} rounds)")
    for name, unit in UNITS.items():
        old = statistics.median(r[name] for r in runs["old"])
        new = statistics.median(r[name] for r in runs["new"])
        print(f"{name:<10} {old:>8.1f}{unit} {new:>8.1f}{unit} {new / old:>8.3f}")


if __name__ == "__main__":
    main()
