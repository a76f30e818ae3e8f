"""Refusals that name what failed, and where: compile's messages point at the user's object and
line, never at a guess.

A user's object whose own code raises while compile reads its state is named with the method
that raised; a dict key whose ``__repr__`` raises is only a name in a message, so it is watched
as any key; draws from the system's entropy source (``random.SystemRandom``, ``secrets``,
``os.urandom``) are refused as random draws, at the line that drew; a side effect is refused at
the line that made it. Names a compiled function finds in ``builtins`` are watched as its
globals are: each scenario runs the same calls on twin fresh worlds, eagerly and compiled, and
compares the bits.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import dataclasses
import datetime
import importlib.util
import inspect
import logging
import os
import pickle
import random
import re
import secrets
import subprocess
import sys
import textwrap
import threading
import time
import timeit
from collections.abc import Callable, Iterator
from datetime import date
from os import urandom
from pathlib import Path
from time import perf_counter_ns
from typing import Any

import pytest
from _helpers import twin_scaled

try:
    import numpy as _numpy
    from numpy.random import default_rng as _make_generator
except ImportError:  # the Pythons CI runs without NumPy
    _numpy = None  # type: ignore[assignment]
from random import SystemRandom as _Entropy

import vjpgrad
from vjpgrad import Value
from vjpgrad.compiler import DataDependentError, record, world


def _line_of(fn: Callable[..., Any], marker: str) -> str:
    """``file:line`` of the line of ``fn``'s source that ends with ``marker``."""
    lines, first = inspect.getsourcelines(fn)
    offset = next(k for k, line in enumerate(lines) if line.rstrip().endswith(marker))
    return f"{inspect.getsourcefile(fn)}:{first + offset}"


# ---- a user's code that raises while compile reads the world -------------------------------------


class _ReprRaises:
    """A dict key whose ``__repr__`` raises: eager code never calls it."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def __repr__(self) -> str:
        raise RuntimeError("no repr here")


def test_a_dict_key_whose_repr_raises_is_watched_as_any_key() -> None:
    """Its repr only names it in messages: the key and its attributes are watched, never blamed
    on ``__getattr__``."""

    def make() -> tuple[Callable[[Value], Value], Callable[[float], None]]:
        key = _ReprRaises(2.0)
        table = {key: 1.0}

        def f(x: Value) -> Value:
            (only,) = table
            return x * only.scale * table[only]

        return f, lambda k: setattr(key, "scale", k)

    twin_scaled(make, 2.0, 2.0, 3.0, 3.0, 2.0)


class _LenRaises(list[float]):
    def __len__(self) -> int:
        raise RuntimeError("no len here")  # the failing line


def test_a_list_subclass_whose_len_raises_is_refused_naming_its_len_and_the_object() -> None:
    items = _LenRaises([2.0])

    with pytest.raises(DataDependentError) as refused:
        vjpgrad.compile(lambda x: x * items[0])(Value(1.0))
    message = str(refused.value)
    assert "__getattr__" not in message, message
    assert "can reach items" in message, message
    assert "_LenRaises.__len__" in message, message
    assert _line_of(_LenRaises, "# the failing line") in message, message
    assert "RuntimeError: no len here" in message, message


class _GetattrRaisesKeyError:
    def __init__(self) -> None:
        self._d = {"scale": 2.0}

    def __getattr__(self, name: str) -> Any:
        return self._d[name]


def test_a_method_that_raises_while_the_world_is_read_is_named_with_what_raised() -> None:
    """A ``__bytes__`` that raises (read for a buffer's content) is named as such: the advice
    about ``__getattr__`` is only for ``__getattr__``."""

    class Counter(bytearray):
        def __bytes__(self) -> bytes:
            raise ValueError("no bytes")  # the failing line

    counter = Counter(b"\x02")
    with pytest.raises(DataDependentError) as refused:
        vjpgrad.compile(lambda x: x * float(counter[0]))(Value(1.0))
    message = str(refused.value)
    assert "Counter.__bytes__" in message, message
    assert _line_of(Counter, "# the failing line") in message, message
    assert "__getattr__" not in message, message


# ---- draws from the system's entropy source ---------------------------------------------------------


_SYSTEM = random.SystemRandom()


def _system_draw(x: Value) -> Value:
    return x * _SYSTEM.random()  # the draw


def _secrets_draw(x: Value) -> Value:
    return x * float(secrets.randbelow(10) + 1)  # the draw


def _urandom_draw(x: Value) -> Value:
    return x * float(os.urandom(1)[0] + 1)  # the draw


@pytest.mark.parametrize("fn", [_system_draw, _secrets_draw, _urandom_draw], ids=["SystemRandom", "secrets", "urandom"])
def test_a_draw_from_the_systems_entropy_is_refused_naming_the_line(fn: Callable[[Value], Value]) -> None:
    with pytest.raises(DataDependentError, match=r"drew random numbers") as refused:
        vjpgrad.compile(fn)(Value(1.0))
    message = str(refused.value)
    assert _line_of(fn, "# the draw") in message, message
    assert "as Values" in message, message
    assert "__getattr__" not in message, message


_ENTROPY_CLASSES = [random.SystemRandom]
_ENTROPY_READERS = {"read": os.urandom}
_SECRETS_HELD = (secrets.randbits,)


def _drawn_through_a_list(x: Value) -> Value:
    return x * _ENTROPY_CLASSES[0]().random()  # the draw


def _drawn_through_a_dict(x: Value) -> Value:
    return x * float(_ENTROPY_READERS["read"](1)[0] + 1)  # the draw


def _drawn_through_a_tuple(x: Value) -> Value:
    return x * float(_SECRETS_HELD[0](8) + 1)  # the draw


@pytest.mark.parametrize(
    "fn",
    [_drawn_through_a_list, _drawn_through_a_dict, _drawn_through_a_tuple],
    ids=["SystemRandom in a list", "os.urandom in a dict", "secrets.randbits in a tuple"],
)
def test_a_draw_from_the_systems_entropy_held_in_a_container_is_refused(fn: Callable[[Value], Value]) -> None:
    """What draws from the system's entropy, held as an item of a container the code names rather
    than under a name of its own, was not seen: no name of it had the recording watched, and no
    generator's state shows such a draw, so every call answered the first call's number (a
    review). Held anywhere in the world, it has the recording watched."""
    with pytest.raises(DataDependentError, match=r"the system's entropy") as refused:
        vjpgrad.compile(fn)(Value(1.0))
    assert _line_of(fn, "# the draw") in str(refused.value), str(refused.value)


def test_an_entropy_reader_held_in_a_container_that_is_not_called_only_watches() -> None:
    """Holding one costs a recording its watch, nothing more: a function that never calls it is
    compiled and replayed."""
    compiled = vjpgrad.compile(lambda x: x * 2.0 if _ENTROPY_CLASSES else x)
    for _ in range(3):
        assert compiled(Value(1.5)).data == 3.0
    assert compiled.times_recorded == 1


def test_a_system_random_in_the_world_that_draws_outside_does_not_refuse() -> None:
    """Holding a SystemRandom is fine: only a draw inside a recording is refused."""
    system = random.SystemRandom()
    compiled = vjpgrad.compile(lambda x, scale: x * scale if system is not None else x)
    for _ in range(3):
        scale = Value(system.random(), requires_grad=False)
        assert compiled(Value(2.0), scale).data == 2.0 * scale.data
    assert compiled.times_recorded == 1


# ---- the clock ---------------------------------------------------------------------------------------


def _time_read(x: Value) -> Value:
    return x * (time.time() % 1.0)  # the reading


def _perf_counter_read(x: Value) -> Value:
    return x * float(perf_counter_ns() % 7 + 1)  # the reading


def _now_read(x: Value) -> Value:
    return x * float(datetime.datetime.now().microsecond + 1)  # the reading


def _today_read(x: Value) -> Value:
    return x * float(date.today().day)  # the reading


class _Timer:
    def __init__(self) -> None:
        self.clock = time.monotonic

    def read(self) -> float:
        return self.clock()  # the reading


class _Clocks:
    clock = staticmethod(time.time)


class _MyDateTime(datetime.datetime):
    pass


_TIMER = _Timer()


def _default_read(x: Value, clock: Callable[[], float] = time.time) -> Value:
    return x * (clock() % 1.0)  # the reading


def _attribute_read(x: Value) -> Value:
    return x * (_TIMER.read() % 1.0)


def _static_read(x: Value) -> Value:
    return x * (_Clocks.clock() % 1.0)  # the reading


def _subclass_read(x: Value) -> Value:
    return x * float(_MyDateTime.now().microsecond + 1)  # the reading


def _timeit_read(x: Value) -> Value:
    return x * (timeit.default_timer() % 1.0)  # the reading


_STARTED = datetime.datetime(2026, 1, 1)


def _instance_read(x: Value) -> Value:
    return x * float(_STARTED.now().microsecond + 1)  # the reading


def _clock_gettime_read(x: Value) -> Value:
    return x * (time.clock_gettime(time.CLOCK_MONOTONIC) % 1.0)  # the reading


@pytest.mark.parametrize(
    "fn",
    [
        _time_read,
        _perf_counter_read,
        _now_read,
        _today_read,
        # held where the code does not name the clock's module (a review of the change found each unseen)
        _default_read,
        _attribute_read,
        _static_read,
        _subclass_read,
        _timeit_read,
        _instance_read,
        *([_clock_gettime_read] if hasattr(time, "clock_gettime") else []),
    ],
    ids=[
        "time",
        "perf_counter_ns",
        "now",
        "today",
        "default",
        "attribute",
        "staticmethod",
        "datetime subclass",
        "timeit",
        "a datetime's now",
        *(["clock_gettime"] if hasattr(time, "clock_gettime") else []),
    ],
)
def test_a_reading_of_the_clock_is_refused_naming_the_line(fn: Callable[[Value], Value]) -> None:
    # a replay would use the recorded reading at every call: the compiled function answered the recording's
    # time for ever, without a word (a review that fuzzed compile against eager)
    with pytest.raises(DataDependentError, match=r"read the clock") as refused:
        vjpgrad.compile(fn)(Value(1.0))
    message = str(refused.value)
    where = _Timer.read if fn is _attribute_read else fn
    assert _line_of(where, "# the reading") in message, message
    assert "pass the reading in" in message, message


class _Stamp:
    """A class whose constructor reads the clock: made inside the function, at every call."""

    def __init__(self) -> None:
        self.t = time.perf_counter() % 1.0  # the reading


class _Here:
    """A class whose constructor reads the current folder."""

    def __init__(self) -> None:
        self.n = float(len(os.getcwd()))  # the reading


@dataclasses.dataclass
class _Stamped:
    n: float = 1.0

    def __post_init__(self) -> None:
        self.t = datetime.datetime.now().microsecond + 1.0  # the reading


class _Lucky:
    """A class whose constructor draws from the system's entropy, which no generator's state shows."""

    def __init__(self) -> None:
        self.k = random.SystemRandom().random()  # the reading


class _LuckyByAnotherName:
    """A constructor drawing from the system's entropy through a class held under another name."""

    def __init__(self) -> None:
        self.k = _Entropy().random()  # the reading


def _made_lucky_by_another_name(x: Value) -> Value:
    return x * _LuckyByAnotherName().k


def _lucky_by_another_name(x: Value) -> Value:
    return x * _Entropy().random()  # the reading


def _fresh_by_another_name(x: Value) -> Value:
    return x * float(_make_generator().random())  # the reading


class _Fresh:
    """A class whose constructor makes a NumPy generator seeded from the system's entropy."""

    def __init__(self) -> None:
        self.k = float(_numpy.random.default_rng().random())  # the reading


def _made_with_a_clock(x: Value) -> Value:
    return x * _Stamp().t


def _made_in_a_folder(x: Value) -> Value:
    return x * _Here().n


def _made_as_a_dataclass(x: Value) -> Value:
    return x * _Stamped().t


def _made_lucky(x: Value) -> Value:
    return x * _Lucky().k


def _made_fresh(x: Value) -> Value:
    return x * _Fresh().k


@pytest.mark.parametrize(
    ("fn", "where", "what"),
    [
        (_made_with_a_clock, _Stamp.__init__, r"read the clock"),
        (_made_in_a_folder, _Here.__init__, r"read the process's state \(os\.getcwd\)"),
        (_made_as_a_dataclass, _Stamped.__post_init__, r"read the clock"),
        (_made_lucky, _Lucky.__init__, r"the system's entropy"),
        (_made_lucky_by_another_name, _LuckyByAnotherName.__init__, r"the system's entropy"),
        (_lucky_by_another_name, _lucky_by_another_name, r"the system's entropy"),
        pytest.param(
            _fresh_by_another_name,
            _fresh_by_another_name,
            r"the system's entropy",
            marks=pytest.mark.skipif(_numpy is None, reason="NumPy is not installed"),
        ),
        pytest.param(
            _made_fresh,
            _Fresh.__init__,
            r"the system's entropy",
            marks=pytest.mark.skipif(_numpy is None, reason="NumPy is not installed"),
        ),
    ],
    ids=[
        "__init__ reads the clock",
        "__init__ reads the folder",
        "__post_init__ reads the clock",
        "__init__ draws from SystemRandom",
        "__init__ draws from SystemRandom held as another name",
        "the body draws from SystemRandom held as another name",
        "the body makes a default_rng held as another name",
        "__init__ makes a default_rng",
    ],
)
def test_a_reading_in_a_constructor_the_function_calls_is_refused(
    fn: Callable[[Value], Value], where: Callable[..., Any], what: str
) -> None:
    """A constructor's code runs before the function as a rule (the model's), so the names it reads
    do not make a recording watched; but an object made inside the function runs its constructor
    at every call, and a reading there was answered as recorded for ever (a review: the time of
    the first call, the folder before ``os.chdir``). A constructor that reads the clock, the
    process's state or the system's entropy, which no generator's state shows, has the recording
    watched."""
    with pytest.raises(DataDependentError, match=what) as refused:
        vjpgrad.compile(fn)(Value(1.0))
    assert _line_of(where, "# the reading") in str(refused.value), str(refused.value)


def test_a_constructor_that_draws_from_random_does_not_have_the_recording_watched() -> None:
    """The model's constructor draws its weights (micrograd's Neuron): a draw is refused from the
    generators' states, with or without the watch, which costs a recording about twice its time."""
    from vjpgrad.compiler import world

    class Neuron:
        def __init__(self) -> None:
            self.w = random.uniform(-1.0, 1.0)

    neuron = Neuron()
    assert not world.observe([("f", lambda x: x * neuron.w)]).may_draw


_SIZED: list[float] = [1.0, 2.0]


def _cwd_read(x: Value) -> Value:
    return x * float(len(os.getcwd()))  # the reading


def _size_read(x: Value) -> Value:
    return x * float(sys.getsizeof(_SIZED))  # the reading


def _refcount_read(x: Value) -> Value:
    return x * float(sys.getrefcount(_SIZED))  # the reading


def _limit_read(x: Value) -> Value:
    return x * float(sys.getrecursionlimit())  # the reading


def _cwd_read_by_pathlib(x: Value) -> Value:
    return x * float(len(str(Path.cwd())))  # the reading


def _cwd_read_by_resolve(x: Value) -> Value:
    return x * float(len(str(Path(".").resolve())))  # the reading


def _cwd_read_by_abspath(x: Value) -> Value:
    return x * float(len(os.path.abspath(".")))  # the reading


@pytest.mark.parametrize("fn", [_cwd_read_by_pathlib, _cwd_read_by_resolve, _cwd_read_by_abspath])
def test_the_current_folder_read_through_a_library_is_refused_at_the_users_line(fn: Callable[[Value], Value]) -> None:
    """``Path.cwd()``, ``Path(".").resolve()`` and ``os.path.abspath`` read the current folder for
    the user: a library's reading of the clock is its own, but one of the process's state is the
    user's, named at the user's line (a review found each silently stale after ``os.chdir``)."""
    with pytest.raises(DataDependentError, match=r"read the process's state \(os\.getcwd\)") as refused:
        vjpgrad.compile(fn)(Value(1.0))
    assert _line_of(fn, "# the reading") in str(refused.value)


_PARENT = os.getpid()


def _pid_read(x: Value) -> Value:
    return x * (2.0 if os.getpid() == _PARENT else 3.0)  # the reading


def _thread_read(x: Value) -> Value:
    return x * (2.0 if threading.current_thread() is threading.main_thread() else 3.0)  # the reading


def _ident_read(x: Value) -> Value:
    return x * float(threading.get_ident() % 1000 + 1)  # the reading


def _handled_read(x: Value) -> Value:
    return x * (2.0 if sys.exc_info()[0] is None else 3.0)  # the reading


@pytest.mark.parametrize(
    ("fn", "what"),
    [
        (_pid_read, "os.getpid"),
        (_thread_read, "threading.current_thread"),
        (_ident_read, "threading.get_ident"),
        (_handled_read, "sys.exc_info"),
    ],
)
def test_a_reading_of_the_process_the_thread_or_the_error_handled_is_refused(
    fn: Callable[[Value], Value], what: str
) -> None:
    """The process's id (a worker forked after the function was compiled), the calling thread (the
    tutorial says a compiled function may be called from several threads), the exception being
    handled: each was read once and answered as recorded at every call (a review: the main
    thread's branch in a worker thread, the parent's in a forked child). Refused where the user's
    code reads them, at the line."""
    with pytest.raises(DataDependentError, match=rf"read the process's state \({re.escape(what)}\)") as refused:
        vjpgrad.compile(fn)(Value(1.0))
    assert _line_of(fn, "# the reading") in str(refused.value)


_ME = threading.current_thread
_READERS = {"id": threading.get_ident}
_HANDLED = sys.exc_info


def _thread_read_under_another_name(x: Value) -> Value:
    return x * (2.0 if _ME() is threading.main_thread() else 3.0)  # the reading


def _ident_read_from_a_dict(x: Value) -> Value:
    return x * float(_READERS["id"]() % 1000 + 1)  # the reading


def _handled_read_under_another_name(x: Value) -> Value:
    return x * (2.0 if _HANDLED()[0] is None else 3.0)  # the reading


@pytest.mark.parametrize(
    ("fn", "what"),
    [
        (_thread_read_under_another_name, "threading.current_thread"),
        (_ident_read_from_a_dict, "threading.get_ident"),
        (_handled_read_under_another_name, "sys.exc_info"),
    ],
)
def test_a_reading_of_the_thread_or_the_error_handled_under_another_name_is_refused(
    fn: Callable[[Value], Value], what: str
) -> None:
    """``from threading import current_thread as me``, ``{"id": threading.get_ident}``: held under
    another name, no name had the recording watched, and the first call's reading was answered at
    every call (a review). Held anywhere, by identity, the recording is watched."""
    with pytest.raises(DataDependentError, match=rf"read the process's state \({re.escape(what)}\)") as refused:
        vjpgrad.compile(fn)(Value(1.0))
    assert _line_of(fn, "# the reading") in str(refused.value)


def test_the_functions_own_exception_read_while_it_handles_it_is_no_reading_of_the_caller() -> None:
    """``sys.exc_info()`` inside the function's own ``except`` reads the exception its own code
    raised, the same at every call: compiled, not refused (a review). Read where the function
    handles none, it is the caller's (refused above)."""

    def f(x: Value) -> Value:
        try:
            int("a")
        except ValueError:
            kind = sys.exc_info()[0]
        return x * (2.0 if kind is ValueError else 3.0)

    compiled = vjpgrad.compile(f)
    assert [compiled(Value(1.5)).data for _ in range(3)] == [3.0, 3.0, 3.0]
    assert compiled.times_recorded == 1


def test_a_thread_made_and_joined_inside_is_no_reading_of_the_calling_thread() -> None:
    """``threading.Thread`` and its ``join`` call ``current_thread()`` for themselves: threading's own
    use, not the user's reading of the thread (a review found both refused once the recording was
    watched, here by the name ``exception``)."""
    log = logging.getLogger("vjpgrad-test-threads")

    def f(x: Value) -> Value:
        out: list[int] = []
        worker = threading.Thread(target=lambda: out.append(1))
        worker.start()
        worker.join()
        try:
            return x * 2.0
        except ValueError:
            log.exception("failed")  # names exception: the recording is watched
            raise

    compiled = vjpgrad.compile(f)
    assert [compiled(Value(1.5)).data for _ in range(3)] == [3.0, 3.0, 3.0]
    assert compiled.times_recorded == 1


def test_a_librarys_own_reading_of_the_process_and_thread_is_its_own() -> None:
    """A log record notes the process's id and the thread (``logging`` reads ``os.getpid`` and
    ``threading.current_thread`` for it): the library's readings, not the function's, so a function
    that logs is compiled, even with the recording watched (it names ``getpid``)."""
    records: list[logging.LogRecord] = []

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("vjpgrad-test-process-readings")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = Kept()
    logger.addHandler(handler)
    try:

        def f(x: Value) -> Value:
            logger.info("a step")
            return x * 2.0 if os.getpid else x  # names getpid: the recording is watched

        compiled = vjpgrad.compile(f)
        assert [compiled(Value(1.5)).data for _ in range(3)] == [3.0, 3.0, 3.0]
        assert compiled.times_recorded == 1
        assert records  # the library read the process's id and the thread, in the recording
        assert records[0].process == os.getpid()
    finally:
        logger.removeHandler(handler)


def test_naming_sys_alone_does_not_watch_the_recording_for_readings() -> None:
    # the profiler that watches for readings costs a recording about three times its time: only a
    # function that names one of the process's state readings (getsizeof...) is watched so
    from vjpgrad.compiler import world

    epsilon = world.observe([("f", lambda x: x * (1 + sys.float_info.epsilon))])
    sized = world.observe([("f", lambda x: x * sys.getsizeof(x))])
    assert not epsilon.may_draw
    assert sized.may_draw


@pytest.mark.parametrize(
    ("fn", "what"),
    [
        (_cwd_read, "os.getcwd"),
        (_size_read, "sys.getsizeof"),
        (_refcount_read, "sys.getrefcount"),
        (_limit_read, "sys.getrecursionlimit"),
    ],
)
def test_a_reading_of_the_processs_state_is_refused_as_the_clocks_is(fn: Callable[[Value], Value], what: str) -> None:
    """The current folder, an object's size or reference count, the recursion limit: C functions
    whose answer moves with the process (a list's capacity grows with no item changed), which a
    replay would answer as recorded at every call (a review found each silently stale)."""
    with pytest.raises(DataDependentError, match=rf"read the process's state \({re.escape(what)}\)") as refused:
        vjpgrad.compile(fn)(Value(1.0))
    assert _line_of(fn, "# the reading") in str(refused.value)
    assert "pass the reading in" in str(refused.value)


_ERROR = ValueError("bad")


def _context_read(x: Value) -> Value:
    return x * (2.0 if _ERROR.__context__ is None else 3.0)


def _raises_the_worlds_error(x: Value) -> Value:
    fresh = _ERROR.__traceback__ is None
    try:
        raise _ERROR
    except ValueError:
        pass
    return x * (2.0 if fresh else 3.0)


class _Holder:
    error: BaseException = ValueError("v", 2.0)


def _context_args_read(x: Value) -> Value:
    return x * _Holder.error.__context__.args[0]  # type: ignore[union-attr]


def _traceback_line_read(x: Value) -> Value:
    return x * float(_Holder.error.__traceback__.tb_lineno)  # type: ignore[union-attr]


def _raise_at_one_line() -> None:
    raise _Holder.error


def _raise_at_another_line() -> None:
    raise _Holder.error


def test_what_an_exceptions_context_holds_and_its_traceback_are_watched() -> None:
    """The code may read what an exception's context holds and where its traceback points: a
    review found both silently kept when I watched the context by identity and the traceback by
    whether it had one (to spare an exception raised again between calls its new recordings).
    The context is walked and the traceback watched by identity: the bits are eager's, the
    recordings follow the changes. A generator Python put in a context is refused, saying where."""
    try:
        try:
            raise ValueError(1.0)
        except ValueError:
            raise KeyError("k") from None
    except KeyError as error:
        error.__context__ = ValueError(1.0)
        _Holder.error = error
    try:
        compiled = vjpgrad.compile(_context_args_read)
        for k in (1.0, 1.0, 2.0, 3.0):
            _Holder.error.__context__.args = (k,)  # type: ignore[union-attr]
            assert compiled(Value(1.5)).data == _context_args_read(Value(1.5)).data == 1.5 * k
        compiled = vjpgrad.compile(_traceback_line_read)
        for raised in (_raise_at_one_line, _raise_at_one_line, _raise_at_another_line):
            with contextlib.suppress(KeyError):
                raised()
            assert compiled(Value(1.5)).data == _traceback_line_read(Value(1.5)).data
        _Holder.error.__context__ = KeyError(x for x in range(3))
        with pytest.raises(DataDependentError, match=r"_Holder\.error\.__context__\.args\[0\]"):
            vjpgrad.compile(lambda x: x * (2.0 if _Holder.error is not None else 1.0))(Value(1.5))
    finally:
        _Holder.error = ValueError("v", 2.0)


def test_an_exceptions_context_and_traceback_are_watched() -> None:
    """An exception in the world holds its ``__context__`` and its ``__traceback__``, which Python
    sets as it is raised: a review found both unwatched (a replay kept the first answer), and
    raising the world's exception inside was no side effect to compile. The context is watched as
    the exception it is, the traceback by identity; raising it inside is a change, refused."""
    compiled = vjpgrad.compile(_context_read)
    try:
        for context, expected in ((None, 3.0), (None, 3.0), (KeyError("k"), 4.5), (KeyError("k"), 4.5)):
            _ERROR.__context__ = context
            assert compiled(Value(1.5)).data == _context_read(Value(1.5)).data == expected
        with pytest.raises(DataDependentError, match=r"defined at .* changed _ERROR\.__traceback__"):
            vjpgrad.compile(_raises_the_worlds_error)(Value(1.5))
    finally:
        _ERROR.__context__ = _ERROR.__traceback__ = None


def _beside_an_installed_library(
    tmp_path: Path, name: str, library: str, code: str
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``code`` run as a user's script beside the module ``name`` (its source ``library``) in a folder
    on ``sys.path`` outside the project, which compile takes for installed code (the script checks
    it): the script's path, and how its run went. The script has imported ``vjpgrad``, ``Value``
    and the module first."""
    package, project = tmp_path / "installed", tmp_path / "project"
    package.mkdir()
    project.mkdir()
    (package / f"{name}.py").write_text(library)
    script = project / "user.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(package)!r})\n"
        f"import {name}, vjpgrad\n"
        "from vjpgrad.compiler import world\n"
        f"assert world.is_library_file({name}.__file__)\n"
        "from vjpgrad import Value\n" + code
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=project)
    return script, run


def _line_of_text(path: Path, marker: str) -> str:
    """``file:line`` of the line of the file at ``path`` that ends with ``marker``."""
    lines = path.read_text().splitlines()
    return f"{path}:{next(k for k, line in enumerate(lines, 1) if line.rstrip().endswith(marker))}"


def test_a_clock_read_by_a_librarys_generated_code_is_the_librarys(tmp_path: Path) -> None:
    """A library's dataclass whose ``default_factory`` reads the clock: its ``__init__`` is code
    ``dataclasses`` made (a file named ``<string>``), called by the library, not by the user's code:
    refused as the user's reading, it named ``<string>:4`` (a second review of the change)."""
    library = (
        "import dataclasses, time\n"
        "@dataclasses.dataclass\n"
        "class Event:\n"
        "    name: str\n"
        "    at: float = dataclasses.field(default_factory=time.time)\n"
        "def record(name):\n"
        "    return Event(name)\n"
    )
    _, run = _beside_an_installed_library(
        tmp_path,
        "stamped",
        library,
        "import time\n"
        "def f(x):\n"
        "    stamped.record('step')  # the library reads the clock for its own record\n"
        "    return x * 2.0 if time is not None else x\n"
        "compiled = vjpgrad.compile(f)\n"
        "print([compiled(Value(k)).data for k in (1.0, 2.0, 3.0)])\n",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[2.0, 4.0, 6.0]"


def test_a_class_made_without_a_module_name_is_walked_as_before() -> None:
    # a class made by type() where the globals hold no __name__ has no __module__: asking whether it reads
    # the clock raised AttributeError, and compile refused the function (a review of the change)
    namespace: dict[str, Any] = {"__builtins__": builtins}
    exec("C = type('C', (), {'scale': 2.0})", namespace)
    kind = namespace["C"]
    with pytest.raises(AttributeError):
        kind.__module__  # noqa: B018 - the subject: there is none
    compiled = vjpgrad.compile(lambda x: x * kind.scale)
    assert [compiled(Value(k)).data for k in (1.0, 2.0)] == [2.0, 4.0]


def test_a_clock_read_by_a_library_inside_is_not_the_functions_reading() -> None:
    """A library's own reading (a log record's time) does not go into what the function computes."""
    import logging

    log = logging.getLogger("vjpgrad-test-clock")
    log.addHandler(logging.NullHandler())
    log.setLevel(logging.INFO)
    log.propagate = False

    def logged(x: Value) -> Value:
        log.info("step")  # the LogRecord reads time.time_ns() inside logging
        return x * 2.0

    compiled = vjpgrad.compile(logged)
    assert [compiled(Value(k)).data for k in (1.0, 2.0, 3.0)] == [2.0, 4.0, 6.0]
    assert compiled.times_recorded == 1


def _fresh_generator(x: Value) -> Value:
    return x * random.Random().random()  # the draw


def _fresh_neuron(x: Value) -> Value:
    return vjpgrad.nn.Neuron(1, nonlin=False)([x])  # the draw


@pytest.mark.parametrize("fn", [_fresh_generator, _fresh_neuron], ids=["Random()", "nn.Neuron without seed"])
def test_a_generator_made_inside_without_a_seed_is_refused_naming_the_line(fn: Callable[[Value], Value]) -> None:
    """``random.Random()`` seeds itself from the system's entropy in C, where no generator of the
    world and no profiler sees it: eager code draws anew at each call, a replay would repeat the
    recording's numbers (a model built inside without ``seed=`` would keep its first weights)."""
    seed = random.Random.seed
    with pytest.raises(DataDependentError, match=r"drew random numbers from a random.Random seeded") as refused:
        vjpgrad.compile(fn)(Value(1.0))
    assert random.Random.seed is seed  # put back as it was once the recording ends
    message = str(refused.value)
    assert _line_of(fn, "# the draw") in message, message
    assert "seed=" in message, message


def test_a_generator_made_inside_with_a_seed_draws_the_same_numbers_at_every_call() -> None:
    """A fixed seed makes the draws part of the function: eager code gives the same at each call,
    and so does the replay."""

    def seeded(x: Value) -> Value:
        return vjpgrad.nn.Neuron(2, nonlin=False, seed=3)([x, x * random.Random(5).random()])

    compiled = vjpgrad.compile(seeded)
    for k in range(3):
        assert compiled(Value(0.5 + k)).data == seeded(Value(0.5 + k)).data
    assert compiled.times_recorded == 1


def _put_back(x: Value) -> Value:
    state = random.getstate()
    drawn = random.random()  # the draw
    random.setstate(state)
    return x * drawn


def test_a_draw_whose_generator_state_is_put_back_is_still_refused() -> None:
    """Setting the state back hides the draw from a comparison of states, not from eager code,
    which draws anew at each call: the profiler sees the draw itself."""
    with pytest.raises(DataDependentError, match=r"drew random numbers from a generator whose state") as refused:
        vjpgrad.compile(_put_back)(Value(1.0))
    assert _line_of(_put_back, "# the draw") in str(refused.value), str(refused.value)


_WORLDS_SEEDED = random.Random(7)


def _seeds_the_global_generator(x: Value) -> Value:
    random.seed(0)  # the seed
    return x * 2.0


def _sets_the_global_state(x: Value) -> Value:
    random.setstate(_SAVED_STATE[0])  # the seed
    return x * 2.0


def _seeds_a_generator_of_its_world(x: Value) -> Value:
    _WORLDS_SEEDED.seed(7)  # the seed
    return x * 2.0


_SAVED_STATE: list[Any] = []


@pytest.mark.parametrize("fn", [_seeds_the_global_generator, _sets_the_global_state, _seeds_a_generator_of_its_world])
def test_seeding_a_generator_of_the_world_is_refused_even_where_its_state_was_that_already(
    fn: Callable[[Value], Value],
) -> None:
    """``random.seed(0)`` inside, in a program seeded with 0 at its top, leaves the state as it was:
    a comparison of states sees nothing, but a replay would not seed, and every draw the program
    makes after the call would differ from eager code's. The seed itself is refused, at its line."""
    saved = random.getstate()
    try:
        random.seed(0)
        _SAVED_STATE[:] = [random.getstate()]
        _WORLDS_SEEDED.seed(7)
        with pytest.raises(DataDependentError, match=r"seeded .* at .*a replay would not seed") as refused:
            vjpgrad.compile(fn)(Value(1.0))
        assert _line_of(fn, "# the seed") in str(refused.value), str(refused.value)
    finally:
        random.setstate(saved)


def test_seeding_a_generator_to_another_state_is_refused_as_a_seed_not_a_draw() -> None:
    saved = random.getstate()
    try:
        random.seed(1)  # the function then seeds 0: the state moves, and nothing was drawn
        with pytest.raises(DataDependentError, match=r"seeded random's global generator") as refused:
            vjpgrad.compile(_seeds_the_global_generator)(Value(1.0))
        assert "drew" not in str(refused.value), str(refused.value)
    finally:
        random.setstate(saved)


def test_numpys_global_seed_inside_is_refused_even_where_its_state_was_that_already() -> None:
    np = pytest.importorskip("numpy")

    def seeds(x: Value) -> Value:
        np.random.seed(0)  # the seed
        return x * 2.0

    saved, seeders = np.random.get_state(), (np.random.seed, np.random.set_state, random.seed, random.setstate)
    try:
        np.random.seed(0)
        with pytest.raises(DataDependentError, match=r"seeded NumPy's global generator") as refused:
            vjpgrad.compile(seeds)(Value(1.0))
        assert _line_of(seeds, "# the seed") in str(refused.value), str(refused.value)
        # each seeding function is its module's own again once the recording ends
        assert (np.random.seed, np.random.set_state, random.seed, random.setstate) == seeders
    finally:
        np.random.set_state(saved)


_TORCH_SEEDS: dict[str, Callable[[Any], Any]] = {
    "torch.manual_seed": lambda torch: torch.manual_seed(0),
    "its generator's manual_seed": lambda torch: torch.default_generator.manual_seed(0),
    "its generator's set_state": lambda torch: torch.default_generator.set_state(torch.random.get_rng_state()),
}


@pytest.mark.parametrize("way", list(_TORCH_SEEDS))
def test_torchs_global_seed_inside_is_refused_even_where_its_state_was_that_already(way: str) -> None:
    """PyTorch's global generator seeded by ``torch.manual_seed`` or by its own methods
    (``torch.default_generator.manual_seed(0)``, a C method the profiler sees): a replay would not
    seed it, and every later draw of the program would differ from eager code's."""
    torch = pytest.importorskip("torch")
    seed = _TORCH_SEEDS[way]

    def seeds(x: Value) -> Value:
        seed(torch)
        return x * 2.0

    refusal = _refusal_keeping_torchs_state(torch, seeds, r"seeded PyTorch's global generator", seed=0)  # its state
    seeding_line = f"{seed.__code__.co_filename}:{seed.__code__.co_firstlineno}"  # the lambda's, the user's
    assert seeding_line in refusal, refusal


def test_a_seed_an_installed_librarys_helper_makes_is_refused_too(tmp_path: Path) -> None:
    """``transformers.set_seed(0)``-style: an installed library's function seeds the global
    generators for the user's function, whose code names no random module (so no profiler watches
    the run). Where the state was that seed's already, it was accepted, and every later draw of the
    program differed from eager code's (a review's case)."""
    script, run = _beside_an_installed_library(
        tmp_path,
        "seedlib",
        "import random\ndef set_seed(s):\n    random.seed(s)\n",
        "import random\n"
        "def step(x):\n"
        "    seedlib.set_seed(0)  # the seed\n"
        "    return x * 2.0\n"
        "random.seed(0)\n"
        "try:\n"
        "    vjpgrad.compile(step)(Value(1.0))\n"
        "except vjpgrad.DataDependentError as refused:\n"
        "    print(refused)\n",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "step seeded random's global generator at" in run.stdout, run.stdout
    assert _line_of_text(script, "# the seed") in run.stdout, run.stdout


def test_a_seeding_functions_own_library_is_its_package_or_its_file_never_a_neighbour() -> None:
    """The files whose calls of a seeding function are its library's own (``fork_rng``'s): matched by
    a plain prefix, torch's folder took in torchvision's and torchgen's, and random's (the standard
    library's folder) site-packages where it lies inside (a review of the change)."""
    home = record._home(random)
    assert home == random.__file__
    assert not (os.path.join(os.path.dirname(random.__file__), "site-packages", "x.py")).startswith(home)
    np = pytest.importorskip("numpy")
    home = record._home(np)
    assert home.endswith(os.sep)
    assert (os.path.dirname(np.__file__) + os.sep + "random" + os.sep + "x.py").startswith(home)
    assert not (os.path.dirname(np.__file__) + "ro" + os.sep + "x.py").startswith(home)  # numpyro


def test_torchs_fork_rng_inside_puts_the_state_back_and_is_not_a_seed() -> None:
    """``torch.random.fork_rng`` saves the state and sets it back (``set_rng_state``) on leaving: no
    change a replay needs to make, replayed as before (it was refused as a seed at the ``with``)."""
    torch = pytest.importorskip("torch")

    def f(x: Value) -> Value:
        with torch.random.fork_rng():
            pass
        return x * 2.0

    compiled = vjpgrad.compile(f)
    assert [compiled(Value(k)).data for k in (1.0, 2.0, 3.0)] == [2.0, 4.0, 6.0]
    assert compiled.times_recorded == 1


def test_a_draw_inside_torchs_fork_rng_is_refused_though_the_state_is_put_back() -> None:
    """``with torch.random.fork_rng(): r = float(torch.rand(()))`` draws and puts the state back:
    no state shows the draw, and the compiled function gave the first call's number at every call
    where eager code draws anew (the program draws between calls; a review)."""
    torch = pytest.importorskip("torch")

    def f(x: Value) -> Value:
        with torch.random.fork_rng():  # the draw is put back here
            r = float(torch.rand(()))
        return x * r

    refusal = _refusal_keeping_torchs_state(torch, f, r"drew random numbers from a generator whose state it")
    assert _line_of(f, "# the draw is put back here") in refusal, refusal


def test_a_seed_inside_torchs_fork_rng_is_refused_as_a_seed_not_as_a_draw() -> None:
    """The block puts back a state its seed moved: the refusal names the seed, at its line (a review
    of the refusal of a draw inside the block, which said "drew" at the ``with``)."""
    torch = pytest.importorskip("torch")

    def f(x: Value) -> Value:
        with torch.random.fork_rng():
            torch.manual_seed(0)  # the seed
        return x * 2.0

    refusal = _refusal_keeping_torchs_state(torch, f, r"seeded PyTorch's global generator")
    assert _line_of(f, "# the seed") in refusal, refusal


_TORCH_READS: dict[str, Callable[[Any], float]] = {
    "torch.initial_seed()": lambda torch: float(torch.initial_seed() % 7 + 1),
    "torch.get_rng_state()": lambda torch: float(torch.get_rng_state()[0] + 1),
    "torch.default_generator.initial_seed()": lambda torch: float(torch.default_generator.initial_seed() % 7 + 1),
}


def test_reading_torchs_global_seed_through_a_name_of_ones_own_is_refused() -> None:
    """``from torch import initial_seed as s0``: held under a name of the user's, it was unseen (the
    recording was watched by the names ``initial_seed`` and ``get_rng_state`` alone; a review)."""
    torch = pytest.importorskip("torch")
    s0 = torch.initial_seed

    def reads(x: Value) -> Value:
        return x * float(s0() % 7 + 1)  # the reading

    refusal = _refusal_keeping_torchs_state(torch, reads, r"read the seed or the state of PyTorch's global generator")
    assert _line_of(reads, "# the reading") in refusal, refusal


@pytest.mark.parametrize("way", list(_TORCH_READS))
def test_reading_torchs_global_seed_or_state_is_refused_at_its_line(way: str) -> None:
    """What PyTorch's global generator was seeded with, or its state, read inside a compiled
    function was answered as recorded for ever: a ``torch.manual_seed(k)`` outside between calls
    changed what eager code reads, and the replay gave the first call's number (a review). Refused
    at the line, as a reading of ``random``'s state (``getstate``) is."""
    torch = pytest.importorskip("torch")
    read = _TORCH_READS[way]

    def reads(x: Value) -> Value:
        return x * read(torch)

    refusal = _refusal_keeping_torchs_state(torch, reads, r"read the seed or the state of PyTorch's global generator")
    reading_line = f"{read.__code__.co_filename}:{read.__code__.co_firstlineno}"  # the lambda's, the user's
    assert reading_line in refusal, refusal


def test_torchs_fork_rng_reading_the_state_it_puts_back_is_no_reading_of_the_users() -> None:
    """``fork_rng`` reads the state to put it back: with no draw inside, nothing is refused."""
    torch = pytest.importorskip("torch")

    def f(x: Value) -> Value:
        with torch.random.fork_rng():
            y = x * 2.0
        return y

    compiled = vjpgrad.compile(f)
    assert [compiled(Value(1.5)).data for _ in range(3)] == [3.0, 3.0, 3.0]
    assert compiled.times_recorded == 1


def _refusal_keeping_torchs_state(torch: Any, f: Callable[[Value], Value], match: str, seed: int | None = None) -> str:
    """The refusal of compiling ``f`` (matching ``match``), after seeding PyTorch's global generator
    with ``seed`` where given; its state as it was before, whatever ``f`` did to it."""
    saved = torch.random.get_rng_state()
    try:
        if seed is not None:
            torch.manual_seed(seed)
        with pytest.raises(DataDependentError, match=match) as refused:
            vjpgrad.compile(f)(Value(1.0))
        return str(refused.value)
    finally:
        torch.random.set_rng_state(saved)


def test_a_seeding_function_pickled_while_a_recording_runs_reads_back_as_itself() -> None:
    """The seeding functions stand replaced while recordings run: one pickled meanwhile (by this
    function, or another thread) pickles by its module and name, as the original does."""
    import pickle

    def f(x: Value) -> Value:
        seeders = pickle.loads(pickle.dumps({"seed": random.seed, "setstate": random.setstate}))
        same = seeders == {"seed": random.seed, "setstate": random.setstate}
        return x * (1.0 if same else 0.0)

    assert vjpgrad.compile(f)(Value(2.0)).data == 2.0  # it raised PicklingError: not the same object as


# ---- side effects, at the line that made them ----------------------------------------------------------


def _counted(x: Value) -> Value:
    y = x * 2.0
    _counted.calls += 1  # type: ignore[attr-defined]  # the change
    return y


_COUNTER = bytearray(1)


def _bytes_counted(x: Value) -> Value:
    y = x * 2.0
    _COUNTER[0] += 1  # the change
    return y


_HISTORY: list[float] = []


def _remembered(x: Value) -> Value:
    y = x * 2.0
    _HISTORY.append(1.0)  # the change
    return y


class _Model:
    def __init__(self) -> None:
        self.w = Value(2.0)
        self.steps = 0

    def __call__(self, x: Value) -> Value:
        y = x * self.w
        self.steps += 1  # the change
        return y


@pytest.mark.parametrize(
    ("fn", "defined"),
    [(_counted, _counted), (_bytes_counted, _bytes_counted), (_remembered, _remembered), (_Model(), _Model.__call__)],
    ids=["function attribute", "bytearray", "list", "instance attribute"],
)
def test_a_side_effect_is_refused_naming_the_line_that_made_it(fn: Any, defined: Any) -> None:
    _counted.calls = 0  # type: ignore[attr-defined]
    with pytest.raises(DataDependentError, match=r"changed .* while vjpgrad.compile recorded") as refused:
        vjpgrad.compile(fn)(Value(1.0))
    message = str(refused.value)
    assert message.split("(at ")[1].startswith(_line_of(defined, "# the change")), message  # named first
    assert "defined at" not in message, message


def test_a_side_effect_made_by_a_helper_is_named_at_the_helpers_line() -> None:
    log: list[float] = []

    def remember(y: Value) -> None:
        log.append(0.0)  # the change

    def f(x: Value) -> Value:
        y = x * 3.0
        remember(y)
        return y

    with pytest.raises(DataDependentError) as refused:
        vjpgrad.compile(f)(Value(1.0))
    assert _line_of(remember, "# the change") in str(refused.value), str(refused.value)


# ---- names found in builtins ------------------------------------------------------------------------------


@pytest.fixture
def builtins_kept() -> Iterator[None]:
    """Builtins as they were, whatever a test rebinds or adds there."""
    kept = dict(vars(builtins))
    try:
        yield
    finally:
        for name in set(vars(builtins)) - set(kept):
            delattr(builtins, name)
        for name, x in kept.items():
            if vars(builtins).get(name, kept) is not x:
                setattr(builtins, name, x)


def _reads_builtin_scale(x: Value) -> Value:
    return x * VJPGRAD_TEST_SCALE  # type: ignore[name-defined]  # noqa: F821  # set in builtins by the test


_PAIR = [1.0, 2.0]


def _reads_builtin_len(x: Value) -> Value:
    return x * float(len(_PAIR))


def _reads_builtin_or_default(x: Value) -> Value:
    try:
        scale = VJPGRAD_TEST_SCALE  # type: ignore[name-defined]  # absent at first
    except NameError:
        scale = 1.0
    return x * scale


@pytest.mark.usefixtures("builtins_kept")
def test_a_name_set_in_builtins_is_watched() -> None:
    def make() -> tuple[Callable[[Value], Value], Callable[[float], None]]:
        return _reads_builtin_scale, lambda k: setattr(builtins, "VJPGRAD_TEST_SCALE", k)

    twin_scaled(make, 2.0, 2.0, 3.0, 3.0, 2.0)


@pytest.mark.usefixtures("builtins_kept")
def test_a_builtin_rebound_is_watched() -> None:
    original = builtins.len

    def make() -> tuple[Callable[[Value], Value], Callable[[float], None]]:
        def change(k: float) -> None:
            # rebound to count the pair as 3 (everything else as Python does: vjpgrad itself calls len)
            counted = lambda items: 3 if items is _PAIR else original(items)  # noqa: E731
            builtins.len = original if k == 2.0 else counted  # type: ignore[assignment]

        return _reads_builtin_len, change

    try:
        twin_scaled(make, 2.0, 2.0, 3.0, 3.0, 2.0)
    finally:
        builtins.len = original


@pytest.mark.usefixtures("builtins_kept")
def test_a_builtin_absent_at_recording_and_set_later_is_watched() -> None:
    def make() -> tuple[Callable[[Value], Value], Callable[[float], None]]:
        def change(k: float) -> None:
            if k == 2.0:
                vars(builtins).pop("VJPGRAD_TEST_SCALE", None)
            else:
                builtins.VJPGRAD_TEST_SCALE = k  # type: ignore[attr-defined]

        return _reads_builtin_or_default, change

    twin_scaled(make, 2.0, 2.0, 3.0, 3.0, 2.0)


@pytest.mark.usefixtures("builtins_kept")
def test_a_dict_set_in_builtins_is_watched_in_place() -> None:
    def make() -> tuple[Callable[[Value], Value], Callable[[float], None]]:
        builtins.VJPGRAD_TEST_SETTINGS = {"scale": 2.0}  # type: ignore[attr-defined]

        def f(x: Value) -> Value:
            return x * VJPGRAD_TEST_SETTINGS["scale"]  # type: ignore[name-defined]  # noqa: F821

        return f, lambda k: builtins.VJPGRAD_TEST_SETTINGS.__setitem__("scale", k)  # type: ignore[attr-defined]

    twin_scaled(make, 2.0, 2.0, 3.0, 3.0, 2.0)


# ---- the draw watch is set only where the world may draw ------------------------------------------------


class _Layer:
    """micrograd's way: weights drawn from ``random`` when the layer is made, never when called."""

    def __init__(self) -> None:
        self.w = Value(random.uniform(-1.0, 1.0))

    def __call__(self, x: Value) -> Value:
        return x * self.w


def test_a_recording_is_profiled_only_where_the_world_may_draw() -> None:
    """The profiler that finds a draw's line doubles a recording's time: it is set where the
    world holds a generator or its code names what draws, and not for a model whose weights
    were drawn when it was made."""
    layer = _Layer()
    rng = random.Random(0)

    def plain(x: Value) -> Value:
        return layer(x) * 2.0

    def names_random(x: Value) -> Value:
        return x * 2.0 if random is not None else x

    def holds_a_generator(x: Value) -> Value:
        return x * 2.0 if rng is not None else x

    def names_secrets(x: Value) -> Value:
        return x * 2.0 if secrets is not None else x

    def draws_through_urandom(x: Value) -> Value:
        return x * float(urandom(1)[0])

    def holds_a_system_random(x: Value) -> Value:
        return x * _SYSTEM.uniform(1.0, 2.0)  # `random` not named: the SystemRandom alone

    assert not world.observe([("plain", plain)]).may_draw
    for fn in (names_random, holds_a_generator, names_secrets, draws_through_urandom, holds_a_system_random):
        assert world.observe([(fn.__name__, fn)]).may_draw, fn.__name__
    profiled: list[Any] = []
    watch = record.DrawWatch([], world.observe([("plain", plain)]).may_draw)
    previous = sys.getprofile()
    with watch:
        profiled.append(sys.getprofile())
    assert profiled == [previous]


def _as_library(source: str, name: str) -> Any:
    """A function compiled as if it were in Python's library (its file is ``random``'s): the
    world watches it by identity, never reading the names its code uses."""
    namespace: dict[str, Any] = {"random": random}
    exec(compile(source, random.__file__, "exec"), namespace)  # the test's own source
    return namespace[name]


def test_a_draw_the_users_code_does_not_name_is_refused_all_the_same() -> None:
    """A library's function that draws from ``random``'s global generator, though the user's
    code names no random module: refused all the same (the generator's state changed), naming
    the function's definition."""
    jitter = _as_library("def jitter():\n    return 1.0 + random.random()\n", "jitter")

    def f(x: Value) -> Value:
        return x * jitter()

    with pytest.raises(DataDependentError, match=r"\(defined at .*\) drew random numbers from random's global"):
        vjpgrad.compile(f)(Value(1.0))


def test_a_model_found_on_sys_path_outside_the_current_folder_is_refused_naming_that_folder(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # code on sys.path outside the project counts as installed code, which compile never looks
    # into: its weights cannot be found, and the refusal says why, naming the folder
    code = tmp_path / "elsewhere"
    code.mkdir()
    (code / "far_model.py").write_text(
        "from vjpgrad import Value\n\n"
        "class Model:\n"
        "    def __init__(self):\n"
        "        self.w = Value(2.0)\n\n"
        "    def __call__(self, x):\n"
        "        return self.w * x\n"
    )
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.chdir(project)
    monkeypatch.delitem(sys.modules, "far_model", raising=False)
    import far_model

    model = far_model.Model()
    step = vjpgrad.compile(lambda x: model(x))
    with pytest.raises(DataDependentError) as refused:
        step(Value(3.0))
    message = str(refused.value)
    assert "cannot find where" in message
    assert f"{code}{os.sep}" in message
    assert "sys.path" in message


@pytest.mark.parametrize(
    ("step", "says"),
    [
        (lambda model, x: (model.zero_grad(), model(x))[1], "zero_grad"),
        (lambda model, x: (setattr(model.parameters()[0], "data", 0.5), model(x))[1], "step()"),
        (lambda model, x: model(x) * model.parameters()[0].grad, "step()"),
    ],
    ids=["zero_grad inside", ".data assigned inside", ".grad read inside"],
)
def test_a_training_steps_gradient_chores_inside_are_refused_saying_to_do_them_outside(
    step: Callable[[Any, list[Value]], Value], says: str
) -> None:
    """A PyTorch training step's shape (zero_grad, forward, backward, step) inside one compiled
    function: what touches ``.grad`` or ``.data`` is refused with what to do, not with the advice
    for a decision on a Value's number."""
    model = vjpgrad.nn.Neuron(2, nonlin=False, seed=0)
    with pytest.raises(DataDependentError) as refused:
        vjpgrad.compile(lambda x: step(model, x))([Value(1.0), Value(2.0)])
    message = str(refused.value)
    assert "outside the compiled function" in message, message
    assert says in message, message
    assert "max, relu" not in message, message


def _copied(x: Value) -> Value:
    return x * copy.copy(x)  # the copy


def test_a_copy_of_a_value_made_inside_is_refused_naming_the_copy_and_the_line() -> None:
    """``copy.copy`` (or deepcopy, pickle) makes a Value from the number of the one being recorded:
    refused where it is made, as reading the number is, not later as a Value from nowhere."""
    with pytest.raises(DataDependentError, match=r"copying or pickling a Value") as refused:
        vjpgrad.compile(_copied)(Value(2.0))
    message = str(refused.value)
    assert _line_of(_copied, "# the copy") in message, message
    assert "made outside it" not in message, message


_WORLDS_GENERATOR = random.Random(0)


def _forked(x: Value) -> Value:
    fork = random.Random(1)
    fork.setstate(_WORLDS_GENERATOR.getstate())  # the read
    return x * fork.random()


def test_reading_a_generators_state_is_refused_as_a_draw_would_be() -> None:
    """A generator made inside from the state of one the world holds draws what that one would:
    eager code follows the world's generator as it moves, a replay would not."""
    with pytest.raises(DataDependentError, match=r"read the state of") as refused:
        vjpgrad.compile(_forked)(Value(1.0))
    assert _line_of(_forked, "# the read") in str(refused.value), str(refused.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: copy.copy(random.Random(5)),
        lambda: copy.deepcopy(random.Random(5)),
        lambda: pickle.loads(pickle.dumps(random.Random(5))),  # the test's own bytes
    ],
    ids=["copy", "deepcopy", "pickle"],
)
def test_a_copy_of_a_seeded_generator_made_inside_draws_the_same_at_every_call(make: Callable[[], Any]) -> None:
    """A copy is made unseeded and then given its original's state: as deterministic as the
    original, so replayed, not refused as seeded from the system's entropy."""

    def drawn(x: Value) -> Value:
        return x * make().random()

    compiled = vjpgrad.compile(drawn)
    assert [compiled(Value(1.0)).data for _ in range(3)] == [drawn(Value(1.0)).data] * 3
    assert compiled.times_recorded == 1


def test_an_argument_that_holds_itself_is_refused_with_a_type_error_that_says_so() -> None:
    """A list that holds itself has no structure to key a recording by: a clear TypeError, not
    a RecursionError from deep inside."""
    looped: list[Any] = [Value(1.0)]
    looped.append(looped)
    with pytest.raises(TypeError, match=r"holds itself"):
        vjpgrad.compile(lambda x, a: x * 2.0)(Value(1.0), looped)


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_a_copy_of_a_users_object_made_inside_gives_eagers_bits_at_every_call(copier: Callable[[Any], Any]) -> None:
    """``copy.copy`` of a user's object caches its class's slot names on the class
    (``copyreg``'s ``__slotnames__``) the first time: Python's cache, not the function's side
    effect, so the first call is no refusal; a number changed on the object is still seen."""

    def make() -> Any:
        settings = type("Settings", (), {})()  # a class of its own: copyreg has cached nothing on it
        settings.scale = 1.0
        return (lambda x: x * copier(settings).scale), lambda k: setattr(settings, "scale", k)

    twin_scaled(make)
    fn, _ = make()
    compiled = vjpgrad.compile(fn)
    for _ in range(4):
        compiled(Value(1.5))
    assert compiled.times_recorded == 2  # once more with the cache there, not at every call


def test_a_copy_of_a_dataclass_made_inside_is_no_refusal() -> None:
    """A dataclass's methods compare with ``is``, so which of the world's strings and numbers are
    one object is watched; the slot names ``copyreg`` caches on its class at the first
    ``copy.copy`` are no change of the world there either (an outside review found the first
    call refused, naming the class's ``__hash__``)."""

    def make() -> Any:
        config_class = dataclasses.make_dataclass("Config", [("scale", float, dataclasses.field(default=1.0))])
        config = config_class()  # a class of its own: copyreg has cached nothing on it
        return (lambda x: x * copy.copy(config).scale), lambda k: setattr(config, "scale", k)

    twin_scaled(make)
    fn, _ = make()
    compiled = vjpgrad.compile(fn)
    for _ in range(4):
        compiled(Value(1.5))
    assert compiled.times_recorded == 2  # once more with the cache there, not at every call


def test_a_classs_annotations_read_inside_are_no_side_effect() -> None:
    """``C.__annotations__`` of a class with none is made by Python the first time it is read
    (an empty dict put in the class's namespace): Python's, as ``copyreg``'s cache is, not the
    function's side effect, so the first call is no refusal; a number of the class's is still
    seen."""

    def make() -> Any:
        plain = type("Plain", (), {"scale": 1.0})  # no annotations yet
        return (lambda x: x * plain.scale + len(plain.__annotations__)), lambda k: setattr(plain, "scale", k)

    twin_scaled(make)
    fn, _ = make()
    compiled = vjpgrad.compile(fn)
    for _ in range(4):
        compiled(Value(1.5))
    assert compiled.times_recorded == 2  # once more with the dict there, not at every call


def test_a_class_attribute_set_or_deleted_while_recording_is_named_by_its_name() -> None:
    """A side effect on a class's namespace names the attribute (``Registry.seen``), not the
    position of a key in the class's ``__dict__``."""
    registry = type("Registry", (), {"count": 0})

    def registers(x: Value) -> Value:
        registry.seen = True  # type: ignore[attr-defined]  # the change
        return x * 2.0

    def forgets(x: Value) -> Value:
        del registry.count  # type: ignore[attr-defined]
        return x * 2.0

    with pytest.raises(DataDependentError, match=r"changed Registry\.seen \(added\) while") as refused:
        vjpgrad.compile(registers)(Value(1.0))
    assert _line_of(registers, "# the change") in str(refused.value)
    with pytest.raises(DataDependentError, match=r"changed Registry\.count \(removed\) while"):
        vjpgrad.compile(forgets)(Value(1.0))


def test_a_decimal_context_whose_flags_its_arithmetic_set_is_refused_saying_so() -> None:
    """Decimal arithmetic sets its context's flags (``Inexact``, ``Rounded``), which a replay would
    not: refused, as any side effect, but the message said only that the function "changed ctx",
    which a reader's code never does. It names the flags and how to keep them out of the world."""
    import decimal

    ctx = decimal.Context(prec=6)

    def third(x: Value) -> Value:
        return x * float(ctx.divide(decimal.Decimal(1), decimal.Decimal(3)))

    with pytest.raises(
        DataDependentError, match=r"changed ctx \(its flags, which decimal's arithmetic sets"
    ) as refused:
        vjpgrad.compile(third)(Value(1.5))
    assert "ctx.copy()" in str(refused.value)
    ctx.prec = 7  # a setting changed: the message it had (a reader's own change)
    ctx.clear_flags()

    def sets(x: Value) -> Value:
        ctx.prec = 8
        return x * 2.0

    with pytest.raises(DataDependentError, match=r"changed ctx while") as refused:
        vjpgrad.compile(sets)(Value(1.5))
    assert "its flags" not in str(refused.value)


NUMPY_RANDOM_NOT_YET_IMPORTED = textwrap.dedent(
    """
    import sys

    import numpy as np

    import vjpgrad
    from vjpgrad import Value

    assert "numpy.random" not in sys.modules  # import numpy does not import it


    def seeded(x):
        return x * float(np.random.default_rng(0).normal())  # its own generator: the same at every call


    def draws(x):
        return x * float(np.random.random())  # the global generator


    compiled = vjpgrad.compile(seeded)
    print(*(repr(compiled(Value(1.5)).data) for _ in range(3)), repr(seeded(Value(1.5)).data))
    try:
        vjpgrad.compile(draws)(Value(1.5))
    except vjpgrad.DataDependentError as refused:
        print("refused:", refused)
    """
)


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="NumPy is not installed")
def test_numpy_random_imported_while_recording_is_no_draw_and_a_draw_from_it_still_is(tmp_path: Path) -> None:
    """``import numpy`` leaves ``numpy.random`` to be imported where it is first used: a function
    that makes a seeded generator of its own (``np.random.default_rng(0)``) imports it while it is
    recorded, and the global generator that appears was not drawn from. A draw from that global
    generator made on its first use is refused all the same."""
    script = tmp_path / "first_use.py"
    script.write_text(NUMPY_RANDOM_NOT_YET_IMPORTED)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    replayed, refusal = run.stdout.splitlines()
    assert len(set(replayed.split())) == 1, replayed  # three compiled calls, then eager: one number
    assert refusal.startswith("refused: draws"), refusal
    assert "NumPy's global generator" in refusal, refusal
