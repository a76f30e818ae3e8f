"""What vjpgrad.compile watches: the function's whole world, or a refusal.

Each scenario runs the same calls, with the same changes between them, once eagerly and once
compiled, on two twin worlds; the results and gradients must be the same bits. The function
reads things a guard watching only the paths to its Values would miss: flags and numbers on
objects that hold no Value, containers that were empty, ``requires_grad`` of a Value it did not
read, the order of dicts and sets, keyword arguments' order, a float subclass's attributes.
Side effects are refused, numbers are structure (a warning, then eager code, when they keep
changing), and a world too large to watch is refused naming its largest container.
"""

from __future__ import annotations

import abc
import argparse
import array
import ast
import builtins
import collections
import contextlib
import dataclasses
import decimal
import enum
import functools
import gc
import importlib
import inspect
import io
import itertools
import math
import operator
import os
import pkgutil
import pydoc
import random
import string
import subprocess
import sys
import sysconfig
import types
import typing
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _helpers import bits, twin_scaled

import vjpgrad
from vjpgrad import RecompileWarning, Value, Vector
from vjpgrad.compiler import DataDependentError, world
from vjpgrad.compiler.run import ARGUMENT_STRUCTURE_LIMIT, RECOMPILE_LIMIT, STRUCTURE_LIMIT


def twin_runs(build: Callable[[], tuple[Callable[..., Any], list[Callable[[], Any]]]]) -> None:
    """``build()`` makes a fresh world: the function and the calls to make, each a thunk that
    changes the world (or not) and calls the function given to it. The compiled run and the
    eager run must see the same numbers and gradients at every call."""

    def results(compiled: bool) -> list[Any]:
        fn, calls = build()
        run = vjpgrad.compile(fn) if compiled else fn
        found = []
        for call in calls:
            out = call(run)
            outs = list(out) if isinstance(out, (list, tuple, Vector)) else [out]
            live = [y for y in outs if y.requires_grad]
            if live:
                Vector(live).backward([1.0] * len(live))
            found.append([bits(y.data) for y in outs])
        return found

    assert results(compiled=True) == results(compiled=False)


def leaves_grads(*values: Value) -> list[Any]:
    return [bits(v.grad) for v in values]


# ---- the issue's eight classes: each gave another number compiled than eager -----------------------


def test_a_flag_on_a_submodule_that_holds_no_value_is_watched() -> None:
    class Dropout:
        training = True

        def __call__(self, x: Value) -> Value:
            return x * 2.0 if self.training else x

    class Model:
        def __init__(self) -> None:
            self.w = Value(1.0)
            self.drop = Dropout()

        def __call__(self, x: Value) -> Value:
            return self.drop(x * self.w)

    def build() -> Any:
        model = Model()

        def evaluate(run: Any) -> Any:
            model.drop.training = False
            return run(Value(1.0))

        return (lambda x: model(x)), [lambda run: run(Value(1.0)), lambda run: run(Value(1.0)), evaluate]

    twin_runs(build)


def test_a_number_in_an_imported_module_is_watched() -> None:
    config = types.ModuleType("config")  # a module of the user's, as `import config` gives
    config.LR_SCALE = 1.0  # type: ignore[attr-defined]  # the subject: a module attribute

    def build() -> Any:
        w = Value(2.0)
        config.LR_SCALE = 1.0  # type: ignore[attr-defined]

        def rescale(run: Any) -> Any:
            config.LR_SCALE = 3.0  # type: ignore[attr-defined]
            return run(Value(1.0))

        return (lambda x: x * w * config.LR_SCALE), [lambda run: run(Value(1.0)), rescale, rescale]  # type: ignore[attr-defined]

    twin_runs(build)


def test_a_class_level_flag_is_watched() -> None:
    def build() -> Any:
        class Model:
            training = True  # the class holds no Value: only the instance does

            def __init__(self) -> None:
                self.w = Value(0.5)

            def __call__(self, x: Value) -> Value:
                return x * self.w * (2.0 if self.training else 1.0)

        model = Model()

        def evaluate(run: Any) -> Any:
            Model.training = False
            return run(Value(1.0))

        return (lambda x: model(x)), [lambda run: run(Value(1.0)), evaluate, evaluate]

    twin_runs(build)


def test_a_flag_that_chooses_the_parameter_is_watched() -> None:
    def build() -> Any:
        a, b = Value(1.0), Value(2.0)
        opts = types.SimpleNamespace(use_b=False)

        def switch(run: Any) -> Any:
            opts.use_b = True
            out = run(Value(3.0))
            return [out, a * 1.0, b * 1.0]  # the gradients reached a and b: compared through these

        return (lambda x: x * (b if opts.use_b else a)), [lambda run: run(Value(3.0)), switch]

    twin_runs(build)
    # and the gradient goes to the parameter eager code chooses
    a, b = Value(1.0), Value(2.0)
    opts = types.SimpleNamespace(use_b=False)
    f = vjpgrad.compile(lambda x: x * (b if opts.use_b else a))
    f(Value(3.0))
    opts.use_b = True
    f(Value(3.0)).backward()
    assert (a.grad, b.grad) == (0.0, 3.0)


def test_a_container_that_was_empty_and_later_holds_a_value_is_watched() -> None:
    class Model:
        def __init__(self) -> None:
            self.w = Value(2.0)
            self.adapters: list[Value] = []

        def __call__(self, x: Value) -> Value:
            return sum((x * a for a in self.adapters), x * self.w)

    model = Model()
    f = vjpgrad.compile(lambda x: model(x))
    assert f(Value(1.0)).data == 2.0
    model.adapters.append(Value(0.5))
    out = f(Value(1.0))
    out.backward()
    assert out.data == 2.5
    assert model.adapters[0].grad == 1.0


def test_requires_grad_of_a_value_the_recording_did_not_read_is_watched() -> None:
    p = Value(2.0, requires_grad=False)

    def f(x: Value) -> Value:
        t = x * 1.5
        if p.requires_grad:
            t = t * p
        return t

    compiled = vjpgrad.compile(f)
    assert compiled(Value(1.0)).data == 1.5
    p.requires_grad = True
    assert compiled(Value(1.0)).data == f(Value(1.0)).data == 3.0


@pytest.mark.parametrize(
    "reorder",
    [
        lambda d: d.__setitem__("a", d.pop("a")),
        lambda d: d.move_to_end("a"),
    ],
    ids=["pop and insert", "move_to_end"],
)
def test_the_order_of_a_dict_of_parameters_is_watched(reorder: Callable[[Any], None]) -> None:
    def build() -> Any:
        params = collections.OrderedDict(a=Value(1.0), b=Value(-2.0), c=Value(0.5))

        def chain(x: Value) -> Value:
            for p in params.values():  # the order of the chain is the order of the dict
                x = (x + p).tanh()
            return x

        def reordered(run: Any) -> Any:
            reorder(params)
            return run(Value(0.3))

        return chain, [lambda run: run(Value(0.3)), reordered, reordered]

    twin_runs(build)


def test_the_order_of_a_set_is_watched() -> None:
    class Item:
        def __init__(self, w: float) -> None:
            self.w = Value(w)

    items = [Item(float(k) - 3.5) for k in range(8)]
    members = set(items)

    def chain(x: Value) -> Value:
        for item in members:  # the order of the chain is the set's order
            x = (x + item.w).tanh()
        return x

    compiled = vjpgrad.compile(chain)
    for order in (items, items[::-1], items[::2] + items[1::2], items):
        members.clear()
        members.update(order)  # the same members, in the order their insertion gives
        assert bits(compiled(Value(0.3)).data) == bits(chain(Value(0.3)).data)


def test_keyword_arguments_keep_the_calls_order() -> None:
    def f(x: Value, **terms: float) -> Value:
        out = x
        for t in terms.values():
            out = out * 0.5 - t
        return out

    compiled = vjpgrad.compile(f)
    first = compiled(Value(1.0), b=2.0, a=1.0).data
    assert first == f(Value(1.0), b=2.0, a=1.0).data == -1.75  # b first: (1 * 0.5 - 2) * 0.5 - 1
    assert compiled(Value(1.0), a=1.0, b=2.0).data == f(Value(1.0), a=1.0, b=2.0).data == -2.25
    assert compiled(Value(1.0), b=2.0, a=1.0).data == -1.75  # each order replays its own recording
    assert compiled.times_recorded == 2


@pytest.mark.parametrize("where", ["parameter", "argument"])
def test_a_computed_value_kept_on_a_value_is_refused(where: str) -> None:
    w = Value(2.0)

    def f(x: Value) -> Value:
        h = x * w
        (w if where == "parameter" else x).last = h  # type: ignore[attr-defined]  # the subject
        return h

    name = "w.last" if where == "parameter" else "x.last"
    with pytest.raises(DataDependentError, match=rf"changed {name}"):
        vjpgrad.compile(f)(Value(1.0))


def test_a_parameter_rebound_through_a_second_path_is_seen() -> None:
    class Model:
        def __init__(self) -> None:
            self.layers = [[Value(1.0), Value(2.0)]]
            self.by_name = {"w": self.layers[0]}  # the same list, by a second path

    model = Model()
    f = vjpgrad.compile(lambda x: x * model.by_name["w"][1])
    assert f(Value(1.0)).data == 2.0
    model.by_name["w"] = [Value(1.0), Value(5.0)]
    assert f(Value(1.0)).data == 5.0


@pytest.mark.slow  # a world of many objects
def test_a_world_too_large_to_watch_is_refused_naming_its_largest_container() -> None:
    dataset = [[float(i), 1.0] for i in range(world.WORLD_LIMIT)]
    w = Value(2.0)

    def loss(x: Value, i: int) -> Value:
        return x * w * dataset[i][0]

    with pytest.raises(DataDependentError, match=r"can reach dataset, which holds 100,000") as refused:
        vjpgrad.compile(loss)(Value(1.0), 3)
    assert "a NumPy array or an array.array" in str(refused.value)  # one buffer, watched by its bytes
    assert loss(Value(1.0), 3).data == 6.0  # eager code runs it
    table = array.array("d", [row[0] for row in dataset])  # what the refusal suggests
    compiled = vjpgrad.compile(lambda x, i: x * w * table[i])
    assert [compiled(Value(1.0), i).data for i in (3, 3, 4)] == [6.0, 6.0, 8.0]


def test_a_float_subclass_argument_is_watched_as_an_object() -> None:
    class Temperature(float):
        def __new__(cls, value: float, scale: float = 1.0) -> Temperature:
            made = super().__new__(cls, value)
            made.scale = scale  # type: ignore[attr-defined]
            return made

    def f(x: Value, t: Temperature) -> Value:
        return x * t * t.scale  # type: ignore[attr-defined]

    compiled = vjpgrad.compile(f)
    assert compiled(Value(1.0), Temperature(0.5, scale=1.0)).data == 0.5
    assert compiled(Value(1.0), Temperature(0.5, scale=3.0)).data == 1.5
    t = Temperature(0.5)
    assert compiled(Value(1.0), t).data == 0.5
    t.scale = 4.0  # type: ignore[attr-defined]
    assert compiled(Value(1.0), t).data == 2.0


def test_the_world_of_a_compiled_function_called_inside_is_watched() -> None:
    config = types.SimpleNamespace(scale=2.0)
    inner = vjpgrad.compile(lambda v: v * config.scale)
    outer = vjpgrad.compile(lambda x: inner(x) + 1.0)
    assert outer(Value(1.0)).data == 3.0
    config.scale = 5.0
    assert outer(Value(1.0)).data == 6.0


# ---- side effects ------------------------------------------------------------------------------------


def test_a_counter_the_function_increments_is_refused() -> None:
    class Model:
        calls = 0
        w = Value(2.0)

        def __call__(self, x: Value) -> Value:
            self.calls += 1
            return x * self.w * self.calls

    model = Model()
    with pytest.raises(DataDependentError, match=r"changed model\.calls \(added\)"):
        vjpgrad.compile(lambda x: model(x))(Value(1.0))


def _counts_its_calls(x: Value) -> Value:
    _counts_its_calls.calls = getattr(_counts_its_calls, "calls", 0) + 1  # type: ignore[attr-defined]
    return x * 2.0


def _tagged(x: Value) -> Value:
    return x * 2.0


def _tagged_with_a_default(x: Value, k: float = 2.0) -> Value:
    return x * k


@pytest.mark.parametrize("helper", [_tagged, _tagged_with_a_default])
def test_an_attribute_deleted_from_a_function_is_refused_naming_it(helper: Callable[..., Value]) -> None:
    # it named helper.__closure__ (a function with none), or the function alone
    def f(x: Value) -> Value:
        del helper.tag  # type: ignore[attr-defined]
        return helper(x)

    helper.tag = "v1"  # type: ignore[attr-defined]
    try:
        with pytest.raises(DataDependentError, match=r"changed helper\.tag \(removed\)"):
            vjpgrad.compile(f)(Value(1.0))
    finally:
        vars(helper).pop("tag", None)


def test_an_object_passed_that_cannot_be_watched_is_named_as_its_argument() -> None:
    # it was named by its kind alone: "can reach an object it was given (generator)"
    def f(x: Value, noise: Any) -> Value:
        return x * next(noise)

    with pytest.raises(DataDependentError, match=r"can reach noise, an iterator.*draw what noise gives"):
        vjpgrad.compile(f)(Value(1.0), (k * 1.0 for k in range(3)))
    with pytest.raises(DataDependentError, match=r"can reach an object it was given \(generator\)"):
        vjpgrad.compile(lambda x, held: x * next(held[0]))(Value(1.0), [(k * 1.0 for k in range(3))])


def test_an_attribute_a_function_gives_itself_is_refused_naming_it() -> None:
    # the first call named the function alone ("changed _counts_its_calls"), the later ones the attribute
    with pytest.raises(DataDependentError, match=r"changed _counts_its_calls\.calls \(added\)"):
        vjpgrad.compile(_counts_its_calls)(Value(1.0))
    with pytest.raises(DataDependentError, match=r"changed _counts_its_calls\.calls"):
        vjpgrad.compile(_counts_its_calls)(Value(1.0))


def test_a_number_the_function_changes_is_refused_naming_it() -> None:
    state = types.SimpleNamespace(step=0)

    def f(x: Value) -> Value:
        state.step = state.step + 1
        return x * 2.0

    with pytest.raises(DataDependentError, match=r"changed state\.step while"):
        vjpgrad.compile(f)(Value(1.0))


def test_requires_grad_the_function_changes_is_refused() -> None:
    w = Value(2.0)

    def f(x: Value) -> Value:
        w.requires_grad = False
        return x * w

    with pytest.raises(DataDependentError, match=r"changed w \(its requires_grad\)"):
        vjpgrad.compile(f)(Value(1.0))


# ---- numbers are structure ----------------------------------------------------------------------------


def test_numbers_that_keep_changing_warn_once_then_run_eagerly() -> None:
    w = Value(2.0)
    calls = []

    def step(x: Value, lr: float) -> Value:
        return x * w * lr

    compiled = vjpgrad.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(12):
            calls.append(compiled(Value(1.0), 0.5 + k).data)
    assert calls == [step(Value(1.0), 0.5 + k).data for k in range(12)]
    recompiles = [w for w in caught if issubclass(w.category, RecompileWarning)]
    assert len(recompiles) == 1
    assert "the argument lr" in str(recompiles[0].message)
    assert "Value(lr, requires_grad=False)" in str(recompiles[0].message)
    assert compiled.eager
    assert compiled.times_recorded == 1 + RECOMPILE_LIMIT + 1  # the first, the repeats allowed, the one past them


def test_a_number_attribute_that_keeps_changing_is_named_in_the_warning() -> None:
    config = types.SimpleNamespace(scale=1.0)
    compiled = vjpgrad.compile(lambda x: x * config.scale)

    def each_scale() -> list[float]:
        found = []
        for k in range(10):
            config.scale = float(k)
            found.append(compiled(Value(1.0)).data)
        return found

    with pytest.warns(RecompileWarning, match=r"config\.scale"):
        found = each_scale()
    assert found == [float(k) for k in range(10)]


@pytest.mark.parametrize(
    "settings_of",
    [
        lambda lr: {"scale": 1.0, "lr": lr},
        lambda lr: collections.OrderedDict(scale=1.0, lr=lr),
        lambda lr: collections.Counter(scale=1.0, lr=lr),
        lambda lr: collections.defaultdict(float, scale=1.0, lr=lr),
    ],
    ids=["dict", "OrderedDict", "Counter", "defaultdict"],
)
def test_a_number_changed_in_a_mapping_argument_is_named_by_its_key(settings_of: Any) -> None:
    # the warning named the part of a dict alone by its key: of the standard library's other
    # dicts (a defaultdict's factory is a part too) it named another part, or "grad mode"
    compiled = vjpgrad.compile(lambda x, settings: x * settings["scale"] * settings["lr"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(12):
            compiled(Value(1.0), settings_of(0.5 + k))
    (message,) = [str(w.message) for w in caught if issubclass(w.category, RecompileWarning)]
    assert "the argument settings['lr']" in message, message


def test_a_new_object_argument_at_every_call_is_advised_as_an_object_keyed_by_identity() -> None:
    """An object passed is keyed by its identity: a new one at every call records anew, and the
    warning says so (not the advice for a part of the world, nor for a number)."""

    class Settings:
        def __init__(self) -> None:
            self.scale = 2.0

    compiled = vjpgrad.compile(lambda x, settings: x * settings.scale)
    kept = []  # alive, so that no two calls' objects share an address
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(ARGUMENT_STRUCTURE_LIMIT + 2):
            kept.append(Settings())
            assert compiled(Value(1.0), kept[-1]).data == 2.0
    (message,) = [str(w.message) for w in caught if issubclass(w.category, RecompileWarning)]
    assert "the argument settings" in message
    assert "An object argument is keyed by its identity" in message
    assert "Numbers are structure" not in message


def test_a_part_of_the_world_rebound_at_every_call_is_advised_to_be_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A global the function reads, bound to a new list at every call: the warning names it and
    says to pass it as an argument."""
    compiled = vjpgrad.compile(lambda x: x * TABLE_OF_THE_WORLD[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(STRUCTURE_LIMIT + 2):  # another length: another structure (given back after the test)
            monkeypatch.setitem(globals(), "TABLE_OF_THE_WORLD", [2.0] * (k + 1))
            assert compiled(Value(1.0)).data == 2.0
    (message,) = [str(w.message) for w in caught if issubclass(w.category, RecompileWarning)]
    assert "TABLE_OF_THE_WORLD" in message
    assert "If the function reads it, pass it as an argument" in message
    assert "An object argument" not in message


TABLE_OF_THE_WORLD = [2.0]


def test_a_number_passed_as_a_value_is_data_recorded_once() -> None:
    compiled = vjpgrad.compile(lambda x, lr: x * lr)
    for k in range(12):
        assert compiled(Value(1.0), Value(0.5 + k, requires_grad=False)).data == 0.5 + k
    assert compiled.times_recorded == 1


def test_different_structures_count_toward_their_own_limit() -> None:
    # arguments of many lengths (a GPT's sequences) are programs of their own: more than the world's 8
    assert ARGUMENT_STRUCTURE_LIMIT > 16 > STRUCTURE_LIMIT
    compiled = vjpgrad.compile(lambda xs: sum(xs[1:], xs[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompileWarning)
        for n in range(1, ARGUMENT_STRUCTURE_LIMIT + 1):
            assert compiled([Value(1.0)] * n).data == float(n)
    assert not compiled.eager
    assert compiled.times_recorded == ARGUMENT_STRUCTURE_LIMIT
    limit = ARGUMENT_STRUCTURE_LIMIT
    with pytest.warns(RecompileWarning, match=r"structures.*the argument xs") as caught:
        found = [compiled([Value(1.0)] * n).data for n in range(limit + 1, limit + 6)]
    assert found == [float(n) for n in range(limit + 1, limit + 6)]
    assert len(caught) == 1
    assert compiled.eager
    assert caught[0].filename == __file__  # the user's line, not compile's


def test_reset_compiles_again_after_the_limit() -> None:
    compiled = vjpgrad.compile(lambda x, c: x * c)
    with pytest.warns(RecompileWarning):
        _ = [compiled(Value(1.0), float(k)) for k in range(10)]
    compiled.reset()
    assert not compiled.eager
    compiled(Value(1.0), 2.0)
    assert compiled.recordings == 1


# ---- the other two: a custom rule returning a closed-over Value, and no_grad ---------------------------


def test_a_custom_rule_that_returns_a_closed_over_value_works_compiled() -> None:
    k = Value(3.0)

    @vjpgrad.custom_op
    def square(u: float) -> float:
        return u * u

    @square.derivative
    def _(u: Any, out: Any) -> Any:
        return k  # its number at each call, as in eager code

    def grads(run: Any) -> list[float]:
        found = []
        for number in (3.0, 3.0, 5.0, 5.0):
            k.data = number
            x = Value(2.0)
            run(x).backward()
            found.append(x.grad)
        return found

    assert grads(vjpgrad.compile(lambda x: square(x))) == grads(lambda x: square(x)) == [3.0, 3.0, 5.0, 5.0]


def test_under_no_grad_the_recording_call_returns_eagers_leaf() -> None:
    w = Value(2.0)
    with vjpgrad.no_grad():
        eager = (lambda x: x * w + 1.0)(Value(1.0))
        compiled = vjpgrad.compile(lambda x: x * w + 1.0)
        first, second = compiled(Value(1.0)), compiled(Value(1.0))
    for out in (first, second):
        assert (out._op, out.is_leaf, out.requires_grad, out.data) == (eager._op, True, False, 3.0)


# ---- what a built-in method holds, and numbers == does not tell apart ------------------------------


def test_a_dict_read_through_its_bound_get_is_watched() -> None:
    def build() -> Any:
        table = {"k": 2.0}
        lookup = table.get

        def change(run: Any) -> Any:
            table["k"] = 3.0
            return run(Value(1.5))

        return (lambda x: x * lookup("k")), [lambda run: run(Value(1.5)), change, change]

    twin_runs(build)


def test_a_list_appended_to_through_its_bound_append_is_refused() -> None:
    steps: list[None] = []
    tick, count = steps.append, steps.__len__

    def f(x: Value) -> Value:
        tick(None)
        return x * (1.0 / count())

    with pytest.raises(DataDependentError, match="changed"):
        vjpgrad.compile(f)(Value(1.0))


@pytest.mark.parametrize(
    ("recorded", "then"),
    [
        (decimal.Decimal("0"), decimal.Decimal("-0")),
        (decimal.Decimal("1.0"), decimal.Decimal("1.00")),
        (complex(0.0, 0.0), complex(-0.0, 0.0)),
    ],
    ids=["decimal zero's sign", "decimal's exponent", "complex zero's sign"],
)
def test_numbers_that_compare_equal_but_differ_are_told_apart(recorded: Any, then: Any) -> None:
    def f(x: Value, number: Any) -> Value:
        return x * float(str(number).count("0") + len(str(number))) + x * (-1.0 if "-" in str(number) else 1.0)

    assert recorded == then  # == cannot tell them apart
    assert f(Value(1.5), recorded).data != f(Value(1.5), then).data
    compiled = vjpgrad.compile(f)
    compiled(Value(1.5), recorded)
    assert compiled(Value(1.5), then).data == f(Value(1.5), then).data


# ---- library classes' instances, views and proxies, names computed at run time, a number's identity


def _library_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A module that looks installed (its file under site-packages), as a library's would."""
    module = types.ModuleType("settings_library")
    module.__file__ = os.path.join(sysconfig.get_paths()["purelib"], "settings_library.py")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def _library_dataclass(monkeypatch: pytest.MonkeyPatch) -> Any:
    module = _library_module(monkeypatch)

    @dataclasses.dataclass
    class Settings:
        scale: float

    Settings.__module__ = module.__name__
    return Settings


_HOLDERS: dict[str, tuple[Callable[[], Any], Callable[[Any], float], Callable[[Any], None]]] = {
    "argparse.Namespace": (
        lambda: argparse.Namespace(scale=1.0),
        lambda h: h.scale,
        lambda h: setattr(h, "scale", 3.0),
    ),
    "collections.UserDict": (
        lambda: collections.UserDict(scale=1.0),
        lambda h: h["scale"],
        lambda h: h.__setitem__("scale", 3.0),
    ),
    "collections.UserList": (
        lambda: collections.UserList([1.0]),
        lambda h: h[0],
        lambda h: h.__setitem__(0, 3.0),
    ),
    "collections.ChainMap": (
        lambda: collections.ChainMap({}, {"scale": 1.0}),
        lambda h: h["scale"],
        lambda h: h.maps[1].__setitem__("scale", 3.0),
    ),
}


@pytest.mark.parametrize("kind", sorted(_HOLDERS))
def test_a_number_inside_a_library_classs_instance_is_watched(kind: str) -> None:
    make, read, change = _HOLDERS[kind]

    def build() -> Any:
        holder, w = make(), Value(2.0)

        def changed(run: Any) -> Any:
            change(holder)
            return run(Value(1.0))

        return (lambda x: x * w * read(holder)), [lambda run: run(Value(1.0)), changed, changed]

    twin_runs(build)


def test_a_number_inside_a_library_dataclass_is_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    settings_class = _library_dataclass(monkeypatch)

    def build() -> Any:
        settings, w = settings_class(scale=1.0), Value(2.0)

        def changed(run: Any) -> Any:
            settings.scale = 3.0
            return run(Value(1.0))

        return (lambda x: x * w * settings.scale), [lambda run: run(Value(1.0)), changed, changed]

    twin_runs(build)


@pytest.mark.parametrize("cache", [functools.cache, functools.lru_cache(maxsize=8)], ids=["cache", "lru_cache"])
def test_a_functools_cache_the_function_reaches_is_refused_naming_it(cache: Any) -> None:
    config = types.SimpleNamespace(scale=1.0)

    @cache
    def cached_scale() -> float:
        return config.scale

    def f(x: Value) -> Value:
        return x * cached_scale()

    with pytest.raises(DataDependentError, match=r"cached_scale.*functools\.lru_cache"):
        vjpgrad.compile(f)(Value(1.0))
    assert f(Value(1.0)).data == 1.0  # eager code runs it


def test_a_users_functools_cache_of_a_library_callable_called_inside_is_refused() -> None:
    """``functools.lru_cache(table.get)`` is the user's cache, though what it wraps is Python's:
    its cache hides what it read (eager code reads the table again once the cache is cleared, a
    replay would return the recorded number). Refused as the user's cache of their own function."""
    table = {"scale": 1.5}
    cached_get = functools.lru_cache(maxsize=None)(table.get)
    cached_draw = functools.lru_cache(maxsize=None)(random.Random(0).random)
    cached_draw()

    def f(x: Value) -> Value:
        return x * cached_get("scale")

    def g(x: Value) -> Value:
        return x * cached_draw()

    for fn in (f, g):
        with pytest.raises(DataDependentError, match=r"functools\.lru_cache"):
            vjpgrad.compile(fn)(Value(1.0))


def test_the_function_a_functools_cache_wraps_called_inside_is_watched() -> None:
    """What the refusal above says to do works: ``cached.__wrapped__`` called inside is the
    user's function, watched as any (a change of what it reads records anew); only a call of the
    cache itself is refused."""
    config = types.SimpleNamespace(scale=2.0)

    @functools.cache
    def cached_scale() -> float:
        return config.scale

    def f(x: Value) -> Value:
        return x * cached_scale.__wrapped__()

    compiled = vjpgrad.compile(f)
    assert [compiled(Value(1.0)).data for _ in range(2)] == [2.0, 2.0]
    config.scale = 3.0
    assert compiled(Value(1.0)).data == 3.0
    assert compiled.times_recorded == 2
    cached_scale()  # the cache called outside, between calls: no new recording
    assert compiled(Value(1.0)).data == 3.0
    assert compiled.times_recorded == 2


_VIEWS: dict[str, Callable[[dict[str, float]], Callable[[Value], Value]]] = {
    "values()": lambda table: (lambda view: lambda x: sum((x * v for v in view), Value(0.0)))(table.values()),
    "keys()": lambda table: (lambda view: lambda x: sum((x * len(k) for k in view), Value(0.0)))(table.keys()),
    "items()": lambda table: (lambda view: lambda x: sum((x * len(k) * v for k, v in view), Value(0.0)))(table.items()),
    "MappingProxyType": lambda table: (lambda proxy: lambda x: sum((x * v for v in proxy.values()), Value(0.0)))(
        types.MappingProxyType(table)
    ),
}


@pytest.mark.parametrize("view", sorted(_VIEWS))
@pytest.mark.parametrize("change", ["a value", "a new key", "the order"])
def test_a_view_or_proxy_of_a_dict_is_watched_as_the_dict(view: str, change: str) -> None:
    def build() -> Any:
        table = {"a": 1.0, "bb": 2.0}
        fn = _VIEWS[view](table)

        def changed(run: Any) -> Any:
            if change == "a value":
                table["a"] = 5.0
            elif change == "a new key":
                table["ccc"] = 3.0
            else:
                table["a"] = table.pop("a")
            return run(Value(1.5))

        return fn, [lambda run: run(Value(1.5)), changed, changed]

    twin_runs(build)


class _ByName:
    scale = 1.0


SCALE_READ_BY_NAME = 1.0


def _change_global() -> None:
    global SCALE_READ_BY_NAME
    SCALE_READ_BY_NAME = 3.0


_RUNTIME_NAMES: dict[str, Callable[[str], float]] = {
    "getattr(C, name)": lambda name: getattr(_ByName, name),
    "vars(C)[name]": lambda name: vars(_ByName)[name],
    "C.__dict__[name]": lambda name: _ByName.__dict__[name],
    "globals()[name]": lambda name: globals()["SCALE_READ_BY_NAME" if name == "scale" else name],
    # a format field reads the attribute it names, spelled only in the string
    "'{0.name}'.format(C)": lambda name: float(("{0." + name + "}").format(_ByName)),
    "'{c.name}'.format_map(...)": lambda name: float(("{c." + name + "}").format_map({"c": _ByName})),
    "string.Formatter().format": lambda name: float(string.Formatter().format("{0." + name + "}", _ByName)),
    "inspect.getattr_static(C, name)": lambda name: inspect.getattr_static(_ByName, name),
}


@pytest.mark.parametrize("how", sorted(_RUNTIME_NAMES))
def test_a_name_computed_at_run_time_is_watched(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    read = _RUNTIME_NAMES[how]

    def build() -> Any:
        monkeypatch.setattr(_ByName, "scale", 1.0)
        monkeypatch.setitem(globals(), "SCALE_READ_BY_NAME", 1.0)
        w, name = Value(2.0), "".join(["sc", "ale"])  # a name the code does not spell

        def changed(run: Any) -> Any:
            _ByName.scale = 3.0
            _change_global()
            return run(Value(1.0))

        return (lambda x: x * w * read(name)), [lambda run: run(Value(1.0)), changed, changed]

    twin_runs(build)


def test_a_name_computed_at_run_time_in_a_users_module_is_watched() -> None:
    config = types.ModuleType("config")  # a module of the user's, as `import config` gives
    config.LR_SCALE = 1.0  # type: ignore[attr-defined]  # the subject: a module attribute

    def build() -> Any:
        w, name = Value(2.0), "_".join(["LR", "SCALE"])
        config.LR_SCALE = 1.0  # type: ignore[attr-defined]

        def rescale(run: Any) -> Any:
            config.LR_SCALE = 3.0  # type: ignore[attr-defined]
            return run(Value(1.0))

        return (lambda x: x * w * getattr(config, name)), [lambda run: run(Value(1.0)), rescale, rescale]

    twin_runs(build)


def test_a_numbers_identity_is_watched_where_the_code_compares_with_is() -> None:
    default = float("0.1")

    def f(x: Value, lr: float) -> Value:
        return x * (2.0 if lr is default else 1.0)

    compiled = vjpgrad.compile(f)
    assert compiled(Value(1.0), default).data == 2.0
    equal = float("0.1")  # == default, another object
    assert compiled(Value(1.0), equal).data == f(Value(1.0), equal).data == 1.0
    assert compiled(Value(1.0), default).data == 2.0


def test_a_numbers_identity_in_the_world_is_watched_where_the_code_compares_with_is() -> None:
    def build() -> Any:
        default = float("0.1")
        opts = types.SimpleNamespace(lr=default)

        def changed(run: Any) -> Any:
            opts.lr = float("0.1")  # an equal number, another object
            return run(Value(1.0))

        return (lambda x: x * (2.0 if opts.lr is default else 1.0)), [lambda run: run(Value(1.0)), changed, changed]

    twin_runs(build)


_TRAIN = "train"


def test_a_strings_identity_passed_is_watched_where_the_code_compares_with_is() -> None:
    """``mode is TRAIN``: a string made at run time equal to the global is another object, and
    eager code takes the other branch; the recording for the global itself must not answer."""

    def f(x: Value, mode: str) -> Value:
        return x * (2.0 if mode is _TRAIN else 3.0)

    compiled = vjpgrad.compile(f)
    for mode in (_TRAIN, _TRAIN, "".join(["tr", "ain"]), _TRAIN, "".join(["tr", "ain"])):
        assert bits(compiled(Value(1.0), mode).data) == bits(f(Value(1.0), mode).data)


def test_which_numbers_of_a_list_are_one_object_is_watched_where_the_code_compares_with_is() -> None:
    def build() -> Any:
        shared = float("0.5")
        numbers = [shared, shared, float("2.5"), 7.0, 1000]

        def split(run: Any) -> Any:
            numbers[1] = float("0.5")  # equal, another object
            return run(Value(1.0))

        def f(x: Value) -> Value:
            return x * (3.0 if numbers[0] is numbers[1] else 1.0) * numbers[2]

        return f, [lambda run: run(Value(1.0)), split, split]

    twin_runs(build)


def test_fresh_equal_numbers_passed_at_each_call_record_once() -> None:
    default = float("0.5")

    def f(x: Value, lr: float) -> Value:
        return x * lr * (2.0 if lr is default else 1.0)

    compiled, base = vjpgrad.compile(f), float("0.05")
    for _ in range(5):
        lr = base * 2.0  # a new float object at each step, always 0.1
        assert compiled(Value(1.0), lr).data == f(Value(1.0), lr).data
    assert compiled.times_recorded == 1


_NAN = float("nan")


@pytest.mark.parametrize(
    "test",
    [
        lambda label: label in (_NAN,),  # `in` asks identity before ==: only _NAN itself is in
        lambda label: [label] == [_NAN],
    ],
    ids=["in", "list =="],
)
def test_which_nan_is_passed_is_watched_as_containment_asks_identity_first(test: Callable[[float], bool]) -> None:
    def f(x: Value, label: float) -> Value:
        return x * (2.0 if test(label) else 3.0)

    compiled = vjpgrad.compile(f)
    for label in (_NAN, _NAN, float("nan"), _NAN, float("nan")):
        x, x_eager = Value(1.0), Value(1.0)
        y, y_eager = compiled(x, label), f(x_eager, label)
        y.backward()
        y_eager.backward()
        assert (bits(y.data), bits(x.grad)) == (bits(y_eager.data), bits(x_eager.grad))


@pytest.mark.parametrize(
    "same",
    [operator.is_, lambda a, b: id(a) == id(b), lambda a, b: not operator.is_not(a, b)],
    ids=["operator.is_", "id()", "operator.is_not"],
)
def test_a_numbers_identity_asked_through_operator_is_or_id_is_watched(same: Callable[[Any, Any], bool]) -> None:
    def build() -> Any:
        default = float("0.5")
        config = types.SimpleNamespace(lr=default)

        def changed(run: Any) -> Any:
            config.lr = float("0.5")  # equal, another object
            return run(Value(1.0))

        return (lambda x: x * (2.0 if same(config.lr, default) else 3.0)), [
            lambda run: run(Value(1.0)),
            changed,
            changed,
        ]

    twin_runs(build)


def test_a_module_looked_up_by_a_function_held_under_any_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``from pydoc import locate``, ``import pkgutil as pk``, ``from importlib import import_module
    as im``: the function is what looks the module up, whatever name holds it (a review: the
    module's K, changed, was unseen)."""
    (tmp_path / "scales_held.py").write_text("K = 2.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "scales_held", raising=False)
    importlib.import_module("scales_held")
    held = {
        "locate": pydoc.locate,
        "rn": pkgutil.resolve_name,
        "im": importlib.import_module,
        "imp": __import__,
    }
    for name, looks_up in held.items():

        def f(x: Value, looks_up: Any = looks_up) -> Value:
            found = looks_up("scales_held")
            return x * found.K

        with pytest.raises(DataDependentError, match="looks a module up at run time"):
            vjpgrad.compile(f)(Value(1.0))
        assert f(Value(1.0)).data == 2.0, name


_REGISTRY = {"a": 2.0}


def import_module(key: str) -> float:
    """A registry's helper of the user's, named as importlib's function is."""
    return _REGISTRY[key]


def resolve_name(key: str) -> float:
    """A registry's helper of the user's, named as pkgutil's function is."""
    return _REGISTRY[key]


def locate(key: str) -> float:
    """Another, named as pydoc's is."""
    return _REGISTRY[key]


def _scaled_by_the_registry(x: Value) -> Value:
    return x * resolve_name("a") * locate("a") * import_module("a")


def test_a_function_of_the_users_named_as_one_that_looks_modules_up_is_its_own() -> None:
    """``resolve_name`` and ``locate`` are common names of a registry's helpers: the user's own are
    walked as any function of theirs, not refused (a review)."""
    _REGISTRY["a"] = 2.0
    compiled = vjpgrad.compile(_scaled_by_the_registry)
    for _ in range(3):
        assert compiled(Value(1.5)).data == 12.0
    _REGISTRY["a"] = 3.0
    assert compiled(Value(1.5)).data == 40.5


@pytest.mark.parametrize(
    "reach",
    [
        lambda name: sys.modules[name],
        lambda name: importlib.import_module(name),
        lambda name: __import__(name),
        lambda name: pkgutil.resolve_name(name),  # a review: the module's K, changed, was unseen
        lambda name: pydoc.locate(name),
    ],
    ids=["sys.modules", "importlib.import_module", "__import__", "pkgutil.resolve_name", "pydoc.locate"],
)
def test_a_module_looked_up_by_name_at_run_time_is_refused(
    reach: Callable[[str], Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "scales_by_name.py").write_text("K = 2.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "scales_by_name", raising=False)
    importlib.import_module("scales_by_name")

    def f(x: Value) -> Value:
        return x * reach("scales_by_name").K

    with pytest.raises(DataDependentError, match="looks a module up at run time"):
        vjpgrad.compile(f)(Value(1.0))
    assert f(Value(1.0)).data == 2.0  # eager code runs it


FRAME_SCALE = 1.0


@pytest.mark.parametrize(
    "caller",
    [
        lambda: sys._getframe(1),
        lambda: inspect.currentframe().f_back,  # type: ignore[union-attr]
        lambda: inspect.stack()[1].frame,
    ],
    ids=["sys._getframe", "inspect.currentframe", "inspect.stack"],
)
def test_a_frame_read_at_run_time_is_refused(caller: Callable[[], Any]) -> None:
    """A frame the function finds while it runs (its caller's, whose globals and locals it
    reads) is no part of the world compile watches, and a compiled call has other callers than
    eager code: refused before it runs, not replayed with a stale number."""

    def f(x: Value) -> Value:
        return x * caller().f_globals.get("FRAME_SCALE", 1.0)

    with pytest.raises(DataDependentError, match="reads a frame"):
        vjpgrad.compile(f)(Value(1.0))


@pytest.mark.parametrize("kind", [set, frozenset])
def test_a_set_argument_gives_eagers_bits(kind: type) -> None:
    def f(x: Value, scales: Any) -> Value:
        return sum((x * s for s in scales), Value(0.0))

    compiled = vjpgrad.compile(f)
    for scales in ({1.0, 2.0}, {1.0, 2.0}, {1.0, 4.0}, {1.0, 2.0, 3.0}):
        assert bits(compiled(Value(1.5), kind(scales)).data) == bits(f(Value(1.5), kind(scales)).data)
    w, v = Value(2.0), Value(3.0)
    out = compiled(Value(1.5), kind({w, v}))
    out.backward()
    assert (w.grad, v.grad, out.data) == (1.5, 1.5, 7.5)


def test_a_create_graph_pass_through_tanh_inside_a_recording_is_refused_saying_so() -> None:
    w = Value(0.5)

    def f(x: Value) -> Value:
        (g,) = vjpgrad.gradients((x * w).tanh(), [x], create_graph=True)
        return g

    with pytest.raises(DataDependentError, match=r"create_graph through tanh.*take the gradient outside"):
        vjpgrad.compile(f)(Value(1.0))


def test_a_create_graph_pass_through_a_power_by_a_number_is_recorded_and_one_by_a_value_refused() -> None:
    """``x ** 2``'s gradient masks where the exponent is 0: a number is structure to compile, so
    the mask is decided by the recording's key, and ``grad`` of a squared error inside a compiled
    function is recorded (an outside review found it refused); ``x ** y`` with ``y`` a Value
    decides by ``y``'s number, and stays refused."""

    def squared(x: Value) -> Value:
        return vjpgrad.grad(lambda a: a**2)(x) + vjpgrad.grad(lambda a: a**0.0)(x)

    compiled = vjpgrad.compile(squared)
    assert [bits(compiled(Value(k)).data) for k in (3.0, -0.5, 3.0)] == [
        bits(squared(Value(k)).data) for k in (3.0, -0.5, 3.0)
    ]
    y = Value(2.0)

    def by_value(x: Value) -> Value:
        (g,) = vjpgrad.gradients(x**y, [x], create_graph=True)
        return g

    with pytest.raises(DataDependentError, match=r"create_graph through pow"):
        vjpgrad.compile(by_value)(Value(1.0))


# ---- the world, complete over Python's data model: each kind of object watched or refused ------------


class _DictBacked:
    """A config whose ``__getattr__`` raises KeyError for a name it lacks (a common slip)."""

    def __init__(self) -> None:
        self._settings = {"scale": 2.0}

    def __getattr__(self, name: str) -> Any:
        return self._settings[name]


def test_a_config_whose_getattr_raises_keyerror_passed_as_an_argument_gives_eagers_bits() -> None:
    def make() -> Any:
        config = _DictBacked()
        return (lambda x: (lambda c: x * c.scale)(config)), lambda k: config._settings.__setitem__("scale", k)

    twin_scaled(make)

    def make_passed() -> Any:
        config = _DictBacked()
        compiled_or_not: list[Any] = []

        def f(x: Value, c: Any) -> Value:
            return x * c.scale

        compiled_or_not.append(config)
        return (lambda x: f(x, config)), lambda k: config._settings.__setitem__("scale", k)

    twin_scaled(make_passed)
    config = _DictBacked()
    compiled = vjpgrad.compile(lambda x, c: x * c.scale)
    for k in (2.0, 3.0):
        config._settings["scale"] = k
        assert compiled(Value(1.0), config).data == k  # passed: an object, its world watched


def test_a_model_whose_getattr_raises_keyerror_compiles_as_a_callable_object() -> None:
    class Model:
        def __init__(self) -> None:
            self._params = {"w": Value(2.0)}

        def __getattr__(self, name: str) -> Any:
            return self._params[name]

        def __call__(self, x: Value) -> Value:
            return x * self.w

    def make() -> Any:
        model = Model()
        return model, lambda k: model._params.__setitem__("w", Value(k))

    twin_scaled(make)
    assert "Model" in repr(vjpgrad.compile(Model()))


def test_an_object_whose_getattribute_is_backed_by_a_dict_is_refused_naming_it() -> None:
    class Settings:
        def __init__(self) -> None:
            object.__setattr__(self, "_d", {"scale": 2.0})

        def __getattribute__(self, name: str) -> Any:
            return object.__getattribute__(self, "_d")[name]

    settings = Settings()
    with pytest.raises(DataDependentError, match=r"can reach settings, an instance of .*Settings.*__getattribute__"):
        vjpgrad.compile(lambda x: x * settings.scale)(Value(1.0))


def _wrapped_in(kind: str, inner: Callable[[Value], Value]) -> Callable[[Value], Value]:
    """``inner`` behind one of the wrappers a user puts around a function."""
    if kind == "grad":
        force = vjpgrad.grad(lambda t: inner(t) * t)
        return lambda x: x * force(x)
    if kind == "value_and_grad":
        both = vjpgrad.value_and_grad(lambda t: inner(t) * t)
        return lambda x: x * both(x)[1]
    if kind == "functools.wraps":

        @functools.wraps(inner)
        def wrapper(t: Value) -> Value:
            return inner(t)

        return wrapper
    if kind == "contextmanager":

        @contextlib.contextmanager
        def scaled() -> Any:
            yield inner(Value(1.0, requires_grad=False))

        def with_context(x: Value) -> Value:
            with scaled() as s:
                return x * s

        return with_context
    if kind == "singledispatch":

        @functools.singledispatch
        def scale(t: Any) -> Any:
            raise TypeError

        scale.register(Value)(inner)
        return lambda x: scale(x)
    if kind == "partial":
        return functools.partial(lambda t, unused: inner(t), unused=1)
    if kind == "partialmethod":

        class Holder:
            def method(self, t: Value) -> Value:
                return inner(t)

            scaled = functools.partialmethod(method)

        holder = Holder()
        return lambda x: holder.scaled(x)
    if kind == "no_grad":
        constant = vjpgrad.no_grad(inner)
        return lambda x: x * constant(Value(1.0, requires_grad=False))
    if kind == "enable_grad":
        return vjpgrad.enable_grad(inner)
    raise AssertionError(kind)


_WRAPPERS = [
    "grad",
    "value_and_grad",
    "functools.wraps",
    "contextmanager",
    "singledispatch",
    "partial",
    "partialmethod",
    "no_grad",
    "enable_grad",
]


@pytest.mark.parametrize("kind", _WRAPPERS)
def test_a_users_function_behind_a_wrapper_is_walked(kind: str) -> None:
    def make() -> Any:
        settings = {"scale": 2.0}
        return _wrapped_in(kind, lambda t: t * t * settings["scale"]), lambda k: settings.__setitem__("scale", k)

    twin_scaled(make)


def test_compile_over_no_grad_is_walked_and_names_the_users_function() -> None:
    settings = {"scale": 2.0}

    @vjpgrad.compile
    @vjpgrad.no_grad
    def scaled(x: Value) -> Value:
        return x * settings["scale"]

    assert scaled(Value(1.0)).data == 2.0
    settings["scale"] = 3.0
    assert scaled(Value(1.0)).data == 3.0
    seen: list[float] = []

    @vjpgrad.no_grad
    def keeps(x: Value) -> Value:
        seen.append(1.0)
        return x * 2.0

    with pytest.raises(DataDependentError, match=r"keeps changed seen.* it \(at .*test_compile_world\.py:\d+\)"):
        vjpgrad.compile(vjpgrad.enable_grad(keeps))(Value(1.0))


@pytest.mark.parametrize("kind", ["tuple made fresh", "('lr', 0.1 * k)", "an object whose attribute changes"])
def test_the_keys_of_a_dict_argument_are_watched_by_value(kind: str) -> None:
    class Key:
        def __init__(self) -> None:
            self.scale = 1.0

        def __hash__(self) -> int:
            return 0

    key = Key()

    def f(table: dict[Any, Value]) -> Value:
        total = Value(0.0)
        for k, v in table.items():
            total = total + v * (k.scale if isinstance(k, Key) else float(k[1]))
        return total

    def table_at(step: int) -> dict[Any, Value]:
        if kind == "tuple made fresh":
            return {(step, step + 1): Value(1.0)}
        if kind == "('lr', 0.1 * k)":
            return {("lr", 0.1 * step): Value(1.0)}
        key.scale = float(step)
        return {key: Value(1.0)}

    compiled = vjpgrad.compile(f)
    steps = (1, 1, 2, 3)
    found = [bits(compiled(table_at(step)).data) for step in steps]  # each key freed after its call
    assert found == [bits(f(table_at(step)).data) for step in steps]


def test_a_value_used_as_a_key_of_a_dict_argument_is_an_argument() -> None:
    compiled = vjpgrad.compile(lambda table: sum((k * v for k, v in table.items()), Value(0.0)))
    k, v = Value(2.0), Value(3.0)
    assert compiled({k: v}).data == 6.0
    assert compiled({Value(5.0): v}).data == 15.0


def test_a_function_attribute_is_watched() -> None:
    def make() -> Any:
        def act(t: Value) -> Value:
            return t * act.slope  # type: ignore[attr-defined]  # the subject: a function attribute

        act.slope = 2.0  # type: ignore[attr-defined]
        return (lambda x: act(x)), lambda k: setattr(act, "slope", k)

    twin_scaled(make)


def test_a_function_attribute_the_function_changes_is_refused() -> None:
    def f(x: Value) -> Value:
        f.calls += 1  # type: ignore[attr-defined]  # the subject: a counter on the function
        return x * 2.0

    f.calls = 0  # type: ignore[attr-defined]
    with pytest.raises(DataDependentError, match=r"changed .*f\.calls while"):
        vjpgrad.compile(f)(Value(1.0))


def test_a_value_kept_as_a_function_attribute_is_a_parameter() -> None:
    def f(x: Value) -> Value:
        return x * f.w  # type: ignore[attr-defined]  # the subject

    f.w = Value(2.0)  # type: ignore[attr-defined]
    compiled = vjpgrad.compile(f)
    x = Value(1.0)
    compiled(x).backward()
    assert (x.grad, f.w.grad) == (2.0, 1.0)  # type: ignore[attr-defined]
    f.w = Value(5.0)  # type: ignore[attr-defined]
    assert compiled(Value(1.0)).data == 5.0


@pytest.mark.parametrize("setting", ["lr", "weight_decay", "betas"])
def test_an_optimizers_settings_read_inside_are_watched(setting: str) -> None:
    def make() -> Any:
        w = Value(1.0)
        opt = vjpgrad.optim.Adam([w], lr=0.1)

        def f(x: Value) -> Value:
            read = {"lr": lambda: opt.lr, "weight_decay": lambda: opt.weight_decay, "betas": lambda: opt.betas[0]}
            return x * w * (1.0 + read[setting]())

        def change(k: float) -> None:
            setattr(opt, setting, (k / 10, 0.999) if setting == "betas" else k / 10)

        return f, change

    twin_scaled(make)


def _user_module(monkeypatch: pytest.MonkeyPatch, source: str = "") -> types.ModuleType:
    """A module of the user's (no file under an installed location)."""
    module = types.ModuleType("users_settings")
    exec(source, vars(module))  # the test's own source: a module-level __getattr__
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def test_a_module_attribute_absent_at_recording_is_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    def make() -> Any:
        settings = _user_module(monkeypatch)

        def f(x: Value) -> Value:
            try:
                scale = settings.scale
            except AttributeError:
                scale = 1.0
            return x * scale

        return f, lambda k: None if k == 2.0 else setattr(settings, "scale", k)

    twin_scaled(make)


def test_a_module_level_getattr_serving_settings_is_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    def make() -> Any:
        settings = _user_module(
            monkeypatch, "_SETTINGS = {'scale': 2.0}\ndef __getattr__(name):\n    return _SETTINGS[name]\n"
        )
        return (lambda x: x * settings.scale), lambda k: vars(settings)["_SETTINGS"].__setitem__("scale", k)

    twin_scaled(make)


_CONTAINERS: dict[str, Callable[[], tuple[Callable[[], float], Callable[[float], None]]]] = {}


def _container(name: str) -> Callable[[Any], Any]:
    def register(make: Any) -> Any:
        _CONTAINERS[name] = make
        return make

    return register


class _Holder:
    def __init__(self) -> None:
        self.scale = 2.0

    def read(self) -> float:
        return self.scale


@_container("bytearray")
def _bytearray() -> Any:
    held = bytearray([2])
    return (lambda: float(held[0])), lambda k: held.__setitem__(0, int(k))


@_container("memoryview")
def _memoryview() -> Any:
    held = bytearray([2])
    view = memoryview(held)
    return (lambda: float(view[0])), lambda k: held.__setitem__(0, int(k))


@_container("array.array")
def _array() -> Any:
    held = array.array("d", [2.0])
    return (lambda: held[0]), lambda k: held.__setitem__(0, k)


@_container("weakref.ref")
def _ref() -> Any:
    holder = _Holder()
    ref = weakref.ref(holder)
    return (lambda: ref().scale), lambda k: setattr(holder, "scale", k)  # type: ignore[union-attr]


@_container("WeakMethod")
def _weak_method() -> Any:
    holder = _Holder()
    method = weakref.WeakMethod(holder.read)
    return (lambda: method()()), lambda k: setattr(holder, "scale", k)  # type: ignore[misc]


@_container("WeakValueDictionary")
def _weak_values() -> Any:
    holder = _Holder()
    table = weakref.WeakValueDictionary({"h": holder})
    return (lambda: table["h"].scale), lambda k: setattr(holder, "scale", k)


@_container("WeakKeyDictionary")
def _weak_keys() -> Any:
    holder = _Holder()
    table: Any = weakref.WeakKeyDictionary({holder: 2.0})
    return (lambda: table[holder]), lambda k: table.__setitem__(holder, k)


@_container("WeakSet")
def _weak_set() -> Any:
    holders = [_Holder(), _Holder()]
    members: Any = weakref.WeakSet([holders[0]])
    return (lambda: sum(h.scale for h in members) + len(members)), lambda k: members.add(holders[1]) if k == 3 else None


@pytest.mark.parametrize("kind", sorted(_CONTAINERS))
def test_a_container_that_changes_in_place_is_watched(kind: str) -> None:
    def make() -> Any:
        read, change = _CONTAINERS[kind]()
        return (lambda x: x * read()), change

    twin_scaled(make)


def test_a_bytearray_counter_is_refused_and_a_proxy_is_refused_naming_it() -> None:
    counter = bytearray([0])

    def counts(x: Value) -> Value:
        counter[0] += 1
        return x * 2.0

    with pytest.raises(DataDependentError, match=r"changed counter while"):
        vjpgrad.compile(counts)(Value(1.0))
    holder = _Holder()
    proxy = weakref.proxy(holder)
    with pytest.raises(DataDependentError, match=r"can reach proxy, a weakref\.proxy"):
        vjpgrad.compile(lambda x: x * proxy.scale)(Value(1.0))


class _Activation:
    """A setting a ``match`` statement reads by its class pattern, held on the class."""

    __match_args__ = ("kind",)
    kind = "relu"


def _activated_by_keyword(x: Value) -> Value:
    match _Activation():
        case _Activation(kind="relu"):  # the name only a constant of the pattern spells
            return x.relu()
        case _:
            return x.tanh()


def _activated_by_position(x: Value) -> Value:
    match _Activation():
        case _Activation("relu"):  # the name __match_args__ gives
            return x.relu()
        case _:
            return x.tanh()


@pytest.mark.parametrize("fn", [_activated_by_keyword, _activated_by_position], ids=["keyword", "positional"])
def test_a_class_attribute_a_match_pattern_reads_is_watched(fn: Callable[[Value], Value]) -> None:
    """A class pattern reads attributes by names the code does not load as names: a keyword
    pattern's from a constant of the code, a positional pattern's from ``__match_args__``. A
    class attribute it reads, changed between calls, is seen as one the code names is."""

    def make() -> Any:
        _Activation.kind = "relu"
        return (lambda x: fn(x * -1.0)), lambda k: setattr(_Activation, "kind", "relu" if k == 2.0 else "tanh")

    try:
        twin_scaled(make)
    finally:
        _Activation.kind = "relu"


def _annotated() -> type:
    """A user's dataclass with one field, ``scale: float = 2.0`` (its annotation a type, not a
    string, whatever this module's ``from __future__ import annotations`` makes of it)."""
    kind = type("Settings", (), {"__annotations__": {"scale": float}, "scale": 2.0, "__module__": __name__})
    return dataclasses.dataclass(kind)


def _by_annotation(kind: Any, k: float) -> None:
    kind.__annotations__["scale"] = float if k == 2.0 else int


_CLASS_METADATA: dict[str, tuple[Callable[[Any], float], Callable[[Any, float], None]]] = {
    "dataclasses.fields": (
        lambda c: dataclasses.fields(c)[0].default,
        lambda c, k: setattr(dataclasses.fields(c)[0], "default", k),
    ),
    "__dataclass_fields__": (
        lambda c: c.__dataclass_fields__["scale"].default,
        lambda c, k: setattr(c.__dataclass_fields__["scale"], "default", k),
    ),
    "typing.get_type_hints": (lambda c: 2.0 if typing.get_type_hints(c)["scale"] is float else 3.0, _by_annotation),
    "inspect.get_annotations": (lambda c: 2.0 if inspect.get_annotations(c)["scale"] is float else 3.0, _by_annotation),
    "__annotations__": (lambda c: 2.0 if c.__annotations__["scale"] is float else 3.0, _by_annotation),
    "an annotation added": (
        lambda c: 1.0 + len(c.__annotations__),
        lambda c, k: c.__annotations__.update({f"a{k}": int}),
    ),
}


@pytest.mark.parametrize("how", list(_CLASS_METADATA))
def test_what_a_library_reads_of_a_class_without_the_code_naming_it_is_watched(how: str) -> None:
    """A class's annotations and a dataclass's fields are read by libraries (``typing``,
    ``inspect``, ``dataclasses``) through entries of its namespace the code does not name; changed
    between calls, they are seen as an attribute the code names is."""
    read, change = _CLASS_METADATA[how]

    def make() -> Any:
        kind = _annotated()
        return (lambda x: x * read(kind)), lambda k: change(kind, k)

    twin_scaled(make)


def test_a_functions_annotations_read_inside_are_watched() -> None:
    def make() -> Any:
        def act(t: Value) -> Value:
            return t * (2.0 if typing.get_type_hints(act)["t"] is float else 3.0)

        act.__annotations__["t"] = float
        return (lambda x: act(x)), lambda k: act.__annotations__.update(t=float if k == 2.0 else int)

    twin_scaled(make)


_HELD_GETTERS = ["attrgetter", "methodcaller", "read = getattr", "'{0.scale}'.format", "str.format", "getattr_static"]


@pytest.mark.parametrize("how", _HELD_GETTERS)
def test_a_name_read_through_a_held_getter_is_watched(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader held in a variable, so that the code names neither it nor the attribute: the
    bound ``format`` of a template, ``str.format`` and ``inspect.getattr_static`` read the
    attribute by a name the code does not spell, as ``getattr`` does."""

    def make() -> Any:
        settings = _user_module(monkeypatch, "scale = 2.0\ndef get_scale():\n    return scale\n")
        if how == "attrgetter":
            getter: Any = operator.attrgetter("scale")
        elif how == "methodcaller":
            getter = lambda m, call=operator.methodcaller("__getattribute__", "scale"): call(m)  # noqa: E731
        elif how == "'{0.scale}'.format":
            fill = "{0.scale}".format
            getter = lambda m: float(fill(m))  # noqa: E731
        elif how == "str.format":
            fill_in = str.format
            getter = lambda m: float(fill_in("{0.scale}", m))  # noqa: E731
        elif how == "getattr_static":
            static = inspect.getattr_static
            getter = lambda m: static(m, "scale")  # noqa: E731
        else:
            read = getattr
            getter = lambda m: read(m, "scale")  # noqa: E731
        return (lambda x: x * getter(settings)), lambda k: setattr(settings, "scale", k)

    twin_scaled(make)


def test_a_random_draw_inside_is_refused_saying_to_draw_outside() -> None:
    def dropout(x: Value) -> Value:
        return x * (2.0 if random.random() < 0.5 else 4.0)

    with pytest.raises(DataDependentError, match=r"drew random numbers from random's global generator.*as Values"):
        vjpgrad.compile(dropout)(Value(1.0))
    generator = random.Random(0)
    with pytest.raises(DataDependentError, match=r"drew random numbers from generator .*as Values"):
        vjpgrad.compile(lambda x: x * generator.random())(Value(1.0))
    compiled = vjpgrad.compile(lambda x, mask: x * mask)  # drawn outside, passed in: data
    assert [compiled(Value(1.0), Value(m, requires_grad=False)).data for m in (2.0, 4.0)] == [2.0, 4.0]


def test_a_generator_in_the_world_that_draws_outside_does_not_record_anew() -> None:
    generator = random.Random(0)
    w = Value(2.0)
    compiled = vjpgrad.compile(lambda x: x * w if generator else x)
    for _ in range(3):
        generator.random()
        compiled(Value(1.0))
    assert compiled.times_recorded == 1


def test_numpy_draws_inside_are_refused_and_an_array_in_the_world_is_watched() -> None:
    np = pytest.importorskip("numpy")
    data = np.array([1.0, 2.0, 3.0])

    def batch_loss(x: Value) -> Value:
        return x * float(data[np.random.permutation(3)[0]])

    with pytest.raises(DataDependentError, match=r"NumPy's global generator.*as Values"):
        vjpgrad.compile(batch_loss)(Value(1.0))
    rng = np.random.default_rng(0)
    with pytest.raises(DataDependentError, match=r"drew random numbers from rng"):
        vjpgrad.compile(lambda x: x * float(rng.random()))(Value(1.0))

    def make() -> Any:
        held = np.array([2.0])
        return (lambda x: x * float(held[0])), lambda k: held.__setitem__(0, k)

    twin_scaled(make)


def test_a_history_the_method_appends_to_outside_warns_once_naming_it() -> None:
    class Trainer:
        def __init__(self) -> None:
            self.w = Value(2.0)
            self.history: list[float] = []

        def __call__(self, x: Value) -> Value:
            return x * self.w

    trainer = Trainer()
    compiled = vjpgrad.compile(trainer)

    def train() -> None:
        for k in range(30):
            loss = compiled(Value(1.0))
            trainer.history.append(loss.data + k)

    with pytest.warns(RecompileWarning, match=r"Trainer object was recorded .*history") as caught:
        train()
    assert len(caught) == 1
    assert caught[0].filename == __file__
    assert compiled.eager
    assert compiled.times_recorded == STRUCTURE_LIMIT + 1
    assert "Value(lr" not in str(caught[0].message)  # not told to pass a number it never reads


def _module_in(folder: Path, name: str) -> types.ModuleType:
    (folder / f"{name}.py").write_text("import sys\nK = 2.0\n\ndef lookup():\n    return sys.modules[__name__].K\n")
    sys.modules.pop(name, None)
    return importlib.import_module(name)


def test_a_module_found_through_a_pth_entry_is_installed_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import site

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    (tmp_path / "site").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "site" / "extra.pth").write_text(str(tmp_path / "lib") + "\n")
    site.addsitedir(str(tmp_path / "site"))  # as an installed package's .pth file adds its folder
    installed = _module_in(tmp_path / "lib", "installed_helper")
    assert world.is_library(installed)
    assert world.is_library(installed.lookup)
    # installed code is watched by identity: its lookup by name is the library's business, not refused
    assert vjpgrad.compile(lambda x: x * installed.lookup())(Value(1.0)).data == 2.0


def test_a_module_found_through_a_relative_entry_the_users_code_added_is_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook in ``project/notebooks`` that runs ``sys.path.append("..")`` and imports the
    project's ``settings``: Python makes every entry of ``sys.path`` absolute at startup, so a
    relative one was added by the user's code, and what it finds is the user's project: walked,
    and a number changed there is seen (it was taken for installed code, and gave the first
    call's number)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    sys.path.append("..")
    (tmp_path / "nb_settings.py").write_text("TEMPERATURE = 2.0\n")
    settings = importlib.import_module("nb_settings")
    assert not world.is_library(settings)

    def make() -> Any:
        return (lambda x: x * settings.TEMPERATURE), lambda k: setattr(settings, "TEMPERATURE", k)

    twin_scaled(make)


def test_a_module_of_the_project_pytest_was_run_inside_is_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A course's exercise in ``course/src``, put on ``sys.path`` by pytest's ``pythonpath`` setting
    (an absolute path), its tests run from ``course/tests`` (an IDE's "run test"): the project is the
    folder holding ``pyproject.toml`` above the current one, so the exercise is the user's code,
    walked, and a setting changed between calls is seen (it was taken for installed code)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    course = tmp_path / "course"
    (course / "src").mkdir(parents=True)
    (course / "tests").mkdir()
    (course / "pyproject.toml").write_text("[tool.pytest.ini_options]\npythonpath = ['src']\n")
    (course / "src" / "course_exercise.py").write_text("ACTIVATION = 2.0\n")
    monkeypatch.chdir(course / "tests")
    sys.path.insert(0, str(course / "src"))
    exercise = importlib.import_module("course_exercise")
    assert not world.is_library(exercise)

    def make() -> Any:
        return (lambda x: x * exercise.ACTIVATION), lambda k: setattr(exercise, "ACTIVATION", k)

    twin_scaled(make)


def test_a_folder_above_the_project_on_sys_path_leaves_the_project_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))`` in ``course/tests``' script
    (to import the course's modules), PyCharm's project folder on ``PYTHONPATH``, pytest's rootdir
    parent: a folder on ``sys.path`` that holds the current folder made everything under it
    installed code, the running script's own globals too, watched by identity. The project (the
    current folder, the script's) is the user's whatever folder above it is on ``sys.path``."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    course = tmp_path / "loose course"  # no project marker in it or above it
    (course / "tests").mkdir(parents=True)
    (course / "tests" / "course_check.py").write_text("ACT = 2.0\n")
    monkeypatch.chdir(course / "tests")
    sys.path.insert(0, str(course))
    sys.path.insert(0, str(course / "tests"))
    check = importlib.import_module("course_check")
    assert not world.is_library(check)

    def make() -> Any:
        return (lambda x: x * check.ACT), lambda k: setattr(check, "ACT", k)

    twin_scaled(make)


def test_a_module_in_the_users_project_is_the_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    monkeypatch.chdir(tmp_path)  # the project
    (tmp_path / "helpers").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path / "helpers"))
    own = _module_in(tmp_path / "helpers", "own_helper")
    assert not world.is_library(own)
    with pytest.raises(DataDependentError, match="looks a module up at run time"):
        vjpgrad.compile(lambda x: x * own.lookup())(Value(1.0))


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    import own_settings\n    return x * own_settings.K\n",
        "def f(x):\n    from own_settings import K\n    return x * K\n",
        "def f(x):\n    return helper(x)\n\ndef helper(x):\n    import own_settings as s\n    return x * s.K\n",
    ],
    ids=["import", "from import", "in a helper"],
)
@pytest.mark.parametrize("imported_before", [True, False], ids=["imported before", "not yet imported"])
def test_a_users_module_imported_while_the_function_runs_is_refused_before_it_runs(
    source: str, imported_before: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``import settings`` inside the function reads the module at each eager call, where the
    world does not reach it (a local name): a change to ``settings.K`` between calls would be
    missed, so the call is refused before the function runs (nothing imported), saying to
    import it at the top."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    monkeypatch.chdir(tmp_path)  # the project
    (tmp_path / "own_settings.py").write_text("K = 2.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    if imported_before:
        importlib.import_module("own_settings")
    namespace: dict[str, Any] = {"__name__": "user_code"}
    exec(builtins.compile(source, str(tmp_path / "user_code.py"), "exec"), namespace)
    with pytest.raises(DataDependentError, match=r"imports own_settings while it runs.*at the top"):
        vjpgrad.compile(namespace["f"])(Value(1.0))
    assert ("own_settings" in sys.modules) is imported_before


def test_a_librarys_module_imported_while_the_function_runs_is_watched_by_identity() -> None:
    def f(x: Value) -> Value:
        import math

        return x * math.pi

    compiled = vjpgrad.compile(f)
    assert [compiled(Value(1.0)).data for _ in range(3)] == [math.pi] * 3


def test_what_the_slots_of_a_users_value_in_the_world_hold_is_watched() -> None:
    """A parameter of the user's Value subclass with slots of its own: what they hold is part of
    the world, as what its ``__dict__`` holds is."""

    class Scaled(Value):
        __slots__ = ("scale",)

    def build() -> Any:
        w = Scaled(2.0)
        w.scale = 1.0

        def rescale(run: Any) -> Any:
            w.scale = 3.0
            return run(Value(1.0))

        return (lambda x: x * w * w.scale), [lambda run: run(Value(1.0)), lambda run: run(Value(1.0)), rescale]

    twin_runs(build)


@pytest.mark.parametrize("through", ["the class", "a subclass"])
def test_a_class_registered_with_the_users_abstract_class_between_calls_is_seen(through: str) -> None:
    """``Marker.register(C)`` (or a subclass's) changes what ``isinstance(o, Marker)`` answers:
    the registry is C state of the class, watched as its entries are."""

    def build() -> Any:
        class Marker(abc.ABC):  # noqa: B024 - the subject: a marker other classes are registered with
            pass

        class Kind:
            pass

        held, subclasses = Kind(), [type("Sub", (Marker,), {})]

        def register(run: Any) -> Any:
            (Marker if through == "the class" else subclasses[0]).register(Kind)
            return run(Value(1.0))

        return (lambda x: x * (2.0 if isinstance(held, Marker) else 3.0)), [
            lambda run: run(Value(1.0)),
            lambda run: run(Value(1.0)),
            register,
        ]

    twin_runs(build)


@pytest.mark.parametrize("named", ["collections.abc.Sized", "Sized", "numbers.Real", "singledispatch"])
@pytest.mark.parametrize("through", ["the class", "a subclass of the user's"])
def test_a_class_registered_with_a_librarys_abstract_class_between_calls_is_seen(named: str, through: str) -> None:
    """``isinstance(o, collections.abc.Sized)`` asks a library's abstract class, watched by
    identity as installed code is: a class the user registers with it, or with a subclass of
    their own, changed what eager code answered while the replay kept the recorded branch (a
    review that fuzzed compile against eager)."""
    import collections.abc
    import functools
    import numbers
    from collections.abc import Sized

    base = {"collections.abc.Sized": Sized, "Sized": Sized, "numbers.Real": numbers.Real, "singledispatch": Sized}

    def build() -> Any:
        class Kind:
            pass

        held, own = Kind(), [type("Mine", (base[named],), {"__len__": lambda self: 0})]

        def register(run: Any) -> Any:
            (base[named] if through == "the class" else own[0]).register(Kind)
            return run(Value(1.0))

        @functools.singledispatch
        def scale(o: object) -> float:
            return 3.0

        @scale.register(collections.abc.Sized)
        def _(o: object) -> float:
            return 2.0

        asks = {
            "collections.abc.Sized": lambda: isinstance(held, collections.abc.Sized),
            "Sized": lambda: isinstance(held, Sized),
            "numbers.Real": lambda: isinstance(held, numbers.Real),
            "singledispatch": lambda: scale(held) == 2.0,
        }[named]
        return (lambda x: x * (2.0 if asks() else 3.0)), [
            lambda run: run(Value(1.0)),
            lambda run: run(Value(1.0)),
            register,
            lambda run: run(Value(1.0)),
        ]

    twin_runs(build)


def test_a_registration_elsewhere_or_a_new_subclass_of_a_librarys_abstract_class_records_nothing_anew() -> None:
    """What is registered with ``Sized`` answers ``isinstance(k, Sized)``: a new subclass of it, or a
    class registered with another abstract class, changes no answer, and recorded anew at every call
    (a review of the change), the function ran uncompiled past the bound."""
    import collections.abc
    import numbers
    import warnings

    gc.collect()  # the classes other tests made and let go: their registrations go with them
    compiled = vjpgrad.compile(lambda x, k: x * (2.0 if isinstance(k, collections.abc.Sized) else 3.0))
    kept = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(12):
            assert compiled(Value(1.0), 1.5).data == 3.0
            made = type("Made", (collections.abc.Mapping,), {})
            unrelated = type("Unrelated", (), {})
            numbers.Number.register(unrelated)
            kept.append((made, unrelated))
    assert compiled.times_recorded == 1
    assert not [w for w in caught if issubclass(w.category, vjpgrad.RecompileWarning)]


def test_a_class_registered_with_a_librarys_abstract_class_that_dies_records_nothing_anew() -> None:
    # the registry kept its dead class's weak reference until abc's cache token moved, and every call
    # recorded anew, past the bound (a second review of the change)
    import collections.abc
    import warnings

    gone = type("Gone", (), {})
    collections.abc.Sized.register(gone)
    compiled = vjpgrad.compile(lambda x, k: x * (2.0 if isinstance(k, collections.abc.Sized) else 3.0))
    assert compiled(Value(1.0), 1.5).data == 3.0
    del gone
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [compiled(Value(1.0), 1.5).data for _ in range(12)] == [3.0] * 12
    assert compiled.times_recorded == 1
    assert not [w for w in caught if issubclass(w.category, vjpgrad.RecompileWarning)]


def test_an_import_that_registers_classes_while_recording_is_no_change_of_the_world(tmp_path: Path) -> None:
    """``import sqlite3`` inside the function, on its first call, registers its ``Row`` with
    ``collections.abc.Sequence``: that registration is no side effect of the user's to refuse (a
    review of the change found such an import refused), and the later calls replay."""
    script = tmp_path / "lazy.py"
    script.write_text(
        "import sys, collections.abc\n"
        "import vjpgrad\n"
        "from vjpgrad import Value\n"
        "assert 'sqlite3' not in sys.modules\n"
        "def f(x, k):\n"
        "    import sqlite3  # registers sqlite3.Row with collections.abc.Sequence\n"
        "    return x * (2.0 if isinstance(k, collections.abc.Sequence) else 3.0)\n"
        "compiled = vjpgrad.compile(f)\n"
        "print([compiled(Value(1.0), 1.5).data for _ in range(4)], compiled.times_recorded)\n"
    )
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    values, recorded = run.stdout.rsplit("]", 1)
    assert values + "]" == "[3.0, 3.0, 3.0, 3.0]"
    assert int(recorded) <= 2


def test_a_subclass_made_between_calls_is_seen_where_the_code_asks_for_subclasses() -> None:
    """``Base.__subclasses__()`` (a registry of plugins): a subclass made between calls is
    another world, as eager code sees it."""

    def build() -> Any:
        class Base:
            k = 1.0

        made = []

        def subclass(run: Any) -> Any:
            made.append(type("Plugin", (Base,), {"k": 2.0}))
            return run(Value(1.0))

        return (lambda x: sum((x * c.k for c in Base.__subclasses__()), Value(0.5))), [
            lambda run: run(Value(1.0)),
            subclass,
            subclass,
        ]

    twin_runs(build)


def test_an_attribute_the_user_sets_on_a_compiled_function_is_watched() -> None:
    """``@vjpgrad.compile`` on a function that reads an attribute of its own name (``f.scale``):
    the name is the compiled function, and what the user keeps on it is part of the world, as a
    plain function's attributes are; so is what another compiled function it reads carries."""

    @vjpgrad.compile
    def scaled(x: Value) -> Value:
        return x * scaled.scale  # type: ignore[attr-defined]  # the subject: a function attribute

    other = vjpgrad.compile(lambda x: x * 2.0)

    def eager(x: Value) -> Value:
        return x * scaled.scale * other.shift  # type: ignore[attr-defined]

    both = vjpgrad.compile(lambda x: scaled(x) * other.shift)
    for scale, shift in ((1.0, 1.0), (1.0, 1.0), (2.0, 1.0), (2.0, -0.0), (3.0, 5.0)):
        scaled.scale, other.shift = scale, shift  # type: ignore[attr-defined]
        assert bits(scaled(Value(1.5)).data) == bits(Value(1.5).data * scale)
        assert bits(both(Value(1.5)).data) == bits(eager(Value(1.5)).data)


def test_a_compiled_functions_own_state_is_named_for_the_world() -> None:
    """The world watches what a user keeps on a compiled function, not compile's bookkeeping,
    which changes at each recording (``world.COMPILED_STATE``): this list must name all of it."""
    wrapped = set(functools.WRAPPER_ASSIGNMENTS)
    assert set(vars(vjpgrad.compile(lambda x: x))) - wrapped == world.COMPILED_STATE


def test_a_users_function_in_the_closure_of_a_librarys_wrapper_is_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _library_module(monkeypatch)
    source = "def logged(fn):\n    calls = {}\n    def wrapper(x):\n        return fn(x)\n    return wrapper\n"
    exec(builtins.compile(source, module.__file__, "exec"), vars(module))  # the library's file, as if installed
    assert world.is_library(module.logged)

    def make() -> Any:
        settings = {"scale": 2.0}
        wrapped = module.logged(lambda t: t * settings["scale"])
        return (lambda x: wrapped(x)), lambda k: settings.__setitem__("scale", k)

    twin_scaled(make)


_DRAWS = random.Random(0)


def _noisy_scale() -> float:
    """Draws on the line named below: a refusal must point here, not at the compiled function."""
    return 2.0 if _DRAWS.random() < 0.5 else 4.0  # the draw


def _draw_line(helper: Callable[..., Any]) -> str:
    lines, first = inspect.getsourcelines(helper)
    offset = next(k for k, line in enumerate(lines) if line.rstrip().endswith("# the draw"))
    return f"{__file__}:{first + offset}"


def test_a_random_draw_is_refused_naming_the_line_that_drew() -> None:
    def scaled(x: Value) -> Value:
        return x * _noisy_scale()

    def global_draw(x: Value) -> Value:
        return x * random.choice([2.0, 4.0])  # the draw

    for fn, line in ((scaled, _draw_line(_noisy_scale)), (global_draw, _draw_line(global_draw))):
        with pytest.raises(DataDependentError, match=r"drew random numbers") as refused:
            vjpgrad.compile(fn)(Value(1.0))
        message = str(refused.value)
        assert line in message, message
        assert f"{__file__}:{fn.__code__.co_firstlineno}" not in message
        assert "as Values" in message
    assert sys.getprofile() is None  # the recording's own profiler is gone


@pytest.mark.parametrize("how", ["a method added", "an operator replaced"])
def test_a_method_the_user_sets_on_value_is_watched(how: str) -> None:
    """``Value.swish = lambda self: ...`` in a notebook, the cell run again with another body: the
    compiled function reads the method through the Value class (vjpgrad's, otherwise watched by
    identity), so what the user sets there is walked as their function, and a change is seen."""
    name = "swish" if how == "a method added" else "__rtruediv__"
    original = vars(Value).get(name)

    def make() -> Any:
        def body(k: float) -> Callable[..., Value]:
            if name == "swish":
                return lambda self: self * (1.0 / (1.0 + (-k * self).exp()))
            return lambda self, other: (self**-1.0) * other * (k - 1.0)

        def set_scale(k: float) -> None:
            setattr(Value, name, body(k))

        if name == "swish":
            return (lambda x: x.swish()), set_scale  # type: ignore[attr-defined]  # the method the user added
        return (lambda x: 2.0 / (x + 1.0)), set_scale

    try:
        twin_scaled(make)
    finally:
        if original is None:
            delattr(Value, name)
        else:
            setattr(Value, name, original)


_VMAP_SCALE = {"k": 2.0}


def test_a_vmapped_function_in_the_world_is_walked_to_its_function() -> None:
    """A ``vjpgrad.vmap`` of the user's function, held and called inside: its function reads a
    number that changes between calls, which the compiled function must see (it was watched by
    identity as vjpgrad's, and gave the first call's number)."""
    np = pytest.importorskip("numpy")

    def make() -> Any:
        def inner(t: Value) -> Value:
            return t * _VMAP_SCALE["k"]

        batched = vjpgrad.vmap(inner)
        batched(np.array([1.0, 2.0]))  # called once outside: its code written
        return (lambda x: x * float(batched(np.array([1.0, 2.0]))[0])), lambda k: _VMAP_SCALE.update(k=k)

    twin_scaled(make)


def test_a_vmapped_function_first_called_inside_a_recording_is_no_draw() -> None:
    """vmap's first call records, reading the global generators' states to watch for draws;
    inside a compiled function's recording that read is vjpgrad's own, not the user's: no
    refusal ("drew random numbers from a generator it read the state of"), and eager's bits."""
    np = pytest.importorskip("numpy")
    batched = vjpgrad.vmap(lambda t: t * 2.0)

    def f(x: Value) -> Value:  # it names random (a module that draws), so the recording watches for draws
        return x * float(batched(np.array([1.0, 2.0]))[0]) * float(random.random is not None)

    compiled = vjpgrad.compile(f)
    for _ in range(2):
        assert bits(compiled(Value(1.5)).data) == bits(f(Value(1.5)).data)


def test_a_numpy_array_of_python_objects_in_the_world_is_refused_naming_it() -> None:
    """An array of ``dtype=object`` holds references, whose bytes are addresses: an object in it
    changed in place (``grid[0].gain = 3.0``), or replaced by another made at a freed address,
    looked the same, and the compiled function gave the first call's number. Refused."""
    np = pytest.importorskip("numpy")
    grid = np.array([argparse.Namespace(gain=2.0), argparse.Namespace(gain=1.0)], dtype=object)

    def f(x: Value) -> Value:
        return x * grid[0].gain

    with pytest.raises(DataDependentError, match=r"grid, a NumPy array of Python objects"):
        vjpgrad.compile(f)(Value(1.5))
    numbers = np.array([2.0, 1.0])  # an array of numbers is watched by its content, as before
    assert vjpgrad.compile(lambda x: x * float(numbers[0]))(Value(1.5)).data == 3.0


_VISITOR_SCALE = {"k": 2.0}


class _ToValues(ast.NodeVisitor):
    """An expression's tree evaluated on Values: ``ast.NodeVisitor.visit`` (a library's code)
    calls ``visit_Constant`` by a name it computes, which the user's code never spells."""

    def __init__(self, x: Value) -> None:
        self.x = x

    def visit_Expression(self, node: ast.Expression) -> Any:
        return self.visit(node.body)

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        return self.visit(node.left) * self.visit(node.right)

    def visit_Name(self, node: ast.Name) -> Any:
        return self.x

    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value * _VISITOR_SCALE["k"]


_TREE = ast.parse("x * 3.0", mode="eval")


_USED = ["lr"]


class _Settings:
    """A mapping of the user's for ``f(**settings)``: Python calls its ``keys`` unnamed."""

    def keys(self) -> list[str]:
        return _USED

    def __getitem__(self, key: str) -> float:
        return {"lr": 2.0, "wd": 3.0}[key]


def _scaled(x: Value, lr: float = 1.0, wd: float = 1.0) -> Value:
    return x * lr * wd


@pytest.mark.parametrize("how", ["a library's base calls it by a computed name", "** calls keys()"])
def test_a_method_python_or_a_librarys_base_calls_unnamed_is_watched(how: str) -> None:
    """A user's class deriving from a library's (``ast.NodeVisitor``, ``unittest.TestCase``,
    ``json.JSONEncoder``) has methods and settings the library's code reads by names the user's
    code never spells: every entry of such a class is walked. ``f(**settings)`` calls the
    mapping's ``keys()``, as Python calls a special method."""
    if how.startswith("a library"):

        def make() -> Any:
            return (lambda x: _ToValues(x).visit(_TREE)), lambda k: _VISITOR_SCALE.update(k=k)

    else:

        def make() -> Any:
            settings = _Settings()
            return (lambda x: _scaled(x, **settings)), lambda k: _USED.__setitem__(
                slice(None), ["lr"] if k == 2.0 else ["lr", "wd"]
            )

    twin_scaled(make)


class _Scaled:
    scale = 2.0


class _Ordered(collections.OrderedDict):  # type: ignore[type-arg]  # the LRU recipe's subclass
    pass


def _aliased_getter() -> Any:
    field = operator.attrgetter  # ``from operator import attrgetter as field``: the code names field
    held = _Scaled()
    return (lambda x: x * field("scale")(held)), lambda k: setattr(_Scaled, "scale", k)


def _made_by_types() -> Any:
    config = types.new_class("Config")()  # its class's __module__ is 'types', which does not hold it
    config.scale = 2.0
    return (lambda x: x * config.scale), lambda k: setattr(config, "scale", k)


def _reordered() -> Any:
    terms = _Ordered(a=0.1, b=0.2, c=0.3)

    def f(x: Value) -> Value:
        total = x * 0.0
        for v in terms.values():
            total = total + x * v
        return total

    return f, lambda k: terms.move_to_end("a" if k == 3.0 else "c")


@pytest.mark.parametrize(
    "make",
    [_aliased_getter, _made_by_types, _reordered],
    ids=["attrgetter under another name", "a class made by types.new_class", "an OrderedDict subclass reordered"],
)
def test_what_a_world_reads_by_a_computed_name_a_made_class_or_its_own_order_is_watched(make: Any) -> None:
    """``operator.attrgetter`` held under another name reads attributes by computed names as
    under its own; a class ``types.new_class`` makes names 'types' as its module, which does not
    hold it: the user's, walked; an ``OrderedDict`` subclass's order is ``move_to_end``'s, which
    ``dict.keys`` does not show. Each gave the first call's number."""
    try:
        twin_scaled(make)
    finally:
        _Scaled.scale = 2.0


@pytest.mark.parametrize("kind", ["Polynomial", "poly1d"])
def test_a_numpy_polynomial_changed_in_place_is_watched(kind: str) -> None:
    """NumPy's polynomials keep their coefficients in an array of their own (``P.coef[1] = 3.0``
    changes it in place): walked as plain data, the array by its content."""
    np = pytest.importorskip("numpy")

    def make() -> Any:
        if kind == "Polynomial":
            p = np.polynomial.Polynomial([0.0, 2.0])
            return (lambda x: x * float(p(1.0))), lambda k: p.coef.__setitem__(1, k)
        q = np.poly1d([2.0, 0.0])
        return (lambda x: x * float(q(1.0))), lambda k: q.coeffs.__setitem__(0, k)

    twin_scaled(make)


def test_a_mock_in_the_world_is_refused_naming_it() -> None:
    """A ``unittest.mock.Mock`` made into a config (``cfg.scale = 2.0``) makes attributes on
    demand and was watched by identity: a change went unseen. Refused, naming it."""
    from unittest import mock

    cfg = mock.Mock()
    cfg.scale = 2.0

    def f(x: Value) -> Value:
        return x * cfg.scale

    with pytest.raises(DataDependentError, match=r"cfg, a unittest.mock object"):
        vjpgrad.compile(f)(Value(1.5))


_THROUGH_GLOBALS = {"v": 2.0}


def _named_helper() -> None:
    """A function whose ``__globals__`` the code reads by a computed key."""


def test_a_global_read_through_a_functions_globals_is_watched() -> None:
    """``helper.__globals__["S"]``: the globals read by a key the code computes, as
    ``globals()[name]`` reads them."""

    def make() -> Any:
        return (lambda x: x * _named_helper.__globals__["_THROUGH_GLOBALS"]["v"]), lambda k: _THROUGH_GLOBALS.update(
            v=k
        )

    twin_scaled(make)


class _Counting(itertools.count):
    """A user's subclass of a C iterator: its position is C state."""


def test_a_users_subclass_of_a_c_iterator_is_refused() -> None:
    """``class Count(itertools.count)``: its position lives in C, as ``itertools.count``'s does
    (refused), and a replay repeated the recorded ``next``."""
    counter = _Counting(2)

    with pytest.raises(DataDependentError, match=r"counter, an iterator"):
        vjpgrad.compile(lambda x: x * next(counter))(Value(1.5))


_NOTEBOOK = """
import vjpgrad
from vjpgrad import Value

BIG = list(range(120_000))  # a dataset too large to watch
data = list(range(150_000))  # a dataset named as an attribute is: .data
step = 0  # a loop variable at the top level, which the functions never read


class Net(vjpgrad.nn.Module):  # a library's class: vjpgrad's Module
    def __init__(self):
        self.w = Value(0.5)

    def __call__(self, x):
        return x * self.w

    def parameters(self):
        return [self.w]

    def accuracy(self):  # a helper the loss never calls, reading the dataset
        return sum(BIG) / len(BIG)


class Evaluated:  # PyTorch's spelling: net.eval() names an attribute, not the builtin eval
    def __init__(self):
        self.w, self.training = Value(0.5), True

    def train(self, mode=True):
        self.training = mode

    def eval(self):
        self.train(False)

    def __call__(self, x):
        return (x * self.w).relu() if self.training else x * self.w

    def __repr__(self):
        return f"Evaluated({self.w.data})"


net, evaluated = Net(), Evaluated()


def loss(x):
    return net(x) * 2.0


def validation_loss(x):
    evaluated.eval()
    out = (evaluated(x) - 1.0) ** 2
    evaluated.train()
    return out
"""
"""A notebook's cells: its names are globals of their own (``_notebook``), apart from this
module's, which other tests walk whole."""


def _notebook() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "notebook"}
    exec(compile(_NOTEBOOK, "<notebook>", "exec"), namespace)  # the user's code, as a notebook runs it
    return namespace


def test_a_helper_no_library_code_names_on_a_library_derived_class_is_not_walked() -> None:
    """A library's base class reads the entries of a subclass its own code names (``Module``'s
    ``parameters``; ``ast.NodeVisitor``'s, which computes names, every one): an entry no code
    names (``accuracy``) is not part of the loss's world, and a dataset it reads is no refusal."""
    notebook = _notebook()
    compiled = vjpgrad.compile(notebook["loss"])
    assert bits(compiled(Value(1.5)).data) == bits(1.5)


def test_an_attribute_named_as_a_builtin_or_a_global_reads_no_global() -> None:
    """``net.eval()`` names the attribute ``eval``, not the builtin that reads globals by computed
    names, and ``self.w.data`` the attribute ``data``, not the global ``data``: the function's
    world is the globals its code loads as globals. (Every global was watched, so that a top-level
    loop variable recorded it anew at every call, and a global ``data`` of 150,000 items was
    refused.)"""
    notebook = _notebook()
    compiled = vjpgrad.compile(notebook["validation_loss"])
    for step in range(5):
        notebook["step"] = step
        got = compiled(Value(0.25 * step)).data
        assert bits(got) == bits(notebook["validation_loss"](Value(0.25 * step)).data)
    assert compiled.times_recorded == 1


@pytest.mark.parametrize("owner", ["Vector", "Module"])
def test_a_method_the_user_sets_on_vjpgrads_data_classes_is_watched(owner: str) -> None:
    """``Vector.normalized = lambda self: ...`` or ``Module.l2 = ...`` in a notebook cell, run again
    with another body: vjpgrad's classes whose instances are data (``Vector``, ``nn``'s) are walked
    as the user's are, so what the user sets there is seen."""
    kind = Vector if owner == "Vector" else vjpgrad.nn.Module
    model = vjpgrad.nn.MLP(1, [1], seed=1)

    def make() -> Any:
        def set_scale(k: float) -> None:
            kind.scaled_by_user = lambda self, x: x * k

        if owner == "Vector":
            return (lambda x: Vector([x, x]).scaled_by_user(x)), set_scale
        return (lambda x: model.scaled_by_user(x)), set_scale

    try:
        twin_scaled(make)
    finally:
        delattr(kind, "scaled_by_user")


_THROUGH_BUILTINS = {"scale": 2.0}


@pytest.mark.parametrize("how", ["globals", "eval"])
def test_globals_read_through_the_builtins_module_by_a_computed_name_are_watched(how: str) -> None:
    """``builtins.globals()["S"]`` and ``builtins.eval("S")``: the builtins read globals by names
    computed at run time, spelled as attributes of the ``builtins`` module (``net.eval()``, an
    attribute of the user's object, is not one)."""
    import builtins as python

    def make() -> Any:
        if how == "globals":
            return (lambda x: x * python.globals()["_THROUGH_BUILTINS"]["scale"]), set_scale
        return (lambda x: x * python.eval("_THROUGH_BUILTINS['scale']")), set_scale

    def set_scale(k: float) -> None:
        _THROUGH_BUILTINS["scale"] = k

    twin_scaled(make)


def test_a_warning_from_a_users_module_is_no_side_effect() -> None:
    """``warnings.warn`` (a ``DeprecationWarning``, NumPy's ``RuntimeWarning`` of ``log(0)``) from a
    user's helper module makes Python add ``__warningregistry__`` to that module's namespace: a
    cache of Python's, as ``__annotations__`` is a class's, not the function's side effect (it was
    refused, naming ``helpers[8] (added)``, where the code computes attribute names)."""
    helpers = types.ModuleType("helpers")
    source = (
        "import warnings\n"
        "def act(x):\n"
        "    warnings.warn('act() will be renamed', DeprecationWarning)\n"
        "    return x.tanh()\n"
    )
    exec(compile(source, "<helpers>", "exec"), vars(helpers))

    def f(x: Value) -> Value:
        if hasattr(x, "scale"):  # names computed: every entry of the modules reached is watched
            x = x * x.scale  # type: ignore[attr-defined]
        return helpers.act(x)  # type: ignore[attr-defined]

    compiled = vjpgrad.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            assert bits(compiled(Value(0.5)).data) == bits(math.tanh(0.5))
    assert "__warningregistry__" in vars(helpers)


_TORCH_STATE: dict[str, Callable[[Any], Any]] = {
    "a tensor": lambda torch: torch.tensor(2.0, dtype=torch.float64),
    "a parameter": lambda torch: torch.nn.Parameter(torch.tensor(2.0, dtype=torch.float64)),
    "a module": lambda torch: torch.nn.Linear(1, 1),
    "an optimizer": lambda torch: torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1),
    "a generator": lambda torch: torch.Generator().manual_seed(0),
}


@pytest.mark.parametrize("kind", list(_TORCH_STATE))
def test_pytorchs_objects_in_the_world_are_refused_naming_them(kind: str) -> None:
    """A PyTorch tensor (an optimizer's ``step`` changes it in place), a module, an optimizer or a
    generator the function reads: their state is C memory vjpgrad.compile does not read, and
    watched by identity the compiled function gave the first call's number after ``w.mul_(1.5)``.
    Refused, naming the object, before the function runs."""
    torch = pytest.importorskip("torch")
    held = _TORCH_STATE[kind](torch)

    def f(x: Value) -> Value:
        return x * (2.0 if held is not None else 1.0)

    with pytest.raises(DataDependentError, match=r"PyTorch") as refused:
        vjpgrad.compile(f)(Value(1.5))
    assert "held" in str(refused.value)


def test_a_pytorch_draw_is_refused() -> None:
    """``torch.rand`` draws from PyTorch's global generator: refused as a draw from Python's or
    NumPy's is (the compiled function repeated the recorded draw at every call)."""
    torch = pytest.importorskip("torch")

    def noisy(x: Value) -> Value:
        return x * float(torch.randn(()))

    torch.manual_seed(0)
    with pytest.raises(DataDependentError, match=r"drew random numbers from PyTorch's global generator"):
        vjpgrad.compile(noisy)(Value(1.5))


def test_a_numpy_draw_is_refused_naming_the_line_that_drew() -> None:
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(0)

    def generator_draw(x: Value) -> Value:
        return x * float(rng.random())  # the draw

    def global_draw(x: Value) -> Value:
        return x * float(np.random.permutation(3)[0])  # the draw

    previous = lambda *_: None  # noqa: E731  # a profiler already set is put back
    for fn in (generator_draw, global_draw):
        sys.setprofile(previous)
        try:
            with pytest.raises(DataDependentError, match=r"drew random numbers") as refused:
                vjpgrad.compile(fn)(Value(1.0))
            assert sys.getprofile() is previous
        finally:
            sys.setprofile(None)
        assert _draw_line(fn) in str(refused.value), str(refused.value)


_SCALE = {"s": 1.0}
"""What the methods of the users' subclasses below read: changed between calls."""


class _Referent:
    """What a weak reference below refers to (kept alive by the module)."""


_REFERENT = _Referent()


def _reads_scale(*args: Any, **kwargs: Any) -> float:
    return _SCALE["s"]


def _subclass(base: type, **entries: Any) -> Any:
    """A user's subclass of ``base``, made at run time, named as a class statement here names it
    (an ABC's metaclass would otherwise give it the ``abc`` module, a library's)."""
    return type(f"Users{base.__name__}", (base,), {"__module__": __name__, **entries})


def _subclass_cases() -> dict[str, Callable[[], tuple[Callable[[], Any], Callable[[float], None]]]]:
    """Each kind a user subclasses, overriding what a read runs (or adding a class attribute):
    ``make()`` gives a fresh object's reader and how to change what it reads."""

    def global_changes(k: float) -> None:
        _SCALE["s"] = k

    def value() -> tuple[Callable[[], Any], Callable[[float], None]]:
        class Scaled(Value):
            factor = 1.0

            def scaled(self) -> Any:
                return self * self.factor

        w = Scaled(1.5)
        return w.scaled, lambda k: setattr(Scaled, "factor", k)

    def partial() -> tuple[Callable[[], Any], Callable[[float], None]]:
        class Partial(functools.partial):  # type: ignore[type-arg]
            def __call__(self, *args: Any, **kwargs: Any) -> float:
                return _SCALE["s"]

        p = Partial(float, 0.0)
        return (lambda: p()), global_changes

    def item_reader(base: type, *args: Any) -> Callable[[], tuple[Callable[[], Any], Callable[[float], None]]]:
        def make() -> tuple[Callable[[], Any], Callable[[float], None]]:
            held = _subclass(base, __getitem__=lambda self, key: _reads_scale())(*args)
            return (lambda: held[0]), global_changes

        return make

    def method_reader(base: type, *args: Any) -> Callable[[], tuple[Callable[[], Any], Callable[[float], None]]]:
        def make() -> tuple[Callable[[], Any], Callable[[float], None]]:
            held = _subclass(base, scale=lambda self: _reads_scale())(*args)
            return (lambda: held.scale()), global_changes

        return make

    def module() -> tuple[Callable[[], Any], Callable[[float], None]]:
        class Module(types.ModuleType):
            @property
            def scale(self) -> float:
                return _SCALE["s"]

        held = Module("settings")
        return (lambda: held.scale), global_changes

    def descriptor(base: type, *args: Any) -> Callable[[], tuple[Callable[[], Any], Callable[[float], None]]]:
        def make() -> tuple[Callable[[], Any], Callable[[float], None]]:
            reads = _subclass(base, __get__=lambda self, obj, owner=None: _reads_scale())
            holder = type("Holder", (), {"scale": reads(*args)})()
            return (lambda: holder.scale), global_changes

        return make

    def metaclass() -> tuple[Callable[[], Any], Callable[[float], None]]:
        class Meta(type):
            def __getattr__(cls, name: str) -> float:
                return _SCALE["s"]

        class Settings(metaclass=Meta):
            pass

        return (lambda: Settings.scale), global_changes

    def enum_method() -> tuple[Callable[[], Any], Callable[[float], None]]:
        class Cfg(enum.Enum):
            SMALL = 1

            def scale(self) -> float:
                return _SCALE["s"] * self.value

        return (lambda: Cfg.SMALL.scale()), global_changes

    def enum_value() -> tuple[Callable[[], Any], Callable[[float], None]]:
        class Cfg(enum.Enum):
            SMALL = [1.0]  # noqa: RUF012 (a mutable value is the case)

        return (lambda: Cfg.SMALL.value[0]), lambda k: Cfg.SMALL.value.__setitem__(0, k)

    return {
        "Value": value,
        "functools.partial": partial,
        "bytearray": item_reader(bytearray, b"\x01"),
        "array.array": item_reader(array.array, "d", [1.0]),
        "weakref.WeakValueDictionary": item_reader(weakref.WeakValueDictionary),
        "weakref.WeakKeyDictionary": method_reader(weakref.WeakKeyDictionary),
        "weakref.ref": method_reader(weakref.ref, _REFERENT),
        "random.Random": method_reader(random.Random, 0),
        "io.StringIO": method_reader(io.StringIO),
        "decimal.Context": method_reader(decimal.Context),
        "types.ModuleType": module,
        "property": descriptor(property),
        "staticmethod": descriptor(staticmethod, float),
        "functools.cached_property": descriptor(functools.cached_property, lambda self: 0.0),
        "metaclass": metaclass,
        "enum member's method": enum_method,
        "enum member's mutable value": enum_value,
    }


_SUBCLASSES = _subclass_cases()


@pytest.mark.parametrize("kind", sorted(_SUBCLASSES))
def test_a_users_subclass_of_a_handled_type_is_watched(kind: str) -> None:
    """A user's subclass of a type the world reads by a row of its own: what its class adds (a
    method, a property, a class attribute, an enum member's value) is watched as a user's class."""

    def results(compiled: bool) -> list[Any]:
        _SCALE["s"] = 1.0
        read, change = _SUBCLASSES[kind]()
        fn = vjpgrad.compile(lambda x: read() * x) if compiled else (lambda x: read() * x)
        found = []
        for k in (1.0, 2.0, 3.0, 4.0):
            change(k)
            x = Value(3.0)
            y = fn(x)
            y.backward()
            found.append((bits(y.data), bits(x.grad)))
        owner = getattr(read, "__self__", None)  # the Value subclass's parameter: its gradient too
        return found + ([bits(owner.grad)] if isinstance(owner, Value) else [])

    try:
        assert results(compiled=True) == results(compiled=False)
    finally:
        _SCALE["s"] = 1.0


_DEFAULTS = {"scale": 2.0}


def _scaled_unless_default(x: Value, options: dict[str, float]) -> Value:
    return x * options["scale"] * (options["scale"] if options is _DEFAULTS else 1.0)


@pytest.mark.parametrize("order", ["copy first", "the default first"])
def test_an_argument_compared_with_is_to_the_worlds_object_is_told_from_an_equal_copy(order: str) -> None:
    """``options is DEFAULTS``: an equal copy and the object itself take different branches, so a
    recording made with one must not serve the other (a container argument is keyed by its
    content, and the code asks its identity)."""
    copy = dict(_DEFAULTS)
    given = [copy, copy, _DEFAULTS, _DEFAULTS, copy] if order == "copy first" else [_DEFAULTS, copy, _DEFAULTS]
    compiled = vjpgrad.compile(_scaled_unless_default)
    for options in given:
        x, twin = Value(1.5), Value(1.5)
        y, expected = compiled(x, options), _scaled_unless_default(twin, options)
        y.backward()
        expected.backward()
        assert (bits(y.data), bits(x.grad)) == (bits(expected.data), bits(twin.grad))
    assert compiled.times_recorded == 2  # one for the copy, one for the default: not one a call


def test_under_warnings_as_errors_the_bound_raises_once_then_the_function_runs_uncompiled() -> None:
    """pytest's ``filterwarnings = error`` (vjpgrad's own) turns the RecompileWarning into an
    exception: it is raised at the call that passes the bound, and from the next call on the
    function runs uncompiled, as the warning says, not raising at every call."""
    w = Value(0.5)
    compiled = vjpgrad.compile(lambda x, lr: (x * w * lr).tanh())
    raised = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompileWarning)
        for k in range(RECOMPILE_LIMIT + 6):
            try:
                y = compiled(Value(1.0), 0.1 * (k + 1))
            except RecompileWarning:
                raised.append(k)
                continue
            assert y.data == (Value(1.0) * w * (0.1 * (k + 1))).tanh().data
    assert raised == [RECOMPILE_LIMIT + 1]
    assert compiled.eager


def test_a_range_or_slice_made_anew_at_each_call_is_keyed_by_its_numbers() -> None:
    """``range(n)`` and ``slice(a, b)`` hold whole numbers and never change: a new one with the
    same numbers is the same recording (jax.jit hashes such static arguments by value)."""
    compiled = vjpgrad.compile(lambda xs, r, s: sum((xs[k] for k in r), xs[s][0]))
    xs = [Value(1.0), Value(2.0), Value(3.0)]
    for _ in range(4):
        assert compiled(xs, range(2), slice(1, 3)).data == 1.0 + 2.0 + 2.0
    assert compiled.times_recorded == 1
    assert compiled(xs, range(3), slice(1, 3)).data == 2.0 + 1.0 + 2.0 + 3.0
    assert compiled.times_recorded == 2


def test_an_object_argument_made_anew_at_each_call_is_told_it_is_keyed_by_identity() -> None:
    """An object passed anew at each call is a new recording each time: the warning says so,
    rather than telling the user to pass it as an argument, which it is."""

    @dataclasses.dataclass(frozen=True)
    class Config:
        scale: float = 2.0

    compiled = vjpgrad.compile(lambda x, config: x * config.scale)
    configs = [Config() for _ in range(ARGUMENT_STRUCTURE_LIMIT + 1)]  # alive: each its own object
    with pytest.warns(RecompileWarning) as caught:
        results = [compiled(Value(1.0), config).data for config in configs]
    assert results == [2.0] * len(configs)
    message = str(caught[0].message)
    assert "the argument config" in message, message
    assert "by its identity" in message, message
    assert "pass it as an argument" not in message, message


class _Attributes:
    pass


def _container(kind: str) -> Any:
    return {"list": [2.0], "tuple": (2.0, 1.0), "dict": {"s": 2.0}, "range": range(3), "slice": slice(0, 2)}[kind]


def _equal_copy(x: Any) -> Any:
    if isinstance(x, range):
        return range(x.start, x.stop, x.step)
    if isinstance(x, slice):
        return slice(x.start, x.stop, x.step)
    return type(x)(list(x) if isinstance(x, tuple) else x)


def _compares_with(place: str, held: Any) -> Callable[[Value, Any], Value]:
    """A function that asks ``o is held``, with ``held`` reached at ``place`` in its world."""
    if place == "global":  # the function's globals: a namespace of its own holding HELD
        code = (lambda x, o: x * (3.0 if o is HELD else 1.0)).__code__  # noqa: F821  # HELD is in its globals
        return types.FunctionType(code, {"HELD": held, "__builtins__": builtins})  # type: ignore[no-any-return]
    if place == "in a list":
        box = [held]
        return lambda x, o: x * (3.0 if o is box[0] else 1.0)
    if place == "in a dict":
        table = {"d": held}
        return lambda x, o: x * (3.0 if o is table["d"] else 1.0)
    if place == "in a tuple":
        pair = (held, 0)
        return lambda x, o: x * (3.0 if o is pair[0] else 1.0)
    if place == "an attribute":
        holder = _Attributes()
        holder.d = held  # type: ignore[attr-defined]
        return lambda x, o: x * (3.0 if o is holder.d else 1.0)  # type: ignore[attr-defined]
    if place == "a default argument":

        def with_default(x: Value, o: Any, default: Any = held) -> Value:
            return x * (3.0 if o is default else 1.0)

        return with_default
    return (lambda kept: lambda x, o: x * (3.0 if o is kept else 1.0))(held)  # a closure


@pytest.mark.parametrize("kind", ["list", "tuple", "dict", "range", "slice"])
@pytest.mark.parametrize(
    "place", ["global", "in a list", "in a dict", "in a tuple", "an attribute", "a default argument", "a closure"]
)
def test_an_argument_compared_with_is_is_told_from_an_equal_copy_wherever_the_world_holds_it(
    kind: str, place: str
) -> None:
    """``o is held`` where ``o`` is a container (or a range, a slice) a call is given, keyed by
    its content, and ``held`` is anywhere in the function's world: the object itself and an
    equal copy take different branches, compiled as uncompiled, in either order."""
    held = _container(kind)
    fn = _compares_with(place, held)
    for given in ([_equal_copy(held), held, _equal_copy(held)], [held, _equal_copy(held), held]):
        compiled = vjpgrad.compile(fn)
        assert [compiled(Value(1.0), o).data for o in given] == [fn(Value(1.0), o).data for o in given]


def test_compile_records_where_site_has_no_user_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    # Pyodide (the site's JupyterLite) has no user site: site.getusersitepackages() returns None
    # there, and the compile tutorial's first call failed ("'NoneType' object is not iterable")
    import site

    monkeypatch.setattr(site, "getusersitepackages", lambda: None)
    monkeypatch.setattr(world, "_installed", {})  # the folders are looked up again
    fast = vjpgrad.compile(lambda a, b: a * b + a.exp())
    fast(Value(1.0), Value(1.0))  # the first call records
    a, b = Value(2.0), Value(3.0)
    fast(a, b).backward()
    assert (a.grad, b.grad) == (3.0 + math.exp(2.0), 2.0)


GETMODULE_SCALE = 2.0


def test_a_module_found_by_inspect_getmodule_at_run_time_is_refused() -> None:
    """``inspect.getmodule`` finds a module through ``sys.modules`` as ``sys.modules[name]`` does:
    what the function reads there is out of the world's reach, so it is refused, not replayed stale."""

    def f(x: Value) -> Value:
        return x * inspect.getmodule(f).GETMODULE_SCALE  # type: ignore[union-attr]

    with pytest.raises(DataDependentError, match="looks a module up"):
        vjpgrad.compile(f)(Value(1.0))
    assert f(Value(1.0)).data == 2.0  # eager code runs it


NAMES_READ = {
    "__name__": lambda x: x.__name__,
    "__qualname__": lambda x: x.__qualname__,
    "__doc__": lambda x: x.__doc__,
    "__module__": lambda x: x.__module__,
}


@pytest.mark.parametrize("attribute", ["__name__", "__qualname__", "__doc__", "__module__"])
def test_a_function_renamed_between_calls_is_recorded_anew(attribute: str) -> None:
    """A function's name, qualified name and docstring are held by the function object, not in its
    ``__dict__``: code that reads one (a registry keyed by ``fn.__name__``) gets eager's answer
    after a rename."""

    def act(v: Value) -> Value:
        """The activation."""
        return v.tanh()

    read = NAMES_READ[attribute]
    original = read(act)

    def f(x: Value) -> Value:
        return act(x) * (2.0 if read(act) == original else 3.0)

    compiled = vjpgrad.compile(f)
    for _ in range(2):
        compiled(Value(0.5))
    setattr(act, attribute, "renamed")  # the test's own function: nothing to restore
    a, b = Value(0.5), Value(0.5)
    ya, yb = compiled(a), f(b)
    ya.backward()
    yb.backward()
    assert (ya.data.hex(), a.grad.hex()) == (yb.data.hex(), b.grad.hex())
    assert compiled.times_recorded == 2


@pytest.mark.parametrize("attribute", ["__name__", "__qualname__"])
def test_a_class_renamed_between_calls_is_recorded_anew(attribute: str) -> None:
    """A class's ``__name__`` and ``__qualname__`` are not entries of its ``__dict__`` either."""

    class Layer:
        pass

    layer = Layer()
    read = NAMES_READ[attribute]
    original = read(Layer)

    def f(x: Value) -> Value:
        return x * (2.0 if read(type(layer)) == original else 3.0)

    compiled = vjpgrad.compile(f)
    for _ in range(2):
        assert compiled(Value(0.5)).data == 1.0
    setattr(Layer, attribute, "Renamed")  # the test's own class: nothing to restore
    assert compiled(Value(0.5)).data == f(Value(0.5)).data == 1.5
    assert compiled.times_recorded == 2


def test_a_cached_property_filled_at_the_first_call_is_no_side_effect() -> None:
    """The first call fills the cache (``__dict__['scale']``), as eager code does; a replay needs
    not fill it again, so that is no change to refuse. The guard compares the instance's keys whole:
    the next call records once more, with the cache there, and then replays."""

    class Scaled:
        def __init__(self) -> None:
            self.w = [Value(0.5), Value(-1.0)]

        @functools.cached_property
        def scale(self) -> float:
            return 2.0

        def __call__(self, x: Value) -> Value:
            return sum((w * x * self.scale for w in self.w), Value(0.0))

    def results(compiled: bool) -> list[Any]:
        model = Scaled()
        fn = vjpgrad.compile(lambda x: model(x)) if compiled else (lambda x: model(x))
        found = []
        for k in range(4):
            if k == 3:
                model.__dict__["scale"] = 3.0  # the cache written over between calls: seen
            x = Value(3.0)
            y = fn(x)
            y.backward()
            found.append((bits(y.data), bits(x.grad), [bits(w.grad) for w in model.w], vars(model).get("scale")))
        if compiled:
            assert fn.times_recorded == 3  # the first call, the second (the cache now there), the fourth
        return found

    assert results(compiled=True) == results(compiled=False)


def test_a_cached_property_the_function_changes_once_filled_is_refused() -> None:
    """What a filled cache holds is the world's like any attribute: a list kept there and appended
    to at a later call is a change a replay would not make, refused as any kept list is."""

    class Logged:
        @functools.cached_property
        def seen(self) -> list[float]:
            return []

        def __call__(self, x: Value, k: float) -> Value:
            self.seen.append(k)
            return x * k

    model = Logged()
    fn = vjpgrad.compile(lambda x, k: model(x, k))
    assert fn(Value(1.0), 2.0).data == 2.0  # the first call fills the cache and appends, eagerly
    with pytest.raises(DataDependentError, match=r"changed model\.seen"):
        fn(Value(1.0), 2.0)
    assert model.seen == [2.0, 2.0]  # the refused call ran as eager code


def _leaky(v: Value, slope: float) -> Value:
    return v.relu() - (-v).relu() * slope


def _table(k: int) -> float:
    return float(k)


def _wrappers() -> dict[str, Callable[[], Any]]:
    """Library wrappers of a user's function, each made anew: what the world reads of them is their
    function and settings, and any attribute the user sets on them."""
    wrappers: dict[str, Callable[[], Any]] = {
        "functools.partial": lambda: functools.partial(_leaky, slope=0.1),
        "functools.lru_cache": lambda: functools.lru_cache(_table),
    }
    if importlib.util.find_spec("numpy") is not None:  # vjpgrad.vmap needs it too
        import numpy as np

        wrappers["numpy.vectorize"] = lambda: np.vectorize(_table)
        wrappers["vjpgrad.vmap"] = lambda: vjpgrad.vmap(_leaky, in_dims=(0, None))
    return wrappers


_WRAPPERS = _wrappers()


@pytest.mark.parametrize("kind", sorted(_WRAPPERS))
@pytest.mark.parametrize("read", ["attribute", "getattr with a default"])
def test_an_attribute_set_on_a_librarys_wrapper_is_watched(kind: str, read: str) -> None:
    """``act.gain = 2.0`` on a ``functools.partial`` (an ``lru_cache``'s wrapper, a ``vjpgrad.vmap``,
    a ``numpy.vectorize``) is the world's as a function's own attribute is: changed, added or
    removed between calls, it is seen (it was read from the wrapper's fixed parts only)."""

    def make() -> tuple[Callable[[Value], Value], Callable[[float | None], None]]:
        held = _WRAPPERS[kind]()

        def set_gain(gain: float | None) -> None:
            if gain is not None:
                held.gain = gain
            elif hasattr(held, "gain"):
                del held.gain

        if read == "attribute":
            return (lambda x: x * held.gain), set_gain
        return (lambda x: x * getattr(held, "gain", 1.0)), set_gain

    gains = (2.0, 3.0, 3.0, 5.0) if read == "attribute" else (2.0, 3.0, 3.0, None, 5.0)  # None: deleted
    twin_scaled(make, *gains)


def test_a_recording_that_filled_a_cached_property_is_not_replayed_where_the_cache_is_empty_again() -> None:
    """A cache emptied after each step (weight normalisation, invalidated by the optimizer step):
    the recording made while it was empty filled it, which a replay would not do, so it is not
    kept. The cache a replay left empty gave a fresh graph whose .grad stayed 0.0 (a review's case)."""

    class WeightNormed:
        def __init__(self) -> None:
            self.v = [Value(3.0), Value(4.0)]

        @functools.cached_property
        def w(self) -> list[Value]:
            norm = (self.v[0] ** 2 + self.v[1] ** 2) ** 0.5
            return [vi / norm for vi in self.v]

        def __call__(self, x: list[Value]) -> Value:
            return self.w[0] * x[0] + self.w[1] * x[1]

    def train(compiled: bool) -> list[tuple[bytes, ...]]:
        model = WeightNormed()
        f = vjpgrad.compile(model) if compiled else model
        seen = []
        for _ in range(3):
            y = f([Value(1.0), Value(2.0)])
            y.backward()
            seen.append((bits(y.data), bits(model.v[0].grad), bits(model.w[0].grad)))
            for p in model.v:
                p.data -= 0.1 * p.grad
                p.grad = 0.0
            model.__dict__.pop("w", None)  # the cache emptied: the next read computes it anew
        return seen

    assert train(compiled=True) == train(compiled=False)


def test_an_object_passed_through_a_users_wrapper_is_named_as_the_wrapper_takes_it() -> None:
    """A decorator of the user's (``functools.wraps``) that passes an argument of its own shifts the
    wrapped function's parameters: the message names the wrapper's own (``args[1]``), not ``x``."""
    scale = Value(2.0)

    def with_scale(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any) -> Any:
            return fn(scale, *args)

        return wrapper

    @with_scale
    def f(scale: Value, x: Value, noise: Any) -> Value:
        return x * scale * next(noise)

    with pytest.raises(DataDependentError, match=r"can reach args\[1\], an iterator") as refused:
        vjpgrad.compile(f)(Value(1.0), iter([1.0, 2.0]))
    assert "can reach x," not in str(refused.value)


def _logged(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A user's decorator that passes ``(*args, **kwargs)`` on unchanged (``functools.wraps``)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


def test_a_users_decorator_that_passes_its_arguments_on_names_them_as_the_function_does() -> None:
    """``functools.wraps`` around ``(*args, **kwargs)`` passed on unchanged: the message names the
    function's own parameter and the line that changed it (it said ``args[1][0]`` and the wrapper's
    line once the naming stopped following ``__wrapped__``, a review of the change)."""

    @_logged
    def f(x: Value, ys: list[float]) -> Value:
        ys.append(1.0)  # the change
        return x * 2.0

    with pytest.raises(DataDependentError, match=r"changed ys\[1\] \(added\)") as refused:
        vjpgrad.compile(f)(Value(1.0), [0.5])
    assert "(at " in str(refused.value), str(refused.value)


def test_a_cache_emptied_before_each_call_gives_up_saying_so() -> None:
    class Scaled:
        @functools.cached_property
        def scale(self) -> Value:
            return Value(2.0)

        def __call__(self, x: Value) -> Value:
            return x * self.scale

    model = Scaled()
    compiled = vjpgrad.compile(model)

    def calls() -> list[float]:
        found = []
        for k in range(15):
            vars(model).pop("scale", None)
            found.append(compiled(Value(float(k))).data)
        return found

    with pytest.warns(vjpgrad.RecompileWarning, match=r"each time filling the functools.cached_property Scaled\.scale"):
        found = calls()
    assert found == [2.0 * k for k in range(15)]
    assert compiled.eager


def test_a_cython_function_in_the_world_is_watched_not_refused_with_an_internal_error() -> None:
    """``from numpy.random import default_rng``: a Cython function, whose class's class keeps
    ``__module__`` as a descriptor; reading it as a string refused the function with
    "'getset_descriptor' object has no attribute 'startswith'" (a review's case)."""
    np = pytest.importorskip("numpy")
    from numpy.random import default_rng

    def f(x: Value) -> Value:
        return x * float(default_rng(3).random())  # a generator of its own, seeded: the same at each call

    compiled = vjpgrad.compile(f)
    expected = float(np.random.default_rng(3).random())
    assert [compiled(Value(k)).data for k in (1.0, 2.0, 3.0)] == [k * expected for k in (1.0, 2.0, 3.0)]
    assert compiled.times_recorded == 1


class _Holding:
    """A callable object whose attributes share names with a compiled function's own state."""

    def __init__(self, fn: Callable[[Value], Value]) -> None:
        self.fn = fn
        self.eager = True
        self.times_recorded = 7

    def __call__(self, x: Value) -> Value:
        return self.fn(x) * 10.0


def test_a_callable_whose_attributes_share_a_compiled_functions_names_is_itself_compiled() -> None:
    """compile copies a function's attributes onto what it returns, as functools.update_wrapper
    does: an object's ``self.fn`` took the place of the function compile runs (it ran ``fn``, not
    ``__call__``: 2.0 where eager code gives 20.0), and ``eager = True`` kept it from recording
    (a review's case). Compile's own state is never a copied attribute."""
    held = _Holding(lambda x: x * 2.0)
    compiled = vjpgrad.compile(held)
    assert [compiled(Value(1.0)).data for _ in range(3)] == [held(Value(1.0)).data] * 3 == [20.0] * 3
    assert compiled.times_recorded == 1
    assert compiled.fn is held


@pytest.mark.parametrize("name", ["eager", "_cache", "fn"])
def test_a_function_with_an_attribute_named_as_compiles_own_state_is_refused(name: str) -> None:
    """``def k(x): return x * (2.0 if k.eager else 1.0)`` with ``k.eager = True``: once ``k`` is the
    compiled function, its body reads compile's ``eager``; a memo kept in ``k._cache`` wrote into
    compile's recordings (a review's cases). Refused at compile(), naming the attribute."""

    def k(x: Value) -> Value:
        return x * 2.0

    setattr(k, name, True)
    with pytest.raises(TypeError, match=rf"has the attribute {name}, which is vjpgrad.compile's own"):
        vjpgrad.compile(k)


@pytest.mark.parametrize("shape", ["alone", "a branch", "a logging call", "a decorator object"])
def test_a_decorator_that_adds_an_argument_anywhere_is_named_by_its_own(shape: str) -> None:
    """``fn(CTX, *args, **kwargs)`` around ``f(ctx, x, ys=None)``: the call binds to the wrapped
    signature shifted by one, and the message blamed ``x`` for the list ``ys`` (a review of the
    change). So too a wrapper that passes ``(*args, **kwargs)`` on in one call and adds one in
    another, or a decorator object (``update_wrapper(self, fn)``): the names are its own."""
    ctx = object()

    def log(*args: Any, **kwargs: Any) -> None:
        pass

    def inject(fn: Callable[..., Any]) -> Callable[..., Any]:
        if shape == "a decorator object":

            class Injecting:
                def __init__(self) -> None:
                    functools.update_wrapper(self, fn)

                def __call__(self, *args: Any, **kwargs: Any) -> Any:
                    return fn(ctx, *args, **kwargs)

            return Injecting()

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if shape == "a branch" and kwargs.get("raw"):
                return fn(*args, **kwargs)
            if shape == "a logging call":
                log(*args, **kwargs)
            return fn(ctx, *args, **kwargs)

        return wrapper

    @inject
    def f(context: object, x: Value, ys: list[float] | None = None) -> Value:
        assert ys is not None
        ys.append(1.0)
        return x * 2.0

    with pytest.raises(DataDependentError, match=r"changed args\[1\]\[1\] \(added\)") as refused:
        vjpgrad.compile(f)(Value(1.0), [0.5])
    assert "changed x[" not in str(refused.value)


def test_a_wrapper_of_a_compiled_function_is_compiled_not_refused_for_what_it_copied() -> None:
    """``functools.wraps(compiled)`` copies a compiled function's own state (``fn``, ``_cache``...)
    onto the wrapper, and so does ``vjpgrad.no_grad``: refused as the user's attributes, they
    kept ordinary code from compiling (a review of the change). What was copied from what it wraps
    is not the user's."""
    inner = vjpgrad.compile(lambda x: x * x)

    def timed(g: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(g)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return g(*args, **kwargs)

        return wrapper

    outer = vjpgrad.compile(timed(inner))
    assert [outer(Value(3.0)).data for _ in range(2)] == [9.0, 9.0]


class _Model:
    @_logged
    def step(self, x: Value, ys: list[float]) -> Value:
        ys.append(1.0)  # the change
        return x * 2.0


def test_a_decorated_method_is_named_by_its_own_parameters() -> None:
    # a bound method forwards __dict__ to its function: it was taken for a decorator object (a[1][0])
    with pytest.raises(DataDependentError, match=r"changed ys\[0\] \(added\)"):
        vjpgrad.compile(_Model().step)(Value(1.0), [])


def test_what_a_weak_reference_of_the_world_points_to_lives_until_the_recordings_are_dropped() -> None:
    """The tutorial's limit: a recording holds the objects it checks by identity, those a weak
    registry the function reads points to among them; ``f.reset()`` lets them go."""

    class Holder:
        k = 2.0

    registry: weakref.WeakValueDictionary[str, Holder] = weakref.WeakValueDictionary()
    held = Holder()
    registry["a"] = held

    def f(x: Value) -> Value:
        for v in registry.values():
            x = x * v.k
        return x

    compiled = vjpgrad.compile(f)
    for _ in range(3):
        assert compiled(Value(1.5)).data == 3.0
    alive = weakref.ref(held)
    del held
    gc.collect()
    assert alive() is not None  # kept by the recording, as the tutorial says
    compiled.reset()
    gc.collect()
    assert alive() is None
    assert compiled(Value(1.5)).data == 1.5  # the registry is empty now, as eager code finds it
