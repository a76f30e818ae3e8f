"""Per-thread switches: whether operations record a graph, and anomaly detection.

The state is a ``threading.local`` so that ``no_grad()`` in one thread never changes what
another thread records, as in PyTorch. ``state.recording`` holds what ``vjpgrad.compile`` or
``vjpgrad.vmap`` records into while it runs a function: any ``Recorder`` (below), the one
interface through which the core calls the recording hooks (``vjpgrad.recording``, above the
core, which never imports them).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import os
import sys
import sysconfig
import threading
import warnings
from collections.abc import Callable, Generator
from types import FrameType, TracebackType
from typing import Any, ParamSpec, Protocol, TypeVar, overload

_P = ParamSpec("_P")
_R = TypeVar("_R")
_Y = TypeVar("_Y")
_S = TypeVar("_S")
_B = TypeVar("_B", bound="_BareDecorator")


class Recorder(Protocol):
    """What the core calls on ``state.recording`` while ``vjpgrad.compile`` or ``vjpgrad.vmap``
    records a function: the one interface between the engine and the recording hooks
    (``vjpgrad.recording.Recording`` is the one implementation; the core never imports it, and
    mypy checks it against this wherever one is assigned to ``state.recording``)."""

    def record(self, node: Any, op: Any, a: Any, da: Any, b: Any, db: Any) -> None:
        """Fill ``node`` (``graph.make``'s new ``graph.Node``, its number set) as the operation
        ``op`` (an ``ops.Op``) of ``a`` and ``b``, with what each edge saved (``da``, ``db``),
        and keep it: ``graph.make`` calls this in place of filling the node itself."""
        ...

    def made_leaf(self, leaf: Any) -> None:
        """``Value(...)`` made ``leaf`` inside the recorded function (``Value.__init__`` calls it, and
        ``value.from_floats`` for each Value of a Vector of floats)."""
        ...

    def fail(self, error: BaseException) -> None:
        """A read of a Value's number was refused (``refuse_number`` calls it with the error it
        raises): the ``Recording`` keeps the first, so that a user's ``except`` cannot swallow it."""
        ...

    def raised(self, refusal: BaseException) -> None:
        """An error was raised for a Value's number (``raised_for_a_number`` calls it with the
        refusal to raise if the function catches that error and returns)."""
        ...


class _ThreadState(threading.local):
    grad_enabled: bool = True
    detect_anomaly: bool = False
    transform_depth: int = 0  # how many function transforms (grad, jacobian...) are running
    recording: Recorder | None = None  # what vjpgrad.compile or vmap collects while it records a function
    refusal: str = ""  # while set, reading a Value's number raises with this message
    refusal_advice: str = ""  # and this advice, unless the refused operation has its own
    refusal_type: type[Exception] = RuntimeError
    # what refuses a comparison or an `if` on a Value: the refusal above, or (inside a custom rule,
    # whose pieces are fine) an enclosing one, or none: (message, type, advice) as those three
    branch_refusal: tuple[str, type[Exception], str] | None = None
    users_code_elsewhere: bool = False  # the user's code runs in another process (the course's student's)


state = _ThreadState()

switches_on = [0]
"""How many switches are on, in all threads together. While it is 0 every thread has the
defaults (recording, no anomaly check), so an operation need not read the thread-local
state at all: one list read instead of two thread-local reads, about 80 ns of a node."""
grad_switches = [0]
"""How many ``no_grad`` and ``enable_grad`` switches are on, in all threads together: while it is 0
grad mode is on in every thread, so a recording need not read the thread-local flag."""
anomaly_switches = [0]
"""How many ``detect_anomaly`` switches are on, in all threads together (0: no thread checks)."""
_switch_lock = threading.Lock()


class _Switch:
    """A context manager and decorator that sets one per-thread flag and restores it."""

    _flag: str
    _value: bool
    _counted: list[int]  # the count of this kind of switch on, in all threads (besides switches_on)

    def __init__(self) -> None:
        self._saved: list[bool] = []

    def __enter__(self) -> None:
        self._saved.append(getattr(state, self._flag))
        setattr(state, self._flag, self._value)
        with _switch_lock:
            switches_on[0] += 1
            self._counted[0] += 1

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        setattr(state, self._flag, self._saved.pop())
        with _switch_lock:
            switches_on[0] -= 1
            self._counted[0] -= 1

    def __call__(self, function: Callable[_P, _R]) -> Callable[_P, _R]:
        """Use as a decorator: the function runs with the flag set. The body of a generator
        function runs with it set too, step by step, while the code that consumes the
        generator keeps its own setting between steps (as PyTorch's decorators do)."""
        if inspect.isgeneratorfunction(function):
            return _generator_wrapper(type(self), function)  # type: ignore[return-value]  # narrowed by the check

        @functools.wraps(function)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with type(self)():
                return function(*args, **kwargs)

        return wrapper


def _generator_wrapper(
    switch: type[_Switch], function: Callable[_P, Generator[_Y, _S, _R]]
) -> Callable[_P, Generator[_Y, _S, _R]]:
    """A generator function whose body runs with ``switch`` on: each resumption (``next``,
    ``send``, ``throw``, ``close``) enters the switch, and leaves it at the next yield."""

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> Generator[_Y, _S, _R]:
        with switch():
            generator = function(*args, **kwargs)
        try:
            with switch():
                item = next(generator)
            while True:
                try:
                    sent = yield item
                except GeneratorExit:
                    with switch():
                        generator.close()
                    raise
                except BaseException as error:  # every exception thrown in goes on into the body
                    with switch():
                        item = generator.throw(error)
                else:
                    with switch():
                        item = generator.send(sent)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # the generator's own return value

    return wrapper


class _BareDecorator(_Switch):
    """A switch that also decorates without parentheses: ``@no_grad`` as ``@no_grad()``."""

    @overload
    def __new__(cls: type[_B]) -> _B: ...

    @overload
    def __new__(cls, function: Callable[_P, _R]) -> Callable[_P, _R]: ...  # type: ignore[misc]  # a bare decorator returns the function, as torch.no_grad's __new__ does

    def __new__(cls, function: Any = None) -> Any:
        if function is None:
            return super().__new__(cls)
        if not callable(function):
            raise TypeError(
                f"{cls.__name__} takes no arguments, or decorates a function (@{cls.__name__}); "
                f"got {type(function).__name__}"
            )
        return cls()(function)


class no_grad(_BareDecorator):  # noqa: N801 - named like torch.no_grad, which users know
    """Operations inside record no graph: their results are constants.

    Use it for optimizer steps and evaluation. It is a context manager
    (``with vjpgrad.no_grad(): ...``) and a decorator (``@vjpgrad.no_grad()`` or
    ``@vjpgrad.no_grad``; a generator function's body runs without grad too); its state is
    per thread.
    """

    _flag = "grad_enabled"
    _value = False
    _counted = grad_switches


class enable_grad(_BareDecorator):  # noqa: N801 - named like torch.enable_grad
    """Operations inside record a graph again, even within ``no_grad``."""

    _flag = "grad_enabled"
    _value = True
    _counted = grad_switches


class detect_anomaly(_Switch):  # noqa: N801 - named like torch.autograd.detect_anomaly
    """Inside, a backward pass that produces nan raises ``FloatingPointError``.

    Nodes made inside remember the file and line that made them, and the error names the
    operation and that place. Like PyTorch's anomaly mode it slows operations down: use it
    to find a bug, not in production. Its state is per thread.
    """

    _flag = "detect_anomaly"
    _value = True
    _counted = anomaly_switches


def is_grad_enabled() -> bool:
    """Whether operations in this thread currently record a graph."""
    return state.grad_enabled


class DataDependentError(RuntimeError):
    """``vjpgrad.compile`` refuses a function it could not replay exactly, naming the line.

    Raised while a function is recorded when it reads a Value's number (``.data``, ``float()``,
    ``if`` on a Value, a comparison...), calls ``backward()`` inside, keeps a Value it computed,
    or changes a list it was given: a replay would silently differ from eager code, so compile
    refuses instead. Move the decision out of the function, use a vjpgrad operation, or call it
    uncompiled. A ``RuntimeError``, as PyTorch's tracing errors are."""

    __module__ = "vjpgrad"  # a traceback names it as users import it: vjpgrad.DataDependentError


def refuse_number(what: str, instead: str | None = None) -> None:
    """Inside ``refusing_numbers`` (``vjpgrad.compile``'s recording, a custom rule called with
    Values), refuse Python that turns a Value into a number, naming the user's line. ``instead``
    is what to do for this operation, in place of the refusal's general advice (for
    ``backward()``: call it on the result)."""
    if switches_on[0] and state.refusal:
        _refuse(what, (state.refusal, state.refusal_type, state.refusal_advice), instead)


def refuse_branch(what: str) -> None:
    """``refuse_number`` for a comparison or an ``if`` on a Value. A branch does not cut the graph,
    so a custom rule called with Values may take one at its input, as a PyTorch backward may
    (``refusing_numbers(..., branches=True)``); ``vjpgrad.compile`` and ``vmap``, which would
    replay the branch taken once for every number, refuse it, also inside such a rule."""
    if switches_on[0] and state.branch_refusal is not None:
        _refuse(what, state.branch_refusal, None)


def _refuse(what: str, refusal: tuple[str, type[Exception], str], instead: str | None) -> None:
    message, kind, general = refusal
    advice = instead if instead is not None and general else general
    # no line of this process is the user's when their code runs in another: that process names it
    place = "" if state.users_code_elsewhere else f" at {caller_location()}"
    error = kind(f"{what}{place}: {message}" + (f": {advice}" if advice else ""))
    if state.recording is not None:  # kept: a user's `except` around the read cannot swallow the refusal
        state.recording.fail(error)
    raise error


FOR_A_NUMBER = "_vjpgrad_raised_for_a_number"
"""The attribute ``raised_for_a_number`` sets on an error raised for a Value's number."""


def raised_for_a_number(error: BaseException, what: str) -> None:
    """Note that ``what`` (an index's check, a custom operation's function) raises ``error`` for a
    Value's number while a function is recorded: if the function catches it and returns, its
    recording decided by that number (a replay would neither raise for another number nor take
    the other branch), so the recorder refuses it then; if it escapes the function, it is the
    error eager code raises. Outside a recording the error is marked (``FOR_A_NUMBER``): a replay
    it ends runs the call as eager code instead, whose ``except`` may take it. Call it just
    before raising ``error``."""
    with contextlib.suppress(AttributeError, TypeError):  # an exception without a __dict__ stays unmarked
        setattr(error, FOR_A_NUMBER, True)
    if switches_on[0] and state.refusal and state.recording is not None:
        text = (
            f"{what} at {caller_location()} raised {type(error).__name__} ({error}) for a Value's number, and the "
            f"function went on: {state.refusal}: a replay would not decide again for another number: check the "
            "number before the call (or let the error end it), or call the function uncompiled"
        )
        state.recording.raised(state.refusal_type(text))


class refusing_numbers:  # noqa: N801 - a context manager named for what it does
    """Within: float(), bool(), comparisons and indexing of Values raise ``error(message)``,
    followed by ``advice`` (or the advice of the operation refused, when it has its own).
    ``branches=True`` lets comparisons and ``bool()`` through (a custom rule's pieces), unless
    an enclosing refusal (compile's recording, vmap's) refuses them."""

    def __init__(
        self, message: str, error: type[Exception] = DataDependentError, advice: str = "", *, branches: bool = False
    ) -> None:
        self.message, self.error, self.advice, self.branches = message, error, advice, branches

    def __enter__(self) -> None:
        self._saved = (state.refusal, state.refusal_type, state.refusal_advice, state.branch_refusal)
        if not self.branches:
            state.branch_refusal = (self.message, self.error, self.advice)
        elif not state.refusal:
            state.branch_refusal = None
        state.refusal, state.refusal_type, state.refusal_advice = self.message, self.error, self.advice
        with _switch_lock:
            switches_on[0] += 1

    def __exit__(self, *exc: object) -> None:
        state.refusal, state.refusal_type, state.refusal_advice, state.branch_refusal = self._saved
        with _switch_lock:
            switches_on[0] -= 1


_paths = sysconfig.get_paths()
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # vjpgrad/, above core/
OWN_CODE = (_PACKAGE + os.sep, "<vjpgrad")
"""The package's files (whole path components: ``.../vjpgrad_user/`` is not ours) and the code
vjpgrad writes (compile's ``<vjpgrad.compile ...>``)."""


def is_own_code(frame: FrameType) -> bool:
    """Whether ``frame`` runs vjpgrad's own code (``OWN_CODE``), not the user's."""
    return frame.f_code.co_filename.startswith(OWN_CODE)


_LIBRARIES = tuple(
    sorted(
        {
            os.path.join(path, "")
            for name in ("stdlib", "platstdlib", "purelib", "platlib")
            if (path := _paths.get(name))
        }
    )
)
"""Where Python's own library and installed packages live: code there is not the user's line."""


def warn_at_users_line(message: str, category: type[Warning]) -> None:
    """Warn at the first line outside vjpgrad: where the user's code called. Its module's warning
    registry is kept, as ``warnings.warn`` keeps it, so that Python's default filter says a warning
    once per line (a loop that makes the same mistake at every step is told once)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and is_own_code(frame):
        frame = frame.f_back
    module = frame.f_globals.get("__name__")
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    filename, line = frame.f_code.co_filename, frame.f_lineno
    if isinstance(module, str):
        warnings.warn_explicit(message, category, filename, line, module=module, registry=registry)
    else:  # code run without a module name (a doctest, exec): module=None would drop the warning
        warnings.warn_explicit(message, category, filename, line, registry=registry)


def caller_location() -> str:
    """``file:line`` of the first frame outside vjpgrad: where the user's code is. When that
    frame is in Python's library or an installed package (``statistics.fmean`` reading a
    Value), the user's line that called it comes first, then where inside the library:
    ``x.py:3 (in statistics.py:456)``."""
    frame: Any = sys._getframe(1)
    while frame is not None and is_own_code(frame):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    place = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    if not frame.f_code.co_filename.startswith(_LIBRARIES):
        return place
    caller = frame.f_back
    while caller is not None and caller.f_code.co_filename.startswith((*_LIBRARIES, *OWN_CODE)):
        caller = caller.f_back
    return place if caller is None else f"{caller.f_code.co_filename}:{caller.f_lineno} (in {place})"


class _UserFrames:
    """``with USER_FRAMES:`` around the body of a public entry point (``backward``,
    ``gradients``...): an exception leaves it with vjpgrad's own frames between the user's taken
    out of its traceback. The entry point stays, and so do the first vjpgrad frame called from the
    user's code (``__float__`` from a rule) and the frame that raised, so the user's lines and the
    message are what a traceback shows. ``VJPGRAD_FULL_TRACEBACK=1`` keeps every frame. The object
    has no state: one is shared, nested entry points included."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, traceback: TracebackType | None) -> None:
        if error is not None and traceback is not None and not os.environ.get("VJPGRAD_FULL_TRACEBACK"):
            error.__traceback__ = _users_frames(traceback)


def _users_frames(first: TracebackType) -> TracebackType:
    entries = []
    entry: TracebackType | None = first
    while entry is not None:
        entries.append(entry)
        entry = entry.tb_next
    kept = [entries[0]]
    for position, entry in enumerate(entries[1:], start=1):
        ours = is_own_code(entry.tb_frame)
        called_from_user = not is_own_code(kept[-1].tb_frame)
        if not ours or called_from_user or position == len(entries) - 1:
            kept.append(entry)
    for before, after in itertools.pairwise(kept):
        before.tb_next = after
    kept[-1].tb_next = None
    return first


USER_FRAMES = _UserFrames()
