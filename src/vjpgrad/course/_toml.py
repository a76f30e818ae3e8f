"""Reading the course's TOML files (``course.toml``, ``exercises.toml``) on every supported Python.

Python 3.11+ reads them with the standard library's ``tomllib``. Python 3.10 has none, and the
course adds no dependency, so there ``loads`` reads the part of TOML these files use: comments,
``[table]`` and ``[[array of tables]]`` headers, ``key = value`` with bare or quoted keys, and
values that are strings (basic, literal, and the multi-line forms), integers, floats, booleans and
arrays of them. Anything else is a ``ValueError`` that names the line, never a guess.
"""

from __future__ import annotations

import re
import sys
from typing import Any


class TOMLError(ValueError):
    """A course file that is not TOML (or, on Python 3.10, not the part of it the course reads)."""


if sys.version_info >= (3, 11):
    import tomllib

    def loads(text: str) -> dict[str, Any]:
        """The document ``text`` as a dict, read by ``tomllib``."""
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise TOMLError(str(error)) from None

else:

    def loads(text: str) -> dict[str, Any]:
        """The document ``text`` as a dict, read by ``loads_subset`` (Python 3.10 has no tomllib)."""
        return loads_subset(text)


def loads_subset(text: str) -> dict[str, Any]:
    """The document ``text`` as a dict, read by this module (the part of TOML the module docstring lists)."""
    return _Reader(text).document()


BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
NUMBER = re.compile(r"[+-]?(?:inf|nan|[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?)")
ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _Reader:
    """One pass over the text, position by position."""

    def __init__(self, text: str) -> None:
        self.text = text.replace("\r\n", "\n")
        self.at = 0

    # ---- where we are

    def fail(self, what: str) -> TOMLError:
        line = self.text.count("\n", 0, self.at) + 1
        return TOMLError(f"line {line}: {what}")

    def peek(self, n: int = 1) -> str:
        return self.text[self.at : self.at + n]

    def rest(self) -> str:
        """What is left of this line (at most 20 characters), to show where reading stopped."""
        return self.text[self.at :].split("\n", 1)[0][:20]

    def skip_blank(self, newlines: bool) -> None:
        """Skip spaces (and newlines and comments, when ``newlines``; a comment ends at its line's end)."""
        while self.at < len(self.text):
            char = self.text[self.at]
            if char == "#":
                end = self.text.find("\n", self.at)
                self.at = len(self.text) if end < 0 else end
            elif char in " \t" or (newlines and char == "\n"):
                self.at += 1
            else:
                return

    def end_of_line(self) -> None:
        self.skip_blank(newlines=False)
        if self.at < len(self.text) and self.text[self.at] != "\n":
            raise self.fail(f"unexpected {self.rest()!r} after a value")

    # ---- the document

    def document(self) -> dict[str, Any]:
        root: dict[str, Any] = {}
        table = root
        while True:
            self.skip_blank(newlines=True)
            if self.at >= len(self.text):
                return root
            if self.peek() == "[":
                table = self.header(root)
            else:
                key = self.key()
                if key in table:
                    raise self.fail(f"{key} is defined twice")
                table[key] = self.value()
            self.end_of_line()

    def header(self, root: dict[str, Any]) -> dict[str, Any]:
        array = self.peek(2) == "[["
        self.at += 2 if array else 1
        self.skip_blank(newlines=False)
        name = self.key_name()
        self.skip_blank(newlines=False)
        closing = "]]" if array else "]"
        if self.peek(len(closing)) != closing:
            raise self.fail(f"a table header ends with {closing} (dotted names are not read here)")
        self.at += len(closing)
        table: dict[str, Any] = {}
        if not array:
            if name in root:
                raise self.fail(f"[{name}] is defined twice")
            root[name] = table
            return table
        tables = root.setdefault(name, [])
        if not isinstance(tables, list):
            raise self.fail(f"[[{name}]]: {name} is not an array of tables")
        tables.append(table)
        return table

    def key_name(self) -> str:
        if self.peek() in ('"', "'"):
            return self.string()
        match = BARE_KEY.match(self.text, self.at)
        if match is None:
            raise self.fail(f"expected a key, found {self.rest()!r}")
        self.at = match.end()
        return match.group()

    def key(self) -> str:
        name = self.key_name()
        self.skip_blank(newlines=False)
        if self.peek() != "=":
            raise self.fail(f"expected = after {name} (dotted keys are not read here)")
        self.at += 1
        self.skip_blank(newlines=False)
        return name

    # ---- values

    def value(self) -> Any:
        char = self.peek()
        if char in ('"', "'"):
            return self.string()
        if char == "[":
            return self.array()
        for word, meaning in (("true", True), ("false", False)):
            if self.text.startswith(word, self.at):
                self.at += len(word)
                return meaning
        return self.number()

    def number(self) -> int | float:
        match = NUMBER.match(self.text, self.at)
        if match is None:
            raise self.fail(f"expected a value, found {self.rest()!r}")
        self.at = match.end()
        digits = match.group().replace("_", "")
        if re.fullmatch(r"[+-]?[0-9]+", digits):
            return int(digits)
        return float(digits)

    def array(self) -> list[Any]:
        self.at += 1  # [
        items: list[Any] = []
        while True:
            self.skip_blank(newlines=True)
            if self.peek() == "]":
                self.at += 1
                return items
            items.append(self.value())
            self.skip_blank(newlines=True)
            if self.peek() == ",":
                self.at += 1
            elif self.peek() != "]":
                raise self.fail(f"expected , or ] in an array, found {self.rest()!r}")

    def string(self) -> str:
        quote = self.peek()
        multi = self.peek(3) == quote * 3
        self.at += 3 if multi else 1
        if multi and self.peek() == "\n":
            self.at += 1  # a newline right after the opening quotes is not part of the string
        closing = quote * 3 if multi else quote
        end = self.closing(closing, escapes=quote == '"', one_line=not multi)
        raw = self.text[self.at : end]
        self.at = end + len(closing)
        return _unescape(raw, self.fail) if quote == '"' else raw

    def closing(self, closing: str, escapes: bool, one_line: bool) -> int:
        """Where the string that starts here ends (a backslash escapes the next character in a basic string)."""
        at = self.at
        while at < len(self.text):
            if one_line and self.text[at] == "\n":
                self.at = at
                raise self.fail("a one-line string runs past its line's end")
            if escapes and self.text[at] == "\\":
                at += 2
            elif self.text.startswith(closing, at):
                return at
            else:
                at += 1
        raise self.fail("a string is not closed")


def _unescape(raw: str, fail: Any) -> str:
    """A basic string's text: its escapes read, and a backslash at a line's end joining the lines."""
    out: list[str] = []
    at = 0
    while at < len(raw):
        char = raw[at]
        if char != "\\":
            out.append(char)
            at += 1
            continue
        code = raw[at + 1 : at + 2]
        if code in ESCAPES:
            out.append(ESCAPES[code])
            at += 2
        elif code in ("u", "U"):
            size = 4 if code == "u" else 8
            out.append(chr(int(raw[at + 2 : at + 2 + size], 16)))
            at += 2 + size
        elif raw[at + 1 :].lstrip(" \t").startswith("\n"):
            at = len(raw) - len(raw[at + 1 :].lstrip(" \t\n"))  # a line-ending backslash: join the lines
        else:
            raise fail(f"unknown escape \\{code} in a string")
    return "".join(out)
