"""The learner's path as a fresh environment meets it.

- the docs extra installs every module the tutorials import (a build made as the README says,
  with the docs extra alone, runs every cell);
- "From vjpgrad to PyTorch" keeps its PyTorch half in a build without PyTorch: the recorded
  outputs are what the cells print with PyTorch today (skips without PyTorch).

The built site in Chromium (widths, dark mode, axe-core, the keyboard) is tested in
test_site_in_browsers.py.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from _pages import DOCS, ROOT

RECORDER = DOCS / "record_torch_outputs.py"


def recorder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("record_torch_outputs", RECORDER)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def docs_extra() -> list[str]:
    """The distributions the docs extra of pyproject.toml names (read as text: Python 3.10 has no tomllib)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    extra = re.search(r"^docs = \[(.*?)\]\s*(?:#.*)?$", text, flags=re.MULTILINE | re.DOTALL)
    assert extra is not None
    items = re.findall(r'"([^"]+)"', extra.group(1))  # one per line or all on one, comments aside
    return [re.split(r"[<>=!~\[ ;]", item.strip())[0].lower().replace("_", "-") for item in items]


def imported_outside_a_guard(source: str) -> set[str]:
    """The top-level modules a cell imports, leaving out those imported inside ``try: ... except ImportError``."""
    tree = ast.parse(source)
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError") for h in node.handlers
        ):
            guarded.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    names = set()
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_docs_extra_installs_every_module_the_tutorials_import() -> None:
    module = recorder()
    imported: set[str] = set()
    for page in sorted((DOCS / "tutorials").glob("*.md")):
        for cell in module.cells(page.read_text(encoding="utf-8")):
            imported |= imported_outside_a_guard(cell)
    third_party = {name for name in imported if name not in sys.stdlib_module_names and name != "vjpgrad"}
    assert "numpy" in third_party  # to-pytorch.md and vmap.md: the reason the extra names it
    assert third_party <= set(docs_extra()), sorted(third_party - set(docs_extra()))
    assert imported_outside_a_guard("try:\n    import torch\nexcept ImportError:\n    torch = None\n") == set()


def test_each_pytorch_cell_holds_an_output_for_a_build_without_pytorch() -> None:
    module = recorder()
    text = (DOCS / "tutorials" / "to-pytorch.md").read_text(encoding="utf-8")
    torch_cells = [cell for cell in module.cells(text) if module.TORCH_CELL in cell]
    assert len(torch_cells) == 2
    outputs = module.recorded(text)
    assert len(outputs) == len(torch_cells)
    assert all(output.strip() for output in outputs)
    for cell in torch_cells:
        assert "PyTorch is not installed in this build" in cell  # says where the numbers came from
        assert module.VERSION.search(cell)
    # the writer puts new outputs where the reader finds them
    rewritten = module.write(text, ["one\n", "two\n"], "9.9.9")
    assert module.recorded(rewritten) == ["one\n", "two\n"]
    assert "with torch 9.9.9 this cell printed" in rewritten


@pytest.mark.slow  # runs the tutorial's cells
def test_the_recorded_pytorch_outputs_are_what_the_cells_print_today() -> None:
    # BLAS's blocking can depend on the processor: the record is made, and checked, on the project's machines
    pytest.importorskip("torch")
    pytest.importorskip("numpy")
    module = recorder()
    text = (DOCS / "tutorials" / "to-pytorch.md").read_text(encoding="utf-8")
    changed = "the page's PyTorch outputs changed: python docs/record_torch_outputs.py"
    assert module.run(text) == module.recorded(text), changed


def test_the_recorder_needs_no_more_than_the_page(tmp_path: Path) -> None:
    module = recorder()
    assert module.PAGE == DOCS / "tutorials" / "to-pytorch.md"
    assert module.cells("```{code-cell} ipython3\nx = 1\n```\ntext\n```{code-cell} ipython3\nprint(x)\n```\n") == [
        "x = 1\n",
        "print(x)\n",
    ]


def test_a_missing_browser_or_axe_fails_in_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    import _browser

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true: no Chromium"):
        _browser.missing("no Chromium")
    monkeypatch.setattr(_browser, "AXE", "")
    with pytest.raises(pytest.fail.Exception, match="VJPGRAD_AXE"):
        _browser.axe_source()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no Chromium"):
        _browser.missing("no Chromium")
