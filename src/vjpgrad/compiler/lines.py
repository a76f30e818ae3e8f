"""Generated code's text, shown in tracebacks for as long as the code lives.

Code that ``exec`` runs has no file: a traceback through it shows its lines only where
``linecache`` holds its text under the code's file name. ``show`` puts the text there;
``forget_with`` lets it go once every function made from code of that name is collected (a guard
or a pass dropped with its recording, by ``reset()``, by a newer recording, or with the compiled
function): without it, each recording's text stayed for good, 300 recordings of a small MLP
holding 50 MB. Two recordings of one structure share their code's file name (the compiled-code
cache's key, whose text is the same): the text stays while either lives.

A recording is often freed by the cyclic collector, at an allocation anywhere, in any thread, so
a finalizer here only notes the name (``list.append``, atomic: no lock a finalizer could wait on).
The names noted are settled by the next ``show`` or ``forget_with``, under a lock, and a text let
go is emptied, not deleted: ``linecache.checkcache()`` in another thread (IPython after each cell,
pdb, traceback) lists the names, then reads each, and raised ``KeyError`` on a name deleted in
between. An emptied entry is a few bytes.
"""

from __future__ import annotations

import linecache
import threading
import weakref
from collections.abc import Callable
from typing import Any

_gone: list[str] = []
"""File names whose functions a finalizer saw collected, one entry each, not settled yet."""
_live: dict[str, int] = {}
"""For each file name whose text ``show`` holds: how many functions made from its code live."""
_lock = threading.Lock()


def show(filename: str, source: str) -> None:
    """Hold ``source`` as the text of the code compiled under ``filename``."""
    with _lock:
        _settle()
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def forget_with(function: Callable[..., Any]) -> None:
    """Let the text ``show`` holds for ``function``'s code go once ``function``, and every other
    function made from code of its file name, is collected."""
    filename = function.__code__.co_filename
    with _lock:
        _settle()
        if filename not in linecache.cache:  # no text shown in this process (code the disk cache held)
            return
        _live[filename] = _live.get(filename, 0) + 1
    weakref.finalize(function, _gone.append, filename)


def _settle() -> None:
    """Count off the functions collected since the last call (under ``_lock``), emptying the text
    of each name none lives for."""
    while _gone:
        filename = _gone.pop()
        count = _live.get(filename, 0) - 1
        if count > 0:
            _live[filename] = count
            continue
        _live.pop(filename, None)
        if filename in linecache.cache:  # emptied, not deleted: another thread may be reading the names
            linecache.cache[filename] = (0, None, [], filename)


__all__ = ["forget_with", "show"]
