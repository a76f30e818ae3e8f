"""The examples/ folder: each script runs and prints what it claims; examples/gpt.py, a tiny GPT on
names, learns (its loss falls), samples names, and its training step reads no data;
examples/notebook.ipynb is committed without outputs and runs top to bottom in a real kernel
(nbclient with ipykernel), showing the four documented cases, the table and the stepper. (The four
cases' own scripts, example_1.py to example_4.py, are checked in test_seeds.py.)

``python tests/test_examples.py DIR`` also writes DIR/notebook.png: the executed notebook exported
to HTML by nbconvert, its first stepper photographed in headless Chromium.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import vjpgrad
from vjpgrad.cli.cases import CASES

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))

import gpt  # noqa: E402 - examples/gpt.py, found on the path just set

# ---- the scripts ---------------------------------------------------------------------------------


def run(script: str, *args: str) -> str:
    result = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_jacobian_view_shows_backward_is_v_transpose_j() -> None:
    out = run("jacobian_view.py")
    assert "backward(v) gives exactly v^T J" in out
    assert "a.grad       = [0.30000000000000004, 3.0, 0.00030000000000000003]" in out


def test_custom_op_example_is_stable_and_checks_its_gradient() -> None:
    out = run("custom_op.py")
    assert "softplus(1000) = 1000.0, d/dx = 1.0" in out
    assert "softplus''(0.3) = 0.244458" in out
    assert "gradcheck: True" in out


# ---- examples/gpt.py -----------------------------------------------------------------------------


def test_the_names_are_lowercase_letters_one_per_line() -> None:
    names = gpt.load_names()
    assert len(names) > 5000
    assert len(set(names)) == len(names)
    assert all(name.isalpha() and name.islower() and name.isascii() for name in names)
    assert {"mary", "james", "linda", "john"} <= set(names)
    assert max(len(name) for name in names) + 1 < 16  # every name and its end token fit the block


def test_the_gpt_example_counts_the_name_lengths_it_recorded_and_those_it_compiled() -> None:
    # a length met once is recorded (its first step) and never compiled (no second step)
    steps, seed = 8, 3
    names = gpt.load_names()
    random.Random(seed).shuffle(names)  # the order train() takes them in
    met: dict[int, int] = {}
    for name in names[:steps]:
        met[len(name)] = met.get(len(name), 0) + 1
    again = sum(1 for count in met.values() if count >= 2)
    assert 0 < again < len(met)  # the case this checks: some lengths met once, some again
    lines: list[str] = []
    gpt.train(steps=steps, seed=seed, n_embd=4, report_every=steps, out=lines.append)
    assert lines[-1].startswith(f"compile: {len(met)} name lengths, each recorded on its first step ("), lines[-1]
    assert f"; {again} met again, each compiled or loaded on its second (" in lines[-1]


@pytest.mark.slow  # a training run
def test_a_small_gpt_learns_names_its_loss_falls() -> None:
    # 8 wide (4 heads of 2), 150 names: the loss starts at about ln(27), a uniform guess
    _, losses, chars, _ = gpt.train(steps=150, seed=1, n_embd=8, out=lambda line: None)
    first, last = sum(losses[:30]) / 30, sum(losses[-30:]) / 30
    assert first == pytest.approx(math.log(27), abs=0.25)
    assert last < first - 0.3
    assert len(chars) == 27


def test_the_step_is_one_graph_per_name_with_the_loss_of_every_position() -> None:
    model = gpt.GPT(vocab_size=27, n_embd=4, rng=random.Random(0))
    step_loss = gpt.make_step_loss(model)
    tokens = [26, 0, 1, 26]  # BOS a b BOS: three predictions
    loss = step_loss(tokens)
    loss.backward()
    by_position = []
    for n in range(3):
        keys: list[list[list[gpt.Value]]] = [[]]
        values: list[list[list[gpt.Value]]] = [[]]
        for pos in range(n + 1):
            logits = model(tokens[pos], pos, keys, values)
        by_position.append(gpt.F.cross_entropy(logits, tokens[n + 1]).data)
    assert loss.data == pytest.approx(sum(by_position) / 3, rel=1e-14)
    # weight tying: the output layer is wte, so a letter that is never an input still gets gradient
    assert all(p.grad != 0.0 for p in model.state_dict["wte"][2])  # c: only an output class here


def test_the_compiled_step_is_the_eager_step_bit_for_bit() -> None:
    # compile refuses any data read while it records: the step reads none, and its replay
    # (the second name of the same length) gives the eager one-hot step's loss and gradients
    # exactly, and microgpt's index step's to rounding
    results = []
    for compiled, one_hot in ((False, True), (True, True), (False, False)):
        model = gpt.GPT(vocab_size=27, n_embd=4, rng=random.Random(0))
        step_loss = gpt.make_step_loss(model, compiled=compiled, one_hot=one_hot)
        for tokens in ([26, 7, 8, 26], [26, 1, 1, 26]):
            for p in model.parameters():
                p.grad = 0.0
            loss = step_loss(tokens)
            loss.backward()
        results.append((loss.data, [p.grad for p in model.parameters()]))
    assert results[0] == results[1]
    assert results[2][0] == pytest.approx(results[1][0], rel=1e-14)
    assert results[2][1] == pytest.approx(results[1][1], rel=1e-12, abs=1e-15)


def test_sampling_reads_data_by_design_so_it_cannot_be_compiled() -> None:
    model = gpt.GPT(vocab_size=27, n_embd=4, rng=random.Random(0))
    chars = [*"abcdefghijklmnopqrstuvwxyz", "<BOS>"]
    with pytest.raises(RuntimeError, match="call it uncompiled"):
        vjpgrad.compile(lambda: gpt.sample(model, chars, count=1))()


def test_the_example_runs_from_the_command_line_and_samples_names() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "gpt.py"), "--steps", "3", "--n-embd", "4", "--samples", "3", "--eager"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "running eager (--eager)" in result.stdout
    assert "mean loss of the last 3 steps" in result.stdout
    samples = [
        line.split(": ", 1)[1] if ": " in line else "" for line in result.stdout.splitlines() if "sample" in line
    ]
    assert len(samples) == 3
    assert all(set(name) <= set("abcdefghijklmnopqrstuvwxyz") for name in samples)


def test_bad_flags_are_refused() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "gpt.py"), "--n-embd", "6"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "--n-embd must be a positive multiple of 4" in result.stderr


# ---- examples/notebook.ipynb ---------------------------------------------------------------------


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
    assert "c.grad += 1 × 10 = 10" in printed(text_cell)  # d log(c)/dc = 1/c at c = 0.1
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

    from _browser import start_browser
    from nbconvert import HTMLExporter
    from selenium.webdriver.common.by import By

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
