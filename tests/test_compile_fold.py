"""vjpgrad.compile writes a block the recording repeats once, as a loop over its copies, and
keeps eager's bits: each copy run backward last first, the parameters' gradients threaded
through, an operation run only where the pass reaches it."""

from __future__ import annotations

import ast
import math
import random
import re
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import vjpgrad
from vjpgrad import Value, Vector
from vjpgrad.compiler import cache as _cache
from vjpgrad.compiler import fold
from vjpgrad.nn import MLP

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from moons import make_moons


def bits(x: float | None) -> Any:
    return None if x is None else ("nan" if math.isnan(x) else struct.pack("<d", x))


POINTS, LABELS = make_moons(12)


def hinge_loss(model: MLP, points: list[tuple[float, float]]) -> Value:
    """micrograd's demo loss on ``points``: the model runs once per point (the repeated block)."""
    scores = [model(list(p)) for p in points]
    margins = [(1 + -y * s).relu() for y, s in zip(LABELS, scores, strict=False)]  # type: ignore[operator]
    total = margins[0]
    for m in margins[1:]:
        total = total + m
    reg = sum((p * p for p in model.parameters()), Value(0.0, requires_grad=False))
    return total * (1.0 / len(margins)) + reg * 1e-4


def gradients(model: MLP, loss: Callable[[], Value]) -> list[Any]:
    for p in model.parameters():
        p.grad = 0.0
    out = loss()
    out.backward()
    return [bits(out.data)] + [bits(p.grad) for p in model.parameters()]


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of two operations or more are loops, however small a part of the program."""
    monkeypatch.setattr(fold, "SMALLEST", 2)
    monkeypatch.setattr(fold, "SHARE", 0.0)


def source_of(compiled: Any) -> str:
    source: str = compiled.source
    return source


def test_a_model_run_on_each_point_is_written_once_as_a_loop_with_eagers_bits() -> None:
    model = MLP(2, [4, 4, 1], seed=3)
    compiled = vjpgrad.compile(lambda pts: hinge_loss(model, pts))
    eager = gradients(model, lambda: hinge_loss(model, POINTS))
    assert [gradients(model, lambda: compiled(POINTS)) for _ in range(3)] == [eager] * 3  # recorded, written, replayed
    source = source_of(compiled)
    forward = source.split("def backward")[0]
    # the model on each point is one loop (the margins may fold too, a few points a copy)
    assert f"# block 1, written once: {len(POINTS)} copies of " in forward
    assert "\n        for c0, c1 in zip((" in forward  # each point's coordinates: numbers of its own
    operations = compiled._last.recorded.live
    assert len(source.splitlines()) < len(operations)  # straight-line code takes a line per operation and more


def test_copies_that_read_each_other_are_written_straight_line_with_eagers_bits() -> None:
    weights = [Value(0.7), Value(-0.2)]

    def chain(x: Value) -> Value:
        for _ in range(6):  # each copy reads the one before: no loop over copies known in advance
            x = (x * weights[0] + weights[1]).tanh()
        return x * 1.0

    compiled = vjpgrad.compile(chain)
    results = []
    for f in (chain, compiled, compiled, compiled):
        for w in weights:
            w.grad = 0.0
        x = Value(0.4)
        f(x).backward()
        results.append([bits(x.grad)] + [bits(w.grad) for w in weights])
    assert results[1:] == [results[0]] * 3
    assert "\n        for " not in source_of(compiled)


def repeated(params: list[Value], xs: list[Value]) -> Vector:
    """Copies of one block over inputs of their own, each with two results read after the loop
    (the second alone reads ``params[3]``), and then a sum of the copies."""
    outs, others = [], []
    for x in xs:
        h = (x * params[0] + params[1]).relu() * params[2]
        outs.append(h * params[0])
        others.append(x * params[3])
    total = others[0]
    for o in others[1:]:
        total = total + o
    return Vector([o * 1.0 for o in outs] + [total])


@pytest.mark.parametrize("seeded", [[0, 1, 2, 3, 4], [3], [0], [1, 2], [0, 3], [4], [2, 4]])
@pytest.mark.parametrize("seed", [1.0, -0.0, -2.5])
@pytest.mark.usefixtures("small_blocks")
def test_a_pass_seeded_at_some_outputs_runs_only_the_copies_it_reaches(seeded: list[int], seed: float) -> None:
    # a parameter's gradient starts at -0.0: a copy, or a part of one, that the pass does not
    # reach, run with a zero seed, would add 0.0 to it and turn it into +0.0 (the inputs are
    # negative, so -0.0 times them is +0.0; the relu closes on some copies)
    xs_data = [-1.5, 0.75, -0.25, 2.0]
    compiled = vjpgrad.compile(repeated)

    def run(f: Callable[..., Vector]) -> list[Any]:
        params = [Value(0.5), Value(-0.25), Value(-3.0), Value(1.5)]
        for p in params:
            p.grad = -0.0
        xs = [Value(x) for x in xs_data]
        out = f(params, xs)
        Vector([out[i] for i in seeded]).backward([seed] * len(seeded))
        return [bits(v.grad) for v in [*params, *xs]]

    eager = run(repeated)
    assert [run(compiled) for _ in range(3)] == [eager] * 3
    assert isinstance(compiled._last.program, fold.FoldedProgram)


@pytest.mark.usefixtures("small_blocks")
def test_anomaly_mode_names_the_operation_of_a_block_that_makes_nan() -> None:
    weights = [Value(1.0), Value(0.0)]

    def f(xs: list[Value]) -> Value:
        outs = [(x * weights[0] + weights[1]).relu().sqrt() * 0.0 for x in xs]  # sqrt'(0) = inf, 0 * inf = nan
        total = outs[0]
        for o in outs[1:]:
            total = total + o
        return total

    compiled = vjpgrad.compile(f)
    xs = [Value(-1.0), Value(2.0), Value(-3.0)]
    compiled(xs)
    compiled(xs).backward()  # written
    assert isinstance(compiled._last.program, fold.FoldedProgram)
    for function in (f, compiled):
        with pytest.raises(FloatingPointError, match="sqrt"), vjpgrad.detect_anomaly():
            function([Value(-1.0), Value(2.0), Value(-3.0)]).backward()


@pytest.mark.usefixtures("small_blocks")
def test_a_number_that_differs_between_copies_is_an_input_of_the_loop() -> None:
    # micrograd's margins multiply by each point's label: the copies differ by a number, here
    # each sign of zero, an infinity, an int and exponents PyTorch treats apart (2.0, 0.5, -1.0)
    weights = [Value(0.5), Value(-1.5)]
    scales, powers = [2.0, -0.0, math.inf, 3, -1.0], [2.0, 0.5, 2.0, 3.0, -1.0]

    def f(xs: list[Value]) -> Value:
        outs = [((x * weights[0]).tanh() * c + weights[1]) ** k for x, c, k in zip(xs, scales, powers, strict=True)]
        total = outs[0]
        for o in outs[1:]:
            total = total + o
        return total

    def run(function: Callable[[list[Value]], Value]) -> list[Any]:
        for w in weights:
            w.grad = 0.0
        xs = [Value(0.1 * k - 0.2) for k in range(5)]
        function(xs).backward()
        return [bits(v.grad) for v in [*weights, *xs]]

    compiled = vjpgrad.compile(f)
    eager = run(f)
    assert [run(compiled) for _ in range(3)] == [eager] * 3
    forward = source_of(compiled).split("def backward")[0]
    assert "numbers c0, c1 of its own (the first copy's 2.0, 2.0)" in forward
    assert "(2.0, (-0.0), _inf, 3.0, (-1.0)), (2.0, 0.5, 2.0, 3.0, (-1.0))):" in forward


@pytest.mark.usefixtures("small_blocks")
def test_find_reads_back_to_back_repeats_of_keys() -> None:
    assert fold.find([9, 1, 2, 3, 1, 2, 3, 1, 2, 3, 8]) == [(1, 3, 3)]
    assert fold.find([1, 2, 1, 2, 7, 1, 2]) == [(0, 2, 2)]  # the third copy is not adjacent
    assert fold.find([-1, -2, -3]) == []  # negative keys never fold
    assert fold.find([5, 5, 5, 5]) == [(0, 2, 2)]  # no block of one operation


def test_find_apart_reads_repeats_of_keys_with_other_keys_between_them() -> None:
    block = [1, 2, 3, 4, 5, 6]
    assert fold.find_apart([*block, 9, *block, 7, 8, *block, 10], 4) == [[0, 7, 15, 6]]
    assert fold.find_apart(block * 3, 4) == [[0, 6, 12, 6]]  # back to back: the nearest copy, not two at once
    # each copy followed by a longer stretch (a model's positions, each reading all the earlier
    # ones): the block is as long as the copies match, and the copies are found however far apart
    keys = [*block, 20, *block, 20, 21, *block, 20, 21, 22, *block]
    assert fold.find_apart(keys, 4) == [[0, 7, 15, 24, 6]]
    assert fold.find_apart([*block, 9, *block], 7) == []  # shorter than the smallest block
    assert fold.find_apart([-1, -2, -1, -2], 1) == []  # negative keys never fold


def positions(params: list[Value], xs: list[Value]) -> Vector:
    """A model run on each position, reading every earlier position (as attention does): the
    copies of its block are apart, code of growing length between them."""
    seen: list[Value] = []
    losses = []
    for x in xs:
        h = (x * params[0] + params[1]).tanh() * params[2] + params[3]  # the block of each position
        h = (h * h + params[0]).relu() * params[1] - x
        context = h
        for earlier in seen:  # glue: one more term at each position
            context = context + earlier * params[2]
        seen.append(h)
        losses.append((context * params[3]).exp() * 0.5)
    total = losses[0]
    for loss in losses[1:]:
        total = total + loss
    return Vector([*losses, total])


@pytest.mark.parametrize("seeded", [[0, 1, 2, 3, 4], [4], [0], [1, 3], [2, 4]])
@pytest.mark.parametrize("seed", [1.0, -0.0, -2.5])
def test_copies_apart_are_one_function_each_copy_is_sent_into_with_eagers_bits(
    seeded: list[int], seed: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fold, "SMALLEST_CALLED", 8)
    monkeypatch.setattr(fold, "SHARE", 0.0)
    params = [Value(0.5), Value(-0.25), Value(-1.5), Value(0.75)]  # the model's: read by the function, not passed
    compiled = vjpgrad.compile(lambda xs: positions(params, xs))

    def run(f: Callable[..., Vector]) -> list[Any]:
        for p in params:
            p.grad = -0.0
        xs = [Value(x) for x in [-1.5, 0.75, -0.25, 2.0]]
        out = f(xs)
        Vector([out[i] for i in seeded]).backward([seed] * len(seeded))
        return [bits(v.grad) for v in [*params, *xs]]

    eager = run(lambda xs: positions(params, xs))
    assert [run(compiled) for _ in range(3)] == [eager] * 3
    program = compiled._last.program
    assert isinstance(program, fold.FoldedProgram)
    assert any(not block.adjacent and block.copies == 4 for block in program.blocks)
    forward, backward = source_of(compiled).split("def backward(")
    assert forward.count("\ndef _f") == 1
    assert forward.count("_f0_run = _f0(") == 1  # one frame, made with the pass's own frame
    assert forward.count(" = _f0_run.send((") == 4  # written once, each copy sent in
    assert "written once as a function, each copy sent in: 4 copies" in forward
    calls = [line for line in backward.splitlines() if "_run.send((" in line]
    assert len(calls) == 4
    assert backward.count("_run = _b") == 1  # one frame, made with the pass's own, each copy sent in
    assert all("_G0" in call or "g_p" in call for call in calls)  # the parameters' running gradients go through
    # the parameters' numbers are every copy's: each call fills the function's list with them once
    names = {program.names[id(p)] for p in params}
    f0 = next(n for n in ast.parse(forward).body if isinstance(n, ast.FunctionDef) and n.name == "_f0")
    yielded = [n.value for n in ast.walk(f0) if isinstance(n, ast.Yield) and n.value is not None]
    assert len(yielded) == 1  # each copy's outputs and what its reverse pass reads, sent back
    assert isinstance(yielded[0], ast.Tuple)
    each_copy = {n.id for n in ast.walk(yielded[0].elts[-1]) if isinstance(n, ast.Name)}
    assert each_copy
    assert not each_copy & names
    [filled] = [ast.parse(line.strip()) for line in backward.splitlines() if line.strip().startswith("_P0[:] = (")]
    handed = {n.id for n in ast.walk(filled) if isinstance(n, ast.Name)} & names
    assert len(handed) >= 2  # the numbers of the parameters the reverse pass reads (an addition reads none)
    assert "_b" in backward.split("_P0[:] = (")[0]  # the function's frame is made before, with the pass's


def two_ways(params: list[Value], xs: list[Value]) -> Vector:
    """Per position a block with two branches (``a`` reads all of it, ``b`` its first part), and
    glue between positions that reads only the arguments: seeding ``a`` at one position and
    ``b`` at the next, a pass reaches the block's copies in two patterns, one after the other."""
    outs = []
    for k, x in enumerate(xs):
        u = (x * params[2] + params[1]).tanh() * params[3] + params[1]
        a = (u * params[0]).exp() * 0.5 - x
        b = (u * params[1] + x).relu() * 1.5 + params[0]
        outs += [a, b]
        context = xs[0] * 0.25
        for earlier in xs[1 : k + 1]:  # one more term a position: the copies are apart
            context = context + earlier * 0.5
        outs.append(context)
    return Vector(outs)


def test_two_functions_of_one_block_hand_the_parameters_running_gradients_on_with_eagers_bits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fold, "SMALLEST_CALLED", 8)
    monkeypatch.setattr(fold, "SHARE", 0.0)
    params = [Value(0.5), Value(-0.25), Value(1.25), Value(-0.75)]
    compiled = vjpgrad.compile(lambda xs: two_ways(params, xs))
    seeded = [9, 7, 3, 1]  # a of the last position, b of the one before, a, b: the patterns alternate

    def run(f: Callable[..., Vector]) -> list[str]:
        for p in params:
            p.grad = -0.0
        xs = [Value(x) for x in [-1.5, 0.75, -0.25, 2.0]]
        out = f(xs)
        Vector([out[i] for i in seeded]).backward([1.0, -2.0, 0.5, 3.0])
        return [bits(v.grad) for v in [*params, *xs]]

    eager = run(lambda xs: two_ways(params, xs))
    assert [run(compiled) for _ in range(3)] == [eager] * 3
    source = compiled._last.program.backward_source(frozenset(seeded))
    functions = [line.split("(")[0][4:] for line in source.splitlines() if line.startswith("def _b0_")]
    assert len(functions) == 2  # one per pattern, each with its own frame for the pass
    body = source.split("def backward(")[1]
    assert "_G0 = [" in body  # parameters only the block reads: their running gradients held in its frames
    sent = [line.strip() for line in body.splitlines() if "_run.send(" in line]
    # each function hands the running gradients back (None sent) before the other takes them on
    first, second = functions
    order = [line.split("_run")[0].split(" = ")[-1] for line in sent]
    assert order == [first, first, second, second, first, first, second, second]
    assert [line.endswith("send(None)") for line in sent] == [False, True] * 4


def test_anomaly_mode_names_the_operation_of_a_copy_apart_that_makes_nan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fold, "SMALLEST_CALLED", 4)
    monkeypatch.setattr(fold, "SHARE", 0.0)
    weights = [Value(1.0), Value(0.0)]

    def f(xs: list[Value]) -> Value:
        total = xs[0] * 0.0
        for x in xs:  # each copy reads the running total: code between the copies
            total = total + ((x * weights[0] + weights[1]).relu().sqrt() * 0.0 + total) * 0.5
        return total

    compiled = vjpgrad.compile(f)
    xs = [Value(-1.0), Value(2.0), Value(-3.0)]
    compiled(xs)
    compiled(xs).backward()  # written
    program = compiled._last.program
    assert isinstance(program, fold.FoldedProgram)
    assert not program.blocks[0].adjacent
    for function in (f, compiled):
        with pytest.raises(FloatingPointError, match="sqrt"), vjpgrad.detect_anomaly():
            function([Value(-1.0), Value(2.0), Value(-3.0)]).backward()


def folded(f: Callable[..., Value], xs: list[Value]) -> bool:
    compiled = vjpgrad.compile(f)
    compiled(xs)
    compiled(xs)
    return isinstance(compiled._last.program, fold.FoldedProgram) and "\n        for " in source_of(compiled)


WEIGHTS = [Value(0.5), Value(-1.5)]


def small(xs: list[Value]) -> Value:
    outs = [(x * WEIGHTS[0]).tanh() for x in xs]  # blocks of two operations
    total = outs[0]
    for o in outs[1:]:
        total = total + o
    return total


def mostly_other(xs: list[Value]) -> Value:
    w = WEIGHTS
    model = [((x * w[0] + w[1]).tanh() * w[1] + w[0]).relu() * w[0] - w[1] for x in xs[:2]]  # 8 a copy
    rest = model[0] * model[1]
    for _ in range(100):  # and 200 operations that do not repeat back to back
        rest = rest * w[0] + xs[0]
    return rest


@pytest.mark.parametrize("f", [small, mostly_other])
def test_small_blocks_or_blocks_that_are_a_small_part_of_the_program_stay_straight_line(
    f: Callable[..., Value], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VJPGRAD_CACHE", "0")  # the thresholds are the code's own: the cache's key does not say them
    xs = [Value(float(k) - 2.5) for k in range(5)]
    assert not folded(f, xs)
    monkeypatch.setattr(fold, "SMALLEST", 2)
    monkeypatch.setattr(fold, "SHARE", 0.0)
    assert folded(f, xs)  # they are blocks: the thresholds alone kept them straight-line


# ---- the cache ---------------------------------------------------------------------------------------


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("VJPGRAD_CACHE_DIR", str(folder))
    monkeypatch.delenv("VJPGRAD_CACHE", raising=False)
    return folder


def test_the_cache_stores_the_blocks_with_the_code_and_a_reverse_pass_written_later_uses_them(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = MLP(2, [3, 1], seed=5)
    eager = gradients(model, lambda: hinge_loss(model, POINTS))
    first = vjpgrad.compile(lambda pts: hinge_loss(model, pts))
    assert [gradients(model, lambda: first(POINTS)) for _ in range(3)] == [eager] * 3
    [stored] = sorted(cache_dir.glob(f"*{_cache.SUFFIX}"))
    payload = _cache.load(stored.name.removesuffix(_cache.SUFFIX))
    assert payload["fold"] == first._last.program.table != ()
    detected: list[Any] = []
    real = fold.detect
    monkeypatch.setattr(
        fold, "detect", lambda *given, table=None, **rest: detected.append(table) or real(*given, table=table, **rest)
    )
    again = vjpgrad.compile(lambda pts: hinge_loss(model, pts))
    assert [gradients(model, lambda: again(POINTS)) for _ in range(2)] == [eager] * 2  # loaded: nothing found
    assert detected == []
    source_of(again)  # the writer, made now for .source, folds the stored blocks: it does not look for them
    assert detected == [payload["fold"]]


def test_the_cache_stores_blocks_apart_and_a_pass_seeded_later_calls_their_functions(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fold, "SMALLEST_CALLED", 8)
    monkeypatch.setattr(fold, "SHARE", 0.0)
    params = [Value(0.5), Value(-0.25), Value(-1.5), Value(0.75)]

    def run(f: Callable[..., Vector], seeded: list[int]) -> list[Any]:
        for p in params:
            p.grad = -0.0
        xs = [Value(x) for x in [-1.5, 0.75, -0.25, 2.0]]
        out = f(xs)
        Vector([out[i] for i in seeded]).backward([1.5] * len(seeded))
        return [bits(v.grad) for v in [*params, *xs]]

    def eager(xs: list[Value]) -> Vector:
        return positions(params, xs)

    first = vjpgrad.compile(eager)
    assert [run(first, [4]) for _ in range(2)] == [run(eager, [4])] * 2
    [stored] = sorted(cache_dir.glob(f"*{_cache.SUFFIX}"))
    payload = _cache.load(stored.name.removesuffix(_cache.SUFFIX))
    assert any(len(starts) == 4 and starts[1] > starts[0] + length for length, starts in payload["fold"])  # apart
    again = vjpgrad.compile(eager)
    assert [run(again, [4]) for _ in range(2)] == [run(eager, [4])] * 2  # loaded
    # a pass seeded elsewhere is written now, from the stored blocks, as the loaded forward pass was
    assert [run(again, [1, 3]) for _ in range(2)] == [run(eager, [1, 3])] * 2
    assert again._last.program.table == payload["fold"]


@pytest.mark.slow  # compiles many recordings
@pytest.mark.parametrize(
    "table",
    [(("a", (0, 9)),), ((1, (0, 1)),), ((8, (0,)),), ((8, (0, 4)),), ((8, (10**9, 10**9 + 8)),), ((5, 3),), 7],
    ids=["text", "short", "one-copy", "overlapping", "far", "pair", "int"],
)
def test_a_stored_table_of_blocks_that_is_not_one_writes_the_code_again(cache_dir: Path, table: Any) -> None:
    model = MLP(2, [3, 1], seed=5)
    eager = gradients(model, lambda: hinge_loss(model, POINTS))
    compiled = vjpgrad.compile(lambda pts: hinge_loss(model, pts))
    [gradients(model, lambda: compiled(POINTS)) for _ in range(2)]
    [stored] = sorted(cache_dir.glob(f"*{_cache.SUFFIX}"))
    key = stored.name.removesuffix(_cache.SUFFIX)
    payload = _cache.load(key)
    assert _cache.store(key, {**payload, "fold": table})
    again = vjpgrad.compile(lambda pts: hinge_loss(model, pts))
    assert [gradients(model, lambda: again(POINTS)) for _ in range(3)] == [eager] * 3
    assert _cache.load(key)["fold"] == payload["fold"]  # written again, whole


# ---- micrograd's demo step ------------------------------------------------------------------------


def demo_loss(model: MLP, points: list[tuple[float, float]], labels: list[int]) -> Value:
    scores = [model(list(p)) for p in points]
    margins = [(1 + -y * s).relu() for y, s in zip(labels, scores, strict=True)]  # type: ignore[operator]
    total = margins[0]
    for m in margins[1:]:
        total = total + m
    reg = sum((p * p for p in model.parameters()), Value(0.0, requires_grad=False))
    return total * (1.0 / len(margins)) + reg * 1e-4


@pytest.mark.slow
def test_micrograd_demo_step_compiled_is_eager_to_the_bit_in_under_ten_thousand_lines() -> None:
    points, labels = make_moons()
    model = MLP(2, [16, 16, 1], seed=1337)
    compiled = vjpgrad.compile(lambda pts: demo_loss(model, pts, labels))
    eager = gradients(model, lambda: demo_loss(model, points, labels))
    assert [gradients(model, lambda: compiled(points)) for _ in range(3)] == [eager] * 3
    assert len(compiled._last.recorded.live) > 65_000  # 222,958 lines when written straight-line
    assert len(source_of(compiled).splitlines()) <= 10_000


@pytest.mark.slow
def test_the_performance_pages_picture_of_the_folded_demo_step_is_current() -> None:
    examples = Path(__file__).resolve().parent.parent / "examples"
    sys.path.insert(0, str(examples))
    import draw_folded_step

    picture = Path(__file__).resolve().parent.parent / "docs" / "explanation" / "folded-demo-step.svg"
    assert draw_folded_step.svg(draw_folded_step.recorded_program()) == picture.read_text(), (
        "run python examples/draw_folded_step.py"
    )


# ---- microgpt's step: each position's block, copies apart ---------------------------------------


@pytest.mark.slow
def test_microgpt_step_compiled_folds_its_positions_apart_and_is_eager_to_the_bit() -> None:
    import gpt

    docs = gpt.load_names()
    uchars = sorted(set("".join(docs)))
    tokens = [len(uchars)] + [uchars.index(ch) for ch in "emma"] + [len(uchars)]
    model = gpt.GPT(len(uchars) + 1)
    eager_step = gpt.make_step_loss(model, as_values=True)  # the same program as the compiled one, run eagerly
    compiled_step = gpt.make_step_loss(model, compiled=True)

    def step_gradients(step: Callable[[list[int]], Value]) -> list[Any]:
        for p in model.parameters():
            p.grad = -0.0
        loss = step(tokens)
        loss.backward()
        return [bits(loss.data)] + [bits(p.grad) for p in model.parameters()]

    eager = step_gradients(eager_step)
    assert [step_gradients(compiled_step) for _ in range(3)] == [eager] * 3
    closure = [cell.cell_contents for cell in compiled_step.__closure__ or ()]
    [compiled] = [x for x in closure if hasattr(x, "_last")]  # the compiled function the step calls
    program = compiled._last.program
    assert isinstance(program, fold.FoldedProgram)
    apart = [block for block in program.blocks if not block.adjacent]
    assert apart
    largest = max(apart, key=lambda block: block.length)
    assert largest.copies == len(tokens) - 1  # one copy per position
    assert sum(block.length * block.copies for block in program.blocks) > 0.6 * len(program.live)


def test_a_folded_program_hands_on_the_glue_values_its_reverse_pass_reads_and_no_others() -> None:
    model = MLP(2, [3, 1], seed=5)
    compiled = vjpgrad.compile(lambda pts: hinge_loss(model, pts))
    for _ in range(2):
        gradients(model, lambda: compiled(POINTS))
    program = compiled._last.program
    assert isinstance(program, fold.FoldedProgram)
    every = frozenset(range(len(program.internal_outputs)))
    tree = ast.parse(program.backward_source(every, checked=True))
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    live = {program.names[id(n)] for n in program.live}
    returned = {program.names[id(program.live[k])] for k in program.internal_outputs}
    kept = {program.names[id(n)] for n in program.kept}
    assert kept == (read & live) | returned
    assert len(kept) < len(live) / 4  # the blocks' values go in their own lists (``_k0``...), not by name


# ---- a small GPT's positions: the code its blocks are written as ---------------------------------


@pytest.mark.parametrize("scale", [1.0, 1e15])
def test_a_small_gpts_folded_positions_write_sums_as_expressions_without_copies_and_keep_eagers_bits(
    scale: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each position's block is a function; a linear layer's products and partial sums are read
    # once and by no reverse pass: written into one expression per output, in eager's order;
    # an addition's operands read their user's gradient where it is instead of copying it, and
    # an input's contributions are added in one statement, a sum of products.
    # With every third weight scaled by 1e15, sums cancel and overflow: the order of every
    # addition shows in the bits (nan and inf included)
    import random

    import gpt

    monkeypatch.setattr(fold, "SMALLEST_CALLED", 32)
    model = gpt.GPT(5, n_embd=4, n_head=2, block_size=8, rng=random.Random(7))
    for k, p in enumerate(model.parameters()):
        p.data = p.data * (scale if k % 3 == 0 else 1.0) + (k % 5) * 0.01
    tokens = [4, 0, 3, 1, 2, 4]
    eager_step = gpt.make_step_loss(model, as_values=True)  # the program the compiled step runs, eagerly
    compiled_step = gpt.make_step_loss(model, compiled=True)

    def step_gradients(step: Callable[[list[int]], Value]) -> list[Any]:
        for p in model.parameters():
            p.grad = -0.0
        loss = step(tokens)
        loss.backward()
        return [bits(loss.data)] + [bits(p.grad) for p in model.parameters()]

    eager = step_gradients(eager_step)
    assert [step_gradients(compiled_step) for _ in range(3)] == [eager] * 3
    closure = [cell.cell_contents for cell in compiled_step.__closure__ or ()]
    [compiled] = [x for x in closure if hasattr(x, "_last")]
    program = compiled._last.program
    assert isinstance(program, fold.FoldedProgram)
    source = source_of(compiled)
    functions = source.split("\ndef ")
    reverse: list[str] = []  # the statements of the blocks' reverse functions
    for k, block in enumerate(program.blocks):
        if block.adjacent:
            continue
        [forward] = [f for f in functions if f.startswith(f"_f{k}(")]
        statements = [line for line in forward.splitlines() if line.startswith("            u")]
        assert len(statements) < block.length / 2  # most operations inside another's expression
        assert any(line.count(" + (") >= 3 for line in statements)  # a sum of products, one line
        for backward in (f for f in functions if f.startswith(f"_b{k}_")):
            reverse += [line.strip() for line in backward.splitlines() if not line.lstrip().startswith("#")]
    # an input's contributions from a layer's outputs, one statement
    assert any(re.fullmatch(r"g_u\d+ = \(g_u\d+ \* [pu]\d+\)( \+ \(g_u\d+ \* [pu]\d+\))+", s) for s in reverse)
    for n, statement in enumerate(reverse):
        if re.fullmatch(r"g_u\d+ = g_u\d+", statement):  # a copy: only before what a max's hits hand
            assert reverse[n + 1].startswith(f"{statement.split()[0]} += ")
            assert "_hits" in reverse[n + 1]


def _read_again(x: Value, c: Value) -> Value:
    """An addition whose second operand is read again by an operation made before it: that
    operand gets another contribution after the addition's, so it cannot share its variable."""
    u = x * 2.0
    v = x * c
    w = v * v
    return (u + v) * w


@pytest.mark.parametrize("unit", ["loop", "glue"])
def test_an_additions_operand_read_again_keeps_a_gradient_variable_of_its_own(
    unit: str, small_blocks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if unit == "glue":  # copies apart, with the pattern between them (a copy's function needs 3 operations)
        monkeypatch.setattr(fold, "SMALLEST_CALLED", 3)

    def f(xs: list[Value], c: Value) -> Value:
        outs = [(x * c + 1.0).tanh() * c for x in xs] if unit == "glue" else [_read_again(x, c) for x in xs]
        total = outs[0]
        for k, out in enumerate(outs[1:]):
            total = total + (_read_again(out, c) if unit == "glue" and k % 2 else out)
        return total

    def run(g: Callable[..., Value]) -> list[Any]:
        xs = [Value(0.5 * k - 1.25) for k in range(6)]
        c = Value(1.5)
        y = g(xs, c)
        y.backward()
        return [bits(y.data), *(bits(x.grad) for x in [*xs, c])]

    compiled = vjpgrad.compile(f)
    assert [run(compiled) for _ in range(3)] == [run(f)] * 3
    assert isinstance(compiled._last.program, fold.FoldedProgram)


# ---- the copies' wiring compared a column at a time ----------------------------------------------

WIRING_PARAMETERS = [Value(0.5), Value(-1.5), Value(2.0)]


def _wired_copies(seed: int) -> tuple[Callable[..., Value], int, int, bool, int]:
    """A function whose recording holds copies of one block of ``length`` operations, each an
    operation reading one earlier value and a parameter, copies that read what the first reads
    but now and then another value of the same kind (the keys stay equal, the wiring differs):
    a value of their own copy, of an earlier copy, of the code before the copies (the glue), an
    argument of their own, the first copy's or another's. With ``apart``, an addition runs
    between the copies. Returns the function, its argument count, the block's length, whether
    the copies are apart, and the number of operations before the first copy."""
    rng = random.Random(seed)
    copies, length, glue = rng.randint(2, 5), rng.randint(3, 7), rng.randint(1, 3)
    apart = rng.random() < 0.5
    # what each operation of the first copy reads: an argument, or a value of its copy or the glue
    plan = [("argument", 0)]
    for o in range(1, length):
        plan.append(("own", rng.randrange(o)) if rng.random() < 0.5 else ("glue", rng.randrange(glue)))

    def varied(kind: str, k: int, o: int) -> tuple[str, int]:
        if rng.random() < 0.8:
            return kind, k
        if kind == "argument":
            return "argument", rng.randrange(copies)  # an argument of another copy's (or its own)
        return rng.choice([("own", rng.randrange(o)), ("earlier", rng.randrange(o)), ("glue", rng.randrange(glue))])

    plans = [[(kind, m if kind == "argument" else k) for kind, k in plan] for m in range(copies)]
    plans[1:] = [[varied(kind, k, o) for o, (kind, k) in enumerate(steps)] for steps in plans[1:]]
    parameter = [rng.randrange(3) for _ in range(length)]

    def f(*xs: Value) -> Value:
        p = WIRING_PARAMETERS
        glued = [xs[0] * p[k % 3] for k in range(glue)]
        made: list[list[Value]] = []
        everything: list[Value] = list(glued)
        for m, steps in enumerate(plans):
            if apart and m:
                everything.append(everything[-1] + glued[0])
            own: list[Value] = []
            for o, (kind, k) in enumerate(steps):
                read = {"argument": xs, "own": own, "glue": glued, "earlier": made[-1] if made else own}[kind]
                own.append(read[k] * p[parameter[o]])
            made.append(own)
            everything += own
        total = everything[0]
        for y in everything[1:]:
            total = total + y
        return total

    return f, copies, length, apart, glue


@pytest.mark.parametrize("seed", range(300))
def test_the_copies_wiring_compared_a_column_at_a_time_is_the_wiring_compared_node_by_node(seed: int) -> None:
    """``fold._wired_alike`` (a column of operand places picked, shifted and compared in C)
    says the copies are wired alike exactly when ``fold._first_difference`` (each copy's wiring
    read node by node) finds no difference, on copies back to back and apart that read their
    own values, an earlier copy's, the glue's, and arguments of their own, shared or swapped;
    and the block cut where ``_first_difference`` says is wired alike in every copy."""
    from vjpgrad import recording
    from vjpgrad.compiler import record

    f, copies, length, apart, glue = _wired_copies(seed)
    compiled = vjpgrad.compile(f)
    compiled(*[Value(0.25 * (m + 1)) for m in range(copies)])
    replay = compiled._last
    assert replay is not None
    recorded = replay.recorded
    live, externals = recorded.live, recorded.externals
    columns = recording.columns_of(live)
    place = {id(node): k for k, node in enumerate(live)}
    external = {id(x): k for k, x in enumerate(externals)}
    arguments = len(record.distinct(recorded.arguments))
    step = length + (1 if apart else 0)
    starts = [glue + m * step for m in range(copies)]
    keys, _ = fold.keys(live, externals, arguments, recorded.constants, recorded.edges, set(), place, columns)
    assert all(keys[s : s + length] == keys[starts[0] : starts[0] + length] for s in starts)  # as Block.of is asked
    alike = fold._wired_alike(starts, length, columns, external, arguments, not apart)
    differs = fold._first_difference(starts, length, live, place, external, arguments, not apart)
    assert alike == (differs == length)
    if 0 < differs < length:  # cut where the copies first differ, every copy is wired alike
        assert fold._first_difference(starts, differs, live, place, external, arguments, not apart) == differs
        assert fold._wired_alike(starts, differs, columns, external, arguments, not apart)


SHORTENED_WEIGHTS = [Value(0.7), Value(-0.4), Value(1.1)]


def _copies_differing_early_and_late(xs: list[Value], ys: list[Value], zs: list[Value]) -> Value:
    """Six copies apart of a block of about 150 operations: copy 2 differs near the block's
    end (it reads its own ``xs`` where the others read ``zs``), copy 4 near its start (it reads
    its ``ys`` again where the others read ``xs``)."""
    w = SHORTENED_WEIGHTS
    total = xs[0] * 0.0
    for c in range(len(xs)):
        h = xs[c] * w[0] * ys[c]
        h = h * (ys[c] if c == 3 else xs[c])
        for _ in range(75):
            h = (h * w[1]).tanh()
        h = h * (xs[c] if c == 1 else zs[c]) * w[2]
        for _ in range(c + 1):  # glue of growing length between the copies: they are apart
            total = total + h
    return total


def test_copies_apart_are_cut_where_any_copy_first_differs_and_keep_eagers_bits() -> None:
    # found by fuzzing compile against eager: the block was cut where the first copy to differ
    # (copy 2, late) differs, and copy 4, which differs earlier, stayed in it and read the
    # wrong inputs: wrong outputs and gradients from the second call on, with no error
    def run(f: Callable[..., Value], call: int) -> list[Any]:
        for w in SHORTENED_WEIGHTS:
            w.grad = 0.0
        xs = [Value(0.3 + 0.1 * k + call) for k in range(6)]
        ys = [Value(-0.5 + 0.2 * k) for k in range(6)]
        zs = [Value(0.9 - 0.15 * k) for k in range(6)]
        out = f(xs, ys, zs)
        out.backward()
        return [bits(out.data)] + [bits(v.grad) for v in SHORTENED_WEIGHTS + xs + ys + zs]

    compiled = vjpgrad.compile(_copies_differing_early_and_late)
    for call in range(1, 5):
        assert run(compiled, call) == run(_copies_differing_early_and_late, call)


def test_code_written_that_its_own_checks_refuse_is_a_clear_error_not_a_crash_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Unreachable with the shipped constants (a back-to-back block of fewer operations than
    # SMALLEST needs SMALLEST_CALLED below it): if the writer ever folds blocks that the loader's
    # check refuses, the call says so, where it used to fail at the replay with "'NoneType' object
    # is not callable". Found by an outside review fuzzing compile.
    monkeypatch.setattr(fold, "SMALLEST", 8)
    monkeypatch.setattr(fold, "SMALLEST_CALLED", 2)
    monkeypatch.setattr(fold, "SHARE", 0.0)
    monkeypatch.setenv("VJPGRAD_CACHE", "0")
    p = Value(0.3)

    def f(xs: list[Value]) -> Value:
        outs = [((x * p).tanh() * 2.0 + p).exp() for x in xs]  # 5 operations a copy, back to back
        total = outs[0]
        for o in outs[1:]:
            total = total + o
        return total

    fast = vjpgrad.compile(f)
    fast([Value(float(k)) for k in range(6)])  # recorded
    with pytest.raises(RuntimeError, match="a bug in vjpgrad"):
        fast([Value(float(k)) for k in range(6)])
