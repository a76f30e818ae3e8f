"""``vjpgrad explain-torch SCRIPT.py [--html DIR] [ARGS...]``: run a PyTorch script under
``vjpgrad.watch_torch()`` and show each backward pass it ran, replayed as Values.

The script runs as ``python SCRIPT.py ARGS...`` would run it (as ``__main__``, ``__file__`` its
absolute path, its directory first on ``sys.path``, ``sys.argv`` set). Then each pass's summary is
printed (leaf by leaf: equal to PyTorch's ``.grad`` to the bit, or by how many ulp it differs and why) and, with
``--html DIR``, one stepper page per replayed pass is written into DIR, for a pass of at most
``--max-steps`` steps (``PAGE_STEPS`` unless given): a page holds every step and the whole graph,
about 1.3 to 2 KB a step, and a pass of a training script's batch can have tens or hundreds of
thousands. For a larger pass a line says why there is no page, and the summary stands as for any
pass (``--max-steps`` without ``--html`` is refused: alone it would do nothing, and so is an empty
``--html=``). ``--max-steps``, ``--html`` and ``-h``/``--help`` are vjpgrad's: a script's own
option of one of those names reaches it only after ``--`` (the first ``--`` ends vjpgrad's
options and is not passed on).

Exit status: 0 when every pass matches PyTorch, 2 when one differs or could not be replayed,
1 when the script raises (its traceback is printed), exits with an error (``sys.exit(3)``, or
``sys.exit("message")``, whose message is printed as Python prints it) or cannot be read as
Python (its syntax error alone is printed, and nothing runs). A script that is not there, and a
``--html`` folder that cannot be made, are one line each, exit status 2, before the script runs.
"""

from __future__ import annotations

import argparse
import os
import re
import runpy
import shlex
import subprocess
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from vjpgrad.display import text

PAGE_STEPS = 10_000
"""The most steps of a pass written as a stepper page by default: some 13 to 20 MB of HTML (a
step takes about 1.3 to 2 KB, with its node in the picture and its row in the table), which a browser
still opens and a learner can still step through. A pass of 41,698 steps made a page of 51 MB
in 7 s, a pass four times as large a page of 206 MB in 21 s, and a script on a batch of 20 × 64
tokens was still writing its pages after fourteen minutes."""


def _steps(text: str) -> int:
    """``--max-steps``: a whole number of at least 1."""
    try:
        steps = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number of steps, got {text!r}") from None
    if steps < 1:
        raise argparse.ArgumentTypeError(f"at least 1 step, got {steps}")
    return steps


def _folder(text: str) -> str:
    """``--html``: a folder's name, not an empty word (``--html=``), which would be the current folder."""
    if not text:
        raise argparse.ArgumentTypeError(f"a folder to write the pages into, got {text!r}")
    return text


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    """vjpgrad's options, the script, and the script's own words (``args``). The first ``--``
    ends vjpgrad's options wherever it stands and is not passed on: every word after it is the
    script's (the script itself first, if it was not named before). Options are matched by their
    whole names only, so a script's ``--htm`` or ``--max`` reaches the script."""
    words = list(argv)
    cut = words.index("--") if "--" in words else len(words)
    ours, theirs = words[:cut], words[cut + 1 :]
    parser = argparse.ArgumentParser(
        prog="vjpgrad explain-torch",
        description=(
            "Run a PyTorch script and replay each backward pass it runs as Values: each .grad equal to "
            "PyTorch's to the bit is said so, and one that differs is said by how much and why, where that is known."
        ),
        usage="%(prog)s [-h] [--html DIR] [--max-steps N] SCRIPT [ARGS ...] [-- ARGS ...]",
        allow_abbrev=False,
    )
    parser.add_argument("--html", type=_folder, metavar="DIR", help="write one stepper page per pass into DIR")
    parser.add_argument(
        "--max-steps",
        type=_steps,
        metavar="N",
        help=f"write a page for a pass of at most N steps (default {PAGE_STEPS:,}: 13 to 20 MB a page)",
    )
    parser.add_argument(
        "script",
        nargs="?",  # required, but it may come after the --
        help="the PyTorch script to run; words the command does not know, and every word after --, go to it",
    )
    arguments, rest = parser.parse_known_args(ours)
    if arguments.script is None:  # named after the --: its first word
        if not theirs:
            parser.error("the following arguments are required: script")
        arguments.script, theirs = theirs[0], theirs[1:]
    if arguments.max_steps is None:
        arguments.max_steps = PAGE_STEPS
    elif arguments.html is None:  # alone it would do nothing: say so before the script runs
        parser.error("--max-steps bounds the pages --html writes: add --html DIR")
    arguments.args = rest + theirs
    return arguments


def main(argv: Sequence[str]) -> int:
    """Run the command; returns the exit status."""
    arguments = _arguments(argv)
    script = Path(arguments.script)
    if script.is_dir():
        print(f"vjpgrad explain-torch: error: {_named(script)} is a folder, not a script", file=sys.stderr)
        return 2
    if not script.is_file():
        print(f"vjpgrad explain-torch: error: no such script: {_named(script)}", file=sys.stderr)
        return 2
    if script.suffix.lower() == ".ipynb":  # JSON reads as Python up to its first null: it would run, then fail
        print(
            f"vjpgrad explain-torch: error: {_named(script)} is a Jupyter notebook, not a script: in the notebook, run "
            "its cells inside `with vjpgrad.watch_torch() as w:` and print(w.summary()), or make a script of it "
            f"first (jupyter nbconvert --to script {_typed(script.name)})",
            file=sys.stderr,
        )
        return 2
    try:  # as Python does before it runs a line: a syntax error is shown alone, and nothing runs
        compile(script.read_bytes(), str(script), "exec", dont_inherit=True)
    except SyntaxError as error:
        print("".join(traceback.format_exception_only(type(error), error)), end="", file=sys.stderr)
        return 1
    shown = None if arguments.html is None else Path(arguments.html)  # as given, in what is printed
    folder = None if shown is None else shown.absolute()  # where the pages go, whatever the script's chdir
    if shown is not None and not _folder_made(shown):
        return 2
    import vjpgrad

    try:
        watch = vjpgrad.watch_torch()
    except ImportError as error:
        print(f"vjpgrad explain-torch: error: {error}", file=sys.stderr)
        return 2
    raised = _run(watch, script, list(arguments.args))
    print(watch.summary())
    if shown is None and any(p.explainer is not None for p in watch.passes):  # a pass a page can step through
        print(f"(to step through each pass, edge by edge: vjpgrad explain-torch {_again(arguments)})")
    if folder is not None and shown is not None:
        try:
            _pages(watch, script, folder, arguments.max_steps, shown)
        except OSError as error:  # the folder went away, a page is read-only, the disk is full
            print(
                f"vjpgrad explain-torch: error: cannot write a page into {_named(shown)}: {_why(error)}",
                file=sys.stderr,
            )
            return 2
    if raised:
        return 1
    return 0 if watch.matches else 2


def _folder_made(folder: Path) -> bool:
    """Make the ``--html`` folder before the script runs, so that a folder that cannot be made is
    one line, not a traceback after the script's whole run; whether it is there now."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        print(f"vjpgrad explain-torch: error: cannot write pages into {_named(folder)}: {_why(error)}", file=sys.stderr)
        return False
    return True


def _named(path: Path | str) -> str:
    """A path as the command's own lines name it: each character that would move the terminal's
    cursor or turn the text written as Python writes it (``\\x1b``, ``text.printable``), one line."""
    return text.printable(str(path))


def _again(arguments: argparse.Namespace) -> str:
    """The command's words that run the script again as it was run (its path as typed, its words)
    and write the pages: ``SCRIPT --html pages``, the script's words after a ``--``; a script whose
    name begins with ``-`` is named after the ``--`` itself."""
    script, theirs = arguments.script, list(arguments.args)
    if script.startswith("-"):
        words = ["--html", "pages", "--", script, *theirs]
    else:
        words = [script, "--html", "pages", *(["--", *theirs] if theirs else [])]
    return " ".join(_typed(word) for word in words)


def _typed(word: str) -> str:
    """``word`` as a learner pastes it into a shell: quoted where a shell would split it, and where
    it holds a character ``_named`` escapes, as bash's ``$'...'`` with those characters' UTF-8
    bytes (``\\xe2\\x80\\xae``): the line stays printable and bash reads the same name back."""
    if os.name != "posix":
        return text.printable(subprocess.list2cmdline([word]))
    if text.printable(word) == word:
        return shlex.quote(word)
    escaped = "".join(
        "".join(f"\\x{byte:02x}" for byte in os.fsencode(c)) if text.printable(c) != c or c in "\\'" else c
        for c in word
    )
    return f"$'{escaped}'"


def _why(error: OSError) -> str:
    """An operating system's error in its own words (``File exists``), without the errno."""
    return error.strerror or str(error)


def _run(watch: object, script: Path, args: list[str]) -> bool:
    """Run ``script`` as ``__main__`` under ``watch``; whether it raised (its traceback printed)."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args]  # as typed, as Python gives it
    path = os.path.abspath(script)  # ``__file__``, as Python 3.9 and later give a script's
    sys.path.insert(0, os.path.dirname(path))
    try:
        with watch:  # type: ignore[attr-defined]
            runpy.run_path(path, run_name="__main__")
    except SystemExit as done:  # as Python ends: a code that is not a number is printed, and is an error
        if done.code is not None and not isinstance(done.code, int):
            print(done.code, file=sys.stderr)
        elif done.code not in (None, 0):  # the command's own status is 1: the script's is said
            print(f"vjpgrad explain-torch: the script exited with status {int(done.code)}", file=sys.stderr)
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


PAGE_MARK = 'class="vjs-root"'
"""What every stepper page holds: a ``pass-N.html`` without it is not one the watch wrote."""
_PAGE_NAME = re.compile(r"pass-(\d+)\.html")


def _pages(watch: object, script: Path, folder: Path, most: int, shown: Path) -> None:
    """One stepper page per replayed pass of at most ``most`` steps: DIR/pass-1.html,
    DIR/pass-2.html..., each saying under its title what the summary says of its pass (each
    leaf's verdict, why one may differ); for any other pass, a line that says why it has none.
    A page an earlier run wrote for a pass this run has no page for is removed, saying so: no
    page looks current that is not. ``folder`` is where they go, ``shown`` the folder as the
    command line gave it, for the lines that name a page."""
    written: set[str] = set()
    for p in watch.passes:  # type: ignore[attr-defined]
        if p.explanation is None:
            why = (
                f"it was not replayed: {p.reason}"
                if not p.replayed
                else "its outputs hold no element to start a pass from (an empty tensor)"
            )
            print(f"no page for pass {p.number}: {why}")
            continue
        steps = len(p.explanation.steps)
        if steps > most:
            print(
                f"no page for pass {p.number}: its {steps:,} steps are more than a page holds ({most:,}, "
                "--max-steps); the same code on a smaller input (a batch of two, a shorter sequence) makes a pass "
                "you can step through"
            )
            continue
        title = f"{script.name}, pass {p.number}: backward at line {p.location.rpartition(':')[2]}"
        if p.pytorch_error is not None:  # case 3 of the Stack Overflow answer: said first, on the page
            title += f"; PyTorch refused it ({p.pytorch_error}), replayed {p.ran_as}"
        path = folder / f"pass-{p.number}.html"
        notes = [line.strip() for line in p.summary().splitlines()[1:]]
        if watch.uncompiled is not None:  # type: ignore[attr-defined]  # a torch.compile'd function ran eagerly
            from vjpgrad.bridge.watch import UNCOMPILED  # torch is there: it ran the script

            notes.append(UNCOMPILED.format(watch.uncompiled))  # type: ignore[attr-defined]
        path.write_text(p.explanation.to_html(title, notes), encoding="utf-8")
        written.add(path.name)
        print(f"wrote {_named(shown / path.name)}")
    for old in sorted(folder.iterdir()):
        if _PAGE_NAME.fullmatch(old.name) and old.name not in written and _is_a_page(old):
            old.unlink()
            print(f"removed {_named(shown / old.name)}, a page an earlier run wrote (this run has none for that pass)")


def _is_a_page(path: Path) -> bool:
    """Whether ``path`` is a stepper page (``PAGE_MARK``), not a file of the learner's."""
    try:
        return path.is_file() and PAGE_MARK in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
