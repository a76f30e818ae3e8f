"""The stepper in a real browser: headless Chromium (Debian's chromium and chromium-driver
packages) driven by Selenium. Skips when any of the three is missing.

``python tests/test_browser.py DIR`` also writes DIR/stepper.png, the picture in the docs.
"""

from __future__ import annotations

import math
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _helpers import backward_gradients

pytest.importorskip("selenium", reason="the browser tests need selenium (pip install selenium)")

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.wait import WebDriverWait

from vjpgrad import Explanation, Value, Vector, explain, log
from vjpgrad.display.stepper import stepper_fragment, stepper_html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="the browser tests need Chromium and its driver (apt-get install chromium chromium-driver)",
)
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

Graph = tuple[Value | Vector, dict[str, Value | Vector], list[float] | None]


def case_1() -> Graph:
    a, b, c = Vector([1.0, 2.0, 3.0]), Vector([3.0, 4.0, 5.0]), Vector([6.0, 7.0, 8.0])
    return 3 * a + 2 * b * b + log(c), {"a": a, "b": b, "c": c}, [0.1, 1.0, 0.0001]


def case_2() -> Graph:
    a, b, c = Value(0.1), Value(1.0), Value(0.1)
    return 3 * a + 2 * b * b + log(c), {"a": a, "b": b, "c": c}, None


def case_3() -> Graph:
    a, b, c = Vector.empty(1), Vector.empty(1), Vector.empty(1)
    return 3 * a + 2 * b * b + log(c), {"a": a, "b": b, "c": c}, [0.1, 1.0, 0.0001]


def squares() -> Graph:
    x = Value(0.5)
    return (x * x).sin() * (x * x), {"x": x}, None  # x * x used twice; x used twice by one node


def start_browser(width: int = 1100, height: int = 900) -> Any:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='vjpgrad-chromium-')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(DRIVER or ""), options=options)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        driver = start_browser()
    except WebDriverException as error:
        pytest.skip(f"Chromium did not start: {error.msg}")
    yield driver
    driver.quit()


def open_page(browser: Any, path: Path, page: str) -> Any:
    path.write_text(page, encoding="utf-8")
    browser.get(path.as_uri())
    browser.get_log("browser")  # start each page with an empty log
    return browser.find_element(By.CSS_SELECTOR, ".vjs-root")


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


def same(x: float, y: float) -> bool:
    return x == y or (math.isnan(x) and math.isnan(y))


def check_step(browser: Any, e: Explanation, k: int) -> dict[str, Any]:
    s = state(browser)
    assert s["step"] == s["attribute"] == k
    shown = {name: total for name, total, _ in s["totals"]}
    expected = expected_totals(e, k)
    assert set(shown) == set(e.names.values())
    for name, total in shown.items():
        if name in expected:
            assert total is not None, (k, name)
            assert same(float(total), expected[name]), (k, name, total, expected[name])
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
        assert same(contribution, step.contribution) or contribution == pytest.approx(step.contribution, rel=1e-5)
        assert f"{step.operand}'s running total" in s["panel"]
    assert s["next"] == (k == len(e.steps))
    assert s["prev"] == (k == 0)
    return s


def severe(browser: Any) -> list[dict[str, Any]]:
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


@pytest.mark.parametrize("graph", [case_1, case_2, case_3, squares], ids=["case1", "case2", "case3", "squares"])
def test_next_walks_the_whole_pass_and_ends_at_backwards_gradients(
    browser: Any, tmp_path: Path, graph: Callable[[], Graph]
) -> None:
    y, names, seed = graph()
    e = explain(y, seed, names=names)
    open_page(browser, tmp_path / "stepper.html", stepper_html(e))
    check_step(browser, e, 0)
    button = browser.find_element(By.CSS_SELECTOR, '[data-role="next"]')
    for k in range(1, len(e.steps) + 1):
        button.click()
        last = check_step(browser, e, k)
    final = {name: float(total) for name, total, _ in last["totals"]}
    for name, grad in backward_gradients(graph).items():
        assert same(final[name], grad), (name, final[name], grad)
    assert "Done: every gradient is complete" in last["panel"]
    button.click()  # disabled at the end: nothing moves
    assert state(browser)["step"] == len(e.steps)
    assert severe(browser) == []


def test_previous_reset_and_the_keyboard_go_back(browser: Any, tmp_path: Path) -> None:
    y, names, seed = case_2()
    e = explain(y, seed, names=names)
    n = len(e.steps)
    root = open_page(browser, tmp_path / "stepper.html", stepper_html(e))
    find = lambda role: browser.find_element(By.CSS_SELECTOR, f'[data-role="{role}"]')  # noqa: E731
    for _ in range(3):
        find("next").click()
    find("prev").click()
    check_step(browser, e, 2)
    find("prev").click()
    find("prev").click()
    check_step(browser, e, 0)
    find("prev").click()  # disabled at 0
    check_step(browser, e, 0)
    root.send_keys(Keys.ARROW_RIGHT)
    check_step(browser, e, 1)
    root.send_keys(Keys.END)
    check_step(browser, e, n)
    root.send_keys(Keys.ARROW_LEFT)
    check_step(browser, e, n - 1)
    find("reset").click()
    check_step(browser, e, 0)
    root.send_keys(Keys.END)
    root.send_keys(Keys.HOME)
    check_step(browser, e, 0)
    browser.find_element(By.CSS_SELECTOR, 'tr[data-step="5"]').click()  # a row of the table jumps there
    check_step(browser, e, 5)
    assert severe(browser) == []


def test_play_runs_to_the_end_and_stops(browser: Any, tmp_path: Path) -> None:
    y, names, seed = case_1()
    e = explain(y, seed, names=names)
    n = len(e.steps)
    open_page(browser, tmp_path / "stepper.html", stepper_html(e))
    Select(browser.find_element(By.CSS_SELECTOR, '[data-role="speed"]')).select_by_visible_text("fastest")
    play = browser.find_element(By.CSS_SELECTOR, '[data-role="play"]')
    play.click()
    assert state(browser)["playing"]
    assert "Pause" in play.text
    WebDriverWait(browser, 10, poll_frequency=0.05).until(lambda d: state(d)["step"] == n)
    s = check_step(browser, e, n)
    assert not s["playing"]
    assert "Play" in play.text
    play.click()  # at the end, Play starts again from the seeds
    play.click()  # and pauses
    paused = state(browser)["step"]
    assert 0 <= paused < n
    assert not state(browser)["playing"]
    check_step(browser, e, paused)
    assert severe(browser) == []


HOSTILE_LABELS = (
    "<script>window.__pwned = 1; alert(1)</script>",
    '<img src=x onerror="window.__pwned = 2">',
    "</script><script>window.__pwned = 3</script>",
    '<svg onload="window.__pwned = 4">',
)


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
    open_page(browser, tmp_path / f"{wrap}.html", page)
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
    assert severe(browser) == []


def save_screenshot(directory: Path) -> Path:
    """docs/stepper.png: the stepper on the second documented case, as b is handed its second contribution."""
    y, names, seed = case_2()
    e = explain(y, seed, names=names)
    driver = start_browser(1000, 700)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            open_page(driver, Path(scratch) / "stepper.html", stepper_html(e))
            for _ in range(8):  # b gets its second contribution: 2 + 2 = 4
                driver.find_element(By.CSS_SELECTOR, '[data-role="next"]').click()
            target = directory / "stepper.png"
            driver.save_screenshot(str(target))
    finally:
        driver.quit()
    return target


if __name__ == "__main__":
    print(save_screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs")))
