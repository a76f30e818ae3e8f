"""CONTRIBUTING.md's recipe for adding an operation, followed in a copy of the repository:
softplus, its one-operand example, added by exactly the edits it shows (the pages of its step 6
included), then ``codegen --write`` and the commands it gives, ``NAME`` read as softplus. The
quick tests check that the recipe shows these edits, that its places are there (anchors that an
operation added later does not move), that it names every page which lists the functions, and
that its commands run the quick loop."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "CONTRIBUTING.md"

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
"""
TEMPLATE = '    "softplus": _helper("_softplus"),\n'
REFERENCE = ".. autofunction:: vjpgrad.softplus\n"

# where each edit goes: text that is there once, and that an operation added after softplus keeps
FUNCTIONS_TUPLE = re.compile(r"(FUNCTIONS: tuple\[Op, \.\.\.\] = \([^)]*)\)")
ANCHORS = {
    "src/vjpgrad/core/ops.py": ["\n\ndef where(", "FUNCTIONS: tuple[Op, ...] = ("],
    "tests/op_cases.py": ["\n]\n\nMAX_WITH_CONSTANTS"],
    "src/vjpgrad/batched/templates.py": ['\n}\n"""The array forward of each op'],
    "docs/tutorials/first-backward.md": ["`relu`, "],
    "docs/reference/vjpgrad.md": [".. autofunction:: vjpgrad.relu\n"],
}
LISTED_BY_THE_COMMAND_LINE = re.compile(r"^(vjpgrad: error: .*(?:only|the functions are) .*), abs( can)?$", re.M)
"""The command line's error messages on docs/how-to/command-line.md that list the functions: the
table's, in its order, then ``abs``."""

_NOT_COPIED = shutil.ignore_patterns(
    ".git", "__pycache__", "*.egg-info", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache", "_build",
    "build", "dist", ".venv", ".ci-venv", ".ci-venvs", "mutants", "jupyter_execute", ".jupyter_cache", "_contents",
    "node_modules",
)  # fmt: skip


def not_copied(folder: str, names: list[str]) -> set[str]:
    """What the copy of the repository leaves out: what .gitignore names, and any virtual
    environment whatever its name (a folder holding ``pyvenv.cfg``). CI's own environments are
    made and removed inside its clone while the suite runs: copying one fails half-way."""
    left = set(_NOT_COPIED(folder, names))
    return left | {name for name in names if os.path.isfile(os.path.join(folder, name, "pyvenv.cfg"))}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path.name}: the recipe's anchor {old!r} is not there once"
    path.write_text(text.replace(old, new), encoding="utf-8")


def rewrite(path: Path, change: Callable[[str], str]) -> None:
    text = path.read_text(encoding="utf-8")
    changed = change(text)
    assert changed != text, f"{path.name}: the recipe's edit found nothing to change"
    path.write_text(changed, encoding="utf-8")


def recipe() -> str:
    """CONTRIBUTING.md's section on adding an operation, up to the next section."""
    text = GUIDE.read_text(encoding="utf-8")
    return text.split("**Adding an operation**", 1)[1].split("\n## ", 1)[0]


def commands() -> list[list[str]]:
    """The commands of the recipe's shell block, each as its words (comments dropped)."""
    block = recipe().split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line, comments=True) for line in block.splitlines() if shlex.split(line, comments=True)]


def follow_the_recipe(root: Path) -> None:
    """Steps 1 to 6 for softplus, in the copy at ``root``."""
    core = root / "src" / "vjpgrad" / "core"
    (core / "floats.py").write_text((core / "floats.py").read_text(encoding="utf-8") + FLOATS, encoding="utf-8")
    edit(core / "ops.py", "\n\ndef where(", HELPER + "\n\ndef where(")
    edit(core / "ops.py", "FUNCTIONS: tuple[Op, ...] = (", ROW + "FUNCTIONS: tuple[Op, ...] = (")
    rewrite(core / "ops.py", lambda text: FUNCTIONS_TUPLE.sub(r"\1, SOFTPLUS)", text, count=1))
    edit(root / "tests" / "op_cases.py", "\n]\n\nMAX_WITH_CONSTANTS", "\n" + CASES + "]\n\nMAX_WITH_CONSTANTS")
    templates = root / "src" / "vjpgrad" / "batched" / "templates.py"
    edit(templates, '\n}\n"""The array forward of each op', "\n" + TEMPLATE + '}\n"""The array forward of each op')
    docs = root / "docs"
    edit(docs / "tutorials" / "first-backward.md", "`relu`, ", "`relu`, `softplus`, ")
    relu = ".. autofunction:: vjpgrad.relu\n"
    edit(docs / "reference" / "vjpgrad.md", relu, relu + REFERENCE)
    command_line = docs / "how-to" / "command-line.md"
    rewrite(command_line, lambda text: LISTED_BY_THE_COMMAND_LINE.sub(r"\1, softplus, abs\2", text))
    edit(command_line, "tanh sigmoid relu ", "tanh sigmoid relu softplus ")


# a copy of the repository, the code written anew, and the recipe's commands run in it: the quick loop
# (about a minute) is one of them, as only it runs every test that reads the table, its lists and pages
@pytest.mark.slow
def test_an_operation_added_by_the_recipe_passes_the_recipes_commands(tmp_path: Path) -> None:
    # Where PyTorch is installed, as a contributor adding an operation has it (CONTRIBUTING's first
    # section): there the commands check all they name, the new case against torch's softplus in
    # its parity grid. Without torch they would check less at the same cost (60 to 140 s, the quick
    # loop), once more on every Python CI runs; CI runs this test once, in its torch environment.
    pytest.importorskip("torch", reason="the recipe's commands compare the new operation with PyTorch's")
    root = tmp_path / "vjpgrad"
    shutil.copytree(ROOT, root, ignore=not_copied)
    follow_the_recipe(root)
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    for words in commands():
        assert words[0] in ("python", "pytest"), words
        command = [sys.executable, *(words[1:] if words[0] == "python" else ["-m", "pytest", *words[1:]])]
        if words[0] == "pytest":
            command = [*command, "-q", "-x", "-p", "no:cacheprovider"]
        command = [word.replace("NAME", "softplus") for word in command]
        ran = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
        assert ran.returncode == 0, f"{' '.join(words)}:\n{ran.stdout[-3000:]}{ran.stderr[-3000:]}"
        if words[0] == "pytest":
            assert " passed" in ran.stdout
    assert "def softplus(self" in (root / "src" / "vjpgrad" / "core" / "operators.py").read_text(encoding="utf-8")
    check = subprocess.run(
        [sys.executable, "-c", "import vjpgrad; print(vjpgrad.softplus(0.0), vjpgrad.Value(0.0).softplus().data)"],
        cwd=root, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert check.stdout.split() == [repr(0.6931471805599453)] * 2


def test_the_recipe_is_the_one_contributing_shows_and_its_places_are_there() -> None:
    guide = " ".join(recipe().split())
    for snippet in (FLOATS, HELPER, ROW, CASES, TEMPLATE, REFERENCE):
        assert " ".join(snippet.split()) in guide, snippet
    for path, places in ANCHORS.items():
        text = (ROOT / path).read_text(encoding="utf-8")
        assert [place for place in places if text.count(place) != 1] == [], path
    assert FUNCTIONS_TUPLE.search((ROOT / "src" / "vjpgrad" / "core" / "ops.py").read_text(encoding="utf-8"))
    command_line = (ROOT / "docs" / "how-to" / "command-line.md").read_text(encoding="utf-8")
    assert len(LISTED_BY_THE_COMMAND_LINE.findall(command_line)) == 2
    assert command_line.count("tanh sigmoid relu ") == 1


def test_the_recipe_names_every_page_that_lists_the_functions() -> None:
    # a page that names every function of the table names the next one too: the recipe says which
    from vjpgrad.core import ops

    table = {op.name for op in ops.FUNCTIONS}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    listing = [
        page.relative_to(ROOT).as_posix()
        for page in pages
        if "_build" not in page.parts and table <= set(re.findall(r"\w+", page.read_text(encoding="utf-8")))
    ]
    assert "docs/tutorials/first-backward.md" in listing  # the check finds the lists
    assert [page for page in listing if f"`{page}`" not in recipe()] == []


def test_the_recipes_commands_write_the_code_then_run_the_quick_loop_and_the_new_operations_grids() -> None:
    found = commands()
    assert found[0] == ["python", "-m", "vjpgrad.codegen", "--write"]
    assert ["pytest", "-m", "not slow", "-n", "auto"] in found  # the quick loop: what reads the table and its pages
    grids = [words for words in found if words[:3] == ["pytest", "-m", "slow"]]
    assert len(grids) == 1
    assert "NAME" in " ".join(grids[0])


def test_the_copy_leaves_out_virtual_environments_whatever_their_name(tmp_path: Path) -> None:
    """CI makes and removes its environments inside its clone while the suite runs (the oldest
    setuptools' one went away under the copy, which failed half-way): none is copied."""
    for name in ("src", ".ci-venvs", "my-env"):
        (tmp_path / name).mkdir()
    (tmp_path / "my-env" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    assert not_copied(str(tmp_path), ["src", ".ci-venvs", "my-env"]) == {".ci-venvs", "my-env"}
