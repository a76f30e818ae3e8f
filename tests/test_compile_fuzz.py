"""vjpgrad.compile against eager code on random programs: the same bits, or a refusal naming the line.

Each program is a list of steps run by ``run`` below on Values: arithmetic with the arguments,
with closed-over parameters and with a float argument, functions, ``detach``, a Value made from
the float argument, a compiled function called inside, a loop whose trip count is a NumPy
integer, the float argument asked whether it is a Value and handed to vjpgrad's functions, and
the steps eager code can run but a recording cannot replay (reading a parameter's number,
branching on a float argument or on a parameter), the world the function reads beside its
Values (a flag and a number on an object that holds no Value, a list of adapters that starts
empty, the order of a dict and of a set of parameters, ``requires_grad`` of a parameter,
keyword arguments in the call's order, numbers inside library classes' instances, a view and a
proxy of a dict of numbers, a class attribute read by a name computed at run time, a number's
identity asked with ``is``, helpers behind wrappers (``functools.wraps``, ``enable_grad``,
``contextmanager``, ``singledispatch``), a function attribute, weak containers, a dict whose
tuple keys are made anew). Between the recording and the call that is compared, the
parameters' numbers change, a parameter may be rebound, the flag or the number may change, an
adapter may be added, the dict or the set reordered, ``requires_grad`` toggled, a number changed
inside an ``argparse.Namespace`` or a ``ChainMap``, the viewed dict changed or grown, the class
attribute changed, a number replaced by an equal one that is another object, the setting a
wrapped helper reads, the function attribute, the object a weak container holds, or the dict's
keys made anew. The result is eager's bits or a refusal; a program that changes its world (a
counter) or draws random numbers (``random``'s generator or one in its world) is refused.

The default run is small; ``VJPGRAD_FUZZ_EXAMPLES=20000 pytest tests/test_compile_fuzz.py`` is
the large one.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import gc
import math
import os
import random
import struct
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from op_cases import CASES

import vjpgrad
from vjpgrad import Value, Vector
from vjpgrad.compiler import DataDependentError, fold
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported

EXAMPLES = int(os.environ.get("VJPGRAD_FUZZ_EXAMPLES", "60"))
SOURCE = Path(__file__).read_text().splitlines()


def line_of(marker: str) -> int:
    """The line of this file that carries ``# <marker>``."""
    return next(k for k, text in enumerate(SOURCE, start=1) if text.rstrip().endswith(f"# {marker}"))


INNER = vjpgrad.compile(lambda v: v * v + 1.0)

ONE_VALUE: dict[str, Callable[[Value], Value]] = {
    f"{form.text} with {numbers}" if numbers else form.text: form.of_values(numbers)
    for case in CASES
    for form in case.spellings()
    if form.values == 1
    for numbers in form.number_choices()
}
"""Every operation of the table on one Value (x.exp(), x ** k for each k, c / x for each c...)."""
TWO_VALUES: dict[str, Callable[[Value, Value], Value]] = {
    form.text: form.call for case in CASES for form in case.spellings() if form.operands == "vv"
}
"""Every operation of the table on two Values (x + y, x ** y, max([x, y]))."""


@dataclass(eq=False)
class Holder:
    """An object holding one parameter. Its hash is its key, and the keys collide in a small
    set's table, so a set of them iterates in the order they were inserted: the same in twin
    worlds, and another after they are inserted again in another order."""

    key: int
    w: Value

    def __hash__(self) -> int:
        return self.key


@dataclass
class Params:
    """The Values a program closes over (its parameters), and the rest of its world."""

    values: list[Value] = field(default_factory=list)
    config: Any = field(default_factory=lambda: types.SimpleNamespace(flag=True, scale=1.5))
    adapters: list[Value] = field(default_factory=list)
    table: dict[str, Value] = field(default_factory=lambda: {"a": Value(0.5), "b": Value(-1.25), "c": Value(2.0)})
    members: set[Holder] = field(
        default_factory=lambda: {Holder(1, Value(0.75)), Holder(9, Value(-0.5)), Holder(17, Value(1.5))}
    )
    calls: int = 0
    namespace: argparse.Namespace = field(default_factory=lambda: argparse.Namespace(scale=0.5))
    chain: collections.ChainMap[str, float] = field(default_factory=lambda: collections.ChainMap({}, {"s": 2.0}))
    # a dict of numbers the function reaches only through a view and a proxy of it
    view: Any = field(default_factory=lambda: {"a": 0.5, "b": -1.25}.values())
    knobs: Any = field(default_factory=lambda: type("Knobs", (), {"gain": 2.0}))  # a class of its own per world
    default: float = field(default_factory=lambda: float("0.1"))
    proxy: Any = field(init=False)
    lr: float = field(init=False)

    settings: dict[str, float] = field(default_factory=lambda: {"s": 1.25})  # what the wrapped helpers read
    knob: Any = field(default_factory=lambda: Holder(3, Value(0.5)))  # held by weak containers only
    keyed: dict[tuple[int, int], float] = field(default_factory=lambda: {(1, 2): 0.5, (2, 1): -0.25})
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    wrapped: list[Callable[[Value], Value]] = field(init=False)
    act: Any = field(init=False)
    weak: Any = field(init=False)

    def __post_init__(self) -> None:
        self.proxy = types.MappingProxyType(self.view.mapping)
        self.lr = self.default  # the same object: ``lr is default``
        self.wrapped = wrapped_helpers(self.settings)

        def act(v: Value) -> Value:
            return v * act.slope  # type: ignore[attr-defined]  # a function attribute

        act.slope = 0.75  # type: ignore[attr-defined]
        self.act = act
        self.weak = (weakref.WeakValueDictionary({"k": self.knob}), weakref.WeakSet([self.knob]))


def wrapped_helpers(settings: dict[str, float]) -> list[Callable[[Value], Value]]:
    """One helper reading ``settings`` behind each wrapper a user puts around a function."""

    def inner(v: Value) -> Value:
        return v * settings["s"]

    @contextlib.contextmanager
    def scaled() -> Any:
        yield settings["s"]

    def with_context(v: Value) -> Value:
        with scaled() as s:
            return v * s

    @functools.singledispatch
    def dispatched(v: Any) -> Any:
        raise TypeError

    dispatched.register(Value)(inner)
    return [functools.wraps(inner)(lambda v: inner(v)), vjpgrad.enable_grad(inner), with_context, dispatched]


def run(  # DEFINITION
    steps: list[tuple[Any, ...]],
    params: Params,
    x: Value,
    y: Value,
    k: float,
    n: int,
    extra: list[Value] | None = None,
    **terms: float,
) -> Any:
    extra = [] if extra is None else extra
    regs: list[Value] = [x, y]
    for step in steps:
        kind, *rest = step
        a = regs[rest[0] % len(regs)] if rest and isinstance(rest[0], int) else regs[-1]
        if kind == "binary":
            b = regs[rest[1] % len(regs)]
            regs.append(TWO_VALUES[rest[2]](a, b))
        elif kind == "unary":
            regs.append(ONE_VALUE[rest[1]](a))
        elif kind == "float":
            regs.append({"*": a * k, "r/": k / a, "**": a**k, "r**": abs(k) ** a, "-": k - a}[rest[1]])
        elif kind == "constant":  # a number written into the code: each sign of zero, the infinities, nan
            c = rest[1]
            regs.append({"*": a * c, "r*": c * a, "/": a / c, "r/": c / a, "+": a + c, "r-": c - a}[rest[2]])
        elif kind == "param":
            regs.append(a * params.values[rest[1] % len(params.values)])
        elif kind == "max":
            regs.append(F.max([a, regs[rest[1] % len(regs)], 0.5]))
        elif kind == "detach":
            regs.append(a + a.detach() * rest[1])
        elif kind == "value_of_float":
            regs.append(a * Value(k, requires_grad=rest[1]))
        elif kind == "nested":
            regs.append(INNER(a))
        elif kind == "loop":
            for _ in range(n):
                a = a * regs[0]
            regs.append(a)
        elif kind == "blocks":  # copies of one block over inputs of their own: compile writes them as a loop
            _, start, copies, body, vary, between, chain = step
            inputs = [regs[(start + c) % len(regs)] + regs[(start + c + 1) % len(regs)] for c in range(copies)]
            inputs = [h * float(c + 1) for c, h in enumerate(inputs)]  # an input of its own for each copy
            outputs: list[Value] = []
            for c, h in enumerate(inputs):
                if chain and outputs:  # each copy reads the ones before it (a model's positions): copies apart
                    h = h + outputs[-1] * regs[1] if c % 2 else h * (outputs[0] + outputs[-1])
                for part in body:
                    if part == "shared":  # a value every copy reads: its gradient threads through the loop
                        h = h * inputs[0] if c else h * regs[0]
                    elif part.startswith("param"):
                        h = h + params.values[int(part[-1]) % len(params.values)] * h
                    else:
                        h = ONE_VALUE[part](h)
                if vary:  # a constant that differs between copies
                    h = h * [2.0, -0.0, -3.0, math.inf][c % 4]
                regs.append(h)
                outputs.append(h)
                if between:  # a step between copies: they interleave with other code
                    regs.append(h * regs[1])
            total = outputs[0]
            for h in outputs[1:]:
                total = total + h
            regs += [total, outputs[0] * regs[0], outputs[-1] + regs[1]]  # read after the loop
        elif kind == "no_grad":
            with vjpgrad.no_grad():
                regs.append(a * 2.0)
        elif kind == "float_python":  # a float argument as a Python number: structure, exact
            regs.append(a * {"affine": k * 2.0 + 1.0, "exp": math.exp(k), "round": round(k, 1)}[rest[1]])
        elif kind == "float_branch":
            regs.append(a if k == 0.5 else -a)
        elif kind == "float_type":
            regs.append(a * k if isinstance(k, float) else a + 1.0)
        elif kind == "float_is_value":  # False for a float, as in eager code
            regs.append(a * vjpgrad.tanh(k) if isinstance(k, Value) else a * k)
        elif kind == "float_function":  # vjpgrad's function of a float is a float: x ** float takes PyTorch's cases
            regs.append(a ** vjpgrad.sigmoid(k) if rest[1] else a * vjpgrad.exp(k))
        elif kind == "alias":  # an argument the function also reaches as a parameter
            regs.append(a * params.values[-1])
        elif kind == "read_param":
            regs.append(a * params.values[0].data)  # REFUSED read_param
        elif kind == "branch_param":
            regs.append(a if params.values[0] > 0 else -a)  # REFUSED branch_param
        elif kind == "store":
            # a Value computed and kept by an object: refused, naming this line
            params.last = a + 0.0  # type: ignore[attr-defined]  # REFUSED store
        elif kind == "append":
            extra.append(a)  # the list argument changed: refused, naming this line  # REFUSED append
        elif kind == "flag":  # a flag on an object that holds no Value
            regs.append(a * 2.0 if params.config.flag else -a)
        elif kind == "scale":  # a number on an object that holds no Value: structure
            regs.append(a * params.config.scale)
        elif kind == "adapters":  # a list that starts empty
            regs.append(sum((a * v for v in params.adapters), a))
        elif kind == "dict_order":
            for v in params.table.values():
                a = (a + v) * 0.5
            regs.append(a)
        elif kind == "set_order":
            for holder in params.members:
                a = (a + holder.w) * 0.5
            regs.append(a)
        elif kind == "requires_grad":  # requires_grad of a parameter, read without reading the parameter
            regs.append(a * params.values[1] if params.values[1].requires_grad else a * 3.0)
        elif kind == "terms":  # keyword arguments, in the call's order
            for term in terms.values():
                a = a * 0.5 - term
            regs.append(a)
        elif kind == "library":  # numbers inside instances of Python's library classes
            regs.append(a * params.namespace.scale + a * params.chain["s"])
        elif kind == "view":  # a dict of numbers read through a view and a proxy
            regs.append(sum((a * v for v in params.view), a * params.proxy["a"]))
        elif kind == "by_name":  # a class attribute read by a name made at run time
            regs.append(a * getattr(params.knobs, "".join(("ga", "in"))))
        elif kind == "identity":  # a number's identity
            regs.append(a * 2.0 if params.lr is params.default else -a)
        elif kind == "wrapped":  # a helper behind a wrapper
            regs.append(params.wrapped[rest[1] % len(params.wrapped)](a))
        elif kind == "function_attribute":
            regs.append(params.act(a))
        elif kind == "weak":  # an object held by a WeakValueDictionary and a WeakSet
            regs.append(a * params.weak[0]["k"].w + sum((a * h.w for h in params.weak[1]), a))
        elif kind == "keyed":  # a dict keyed by tuples
            regs.append(sum((a * (i - j) * v for (i, j), v in params.keyed.items()), a))
        elif kind == "draw":
            generator = params.rng if rest[0] % 2 else random
            regs.append(a * (2.0 if generator.random() < 0.5 else 4.0))  # REFUSED draw
        elif kind == "count":
            params.calls += 1  # a side effect: refused
            regs.append(a * params.calls)
    return Vector(regs[-3:])


REFUSED = {
    "read_param": "REFUSED read_param",
    "branch_param": "REFUSED branch_param",
    "store": "REFUSED store",  # the line that kept it, not the definition
    "draw": "REFUSED draw",  # the line that drew, not the definition
}

index = st.integers(0, 7)
step = st.one_of(
    st.tuples(st.just("binary"), index, index, st.sampled_from(sorted(TWO_VALUES))),
    st.tuples(st.just("unary"), index, st.sampled_from(sorted(ONE_VALUE))),
    st.tuples(st.just("float"), index, st.sampled_from(["*", "r/", "**", "r**", "-"])),
    st.tuples(st.just("param"), index, st.integers(0, 2)),
    st.tuples(
        st.just("constant"),
        index,
        st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 2.0, -0.5]),
        st.sampled_from(["*", "r*", "/", "r/", "+", "r-"]),
    ),
    st.tuples(st.just("max"), index, index),
    st.tuples(st.just("detach"), index, st.sampled_from([1.0, math.inf, -2.0])),
    st.tuples(st.just("value_of_float"), index, st.booleans()),
    st.tuples(st.just("nested"), index),
    st.tuples(st.just("loop"), index),
    st.tuples(st.just("no_grad"), index),
    st.tuples(st.just("float_python"), index, st.sampled_from(["affine", "exp", "round"])),
    st.tuples(st.just("float_branch"), index),
    st.tuples(st.just("float_type"), index),
    st.tuples(st.just("float_is_value"), index),
    st.tuples(st.just("float_function"), index, st.booleans()),
    st.tuples(st.just("alias"), index),
    st.tuples(st.just("flag"), index),
    st.tuples(st.just("scale"), index),
    st.tuples(st.just("adapters"), index),
    st.tuples(st.just("dict_order"), index),
    st.tuples(st.just("set_order"), index),
    st.tuples(st.just("requires_grad"), index),
    st.tuples(st.just("terms"), index),
    st.tuples(st.just("library"), index),
    st.tuples(st.just("view"), index),
    st.tuples(st.just("by_name"), index),
    st.tuples(st.just("identity"), index),
    st.tuples(st.just("wrapped"), index, st.integers(0, 3)),
    st.tuples(st.just("function_attribute"), index),
    st.tuples(st.just("weak"), index),
    st.tuples(st.just("keyed"), index),
    blocks := st.tuples(
        st.just("blocks"),
        index,
        st.integers(2, 5),
        st.lists(
            st.one_of(st.sampled_from(["shared", "param0", "param1"]), st.sampled_from(sorted(ONE_VALUE))), max_size=4
        ),
        st.booleans(),
        st.booleans(),
        st.booleans(),
    ),
)
refusal = st.tuples(st.sampled_from(sorted(REFUSED)), index)
number = st.floats(-3.0, 3.0, allow_nan=False).filter(lambda v: abs(v) > 1e-3)


def bits(x: float) -> Any:
    return "nan" if math.isnan(x) else struct.pack("<d", x)


def outcome(
    steps: list[tuple[Any, ...]],
    params: Params,
    call: Any,
    x: float,
    y: float,
    k: float,
    n: int,
    seed_all: bool,
    terms: dict[str, float] | None = None,
) -> tuple[list[Any], list[Any]]:
    """The bits of the outputs and of every argument's, output's and parameter's gradient after a
    backward seeded at every output, or at the last one only."""
    xv = Value(x)
    yv = params.values[-1] if any(step[0] == "alias" for step in steps) else Value(y)  # passed and closed over
    if isinstance(call, vjpgrad.Compiled):  # records again if it must: the call measured below replays
        call(steps, params, Value(x), yv if yv is params.values[-1] else Value(y), k, n, **(terms or {}))
        for p in params.values:
            p.grad = 0.0
    out = call(steps, params, xv, yv, k, n, **(terms or {}))
    live = [v for v in out if v.requires_grad]
    if not seed_all:
        live = live[-1:]
    if live:
        Vector(live).backward([0.5 + j for j in range(len(live))])
    grads = [xv.grad, yv.grad] + [v.grad for v in out] + [p.grad for p in params.values]
    return [bits(v.data) for v in out], [bits(g) for g in grads]


@pytest.mark.slow  # random programs compiled: tens of seconds
@settings(max_examples=EXAMPLES)
@given(
    steps=st.lists(step, min_size=1, max_size=12),
    first=st.tuples(number, number, number),
    second=st.tuples(number, number, number),
    weights=st.lists(number, min_size=3, max_size=3),
    change=st.sampled_from(
        [
            *("numbers", "rebind", "grow", "nothing", "flag", "scale", "adapter", "reorder", "requires_grad"),
            *("members", "namespace", "chain", "viewed", "viewed_grows", "knob", "identity"),
            *("settings", "function_attribute", "weak", "keyed", "drawn_outside"),
        ]
    ),
    orders=st.tuples(st.booleans(), st.booleans()),
    trip=st.sampled_from([0, 1, 2]),
    numpy_scalars=st.booleans(),
    seed_all=st.booleans(),
)
def test_compiled_is_eager_to_the_bit_on_random_programs(
    steps: list[tuple[Any, ...]],
    first: tuple[float, float, float],
    second: tuple[float, float, float],
    weights: list[float],
    change: str,
    trip: int,
    numpy_scalars: bool,
    seed_all: bool,
    orders: tuple[bool, bool],
) -> None:
    compare(steps, first, second, weights, change, trip, numpy_scalars, seed_all, orders)


@pytest.mark.slow  # random programs compiled: tens of seconds
@settings(max_examples=EXAMPLES)
@given(
    before=st.lists(step, max_size=4),
    loop=blocks,
    after=st.lists(step, max_size=3),
    first=st.tuples(number, number, number),
    second=st.tuples(number, number, number),
    weights=st.lists(number, min_size=3, max_size=3),
    seed_all=st.booleans(),
)
def test_compiled_loops_of_identical_blocks_are_eager_to_the_bit(
    before: list[tuple[Any, ...]],
    loop: tuple[Any, ...],
    after: list[tuple[Any, ...]],
    first: tuple[float, float, float],
    second: tuple[float, float, float],
    weights: list[float],
    seed_all: bool,
) -> None:
    # copies of one block (compile writes them as one loop, or as one function where they are
    # apart), with constants that vary between copies, steps between the copies, copies that
    # read the ones before them, and a pass seeded at some outputs only
    compare([*before, loop, *after], first, second, weights, "numbers", 1, False, seed_all, (False, False))


def compare(
    steps: list[tuple[Any, ...]],
    first: tuple[float, float, float],
    second: tuple[float, float, float],
    weights: list[float],
    change: str,
    trip: int,
    numpy_scalars: bool,
    seed_all: bool,
    orders: tuple[bool, bool],
) -> None:
    """Record ``steps``, change the world as ``change`` says, and compare a replay with eager code
    (blocks of two operations or more, however small a part of the program, written as loops
    or, where their copies are apart, as functions)."""
    with (
        mock.patch.object(fold, "SMALLEST", 2),
        mock.patch.object(fold, "SMALLEST_CALLED", 2),
        mock.patch.object(fold, "SHARE", 0.0),
    ):
        compare_as_compiled(steps, first, second, weights, change, trip, numpy_scalars, seed_all, orders)


def compare_as_compiled(
    steps: list[tuple[Any, ...]],
    first: tuple[float, float, float],
    second: tuple[float, float, float],
    weights: list[float],
    change: str,
    trip: int,
    numpy_scalars: bool,
    seed_all: bool,
    orders: tuple[bool, bool],
) -> None:
    n: Any = trip
    k = second[2]
    if numpy_scalars:
        np = pytest.importorskip("numpy")
        n, k = np.int64(trip), np.float64(k)
    ours, twin = Params([Value(w) for w in weights]), Params([Value(w) for w in weights])
    compiled = vjpgrad.compile(run)
    terms = [{"p": 0.25, "q": -1.5}, {"q": -1.5, "p": 0.25}]  # the same keyword arguments, in two orders
    compiled(steps, ours, Value(first[0]), Value(first[1]), first[2], n, **terms[orders[0]])  # the recording
    for params in (ours, twin):  # what happens between two calls, to both alike
        if change == "numbers":
            for p in params.values:
                p.data = p.data * -1.5
        elif change == "rebind":
            params.values[1] = Value(7.0)
        elif change == "grow":
            params.values.append(Value(0.25))
        elif change == "flag":
            params.config.flag = False
        elif change == "scale":
            params.config.scale = -0.75
        elif change == "adapter":
            params.adapters.append(Value(0.125))
        elif change == "reorder":
            params.table["a"] = params.table.pop("a")
        elif change == "requires_grad":
            params.values[1].requires_grad = False
        elif change == "members":
            held = sorted(params.members, key=lambda holder: holder.key, reverse=True)
            params.members.clear()
            params.members.update(held)
        else:
            change_library_world(params, change)
        for p in params.values:
            p.grad = 0.0
    assert outcome(steps, ours, compiled, second[0], second[1], k, n, seed_all, terms[orders[1]]) == outcome(
        steps, twin, run, second[0], second[1], k, n, seed_all, terms[orders[1]]
    )


def viewed_dict(params: Params) -> dict[str, float]:
    """The dict behind ``params.view``, as the code that made it would change it."""
    (table,) = [x for x in gc.get_referents(params.view) if type(x) is dict]
    return table


def change_library_world(params: Params, change: str) -> None:
    """The changes of what a guard watching only named entries and identities would miss."""
    if change == "namespace":
        params.namespace.scale = -0.75
    elif change == "chain":
        params.chain.maps[1]["s"] = 3.0
    elif change == "viewed":
        viewed_dict(params)["a"] = -2.0
    elif change == "viewed_grows":
        viewed_dict(params)["c"] = 0.25
    elif change == "knob":
        params.knobs.gain = -0.5
    elif change == "identity":
        params.lr = float(str(params.lr))  # equal, and another object
    elif change == "settings":
        params.settings["s"] = -0.5
    elif change == "function_attribute":
        params.act.slope = 1.5
    elif change == "weak":
        params.knob.w = Value(-1.25)
    elif change == "keyed":  # keys made anew, equal to none before
        params.keyed = {(i + 1, j * 3): v for (i, j), v in params.keyed.items()}
    elif change == "drawn_outside":  # a generator in the world draws between calls: no new recording needed
        params.rng.random()


@pytest.mark.slow  # random programs compiled: seconds
@settings(max_examples=max(EXAMPLES // 3, 10))
@given(before=st.lists(step, max_size=6), refused=refusal, after=st.lists(step, max_size=4))
def test_a_program_that_reads_a_number_is_refused_naming_its_line(
    before: list[tuple[Any, ...]], refused: tuple[Any, ...], after: list[tuple[Any, ...]]
) -> None:
    steps = [*before, refused, *after]
    params = Params([Value(1.0), Value(2.0), Value(3.0)])
    run(steps, params, Value(0.5), Value(1.5), 0.5, 1)  # eager code runs it
    with pytest.raises(DataDependentError) as error:
        vjpgrad.compile(run)(steps, Params([Value(1.0), Value(2.0), Value(3.0)]), Value(0.5), Value(1.5), 0.5, 1)
    assert f"test_compile_fuzz.py:{line_of(REFUSED[refused[0]])}" in str(error.value)


@settings(max_examples=max(EXAMPLES // 6, 5))
@given(before=st.lists(step, max_size=6))
def test_a_program_that_changes_its_list_argument_is_refused(before: list[tuple[Any, ...]]) -> None:
    params = Params([Value(1.0), Value(2.0), Value(3.0)])
    with pytest.raises(DataDependentError, match="changed extra") as error:
        vjpgrad.compile(run)([*before, ("append", 0)], params, Value(0.5), Value(1.5), 0.5, 1, [])
    assert f"test_compile_fuzz.py:{line_of('REFUSED append')}" in str(error.value)


@pytest.mark.slow  # random programs compiled: seconds
@settings(max_examples=max(EXAMPLES // 6, 5))
@given(before=st.lists(step, max_size=6), after=st.lists(step, max_size=3))
def test_a_program_that_changes_its_world_is_refused(
    before: list[tuple[Any, ...]], after: list[tuple[Any, ...]]
) -> None:
    params = Params([Value(1.0), Value(2.0), Value(3.0)])
    with pytest.raises(DataDependentError, match=r"changed params\.calls"):
        vjpgrad.compile(run)([*before, ("count", 0), *after], params, Value(0.5), Value(1.5), 0.5, 1)


DESCRIBED: dict[bytes, str] = {}  # every description seen in this run, with the code written from it


@pytest.mark.slow  # random programs compiled: tens of seconds
@settings(max_examples=EXAMPLES)
@given(
    steps=st.lists(step, min_size=1, max_size=6),
    numbers=st.tuples(number, number, number),
    trip=st.sampled_from([0, 1, 2]),
)
def test_recordings_the_cache_describes_alike_have_the_same_code(
    steps: list[tuple[Any, ...]], numbers: tuple[float, float, float], trip: int
) -> None:
    # the compiled-code cache keys code by ``describe``: two recordings with one description must
    # be written as one code, or a process could load another structure's code from the cache
    from vjpgrad.compiler.record import describe

    compiled = vjpgrad.compile(run)
    params = Params([Value(1.5), Value(-0.5), Value(2.0)])
    compiled(steps, params, Value(numbers[0]), Value(numbers[1]), numbers[2], trip)
    entry = compiled._last
    assert entry is not None
    description = describe(entry.recorded, entry.internal_outputs)
    assert description is not None  # no custom operation here: every recording is cacheable
    source = entry.program.source
    assert DESCRIBED.setdefault(description, source) == source
