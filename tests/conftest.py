"""Shared test settings: hypothesis sized for a 2-core machine, a compiled-code cache of the
test run's own (so the tests never read or write a developer's ~/.cache/vjpgrad), and vmap's two
kinds of array code (``vmap_code``)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# set before any test compiles anything; child processes the tests start inherit it
if "VJPGRAD_CACHE_DIR" not in os.environ:
    os.environ["VJPGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="vjpgrad-test-cache-")
    atexit.register(shutil.rmtree, os.environ["VJPGRAD_CACHE_DIR"], ignore_errors=True)

# PyTorch's CPU kernels that the PyTorch bridge's replay is measured against (docs/tutorials/
# your-pytorch-code.md, "Which kernels the replay follows"): ATen's AVX2 kernels, and Intel MKL's AVX
# code path for matrix products. On an AVX-512 processor, or with MKL's AVX2 path on an Intel one,
# some of PyTorch's sums add in another order and the watch says the pass differs, and why
# (test_bridge_processor.py checks that it says so without these). Read when torch starts: set
# before any test imports it, and inherited by the processes the tests start. A setting of the
# developer's own is kept.
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
os.environ.setdefault("MKL_CBWR", "AVX")

settings.register_profile(
    "default",
    max_examples=int(os.environ.get("VJPGRAD_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# Mutation runs (pyproject.toml, [tool.mutmut]) pass --hypothesis-profile=mutation: the same examples
# for every mutant and no example database, so a run is repeatable and a clean run never replays a
# failure found elsewhere.
settings.register_profile(
    "mutation",
    max_examples=int(os.environ.get("VJPGRAD_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    database=None,
)
settings.load_profile("default")


@pytest.fixture(autouse=True)
def _compile_writes_afresh_under_mutmut(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under mutmut, no compiled-code cache: mutmut runs every mutant in a process forked from one
    that set VJPGRAD_CACHE_DIR once, so a program cached under the clean run (or another mutant),
    whose key is the recorded structure, would be loaded and run in place of what the mutated table
    writes, and a mutant of a rule's code would go unseen. Tests of the cache give their own
    directory and setting (test_compile_replay.py's ``cache_dir``)."""
    if "MUTANT_UNDER_TEST" in os.environ:  # set by mutmut in every run it makes, absent otherwise
        monkeypatch.setenv("VJPGRAD_CACHE", "0")


# the workspace's run of every vmap test is the whole suite's (it doubles vmap's share of the quick
# loop); the quick loop keeps the plain run and the workspace's own tests in test_vmap.py
@pytest.fixture(scope="module", params=["plain", pytest.param("workspace", marks=pytest.mark.slow)])
def vmap_code(request: pytest.FixtureRequest) -> Iterator[str]:
    """vmap's tests twice (``pytestmark = pytest.mark.usefixtures("vmap_code")``): with the plain
    array code (batches of the tests' sizes), and with the code that writes into a workspace
    (``workspace.WORKSPACE_BYTES`` at 0: every batch), each vmap call made twice so that the
    second writes into the arrays of the first."""
    if request.param == "plain":
        yield request.param
        return
    from vjpgrad.batched import run, workspace

    once = run.Vmapped.__call__

    def twice(self: Any, *args: Any, **kwargs: Any) -> Any:
        once(self, *args, **kwargs)
        return once(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(workspace, "WORKSPACE_BYTES", 0)
        patch.setattr(run.Vmapped, "__call__", twice)
        yield request.param
