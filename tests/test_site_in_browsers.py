"""The learner's path in the built site, as a reader meets it in Chromium: at 1280, 800 and 390 px
(a phone), in light and dark mode, by keyboard, and checked by axe-core.

- no page is wider than its window; code and outputs never wrap (a wrapped line of code reads as a
  dedent, a wrapped text picture breaks); a code block or table wider than the column says so (a
  shadow on its edge) and can be reached with Tab;
- every stepper keeps its node text at 11 px or more, and each step's nodes in view;
- the keyboard steps a tutorial's stepper to either end and back without losing focus;
- axe-core finds no critical and no serious violation on any page of the path, light or dark;
- "Questions learners ask" shows the numbers its answers discuss.

The site is the one CI's docs step built (``VJPGRAD_DOCS_BUILT``), or one built here with the
documented command. axe-core comes from the npm registry (.ci/run names it in ``VJPGRAD_AXE``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _browser
import pytest
from _pages import ROOT

for module, why in (
    ("sphinx", "Sphinx"),
    ("myst_nb", "MyST-NB"),
    ("furo", "the furo theme"),
    ("jupyterlite_sphinx", "jupyterlite-sphinx"),
):
    pytest.importorskip(module, reason=f"the site's tests need {why}: pip install -e '.[docs]'")

PATH = [
    "index",
    "start-here",
    "tutorials/first-backward",
    "tutorials/seeds-and-vjps",
    "tutorials/stepping-through-a-pass",
    "course/index",
    "tutorials/mlp-on-moons",
    "tutorials/tiny-gpt",
    "tutorials/compile",
    "tutorials/vmap",
    "tutorials/to-pytorch",
    "coming-from-pytorch",
    "explanation/questions",
]
"""The learner's path (the front page's "The path" and "Faster"), Coming from PyTorch and the questions."""

WIDTHS = [1280, 800, 390]
THEMES = ["light", "dark"]


@dataclass(frozen=True)
class Site:
    html: Path
    log: str


_built: list[Site] = []


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    built = os.environ.get("VJPGRAD_DOCS_BUILT")
    if built:
        folder = Path(built).resolve()
        return Site(folder / "html", (folder / "build.log").read_text(encoding="utf-8"))
    if not _built:
        out = tmp_path_factory.mktemp("site") / "html"
        command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "docs", str(out)]
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
        _built.append(Site(out, result.stdout))
    return _built[0]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from _browser.browser()


def open_page(browser: Any, site: Site, page: str, width: int, theme: str) -> None:
    browser.set_window_size(width, 900)
    browser.get((site.html / f"{page}.html").as_uri())
    browser.get_log("browser")  # each page starts with an empty log
    # furo's own switch, at once: its colours otherwise fade for 0.1 s, and axe-core could measure
    # the contrast of a colour half-way
    browser.execute_script(
        "const still = document.createElement('style');"
        "still.textContent = '*, *::before, *::after { transition: none !important; }';"
        "document.head.appendChild(still);"
        "document.body.dataset.theme = arguments[0];"
        "window.dispatchEvent(new Event('resize'));",  # the pages' scripts measure again
        theme,
    )


READ_LAYOUT = """
const wide = (el) => el.scrollWidth > el.clientWidth + 1;
const where = (el) => (el.closest("section[id]") || {id: "?"}).id + ": " + el.textContent.trim().slice(0, 50);
const blocks = Array.from(document.querySelectorAll(".highlight pre, .table-wrapper, table.vjp-matrix"))
  .filter((el) => !el.closest(".vjs-root"));
const steppers = Array.from(document.querySelectorAll(".vjs-root")).map((root) => {
  const svg = root.querySelector("svg.vjs-graph");
  const scale = svg.getBoundingClientRect().width / svg.width.baseVal.value;
  return parseFloat(getComputedStyle(root.querySelector("svg .vjs-name")).fontSize) * scale;
});
return {
  page: document.documentElement.scrollWidth, window: document.documentElement.clientWidth,
  wrapping: Array.from(document.querySelectorAll(".highlight pre"))
    .filter((el) => getComputedStyle(el).whiteSpace !== "pre").map(where),
  unmarked: blocks.filter((el) => wide(el) && !(el.classList.contains("vjp-scrolls") && el.tabIndex === 0)).map(where),
  marked: blocks.filter((el) => el.classList.contains("vjp-scrolls")).length,
  steppers: steppers,
};
"""


@pytest.mark.slow  # the site's build, and Chromium
@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_of_the_path_fits_its_window_and_says_what_scrolls(
    site: Site, browser: Any, width: int, theme: str
) -> None:
    marked = 0
    try:
        for page in PATH:
            open_page(browser, site, page, width, theme)
            seen = browser.execute_script(READ_LAYOUT)
            assert seen["page"] <= seen["window"], (page, seen["page"], seen["window"])
            assert seen["wrapping"] == [], page  # code and text pictures never wrap
            assert seen["unmarked"] == [], page  # a block wider than the column says so and takes focus
            assert all(size >= 11.0 - 1e-6 for size in seen["steppers"]), (page, seen["steppers"])
            marked += seen["marked"]
    finally:
        browser.set_window_size(1100, 900)
    if width == 390:
        assert marked > 0  # on a phone some code is wider than the column: the check above saw it


@pytest.mark.slow  # the site's build, Chromium and axe-core
@pytest.mark.parametrize(
    ("width", "theme"),
    # both themes where the sidebar shows (its captions, every colour); at a phone's width what the
    # narrow column changes (boxes that scroll), which the theme does not: three runs, not four, for CI's time
    [(1280, "light"), (1280, "dark"), (390, "light")],
)
def test_axe_finds_no_critical_or_serious_violation_on_the_path(
    site: Site, browser: Any, width: int, theme: str
) -> None:
    source = _browser.axe_source()
    found = {}
    try:
        for page in PATH:
            open_page(browser, site, page, width, theme)
            violations = _browser.axe_violations(browser, source)
            if violations:
                found[page] = violations
    finally:
        browser.set_window_size(1100, 900)
    assert found == {}


GIVING_AND_RECEIVING_IN_VIEW = """
const out = [];
for (const root of document.querySelectorAll(".vjs-root")) {
  const box = root.querySelector(".vjs-graph-box");
  box.scrollIntoView({block: "start", behavior: "instant"});
  const b = box.getBoundingClientRect();
  const inside = (el) => { const r = el.getBoundingClientRect();
    return r.left >= b.left - 0.5 && r.right <= b.right + 0.5 && r.top >= b.top - 0.5 && r.bottom <= b.bottom + 0.5
      && r.top >= -0.5 && r.bottom <= window.innerHeight + 0.5; };
  if (root.getAttribute("data-step") === "0") { continue; }  // the seeds: no edge yet
  const giving = root.querySelector(".vjs-node.vjs-giving"), receiving = root.querySelector(".vjs-node.vjs-receiving");
  const g = giving.getBoundingClientRect(), r = receiving.getBoundingClientRect();
  const fit = Math.max(g.right, r.right) - Math.min(g.left, r.left) <= b.width
    && Math.max(g.bottom, r.bottom) - Math.min(g.top, r.top) <= b.height;
  // the node handing on gradient always; the one receiving it too wherever the two fit in the box together
  out.push({step: root.getAttribute("data-step"), fit: fit, inView: inside(giving) && (!fit || inside(receiving))});
}
return out;
"""


@pytest.mark.slow  # the site's build, and Chromium
@pytest.mark.parametrize("width", WIDTHS)
def test_each_step_of_the_tutorials_steppers_shows_both_nodes_it_names(site: Site, browser: Any, width: int) -> None:
    from selenium.webdriver.common.by import By

    try:
        open_page(browser, site, "tutorials/stepping-through-a-pass", width, "light")
        for root in browser.find_elements(By.CSS_SELECTOR, ".vjs-root"):
            steps = int(root.get_attribute("data-steps"))
            fitted = 0
            for _ in range(min(steps, 15)):
                browser.execute_script(
                    "arguments[0].querySelector('[data-role=\"next\"]').click()", root
                )  # a click by script: the button's place on the page does not matter
                for seen in browser.execute_script(GIVING_AND_RECEIVING_IN_VIEW):
                    assert seen["inView"], (width, seen)
                    fitted += seen["fit"]
            assert fitted > 0  # the check of both ends ran
    finally:
        browser.set_window_size(1100, 900)


FOCUS = "return [document.activeElement.closest('.vjs-root') !== null, document.activeElement.dataset.role || '']"


@pytest.mark.slow  # the site's build, and Chromium
def test_the_keyboard_steps_a_tutorials_stepper_to_either_end_and_back(site: Site, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    open_page(browser, site, "tutorials/stepping-through-a-pass", 1280, "light")
    root = browser.find_elements(By.CSS_SELECTOR, ".vjs-root")[0]
    n = int(root.get_attribute("data-steps"))
    browser.execute_script("arguments[0].querySelector('[data-role=\"next\"]').focus()", root)
    keys = lambda key: browser.switch_to.active_element.send_keys(key)  # noqa: E731  # where the focus is
    step = lambda: int(root.get_attribute("data-step"))  # noqa: E731
    for k in range(1, n + 1):
        keys(Keys.ARROW_RIGHT)
        assert step() == k
        assert browser.execute_script(FOCUS)[0], k
    keys(Keys.HOME)
    assert step() == 0
    assert browser.execute_script(FOCUS) == [True, "next"]
    keys(Keys.END)
    assert step() == n
    assert browser.execute_script(FOCUS) == [True, "prev"]
    keys(Keys.ARROW_LEFT)
    assert step() == n - 1
    assert _browser.severe(browser) == []


def test_the_questions_page_shows_the_numbers_its_answers_discuss(site: Site) -> None:
    page = (site.html / "explanation" / "questions.html").read_text(encoding="utf-8")
    outputs = re.findall(r'<div class="cell_output\b.*?</pre>', page, flags=re.S)
    source = (ROOT / "docs" / "explanation" / "questions.md").read_text(encoding="utf-8")
    assert len(outputs) == source.count("```{code-cell}")  # every cell ran and printed
    text = re.sub(r"<[^>]+>", "", page)
    assert "recursive: b.grad = 2.0  a.grad = 8.0  (dc/da is 4)" in text  # the wrong numbers, shown
    assert "topological order: b.grad = 3.0  a.grad = 6.0" in text
    assert "vjpgrad: a.grad = 6.0" in text
    for line in ("y.backward(ones):", "y.sum().backward():"):
        assert f"{line}" in text
    assert "Traceback" not in page
