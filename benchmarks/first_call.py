"""What ``vjpgrad.compile``'s first calls cost, as a learner meets them: in a fresh process, with
an empty compiled-code cache and then with the cache the first process filled.

    python benchmarks/first_call.py                  # 5 rounds of both workloads (~2 min)
    python benchmarks/first_call.py --rounds 3 --only mlp

Two workloads: micrograd's demo step (benchmarks/mlp.py: MLP(2, [16, 16, 1]) on 100 points)
and microgpt's GPT step on one name (benchmarks/gpt.py). Each round starts two processes
with one new cache directory: the first finds it empty, the second finds what the first
stored. Each process times ``import vjpgrad`` and the first use of ``vjpgrad.compile`` (which
imports the compiler: ``import vjpgrad`` does not), both from bytecode as an installed package
loads them (``warmed``), then, after building the model, times for the same step, in this order:

- the eager step, the unit every other figure is stated in: the same loss function called
  without ``compile``, then ``backward()``, the parameters' ``.grad`` zeroed before, the
  graph freed when the next step drops it, the garbage collector on as users run it; the
  median of five steps, run first, so that no recording is alive while it runs (a process
  that imports torch pays more for every collection: this one does not, and checks it);
- call 1: the function runs eagerly while it is recorded (its result is the eager one);
- call 2: the code is written and compiled (empty cache) or loaded from the cache (warm);
- call 3: a replay, as every later call;
- micrograd's step (the MLP) or the microgpt-style peer's (the GPT), the peers' first call
  and every call, when micrograd is installed.

Each call's time includes its ``backward``. The gradients of every call are checked equal
to the eager step's to the bit before any time is reported. Figures are medians over the
rounds; the machine is shared and noisy, so run it when it is quiet and read ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

CHILD = """
import json, statistics, sys, time
sys.path.insert(0, {examples!r})
sys.path.insert(0, {here!r})  # first: benchmarks/gpt.py, not examples/gpt.py
sys.setrecursionlimit(20_000)
start = time.perf_counter()
import vjpgrad
imported = time.perf_counter() - start
start = time.perf_counter()
vjpgrad.compile  # its first use imports the compiler
compiler = time.perf_counter() - start
from first_call import workload
eager, compiled, peer, params = workload({name!r})

def timed(step):
    for p in params:
        p.grad = 0.0
    t = time.perf_counter()
    step().backward()
    seconds = time.perf_counter() - t
    return seconds, [p.grad for p in params]

eager_times = []
for _ in range(5):
    seconds, reference = timed(eager)
    eager_times.append(seconds)
calls = []
for _ in range(3):
    seconds, grads = timed(compiled)
    if grads != reference:
        sys.exit("the compiled step's gradients differ from the eager step's: no time reported")
    calls.append(seconds)
peer_times = []
if peer is not None:
    for _ in range(3):
        t = time.perf_counter()
        peer()
        peer_times.append(time.perf_counter() - t)
if "torch" in sys.modules:
    sys.exit("torch was imported: its objects would slow every collection of the eager step")
figures = {{"import": imported, "compiler": compiler, "eager": statistics.median(eager_times), "calls": calls}}
print(json.dumps({{**figures, "peer": peer_times}}))
"""


def workload(name: str) -> tuple[Any, Any, Any, list[Any]]:
    """The eager step, the compiled step and a peer's step (or None) of a workload, as
    functions returning the loss, and the vjpgrad parameters both steps share."""
    import vjpgrad

    if name == "mlp":
        import importlib.util

        from engines import Micrograd, Vjpgrad
        from mlp import GenericMLP, loss_of
        from moons import make_moons

        engine = Vjpgrad()
        points, labels = make_moons()
        model = GenericMLP(engine)
        compiled = vjpgrad.compile(lambda pts: loss_of(engine, model, pts, labels))
        peer = None
        if importlib.util.find_spec("micrograd") is not None:  # only micrograd: torch's import alone slows
            micrograd = Micrograd()  # every later collection of the process (its many objects)
            peer_model = GenericMLP(micrograd)
            peer = lambda: micrograd.backward(loss_of(micrograd, peer_model, points, labels))  # noqa: E731
        return (lambda: loss_of(engine, model, points, labels)), (lambda: compiled(points)), peer, model.parameters()
    if name == "gpt":
        import gpt

        docs = gpt.example.load_names()
        uchars = sorted(set("".join(docs)))
        vocab_size = len(uchars) + 1
        tokens = [len(uchars)] + [uchars.index(ch) for ch in "isabella"] + [len(uchars)]
        weights = gpt.initial_weights(vocab_size)
        model = gpt.vjpgrad_model(weights, vocab_size)
        eager_step = gpt.example.make_step_loss(model)
        compiled_step = gpt.example.make_step_loss(model, compiled=True)
        peer_model = gpt.MicrogptModel(weights, gpt.MicroValue, lambda v: v.data)
        return (
            (lambda: eager_step(tokens)),
            (lambda: compiled_step(tokens)),
            (lambda: peer_model.step_loss(tokens).backward()),
            model.parameters(),
        )
    raise ValueError(f"unknown workload {name!r}: mlp or gpt")


def child(name: str, cache: str) -> dict[str, Any]:
    """One fresh process's figures for one workload with the cache in ``cache``."""
    code = CHILD.format(here=str(HERE), examples=str(HERE.parent / "examples"), name=name)
    environment = {**os.environ, "VJPGRAD_CACHE_DIR": cache}
    environment.pop("VJPGRAD_CACHE", None)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)  # modules load from their bytecode, as installed (``warmed``)
    # run from the project's folder, as `python examples/gpt.py` is: compile takes code on sys.path
    # outside the current folder for installed code (never walked), so from benchmarks/ the
    # example's model would be a library's object and its weights refused as not found
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=600, cwd=HERE.parent
    )
    if done.returncode != 0:
        sys.exit(f"{name}: the measuring process failed:\n{done.stderr}{done.stdout}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def warmed() -> None:
    """Import vjpgrad and its compiler once in a process that may write their bytecode: every
    measuring process then loads it, as a user's does from an installed package (pip compiles it),
    rather than compiling vjpgrad's source at each import."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    code = "import vjpgrad, vjpgrad.compiler, vjpgrad.batched, vjpgrad.nn"
    subprocess.run([sys.executable, "-c", code], env=environment, check=True, timeout=600, cwd=HERE.parent)


TITLES = {
    "mlp": "micrograd's demo step, MLP(2, [16, 16, 1]) on 100 points",
    "gpt": "microgpt's GPT step on 'isabella'",
}


def report(name: str, rounds: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """Medians over the rounds, in milliseconds and in eager steps."""

    def median(pick: Any) -> float:
        return statistics.median(pick(r) for r in rounds)

    step = median(lambda r: (r[0]["eager"] + r[1]["eager"]) / 2)
    print(f"\n{TITLES[name]}  (median of {len(rounds)} rounds, a fresh process each)")
    print("  unit: an eager step (loss + backward, eager, in the same process, median of 5 before the calls)")
    print(f"  {'':44} {'ms':>9} {'eager steps':>12}")

    def line(label: str, seconds: float) -> None:
        print(f"  {label:44} {1000 * seconds:9.1f} {seconds / step:12.2f}")

    line("import vjpgrad", median(lambda r: r[0]["import"]))
    line("vjpgrad.compile's first use: its import", median(lambda r: r[0]["compiler"]))
    line("eager step: loss + backward (the unit)", step)
    line("call 1: runs eagerly while recorded", median(lambda r: r[0]["calls"][0]))
    line("call 2, empty cache: writes + compiles code", median(lambda r: r[0]["calls"][1]))
    line("call 2, warm cache: loads the code", median(lambda r: r[1]["calls"][1]))
    line("call 3 and later: replay", median(lambda r: min(r[0]["calls"][2], r[1]["calls"][2])))
    cold = median(lambda r: sum(r[0]["calls"][:2]))
    warm = median(lambda r: sum(r[1]["calls"][:2]))
    line("calls 1 + 2, empty cache", cold)
    line("calls 1 + 2, warm cache", warm)
    if rounds[0][0]["peer"]:
        peer = median(lambda r: statistics.median(r[0]["peer"] + r[1]["peer"]))
        label = {"mlp": "micrograd 0.1.0 step (its every call)", "gpt": "microgpt-style peer step (its every call)"}
        line(label[name], peer)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="fresh-process pairs per workload (default 5)")
    parser.add_argument("--only", choices=["mlp", "gpt"], help="one workload")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    print(f"Python {sys.version.split()[0]}; each figure's process starts with the cache named")
    warmed()
    for name in [args.only] if args.only else ["mlp", "gpt"]:
        rounds = []
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory(prefix="vjpgrad-first-call-") as folder:
                cache = str(Path(folder) / "cache")
                start = time.perf_counter()
                rounds.append((child(name, cache), child(name, cache)))
                print(f"  {name}: round {len(rounds)} in {time.perf_counter() - start:.1f}s", file=sys.stderr)
        report(name, rounds)


if __name__ == "__main__":
    main()
