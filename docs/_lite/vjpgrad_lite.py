"""The documentation site's JupyterLite: vjpgrad in the reader's browser, loaded from the site alone.

A Sphinx extension over jupyterlite-sphinx. At each build it

- assembles Pyodide with vjpgrad, pytest and hypothesis (``assemble.py``) and points
  jupyterlite-sphinx's ``jupyter lite build`` at it, with source maps left out;
- removes what would make a request leave the site: the Google Fonts stylesheet jupyterlite-sphinx
  adds to every page, and a stale ``.jupyterlite.doit.db`` (with it, a rebuild can skip pointing
  the kernel at the local Pyodide, which then waits on a CDN);
- converts the tutorials that run in a browser from their MyST sources to notebooks, puts them in
  the JupyterLite's files under ``tutorials/``, and writes a "Run in your browser" link at the
  top of each; the three that cannot run there get a note that says why.
"""

from __future__ import annotations

import json
import posixpath
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config

sys.path.insert(0, str(Path(__file__).resolve().parent))

import assemble  # beside this file

NOT_IN_THE_BROWSER = {
    "vmap": "it runs on NumPy arrays, and NumPy has no wheel on PyPI for Pyodide, the Python that runs in a browser",
    "to-pytorch": "it runs PyTorch beside vjpgrad, and PyTorch does not run in a browser",
    "your-pytorch-code": "it watches your PyTorch code run, and PyTorch does not run in a browser",
}
"""The tutorials that cannot run in a browser, and why."""

FONTS = "fonts.googleapis.com"
CONTENTS = assemble.BUILD / "contents"
"""The files the JupyterLite starts with: the tutorials' notebooks."""


def tutorials(srcdir: Path) -> list[Path]:
    return sorted((srcdir / "tutorials").glob("*.md"))


NOT_RUN = (
    "*This is the tutorial as a notebook, running in your browser: its cells have not run yet, so "
    "where the page says what a cell printed, run the cells in order (Shift+Enter, or Run All Cells) "
    "and it prints it here; a time it prints is your browser's. A link to another tutorial opens its "
    "notebook; the site's other pages are named, to read there.*"
)
"""The first cell of every tutorial's notebook: what differs from the page the site shows."""

_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")
_PICTURE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def _elsewhere(target: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*:", target)) or target.startswith(("#", "/"))


def _linked(markdown: str, folder: str) -> str:
    """``markdown``'s links as JupyterLite can follow them from a notebook in ``folder``: it resolves
    a relative link among its own files, which are the tutorials' notebooks. A link to a tutorial
    offered there goes to its notebook; one to another page of the site names the page."""

    def one(found: re.Match[str]) -> str:
        text, target = found.groups()
        page = target.partition("#")[0]
        if _elsewhere(target) or not page.endswith(".md"):
            return found.group(0)
        if "/" not in page and page[:-3] not in NOT_IN_THE_BROWSER:
            return f"[{text}]({page[:-3]}.ipynb)"
        site = posixpath.normpath(posixpath.join(folder, page))[:-3] + ".html"
        return f"{text} (a page of the documentation site: {site})"

    return _LINK.sub(one, markdown)


def pictures(text: str, folder: str) -> list[str]:
    """The pictures a page in ``folder`` shows, as paths from the site's source folder: copied beside
    its notebook's folder in JupyterLite's files, where its relative links find them."""
    found = [t for t in _PICTURE.findall(text) if not _elsewhere(t)]
    return [posixpath.normpath(posixpath.join(folder, t)) for t in found]


def notebook(text: str, folder: str = "tutorials") -> dict[str, Any]:
    """A MyST-NB text notebook as a Jupyter notebook: each ``{code-cell}`` a code cell (its
    options dropped), the text between them markdown cells (links as JupyterLite follows them from
    ``folder``: ``_linked``), the front matter left out, and a first cell that says the cells have
    not run (``NOT_RUN``)."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.DOTALL)
    cells: list[dict[str, Any]] = [{"cell_type": "markdown", "metadata": {}, "source": NOT_RUN}]

    def markdown(lines: list[str]) -> None:
        source = _linked("\n".join(lines).strip("\n"), folder)
        if source:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": source})

    pending: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^(`{3,})\{code-cell\}", lines[i])
        if not opening:
            pending.append(lines[i])
            i += 1
            continue
        markdown(pending)
        pending = []
        fence, body = opening.group(1), []
        i += 1
        if i < len(lines) and lines[i] == "---":  # a block of options
            i = lines.index("---", i + 1) + 1
        while i < len(lines) and lines[i].startswith(":") and re.match(r"^:\w[\w-]*:", lines[i]):
            i += 1
        while i < len(lines) and lines[i] != fence:
            body.append(lines[i])
            i += 1
        i += 1
        cells.append(
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": "\n".join(body)}
        )
    markdown(pending)
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python (Pyodide)", "language": "python", "name": "python"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def configure(app: Sphinx, config: Config) -> None:
    """Assemble Pyodide and point jupyterlite-sphinx at it (before its own handler reads the settings)."""
    srcdir = Path(app.srcdir)
    for stale in (srcdir / ".jupyterlite.doit.db", assemble.BUILD / "lite" / ".jupyterlite.doit.db"):
        stale.unlink(missing_ok=True)
    lite = assemble.assemble()
    config.jupyterlite_dir = str(lite)
    config.jupyterlite_config = str(lite / "jupyter_lite_config.json")
    config.jupyterlite_content_dir = str(CONTENTS)  # emptied by jupyterlite-sphinx, then filled by write_notebooks
    config.jupyterlite_silence = True
    config.exclude_patterns = [*config.exclude_patterns, "_lite", "_contents"]


def write_notebooks(app: Sphinx) -> None:
    """The runnable tutorials as notebooks, in the folder whose contents JupyterLite serves."""
    folder = CONTENTS / "tutorials"
    folder.mkdir(parents=True, exist_ok=True)
    srcdir = Path(app.srcdir)
    for page in tutorials(srcdir):
        if page.stem not in NOT_IN_THE_BROWSER:
            source = page.read_text(encoding="utf-8")
            text = json.dumps(notebook(source), indent=1)
            (folder / f"{page.stem}.ipynb").write_text(text, encoding="utf-8")
            for picture in pictures(source, "tutorials"):  # where the notebook's relative link finds it
                (CONTENTS / picture).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(srcdir / picture, CONTENTS / picture)


def no_fonts(app: Sphinx) -> None:
    """Drop the stylesheets that would load from another host (jupyterlite-sphinx's Google Fonts)."""
    app.registry.css_files[:] = [(name, attrs) for name, attrs in app.registry.css_files if FONTS not in name]
    for name in ("_css_files", "css_files"):  # the HTML builder's own copy (its name differs across Sphinx versions)
        files = getattr(app.builder, name, None)
        if isinstance(files, list):
            files[:] = [f for f in files if FONTS not in str(getattr(f, "filename", f))]


def link(app: Sphinx, docname: str, source: list[str]) -> None:
    """Under a tutorial's title: its "Run in your browser" link, or why it cannot run there."""
    if not docname.startswith("tutorials/"):
        return
    name = docname.removeprefix("tutorials/")
    if name in NOT_IN_THE_BROWSER:
        said = (
            "\n```{note}\nThis tutorial does not run in your browser: "
            f"{NOT_IN_THE_BROWSER[name]}. Run it with Python on your machine.\n```\n"
        )
    else:
        href = f"../lite/notebooks/index.html?path=tutorials/{name}.ipynb"  # the notebook alone: on a phone too
        said = (
            '\n```{raw} html\n<p class="vjpgrad-run-in-browser"><a href="' + href + '">Run in your browser</a>: '
            "this tutorial as a notebook in JupyterLite, nothing to install (the first start takes about "
            "half a minute).</p>\n```\n"
        )
    source[0] = re.sub(r"^(# .*\n)", lambda m: m.group(1) + said, source[0], count=1, flags=re.MULTILINE)


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("jupyterlite_sphinx")
    app.connect("config-inited", configure, priority=400)  # before jupyterlite-sphinx reads its settings
    app.connect("builder-inited", write_notebooks)
    app.connect("builder-inited", no_fonts)
    app.connect("source-read", link)
    return {"parallel_read_safe": True}
