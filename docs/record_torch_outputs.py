"""Record what the PyTorch cells of "From vjpgrad to PyTorch" print, for builds without PyTorch.

The docs extra does not install PyTorch (it is large, and the site is about vjpgrad), so a build
made as the README says runs those cells without it. Each such cell ends in an ``else:`` branch
holding ``recorded = \"\"\"...\"\"\"``: what the cell printed with PyTorch, shown with a line that
says so. This script runs the page's cells in order with PyTorch installed and writes each
PyTorch cell's output into its ``recorded`` text (and the torch version into the line above
it)::

    python docs/record_torch_outputs.py          # rewrite the recorded outputs
    python docs/record_torch_outputs.py --check  # exit 1 if they differ from a run today

tests/test_docs.py runs the check (it skips without PyTorch), so the recorded numbers stay
what the code prints. How many of PyTorch's gradients equal vjpgrad's to the bit depends on the
kernels PyTorch runs, which it picks by the processor; the record is made with ATen's AVX2 kernels
and Intel MKL's AVX code path, the kernels the tests run PyTorch with (``tests/conftest.py``): set
here, before PyTorch starts, unless set already. Even so the count can differ between processors
(109 of 337 on the project's machine before, 101 on an AMD EPYC): it is made on the machine CI runs on.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
os.environ.setdefault("MKL_CBWR", "AVX")

PAGE = Path(__file__).resolve().parent / "tutorials" / "to-pytorch.md"
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(?:---\n.*?\n---\n)?(.*?)^```$", re.MULTILINE | re.DOTALL)
"""A code cell's code, without its block of options (``---`` ... ``---``: a picture's alt text)."""
RECORDED = re.compile(r'(    recorded = """\n)(.*?)(""")', re.DOTALL)
VERSION = re.compile(r"with torch [0-9][^ ]* this cell printed")
TORCH_CELL = "if torch is not None:"


def cells(text: str) -> list[str]:
    """The page's code cells, in order."""
    return CELL.findall(text)


def recorded(text: str) -> list[str]:
    """The output each PyTorch cell of the page holds for a build without PyTorch."""
    return [match.group(2) for cell in cells(text) if TORCH_CELL in cell for match in RECORDED.finditer(cell)]


def run(text: str) -> list[str]:
    """Run every cell of the page in one namespace, as the build's kernel does (PyTorch must be
    installed), and return what each PyTorch cell printed."""
    import torch  # noqa: F401  # the point: this run is with PyTorch

    namespace: dict[str, object] = {"__name__": "__main__"}
    printed = []
    for cell in cells(text):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(cell, str(PAGE), "exec"), namespace)  # the page's own code, from the repository
        if TORCH_CELL in cell:
            printed.append(out.getvalue())
    return printed


def write(text: str, outputs: list[str], version: str) -> str:
    """The page with each PyTorch cell's recorded output (and the torch version) replaced."""
    pieces = iter(outputs)

    def cell(match: re.Match[str]) -> str:
        source = match.group(0)
        if TORCH_CELL not in source:
            return source
        source = RECORDED.sub(lambda m: m.group(1) + next(pieces) + m.group(3), source)
        return VERSION.sub(f"with torch {version} this cell printed", source)

    return CELL.sub(cell, text)


def main(argv: list[str]) -> int:
    import torch

    text = PAGE.read_text(encoding="utf-8")
    outputs = run(text)
    if "--check" in argv:
        if outputs != recorded(text):
            print(f"{PAGE.name}: the recorded PyTorch outputs differ from a run today: python {Path(__file__).name}")
            return 1
        return 0
    PAGE.write_text(write(text, outputs, torch.__version__.split("+")[0]), encoding="utf-8")
    print(f"{PAGE.name}: recorded {len(outputs)} PyTorch cells' outputs with torch {torch.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
