"""``vjpgrad course autograder``: a Gradescope autograder bundle, and the program it runs.

``bundle`` writes the zip a teacher uploads to Gradescope: ``setup.sh`` (run once, as root, when
Gradescope builds the image: a virtual environment with vjpgrad's wheel, pytest and hypothesis,
and an unprivileged user ``student``), ``run_autograder`` (run for each submission), vjpgrad's
wheel (built from its source tree when vjpgrad is installed from one, as an editable install is),
and the teacher's exercises directory with its held-out checks under ``exercises/``.

``main`` is what ``run_autograder`` runs: it copies the submission (``/autograder/submission``)
into a directory of its own (its symbolic links left out, and named in the output: copied as root,
a link would hand the student's code a file only root may read), grades every exercise there as
``gradebook.grade`` does, and writes
``/autograder/results/results.json``. Given ``--user``, each process where the student's code
runs drops to that user before it imports anything of theirs (``grading.RUN_AS``), while the
checks' processes, which decide, stay root's: the student's code cannot read ``/autograder/source``
(the teacher's files and held-out checks, kept to root by ``setup.sh``), write the results or its
own copied files (root's, which that user may only read), nor signal, trace or read the memory
of the processes that grade it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vjpgrad.course.trees import removed

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image.
set -euo pipefail
cd /autograder/source
if ! command -v python3 >/dev/null; then apt-get update && apt-get install -y python3 python3-venv; fi
python3 -m venv /autograder/venv
/autograder/venv/bin/python -m pip install --upgrade pip
/autograder/venv/bin/python -m pip install wheels/*.whl pytest hypothesis
id -u student >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin student
chmod -R go-rwx /autograder/source  # the teacher's files: root's alone
# vjpgrad's reference solutions, installed: root's alone too (the student's code runs as student)
course="$(/autograder/venv/bin/python -c 'import os, vjpgrad.course as c; print(os.path.dirname(c.__file__))')"
chmod -R go-rwx "$course/solutions"
"""

RUN = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission: the results go to /autograder/results/results.json.
set -euo pipefail
# from /autograder, Python isolated (-I): a vjpgrad/ in the folder this runs from is never imported as root
cd /autograder
exec /autograder/venv/bin/python -I -m vjpgrad.course.autograder \\
    --submission /autograder/submission --results /autograder/results/results.json \\
    {exercises}--user student
"""


class BundleError(Exception):
    """The bundle cannot be made: the message says why and what to do."""


def source_tree() -> Path | None:
    """The source tree vjpgrad is installed from (its pyproject.toml), if it is (an editable install)."""
    package = Path(__file__).resolve().parent.parent
    for root in (package.parent, package.parent.parent):
        if (root / "pyproject.toml").is_file() and (root / "src" / "vjpgrad").resolve() == package:
            return root
    return None


WHEEL_FILES = ("pyproject.toml", "README.md", "LICENSE")
"""What vjpgrad's wheel is made of beside ``src/`` (pyproject.toml names the readme and the license)."""


def wheel(into: Path) -> Path:
    """vjpgrad's wheel, built into ``into`` from the source tree vjpgrad is installed from: from a
    copy of what the wheel is made of (``WHEEL_FILES`` and ``src/``), so that the build writes nothing
    into the clone (setuptools' ``build`` folder and egg-info, a copy of the reference solutions in
    them) and two bundles built at once from one clone do not race on its ``build`` folder."""
    root = source_tree()
    if root is None:
        raise BundleError(
            "vjpgrad is not installed from a source tree: install it with pip install -e <clone> "
            "to bundle it (its wheel is built from the clone)"
        )
    with tempfile.TemporaryDirectory(prefix="vjpgrad-wheel-") as scratch:
        copy = Path(scratch) / "vjpgrad"
        copy.mkdir()
        for name in WHEEL_FILES:
            shutil.copy2(root / name, copy / name)
        shutil.copytree(root / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(into), str(copy)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    built = sorted(into.glob("vjpgrad-*.whl"))
    if done.returncode != 0 or not built:
        raise BundleError(f"building vjpgrad's wheel failed: {(done.stderr or done.stdout).strip()[-500:]}")
    return built[-1]


def bundle(out: Path, exercises: Path | None) -> list[str]:
    """Write the Gradescope bundle ``out`` (a zip); returns the names it holds."""
    with tempfile.TemporaryDirectory(prefix="vjpgrad-autograder-") as scratch:
        built = wheel(Path(scratch))
        names: list[str] = []
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, text in (
                ("setup.sh", SETUP),
                (
                    "run_autograder",
                    RUN.format(exercises="--exercises /autograder/source/exercises " if exercises else ""),
                ),
            ):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16  # executable
                archive.writestr(info, text)
                names.append(name)
            archive.write(built, f"wheels/{built.name}")
            names.append(f"wheels/{built.name}")
            if exercises is not None:
                for path in sorted(exercises.rglob("*")):
                    if path.is_file() and "__pycache__" not in path.parts:
                        name = f"exercises/{path.relative_to(exercises).as_posix()}"
                        archive.write(path, name)
                        names.append(name)
    return names


LINKS = "not copied (symbolic links, and what is neither a file nor a folder, are not graded)"
"""What the output says of the links (and named pipes, sockets, devices) a submission held, before
naming them."""


def copy_without_links(submission: Path, into: Path, shared: bool = False) -> list[str]:
    """Copy ``submission`` into ``into`` (made here), leaving out every symbolic link and whatever is
    neither a file nor a folder (a named pipe, whose reading would wait for ever; a socket; a device);
    returns what it left out (paths inside the submission, sorted). The autograder runs as root: a
    link copied as the file it points to would hand the student's code a file only root may read
    (``/autograder/source``: the teacher's solutions, the held-out checks). ``shared``: every folder
    of the copy made 0o755 and every file 0o644, root's still, for another user to read and not write
    (``--user``). Folders are walked from a list, not by recursion: a zip can hold folders nested
    deeper than Python recurses."""
    left: list[str] = []
    into.mkdir(parents=True)
    if shared:
        os.chmod(into, 0o755)
    pending = [Path()]
    while pending:
        relative = pending.pop()
        with os.scandir(submission / relative) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
        for entry in entries:
            path = relative / entry.name
            if entry.is_symlink():
                left.append(path.as_posix())
                continue
            if entry.is_dir(follow_symlinks=False):
                (into / path).mkdir()
                pending.append(path)
            elif entry.is_file(follow_symlinks=False):
                shutil.copy2(entry.path, into / path, follow_symlinks=False)
            else:
                left.append(path.as_posix())
                continue
            if shared:
                os.chmod(into / path, 0o755 if entry.is_dir(follow_symlinks=False) else 0o644)
    return sorted(left)


NESTED = "graded the one folder of the submission that holds the course's files"
"""What the output says when the submission's files were in a folder of it (a zip of the course's
folder), before naming the folder."""


def graded_folder(submission: Path, files: Sequence[str]) -> Path:
    """The folder of ``submission`` to grade: itself when any of the student's ``files`` is at its
    top; else its one folder that holds some of them (a zip of the course's folder, which Gradescope
    unzips into a folder; macOS's ``__MACOSX`` and hidden folders aside); else itself."""
    if any((submission / name).is_file() for name in files):
        return submission
    folders = [
        path for path in sorted(submission.iterdir())
        if path.is_dir() and not path.is_symlink() and not path.name.startswith((".", "__MACOSX"))
    ]  # fmt: skip
    holding = [path for path in folders if any((path / name).is_file() for name in files)]
    return holding[0] if len(holding) == 1 else submission


def _user(name: str) -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


def main(argv: Sequence[str] | None = None) -> int:
    """Grade one Gradescope submission into its results.json: always written, a zero that says why
    where the grading itself failed."""
    from vjpgrad.course import grading
    from vjpgrad.course.exercises import course

    parser = argparse.ArgumentParser(prog="python -m vjpgrad.course.autograder")
    parser.add_argument("--submission", required=True, type=Path)
    parser.add_argument("--results", required=True, type=Path)
    parser.add_argument("--exercises", type=Path, default=None)
    parser.add_argument("--user", default=None, help="run the checks as this user (needs root)")
    parser.add_argument("--timeout", type=float, default=grading.TIMEOUT)
    args = parser.parse_args(argv)
    if not 0 < args.timeout <= grading.TIMEOUT_LIMIT:  # nan too
        limit = grading.TIMEOUT_LIMIT
        parser.error(f"--timeout must be more than 0 and at most {limit:g} seconds, got {args.timeout:g}")
    of = course(args.exercises)
    try:
        report = _graded(args, of)
    except Exception as error:  # a zero that says why, rather than no results.json (and no grade) at all
        traceback.print_exc()  # the teacher reads it in the autograder's log
        report = {"score": 0.0, "output": f"{UNGRADED}{type(error).__name__}: {error}", "tests": []}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


UNGRADED = (
    "This submission could not be graded: the autograder met an error it did not foresee (your teacher "
    "can read it in the autograder's log). "
)
"""What results.json says where the grading itself failed, before the error's type and message."""


def _graded(args: argparse.Namespace, of: Any) -> dict[str, Any]:
    """The results.json of the submission ``args`` names, graded in a copy of it."""
    from vjpgrad.course import gradebook, grading

    # what cleaning up leaves (a folder the student's code made unreadable) never costs the grade
    with tempfile.TemporaryDirectory(prefix="vjpgrad-submission-", ignore_cleanup_errors=True) as scratch:
        directory = Path(scratch) / "submission"
        links = copy_without_links(args.submission, directory, shared=args.user is not None)
        before = grading.RUN_AS[0]
        try:  # the process is left as it was found: main can be called in a process that grades on
            if args.user is not None:
                grading.RUN_AS[0] = _user(args.user)
                os.chmod(scratch, 0o755)  # the copy is root's: the user reads it, and writes none
            graded_here = graded_folder(directory, list(of.student_files()))
            expected = list(of.student_files())
            none_handed_in = not any((graded_here / name).is_file() for name in expected)
            graded = gradebook.grade([graded_here], of, args.timeout, more_time=grading.AUTOGRADER)
        finally:
            grading.RUN_AS[0] = before
            with contextlib.suppress(OSError):  # left to TemporaryDirectory, which makes what it can writable
                removed(directory)  # first: TemporaryDirectory's rmtree recurses (Python 3.10 to 3.12)
        report: dict[str, Any] = gradebook.results_json(graded[graded_here.name], of)
    if links:
        report["output"] += f"\n\n{LINKS}: {', '.join(links)}"
    if graded_here != directory:
        report["output"] += f"\n\n{NESTED}: {graded_here.relative_to(directory).as_posix()}"
    if none_handed_in:  # read before the copy went away with its folder
        report["output"] += f"\n\n{NONE_HANDED_IN} ({', '.join(expected)})"
    return report


NONE_HANDED_IN = "none of the course's files is in the submission: hand in the files of your course folder"
"""What the output says when the submission holds none of the files the exercises grade."""


if __name__ == "__main__":
    raise SystemExit(main())
