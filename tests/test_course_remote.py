"""The pipe between the checks and the student's process (``vjpgrad.course.remote``), in threads.

The checks' end holds proxies of the student's objects and asks; the student's end does what is
asked to its own objects and answers with plain data. These tests run both ends in one process (a
thread each) to check the protocol itself: what crosses as data and what as a handle, errors, what
the student's end may not do to the checks' objects, and a pipe written to with something else.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from multiprocessing import Pipe
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from vjpgrad.course import grading, kernel, probe, remote
from vjpgrad.course.exercises import exercise

STUDENT = """
class Value:
    def __init__(self, data):
        self.data = data
        self.grad = 0.0
        self._prev = set()

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data)
        out._prev = {self, other}
        return out

    __radd__ = __add__

    def __repr__(self):
        return f"Value({self.data})"


def twice(f, x):
    return f(f(x))


def peek(f):
    return f.secret


def broken():
    raise NotImplementedError("exercise 2: write it")


def small(xs):
    return [x * 2 for x in xs]


def busy(seconds):
    import time
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    time.process_time = lambda: 0.0  # what a student's code can do to a count made where it runs
    return "trained"


def jacobian(n, misreport):
    if misreport:  # what a student's code can do to a count made where it runs
        import tracemalloc
        from vjpgrad.course import probe
        tracemalloc.get_traced_memory = probe.get_traced_memory = lambda: (0, 0)
    rows = [[float(i * j) for j in range(n)] for i in range(n)]
    return len(rows)
"""


def connect(tmp_path: Path, pid: int | None = None) -> Iterator[remote.Checks]:
    """The checks' end of a pipe to a student's end serving ``STUDENT`` in a thread of this process
    (whose id ``pid`` names, for the kernel's count of its memory)."""
    (tmp_path / "engine.py").write_text(STUDENT)
    ours, theirs = Pipe(duplex=True)

    def importer(name: str) -> ModuleType:
        module = ModuleType(name)
        module.__file__ = str(tmp_path / f"{name}.py")
        exec(compile((tmp_path / f"{name}.py").read_text(), module.__file__, "exec"), module.__dict__)
        return module

    student = remote.Student(theirs, tmp_path.resolve(), importer)
    thread = threading.Thread(target=student.run, daemon=True)
    thread.start()
    yield remote.Checks(ours, pid=pid)
    ours.close()
    thread.join(5)


@pytest.fixture
def checks(tmp_path: Path) -> Iterator[remote.Checks]:
    yield from connect(tmp_path)


def test_plain_data_crosses_as_itself_and_other_objects_as_handles(checks: remote.Checks) -> None:
    data = [1, 2.5, "x", None, True, (1, [2.0]), {"a": {3}}, frozenset({4}), math.inf, -math.inf]
    side = remote.Side(None)
    assert side.decode(side.encode(data)) == data
    assert math.isnan(side.decode(side.encode(math.nan)))
    engine = checks.module("engine")
    a = engine.Value(2.0)
    b = a + 1.5  # an operator, done in the student's process
    c = 1.0 + b  # reflected
    assert isinstance(a, remote.Proxy)
    assert (b.data, c.data, repr(c)) == (3.5, 4.5, "Value(4.5)")
    assert type(b.data) is float
    assert isinstance(c, engine.Value)  # isinstance against a proxy of their class
    assert not isinstance(3.0, engine.Value)
    (first,) = [p for p in b._prev if p is a]  # the same object there is the same proxy here
    assert first is a
    a.grad = 7.0
    assert a.grad == 7.0


def test_the_checks_functions_are_called_back_and_never_opened(checks: remote.Checks) -> None:
    engine = checks.module("engine")
    seen: list[float] = []

    def double(x: float) -> float:
        seen.append(x)
        return 2 * x

    double.secret = "the held-out answer"  # type: ignore[attr-defined]
    assert engine.twice(double, 1.5) == 6.0
    assert seen == [1.5, 3.0]
    with pytest.raises(AttributeError):  # a function of the checks' is a stand-in there, holding nothing
        engine.peek(double)

    class Expression:
        secret = "the held-out answer"

        def __call__(self, x: float) -> float:
            return x + 1

    assert engine.twice(Expression(), 1.0) == 3.0
    with pytest.raises(PermissionError, match="only be called and used in arithmetic"):
        engine.peek(Expression())


def test_an_error_of_the_students_code_is_raised_here_with_its_line(checks: remote.Checks) -> None:
    engine = checks.module("engine")
    with pytest.raises(NotImplementedError, match="exercise 2: write it") as caught:
        engine.broken()
    assert caught.value.student_where == "engine.py, line 29, in broken"  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        _ = engine.Value(1.0).nothing


def test_anything_else_written_into_the_pipe_is_tampering() -> None:
    ours, theirs = Pipe(duplex=True)
    checks = remote.Checks(ours)
    theirs.send_bytes(b'{"value": {"B": 99}}')  # a handle this side never gave
    with pytest.raises(remote.TamperedError):
        checks.request("import", "engine")
    theirs.send_bytes(b"\x80\x04 pickled")  # never unpickled
    with pytest.raises(remote.TamperedError):
        checks.request("import", "engine")
    for unhashable in (b'{"value": {"S": [{"L": []}]}}', b'{"value": {"D": [[{"L": []}, 1]]}}'):
        theirs.send_bytes(unhashable)  # a set's item or a dict's key that no set or dict can hold
        with pytest.raises(remote.TamperedError):
            checks.request("import", "engine")
    broken: list[Exception] = []
    checks.broken = broken.append
    theirs.close()
    with pytest.raises(remote.GoneError):
        checks.request("import", "engine")
    assert [type(error) for error in broken] == [remote.GoneError]


def test_a_call_crossing_to_the_student_goes_as_data_not_as_the_checks_objects(checks: remote.Checks) -> None:
    engine = checks.module("engine")
    values: list[Any] = [1.0, 2.0]
    total = engine.Value(0.0)
    for x in values:
        total = total + x
    assert total.data == 3.0
    assert values == [1.0, 2.0]  # a list goes as a copy


def test_a_message_names_the_type_of_a_students_object_as_theirs(checks: remote.Checks) -> None:
    from vjpgrad.course import twins

    value = checks.module("engine").Value(1.0)
    assert remote.type_name(value) == "Value"
    assert twins.number(value) == "Value"  # a .grad that is not a number, in the table
    assert twins.number(2.0) == "2"


@pytest.mark.skipif(not kernel.can_measure(os.getpid()), reason="the kernel's count of memory is read in /proc (Linux)")
def test_peak_memory_is_the_kernels_count_which_the_students_code_cannot_misreport(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tracemalloc, "get_traced_memory", tracemalloc.get_traced_memory)  # put back after
    monkeypatch.setattr(probe, "get_traced_memory", probe.get_traced_memory)
    for checks in connect(tmp_path, pid=os.getpid()):
        assert checks.pid == os.getpid()
        engine = checks.module("engine")
        small, counted_by = checks.peak_memory(engine.small, list(range(1_000)))
        assert counted_by == "kernel"
        assert small < 2_000_000
        # 2,000 x 2,000 floats, 128 MB: more than a test process that ran others holds freed and reuses
        # without the kernel counting it (32 MB measured 7.7 MB after the quick loop's other tests)
        large, counted_by = checks.peak_memory(engine.jacobian, 2_000, True)
        assert counted_by == "kernel"
        assert large > 32_000_000


def test_without_the_kernels_count_peak_memory_is_counted_where_the_students_code_runs(tmp_path: Path) -> None:
    for checks in connect(tmp_path, pid=None):
        assert checks.pid is None
        engine = checks.module("engine")
        small, counted_by = checks.peak_memory(engine.small, list(range(1_000)))
        assert counted_by == "tracemalloc"
        assert small < 2_000_000
        large, counted_by = checks.peak_memory(engine.jacobian, 600, False)
        assert counted_by == "tracemalloc"
        assert large > 8_000_000


HEAVY = """
_held = b"x" * 40_000_000  # taken as the module is imported, and held


def small(xs):
    return [x * 2 for x in xs]
"""


@pytest.mark.skipif(not kernel.can_measure(os.getpid()), reason="the kernel's count of memory is read in /proc (Linux)")
def test_the_memory_a_module_takes_as_it_is_imported_counts_toward_its_functions_peak(tmp_path: Path) -> None:
    # measured in a student's process of its own, as the grader measures it: this test's process has
    # run others, and the memory they freed but kept would take the import's bytes without growing
    directory = tmp_path / "student"
    directory.mkdir()
    (directory / "heavy.py").write_text(HEAVY)
    context = grading._processes()
    process, ours = grading._student(context, directory, exercise(8), 60)
    try:
        checks = remote.Checks(ours, pid=process.pid)
        peak, counted_by = checks.peak_memory_with_import("heavy", "small", list(range(1_000)))
        assert counted_by == "kernel"
        assert peak > 30_000_000
        called, _ = checks.peak_memory(checks.module("heavy").small, list(range(1_000)))
        assert called < 2_000_000  # the call alone, once imported: the import's memory hides from it
    finally:
        ours.close()
        process.join(10)


def test_without_the_kernels_count_the_memory_an_import_takes_counts_too(tmp_path: Path) -> None:
    (tmp_path / "heavy.py").write_text(HEAVY)
    for checks in connect(tmp_path, pid=None):
        peak, counted_by = checks.peak_memory_with_import("heavy", "small", [1.0])
        assert counted_by == "tracemalloc"
        assert peak > 30_000_000


def test_the_students_process_refuses_setrecursionlimit_naming_the_rule_and_keeps_no_setter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = sys.setrecursionlimit
    monkeypatch.setattr(sys, "setrecursionlimit", original)  # put back after
    before = sys.getrecursionlimit()
    try:
        probe.refuse_recursion_limit()
        assert sys.getrecursionlimit() == probe.DEFAULT_RECURSION_LIMIT  # the limit exercise 4 asks for
        with pytest.raises(PermissionError, match="exercise 4's rule is that backward\\(\\) works at Python's default"):
            sys.setrecursionlimit(100_000)
        assert not any(value is original for value in vars(probe).values())
        assert not hasattr(probe, "_set_recursion_limit")  # nothing there keeps the interpreter's own setter
        assert probe.at_recursion_limit(1_000, sys.getrecursionlimit) == 1_000  # the limit it runs at, as it is
        with pytest.raises(ValueError, match="runs at a recursion limit of 1,000, not 1,234"):
            probe.at_recursion_limit(1_234, sys.getrecursionlimit)
    finally:
        monkeypatch.undo()
        original(before)


def test_outside_the_students_process_at_recursion_limit_sets_the_limit_for_the_call() -> None:
    before = sys.getrecursionlimit()
    assert probe.at_recursion_limit(1_234, sys.getrecursionlimit) == 1_234  # the checks' own process (inprocess)
    assert sys.getrecursionlimit() == before


@pytest.mark.skipif(not kernel.can_measure(os.getpid()), reason="the kernel's count of CPU is read in /proc (Linux)")
def test_cpu_seconds_are_the_kernels_count_which_the_students_code_cannot_misreport(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "process_time", time.process_time)  # put back after
    for checks in connect(tmp_path, pid=os.getpid()):
        result, seconds, counted_by = checks.cpu_seconds(checks.module("engine").busy, 0.3)
        assert (result, counted_by) == ("trained", "kernel")
        assert 0.25 <= seconds < 5


TIMED_TRAINING_IN_A_FROZEN_PROCESS = """
import gc
from vjpgrad.course import probe
thresholds = gc.get_threshold()
kept = [[index] for index in range(1_000)]  # objects the collector tracks, made before the freeze
gc.freeze()
frozen = gc.get_freeze_count()
assert frozen >= len(kept), frozen
result, _ = probe.cpu_seconds(lambda: gc.get_threshold()[0])
assert result == probe.GC_FIRST, result  # the threshold the training ran at
assert gc.get_freeze_count() >= frozen, (gc.get_freeze_count(), frozen)
assert gc.get_threshold() == thresholds
gc.unfreeze()
result, _ = probe.cpu_seconds(gc.get_freeze_count)  # nothing frozen before: what it froze is let go
assert result > 0, result
assert gc.get_freeze_count() == 0, gc.get_freeze_count()
assert gc.get_threshold() == thresholds
print("held")
"""


def test_a_timed_training_leaves_what_the_fork_server_froze_frozen_and_the_collector_as_it_was() -> None:
    # The fork server freezes its 50,000 objects (course/_warm.py) so that a student's process's
    # collections do not scan them; timing a training must not hand them back to the collector. In a
    # fresh interpreter: what a test process has frozen before depends on the tests that ran in it.
    done = subprocess.run(
        [sys.executable, "-c", TIMED_TRAINING_IN_A_FROZEN_PROCESS], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout.strip()) == (0, "held"), done.stderr


def test_without_the_kernels_count_cpu_seconds_are_counted_where_the_students_code_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "process_time", time.process_time)
    for checks in connect(tmp_path, pid=None):
        result, seconds, counted_by = checks.cpu_seconds(checks.module("engine").busy, 0.3)
        assert (result, counted_by) == ("trained", "process_time")
        assert seconds < 0  # the count it made, misreported: the kernel's is the one that can be trusted


def no_process_has() -> int:
    """A process id that no process has nor can be given while a test runs: the kernel's wrap value,
    ``/proc/sys/kernel/pid_max`` (every id it gives is below it; only root raises it). The id of a
    child that ended and was reaped could be given to a new process meanwhile."""
    return int(Path("/proc/sys/kernel/pid_max").read_text(encoding="ascii"))


@pytest.mark.skipif(not kernel.can_measure(os.getpid()), reason="the kernel's count of memory is read in /proc (Linux)")
def test_a_count_the_kernel_gave_at_the_start_and_not_later_fails_the_check_naming_it(tmp_path: Path) -> None:
    gone = no_process_has()
    assert not Path(f"/proc/{gone}").exists()
    for checks in connect(tmp_path, pid=os.getpid()):
        engine = checks.module("engine")
        checks.pid = gone  # as if the student's process had stopped the kernel's count being read
        with pytest.raises(AssertionError, match=f"could not be counted: /proc/{gone}/"):
            checks.peak_memory(engine.small, [1.0])
        with pytest.raises(AssertionError, match=f"could not be counted: /proc/{gone}/stat"):
            checks.cpu_seconds(engine.small, [1.0])


def test_peak_memory_takes_the_names_of_the_students_module_and_function_not_a_function(tmp_path: Path) -> None:
    from vjpgrad.course import _plugin

    for student in (_plugin.Student(tmp_path), _plugin.RemoteStudent(tmp_path, None)):
        with pytest.raises(
            TypeError, match=r'function \("softmax", "softmax_vjp"\), not builtin_function_or_method and list'
        ):
            student.peak_memory(len, [1.0])  # type: ignore[arg-type]
