"""Loop folding against straight-line code, side by side in one process.

    python benchmarks/fold.py              # micrograd's demo step
    python benchmarks/fold.py --only gpt   # microgpt's step on 'isabella' (its positions: blocks apart, as functions)

One recording of the workload (benchmarks/first_call.py's) is written by both writers in turn,
``compiler.write.Program`` (one line per operation) and ``compiler.fold.make_program`` (its
repeated blocks as loops), three times each, alternating; then both codes replay the same
numbers in turn. It prints the lines of code, the seconds to write and compile it (the search
for blocks included), the replay's forward and reverse code in milliseconds (medians), and
checks that both give the same gradients to the bit before printing any time.
"""

from __future__ import annotations

import argparse
import statistics
import struct
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))
sys.path.insert(0, str(HERE))  # first: benchmarks/gpt.py, not examples/gpt.py
sys.setrecursionlimit(20_000)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["mlp", "gpt"], default="mlp")
    parser.add_argument("--builds", type=int, default=3, help="builds per writer (default 3)")
    parser.add_argument("--replays", type=int, default=21, help="replays per code (default 21)")
    args = parser.parse_args(argv)

    from first_call import workload

    from vjpgrad.compiler import fold, run, write
    from vjpgrad.compiler.record import distinct
    from vjpgrad.core import graph

    replays: list[Any] = []
    real = run.Replay.__init__

    def keep(self: Any, *rest: Any) -> None:  # the recording the compiled step makes
        real(self, *rest)
        replays.append(self)

    run.Replay.__init__ = keep  # type: ignore[method-assign]  # one recording, kept to write it twice
    _, compiled, _, _ = workload(args.only)
    compiled()
    run.Replay.__init__ = real  # type: ignore[method-assign]
    replay = replays[-1]
    recorded = replay.recorded
    given = (
        recorded.live,
        recorded.externals,
        len(distinct(recorded.arguments)),
        recorded.constants,
        replay.internal_outputs,
        {},  # no Value made inside reads an argument: numbers are structure
        recorded.edges,
    )
    writers = {"straight-line": lambda: write.Program(*given), "folded": lambda: fold.make_program(*given)}
    seconds: dict[str, list[float]] = {name: [] for name in writers}
    code: dict[str, Any] = {}
    for _ in range(args.builds):
        for name, make in writers.items():
            start = time.perf_counter()
            program = make()
            payload = program.payload(name)
            seconds[name].append(time.perf_counter() - start)
            namespace = write.namespace(payload["helpers"])
            exec(payload["forward"], namespace)  # code written from the recording alone
            exec(payload["backward"], namespace)
            code[name] = (program, namespace["forward"], namespace["backward"])
    inputs = [graph.number(x) for x in recorded.externals]
    seeds = (1.0,) * len(replay.internal_outputs)
    starts = tuple(-0.0 for _ in recorded.externals)
    replays: dict[str, list[float]] = {name: [] for name in writers}
    results: dict[str, Any] = {}
    for _ in range(args.replays):
        for name, (_, forward, backward) in code.items():
            start = time.perf_counter()
            gradients, _ = backward(seeds, forward(inputs), inputs, starts)
            replays[name].append(time.perf_counter() - start)
            results[name] = [None if g is None else struct.pack("<d", g) for g in gradients]
    if results["folded"] != results["straight-line"]:
        sys.exit("the folded code's gradients differ from the straight-line code's: no time reported")
    print(f"{args.only}: {len(recorded.live):,} operations; medians, one process, the writers alternating")
    print(f"  {'':14} {'lines':>9} {'write + compile s':>18} {'replay ms':>10}")
    for name, (program, _, _) in code.items():
        lines = len(program.source.splitlines())
        print(
            f"  {name:14} {lines:9,} {statistics.median(seconds[name]):18.3f} "
            f"{1000 * statistics.median(replays[name]):10.2f}"
        )


if __name__ == "__main__":
    main()
