"""examples/notebook.ipynb, run as a reader runs it, and its outputs written or checked.

The notebook is committed with its outputs, so that a reader on GitHub sees them before running
anything. ``python tests/_notebook.py`` runs it in a fresh kernel and writes the outputs into it;
``tests/test_examples.py`` runs it again and fails when what it prints today differs from what is
committed, as ``python -m vjpgrad.codegen --check`` does for the generated code.

It runs as a default install would: with this checkout's vjpgrad first on the path and the
optional ``graphviz`` package hidden, so that the picture is vjpgrad's own pure-Python drawing on
every machine. Its outputs hold no timings, memory addresses or random ids, so two runs agree.
"""

from __future__ import annotations

import copy
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"

HIDE_GRAPHVIZ = 'raise ImportError("graphviz is hidden: the notebook runs as a default install does")\n'


@contextmanager
def kernel_path(directory: Path) -> Iterator[None]:
    """PYTHONPATH for the kernel (it inherits it): a stand-in for graphviz that refuses to import,
    then this checkout's src/, then what was there."""
    hidden = directory / "_hide_graphviz" / "graphviz"
    hidden.mkdir(parents=True, exist_ok=True)
    (hidden / "__init__.py").write_text(HIDE_GRAPHVIZ, encoding="utf-8")
    saved = os.environ.get("PYTHONPATH")
    paths = [str(hidden.parent), str(ROOT / "src"), *filter(None, (saved or "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def execute(directory: Path) -> Any:
    """The notebook, its outputs cleared, run top to bottom in a fresh kernel in ``directory``
    (where its cells write files)."""
    import nbclient
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    with kernel_path(directory):
        client = nbclient.NotebookClient(
            notebook,
            timeout=120,
            kernel_name="python3",
            record_timing=False,  # no timestamps in the cells' metadata
            coalesce_streams=True,  # a cell's printing is one output, however the kernel flushed it
            resources={"metadata": {"path": str(directory)}},
        )
        client.execute()
    return notebook


def _joined(x: Any) -> Any:
    """A notebook's text as one string (a file splits it into a list of lines)."""
    if isinstance(x, dict):
        return {key: _joined(value) for key, value in x.items()}
    if isinstance(x, list) and all(isinstance(line, str) for line in x):
        return "".join(x)
    if isinstance(x, list):
        return [_joined(item) for item in x]
    return x


def outputs(notebook: Any) -> list[tuple[Any, Any]]:
    """Each code cell's execution count and outputs, as plain data to compare."""
    return [
        (cell["execution_count"], _joined(copy.deepcopy(cell["outputs"])))
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
    ]


def write() -> Path:
    import nbformat

    with tempfile.TemporaryDirectory() as scratch:
        notebook = execute(Path(scratch))
    nbformat.write(notebook, NOTEBOOK)
    return NOTEBOOK


if __name__ == "__main__":
    print(f"wrote the outputs of {write().relative_to(ROOT)}", file=sys.stdout)
