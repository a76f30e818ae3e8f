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
    assert [leaf.name for leaf in second.leaves] == ["model[2].weight", "model[2].bias"]  # the frozen layer: absent
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
    p, refused = w.passes  # the refused pass is listed, with PyTorch's words, and not replayed
    assert not refused.replayed
    assert "modified by an inplace operation" in (refused.pytorch_error or "")
    w.passes.remove(refused)
    check_verdicts(w)
    assert p.matches, p.summary()
    assert p.leaves[0].replayed == grads(x)


@pytest.mark.parametrize(
    "fill",
    [
        lambda z: z[0].zero_(),
        lambda z: z[0].fill_(5.0),
        lambda z: z[:, 1].zero_(),
        lambda z: z[1:].fill_(5.0),
        lambda z: z.__setitem__(0, 0.0),
        lambda z: z.__setitem__((slice(0, 1),), 0.0),
    ],
    ids=["row_zero_", "row_fill_", "column_zero_", "rows_fill_", "row_set_to_a_number", "slice_set_to_a_number"],
)
def test_a_view_filled_in_place_takes_no_gradient_and_its_bases_other_elements_keep_theirs(fill: Any) -> None:
    # PyTorch's CopySlices: the filled elements are constants, the rest of the base passes its
    # gradient on (the whole base had been taken for constants: its .grad all zeros, "reason not known")
    with vjpgrad.watch_torch() as w:
        weights = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        z = weights * 3.0
        fill(z)
        (z * z).sum().backward()
    (p,) = w.passes
    check_verdicts(w)
    assert p.matches, p.summary()
    assert p.leaves[0].replayed == grads(weights)
    assert p.explanation is not None


def test_a_view_filled_with_a_tensor_that_takes_gradient_names_the_fill_for_its_base_too() -> None:
    # PyTorch differentiates fill_ with respect to a tensor value: not replayed, and the base said so,
    # where it said its numbers had changed where the watch could not see
    with vjpgrad.watch_torch() as w:
        weights = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        value = torch.tensor(5.0, requires_grad=True)
        z = weights * 3.0
        z[0].fill_(value)
        z.sum().backward()
    (p,) = w.passes
    assert not p.replayed
    assert "fill_ with a tensor that takes gradient" in (p.reason or ""), p.reason


def test_a_view_filled_in_place_leaves_a_base_not_replayed_as_it_was() -> None:
    # a base the replay did not follow (transpose_ in place) stayed so through a fill of its view,
    # which had made it constants: a wrong gradient, and a reason that named NumPy's memory
    with vjpgrad.watch_torch() as w:
        weights = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        z = weights.clone()
        z.transpose_(0, 1)
        z[0].zero_()
        (z * z).sum().backward()
    (p,) = w.passes
    assert not p.replayed
    assert "transpose_" in (p.reason or "")


def test_an_operation_not_replayed_through_a_view_names_itself_and_its_line_for_the_base_too() -> None:
    """An in-place operation the replay does not reproduce, run through a view (``v[1].fmod_``,
    ``u[1][index] = ...``), changes the view's base too: a pass through the base names that
    operation and its line, not "a tensor made before watch_torch() began" (an outside review
    found the generic reason)."""
    torch.manual_seed(15)
    with vjpgrad.watch_torch() as w:
        x = torch.randn(4, requires_grad=True)
        v = torch.zeros(3, 4) + x
        v[1].fmod_(0.3)
        (v * v).sum().backward()
    (p,) = w.passes
    assert not p.replayed
    assert "fmod_" in p.reason, p.reason
    assert "test_bridge_mechanics.py" in p.reason
    assert "made before watch_torch() began" not in p.reason


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")  # PyTorch's own advice
def test_a_pass_through_gradients_made_with_create_graph_says_second_derivative_not_to_move_the_watch() -> None:
    # the tensor read was made by PyTorch's backward formulas in a pass with create_graph=True, inside
    # the watch: "run the forward pass inside the watch" was advice the learner could not follow
    with vjpgrad.watch_torch() as w:
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (x**3).sum().backward(create_graph=True)
        g = x.grad.clone()
        x.grad = None
        g.sum().backward()
    first, second = w.passes
    assert first.replayed
    assert not second.replayed
    assert "second derivative" in second.reason, second.reason
    assert "run the forward pass inside the watch" not in second.reason
    assert x.grad is not None
    assert x.grad.tolist() == [6.0, 12.0]  # PyTorch's own, as ever


@pytest.mark.parametrize("how", ["autograd_grad", "hessian"])
def test_a_pass_through_gradients_autograd_grad_made_with_create_graph_says_second_derivative(how: str) -> None:
    # torch.autograd.grad(create_graph=True), and torch.autograd.functional's hessian built on it, were
    # listed not replayed, and a pass from their gradients said to run the forward pass inside the watch
    with vjpgrad.watch_torch() as w:
        x = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
        if how == "autograd_grad":
            (g,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
            g[1].backward()
        else:
            torch.autograd.functional.hessian(lambda t: (t**3).sum(), x)
    passes = [p for p in w.passes if not p.replayed]
    assert passes
    for p in passes:
        assert "run the forward pass inside the watch" not in (p.reason or ""), p.reason
        assert "create_graph=True" in (p.reason or ""), p.reason


def test_an_operation_not_replayed_inside_pytorchs_own_code_names_what_the_learner_called() -> None:
    # "PyTorch's unsafe_split at line 10": the learner wrote rnn(seq), never unsafe_split
    torch.manual_seed(3)
    with vjpgrad.watch_torch() as w:
        conv = torch.nn.Conv1d(1, 1, 2)
        conv(torch.randn(1, 1, 4)).sum().backward()
        x = torch.randn(3, requires_grad=True)
        x.norm(p=1).backward()
    in_conv, in_norm = w.passes
    assert "(inside torch.nn.Conv1d)" in (in_conv.reason or ""), in_conv.reason
    assert "(inside torch.Tensor.norm)" in (in_norm.reason or ""), in_norm.reason


def test_a_tensor_made_before_the_watch_still_says_to_run_the_forward_pass_inside_it() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with vjpgrad.watch_torch() as w:
        y.backward()
    (p,) = w.passes
    assert "run the forward pass inside the watch" in p.reason, p.reason
    assert "second derivative" not in p.reason


def test_an_operation_the_watch_runs_out_of_memory_following_says_out_of_memory(monkeypatch: Any) -> None:
    # a MemoryError's message is empty: "MemoryError: " alone told the learner nothing
    from vjpgrad.bridge import watch

    def exhausted(*arguments: Any, **keywords: Any) -> None:
        raise MemoryError()

    monkeypatch.setattr(watch.Watch, "_made", exhausted)
    with vjpgrad.watch_torch() as w:
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
    assert x.grad is not None
    assert x.grad.tolist() == [2.0, 4.0]  # the learner's pass ran as ever
    (p,) = w.passes
    assert not p.replayed
    assert "MemoryError: out of memory" in p.reason, p.reason


@pytest.mark.parametrize("numbers", [[1.0, 1.0, 5.0], [2.0, 3.0, 4.0]], ids=["same numbers", "new numbers"])
def test_a_view_read_after_its_base_changed_in_place_is_the_bases_elements(numbers: list[float]) -> None:
    """A view taken before its base is changed in place (``v = t[:2]; t.mul_(x)``) shows the
    base's new elements, gradient and all, as PyTorch's view does (they share its memory and its
    version counter): the replay reads the view from the base's replayed elements (an outside
    review found it kept the view's old constants: x.grad [0, 0, 0] against PyTorch's [3, 3, 0],
    "the reason is not known", or the pass refused when the numbers changed)."""
    with vjpgrad.watch_torch() as w:
        x = torch.tensor(numbers, dtype=torch.float64, requires_grad=True)
        t = torch.ones(3, dtype=torch.float64)
        v = t[:2]
        t.mul_(x)
        (v * 3).sum().backward()
        column = torch.ones(3, 2, dtype=torch.float64)
        picked = column[:, 1]  # a strided view
        column.mul_(x[:, None])
        (picked * picked).sum().backward()
    check_verdicts(w)
    for p in w.passes:
        assert p.matches, p.summary()


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
    refused = w.passes.pop()  # listed with PyTorch's words, not replayed
    assert (refused.replayed, refused.matches) == (False, False)
    assert "backward through the graph a second time" in (refused.pytorch_error or "")
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


def test_saved_tensors_hooks_that_change_what_backward_reads_are_named_never_claimed_a_match() -> None:
    """Under ``torch.autograd.graph.saved_tensors_hooks``, PyTorch's backward multiplies by what the
    unpack hook returns in place of what the operation saved. A pair that changes the numbers
    (a review: pack doubles them) made the pass differ with "the reason is not known"; the pass
    now names the hooks, as it names a ``register_hook``. A pair that gives the numbers back as
    they were (``save_on_cpu`` on a CPU tensor) is a true match."""
    torch.manual_seed(17)
    with vjpgrad.watch_torch() as w:
        x = torch.randn(3, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):
            y = (x * x).sum()
        y.backward()
        u = torch.randn(3, requires_grad=True)
        with torch.autograd.graph.save_on_cpu():
            z = (u * u).sum()
        z.backward()
    check_verdicts(w)
    changed, kept = w.passes
    assert not changed.matches
    assert grads(x) == (4 * x.detach()).tolist()  # PyTorch's, reading the doubled numbers
    assert changed.leaves[0].replayed == (2 * x.detach()).tolist()  # the replay's: what the operation saw
    summary = changed.summary()
    assert "saved_tensors_hooks" in summary, summary
    assert "unpack hook" in summary, summary
    assert "the reason is not known" not in summary, summary
    assert kept.matches, kept.summary()


def test_pytorchs_own_saved_tensors_hooks_are_not_named_as_a_reason() -> None:
    """``save_on_cpu`` and a non-reentrant ``checkpoint`` give the numbers saved back as they were:
    a pass under them that differs for another reason (an indexed sum's order) named them too,
    and the kernels' paragraph as if a hook of the learner's explained it (a review)."""
    e = 2.0**-53
    seed = torch.tensor([[1.0, -1.0], [e, e]], dtype=torch.float64)
    with vjpgrad.watch_torch() as w:
        x = torch.zeros(1, dtype=torch.float64, requires_grad=True)
        with torch.autograd.graph.save_on_cpu():
            y = x[torch.zeros(2, 2, dtype=torch.long)].t()
        y.backward(seed)
    check_verdicts(w)
    (saved,) = w.passes
    assert not saved.matches, saved.summary()  # the sum's order: 1 + -1 + e + e against PyTorch's
    assert "saved_tensors_hooks" not in saved.summary(), saved.summary()
    assert not saved.learners_cause


def test_the_explanation_of_a_pass_for_some_inputs_shows_only_their_part_of_the_graph() -> None:
    """``y.backward(inputs=[a])`` leaves ``b.grad`` as it was (None), and ``torch.autograd.grad(y,
    [a])`` hands back ``a``'s gradient alone: PyTorch runs only the part of the graph that leads to
    them. The explanation said ``b[0].grad += 1 × 1 = 1`` all the same (a review): it now shows the
    steps into the nodes that lead to the inputs, and their sums alone."""
    with vjpgrad.watch_torch() as w:
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = torch.tensor([3.0, 4.0], requires_grad=True)
        c = torch.tensor([5.0, 6.0], requires_grad=True)
        y = (a * b).sum() + c.exp().sum()
        y.backward(inputs=[a])
        z = (a * b).sum() + c.exp().sum()
        (grad_a,) = torch.autograd.grad(z, [a])
    check_verdicts(w)
    assert b.grad is None
    assert c.grad is None
    for done in w.passes:
        assert done.matches, done.summary()
        explanation = done.explanation
        assert explanation is not None
        shown = str(explanation)
        assert "a[0]" in shown, shown
        assert "a[1]" in shown, shown
        assert not [step for step in explanation.steps if step.operand.startswith(("b[", "c["))], shown
        assert sorted(explanation.names[v] for v in explanation.gradients if v.is_leaf) == ["a[0]", "a[1]"]
        assert "exp" not in shown, shown  # the branch that leads to c alone: PyTorch never runs it
    assert grad_a.tolist() == [3.0, 4.0]


def test_the_explanation_of_a_pass_for_a_tensor_inside_the_graph_shows_its_part() -> None:
    """``y.backward(inputs=[h])`` with ``h`` computed inside the graph: its part was cut away (the
    explanation held no step) while the summary gave ``h.grad`` (a review)."""
    with vjpgrad.watch_torch() as w:
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = torch.tensor([3.0, 4.0], requires_grad=True)
        h = a * b
        y = h.exp().sum() + (a * a).sum()
        y.backward(inputs=[h])
    check_verdicts(w)
    (done,) = w.passes
    assert done.matches, done.summary()
    explanation = done.explanation
    assert explanation is not None
    handed = {step.operand for step in explanation.steps}
    assert {"h[0]", "h[1]"} <= handed, str(explanation)
    assert not [name for name in handed if name.startswith(("a[", "b["))], str(explanation)
    assert [g for v, g in explanation.gradients.items() if explanation.names[v] == "h[0]"] == grads(h)[:1]


def test_a_hook_run_after_grad_accumulates_is_named_by_its_own_registration() -> None:
    torch.manual_seed(16)
    with vjpgrad.watch_torch() as w:
        y = torch.randn(3, requires_grad=True)

        def double(t: Any) -> None:
            t.grad.mul_(2)  # PyTorch's post-accumulate hooks change .grad in place and return None

        y.register_post_accumulate_grad_hook(double)
        (y * y).sum().backward()
    check_verdicts(w)
    (doubled,) = w.passes
    assert not doubled.matches
    assert grads(y) == (2 * (2 * y.detach())).tolist()  # PyTorch's, with the hook
    assert "a hook on y (register_post_accumulate_grad_hook), which the replay does not run" in doubled.summary()
    assert "(register_hook)" not in doubled.summary()


def _bits(t: Any) -> list[int]:
    """Each element of ``t`` as the integer of its bits: equal only where the bits are (nan's
    sign included). torch's own view, not ``.numpy()``: the torch wheel does not need NumPy."""
    flat = t.detach().reshape(-1).contiguous()
    same_size = {torch.float64: torch.int64, torch.float32: torch.int32, torch.float16: torch.int16}
    return list(flat.view(same_size[flat.dtype]).tolist())


@pytest.mark.parametrize(
    "program",
    [
        lambda x: torch.log(x.max() - x.max().detach()),  # an infinite gradient: PyTorch puts it in one place
        lambda x: x.max() * -1.0,
        lambda x: x.min() * -1.0,
        lambda x: x.median() * -1.0,
        lambda x: x.prod(),
        lambda x: x.prod(0) * 3.0,
    ],
)
def test_the_watch_never_changes_a_gradient_pytorch_computes(program: Any) -> None:
    # PyTorch's formulas for max, min, median and prod take another branch where a dispatch mode is
    # active (areAnyTensorSubclassLike): the watch's mode must be off while the real pass runs
    def run() -> Any:
        torch.manual_seed(3)
        x = (torch.rand(6, dtype=torch.float64) + 0.25).requires_grad_()
        program(x).backward()
        return x.grad

    plain = run()
    with vjpgrad.watch_torch():
        watched = run()
    assert _bits(watched) == _bits(plain)


def test_a_grad_pytorch_set_that_the_replay_did_not_reach_is_never_claimed_a_match() -> None:
    with vjpgrad.watch_torch() as w:
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = torch.tensor([3.0, 4.0], requires_grad=True)
        y = a * 2
        with torch.no_grad():
            y.add_(1)  # changed in place outside autograd: PyTorch keeps y's graph, with the new numbers
        (y * b).sum().backward()
        s = torch.tensor(0.5, requires_grad=True)
        z = torch.zeros(2)
        z.fill_(s)  # fill_ with a tensor takes gradient from it
        (a * z).sum().backward()
    changed, filled = w.passes
    assert a.grad is not None
    assert s.grad is not None
    assert not changed.matches
    assert "add_" in changed.summary()
    assert "no_grad" in changed.summary()
    assert not filled.matches
    assert "fill_" in filled.summary()


def test_a_leaf_pytorch_reached_only_through_an_operation_of_zero_gradient_is_compared() -> None:
    # torch.sign gives x a .grad of zeros; the replay, which takes sign for a constant, has zeros too
    with vjpgrad.watch_torch() as w:
        x = torch.tensor([1.5, -2.0, 3.0], requires_grad=True)
        v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (torch.sign(x) * v).sum().backward()
    (p,) = w.passes
    check_verdicts(w)
    assert sorted(leaf.name for leaf in p.leaves) == ["v", "x"]
    assert p.matches, p.summary()
    assert grads(x) == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_indexing_with_a_tensor_a_list_and_a_mask_is_replayed(dtype: Any) -> None:
    torch.manual_seed(16)
    with vjpgrad.watch_torch() as w:
        x = torch.randn(5, dtype=dtype, requires_grad=True)
        x[torch.tensor([0, 2, 2])].pow(2).sum().backward()
        y = torch.randn(4, 3, dtype=dtype, requires_grad=True)
        y[[0, 3]].sum().backward()
        z = torch.randn(6, dtype=dtype, requires_grad=True)
        (z[z > 0] * 3).sum().backward()
        logp = torch.randn(3, 4, dtype=dtype, requires_grad=True)
        target = torch.tensor([1, 0, 3])
        (-logp[torch.arange(3), target]).mean().backward()  # the pick of a hand-written nll_loss
    check_verdicts(w)
    assert all(p.matches for p in w.passes), "\n".join(p.summary() for p in w.passes)
    assert grads(x)[2] == 2 * (2 * x[2].item())
    assert grads(x)[1] == 0.0
    third = torch.tensor(-1 / 3, dtype=dtype).item()  # the mean's 1/3 in the tensor's type
    assert grads(logp) == [third if (i, j) in {(0, 1), (1, 0), (2, 3)} else 0.0 for i in range(3) for j in range(4)]


def test_a_pass_started_through_grad_or_backward_imported_before_the_watch_is_listed_never_missed() -> None:
    """``from torch.autograd import grad, backward`` in a notebook's first cell binds PyTorch's
    functions before the watch swaps them: each pass they start is still seen (at PyTorch's
    engine), run as without the watch, and listed as not replayed, saying why and what to write
    instead; never "No backward pass ran" (an outside review found both passes missed)."""
    from torch.autograd import backward, grad

    def run() -> tuple[list[float], list[float]]:
        x = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
        (g,) = grad((x * x).max(), x)
        backward((x * 3).prod())
        return g.tolist(), grads(x)

    plain = run()
    with vjpgrad.watch_torch() as w:
        watched = run()
    assert watched == plain  # PyTorch's numbers, as without the watch (its max and prod branch on modes)
    assert len(w.passes) == 2
    assert [p.call for p in w.passes] == ["torch.autograd.grad", "backward"]
    for p in w.passes:
        assert not p.replayed
        assert "imported before watch_torch() began" in p.reason, p.reason
        assert "test_bridge_mechanics.py" in p.location
    assert not w.matches
    assert "No backward pass ran" not in w.summary()


def test_a_batch_cut_from_a_dataset_too_large_to_replay_is_replayed() -> None:
    """A dataset of more elements than the watch replays (MNIST's shape, smaller) takes no
    gradient: a batch cut from it (a slice, an index, a DataLoader's, a clone) is constants the
    watch reads from PyTorch's batch, and its pass is replayed (an outside review found every
    such pass refused, naming the dataset). An operation that takes gradient and reads the whole
    dataset is still not replayed, naming it."""
    from torch.utils.data import DataLoader, TensorDataset

    from vjpgrad.bridge.watch import LARGEST

    torch.manual_seed(3)
    with vjpgrad.watch_torch() as w:
        inputs, targets = torch.randn(LARGEST // 2, 3), torch.randn(LARGEST // 2, 1)
        model = torch.nn.Linear(3, 1)
        xb, yb = next(iter(DataLoader(TensorDataset(inputs, targets), batch_size=2)))
        torch.nn.functional.mse_loss(model(xb), yb).backward()
        picked = torch.tensor([5, 17])
        torch.nn.functional.mse_loss(model(inputs[picked]), targets[picked]).backward()
        torch.nn.functional.mse_loss(model(inputs[:2].clone()), targets[:2].clone()).backward()
        (model.weight @ inputs.T).sum().backward()  # 50,000 results, each reading the dataset
        buffer = torch.zeros(LARGEST + 2)
        buffer[:2] = model.bias * 2.0  # gradient written into the dataset-sized tensor: not replayed
        buffer[:2].sum().backward()
    *batches, whole, written = w.passes
    for p in batches:
        assert p.matches, p.summary()
    assert not whole.replayed
    assert f"{inputs.numel():,} elements" in whole.reason
    assert not written.replayed
    assert f"{LARGEST + 2:,} elements" in written.reason


def test_a_tensor_made_before_the_watch_is_named_where_it_is_read_and_an_unused_input_needs_none() -> None:
    """A pass from a forward run before the watch began is not replayed, saying which tensor
    (read where) and that it was made before the watch (not three possible causes); an input
    ``torch.autograd.grad`` is given with ``allow_unused`` that the pass never reaches needs no
    history: made before the watch, it is no reason to refuse the pass (an outside review found
    both)."""
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    unused = torch.randn(2, dtype=torch.float64, requires_grad=True)
    loss = (x * x).sum()
    with vjpgrad.watch_torch() as w:
        loss.backward()
        _, gu = torch.autograd.grad((x * 3).sum(), [x, unused], allow_unused=True)
    assert gu is None
    before, after = w.passes
    assert not before.replayed
    assert "made before watch_torch() began" in before.reason
    assert "changed where the watch could not see" not in before.reason
    assert f"test_bridge_mechanics.py:{before.location.rpartition(':')[2]}" in before.reason  # read at the call
    assert after.matches, after.summary()
    assert [leaf.name for leaf in after.leaves] == ["x"]


def test_autograd_grad_runs_as_in_plain_pytorch_and_its_returned_gradients_are_compared() -> None:
    """``torch.autograd.grad`` hands its gradients back instead of adding them into ``.grad``: the
    pass is replayed all the same, and what it returns is compared, element by element, with the
    replay's gradient of each input, as ``.grad`` is after ``backward``."""

    def run() -> Any:
        x = torch.tensor([0.5, 1.0, 0.25], dtype=torch.float64, requires_grad=True)
        return torch.autograd.grad(torch.log(x.max() - x.max().detach()), [x])[0]

    plain = run()
    with vjpgrad.watch_torch() as w:
        watched = run()
    assert _bits(watched) == _bits(plain)  # [0, inf, 0]: the mode's branch would give nan beside inf
    (p,) = w.passes
    assert p.replayed
    assert p.matches, p.summary()
    assert p.summary().startswith("Pass 1: torch.autograd.grad at ")  # not called a backward
    assert p.summary().splitlines()[0].endswith(", seed [1]")  # the seed of a one-element output, as backward's
    assert "x's gradient (returned) = [0, inf, 0]: equal to PyTorch's to the bit (3/3 elements)" in p.summary()
    assert "test_bridge_mechanics.py" in p.location
    assert getattr(torch.autograd.grad, "__self__", None) is None  # given back when the watch ends


def test_an_autograd_grad_pass_explains_its_gradients_as_handed_back_never_added_into_grad() -> None:
    """``torch.autograd.grad`` leaves ``.grad`` alone: its pass's table (text and notebook) says
    each gradient is handed back, and never writes ``x.grad +=``, which a backward's table does."""
    with vjpgrad.watch_torch() as w:
        x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
        torch.autograd.grad((x * x).sum(), [x])
        (x * x).sum().backward()
    returned, added = (p.explanation for p in w.passes)
    assert returned is not None
    assert added is not None
    assert x.grad.tolist() == [1.0, -2.0]  # only the backward added into it
    for shown in (str(returned), returned._repr_html_(), vjpgrad.display.notebook.explanation_html(returned)):
        assert ".grad +=" not in shown, shown
    assert "x[0]'s gradient = 1 × 0.5 + 1 × 0.5 = 1" in str(returned)
    assert "handed back by torch.autograd.grad, not added into .grad" in str(returned)
    assert "x[0].grad += 1 × 0.5 + 1 × 0.5 = 1" in str(added)
    # the stepper's last step says what the leaves' totals are
    assert "handed back by torch.autograd.grad, not added into .grad" in returned.to_html()
    assert "what backward adds to .grad" not in returned.to_html()
    assert "what backward adds to .grad" in added.to_html()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_autograd_grad_of_a_vector_with_a_seed_and_of_an_inner_tensor_is_replayed_to_the_bit(dtype: Any) -> None:
    """The question's VJP by ``torch.autograd.grad(y, x, v)``, a gradient with respect to a tensor
    inside the graph (``h``, not a leaf), several inputs at once, an input the outputs do not use
    (``allow_unused``: None, as PyTorch returns it), and ``.grad`` left as it was."""
    torch.manual_seed(5)
    with vjpgrad.watch_torch() as w:
        x = torch.randn(3, dtype=dtype, requires_grad=True)
        weights = torch.randn(2, 3, dtype=dtype, requires_grad=True)
        unused = torch.randn(2, dtype=dtype, requires_grad=True)
        h = torch.tanh(weights @ x)
        y = h * h.sum() + 1
        v = torch.tensor([0.1, 1.0], dtype=dtype)
        (gx,) = torch.autograd.grad(y, x, v, retain_graph=True)
        gh, gw, gu = torch.autograd.grad(y.sum(), [h, weights, unused], allow_unused=True)
    assert gu is None
    assert x.grad is None  # nothing added into .grad
    assert weights.grad is None
    first, second = w.passes
    assert first.matches, first.summary()
    assert second.matches, second.summary()
    assert [leaf.name for leaf in first.leaves] == ["x"]
    assert [leaf.name for leaf in second.leaves] == ["h", "weights"]  # unused: not reached, None in PyTorch too
    assert first.leaves[0].pytorch == gx.tolist()
    assert second.leaves[0].pytorch == gh.tolist()
    assert second.leaves[1].pytorch == gw.reshape(-1).tolist()


def test_autograd_grad_of_a_leaf_changed_under_no_grad_and_gradchecks_passes_are_compared_where_reached() -> None:
    """A leaf stepped under ``no_grad`` after the forward (a new generation of it for the watch) is
    compared as the pass reached it; ``torch.autograd.gradcheck`` perturbs its input in place the
    same way before it calls ``torch.autograd.grad``: each of its passes is compared, and matches."""
    with vjpgrad.watch_torch() as w:
        x = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
        y = (x * 3.0).sum()
        with torch.no_grad():
            x += 0.5
        (g,) = torch.autograd.grad(y, x)
        t = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda u: (u.sin() * u).sum(), t)
    assert g.tolist() == [3.0, 3.0]
    assert len(w.passes) >= 2
    assert all(p.matches for p in w.passes), "\n".join(p.summary() for p in w.passes)
    assert w.passes[0].leaves[0].replayed == [3.0, 3.0]


@pytest.mark.parametrize("read_again", [False, True], ids=["then backward", "read again, then backward"])
def test_a_leaf_changed_through_data_after_the_forward_is_named_not_replayed(read_again: bool) -> None:
    """``w.data *= 2`` between the forward pass and ``backward``: the change bumps no version, so
    PyTorch's backward multiplies by the new numbers it saved (``[4, 8]``), where the replay had
    the ones it saw (``[2, 4]``, "the reason is not known"). The watch cannot see it happen; it
    sees the numbers changed when it looks again (at the backward, or when the leaf is read
    again), and the pass says so, naming the tensor, never a wrong claim."""
    with vjpgrad.watch_torch() as w:
        w_ = torch.tensor([1.0, 2.0], requires_grad=True)
        y = (w_ * w_).sum()
        w_.data *= 2
        if read_again:
            (w_ + 1.0).sum()  # read after the change: a new generation of w_ for the watch
        y.backward()
        v = torch.tensor([1.0, 2.0], requires_grad=True)  # a step through .data after backward: fine
        for _ in range(2):
            (v * v).sum().backward()
            v.data -= 0.1 * v.grad
            v.grad = None
    assert w_.grad.tolist() == [4.0, 8.0]
    changed, *steps = w.passes
    assert not changed.replayed
    assert not changed.matches
    assert "w_ changed where the watch could not see" in changed.reason, changed.reason
    assert [p.matches for p in steps] == [True, True], [p.summary() for p in steps]


@pytest.mark.parametrize("how", ["numpy", "data"])
def test_a_constant_changed_where_the_watch_could_not_see_is_named_as_the_reason_a_pass_differs(how: str) -> None:
    """A constant an operation read, changed before ``backward`` by no operation the watch saw (through
    NumPy's memory, which ``torch.from_numpy`` shares, or ``.data``): PyTorch's backward multiplies by
    the numbers it saved, which changed with it. The pass may differ, and says why (an outside review
    found "the reason is not known"); the learner's gradient is PyTorch's."""
    numpy = pytest.importorskip("numpy")
    with vjpgrad.watch_torch() as w:
        array = numpy.array([1.0, 2.0, 3.0], dtype=numpy.float32)
        data = torch.from_numpy(array)
        weights = torch.tensor([0.5, 0.5, 0.5], requires_grad=True)
        y = (weights * data).sum()
        if how == "numpy":
            array[0] = 100.0
        else:
            data.data[0] = 100.0
        y.backward()
    assert weights.grad.tolist() == [100.0, 2.0, 3.0]  # PyTorch's, untouched by the watch
    (done,) = w.passes
    assert not done.matches
    summary = done.summary()
    assert "the reason is not known" not in summary
    assert "changed where the watch could not see" in summary, summary


def test_an_intermediate_whose_grad_is_retained_is_compared_as_a_leaf_is() -> None:
    """``h.retain_grad()`` (makemore's backprop ninja keeps the gradients of 19 intermediates so):
    its ``.grad`` after each pass, accumulated as a leaf's is, compared with the replay's
    gradient of ``h``, element by element; an intermediate not retained is not listed."""
    with vjpgrad.watch_torch() as w:
        x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        h = x * x
        h.retain_grad()
        g = h.tanh()  # not retained: no .grad to compare
        (g * torch.tensor([1.0, 2.0, 3.0])).sum().backward(retain_graph=True)
        (h * 3.0).sum().backward()
    first, second = w.passes
    assert [leaf.name for leaf in first.leaves] == ["x", "h"]
    assert all(p.matches for p in w.passes), [p.summary() for p in w.passes]
    assert second.leaves[1].replayed == h.grad.tolist()  # accumulated: the first pass's, plus 3
    assert "h.grad" in second.summary()


def test_a_pass_explains_itself_with_the_names_it_was_summarised_with() -> None:
    """A tensor named ``b`` in a pass and ``old_b`` in a later one (``old_b = b; b = ...``, as
    micrograd's test code keeps ``apt, bpt = a, b``): the first pass's table reads ``b``, as its
    summary does, however late it is printed."""
    with vjpgrad.watch_torch() as w:
        b = torch.tensor([2.0], requires_grad=True)
        (b * b).backward()
        old_b = b
        b = torch.tensor([5.0], requires_grad=True)
        (b * 3 + old_b).backward()
    first, second = w.passes
    assert "b.grad" in first.summary()
    assert "b[0] * b[0]" in str(first.explanation), str(first.explanation)
    assert "old_b" not in str(first.explanation)
    assert "old_b" in str(second.explanation)


def test_the_reasons_a_pass_may_differ_are_said_once_under_its_leaves() -> None:
    """A pass whose leaves differ in several places names what it ran that PyTorch may compute
    otherwise once, under the leaves (each line said "why: below"), not on every leaf's line (a
    makemore pass repeated some 1,000 characters on each); one leaf that differs keeps them inline."""
    from vjpgrad.bridge.passes import LeafReport, Pass

    def leaf(name: str) -> LeafReport:
        return LeafReport(name, (2,), [1.0, 2.0], [1.0, 2.0000000000000004], [0, 1])

    reasons = ["a matrix product: PyTorch's matrix kernels may add in another order", "a sum of many numbers"]
    both = Pass(1, "learner.py:3", [], [1.0], False, leaves=[leaf("W1"), leaf("b1")], reasons=reasons)
    text = both.summary()
    assert all(text.count(reason) == 1 for reason in reasons), text
    assert text.count("(why: below)") == 2
    one = Pass(2, "learner.py:4", [], [1.0], False, leaves=[leaf("W1")], reasons=reasons)
    assert f"({'; '.join(reasons)})" in one.summary()


def test_autograd_grad_with_create_graph_is_listed_not_replayed_saying_why() -> None:
    with vjpgrad.watch_torch() as w:
        x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad((x**3).sum(), x, create_graph=True)
    assert g.tolist() == [3.0, 12.0]
    (p,) = w.passes
    assert not p.replayed
    assert "create_graph=True" in p.summary()


def test_torch_func_grad_is_named_as_the_transform_the_learner_called_not_autograd_grad() -> None:
    from torch.func import grad, vjp

    def loss(x: Any) -> Any:
        return (x**2).sum()

    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    with vjpgrad.watch_torch() as w:
        by_grad = grad(loss)(x)
        _, pullback = vjp(loss, x)
        (by_vjp,) = pullback(torch.tensor(1.0, dtype=torch.float64))
    assert by_grad.tolist() == by_vjp.tolist() == [2.0, 4.0]  # as in plain PyTorch
    assert [p.call for p in w.passes] == ["torch.func", "torch.func"]
    for p in w.passes:
        assert not p.replayed
        assert p.summary().startswith(f"Pass {p.number}: torch.func at ")
        assert "torch.func's transforms (grad, vjp, jacrev, ...) hand their gradients back" in p.summary()
        assert "test_bridge_mechanics.py" in p.location


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_number_over_a_tensor_and_a_vector_times_a_matrix_are_replayed(dtype: Any) -> None:
    # 2 / y is PyTorch's reciprocal, then a product; v @ W ends in squeeze_, in place
    torch.manual_seed(17)
    with vjpgrad.watch_torch() as w:
        y = (torch.rand(40, dtype=dtype) + 0.1).requires_grad_()
        (3.0 / y).pow(2).sum().backward()
        v = torch.randn(7, dtype=dtype, requires_grad=True)
        w_ = torch.randn(7, 5, dtype=dtype, requires_grad=True)
        torch.tanh(v @ w_).sum().backward()
    check_verdicts(w)  # both replayed, each verdict the comparison's
    over, product = w.passes
    assert over.matches, over.summary()
    assert [leaf.name for leaf in product.leaves] == ["v", "w_"]
    v_grad, w_grad = product.leaves
    assert w_grad.matches, product.summary()  # each element one product: no order to differ in
    assert v_grad.matches or "a matrix product" in v_grad.line(product.reasons)  # BLAS's order, said


def test_an_element_no_path_reaches_where_pytorch_multiplies_a_dense_zero_is_said_why() -> None:
    # split's backward, for a part the pass does not use, fills it with 0; the operation before
    # multiplies it: 0 * -1 is -0.0, where the replay, with no path there, has 0.0 (indexing,
    # slicing, select and an embedding hand such an element +0.0 in the replay, as PyTorch does)
    with vjpgrad.watch_torch() as w:
        weight = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
        torch.nn.functional.embedding(torch.tensor([1]), weight * -1.0).sum().backward()
        s = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        torch.split(s * -1.0, 2)[0].sum().backward()
    embedded, split = w.passes
    assert embedded.matches, embedded.summary()  # the rows no index picks: 0 * -1, -0.0, as PyTorch's
    assert _bits(weight.grad)[0] == _bits(torch.tensor([-0.0]))[0]
    assert not split.matches  # (check_verdicts compares lists, where 0.0 == -0.0: the distances say 1 ulp)
    assert "the reason is not known" not in split.summary()
    assert "fills the elements it did not pick with 0" in split.summary()
    with vjpgrad.watch_torch() as w:  # the same with a .grad from an earlier pass, zeroed as a loop does:
        s = torch.tensor([1.0, 4.0, -1.0, 9.0], requires_grad=True)  # sqrt's 0 / (2 * nan) is nan
        torch.split(s.sqrt(), 2)[0].sum().backward()
        s.grad.zero_()
        torch.split(s.sqrt(), 2)[0].sum().backward()
    assert "fills the elements it did not pick with 0" in w.passes[1].summary()


def test_a_softmax_along_a_dimension_not_the_last_says_why_it_may_differ() -> None:
    differing = 0
    for seed in range(40):
        torch.manual_seed(seed)
        with vjpgrad.watch_torch() as w:
            x = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
            torch.softmax(x, dim=0).backward(torch.randn(3, 2, dtype=torch.float64))
        (p,) = w.passes
        differing += not p.matches
        assert p.matches or "a softmax along a dimension that is not the last" in p.summary(), p.summary()
    print(f"{differing} of 40 passes differed")  # some on this machine's PyTorch; how many depends on the processor


def test_a_parameter_a_loop_variable_still_holds_keeps_its_modules_name() -> None:
    torch.manual_seed(18)
    with vjpgrad.watch_torch() as w:
        model = torch.nn.Linear(3, 2)
        x = torch.randn(4, 3)
        for _ in range(2):
            model(x).pow(2).mean().backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
                    p.grad.zero_()
    assert p is model.bias  # the loop's name is still bound to the last parameter
    for done in w.passes:
        assert sorted(leaf.name for leaf in done.leaves) == ["model.bias", "model.weight"]


class _Settings(torch.nn.Module):
    def __init__(self) -> None:  # super().__init__() forgotten: its parameters cannot be read
        self.lr = 0.1


class _Raising(dict):  # type: ignore[type-arg]
    def items(self) -> Any:
        raise RuntimeError("a container of the learner's that cannot be looked into")


@pytest.mark.parametrize("through", ["backward", "autograd.grad"])
def test_an_object_in_scope_that_raises_when_looked_at_never_stops_the_learners_pass(through: str) -> None:
    """The watch names tensors by what the frame holds; an object there that raises when read (a
    module whose ``super().__init__()`` was forgotten, a container of the learner's) is not named,
    and the learner's pass runs as in plain PyTorch (an outside review found it never ran)."""
    settings, kept = _Settings(), _Raising(a=1)
    with vjpgrad.watch_torch() as w:
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        loss = (x * x).sum()
        if through == "backward":
            loss.backward()
            found = x.grad
        else:
            (found,) = torch.autograd.grad(loss, x)
    assert settings.lr == 0.1
    assert kept["a"] == 1
    assert found.tolist() == [2.0, 4.0]
    (done,) = w.passes
    assert done.matches
    assert [leaf.name for leaf in done.leaves] == ["x"]


def test_leaves_kept_in_a_dict_or_a_list_are_named_by_where_they_are_kept() -> None:
    """Parameters kept in a dict (``params["w"]``) or a list of tensors or of modules
    (``layers[0].weight``) are named so in a pass's summary, not "leaf 1 has no name" (an outside
    review found the note's advice did not fit them); a plain name still wins."""
    torch.manual_seed(19)
    with vjpgrad.watch_torch() as w:
        params = {"w": torch.randn(3, requires_grad=True), "b": torch.zeros(1, requires_grad=True)}
        layers = [torch.nn.Linear(3, 3), torch.nn.Linear(3, 1)]
        scales = [torch.ones(1, requires_grad=True)]
        x = torch.randn(4, 3)
        ((x @ params["w"] + params["b"]) * scales[0]).sum().backward()
        layers[1](layers[0](x)).sum().backward()
        bias = params["b"]
        (bias * 2).sum().backward()
        nested = {"layer1": {"w": torch.ones(2, requires_grad=True)}, "more": [[torch.ones(1, requires_grad=True)]]}
        (nested["layer1"]["w"].sum() * nested["more"][0][0]).sum().backward()
    first, second, third, fourth = w.passes
    assert sorted(leaf.name for leaf in fourth.leaves) == ['nested["layer1"]["w"]', 'nested["more"][0][0]']
    assert sorted(leaf.name for leaf in first.leaves) == ['params["b"]', 'params["w"]', "scales[0]"]
    assert sorted(leaf.name for leaf in second.leaves) == [
        "layers[0].bias", "layers[0].weight", "layers[1].bias", "layers[1].weight"
    ]  # fmt: skip
    assert [leaf.name for leaf in third.leaves] == ["bias"]
    assert "has no name" not in w.summary()


def test_a_reason_that_needs_a_nan_is_not_given_for_a_pass_whose_gradients_are_all_finite() -> None:
    """batch_norm's and layer_norm's "a gradient that holds an infinity or a nan" reasons are
    known at the forward pass only as possible; a pass whose gradients are all finite does not
    list them (an outside review found them listed for a finite batchnorm model), and one with a
    nan does."""
    from vjpgrad.bridge.replay import BATCH_NORM_NAN_NOTE, LAYER_NORM_NAN_NOTE

    torch.manual_seed(0)
    with vjpgrad.watch_torch() as w:
        bn, ln = torch.nn.BatchNorm1d(4), torch.nn.LayerNorm(4)
        x = torch.randn(5, 4, requires_grad=True)
        y = ln(bn(x))
        y.backward(torch.randn(5, 4), retain_graph=True)
        seed = torch.randn(5, 4)
        seed[0, 0] = float("nan")
        y.backward(seed)
    finite, with_nan = w.passes
    assert BATCH_NORM_NAN_NOTE not in finite.reasons
    assert LAYER_NORM_NAN_NOTE not in finite.reasons
    assert {BATCH_NORM_NAN_NOTE, LAYER_NORM_NAN_NOTE} <= set(with_nan.reasons)


def test_each_accumulator_of_a_broadcast_bias_sum_has_a_name_of_its_own() -> None:
    """A bias broadcast over a batch of 8 rows or more is summed by PyTorch's kernel in partial
    sums: each is a node with a name of its own in the explanation, so the page draws them apart
    and warns of no shared name (an outside review found every partial sum named as the whole,
    drawn as one node)."""
    torch.manual_seed(0)
    with vjpgrad.watch_torch() as w:
        model = torch.nn.Linear(2, 1)
        model(torch.randn(8, 2)).sum().backward()
    (p,) = w.passes
    assert p.matches, p.summary()
    explanation = p.explanation
    assert explanation is not None
    names = [name for name in explanation.formulas if "model.bias[0] expanded" in name]
    assert len(names) == len(set(names)) > 1
    assert 'data-role="warning"' not in explanation.to_html()


def test_a_change_under_no_grad_through_a_view_is_seen_as_the_same_change_of_its_base() -> None:
    """``p[1:].mul_(2)`` under no_grad between the forward pass and backward is the change
    ``p.mul_(2)`` is: the pass is replayed and equal; a tensor inside the graph changed so is not
    replayed, naming the operation, its line and no_grad (an outside review found "changed where
    the watch could not see" for both)."""
    torch.manual_seed(0)
    with vjpgrad.watch_torch() as w:
        for through_view in (False, True):
            p = torch.randn(4, requires_grad=True)
            c = torch.randn(4)
            y = (p + c).pow(2).sum()  # pow saves p + c: backward does not read p
            with torch.no_grad():
                if through_view:
                    p[1:].mul_(2)
                else:
                    p.mul_(2)
            y.backward()
        x = torch.randn(3, requires_grad=True)
        t = x * 2
        v = t[1:]
        with torch.no_grad():
            v.mul_(3)
        (t * t).sum().backward()
    direct, viewed, inside = w.passes
    assert direct.matches, direct.summary()
    assert viewed.matches, viewed.summary()
    assert not inside.replayed
    assert "mul_" in inside.reason
    assert "torch.no_grad()" in inside.reason


def test_in_place_operations_of_zero_gradient_with_gradients_on_are_replayed() -> None:
    # zero_ and fill_ of a number give the tensor's old graph a zero gradient, as the replay's constants do;
    # fill_ with a tensor that takes no gradient is the same
    with vjpgrad.watch_torch() as w:
        a = torch.tensor([1.5, -2.0, 3.0], requires_grad=True)
        b = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = a * 2
        y.zero_()
        (y * b + a).sum().backward()
        u = a * 3
        u.fill_(torch.tensor(0.5))
        (u * b).sum().backward()
    check_verdicts(w)
    assert all(p.matches for p in w.passes), "\n".join(p.summary() for p in w.passes)


def test_the_watch_leaves_pytorchs_operator_objects_as_they_were() -> None:
    """The replay looks PyTorch's operators up as any code does: calling an ``OpOverloadPacket``'s
    ``__getattr__`` itself made a new operator object in place of the one PyTorch's dispatcher
    holds, and on torch 2.5 the next dispatch of that operator to a mode read a freed object (a
    segmentation fault, at a learner's second ``v @ W`` under the watch)."""
    before = [getattr(torch.ops.aten, name).default for name in ("squeeze_", "mv", "unsqueeze")]
    with vjpgrad.watch_torch() as w:
        v = torch.randn(7, dtype=torch.float64, requires_grad=True)
        m = torch.randn(7, 5, dtype=torch.float64, requires_grad=True)
        torch.tanh(v @ m).sum().backward()
    assert w.passes[0].replayed
    after = [getattr(torch.ops.aten, name).default for name in ("squeeze_", "mv", "unsqueeze")]
    assert all(a is b for a, b in zip(after, before, strict=True))


def test_a_torch_autograd_grad_that_pytorch_refuses_is_listed_with_its_words() -> None:
    with vjpgrad.watch_torch() as w:
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="Mismatch in shape"):
            torch.autograd.grad(x * x, x, torch.ones(3))
    (refused,) = w.passes
    assert not refused.replayed
    assert refused.call == "torch.autograd.grad"
    assert "PyTorch refused it: Mismatch in shape" in refused.summary()


def test_backward_on_a_leaf_itself_compares_its_grad() -> None:
    # x.backward() on a leaf gives x.grad = the seed: that leaf is reached, and compared
    with vjpgrad.watch_torch() as w:
        x = torch.tensor(2.0, requires_grad=True)
        x.backward()
        v = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        v.backward(torch.tensor([3.0, -0.0], dtype=torch.float64))
    check_verdicts(w)
    first, second = w.passes
    assert [leaf.name for leaf in first.leaves] == ["x"]
    assert [leaf.name for leaf in second.leaves] == ["v"]
    assert first.matches, first.summary()
    assert second.matches, second.summary()
    assert "no leaf tensor" not in first.summary() + second.summary()
    assert grads(x) == [1.0]


class _Cube(torch.autograd.Function):
    """PyTorch's tutorial's own autograd.Function: its backward is the learner's code, not an ATen formula."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        ctx.save_for_backward(x)
        return 0.5 * (5 * x**3 - 3 * x)

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        (x,) = ctx.saved_tensors
        return g * 1.5 * (5 * x**2 - 1)


def test_a_custom_autograd_function_is_named_not_replayed_never_given_another_reason() -> None:
    # its forward runs under no_grad, so the watch sees constants; PyTorch's pass runs its backward
    def run() -> tuple[Any, Any]:
        a = torch.full((), 0.25, requires_grad=True)
        b = torch.full((), -1.0, requires_grad=True)
        x = torch.linspace(-1, 1, 5)
        (a + b * _Cube.apply(x * 0.7 + a)).pow(2).sum().backward()
        c = torch.tensor([0.5, 2.0], requires_grad=True)
        _Cube.apply(c).sum().backward()  # read by sum
        d = torch.tensor(0.5, requires_grad=True)
        _Cube.apply(d).backward()  # the output itself is the root of the pass
        return (a, b, c, d), None

    plain, _ = run()
    with vjpgrad.watch_torch() as w:
        watched, _ = run()
    assert [t.grad.tolist() for t in watched] == [t.grad.tolist() for t in plain]
    assert len(w.passes) == 3
    for p in w.passes:
        assert not p.replayed, p.summary()
        assert not p.matches
        assert "_Cube" in p.reason
        assert "autograd.Function" in p.reason
        assert "test_bridge_mechanics.py:" in p.reason


def test_a_backward_pytorch_runs_inside_a_pass_is_not_another_pass_of_the_learner() -> None:
    # a reentrant checkpoint's backward runs the recomputed forward's own torch.autograd.backward
    from torch.utils.checkpoint import checkpoint

    def run() -> Any:
        x = torch.tensor([0.5, 1.5], requires_grad=True)
        checkpoint(lambda t: (t.sin() * t).exp(), x, use_reentrant=True).sum().backward()
        return x.grad

    plain = run()
    with vjpgrad.watch_torch() as w:
        watched = run()
    assert _bits(watched) == _bits(plain)
    (p,) = w.passes
    assert not p.replayed
    assert "CheckpointFunction" in p.reason


def test_backward_given_generators_runs_as_in_plain_pytorch_and_compares_every_leaf() -> None:
    # torch.autograd.backward takes any iterable of outputs, seeds and inputs (inputs=model.parameters())
    def run() -> tuple[Any, Any, Any]:
        torch.manual_seed(2)
        model = torch.nn.Linear(2, 1)
        model(torch.tensor([[1.0, 2.0]])).sum().backward(inputs=model.parameters())
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        losses = [(a * 2).sum(), (a * a).sum()]
        torch.autograd.backward((loss for loss in losses), (torch.tensor(s) for s in (1.0, 0.5)))
        return model.weight, model.bias, a

    plain = run()
    with vjpgrad.watch_torch() as w:
        watched = run()
    assert [_bits(t.grad) for t in watched] == [_bits(t.grad) for t in plain]
    check_verdicts(w)
    first, second = w.passes
    assert sorted(leaf.name for leaf in first.leaves) == ["model.bias", "model.weight"]
    assert [leaf.name for leaf in second.leaves] == ["a"]
    assert first.matches, first.summary()
    assert second.matches, second.summary()


def test_a_pass_on_another_thread_is_listed_not_replayed_and_says_why() -> None:
    """The note's "Multithreading" example: ten threads each run a forward and a backward. The
    watch sees the operations of the thread that entered it alone (PyTorch's dispatch modes are
    each thread's own), so each other thread's pass is listed, not replayed, saying it ran on
    another thread; none is left out or taken for "a tensor made before watch_torch() began", and
    none changes how the threads run or what the watched thread's passes are."""
    import threading

    results: list[float] = []

    def train_fn() -> None:
        x = torch.ones(5, 5, requires_grad=True)
        y = (x + 3) * (x + 4) * 0.5
        y.sum().backward()
        results.append(x.grad.sum().item())

    with vjpgrad.watch_torch() as w:
        threads = [threading.Thread(target=train_fn) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
    assert results == [112.5] * 10
    assert [p.number for p in w.passes] == list(range(1, 12))
    for p in w.passes[:10]:
        assert not p.replayed
        assert "another thread" in p.reason, p.summary()
        assert "made before watch_torch() began" not in p.summary()
    assert w.passes[10].matches, w.passes[10].summary()
    assert grads(x) == [2.0, 4.0]


def test_backward_wrapped_in_a_function_of_the_learners_own_runs_as_without_the_watch() -> None:
    """A ``torch.autograd.backward`` replaced by a function that takes ``*args, **kwargs`` (a
    logger of backward calls) before the watch began: the watch read the arguments by that
    function's signature and raised ``KeyError: 'tensors'`` in the learner's ``backward()``. It
    reads them by PyTorch's own now."""
    real = torch.autograd.backward
    calls: list[int] = []

    def logged(*args: Any, **kwargs: Any) -> None:
        calls.append(len(args))
        real(*args, **kwargs)

    torch.autograd.backward = logged
    try:
        with vjpgrad.watch_torch() as w:
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            (x * x).sum().backward()
            (x * 3).backward(torch.tensor([1.0, 0.5]))
    finally:
        torch.autograd.backward = real
    assert len(calls) == 2
    assert grads(x) == [5.0, 5.5]
    check_verdicts(w)
    assert [p.matches for p in w.passes] == [True, True]


def test_a_modules_backward_hook_is_named_as_the_learner_wrote_it_not_by_pytorchs_internal_function() -> None:
    seen: list[Any] = []
    with vjpgrad.watch_torch() as w:
        act = torch.nn.Tanh()
        act.register_full_backward_hook(lambda module, grad_in, grad_out: seen.append(grad_out))
        x = torch.tensor([0.5, -1.0], requires_grad=True)
        act(x).sum().backward()
    assert seen  # the learner's hook ran
    (done,) = w.passes
    assert not done.replayed
    assert "module's backward hook (register_full_backward_hook)" in done.reason, done.reason
    assert "BackwardHookFunction" not in done.reason


def test_a_watch_inside_another_is_never_said_to_have_changed_a_constant_unseen() -> None:
    """``explain-torch`` on a snippet that enters ``watch_torch()`` itself: the outer watch sees the
    inner one's own tensors made and changed, and an outside review found it blame "NumPy's memory, or
    .data" for a pass that differs (a class whose probability underflows in cross_entropy)."""
    with vjpgrad.watch_torch() as outer, vjpgrad.watch_torch() as inner:
        logits = torch.tensor([[-100.0, -3.0, 0.0, 100.0]], requires_grad=True)
        torch.nn.functional.cross_entropy(logits, torch.tensor([3])).backward()
    for watch in (outer, inner):
        (done,) = watch.passes
        assert "NumPy's memory" not in done.summary(), done.summary()


def test_a_leaf_used_twice_has_its_helpers_named_apart_in_the_explanation() -> None:
    """``w * x + w`` with a scalar ``w``: each use of ``w`` broadcasts it (``w expanded ×3``, from
    ``w from zeros``), two nodes each; in the table each is named apart (``... (2)``), with its own
    formula, so that each name's running total adds up (found by a review as a learner: the totals
    seemed to start again, and the list of nodes held one of each)."""
    w = torch.tensor(2.0, requires_grad=True)
    x = torch.tensor([1.0, 2.0, 3.0])
    with vjpgrad.watch_torch() as watch:
        (w * x + w).sum().backward()
    e = watch.passes[0].explanation
    assert watch.passes[0].matches
    names = list(e.names.values())
    assert len(names) == len(set(names))
    assert len(e.formulas) == sum(1 for v in e.names if not v.is_leaf)
    for name in set(s.operand for s in e.steps):
        totals = [s.total for s in e.steps if s.operand == name]
        parts = [s.contribution for s in e.steps if s.operand == name]
        assert totals[-1] == sum(parts)  # each name's total is what it was handed


def test_an_in_place_change_that_is_not_replayed_is_named_as_the_learner_wrote_it() -> None:
    """``y += 1`` under ``no_grad`` and ``y[idx] = v * 2`` are named as written beside PyTorch's name
    (``add_ or +=``, ``[...] = (index_put_)``), as a refused change in place is: the learner wrote no
    ``add_`` (found by a review as a learner)."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with vjpgrad.watch_torch() as w:
        y = x * 3.0
        with torch.no_grad():
            y += 1
        y.sum().backward()
    assert "PyTorch's add_ or += at" in w.passes[0].reason
    v = torch.tensor([1.0, 2.0], requires_grad=True)
    with vjpgrad.watch_torch() as w:
        y = torch.zeros(4) * v.sum()
        y[torch.tensor([1, 3])] = v * 2
        y.sum().backward()
    assert not w.passes[0].replayed
    assert "PyTorch's [...] = (index_put_) at" in w.passes[0].reason


def run_alone(script: str) -> str:
    """What ``script`` prints, run in a process of its own (a hang there ends in a minute, not the
    suite); it must exit 0."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow  # a process of its own imports torch (about 3 s)
def test_a_watch_entered_again_is_refused_before_it_changes_pytorch() -> None:
    """A second ``with w:`` inside the first took the watch's own ``backward`` for PyTorch's: every
    ``backward()`` then hung, in the process, for good (an outside review). It is refused, and PyTorch
    is left as it was."""
    script = (
        "import torch, vjpgrad\n"
        "before = torch.autograd.backward, torch.autograd.grad\n"
        "w = vjpgrad.watch_torch()\n"
        "with w:\n"
        "    try:\n"
        "        with w:\n"
        "            pass\n"
        "    except RuntimeError as error:\n"
        "        print('refused:', error)\n"
        "    x = torch.ones(2, requires_grad=True)\n"
        "    (x * x).sum().backward()\n"
        "assert (torch.autograd.backward, torch.autograd.grad) == before\n"
        "x = torch.ones(2, requires_grad=True)\n"
        "(x * x).sum().backward()\n"
        "print('passes:', len(w.passes), 'matches:', w.matches, 'grad:', x.grad.tolist())\n"
    )
    printed = run_alone(script)
    assert "refused: this watch_torch() is already on" in printed
    assert printed.splitlines()[-1] == "passes: 1 matches: True grad: [2.0, 2.0]"


@pytest.mark.slow  # a process of its own imports torch (about 3 s)
def test_watches_left_out_of_order_leave_pytorch_as_it_was_and_each_can_be_entered_again() -> None:
    """Two watches exited in another order than entered (``__exit__`` called by hand in a notebook,
    or two threads each with its own): the second restored the first's ``backward`` as PyTorch's,
    and entering the first again then hung every pass (the review of the re-entry fix)."""
    script = (
        "import torch, vjpgrad\n"
        "before = torch.autograd.backward, torch.autograd.grad\n"
        "w1, w2 = vjpgrad.watch_torch(), vjpgrad.watch_torch()\n"
        "w1.__enter__(); w2.__enter__()\n"
        "w1.__exit__(None, None, None)\n"
        "x = torch.tensor(2.0, requires_grad=True)\n"
        "(x * x).backward()  # w2 still watches\n"
        "w2.__exit__(None, None, None)\n"
        "assert (torch.autograd.backward, torch.autograd.grad) == before\n"
        "with w1:\n"
        "    y = torch.tensor(3.0, requires_grad=True)\n"
        "    (y * y).backward()\n"
        "assert (torch.autograd.backward, torch.autograd.grad) == before\n"
        "print(len(w1.passes), len(w2.passes), w1.matches, w2.matches, x.grad.item(), y.grad.item())\n"
    )
    # w2's pass is listed, not replayed: PyTorch's stack of dispatch modes lost w2's when w1's left first
    assert run_alone(script).split() == ["1", "1", "True", "False", "4.0", "6.0"]


def test_the_note_on_the_processors_kernels_is_said_where_an_operation_of_the_pass_may_run_others(
    monkeypatch: Any,
) -> None:
    # on an AVX-512 machine the note came under every pass that differed as the way to a match: after
    # a hook, setting the kernels changes nothing, so it misled (an outside review); left out, it was
    # missing where kernels made other leaves of the pass differ too (the review of that fix). The
    # operations whose kernels may differ name themselves among the pass's reasons: a pass whose
    # every reason is the learner's (a hook) is not sent to other kernels, nor told of a matrix
    # product it has not (a third review); one with a matrix product is, and told of it
    from vjpgrad.bridge import watch as watching

    monkeypatch.setattr(
        watching, "kernels_note", lambda matrix: f"(the kernels' note{', and a product' if matrix else ''})"
    )
    with vjpgrad.watch_torch() as w:
        v = torch.tensor([1.0, 2.0], requires_grad=True)
        v.register_hook(lambda grad: grad * 2)
        (v * v).sum().backward()
        u = torch.tensor([1.0, 2.0], requires_grad=True)
        (u * u).sum().backward()
        m = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        h = m @ torch.tensor([0.5, 0.25])
        h.register_hook(lambda grad: grad * 3)
        h.sum().backward()
    hooked, plain, product = w.passes
    assert not hooked.matches
    said = hooked.summary().splitlines()
    assert any("a hook on v (register_hook)" in line for line in said)
    assert not any("kernels' note" in line or "Where the hook" in line for line in said), said
    assert plain.matches
    assert "the kernels' note" not in plain.summary()  # a pass equal to the bit needs no note
    assert not product.matches
    assert product.summary().splitlines()[-2:] == [
        "  Where the hook or the change named above does not explain a difference:",
        "  (the kernels' note, and a product)",
    ], product.summary()


def test_the_note_on_the_processors_kernels_is_not_said_where_no_operation_of_the_pass_depends_on_them(
    monkeypatch: Any,
) -> None:
    # a sum of many numbers differs by its order whatever the kernels (PyTorch's sum runs its AVX2
    # kernel on an AVX-512 processor too): the note sent the learner to rerun for nothing (a second review)
    from vjpgrad.bridge import watch as watching

    monkeypatch.setattr(watching, "kernels_note", lambda matrix: "(the kernels' note)")
    torch.manual_seed(1)
    a = torch.randn(130, 20, requires_grad=True)
    b = torch.randn(20, requires_grad=True)
    with vjpgrad.watch_torch() as w:
        (a * b).backward(torch.randn(130, 20))
    (p,) = w.passes
    assert not p.matches
    assert "a sum of many numbers" in p.summary()
    assert "the kernels' note" not in p.summary(), p.summary()


class _Plain(torch.Tensor):
    """A subclass of torch.Tensor that changes nothing: its operations return new objects of its class."""


def test_a_tensor_subclass_made_inside_the_watch_is_said_as_such_not_made_before_it() -> None:
    with vjpgrad.watch_torch() as w:
        x = torch.tensor([1.0, 2.0]).as_subclass(_Plain).requires_grad_()
        (x * x).sum().backward()
    (done,) = w.passes
    assert not done.replayed
    assert "_Plain, a subclass of torch.Tensor" in done.summary(), done.summary()
    assert "made before watch_torch() began" not in done.summary()
    assert x.grad is not None
    assert x.grad.tolist() == [2.0, 4.0]  # PyTorch's pass ran as without the watch


@pytest.mark.filterwarnings("ignore:.*is deprecated:DeprecationWarning")  # torch._dynamo's import, not ours
def test_a_torch_compiled_function_under_the_watch_is_said_to_run_uncompiled() -> None:
    """PyTorch turns ``torch.compile`` off while a dispatch mode watches: the function runs as eager
    PyTorch, whose numbers the replay matches, while the learner's run without the watch runs the
    compiled kernels, which fuse and reorder operations (14 of 40 elements of a tanh-exp sum's
    gradient differed in their last bits). The summary says so, naming the line of the call, where
    it claimed only 'equal to PyTorch's to the bit'."""

    @torch.compile
    def loss_fn(x: Any) -> Any:
        return torch.tanh(x).exp().sum()

    x = torch.linspace(-1.0, 1.0, 5, requires_grad=True)
    with vjpgrad.watch_torch() as watch:
        loss_fn(x).backward()  # the compiled call
    said = watch.summary()
    assert watch.matches
    assert "torch.compile: the function called at" in said, said
    assert "ran uncompiled under the watch" in said, said
    assert f"{__file__}:" in said.split("torch.compile", 1)[1], said
    with vjpgrad.watch_torch() as plain:
        torch.tanh(x.detach().requires_grad_()).sum().backward()
    assert "torch.compile" not in plain.summary()


def test_an_input_of_autograd_grad_with_no_name_is_named_by_its_index_in_inputs() -> None:
    """An input the learner's frame has no name for is ``inputs[0]``, as Python indexes it (it was
    'input 1', 'the tensor at position 1 of inputs')."""

    def make() -> Any:
        a, b = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0], requires_grad=True)
        return (a * a).sum() + (b * 2.0).sum(), (a, b)

    with vjpgrad.watch_torch() as watch:
        grads = torch.autograd.grad(*make())
    said = watch.summary()
    assert len(grads) == 2
    assert "inputs[0]'s gradient (returned) = [2, 4]" in said, said
    assert "inputs[1]'s gradient (returned) = [2]" in said, said
    assert "inputs[0] is the tensor at index 0 of the inputs" in said, said


@pytest.mark.filterwarnings("ignore:.*is deprecated:DeprecationWarning")  # torch._dynamo's import, not ours
def test_a_watch_that_saw_a_torch_compiled_call_clears_dynamos_memory_as_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Called first under the watch, a ``torch.compile``'d function stayed uncompiled for the rest
    of the process: Dynamo remembers the code it skipped under the dispatch mode, and after the
    watch the gradients were eager PyTorch's (0 of 40 differed, 14 without the watch; a review's
    case). Leaving a watch that saw one clears that memory (``torch._dynamo.reset()``), so the next
    call compiles; a watch that saw none leaves Dynamo as it was."""
    import torch._dynamo

    resets: list[int] = []
    monkeypatch.setattr(torch._dynamo, "reset", lambda: resets.append(1))

    @torch.compile
    def loss(x: Any) -> Any:
        return torch.tanh(x).exp().sum()

    x = torch.linspace(-2.0, 2.0, 5, requires_grad=True)
    with vjpgrad.watch_torch():
        (x * 2.0).sum().backward()
    assert resets == []
    with vjpgrad.watch_torch():
        loss(x).backward()
    assert resets == [1]
