"""The documentation site's JupyterLite in headless Chromium, offline: the site served on 127.0.0.1,
a browser with a profile of its own that resolves no other host, and Start here's console clicked
and read. tests/test_browser_lite.py checks with it, and benchmarks/lite_cold_start.py times with
it, so the figure the benchmark prints is the one the test bounds.

Selenium is imported when a browser starts: importing this module needs only the standard library
and ``_browser`` (Chromium's flags and where it is).
"""

from __future__ import annotations

import functools
import http.server
import json
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _browser import CHROMIUM, DRIVER, FLAGS

README_A_GRAD = "tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])"
"""The first line the console prints: the README example's ``a.grad`` (its first result)."""
README_B_GRAD = "tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])"

WAIT = 240.0
"""Seconds to wait for a result at most (a kernel that never starts)."""

OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
"""Chromium's flag that makes every host but 127.0.0.1 unresolvable."""


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the site quietly, noting in ``served`` each request's path and when it came and was answered."""

    log: list[tuple[str, float, float]] | None = None

    def do_GET(self) -> None:
        came = time.monotonic()
        super().do_GET()
        if self.log is not None:
            self.log.append((self.path, came, time.monotonic()))

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def served(html: Path, log: list[tuple[str, float, float]] | None = None) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1, a free port (a service worker and the kernel's fetches
    need HTTP, not file:); yields its address. Each request is added to ``log`` when given: its path,
    and the ``time.monotonic()`` when it came and when its answer was sent (the requests of the
    kernel's Web Worker too, which the browser's own log leaves out)."""
    handler = functools.partial(type("Handler", (_Handler,), {"log": log}), directory=str(html))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def offline_chromium(profile: Path | None = None) -> Any:
    """Headless Chromium that resolves no host but 127.0.0.1 and logs every request it makes.

    Its profile is ``profile``, or a new empty folder: with a new one nothing is cached (no HTTP
    cache, no service worker, no IndexedDB), so the first page it opens is a true cold start."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if profile is None:
        profile = Path(tempfile.mkdtemp(prefix="vjpgrad-lite-chromium-"))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM or ""
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument("--window-size=1300,1000")
    options.add_argument(OFFLINE)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER or ""), options=options)
    driver.set_page_load_timeout(120)
    return driver


def requested(driver: Any) -> list[str]:
    """The URLs the page asked for since the browser's performance log was last read (each read
    empties it). Its Web Workers' requests are not there: ``served``'s log has them."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def outputs(driver: Any) -> str:
    return str(
        driver.execute_script(
            "return Array.from(document.querySelectorAll('.jp-OutputArea-output'), (e) => e.textContent).join('\\n');"
        )
    )


def wait_for(driver: Any, *texts: str, timeout: float = WAIT) -> tuple[str, float]:
    """Wait until every text is in the page's outputs; returns them and the seconds waited."""
    started = time.monotonic()
    seen = ""
    while time.monotonic() - started < timeout:
        seen = outputs(driver)
        if all(text in seen for text in texts):
            return seen, time.monotonic() - started
        if "Traceback" in seen or "Error" in seen.split("\n")[-1]:
            break
        time.sleep(0.1)
    raise AssertionError(f"waited {time.monotonic() - started:.0f} s for {texts!r}; the outputs say:\n{seen[-3000:]}")


def element(driver: Any, css: str, page: str, *, reload: bool, timeout: float = 60.0) -> Any:
    """The first element of the open page that matches ``css``, waited for up to ``timeout`` s.

    With ``reload``, the page is asked for once more if it has finished loading without one: CI
    once found no button on Start here right after ``get`` returned, on a busy machine, where the
    built page has it. If none comes, the error says what the browser shows (address, title,
    state, text), where Selenium's own said only that the element was not there."""
    from selenium.webdriver.common.by import By

    started = time.monotonic()
    asked_again = False
    while True:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        if found:
            return found[0]
        state = driver.execute_script("return document.readyState;")
        waited = time.monotonic() - started
        if waited > timeout:
            text = driver.execute_script("return document.body ? document.body.innerText : '';")
            raise AssertionError(
                f"no {css!r} on {page} after {waited:.0f} s: the browser shows {driver.current_url!r}, "
                f"titled {driver.title!r}, {state}, reading:\n{str(text)[:800]}"
            )
        if reload and state == "complete" and not asked_again and waited > 2.0:
            asked_again = True
            driver.get(page)
        time.sleep(0.2)


def open_console(driver: Any, server: str) -> float:
    """Open Start here, click its console's button and go into the console's frame; returns
    ``time.monotonic()`` at the click (the caller goes back with ``switch_to.default_content()``)."""
    page = f"{server}/start-here.html"
    driver.get(page)
    button = element(driver, ".jupyterlite_sphinx_try_it_button", page, reload=True)
    clicked = time.monotonic()
    button.click()
    frame = element(driver, ".jupyterlite_sphinx_iframe_container iframe", page, reload=False)
    driver.switch_to.frame(frame)
    return clicked


def first_result(driver: Any, server: str) -> tuple[float, float]:
    """When Start here's console was clicked (``time.monotonic()``), and the seconds from the click
    to its first result printed (the README example's ``a.grad``): the cold start, in a new profile."""
    clicked = open_console(driver, server)
    try:
        wait_for(driver, README_A_GRAD)
        return clicked, time.monotonic() - clicked
    finally:
        driver.switch_to.default_content()


def phases(log: list[tuple[str, float, float]], clicked: float) -> list[tuple[str, float]]:
    """Where a start went, from ``served``'s log, in seconds from the click: when the kernel's worker
    asked for Pyodide (the app's page and scripts loaded before), and when the last file of Pyodide's
    core, of the wheels it loads as the kernel starts, and of the wheels piplite installs after (none
    when the kernel's own are preloaded) was sent. After the last, Pyodide starts, unpacks the
    wheels and the kernel imports IPython: the browser does not say how long each of those takes."""

    def file(path: str) -> str:
        return path.split("?")[0]

    stages = (
        ("the worker asks for Pyodide", lambda path: "/static/pyodide/" in path, False),
        ("Pyodide's core sent", lambda path: file(path).endswith(("pyodide.asm.wasm", "python_stdlib.zip")), True),
        ("the preloaded wheels sent", lambda path: "/static/pyodide/" in path and file(path).endswith(".whl"), True),
        ("piplite's wheels sent", lambda path: "/static/pypi/" in path and file(path).endswith(".whl"), True),
    )
    found = []
    for name, matches, last in stages:
        times = [answered if last else came for path, came, answered in log if came >= clicked and matches(path)]
        if times:
            found.append((name, (max(times) if last else min(times)) - clicked))
    return found
