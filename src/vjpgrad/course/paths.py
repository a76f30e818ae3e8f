"""Where Python finds a student's modules: their folder goes on ``sys.path`` just after the standard
library's folders, so that their ``engine.py`` is found before an installed package named
``engine``, never their ``json.py`` before the standard library's ``json``. What the grader runs
(``after_the_standard_library``) and what its remarks read (``in_the_standard_library``: a module
the student's code imports that is not their file) follow this one rule."""

from __future__ import annotations

import functools
import importlib.machinery
import os
import sys
import sysconfig


@functools.lru_cache(maxsize=1)
def _standard_roots() -> frozenset[str]:
    """The standard library's folders, as ``sysconfig`` names them (read once)."""
    return frozenset(os.path.normcase(os.path.realpath(sysconfig.get_path(key))) for key in ("stdlib", "platstdlib"))


def standard(entry: str) -> bool:
    """Whether the ``sys.path`` entry ``entry`` is one of the standard library's folders (or its zip),
    installed packages left out even where they lie inside the standard library's folder."""
    stdlib = _standard_roots()
    real = os.path.normcase(os.path.realpath(entry or "."))
    if "site-packages" in real or "dist-packages" in real:
        return False
    return real in stdlib or any(real.startswith(root + os.sep) for root in stdlib) or entry.endswith(".zip")


def after_the_standard_library(path: list[str], directory: str) -> None:
    """Put ``directory`` into ``path`` (``sys.path``) just after the standard library's folders."""
    last = max((k for k, entry in enumerate(path) if standard(entry)), default=-1)
    path.insert(last + 1, directory)


def in_the_standard_library(dotted: str) -> bool:
    """Whether ``import dotted`` finds its top-level module in this interpreter (built in) or in the
    standard library's folders on ``sys.path``: then a student's file of that name is never what
    their code imports. Each name is looked up once for a ``sys.path`` (a file of 10,000 imports
    is read in a moment)."""
    top = dotted.partition(".")[0]
    if not top.isidentifier():
        return False
    return _found(top, tuple(sys.path))


@functools.lru_cache(maxsize=4096)
def _found(top: str, path: tuple[str, ...]) -> bool:
    if top in sys.builtin_module_names:
        return True
    try:
        return importlib.machinery.PathFinder.find_spec(top, list(_standard_folders(path))) is not None
    except (ImportError, ValueError, OSError):  # a name no finder takes is no module of the standard library's
        return False


@functools.lru_cache(maxsize=8)
def _standard_folders(path: tuple[str, ...]) -> tuple[str, ...]:
    """The entries of ``path`` (``sys.path``) that are the standard library's."""
    return tuple(entry for entry in path if standard(entry))
