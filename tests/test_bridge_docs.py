"""docs/tutorials/your-pytorch-code.md is not executed at build time (the docs have no PyTorch):
each of its Python blocks is run here, as the file learner.py, and must print the text shown
after it, so that the page's output can never go stale."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parent.parent / "docs" / "tutorials" / "your-pytorch-code.md"
PAIR = re.compile(r"```python\n(.*?)```\n\nprints\n\n```text\n(.*?)```", re.DOTALL)


def test_every_python_block_of_the_page_is_followed_by_what_it_prints() -> None:
    # a block whose output is not shown after it (or is shown in another form) would be run by no test
    text = PAGE.read_text(encoding="utf-8")
    pairs = PAIR.findall(text)
    assert len(pairs) == text.count("```python\n") == 5
    assert all(code.strip() and shown.strip() for code, shown in pairs)


@pytest.mark.slow  # the blocks run PyTorch
def test_each_block_prints_what_the_page_shows() -> None:
    torch = pytest.importorskip("torch")
    pairs = PAIR.findall(PAGE.read_text(encoding="utf-8"))
    assert len(pairs) == 5
    namespace: dict[str, object] = {}
    for code, shown in pairs:
        if "pin_memory" in code and torch.cuda.is_available():
            continue  # the refusal it shows is a computer's without a GPU
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "learner.py", "exec"), namespace)
        if "pin_memory" in code and not _the_pages_build(torch):
            # a CUDA build on a computer without a GPU, or another release, refuses in its own words
            assert printed.getvalue().startswith("PyTorch: "), code
            continue
        assert printed.getvalue() == shown, code


def _the_pages_build(torch: object) -> bool:
    """Whether this is the PyTorch the page quotes: a CPU-only build (no CUDA) of torch 2.13."""
    version = getattr(torch, "version", None)
    return getattr(version, "cuda", None) is None and str(getattr(torch, "__version__", "")).startswith("2.13.")
