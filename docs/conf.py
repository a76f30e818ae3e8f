"""Sphinx configuration of vjpgrad's documentation site.

Build it, from the repository's root, after ``pip install -e '.[docs]'``::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Pages are MyST Markdown. The tutorials are MyST-NB text notebooks (``{code-cell}`` blocks):
they run in a fresh kernel at every build, so their outputs are what the code does today.
A cell that raises, or writes to stderr, is a build error (``-W`` makes every warning one).
The API reference is written by autodoc from the docstrings, and the build warns about any
public name it does not document.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

import vjpgrad

project = "vjpgrad"
author = "The vjpgrad developers"
copyright = "the vjpgrad developers, MIT License"
release = version = vjpgrad.__version__

extensions = ["myst_nb", "sphinx.ext.autodoc"]
exclude_patterns = ["_build", "jupyter_execute", ".jupyter_cache", "**/.ipynb_checkpoints"]

# -- MyST and MyST-NB ------------------------------------------------------------------------
myst_heading_anchors = 3  # [text](page.md#a-heading) links to headings, as on GitHub
nb_execution_mode = "force"  # every build runs every tutorial: no output is older than the code
nb_execution_in_temp = True  # a cell that writes a file (pass.html) writes it in a scratch folder
nb_execution_timeout = 120  # seconds per cell
nb_execution_raise_on_error = True  # a cell that raises stops the build, with its traceback
nb_execution_show_tb = True
nb_output_stderr = "warn"  # a warning printed by a cell is a build warning, so an error under -W
nb_merge_streams = True

# -- autodoc ---------------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True

# -- HTML ------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"vjpgrad {release}"
html_static_path = ["_static"]
html_css_files = ["vjpgrad.css"]  # code blocks that wrap; the matrix on Start here
html_show_sourcelink = False
html_copy_source = False

# The public modules and what they offer. A module's public names are its __all__, or else
# the classes and functions it defines whose names do not start with an underscore.
PUBLIC_MODULES = ["vjpgrad", "vjpgrad.nn", "vjpgrad.nn.functional", "vjpgrad.optim", "vjpgrad.testing"]

logger = logging.getLogger(__name__)


def public_names(module_name: str) -> list[str]:
    """The dotted names a module offers its users: ``vjpgrad.Value``, ``vjpgrad.nn.MLP``..."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            name
            for name, obj in vars(module).items()
            if not name.startswith("_")
            and (inspect.isclass(obj) or inspect.isfunction(obj))
            and getattr(obj, "__module__", None) == module_name
        ]
    return [f"{module_name}.{name}" for name in names]


def check_every_public_name_is_documented(app: Sphinx, env: BuildEnvironment) -> None:
    """Warn (an error under -W) for each public name the API reference leaves out."""
    documented = set(env.get_domain("py").objects)  # type: ignore[attr-defined]  # the Python domain's table
    for module_name in PUBLIC_MODULES:
        for name in public_names(module_name):
            if name not in documented:
                logger.warning(f"the API reference does not document {name}: add it to a page under docs/reference/")


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("env-check-consistency", check_every_public_name_is_documented)
    return {"parallel_read_safe": True}
