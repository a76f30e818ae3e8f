"""A corpus of the array code ``vjpgrad.vmap`` writes, to check that a change to its writer
writes every program's code exactly as before (not a timing: a byte-for-byte comparison).

    python benchmarks/vmap_sources.py save DIR    # write every program's code into DIR
    python benchmarks/vmap_sources.py check DIR   # write them again; exit 1 on any difference
    python benchmarks/vmap_sources.py check DIR --without-tests   # the programs of this file only

The programs are every one the vmap tests write (``tests/test_vmap*.py``, run in this process,
hypothesis derandomized with the mutation profile of ``tests/conftest.py``, so the same examples
each run), ``examples/moons_vmap.py``'s two, and those below: micrograd-style MLPs of several
sizes with relu and tanh under each transform, layers of repeated neurons, products a value
reads twice, partial sums that are outputs, signed zeros, infinities and nan in the data. For
each, the file holds ``.source`` and the workspace's code written from it (``slotted``). Takes
about a minute and a half; the saved files are about 25 MB, kept out of git (a directory under /tmp).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import math
import os
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))


def _layer(p: Sequence[Any], inputs: Sequence[Any], nout: int, k: int, act: Callable[[Any], Any] | None) -> Any:
    """``nout`` neurons ``b + w0 * x0 + ...`` (vjpgrad.nn.Neuron's order)."""
    out = []
    for _ in range(nout):
        total = p[k + len(inputs)]
        for i, x in enumerate(inputs):
            total = total + p[k + i] * x
        k += len(inputs) + 1
        out.append(total if act is None else act(total))
    return out, k


def _mlp(sizes: Sequence[int], act: str) -> Callable[[Any, Any], Any]:
    def f(p: Any, x: Any) -> Any:
        k, h = 0, list(x)
        for n, nout in enumerate(sizes[1:]):
            last = n == len(sizes) - 2
            h, k = _layer(p, h, nout, k, None if last else (lambda v: getattr(v, act)()))
        return h

    return f


def _count(sizes: Sequence[int]) -> int:
    return sum((a + 1) * b for a, b in itertools.pairwise(sizes))


EDGES = (-0.0, 0.0, math.nan, math.inf, -math.inf, 1e16, -1e16, 5e-324)


def _data(n: int, width: int, seed: int) -> Any:
    import numpy as np

    rng = random.Random(seed)
    xs = np.array([[rng.uniform(-2, 2) for _ in range(width)] for _ in range(n)])
    for i in range(min(n, len(EDGES))):
        xs[i, i % width] = EDGES[i]
    return xs


def _programs() -> Iterator[tuple[str, Callable[[], Any]]]:
    """(name, a call that vmaps one program and returns the Vmapped object)."""
    import numpy as np

    import vjpgrad
    from vjpgrad import grad, jacobian, value_and_grad, vmap

    for sizes in ((2, 4, 1), (2, 8, 8, 1), (3, 16, 16, 1), (2, 16, 16, 1), (4, 32, 1), (2, 64, 64, 1), (5, 6, 3)):
        for act in ("relu", "tanh"):
            f = _mlp(sizes, act)
            rng = random.Random(sum(sizes))
            params = [rng.uniform(-1, 1) for _ in range(_count(sizes))]
            params[0], params[-1] = -0.0, math.nan  # numbers every sample shares
            xs = _data(12, sizes[0], sum(sizes))

            def loss(p: Any, x: Any, f: Any = f) -> Any:
                out = f(p, x)
                total = out[0]
                for o in out[1:]:
                    total = total + o * o
                return total

            def hinge(p: Any, x: Any, y: Any, f: Any = f) -> Any:
                return (1 + -y * f(p, x)[0]).relu() * (1.0 / 12)

            ys = np.array([1.0 if i % 3 else -1.0 for i in range(12)])
            tag = f"mlp{'-'.join(map(str, sizes))}-{act}"
            for fast in (False, True):
                ft = "-fast" if fast else ""
                yield f"{tag}-forward{ft}", _called(vmap(f, in_dims=(None, 0), fast=fast), params, xs)
                yield f"{tag}-grad{ft}", _called(vmap(grad(loss), in_dims=(None, 0), fast=fast), params, xs)
                yield (
                    f"{tag}-hinge{ft}",
                    _called(vmap(grad(hinge), in_dims=(None, 0, 0), fast=fast), params, xs, ys),
                )
            yield f"{tag}-grad-both", _called(vmap(grad(loss, argnums=(0, 1)), in_dims=(None, 0)), params, xs)
            yield f"{tag}-grad-x", _called(vmap(grad(loss, argnums=1), in_dims=(None, 0)), params, xs)
            yield f"{tag}-value-and-grad", _called(vmap(value_and_grad(loss), in_dims=(None, 0)), params, xs)
            if sizes[-1] > 1 and sum(sizes) < 60:
                yield f"{tag}-jacobian", _called(vmap(jacobian(f), in_dims=(None, 0)), params, xs)
            if sum(sizes) < 40:
                yield f"{tag}-vjp", _vjp(f, params, sizes)
            model = vjpgrad.nn.MLP(sizes[0], list(sizes[1:]), seed=sum(sizes))  # Values read from outside

            def outside(x: Any, model: Any = model) -> Any:
                out = model(list(x))
                return out if isinstance(out, vjpgrad.Value) else out[0]

            yield f"{tag}-outside-grad-x", _called(vmap(grad(outside)), xs)
            yield f"{tag}-outside-forward", _called(vmap(outside), xs)
    yield from _shapes()


def _called(batched: Any, *args: Any) -> Callable[[], Any]:
    def call() -> Any:
        batched(*args)
        return batched

    return call


def _vjp(f: Callable[[Any, Any], Any], params: list[float], sizes: Sequence[int]) -> Callable[[], Any]:
    import numpy as np

    import vjpgrad

    _, function = vjpgrad.vjp(lambda p: f(p, [0.5, -1.5, 0.25, 2.0, -1.0][: sizes[0]]), params)
    cotangents = np.array([[random.Random(k).uniform(-2, 2) for _ in range(sizes[-1])] for k in range(6)])
    cotangents[0, 0] = -0.0
    return _called(vjpgrad.vmap(function), cotangents)


def _shapes() -> Iterator[tuple[str, Callable[[], Any]]]:
    """Programs of the forms the rewrites look for, and of forms next to them."""
    from vjpgrad import grad, value_and_grad, vmap

    def read_twice(p: Any, x: Any) -> Any:  # each neuron reads h[1] and h[0] twice
        h = [(x[0] * 0.5).tanh(), (x[1] * 0.25).tanh()]
        out = []
        for j in range(3):
            k = 4 * j
            total = p[12 + j] + p[k] * h[1] + p[k + 1] * h[1] + p[k + 2] * h[0] + p[k + 3] * h[0]
            out.append(total.relu())
        return out[0] + out[1] + out[2]

    def partial_read(p: Any, x: Any) -> Any:
        partial = p[0] + p[1] * x[0]
        total = partial + p[2] * x[1] + p[3] * x[2] + p[4] * x[3]
        return total * partial

    def partial_returned(p: Any, x: Any) -> Any:
        partial = p[0] + p[1] * x[0] + p[2] * x[1]
        return [partial, partial + p[3] * x[2] + p[4] * x[3]]

    def sums_only(p: Any, x: Any) -> Any:  # products outside any block: one chain
        return p[0] + p[1] * x[0] + p[2] * x[1] + p[3] * x[2] + p[4] * x[3]

    def sums_left(p: Any, x: Any) -> Any:  # the products on the left of each addition
        return p[1] * x[0] + (p[2] * x[1] + (p[3] * x[2] + (p[4] * x[3] + p[0])))

    def two_chains(p: Any, x: Any) -> Any:
        a = p[0] + p[1] * x[0] + p[2] * x[1] + p[3] * x[2]
        b = p[4] + p[5] * x[0] + p[6] * x[1] + p[7] * x[2]
        return (a * b).tanh()

    def shared_columns(p: Any, x: Any) -> Any:
        outs = [(x[i] * p[0] + p[1]).tanh() * x[i] - p[1] for i in range(8)]
        total = outs[0]
        for o in outs[1:]:
            total = total + o
        return total

    def cancelling(p: Any, x: Any) -> Any:
        hidden, k = _layer(p, x, 6, 0, None)
        total = hidden[0] * p[k]
        for n in range(1, 6):
            total = total + hidden[n] * p[k + n]
        return total

    def product_twice(p: Any, x: Any) -> Any:  # a product read by the sum and again
        q = [p[i] * x[i] for i in range(4)]
        return (q[0] + q[1] + q[2] + q[3]) * q[2]

    def mixed_sides(p: Any, x: Any) -> Any:  # a shared value on either side of a block's products
        h = [(x[i] * 0.5).tanh() for i in range(4)]
        out = []
        for j in range(4):
            k = 5 * j
            total = p[k + 4] + p[k] * h[0] + h[1] * p[k + 1] + p[k + 2] * h[2] + h[3] * p[k + 3]
            out.append(total.tanh())
        return out[0] * out[1] + out[2] * out[3]

    def split_sides(p: Any, x: Any) -> Any:  # the shared values on the right of two products, left of two
        out = []
        for j in range(4):
            k = 5 * j
            total = p[k + 4] + p[k] * x[0] + p[k + 1] * x[1] + x[2] * p[k + 2] + x[3] * p[k + 3]
            out.append(total.relu())
        return out[0] * out[1] + out[2] * out[3]

    def shared_and_own(p: Any, x: Any) -> Any:  # a block's products read both a shared and an own value
        out = []
        for j in range(4):
            total = p[40 + j] + p[j] * x[0] + x[1] * x[2 + j % 2] + p[4 + j] * x[j]
            out.append(total.relu())
        return out[0] + out[1] + out[2] + out[3]

    rng = random.Random(3)
    params = [rng.uniform(-1, 1) for _ in range(60)]
    params[3] = -0.0
    cases: list[tuple[str, Callable[[Any, Any], Any], int]] = [
        ("read-twice", read_twice, 2),
        ("partial-read", partial_read, 4),
        ("partial-returned", partial_returned, 4),
        ("sums-only", sums_only, 4),
        ("sums-left", sums_left, 4),
        ("two-chains", two_chains, 3),
        ("shared-columns", shared_columns, 8),
        ("cancelling", cancelling, 5),
        ("product-twice", product_twice, 4),
        ("mixed-sides", mixed_sides, 4),
        ("shared-and-own", shared_and_own, 4),
        ("split-sides", split_sides, 4),
    ]
    for name, f, width in cases:
        xs = _data(10, width, width)

        def scalar(p: Any, x: Any, f: Any = f) -> Any:  # a list's last item times its first
            out = f(p, x)
            return out[-1] * out[0] if isinstance(out, list) else out

        yield f"{name}-forward", _called(vmap(f, in_dims=(None, 0)), params, xs)
        yield f"{name}-grad", _called(vmap(grad(scalar, argnums=(0, 1)), in_dims=(None, 0)), params, xs)
        yield f"{name}-value-and-grad", _called(vmap(value_and_grad(scalar), in_dims=(None, 0)), params, xs)


def _moons() -> Iterator[tuple[str, Callable[[], Any]]]:
    import numpy as np
    from moons import make_moons
    from moons_vmap import margin, penalty

    import vjpgrad
    from vjpgrad.nn import MLP

    points, labels = make_moons()
    xs, ys = np.array(points), np.array(labels, dtype=np.float64)
    params = [p.data for p in MLP(2, [16, 16, 1], seed=1337).parameters()]
    per_sample = vjpgrad.vmap(vjpgrad.grad(margin), in_dims=(None, 0, 0, None))
    yield "moons-margin", _called(per_sample, params, xs, ys, len(points))
    yield "moons-penalty", _called(vjpgrad.vmap(vjpgrad.grad(penalty)), np.array(params))


def _from_tests() -> list[tuple[str, str]]:
    """Every program the vmap tests write, named by its test and its place among the test's."""
    import pytest

    from vjpgrad.batched import run

    found: list[tuple[str, str]] = []
    write = run.Vmapped._write

    def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
        program = write(self, *args, **kwargs)
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
        found.append((test, program.source))
        return program

    run.Vmapped._write = recorded  # type: ignore[method-assign]
    try:
        tests = sorted(str(p) for p in (ROOT / "tests").glob("test_vmap*.py"))
        code = pytest.main(["-q", "-p", "no:cacheprovider", "--hypothesis-profile=mutation", "-x", *tests])
    finally:
        run.Vmapped._write = write  # type: ignore[method-assign]
    if code != 0:
        raise SystemExit(f"the vmap tests failed ({code}): no corpus")
    seen: dict[str, int] = {}
    named = []
    for test, source in found:
        seen[test] = seen.get(test, 0) + 1
        named.append((f"{test}#{seen[test]}", source))
    return named


def corpus(tests: bool = True) -> dict[str, str]:
    """Every program's name and text: its ``.source``, then its workspace's code (``slotted``)."""
    from vjpgrad.batched.workspace import slotted

    sources = dict(_from_tests()) if tests else {}
    for name, call in [*_moons(), *_programs()]:
        sources[name] = call().source
    return {name: f"{source}\n# ---- slotted ----\n{slotted(source)[0]}" for name, source in sources.items()}


def _file(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:16] + ".py"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["save", "check"])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--without-tests", action="store_true", help="only the programs of this file (quicker)")
    args = parser.parse_args(argv)
    texts = corpus(tests=not args.without_tests)
    index = args.directory / "index.txt"
    if args.mode == "save":
        args.directory.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            (args.directory / _file(name)).write_text(text, encoding="utf-8")
        index.write_text("".join(f"{_file(name)} {name}\n" for name in texts), encoding="utf-8")
        print(f"saved {len(texts)} programs' code in {args.directory}")
        return 0
    saved = dict(line.split(" ", 1)[::-1] for line in index.read_text(encoding="utf-8").splitlines())
    compared = [name for name in texts if name in saved]
    differ = [name for name in compared if texts[name] != (args.directory / saved[name]).read_text(encoding="utf-8")]
    missing = sorted((set(texts) ^ set(saved)) if not args.without_tests else set(texts) - set(saved))
    for name in differ:
        print(f"differs: {name}")
    for name in missing:
        print(f"in one corpus only: {name}")
    print(f"{len(compared) - len(differ)} of {len(compared)} programs' code identical byte for byte")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())
