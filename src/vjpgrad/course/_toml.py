"""Reading and writing the course's TOML files (``course.toml``, ``exercises.toml``).

Reading is the standard library's ``tomllib`` on Python 3.11+, and on Python 3.10 the ``tomli``
package it was taken from (the ``course`` and ``test`` extras install it; it is imported only
when a course file is read, so ``import vjpgrad`` needs nothing). Writing is one string: the
course writes only ``course.toml``'s two settings, so ``string`` quotes a value and ``init``
writes the lines itself.
"""

from __future__ import annotations

import sys
from typing import Any

INSTALL = (
    "reading the course's TOML files on Python 3.10 needs tomli: pip install tomli "
    "(or pip install -e '.[course]' in your clone of vjpgrad)"
)


class TOMLError(ValueError):
    """A course file that is not TOML, or no TOML reader to read it with (Python 3.10 without tomli)."""


def loads(text: str) -> dict[str, Any]:
    """The document ``text`` as a dict; ``TOMLError`` with the reader's message (it names the line)."""
    reader = _reader()
    try:
        document: dict[str, Any] = reader.loads(text)
    except reader.TOMLDecodeError as error:
        raise TOMLError(str(error)) from None
    return document


def _reader() -> Any:
    """The TOML reader of this Python: ``tomllib`` (3.11+) or ``tomli``."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    return tomli()


def tomli() -> Any:
    """The ``tomli`` package, or ``TOMLError`` saying how to install it."""
    try:
        import tomli
    except ImportError:
        raise TOMLError(INSTALL) from None
    return tomli


def string(value: str) -> str:
    """``value`` as a TOML basic string: quoted, with backslashes, quotes and control characters escaped."""
    out = []
    for char in value:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
