"""How long the course's commands take, cold: a finished directory's ``check``, a class's ``grade``.

    python benchmarks/course.py [--rounds 3] [--students 12] [--what check,grade]

Each round runs, in a fresh process each (nothing cached: hypothesis's cache lives for one
command), ``vjpgrad course check DIR`` on a directory holding the reference solutions (every
exercise done), and ``vjpgrad course grade`` of ``--students`` such directories with the worked
example's exercises (thirteen exercises, held-out checks included). It prints the median of the
wall-clock seconds of each, over the rounds, and the cores it had. docs/course/instructor.md
quotes them; the goals are a check under 15 s on two cores and a class of 12 under 3 minutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "course" / "example-exercises"


def finished(directory: Path) -> Path:
    """A student's directory with every exercise done: the reference solutions (and the example's sigmoid)."""
    from vjpgrad.course.exercises import folder

    shutil.copytree(folder("solutions"), directory)
    shutil.copyfile(EXAMPLE / "solutions" / "sigmoid.py", directory / "sigmoid.py")
    return directory


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--what", default="check,grade")
    args = parser.parse_args()
    what = args.what.split(",")
    course = [sys.executable, "-m", "vjpgrad", "course"]
    figures: dict[str, list[float]] = {name: [] for name in what}
    with tempfile.TemporaryDirectory(prefix="vjpgrad-course-bench-") as scratch:
        here = Path(scratch)
        one = finished(here / "one")
        students = [finished(here / "class" / f"student{k:02}") for k in range(args.students)]
        for round_ in range(args.rounds):
            if "check" in what:
                figures["check"].append(timed([*course, "check", str(one)], here))
            if "grade" in what:
                out = here / f"out{round_}"
                command = [*course, "grade", *map(str, students), "--out", str(out), "--exercises", str(EXAMPLE)]
                figures["grade"].append(timed(command, here))
            print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in figures.items()), flush=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"\nmedians over {args.rounds} rounds, {cores} cores:")
    if "check" in what:
        print(f"  check of one finished directory: {statistics.median(figures['check']):.1f} s")
    if "grade" in what:
        print(f"  grade of a class of {args.students}: {statistics.median(figures['grade']):.1f} s")


if __name__ == "__main__":
    main()
