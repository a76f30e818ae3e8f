"""The written pages whose examples the tests run: the README and the documentation site's pages.

A page's ```python blocks are its examples. A block that starts with ``>>>`` is a doctest
(test_pages.py runs it); any other is a script (test_pages.py runs it alone). The
tutorials are MyST-NB notebooks (a ``file_format: mystnb`` header and ``{code-cell}``
blocks): the site's build runs those, so they are not listed here.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
BUILT = {"_build", "jupyter_execute", ".jupyter_cache"}  # what a build leaves under docs/


def is_notebook(text: str) -> bool:
    """A MyST-NB text notebook, which the site's build executes."""
    return re.match(r"---\n(?:.*\n)*?file_format: mystnb\n(?:.*\n)*?---\n", text) is not None


def docs_pages() -> list[Path]:
    """Every Markdown page of the site, notebooks included, outside what a build leaves."""
    return sorted(path for path in DOCS.rglob("*.md") if not BUILT & set(path.relative_to(DOCS).parts))


def example_pages() -> list[Path]:
    """The README and every page of the site whose examples no build runs (not a notebook)."""
    return [README, *(path for path in docs_pages() if not is_notebook(path.read_text(encoding="utf-8")))]


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line of the block's first line of code, code) for each ```python block."""
    blocks = []
    for match in re.finditer(r"^```python[ \t]*\n(.*?)^```[ \t]*$", text, flags=re.DOTALL | re.MULTILINE):
        blocks.append((text.count("\n", 0, match.start(1)) + 1, match.group(1)))
    return blocks


def is_doctest(code: str) -> bool:
    return code.lstrip().startswith(">>>")


def name(path: Path) -> str:
    """The page's path from the repository's root (as a test id), or as it is for a page elsewhere."""
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
