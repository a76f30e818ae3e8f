"""A persistent cache of the code ``vjpgrad.compile`` generates: made once per machine, not once
per process.

**What is cached.** For each recorded structure, the compiled code objects of its forward and
reverse passes and the small metadata the compiler needs to use them (any value ``marshal``
can write: code, tuples, lists, dicts, strings, numbers), among them the table of the blocks
the code writes once (``compiler.fold``), so that a reverse pass written later in the
process folds the same blocks as the loaded forward pass; a table that is not a list of blocks
inside the recording is refused like any payload of another shape, and the code written anew.
Not cached: the recording itself (each process still records, as that is how it learns the
structure), and the namespace the code runs in (the compiler builds it again: ``_div``, the
helpers of custom operations). The
caller's description of the structure must determine the generated code completely (every
operation, how the operations connect, every constant as the code writes it, the numbering
of the helpers the code calls by name): any recording with the same description gets the
same entry.

**Where.** ``$VJPGRAD_CACHE_DIR`` if set; otherwise the platform's user cache directory:
``$XDG_CACHE_HOME/vjpgrad`` or ``~/.cache/vjpgrad`` on Linux and other POSIX systems,
``~/Library/Caches/vjpgrad`` on macOS, ``%LOCALAPPDATA%\\vjpgrad\\Cache`` on Windows.
``VJPGRAD_CACHE=0`` (or ``false``, ``no``, ``off``) turns the cache off; ``1``, ``true``,
``yes``, ``on`` or unset leave it on; any other value is an error that names the variable.
Both are read at each use. One file per entry, named by its key.

**Why it is safe to run what it holds.** Nothing is trusted that a fresh compile would not
produce:

- the key is a SHA-256 of everything the code is generated from: the structure the compiler
  describes (its operations, how they connect, their constants), the Python implementation,
  version, bytecode magic number and optimisation level, vjpgrad's version and a fingerprint
  of vjpgrad's own source files (so an edited checkout never reads code an older one wrote),
  and this format's version. A different structure, Python or vjpgrad is a different key;
- each file carries a header with a magic string, the format version, its full key, the
  payload's length and the payload's SHA-256; a truncated, corrupt, foreign or stale file, or
  a file of another structure under this one's name, fails a check and is ignored (the
  caller then compiles afresh and writes the entry again), never a crash, never other code;
- the directory is the user's own: it is created readable by its user only (0o700), entries
  are written 0o600, and on POSIX systems a directory or file that another user owns, or
  that others may write to, is not used at all (whoever can write there could otherwise
  choose the code that runs);
- writes are atomic: a temporary file in the same directory, then ``os.replace``; processes
  that write one entry at once each replace it with a whole, valid file. There is no
  ``fsync``: after a power cut an entry can at worst be short or garbled, which its checks
  catch.

A cache that cannot be used (no home directory, a read-only or full disk, an unsafe
directory) is skipped silently: ``compile`` works as without it, and ``info()`` says why. No
warning is issued, because the cache only saves time, the user often cannot change the
cause (a read-only home in a container or CI), and a warning would be raised as an error
under ``-W error`` (as in this project's own tests), turning a slower first call into a
failure.

**How big.** At most ``$VJPGRAD_CACHE_MAX_MB`` megabytes (default 1,000, ``inf`` for no limit; a GPT step's code
is about 6 MB, a small function's a few KB): storing past it removes the entries used longest
ago (a hit marks an entry used) until the cache holds three quarters of it.

**How to clear it.** ``vjpgrad cache --clear`` on the command line, ``clear()`` here (both
remove the entries and the temporary files of killed processes), or delete the directory that
``vjpgrad cache`` and ``info().directory`` name; nothing else is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import marshal
import math
import os
import stat
import struct
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vjpgrad._version import __version__

FORMAT = 3
"""The version of this file format and key; a change makes every earlier entry a miss (2: the
payload carries the table of the blocks its code writes as loops; 3: each block of the table
is its length and where each copy starts, copies back to back or apart)."""
MAGIC = b"vjpgradC"
SUFFIX = ".vjpc"
_TEMPORARY_PREFIX = ".tmp-"
DEFAULT_LIMIT = 1_000_000_000  # bytes: a GPT step's code is about 6 MB, a small function's a few KB
_HEADER = struct.Struct(">8sH32sQ32s")  # magic, format, key, payload length, payload SHA-256
_OFF = frozenset({"0", "false", "no", "off"})
_ON = frozenset({"", "1", "true", "yes", "on"})
_POSIX = os.name == "posix"

_write_problem: str | None = None  # why the last write failed (a full disk shows only then), for info()


@dataclass(frozen=True)
class CacheInfo:
    """Where the cache is and what it holds (for docs and a ``vjpgrad cache`` command)."""

    enabled: bool  # VJPGRAD_CACHE is not off
    directory: Path | None  # None when the cache is off or no directory can be named
    entries: int
    size: int  # bytes of the entries
    problem: str | None  # why the cache is skipped, if it is


# ---- where ---------------------------------------------------------------------------------------


def enabled() -> bool:
    """Whether ``VJPGRAD_CACHE`` leaves the cache on (read now)."""
    value = os.environ.get("VJPGRAD_CACHE", "").strip().lower()
    if value in _OFF:
        return False
    if value in _ON:
        return True
    raise ValueError(
        f"VJPGRAD_CACHE={os.environ['VJPGRAD_CACHE']!r} is not understood: use 0, false, no or off to turn "
        "the compiled-code cache off, 1, true, yes or on (or leave it unset) to keep it on"
    )


def default_directory(platform: str, environ: Mapping[str, str], home: str | None) -> Path | None:
    """The user cache directory of ``platform`` (a ``sys.platform`` value), or None if there is
    no home to put it in. ``$VJPGRAD_CACHE_DIR`` is not looked at here (see ``directory``)."""
    if platform == "win32":
        local = environ.get("LOCALAPPDATA") or (home and os.path.join(home, "AppData", "Local"))
        return Path(local, "vjpgrad", "Cache") if local else None
    if platform == "darwin":
        return Path(home, "Library", "Caches", "vjpgrad") if home else None
    xdg = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):  # the XDG specification: a relative path is to be ignored
        return Path(xdg, "vjpgrad")
    return Path(home, ".cache", "vjpgrad") if home else None


def directory() -> Path | None:
    """The cache directory now: ``$VJPGRAD_CACHE_DIR``, else the platform's; None if the cache
    is off or there is no home directory."""
    if not enabled():
        return None
    chosen = os.environ.get("VJPGRAD_CACHE_DIR", "")
    if chosen:
        return Path(os.path.abspath(os.path.expanduser(chosen)))
    home = os.path.expanduser("~")
    return default_directory(sys.platform, os.environ, None if home == "~" else home)


# ---- the key -------------------------------------------------------------------------------------


def _source_fingerprint(root: str) -> bytes:
    """A SHA-256 of the relative path and the contents of each ``.py`` file under ``root``: any
    edit, checkout or reinstall of vjpgrad that changes its code changes it (copies that keep
    sizes and times, ``rsync -a`` or ``tar``, included)."""
    digest = hashlib.sha256()
    for folder, subfolders, files in os.walk(root):
        subfolders.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, "rb") as file:
                    contents = file.read()
                digest.update(f"{os.path.relpath(path, root)}\0{len(contents)}\0".encode())
                digest.update(contents)
    return digest.digest()


# read at import (about 2 ms), as the code that runs is read: a source edited later, while this
# process runs the code it imported before, must not key the code this process writes
_SOURCE = _source_fingerprint(str(Path(os.path.abspath(__file__)).parents[__name__.count(".") - 1]))


def _source() -> bytes:
    """The fingerprint of the whole package, wherever in it this module sits, as it was imported."""
    return _SOURCE


def key(structure: bytes) -> str:
    """The key of the code generated from ``structure`` (the compiler's description of a
    recording) by this Python and this vjpgrad: 64 hexadecimal digits."""
    if not isinstance(structure, (bytes, bytearray, memoryview)):
        raise TypeError(f"the structure is described in bytes, got {type(structure).__name__}")
    parts = [
        b"vjpgrad compiled code",
        str(FORMAT).encode(),
        sys.implementation.name.encode(),
        sys.version.encode(),
        importlib.util.MAGIC_NUMBER,
        str(sys.flags.optimize).encode(),
        __version__.encode(),
        _source(),
        bytes(structure),
    ]
    digest = hashlib.sha256()
    for part in parts:  # each with its length, so no two lists of parts run together alike
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def _digest(key: str) -> bytes:
    if not isinstance(key, str) or len(key) != 64 or not all(c in "0123456789abcdef" for c in key):
        raise ValueError(f"a cache key is 64 lowercase hexadecimal digits from key(), got {key!r}")
    return bytes.fromhex(key)


# ---- the directory, checked ----------------------------------------------------------------------


def _unsafe(folder: Path, create: bool) -> str | None:
    """Why ``folder`` cannot hold the cache, or None: it exists (made now, 0o700, if ``create``),
    is a directory, and on POSIX systems its user owns it and nobody else may write to it."""
    try:
        if create:
            os.makedirs(folder, mode=0o700, exist_ok=True)  # the mode, less the umask, only ever narrower
        status = os.stat(folder)
    except OSError as error:
        return f"the cache directory {folder} cannot be {'made' if create else 'read'}: {error}"
    if not stat.S_ISDIR(status.st_mode):
        return f"the cache directory {folder} is not a directory"
    if _POSIX and (status.st_uid != os.getuid() or status.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        return f"the cache directory {folder} is not used: another user owns it or may write to it"
    return None


# ---- entries -------------------------------------------------------------------------------------


def load(key: str) -> Any | None:
    """The payload stored under ``key``, or None: no entry, the cache off or unusable, or an
    entry that fails a check (truncated, corrupt, foreign, stale, another key's)."""
    digest = _digest(key)
    folder = directory()
    if folder is None or _unsafe(folder, create=False) is not None:
        return None
    try:
        # opened without blocking (a named pipe in its place must not hang the compile), then
        # checked to be a regular file of this user's that no one else may write
        descriptor = os.open(folder / f"{key}{SUFFIX}", os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(descriptor, "rb") as file:
            status = os.fstat(file.fileno())
            if not stat.S_ISREG(status.st_mode):
                return None
            if _POSIX and (status.st_uid != os.getuid() or status.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
                return None
            header = file.read(_HEADER.size)
            if len(header) != _HEADER.size:
                return None
            magic, version, stored_key, length, checksum = _HEADER.unpack(header)
            if magic != MAGIC or version != FORMAT or stored_key != digest or length != status.st_size - _HEADER.size:
                return None
            payload = file.read(length)
    except OSError:
        return None
    if len(payload) != length or hashlib.sha256(payload).digest() != checksum:
        return None
    with contextlib.suppress(OSError):  # used now: the last to go when the cache is trimmed
        os.utime(folder / f"{key}{SUFFIX}")
    try:
        return marshal.loads(payload)
    except (EOFError, ValueError, TypeError):  # cannot happen past the checksum, short of a bug
        return None


def store(key: str, payload: Any) -> bool:
    """Write ``payload`` (anything ``marshal`` writes) under ``key``, atomically; True if it was
    written, False if the cache is off or unusable (skipped: ``info().problem`` says why)."""
    global _write_problem
    digest = _digest(key)
    data = marshal.dumps(payload)  # a ValueError for what marshal cannot write, before any file is touched
    most = limit()  # and one for a VJPGRAD_CACHE_MAX_MB that is not a size
    folder = directory()
    if folder is None:
        return False
    problem = _unsafe(folder, create=True)
    if problem is not None:
        _write_problem = problem
        return False
    header = _HEADER.pack(MAGIC, FORMAT, digest, len(data), hashlib.sha256(data).digest())
    temporary = None
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=_TEMPORARY_PREFIX, suffix=SUFFIX, dir=folder)  # 0o600
        with os.fdopen(descriptor, "wb") as file:
            file.write(header)
            file.write(data)
        os.replace(temporary, folder / f"{key}{SUFFIX}")
        _trim(folder, most)
    except OSError as error:
        _write_problem = f"the cache directory {folder} cannot be written: {error}"
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        return False
    _write_problem = None
    return True


def limit() -> int:
    """The most bytes the entries may take (``$VJPGRAD_CACHE_MAX_MB``, default 1,000 MB; ``inf``
    for no limit): storing past it removes the entries used longest ago, down to three quarters
    of it."""
    text = os.environ.get("VJPGRAD_CACHE_MAX_MB", "").strip()
    if not text:
        return DEFAULT_LIMIT
    try:
        megabytes = float(text)
    except ValueError:
        raise ValueError(f"VJPGRAD_CACHE_MAX_MB must be a number of megabytes, got {text!r}") from None
    if megabytes == math.inf:  # inf: no limit
        return sys.maxsize
    if not megabytes > 0:
        raise ValueError(
            f"VJPGRAD_CACHE_MAX_MB must be more than 0 (VJPGRAD_CACHE=0 turns the cache off), got {text!r}"
        )
    return int(megabytes * 1_000_000)


def _trim(folder: Path, most: int) -> None:
    """Remove the entries used longest ago while the cache holds more than ``most`` bytes."""
    entries = []
    for entry in _files(folder):
        if not entry.name.startswith(_TEMPORARY_PREFIX):
            with contextlib.suppress(OSError):
                status = entry.stat(follow_symlinks=False)
                entries.append((status.st_mtime_ns, status.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    if total <= most:
        return
    for _, size, path in sorted(entries):  # the oldest use first
        if total <= most * 3 // 4:
            break
        with contextlib.suppress(OSError):
            os.unlink(path)
            total -= size


def load_or_build(key: str, build: Callable[[], Any]) -> Any:
    """The payload under ``key``; on a miss (or a damaged entry) ``build()``'s, stored for next time."""
    payload = load(key)
    if payload is None:
        payload = build()
        store(key, payload)
    return payload


def _files(folder: Path) -> list[os.DirEntry[str]]:
    """The entries and leftover temporary files of the cache in ``folder`` (nothing else there)."""
    try:
        with os.scandir(folder) as scan:
            return [entry for entry in scan if entry.name.endswith(SUFFIX) and entry.is_file(follow_symlinks=False)]
    except OSError:
        return []


def clear() -> int:
    """Remove every entry (and temporary file) of the cache; returns how many files went. Other
    files in the directory are left alone."""
    folder = directory()
    if folder is None:
        return 0
    removed = 0
    for entry in _files(folder):
        try:
            os.unlink(entry.path)
            removed += 1
        except OSError:
            pass
    return removed


def info() -> CacheInfo:
    """The cache's state now: on or off, its directory, its entries and their size, and why it
    is skipped if it is."""
    if not enabled():
        return CacheInfo(False, None, 0, 0, "turned off by VJPGRAD_CACHE")
    folder = directory()
    if folder is None:
        return CacheInfo(True, None, 0, 0, "no home directory to keep a cache in (set VJPGRAD_CACHE_DIR)")
    if not folder.exists():
        return CacheInfo(True, folder, 0, 0, _write_problem)
    entries = [entry for entry in _files(folder) if not entry.name.startswith(_TEMPORARY_PREFIX)]
    size = 0
    for entry in entries:
        with contextlib.suppress(OSError):
            size += entry.stat(follow_symlinks=False).st_size
    return CacheInfo(True, folder, len(entries), size, _unsafe(folder, create=False) or _write_problem)
