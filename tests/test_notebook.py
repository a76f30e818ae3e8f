"""examples/notebook.ipynb: committed without outputs, and it runs top to bottom in a real kernel
(nbclient with ipykernel), showing the four documented cases, the table and the stepper.

``python tests/test_notebook.py DIR`` also writes DIR/notebook.png: the executed notebook
exported to HTML by nbconvert, its first stepper photographed in headless Chromium.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vjpgrad.cli.cases import CASES

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"


def test_the_notebook_is_committed_without_outputs() -> None:
    notebook = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code
    for cell in code:
        assert cell["outputs"] == []
        assert cell["execution_count"] is None


def execute(directory: Path) -> Any:
    """The notebook run in a fresh kernel, in ``directory`` (where its cells write files), with
    this checkout's vjpgrad first on the path."""
    nbformat = pytest.importorskip("nbformat", reason="running the notebook needs nbformat")
    nbclient = pytest.importorskip("nbclient", reason="running the notebook needs nbclient")
    pytest.importorskip("ipykernel", reason="running the notebook needs ipykernel")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    paths = [str(ROOT / "src"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)  # the kernel inherits it
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(directory)}}
    )
    client.execute()
    return notebook


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the notebook runs in, as a reader's own folder would be."""
    return tmp_path_factory.mktemp("notebook")


@pytest.fixture(scope="module")
def executed(workdir: Path) -> Iterator[Any]:
    saved = os.environ.get("PYTHONPATH")
    try:
        yield execute(workdir)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def printed(cell: Any) -> str:
    return "".join(out.get("text", "") for out in cell["outputs"] if out["output_type"] == "stream")


def html_outputs(cell: Any) -> list[str]:
    return [
        out["data"]["text/html"]
        for out in cell["outputs"]
        if out["output_type"] in ("execute_result", "display_data") and "text/html" in out["data"]
    ]


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?(?:inf|\d+\.?\d*(?:e[+-]\d+)?)", text)]


def code_cells(notebook: Any) -> list[Any]:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def test_the_notebook_runs_without_errors(executed: Any) -> None:
    for cell in code_cells(executed):
        assert all(out["output_type"] != "error" for out in cell["outputs"]), cell.source
        assert all(out.get("name") != "stderr" for out in cell["outputs"]), cell.source


def test_the_four_cases_print_the_documented_gradients(executed: Any) -> None:
    cells = [cell for cell in code_cells(executed) if cell.source.startswith("# Example")]
    assert len(cells) == len(CASES) == 4
    for cell, case in zip(cells, CASES, strict=True):
        lines = {line.split(" ", 1)[0]: line for line in printed(cell).splitlines()}
        for name, documented in case.documented.items():  # e.g. "tensor([3.3003])", "tensor(3.)"
            assert numbers(lines[name].split(" ", 1)[1]) == pytest.approx(numbers(documented), rel=1e-4), case.title


def test_the_explanation_shows_as_text_and_as_a_table(executed: Any) -> None:
    (text_cell,) = [cell for cell in code_cells(executed) if "print(e)" in cell.source]
    assert "c.grad += 1 x 10 = 10" in printed(text_cell)  # d log(c)/dc = 1/c at c = 0.1
    (table_cell,) = [cell for cell in code_cells(executed) if cell.source.startswith("e  #")]
    (table,) = html_outputs(table_cell)  # a bare explanation in a cell: its own rich display
    assert "<table" in table
    assert "b.grad += 1 × 2 + 1 × 2 = 4" in table


def test_case_1_shows_c_after_its_backward_with_its_gradients(executed: Any) -> None:
    (cell,) = [cell for cell in code_cells(executed) if cell.source.startswith("# Example 1")]
    assert cell.source.rstrip().splitlines()[-1].startswith("c  #")  # c itself, not c.grad, ends the cell
    (table,) = html_outputs(cell)
    rows = dict(re.findall(r"<tr><th[^>]*>(data|grad)</th>(.*?)</tr>", table))
    assert numbers(re.sub(r"<[^>]+>", " ", rows["data"])) == [6.0, 7.0, 8.0]
    # c.grad = v / c = 0.1/6, 1/7, 0.0001/8
    assert numbers(re.sub(r"<[^>]+>", " ", rows["grad"])) == pytest.approx([0.1 / 6, 1 / 7, 0.0001 / 8], rel=1e-5)


def test_the_picture_is_drawn_after_backward_as_svg_or_says_what_it_needs(executed: Any) -> None:
    (cell,) = [cell for cell in code_cells(executed) if "vjpgrad.draw(" in cell.source and "display(" in cell.source]
    assert cell.source.index("y.backward(") < cell.source.index("vjpgrad.draw(")
    svgs = [out["data"]["image/svg+xml"] for out in cell["outputs"] if "image/svg+xml" in out.get("data", {})]
    if svgs:
        assert "<svg" in svgs[0]
        boxes = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svgs[0]))
        assert "grad 3" in boxes  # case 2: a.grad = 3, shown because the pass ran before the drawing
        assert "grad 4" in boxes
        assert "grad 10" in boxes
    else:
        assert "pip install graphviz (or pip install -e '.[viz]'" in printed(cell)


def test_the_stepper_is_saved_as_a_page_to_open_in_a_browser(executed: Any, workdir: Path) -> None:
    (cell,) = [cell for cell in code_cells(executed) if "to_html()" in cell.source]
    page = workdir / "pass.html"
    assert f"wrote {page.resolve()}" in printed(cell)
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert '<div class="vjs-root"' in text
    assert not re.search(r"(?:src|href)=[\"']https?:", text)  # nothing fetched: it opens offline


def test_the_steppers_show_inline_and_end_at_the_documented_gradients(executed: Any) -> None:
    cells = [cell for cell in code_cells(executed) if any('class="vjs-root"' in out for out in html_outputs(cell))]
    assert len(cells) == 2
    finals = []
    for cell in cells:
        (page,) = html_outputs(cell)
        assert '<div class="vjs-root"' in page
        match = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', page)
        assert match
        data = json.loads(match[1])
        totals = {s["name"]: float(s["value"]) for s in data["start"]}
        for step in data["steps"]:
            totals[step["operand"]] = float(step["total"])
        finals.append(totals)
    # case 2 (scalars): tensor(3.), tensor(4.), tensor(10.)
    assert [finals[0][name] for name in "abc"] == pytest.approx([3.0, 4.0, 10.0])
    # case 1 (Vector, seeds 0.1, 1, 0.0001): b.grad = [1.2, 16, 0.002]
    assert [finals[1][f"b[{i}]"] for i in range(3)] == pytest.approx([1.2, 16.0, 0.002])


def save_screenshot(directory: Path) -> Path:
    """docs/notebook.png: the executed notebook as nbconvert's HTML, the first stepper's cell in Chromium."""
    import tempfile

    from nbconvert import HTMLExporter
    from selenium.webdriver.common.by import By
    from test_browser import start_browser

    os.environ["PYTHONPATH"] = str(ROOT / "src")
    with tempfile.TemporaryDirectory() as scratch:
        notebook = execute(Path(scratch))
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(notebook)
    driver = start_browser(1000, 1400)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            page = Path(scratch) / "notebook.html"
            page.write_text(body, encoding="utf-8")
            driver.get(page.as_uri())
            root = driver.find_element(By.CSS_SELECTOR, ".vjs-root")
            for _ in range(3):
                driver.find_element(By.CSS_SELECTOR, '.vjs-root [data-role="next"]').click()
            cell = root.find_element(By.XPATH, "ancestor::div[contains(concat(' ', @class, ' '), ' jp-Cell ')][1]")
            target = directory / "notebook.png"
            driver.execute_script("arguments[0].scrollIntoView()", cell)
            cell.screenshot(str(target))
    finally:
        driver.quit()
    return target


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    print(save_screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs")))
