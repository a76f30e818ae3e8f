"""The persistent cache of compiled code (vjpgrad.compiler.cache): keyed by structure, Python and
vjpgrad; a damaged, foreign or stale entry ignored and rebuilt; atomic, private, and skipped
rather than failing when it cannot be used."""

from __future__ import annotations

import errno
import importlib.util
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import types
from pathlib import Path
from typing import Any

import pytest

import vjpgrad
from vjpgrad import Value
from vjpgrad.compiler import cache as _cache

STRUCTURE = b"t1 = x0 * p0; t2 = t1 + p1"  # what a compiler might describe a recording by


def compiled_payload(scale: float) -> tuple[Any, dict[str, Any]]:
    """What the compiler stores: a code object and a little metadata."""
    source = f"def forward(inputs):\n    x0, p0, = inputs\n    t1 = x0 * p0\n    return (t1 * {scale!r},)\n"
    return compile(source, "<forward>", "exec"), {"outputs": 1, "scale": scale}


def run_payload(payload: Any, inputs: tuple[float, ...]) -> tuple[float, ...]:
    code, _ = payload
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    result: tuple[float, ...] = namespace["forward"](inputs)
    return result


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache directory (not yet made) for one test, the cache on."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("VJPGRAD_CACHE_DIR", str(folder))
    monkeypatch.delenv("VJPGRAD_CACHE", raising=False)
    return folder


def entry_path(folder: Path, key: str) -> Path:
    return folder / f"{key}{_cache.SUFFIX}"


# ---- the key ---------------------------------------------------------------------------------------


def test_the_same_structure_gives_the_same_key_and_a_hit(cache_dir: Path) -> None:
    key = _cache.key(STRUCTURE)
    assert key == _cache.key(bytearray(STRUCTURE))
    assert len(key) == 64
    assert _cache.store(key, compiled_payload(2.0))
    assert run_payload(_cache.load(_cache.key(STRUCTURE)), (3.0, 5.0)) == (30.0,)


def test_a_different_structure_misses(cache_dir: Path) -> None:
    assert _cache.store(_cache.key(STRUCTURE), compiled_payload(2.0))
    other = _cache.key(STRUCTURE + b"; t3 = t2 * t2")
    assert other != _cache.key(STRUCTURE)
    assert _cache.load(other) is None


PYTHON_CHANGES = {
    "bytecode magic number": (importlib.util, "MAGIC_NUMBER", b"\x00\x00\r\n"),
    "version": (sys, "version", "3.99.0 (main) [a compiler]"),
    "implementation": (sys, "implementation", types.SimpleNamespace(name="pypy")),
}


@pytest.mark.parametrize("change", PYTHON_CHANGES.values(), ids=PYTHON_CHANGES.keys())
def test_another_python_misses(cache_dir: Path, monkeypatch: pytest.MonkeyPatch, change: tuple[Any, str, Any]) -> None:
    assert _cache.store(_cache.key(STRUCTURE), compiled_payload(2.0))
    with monkeypatch.context() as patch:  # only the key is made with the other description
        patch.setattr(*change)
        key = _cache.key(STRUCTURE)
    assert key != _cache.key(STRUCTURE)
    assert _cache.load(key) is None


def test_another_optimisation_level_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    key = _cache.key(STRUCTURE)
    with monkeypatch.context() as patch:
        patch.setattr(sys, "flags", types.SimpleNamespace(optimize=2))
        optimised = _cache.key(STRUCTURE)
    assert optimised != key


def test_another_vjpgrad_version_misses(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _cache.store(_cache.key(STRUCTURE), compiled_payload(2.0))
    monkeypatch.setattr(_cache, "__version__", "9.9.9")
    assert _cache.load(_cache.key(STRUCTURE)) is None


def test_edited_vjpgrad_source_misses(cache_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # the same version number, but the code generator's source changed (an editable install)
    package = tmp_path / "package"
    (package / "compile").mkdir(parents=True)
    (package / "compile" / "_codegen.py").write_text("WRITE = 1\n")
    before = _cache._source_fingerprint(str(package))
    (package / "compile" / "_codegen.py").write_text("WRITE = 2\n")
    after = _cache._source_fingerprint(str(package))
    assert before != after
    monkeypatch.setattr(_cache, "_source", lambda: before)
    key = _cache.key(STRUCTURE)
    assert _cache.store(key, compiled_payload(2.0))
    monkeypatch.setattr(_cache, "_source", lambda: after)
    assert _cache.load(_cache.key(STRUCTURE)) is None


def test_an_edit_that_keeps_the_size_and_the_time_changes_the_fingerprint(tmp_path: Path) -> None:
    # rsync -a or tar keep a copy's sizes and times: the contents decide
    source = tmp_path / "ops.py"
    source.write_text("ONE = 1\n")
    os.utime(source, ns=(10**18, 10**18))
    before = _cache._source_fingerprint(str(tmp_path))
    source.write_text("ONE = 2\n")
    os.utime(source, ns=(10**18, 10**18))
    assert _cache._source_fingerprint(str(tmp_path)) != before


def test_the_fingerprint_covers_the_whole_package_wherever_the_module_sits() -> None:
    root = Path(vjpgrad.__file__).parent
    assert _cache._source_fingerprint(str(root)) == _cache._source()


def test_a_structure_that_is_not_bytes_is_refused() -> None:
    with pytest.raises(TypeError, match="bytes"):
        _cache.key("t1 = x0")  # type: ignore[arg-type]  # the wrong type on purpose


@pytest.mark.parametrize("bad", ["", "abc", "G" * 64, "A" * 64, "0" * 63, 12])
def test_a_key_not_made_by_key_is_refused_before_any_file_is_touched(cache_dir: Path, bad: Any) -> None:
    with pytest.raises(ValueError, match="64 lowercase hexadecimal"):
        _cache.load(bad)
    with pytest.raises(ValueError, match="64 lowercase hexadecimal"):
        _cache.store(bad, compiled_payload(1.0))
    assert not cache_dir.exists()


def test_a_payload_marshal_cannot_write_is_refused_before_any_file_is_touched(cache_dir: Path) -> None:
    with pytest.raises(ValueError, match="unmarshallable"):
        _cache.store(_cache.key(STRUCTURE), object())
    assert not cache_dir.exists()


# ---- damaged entries: ignored, rebuilt, rewritten ----------------------------------------------------


def truncated_in_header(data: bytes) -> bytes:
    return data[:10]


def truncated_in_payload(data: bytes) -> bytes:
    return data[: len(data) // 2 + 30]


def one_byte_short(data: bytes) -> bytes:
    return data[:-1]


def one_byte_long(data: bytes) -> bytes:
    return data + b"\0"


def a_flipped_payload_byte(data: bytes) -> bytes:
    return data[:-5] + bytes([data[-5] ^ 1]) + data[-4:]


def garbage(data: bytes) -> bytes:
    return os.urandom(len(data))


def empty(data: bytes) -> bytes:
    return b""


def foreign_magic(data: bytes) -> bytes:
    return b"PK\x03\x04" + data[4:]  # a zip file, say


def stale_format(data: bytes) -> bytes:
    return data[:8] + (_cache.FORMAT - 1).to_bytes(2, "big") + data[10:]


def announced_length_huge(data: bytes) -> bytes:
    return data[:42] + (2**63).to_bytes(8, "big") + data[50:]


DAMAGE = [
    truncated_in_header,
    truncated_in_payload,
    one_byte_short,
    one_byte_long,
    a_flipped_payload_byte,
    garbage,
    empty,
    foreign_magic,
    stale_format,
    announced_length_huge,
]


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_entry_is_ignored_then_rebuilt_and_rewritten(cache_dir: Path, damage: Any) -> None:
    key = _cache.key(STRUCTURE)
    assert _cache.store(key, compiled_payload(2.0))
    path = entry_path(cache_dir, key)
    path.write_bytes(damage(path.read_bytes()))
    assert _cache.load(key) is None
    builds = []

    def build() -> Any:
        builds.append(1)
        return compiled_payload(2.0)

    assert run_payload(_cache.load_or_build(key, build), (3.0, 5.0)) == (30.0,)
    assert builds == [1]
    assert run_payload(_cache.load_or_build(key, build), (3.0, 5.0)) == (30.0,)
    assert builds == [1]  # rewritten: the second call read it


def test_the_entry_of_another_structure_under_this_name_is_ignored(cache_dir: Path) -> None:
    this, other = _cache.key(STRUCTURE), _cache.key(b"another structure")
    assert _cache.store(other, compiled_payload(7.0))  # a valid entry, for other code
    entry_path(cache_dir, other).rename(entry_path(cache_dir, this))
    assert _cache.load(this) is None
    payload = _cache.load_or_build(this, lambda: compiled_payload(2.0))
    assert run_payload(payload, (3.0, 5.0)) == (30.0,)  # not 105.0, the other structure's answer


def test_a_directory_in_place_of_an_entry_is_a_miss(cache_dir: Path) -> None:
    key = _cache.key(STRUCTURE)
    entry_path(cache_dir, key).mkdir(parents=True)
    assert _cache.load(key) is None


def test_a_missing_entry_or_directory_is_a_miss(cache_dir: Path) -> None:
    assert _cache.load(_cache.key(STRUCTURE)) is None
    cache_dir.mkdir()
    assert _cache.load(_cache.key(STRUCTURE)) is None


# ---- turned off, moved --------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "false", "FALSE", "no", "off", " Off "])
def test_VJPGRAD_CACHE_off_stores_and_loads_nothing(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    key = _cache.key(STRUCTURE)
    assert _cache.store(key, compiled_payload(2.0))
    monkeypatch.setenv("VJPGRAD_CACHE", value)
    assert _cache.load(key) is None  # the entry is there, but not read
    other = _cache.key(b"other")
    assert not _cache.store(other, compiled_payload(2.0))
    assert not entry_path(cache_dir, other).exists()
    assert _cache.info().enabled is False
    assert _cache.directory() is None
    assert _cache.clear() == 0
    assert entry_path(cache_dir, key).exists()


@pytest.mark.parametrize("value", ["", "1", "true", "Yes", "on"])
def test_VJPGRAD_CACHE_on_spellings_keep_it_on(cache_dir: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("VJPGRAD_CACHE", value)
    key = _cache.key(STRUCTURE)
    assert _cache.store(key, compiled_payload(2.0))
    assert _cache.load(key) is not None


def test_an_unknown_VJPGRAD_CACHE_value_is_an_error_naming_it(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VJPGRAD_CACHE", "flase")
    with pytest.raises(ValueError, match=r"VJPGRAD_CACHE='flase'.*0, false, no or off"):
        _cache.load(_cache.key(STRUCTURE))


def test_VJPGRAD_CACHE_DIR_moves_the_cache_and_is_read_at_each_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = _cache.key(STRUCTURE)
    for name in ("first", "second"):
        monkeypatch.setenv("VJPGRAD_CACHE_DIR", str(tmp_path / name))
        assert _cache.store(key, compiled_payload(2.0))
        assert entry_path(tmp_path / name, key).is_file()
        assert _cache.info().directory == tmp_path / name
    monkeypatch.setenv("VJPGRAD_CACHE_DIR", str(tmp_path / "third"))
    assert _cache.load(key) is None


def test_a_relative_or_tilde_VJPGRAD_CACHE_DIR_is_made_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VJPGRAD_CACHE_DIR", "here")
    assert _cache.directory() == tmp_path / "here"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VJPGRAD_CACHE_DIR", "~/cache")
    assert _cache.directory() == tmp_path / "home" / "cache"


def test_without_VJPGRAD_CACHE_DIR_the_platform_directory_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("VJPGRAD_CACHE_DIR", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _cache.directory() == tmp_path / "xdg" / "vjpgrad"


PLATFORMS = {
    "linux, XDG_CACHE_HOME": ("linux", {"XDG_CACHE_HOME": "/x/cache"}, "/home/u", Path("/x/cache/vjpgrad")),
    "linux, a relative XDG_CACHE_HOME is ignored": (
        "linux",
        {"XDG_CACHE_HOME": "cache"},
        "/home/u",
        Path("/home/u/.cache/vjpgrad"),
    ),
    "linux": ("linux", {}, "/home/u", Path("/home/u/.cache/vjpgrad")),
    "freebsd": ("freebsd14", {}, "/home/u", Path("/home/u/.cache/vjpgrad")),
    "macos": ("darwin", {"XDG_CACHE_HOME": "/x"}, "/Users/u", Path("/Users/u/Library/Caches/vjpgrad")),
    "windows": (
        "win32",
        {"LOCALAPPDATA": "C:/Users/u/AppData/Local"},
        "C:/Users/u",
        Path("C:/Users/u/AppData/Local/vjpgrad/Cache"),
    ),
    "windows, no LOCALAPPDATA": ("win32", {}, "C:/Users/u", Path("C:/Users/u/AppData/Local/vjpgrad/Cache")),
    "linux, no home": ("linux", {}, None, None),
    "macos, no home": ("darwin", {}, None, None),
}


@pytest.mark.parametrize(("platform", "environ", "home", "expected"), PLATFORMS.values(), ids=PLATFORMS.keys())
def test_each_platform_has_its_user_cache_directory(
    platform: str, environ: dict[str, str], home: str | None, expected: Path | None
) -> None:
    assert _cache.default_directory(platform, environ, home) == expected


# ---- the directory: private, checked, skipped when unusable ------------------------------------------

posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes and owners are POSIX's")


@posix_only
def test_the_directory_is_made_for_its_user_only_and_entries_are_private(cache_dir: Path) -> None:
    previous = os.umask(0)  # even with nothing masked
    try:
        key = _cache.key(STRUCTURE)
        assert _cache.store(key, compiled_payload(2.0))
    finally:
        os.umask(previous)
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry_path(cache_dir, key).stat().st_mode) == 0o600


@posix_only
@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o720, 0o702])
def test_a_directory_others_may_write_to_is_not_used(cache_dir: Path, mode: int) -> None:
    key = _cache.key(STRUCTURE)
    assert _cache.store(key, compiled_payload(2.0))
    os.chmod(cache_dir, mode)
    assert _cache.load(key) is None  # someone else could have chosen that code
    assert not _cache.store(key, compiled_payload(2.0))
    assert "may write" in str(_cache.info().problem)


@posix_only
def test_a_directory_or_entry_of_another_user_is_not_used(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = _cache.key(STRUCTURE)
    assert _cache.store(key, compiled_payload(2.0))
    monkeypatch.setattr(os, "getuid", lambda: os.stat(cache_dir).st_uid + 1)
    assert _cache.load(key) is None
    assert not _cache.store(key, compiled_payload(2.0))
    assert "another user" in str(_cache.info().problem)


@posix_only
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="changing a file's owner takes root")
def test_an_entry_another_user_owns_is_not_read(cache_dir: Path) -> None:
    key = _cache.key(STRUCTURE)
    assert _cache.store(key, compiled_payload(2.0))
    os.chown(entry_path(cache_dir, key), 1, 1)
    assert _cache.load(key) is None


def test_a_directory_that_cannot_be_made_skips_the_cache_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a file").write_text("not a directory")
    monkeypatch.setenv("VJPGRAD_CACHE_DIR", str(tmp_path / "a file" / "cache"))  # as a read-only home would
    key = _cache.key(STRUCTURE)
    assert _cache.store(key, compiled_payload(2.0)) is False
    assert _cache.load(key) is None
    assert run_payload(_cache.load_or_build(key, lambda: compiled_payload(2.0)), (3.0, 5.0)) == (30.0,)
    assert "cannot be made" in str(_cache.info().problem)


def test_a_full_disk_skips_the_cache_and_leaves_no_temporary_file(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    key = _cache.key(STRUCTURE)
    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", full)
        assert _cache.store(key, compiled_payload(2.0)) is False
    assert list(cache_dir.iterdir()) == []
    assert "No space left" in str(_cache.info().problem)
    assert _cache.store(key, compiled_payload(2.0))  # space again: written, and the problem is gone
    assert _cache.info().problem is None


def test_no_home_directory_skips_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VJPGRAD_CACHE_DIR", raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # as when HOME is unset and there is no passwd entry
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert _cache.directory() is None
    assert _cache.store(_cache.key(STRUCTURE), compiled_payload(2.0)) is False
    assert "VJPGRAD_CACHE_DIR" in str(_cache.info().problem)


# ---- clear and info ------------------------------------------------------------------------------------


def test_clear_removes_the_entries_and_leftover_temporary_files_and_nothing_else(cache_dir: Path) -> None:
    keys = [_cache.key(bytes([k])) for k in range(3)]
    for key in keys:
        assert _cache.store(key, compiled_payload(2.0))
    (cache_dir / f"{_cache._TEMPORARY_PREFIX}abc{_cache.SUFFIX}").write_bytes(b"half")  # a killed writer's
    (cache_dir / "notes.txt").write_text("the user's own file")
    information = _cache.info()
    assert information.entries == 3
    assert information.size == sum(entry_path(cache_dir, k).stat().st_size for k in keys)
    assert _cache.clear() == 4
    assert sorted(p.name for p in cache_dir.iterdir()) == ["notes.txt"]
    assert _cache.info().entries == 0
    assert _cache.info().size == 0
    assert all(_cache.load(k) is None for k in keys)


# ---- two processes, one entry, at once -----------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import hashlib, os, sys, time
    from pathlib import Path
    from vjpgrad.compiler import cache as _cache

    here = Path(sys.argv[1])
    name = sys.argv[2]
    # a large payload (long writes, much overlap): generated code, and bytes that tell whose it is
    lines = "".join(f"    x0 = x0 * 1.0000001 + {k}.0\\n" for k in range(20000))
    code = compile("def forward(x0):\\n" + lines + "    return x0\\n", "<forward>", "exec")
    mark = hashlib.sha256(name.encode()).digest() * 250_000  # 8 MB
    namespace = {}
    exec(code, namespace)
    expected = namespace["forward"](0.5)
    key = _cache.key(b"one structure, two writers")
    (here / f"ready-{name}").touch()
    while not (here / "go").exists():
        time.sleep(0.0005)
    seen = set()
    for _ in range(40):
        _cache.store(key, (code, name, mark))
        loaded = _cache.load(key)
        if loaded is None:
            raise SystemExit("a valid entry was written but none could be read")
        code, writer, blob = loaded
        if blob != hashlib.sha256(writer.encode()).digest() * 250_000:
            raise SystemExit("an entry mixes two writers")
        namespace = {}
        exec(code, namespace)
        if namespace["forward"](0.5) != expected:
            raise SystemExit("the loaded code computes something else")
        seen.add(writer)
    print("ok", *sorted(seen))
    """
)


@pytest.mark.slow  # two processes, each compiling
def test_two_processes_filling_one_entry_at_once_leave_a_valid_entry(cache_dir: Path, tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    environment = {**os.environ, "VJPGRAD_CACHE_DIR": str(cache_dir)}
    environment.pop("VJPGRAD_CACHE", None)
    writers = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path), name],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("first", "second")
    ]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready-{name}").exists() for name in ("first", "second")):
        assert all(w.poll() is None for w in writers), [w.communicate() for w in writers]
        assert time.monotonic() < deadline
        time.sleep(0.001)
    (tmp_path / "go").touch()  # both start writing together
    outputs = [w.communicate(timeout=120) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], outputs
    assert all(out.startswith("ok") for out, _ in outputs), outputs
    key = _cache.key(b"one structure, two writers")
    code, writer, _ = _cache.load(key)
    assert writer in ("first", "second")
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    x = 0.5
    for k in range(20000):
        x = x * 1.0000001 + k
    assert namespace["forward"](0.5) == x
    assert [p.name for p in cache_dir.iterdir()] == [f"{key}{_cache.SUFFIX}"]  # no temporary file left


def test_the_temporary_file_is_made_in_the_cache_directory(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.replace is atomic only within one file system: the temporary file must sit beside the entry
    made = []
    original = tempfile.mkstemp

    def watched(*args: Any, **kwargs: Any) -> Any:
        made.append(Path(kwargs["dir"]))
        return original(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", watched)
    assert _cache.store(_cache.key(STRUCTURE), compiled_payload(2.0))
    assert made == [cache_dir]


# ---- vjpgrad.compile and the cache -----------------------------------------------------------------


def mlp_step(params: list[vjpgrad.Value], x: list[float]) -> vjpgrad.Value:
    """A small fixed structure (a neuron of micrograd's shape and a loss) with its constants."""
    w0, w1, b = params
    out = (w0 * x[0] + w1 * x[1] + b).tanh()
    return (out - 0.5) ** 2 + 0.001 * (w0 * w0 + w1 * w1)


def gradients_of(run: Any, data: list[float], x: list[float]) -> tuple[float, list[float]]:
    params = [vjpgrad.Value(d) for d in data]
    loss = run(params, x)
    loss.backward()
    return loss.data, [p.grad for p in params]


def calls_until_replayed(compiled: Any, data: list[float], x: list[float]) -> list[tuple[float, list[float]]]:
    """The recorded call, the call that loads or writes the code, and a replay."""
    return [gradients_of(compiled, data, x) for _ in range(3)]


DATA, X = [0.3, -0.7, 0.1], [1.5, -2.0]


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"*{_cache.SUFFIX}")) if folder.exists() else []


def test_compile_stores_the_code_once_and_a_fresh_function_loads_it_without_writing(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eager = gradients_of(mlp_step, DATA, X)
    assert calls_until_replayed(vjpgrad.compile(mlp_step), DATA, X) == [eager] * 3
    [stored] = entries(cache_dir)
    written = stored.read_bytes()

    from vjpgrad.compiler.write import Program

    def no_writing(self: Any, name: str) -> Any:
        raise AssertionError("the code was written again instead of loaded")

    monkeypatch.setattr(Program, "payload", no_writing)
    assert calls_until_replayed(vjpgrad.compile(mlp_step), DATA, X) == [eager] * 3
    assert entries(cache_dir) == [stored]
    assert stored.read_bytes() == written


LOADER = textwrap.dedent(
    """
    import sys
    import vjpgrad
    from vjpgrad.compiler import write

    writes = []
    payload = write.Program.payload
    write.Program.payload = lambda self, name: writes.append(name) or payload(self, name)

    def step(params, x):
        w0, w1, b = params
        out = (w0 * x[0] + w1 * x[1] + b).tanh()
        return (out - 0.5) ** 2 + 0.001 * (w0 * w0 + w1 * w1)

    compiled = vjpgrad.compile(step)
    for _ in range(3):
        params = [vjpgrad.Value(d) for d in (0.3, -0.7, 0.1)]
        loss = compiled(params, [1.5, -2.0])
        loss.backward()
    print(len(writes), repr(loss.data), *(repr(p.grad) for p in params))
    """
)


@pytest.mark.slow  # two processes
def test_a_second_process_loads_the_code_the_first_one_wrote(cache_dir: Path, tmp_path: Path) -> None:
    script = tmp_path / "loader.py"
    script.write_text(LOADER)
    environment = {**os.environ, "VJPGRAD_CACHE_DIR": str(cache_dir)}
    environment.pop("VJPGRAD_CACHE", None)
    runs = [
        subprocess.run([sys.executable, str(script)], env=environment, capture_output=True, text=True, timeout=120)
        for _ in range(2)
    ]
    assert [run.returncode for run in runs] == [0, 0], [run.stderr for run in runs]
    first, second = (run.stdout.split() for run in runs)
    loss, grads = gradients_of(mlp_step, DATA, X)
    assert first == ["1", repr(loss), *map(repr, grads)]  # wrote the code once
    assert second == ["0", repr(loss), *map(repr, grads)]  # loaded it: nothing written
    assert len(entries(cache_dir)) == 1


@pytest.mark.parametrize("damage", DAMAGE)
def test_compile_given_a_damaged_entry_writes_the_code_again_with_the_same_bits(cache_dir: Path, damage: Any) -> None:
    eager = gradients_of(mlp_step, DATA, X)
    calls_until_replayed(vjpgrad.compile(mlp_step), DATA, X)
    [stored] = entries(cache_dir)
    good = stored.read_bytes()
    stored.write_bytes(damage(good))
    assert calls_until_replayed(vjpgrad.compile(mlp_step), DATA, X) == [eager] * 3
    assert entries(cache_dir) == [stored]
    assert _cache.load(stored.name.removesuffix(_cache.SUFFIX)) is not None  # rewritten whole


@pytest.mark.parametrize(
    "wrong",
    [{}, {"forward": 1, "backward": 2}, ("a", "tuple"), {"forward": None, "backward": None, "cacheable": True}],
    ids=["empty", "not code", "not a dict", "missing fields"],
)
def test_compile_given_a_valid_entry_of_another_shape_writes_the_code_again(cache_dir: Path, wrong: Any) -> None:
    # an entry that passes every check of the file but is not what this compiler stores (a bug's or
    # another build's with the same key) is not run: the code is written and the entry replaced
    eager = gradients_of(mlp_step, DATA, X)
    calls_until_replayed(vjpgrad.compile(mlp_step), DATA, X)
    [stored] = entries(cache_dir)
    key = stored.name.removesuffix(_cache.SUFFIX)
    assert _cache.store(key, wrong)
    assert calls_until_replayed(vjpgrad.compile(mlp_step), DATA, X) == [eager] * 3
    rewritten = _cache.load(key)
    assert isinstance(rewritten, dict)
    assert "forward" in rewritten


def test_each_structure_is_its_own_entry(cache_dir: Path) -> None:
    compiled = vjpgrad.compile(mlp_step)
    calls_until_replayed(compiled, DATA, X)
    assert len(entries(cache_dir)) == 1
    calls_until_replayed(compiled, DATA, [0.25, 4.0])  # numbers are structure: other floats, another entry
    assert len(entries(cache_dir)) == 2
    calls_until_replayed(compiled, DATA, [3, -2])  # and ints another
    assert len(entries(cache_dir)) == 3
    calls_until_replayed(compiled, DATA, [Value(0.25), Value(4.0)])  # Values are data: one entry for any numbers
    calls_until_replayed(compiled, DATA, [Value(5.0), Value(-1.0)])
    assert len(entries(cache_dir)) == 4
    # and the two are not mixed up when loaded by a fresh function
    fresh = vjpgrad.compile(mlp_step)
    for x in ([3, -2], X):
        assert calls_until_replayed(fresh, DATA, x) == [gradients_of(mlp_step, DATA, x)] * 3


def test_with_VJPGRAD_CACHE_off_compile_writes_no_file(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VJPGRAD_CACHE", "0")
    eager = gradients_of(mlp_step, DATA, X)
    assert calls_until_replayed(vjpgrad.compile(mlp_step), DATA, X) == [eager] * 3
    assert not cache_dir.exists()


def test_a_function_with_a_custom_operation_is_not_cached(cache_dir: Path) -> None:
    # its code calls the user's own forward and backward, which live in this process only
    @vjpgrad.custom_op
    def cube(x: float) -> float:
        return x * x * x

    @cube.derivative
    def _(x: Any, out: Any) -> Any:
        return 3 * x * x

    def fn(params: list[vjpgrad.Value], x: list[float]) -> vjpgrad.Value:
        return cube(mlp_step(params, x))

    eager = gradients_of(fn, DATA, X)
    assert calls_until_replayed(vjpgrad.compile(fn), DATA, X) == [eager] * 3
    assert entries(cache_dir) == []


def test_an_unusable_cache_directory_leaves_compile_exact(cache_dir: Path) -> None:
    cache_dir.write_text("a file where the directory should be")
    eager = gradients_of(mlp_step, DATA, X)
    assert calls_until_replayed(vjpgrad.compile(mlp_step), DATA, X) == [eager] * 3
    assert "not a directory" in (_cache.info().problem or "")


# ---- how big ------------------------------------------------------------------------------------------


def test_storing_past_the_limit_removes_the_entries_used_longest_ago(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = ("x" * 300_000,)  # about 0.3 MB an entry
    keys = [_cache.key(f"structure {k}".encode()) for k in range(4)]
    for k, key in enumerate(keys[:3]):
        assert _cache.store(key, payload)
        os.utime(entry_path(cache_dir, key), ns=(10**18 + k, 10**18 + k))  # stored in this order
    assert _cache.load(keys[0]) is not None  # used again: now the most recent
    monkeypatch.setenv("VJPGRAD_CACHE_MAX_MB", "1.0")
    assert _cache.store(keys[3], payload)  # 1.2 MB: over the limit, trimmed to 0.75 MB
    assert [_cache.load(key) is not None for key in keys] == [True, False, False, True]
    assert _cache.info().size <= 750_000


def test_under_the_limit_nothing_is_removed(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VJPGRAD_CACHE_MAX_MB", "2")
    keys = [_cache.key(f"structure {k}".encode()) for k in range(5)]
    for key in keys:
        assert _cache.store(key, ("x" * 300_000,))
    assert all(_cache.load(key) is not None for key in keys)


@pytest.mark.parametrize("bad", ["lots", "0", "-5", "nan"])
def test_a_limit_that_is_not_a_size_is_an_error_naming_it_before_any_file_is_touched(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    monkeypatch.setenv("VJPGRAD_CACHE_MAX_MB", bad)
    with pytest.raises(ValueError, match="VJPGRAD_CACHE_MAX_MB"):
        _cache.store(_cache.key(STRUCTURE), compiled_payload(2.0))
    assert not cache_dir.exists()


# ---- the cache: an entry others may write to -----------------------------------------------------


def test_an_entry_others_may_write_to_is_not_loaded(cache_dir: Path) -> None:
    """cache.py promises: "on POSIX systems a directory or file that another user owns, or that
    others may write to, is not used at all (whoever can write there could otherwise choose the
    code that runs)". ``load`` checks the directory's mode and the entry's owner, never the
    entry's mode: an entry made group- or world-writable (a copied cache, ``chmod -R``) is loaded,
    and whoever may write it chooses the code the next compile runs (the key and the checksum
    in its header are public: anyone can compute them)."""
    if os.name != "posix":
        pytest.skip("modes are POSIX")
    key = _cache.key(b"a structure")
    assert _cache.store(key, {"forward": None})
    entry = cache_dir / f"{key}{_cache.SUFFIX}"
    os.chmod(entry, 0o666)
    assert _cache.load(key) is None


# ---- VJPGRAD_CACHE_MAX_MB=inf --------------------------------------------------------------------


@pytest.mark.parametrize("limit", ["inf", "1e400"])
def test_an_infinite_limit_is_no_limit(cache_dir: Path, monkeypatch: pytest.MonkeyPatch, limit: str) -> None:
    monkeypatch.setenv("VJPGRAD_CACHE_MAX_MB", limit)
    assert _cache.limit() >= 2**62
    compiled = vjpgrad.compile(lambda x: x * 2.0 + 1.0)
    for k in range(3):  # recorded, then written and stored, then replayed
        assert compiled(vjpgrad.Value(float(k))).data == 2.0 * k + 1.0
    assert len(list(cache_dir.glob(f"*{_cache.SUFFIX}"))) == 1


# ---- an entry that is a named pipe -----------------------------------------------------------------

FIFO_LOADER = textwrap.dedent(
    """
    import os, sys
    from vjpgrad.compiler import cache
    key = cache.key(b"a structure")
    os.makedirs(os.environ["VJPGRAD_CACHE_DIR"], mode=0o700, exist_ok=True)
    os.mkfifo(os.path.join(os.environ["VJPGRAD_CACHE_DIR"], key + cache.SUFFIX), 0o600)
    print(cache.load(key))
    """
)


@pytest.mark.slow  # a writer process
def test_an_entry_that_is_not_a_regular_file_is_a_miss_not_a_hang(cache_dir: Path, tmp_path: Path) -> None:
    """``load`` opens the entry's path before it looks at what it is: a named pipe there (or a
    symlink to one, or to a terminal) blocks ``open`` forever, and every compile of that structure
    hangs; ``vjpgrad cache --clear`` does not remove it (it lists regular files only). A directory
    in its place is already a miss; any other non-regular file should be one too."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    script = tmp_path / "fifo.py"
    script.write_text(FIFO_LOADER)
    environment = {**os.environ, "VJPGRAD_CACHE_DIR": str(cache_dir)}
    environment.pop("VJPGRAD_CACHE", None)
    try:
        run = subprocess.run([sys.executable, str(script)], env=environment, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("cache.load() blocked on a named pipe in place of an entry")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "None"


def test_an_entry_whose_passes_are_plain_functions_is_refused_and_the_code_written_anew(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an entry of the shape before each pass kept its frame between calls (a function, not a
    # generator), all else in place: a key that matched it anyway must not load it
    def f(a: Value, b: Value) -> Value:
        return a * b + a

    written = vjpgrad.compile(f)
    for _ in range(2):
        written(Value(1.0), Value(2.0))
    entry = dict(written._last.code.program.payload("<entry>"))
    entry["forward"] = compile("def forward(inputs):\n    return inputs\n", "<forward>", "exec")
    entry["backward"] = compile("def backward(seeds, values, inputs, start):\n    return start, seeds\n", "<b>", "exec")
    monkeypatch.setattr(_cache, "load", lambda key: entry)
    compiled = vjpgrad.compile(f)
    for _ in range(3):
        a, b = Value(3.0), Value(4.0)
        y = compiled(a, b)
        y.backward()
        assert (y.data, a.grad, b.grad) == (15.0, 5.0, 3.0)
