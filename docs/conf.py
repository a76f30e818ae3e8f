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

import atexit
import importlib
import inspect
import logging as std_logging
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

import vjpgrad

project = "vjpgrad"
author = "The vjpgrad developers"
copyright = "the vjpgrad developers, MIT License"
release = version = vjpgrad.__version__

sys.path.insert(0, str(Path(__file__).resolve().parent / "_lite"))  # vjpgrad_lite: the site's JupyterLite
extensions = ["myst_nb", "sphinx.ext.autodoc", "vjpgrad_lite"]
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

# The tutorials' kernel gets an IPython directory of its own, so that nothing in the builder's
# own IPython profile (startup scripts, extensions) changes what a tutorial prints. Its one
# setting: ipykernel 7 warns at every start that "Kernel is running over TCP without encryption"
# when, as nbclient starts it, it talks to the build over the loopback interface, which leaves
# the machine never; below ERROR the kernel's own log says nothing a reader of the build needs.
# A cell's stderr is not the kernel's log: it still fails the build (nb_output_stderr above).
_kernel_home = Path(tempfile.mkdtemp(prefix="vjpgrad-docs-ipython-"))
(_kernel_home / "profile_default").mkdir()
(_kernel_home / "profile_default" / "ipython_kernel_config.py").write_text(
    'c.IPKernelApp.log_level = "ERROR"\n', encoding="utf-8"
)
os.environ["IPYTHONDIR"] = str(_kernel_home)
atexit.register(shutil.rmtree, _kernel_home, ignore_errors=True)

# -- autodoc ---------------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True

# -- HTML ------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"vjpgrad {release}"
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"  # vᵀJ: the vector-Jacobian product; served with the site, offline
templates_path = ["_templates"]  # search.html: furo's, with a level-one heading
html_css_files = ["vjpgrad.css"]  # code that scrolls rather than wraps; the matrix on Start here
html_js_files = ["vjpgrad.js"]  # wide code and tables, the drawers and the console by keyboard; sidebar headings
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


class _NoConfigurationDump(std_logging.Filter):
    """MyST and MyST-NB log their whole configuration (some thirty settings each) at every build;
    the settings that matter are written in this file."""

    def filter(self, record: std_logging.LogRecord) -> bool:
        return record.levelno > std_logging.INFO


def vector_not_typevar(
    app: Sphinx, what: str, name: str, obj: object, options: object, signature: str | None, annotation: str | None
) -> tuple[str | None, str | None]:
    """Vector's generated methods are typed ``(self: _V) -> _V`` (a TypeVar, so that a subclass
    keeps its type); the reference says what a reader gets: a Vector."""
    if name.startswith("vjpgrad.Vector.") and annotation is not None:
        return signature, re.sub(r"\b_V\b", "Vector", annotation)
    return signature, annotation


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("autodoc-process-signature", vector_not_typevar)
    for name in ("sphinx.myst_parser.sphinx_ext.main", "sphinx.myst_nb.sphinx_ext"):
        std_logging.getLogger(name).addFilter(_NoConfigurationDump())
    # nbclient says "Executing notebook with kernel: python3" through traitlets' logger before
    # each tutorial, beside MyST-NB's own "Executing notebook" line: its warnings are kept
    std_logging.getLogger("traitlets").setLevel(std_logging.WARNING)
    app.connect("env-check-consistency", check_every_public_name_is_documented)
    return {"parallel_read_safe": True}
