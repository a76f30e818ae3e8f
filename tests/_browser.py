"""Headless Chromium driven by Selenium, for the tests that open a page in a real browser (the
stepper, the documentation site, the example notebook's picture), and what they read off a stepper.

Selenium is imported when a browser starts, so a test module that imports this one runs its other
tests without it; ``browser()`` skips, saying why, when Selenium, Chromium or its driver is missing.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _helpers import equal_or_both_nan

from vjpgrad import Explanation

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
]


def start_browser(width: int = 1100, height: int = 900) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='vjpgrad-chromium-')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(DRIVER or ""), options=options)


def missing(why: str) -> None:
    """Skip, saying why; in CI (CI=true), where an environment that has Selenium is the one meant to
    run the browser tests, fail instead: a browser test never passes there by not running."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {why}", pytrace=False)
    pytest.skip(why)


def browser() -> Iterator[Any]:
    """A started Chromium for a fixture to yield (quit at the end), or a skip that says what is missing
    (a failure in CI once Selenium is there: see ``missing``)."""
    pytest.importorskip("selenium", reason="the browser tests need selenium (pip install selenium)")
    from selenium.common.exceptions import WebDriverException

    if CHROMIUM is None or DRIVER is None:
        missing("the browser tests need Chromium and its driver (apt-get install chromium chromium-driver)")
    try:
        driver = start_browser()
    except WebDriverException as error:
        missing(f"Chromium did not start: {error.msg}")
    yield driver
    driver.quit()


AXE = os.environ.get("VJPGRAD_AXE", "")
"""axe-core's axe.min.js, which .ci/run takes from the npm registry (a pinned version) and names here."""


def axe_source() -> str:
    """axe-core's script, or a skip saying how to get it (a failure in CI)."""
    if not AXE or not Path(AXE).is_file():
        missing(
            "the accessibility tests need axe-core: npm pack axe-core@4.14.1, unpack it, and set "
            "VJPGRAD_AXE to its package/axe.min.js"
        )
    return Path(AXE).read_text(encoding="utf-8")


RUN_AXE = """
const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ["violations"]}).then(
  (r) => done(r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
                                        targets: v.nodes.slice(0, 5).map((n) => n.target.join(" "))}))),
  (e) => done([{id: "axe-error", impact: "critical", help: String(e), targets: []}]));
"""


def axe_violations(browser: Any, source: str, impacts: tuple[str, ...] = ("critical", "serious")) -> list[Any]:
    """axe-core's violations of the open page with one of ``impacts``: id, impact, help, where."""
    if not browser.execute_script("return typeof axe !== 'undefined'"):
        browser.execute_script(source)
    found: list[Any] = browser.execute_async_script(RUN_AXE)
    return [v for v in found if v["impact"] in impacts]


def open_page(browser: Any, path: Path, page: str) -> Any:
    from selenium.webdriver.common.by import By

    path.write_text(page, encoding="utf-8")
    browser.get(path.as_uri())
    browser.get_log("browser")  # start each page with an empty log
    return browser.find_element(By.CSS_SELECTOR, ".vjs-root")


# ---- a stepper's state, read in the page -----------------------------------------------------------

READ_STATE = """
const root = document.querySelector(".vjs-root");
const texts = (selector) => Array.from(root.querySelectorAll(selector), (el) => el.textContent);
const named = (cls) => Array.from(root.querySelectorAll(".vjs-node." + cls), (el) => el.getAttribute("data-node"));
const edge = root.querySelector('[data-role="current-edge"]');
return {
  step: Number(root.querySelector('[data-role="step-index"]').textContent),
  attribute: Number(root.getAttribute("data-step")),
  totals: Array.from(root.querySelectorAll("[data-node]"),
                     (el) => [el.getAttribute("data-node"), el.getAttribute("data-total"),
                              el.querySelector(".vjs-total").textContent]),
  hot: Array.from(root.querySelectorAll(".vjs-edge.vjs-hot"),
                  (el) => [el.getAttribute("data-to"), el.getAttribute("data-from")]),
  current: [edge.getAttribute("data-from"), edge.getAttribute("data-to")],
  terms: texts('[data-role="panel"] .vjs-term > span'),
  panel: root.querySelector('[data-role="panel"]').textContent,
  giving: named("vjs-giving"),
  receiving: named("vjs-receiving"),
  next: root.querySelector('[data-role="next"]').disabled,
  prev: root.querySelector('[data-role="prev"]').disabled,
  playing: root.hasAttribute("data-playing"),
};
"""


def state(browser: Any) -> dict[str, Any]:
    result: dict[str, Any] = browser.execute_script(READ_STATE)
    return result


def expected_totals(e: Explanation, k: int) -> dict[str, float]:
    """Each node's running total after k steps, straight from explain's rows."""
    totals: dict[str, float] = {}
    for name, seed in e.seeds:
        totals[name] = totals.get(name, 0.0) + seed
    for step in e.steps[:k]:
        totals[step.operand] = step.total
    return totals


def check_step(browser: Any, e: Explanation, k: int) -> dict[str, Any]:
    s = state(browser)
    assert s["step"] == s["attribute"] == k
    shown = {name: total for name, total, _ in s["totals"]}
    expected = expected_totals(e, k)
    assert set(shown) == set(e.names.values())
    for name, total in shown.items():
        if name in expected:
            assert total is not None, (k, name)
            assert equal_or_both_nan(float(total), expected[name]), (k, name, total, expected[name])
        else:
            assert total is None, (k, name)  # not reached yet: no total
    if k == 0:
        assert s["hot"] == []
        assert s["current"] == [None, None]
        assert "Step 0: the seeds" in s["panel"]
    else:
        step = e.steps[k - 1]
        assert len(s["hot"]) == 1
        assert s["hot"][0] == [step.node, step.operand]
        assert s["current"] == [step.node, step.operand]
        assert s["giving"] == [step.node]
        assert s["receiving"] == [step.operand]
        upstream, local, contribution = (float(t) for t in s["terms"])
        assert upstream == pytest.approx(step.upstream, rel=1e-5)
        assert local == pytest.approx(step.local, rel=1e-5, abs=1e-300) or math.isinf(step.local)
        assert equal_or_both_nan(contribution, step.contribution) or contribution == pytest.approx(
            step.contribution, rel=1e-5
        )
        assert f"{step.operand}'s running total" in s["panel"]
    assert s["next"] == (k == len(e.steps))
    assert s["prev"] == (k == 0)
    return s


def severe(browser: Any) -> list[dict[str, Any]]:
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
