"""Recording a function: what its arguments are, and what one run of it made.

``Arguments`` reads a call's arguments into a key (their structure: what fixes a recording)
and their leaves (their data: the Values and floats a replay reads). ``record`` runs the
function once while the core records every operation (``graph.Recording``) and refuses every
read of a Value's number; ``Recorded`` then says which Values the code reads (arguments,
parameters, Values made inside), which are constants, and where the results come from.

A float argument is data only where it meets a Value (``x * lr``): there it stands in the
recording as a ``NumberArgument``, a Value that operations take as eager code takes the
number. Any other use of it as a Python number (``lr * 2``, ``lr == 0``, ``round(lr)``,
``math.exp(lr)``) raises ``Static``: the call is recorded again with that argument as
structure (its exact value in the key), so Python computes with the real float, as eager.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import marshal
import numbers
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn, cast

from vjpgrad.compiler import guard
from vjpgrad.compiler.write import ROWS, Edges, exact
from vjpgrad.core import graph
from vjpgrad.core.modes import DataDependentError, is_own_code, refusing_numbers, state
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector

_number = graph.number

Path = tuple[Any, ...]
"""Where a leaf is in the arguments: ``("arg", 1, 3)`` is item 3 of the second argument,
``("kw", "lr")`` the keyword argument ``lr``, ``("arg", 0, "scale")`` a dict's entry."""


class Static(BaseException):
    """A float argument was used as a Python number while recording: record again with it as
    structure. A BaseException, and kept on the recording, so that a user's ``except`` does not
    swallow it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.path = path


_SET_CLASS = object.__dict__["__class__"].__set__  # object's own __class__ setter, under the property


class NumberArgument(Value):
    """A float argument while a function is recorded (see the module docstring).

    With a Value it is the number eager code would have there (``c / x`` is ``(1 / x) * c``,
    ``x ** c`` takes PyTorch's special exponents, ``c ** x`` is number ** Value), so the
    replay computes what eager computes. Everything else raises ``Static``. To the user's
    ``isinstance`` it is of the argument's type (a float, or NumPy's float64), not a Value.
    After the recording it becomes a plain Value (``_release``)."""

    __slots__ = ()
    number_argument = True

    @property  # type: ignore[misc]  # __class__ as a property: isinstance(lr, float) holds, as in eager code
    def __class__(self) -> type:
        return vars(self)["_kind"]  # type: ignore[no-any-return]  # float, or NumPy's float64

    def __init__(self, number: float, path: Path, kind: type) -> None:
        super().__init__(number, requires_grad=False)
        vars(self)["_path"] = path
        vars(self)["_kind"] = kind  # the argument's type, for isinstance: float or NumPy's float64

    def _release(self) -> None:
        """The recording is over: a plain Value from now on (whatever kept it sees a Value)."""
        vars(self).pop("_path", None)
        vars(self).pop("_kind", None)
        _SET_CLASS(self, Value)

    # The user's code sees a float: any attribute it reads, sets or deletes (a float has no
    # requires_grad, no label, no _data) makes the argument structure, and the next recording
    # runs that code on the float itself, which answers or raises as in eager code. vjpgrad's
    # own code (the package and the code it writes) reads and writes the Value underneath.

    def __setattr__(self, name: str, value: Any) -> None:
        if "_path" in vars(self) and not is_own_code(sys._getframe(1)):
            self._static()
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if "_path" in vars(self) and not is_own_code(sys._getframe(1)):
            self._static()
        super().__delattr__(name)

    def __getattribute__(self, name: str) -> Any:
        if name == "__class__" or is_own_code(sys._getframe(1)):  # isinstance() reads __class__: the argument's type
            return object.__getattribute__(self, name)
        self._static()

    def _static(self) -> NoReturn:
        signal = Static(vars(self)["_path"])
        if state.recording is not None:
            state.recording.fail(signal)  # kept: a bare `except` cannot swallow it
        raise signal

    def _with_value(self, other: Any, then: Callable[[Any], Any]) -> Any:
        if isinstance(other, Value) and not other.number_argument:
            return then(other)
        self._static()

    def __add__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: Value.__add__(self, v))  # type: ignore[no-any-return]  # a Value

    def __radd__(self, other: Any) -> Value:  # a Value on the left: Python asks this subclass first
        return self._with_value(other, lambda v: Value.__add__(v, self))  # type: ignore[no-any-return]  # a Value

    def __sub__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: Value.__sub__(self, v))  # type: ignore[no-any-return]  # a Value

    def __rsub__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: Value.__sub__(v, self))  # type: ignore[no-any-return]  # a Value

    def __mul__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: Value.__mul__(self, v))  # type: ignore[no-any-return]  # a Value

    def __rmul__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: Value.__mul__(v, self))  # type: ignore[no-any-return]  # a Value

    def __truediv__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: v.reciprocal() * self)  # type: ignore[no-any-return]  # a Value

    def __rtruediv__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: Value.__truediv__(v, self))  # type: ignore[no-any-return]  # a Value

    def __pow__(self, other: Any) -> Value:
        return self._with_value(other, self._pow_base)  # type: ignore[no-any-return]  # a Value

    def __rpow__(self, other: Any) -> Value:
        return self._with_value(other, lambda v: Value.__pow__(v, self))  # type: ignore[no-any-return]  # a Value

    def _as_number(self, *args: Any) -> Any:
        self._static()

    __neg__ = __abs__ = __pos__ = __float__ = __int__ = __bool__ = __index__ = _as_number
    __round__ = __floor__ = __ceil__ = __trunc__ = _as_number
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __divmod__ = __rdivmod__ = _as_number
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = _as_number
    __format__ = __repr__ = __str__ = __reduce__ = __reduce_ex__ = __array__ = _as_number  # type: ignore[assignment]  # they raise Static
    __array_ufunc__ = _as_number  # type: ignore[assignment]  # NumPy calls it (Value's None refuses NumPy): Static


# ---- the arguments: their structure (the key of a recording) and their leaves ---------------------


def _is_numpy(x: object, *kinds: str) -> bool:
    kind = type(x)
    return kind.__module__ == "numpy" and kind.__name__ in kinds


def is_data_float(x: object) -> bool:
    """A float that is data: a Python float or a NumPy float64. Others (NumPy's float32, whose
    arithmetic rounds to float32, a Fraction, a float subclass) are structure, kept exactly."""
    return type(x) is float or _is_numpy(x, "float64")


class Arguments:
    """The arguments of one call, read: their structure (a hashable key), their leaves in order
    (Values, and floats that are data, as Python floats), where each leaf is (``paths``), and
    the other objects passed (``self``: structure by identity, and roots from which parameters
    are found). ``static`` holds the paths of float arguments this function uses as Python
    numbers: structure too."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any], static: frozenset[Path] = frozenset()) -> None:
        self.args, self.kwargs = args, kwargs
        self._read(static)
        if self._shared - static:  # one float object passed at two places: structure, so `lo is hi` holds
            self._read(static | self._shared)

    def _read(self, static: frozenset[Path]) -> None:
        args, kwargs = self.args, self.kwargs
        self.static = static
        self._shared: set[Path] = set()  # the paths of a data float passed at more than one place
        self._float_at: dict[int, Path] = {}  # id of each data float -> the first path it was at
        self.key_parts: list[Any] = []
        self.leaves: list[Any] = []
        self.given: list[Any] = []  # each leaf as it was passed (a NumPy float64 as itself): returned as it is
        self.paths: list[Path] = []
        self.objects: list[Any] = []
        self._first_place: dict[int, int] = {}
        for k, arg in enumerate(args):
            self._visit(arg, ("arg", k))
        for name in sorted(kwargs):
            self.key_parts.append(("keyword", name))
            self._visit(kwargs[name], ("kw", name))
        self.key_parts.append(("grad mode", state.grad_enabled))
        self.key = tuple(self.key_parts)

    def _visit(self, x: Any, path: Path) -> None:
        key = self.key_parts
        if is_data_float(x):  # data or structure: one float object at two places must be one object
            first = self._float_at.setdefault(id(x), path)
            if first != path:
                self._shared |= {first, path}
        if isinstance(x, Value):
            place = self._first_place.setdefault(id(x), len(self.leaves))
            key.append(("V", x.requires_grad, place))
            self.leaves.append(x)
            self.given.append(x)
            self.paths.append(path)
        elif isinstance(x, Vector):
            key.append(("Vector", len(x)))
            for k, item in enumerate(x):
                self._visit(item, (*path, k))
        elif type(x) in (list, tuple) or (isinstance(x, tuple) and hasattr(x, "_fields")):
            key.append((type(x), len(x)))
            for k, item in enumerate(x):
                self._visit(item, (*path, k))
        elif type(x) is dict:
            key.append(("dict", tuple(exact(k) for k in x)))
            for name, item in x.items():
                self._visit(item, (*path, name))
        elif is_data_float(x) and path not in self.static:
            key.append(("float", type(x)))  # data: a new number replays the same code (float and float64 apart)
            self.leaves.append(float(x))
            self.given.append(x)
            self.paths.append(path)
        elif isinstance(x, (bool, numbers.Number, str, bytes)) or x is None or _is_numpy(x, "bool", "bool_"):
            key.append(("constant", type(x), exact(x)))  # structure: a length, an index, a flag, an exact number
        elif _is_numpy(x, "ndarray") or hasattr(x, "__array_interface__"):
            raise TypeError(
                "a compiled function takes numbers, Values, Vectors, lists, tuples and dicts of them; got a NumPy "
                "array, whose numbers it could not tell apart between calls: pass a list of numbers (or a Vector)"
            )
        elif isinstance(x, (list, tuple, dict, set, frozenset)):
            raise TypeError(
                f"a compiled function takes numbers, Values, Vectors, lists, tuples and dicts of them, and other "
                f"objects by identity; got a {type(x).__name__}, which it cannot tell apart between calls: pass a "
                "list, a tuple or a dict, or call the function uncompiled"
            )
        else:  # any other object (self, a model): the same object replays, another is recorded anew
            key.append(("object", id(x)))
            self.objects.append(x)

    def rebuilt(self, stand_ins: dict[Path, Any]) -> tuple[list[Any], dict[str, Any]]:
        """The arguments again, each leaf at a path of ``stand_ins`` replaced by its stand-in."""
        args = [_replace(arg, ("arg", k), stand_ins) for k, arg in enumerate(self.args)]
        kwargs = {name: _replace(self.kwargs[name], ("kw", name), stand_ins) for name in sorted(self.kwargs)}
        return args, kwargs


def _replace(x: Any, path: Path, stand_ins: dict[Path, Any]) -> Any:
    if path in stand_ins:
        return stand_ins[path]
    if isinstance(x, Vector):
        return Vector([_replace(item, (*path, k), stand_ins) for k, item in enumerate(x)])
    if type(x) in (list, tuple):
        return type(x)(_replace(item, (*path, k), stand_ins) for k, item in enumerate(x))
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a namedtuple takes its fields
        return type(x)(*(_replace(item, (*path, k), stand_ins) for k, item in enumerate(x)))
    if type(x) is dict:
        return {name: _replace(item, (*path, name), stand_ins) for name, item in x.items()}
    return x


# ---- the results: a structure of Values, numbers and None ---------------------------------------------


Shape = Any
"""A result's structure: ``("leaf", k)`` for its k-th Value (or float argument), ``("same", x)``
for a number, None or other object returned as it is, ``("vector", [shapes])``,
``(list or tuple, [shapes])``, ``("dict", [(key, shape)])``."""


def shape_of(result: Any, leaves: list[Any]) -> Shape:
    """The structure of a function's result; its Values are appended to ``leaves``."""
    if isinstance(result, Value):
        leaves.append(result)
        return ("leaf", len(leaves) - 1)
    if isinstance(result, Vector):
        return ("vector", [shape_of(item, leaves) for item in result])
    if type(result) in (list, tuple) or (isinstance(result, tuple) and hasattr(result, "_fields")):
        return (type(result), [shape_of(item, leaves) for item in result])
    if type(result) is dict:
        return ("dict", [(key, shape_of(item, leaves)) for key, item in result.items()])
    if result is None or isinstance(result, (numbers.Number, str, bytes)):
        return ("same", result)
    raise TypeError(
        "a compiled function returns Values, Vectors, numbers, None, and lists, tuples or dicts of them; got a "
        f"{type(result).__name__}"
    )


def build(shape: Shape, leaves: list[Any]) -> Any:
    """A result of ``shape`` again, with ``leaves`` in place of its Values."""
    kind, parts = shape
    if kind == "leaf":
        return leaves[parts]
    if kind == "same":
        return parts
    if kind == "vector":
        vector = object.__new__(Vector)
        vector._values = [build(part, leaves) for part in parts]
        return vector
    if kind == "dict":
        return {key: build(part, leaves) for key, part in parts}
    items = [build(part, leaves) for part in parts]
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


# ---- one run of the function, recorded --------------------------------------------------------------


@dataclass
class Recorded:
    """What one recorded run made, read for writing code.

    ``live``: the recorded operations the outputs need and the Values made inside that they
    read, in creation order. ``arguments``: the leaves as the run saw them (the call's Values,
    the stand-ins of its floats), in order. ``parameters``: the other Values the operations read
    (closed over, or made inside and kept by the function's objects). ``constants``: numbers
    of Values made inside from literal numbers that take no gradient. ``shape``: the structure
    of the result; ``outputs``: where each of its Values comes from: ``("t", index into live)``,
    ``("x", index into externals)``, ``("c", number)`` for a constant Value, ``("f", leaf
    index)`` for a float argument returned as it is. ``result``: what the recorded run returned,
    which is the first call's result.
    """

    live: list[Value]
    arguments: list[Value]
    parameters: list[Value]
    constants: dict[int, float]
    shape: Shape
    outputs: list[tuple[str, Any]]
    recording: graph.Recording
    guard: guard.Guard  # that every parameter is where it was found, checked at each call
    aliases: list[tuple[int, Value]]  # (leaf index, Value): an argument also reached as a parameter
    result: Any
    edges: Edges  # the edges and numbers the recording made, kept before any pass frees them

    @property
    def externals(self) -> list[Value]:
        """The Values the code reads from outside: the distinct arguments, then the parameters."""
        return [*distinct(self.arguments), *self.parameters]


def record(fn: Callable[..., Any], read: Arguments, roots: list[Any]) -> Recorded:
    """Run ``fn`` once on the call's Values and on stand-ins of its data floats, recording what it
    makes. Raises ``Static`` when a float argument turns out to be used as a Python number, and
    ``DataDependentError`` for what a replay could not do."""
    stand_ins = {path: NumberArgument(leaf, path, type(given))
                 for path, leaf, given in zip(read.paths, read.leaves, read.given, strict=True)
                 if not isinstance(leaf, Value)}  # fmt: skip
    arguments = [stand_ins.get(path, leaf) for path, leaf in zip(read.paths, read.leaves, strict=True)]
    args, kwargs = read.rebuilt(stand_ins)
    names = [*_argument_names(fn, len(args)), *kwargs]
    given = _lists([*args, *kwargs.values()], names)
    named = {id(x): name for x, name in zip([*args, *kwargs.values()], names, strict=True)}
    recording = graph.Recording()
    message = f"{_name(fn)} is being recorded by vjpgrad.compile"
    advice = (
        "it cannot replay Python that depends on a Value's number: use a vjpgrad operation instead (max, relu, "
        "nn.functional...), move the decision outside the compiled function, or call it uncompiled"
    )
    state.recording = recording
    try:
        try:
            with refusing_numbers(message, advice=advice), collection_paused():  # the recording keeps every node alive
                result = fn(*args, **kwargs)
        except BaseException:
            if recording.failure is not None:  # the first refusal or Static, whatever followed it
                raise recording.failure from None
            raise
        finally:
            state.recording = None
        if recording.failure is not None:  # a refusal or a Static the function's own `except` caught
            raise recording.failure
        _check_unchanged(fn, given)
        results: list[Any] = []
        shape = shape_of(result, results)
        with collection_paused():
            return _read(fn, shape, results, result, recording, arguments, list(stand_ins.values()), roots, named)
    finally:
        for stand_in in stand_ins.values():
            stand_in._release()


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a function is recorded and while compile builds
    its own tables of the recording (the guard, the description, the code): the recording keeps
    every node it makes alive until it is read, so each collection the new objects set off walks
    them all again, finding nothing to free (a large share of a warm start and of the recorded
    call). Turned back on as it was, whatever happens; what the function leaves
    for the collector is collected at its next run."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _argument_names(fn: Callable[..., Any], count: int) -> list[str]:
    """The names of the first ``count`` positional parameters of ``fn``, as a reader would name
    them in a message (``argument 2`` where the signature does not say)."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin or an odd callable: no signature to read
        parameters = []
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    rest = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), None)
    names = []
    for k in range(count):
        if k < len(positional):
            names.append(positional[k])
        elif rest is not None:
            names.append(f"{rest}[{k - len(positional)}]")
        else:
            names.append(f"argument {k + 1}")
    return names


def _lists(rebuilt: list[Any], names: list[str]) -> list[tuple[Any, list[Any], str]]:
    """Every list, dict (and Vector's list) the function is handed, with its items now and how
    a reader names it (``cache``, ``batch[0]``)."""
    found: list[tuple[Any, list[Any], str]] = []
    stack = list(zip(rebuilt, names, strict=True))
    while stack:
        x, name = stack.pop()
        if isinstance(x, Vector):
            found.append((x._values, list(x._values), name))
            stack.extend((item, f"{name}[{k}]") for k, item in enumerate(x._values))
        elif isinstance(x, (list, tuple)):
            if isinstance(x, list):
                found.append((x, list(x), name))
            stack.extend((item, f"{name}[{k}]") for k, item in enumerate(x))
        elif type(x) is dict:
            found.append((x, [*x.keys(), *x.values()], name))
            stack.extend((item, f"{name}[{key!r}]") for key, item in x.items())
    return found


def _check_unchanged(fn: Callable[..., Any], given: list[tuple[Any, list[Any], str]]) -> None:
    """Refuse a function that changed a list or dict it was given: a replay would not change it.
    Found after the call, so the message names the container, not the line that changed it."""
    for container, before, name in given:
        now = [*container.keys(), *container.values()] if type(container) is dict else list(container)
        if len(now) != len(before) or any(a is not b for a, b in zip(now, before, strict=True)):
            raise DataDependentError(
                f"{_name(fn)} (defined at {where(fn)}) changed the {type(container).__name__} {name} it was given "
                "as an argument (append, assignment...), which vjpgrad.compile cannot replay: return the new "
                "items instead, or call it uncompiled"
            )


def _code(fn: Any) -> Any:
    """The code object behind a function, a method, a partial or a callable object."""
    for _ in range(8):  # unwrap a few layers at most
        code = getattr(fn, "__code__", None)
        if code is not None:
            return code
        if hasattr(fn, "__func__"):
            fn = fn.__func__
        elif hasattr(fn, "func"):  # functools.partial
            fn = fn.func
        elif callable(fn) and not isinstance(fn, type):
            fn = type(fn).__call__
        else:
            return None
    return None


def where(fn: Callable[..., Any]) -> str:
    """``file:line`` of a function's definition (or of the method a callable object runs)."""
    code = _code(fn)
    return "<unknown>" if code is None else f"{code.co_filename}:{code.co_firstlineno}"


def _name(fn: Callable[..., Any]) -> str:
    code = _code(fn)
    if code is None:
        return getattr(fn, "__qualname__", None) or "the function"
    # a code object has its qualified name from Python 3.11 on; 3.10's has its plain name
    name: str = getattr(fn, "__qualname__", None) or getattr(code, "co_qualname", code.co_name)
    return name


def distinct(values: list[Any]) -> list[Any]:
    """``values`` without repeats, in order, by identity (a float's stand-in cannot be hashed)."""
    seen: set[int] = set()
    return [v for v in values if not (id(v) in seen or seen.add(id(v)))]  # type: ignore[func-returns-value]  # set.add is None: false


def _read(
    fn: Callable[..., Any],
    shape: Shape,
    outputs: list[Value],
    result: Any,
    recording: graph.Recording,
    arguments: list[Value],
    stand_ins: list[Value],
    roots: list[Any],
    named: dict[int, str],
) -> Recorded:
    """Which Values the recorded operations read, and where the parameters are."""
    found_graph = graph.recorded_graph(recording, outputs)
    # every node the core records is a Value (the core's graph layer names them Nodes)
    live, positions, outside = cast("tuple[list[Value], list[tuple[int, ...]], list[Value]]", found_graph)
    computed = cast("list[Value]", recording.nodes)
    argument_ids = {id(a) for a in arguments}
    outside = [x for x in outside if id(x) not in argument_ids]  # parameters, if they can be found
    made = [node for node in live if id(node) in recording.leaves]  # Values made by Value() inside
    wanted = {id(x) for x in outside} | {id(x) for x in made} | argument_ids
    forbidden = {id(node) for node in recording.nodes} | {id(x) for x in stand_ins}  # never kept
    found = guard.search(roots, wanted | forbidden)
    for value in [*computed, *stand_ins]:  # a Value computed inside, or a float argument, kept
        if id(value) in found.paths:
            what = "a float argument" if value.number_argument else "a Value it computes"
            _refuse_kept(fn, value, found, what, roots, named)
    kept = [x for x in made if id(x) in found.paths]  # made inside and kept: a weight made lazily
    for x in kept:
        if id(x) in recording.from_numbers:
            _refuse_kept(fn, x, found, "Value() of a float argument", roots, named)
    missing = [x for x in outside if id(x) not in found.paths]
    if missing:
        raise DataDependentError(
            f"{where(fn)}: vjpgrad.compile cannot find where {_name(fn)} gets the Value {missing[0]!r} (made outside "
            "it), so it could not check at the next call that it is still the same one: keep such Values in "
            "attributes, lists, dicts, closures or globals of plain Python objects, or pass them as arguments"
            f"{'' if found.complete else ' (the search stopped: too many objects)'}"
        )
    kept_ids = {id(x) for x in kept}
    constants = {  # made inside from a number, taking no gradient, not kept: a number of the code
        id(node): _number(node)
        for node in made
        if id(node) not in kept_ids and id(node) not in recording.from_numbers and not node.requires_grad
    }
    if constants or kept_ids:
        gone = constants.keys() | kept_ids
        pairs = [(n, p) for n, p in zip(live, positions, strict=True) if id(n) not in gone]
        live, positions = [n for n, _ in pairs], [p for _, p in pairs]
    parameters = [*outside, *kept]
    externals = [*distinct(arguments), *parameters]
    place = {id(node): k for k, node in enumerate(live)}
    external_place = {id(x): k for k, x in enumerate(externals)}
    leaf_of = {id(x): k for k, x in enumerate(arguments)}
    sources: list[tuple[str, Any]] = []
    for x in outputs:
        if id(x) in place:
            sources.append(("t", place[id(x)]))
        elif x.number_argument:  # a float argument returned: returned as the call's float
            sources.append(("f", leaf_of[id(x)]))
        elif id(x) in external_place:
            sources.append(("x", external_place[id(x)]))
        else:
            sources.append(("c", constants[id(x)]))
    aliases = [(leaf_of[id(a)], a) for a in distinct(arguments) if id(a) in found.paths and not a.number_argument]
    checked = guard.Guard(found, {id(x) for x in parameters} | {id(a) for _, a in aliases})
    return Recorded(
        live,
        arguments,
        parameters,
        constants,
        shape,
        sources,
        recording,
        checked,
        aliases,
        result,
        Edges(live, positions, recording.leaves),
    )


def describe(recorded: Recorded, internal_outputs: list[int]) -> bytes | None:
    """The structure the code is written from, as bytes for the cache's key: every operation (its
    row of the table), where each operand comes from (an argument or parameter by its position,
    written -1 - k; an operation by its position; a number by its exact value), the edges the
    recording made, which Values take gradient, the Values made inside, and the outputs. None
    when an operation is not a row of the table (a custom operation: its code is the user's
    function, which a key cannot describe): such a recording is not cached. Written with marshal's
    version 2 (no shared references): the same structure gives the same bytes in every process,
    and a float's exact bits (-0.0 is not 0.0)."""
    externals = recorded.externals
    place: dict[int, int] = {id(x): -1 - k for k, x in enumerate(externals)}
    place.update((id(node), k) for k, node in enumerate(recorded.live))
    constants = recorded.constants
    from_numbers = recorded.recording.from_numbers
    numbers = recorded.edges.numbers
    parts: list[Any] = [len(distinct(recorded.arguments)), tuple(x.requires_grad for x in externals)]
    append = parts.append
    rows, op_of, operands_of, node_type = ROWS, graph.op_of, graph.operands, graph.Node
    for node, positions in zip(recorded.live, recorded.edges.in_order, strict=True):  # the hot loop of a warm start
        op = op_of(node)
        if op is None:  # a Value made inside: from a float argument, or a number
            source = from_numbers.get(id(node))
            append(("leaf", place[id(source)] if source is not None else numbers[id(node)], node.requires_grad))
            continue
        row = rows.get(op)
        if row is None:
            return None
        operands: list[Any] = []
        for x in operands_of(node):
            if not isinstance(x, node_type):
                operands.append((x,))
            else:
                at = place.get(id(x))
                operands.append(at if at is not None else ("c", constants[id(x)]))
        append((row, tuple(operands), positions, node.requires_grad))
    append(tuple(internal_outputs))
    return marshal.dumps(parts, 2)


def _refuse_kept(
    fn: Callable[..., Any], value: graph.Node, found: guard.Found, what: str, roots: list[Any], named: dict[int, str]
) -> NoReturn:
    root, path = found.paths[id(value)]
    # found after the call, by where it is kept: the message names that place, not a line
    start = ""
    if root == 0 and path and path[0][0] == "cell":  # a variable the function closes over, by its name
        code = _code(fn)
        if code is not None and path[0][1] < len(code.co_freevars):
            start, path = code.co_freevars[path[0][1]], path[1:]
    elif root > 0:  # an object the call was given: by its parameter's name when it has one
        given = roots[root]
        start = named.get(id(given)) or f"an object it was given ({type(given).__name__})"
    place = f"{start}{guard.described(path)}".lstrip(".")
    raise DataDependentError(
        f"{_name(fn)} (defined at {where(fn)}) stores {what} in {place}, which a replay would not store again: "
        "return it instead, or call the function uncompiled"
    )
