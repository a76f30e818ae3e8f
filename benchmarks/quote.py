"""Runs the benchmarks whose figures docs/explanation/performance.md quotes, and writes what they
print into the page, between its two ``quote.py`` markers, with the date, the machine's load and
each command: the page's figures are the benchmarks' own lines, never typed by hand.

    python benchmarks/quote.py            # every command below (several minutes)
    python benchmarks/quote.py --dry-run  # print the section instead of writing it
    python benchmarks/quote.py --only vmap.py  # those benchmarks anew, the others' figures kept
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGE = HERE.parent / "docs" / "explanation" / "performance.md"
BEGIN = "<!-- quote.py: begin (written by python benchmarks/quote.py; do not edit by hand) -->"
END = "<!-- quote.py: end -->"
EARLIER_RUN = "the earlier run: "
EARLIER = f"the other figures are from the run each names, or else from {EARLIER_RUN}"

COMMANDS = [
    ("vmap: per-sample gradients against the eager loop and a loop of compiled calls",
     ["vmap.py", "--rounds", "5", "--sizes", "1000", "--only", "per-sample"]),
    ("vmap against PyTorch's tensor code: the moons MLP's full-batch gradient",
     ["vmap.py", "--rounds", "5", "--only", "full-batch"]),
    ("a compiled call on one sample", ["compile_overhead.py", "--rounds", "15", "--calls", "50"]),
    ("the GPT step: eager, compiled, the microgpt design", ["gpt.py", "--rounds", "5"]),
    ("the GPT step with PyTorch 0-d tensors too (torch imported)", ["gpt.py", "--rounds", "5", "--torch"]),
    ("the GPT step as CPython 3.13 collects (its first threshold, 2000, where 3.10 to 3.12 have 700)",
     ["gpt.py", "--rounds", "5", "--gc-threshold", "2000"]),
    ("the compiled GPT step's parts beside CPython's floor for its code", ["gpt.py", "--floor"]),
    ("the first two calls, in fresh processes", ["first_call.py", "--rounds", "5"]),
]  # fmt: skip


def run(arguments: list[str]) -> str:
    environment = {**os.environ, "VJPGRAD_CACHE": "0"} if arguments[0] == "compile_overhead.py" else None
    done = subprocess.run(
        [sys.executable, str(HERE / arguments[0]), *arguments[1:]],
        capture_output=True,
        text=True,
        cwd=HERE,
        env=environment,
        timeout=3600,
    )
    if done.returncode != 0:
        sys.exit(f"{' '.join(arguments)} failed:\n{done.stderr}{done.stdout}")
    return done.stdout.rstrip()


def earlier() -> tuple[str, dict[str, str]]:
    """The page's section as it is: its first line (the run's date and load) and each command's
    block, by command, so that a run of some benchmarks (``--only``) keeps the others' figures."""
    page = PAGE.read_text(encoding="utf-8")
    if BEGIN not in page or END not in page:
        return "", {}
    body = page.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    head, _, rest = body.partition("\n\n")
    blocks = {}
    for block in ("\n\n" + rest).split("\n\n**")[1:]:
        command = block.split("`", 2)[1] if block.count("`") >= 2 else ""
        blocks[command] = "**" + block.strip()
    return head.strip(), blocks


def section(only: list[str] | None) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head, kept = earlier() if only else ("", {})
    head = head.split(EARLIER_RUN)[-1]  # the run the kept figures come from, not the runs of some since
    parts = [
        BEGIN,
        "",
        f"Run on {now}, CPython {platform.python_version()}, {os.cpu_count()} cores; load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} when it started (a shared machine: read the ratios)."
        + (f" Only {', '.join(only)} ran then; {EARLIER}{head}" if only else ""),
    ]
    when = f"run on {now}"  # each block says when its figures were measured: a later --only keeps it
    for title, arguments in COMMANDS:
        command = (
            "VJPGRAD_CACHE=0 " * (arguments[0] == "compile_overhead.py") + "python benchmarks/" + " ".join(arguments)
        )
        if only and arguments[0] not in only:
            if command in kept:
                parts += ["", kept[command]]
            continue
        print(f"running {command}", file=sys.stderr)
        parts += ["", f"**{title}**: `{command}`, {when}", "", "```text", run(arguments), "```"]
    parts += ["", END]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="print the section, leave the page as it is")
    parser.add_argument(
        "--only", nargs="+", help="benchmark files to run (e.g. vmap.py); the others' figures are kept from the page"
    )
    args = parser.parse_args(argv)
    text = section(args.only)
    if args.dry_run:
        print(text)
        return 0
    page = PAGE.read_text(encoding="utf-8")
    if BEGIN not in page or END not in page:
        sys.exit(f"{PAGE} has no quote.py markers")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    PAGE.write_text(head + text + tail, encoding="utf-8")
    print(f"wrote {PAGE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
