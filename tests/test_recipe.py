"""CONTRIBUTING.md's recipe for adding an operation, followed in a copy of ``src/`` and ``tests/``:
softplus, its one-operand example, added by exactly the edits it shows, then ``codegen --write``
and the tests that hold every operation to its row of cases."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FLOATS = '''

def softplus(x: float) -> float:
    """log(1 + exp(x)), PyTorch's softplus (beta 1, threshold 20): x itself above 20."""
    return x if x > 20.0 else log1p(exp(x))
'''
HELPER = """

def exp(x: Any) -> Any:
    return floats.exp(x) if is_float(x) else x.exp()
"""
ROW = """SOFTPLUS = _unary(
    "softplus",
    floats.softplus,
    lambda x, out: (where(data_of(x) > 20.0, 1.0, exp(x)), where(data_of(x) > 20.0, 1.0, exp(x) + 1.0)),
    lambda g, z, z1: div(g * z, z1),
    doc="log(1 + exp(x)), as PyTorch's softplus: x itself above 20",
)

"""
CASES = """    OpCase(
        "softplus", ops.SOFTPLUS, lambda x: x.softplus(), "v",
        torch=lambda torch, x: torch.nn.functional.softplus(x),
        domain=operands(finite(-30, 19)),  # not across 20, where the derivative jumps
        edges=((0.0, math.log(2.0)), (100.0, 100.0), (-inf, 0.0), (inf, inf), (nan, nan)),
        derivatives=((0.0, 0.5), (100.0, 1.0), (-inf, 0.0)),
    ),
]
"""


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path.name}: the recipe's anchor {old!r} is not there once"
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.slow  # a copy of the package, the code written anew, and the operation tests run in it
def test_an_operation_added_by_the_recipe_passes_the_operation_tests(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    shutil.copytree(ROOT / "tests", tmp_path / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    core = tmp_path / "src" / "vjpgrad" / "core"
    (core / "floats.py").write_text((core / "floats.py").read_text(encoding="utf-8") + FLOATS, encoding="utf-8")
    edit(core / "ops.py", "\n\ndef where(", HELPER + "\n\ndef where(")
    edit(core / "ops.py", "FUNCTIONS: tuple[Op, ...] = (", ROW + "FUNCTIONS: tuple[Op, ...] = (")
    edit(core / "ops.py", "ATAN2, HYPOT)\n", "ATAN2, HYPOT, SOFTPLUS)\n")
    edit(
        tmp_path / "tests" / "op_cases.py",
        "        with_a_number=True,\n    ),\n]\n",
        "        with_a_number=True,\n    ),\n" + CASES,
    )
    templates = tmp_path / "src" / "vjpgrad" / "batched" / "templates.py"
    edit(
        templates,
        '    "hypot": _helper("_hypot"),\n',
        '    "hypot": _helper("_hypot"),\n    "softplus": _helper("_softplus"),\n',
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    written = subprocess.run(
        [sys.executable, "-m", "vjpgrad.codegen", "--write"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert written.returncode == 0, written.stderr
    assert "def softplus(self" in (core / "operators.py").read_text(encoding="utf-8")
    every = ["tests/test_operations.py", "tests/test_generated_code.py"]  # slow ones too: central differences
    named = ["tests/test_transforms.py", "tests/test_compile_replay.py", "tests/test_vmap.py", "tests/test_cli.py"]
    for selection in (every, ["-k", "softplus or every_function", *named, "tests/test_torch_parity.py"]):
        ran = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *selection],
            cwd=tmp_path, env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout[-3000:]
        assert " passed" in ran.stdout
    check = subprocess.run(
        [sys.executable, "-c", "import vjpgrad; print(vjpgrad.softplus(0.0), vjpgrad.Value(0.0).softplus().data)"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert check.stdout.split() == [repr(0.6931471805599453)] * 2


def test_the_recipe_is_the_one_contributing_shows_and_its_places_are_there() -> None:
    guide = " ".join((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8").split())
    for snippet in (FLOATS, HELPER, ROW):
        assert " ".join(snippet.split()) in guide, snippet
    src = ROOT / "src" / "vjpgrad"
    anchors = {
        src / "core" / "ops.py": ["\n\ndef where(", "FUNCTIONS: tuple[Op, ...] = (", "ATAN2, HYPOT)\n"],
        ROOT / "tests" / "op_cases.py": ["        with_a_number=True,\n    ),\n]\n"],
        src / "batched" / "templates.py": ['    "hypot": _helper("_hypot"),\n'],
    }
    for path, places in anchors.items():
        text = path.read_text(encoding="utf-8")
        assert [place for place in places if text.count(place) != 1] == [], path.name
