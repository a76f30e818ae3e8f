"""Seeing a graph and its pass in a notebook and as a picture: the HTML of Value, Vector and
Explanation (escaped), ``to_dot``'s DOT text (safe for any label) and ``draw``'s pictures, with
Graphviz when it is installed.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import _pictures
import pytest
from _helpers import case_1

from vjpgrad import Value, Vector, draw, exp, explain, log, to_dot
from vjpgrad.display import notebook as _display
from vjpgrad.display.dot import SVGDrawing
from vjpgrad.display.notebook import explanation_html, repr_pretty, value_html, vector_html

# ---- notebook HTML -------------------------------------------------------------------------------


HOSTILE = "<script>alert(1)</script>"


needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")


def cells(html: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", html)


def test_value_html_shows_data_grad_op_and_escapes_the_label() -> None:
    a = Value(0.1, label=HOSTILE)
    y = a * 3
    y.backward()
    text = value_html(a)
    assert "<script" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "data <code>0.1</code>" in text
    assert "grad <code>3.0</code>" in text
    assert "a leaf" in text
    assert "made by <code>*</code>" in value_html(y)
    assert "requires no grad" in value_html(Value(1.0, requires_grad=False))
    assert "requires no grad" not in text


def test_vector_html_has_the_tensor_text_and_one_column_per_element() -> None:
    v = Vector([1.0, 2.5, -3.0])
    (v * v).sum().backward()
    text = vector_html(v)
    assert "<pre" in text
    assert "tensor([ 1.0000,  2.5000, -3.0000])" in text
    data_row = re.search(r"<th[^>]*>data</th>(.*?)</tr>", text)
    grad_row = re.search(r"<th[^>]*>grad</th>(.*?)</tr>", text)
    assert data_row
    assert grad_row
    assert cells(data_row[1]) == ["1", "2.5", "-3"]
    assert cells(grad_row[1]) == ["2", "5", "-6"]  # d(sum v^2)/dv = 2v
    assert "Vector of 3 Values" in text


def test_a_long_vector_shows_its_first_and_last_elements() -> None:
    n = 40
    text = vector_html(Vector([float(i) for i in range(n)]))
    header = re.search(r"<tr><th></th>(.*?)</tr>", text)
    assert header
    shown = re.findall(r"<th[^>]*>(.*?)</th>", header[1])
    half = _display.VECTOR_COLUMNS // 2
    assert shown == [str(i) for i in range(half)] + ["&hellip;"] + [str(i) for i in range(n - half, n)]


def test_vector_html_escapes_labels() -> None:
    v = Vector([Value(1.0, label=HOSTILE), Value(2.0)])
    text = vector_html(v)
    assert "<script" not in text
    assert "&lt;script&gt;" in text


def test_explanation_html_has_a_row_per_step_and_each_leafs_sum() -> None:
    a, b, c = Vector([1.0, 2.0, 3.0]), Vector([3.0, 4.0, 5.0]), Vector([6.0, 7.0, 8.0])
    y = 3 * a + 2 * b * b + log(c)
    e = explain(y, [0.1, 1.0, 0.0001], names={"a": a, "b": b, "c": c})
    text = explanation_html(e)
    rows = re.findall(r"<tr>(.*?)</tr>", text)
    assert len(rows) == len(e.steps) + 1  # the header, then one per step
    for row, step in zip(rows[1:], e.steps, strict=True):
        assert cells(row)[1] == step.node
        assert cells(row)[8] == step.operand
        assert float(cells(row)[7]) == pytest.approx(step.contribution, rel=1e-5)
    assert "b[1].grad += 1 × 8 + 4 × 2 = 16" in text  # what str(e) says, with a real ×
    assert "<code>t7 = t4 * b[0]</code>" in text
    assert "y[0] = 0.1, y[1] = 1, y[2] = 0.0001" in text


def test_explanation_html_escapes_names_and_cuts_long_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    x = Value(2.0)
    y = x
    for _ in range(6):
        y = y * x
    text = explanation_html(explain(y, names={HOSTILE: x}))
    assert "<script" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;.grad +=" in text
    monkeypatch.setattr(_display, "TABLE_ROWS", 3)
    cut = explanation_html(explain(y))
    assert len(re.findall(r"<tr>", cut)) == 1 + 3 + 1
    assert "&hellip; 9 more steps" in cut


def test_the_helpers_refuse_the_wrong_type() -> None:
    with pytest.raises(TypeError, match="value_html\\(\\) takes a Value, got float"):
        value_html(1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="vector_html\\(\\) takes a Vector, got list"):
        vector_html([1.0])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="explanation_html\\(\\) takes an Explanation, got str"):
        explanation_html("table")  # type: ignore[arg-type]


class Printer:
    def __init__(self) -> None:
        self.written: list[str] = []

    def text(self, obj: str) -> None:
        self.written.append(obj)


def test_repr_pretty_prints_str_and_stops_at_a_cycle() -> None:
    v = Vector([1.0, 2.0])
    printer = Printer()
    repr_pretty(v, printer, False)
    repr_pretty(v, printer, True)
    assert printer.written == ["tensor([1., 2.])", "Vector(...)"]


# ---- DOT text ------------------------------------------------------------------------------------


HAS_DOT = shutil.which("dot") is not None


def example() -> Vector:
    a, b, c = Vector([1.0, 2.0]), Vector([3.0, 4.0]), Vector([6.0, 7.0])
    y = 3 * a + 2 * b * b + log(c)
    y.backward([0.1, 1.0])
    return y


def test_dot_shows_every_node_its_data_grad_and_op() -> None:
    x = Value(2.0, label="x")
    y = x.exp() * 3
    y.backward()
    text = to_dot(y)
    assert text.startswith("digraph vjpgrad {")
    assert "rankdir=LR" in text
    assert '"x\\ndata 2\\ngrad 22.17"' in text
    assert '[shape=ellipse, label="exp"]' in text
    assert '[shape=ellipse, label="*"]' in text
    assert '[shape=plaintext, label="3"]' in text  # the constant


def test_a_node_two_operations_read_is_drawn_once_with_an_edge_to_each() -> None:
    x = Value(2.0, label="x")
    s = x * x
    y = s.exp() + s  # s is read by exp and by +, which reads exp's result too
    text = to_dot(y)
    assert text.count("shape=box") == 4  # x, s, exp(s), y
    assert text.count('label="data 4\\ngrad 0"') == 1
    assert sorted(re.findall(r"(n\d+) -> (n\d+)_op", text)) == [
        ("n0", "n1"),
        ("n0", "n1"),
        ("n1", "n2"),
        ("n1", "n3"),
        ("n2", "n3"),
    ]


def test_seeds_are_shown_on_the_outputs() -> None:
    text = to_dot(example(), seed=[0.1, 1.0])
    assert 'label="seed 0.1"' in text
    assert 'label="seed 1"' in text
    with pytest.raises(ValueError, match="seed has length 1 but the output has length 2"):
        to_dot(example(), seed=[1.0])


HOSTILE_LABELS = ['say "hi"', "a {b} | c", "line\nbreak", "<b>bold</b>", "back\\slash", "}; digraph evil {", "-> n0"]
ENTITY_LABELS = ["R&amp;D", "x&lt;y", "a & b"]  # Graphviz reads entities in a label: R&amp;D showed as R&D
CONTROL_LABEL = "\x1b[31mred\x1b[0m\x00"  # a terminal's colour codes: no XML may hold them


@pytest.mark.parametrize("label", HOSTILE_LABELS + ENTITY_LABELS)
def test_any_label_text_is_escaped(label: str) -> None:
    x = Value(1.0, label=label)
    text = to_dot(x * 2)
    # a newline is written as Python writes it (one line, as every view writes a label), then DOT's escapes
    escaped = label.replace("\n", "\\n").replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;")
    assert f'label="{escaped}\\ndata 1\\ngrad 0"' in text
    if HAS_DOT:  # Graphviz reads exactly the four nodes: x, x * 2, the op, the constant
        result = subprocess.run(["dot", "-Tplain"], input=text, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert sum(line.startswith("node ") for line in result.stdout.splitlines()) == 4


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("label", ENTITY_LABELS)
def test_graphviz_shows_a_label_as_it_was_written(label: str) -> None:
    svg = subprocess.run(["dot", "-Tsvg"], input=to_dot(Value(1.0, label=label) * 2), capture_output=True, text=True)
    shown = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg.stdout)]
    assert label in shown


def test_control_characters_in_a_label_are_shown_escaped_and_every_svg_and_page_stays_well_formed() -> None:
    import xml.dom.minidom

    x = Value(1.0, label=CONTROL_LABEL)
    y = x * 2
    assert "\\\\x1b[31mred\\\\x1b[0m\\\\x00" in to_dot(y)  # the DOT string shows the escape, backslash doubled
    for page in (draw(y).svg(), explain(y).to_html(), value_html(x), explanation_html(explain(y))):
        assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f]", page)
        assert "\\x1b[31mred" in page
    xml.dom.minidom.parseString(draw(y).svg())  # a saved .svg opens in a browser


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot is not installed")
def test_graphviz_reads_the_text() -> None:
    result = subprocess.run(
        ["dot", "-Tplain"], input=to_dot(example(), seed=[0.1, 1.0]), capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("graph ")


def test_names_tell_vector_elements_apart() -> None:
    a, b = Vector([1.0, 2.0]), Vector([3.0, 4.0])
    text = to_dot(a * b, names={"a": a, "b": b})
    for name in ("a[0]", "a[1]", "b[0]", "b[1]"):
        assert f'label="{name}\\ndata' in text


def test_edges_show_the_local_derivative_or_the_chain_rule() -> None:
    x = Value(3.0)
    y = x * x + x.log()
    local = to_dot(y, names={"x": x}, edges="local")
    assert 'label="3", fontsize=10' in local  # d(x*x)/dx on each of the two edges: the other operand
    assert 'label="0.3333", fontsize=10' in local  # d log(x)/dx = 1/x
    chain = to_dot(y, 2.0, names={"x": x}, edges="chain")
    assert 'label="2 × 0.3333 = 0.6667", fontsize=10' in chain
    assert x.grad == 0.0  # nothing ran backward
    with pytest.raises(ValueError, match="edges must be"):
        to_dot(y, edges="all")


def test_to_dot_refuses_other_types() -> None:
    with pytest.raises(TypeError, match=r"to_dot\(\) takes a Value or a Vector, got list"):
        to_dot([1.0])  # type: ignore[arg-type]


# ---- pictures: draw() and the SVGDrawing it returns ----------------------------------------------


def test_png_without_graphviz_says_how_to_install_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install graphviz \(or pip install -e '\.\[viz\]' in your clone"):
        draw(Value(1.0) * 2, tmp_path / "g.png")
    assert not (tmp_path / "g.png").exists()


def svg_texts(svg: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg)]


def test_draw_without_graphviz_draws_the_graph_in_pure_python(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)  # as if not installed
    x = Value(2.0, label="x")
    w = Value(-3.0, label="w")
    y = (x * w + x).tanh()
    y.backward()  # frees the graph, as micrograd's draw_dot after backward: the picture still draws
    picture = draw(y, tmp_path / "g.svg")
    svg = (tmp_path / "g.svg").read_text()
    assert svg == picture.svg() == picture._repr_svg_().replace(' style="max-width:100%;height:auto"', "", 1)
    assert svg.startswith('<svg class="vjs-picture" xmlns="http://www.w3.org/2000/svg"')
    assert svg.count("<rect") == 5  # x, w, x * w, + x, tanh: one box per Value
    assert svg.count('class="vjs-edge"') == 5  # x and w into the product, it and x into the sum, the sum into tanh
    texts = svg_texts(svg)
    for value in (x, w):  # each leaf's box shows the .grad backward gave it
        assert f"grad {value.grad:.6g}" in texts
    assert "= tanh(t2)" in texts
    assert "= t1 + x" in texts


def test_the_pure_python_picture_labels_edges_and_escapes_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)
    a = Value(3.0, label=HOSTILE)
    y = a * a + log(a)
    svg = draw(y, seed=2.0, edges="chain").svg()
    assert "<script" not in svg
    assert HOSTILE in svg_texts(svg)
    labels = [html.unescape(t) for t in re.findall(r'<text class="vjs-edge-label"[^>]*>(.*?)</text>', svg)]
    assert sorted(labels) == sorted(["2 × 3 = 6", "2 × 3 = 6", "2 × 0.3333 = 0.6667", "2 × 1 = 2", "2 × 1 = 2"])
    assert a.grad == 0.0  # the chain rule was explained, not run


def first_backward() -> Value:
    """The graph of the tutorial's first-backward page: a reaches out through h1 and directly."""
    a = Value(3.0, label="a")
    h1 = a * a
    h1.label = "h1"
    out = h1 + a
    out.label = "out"
    out.backward()
    return out


def mixing() -> tuple[Vector, Vector]:
    """The seeds page's g: three outputs that mix two inputs."""
    x = Vector([1.0, 2.0])
    return Vector([x[0] * x[1], x[0] + x[1], exp(x[0])]), x


def pictures() -> dict[str, str]:
    y, names, seed = case_1()
    g, x = mixing()
    return {
        "case 1": draw(y, seed=seed, names=names).svg(),
        "case 1, chain": draw(y, seed=seed, names=names, edges="chain").svg(),
        "first backward": draw(first_backward()).svg(),
        "seeds, chain": draw(g, seed=[1.0, 0.0, 1.0], names={"x": x}, edges="chain").svg(),
    }


def test_no_edge_of_the_pure_python_picture_runs_behind_a_box_but_its_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)
    for name, svg in pictures().items():
        assert len(_pictures.node_boxes(svg)) == svg.count('<g class="vjs-node '), name
        assert _pictures.edges_behind_boxes(svg) == [], name
    # the direct edge a -> out skips h1's column: it goes round h1's box
    assert ("a", "out", "h1") not in _pictures.edges_behind_boxes(pictures()["first backward"])


def test_edge_labels_sit_on_no_box_and_on_no_other_label(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)
    for name, svg in pictures().items():
        labels = _pictures.label_boxes(svg)
        assert len(labels) == (svg.count('class="vjs-edge"') if "chain" in name else 0), name
        for label, box in labels:
            for node, other in _pictures.node_boxes(svg).items():
                assert not _pictures.overlap(box, other), (name, label, node)
        for k, (label, box) in enumerate(labels):
            for other_label, other in labels[k + 1 :]:
                assert not _pictures.overlap(box, other), (name, label, other_label)
        assert "paint-order:stroke;stroke:#fff" in svg  # a white halo round each label's letters


def test_no_edge_label_sits_on_another_edge(monkeypatch: pytest.MonkeyPatch) -> None:
    # on a crossing, "0 × 1 = 0" could be either edge's: each label stays off every other edge
    monkeypatch.setitem(sys.modules, "graphviz", None)
    for name, svg in pictures().items():
        if "chain" in name:
            assert _pictures.labels_on_other_edges(svg) == [], name


def test_the_outputs_of_a_column_are_drawn_top_to_bottom_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)
    boxes = _pictures.node_boxes(pictures()["seeds, chain"])
    assert boxes["y[0]"][1] < boxes["y[1]"][1] < boxes["y[2]"][1]


def test_the_same_graph_draws_the_same_svg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)
    assert draw(example()).svg() == draw(example()).svg()  # no counters or addresses: a notebook's output is stable


def test_draw_refuses_an_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"writes .svg, .png, .pdf, .dot or .gv files, got 'g.gif'"):
        draw(Value(1.0) * 2, tmp_path / "g.gif")


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot is not installed")
def test_draw_renders_svg_shows_it_inline_and_writes_the_file(tmp_path: Path) -> None:
    pytest.importorskip("graphviz")
    drawing = draw(example(), tmp_path / "g.svg", seed=[0.1, 1.0])
    assert (tmp_path / "g.svg").read_text().lstrip().startswith("<?xml")
    assert "<svg" in drawing._repr_svg_()  # what a notebook shows
    assert drawing.source == to_dot(example(), seed=[0.1, 1.0])


def drawing() -> SVGDrawing:
    a = Value(2.0, label="apple")
    return SVGDrawing(to_dot(a * a + 1))


def test_a_drawing_keeps_its_dot_text_and_saves_it_without_graphviz(tmp_path: Path) -> None:
    d = drawing()
    assert d.source.startswith("digraph")
    assert "apple" in d.source
    assert d.save(tmp_path / "g.dot").read_text() == d.source
    assert "lines of DOT" in repr(d)
    assert "(.png/.pdf need Graphviz)" in repr(d)  # what save() writes without Graphviz is .svg


def test_a_drawing_refuses_bad_input_before_writing(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="takes DOT text"):
        SVGDrawing(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\.svg, \.png, \.pdf, \.dot or \.gv files, got 'g\.jpg'"):
        drawing().save(tmp_path / "g.jpg")
    assert not (tmp_path / "g.jpg").exists()
    with pytest.raises(TypeError, match="got int"):
        drawing().save(3)  # type: ignore[arg-type]


def test_without_the_graphviz_package_rendering_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz now raises ImportError
    with pytest.raises(ImportError, match=r"pip install graphviz \(or pip install -e '\.\[viz\]' in your clone"):
        drawing()._repr_svg_()


def test_without_dot_rendering_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("graphviz")
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot on an empty PATH
    with pytest.raises(ImportError, match="install Graphviz"):
        drawing().save(tmp_path / "g.png")


@needs_dot
def test_a_drawing_renders_inline_svg_and_saves_png(tmp_path: Path) -> None:
    pytest.importorskip("graphviz")
    d = drawing()
    svg = d.svg()
    assert "<svg" in svg
    assert ">apple</text>" in svg
    assert d.svg() is svg  # rendered once
    shown = d._repr_svg_()  # in a notebook: as wide as the cell at most, its proportions kept
    assert re.search(r'<svg[^>]*style="max-width:100%;height:auto"', shown)
    assert shown.replace(' style="max-width:100%;height:auto"', "", 1) == svg
    assert d.save(tmp_path / "g.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "<svg" in d.save(tmp_path / "g.svg").read_text()


@pytest.mark.parametrize("edges", ["chain", "local"])
def test_edges_drawn_after_backward_freed_the_graph_name_draw_not_explain(edges: str) -> None:
    y, _, seed = case_1()
    y.backward(seed)  # no retain_graph: the graph is freed
    for picture in (draw, to_dot):
        with pytest.raises(RuntimeError) as caught:
            picture(y, seed=seed, edges=edges)
        said = str(caught.value)
        assert f"edges={edges!r}" in said
        assert "before backward(), or pass retain_graph=True to backward()" in said
        assert "explain()" not in said  # the learner called draw or to_dot


def test_an_empty_vector_draws_an_empty_picture_of_positive_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)  # the pure-Python picture, which drew a negative width
    svg = draw(Vector([])).svg()
    width, height = (float(n) for n in re.search(r'<svg[^>]* width="([^"]+)" height="([^"]+)"', svg).groups())  # type: ignore[union-attr]
    assert width > 0
    assert height > 0
    assert f'viewBox="0 0 {width:g} {height:g}"' in svg


def test_every_picture_names_apart_two_values_whose_names_print_alike_a_given_name_first() -> None:
    """A label with an escape character (``"\\x1b"``) prints as one typed as that text
    (``"\\\\x1b"``), and a given name as a label: ``to_dot`` drew two boxes of one name, the
    pure-Python picture compared the raw given name with explain's printed one, and explain let
    the label made first keep the name the learner gave another Value. The name given wins; the
    other is named apart, in every view."""
    from vjpgrad.display.dot import _plain_svg

    a, b = Value(2.0, label="\x1b"), Value(3.0, label="\\x1b")
    y = a * b
    titles = re.findall(r'\[shape=box, label="(.*?)\\ndata', to_dot(y))
    assert len(titles) == len(set(titles)) == 2, titles
    c, d = Value(2.0, label="a"), Value(3.0)
    z = c * d
    assert explain(z, names={"a": d}).names[d] == "a"
    assert explain(z, names={"a": d}).names[c] == "a (2)"
    dot = to_dot(z, names={"a": d})
    assert 'label="a\\ndata 3' in dot
    assert 'label="a (2)\\ndata 2' in dot
    e, f = Value(2.0, label="\x1b"), Value(3.0)
    picture = _plain_svg(e * f, None, {"\x1b": f}, "chain")
    boxes = re.findall(r'class="vjs-node[^"]*" data-node="([^"]*)"', picture)
    assert len(boxes) == len(set(boxes)) == 3, boxes


def test_a_picture_without_edges_names_as_explain_does_a_given_name_first() -> None:
    """The pure-Python picture without edges named in graph order with primes: a name given to
    ``p`` went to ``q``, labelled alike and made first, and a given ``x1`` to a leaf it made up a
    name for. A constant labelled as a Value that takes gradient was ``a`` beside ``a`` in explain's
    formula (``a * a``) and ``a (2)`` in to_dot's. Each is named apart alike in every view now."""
    from vjpgrad.display.dot import _plain_svg

    def boxes(picture: str) -> list[str]:
        return re.findall(r'class="vjs-node[^"]*" data-node="([^"]*)"', picture)

    q, p = Value(1.0, label="a"), Value(2.0)
    assert sorted(boxes(_plain_svg(q * p, None, {"a": p}, None))) == ["a", "a (2)", "y"]
    assert explain(q * p, names={"a": p}).names[p] == "a"
    a, b = Value(1.0), Value(2.0)
    named = boxes(_plain_svg(a * b, None, {"x1": b}, None))
    assert sorted(named) == ["x1", "x2", "y"], named
    c, d = Value(5.0, requires_grad=False, label="a"), Value(2.0, label="a")  # d takes gradient: it keeps "a"
    e = explain(c * d)
    assert e.formulas["y"] == "a (2) * a"
    assert e.names[d] == "a"
    assert 'label="a\\ndata 2' in to_dot(c * d, edges="chain")
    assert 'label="a\\ndata 2' in to_dot(c * d)
    assert 'label="a (2)\\ndata 5' in to_dot(c * d)
    assert sorted(boxes(_plain_svg(c * d, None, None, None))) == ["a", "a (2)", "y"]
