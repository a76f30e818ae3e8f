"""``vjpgrad explain-torch SCRIPT.py [--html DIR] [ARGS...]``: run a PyTorch script under
``vjpgrad.watch_torch()`` and show each backward pass it ran, replayed as Values.

The script runs as ``python SCRIPT.py ARGS...`` would run it (as ``__main__``, its directory
first on ``sys.path``, ``sys.argv`` set). Then each pass's summary is printed (leaf by leaf:
equal to PyTorch's ``.grad`` to the bit, or by how many ulp it differs and why) and, with
``--html DIR``, one stepper page per replayed pass is written into DIR.

Exit status: 0 when every pass matches PyTorch, 2 when one differs or could not be replayed,
1 when the script raises (its traceback is printed) or cannot be read as Python (its syntax
error alone is printed, and nothing runs).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="vjpgrad explain-torch",
        description="Run a PyTorch script and replay each backward pass it runs as Values, exact to the bit.",
    )
    parser.add_argument("--html", metavar="DIR", help="write one stepper page per pass into DIR")
    parser.add_argument("script", help="the PyTorch script to run; words the command does not know go to it")
    arguments, rest = parser.parse_known_args(list(argv))
    arguments.args = rest
    return arguments


def main(argv: Sequence[str]) -> int:
    """Run the command; returns the exit status."""
    arguments = _arguments(argv)
    script = Path(arguments.script)
    if script.is_dir():
        print(f"vjpgrad explain-torch: error: {script} is a folder, not a script", file=sys.stderr)
        return 2
    if not script.is_file():
        print(f"vjpgrad explain-torch: error: no such script: {script}", file=sys.stderr)
        return 2
    try:  # as Python does before it runs a line: a syntax error is shown alone, and nothing runs
        compile(script.read_bytes(), str(script), "exec", dont_inherit=True)
    except SyntaxError as error:
        print("".join(traceback.format_exception_only(type(error), error)), end="", file=sys.stderr)
        return 1
    import vjpgrad

    try:
        watch = vjpgrad.watch_torch()
    except ImportError as error:
        print(f"vjpgrad explain-torch: error: {error}", file=sys.stderr)
        return 2
    raised = _run(watch, script, list(arguments.args))
    print(watch.summary())
    if arguments.html:
        _pages(watch, script, Path(arguments.html))
    if raised:
        return 1
    return 0 if watch.matches else 2


def _run(watch: object, script: Path, args: list[str]) -> bool:
    """Run ``script`` as ``__main__`` under ``watch``; whether it raised (its traceback printed)."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        with watch:  # type: ignore[attr-defined]
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as done:
        return done.code not in (None, 0)
    except BaseException as error:  # the script's own error: shown as Python shows it
        frames = traceback.extract_tb(error.__traceback__)
        own = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(script)]
        print("Traceback (most recent call last):", file=sys.stderr)
        print("".join(traceback.format_list(own or frames)), end="", file=sys.stderr)
        print("".join(traceback.format_exception_only(type(error), error)), end="", file=sys.stderr)
        return True
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return False


def _pages(watch: object, script: Path, folder: Path) -> None:
    """One stepper page per replayed pass: DIR/pass-1.html, DIR/pass-2.html..."""
    folder.mkdir(parents=True, exist_ok=True)
    for p in watch.passes:  # type: ignore[attr-defined]
        if p.explanation is None:
            continue
        title = f"{script.name}, pass {p.number}: backward at line {p.location.rpartition(':')[2]}"
        path = folder / f"pass-{p.number}.html"
        path.write_text(p.explanation.to_html(title), encoding="utf-8")
        print(f"wrote {path}")
