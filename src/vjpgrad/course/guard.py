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
renaming and linking files, sockets, ``mmap``, a device but ``/dev/null``'s kind and ``fcntl.ioctl``
(keys typed into a terminal), walking
the interpreter's objects (``gc.get_objects``), killing processes and raising the CPU limit. The functions that start a
process or share memory without an audit event (``_posixsubprocess.fork_exec``, ``_posixshmem``,
``os.memfd_create``) are replaced by ones that refuse, and their modules refused a second import.

An audit hook is no sandbox: code that writes its own process's memory can undo it. So the hook runs
no code of the student's while it decides, holds what it reads where no frame reaches to change it,
and no ``ctypes`` object lives in the student's process (vjpgrad loads the C library's ``hypot`` at its
first call; ``install`` takes a loaded ``ctypes`` out of ``sys.modules``), nor code made from bytes
(``code.__new__``, ``marshal``: bytecode is not checked). It makes every cheat known for this
course fail; the boundary that holds against any code is another user (``--user``). The hook is not
installed where the student's code runs in the checks' own process (``inprocess``: the browser's
Pyodide, ``VJPGRAD_COURSE_IN_PROCESS=1``), which is feedback, not marks.
"""

from __future__ import annotations

import builtins
import gc
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from stat import S_ISCHR, S_ISDIR, S_ISLNK
from types import FunctionType
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
    "fcntl.ioctl": "controlling a device (ioctl: keys typed into a terminal, which its shell would run)",
    **dict.fromkeys(("gc.get_objects", "gc.get_referrers", "gc.get_referents"), "walking the interpreter's objects"),
    **dict.fromkeys(("resource.setrlimit", "resource.prlimit"), "changing the process's limits"),
    "os.chdir": "changing the current folder (the hook reads a relative path against it)",
    **dict.fromkeys(
        ("code.__new__", "marshal.loads", "marshal.load"),
        "making code from bytes (bytecode is not checked: a crafted one reads and writes any memory)",
    ),
    "os.scandir": "os.scandir (it holds the folder's descriptor, and a path relative to one is not checked: "
    "os.listdir lists a folder)",
    **dict.fromkeys(
        ("sys.settrace", "sys.setprofile", "sys._current_frames", "sys._current_exceptions",
         "sys.monitoring.register_callback"),
        "running code inside other code (tracing, profiling, other threads' frames)",
    ),
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

_STANDING = (
    "chroot", "unshare", "setns", "fchdir", "login_tty",
    "setuid", "setgid", "seteuid", "setegid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
    "initgroups", "setsid", "setpgid", "setpgrp",
    "setpriority", "sched_setaffinity", "sched_setscheduler", "sched_setparam",
)  # fmt: skip
"""What changes where the process stands, without an audit event: its root (``chroot``, a namespace
of its own, where a root of its own is anyone's), its current folder by a descriptor, its user, its
session, and the priority or cores of any process (the grader's too). A root of its own would lead
the paths the hook reads as written elsewhere (``/tmp`` made ``/``: the kept folders' paths no longer
match); no exercise needs any of it."""

UNSEEN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("_posixsubprocess", ("fork_exec",)),
    ("subprocess", ("_fork_exec",)),
    ("_posixshmem", ("shm_open", "shm_unlink")),
    ("posix", ("memfd_create", "mkfifo", "mknod", "pidfd_open", *_STANDING)),
    ("os", ("memfd_create", "mkfifo", "mknod", "pidfd_open", *_STANDING)),
    ("readline", ("read_history_file", "write_history_file", "append_history_file", "read_init_file")),
    ("_sqlite3", ("connect",)),
    ("sqlite3", ("connect",)),
    ("_dbm", ("open",)),
    ("_gdbm", ("open",)),
    ("_multiprocessing", ("sem_unlink", "SemLock")),
    ("multiprocessing.synchronize", ("sem_unlink", "SemLock")),
    ("signal", ("signal", "setitimer", "alarm", "set_wakeup_fd", "pidfd_send_signal")),
    ("_signal", ("signal", "setitimer", "alarm", "set_wakeup_fd", "pidfd_send_signal")),
)
"""The functions that start a process, share memory, read or write a file or change where the process
stands (``_STANDING``) without an audit event, or run code of the student's inside the hook's frames
(a signal's handler runs between any two lines, the hook's too), by module: in a module already
loaded (another may hold it), each is replaced by one that refuses."""

SOLUTIONS = "reading vjpgrad's reference solutions"
"""What an ``open`` of a file among vjpgrad's reference solutions is refused as: a student's process
needs none of them, and an engine that loads one at run time (its path put together so that no
reading of the file finds it) would earn the marks of the shipped solution."""
KEPT = "reading the teacher's files or another student's, which the student's code needs none of"
"""What an ``open`` under a folder kept from the student, or an ``os.listdir`` of one (``install``'s
``kept``: the teacher's exercises and held-out checks, the grader's scratch folder; where grading, the
folders the submissions lie in and the gradebook's) is refused as: a student's code that read a
held-out check (or the checks' output, or hypothesis's cache of their constants) could print it where
students see it, and one that loaded another student's file would earn that student's marks."""
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


_SCRUBBED = frozenset(module for module, _ in UNSEEN) | MODULES
"""The modules ``_scrub`` does not load for the student's process before C may make none."""


def _refuse(*arguments: Any, **keywords: Any) -> Any:
    raise PermissionError(
        "starting a process, sharing memory, reading or writing a file unseen (no audit event), handling a signal, or "
        f"changing the process's root, namespaces, user or priority is refused: {RULE}"
    )


def _no_new_module(*arguments: Any, **keywords: Any) -> Any:
    raise PermissionError(f"making a built-in module anew (_imp.create_builtin) is refused: {RULE}")


def _scrub() -> None:
    """Replace the functions that act without an audit event (``UNSEEN``) by ``_refuse``, in the
    modules already loaded, and take the ``MODULES`` loaded (but ``posix``, which ``os`` is) out of
    ``sys.modules``: refused as an import, they are not found again. No built-in module is made
    anew from C afterwards (``_imp.create_builtin`` refuses: every one a student may import is
    loaded first)."""
    # C makes no module anew from here on: each built-in one a student may import is loaded now (a
    # copy of one loaded, sys's, _imp's or posix's, would hold C's functions again, setrecursionlimit
    # and create_builtin among them), and _imp.create_builtin, which raises no audit event, refuses.
    # Nothing of the student's runs yet, and nothing keeps C's function where their code could reach it.
    for name in sorted(set(sys.builtin_module_names) - set(sys.modules) - _SCRUBBED):
        try:
            importlib.import_module(name)
        except ImportError:  # one this build cannot start: not one a student's code can import either
            continue
    imp: Any = sys.modules["_imp"]
    imp.create_builtin = _no_new_module
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
    tracker = sys.modules.get("multiprocessing.resource_tracker")
    if tracker is not None:  # its table holds _posixshmem's shm_unlink, which removes files unseen
        tracker._CLEANUP_FUNCS.clear()


def close_pipes(keep: Sequence[int]) -> None:
    """Close every pipe this process holds but ``keep`` (its channel): a process started by the fork
    server inherits its pipes (to multiprocessing's resource tracker, which unlinks what it is told
    to as the grader; the fork server's own, whose write stops it), which reach processes outside
    the student's. Run before ``install``, which refuses ``/proc``: the descriptors are found there."""
    import stat

    tracker = sys.modules.get("multiprocessing.resource_tracker")
    found = os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else []
    for fd in sorted({int(name) for name in found} - {0, 1, 2, *keep}):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:  # the listing's own descriptor, closed already
            continue
    if tracker is not None:
        tracker._resource_tracker._fd = None  # closed: nothing is sent to the tracker from here


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
    history = clone_history(solutions)
    folders = [os.path.realpath(k) + os.sep for k in [*kept, *([history] if history is not None else [])]]
    kept_apart = tuple((k, tuple(r for r in readable if r.startswith(k) and r != k)) for k in folders)
    # copies: what the hook reads, nothing else reaches
    refusals = (dict(REFUSED), MODULES, RULE)
    real = _resolved if os.sep == "/" else os.path.realpath  # Windows: realpath, whose helpers can be rebound
    hook = _hook(os.stat, real, os.path.realpath(solutions) + os.sep, *refusals, package, libraries, kept_apart)
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
    importer = builtins.__import__
    wrapper = (
        importer.__code__ if type(importer) is FunctionType else None
    )  # the course's guard of imports (``_plugin``)
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


def vjpgrad_archive(found: str, _sep: str = os.sep, _archives: tuple[str, ...] = ARCHIVES) -> bool:
    """Whether the file at the real path ``found`` is an archive of vjpgrad (a wheel in pip's cache, an
    sdist): it holds the reference solutions, whichever exercise runs."""
    name = found.rpartition(_sep)[2]
    return name.startswith("vjpgrad-") and name.endswith(_archives)


def clone_history(solutions: str) -> str | None:
    """The ``.git`` of the clone vjpgrad is installed from (``pip install -e``), found above the folder of
    its reference solutions: its objects hold every version of them. None where there is none."""
    folder = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(solutions))))  # above vjpgrad/
    for _ in range(3):  # src/, the clone
        history = os.path.join(folder, ".git")
        if os.path.exists(history):
            return history
        folder = os.path.dirname(folder)
    return None


def engine_file(found: str, package: str, sep: str = os.sep, _len: Any = len, _archive: Any = vjpgrad_archive) -> bool:
    """Whether the file at the real path ``found`` is vjpgrad's code: under ``package`` (the installed
    vjpgrad's folder, ending with ``sep``), or in any copy of it (``vjpgrad/__init__.py`` and
    ``vjpgrad/core/``, their ``__pycache__`` too), or a ``vjpgrad-*`` wheel or archive. The hook
    runs it: what it calls is bound in its defaults (``_hook``)."""
    if found.startswith(package):
        return True
    parts = found.split(sep)
    if _len(parts) > 2 and parts[-2] == "__pycache__":
        parts = [*parts[:-2], parts[-1]]
    name = parts[-1]
    return (
        parts[-3:-1] == ["vjpgrad", "core"]
        or (parts[-2:-1] == ["vjpgrad"] and name.startswith("__init__."))
        or _archive(found, sep)
    )


def _resolved(
    path: str, _lstat: Any = os.lstat, _readlink: Any = os.readlink, _getcwd: Any = os.getcwd,
    _is_link: Any = S_ISLNK, _errors: Any = (OSError, ValueError), _sep: str = "/",
) -> str:  # fmt: skip
    """Where ``path`` leads on POSIX, as ``os.path.realpath`` finds it (absolute, ``.`` and ``..``
    taken out, each symbolic link followed; a part that does not exist taken as written), "" past
    40 links. The hook's own: ``realpath`` is Python code that looks up ``os.lstat`` and its
    module's helpers at every call, which a student's code can rebind to answer another path. This
    one runs only what its defaults bound at import (C functions, before any student's code ran),
    and string operations on ``str``."""
    if not path.startswith(_sep):
        path = _getcwd() + _sep + path
    pending = path.split(_sep)
    pending.reverse()
    done: list[str] = []
    links = 0
    while pending:
        part = pending.pop()
        if part == "" or part == ".":
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        here = _sep + _sep.join(done) + _sep + part if done else _sep + part
        try:
            mode = _lstat(here).st_mode
        except _errors:  # not there (or not a name): taken as written, as realpath does
            done.append(part)
            continue
        if not _is_link(mode):
            done.append(part)
            continue
        links += 1
        if links > 40:
            return ""
        target = _readlink(here)
        if target.startswith(_sep):
            done = []
        more = target.split(_sep)
        more.reverse()
        pending.extend(more)
    return _sep + _sep.join(done)


FUNCTION_PARTS = frozenset(("__code__", "__defaults__", "__kwdefaults__"))
"""What of a function the hook runs a student's code may not replace (the ``object.__setattr__`` and
``object.__delattr__`` events): the hook's helpers hold what they read in their defaults, and a
function's code is what runs. The student's own functions are theirs (``namedtuple``'s defaults)."""


def files_run(functions: Sequence[Any]) -> frozenset[str]:
    """The files whose code the hook runs: of ``functions`` and of every function held in their
    defaults, in the tuples there, and so on (the hook binds everything it calls as a default). A
    function whose code comes from one of them keeps its code and defaults (``_naming``)."""
    files: set[str] = set()
    seen: set[int] = set()
    pending = list(functions)
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if type(item) is FunctionType:
            files.add(item.__code__.co_filename)
            pending.extend(item.__defaults__ or ())
            pending.extend((item.__kwdefaults__ or {}).values())
        elif type(item) is tuple or type(item) is frozenset:
            pending.extend(item)
    return frozenset(files)


def _leads_to(
    path: Any, real: Callable[[str], str], _type: Any = type, _bytes: Any = bytes, _int: Any = int,
    _errors: Any = (OSError, ValueError),
) -> str | None:  # fmt: skip
    """Where a path given as ``str`` or ``bytes`` leads (``real``); "" where it cannot be followed
    (such a path is not read), None for a file descriptor or no path."""
    if _type(path) is _int or path is None:
        return None
    text = path.decode("utf-8", "surrogateescape") if _type(path) is _bytes else path
    try:
        return real(text)
    except _errors:
        return ""


def _in_proc(
    path: Any, stat: Callable[..., Any], proc: int | None, _type: Any = type, _bytes: Any = bytes, _int: Any = int,
    _errors: Any = (OSError, ValueError), _real: Any = _resolved,
) -> bool:  # fmt: skip
    """Whether a path lies under ``/proc``: by name as written, or its folder or itself once resolved
    (``/./proc``, ``//proc``, a link to it: ``_resolved``; the folder, since a link in ``/proc``,
    ``/proc/PID/fd/0``, leads out of it), or on its device ``proc``."""
    if proc is None or _type(path) is _int or path is None:
        return False
    text = path.decode("utf-8", "surrogateescape") if _type(path) is _bytes else path
    if text == "/proc" or text.startswith("/proc/"):
        return True
    folder = text[: text.rfind("/")] if "/" in text else "."
    for place in (text, folder or "/"):
        try:
            found = _real(place)
        except _errors:
            return True  # a path that cannot be followed is not read
        if found == "/proc" or found.startswith("/proc/"):
            return True
    try:
        return stat(text).st_dev == proc  # type: ignore[no-any-return]
    except _errors:
        return False


def _writing(
    arguments: tuple[Any, ...], _type: Any = type, _str: Any = str, _int: Any = int, _len: Any = len,
    _write: int = WRITE,
) -> bool:  # fmt: skip
    """Whether an ``open`` event's mode or flags write."""
    if _len(arguments) < 3:
        return False
    mode, flags = arguments[1], arguments[2]
    if _type(flags) is _int and flags & _write:
        return True
    return _type(mode) is _str and ("w" in mode or "a" in mode or "x" in mode or "+" in mode)


def _kept(found: str, kept: tuple[tuple[str, tuple[str, ...]], ...], _sep: str = os.sep, _any: Any = any) -> bool:
    """Whether the real path ``found`` lies in a folder kept from the student, and in none of the
    folders inside it that stay readable."""
    inside = found + _sep  # the folder itself too
    if inside == _sep:
        return True
    return _any(inside.startswith(folder) and not inside.startswith(readable) for folder, readable in kept)  # type: ignore[no-any-return]


def _a_folder(
    path: Any, stat: Callable[..., Any], _type: Any = type, _int: Any = int, _is_folder: Any = S_ISDIR,
    _errors: Any = (OSError, ValueError),
) -> bool:  # fmt: skip
    """Whether a path names a folder (a descriptor of one opens by names the hook sees unresolved)."""
    if path is None or _type(path) is _int:
        return False
    try:
        return _is_folder(stat(path).st_mode)  # type: ignore[no-any-return]
    except _errors:
        return False


def _readable_devices() -> frozenset[int]:
    """The devices a program of numbers may read (``/dev/null``, ``/dev/zero``, ``/dev/random``,
    ``/dev/urandom``, ``/dev/full``), by their device numbers, read before any code of the student's runs."""
    found = set()
    for path in (os.devnull, "/dev/zero", "/dev/random", "/dev/urandom", "/dev/full"):
        try:
            found.add(os.stat(path).st_rdev)
        except OSError:
            continue
    return frozenset(found)


def _a_device(
    path: Any, stat: Callable[..., Any], _readable: frozenset[int] = _readable_devices(), _type: Any = type,
    _int: Any = int, _is_device: Any = S_ISCHR, _errors: Any = (OSError, ValueError),
) -> bool:  # fmt: skip
    """Whether a path names a device other than those a program of numbers reads (``_readable``): a
    terminal above all, whose keys typed in (``TIOCSTI``) its shell runs, and whose settings and keys
    are the teacher's."""
    if path is None or _type(path) is _int:
        return False
    try:
        found = stat(path)
    except _errors:
        return False
    return _is_device(found.st_mode) and found.st_rdev not in _readable


def _opening(
    arguments: tuple[Any, ...], state: tuple[Any, ...], _writing: Any = _writing, _leads_to: Any = _leads_to,
    _archive: Any = vjpgrad_archive, _a_device: Any = _a_device,
    _in_proc: Any = _in_proc, _kept: Any = _kept, _a_folder: Any = _a_folder, _is_engine: Any = engine_file,
    _anywhere: str = f"{os.sep}vjpgrad{os.sep}course{os.sep}solutions{os.sep}", _sep: str = os.sep,
    _solutions: str = SOLUTIONS, _kept_folder: str = KEPT, _engine: str = ENGINE,
) -> str | None:  # fmt: skip
    """What an ``open`` is refused as: writing, ``/proc``, a reference solution (wherever a copy of the
    package lies: ``_anywhere``), a folder kept, a folder, vjpgrad's code; None where it is not. The
    words of a refusal are bound here too: a module's string rebound to None would refuse nothing."""
    stat, real, solutions, _, _, _, _, package, _, kept, proc, _ = state
    path = arguments[0]
    if _writing(arguments):
        return f"opening {path!r} to write it"
    if _in_proc(path, stat, proc):
        return f"reading {path!r}, under /proc"
    found = _leads_to(path, real)
    if found is not None and (found == "" or found.startswith(solutions) or _anywhere in found or _archive(found)):
        return _solutions
    if kept and found is not None and _kept(found, kept):
        return _kept_folder
    if _a_folder(path, stat):
        return f"opening a folder ({path!r}): a path relative to its descriptor is not checked"
    if _a_device(path, stat):
        return f"opening a device ({path!r}): a terminal's keys and settings are its user's"
    if package is not None and found is not None and (found == "" or _is_engine(found, package, _sep)):
        return _engine
    return None


def _listing(
    path: Any, state: tuple[Any, ...], _in_proc: Any = _in_proc, _leads_to: Any = _leads_to, _kept: Any = _kept,
    _refusal: str = KEPT,
) -> str | None:  # fmt: skip
    """What an ``os.listdir`` is refused as: a folder under ``/proc``, or one kept from the student
    (``KEPT``: the names in the teacher's folders and in those of other students are theirs); None
    where it is not (``os.scandir`` is refused outright)."""
    stat, real, kept, proc = state[0], state[1], state[9], state[10]
    if _in_proc(path, stat, proc):
        return f"reading {path!r}, under /proc"
    found = _leads_to(path, real)
    return _refusal if kept and found is not None and _kept(found, kept) else None


def _named(arguments: tuple[Any, ...], at: int, _type: Any = type, _str: Any = str, _len: Any = len,
           _text: Any = str.__str__) -> str | None:  # fmt: skip
    """The argument at ``at``, a name, as a ``str`` whose methods are ``str``'s own: a subclass's
    characters copied by ``str.__str__``, which runs no method of the subclass (its ``__hash__``, run
    by a look-up here, could reach the hook's frame); None where there is none."""
    if _len(arguments) <= at:
        return None
    name = arguments[at]
    return name if _type(name) is _str else _text(name)  # type: ignore[no-any-return]


def _naming(
    event: str, arguments: tuple[Any, ...], modules: frozenset[str], files: frozenset[str], _named: Any = _named,
    _function_parts: frozenset[str] = FUNCTION_PARTS, _type: Any = type, _function: Any = FunctionType,
    _str: Any = str, _text: Any = str.__str__,
) -> str | None:  # fmt: skip
    """What an event that names a module or an attribute is refused as: a refused module, by its name
    or its name's last part (an extension's init function is found by it: ``renamed._ctypes`` loads
    ``_ctypes``); the code or defaults of a function the hook runs (its code from one of ``files``,
    ``files_run``) replaced or deleted. Its code's file is read as ``str``, as ``_named`` reads a name."""
    if event == "import":
        name = _named(arguments, 0)
        refused = name is not None and (name in modules or name.rpartition(".")[2] in modules)
        return f"importing {name}" if refused else None
    name = _named(arguments, 1)
    if name is None or name not in _function_parts or _type(arguments[0]) is not _function:
        return None
    if event == "object.__getattr__" and name == "__code__":
        return None  # reading a function's code reveals nothing it holds
    file = arguments[0].__code__.co_filename
    doing = "reading" if event == "object.__getattr__" else "replacing"
    return (
        f"{doing} the {name} of a function the checks run"
        if (file if _type(file) is _str else _text(file)) in files
        else None
    )


def _reason(event: str, reasons: tuple[tuple[str, str], ...]) -> str | None:
    """What a refused event does, from the pairs of the hook's table (a tuple: no dict to hand out)."""
    for name, reason in reasons:
        if name == event:
            return reason
    return None


def _decide(
    event: str, arguments: tuple[Any, ...], state: tuple[Any, ...], _type: Any = type, _str: Any = str,
    _bytes: Any = bytes, _int: Any = int, _name_of: Any = type.__dict__["__name__"].__get__,
    _naming: Any = _naming, _opening: Any = _opening, _listing: Any = _listing, _reason: Any = _reason,
) -> str | None:  # fmt: skip
    """What the hook refuses ``event`` as, or None. It runs no code of the student's: a name is read
    as ``str`` (``_named``), a path of another type than ``str``, ``bytes`` or ``int`` is refused by
    its type's name read from the type itself, and every type is compared by identity (``in`` would
    run a metaclass's ``__eq__``)."""
    refused, reasons, modules, files = state[3], state[4], state[5], state[11]
    if event in refused:
        return _reason(event, reasons)  # type: ignore[no-any-return]
    if event.startswith("ctypes."):
        return "ctypes"
    if (
        event == "import"
        or event == "object.__setattr__"
        or event == "object.__delattr__"
        or event == "object.__getattr__"
    ):
        return _naming(event, arguments, modules, files)  # type: ignore[no-any-return]
    if (event == "open" or event == "os.listdir" or event == "os.scandir") and arguments:
        path = arguments[0]
        kind = _type(path)
        if path is not None and kind is not _str and kind is not _bytes and kind is not _int:
            return f"a path given as {_name_of(kind)}, not str"
        if event == "open":
            return _opening(arguments, state)  # type: ignore[no-any-return]
        return _listing(path, state)  # type: ignore[no-any-return]
    return None


def _worded(
    event: str, arguments: tuple[Any, ...], refusal: str, state: tuple[Any, ...], _naming: Any = library_importing,
    _type: Any = type, _str: Any = str, _text: Any = str.__str__,
) -> str:  # fmt: skip
    """The refusal's message: for an ``import``, the library whose own import it is, where one is
    (``library_importing``: it reads the importing module's globals, where a key of the student's
    could run code of theirs; the refusal is decided by then, and stands whatever that code does)."""
    sep, rule, libraries = os.sep, state[6], state[8]
    if event == "import":
        try:
            library = _naming(libraries, sep, 3)
        except Exception:  # the message without the library's name: the refusal stands
            library = None
        name = arguments[0] if _type(arguments[0]) is _str else _text(arguments[0])
        if library is not None and _type(library) is _str and library != name.partition(".")[0]:
            refusal += f", which {library} loads: {library} cannot run under the checks, write it in plain Python"
    return f"{event} ({refusal}) is refused: {rule}"


def _hook(
    stat: Callable[..., Any], real: Callable[[str], str], solutions: str, refused: dict[str, str],
    modules: frozenset[str], rule: str, package: str | None = None, libraries: tuple[str, ...] = (),
    kept: tuple[tuple[str, tuple[str, ...]], ...] = (),
) -> Callable[..., None]:  # fmt: skip
    """The audit hook. What it reads is in its defaults, never in a closure's cells: a student's code
    that reached a frame of the hook (through a refusal's traceback, where Python 3.13's
    ``frame.f_locals`` writes through to the variables and cells of the frame) would change a cell
    for every later call, but a default is a frame's own copy, made anew at each call; and every
    value is one nobody can change (``frozenset``, tuples, strings, and functions whose code and
    defaults the hook refuses to have replaced: no wrapper of a mutable object, as a ``mappingproxy``,
    whose ``==`` hands its dict to the other side's ``__eq__``). The collector is paused while it
    decides: a collection, which any allocation may start, runs the finalizers (``__del__``) of the
    student's garbage cycles, whose code could reach the deciding frames and change what they read.
    The module's functions it runs are bound as defaults too, so rebinding this module's attributes (or ``os``'s, or
    ``builtins``') changes nothing it does. A path that is not a ``str``, ``bytes`` or file
    descriptor (a ``PathLike``, whose ``__fspath__`` could answer the hook one path and ``open``
    another) is refused. A path is found where it leads (``real``: links and ``..`` followed,
    ``_resolved`` on POSIX) before it is compared with ``solutions`` and, given ``package``
    (vjpgrad's folder), with vjpgrad's code (``engine_file``)."""
    try:
        proc = stat("/proc").st_dev if sys.platform.startswith("linux") else None
    except OSError:
        proc = None
    read: tuple[Any, ...] = (
        stat, real, solutions, frozenset(refused), tuple(refused.items()), frozenset(modules), rule, package,
        tuple(libraries), tuple((k, tuple(inside)) for k, inside in kept), proc,
    )  # fmt: skip
    state = (*read, files_run((_decide, _worded, read)))  # the hook's own code is this file's, as _decide's

    def hook(
        event: str, arguments: tuple[Any, ...], _state: tuple[Any, ...] = state, _decide: Any = _decide,
        _worded: Any = _worded, _refused: Any = PermissionError, _collecting: Any = gc.isenabled,
        _pause: Any = gc.disable, _resume: Any = gc.enable,
    ) -> None:  # fmt: skip
        collecting = _collecting()
        _pause()  # no collection while it decides: a collection runs the finalizers of the student's cycles
        try:
            refusal = _decide(event, arguments, _state)
        finally:
            if collecting:
                _resume()
        if refusal is not None:
            raise _refused(_worded(event, arguments, refusal, _state))

    return hook
