"""The stepper: one self-contained HTML page that steps through a reverse pass. Read as text (its
structure, its data, its escaping), then in a real browser: headless Chromium (Debian's chromium and
chromium-driver packages) driven by Selenium; the browser tests skip, saying why, when any of the
three is missing.

``python tests/test_stepper.py DIR`` also writes DIR/stepper.png, the picture in the docs.
"""

from __future__ import annotations

import json
import math
import re
import sys
import tempfile
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import _browser
import _pictures
import pytest
from _helpers import CASES, Case, Graph, backward_gradients, case_1, case_2, case_3, equal_or_both_nan

from vjpgrad import Explanation, Step, Value, explain, log
from vjpgrad.display.stepper import json_number, page_data, script_json, stepper_fragment, stepper_html

# case 3 sums its three seeds into y's one element on purpose: the pages show it; test_seeds.py
# asserts the warning that summing gives
pytestmark = pytest.mark.filterwarnings("ignore:.*numbers for an output of one number:UserWarning")

HOSTILE = "<script>alert(1)</script>"


IMG = '<img src=x onerror="window.__pwned=1">'


NUMBERS = ("upstream", "local", "contribution", "total")


def explained(case: Case) -> Explanation:
    y, names, seed = case()
    return explain(y, seed, names=names)


# ---- the page read as text -----------------------------------------------------------------------


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
        assert equal_or_both_nan(totals[name], grad), name


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


def first_backward() -> Graph:
    a = Value(3.0)
    h1 = a * a
    out = h1 + a  # a reaches out through h1, and directly: that edge skips h1's column
    return out, {"a": a, "h1": h1, "out": out}, None


@pytest.mark.parametrize("graph", [*CASES, first_backward], ids=["case1", "case2", "case3", "case4", "first"])
def test_no_edge_runs_behind_a_box_other_than_its_two_ends(graph: Case) -> None:
    y, names, seed = graph()
    page = stepper_html(explain(y, seed, names=names))
    assert len(_pictures.node_boxes(page)) == len(set(explain(y, seed, names=names).names.values()))
    assert _pictures.edges_behind_boxes(page) == []


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


@pytest.mark.parametrize("label", ["w\x1b[31m", "w\r", "w\x00", "w\r\nx", "w\u2028"])
def test_a_label_with_a_control_character_names_its_node_alike_in_the_drawing_and_the_data(label: str) -> None:
    """The script finds a node by its name in the drawing (``data-node``) and in the data: a label
    with a control character was ``\\x1b`` in one and the raw character in the other, and a ``\\r``
    reads as ``\\n`` in an attribute (HTML's newlines are normalised before parsing), so the node
    never showed its gradient. Read as a browser reads the page, the two names are one."""
    a = Value(3.0, label=label)
    y = a * Value(2.0, label="b")
    page = stepper_html(explain(y)).replace("\r\n", "\n").replace("\r", "\n")  # as a browser's input stream
    drawn = set(parse(page).node_texts)
    data = data_of(page)
    named = {n["name"] for n in data["nodes"]}  # type: ignore[attr-defined]
    assert named == drawn
    assert {s["operand"] for s in data["steps"]} <= drawn  # type: ignore[attr-defined]


def test_each_steppers_scrolling_boxes_are_named_after_its_title_escaped() -> None:
    # two steppers on one page (a tutorial has two) name their regions apart, for a screen
    # reader's list of them (axe-core's landmark-unique); the title, the user's text, escaped
    first = stepper_fragment(explained(case_2), title='one" onfocus="alert(1)')
    second = stepper_fragment(explained(case_1))
    labels = [
        a["aria-label"]
        for _, a in parse(f"<!DOCTYPE html><html><body>{first}{second}</body></html>").tags
        if a.get("role") == "region"
    ]
    assert len(labels) == len(set(labels)) == 4
    assert 'the graph of one" onfocus="alert(1) (scrolls)' in labels  # read back intact, so escaped
    assert '" onfocus="' not in first


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


def test_two_values_of_one_label_are_drawn_apart() -> None:
    a, b = Value(1.0, label="x"), Value(2.0, label="x")
    page = stepper_html(explain(a * b))  # explain names them apart: x, x (2)
    nodes = [a["data-node"] for tag, a in parse(page).tags if "data-node" in a]
    assert nodes.count("x") == 1
    assert nodes.count("x (2)") == 1
    assert 'data-role="warning"' not in page


def test_nodes_that_share_a_name_in_an_explanation_made_by_hand_are_drawn_once_with_a_warning() -> None:
    import dataclasses

    a, b = Value(1.0, label="x"), Value(2.0, label="y")
    e = explain(a * b)
    page = stepper_html(dataclasses.replace(e, names={**e.names, a: "x", b: "x"}))
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
    with pytest.raises(TypeError, match=r"notes must be a list of str \(lines said under the title\), got str"):
        explain(x * 2).to_html(notes="one line")  # it made a note of each character
    with pytest.raises(TypeError, match=r"notes must be a list of str .* holding a int"):
        explain(x * 2).to_html(notes=["a", 2])  # type: ignore[list-item]
    assert explain(x * 2).to_html(notes=("a", "b")).count('data-role="note"') == 2


# ---- the page in a browser -----------------------------------------------------------------------

try:  # Selenium drives the tests below; the ``browser`` fixture skips them, saying how, without it
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.wait import WebDriverWait
except ImportError:
    pass


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from _browser.browser()


def squares() -> Graph:
    x = Value(0.5)
    return (x * x).sin() * (x * x), {"x": x}, None  # x * x used twice; x used twice by one node


@pytest.mark.slow  # Chromium
@pytest.mark.parametrize("graph", [case_1, case_2, case_3, squares], ids=["case1", "case2", "case3", "squares"])
def test_next_walks_the_whole_pass_and_ends_at_backwards_gradients(browser: Any, tmp_path: Path, graph: Case) -> None:
    y, names, seed = graph()
    e = explain(y, seed, names=names)
    _browser.open_page(browser, tmp_path / "stepper.html", stepper_html(e))
    _browser.check_step(browser, e, 0)
    shown = "return ['controls', 'panel', 'keys', 'no-script'].map((r) => document.querySelector(`[data-role=${r}]`)"
    shown += ".hidden)"
    assert browser.execute_script(shown) == [False, False, False, True]  # the script ran: all but the note shown
    button = browser.find_element(By.CSS_SELECTOR, '[data-role="next"]')
    for k in range(1, len(e.steps) + 1):
        button.click()
        last = _browser.check_step(browser, e, k)
    final = {name: float(total) for name, total, _ in last["totals"]}
    for name, grad in backward_gradients(graph).items():
        assert equal_or_both_nan(final[name], grad), (name, final[name], grad)
    assert "Done: every gradient is complete" in last["panel"]
    button.click()  # disabled at the end: nothing moves
    assert _browser.state(browser)["step"] == len(e.steps)
    assert _browser.severe(browser) == []


@pytest.mark.slow  # Chromium
def test_previous_reset_and_the_keyboard_go_back(browser: Any, tmp_path: Path) -> None:
    y, names, seed = case_2()
    e = explain(y, seed, names=names)
    n = len(e.steps)
    root = _browser.open_page(browser, tmp_path / "stepper.html", stepper_html(e))
    find = lambda role: browser.find_element(By.CSS_SELECTOR, f'[data-role="{role}"]')  # noqa: E731
    for _ in range(3):
        find("next").click()
    find("prev").click()
    _browser.check_step(browser, e, 2)
    find("prev").click()
    find("prev").click()
    _browser.check_step(browser, e, 0)
    find("prev").click()  # disabled at 0
    _browser.check_step(browser, e, 0)
    root.send_keys(Keys.ARROW_RIGHT)
    _browser.check_step(browser, e, 1)
    root.send_keys(Keys.END)
    _browser.check_step(browser, e, n)
    root.send_keys(Keys.ARROW_LEFT)
    _browser.check_step(browser, e, n - 1)
    find("reset").click()
    _browser.check_step(browser, e, 0)
    root.send_keys(Keys.END)
    root.send_keys(Keys.HOME)
    _browser.check_step(browser, e, 0)
    browser.find_element(By.CSS_SELECTOR, 'tr[data-step="5"]').click()  # a row of the table jumps there
    _browser.check_step(browser, e, 5)
    assert _browser.severe(browser) == []


@pytest.mark.slow  # Chromium
def test_play_runs_to_the_end_and_stops(browser: Any, tmp_path: Path) -> None:
    y, names, seed = case_1()
    e = explain(y, seed, names=names)
    n = len(e.steps)
    _browser.open_page(browser, tmp_path / "stepper.html", stepper_html(e))
    Select(browser.find_element(By.CSS_SELECTOR, '[data-role="speed"]')).select_by_visible_text("fastest")
    play = browser.find_element(By.CSS_SELECTOR, '[data-role="play"]')
    play.click()
    assert _browser.state(browser)["playing"]
    assert "Pause" in play.text
    WebDriverWait(browser, 10, poll_frequency=0.05).until(lambda d: _browser.state(d)["step"] == n)
    s = _browser.check_step(browser, e, n)
    assert not s["playing"]
    assert "Play" in play.text
    # slow, so that a busy machine cannot play the whole pass between the two clicks
    Select(browser.find_element(By.CSS_SELECTOR, '[data-role="speed"]')).select_by_visible_text("slow")
    play.click()  # at the end, Play starts again from the seeds
    play.click()  # and pauses
    paused = _browser.state(browser)["step"]
    assert 0 <= paused < n
    assert not _browser.state(browser)["playing"]
    _browser.check_step(browser, e, paused)
    assert _browser.severe(browser) == []


HOSTILE_LABELS = (
    "<script>window.__pwned = 1; alert(1)</script>",
    '<img src=x onerror="window.__pwned = 2">',
    "</script><script>window.__pwned = 3</script>",
    '<svg onload="window.__pwned = 4">',
)


@pytest.mark.slow  # Chromium
@pytest.mark.parametrize("wrap", ["page", "fragment"])
def test_hostile_labels_show_as_text_and_run_nothing(browser: Any, tmp_path: Path, wrap: str) -> None:
    a = Value(2.0, label=HOSTILE_LABELS[0])
    b = Value(3.0, label=HOSTILE_LABELS[1])
    c = Value(4.0)
    y = a * b + log(c)
    y.label = HOSTILE_LABELS[3]
    e = explain(y, names={HOSTILE_LABELS[2]: c})
    # the whole page has a CSP that would stop an injected script anyway; the fragment has none,
    # so it shows that the escaping alone keeps them out
    page = stepper_html(e) if wrap == "page" else f"<!DOCTYPE html><html><body>{stepper_fragment(e)}</body></html>"
    _browser.open_page(browser, tmp_path / f"{wrap}.html", page)
    browser.find_element(By.CSS_SELECTOR, ".vjs-root").send_keys(Keys.END)
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018  (reading it is the check)
    assert browser.execute_script("return window.__pwned === undefined")
    nodes = browser.execute_script(
        "return Array.from(document.querySelectorAll('.vjs-node'), (el) => [el.getAttribute('data-node'), "
        "el.querySelector('title').textContent, el.querySelector('.vjs-name').textContent])"
    )
    assert set(HOSTILE_LABELS) <= {name for name, _, _ in nodes}
    for name, tooltip, shown in nodes:  # the full name in the tooltip, the start of it in the box
        assert tooltip.startswith(name)
        assert name.startswith(shown.rstrip("\u2026"))
    panel = browser.find_element(By.CSS_SELECTOR, '[data-role="panel"]').text
    assert HOSTILE_LABELS[0] in panel  # a is the last leaf reached: the panel names it as text
    assert browser.execute_script("return document.querySelectorAll('img, script:not([type]) ~ script').length") == 0
    assert _browser.severe(browser) == []


def save_screenshot(directory: Path) -> Path:
    """docs/stepper.png: the stepper on the second documented case, as b is handed its second contribution."""
    y, names, seed = case_2()
    e = explain(y, seed, names=names)
    driver = _browser.start_browser(1000, 700)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            _browser.open_page(driver, Path(scratch) / "stepper.html", stepper_html(e))
            for _ in range(8):  # b gets its second contribution: 2 + 2 = 4
                driver.find_element(By.CSS_SELECTOR, '[data-role="next"]').click()
            target = directory / "stepper.png"
            driver.save_screenshot(str(target))
    finally:
        driver.quit()
    return target


if __name__ == "__main__":
    print(save_screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs")))


# ---- the stepper fits its page ---------------------------------------------------------------------


def wide_and_tall() -> Graph:
    """Thirty leaves summed, then five more operations: taller than any window, and wide."""
    xs = [Value(float(k), label=f"x{k}") for k in range(30)]
    y = xs[0]
    for x in xs[1:]:
        y = y + x
    for _ in range(5):
        y = (y * 0.5).tanh() + 1.0
    return y, None, None


READ_BOXES = """
const root = document.querySelector(".vjs-root");
const box = root.querySelector(".vjs-graph-box").getBoundingClientRect();
const rect = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
const giving = root.querySelector(".vjs-node.vjs-giving");
const receiving = root.querySelector(".vjs-node.vjs-receiving");
return {
  window: [document.documentElement.clientWidth, window.innerHeight],
  box: [box.left, box.top, box.right, box.bottom],
  outputs: Object.fromEntries(Array.from(root.querySelectorAll(".vjs-node.vjs-output"),
                                         (el) => [el.getAttribute("data-node"), rect(el)])),
  giving: giving === null ? null : rect(giving),
  receiving: receiving === null ? null : rect(receiving),
};
"""


def inside(inner: list[float], outer: list[float]) -> bool:
    return (
        outer[0] - 0.5 <= inner[0]
        and inner[2] <= outer[2] + 0.5
        and outer[1] - 0.5 <= inner[1]
        and inner[3] <= outer[3] + 0.5
    )


@pytest.mark.slow  # Chromium
@pytest.mark.parametrize("width", [1280, 800, 390])
@pytest.mark.parametrize(
    ("where", "graph"), [("page", case_1), ("column", wide_and_tall)], ids=["page-case1", "column-tall"]
)
def test_the_output_where_the_pass_starts_and_each_giving_node_are_in_view(
    browser: Any, tmp_path: Path, width: int, graph: Case, where: str
) -> None:
    y, names, seed = graph()
    e = explain(y, seed, names=names)
    if where == "page":  # the stepper's own page (--html, to_html())
        page = stepper_html(e)
    else:  # in a column of text 700 px wide at most, as a documentation page holds it
        column = f'<main style="max-width:700px;margin:0 auto">{stepper_fragment(e)}</main>'
        page = f"<!DOCTYPE html><html><body>{column}</body></html>"
    browser.set_window_size(width, 900)
    try:
        root = _browser.open_page(browser, tmp_path / "stepper.html", page)
        browser.execute_script("arguments[0].querySelector('.vjs-graph-box').scrollIntoView()", root)
        seen = browser.execute_script(READ_BOXES)
        viewport = [0.0, 0.0, *seen["window"]]
        assert seen["box"][0] >= 0.0  # the graph's box fits the width
        assert seen["box"][2] <= viewport[2] + 0.5
        assert seen["outputs"]
        output = seen["outputs"][e.steps[0].node]  # the output of the first step, where the pass starts
        assert inside(output, seen["box"]), (output, seen["box"])
        assert inside(output, viewport), (output, viewport)
        button = root.find_element(By.CSS_SELECTOR, '[data-role="next"]')
        for _ in range(min(len(e.steps), 12)):
            button.click()
            browser.execute_script("arguments[0].querySelector('.vjs-graph-box').scrollIntoView()", root)
            seen = browser.execute_script(READ_BOXES)
            assert inside(seen["giving"], seen["box"]), (seen["giving"], seen["box"])
            receiving = seen["receiving"]
            together = max(receiving[3], seen["giving"][3]) - min(receiving[1], seen["giving"][1])
            wide = max(receiving[2], seen["giving"][2]) - min(receiving[0], seen["giving"][0])
            if together <= seen["box"][3] - seen["box"][1] and wide <= seen["box"][2] - seen["box"][0]:
                assert inside(receiving, seen["box"]), (receiving, seen["box"])  # both ends of the step
    finally:
        browser.set_window_size(1100, 900)


READ_TEXT = """
const root = document.querySelector(".vjs-root");
const svg = root.querySelector("svg.vjs-graph");
const scale = svg.getBoundingClientRect().width / svg.width.baseVal.value;
const size = parseFloat(getComputedStyle(root.querySelector("svg .vjs-name")).fontSize);
const cue = (name) => !root.querySelector(`[data-role="${name}"]`).hidden;
const table = root.querySelector(".vjs-table-box");
return {text: size * scale, tableCue: cue("table-cue"), graphCue: cue("graph-cue"),
        tableScrolls: table.scrollWidth > table.clientWidth + 1, page: document.documentElement.scrollWidth,
        window: document.documentElement.clientWidth};
"""


@pytest.mark.slow  # Chromium
@pytest.mark.parametrize("width", [1280, 800, 390])
def test_node_text_stays_readable_and_a_box_wider_than_the_window_says_it_scrolls(
    browser: Any, tmp_path: Path, width: int
) -> None:
    y, names, seed = wide_and_tall()
    e = explain(y, seed, names=names)
    browser.set_window_size(width, 844)
    try:
        _browser.open_page(browser, tmp_path / "stepper.html", stepper_html(e))
        seen = browser.execute_script(READ_TEXT)
        assert seen["text"] >= 11.0 - 1e-6, seen  # the graph scrolls rather than shrink its text below 11 px
        assert seen["page"] <= seen["window"], seen  # the page itself never scrolls sideways
        assert seen["tableCue"] == seen["tableScrolls"], seen  # a table wider than its box says so
        if width == 390:
            assert seen["tableCue"], seen
            assert seen["graphCue"], seen
    finally:
        browser.set_window_size(1100, 900)


FOCUS = """
const root = document.querySelector(".vjs-root");
const el = document.activeElement;
return {inside: root.contains(el), role: el.getAttribute("data-role"), root: el === root};
"""


@pytest.mark.slow  # Chromium
def test_focus_stays_in_the_stepper_when_its_button_disables_and_the_keys_work_at_every_step(
    browser: Any, tmp_path: Path
) -> None:
    y, names, seed = case_2()
    e = explain(y, seed, names=names)
    n = len(e.steps)
    root = _browser.open_page(browser, tmp_path / "stepper.html", stepper_html(e))
    find = lambda role: root.find_element(By.CSS_SELECTOR, f'[data-role="{role}"]')  # noqa: E731
    keys = lambda key: browser.switch_to.active_element.send_keys(key)  # noqa: E731  # as a user types
    find("next").click()
    for k in range(2, n + 1):
        keys(Keys.ARROW_RIGHT)  # focus on Next: it steps on, and at the end Next disables
        _browser.check_step(browser, e, k)
        assert browser.execute_script(FOCUS)["inside"], k
    assert browser.execute_script(FOCUS)["role"] == "prev"  # handed to the button that steps back
    keys(Keys.ARROW_RIGHT)  # nothing further, and focus stays
    _browser.check_step(browser, e, n)
    for k in range(n - 1, -1, -1):
        keys(Keys.ARROW_LEFT)
        _browser.check_step(browser, e, k)
        assert browser.execute_script(FOCUS)["inside"], k
    assert browser.execute_script(FOCUS)["role"] == "next"  # Previous disabled at step 0
    keys(Keys.END)
    _browser.check_step(browser, e, n)
    keys(Keys.HOME)
    _browser.check_step(browser, e, 0)
    keys(Keys.END)
    find("reset").click()  # Reset disables under the pointer's focus too
    _browser.check_step(browser, e, 0)
    assert browser.execute_script(FOCUS)["role"] == "next"
    keys(Keys.ARROW_RIGHT)
    _browser.check_step(browser, e, 1)
    find("prev").click()  # to step 0: Previous disables
    assert browser.execute_script(FOCUS)["inside"]
    keys(Keys.END)
    _browser.check_step(browser, e, n)
    assert _browser.severe(browser) == []


@pytest.mark.slow  # Chromium
def test_the_graph_and_the_table_are_reachable_by_the_keyboard(browser: Any, tmp_path: Path) -> None:
    y, names, seed = wide_and_tall()
    e = explain(y, seed, names=names)
    root = _browser.open_page(browser, tmp_path / "stepper.html", stepper_html(e))
    for role in ("graph-box", "table-box"):
        box = root.find_element(By.CSS_SELECTOR, f'[data-role="{role}"]')
        assert box.get_attribute("tabindex") == "0"
        assert box.get_attribute("role") == "region"
        assert box.get_attribute("aria-label")
    table = root.find_element(By.CSS_SELECTOR, '[data-role="table-box"]')
    browser.execute_script("arguments[0].focus()", table)
    table.send_keys(Keys.ARROW_DOWN)  # in a box, up and down scroll it, and do not step
    from selenium.webdriver.support.ui import WebDriverWait

    # Chromium animates a scroll by the keyboard: the box has moved within a second
    WebDriverWait(browser, 2).until(lambda b: b.execute_script("return arguments[0].scrollTop", table) > 0)
    _browser.check_step(browser, e, 0)
    table.send_keys(Keys.ARROW_RIGHT)  # left and right still step
    _browser.check_step(browser, e, 1)
    assert _browser.severe(browser) == []


@pytest.mark.slow  # Chromium
def test_a_key_that_scrolls_a_box_goes_no_further_than_the_stepper(browser: Any, tmp_path: Path) -> None:
    # in JupyterLab's notebook (the site's JupyterLite) the page's own shortcuts listen on the
    # document: ArrowDown in the table of steps moved to the next cell and took the focus away
    y, names, seed = wide_and_tall()
    e = explain(y, seed, names=names)
    root = _browser.open_page(browser, tmp_path / "stepper.html", stepper_html(e))
    browser.execute_script(
        "window.seen = []; document.addEventListener('keydown', (event) => window.seen.push(event.key));"
    )
    table = root.find_element(By.CSS_SELECTOR, '[data-role="table-box"]')
    browser.execute_script("arguments[0].focus()", table)
    table.send_keys(Keys.ARROW_DOWN)
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 2).until(lambda b: b.execute_script("return arguments[0].scrollTop", table) > 0)
    assert browser.execute_script("return window.seen") == []  # the box scrolled; the page saw nothing
    assert browser.switch_to.active_element == table


def test_a_label_with_a_control_character_and_a_label_typed_as_its_escape_are_two_nodes_on_the_page() -> None:
    """``"w\\x1b"`` (an escape character) is shown ``w\\x1b``, as ``"w\\\\x1b"`` (its text, typed) is:
    the page's data had one name for both, so one node's gradient showed on the other's drawing.
    The explanation names them apart, as two labels alike."""
    y = Value(3.0, label="w\x1b") * Value(2.0, label="w\\x1b")
    data = data_of(stepper_html(explain(y)))
    named = [n["name"] for n in data["nodes"]]  # type: ignore[attr-defined]
    assert len(named) == len(set(named)) == 3
    assert {"w\\x1b", "w\\x1b (2)"} <= set(named)


def test_without_its_script_the_page_shows_no_idle_buttons_and_says_the_table_has_every_step() -> None:
    """A page whose script does not run (scripts off, an untrusted notebook) showed Next and Play
    buttons that did nothing. They are hidden until the script shows them (with the panel and the
    keys); until then a note says the table lists every step. (The browser tests click them, and
    read what shows: shown once the script runs.)"""
    elements = parse(stepper_html(explain(Value(2.0) * Value(3.0))))
    roles = ("controls", "panel", "keys", "no-script")
    attributes = {a.get("data-role"): a for _, a in elements.tags if a.get("data-role") in roles}
    assert all("hidden" in attributes[role] for role in ("controls", "panel", "keys"))  # the panel and keys too
    assert "hidden" not in attributes["no-script"]


def _chain_over_one_leaf(n: int) -> str:
    x = Value(2.0, label="x")
    y = x
    for _ in range(n):
        y = y + x  # every sum reads x: n edges reach back across ever more columns to x's
    return explain(y).to_html("a chain of sums over one leaf")


def test_a_page_grows_with_its_steps_not_their_square_where_edges_span_many_columns() -> None:
    """An edge that runs level across many columns is one straight stretch in the page, not a curve
    and a line per column it crosses: a chain of 800 sums over one leaf made a page of 22 MB."""
    small, large = len(_chain_over_one_leaf(100)), len(_chain_over_one_leaf(400))
    # four times the steps: 4.7 times the page (edges still change lanes between columns); 11 times before
    assert large < 6 * small


def test_an_edge_across_many_columns_at_one_height_is_one_line() -> None:
    from vjpgrad.display.stepper import _route_path

    assert _route_path([(0.0, 10.0, 5.0), (50.0, 60.0, 5.0), (100.0, 110.0, 5.0)]) == "M0,5 L110,5"
    # where it changes height the S-curves stay, and the level stretches beside them
    assert _route_path([(0.0, 10.0, 5.0), (50.0, 60.0, 5.0), (100.0, 110.0, 9.0)]) == (
        "M0,5 L60,5 C80,5 80,9 100,9 L110,9"
    )
