"""Generated code's text, shown in tracebacks for as long as the code lives.

Code that ``exec`` runs has no file: a traceback through it shows its lines only where
``linecache`` holds its text under the code's file name. ``show`` puts the text there, and
``forget_with`` takes it away once the function made from it is collected (a guard or a pass
dropped with its recording, by ``reset()``, by a newer recording, or with the compiled
function): without it, each recording's text stayed for good, 300 recordings of a small MLP
holding 50 MB. A name shared by two pieces of code (the same structure compiled twice, named by
its key in the compiled-code cache) shows the latest text, which is forgotten only with the code
that put it there.
"""

from __future__ import annotations

import linecache
import weakref
from collections.abc import Callable
from typing import Any


def show(filename: str, source: str) -> None:
    """Hold ``source`` as the text of the code compiled under ``filename``."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def forget_with(function: Callable[..., Any]) -> None:
    """Forget the text ``show`` holds for ``function``'s code once ``function`` is collected."""
    filename = function.__code__.co_filename
    entry = linecache.cache.get(filename)
    if entry is not None:
        weakref.finalize(function, _forget, filename, entry)


def _forget(filename: str, entry: Any) -> None:
    if linecache.cache.get(filename) is entry:  # not text that code made since has put there
        del linecache.cache[filename]


__all__ = ["forget_with", "show"]
