"""The repository's own text speaks to its users: no tracker numbers in the code, tests, docs,
benchmarks or configuration (the history lives in CHANGELOG.md and the commit messages)."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

READ = ("src", "docs", "tests", "benchmarks", "examples")
"""The folders whose text users and contributors read."""
CONFIG = ("pyproject.toml", ".ci/run", "README.md", "CONTRIBUTING.md", "ARCHITECTURE.md", ".gitignore")
"""The configuration and the pages at the top of the repository (CHANGELOG.md may keep history)."""
SUFFIXES = frozenset({".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".rst", ".ipynb", ".js", ".css"})
SKIPPED = frozenset({"_build", "__pycache__", ".hypothesis", "mutants", ".ipynb_checkpoints"})

# written in two parts, so that this file does not match its own pattern
TRACKER_NUMBER = re.compile("iss" + r"ue\s*#?\d+", re.IGNORECASE)


def texts() -> list[Path]:
    """Every text file of ``READ`` and ``CONFIG`` (built output and caches left out)."""
    found = [ROOT / name for name in CONFIG if (ROOT / name).is_file()]
    for folder in READ:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and not SKIPPED & set(path.parts):
                found.append(path)
    return found


def test_no_text_names_a_tracker_issue_by_number() -> None:
    files = texts()
    assert len(files) > 100  # the folders were found
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if TRACKER_NUMBER.search(line)
    ]
    assert hits == [], "history belongs in CHANGELOG.md and commit messages:\n" + "\n".join(hits)


def test_the_pattern_finds_what_it_is_for() -> None:
    word = "iss" + "ue"
    for text in (f"{word} 23", f"{word} #16", f"({word.title()} #11)", f"{word.upper()}23"):
        assert TRACKER_NUMBER.search(text), text
    for text in ("the issue", "an issue with 2 operands", "tissue", f"{word}s"):
        assert not TRACKER_NUMBER.search(text), text


# ---- ARCHITECTURE.md is true ------------------------------------------------------------------------

ARCHITECTURE = ROOT / "ARCHITECTURE.md"
PACKAGE = ROOT / "src" / "vjpgrad"


def cited() -> list[str]:
    """Every piece of code ARCHITECTURE.md cites (its backticked spans)."""
    return re.findall(r"`([^`\n]+)`", ARCHITECTURE.read_text(encoding="utf-8"))


def test_every_path_architecture_cites_exists() -> None:
    paths = [c for c in cited() if re.fullmatch(r"[\w./]+\.(py|md)|[\w]+/", c)]
    layers = re.findall(r"^(\w+)/ ", ARCHITECTURE.read_text(encoding="utf-8"), re.MULTILINE)
    assert len(paths) > 15
    assert len(layers) >= 6  # the diagram of the layers
    missing = [
        path
        for path in [*paths, *(f"{layer}/" for layer in layers)]
        if not any((base / path).exists() for base in (ROOT, PACKAGE, PACKAGE / "core"))
        and not (path.endswith(".py") and list(PACKAGE.rglob(path)))
    ]
    assert missing == []


def resolve(dotted: str) -> object:
    """``graph.reached``, ``Op.backward``, ``vjpgrad.compiler``: the object a dotted name in the
    text names, looked up as a module of vjpgrad (or of its core), then its attributes."""
    import importlib
    import importlib.util

    import vjpgrad
    from vjpgrad.core import ops

    head, *rest = dotted.split(".")
    found: object = None
    for module in (f"vjpgrad.core.{head}", f"vjpgrad.{head}", head if head == "vjpgrad" else ""):
        if module and importlib.util.find_spec(module) is not None:
            found = importlib.import_module(module)
            break
    else:  # a class: Value, Op
        found = getattr(vjpgrad, head, None) or getattr(ops, head)
    for name in rest:
        found = getattr(found, name)
    return found


def test_every_name_architecture_cites_exists() -> None:
    names = [c for c in cited() if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", c) and not c.endswith((".py", ".md"))]
    assert len(names) > 12
    missing = []
    for dotted in names:
        try:
            resolve(dotted)
        except AttributeError:
            missing.append(dotted)
    assert missing == []


def test_grad_lives_where_architecture_says() -> None:
    from vjpgrad import Value
    from vjpgrad.core import graph

    assert isinstance(vars(graph.Node)["grad"], property)
    assert "grad" not in vars(Value)
    assert "the property of `graph.Node`, in `core/graph.py`" in " ".join(ARCHITECTURE.read_text().split())


SLOTS = frozenset(
    {"_first", "_second", "_saved_first", "_saved_second", "_data", "_grad", "_operation", "_seq", "_seen"}
    | {"_cotangent", "_origin"}
)
"""The node's slots (``graph.Node.__slots__``, less the ones Python itself uses)."""

LAYOUT = frozenset({"core/graph.py", "recording.py"})
"""The modules that own the node's layout: ``graph`` defines it (the engine), ``recording`` (the
hooks of compile and vmap) imports it; ARCHITECTURE.md names them."""


_SPELLED = re.compile(r"(?<!\w)(?:" + "|".join(sorted(SLOTS)) + r")(?!\w)")
"""A slot's name spelled out as a word (``x._first``, ``"_first"``)."""


@functools.cache  # parsed once for the two tests below
def _trees() -> dict[str, ast.AST]:
    """Every module of the package that spells out a slot's name, parsed, by its path under the
    package. The others cannot touch a slot by attribute or by a string constant (what the
    checks below look for), and parsing only these keeps the checks well under a second."""
    texts = {str(p.relative_to(PACKAGE)): p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py")}
    return {module: ast.parse(text) for module, text in texts.items() if _SPELLED.search(text)}


def _slots_touched(trees: dict[str, ast.AST], kind: type[ast.expr_context]) -> dict[str, set[str]]:
    """Each module that reads (``ast.Load``) or writes (``ast.Store``) a node's slot as an
    attribute (``x._first``), with the slots it touches so."""
    touched: dict[str, set[str]] = {}
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in SLOTS and isinstance(node.ctx, kind):
                touched.setdefault(module, set()).add(node.attr)
    return touched


def _slots_named(trees: dict[str, ast.AST]) -> dict[str, set[str]]:
    """Each module that names a node's slot in a string (``getattr(x, "_data")``,
    ``setattr(x, "_cotangent", g)``, ``attrgetter("_seq")``: a read or a write the attribute
    syntax does not show), with the slots it names so."""
    named: dict[str, set[str]] = {}
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in SLOTS:
                named.setdefault(module, set()).add(node.value)
    return named


def test_only_the_layouts_owners_write_a_nodes_slots() -> None:
    from vjpgrad.core import graph

    assert set(graph.Node.__slots__) - {"__dict__", "__weakref__", "requires_grad"} == SLOTS
    trees = _trees()
    writers = set(_slots_touched(trees, ast.Store))
    # the generated operators fill a new node through the lines graph.make_inline writes
    assert writers == LAYOUT | {"core/operators.py"}
    row = next(line for line in ARCHITECTURE.read_text().splitlines() if line.startswith("| the node's layout"))
    assert all(f"`{module}`" in row for module in LAYOUT)
    # by name (getattr, setattr, attrgetter): the owners, and ops.data_of's read of the number
    named = _slots_named(trees)
    assert set(named) == {*LAYOUT, "core/ops.py"}
    assert named["core/ops.py"] == {"_data"}
    assert named["recording.py"] == {"_cotangent"}  # cotangents, set_cotangents: in C
    # the check sees a read by name that the attribute syntax hides
    sneaky = ast.parse('import operator\nfirst_of = operator.attrgetter("_first")\n')
    assert _slots_named({"compiler/fold.py": sneaky}) == {"compiler/fold.py": {"_first"}}


def test_only_the_layouts_owners_read_a_nodes_slots_beside_its_number() -> None:
    readers = _slots_touched(_trees(), ast.Load)
    beside_the_number = {module: slots - {"_data"} for module, slots in readers.items() if slots - {"_data"}}
    assert set(beside_the_number) == LAYOUT | {"core/value.py"}
    assert beside_the_number["core/value.py"] == {"_grad"}  # its repr: .grad without a recording's refusal
    assert beside_the_number["core/graph.py"] >= {"_first", "_saved_first", "_cotangent", "_seq"}
    # the number itself: read by the engine (Value's methods, the generated operators), and by
    # everyone else through graph.number
    assert set(readers) == LAYOUT | {"core/operators.py", "core/value.py"}


def test_every_name_of_the_recording_hooks_is_listed_in_their_docstring_and_in_architecture() -> None:
    # recording.py is the one documented interface between the core and compile/vmap: a hook
    # added there and not listed where a reader looks is a hook nobody knows of
    tree = ast.parse((PACKAGE / "recording.py").read_text(encoding="utf-8"))
    names = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assigned = [t for node in tree.body if isinstance(node, ast.Assign) for t in node.targets]
    names |= {t.id for t in assigned if isinstance(t, ast.Name)}
    public = {name for name in names if not name.startswith("_")}
    assert {"Recording", "recorded_graph", "slots_of", "positions_in", "set_cotangent", "add_gradients"} <= public
    docstring = ast.get_docstring(tree) or ""
    architecture = ARCHITECTURE.read_text(encoding="utf-8")
    assert sorted(name for name in public if f"``{name}``" not in docstring) == []
    unlisted = [name for name in public if not re.search(rf"`(recording\.)?{name}`", architecture)]
    assert sorted(unlisted) == []
    # and the core's side: what the core calls on a recording (modes.Recorder's methods)
    from vjpgrad.core.modes import Recorder

    calls = {name for name in vars(Recorder) if not name.startswith("_")}
    assert calls == {"record", "made_leaf", "fail", "raised"}
    assert sorted(name for name in calls if f"``Recorder.{name}``" not in docstring) == []
    assert sorted(name for name in calls if f"`modes.Recorder.{name}`" not in architecture) == []


# ---- no function a reader cannot follow -------------------------------------------------------------

GENERATED = frozenset({"core/operators.py", "core/functions.py"})
"""Written by ``python -m vjpgrad.codegen --write``: straight-line code on purpose."""


@pytest.mark.slow  # radon over every module: seconds; the whole suite and CI run it
def test_no_function_is_above_radons_grade_c() -> None:
    # grade C is a cyclomatic complexity of at most 20 (radon: A 1-5, B 6-10, C 11-20, D 21-30...)
    radon = pytest.importorskip("radon.complexity", reason="radon is installed in CI's main environment")
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = str(path.relative_to(PACKAGE))
        if module in GENERATED:
            continue
        for block in radon.cc_visit(path.read_text(encoding="utf-8")):
            for item in [block, *getattr(block, "closures", []), *getattr(block, "methods", [])]:
                if item.complexity > 20:
                    name = f"{item.classname}.{item.name}" if getattr(item, "classname", None) else item.name
                    found.add(f"{module}: {name} ({radon.cc_rank(item.complexity)} {item.complexity})")
    assert sorted(found) == []


# ---- the exactness page lists every known difference ------------------------------------------------


def test_the_exactness_page_names_every_function_whose_pytorch_kernel_may_differ() -> None:
    from op_cases import CASES

    page = " ".join((ROOT / "docs" / "explanation" / "exactness.md").read_text(encoding="utf-8").split())
    listed = re.search(r"- \*\*`([a-z0-9 ]+)` and `x \*\* 0\.5` use the C library's functions\*\*", page)
    assert listed is not None, "the page's list of the C library's functions moved: update this test"
    kernels = set()
    for case in CASES:
        forward, backward = case.vectorised(*[0.5] * len(case.operands))
        kernels |= {name for name, _ in [*([forward] if forward else []), *backward]}
    assert kernels  # the rows name the kernels PyTorch runs
    assert kernels <= set(listed.group(1).split())


def _slow(decorators: list[Any]) -> bool:
    return any("mark.slow" in ast.unparse(d) for d in decorators)


def test_every_test_file_keeps_a_test_in_the_quick_loop() -> None:
    # pytest -m "not slow" runs at least one test of every file: marking a whole subject slow hides it
    all_slow = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        marked = any(
            isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
            and "slow" in ast.unparse(node.value)
            for node in tree.body
        )  # fmt: skip
        tests = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
        if marked or all(_slow(n.decorator_list) for n in tests):
            all_slow.append(path.name)
    assert all_slow == []
