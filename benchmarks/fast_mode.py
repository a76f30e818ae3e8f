"""vmap's fast mode (``vmap(f, fast=True)``: NumPy's ufuncs) against eager code, operation by
operation: of N random inputs, how many give another forward value, and how many another
gradient, than eager code gives for that sample (compared by bits, a nan equal to any nan).
The exact mode is counted beside it (0 everywhere, as the tests hold it).

Fast mode's differences come from NumPy's vectorised loops (SIMD versions of exp, log, sin...),
which depend on the processor and on the NumPy build: the counts are what this machine gives,
not a property of vjpgrad. The NumPy version and the CPU are printed with them.

    python benchmarks/fast_mode.py [--count 20000] [--seed 0]
"""

from __future__ import annotations

import argparse
import platform
import random
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

import vjpgrad
from vjpgrad import value_and_grad, vmap
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported


def _softmax(x: Any, y: Any, z: Any) -> Any:
    return F.softmax([x, y, z])[0]


def _log_softmax(x: Any, y: Any, z: Any) -> Any:
    return F.log_softmax([x, y, z])[0]


def _rms_norm(x: Any, y: Any, z: Any) -> Any:
    return F.rms_norm([x, y, z], 3)[0]


OPERATIONS: list[tuple[str, Callable[..., Any], list[tuple[float, float]]]] = [
    ("exp", lambda x: x.exp(), [(-10.0, 10.0)]),
    ("log", lambda x: x.log(), [(0.0, 10.0)]),
    ("log1p", lambda x: x.log1p(), [(-1.0, 10.0)]),
    ("sqrt", lambda x: x.sqrt(), [(0.0, 100.0)]),
    ("sin", lambda x: x.sin(), [(-10.0, 10.0)]),
    ("cos", lambda x: x.cos(), [(-10.0, 10.0)]),
    ("tan", lambda x: x.tan(), [(-10.0, 10.0)]),
    ("tanh", lambda x: x.tanh(), [(-10.0, 10.0)]),
    ("sigmoid", lambda x: x.sigmoid(), [(-10.0, 10.0)]),
    ("x ** 1.5", lambda x: x**1.5, [(0.0, 10.0)]),
    ("2.0 ** x", lambda x: 2.0**x, [(-10.0, 10.0)]),
    ("x ** y", lambda x, y: x**y, [(0.0, 10.0), (-3.0, 3.0)]),
    ("atan2(x, y)", vjpgrad.atan2, [(-10.0, 10.0), (-10.0, 10.0)]),
    ("hypot(x, y)", vjpgrad.hypot, [(-10.0, 10.0), (-10.0, 10.0)]),
    ("x / y", lambda x, y: x / y, [(-10.0, 10.0), (-10.0, 10.0)]),
    ("softmax([x, y, z])[0]", _softmax, [(-10.0, 10.0)] * 3),
    ("log_softmax([x, y, z])[0]", _log_softmax, [(-10.0, 10.0)] * 3),
    ("rms_norm([x, y, z], 3)[0]", _rms_norm, [(-10.0, 10.0)] * 3),
]
"""Each operation vmap's fast mode runs by a NumPy ufunc (and three functions built of them), as
a function of one sample's numbers, with the range its inputs are drawn from."""


def _bits(x: Any) -> bytes:
    value = float(x)
    return b"nan" if value != value else struct.pack("<d", value)


def _rows(value: Any, grads: Any, count: int) -> list[tuple[bytes, tuple[bytes, ...]]]:
    """Per sample: the forward value's bits and the gradient's (one entry per argument)."""
    columns = [np.asarray(g) for g in grads]
    return [(_bits(value[i]), tuple(_bits(c[i]) for c in columns)) for i in range(count)]


def _differences(found: list[Any], eager: list[Any]) -> tuple[int, int]:
    forward = sum(a[0] != b[0] for a, b in zip(found, eager, strict=True))
    gradient = sum(a[1] != b[1] for a, b in zip(found, eager, strict=True))
    return forward, gradient


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _simd() -> str:
    """The SIMD extensions NumPy found on this processor (those its loops choose among)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features  # NumPy 2
    except ImportError:
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features  # NumPy 1
        except ImportError:
            return "unknown"
    wanted = ["AVX512_SKX", "AVX512F", "AVX2", "FMA3", "SSE41", "ASIMD", "SVE", "VSX3", "VXE2"]
    return " ".join(name for name in wanted if features.get(name)) or "none of " + " ".join(wanted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=20_000, help="random inputs per operation")
    parser.add_argument("--seed", type=int, default=0, help="the random generator's seed")
    args = parser.parse_args()
    print(f"NumPy {np.__version__}, {platform.machine()}, {_cpu()}; NumPy's SIMD: {_simd()}")
    print(f"Python {platform.python_version()}; {args.count:,} random inputs per operation (seed {args.seed})")
    print(f"\n{'operation':28} {'fast: forward':>14} {'fast: gradient':>15} {'exact: both':>12}")
    generator = random.Random(args.seed)
    for name, function, ranges in OPERATIONS:
        columns = [np.array([generator.uniform(lo, hi) for _ in range(args.count)]) for lo, hi in ranges]
        argnums = tuple(range(len(ranges)))
        eager_step = value_and_grad(function, argnums)
        eager = []
        for i in range(args.count):
            value, grads = eager_step(*(float(c[i]) for c in columns))
            eager.append((_bits(value), tuple(_bits(g) for g in grads)))
        counts = {}
        for fast in (True, False):
            value, grads = vmap(value_and_grad(function, argnums), fast=fast)(*columns)
            counts[fast] = _differences(_rows(value, grads, args.count), eager)
        exact = counts[False][0] + counts[False][1]
        print(f"{name:28} {counts[True][0]:>14,} {counts[True][1]:>15,} {exact:>12,}")
    print(f"\n(each count is of {args.count:,} inputs; a gradient counts once if any of its entries differs)")


if __name__ == "__main__":
    main()
