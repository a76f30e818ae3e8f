"""Assemble the Pyodide that the documentation site's JupyterLite runs, from the package registries.

The npm package ``pyodide`` is Pyodide's core alone: the WebAssembly interpreter, the standard
library, the loaders and ``pyodide-lock.json``, which lists the packages Pyodide's own distribution
has but ships none of them. This script takes that core, downloads from PyPI the pure-Python wheels
the kernel and the course need (their versions pinned below), builds vjpgrad's wheel from this
repository, puts them all beside the core and writes a lock that lists exactly them. The kernel then
loads everything from the site itself: no request leaves its host.

It also compiles the standard library and every wheel to bytecode with Pyodide's own Python, run by
Node.js (``COMPILE``), and has the kernel load its own wheels with the rest (``KERNEL``): without
them the reader's browser compiled each module as the kernel imported it, and installed the kernel
with micropip, and the console's first result came about twice as late (benchmarks/lite_cold_start.py).

Run by the Sphinx build (``vjpgrad_lite``), or alone to make the folder::

    python docs/_lite/assemble.py            # writes docs/_lite/build/ (never committed)
    python docs/_lite/assemble.py --fetch    # only downloads (npm, pip): a build after it needs no network

The network is needed the first time (npm and pip, as their ordinary clients fetch), and Node.js
(which npm comes with); later builds reuse what was downloaded and compiled, and rebuild and
compile only vjpgrad's wheel.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parent.parent
BUILD = HERE / "build"

PYODIDE = "314.0.6"
"""The npm package ``pyodide``'s version: Python 3.14, the version jupyterlite-pyodide-kernel 0.8.6 is made for."""

WHEELS = {
    # the kernel: micropip loads piplite, which installs JupyterLite's ipykernel on IPython
    "micropip": "0.11.1",
    "packaging": "26.1",
    "ipython": "9.12.0",
    "ipython-pygments-lexers": "1.1.1",
    "comm": "0.2.3",
    "jedi": "0.19.2",
    "parso": "0.8.6",
    "traitlets": "5.14.3",
    "decorator": "5.2.1",
    "pygments": "2.20.0",
    "prompt-toolkit": "3.0.52",
    "wcwidth": "0.6.0",
    "stack-data": "0.6.3",
    "executing": "2.2.1",
    "asttokens": "3.0.1",
    "pure-eval": "0.2.3",
    "matplotlib-inline": "0.2.1",
    "six": "1.17.0",
    # vjpgrad course check
    "pytest": "9.0.2",
    "iniconfig": "2.3.0",
    "pluggy": "1.6.0",
    "hypothesis": "6.155.7",
    "sortedcontainers": "2.4.0",
}
"""The pure-Python wheels, by their names on PyPI, pinned (the lock's versions where it has the package)."""

DEPENDS = {
    "ipython": ["ipython-pygments-lexers"],
    "ipython-pygments-lexers": ["pygments"],
    "pytest": ["iniconfig", "packaging", "pluggy", "pygments"],
    "hypothesis": ["sortedcontainers"],
    "piplite": ["micropip"],
    "pyodide-kernel": ["ipykernel", "ipython", "comm", "jedi"],
    "vjpgrad": [],
}
"""What a package needs that the lock does not say (added to the lock's own list, which is kept
where it names shipped packages)."""

KERNEL = ["piplite", "ipykernel", "pyodide-kernel"]
"""The kernel's own wheels, which jupyterlite-pyodide-kernel ships (its version pins theirs): put in
the lock and loaded with the rest, rather than installed one by one by micropip once Pyodide runs."""

PRELOADED = ["micropip", *KERNEL, "ipython", "comm", "jedi", "vjpgrad", "pytest", "hypothesis"]
"""The packages the kernel loads as it starts: the kernel's (named as jupyterlite-pyodide-kernel
names them, so that it installs none of them again), vjpgrad to import, and ``course check``'s."""


SERVED = (".mjs", ".js", ".wasm", ".zip", ".json")
"""The kinds of file of the npm package that the site serves."""


def normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def run(*command: str) -> None:
    """Runs ``command`` in the build folder; its output is shown only when it fails (pip's notes on a
    machine's own configuration are not the site's warnings)."""
    done = subprocess.run(command, cwd=BUILD, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise subprocess.CalledProcessError(done.returncode, command)


def pyodide_core() -> Path:
    """The npm package, packed by npm and unpacked: its folder."""
    archive = BUILD / f"pyodide-{PYODIDE}.tgz"
    if not archive.exists():
        run("npm", "pack", "--silent", f"pyodide@{PYODIDE}")
    unpacked = BUILD / "npm"
    shutil.rmtree(unpacked, ignore_errors=True)
    with tarfile.open(archive) as tar:  # the files the site serves (not the README, the typings, the maps)
        wanted = [member for member in tar.getmembers() if Path(member.name).suffix in SERVED]
        tar.extractall(unpacked, members=wanted, filter="data")
    return unpacked / "package"


def wheels() -> list[Path]:
    """The pinned wheels, downloaded once into build/wheels."""
    folder = BUILD / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    have = {normal(path.name.split("-")[0]): path for path in folder.glob("*.whl")}
    missing = [f"{name}=={version}" for name, version in WHEELS.items() if f"-{version}-" not in str(have.get(name))]
    if missing:
        run(
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
            "--python-version", "3.14", "--implementation", "py", "--abi", "none", "--platform", "any",
            "-d", str(folder), *missing,
        )  # fmt: skip
        have = {normal(path.name.split("-")[0]): path for path in folder.glob("*.whl")}
    return [have[name] for name in WHEELS]


BACKEND = "setuptools==84.2.1"
"""The build backend vjpgrad's wheel is built with, pinned (pyproject.toml's ``build-system`` asks
for setuptools 77 or later): downloaded with the rest, so that a build needs no network."""


def backend() -> Path:
    """The folder that holds the build backend's wheel, downloaded once into build/backend."""
    folder = BUILD / "backend"
    folder.mkdir(parents=True, exist_ok=True)
    if not list(folder.glob(f"{BACKEND.replace('==', '-')}-*.whl")):
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
        run(*pip, "-d", str(folder), BACKEND)
    return folder


def vjpgrad_wheel() -> Path:
    """vjpgrad's wheel, built from this repository (a new one at each build), with the downloaded
    backend alone (``--no-index``: pip's isolated build environment looks nowhere else)."""
    folder = BUILD / "vjpgrad-wheel"
    shutil.rmtree(folder, ignore_errors=True)
    run(
        sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index", "--find-links", str(backend()),
        "-w", str(folder), str(REPOSITORY),
    )  # fmt: skip
    (wheel,) = folder.glob("vjpgrad-*.whl")
    return wheel


def kernel_wheels() -> list[Path]:
    """The kernel's own wheels, as jupyterlite-pyodide-kernel installed them beside its extension."""
    folder = Path(sys.prefix, "share", "jupyter", "labextensions", "@jupyterlite", "pyodide-kernel-extension")
    found = {normal(path.name.split("-")[0]): path for path in (folder / "static" / "pypi").glob("*.whl")}
    if not all(name in found for name in KERNEL):
        raise FileNotFoundError(f"no wheels of {', '.join(KERNEL)} in {folder}: install the docs extra")
    return [found[name] for name in KERNEL]


COMPILE = r"""
import importlib.util, json, zipfile
from importlib._bootstrap_external import _code_to_hash_pyc

def pyc(source, filename):
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):  # a file no import reads (a template, Python 2)
        return None
    return bytes(_code_to_hash_pyc(code, importlib.util.source_hash(source), checked=False))

def recompile(source, target, where, keep):
    # each module's bytecode: beside its source (__pycache__/foo.cpython-314.pyc), or in its place
    # (foo.pyc, which zipimport and the import system read without the source); RECORD says so
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as new:
        record, lines = None, []
        for info in old.infolist():
            data = old.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                record = (info, data.decode().splitlines())
                continue
            code = pyc(data, where + info.filename) if info.filename.endswith(".py") else None
            if code is None or keep:
                new.writestr(info, data)
            if code is not None:
                name = importlib.util.cache_from_source(info.filename) if keep else info.filename + "c"
                new.writestr(name, code)
                lines.append((info.filename, name))
        if record:
            gone = {py for py, _ in lines} if not keep else set()
            kept = [line for line in record[1] if line.split(",")[0] not in gone]
            new.writestr(record[0], "\n".join(kept + [name + ",," for _, name in lines]) + "\n")

with open(JOBS) as stream:  # noqa: F821 (set by NODE)
    for source, target, where, keep in json.load(stream):
        recompile("/host" + source, "/host" + target, where, keep)
"""
"""Run in Pyodide itself (under Node.js, which comes with npm): its own CPython compiles each module
of the standard library and of the wheels to bytecode, which the site's files then hold. Without it
the reader's browser compiles every module the kernel imports, as it starts. Bytecode of unchecked
hash, as the files never change; in place of the source (as Pyodide's own distribution ships its
packages: smaller files to fetch and unpack), except for vjpgrad, whose source a learner's
traceback shows."""

NODE = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [core, script, jobs] = process.argv.slice(1);
const { loadPyodide } = await import(pathToFileURL(core + "/pyodide.mjs").href);
const pyodide = await loadPyodide({ indexURL: core + "/" });
pyodide.mountNodeFS("/host", "/");
pyodide.globals.set("JOBS", "/host" + jobs);
pyodide.runPython(readFileSync(script, "utf8"));
"""


def compiled(core: Path, files: list[Path]) -> list[Path]:
    """``files`` (the standard library's zip and wheels) with their modules compiled to bytecode by
    Pyodide's Python (``COMPILE``), in build/compiled-*, each compiled once and reused (the folder is
    named by Pyodide's version and ``COMPILE``, so that a change of either compiles all anew)."""
    stamp = hashlib.sha256(f"{PYODIDE}\n{COMPILE}".encode()).hexdigest()[:12]
    folder = BUILD / f"compiled-{stamp}"
    folder.mkdir(parents=True, exist_ok=True)
    done = [folder / path.name for path in files]
    jobs = [
        [
            str(path.resolve()),
            str(target.resolve()),
            "/lib/python314.zip/" if path.suffix == ".zip" else "/lib/python3.14/site-packages/",
            path.name.startswith("vjpgrad-"),
        ]
        for path, target in zip(files, done, strict=True)
        if not target.exists() or target.stat().st_mtime < path.stat().st_mtime
    ]
    if jobs:
        (folder / "compile.py").write_text(COMPILE, encoding="utf-8")
        (folder / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
        script, listed = str(folder / "compile.py"), str(folder / "jobs.json")
        run("node", "--input-type=module", "-e", NODE, str(core.resolve()), script, listed)
    return done


def imports(wheel: Path) -> list[str]:
    """The top-level modules a wheel installs."""
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist() if not name.split("/")[0].endswith(".dist-info")}
    modules = {top.removesuffix(".pyc").removesuffix(".py") for top in tops}  # a package, a module's source or bytecode
    return sorted(module for module in modules if module.isidentifier())


def entry(wheel: Path, lock: dict[str, dict[str, object]]) -> dict[str, object]:
    name = normal(wheel.name.split("-")[0])
    old = lock.get(name, {})
    depends = [normal(str(d)) for d in old.get("depends", [])]  # type: ignore[attr-defined]
    return {
        "name": name,
        "version": wheel.name.split("-")[1],
        "file_name": wheel.name,
        "install_dir": "site",
        "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "package_type": "package",
        "imports": old.get("imports") or imports(wheel),
        "depends": sorted(set(depends) | set(DEPENDS.get(name, []))),
        "unvendored_tests": False,
        "shared_library": False,
    }


def assemble() -> Path:
    """The lite folder (build/lite): static/pyodide holds the core, the wheels and their lock, and
    jupyter-lite.json tells the kernel to load from there alone. Returns it."""
    BUILD.mkdir(parents=True, exist_ok=True)
    core = pyodide_core()
    stdlib, *shipped = compiled(core, [core / "python_stdlib.zip", *wheels(), *kernel_wheels(), vjpgrad_wheel()])
    lite = BUILD / "lite"
    shutil.rmtree(lite, ignore_errors=True)
    pyodide = lite / "static" / "pyodide"
    pyodide.mkdir(parents=True)
    for path in core.iterdir():
        if path.name != "package.json":
            shutil.copy2(stdlib if path.name == stdlib.name else path, pyodide / path.name)
    lock = json.loads((core / "pyodide-lock.json").read_text(encoding="utf-8"))
    packages = {normal(name): value for name, value in lock["packages"].items()}
    entries = [entry(wheel, packages) for wheel in shipped]
    names = {str(e["name"]) for e in entries}
    for e in entries:
        e["depends"] = [d for d in e["depends"] if d in names]  # type: ignore[attr-defined]
        shutil.copy2(shipped[entries.index(e)], pyodide / str(e["file_name"]))
    lock["packages"] = {str(e["name"]): e for e in entries}
    (pyodide / "pyodide-lock.json").write_text(json.dumps(lock, indent=1), encoding="utf-8")
    settings = {
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "exposeAppInBrowser": True,  # window.jupyterapp: what the browser tests drive
            "litePluginSettings": {
                "@jupyterlite/pyodide-kernel-extension:kernel": {
                    "disablePyPIFallback": True,
                    "loadPyodideOptions": {"packages": PRELOADED},
                }
            },
        },
    }
    (lite / "jupyter-lite.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
    build_config = {"LiteBuildConfig": {"no_sourcemaps": True, "no_unused_shared_packages": True}}
    (lite / "jupyter_lite_config.json").write_text(json.dumps(build_config, indent=1), encoding="utf-8")
    return lite


def fetch() -> None:
    """What needs the network, alone: Pyodide's npm package, the pinned wheels and the build
    backend, each downloaded once into build/. A build after it fetches nothing (CI builds the site
    with the network closed after this step)."""
    BUILD.mkdir(parents=True, exist_ok=True)
    pyodide_core()
    wheels()
    backend()


if __name__ == "__main__":
    if sys.argv[1:] == ["--fetch"]:
        fetch()
    elif sys.argv[1:]:
        sys.exit(f"usage: python {Path(__file__).name} [--fetch]  (--fetch: download what the build needs, and stop)")
    else:
        print(assemble())
