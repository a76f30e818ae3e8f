"""The CPU of a whole ``vjpgrad course check`` of the reference solutions, two sources side by side.

    python benchmarks/course_ab.py OLD/src NEW/src [--rounds 6]

Each round runs ``python -m vjpgrad course check DIR`` (DIR: a copy of the reference solutions) with
``PYTHONPATH`` set to each source in turn, alternating which goes first. The CPU counted is every
process's the command started, the fork server's and its children's included: this process is made
their subreaper (Linux's ``PR_SET_CHILD_SUBREAPER``), so they are reaped here when they end. It
prints each run, then the medians of CPU and wall-clock seconds and their ratio (new / old).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def reap() -> None:
    """Wait for every descendant this process has become the parent of (the fork server)."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def run(source: str, directory: Path) -> tuple[float, float]:
    """The CPU and wall-clock seconds of one check of ``directory`` with vjpgrad from ``source``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "vjpgrad", "course", "check", str(directory)],
        cwd=directory.parent, env={**os.environ, "PYTHONPATH": source}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - start
    reap()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"check with {source} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    sources = {"old": str(Path(args.old).resolve()), "new": str(Path(args.new).resolve())}
    cpu: dict[str, list[float]] = {"old": [], "new": []}
    wall: dict[str, list[float]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="vjpgrad-course-ab-") as scratch:
        directory = Path(scratch) / "solved"
        shutil.copytree(ROOT / "src" / "vjpgrad" / "course" / "solutions", directory)
        for round_ in range(args.rounds):
            for name in ("old", "new") if round_ % 2 == 0 else ("new", "old"):
                seconds, clock = run(sources[name], directory)
                cpu[name].append(seconds)
                wall[name].append(clock)
                print(f"round {round_ + 1} {name}: {seconds:.1f} s CPU, {clock:.1f} s wall", flush=True)
    for name in ("old", "new"):
        print(f"{name}: median {statistics.median(cpu[name]):.2f} s CPU, {statistics.median(wall[name]):.2f} s wall")
    print(f"CPU ratio new / old: {statistics.median(cpu['new']) / statistics.median(cpu['old']):.3f}")


if __name__ == "__main__":
    main()
