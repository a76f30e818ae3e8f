"""What a compiled function's first two calls read of a recording, and read only once.

The first call reads the recording a column at a time (``vjpgrad.recording.columns_of``: each
operation, its operands, where each was made) and, when it keeps every node (a training step),
keeps those columns (``Recorded.columns``); the second call's cache key (``record.describe``)
and, with an empty cache, the block search's local keys (``fold.keys``) are made from them
instead of reading every node again, then the columns are let go. The
key must be the one a fresh reading of the nodes gives, bit for bit, on every kind of recording
(operations of one operand and of many, numbers, arguments and parameters read in any order,
Values made inside, operations the outputs do not need, constants), and it must still tell
apart recordings one detail apart (``test_compile_replay.py`` holds the pairs), so that a warm
start never loads another structure's code.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector
from vjpgrad.compiler import cache, fold, record
from vjpgrad.compiler.record import describe
from vjpgrad.nn import functional

P, Q = Value(0.5), Value(-1.25)  # parameters the functions below find in their world


def _first_call(fn: Callable[..., Any], *args: Any) -> Any:
    """The replay that ``fn``'s first call recorded (its code not yet written or loaded)."""
    compiled = vjpgrad.compile(fn)
    compiled(*args)
    replay = compiled._last
    assert replay is not None
    return replay


def _both_ways(replay: Any) -> tuple[bytes | None, bytes | None]:
    """The key's description from the columns the recording kept, and read from the nodes anew."""
    recorded = replay.recorded
    kept = describe(recorded, replay.internal_outputs)
    columns, recorded.columns = recorded.columns, None
    try:
        anew = describe(recorded, replay.internal_outputs)
    finally:
        recorded.columns = columns
    return kept, anew


def step(x: Value, y: Value) -> Value:
    """A small training step: relu and tanh (one operand), max (many), numbers, both parameters."""
    h = (x * P + y * Q + 0.5).relu()
    g = (y * P - 1.0).tanh()
    return functional.max([h, g, x * 2.0]) * Q + (P * P + Q * Q) * 1e-4


KEEPING_EVERY_NODE = {
    "a step": step,
    "an argument read twice, a parameter as second operand": lambda x, y: x * x + Q * (y - x),
    "a parameter read before the arguments": lambda x, y: P * 3.0 + (P + x) * y,
    "a Value made inside that takes gradient": lambda x, y: x * Value(2.0, requires_grad=True) + y,
    "an operation of many reading arguments and parameters": lambda x, y: functional.max([P, x, y * Q, x]) * y,
}


@pytest.mark.parametrize("fn", KEEPING_EVERY_NODE.values(), ids=KEEPING_EVERY_NODE.keys())
def test_the_key_from_the_kept_columns_is_the_key_read_anew(fn: Callable[..., Any]) -> None:
    replay = _first_call(fn, Value(0.75), Value(-2.0))
    assert replay.recorded.columns is not None  # every node is needed: the columns were kept
    kept, anew = _both_ways(replay)
    assert kept is not None
    assert kept == anew


def test_a_recording_with_what_the_outputs_do_not_need_or_with_constants_keeps_no_columns() -> None:
    # the columns describe every node read; live then holds fewer, so the key reads live itself
    def unneeded(x: Value, y: Value) -> Value:
        (x * y).exp()  # computed, never used
        return x * P + y

    for fn in (unneeded, lambda x, y: x * Value(3.0, requires_grad=False) + y):  # a constant of the code
        replay = _first_call(fn, Value(0.75), Value(-2.0))
        assert replay.recorded.columns is None
        kept, anew = _both_ways(replay)
        assert kept == anew is not None


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_programs_get_the_same_key_from_the_kept_columns_as_read_anew(seed: int) -> None:
    rng = random.Random(seed)
    program: list[tuple[Any, ...]] = []  # (kind, operand choices, number): structure the function reads
    for _ in range(rng.randint(1, 25)):
        picks = tuple(rng.randrange(1000) for _ in range(4))
        program.append((rng.choice(["unary", "many", "number", "pair", "made"]), picks, rng.uniform(-3.0, 3.0)))
    last = rng.random() < 0.3  # the last value only: some operations unneeded

    def fn(x: Value, y: Value) -> Value:
        made: list[Any] = [x, y, P, Q]
        for kind, picks, number in program:
            a, b = made[picks[0] % len(made)], made[picks[1] % len(made)]
            if kind == "unary":
                made.append(a.tanh() if picks[2] % 2 else -a)
            elif kind == "many":
                made.append(functional.max([made[p % len(made)] for p in picks[: 1 + picks[3] % 4]]))
            elif kind == "number":
                made.append(a * number if picks[2] % 2 else number - a)
            elif kind == "made":
                made.append(a * Value(number, requires_grad=True))
            else:
                made.append(a * b if picks[2] % 2 else a + b)
        return made[-1] if last else functional.max([*made[4:], x])

    replay = _first_call(fn, Value(0.75), Value(-2.0))
    kept, anew = _both_ways(replay)
    assert kept == anew is not None
    assert _search_keys(replay, replay.recorded.columns) == _search_keys(replay, None)


def _search_keys(replay: Any, columns: Any) -> tuple[list[int], list[int]]:
    """The block search's local keys and last users (``fold.keys``), from ``columns`` or read anew."""
    recorded = replay.recorded
    live, externals = recorded.live, recorded.externals
    returned = {id(live[k]) for k in replay.internal_outputs}
    place = {id(node): k for k, node in enumerate(live)}
    arguments = len(record.distinct(recorded.arguments))
    return fold.keys(live, externals, arguments, recorded.constants, recorded.edges, returned, place, columns)


@pytest.mark.parametrize("fn", KEEPING_EVERY_NODE.values(), ids=KEEPING_EVERY_NODE.keys())
def test_the_search_keys_from_the_kept_columns_are_those_read_anew(fn: Callable[..., Any]) -> None:
    replay = _first_call(fn, Value(0.75), Value(-2.0))
    assert replay.recorded.columns is not None
    assert _search_keys(replay, replay.recorded.columns) == _search_keys(replay, None)


def test_the_second_call_with_an_empty_cache_reads_no_node_again_and_lets_the_columns_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VJPGRAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VJPGRAD_CACHE", raising=False)
    compiled = vjpgrad.compile(step)
    compiled(Value(0.75), Value(-2.0)).backward()  # the first call, and its pass frees its graph
    replay = compiled._last
    assert replay is not None
    assert replay.recorded.columns is not None
    expected = _both_ways(replay)[1]
    reading = record.columns_of

    def no_second_reading(nodes: Any) -> Any:
        raise AssertionError("the nodes were read again for the key")

    monkeypatch.setattr(record, "columns_of", no_second_reading)
    monkeypatch.setattr(fold.recording, "columns_of", no_second_reading)
    x, y = Value(0.75), Value(-2.0)
    compiled(x, y).backward()  # the second call: the key, the search, the code written and stored
    assert replay.recorded.columns is None  # let go once the key is made
    monkeypatch.setattr(record, "columns_of", reading)
    assert expected is not None
    [entry] = (tmp_path / "cache").glob(f"*{cache.SUFFIX}")
    assert entry.name == f"{cache.key(expected)}{cache.SUFFIX}"  # the key the nodes read anew give
    grads = [x.grad, y.grad]
    x, y = Value(0.75), Value(-2.0)
    step(x, y).backward()
    assert grads == [x.grad, y.grad]


def test_with_the_cache_off_the_second_call_describes_nothing_and_lets_the_columns_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VJPGRAD_CACHE", "0")

    def no_key(*args: Any) -> Any:
        raise AssertionError("the key was made with the cache off")

    monkeypatch.setattr("vjpgrad.compiler.run.describe", no_key)
    compiled = vjpgrad.compile(step)
    compiled(Value(0.75), Value(-2.0))
    replay = compiled._last
    assert replay is not None
    assert replay.recorded.columns is not None
    x = Value(0.75)
    compiled(x, Value(-2.0)).backward()
    assert replay.recorded.columns is None
    eager = Value(0.75)
    step(eager, Value(-2.0)).backward()
    assert x.grad == eager.grad


ONE_DETAIL_APART = {
    "a parameter read again or another one": (lambda x, y: x * P + y * P, lambda x, y: x * P + y * Q),
    "an argument or a parameter": (lambda x, y: x * P + y, lambda x, y: x * y + P),
    "which parameter max reads": (
        lambda x, y: functional.max([P, x, Q]) * y,
        lambda x, y: functional.max([P, x, P]) * y,
    ),
}


@pytest.mark.parametrize(("first", "second"), ONE_DETAIL_APART.values(), ids=ONE_DETAIL_APART.keys())
def test_the_kept_columns_still_tell_apart_which_argument_or_parameter_an_operand_is(
    first: Callable[..., Any], second: Callable[..., Any]
) -> None:
    # the columns say "made elsewhere" (-1) for every argument and parameter; which one each is
    # goes into the key beside them: without it these pairs would share a key and a warm start
    # would load the other one's code
    keys = [_both_ways(_first_call(fn, Value(0.75), Value(-2.0))) for fn in (first, second)]
    assert keys[0][0] == keys[0][1] is not None
    assert keys[1][0] == keys[1][1] is not None
    assert keys[0][0] != keys[1][0]


# ---- the second call's readers of each value, counted a column at a time ---------------------------


def _readers_node_by_node(live: list[Any]) -> tuple[list[int], list[int]]:
    """Each operation's last reader, and its one reader when exactly one operand of one
    operation reads it (-1 otherwise): every node's operands read one node at a time, as the
    writer read them before it counted columns."""
    from vjpgrad.core import graph

    place = {id(node): q for q, node in enumerate(live)}
    last, reads = [-1] * len(live), [0] * len(live)
    for q, node in enumerate(live):
        for x in graph.operands(node):
            if id(x) in place:
                last[place[id(x)]] = q
                reads[place[id(x)]] += 1
    return last, [q if count == 1 else -1 for q, count in zip(last, reads, strict=True)]


@pytest.mark.parametrize("seed", range(40))
def test_the_readers_of_each_operation_are_counted_a_column_at_a_time_as_node_by_node(seed: int) -> None:
    """``write.readers_of`` (the block search's last users, the forward pass's inlining, the
    folded reverse pass's holders) counts the places of the first and second operands in C,
    then those of each operation of many: on random graphs of operations of one, two and many
    operands, a value read twice by one operation (``x * x``), numbers and arguments, each
    operation's last reader and its one reader are those reading each node's operands finds."""
    from vjpgrad import recording
    from vjpgrad.compiler import write

    rng = random.Random(seed)
    arguments = [Value(rng.uniform(-1, 1)) for _ in range(3)]
    pool, live = list(arguments), []
    for _ in range(rng.randint(1, 40)):
        a, b = rng.choice(pool), rng.choice(pool)
        kind = rng.randrange(6)
        if kind == 5:
            y = functional.max([rng.choice(pool) for _ in range(rng.randint(2, 4))])
        else:
            y = (a + b, a * a, a.tanh(), a * 2.0, a - b)[kind]
        live.append(y)
        pool.append(y)
    found = write.readers_of(recording.columns_of(live))
    assert (found.last, found.once) == _readers_node_by_node(live)


# ---- what a reverse pass reaches, from the columns ---------------------------------------------


def _reach_node_by_node(program: Any, roots: list[Any]) -> set[int]:
    """What an eager pass from ``roots`` reaches, by following each node's edges one node at a
    time, as the writer did before it read columns."""
    from vjpgrad.core import graph

    edges = dict(zip(map(id, program.live), program.edges.in_order, strict=True))
    reach = {id(n) for n in roots if n.requires_grad}
    for node in reversed(program.live):
        if id(node) in reach:
            operands = graph.operands(node)
            reach.update(id(operands[k]) for k in edges[id(node)])
    return reach


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_what_a_pass_reaches_is_found_from_the_columns_as_node_by_node(seed: int) -> None:
    """``Program.reach`` (every operation that takes gradient when each is a root or an edge's
    end, checked with sets built in C, else one sweep over the columns) finds what following the
    edges node by node finds, from each output alone and from all of them, on random programs
    with detached values, values made under ``no_grad``, Values made inside with and without
    gradient, operations of many operands, and outputs that read one another."""
    rng = random.Random(seed)
    steps = [(rng.randrange(7), rng.randrange(1000), rng.randrange(1000)) for _ in range(rng.randint(1, 25))]
    outputs = rng.sample(range(len(steps)), rng.randint(1, min(3, len(steps))))

    def fn(x: Value, y: Value) -> Vector:
        made: list[Any] = [x, y, P, Q]
        for kind, i, j in steps:
            a, b = made[i % len(made)], made[j % len(made)]
            if kind == 0:
                made.append(a * b)
            elif kind == 1:
                made.append((a + b).tanh())
            elif kind == 2:
                made.append(a.detach() * b)
            elif kind == 3:
                with vjpgrad.no_grad():
                    made.append(a * 2.0)
            elif kind == 4:
                made.append(a * Value(0.5, requires_grad=bool(i % 2)))
            elif kind == 5:
                made.append(functional.max([a, b, x]))
            else:
                made.append(a - 1.5)
        return Vector([made[4 + k] for k in outputs] + [made[-1] * 1.0])

    replay = _first_call(fn, Value(0.75), Value(-2.0))
    program = replay.program
    roots = [program.live[k] for k in replay.internal_outputs]
    for chosen in [[root] for root in roots] + [roots]:
        assert program.reach(chosen) == _reach_node_by_node(program, chosen)
