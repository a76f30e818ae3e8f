"""explain: the reverse pass as data and as a table, equal to what backward does."""

from __future__ import annotations

import math
from typing import Any

import pytest
from _helpers import Program, close, programs, run
from hypothesis import example, given
from hypothesis import strategies as st

from vjpgrad import Step, Value, Vector, explain, gradients, log
from vjpgrad.display.notebook import explanation_html


def same(a: float, b: float) -> bool:
    """Exactly equal, nan equal to nan (a random graph can make nan, and nan != nan)."""
    return a == b or (math.isnan(a) and math.isnan(b))


def seed_example() -> tuple[Vector, Vector, Vector, Vector]:
    a, b, c = Vector([1.0, 2.0, 3.0]), Vector([3.0, 4.0, 5.0]), Vector([6.0, 7.0, 8.0])
    return a, b, c, 3 * a + 2 * b * b + log(c)


def test_example_1_step_by_step() -> None:
    a, b, c, y = seed_example()
    e = explain(y, [0.1, 1.0, 0.0001], names={"a": a, "b": b, "c": c})
    assert e.seeds == [("y[0]", 0.1), ("y[1]", 1.0), ("y[2]", 0.0001)]
    # b[1] is used twice in t = (2 * b[1]) * b[1]: it is handed 1 × 2b = 8, then 4 × 2 = 8
    assert [(s.upstream, s.local, s.contribution) for s in e.contributions(b[1])] == [(1.0, 8.0, 8.0), (4.0, 2.0, 8.0)]
    assert e.contributions(b[1])[-1].total == 16.0
    assert e.gradients[c[0]] == 0.1 / 6
    text = str(e)
    assert text.startswith("Seeds (the v of v^T J): y[0] = 0.1, y[1] = 1, y[2] = 0.0001")
    assert "  b[1].grad += 1 × 8 + 4 × 2 = 16" in text
    assert "  c[2].grad += 0.0001 × 0.125 = 1.25e-05" in text


def test_explain_changes_no_grad_and_frees_nothing() -> None:
    a, _, _, y = seed_example()
    explain(y, [0.1, 1.0, 0.0001])
    assert a.grad.data == [0.0, 0.0, 0.0]
    y.backward([0.1, 1.0, 0.0001])  # the graph is still there
    assert a.grad.data == pytest.approx([0.3, 3.0, 0.0003])


def test_every_step_is_upstream_times_local_and_totals_add_up() -> None:
    x = Value(0.5, label="x")
    y = (x * x).sin() * x.exp()
    e = explain(y)
    running: dict[str, float] = {}
    for step in e.steps:
        assert isinstance(step, Step)
        assert step.contribution == step.upstream * step.local
        running[step.operand] = running.get(step.operand, 0.0) + step.contribution
        assert step.total == running[step.operand]
    assert e.gradients[x] == running["x"]
    assert "Nodes:" in str(e)
    assert "  t1 = x * x\n  t2 = sin(t1)\n  t3 = exp(x)\n  y = t2 * t3\n" in str(e)  # as written, left to right


# a program whose gradient is nan: 2 squared eleven times overflows to inf, t - t hands 0 back,
# and 0 * inf is nan (nan != nan, so the comparison must count nan as equal to nan)
NAN_GRADIENT: Program = ([2.0], [(2, k, k) for k in range(11)] + [(1, 11, 11)])


@pytest.mark.slow  # a search of random graphs
@given(programs, st.floats(-3, 3))
@example(NAN_GRADIENT, 1.0)
def test_explain_totals_equal_backward_on_random_graphs(program: Program, seed: float) -> None:
    leaves, nodes = run(program, Value)
    output = nodes[-1]
    if not output.requires_grad:
        return
    e = explain(output, seed)
    output.backward(seed)
    for leaf in leaves:
        assert same(e.gradients.get(leaf, 0.0), leaf.grad)  # the same order of operations, so exactly equal
    if program == NAN_GRADIENT:
        assert math.isnan(leaves[0].grad)  # the example does reach nan


@given(programs, st.lists(st.floats(-3, 3), min_size=4, max_size=4))
@example(NAN_GRADIENT, [1.0, 1.0, 1.0, 1.0])
def test_explain_totals_equal_backward_with_vector_seeds(program: Program, seeds: list[float]) -> None:
    leaves, nodes = run(program, Value)
    outputs = [node for node in nodes[-4:] if node.requires_grad]
    if not outputs:
        return
    y, v = Vector(outputs), seeds[: len(outputs)]
    e = explain(y, v)
    y.backward(v)
    for leaf in leaves:
        assert close(e.gradients.get(leaf, 0.0), leaf.grad, rel=1e-12, abs_tol=1e-12)


def test_explain_refuses_what_backward_refuses() -> None:
    a = Value(1.0)
    y = a * a
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        explain(Vector([y, y]))
    with pytest.raises(ValueError, match="seed has length 1 but the output has length 2"):
        explain(Vector([y, y]), [1.0])
    with pytest.raises(TypeError, match=r"explain\(\) takes a Value or a Vector, got float"):
        explain(3.0)  # type: ignore[arg-type]
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        explain(y)


def test_explain_after_backward_says_what_to_do() -> None:
    x = Value(2.0)
    z = x * x
    z.backward()
    with pytest.raises(RuntimeError, match=r"call explain\(\) before backward\(\), or pass retain_graph=True"):
        explain(z)
    y = x * x
    y.backward(retain_graph=True)
    assert explain(y).gradients[x] == 4.0  # a retained graph explains after backward


def test_an_explanation_is_a_page_and_shows_itself_in_a_notebook() -> None:
    a = Value(3.0, label="<b>a</b>")
    e = explain(a * a)
    page = e.to_html()
    assert page.startswith("<!DOCTYPE html>")
    assert "<b>a</b>" not in page  # a label is text, never markup
    html = e._repr_html_()
    assert html.count('class="vjs-root"') == 1  # the stepper, once
    assert html.count("<table") == 1  # its list of the steps is the only table: one view of the pass
    assert html.count("<tr data-step=") == len(e.steps) + 1  # the seeds, then every step


def test_the_whole_step_list_of_a_vector_with_unnamed_leaves() -> None:
    # Leaves are named x1, x2 in creation order and intermediates t1, t2 in creation order
    # (not in the order the pass finds them); the steps follow the reverse pass: nodes in
    # decreasing creation order, each node's edges in operand order.
    u = Value(3.0)  # x1
    v = Value(2.0)  # x2
    p = v * u  # t1 = 6
    s = u - v  # t2 = 1
    q = p * s  # y[0] = 6
    r = p - v  # y[1] = 4
    e = explain(Vector([q, r]), [1.0, 10.0])
    assert e.seeds == [("y[0]", 1.0), ("y[1]", 10.0)]
    # by hand: y[1] = t1 - x2 runs first (made last), with upstream 10; then y[0] = t1 * t2
    # with upstream 1; then t2 = x1 - x2 with upstream 6 (from y[0]); last t1 = x2 * x1 with
    # upstream 10 + 1 = 11. "total" is the operand's gradient so far.
    assert e.steps == [
        Step(node="y[1]", op="-", upstream=10.0, operand="t1", local=1.0, contribution=10.0, total=10.0),
        Step(node="y[1]", op="-", upstream=10.0, operand="x2", local=-1.0, contribution=-10.0, total=-10.0),
        Step(node="y[0]", op="*", upstream=1.0, operand="t1", local=1.0, contribution=1.0, total=11.0),
        Step(node="y[0]", op="*", upstream=1.0, operand="t2", local=6.0, contribution=6.0, total=6.0),
        Step(node="t2", op="-", upstream=6.0, operand="x1", local=1.0, contribution=6.0, total=6.0),
        Step(node="t2", op="-", upstream=6.0, operand="x2", local=-1.0, contribution=-6.0, total=-16.0),
        Step(node="t1", op="*", upstream=11.0, operand="x2", local=3.0, contribution=33.0, total=17.0),
        Step(node="t1", op="*", upstream=11.0, operand="x1", local=2.0, contribution=22.0, total=28.0),
    ]
    # f = (v u)(u - v) + 10 (v u - v): df/du = v (u - v) + v u + 10 v = 28, df/dv = u (u - v) - v u + 10 u - 10 = 17
    assert (e.gradients[u], e.gradients[v]) == (28.0, 17.0)
    assert (e.gradients[p], e.gradients[s], e.gradients[q], e.gradients[r]) == (11.0, 6.0, 1.0, 10.0)
    assert e.formulas == {"t1": "x2 * x1", "t2": "x1 - x2", "y[0]": "t1 * t2", "y[1]": "t1 - x2"}
    assert e.names == {q: "y[0]", r: "y[1]", u: "x1", v: "x2", p: "t1", s: "t2"}
    assert [s.total for s in e.contributions(v)] == [-10.0, -16.0, 17.0]
    assert (u.grad, v.grad, p.grad) == (0.0, 0.0, 0.0)  # explain changes no .grad


def test_names_and_labels_take_precedence_over_the_numbering() -> None:
    first = Value(1.0)  # named below: not numbered
    second = Value(2.0, label="b")  # a label: not numbered
    third = Value(4.0)  # so this is x1
    t = first * second  # t1
    total = t + third
    total.label = "sum"  # a label: not numbered
    m = total.log()  # t2
    e = explain(m * first, names={"a": first})
    assert e.seeds == [("y", 1.0)]
    assert sorted(e.names.values()) == ["a", "b", "sum", "t1", "t2", "x1", "y"]
    assert (e.names[first], e.names[second], e.names[third]) == ("a", "b", "x1")
    assert (e.names[t], e.names[total], e.names[m]) == ("t1", "sum", "t2")
    assert e.formulas == {"t1": "a * b", "sum": "t1 + x1", "t2": "log(sum)", "y": "t2 * a"}


def test_a_repeated_output_adds_its_seeds() -> None:
    # Vector([y, y]) seeded [1, 2] is 1 * y + 2 * y: x.grad = 3 * dy/dx = 3 * 2x = 12 at x = 2
    x = Value(2.0)
    y = x * x
    e = explain(Vector([y, y]), [1.0, 2.0])
    assert e.gradients[x] == 12.0
    assert e.gradients[y] == 3.0
    assert e.steps[0].upstream == 3.0
    assert e.seeds == [("y[0]", 1.0), ("y[0]", 2.0)]  # one node, one name, both seeds shown
    Vector([y, y]).backward([1.0, 2.0], retain_graph=True)
    assert x.grad == 12.0


def test_a_leaf_that_is_an_output_starts_its_sum_with_its_seed() -> None:
    # y = Vector([a, a * b]) seeded [10, 1]: a.grad = 10 + 1 * b = 13, the seed first, as PyTorch adds it
    a, b = Value(2.0), Value(3.0)
    e = explain(Vector([a, a * b]), [10.0, 1.0], names={"a": a, "b": b})
    assert "  a.grad += 10 (its seed) + 1 × 3 = 13" in str(e).splitlines()
    assert "  a.grad += 10 (its seed) = 10" in str(explain(a, 10.0, names={"a": a})).splitlines()
    assert "10 (its seed) + 1 × 3" in explanation_html(e)  # the table as HTML, without the stepper


def test_a_repeated_output_adds_its_seeds_in_gradients_with_and_without_create_graph() -> None:
    x = Value(2.0)
    y = x * x
    (g,) = gradients(Vector([y, y]), [x], [1.0, 2.0], create_graph=True)
    assert g.data == 12.0
    assert g.requires_grad
    (gg,) = gradients(g, [x])  # d/dx of 3 * 2x is 6
    assert gg.data == 6.0
    # a seed that is itself a Value is kept on the graph when create_graph=True
    w = Value(5.0)
    (k,) = gradients(Vector([y, y]), [x], [w, 1.0], create_graph=True)
    assert k.data == 6.0 * 2.0 * 2.0  # (5 + 1) * 2x
    (dk_dw,) = gradients(k, [w])
    assert dk_dw.data == 4.0  # d/dw of (w + 1) * 2x is 2x
    (h,) = gradients(Vector([y, y]), [x], [1.0, 2.0])  # without create_graph (this frees y's graph)
    assert h.data == 12.0


def test_explain_shows_a_masked_edge_as_a_zero_local_derivative() -> None:
    x = Value(-1.0)
    e = explain(x.relu() * 3.0, names={"x": x})
    relu_step = next(s for s in e.steps if s.op == "relu")
    assert (relu_step.local, relu_step.contribution) == (0.0, 0.0)
    y = Value(2.0)
    e = explain(y**0, names={"y": y})
    assert [(s.local, s.contribution) for s in e.steps] == [(0.0, 0.0)]


@pytest.mark.parametrize(
    ("make", "shown"),
    [
        (lambda b: 2.0 + b, "y = 2 + b"),
        (lambda b: 2.0 - b, "y = 2 - b"),
        (lambda b: 2.0 * b, "y = 2 * b"),
        (lambda b: 2.0 / b, "y = t1 * 2"),
        (lambda b: 2.0**b, "y = 2 ** b"),
    ],
)
def test_a_number_on_the_left_of_an_operator_is_the_operand_explain_shows(make: Any, shown: str) -> None:
    b = Value(4.0, label="b")
    assert f"  {shown}" in str(explain(make(b))).splitlines()


def test_names_made_up_for_unlabelled_nodes_never_take_a_label_in_the_graph() -> None:
    """A Value labelled ``t1`` or ``x1`` keeps that name alone: the unlabelled nodes and leaves are
    named ``t2``, ``x2``... past it, and every node has its own line."""
    from vjpgrad import explain

    x1 = Value(3.0, label="x1")
    other = Value(2.0)  # unlabelled: x1 would be its made-up name
    t1 = (x1 * other).relu()
    t1.label = "t1"
    y = t1 * x1 + other  # the product: t1 would be its made-up name
    e = explain(y)
    assert len(e.formulas) == 4
    assert e.formulas["t1"] == "relu(t2)"
    named = [line.split(".grad")[0].strip() for line in str(e).split("handed:\n")[1].splitlines()]
    assert sorted(named) == ["x1", "x2"]


def test_an_unlabelled_output_is_not_named_y_beside_a_node_labelled_y() -> None:
    from vjpgrad import explain

    y = Value(2.0, label="y")
    e = explain((y * 3).exp())
    assert len(set(e.names.values())) == len(e.names)
    assert e.formulas["t1"] == "y * 3"
    assert [name for name, _ in e.seeds] == ["t2"]


def test_the_table_of_a_large_pass_is_written_in_one_walk_of_its_steps() -> None:
    """The sums under the table take each leaf's steps from one walk of the steps, not one walk per
    leaf: a pass of a product with a weight of 8,000 elements took 4 s to print, a one-sample
    ``nn.Linear(784, 32)`` MLP's 10 s, a batch of 64 of it did not finish in five minutes."""
    from vjpgrad.display import text

    xs = [Value(0.5 + k / 100) for k in range(400)]
    e = explain(sum((x * x for x in xs), Value(0.0, requires_grad=False)))

    class Counted(list):  # type: ignore[type-arg]
        walks = 0

        def __iter__(self) -> Any:
            Counted.walks += 1
            return super().__iter__()

    counted = Counted(e.steps)
    sums = text.leaf_sums(type(e)(e.seeds, counted, e.gradients, e.names, e.formulas))
    assert len(sums) == 400
    assert sums[0][1] == "1 × 0.5 + 1 × 0.5"  # x0 * x0: x0 handed 1 × x0 twice
    assert Counted.walks <= 2


def test_two_nodes_of_one_label_get_two_names_in_the_table() -> None:
    """Every node of a pass has a name of its own in the explanation: two Values labelled alike (a
    micrograd-style ``label="a"`` given twice) are ``a`` and ``a (2)``, in the order they were made,
    each with its own formula and running total. With one name for two nodes, the table's totals
    seemed to start again and the list of nodes dropped one."""
    x = Value(2.0, label="x")
    first = (x * 3.0).tanh()
    first.label = "a"
    second = (x * 0.5).tanh()
    second.label = "a"
    e = explain(first * second + second)
    names = [e.names[v] for v in (first, second)]
    assert names == ["a", "a (2)"]
    assert "a" in e.formulas
    assert "a (2)" in e.formulas
    assert len(e.formulas) == len(set(e.names.values()) - {"x"})  # every operation listed once, by its own name
    totals = [s.total for s in e.steps if s.operand == "a (2)"]
    assert totals[-1] == e.gradients[second]


def test_bad_names_and_labels_are_type_errors_that_name_them() -> None:
    a = Value(2.0)
    y = a * a
    with pytest.raises(TypeError, match=r"names must map names to Values or Vectors \(\{'a': a\}\), got list"):
        explain(y, names=[a])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a name in names must be a str, got int"):
        explain(y, names={1: a})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="a Value's label must be a str or None, got int"):
        a.label = 7  # type: ignore[assignment]
    assert a.label is None  # refused before anything changed
    a.label = "a"
    del a.label
    assert a.label is None


def test_a_label_with_a_terminal_code_is_written_escaped_and_named_apart_from_its_text() -> None:
    """A label holding a control character (a terminal's colour code) is written as Python writes
    it (``w\\x1b[31m``), as every picture and page writes it: ``print(explain(y))`` wrote the raw
    escape, which turned the terminal red. Written so, it can read as another label typed as that
    text (a backslash, then ``x1b``); the two are two nodes, named apart as two labels alike are."""
    coloured = Value(2.0, label="w\x1b[31m")
    typed = Value(3.0, label="w\\x1b[31m")
    given = Value(1.0)
    e = explain(coloured * typed + given, names={"n\x00": given})
    shown = str(e)
    assert "\x1b" not in shown
    assert "\x00" not in shown
    assert e.names[coloured] == "w\\x1b[31m"
    assert e.names[typed] == "w\\x1b[31m (2)"
    assert len(set(e.names.values())) == len(e.names)
    sums = {line.split(".grad", 1)[0].strip() for line in shown.splitlines() if ".grad +=" in line}
    assert sums == {"w\\x1b[31m", "w\\x1b[31m (2)", "n\\x00"}


@pytest.mark.parametrize(
    "control", ["\r", "\n", "\t", "\x7f", "\x9b", "\u202e", "\u2066", "\u2028", "\u200b", "\ufeff"]
)
def test_a_label_that_moves_the_cursor_or_turns_the_text_is_written_escaped(control: str) -> None:
    """A carriage return in a label overwrote its row of the table in a terminal; a C1 code
    (``\\x9b``, a one-character escape), DEL, a tab, a newline, a line separator and the marks that
    turn the text right to left (U+202E) are written as Python writes them too."""
    a = Value(2.0, label=f"w{control}v")
    shown = str(explain(a * 3.0))
    assert f"w{control}v" not in shown
    assert f"w{ascii(control)[1:-1]}v" in shown
    assert len(shown.splitlines()) == len(str(explain(Value(2.0, label="wv") * 3.0)).splitlines())


def test_a_custom_ops_name_is_written_escaped_in_the_table() -> None:
    """A custom op is named after its function (``__name__``, the user's text): the table's op
    column and the Nodes line wrote its terminal codes and right-to-left marks raw."""
    from vjpgrad import custom_op

    def evil(x: float) -> float:
        return 2.0 * x

    evil.__name__ = "evil\x1b[31m\u202e\u200f"
    op = custom_op(evil)

    @op.derivative
    def _(x: Any, out: Any) -> Any:
        return 2.0

    shown = str(explain(op(Value(3.0, label="x"))))
    assert "\x1b" not in shown
    assert "\u202e" not in shown
    assert "\u200f" not in shown
    assert "evil\\x1b[31m\\u202e\\u200f" in shown


def test_a_named_constant_takes_no_name_from_a_value_the_pass_reaches() -> None:
    """A constant labelled ``t1`` took the made-up name of the pass's first operation, which
    became ``t1 (2)``; a constant labelled ``c`` made before the leaf ``c`` that takes gradient
    kept ``c``, and the leaf, whose gradient the table is about, became ``c (2)``. The pass's own
    Values keep their names; the constant is named apart."""
    a = Value(2.0)
    k = Value(3.0, requires_grad=False, label="t1")
    e = explain((a * a) * k)
    assert "t1 (2)" not in e.formulas
    assert all("(2)" not in name for name in e.names.values())
    constant = Value(5.0, requires_grad=False, label="c")
    c = Value(2.0, label="c")
    e = explain(constant * c)
    assert e.names[c] == "c"
    assert e.formulas["y"] == "c (2) * c"
