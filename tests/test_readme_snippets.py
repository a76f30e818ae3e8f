"""Every ```python block of the README runs as written, alone, in a fresh namespace.

A reader pastes one block into a file or a REPL: it must not lean on imports or data from
another block. Interactive blocks (starting with ``>>>``) are doctests, checked by
test_readme.py; every other block is run here as a script (``__name__ == "__main__"``, in
an empty folder), and the ``test_*`` functions it defines are called, as pytest would. A
block that needs an optional extra (matplotlib, graphviz and Graphviz's dot, torch, numpy...)
is skipped, with the reason, when the extra is absent.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"

OPTIONAL_EXTRAS = {
    "graphviz": "pip install 'vjpgrad[viz]'",
    "matplotlib": "pip install 'vjpgrad[plot]'",
    "numpy": "pip install numpy",
    "torch": "pip install torch",
}
"""Modules a README block may need that vjpgrad's tests do not install: without them it skips."""


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line of the block's first line of code, code) for each ```python block."""
    blocks = []
    for match in re.finditer(r"^```python[ \t]*\n(.*?)^```[ \t]*$", text, flags=re.DOTALL | re.MULTILINE):
        blocks.append((text.count("\n", 0, match.start(1)) + 1, match.group(1)))
    return blocks


def is_doctest(code: str) -> bool:
    return code.lstrip().startswith(">>>")


SNIPPETS = [(line, code) for line, code in python_blocks(README.read_text(encoding="utf-8")) if not is_doctest(code)]


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


def run_alone(line: int, code: str) -> dict[str, Any]:
    """Run one block as a script whose line numbers are the README's, then its test functions."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile("\n" * (line - 1) + code, str(README), "exec"), namespace)
    for name, value in list(namespace.items()):
        if name.startswith("test") and inspect.isfunction(value):
            value()
    return namespace


@pytest.fixture(scope="module")
def checked() -> None:
    """The checker itself, once: it finds the blocks and their lines, and a block that leans on
    another, or whose tests fail, fails; only an absent optional extra skips."""
    text = "intro\n```python\nx = 1\n```\n\n```python\n>>> 1\n1\n```\n```bash\nls\n```\n```python\ny = 2\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (7, ">>> 1\n1\n"), (14, "y = 2\n")]
    assert [is_doctest(code) for _, code in python_blocks(text)] == [False, True, False]
    assert len(SNIPPETS) >= 3
    with pytest.raises(NameError, match="data"):
        run_alone(1, "for x in data:\n    pass\n")
    with pytest.raises(AssertionError):
        run_alone(1, "def test_it():\n    assert 1 == 2\n")  # the block's tests are called
    with pytest.raises(ImportError) as error:
        run_alone(1, "import matplotlib_that_is_not_there\n")
    assert missing_extra(error.value) is None  # a module that is no optional extra is a failure
    absent = ModuleNotFoundError("No module named 'torch'", name="torch")
    assert missing_extra(absent) == "needs the optional torch (pip install torch)"


@pytest.mark.usefixtures("checked")
@pytest.mark.parametrize(("line", "code"), SNIPPETS, ids=[f"README.md:{line}" for line, _ in SNIPPETS])
def test_each_readme_block_runs_alone(line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a block that writes a file writes it here
    monkeypatch.setattr(sys, "argv", [str(README)])
    try:
        run_alone(line, code)
    except ImportError as error:
        reason = missing_extra(error)
        if reason is None:
            raise
        pytest.skip(f"README.md line {line} {reason}")
