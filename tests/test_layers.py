"""The layers of the package, as ARCHITECTURE.md draws them (its diagram is the one map: these
tests read it): imports go downwards only, with no circle, counting the imports inside functions
(not those under ``if TYPE_CHECKING:``, which never run); the core imports nothing else of
vjpgrad; nothing below the package root imports it, and nothing below the command line imports
it or the course."""

from __future__ import annotations

import ast
import collections
import functools
import re
from collections.abc import Mapping
from pathlib import Path

import vjpgrad

PACKAGE = Path(vjpgrad.__file__).resolve().parent
ARCHITECTURE = Path(__file__).resolve().parent.parent / "ARCHITECTURE.md"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of a module that runs, leaving out ``if TYPE_CHECKING:`` blocks (types for mypy,
    never imported when the program runs)."""
    found: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def imports_of(path: Path) -> set[str]:
    """The vjpgrad modules a file imports, anywhere in it (a function's body included)."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    return _imports_in(path.read_text(encoding="utf-8"), package)


def _imports_in(source: str, package: str) -> set[str]:
    """The vjpgrad modules ``source``, a module of ``package``, imports."""
    found: set[str] = set()
    for node in runtime_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("vjpgrad"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.startswith("vjpgrad"):
                found.add(target)
                found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


@functools.cache  # read once for the tests of this file: the package does not change during a run
def graph() -> Mapping[str, frozenset[str]]:
    """Each module of the package and the modules of the package it imports."""
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py") if "templates" not in path.parts}
    return {
        name: frozenset(m for m in imports_of(path) if m in modules and m != name) for name, path in modules.items()
    }


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_import_graph_has_no_circle() -> None:
    edges = graph()
    # a circle between packages shows as one between their modules; __init__ files re-export, so
    # a package's __init__ importing its own modules is not a way back up
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> None:
        if module in path:
            raise AssertionError(f"an import circle: {' -> '.join([*path[path.index(module) :], module])}")
        if module in done:
            return
        path.append(module)
        for target in sorted(edges[module]):
            if target.endswith("__init__") or target == module.rpartition(".")[0]:
                continue  # a module importing its own package's __init__ (names re-exported there)
            visit(target)
        path.pop()
        done.add(module)

    for module in sorted(edges):
        if module != "vjpgrad" and not module.endswith(".__init__"):
            visit(module)


def test_the_core_imports_nothing_else_of_vjpgrad() -> None:
    outside = {
        (module, target)
        for module, targets in graph().items()
        if layer(module) == "core"
        for target in targets
        if layer(target) != "core" and target != "vjpgrad"
    }
    assert outside == set()


def test_no_layer_below_the_command_line_imports_it_or_the_course() -> None:
    upward = {
        (module, target)
        for module, targets in graph().items()
        if layer(module) not in ("cli", "course", "", "__main__")
        for target in targets
        if layer(target) in ("cli", "course")
    }
    assert upward == set()


# ---- the diagram of ARCHITECTURE.md ----------------------------------------------------------------


@functools.cache
def diagram() -> tuple[tuple[str, ...], ...]:
    """ARCHITECTURE.md's diagram of the layers, top line first: the modules each line names
    (``cli/`` is the package vjpgrad.cli, ``optim.py`` the module vjpgrad.optim, ``__init__.py``
    the package root vjpgrad)."""
    section = ARCHITECTURE.read_text(encoding="utf-8").split("## The layers", 1)[1]
    block = section.split("```", 2)[1]
    lines = []
    for line in block.splitlines()[1:]:
        if line.strip() and set(line.strip()) != {"-"}:
            names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
            lines.append(tuple(_module(name.strip()) for name in names.split(",")))
    return tuple(lines)


def _module(name: str) -> str:
    if name == "__init__.py":
        return "vjpgrad"
    return "vjpgrad." + name.removesuffix("/").removesuffix(".py")


def line_of(module: str) -> int:
    """The line of the diagram that holds ``module`` (0 is the top), or -1."""
    for number, names in enumerate(diagram()):
        if any(module == name or (name != "vjpgrad" and module.startswith(name + ".")) for name in names):
            return number
    return -1


def test_the_diagram_names_every_module_and_only_modules_that_exist() -> None:
    edges = graph()
    assert [m for m in edges if line_of(m) < 0] == []
    named = [name for names in diagram() for name in names]
    assert [name for name in named if not any(m == name or m.startswith(name + ".") for m in edges)] == []
    assert len(diagram()) >= 10  # the diagram is read: a line per layer


def test_no_module_imports_one_of_a_line_above_its_own() -> None:
    upward = sorted(
        f"{module} (line {line_of(module) + 1}) imports {target} (line {line_of(target) + 1})"
        for module, targets in graph().items()
        for target in targets
        if line_of(target) < line_of(module)
    )
    assert upward == []


def test_no_module_below_the_package_root_imports_the_root() -> None:
    root = line_of("vjpgrad")
    assert [m for m, targets in graph().items() if "vjpgrad" in targets and line_of(m) > root] == []
    assert {"vjpgrad.cli.main", "vjpgrad.course.twins"} & {m for m, t in graph().items() if "vjpgrad" in t}


def test_an_upward_import_is_seen() -> None:
    # the checks above read imports as they are written, inside a function too: an upward one is caught
    source = (
        "import vjpgrad\nfrom vjpgrad.compiler import run\n\n"
        "def f():\n    from . import graph\n    from vjpgrad.cli import main\n"
    )
    found = _imports_in(source, "vjpgrad.core")
    assert found >= {"vjpgrad", "vjpgrad.compiler.run", "vjpgrad.core.graph", "vjpgrad.cli.main"}
    above = {t for t in found if line_of(t) < line_of("vjpgrad.core.ops")}
    assert above == {"vjpgrad", "vjpgrad.compiler", "vjpgrad.compiler.run", "vjpgrad.cli", "vjpgrad.cli.main"}


def test_the_layers_are_found() -> None:
    # the checks above see the package: every layer ARCHITECTURE.md names, and imports between them
    edges = graph()
    assert {"core", "codegen", "compiler", "display", "transforms", "cli", "course", "nn"} <= {layer(m) for m in edges}
    assert "vjpgrad.core.graph" in edges["vjpgrad.compiler.record"]


def test_the_core_never_imports_the_recording_hooks_not_even_for_a_type() -> None:
    # recording.py has a line of its own, above the core: compile and vmap use it; the core calls
    # it through modes.Recorder (a Protocol) and never imports it, under TYPE_CHECKING included
    assert line_of("vjpgrad.core.graph") > line_of("vjpgrad.recording") > line_of("vjpgrad.codegen")
    users = {module for module, targets in graph().items() if "vjpgrad.recording" in targets}
    assert {"vjpgrad.compiler.record", "vjpgrad.compiler.run", "vjpgrad.compiler.fold", "vjpgrad.batched.run"} <= users
    assert [path.name for path in sorted((PACKAGE / "core").glob("*.py")) if _imports_recording(path.read_text())] == []
    # the check sees every spelling, under TYPE_CHECKING too
    assert _imports_recording("if TYPE_CHECKING:\n    from vjpgrad.recording import Recording\n")
    assert _imports_recording("from vjpgrad import recording\n")
    assert _imports_recording("from .. import recording\n")
    assert _imports_recording("import vjpgrad.recording as r\n")
    assert not _imports_recording("from vjpgrad.core import graph\nfrom . import ops\n")


def _imports_recording(source: str) -> bool:
    """Whether ``source``, a module of the core, imports ``vjpgrad.recording`` or a name of it,
    anywhere (a function's body, an ``if TYPE_CHECKING:`` block)."""
    return any(
        name == "vjpgrad.recording" or name.startswith("vjpgrad.recording.")
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for name in _named(node)
    )


def _named(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules (or a module's names) an import statement names, absolute: ``from vjpgrad
    import recording`` names ``vjpgrad.recording``; ``from .. import recording`` in the core too."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = "vjpgrad" if node.level > 1 else "vjpgrad.core" if node.level == 1 else ""
    module = ".".join(part for part in (base, node.module or "") if part)
    return [module, *(f"{module}.{alias.name}" for alias in node.names)]


FRAME_READS = ("_getframe", "currentframe", "f_back", "f_code", "f_globals", "f_locals", "stack(", "getouterframes")


def test_nothing_in_the_core_reads_a_frame_except_to_name_the_users_line() -> None:
    # the core knows nothing of compile beyond modes.Recorder: no answer depends on who asks
    allowed = {"caller_location", "is_own_code", "_users_frames", "warn_at_users_line"}  # the user's line
    found = []
    for path in sorted((PACKAGE / "core").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inside_allowed = {id(n) for f in functions if f.name in allowed for n in ast.walk(f)}
        for node in ast.walk(tree):
            text = ast.unparse(node) if isinstance(node, (ast.Attribute, ast.Call, ast.Name)) else ""
            if any(read in text for read in FRAME_READS) and id(node) not in inside_allowed:
                found.append(f"{path.name}:{node.lineno}: {text}")
    assert not found, found
    assert "caller_location" in (PACKAGE / "core" / "modes.py").read_text(encoding="utf-8")  # the check sees it


def _core_definitions() -> list[tuple[str, str]]:
    """(file, name) of each top-level function, class and assignment of the core's modules."""
    found = []
    for path in sorted((PACKAGE / "core").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                found.append((path.name, node.name))
            elif isinstance(node, ast.Assign):
                found += [(path.name, t.id) for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found.append((path.name, node.target.id))
    return found


def test_the_core_defines_nothing_that_only_compile_and_vmap_use() -> None:
    # the core holds the engine; what only compile and vmap use lives in recording.py, above it
    texts = [path.read_text(encoding="utf-8") for path in (PACKAGE / "core").glob("*.py")]
    in_core = collections.Counter(word for text in texts for word in re.findall(r"\w+", text))
    others = {
        module_name(path): set(re.findall(r"\w+", path.read_text(encoding="utf-8")))
        for path in PACKAGE.rglob("*.py")
        if "core" not in path.relative_to(PACKAGE).parts
    }
    theirs = ("vjpgrad.compiler", "vjpgrad.batched", "vjpgrad.recording")
    found = []
    for file, name in _core_definitions():
        if in_core[name] > 1:
            continue  # the core itself uses it (beyond its definition)
        users = {module for module, words in others.items() if name in words} - {"vjpgrad"}  # the root re-exports
        if users and all(user.startswith(theirs) for user in users) and any(u.startswith(theirs[:2]) for u in users):
            found.append(f"{file}: {name} (used by {', '.join(sorted(users))})")
    assert found == []


def test_import_vjpgrad_leaves_compile_vmap_and_the_stepper_to_their_first_use() -> None:
    # they are two thirds of the import's time (some 50 ms of 100 with bytecode): a script that
    # never compiles, a learner's first `import vjpgrad`, `python -m vjpgrad`, do not pay for them
    import subprocess
    import sys

    code = (
        "import sys, vjpgrad\n"
        "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('vjpgrad.')} & {'compiler', 'batched'}),"
        " 'vjpgrad.display.stepper' in sys.modules)\n"
        "print(all(name in dir(vjpgrad) for name in ('compile', 'vmap', 'Compiled', 'Vmapped', 'batch_sum', 'nn')))\n"
        "from vjpgrad import compile, vmap, Compiled, Vmapped, batch_sum\n"
        "f = vjpgrad.compile(lambda x: x * x + 1.0)\n"
        "print(f(vjpgrad.Value(3.0)).data, f(vjpgrad.Value(2.0)).data, type(f) is Compiled is vjpgrad.Compiled)\n"
        "print(vjpgrad.explain(vjpgrad.Value(2.0) * 3.0).to_html().startswith('<!DOCTYPE html>'))\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown == "[] False\nTrue\n10.0 5.0 True\nTrue\n"
