"""pyproject.toml asks for what its own fields need, so every documented install works."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs tomllib (Python 3.11+)")

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"

SETUPTOOLS_WITH_PEP_639 = (77,)
"""The first setuptools to accept ``license = "MIT"`` (an SPDX expression) and ``license-files``:
older ones stop with "project.license must be valid exactly by one definition"."""


def minimum(requirement: str) -> tuple[int, ...] | None:
    """The lower bound ``>=`` of a requirement such as ``setuptools>=77.0``, as (77,), or None."""
    match = re.search(r">=\s*([0-9]+(?:\.[0-9]+)*)", requirement)
    if match is None:
        return None
    parts = [int(part) for part in match.group(1).split(".")]
    while len(parts) > 1 and parts[-1] == 0:  # 77.0 is 77
        parts.pop()
    return tuple(parts)


def test_the_build_requires_a_setuptools_that_reads_the_license_field() -> None:
    assert minimum("setuptools>=77") == minimum("setuptools>=77.0.0") == (77,)
    assert minimum("setuptools >= 77.0.3") == (77, 0, 3)
    assert minimum("setuptools>=64") < SETUPTOOLS_WITH_PEP_639
    assert minimum("setuptools") is None

    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    assert isinstance(config["project"]["license"], str)  # PEP 639's form, not a table
    requires = config["build-system"]["requires"]
    (setuptools,) = [r for r in requires if re.match(r"setuptools\s*(?:[<>=!~;\[]|$)", r)]
    bound = minimum(setuptools)
    assert bound is not None, f"{setuptools!r} has no lower bound"
    assert bound >= SETUPTOOLS_WITH_PEP_639, (
        f"{setuptools!r} admits a setuptools too old for license = {config['project']['license']!r}: "
        "pip install --no-build-isolation . fails with it"
    )


ROOT = PYPROJECT.parent


def minor_versions(text: str) -> list[str]:
    return sorted(set(re.findall(r"\b3\.1[0-9]\b", text)), key=lambda v: tuple(map(int, v.split("."))))


def test_the_readme_says_which_pythons_ci_tests_and_pyproject_agrees() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    versions_line = re.search(r"^VERSIONS=\((.*?)\)", ci, flags=re.MULTILINE)
    assert versions_line is not None, ".ci/run names the Pythons it tests in VERSIONS=(...)"
    tested = minor_versions(versions_line.group(1))
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())  # lines joined
    supported = re.search(r"CI runs the tests on CPython (.*?)(?:[;:)]|\.\s)", readme)
    assert supported is not None, "the README says which Pythons CI runs the tests on"
    assert minor_versions(supported.group(1)) == tested
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    classified = [c.rsplit("::", 1)[1].strip() for c in config["project"]["classifiers"] if re.search(r":: 3\.\d+$", c)]
    assert classified == tested
    assert config["project"]["requires-python"] == f">={tested[0]}"
