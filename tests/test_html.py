"""The stepper page, read as text (no browser): its structure, its data and its escaping."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from html.parser import HTMLParser

import pytest
from _helpers import backward_gradients

from vjpgrad import Explanation, Step, Value, Vector, explain, log
from vjpgrad.display.stepper import json_number, page_data, script_json, stepper_fragment, stepper_html

HOSTILE = "<script>alert(1)</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
NUMBERS = ("upstream", "local", "contribution", "total")


# ---- the four documented cases, as graphs (vjpgrad._cases keeps only their printed output) ----


def case_1() -> tuple[Vector | Value, dict[str, Vector | Value], list[float] | None]:
    a, b, c = Vector([1.0, 2.0, 3.0]), Vector([3.0, 4.0, 5.0]), Vector([6.0, 7.0, 8.0])
    return 3 * a + 2 * b * b + log(c), {"a": a, "b": b, "c": c}, [0.1, 1.0, 0.0001]


def case_2() -> tuple[Vector | Value, dict[str, Vector | Value], list[float] | None]:
    a, b, c = Value(0.1), Value(1.0), Value(0.1)
    return 3 * a + 2 * b * b + log(c), {"a": a, "b": b, "c": c}, None


def case_3() -> tuple[Vector | Value, dict[str, Vector | Value], list[float] | None]:
    a, b, c = Vector.empty(1), Vector.empty(1), Vector.empty(1)
    return 3 * a + 2 * b * b + log(c), {"a": a, "b": b, "c": c}, [0.1, 1.0, 0.0001]


def case_4() -> tuple[Vector | Value, dict[str, Vector | Value], list[float] | None]:
    a, b, c = Value(1.0), Value(1.0), Value(1.0)
    return 3 * a + 2 * b * b + log(c), {"a": a, "b": b, "c": c}, None


CASES = [case_1, case_2, case_3, case_4]
Case = Callable[[], tuple[Vector | Value, dict[str, Vector | Value], list[float] | None]]


def explained(case: Case) -> Explanation:
    y, names, seed = case()
    return explain(y, seed, names=names)


# ---- reading a page ----------------------------------------------------------------------------


class Elements(HTMLParser):
    """Every start tag with its attributes, the text of each script, the text inside each data-node group."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.node_texts: dict[str, list[str]] = {}
        self._script: dict[str, str | None] | None = None
        self._node: str | None = None
        self._in_text = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "script":
            self._script = attributes
            self.scripts.append((attributes, ""))
        if "data-node" in attributes:
            self._node = attributes["data-node"]
            self.node_texts[self._node or ""] = []
        self._in_text = tag == "text"

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None
        if tag == "g":
            self._node = None
        self._in_text = False

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            attributes, text = self.scripts[-1]
            self.scripts[-1] = (attributes, text + data)
        elif self._node is not None and self._in_text:
            self.node_texts[self._node].append(data)


def parse(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    parser.close()
    return parser


def reject_constant(name: str) -> float:
    raise ValueError(f"not strict JSON: {name}")


def data_of(page: str) -> dict[str, object]:
    """The JSON the page's script reads, parsed as strict JSON (no NaN or Infinity tokens)."""
    (text,) = [text for attributes, text in parse(page).scripts if attributes.get("type") == "application/json"]
    data: dict[str, object] = json.loads(text, parse_constant=reject_constant)
    return data


def steps_of(data: dict[str, object]) -> list[Step]:
    rows = data["steps"]
    assert isinstance(rows, list)
    return [
        Step(r["node"], r["op"], float(r["upstream"]), r["operand"], float(r["local"]),
             float(r["contribution"]), float(r["total"]))
        for r in rows
    ]  # fmt: skip


def same(x: float, y: float) -> bool:
    return x == y or (math.isnan(x) and math.isnan(y))


# ---- the tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=["case1", "case2", "case3", "case4"])
def test_every_documented_case_makes_a_page_whose_data_is_explains_steps(case: Case) -> None:
    e = explained(case)
    page = stepper_html(e)
    assert page.startswith("<!DOCTYPE html>")
    data = data_of(page)
    assert steps_of(data) == e.steps  # exact floats, inf included, in the order backward walks
    seeds = data["seeds"]
    assert isinstance(seeds, list)
    assert [(s["name"], float(s["seed"])) for s in seeds] == e.seeds
    # replaying the steps as the page does ends at backward's gradients on a fresh graph
    totals = {s["name"]: float(s["value"]) for s in data["start"]}  # type: ignore[attr-defined]
    for step in steps_of(data):
        totals[step.operand] = step.total
    for name, grad in backward_gradients(case).items():
        assert same(totals[name], grad), name


@pytest.mark.parametrize("case", CASES, ids=["case1", "case2", "case3", "case4"])
def test_the_page_draws_every_node_and_edge_and_lists_every_step(case: Case) -> None:
    e = explained(case)
    elements = parse(stepper_html(e))
    nodes = {a["data-node"] for tag, a in elements.tags if "data-node" in a}
    assert nodes == set(e.names.values())
    edges = [(a["data-from"], a["data-to"]) for tag, a in elements.tags if "data-edge" in a]
    assert sorted(edges) == sorted((s.operand, s.node) for s in e.steps)  # each step crosses an edge of its own
    rows = [a["data-step"] for tag, a in elements.tags if tag == "tr" and "data-step" in a]
    assert rows == [str(k) for k in range(len(e.steps) + 1)]  # step 0 is the seeds
    roles = {a.get("data-role") for tag, a in elements.tags}
    assert {"reset", "prev", "next", "play", "step-index", "step-count", "current-edge", "panel"} <= roles
    for name, formula in e.formulas.items():  # each inner node shows its formula
        assert f"= {formula}" in elements.node_texts[name]


def test_an_operand_used_twice_is_two_edges_and_each_step_names_its_own() -> None:
    b = Value(3.0, label="b")
    y = b * b
    e = explain(y)
    data = data_of(stepper_html(e))
    edges = [a for tag, a in parse(stepper_html(e)).tags if "data-edge" in a]
    assert [(a["data-from"], a["data-to"]) for a in edges] == [("b", "y"), ("b", "y")]
    assert [s["edge"] for s in data["steps"]] == [0, 1]  # type: ignore[attr-defined]
    paths = {a["d"] for a in edges}
    assert len(paths) == 2  # drawn apart, not on top of each other


def test_the_layout_runs_left_to_right_and_no_two_nodes_overlap() -> None:
    e = explained(case_1)
    elements = parse(stepper_html(e))
    boxes: dict[str, tuple[float, float, float, float]] = {}
    groups = [(a["data-node"], a["transform"]) for tag, a in elements.tags if "data-node" in a]
    rects = [a for tag, a in elements.tags if tag == "rect"]
    for (name, transform), rect in zip(groups, rects, strict=True):
        match = re.fullmatch(r"translate\(([\d.]+),([\d.]+)\)", transform or "")
        assert match, transform
        x, y = float(match[1]), float(match[2])
        boxes[name or ""] = (x, y, x + float(rect["width"] or 0), y + float(rect["height"] or 0))
    for step in e.steps:  # an operand sits in a column left of the node made from it
        assert boxes[step.operand][2] < boxes[step.node][0]
    names = list(boxes)
    for i, p in enumerate(names):
        for q in names[i + 1 :]:
            (x0, y0, x1, y1), (u0, v0, u1, v1) = boxes[p], boxes[q]
            assert x1 <= u0 or u1 <= x0 or y1 <= v0 or v1 <= y0, (p, q)


def test_hostile_labels_names_and_title_appear_only_escaped() -> None:
    a = Value(2.0, label=HOSTILE)
    b = Value(3.0, label="</script><script>window.__pwned=1</script>")
    c = Value(1.0)
    y = a * b + log(c)
    y.label = '" onmouseover="alert(1)'
    e = explain(y, names={IMG: c})
    page = stepper_html(e, title="</title><script>alert(2)</script>")
    lowered = page.lower()
    assert lowered.count("<script") == 2  # the data and the stepper's own code, nothing else
    assert lowered.count("</script") == 2
    assert "<img" not in lowered
    assert "alert(1)</script>" not in page
    assert '" onmouseover="' not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown as text
    elements = parse(page)
    assert {HOSTILE, IMG, '" onmouseover="alert(1)'} <= set(elements.node_texts)  # attributes read back intact
    assert HOSTILE in elements.node_texts[HOSTILE]
    data = data_of(page)
    assert {n["name"] for n in data["nodes"]} >= {HOSTILE, IMG}  # type: ignore[attr-defined]
    assert data["title"] == "</title><script>alert(2)</script>"


def test_script_json_cannot_close_its_script_and_round_trips() -> None:
    data = {"text": "</script><!-- & -->\u2028", "n": [1.5, json_number(math.inf), json_number(-math.inf)]}
    text = script_json(data)
    assert not set(text) & set("<>&")
    assert json.loads(text) == {"text": "</script><!-- & -->\u2028", "n": [1.5, "Infinity", "-Infinity"]}
    assert float(json.loads(text)["n"][1]) == math.inf
    assert math.isnan(float(json_number(math.nan)))


def test_the_page_needs_no_network() -> None:
    page = stepper_html(explained(case_2))
    elements = parse(page)
    for tag, attributes in elements.tags:
        assert "src" not in attributes, tag
        assert "href" not in attributes, tag
    urls = set(re.findall(r"https?://[^\s\"')]+", page))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace, a name, never fetched
    (policy,) = [a["content"] for tag, a in elements.tags if a.get("http-equiv") == "Content-Security-Policy"]
    assert policy is not None
    assert "default-src 'none'" in policy
    assert "'unsafe-inline'" not in policy.split("script-src")[1]


def test_fragments_have_ids_of_their_own_and_no_page_around_them() -> None:
    e = explained(case_2)
    first, second = stepper_fragment(e), stepper_fragment(e)
    ids_first = {a["id"] for tag, a in parse(first).tags if "id" in a}
    ids_second = {a["id"] for tag, a in parse(second).tags if "id" in a}
    assert ids_first
    assert not ids_first & ids_second
    assert "<html" not in first
    assert "<!DOCTYPE" not in first
    assert first.startswith('<div class="vjs-root"')


def test_nodes_that_share_a_name_are_drawn_once_with_a_warning() -> None:
    a, b = Value(1.0, label="x"), Value(2.0, label="x")
    e = explain(a * b)
    page = stepper_html(e)
    assert [a["data-node"] for tag, a in parse(page).tags if "data-node" in a].count("x") == 1
    assert 'data-role="warning"' in page
    assert "&#x27;x&#x27;" in page


def test_a_leaf_output_has_no_steps_and_still_gets_a_page() -> None:
    x = Value(2.0, label="x")
    page = stepper_html(explain(x, 0.5))
    data = data_of(page)
    assert data["steps"] == []
    assert data["start"] == [{"name": "x", "value": 0.5, "text": "0.5"}]


def test_default_title_names_the_outputs_and_a_given_one_is_used() -> None:
    e = explained(case_1)
    assert "<title>The reverse pass of y[0], y[1], y[2], step by step</title>" in stepper_html(e)
    assert "<title>Mine &amp; yours</title>" in stepper_html(e, title="Mine & yours")


def test_bad_arguments_are_refused_with_the_type_named() -> None:
    x = Value(1.0)
    with pytest.raises(TypeError, match=r"Explanation \(vjpgrad.explain\(y\)\), got Value"):
        stepper_html(x)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="title must be a str or None, got int"):
        stepper_html(explain(x * 2), title=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got dict"):
        page_data({})  # type: ignore[arg-type]
