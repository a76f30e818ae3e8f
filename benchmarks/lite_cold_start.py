"""How long the site's JupyterLite takes to start: from the click on Start here's console to its
first result printed, in headless Chromium, offline, over 127.0.0.1.

    python benchmarks/lite_cold_start.py [--rounds 5] [--built docs/_build] [--build] [--warm]

``--built`` is the docs build folder (the one that holds ``html/``; the default, docs/_build, is
where the README's docs command writes it); ``--build`` builds the site there first, with the
README's command. Each round starts a new Chromium with a new, empty profile, so nothing is
cached (no HTTP cache, no service worker, no IndexedDB): a true cold start, as a reader's first
visit. ``--warm`` then opens the page again in the same browser and clicks again: the files come
from its cache, and the kernel starts anew. Each round also prints where its cold start went, from
the site's own log of requests, in seconds from the click: when the kernel's worker asked for
Pyodide (the app's page and scripts had loaded), and when the last file was sent of Pyodide's core,
of the wheels loaded as the kernel starts, and of any wheel piplite installed after; from there to
the first result, Pyodide starts, unpacks the wheels, and the kernel imports IPython and runs the code.

It prints the median of the rounds, with the machine's cores and its load average at the start and
the end: the machine is shared, and a loaded one starts slowly. tests/test_browser_lite.py checks
the same figure (the same helpers, tests/_lite.py) in CI, at most ``VJPGRAD_LITE_COLD_START`` s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import _lite  # noqa: E402  (tests/_lite.py: the site served, Chromium offline, the console read)


def load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def build(built: Path) -> None:
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "docs", str(built / "html")]
    print("building the site:", " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)


def one_round(html: Path, warm: bool) -> tuple[float, float | None, list[tuple[str, float]]]:
    """A cold start (and a warm one after it, when asked) in a new browser with a new profile."""
    log: list[tuple[str, float, float]] = []
    with _lite.served(html, log) as server:
        driver = _lite.offline_chromium()
        try:
            clicked, cold = _lite.first_result(driver, server)
            stages = _lite.phases(log, clicked)
            again = _lite.first_result(driver, server)[1] if warm else None
        finally:
            driver.quit()
    return cold, again, stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--built", type=Path, default=ROOT / "docs" / "_build", help="the docs build folder")
    parser.add_argument("--build", action="store_true", help="build the site there first")
    parser.add_argument("--warm", action="store_true", help="also time a second start in the same browser")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    if args.build:
        build(args.built)
    html = args.built / "html"
    if not (html / "lite" / "repl" / "index.html").is_file():
        parser.error(f"{html} has no JupyterLite (lite/repl/index.html): build the site (--build)")
    if _lite.CHROMIUM is None or _lite.DRIVER is None:
        raise SystemExit("needs Chromium and its driver (apt-get install chromium chromium-driver) and selenium")
    started = load()
    cold: list[float] = []
    warm: list[float] = []
    for round_ in range(args.rounds):
        seconds, again, stages = one_round(html, args.warm)
        cold.append(seconds)
        line = f"round {round_ + 1}: cold {seconds:.1f} s"
        if again is not None:
            warm.append(again)
            line += f", warm {again:.1f} s"
        where = "; ".join(f"{name} {at:.1f} s" for name, at in stages)
        print(f"{line} (load {load()})\n  from the click: {where}; the first result {seconds:.1f} s", flush=True)
        time.sleep(1)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"\nmedians over {args.rounds} rounds, {cores} cores, load average {started} at the start, {load()} after:")
    print(f"  cold start, the click to the first result: {statistics.median(cold):.1f} s")
    if warm:
        print(f"  warm start (the same browser again): {statistics.median(warm):.1f} s")


if __name__ == "__main__":
    main()
