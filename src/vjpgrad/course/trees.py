"""Folder trees of a submission, copied and removed walking folders from a list, not by recursion:
a submission (a zip, a repository) can nest folders deeper than Python recurses, and
``shutil.copytree`` and ``shutil.rmtree`` recurse once a folder (``a/a/a/...`` 1,200 deep raised
``RecursionError`` out of ``grade --independent``, nobody graded)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def copied(directory: Path, into: Path) -> None:
    """Copy ``directory`` into ``into`` (made here): its folders and files, each symbolic link as a
    link (never followed), and nothing that is neither (a named pipe, a socket, a device, which
    ``shutil.copytree`` stopped at), as the Gradescope autograder leaves them out of its own. Folders
    are walked from a list, not by recursion: a submission can nest folders deeper than Python
    recurses (``a/a/a/...`` 1,200 deep raised RecursionError out of ``grade --independent``)."""
    into.mkdir(parents=True)
    pending = [Path()]
    while pending:
        relative = pending.pop()
        with os.scandir(directory / relative) as scan:
            entries = list(scan)
        for entry in entries:
            path = relative / entry.name
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), into / path)
            elif entry.is_dir(follow_symlinks=False):
                (into / path).mkdir()
                pending.append(path)
            elif entry.is_file(follow_symlinks=False):
                shutil.copy2(entry.path, into / path, follow_symlinks=False)


def removed(folder: Path) -> None:
    """Remove ``folder`` and everything in it, links as links (never followed), walked from a list:
    a submission's copy can be deeper than Python recurses, and so can ``shutil.rmtree``."""
    folders: list[str] = []
    pending = [os.fspath(folder)]
    while pending:
        here = pending.pop()
        folders.append(here)
        with os.scandir(here) as scan:
            for entry in scan:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                else:
                    os.unlink(entry.path)
    for here in reversed(folders):  # each after every folder inside it
        os.rmdir(here)


__all__ = ["copied", "removed"]
