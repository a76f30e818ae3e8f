"""What the student's code is refused in the process it runs in, by an audit hook (``install``).

The student's process (``grading.student_process``) runs as the teacher's user unless the autograder's
``--user`` (as the Gradescope bundle runs it) names another: then the kernel keeps nothing of the grader's processes
from it (their ``/proc/PID/mem``, the fork server's socket). ``install`` adds, just before the first of
the student's files is imported, an audit hook (``sys.addaudithook``: it cannot be removed) that
refuses, with a ``PermissionError`` naming what was refused and the course's rule, what no exercise
needs and what reaches outside the student's process: starting a process (``os.fork``,
``subprocess.Popen``...), ``ctypes``, opening a file to write it, anything under ``/proc``, a
folder (a path relative to its descriptor, ``dir_fd``, reaches the event unresolved) or vjpgrad's
reference solutions (wherever a copy of the package lies: ``vjpgrad/course/solutions/``), removing,
renaming and linking files, sockets, ``mmap``, walking the interpreter's objects
(``gc.get_objects``), killing processes and raising the CPU limit. The functions that start a
process or share memory without an audit event (``_posixsubprocess.fork_exec``, ``_posixshmem``,
``os.memfd_create``) are replaced by ones that refuse, and their modules refused a second import.

An audit hook is no sandbox: code that writes its own process's memory (``ctypes`` was loaded before
the hook; ``install`` takes it out of ``sys.modules``, but an object of its reached by a way not closed
here would do) can undo it. It makes the cheats reviewed for this course
fail; the boundary that holds against any code is another user (``--user``). The hook is not
installed where the student's code runs in the checks' own process (``inprocess``: the browser's
Pyodide, ``VJPGRAD_COURSE_IN_PROCESS=1``), which is feedback, not marks.
"""

from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Callable, Sequence
from stat import S_ISDIR
from typing import Any

RULE = (
    "the course runs your code with nothing but the checks' requests: "
    "no other process, file written, socket, /proc or raw memory"
)
"""Why a student's code is refused an event: what every refusal's message ends with."""

REFUSED: dict[str, str] = {
    **dict.fromkeys(
        ("os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile",
         "subprocess.Popen", "pty.spawn"),
        "starting a process",
    ),
    **dict.fromkeys(("os.kill", "os.killpg", "signal.pthread_kill"), "signalling a process"),
    **dict.fromkeys(
        ("os.remove", "os.rename", "os.rmdir", "os.link", "os.symlink", "os.truncate", "os.chmod", "os.chown",
         "os.mkdir", "os.utime", "os.chflags", "os.setxattr", "os.removexattr"),
        "changing files",
    ),
    **dict.fromkeys(("socket.__new__", "socket.bind", "socket.connect", "socket.sendto"), "sockets"),
    "mmap.__new__": "mapping memory (mmap)",
    **dict.fromkeys(("gc.get_objects", "gc.get_referrers", "gc.get_referents"), "walking the interpreter's objects"),
    **dict.fromkeys(("resource.setrlimit", "resource.prlimit"), "changing the process's limits"),
}  # fmt: skip
"""The audit events refused outright, with what each does (every ``ctypes.*`` event too: ``_hook``)."""

MODULES = frozenset((
    "ctypes", "_ctypes", "_posixsubprocess", "_posixshmem", "posix", "_testcapi", "_testinternalcapi",
    "readline", "sqlite3", "_sqlite3", "dbm", "_dbm", "_gdbm", "tkinter", "_tkinter",
    "_xxsubinterpreters", "_xxinterpchannels", "_xxinterpqueues", "_interpreters", "_interpchannels", "_interpqueues",
))  # fmt: skip
"""Modules a student's code may not import (again): each reaches what the hook refuses without an event
(``readline`` reads and writes its history files, ``sqlite3`` and ``dbm`` their databases, unseen;
``tkinter``'s Tcl opens files and sockets and starts processes of its own; a subinterpreter runs code
without this interpreter's audit hooks)."""

UNSEEN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("_posixsubprocess", ("fork_exec",)),
    ("subprocess", ("_fork_exec",)),
    ("_posixshmem", ("shm_open", "shm_unlink")),
    ("posix", ("memfd_create", "mkfifo", "mknod")),
    ("os", ("memfd_create", "mkfifo", "mknod")),
    ("readline", ("read_history_file", "write_history_file", "append_history_file", "read_init_file")),
    ("_sqlite3", ("connect",)),
    ("sqlite3", ("connect",)),
    ("_dbm", ("open",)),
    ("_gdbm", ("open",)),
)
"""The functions that start a process, share memory, or read or write a file without an audit event,
by module: in a module already loaded (another may hold it), each is replaced by one that refuses."""

SOLUTIONS = "reading vjpgrad's reference solutions"
"""What an ``open`` of a file among vjpgrad's reference solutions is refused as: a student's process
needs none of them, and an engine that loads one at run time (its path put together so that no
reading of the file finds it) would earn the marks of the shipped solution."""
KEPT = "reading the teacher's files or another student's, which the student's code needs none of"
"""What an ``open`` under a folder kept from the student (``install``'s ``kept``: the teacher's
exercises and held-out checks; where grading, the folder the submissions lie in) is refused as: a
student's code that read a held-out check could print it where students see it, and one that loaded
another student's file would earn that student's marks."""
SOLUTIONS_REMARK = "loaded vjpgrad's reference solutions at run time (refused)"
"""The teacher's remark on an exercise whose checks met that refusal (``gradebook.grade``)."""
ENGINE = "reading vjpgrad's own code, which this exercise's files may not use"
"""What an ``open`` of vjpgrad's code is refused as where an exercise's files may not use vjpgrad and
it was never loaded (``grading.Fresh``): the installed package's files, and vjpgrad's engine wherever
a copy of it lies (``vjpgrad/__init__.py``, ``vjpgrad/core/``, a ``vjpgrad-*`` wheel or archive)."""
ENGINE_REMARK = "loaded vjpgrad's engine at run time (refused)"
"""The teacher's remark on an exercise whose checks met that refusal (``gradebook.grade``)."""

WRITE = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
"""The flags of an ``open`` that writes."""


def _refuse(*arguments: Any, **keywords: Any) -> Any:
    raise PermissionError(
        f"starting a process, sharing memory, or reading or writing a file unseen (no audit event) is refused: {RULE}"
    )


def _scrub() -> None:
    """Replace the functions that act without an audit event (``UNSEEN``) by ``_refuse``, in the
    modules already loaded, and take the ``MODULES`` loaded (but ``posix``, which ``os`` is) out of
    ``sys.modules``: refused as an import, they are not found again."""
    for module, names in UNSEEN:
        loaded = sys.modules.get(module)
        for name in names:
            if loaded is not None and hasattr(loaded, name):
                setattr(loaded, name, _refuse)
    # ctypes is loaded already (vjpgrad.core.floats takes libm's hypot through it), and its
    # memmove raises no audit event
    kept_out = MODULES - {"posix"}
    for module in [name for name in sys.modules if name.partition(".")[0] in kept_out]:
        del sys.modules[module]


def install(solutions: str, engine: str | None = None, kept: Sequence[str] = (), home: str | None = None) -> None:
    """Refuse, in this process, from now on, what ``refusal`` names, and reading any file under the
    folder ``solutions`` (vjpgrad's reference solutions); with ``engine`` (vjpgrad's folder, where
    it was never loaded in this process), reading vjpgrad's code too (``ENGINE``); under the folders
    ``kept`` (``KEPT``), reading anything but the student's own folder ``home`` and the folders
    modules are imported from (``sys.path``, the interpreter's); not undone. Run last before the
    student's files are imported: the grader's code in this process needs none of it afterwards (it
    reads and writes inherited pipes, which raise no event, and imports nothing more)."""
    _scrub()
    package = None if engine is None else os.path.realpath(engine) + os.sep
    libraries = _libraries()
    readable = [*(os.path.realpath(p) + os.sep for p in sys.path if p), *libraries]
    if home is not None:
        readable.append(os.path.realpath(home) + os.sep)
    # each folder kept, with the folders inside it still readable (a folder that holds it does not count)
    folders = [os.path.realpath(k) + os.sep for k in kept]
    kept_apart = tuple((k, tuple(r for r in readable if r.startswith(k) and r != k)) for k in folders)
    # copies: what the hook reads, nothing else reaches
    refusals = (dict(REFUSED), MODULES, RULE)
    hook = _hook(
        os.stat, os.path.realpath, os.path.realpath(solutions) + os.sep, *refusals, package, libraries, kept_apart
    )
    sys.addaudithook(hook)


def _libraries() -> tuple[str, ...]:
    """The folders of the interpreter's own modules and of the packages installed for it (its
    prefixes: the standard library, a virtual environment's ``site-packages``), each ending with
    ``os.sep``: a module whose file lies there is a library's, not the student's."""
    found = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    return tuple(sorted(p.rstrip(os.sep) + os.sep for p in found))


def library_importing(libraries: tuple[str, ...], sep: str = os.sep, depth: int = 2) -> str | None:
    """The library whose own import of a module is under way, as the audit hook sees a refused
    ``import`` event (``depth``: the frames of this function and of the hook): the top-level
    package of the module that runs the import statement (the first frame out of the import
    machinery and out of the function ``builtins.__import__`` is, the course's guard of imports),
    where that module's file is a library's (under ``libraries``, or in a ``site-packages``
    folder); None where it is the student's own code. A student who imports numpy meets numpy's
    own import of ctypes, and the message names numpy, not only ctypes."""
    frame: Any = sys._getframe(depth)
    wrapper = getattr(builtins.__import__, "__code__", None)  # the course's own guard of imports (``_plugin``)
    while frame is not None and (frame.f_code is wrapper or _machinery(frame.f_code.co_filename, sep)):
        frame = frame.f_back
    if frame is None:
        return None
    name, path = frame.f_globals.get("__name__"), frame.f_globals.get("__file__")
    if type(name) is not str or type(path) is not str:
        return None
    installed = f"{sep}site-packages{sep}" in path or f"{sep}dist-packages{sep}" in path
    return name.partition(".")[0] if installed or path.startswith(libraries) else None


def _machinery(filename: str, sep: str) -> bool:
    """Whether code of ``filename`` is Python's import machinery (``importlib``, frozen or not)."""
    return filename.startswith("<frozen importlib") or "importlib" in filename.split(sep)


ARCHIVES = (".whl", ".zip", ".tar.gz", ".tgz", ".egg")
"""The archives a copy of vjpgrad's code comes in: a ``vjpgrad-*`` one is refused with ``ENGINE``."""


def engine_file(found: str, package: str, sep: str = os.sep) -> bool:
    """Whether the file at the real path ``found`` is vjpgrad's code: under ``package`` (the installed
    vjpgrad's folder, ending with ``sep``), or in any copy of it (``vjpgrad/__init__.py`` and
    ``vjpgrad/core/``, their ``__pycache__`` too), or a ``vjpgrad-*`` wheel or archive."""
    if found.startswith(package):
        return True
    parts = found.split(sep)
    if len(parts) > 2 and parts[-2] == "__pycache__":
        parts = [*parts[:-2], parts[-1]]
    name = parts[-1]
    return (
        parts[-3:-1] == ["vjpgrad", "core"]
        or (parts[-2:-1] == ["vjpgrad"] and name.startswith("__init__."))
        or (name.startswith("vjpgrad-") and name.endswith(ARCHIVES))
    )


def _hook(
    stat: Callable[..., Any], real: Callable[[str], str], solutions: str, refused: dict[str, str],
    modules: frozenset[str], rule: str, package: str | None = None, libraries: tuple[str, ...] = (),
    kept: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> Callable[..., None]:  # fmt: skip
    """The audit hook: everything it reads is bound here, in its closure, so that no module attribute a
    student's code can rebind (this module's, ``os``'s) changes what it refuses. A path that is not a
    ``str``, ``bytes`` or file descriptor (a ``PathLike``, whose ``__fspath__`` could answer the hook
    one path and ``open`` another) is refused. A path is found where it leads (``real``: links and
    ``..`` followed) before it is compared with ``solutions`` and, given ``package`` (vjpgrad's folder),
    with vjpgrad's code (``engine_file``)."""
    try:
        proc = stat("/proc").st_dev if sys.platform.startswith("linux") else None
    except OSError:
        proc = None
    write = WRITE
    sep, is_folder = os.sep, S_ISDIR

    anywhere = f"{sep}vjpgrad{sep}course{sep}solutions{sep}"  # a copy of the package (a build's, another install's)
    is_engine = engine_file

    def leads_to(path: Any) -> str | None:
        """Where a path given as ``str`` or ``bytes`` leads (``real``); "" where it cannot be followed
        (such a path is not read), None for a file descriptor or no path."""
        if type(path) is int or path is None:
            return None
        text = path.decode("utf-8", "surrogateescape") if type(path) is bytes else path
        try:
            return real(text)
        except (OSError, ValueError):
            return ""

    def vjpgrads(path: Any) -> bool:
        if package is None:
            return False
        found = leads_to(path)
        return found is not None and (found == "" or is_engine(found, package, sep))

    def among_solutions(path: Any) -> bool:
        found = leads_to(path)
        return found is not None and (found == "" or found.startswith(solutions) or anywhere in found)

    def kept_from_them(path: Any) -> bool:
        if not kept:
            return False
        found = leads_to(path)
        if found is None:
            return False
        found += sep  # the folder itself too
        return found == sep or any(found.startswith(k) and not found.startswith(inside) for k, inside in kept)

    def a_folder(path: Any) -> bool:
        if type(path) is int or path is None:
            return False
        try:
            return is_folder(stat(path).st_mode)
        except (OSError, ValueError):
            return False

    def in_proc(path: Any) -> bool:
        if proc is None or type(path) is int or path is None:
            return False
        text = path.decode("utf-8", "surrogateescape") if type(path) is bytes else path
        if text == "/proc" or text.startswith("/proc/"):
            return True
        try:
            return bool(stat(text).st_dev == proc)
        except (OSError, ValueError):
            return False

    def opening(arguments: tuple[Any, ...]) -> str | None:
        """What an ``open`` is refused as: writing, ``/proc``, a reference solution, a folder."""
        path = arguments[0]
        if len(arguments) >= 3:
            mode, flags = arguments[1], arguments[2]
            if (type(flags) is int and flags & write) or (type(mode) is str and any(c in mode for c in "wax+")):
                return f"opening {path!r} to write it"
        if in_proc(path):
            return f"reading {path!r}, under /proc"
        if among_solutions(path):
            return SOLUTIONS
        if kept_from_them(path):
            return KEPT
        if a_folder(path):  # its descriptor would open by names the hook sees unresolved
            return f"opening a folder ({path!r}): a path relative to its descriptor is not checked"
        if vjpgrads(path):
            return ENGINE
        return None

    def what(event: str, arguments: tuple[Any, ...]) -> str | None:
        if event in refused:
            return refused[event]
        if event.startswith("ctypes."):
            return "ctypes"
        if event == "import" and arguments and arguments[0] in modules:
            return f"importing {arguments[0]}"
        if event in ("open", "os.listdir", "os.scandir") and arguments:
            path = arguments[0]
            if path is not None and type(path) not in (str, bytes, int):
                return f"a path given as {type(path).__name__}, not str"
            if event == "open":
                return opening(arguments)
            if in_proc(path):
                return f"reading {path!r}, under /proc"
        return None

    naming = library_importing

    def hook(event: str, arguments: tuple[Any, ...]) -> None:
        refusal = what(event, arguments)
        if refusal is None:
            return
        if event == "import":
            try:
                library = naming(libraries, sep)
            except Exception:  # the message without the library's name: the refusal stands
                library = None
            if library is not None and library != str(arguments[0]).partition(".")[0]:
                refusal += f", which {library} loads: {library} cannot run under the checks, write it in plain Python"
        raise PermissionError(f"{event} ({refusal}) is refused: {rule}")

    return hook
