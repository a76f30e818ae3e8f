"""The student's code in a process of its own: the checks hold proxies of its objects.

A check written as ``student("engine").Value(2.0) * 3.0`` runs in the checks' process, which never
imports a student's file. ``student("engine")`` is a ``Proxy`` of a module that lives in the
student's process; each use of a proxy (an attribute, a call, an operator, ``repr``, iteration) is a
request over a pipe to that process, which does it to the real object and answers with plain data:
``None``, booleans, numbers, strings and lists, tuples, sets and dicts of them go as themselves (by
value, copies), any other object as a handle, which becomes a proxy here. An error raised by the
student's code comes back as its type's name, its text and the line of the student's file that
raised it, and is raised here as the same built-in exception (``NotImplementedError``), or as a
``StudentError`` of the same name.

So every comparison with the reference, every number the check computes of its own and every
decision (passed or failed) happens here, out of the student's reach: a student's code that walks
its interpreter's objects (``gc.get_objects()``, ``sys.modules``) finds only its own process, which
holds none of the checks' objects, functions or classes. All it can do is answer the questions asked
with other numbers, which is what writing the code is.

What the checks hand to the student's code that is not plain data (a function to differentiate,
``math.exp``) goes as a handle too; the student's process can only call it (its arguments and
result go by the same rules) and read its ``repr``, never its attributes. Messages are JSON, never
pickle: nothing the student's process sends can run code here. A message that is not one of the
protocol's (something else written into the pipe) raises ``TamperedError``; the end of the pipe (the
student's process ended: ``os._exit``, a crash, its CPU limit) raises ``GoneError``.

The peak memory of a call and its CPU time are counted by the kernel and read from here
(``kernel``), by the student's process's id as the grading process started it, where ``/proc`` is
there (Linux); elsewhere they are measured in the student's process by ``probe``'s helpers, as is a
call at a given recursion limit everywhere. What the student's process reports of itself its code
can misreport; the kernel's counts it cannot. The kernel counts what the process takes from the
system, not what a call allocates, so memory the process already held (filled as a module was
imported, freed, kept resident) hides from a count of the call alone: ``peak_memory_with_import``
counts from before the student's module is imported, in a process none of their code has run in.
"""

from __future__ import annotations

import builtins
import functools
import json
import math
import numbers
import operator
import os
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vjpgrad.course import kernel

LIMIT = 1 << 26
"""The longest message either side accepts (bytes)."""
TEXT_LIMIT = 20_000
"""The most characters of an error's text that cross from one process to the other, and of a check's
message (``shortened``): a student's error of megabytes would otherwise reach the grade's report
whole, or past what the grader reads of one message."""
DEPTH = 40
"""How deep plain data nests before the rest goes as handles (a list that contains itself)."""


def shortened(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text``, or its first ``limit`` characters and how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} characters more, not shown)"


class Peak(tuple[int, str]):
    """A call's peak memory (bytes) and who counted it (``"kernel"``, ``"tracemalloc"``), as a pair, with
    the call's ``result``: a check compares the values too, so that an answer kept small by losing
    precision (a Jacobian of half-precision floats) fails."""

    result: Any

    def __new__(cls, peak: int, counted_by: str, result: Any) -> Peak:
        made = super().__new__(cls, (peak, counted_by))
        made.result = result
        return made


class TamperedError(Exception):
    """A message that is not the protocol's came through the pipe."""


class GoneError(Exception):
    """The other process ended (or closed its end of the pipe) before answering."""


class StudentError(Exception):
    """An error raised by the student's code of a type that is not a built-in exception: its class
    here has the student's type's name."""

    student_where: str | None = None


OPERATORS: dict[str, Callable[..., Any]] = {
    name: getattr(operator, name)
    for name in (
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "neg", "pos", "abs", "invert",
        "lt", "le", "eq", "ne", "gt", "ge", "and_", "or_", "xor", "lshift", "rshift", "getitem", "setitem",
        "delitem", "contains", "index", "truth",
    )
}  # fmt: skip
OPERATORS.update(
    {
        "len": len, "hash": hash, "repr": repr, "str": str, "float": float, "int": int, "iter": iter,
        "format": format, "round": round, "divmod": divmod, "isinstance": isinstance,
        "callable": callable, "getattr": getattr, "setattr": setattr, "delattr": delattr,
        "typename": lambda x: type(x).__name__,
    }
)  # fmt: skip
"""What the checks' process may ask the student's process to do to its objects."""


def _exact_number(x: Any) -> Any:
    """``x`` as a plain bool, int or float when it is a NumPy scalar; else ``x``."""
    if type(x).__module__ == "numpy" and isinstance(x, numbers.Number) and hasattr(x, "item"):
        item = x.item()
        if type(item) in (bool, int, float):
            return item
    return x


class Side:
    """One end of the pipe: encodes and decodes values, sends requests and serves the other side's.

    ``exported``: this side's objects the other side holds, by handle number; ``proxies``: the other
    side's objects this side holds, as proxies, by their handle numbers (one proxy for each, so that
    ``is`` and ``id`` mean here what they mean there)."""

    interrupted_by_keys = True
    """Whether a ``KeyboardInterrupt`` raised while serving the other side ends this side too, once
    the other side has read it: Ctrl-C in the checks' process, which shares the teacher's terminal."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self.exported: dict[int, Any] = {}
        self.handles: dict[int, int] = {}  # id(object) -> handle, for exported objects kept alive above
        self.proxies: dict[int, Any] = {}
        self.wrapped: dict[int, int] = {}  # id(function standing for a handle) -> the handle
        self._kinds: dict[str, type[StudentError]] = {}

    # ---- values ----

    def encode(self, x: Any, depth: int = 0) -> Any:
        x = _exact_number(x)
        kind = type(x)
        if x is None or kind in (bool, int, str):
            return x
        if kind is float:
            return x if math.isfinite(x) else {"F": repr(x)}
        if depth < DEPTH:
            if kind is list:
                return {"L": [self.encode(y, depth + 1) for y in x]}
            if kind is tuple:
                return {"T": [self.encode(y, depth + 1) for y in x]}
            if kind in (set, frozenset):
                return {"S": [self.encode(y, depth + 1) for y in x], "frozen": kind is frozenset}
            if kind is dict:
                return {"D": [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in x.items()]}
        if isinstance(x, Proxy) and object.__getattribute__(x, "_side") is self:
            return {"B": object.__getattribute__(x, "_handle")}
        back = self.wrapped.get(id(x))
        if back is not None:
            return {"B": back}
        handle = self.handles.get(id(x))
        if handle is None:
            handle = len(self.exported) + 1
            self.exported[handle] = x
            self.handles[id(x)] = handle
        if isinstance(x, FUNCTIONS):
            return {"H": handle, "function": True}
        return {"H": handle}

    def decode(self, x: Any) -> Any:
        if x is None or type(x) in (bool, int, float, str):
            return x
        if type(x) is not dict or len(x) > 2:
            raise TamperedError(f"not a value: {type(x).__name__}")
        if "F" in x:
            text = x["F"]
            if text not in ("inf", "-inf", "nan"):
                raise TamperedError("not a number")
            return float(text)
        if "L" in x or "T" in x or "S" in x or "D" in x:
            return self._container(x)
        if "B" in x or "H" in x:
            return self._handle(x)
        raise TamperedError("not a value")

    def _container(self, x: dict[str, Any]) -> Any:
        """A list, tuple, set or dict, its items decoded."""
        if "L" in x:
            return [self.decode(y) for y in self._items(x["L"])]
        if "T" in x:
            return tuple(self.decode(y) for y in self._items(x["T"]))
        try:  # an item or key that cannot be hashed (a list) is no set's or dict's: tampering
            if "S" in x:
                items = [self.decode(y) for y in self._items(x["S"])]
                return frozenset(items) if x.get("frozen") else set(items)
            pairs = [self._items(pair) for pair in self._items(x["D"])]
            if any(len(pair) != 2 for pair in pairs):
                raise TamperedError("not a dict")
            return {self.decode(k): self.decode(v) for k, v in pairs}
        except TypeError:
            raise TamperedError("an item that cannot be hashed") from None

    def _handle(self, x: dict[str, Any]) -> Any:
        """One of this side's own objects, back (``B``), or what stands here for one of the other
        side's (``H``)."""
        if "B" in x:
            handle = x["B"]
            if type(handle) is not int or handle not in self.exported:
                raise TamperedError("no such object")
            return self.exported[handle]
        handle = x["H"]
        if type(handle) is not int:
            raise TamperedError("not a handle")
        proxy = self.proxies.get(handle)
        if proxy is None:
            proxy = self.proxies[handle] = self.proxy(handle, x.get("function") is True)
        return proxy

    def proxy(self, handle: int, function: bool) -> Any:
        """What stands here for the other side's object ``handle`` (a function of the checks' when
        ``function``)."""
        return Proxy(self, handle)

    @staticmethod
    def _items(x: Any) -> list[Any]:
        if type(x) is not list:
            raise TamperedError("not a list")
        return x

    # ---- messages ----

    def send(self, message: dict[str, Any]) -> None:
        try:
            self.channel.send_bytes(json.dumps(message).encode())
        except (OSError, ValueError) as error:
            raise GoneError(str(error)) from None

    def receive(self) -> dict[str, Any]:
        try:
            data = self.channel.recv_bytes(LIMIT)
        except EOFError:
            raise GoneError("the other process ended") from None
        except OSError as error:  # a length that is not one of ours
            raise TamperedError(str(error)) from None
        try:
            message = json.loads(data)
        except (ValueError, RecursionError):
            raise TamperedError("not JSON") from None
        if type(message) is not dict:
            raise TamperedError("not a message")
        return message

    def request(self, what: str, *arguments: Any) -> Any:
        """Ask the other side to do ``what`` with ``arguments``; serve its requests until it answers."""
        self.send({"do": what, "with": self.encode(list(arguments))})
        while True:
            message = self.receive()
            if "do" in message:
                self.serve(message)
            elif "value" in message:
                return self.decode(message["value"])
            elif "error" in message:
                raise self.error(message["error"])
            else:
                raise TamperedError("not a message")

    def serve(self, message: dict[str, Any]) -> None:
        what, arguments = message.get("do"), self.decode(message.get("with"))
        if type(what) is not str or type(arguments) is not list:
            raise TamperedError("not a request")
        try:
            value = self.answer(what, arguments)
        except (TamperedError, GoneError):
            raise
        except BaseException as error:  # whatever the code raised, the other side reads it
            self.send({"error": self.describe(error)})
            if isinstance(error, KeyboardInterrupt) and self.interrupted_by_keys:
                raise
            return
        self.send({"value": self.encode(value)})

    def answer(self, what: str, arguments: list[Any]) -> Any:
        raise NotImplementedError

    def describe(self, error: BaseException) -> dict[str, Any]:
        try:
            text = str(error)
        except Exception:  # a student's __str__ that raises
            text = "(its text could not be read)"
        return {"type": type(error).__name__, "text": shortened(text)}

    def error(self, description: Any) -> BaseException:
        if type(description) is not dict or type(description.get("type")) is not str:
            raise TamperedError("not an error")
        name, text = description["type"], shortened(str(description.get("text", "")))
        if name == "StopIteration":
            return StopIteration()
        syntax = description.get("syntax")
        if name == "SyntaxError" and type(syntax) is list and len(syntax) == 3:
            error: BaseException = SyntaxError(str(syntax[2]))
            error.filename, error.lineno, error.msg = str(syntax[0]), syntax[1], str(syntax[2])  # type: ignore[attr-defined]
        elif name in BUILTIN_ERRORS and name != "SyntaxError":
            try:
                error = BUILTIN_ERRORS[name](text)
            except Exception:  # one whose constructor wants more (UnicodeDecodeError)
                error = self._kind(name)(text)
        else:
            error = self._kind(name)(text)
        where = description.get("where")
        error.student_where = where if type(where) is str else None  # type: ignore[attr-defined]
        return error

    def _kind(self, name: str) -> type[StudentError]:
        kind = self._kinds.get(name)
        if kind is None:
            kind = self._kinds[name] = type(name, (StudentError,), {})
        return kind


FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)
"""The checks' objects that the student's process gets as functions (which bind as methods)."""
NAMES = ("__name__", "__qualname__", "__doc__", "__module__")
"""The dunder attributes a proxy asks the other side for (the others are the proxy's own business)."""


class Proxy:
    """An object of the other process's: whatever is done to it is done there."""

    __slots__ = ("__weakref__", "_handle", "_hash", "_side")

    def __init__(self, side: Side, handle: int) -> None:
        object.__setattr__(self, "_side", side)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_hash", None)

    def _do(self, what: str, *arguments: Any) -> Any:
        return object.__getattribute__(self, "_side").request(what, self, *arguments)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in NAMES:
            raise AttributeError(name)  # copy, pickle and the like ask for these: the checks' own business
        return self._do("getattr", name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._do("setattr", name, value)

    def __delattr__(self, name: str) -> None:
        self._do("delattr", name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._do("call", list(args), kwargs)

    def __repr__(self) -> str:
        return str(self._do("repr"))

    def __str__(self) -> str:
        return str(self._do("str"))

    def __format__(self, spec: str) -> str:
        return str(self._do("format", spec))

    def __hash__(self) -> int:
        cached = object.__getattribute__(self, "_hash")
        if cached is None:
            cached = int(self._do("hash"))
            object.__setattr__(self, "_hash", cached)
        return int(cached)

    def __bool__(self) -> bool:
        return bool(self._do("truth"))

    def __len__(self) -> int:
        return int(self._do("len"))

    def __iter__(self) -> Any:
        iterator = self._do("iter")
        while True:
            try:
                yield iterator._do("next")
            except StopIteration:
                return

    def __float__(self) -> float:
        return float(self._do("float"))

    def __int__(self) -> int:
        return int(self._do("int"))

    def __index__(self) -> int:
        return int(self._do("index"))

    def __round__(self, *digits: Any) -> Any:
        return self._do("round", *digits)

    def __instancecheck__(self, instance: Any) -> bool:
        side = object.__getattribute__(self, "_side")
        return bool(side.request("isinstance", instance, self))

    def __getitem__(self, key: Any) -> Any:
        return self._do("getitem", key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._do("setitem", key, value)

    def __delitem__(self, key: Any) -> None:
        self._do("delitem", key)

    def __contains__(self, item: Any) -> bool:
        return bool(self._do("contains", item))

    def __neg__(self) -> Any:
        return self._do("neg")

    def __pos__(self) -> Any:
        return self._do("pos")

    def __abs__(self) -> Any:
        return self._do("abs")

    def __invert__(self) -> Any:
        return self._do("invert")

    def __eq__(self, other: object) -> Any:
        return self._do("eq", other)

    def __ne__(self, other: object) -> Any:
        return self._do("ne", other)


def _binary(name: str) -> tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]:
    def forward(self: Proxy, other: Any) -> Any:
        return object.__getattribute__(self, "_side").request(name, self, other)

    def reflected(self: Proxy, other: Any) -> Any:
        return object.__getattribute__(self, "_side").request(name, other, self)

    return forward, reflected


for _name, _dunder in (
    ("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "truediv"), ("floordiv", "floordiv"),
    ("mod", "mod"), ("pow", "pow"), ("matmul", "matmul"), ("and_", "and"), ("or_", "or"), ("xor", "xor"),
    ("lshift", "lshift"), ("rshift", "rshift"), ("divmod", "divmod"),
):  # fmt: skip
    _forward, _reflected = _binary(_name)
    setattr(Proxy, f"__{_dunder}__", _forward)
    setattr(Proxy, f"__r{_dunder}__", _reflected)
for _name in ("lt", "le", "gt", "ge"):
    setattr(Proxy, f"__{_name}__", _binary(_name)[0])


def type_name(x: object) -> str:
    """The name of ``x``'s type, as a message names it: for a proxy, its object's type's there."""
    if isinstance(x, Proxy):
        return str(object.__getattribute__(x, "_side").request("typename", x))
    return type(x).__name__


# ---- the checks' side --------------------------------------------------------------------------------


ARITHMETIC = (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "abs", "lt", "le", "eq", "ne", "gt",
    "ge", "truth", "float", "hash", "repr", "str", "format", "round",
)  # fmt: skip
"""What the student's process may do to the checks' objects besides calling them: arithmetic, so that
a derivative rule called with the checks' Values builds on them (a second derivative)."""

BUILTIN_ERRORS = {
    name: kind
    for name, kind in vars(builtins).items()
    if isinstance(kind, type) and issubclass(kind, Exception) and kind.__module__ == "builtins"
}
"""The exceptions an error of the student's code is raised as when its type has their name."""


class Checks(Side):
    """The checks' end: it asks, and answers the student's process only calls of what it handed over."""

    def __init__(self, channel: Any, broken: Callable[[Exception], None] | None = None, pid: int | None = None) -> None:
        super().__init__(channel)
        self.broken = broken
        """What to do when the pipe breaks (``TamperedError``, ``GoneError``): the grader's process ends the
        checks there; none: raise it."""
        self.pid = pid if kernel.can_measure(pid) else None
        """The student's process's id, as the grading process started it, where the kernel's count of its
        memory can be read (``kernel``: Linux); none elsewhere. Asked before any of the student's code runs."""

    def request(self, what: str, *arguments: Any) -> Any:
        try:
            return super().request(what, *arguments)
        except (TamperedError, GoneError) as error:
            if self.broken is not None:
                self.broken(error)
            raise

    def module(self, name: str) -> Any:
        """The student's module ``name`` (their ``name.py``), imported in their process."""
        return self.request("import", name)

    def probe(self, name: str, *arguments: Any) -> Any:
        """``probe``'s helper ``name`` run in the student's process on ``arguments``."""
        return self.request("probe", name, *arguments)

    def peak_memory(self, function: Any, *arguments: Any) -> tuple[int, str]:
        """The peak memory (bytes) of ``function(*arguments)`` in the student's process, and who counted
        it: the kernel (``"kernel"``), read from here, where it can be; else the student's process
        itself (``"tracemalloc"``, which its code could misreport). Memory the process already holds
        resident (freed by its code before the call) hides from this count: ``peak_memory_with_import``
        does not let it."""
        if self.pid is None:
            return int(self.probe("peak_memory", function, *arguments)), "tracemalloc"
        pid = self.pid
        try:
            return kernel.peak_while(pid, lambda: self.probe("dropped", function, *arguments)), "kernel"
        except kernel.UnmeasuredError as error:
            raise AssertionError(f"the memory of the process your code runs in could not be counted: {error}") from None

    def peak_memory_with_import(self, name: str, function: str, *arguments: Any) -> Peak:
        """The peak memory (bytes) of importing the student's module ``name`` and calling its
        ``function(*arguments)``, and who counted it (``"kernel"`` or ``"tracemalloc"``), in this
        process, which must be one none of the student's code has run in: the count starts before the
        import, so memory the import fills and frees but keeps resident counts (it would hide from
        a count of the call alone, ``peak_memory``: a Jacobian built later reuses it). The kernel's
        count is reset, and the baseline read, only once the student's process has answered a first
        request (its bootstrap, the grader's code, has finished) and before it is asked to import."""
        self.request("typename", None)  # answered once its bootstrap is done: from here, only what we ask runs
        if self.pid is None:
            self.probe("trace")
            peak, result = self.probe("peak_memory_and_result", getattr(self.module(name), function), *arguments)
            return Peak(int(peak), "tracemalloc", result)
        pid, results = self.pid, []
        try:
            peak = kernel.peak_while(
                pid, lambda: results.append(self.probe("called", getattr(self.module(name), function), *arguments))
            )
        except kernel.UnmeasuredError as error:
            raise AssertionError(f"the memory of the process your code runs in could not be counted: {error}") from None
        return Peak(peak, "kernel", results[0])

    def cpu_seconds(self, function: Any, *arguments: Any) -> tuple[Any, float, str]:
        """``function(*arguments)`` in the student's process (with the collector set as ``probe``'s
        ``cpu_seconds`` sets it), the CPU seconds it took and who counted them: the kernel
        (``"kernel"``), read from here, where it can be; else the student's process itself (``"process_time"``)."""
        if self.pid is None:
            result, seconds = self.probe("cpu_seconds", function, *arguments)
            return result, float(seconds), "process_time"
        pid = self.pid
        try:
            (result, _), seconds = kernel.cpu_while(pid, lambda: self.probe("cpu_seconds", function, *arguments))
        except kernel.UnmeasuredError as error:
            raise AssertionError(
                f"the CPU time of the process your code runs in could not be counted: {error}"
            ) from None
        return result, seconds, "kernel"

    def answer(self, what: str, arguments: list[Any]) -> Any:
        if what == "call" and len(arguments) == 3 and type(arguments[2]) is dict:
            function, args, kwargs = arguments
            if type(args) is not list or not all(type(k) is str for k in kwargs):
                raise TamperedError("not a call")
            return function(*args, **kwargs)
        if what in ARITHMETIC:
            # done for the student's code, whose process names its line if vjpgrad refuses it; imported
            # here, in the checks' process only: the student's process must not hold vjpgrad's engine
            from vjpgrad.core import modes

            saved, modes.state.users_code_elsewhere = modes.state.users_code_elsewhere, True
            try:
                return OPERATORS[what](*arguments)
            finally:
                modes.state.users_code_elsewhere = saved
        raise PermissionError(f"the checks' objects can only be called and used in arithmetic, not {what!r}")


# ---- the student's side ------------------------------------------------------------------------------


class Student(Side):
    """The student's end: it does what the checks ask to the student's objects, and calls back the
    checks' functions it was handed (``directory``: the student's, for the line an error names)."""

    interrupted_by_keys = False
    """A ``KeyboardInterrupt`` raised while the student's code answers a check is the failure of that
    check, as ``SystemExit`` is (it ended the process, which read as a crash or tampering). A Ctrl-C
    of the teacher's reaches the checks' process and the grader too, which end the run."""

    def __init__(self, channel: Any, directory: Path, importer: Callable[[str], Any]) -> None:
        super().__init__(channel)
        self.directory = directory
        self.importer = importer
        self.keep: list[Any] = []  # the functions in ``wrapped``, alive so that their ids stay theirs

    def proxy(self, handle: int, function: bool) -> Any:
        if not function:
            return Proxy(self, handle)
        proxy = Proxy(self, handle)

        def call(*args: Any, **kwargs: Any) -> Any:  # a function, so that it binds as a method
            return proxy(*args, **kwargs)

        self.wrapped[id(call)] = handle
        self.keep.append(call)
        return call

    def answer(self, what: str, arguments: list[Any]) -> Any:
        if what == "import":
            return self._imported(str(arguments[0]))
        if what == "probe":
            from vjpgrad.course import probe

            return probe.HELPERS[str(arguments[0])](*arguments[1:])
        if what == "call":
            function, args, kwargs = arguments
            return function(*args, **kwargs)
        if what == "next":
            return next(arguments[0])
        operation = OPERATORS.get(what)
        if operation is None:
            raise TamperedError(f"no such request: {what!r}")
        return operation(*arguments)

    def _imported(self, name: str) -> Any:
        """The student's module ``name``, imported; a file Python cannot read as source because it
        holds a null byte raises a ``SyntaxError`` naming the file and the line, as another
        ``SyntaxError`` does (Python names neither: ``ValueError`` up to 3.11, then a ``SyntaxError``
        without a file)."""
        try:
            return self.importer(name)
        except (SyntaxError, ValueError) as error:
            if (isinstance(error, SyntaxError) and error.filename) or "null bytes" not in str(error):
                raise
            path = self.directory / f"{name.replace('.', os.sep)}.py"
            try:
                line = next(k for k, text in enumerate(path.read_bytes().split(b"\n"), 1) if b"\0" in text)
            except (OSError, StopIteration):
                raise error from None
            found = SyntaxError("the file holds a null byte (\\0), which Python source may not")
            found.filename, found.lineno = str(path), line
            raise found from None

    def describe(self, error: BaseException) -> dict[str, Any]:
        description = super().describe(error)
        where = None
        for frame in traceback.extract_tb(error.__traceback__):
            known = in_submission(frame.filename, self.directory)
            if known is not None:
                where = f"{known}, line {frame.lineno}, in {frame.name}"
        description["where"] = where
        if isinstance(error, SyntaxError) and error.filename:
            description["syntax"] = [error.filename, error.lineno, error.msg]
        return description

    def run(self) -> None:
        """Serve the checks until they close the pipe."""
        while True:
            try:
                message = self.receive()
            except GoneError:
                return
            self.serve(message)


INSTALLED = ("site-packages", "dist-packages")
"""Folders of installed packages: a file in one inside the student's directory (a virtual environment
kept in the course's folder) is not one of theirs."""


def in_submission(filename: str, directory: Path) -> str | None:
    """The path of the file ``filename`` in the student's ``directory``, as they know it
    (``helpers/more.py``); none for a file outside it, or inside it in a hidden folder or one of
    installed packages (``.venv/lib/python3.12/site-packages/...``)."""
    try:
        parts = Path(filename).relative_to(directory).parts
    except ValueError:
        return None
    if not parts or any(part.startswith(".") or part in INSTALLED for part in parts[:-1]):
        return None
    return str(Path(*parts))


def serve(channel: Any, directory: Path, importer: Callable[[str], Any]) -> None:
    """The student's process: answer the checks on ``channel`` until they are done, then end."""
    Student(channel, directory, importer).run()
    os._exit(0)
