"""pyproject.toml asks for what its own fields need, so every documented install works."""

from __future__ import annotations

import re
import subprocess
import sys
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


# ---- install hints: vjpgrad is not on PyPI ---------------------------------------------------------------

INSTALL_HINT = re.compile(r"pip install ([\w ]+?) \(or pip install -e '\.\[(\w+)\]' in your clone of vjpgrad\)")
"""The one form of every hint for an optional extra: its packages by name, or the extra from the clone."""
FROM_PYPI = re.compile(r"pip install\s+(?:-\S+\s+)*['\"]?vjpgrad(?![\w.-])")
"""``pip install vjpgrad`` or ``pip install 'vjpgrad[viz]'``: asks PyPI for vjpgrad, which is not there."""


def extras() -> dict[str, set[str]]:
    """Each extra of pyproject.toml and the names of the packages it installs."""
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    return {extra: {re.split(r"[^\w.-]", r, maxsplit=1)[0].lower() for r in reqs} for extra, reqs in declared.items()}


def written_places() -> list[Path]:
    places = [*(ROOT / "src").rglob("*.py"), *(ROOT / "examples").glob("*.py"), ROOT / "examples" / "notebook.ipynb"]
    places += [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").rglob("*.md")]
    places += [path for path in (ROOT / "tests").glob("*.py") if path.name != Path(__file__).name]
    return [path for path in places if "_build" not in path.parts]


def test_no_install_hint_asks_pypi_for_vjpgrad() -> None:
    assert FROM_PYPI.search("pip install 'vjpgrad[viz]'")
    assert FROM_PYPI.search("pip install vjpgrad")
    assert not FROM_PYPI.search("pip install 'vjpgrad-0.1.0-py3-none-any.whl[course]'")  # a wheel's file
    assert not FROM_PYPI.search("pip install -e '.[viz]'")
    asking = [path.relative_to(ROOT).as_posix() for path in written_places() if FROM_PYPI.search(path.read_text())]
    assert asking == []


def test_every_install_hint_names_the_packages_of_its_extra_and_the_extra_from_the_clone() -> None:
    from vjpgrad.batched.arrays import INSTALL as ARRAYS
    from vjpgrad.bridge import INSTALL as BRIDGE
    from vjpgrad.course.commands import install_hint
    from vjpgrad.display.dot import INSTALL_HINT as DRAWING
    from vjpgrad.testing import HYPOTHESIS_HINT

    declared = extras()
    hints = {
        "vjpgrad.draw": (DRAWING, "graphviz", "viz"),
        "vjpgrad.testing": (HYPOTHESIS_HINT, "hypothesis", "test"),
        "vjpgrad.vmap": (ARRAYS, "numpy", "vmap"),
        "vjpgrad.watch_torch": (BRIDGE, "torch", "torch"),
        "vjpgrad course check": (install_hint(["pytest", "hypothesis"]), "pytest hypothesis", "course"),
        "examples/moons.py": ((ROOT / "examples" / "moons.py").read_text(), "matplotlib", "plot"),
        "examples/draw_example_1.py": ((ROOT / "examples" / "draw_example_1.py").read_text(), "graphviz", "viz"),
    }
    for place, (text, packages, extra) in hints.items():
        assert (packages, extra) in INSTALL_HINT.findall(" ".join(text.split())), place
    assert install_hint(["hypothesis"]).startswith("pip install hypothesis (")  # only what is missing
    for path in written_places():
        for packages, extra in INSTALL_HINT.findall(" ".join(path.read_text().split())):
            assert set(packages.split()) <= declared[extra], f"{path.name}: {packages} is not all in [{extra}]"


def test_the_bridges_error_is_vjpgrads_without_importing_torch() -> None:
    # watch_torch(strict=True) raises TorchReplayError: a learner catches it by that name
    code = (
        "import sys, vjpgrad\n"
        "from vjpgrad import TorchReplayError\n"
        "assert issubclass(TorchReplayError, RuntimeError)\n"
        "assert 'torch' not in sys.modules\n"
        "print('TorchReplayError' in vjpgrad.__all__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr
