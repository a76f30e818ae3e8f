"""The documentation site, built with the documented command and read as a reader would.

The site is built once per session, with the command CONTRIBUTING.md gives
(``python -m sphinx -W --keep-going -b html docs OUT``), into a temporary folder. CI builds it
once itself, in its docs step, into docs/_build/html with the log in docs/_build/build.log,
and names that folder in ``VJPGRAD_DOCS_BUILT``: the tests then read that build instead of
making a second one. The checks:

- the build succeeds with no warning, and every tutorial ran (each code cell has its output);
- the API reference documents every public name, under its public module;
- headless Chromium opens every page with no console error and fetches nothing from the
  network, and the stepper embedded in the tutorial page steps through the pass;
- every internal link of the built site (href and src) resolves to a file, and its anchor to
  an element of that file.

The examples of the pages run as doctests in test_pages.py, on every Python, without Sphinx.
Skips, saying why, when Sphinx and MyST-NB (``pip install -e '.[docs]'``), or Chromium and
Selenium, are absent.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import _browser
import pytest
from _helpers import case_2
from _pages import DOCS, ROOT, docs_pages

from vjpgrad import explain

for module, why in (
    ("sphinx", "Sphinx"),
    ("myst_nb", "MyST-NB"),
    ("furo", "the furo theme"),
    ("jupyterlite_sphinx", "jupyterlite-sphinx"),
):
    pytest.importorskip(module, reason=f"the docs tests need {why}: pip install -e '.[docs]'")

BUILD = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "docs"]
"""The documented command, less its output folder."""


@dataclass(frozen=True)
class Site:
    html: Path
    log: str
    status: int


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    built = os.environ.get("VJPGRAD_DOCS_BUILT")
    if built:  # CI's docs step built it with the same command; its status is the log's last word
        folder = Path(built).resolve()
        log = (folder / "build.log").read_text(encoding="utf-8")
        return Site(folder / "html", log, 0 if "build succeeded" in log else 1)
    out = tmp_path_factory.mktemp("docs") / "html"
    result = subprocess.run([*BUILD, str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    return Site(out, result.stdout + result.stderr, result.returncode)


def page_of(site: Site, source: Path) -> Path:
    """The HTML page the build makes of a source page."""
    return site.html / source.relative_to(DOCS).with_suffix(".html")


def sphinx_warnings(log: str) -> list[str]:
    """Sphinx's warnings in a build log ("file:line: WARNING: text"), not other programs' log lines."""
    return re.findall(r"^.*\bWARNING: .*$", log, flags=re.MULTILINE)


@pytest.mark.slow  # the site's build
def test_the_site_builds_with_no_warnings(site: Site) -> None:
    assert sphinx_warnings("docs/x.md:3: WARNING: a\n[IPKernelApp] WARNING | a kernel's log line\n") == [
        "docs/x.md:3: WARNING: a"
    ]
    assert site.status == 0, site.log[-3000:]
    assert "build succeeded" in site.log
    assert sphinx_warnings(site.log) == []
    for source in docs_pages():
        assert page_of(site, source).is_file(), source


@pytest.mark.slow  # the site's build
def test_every_tutorial_ran_and_shows_each_cells_output(site: Site) -> None:
    # "Your PyTorch code" shows PyTorch code the build cannot run (the docs have no PyTorch):
    # tests/test_bridge_docs.py runs its blocks and checks the output it shows
    tutorials = sorted(p for p in (DOCS / "tutorials").glob("*.md") if p.name != "your-pytorch-code.md")
    assert len(tutorials) == 8
    for source in tutorials:
        cells = source.read_text(encoding="utf-8").count("```{code-cell}")
        page = page_of(site, source).read_text(encoding="utf-8")
        outputs = len(re.findall(r'<div class="cell_output\b', page))
        assert cells >= 5
        assert outputs == cells, f"{source.name}: {outputs} outputs for {cells} cells"
        assert "Traceback" not in page, source.name


def public_names() -> list[str]:
    """Every public name, as docs/conf.py lists them for the build's own check."""
    spec = importlib.util.spec_from_file_location("docs_conf", DOCS / "conf.py")
    assert spec is not None
    assert spec.loader is not None
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return [name for module in conf.PUBLIC_MODULES for name in conf.public_names(module)]


@pytest.mark.slow  # the site's build
def test_the_api_reference_documents_every_public_name_under_its_public_module(site: Site) -> None:
    anchors: set[str] = set()
    for page in (site.html / "reference").glob("*.html"):
        anchors |= set(re.findall(r'<dt class="sig sig-object py" id="([^"]+)"', page.read_text(encoding="utf-8")))
    names = public_names()
    assert {"vjpgrad.Value", "vjpgrad.nn.MLP", "vjpgrad.nn.functional.softmax", "vjpgrad.optim.Adam"} <= set(names)
    assert "vjpgrad.testing.assert_grad_close" in names
    assert [name for name in names if name not in anchors] == []
    assert not [anchor for anchor in anchors if "._" in anchor]  # nothing under a private module


# ---- links ----------------------------------------------------------------------------------


class _Links(HTMLParser):
    """The href and src targets of one page, and the ids (and names) it defines."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []
        self.anchors: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value is None:
                continue
            if key in ("href", "src") and tag in ("a", "link", "script", "img", "iframe", "source"):
                self.targets.append(value)
            elif key == "id" or (key == "name" and tag == "a"):
                self.anchors.add(value)


def parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def broken_links(html: Path) -> tuple[int, list[str]]:
    """(how many internal links were followed, the ones that do not resolve), over every page under html."""
    pages = {page.resolve(): parse(page) for page in html.rglob("*.html")}
    followed, broken = 0, []
    for page, links in pages.items():
        for target in links.targets:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc:
                continue  # another site, or a mail address: not ours to check
            if not parts.path and not parts.fragment:
                continue  # "#": the page itself
            followed += 1
            path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            where = f"{page.relative_to(html.resolve())}: {target}"
            if path.is_dir():
                path = path / "index.html"
            if not path.is_file():
                broken.append(f"{where} (no file)")
            elif parts.fragment and path.suffix == ".html":
                anchors = pages[path].anchors if path in pages else parse(path).anchors
                if unquote(parts.fragment) not in anchors:
                    broken.append(f"{where} (no anchor)")
    return followed, broken


def test_the_link_checker_finds_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="sub/page.html#here">ok</a> <a href="sub/page.html#gone">anchor</a> <a href="nope.html">file</a>'
        ' <a href="https://example.org/x.html">web</a> <img src="sub/pic.png"> <a href="#top">top</a><p id="top">',
        encoding="utf-8",
    )
    (tmp_path / "sub" / "page.html").write_text('<h1 id="here">x</h1><a href="../index.html">up</a>', encoding="utf-8")
    (tmp_path / "sub" / "pic.png").write_bytes(b"")
    followed, broken = broken_links(tmp_path)
    assert followed == 6
    assert broken == ["index.html: sub/page.html#gone (no anchor)", "index.html: nope.html (no file)"]


@pytest.mark.slow  # the site's build
def test_every_internal_link_of_the_site_resolves_to_a_file_and_an_anchor(site: Site) -> None:
    followed, broken = broken_links(site.html)
    assert followed > 500  # every page links the others (the sidebar), its styles and scripts
    assert broken == []


# ---- in a browser ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from _browser.browser()


FETCHED = "return performance.getEntriesByType('resource').map((entry) => entry.name)"


@pytest.mark.slow  # the site's build
def test_every_page_opens_in_chromium_with_no_console_error_and_fetches_nothing(site: Site, browser: Any) -> None:
    # not the JupyterLite app under lite/: it runs over HTTP only, tested so in test_browser_lite.py
    pages = sorted(page for page in site.html.rglob("*.html") if page.relative_to(site.html).parts[0] != "lite")
    assert len(pages) >= len(docs_pages())
    for page in pages:
        browser.get(page.as_uri())
        errors = [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
        assert errors == [], page.relative_to(site.html)
        fetched = browser.execute_script(FETCHED)
        assert [url for url in fetched if not url.startswith(("file:", "data:"))] == [], page.relative_to(site.html)


@pytest.mark.slow  # the site's build
def test_the_stepper_in_the_tutorial_page_steps_through_the_pass(site: Site, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    browser.get((site.html / "tutorials" / "stepping-through-a-pass.html").as_uri())
    browser.get_log("browser")
    steppers = browser.find_elements(By.CSS_SELECTOR, ".vjs-root")
    assert len(steppers) == 2  # case 2, then case 1
    # the page's first stepper is case 2 of the answer: explain it here and hold the page to it
    y, names, seed = case_2()
    e = explain(y, seed, names=names)
    _browser.check_step(browser, e, 0)
    next_button = steppers[0].find_element(By.CSS_SELECTOR, '[data-role="next"]')
    for k in range(1, len(e.steps) + 1):
        # furo scrolls smoothly, and the stepper scrolls its table to the current row: bring the button
        # into view at once, or the click lands where it was
        browser.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", next_button)
        next_button.click()
        last = _browser.check_step(browser, e, k)
    final = {name: float(total) for name, total, _ in last["totals"]}
    assert (final["a"], final["b"], final["c"]) == (3.0, 4.0, 10.0)  # case 2's gradients
    second = steppers[1].find_element(By.CSS_SELECTOR, '[data-role="step-index"]')
    assert second.text == "0"  # each stepper on the page steps on its own
    assert _browser.severe(browser) == []


@pytest.mark.slow  # the site's build
def test_the_build_log_says_nothing_a_reader_of_the_build_does_not_need(site: Site) -> None:
    for noise in ("Kernel is running over TCP", "MdParserConfig(", "NbParserConfig(", "Executing notebook with kernel"):
        assert noise not in site.log, noise


@pytest.mark.slow  # the site's build
def test_the_reference_types_vectors_methods_as_returning_a_vector(site: Site) -> None:
    page = (site.html / "reference" / "vjpgrad.html").read_text(encoding="utf-8")
    returns = re.findall(r'<span class="sig-return-typehint">(.*?)</span></span>', page)
    assert returns
    assert not [r for r in returns if ">_V<" in r]


@pytest.mark.slow  # the site's build
def test_each_tutorial_that_builds_a_graph_draws_it_and_start_here_draws_the_jacobian(site: Site) -> None:
    for name in ("first-backward", "seeds-and-vjps", "stepping-through-a-pass"):
        page = (site.html / "tutorials" / f"{name}.html").read_text(encoding="utf-8")
        pictures = re.findall(r'<div class="cell_output[^"]*">.*?<img [^>]*src="([^"]+\.svg)"', page, re.S)
        assert pictures, name  # draw()'s picture, in a cell's output (MyST-NB writes it as a file)
        for picture in pictures:
            assert "<svg" in (site.html / "tutorials" / picture).read_text(encoding="utf-8")
    start_here = (site.html / "start-here.html").read_text(encoding="utf-8")
    assert '<table class="vjp-matrix">' in start_here
    assert (site.html / "coming-from-micrograd.html").read_text(encoding="utf-8").count("micrograd-draw-dot.svg") == 1


@pytest.mark.slow  # the site's build
def test_every_picture_of_the_site_says_what_it_shows(site: Site) -> None:
    # a cell's picture (draw()'s graph) is written by MyST-NB as an <img> whose alt text is its
    # file's path unless the cell gives one: a screen reader read "../_images/1cd8f4...svg"
    said: dict[str, list[str | None]] = {}
    for path in site.html.rglob("*.html"):
        if path.relative_to(site.html).parts[0] in ("lite", "_static", "_images", "_sources"):
            continue
        for tag in re.findall(r"<img\b[^>]*>", path.read_text(encoding="utf-8")):
            alt = re.search(r'\balt="([^"]*)"', tag)
            if alt is None or re.search(r"\.(svg|png|jpe?g|gif)\b|_images/", alt[1]):
                said.setdefault(str(path.relative_to(site.html)), []).append(alt[1] if alt else None)
    assert said == {}


OUTPUT_IN_VIEW = """
const found = [];
for (const root of document.querySelectorAll(".vjs-root")) {
  const box = root.querySelector(".vjs-graph-box");
  box.scrollIntoView({block: "start", behavior: "instant"});
  const b = box.getBoundingClientRect();
  const data = JSON.parse(root.querySelector('script[type="application/json"]').textContent);
  const start = data.steps[0].node;  // the output of the first step: where the pass starts
  const o = Array.from(root.querySelectorAll(".vjs-node.vjs-output"))
    .find((el) => el.getAttribute("data-node") === start).getBoundingClientRect();
  found.push({box: [b.left, b.top, b.right, b.bottom], output: [o.left, o.top, o.right, o.bottom],
              width: document.documentElement.clientWidth, height: window.innerHeight});
}
return found;
"""


@pytest.mark.slow  # the site's build, and Chromium
@pytest.mark.parametrize("width", [1280, 800])
def test_the_tutorials_steppers_show_the_output_where_the_pass_starts(site: Site, browser: Any, width: int) -> None:
    browser.set_window_size(width, 900)
    try:
        browser.get((site.html / "tutorials" / "stepping-through-a-pass.html").as_uri())
        drawn = "return document.querySelectorAll('.vjs-root .vjs-graph-box').length"
        waited = time.monotonic() + 30  # the steppers are drawn by the page's script after it loads
        while browser.execute_script(drawn) < 2 and time.monotonic() < waited:
            time.sleep(0.1)
        found = browser.execute_script(OUTPUT_IN_VIEW)
        assert len(found) == 2
        for seen in found:
            left, top, right, bottom = seen["output"]
            assert left >= 0
            assert right <= seen["width"]
            assert top >= 0
            assert bottom <= seen["height"]
            assert seen["box"][0] <= left
            assert right <= seen["box"][2]
            assert seen["box"][1] <= top
            assert bottom <= seen["box"][3]
    finally:
        browser.set_window_size(1100, 900)
