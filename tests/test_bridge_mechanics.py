"""The examples of PyTorch's "Autograd mechanics" note, replayed under vjpgrad.watch_torch: every
pass that claims to match has each leaf's .grad equal to PyTorch's to the bit, and a pass that
does not match (a hook the replay does not run) says so, with its reason."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import vjpgrad  # noqa: E402


def grads(t: Any) -> list[float]:
    flat: list[float] = t.grad.reshape(-1).tolist()
    return flat


def check_verdicts(w: Any) -> None:
    """Each pass's verdict is the comparison's: claimed equal only where the bits are."""
    for p in w.passes:
        assert p.replayed, p.reason
        for leaf in p.leaves:
            assert leaf.matches == (leaf.pytorch is not None and leaf.replayed == leaf.pytorch)
            assert leaf.matches == all(d == 0 for d in leaf.distances)
        assert p.matches == all(leaf.matches for leaf in p.leaves)


def test_requires_grad_propagates_from_one_operand() -> None:
    torch.manual_seed(11)
    with vjpgrad.watch_torch() as w:
        x = torch.randn(5, 5)
        y = torch.randn(5, 5)
        z = torch.randn(5, 5, requires_grad=True)
        a = x + y
        b = a + z
        (b * b).sum().backward()
    assert not a.requires_grad
    assert b.requires_grad
    (p,) = w.passes
    check_verdicts(w)
    assert p.matches, p.summary()
    assert [leaf.name for leaf in p.leaves] == ["z"]  # x and y take no gradient
    assert p.leaves[0].replayed == grads(z)
    assert p.leaves[0].replayed == (2 * (x + y + z)).reshape(-1).tolist()


def test_locally_disabling_gradients_no_grad_and_a_frozen_part_of_a_model() -> None:
    torch.manual_seed(12)
    with vjpgrad.watch_torch() as w:
        x = torch.randn(4, requires_grad=True)
        with torch.no_grad():
            c = x * 2  # a constant to the pass
        (x * c).sum().backward()
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
        model[0].requires_grad_(False)  # the frozen feature extractor of the note's fine-tuning
        inputs = torch.randn(5, 3)
        model(inputs).pow(2).mean().backward()
    assert not c.requires_grad
    first, second = w.passes
    check_verdicts(w)
    assert first.matches, first.summary()
    assert first.leaves[0].replayed == grads(x) == c.tolist()  # the pass sees c as numbers, never as 2x
    assert [leaf.name for leaf in second.leaves] == ["model.2.weight", "model.2.bias"]  # the frozen layer's are absent
    assert model[0].weight.grad is None
    assert model[0].bias.grad is None
    assert second.leaves[0].matches, second.summary()
    for leaf, parameter in zip(second.leaves, [model[2].weight, model[2].bias], strict=True):
        if leaf.matches:
            assert leaf.replayed == grads(parameter)
        else:  # the bias's gradient sums over the batch, an outer dimension: said, never claimed
            assert leaf.replayed != grads(parameter)
            assert "a sum of many numbers" in leaf.line(second.reasons)
            assert max(d for d in leaf.distances if d is not None) <= 4


def test_in_place_on_a_view_is_replayed_and_pytorchs_refusals_claim_nothing() -> None:
    torch.manual_seed(13)
    with vjpgrad.watch_torch() as w:
        x = torch.randn(2, 3, requires_grad=True)
        with pytest.raises(RuntimeError, match="view of a leaf Variable"):
            x[0].mul_(2)  # PyTorch refuses an in-place change of a leaf's view
        y = x.clone()
        y[0].mul_(3)  # in place through a view of a tensor made from the leaf
        y[:, 1].add_(x[:, 2])
        (y * y).sum().backward()
        s = torch.randn(3, requires_grad=True)
        e = s.exp()
        e.add_(1)  # exp's backward needs its result: PyTorch's version counter catches the change
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            e.sum().backward()
    (p,) = w.passes  # the refused pass is not reported as a replayed one
    check_verdicts(w)
    assert p.matches, p.summary()
    assert p.leaves[0].replayed == grads(x)


def test_retain_graph_and_repeated_backward_accumulate() -> None:
    torch.manual_seed(14)
    with vjpgrad.watch_torch() as w:
        W = torch.randn(3, 3, requires_grad=True)  # noqa: N806 - a weight matrix's usual name
        v = torch.randn(3)
        out = torch.sigmoid(W @ v) * W.sum(dim=0)
        seed = torch.randn(3)
        out.backward(seed, retain_graph=True)
        once = W.grad.clone()
        out.backward(seed, retain_graph=True)
        out.backward(seed)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            out.backward(seed)
    check_verdicts(w)
    assert len(w.passes) == 3, w.summary()
    assert all(p.matches for p in w.passes), w.summary()
    assert [p.retain_graph for p in w.passes] == [True, True, False]
    assert w.passes[0].leaves[0].replayed == once.reshape(-1).tolist()
    assert w.passes[1].leaves[0].replayed == (once + once).reshape(-1).tolist()
    assert w.passes[2].leaves[0].replayed == grads(W)


def test_a_hook_that_changes_a_gradient_is_named_never_claimed_a_match() -> None:
    torch.manual_seed(15)
    with vjpgrad.watch_torch() as w:
        v = torch.randn(3, requires_grad=True)
        handle = v.register_hook(lambda grad: grad * 2)  # the note's example: double the gradient
        (v * v).sum().backward()
        handle.remove()
        x = torch.randn(3, requires_grad=True)
        m = x * 3
        m.register_hook(lambda grad: grad * 2)  # on a tensor inside the graph
        (m * m).sum().backward()
        u = torch.randn(3, requires_grad=True)
        u.register_hook(lambda grad: None)  # a hook that only looks changes nothing: a true match
        (u * u).sum().backward()
    check_verdicts(w)
    on_leaf, inside, looking = w.passes
    assert not on_leaf.matches
    assert not inside.matches
    assert on_leaf.leaves[0].replayed == (2 * v.detach()).tolist()  # the pass without the hook
    assert grads(v) == (2 * (2 * v.detach())).tolist()  # PyTorch's, with it
    assert "a hook on v (register_hook), which the replay does not run" in on_leaf.summary()
    assert "a hook on m (register_hook), which the replay does not run" in inside.summary()
    assert "0/3 elements equal" in inside.summary()
    assert looking.matches, looking.summary()
