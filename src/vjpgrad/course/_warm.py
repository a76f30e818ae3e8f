"""What the grader's fork server does once, so that each exercise's processes do not (``grading.PRELOAD``).

Imported last by the fork server, after pytest, hypothesis and vjpgrad: it imports the modules every
checks' process imports anyway (pytest's built-in plugins) and those the student's processes run on
(``remote``, ``probe``, ``guard``, ``kernel``), not the checks' helpers (``twins``), and has hypothesis
read the constants of the code it counts as local (``_get_local_constants``: vjpgrad's own modules,
where vjpgrad is not in site-packages, as in an editable install). Hypothesis does that at the first
test of each process, parsing every such module: about a second of each checks' process's CPU, and
more where they run at once. Done here, each process forked from the server inherits what was read,
and parses only the modules imported after the fork (the check file). Last, what the server holds
is moved out of the collector's reach (``gc.freeze``): a full collection in a forked process (pytest
runs several as it ends) then scans only what that process made, not the 50,000 or so
objects of pytest, hypothesis and vjpgrad, nor writes into their pages (which would copy them, and
count as the student's process's memory).

Nothing here is the student's or a held-out check's: the student's processes, forked from the same
server, inherit only what any of them can import (pytest's, hypothesis's and vjpgrad's code, and the
constants written in it). Nothing is written where a later run could read it: hypothesis's cache of
constants goes to a folder removed before the server serves, and its home is left unset, so each
checks' process still chooses its own (``grading.hypothesis_home``).
"""

from __future__ import annotations

import gc
import importlib
import tempfile
import warnings

import _pytest.config

import vjpgrad.course.guard
import vjpgrad.course.kernel
import vjpgrad.course.probe
import vjpgrad.course.remote  # noqa: F401  # what every student's process imports, for those forked after this


def warm() -> None:
    """Import pytest's built-in plugins and read hypothesis's local constants, here, once."""
    for name in _pytest.config.default_plugins:
        importlib.import_module(f"_pytest.{name}")
    try:
        from hypothesis import configuration
        from hypothesis.internal.conjecture import providers
    except ImportError:  # a hypothesis without them: each process reads the constants itself
        return
    read = getattr(providers, "_get_local_constants", None)
    if read is None or not hasattr(configuration, "set_hypothesis_home_dir"):
        return
    with tempfile.TemporaryDirectory(prefix="vjpgrad-course-warm-") as scratch, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "slow code in plugin": it is the point, and no plugin is loading
        configuration.set_hypothesis_home_dir(scratch)
        try:
            read()
        finally:
            configuration.set_hypothesis_home_dir(None)


warm()
gc.collect()
gc.freeze()
