"""The learner's path in the built site, as a reader meets it in Chromium: at 1280, 800 and 390 px
(a phone), in light and dark mode, by keyboard, and checked by axe-core.

- no page is wider than its window; code and outputs never wrap (a wrapped line of code reads as a
  dedent, a wrapped text picture breaks); a code block or table wider than the column says so (a
  shadow on its edge) and can be reached with Tab;
- every stepper keeps its node text at 11 px or more, and each step's nodes in view;
- the keyboard steps a tutorial's stepper to either end and back without losing focus;
- Tab stops only where the reader sees the focus, at 1280, 800, 390 and 320 px (no link of a
  closed drawer off the screen), the drawers open and close from the keyboard, and Start here's
  console starts from it, its button's words inside the button;
- axe-core finds no critical and no serious violation on any page of the path, light or dark;
- axe-core finds no violation at all, of any impact, on any page the build writes, on a phone;
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
    assert "y = 9.0   x.grad = 6.0 (2 * 3: the x the forward pass used)" in text  # a change after the pass's numbers
    assert "RuntimeError: element 0 of the outputs does not require grad" in text
    assert "x.grad = 24.0   target.requires_grad = False" in text  # detach: the target held still
    assert "after p -= 0.1 * p.grad:     w.data = 2.0 (unchanged)" in text  # a Value rebound, not stepped
    assert "after p.data -= 0.1 * p.grad: w.data = 1.6" in text  # micrograd's step: 2 - 0.1 * 4
    assert "Traceback" not in page


# ---- the keyboard alone, on every screen ------------------------------------------------------------

FOCUSED = """
const el = document.activeElement;
if (!el || el === document.body || el === document.documentElement) { return null; }
const r = el.getBoundingClientRect(), s = getComputedStyle(el);
return {
  where: el.tagName + " " + (el.getAttribute("aria-label") || el.textContent || "").trim().slice(0, 40),
  key: [el.tagName, el.className, Math.round(r.left), Math.round(r.top + window.scrollY)].join(" "),
  shown: r.width > 0 && r.height > 0 && r.right > 0 && r.left < window.innerWidth,
  marked: (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== "none",
};
"""


def tab_stops(browser: Any, limit: int = 300) -> list[dict[str, Any]]:
    """Where Tab takes the focus, from the top of the open page to its end (or once round)."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    stops: list[dict[str, Any]] = []
    for _ in range(limit):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        stop = browser.execute_script(FOCUSED)
        if stop is None or (stops and stop["key"] == stops[0]["key"]):
            break
        stops.append(stop)
    return stops


@pytest.mark.slow  # the site's build, and Chromium
@pytest.mark.parametrize("width", [1280, 800, 390, 320])
def test_tab_stops_only_where_the_reader_sees_the_focus(site: Site, browser: Any, width: int) -> None:
    # furo's drawers (the site's navigation under 63em, "On this page" under 82em) sit off the
    # screen, closed, with their links still in the Tab order; the search field draws no focus
    try:
        for page in PATH:
            open_page(browser, site, page, width, "light")
            stops = tab_stops(browser)
            assert len(stops) > 5, page
            assert [s["where"] for s in stops if not s["shown"]] == [], (page, width)  # focus off the screen
            assert [s["where"] for s in stops if not s["marked"]] == [], (page, width)  # focus not drawn
    finally:
        browser.set_window_size(1100, 900)


UNDER_THE_HEADER = """
const el = document.activeElement, header = document.querySelector(".mobile-header");
if (!el || !header || getComputedStyle(header).display === "none") { return null; }
return el.getBoundingClientRect().top < header.getBoundingClientRect().bottom - 0.5;
"""


@pytest.mark.slow  # the site's build, and Chromium
def test_shift_tab_brings_the_focus_in_below_the_phones_header(site: Site, browser: Any) -> None:
    # at a phone's width furo's header stays at the top: a link focused going back up the page
    # scrolled in under it, hidden (an outside review found Start here's links so)
    import time

    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    try:
        open_page(browser, site, "start-here", 360, "light")
        browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        hidden = []
        for _ in range(25):
            ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
            time.sleep(0.4)  # the page scrolls smoothly to the focus
            if browser.execute_script(UNDER_THE_HEADER):
                hidden.append(browser.execute_script(FOCUSED)["where"])
        assert hidden == []
    finally:
        browser.set_window_size(1100, 900)


VISIBLE_TOGGLE = """
const found = Array.from(document.querySelectorAll(arguments[0])).filter((el) => el.getClientRects().length > 0);
return found.length ? found[0] : null;
"""
IN_VIEW = "const r = arguments[0].getBoundingClientRect(); return r.left >= -0.5 && r.right <= window.innerWidth + 0.5;"


@pytest.mark.slow  # the site's build, and Chromium
@pytest.mark.parametrize(
    ("width", "drawers"),
    [(390, ("nav", "toc")), (800, ("nav", "toc")), (1280, ("toc",))],  # where each drawer is closed off the screen
)
def test_the_keyboard_opens_and_closes_the_drawers(
    site: Site, browser: Any, width: int, drawers: tuple[str, ...]
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    parts = {"nav": (".nav-overlay-icon", ".sidebar-drawer"), "toc": (".toc-overlay-icon", ".toc-drawer")}
    try:
        open_page(browser, site, "start-here", width, "light")
        for name in drawers:
            toggle_css, drawer_css = parts[name]
            toggle = browser.execute_script(VISIBLE_TOGGLE, toggle_css)
            drawer = browser.find_element("css selector", drawer_css)
            assert toggle is not None, (name, width)
            assert not browser.execute_script(IN_VIEW, drawer), (name, width)  # closed
            for _ in range(40):  # Tab reaches the toggle, near the top
                ActionChains(browser).send_keys(Keys.TAB).perform()
                if browser.switch_to.active_element == toggle:
                    break
            assert browser.switch_to.active_element == toggle, (name, width)
            assert toggle.tag_name == "button"  # furo's label takes no focus
            assert toggle.get_attribute("aria-expanded") == "false"
            ActionChains(browser).send_keys(Keys.ENTER).perform()
            assert browser.execute_script(IN_VIEW, drawer), (name, width)  # open
            assert toggle.get_attribute("aria-expanded") == "true"
            assert browser.execute_script("return arguments[0].contains(document.activeElement)", drawer), name
            ActionChains(browser).send_keys(Keys.ESCAPE).perform()
            assert not browser.execute_script(IN_VIEW, drawer), (name, width)  # closed again
            assert browser.switch_to.active_element == toggle  # the focus back where it was
            assert toggle.get_attribute("aria-expanded") == "false"
            browser.execute_script("document.activeElement.blur(); window.scrollTo(0, 0);")
    finally:
        browser.set_window_size(1100, 900)


@pytest.mark.slow  # the site's build, and Chromium
@pytest.mark.parametrize("width", [1280, 390, 320])
def test_the_console_on_start_here_starts_from_the_keyboard_and_its_button_reads_whole(
    site: Site, browser: Any, width: int
) -> None:
    import _lite
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    try:
        with _lite.served(site.html) as server:  # the console's page is opened over HTTP, as a reader does
            browser.set_window_size(width, 900)
            browser.get(f"{server}/start-here.html")
            button = browser.find_element("css selector", ".jupyterlite_sphinx_try_it_button")
            fits = browser.execute_script(
                "const b = arguments[0], r = b.getBoundingClientRect(),"
                " box = b.parentElement.getBoundingClientRect();"
                "return b.scrollWidth <= b.clientWidth + 1 && b.scrollHeight <= b.clientHeight + 1"
                " && r.left >= box.left && r.right <= box.right;",
                button,
            )
            assert fits, width  # its words inside it, and it inside its box
            assert button.get_attribute("role") == "button"
            for _ in range(60):
                ActionChains(browser).send_keys(Keys.TAB).perform()
                if browser.switch_to.active_element == button:
                    break
            assert browser.switch_to.active_element == button, width
            ActionChains(browser).send_keys(Keys.ENTER).perform()
            frames = browser.find_elements("css selector", ".jupyterlite_sphinx_iframe_container iframe")
            assert len(frames) == 1
            assert frames[0].get_attribute("title")  # a frame says what it holds
            assert browser.switch_to.active_element == frames[0]  # the keyboard goes on into the console
            browser.get("about:blank")  # the console's kernel need not start
    finally:
        browser.set_window_size(1100, 900)


@pytest.mark.slow  # the site's build, and Chromium
def test_the_arrow_keys_scroll_a_steppers_table_wider_than_its_box(site: Site, browser: Any) -> None:
    # on a phone the table of steps is wider than its box; with the focus in it, ← → scroll it to
    # the contribution and running-total columns (as ↑ ↓ scroll it down), where they would step
    from selenium.webdriver.common.keys import Keys

    try:
        open_page(browser, site, "tutorials/stepping-through-a-pass", 320, "light")
        box = browser.find_elements("css selector", ".vjs-table-box")[0]
        root = browser.find_elements("css selector", ".vjs-root")[0]
        assert browser.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth + 1", box)
        browser.execute_script("arguments[0].focus()", box)
        for _ in range(3):
            browser.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
        assert browser.execute_script("return arguments[0].scrollLeft", box) > 0
        assert root.get_attribute("data-step") == "0"
        browser.execute_script("arguments[0].querySelector('[data-role=\"next\"]').focus()", root)
        browser.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)  # elsewhere in the stepper they step
        assert root.get_attribute("data-step") == "1"
    finally:
        browser.set_window_size(1100, 900)


@pytest.mark.slow  # the site's build, Chromium and axe-core
def test_axe_finds_no_violation_at_all_on_any_page_of_the_site(site: Site, browser: Any) -> None:
    # every page the build writes (the reference, the index, search...), not only the path; on a
    # phone, where most code scrolls and so is a region; every impact, minor too
    source = _browser.axe_source()
    pages = sorted(
        str(path.relative_to(site.html).with_suffix(""))
        for path in site.html.rglob("*.html")
        if path.relative_to(site.html).parts[0] not in ("lite", "_static", "_images", "_sources")
    )
    assert len(pages) > 30
    found = {}
    try:
        for page in pages:
            open_page(browser, site, page, 390, "light")
            violations = _browser.axe_violations(browser, source, ("critical", "serious", "moderate", "minor"))
            if violations:
                found[page] = violations
    finally:
        browser.set_window_size(1100, 900)
    assert found == {}
