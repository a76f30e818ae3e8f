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
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import _notebook
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


@pytest.mark.slow  # an example's run, in a process
def test_jacobian_view_shows_backward_is_v_transpose_j() -> None:
    out = run("jacobian_view.py")
    assert "backward(v) gives exactly v^T J" in out
    assert "a.grad       = [0.30000000000000004, 3.0, 0.00030000000000000003]" in out


@pytest.mark.slow  # an example's run, in a process
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


@pytest.mark.slow  # an example's whole run, in a process
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


@pytest.mark.slow  # an example's whole run, in a process
def test_the_compiled_step_is_the_eager_step_bit_for_bit() -> None:
    # compile refuses any data read while it records: the step reads none, and its replay
    # (the second name of the same length) gives the eager step's loss and gradients exactly
    # with its tokens as Values, and microgpt's int index step's to rounding
    results = []
    for compiled, as_values in ((False, True), (True, True), (False, False)):
        model = gpt.GPT(vocab_size=27, n_embd=4, rng=random.Random(0))
        step_loss = gpt.make_step_loss(model, compiled=compiled, as_values=as_values)
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


@pytest.mark.slow  # an example's run, in a process
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


ROOT = _notebook.ROOT
NOTEBOOK = _notebook.NOTEBOOK


def execute(directory: Path) -> Any:
    """The notebook run in a fresh kernel in ``directory``, as ``tests/_notebook.py`` runs it."""
    pytest.importorskip("nbformat", reason="running the notebook needs nbformat")
    pytest.importorskip("nbclient", reason="running the notebook needs nbclient")
    pytest.importorskip("ipykernel", reason="running the notebook needs ipykernel")
    return _notebook.execute(directory)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the notebook runs in, as a reader's own folder would be."""
    return tmp_path_factory.mktemp("notebook")


@pytest.fixture(scope="module")
def executed(workdir: Path) -> Any:
    return execute(workdir)


@pytest.mark.slow  # an example's whole run, in a process
def test_the_notebook_is_committed_with_the_outputs_it_prints_today(executed: Any) -> None:
    committed = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    assert _notebook.outputs(committed) == _notebook.outputs(executed), (
        "examples/notebook.ipynb's committed outputs are stale: run python tests/_notebook.py"
    )
    assert all(count is not None for count, _ in _notebook.outputs(committed))  # every cell ran, in order


def test_the_notebook_is_a_lesson_with_headings_and_prompts_to_change_v() -> None:
    notebook = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    text = ["".join(cell["source"]) for cell in notebook["cells"]]
    headings = [line for cell in text for line in cell.splitlines() if line.startswith("## ")]
    assert [h for h in headings if re.match(r"## Case \d:", h)] == [
        "## Case 1: one weight per output",
        "## Case 2: one output needs no weights",
        "## Case 3: three weights for one output are added",
        "## Case 4: gradients accumulate",
    ]
    assert not any("Example" in cell for cell in text)  # the four cases are "case 1-4" everywhere
    assert sum("Try it" in cell for cell in text) >= 4
    assert any("v = [" in cell and "Try it" in cell for cell in text)  # change v, and run again
    assert '"Pytorch, what are the gradient arguments"' in text[0]


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
    cells = [cell for cell in code_cells(executed) if cell.source.startswith("# Case")]
    assert len(cells) == len(CASES) == 4
    for cell, case in zip(cells, CASES, strict=True):
        lines = {line.split(" ", 1)[0]: line for line in printed(cell).splitlines()}
        for name, documented in case.documented.items():  # e.g. "tensor([3.3003])", "tensor(3.)"
            assert numbers(lines[name].split(" ", 1)[1]) == pytest.approx(numbers(documented), rel=1e-4), case.title


def test_the_explanation_shows_itself_once_as_the_stepper(executed: Any) -> None:
    (cell,) = [cell for cell in code_cells(executed) if cell.source.rstrip().endswith("\ne")]
    (page,) = html_outputs(cell)  # a bare explanation in a cell: its own rich display
    assert page.count('class="vjs-root"') == 1
    assert page.count("<table") == 1  # the stepper's list of the steps: one view of the pass
    assert "b.grad += 1 × 2 + 1 × 2 = 4" in "".join(cell["outputs"][0]["data"]["text/plain"])  # its text form


def test_case_1_shows_c_after_its_backward_with_its_gradients(executed: Any) -> None:
    (cell,) = [cell for cell in code_cells(executed) if cell.source.startswith("# Case 1")]
    assert cell.source.rstrip().splitlines()[-1].startswith("c  #")  # c itself, not c.grad, ends the cell
    (table,) = html_outputs(cell)
    rows = dict(re.findall(r"<tr><th[^>]*>(data|grad)</th>(.*?)</tr>", table))
    assert numbers(re.sub(r"<[^>]+>", " ", rows["data"])) == [6.0, 7.0, 8.0]
    # c.grad = v / c = 0.1/6, 1/7, 0.0001/8
    assert numbers(re.sub(r"<[^>]+>", " ", rows["grad"])) == pytest.approx([0.1 / 6, 1 / 7, 0.0001 / 8], rel=1e-5)


def test_the_picture_is_drawn_after_backward_without_graphviz(executed: Any) -> None:
    (cell,) = [cell for cell in code_cells(executed) if "vjpgrad.draw(" in cell.source]
    assert cell.source.index("y.backward(") < cell.source.index("vjpgrad.draw(")
    (svg,) = [out["data"]["image/svg+xml"] for out in cell["outputs"] if "image/svg+xml" in out.get("data", {})]
    assert 'class="vjs-picture"' in svg.split(">", 1)[0]  # vjpgrad's own drawing: graphviz is hidden from the kernel
    boxes = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    assert "grad 3" in boxes  # case 2: a.grad = 3, shown because the pass ran before the drawing
    assert "grad 4" in boxes
    assert "grad 10" in boxes
    assert "1 \u00d7 10 = 10" in boxes  # the edge into c carries upstream × local = contribution


def test_the_stepper_is_saved_as_a_page_to_open_in_a_browser(executed: Any, workdir: Path) -> None:
    (cell,) = [cell for cell in code_cells(executed) if "to_html()" in cell.source]
    page = workdir / "pass.html"
    assert printed(cell) == "wrote pass.html: open it in a browser\n"
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
