"""An index as data: ``F.embedding(token, weight)`` and ``F.cross_entropy(logits, target)`` with a
Value holding the index, each element a ``take`` node of the table.

An int index is structure: the row's own Values (microgpt's ``wte[token_id]``), one recording per
index under ``vjpgrad.compile``. A Value index is data: its number picks the element as the code
runs, so one recording serves every index. Every element not picked is handed exactly 0.0, and the
element picked its gradient added into a zero, as PyTorch's dense embedding gradient
(``index_add_`` into zeros) gives them; the index itself takes none. An index that is not a whole
number in range raises IndexError, eagerly, in a compiled replay and in vmap, before anything
changes.
"""

from __future__ import annotations

import itertools
import math
from typing import Any
from unittest import mock

import pytest
from _helpers import bits
from hypothesis import given, settings
from hypothesis import strategies as st

import vjpgrad
import vjpgrad.nn.functional as F  # noqa: N812  # PyTorch's spelling
from vjpgrad import Value, Vector
from vjpgrad.compiler import fold

try:
    import torch
except ImportError:  # the parity test skips
    torch = None


def index(k: float) -> Value:
    return Value(k, requires_grad=False)


def matrix(rows: int, columns: int, start: float = 0.5) -> list[list[Value]]:
    return [[Value(start + 3 * i + j * 0.25) for j in range(columns)] for i in range(rows)]


# ---- eager: what the functions return ------------------------------------------------------------


def test_an_int_index_returns_the_rows_own_values_and_makes_no_node() -> None:
    weight = matrix(3, 2)
    row = F.embedding(2, weight)
    assert all(a is b for a, b in zip(row, weight[2], strict=True))


def test_a_value_index_picks_the_same_numbers_with_a_take_node_each() -> None:
    weight = matrix(4, 3)
    row = F.embedding(index(2.0), weight)
    assert [x.data for x in row] == [x.data for x in weight[2]]
    assert [x.op for x in row] == ["take"] * 3
    assert all(x.requires_grad for x in row)


def test_the_gradient_goes_to_the_row_picked_and_exactly_0_to_the_others() -> None:
    weight = matrix(3, 2)
    for p in weight[0]:
        p.grad = -0.0  # a -0.0 turns 0.0: the others are handed +0.0, as PyTorch's dense gradient adds
    row = F.embedding(index(1.0), weight)
    (row[0] * 2.0 + row[1] * math.inf).backward()
    assert [p.grad for p in weight[1]] == [2.0, math.inf]
    assert [bits(p.grad) for p in weight[0] + weight[2]] == [bits(0.0)] * 4  # not inf * 0 = nan


def test_the_picked_element_gets_its_gradient_added_into_a_zero_as_pytorchs_embedding_gives_it() -> None:
    # embedding_dense_backward: zeros, then index_add_: an upstream -0.0 arrives as 0.0
    weight = matrix(2, 1)
    row = F.embedding(index(1.0), weight)
    unpicked, picked = vjpgrad.gradients(row[0], [weight[0][0], weight[1][0]], -0.0, retain_graph=True)
    assert (bits(unpicked.data), bits(picked.data)) == (bits(0.0), bits(0.0))
    assert vjpgrad.gradients(row[0], [weight[1][0]], -2.5)[0].data == -2.5


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_differentiable_pass_picks_the_element_the_forward_picked_even_if_the_index_changed_since(
    create_graph: bool,
) -> None:
    # as every other saved number: the forward's, whatever .data was assigned after it
    weight = matrix(3, 1)
    token = index(0.0)
    y = F.embedding(token, weight)[0] * 5.0
    token.data = 2.0
    found = vjpgrad.gradients(y, [weight[0][0], weight[2][0]], create_graph=create_graph)
    assert [g.data for g in found] == [5.0, 0.0]


def test_a_differentiable_pass_through_max_keeps_the_forwards_ties_too() -> None:
    x, y = Value(1.0), Value(3.0)
    top = F.max([x, y]) * 2.0
    x.data = 3.0  # a tie now, not in the forward pass
    assert [g.data for g in vjpgrad.gradients(top, [x, y], create_graph=True)] == [0.0, 2.0]


def test_the_index_takes_no_gradient_even_when_it_asks_for_one() -> None:
    weight = matrix(2, 1)
    asked = Value(1.0)  # requires_grad=True: an index has no derivative, as PyTorch's integer indices
    F.embedding(asked, weight)[0].backward()
    assert bits(asked.grad) == bits(0.0)
    assert weight[1][0].grad == 1.0


def test_cross_entropy_of_a_value_target_is_the_int_targets_loss_and_gradient() -> None:
    for target in range(4):
        by_int = [Value(x) for x in (0.5, -1.25, 3.0, 0.0)]
        by_value = [Value(x) for x in (0.5, -1.25, 3.0, 0.0)]
        loss_int = F.cross_entropy(by_int, target)
        loss_value = F.cross_entropy(by_value, index(float(target)))
        loss_int.backward()
        loss_value.backward()
        assert bits(loss_value.data) == bits(loss_int.data)
        assert [bits(x.grad) for x in by_value] == [bits(x.grad) for x in by_int]


@pytest.mark.parametrize("bad", [-1.0, 3.0, 1.5, math.nan, math.inf, -math.inf, 1e300])
def test_an_index_that_is_no_whole_number_in_range_raises_index_error_naming_it(bad: float) -> None:
    weight = matrix(3, 2)
    with pytest.raises(IndexError, match=r"is not a whole number in range\(3\)"):
        F.embedding(index(bad), weight)
    with pytest.raises(IndexError, match=r"is not a whole number in range\(3\)"):
        F.cross_entropy(weight[0] + [Value(1.0)], index(bad) if bad != 3.0 else index(4.0))


def test_embeddings_other_mistakes_are_named() -> None:
    with pytest.raises(IndexError, match="index 3 is out of range for 3 rows"):
        F.embedding(3, matrix(3, 2))
    with pytest.raises(TypeError, match="index must be an int or a Value, got float"):
        F.embedding(1.0, matrix(3, 2))  # type: ignore[arg-type]  # the mistake tested
    with pytest.raises(ValueError, match="rows differ in length"):
        F.embedding(index(0.0), [[Value(1.0)], [Value(1.0), Value(2.0)]])
    with pytest.raises(ValueError, match="empty weight"):
        F.embedding(index(0.0), [])


def test_an_index_out_of_range_raises_before_any_node_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_node(*_: Any) -> Any:
        raise AssertionError("a node was made before the index was checked")

    monkeypatch.setattr(F, "_shifted_and_log_sum_exp", no_node)  # cross_entropy's first nodes
    monkeypatch.setattr(F, "nary", no_node)  # embedding's take nodes
    with pytest.raises(IndexError):
        F.cross_entropy([Value(1.0), Value(2.0)], index(2.0))
    with pytest.raises(IndexError):
        F.embedding(index(2.0), matrix(2, 1))


@pytest.mark.skipif(torch is None, reason="needs torch (pip install torch)")
def test_embedding_and_cross_entropy_with_value_indices_are_pytorchs_to_the_bit() -> None:
    numbers = [[0.25, -1.5, 3.0], [1e-3, 2.0, -0.0], [7.5, -2.25, 0.125], [0.5, 0.5, -4.0]]
    tokens, target = [2, 0, 2], 1
    weight = [[Value(x) for x in row] for row in numbers]
    rows = [F.embedding(index(float(t)), weight) for t in tokens]
    logits = [sum((r[j] * (j + 1.5) for r in rows), Value(0.0)) for j in range(3)]
    loss = F.cross_entropy(logits, index(float(target)))
    loss.backward()
    w = torch.tensor(numbers, dtype=torch.float64, requires_grad=True)
    embedded = torch.nn.functional.embedding(torch.tensor(tokens), w)  # (3 tokens, 3 columns)
    scale = torch.tensor([1.5, 2.5, 3.5], dtype=torch.float64)
    t_logits = torch.stack([0.0 + sum(embedded[i, j] * scale[j] for i in range(3)) for j in range(3)])
    t_loss = torch.nn.functional.cross_entropy(t_logits.unsqueeze(0), torch.tensor([target]))
    t_loss.backward()
    assert bits(loss.data) == bits(t_loss.item())
    assert w.grad is not None
    assert [[bits(p.grad) for p in row] for row in weight] == [[bits(float(g)) for g in row] for row in w.grad]


# ---- compiled: one recording for every index -------------------------------------------------------


def step(weight: list[list[Value]], tokens: list[Value]) -> Value:
    """A small embedding-and-loss step: each token's row, a running mix, the next token's class."""
    losses = []
    state = [Value(0.0, requires_grad=False)] * len(weight[0])
    for token, target in itertools.pairwise(tokens):
        row = F.embedding(token, weight)
        state = [(s * 0.5 + r).tanh() for s, r in zip(state, row, strict=True)]
        logits = [sum((s * w for s, w in zip(state, rw, strict=True)), Value(0.0)) for rw in weight]
        losses.append(F.cross_entropy(logits, target))
    return Vector(losses).mean()


def gradients_of(run: Any, weight: list[list[Value]], ks: list[int]) -> list[Any]:
    for p in (p for row in weight for p in row):
        p.grad = -0.0
    tokens = list(Vector([float(k) for k in ks], requires_grad=False))
    loss = run(weight, tokens)
    loss.backward()
    return [bits(loss.data)] + [bits(p.grad) for row in weight for p in row]


def test_a_compiled_step_records_once_and_replays_every_index_as_eager_code_does() -> None:
    weight = matrix(4, 3, start=-0.75)
    compiled = vjpgrad.compile(step)
    for ks in ([0, 1, 2, 3], [3, 3, 0, 1], [2, 0, 0, 2], [1, 2, 3, 0]):
        assert gradients_of(compiled, weight, ks) == gradients_of(step, weight, ks)
    assert compiled.times_recorded == 1  # the indices are data: one recording for every name of a length
    assert "_take_position" in compiled.source  # the picks run in the code, not fixed by the recording


def test_an_int_index_is_structure_and_records_again() -> None:
    weight = matrix(3, 2)
    compiled = vjpgrad.compile(lambda k: F.embedding(k, weight)[0] * 2.0)
    assert [compiled(k).data for k in (0, 1, 2)] == [2 * weight[k][0].data for k in range(3)]
    assert compiled.times_recorded == 3


def test_a_replay_with_an_index_out_of_range_raises_and_changes_nothing() -> None:
    weight = matrix(3, 2)
    compiled = vjpgrad.compile(step)
    for _ in range(2):
        gradients_of(compiled, weight, [0, 1, 2])  # recorded, then replayed as code
    before = [p.grad for row in weight for p in row]
    with pytest.raises(IndexError, match=r"index 3.0 is not a whole number in range\(3\)"):
        compiled(weight, list(Vector([0.0, 3.0, 1.0], requires_grad=False)))
    with pytest.raises(IndexError, match=r"index 0.5 is not a whole number in range\(3\)"):
        compiled(weight, list(Vector([0.5, 2.0, 1.0], requires_grad=False)))
    assert [p.grad for row in weight for p in row] == before
    assert compiled.times_recorded == 1


edge = st.sampled_from([0.0, -0.0, 1.5, -2.0, 1e300, -1e300, math.inf, -math.inf, math.nan])
number = st.floats(-4.0, 4.0, allow_nan=False) | edge


@pytest.mark.slow  # random programs compiled: seconds
@settings(max_examples=40, deadline=None)
@given(
    numbers=st.lists(st.lists(number, min_size=3, max_size=3), min_size=3, max_size=3),
    first=st.lists(st.integers(0, 2), min_size=2, max_size=6),
    data=st.data(),
    folded=st.booleans(),
)
def test_compiled_takes_are_eager_to_the_bit_on_random_weights_and_indices(
    numbers: list[list[float]], first: list[int], data: st.DataObject, folded: bool
) -> None:
    # folded: the positions' blocks as small as two operations, so takes run inside folded copies
    second = data.draw(st.lists(st.integers(0, 2), min_size=len(first), max_size=len(first)))
    weight = [[Value(x) for x in row] for row in numbers]
    with (
        mock.patch.object(fold, "SMALLEST", 2 if folded else fold.SMALLEST),
        mock.patch.object(fold, "SMALLEST_CALLED", 2 if folded else fold.SMALLEST_CALLED),
    ):
        compiled = vjpgrad.compile(step)
        gradients_of(compiled, weight, first)  # the recording
        assert gradients_of(compiled, weight, second) == gradients_of(step, weight, second)
        assert gradients_of(compiled, weight, first) == gradients_of(step, weight, first)
    assert compiled.times_recorded == 1


# ---- vmap: an index per sample ----------------------------------------------------------------------


def loss_of(w: list[Any], x: Any, target: Any) -> Any:
    logits = [w[0] * x, w[1] * x, w[2] * x + w[0]]
    return F.cross_entropy(logits, target)


def test_vmap_takes_an_index_per_sample_and_gives_eagers_bits() -> None:
    pytest.importorskip("numpy")
    w, xs, targets = [0.3, -0.2, 0.5], [1.0, 2.0, -1.0, 0.5, -0.0], [0.0, 2.0, 1.0, 2.0, 1.0]
    found = vjpgrad.vmap(vjpgrad.grad(loss_of), in_dims=(None, 0, 0))(w, xs, targets)
    for row, x, t in zip(found.tolist(), xs, targets, strict=True):
        assert [bits(g) for g in row] == [bits(g) for g in vjpgrad.grad(loss_of)(w, x, index(t))]


def test_vmap_names_a_samples_index_out_of_range() -> None:
    pytest.importorskip("numpy")
    per_sample = vjpgrad.vmap(vjpgrad.grad(loss_of), in_dims=(None, 0, 0))
    with pytest.raises(IndexError, match=r"index 3.0 is not a whole number in range\(3\)"):
        per_sample([0.3, -0.2, 0.5], [1.0, 2.0], [0.0, 3.0])


def test_vmap_hands_the_elements_not_picked_exactly_0_as_eager_code_does() -> None:
    pytest.importorskip("numpy")

    def picked(w: list[Any], t: Any) -> Any:
        return F.embedding(t, [[w[0]], [w[1]], [w[2]]])[0] * -1.0

    targets = [0.0, 2.0, 1.0, 2.0]
    found = vjpgrad.vmap(vjpgrad.grad(picked), in_dims=(None, 0))([0.5, math.inf, -0.0], targets)
    for row, t in zip(found.tolist(), targets, strict=True):
        expected = vjpgrad.grad(picked)([0.5, math.inf, -0.0], index(t))
        assert [bits(g) for g in row] == [bits(g) for g in expected]  # +0.0, not -0.0, where not picked


def test_explain_shows_a_take_with_its_index_number_or_label() -> None:
    weight = [[Value(1.0, label="a")], [Value(2.0, label="b")]]
    y = F.embedding(index(1.0), weight)[0] * F.embedding(Value(0.0, requires_grad=False, label="k"), weight)[0]
    shown = str(vjpgrad.explain(y))
    assert "take(1, a, b)" in shown
    assert "take(k, a, b)" in shown
