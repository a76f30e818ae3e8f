"""The guard's checks of the Values in a function's world, each one pass over them all.

The guard checks every Value the function can reach together: their identities in one pass,
then their ``requires_grad`` and their attributes in another (the flags of the Values without
attributes; those that had attributes at recording are checked apart). Each test changes one
Value among many between calls, in one way that pass must see, and asks for eager's bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from _helpers import bits

import vjpgrad
from vjpgrad import Value

Change = Callable[[list[Value]], None]


def results(labelled: bool, change: Change, compiled: bool, scaled: bool = False) -> list[Any]:
    """The output's bits and every parameter's gradient at three calls of ``weighted_sum`` on
    fresh parameters (``many``; ``scaled``: one with a ``scale`` of 2.0), ``change`` made before
    the second: run eagerly or compiled."""
    params = many(labelled)
    if scaled:
        params[17].scale = 2.0  # type: ignore[attr-defined]  # the subject: a user's attribute
    fn = weighted_sum(params)
    run = vjpgrad.compile(fn) if compiled else fn
    found = []
    for call in range(3):
        if call == 1:
            change(params)
        for p in params:
            p.grad = 0.0
        out = run(Value(0.75, requires_grad=False))
        out.backward()
        found.append([bits(out.data), [bits(p.grad) for p in params]])
    return found


def weighted_sum(params: list[Value]) -> Callable[[Value], Value]:
    """The sum of ``x * p * p.scale`` (1.0 where a parameter has no ``scale``) over the
    parameters that require grad: it reads each parameter's attributes and flag."""

    def fn(x: Value) -> Value:
        terms = (x * p * getattr(p, "scale", 1.0) for p in params if p.requires_grad)
        return sum(terms, Value(0.0, requires_grad=False))

    return fn


def many(labelled: bool) -> list[Value]:
    params = [Value(0.25 * k - 3.0, requires_grad=k % 10 != 3) for k in range(40)]  # a few frozen
    if labelled:  # attributes of their own at recording: the flag is checked apart for these
        for k, p in enumerate(params):
            p.label = f"p{k}"
    return params


def set_scale(params: list[Value]) -> None:
    params[17].scale = 3.0  # type: ignore[attr-defined]  # the subject: a user's attribute


def drop_label(params: list[Value]) -> None:
    del params[17].label


def freeze(params: list[Value]) -> None:
    params[17].requires_grad = False


def unfreeze(params: list[Value]) -> None:
    params[17].requires_grad = False
    params[23].requires_grad = True


CHANGES: dict[str, Change] = {
    "an attribute set": set_scale,
    "requires_grad turned off": freeze,
    "requires_grad moved to another": unfreeze,
}


@pytest.mark.parametrize("labelled", [False, True], ids=["without attributes", "with attributes"])
@pytest.mark.parametrize("change", list(CHANGES.values()), ids=list(CHANGES))
def test_a_change_to_one_value_among_many_is_seen(change: Change, labelled: bool) -> None:
    eager, compiled = (results(labelled, change, compiled=c) for c in (False, True))
    assert compiled == eager


def test_an_attribute_a_value_had_at_recording_and_then_lost_is_seen() -> None:
    def lose_scale(params: list[Value]) -> None:
        del params[17].scale  # type: ignore[attr-defined]  # the subject

    eager, compiled = (results(True, lose_scale, compiled=c, scaled=True) for c in (False, True))
    assert compiled == eager


def test_a_value_that_loses_its_only_attribute_records_anew() -> None:
    params = many(labelled=True)
    fn = vjpgrad.compile(weighted_sum(params))
    fn(Value(0.75, requires_grad=False))
    fn(Value(0.75, requires_grad=False))
    assert fn.times_recorded == 1
    drop_label(params)  # an empty __dict__ where a label was: the Value comes into the pass's list
    fn(Value(0.75, requires_grad=False))
    assert fn.times_recorded == 2


def test_the_guard_checks_the_worlds_values_flags_and_attributes_in_one_pass() -> None:
    params = many(labelled=False)
    fn = vjpgrad.compile(weighted_sum(params))
    fn(Value(0.75, requires_grad=False))
    assert "[x.requires_grad for x in values if not x.__dict__]" in fn.guard_source
