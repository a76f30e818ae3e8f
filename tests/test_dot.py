"""to_dot and draw: DOT text that Graphviz reads, safe for any label; rendering when installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vjpgrad import Value, Vector, draw, log, to_dot

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


def test_seeds_are_shown_on_the_outputs() -> None:
    text = to_dot(example(), seed=[0.1, 1.0])
    assert 'label="seed 0.1"' in text
    assert 'label="seed 1"' in text
    with pytest.raises(ValueError, match="seed has length 1 but the output has length 2"):
        to_dot(example(), seed=[1.0])


HOSTILE_LABELS = ['say "hi"', "a {b} | c", "line\nbreak", "<b>bold</b>", "back\\slash", "}; digraph evil {", "-> n0"]


@pytest.mark.parametrize("label", HOSTILE_LABELS)
def test_any_label_text_is_escaped(label: str) -> None:
    x = Value(1.0, label=label)
    text = to_dot(x * 2)
    escaped = label.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    assert f'label="{escaped}\\ndata 1\\ngrad 0"' in text
    if HAS_DOT:  # Graphviz reads exactly the four nodes: x, x * 2, the op, the constant
        result = subprocess.run(["dot", "-Tplain"], input=text, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert sum(line.startswith("node ") for line in result.stdout.splitlines()) == 4


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot is not installed")
def test_graphviz_reads_the_text() -> None:
    result = subprocess.run(
        ["dot", "-Tplain"], input=to_dot(example(), seed=[0.1, 1.0]), capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("graph ")


def test_draw_without_graphviz_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install graphviz \(or pip install -e '\.\[viz\]' in your clone"):
        draw(Value(1.0) * 2, tmp_path / "g.svg")


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
    assert 'label="2 x 0.3333 = 0.6667", fontsize=10' in chain
    assert x.grad == 0.0  # nothing ran backward
    with pytest.raises(ValueError, match="edges must be"):
        to_dot(y, edges="all")


def test_to_dot_refuses_other_types() -> None:
    with pytest.raises(TypeError, match=r"to_dot\(\) takes a Value or a Vector, got list"):
        to_dot([1.0])  # type: ignore[arg-type]
