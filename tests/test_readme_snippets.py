"""Every ```python block of the README and of the documentation's pages runs as written, alone,
in a fresh namespace.

A reader pastes one block into a file or a REPL: it must not lean on imports or data from
another block. Interactive blocks (starting with ``>>>``) are doctests, checked by
test_readme.py; every other block is run here as a script (``__name__ == "__main__"``, in
an empty folder), and the ``test_*`` functions it defines are called, as pytest would. A
block that needs an optional extra (matplotlib, graphviz and Graphviz's dot, torch, numpy...)
is skipped, with the reason, when the extra is absent. The tutorials are notebooks that the
site's build runs (see _pages.py).
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import pytest
from _pages import example_pages, is_doctest, name, python_blocks

OPTIONAL_EXTRAS = {
    "graphviz": "pip install graphviz",
    "matplotlib": "pip install matplotlib",
    "numpy": "pip install numpy",
    "torch": "pip install torch",
}
"""Modules a block may need that vjpgrad's tests do not install: without them it skips."""


SNIPPETS = [
    (page, line, code)
    for page in example_pages()
    for line, code in python_blocks(page.read_text(encoding="utf-8"))
    if not is_doctest(code)
]


def missing_extra(error: BaseException) -> str | None:
    """Why an ImportError is an absent optional extra (to skip), or None (a real failure)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ImportError):
            root = (seen.name or "").partition(".")[0]
            if root in OPTIONAL_EXTRAS:
                return f"needs the optional {root} ({OPTIONAL_EXTRAS[root]})"
            if seen.name is None and "install" in str(seen):  # vjpgrad's own hint for an optional extra
                return f"needs an optional extra: {seen}"
        if type(seen).__name__ == "ExecutableNotFound":  # graphviz without Graphviz's dot program
            return "needs Graphviz's dot program (apt-get install graphviz)"
        seen = seen.__cause__
    return None


def run_alone(line: int, code: str, page: Path) -> dict[str, Any]:
    """Run one block as a script whose line numbers are the page's, then its test functions."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile("\n" * (line - 1) + code, str(page), "exec"), namespace)
    for key, value in list(namespace.items()):
        if key.startswith("test") and inspect.isfunction(value):
            value()
    return namespace


@pytest.fixture(scope="module")
def checked() -> None:
    """The checker itself, once: it finds the blocks and their lines, and a block that leans on
    another, or whose tests fail, fails; only an absent optional extra skips."""
    text = "intro\n```python\nx = 1\n```\n\n```python\n>>> 1\n1\n```\n```bash\nls\n```\n```python\ny = 2\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (7, ">>> 1\n1\n"), (14, "y = 2\n")]
    assert [is_doctest(code) for _, code in python_blocks(text)] == [False, True, False]
    assert SNIPPETS  # the hypothesis test of docs/how-to/testing.md at least
    with pytest.raises(NameError, match="data"):
        run_alone(1, "for x in data:\n    pass\n", Path("page.md"))
    with pytest.raises(AssertionError):
        run_alone(1, "def test_it():\n    assert 1 == 2\n", Path("page.md"))  # the block's tests are called
    with pytest.raises(ImportError) as error:
        run_alone(1, "import matplotlib_that_is_not_there\n", Path("page.md"))
    assert missing_extra(error.value) is None  # a module that is no optional extra is a failure
    absent = ModuleNotFoundError("No module named 'torch'", name="torch")
    assert missing_extra(absent) == "needs the optional torch (pip install torch)"


@pytest.mark.usefixtures("checked")
@pytest.mark.parametrize(("page", "line", "code"), SNIPPETS, ids=[f"{name(page)}:{line}" for page, line, _ in SNIPPETS])
def test_each_block_runs_alone(
    page: Path, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a block that writes a file writes it here
    monkeypatch.setattr(sys, "argv", [str(page)])
    try:
        run_alone(line, code, page)
    except ImportError as error:
        reason = missing_extra(error)
        if reason is None:
            raise
        pytest.skip(f"{name(page)} line {line} {reason}")
