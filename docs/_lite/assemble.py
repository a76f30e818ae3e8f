"""Assemble the Pyodide that the documentation site's JupyterLite runs, from the package registries.

The npm package ``pyodide`` is Pyodide's core alone: the WebAssembly interpreter, the standard
library, the loaders and ``pyodide-lock.json``, which lists the packages Pyodide's own distribution
has but ships none of them. This script takes that core, downloads from PyPI the pure-Python wheels
the kernel and the course need (their versions pinned below), builds vjpgrad's wheel from this
repository, puts them all beside the core and writes a lock that lists exactly them. The kernel then
loads everything from the site itself: no request leaves its host.

Run by the Sphinx build (``vjpgrad_lite``), or alone to make the folder::

    python docs/_lite/assemble.py            # writes docs/_lite/build/ (never committed)

The network is needed the first time (npm and pip, as their ordinary clients fetch); later builds
reuse what was downloaded, and rebuild only vjpgrad's wheel.
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
    "vjpgrad": [],
}
"""What a package needs that the lock does not say (added to the lock's own list, which is kept
where it names shipped packages)."""

PRELOADED = ["micropip", "ipython", "comm", "jedi", "vjpgrad", "pytest", "hypothesis"]
"""The packages the kernel loads as it starts: vjpgrad is there to import, and ``course check`` runs."""


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


def vjpgrad_wheel() -> Path:
    """vjpgrad's wheel, built from this repository (a new one at each build)."""
    folder = BUILD / "vjpgrad-wheel"
    shutil.rmtree(folder, ignore_errors=True)
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(folder), str(REPOSITORY))
    (wheel,) = folder.glob("vjpgrad-*.whl")
    return wheel


def imports(wheel: Path) -> list[str]:
    """The top-level modules a wheel installs."""
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist() if not name.split("/")[0].endswith(".dist-info")}
    return sorted(top.removesuffix(".py") for top in tops if top.isidentifier() or top.endswith(".py"))


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
    shipped = [*wheels(), vjpgrad_wheel()]
    lite = BUILD / "lite"
    shutil.rmtree(lite, ignore_errors=True)
    pyodide = lite / "static" / "pyodide"
    pyodide.mkdir(parents=True)
    for path in core.iterdir():
        if path.name != "package.json":
            shutil.copy2(path, pyodide / path.name)
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


if __name__ == "__main__":
    print(assemble())
