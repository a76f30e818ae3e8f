"""6. microgpt's training step: the GPT of examples/gpt.py on one name, forward + cross-entropy
+ backward, with the same weights on every engine.

- vjpgrad: the example's own code (Values and vjpgrad.nn.functional), eager.
- vjpgrad compiled: the same step through ``vjpgrad.compile``, when this vjpgrad has it.
- microgpt-style: a peer engine written here after the design Karpathy published with
  microgpt (Feb 2026): a slotted Value holding ``data, grad, _children, _local_grads``,
  each operation returning its local gradients, a recursive topological sort, and a
  softmax that subtracts the max of the logits' ``.data``. It is the peer to beat
  (PERF-NOTES.md): much faster than micrograd 0.1.0.
- torch 0-d: PyTorch float64 0-d tensors, one per scalar, the microgpt code on them (``--torch``,
  or ``run.py --only gpt``: importing torch slows the collections of the engines that make a
  Python object per operation, microgpt's design among them, so it is left out by default).

The collector's first threshold moves the ratio: microgpt's design makes two or three objects
the collector tracks per operation, so a collection of the youngest objects comes every few
hundred operations, and their cost is a large part of its forward pass. CPython 3.10 to 3.12
collect every 700 such objects, 3.13 every 2,000: the run prints the thresholds it ran with, and
``--gc-threshold 2000`` on 3.11 runs it with 3.13's first threshold (the workload is the same).

    python benchmarks/gpt.py [--rounds 7] [--name isabella] [--torch] [--gc-threshold 2000]
    python benchmarks/gpt.py --profile   # where a compiled step's time goes
    python benchmarks/gpt.py --cpu [--rounds 12]   # compiled / microgpt-style in CPU time, one process
    python benchmarks/gpt.py --floor   # the compiled step's parts beside CPython's floor for its code
    python benchmarks/gpt.py --alone [--rounds 121]   # the compiled step alone: A/B of compile's code
    python benchmarks/run.py --only gpt
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from workloads import count_nodes

import vjpgrad

sys.setrecursionlimit(20_000)  # the microgpt design sorts recursively


def _load_example() -> Any:
    """examples/gpt.py, loaded by path: this file is also a module named gpt."""
    path = Path(__file__).resolve().parent.parent / "examples" / "gpt.py"
    spec = importlib.util.spec_from_file_location("gpt_example", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpt_example"] = module
    spec.loader.exec_module(module)
    return module


example = _load_example()
Run = Callable[[], tuple[list[float], float, float]]  # grads, forward seconds, backward seconds
N_EMBD, N_HEAD, N_LAYER, BLOCK_SIZE = 16, 4, 1, 16


# ---- the peer: an engine of microgpt's published design -------------------------------------


class MicroValue:
    """A scalar of microgpt's design: each op records its children and local gradients."""

    __slots__ = ("_children", "_local_grads", "data", "grad")

    def __init__(self, data: float, children: tuple[Any, ...] = (), local_grads: tuple[Any, ...] = ()) -> None:
        self.data = data
        self.grad = 0.0
        self._children = children
        self._local_grads = local_grads

    def __add__(self, other: MicroValue | float) -> MicroValue:
        other = other if isinstance(other, MicroValue) else MicroValue(other)
        return MicroValue(self.data + other.data, (self, other), (1, 1))

    def __mul__(self, other: MicroValue | float) -> MicroValue:
        other = other if isinstance(other, MicroValue) else MicroValue(other)
        return MicroValue(self.data * other.data, (self, other), (other.data, self.data))

    def __pow__(self, k: float) -> MicroValue:
        return MicroValue(self.data**k, (self,), (k * self.data ** (k - 1),))

    def log(self) -> MicroValue:
        return MicroValue(math.log(self.data), (self,), (1 / self.data,))

    def exp(self) -> MicroValue:
        e = math.exp(self.data)
        return MicroValue(e, (self,), (e,))

    def relu(self) -> MicroValue:
        return MicroValue(max(0.0, self.data), (self,), (float(self.data > 0),))

    def __neg__(self) -> MicroValue:
        return self * -1

    def __radd__(self, other: MicroValue | float) -> MicroValue:
        return self + other

    def __sub__(self, other: MicroValue | float) -> MicroValue:
        return self + (-other)

    def __rsub__(self, other: MicroValue | float) -> MicroValue:
        return other + (-self)

    def __rmul__(self, other: MicroValue | float) -> MicroValue:
        return self * other

    def __truediv__(self, other: MicroValue | float) -> MicroValue:
        return self * other**-1

    def __rtruediv__(self, other: MicroValue | float) -> MicroValue:
        return other * self**-1

    def backward(self) -> None:
        topo: list[MicroValue] = []
        visited: set[MicroValue] = set()

        def build_topo(v: MicroValue) -> None:
            if v not in visited:
                visited.add(v)
                for child in v._children:
                    build_topo(child)
                topo.append(v)

        build_topo(self)
        self.grad = 1.0
        for v in reversed(topo):
            for child, local_grad in zip(v._children, v._local_grads):  # noqa: B905
                child.grad += local_grad * v.grad


# ---- microgpt's model, written once for the microgpt engine and for torch -------------------


class MicrogptModel:
    """microgpt's forward pass (weight-tied, as examples/gpt.py) over any scalar type;
    ``data_of`` reads a scalar's number, for the softmax's max."""

    def __init__(
        self, weights: dict[str, list[list[float]]], leaf: Callable[[float], Any], data_of: Callable[[Any], float]
    ) -> None:
        self.state_dict = {name: [[leaf(x) for x in row] for row in mat] for name, mat in weights.items()}
        self.data_of = data_of

    def parameters(self) -> list[Any]:
        return [p for mat in self.state_dict.values() for row in mat for p in row]

    def linear(self, x: list[Any], w: list[list[Any]]) -> list[Any]:
        return [sum(wi * xi for wi, xi in zip(wo, x, strict=True)) for wo in w]

    def softmax(self, logits: list[Any]) -> list[Any]:
        max_val = max(self.data_of(val) for val in logits)
        exps = [(val - max_val).exp() for val in logits]
        total = sum(exps)
        return [e / total for e in exps]

    def rmsnorm(self, x: list[Any]) -> list[Any]:
        ms = sum(xi * xi for xi in x) / len(x)
        scale = (ms + 1e-5) ** -0.5
        return [xi * scale for xi in x]

    def gpt(self, token_id: int, pos_id: int, keys: list[list[Any]], values: list[list[Any]]) -> list[Any]:
        sd, head_dim = self.state_dict, N_EMBD // N_HEAD
        x = [t + p for t, p in zip(sd["wte"][token_id], sd["wpe"][pos_id], strict=True)]
        x = self.rmsnorm(x)
        for li in range(N_LAYER):
            x_residual = x
            x = self.rmsnorm(x)
            q = self.linear(x, sd[f"layer{li}.attn_wq"])
            k = self.linear(x, sd[f"layer{li}.attn_wk"])
            v = self.linear(x, sd[f"layer{li}.attn_wv"])
            keys[li].append(k)
            values[li].append(v)
            x_attn: list[Any] = []
            for h in range(N_HEAD):
                hs = h * head_dim
                q_h = q[hs : hs + head_dim]
                k_h = [ki[hs : hs + head_dim] for ki in keys[li]]
                v_h = [vi[hs : hs + head_dim] for vi in values[li]]
                attn_logits = [
                    sum(q_h[j] * k_h[t][j] for j in range(head_dim)) / head_dim**0.5 for t in range(len(k_h))
                ]
                attn_weights = self.softmax(attn_logits)
                x_attn.extend(sum(attn_weights[t] * v_h[t][j] for t in range(len(v_h))) for j in range(head_dim))
            x = self.linear(x_attn, sd[f"layer{li}.attn_wo"])
            x = [a + b for a, b in zip(x, x_residual, strict=True)]
            x_residual = x
            x = self.rmsnorm(x)
            x = self.linear(x, sd[f"layer{li}.mlp_fc1"])
            x = [xi.relu() ** 2 for xi in x]
            x = self.linear(x, sd[f"layer{li}.mlp_fc2"])
            x = [a + b for a, b in zip(x, x_residual, strict=True)]
        return self.linear(x, sd["wte"])

    def step_loss(self, tokens: Sequence[int]) -> Any:
        n = min(BLOCK_SIZE, len(tokens) - 1)
        keys: list[list[Any]] = [[] for _ in range(N_LAYER)]
        values: list[list[Any]] = [[] for _ in range(N_LAYER)]
        losses = []
        for pos_id in range(n):
            probs = self.softmax(self.gpt(tokens[pos_id], pos_id, keys, values))
            losses.append(-probs[tokens[pos_id + 1]].log())
        return (1 / n) * sum(losses)


# ---- the runs ---------------------------------------------------------------------------------


def initial_weights(vocab_size: int, seed: int = 42) -> dict[str, list[list[float]]]:
    """microgpt's initialisation, gauss(0, 0.08), in examples/gpt.py's state_dict order."""
    rng = random.Random(seed)

    def matrix(nout: int, nin: int) -> list[list[float]]:
        return [[rng.gauss(0, 0.08) for _ in range(nin)] for _ in range(nout)]

    weights = {"wte": matrix(vocab_size, N_EMBD), "wpe": matrix(BLOCK_SIZE, N_EMBD)}
    for i in range(N_LAYER):
        for name, shape in [
            ("attn_wq", (N_EMBD, N_EMBD)),
            ("attn_wk", (N_EMBD, N_EMBD)),
            ("attn_wv", (N_EMBD, N_EMBD)),
        ]:
            weights[f"layer{i}.{name}"] = matrix(*shape)
        weights[f"layer{i}.attn_wo"] = matrix(N_EMBD, N_EMBD)
        weights[f"layer{i}.mlp_fc1"] = matrix(4 * N_EMBD, N_EMBD)
        weights[f"layer{i}.mlp_fc2"] = matrix(N_EMBD, 4 * N_EMBD)
    return weights


def vjpgrad_model(weights: dict[str, list[list[float]]], vocab_size: int) -> Any:
    model = example.GPT(vocab_size, N_EMBD, N_HEAD, N_LAYER, BLOCK_SIZE)
    assert list(model.state_dict) == list(weights), "the example's parameters changed order"
    for p, x in zip(model.parameters(), [x for mat in weights.values() for row in mat for x in row], strict=True):
        p.data = x
    return model


def step_run(step: Callable[[Sequence[int]], Any], params: list[Any], tokens: list[int], is_torch: bool = False) -> Run:
    def run() -> tuple[list[float], float, float]:
        for p in params:
            p.grad = None if is_torch else 0.0
        t0 = time.perf_counter()
        loss = step(tokens)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        if is_torch:
            return [0.0 if p.grad is None else p.grad.item() for p in params], t1 - t0, t2 - t1
        return [p.grad for p in params], t1 - t0, t2 - t1

    return run


def gpt_step(rounds: int, compare: Callable[..., Any], name: str = "isabella", with_torch: bool = True) -> Any:
    """The step on every engine, interleaved (``compare``); PyTorch's 0-d tensors when
    ``with_torch`` and torch is installed. Importing torch grows the heap that every collection
    of the cyclic garbage collector walks, which slows the engines that make a Python object per
    operation (microgpt's design, eager vjpgrad) and hardly the compiled step: the default run of
    this script leaves torch out, so that microgpt's design runs as it does on its own."""
    docs = example.load_names()
    uchars = sorted(set("".join(docs)))
    vocab_size = len(uchars) + 1
    tokens = [len(uchars)] + [uchars.index(ch) for ch in name] + [len(uchars)]
    weights = initial_weights(vocab_size)

    model = vjpgrad_model(weights, vocab_size)
    runs: dict[str, Run] = {"vjpgrad": step_run(example.make_step_loss(model), model.parameters(), tokens)}
    compile_ = getattr(vjpgrad, "compile", None)
    if compile_ is not None:  # the hook for the compiler: the example's step, compiled
        compiled_model = vjpgrad_model(weights, vocab_size)
        compiled = example.make_step_loss(compiled_model, compiled=True)
        seconds = []
        for _ in range(2):  # the first call runs eagerly while recorded; the second compiles (or loads) the code
            start = time.perf_counter()
            compiled(tokens).backward()
            seconds.append(time.perf_counter() - start)
        print(f"  (vjpgrad compiled: first call, recorded, {seconds[0]:.2f}s; second, compiled, {seconds[1]:.2f}s)")
        runs["vjpgrad compiled"] = step_run(compiled, compiled_model.parameters(), tokens)
    peer = MicrogptModel(weights, MicroValue, lambda v: v.data)
    runs["microgpt-style"] = step_run(peer.step_loss, peer.parameters(), tokens)
    if with_torch and importlib.util.find_spec("torch") is not None:
        import torch

        def leaf(x: float) -> Any:
            return torch.tensor(x, dtype=torch.float64, requires_grad=True)

        tensors = MicrogptModel(weights, leaf, lambda t: t.item())
        runs["torch 0-d"] = step_run(tensors.step_loss, tensors.parameters(), tokens, is_torch=True)

    nodes = count_nodes(example.make_step_loss(model)(tokens))
    title = f"6. microgpt's GPT step on {name!r} ({len(tokens) - 1} positions, n_embd {N_EMBD}, {N_HEAD} heads)"
    result = compare(title, nodes, runs, rounds)
    steps = ", ".join(f"{engine} {r['total_us'] * nodes / 1000:.0f} ms" for engine, r in result.items())
    print(f"  a step: {steps}")
    if "vjpgrad compiled" in result and "microgpt-style" in result:
        compiled_, peer_ = result["vjpgrad compiled"], result["microgpt-style"]
        both = (peer_["forward_us"] + peer_["backward_us"]) / (compiled_["forward_us"] + compiled_["backward_us"])
        print(
            f"  microgpt-style / vjpgrad compiled: {peer_['total_us'] / compiled_['total_us']:.1f}x a step's total, "
            f"{both:.1f}x its forward + backward"
        )
    return result


PARTS: list[
    tuple[str, Callable[[str, str], bool]]
] = [  # (part of a compiled call, how a profiled function's file and name say it is that part)
    ("generated reverse code", lambda file, name: file.endswith("backward>")),
    ("generated forward code", lambda file, name: file.endswith("forward>")),
    ("the guard and the arguments' key", lambda file, name: "guard" in file or "compiler/record.py" in file),
    ("adding gradients into .grad", lambda file, name: name == "add_gradients"),
    ("the call's bookkeeping (compiler/run.py)", lambda file, name: "compiler/run.py" in file),
    ("float helpers the code calls", lambda file, name: "core/floats.py" in file or "core/ops.py" in file),
    ("the rest: the harness (zeroing .grad, the tokens' Values), nodes", lambda file, name: True),
]


def profile_compiled(name: str, steps: int = 20) -> None:
    """cProfile over ``steps`` compiled steps on ``name`` after three warm-up calls: the share of
    the profiled time of each part of a compiled call, and of the largest generated functions.
    The profiler's cost is spread over every function call: the generated code, which makes
    few, is if anything under-counted."""
    import cProfile
    import pstats

    docs = example.load_names()
    uchars = sorted(set("".join(docs)))
    tokens = [len(uchars)] + [uchars.index(ch) for ch in name] + [len(uchars)]
    model = vjpgrad_model(initial_weights(len(uchars) + 1), len(uchars) + 1)
    step, params = example.make_step_loss(model, compiled=True), model.parameters()

    def run(n: int) -> None:
        for _ in range(n):
            for p in params:
                p.grad = 0.0
            step(tokens).backward()

    run(3)
    profiler = cProfile.Profile()
    profiler.runcall(run, steps)
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    shares: dict[str, float] = dict.fromkeys([part for part, _ in PARTS], 0.0)
    generated: dict[str, float] = {}
    for (file, _, function), (_, _, own, *_) in stats.items():
        part = next(part for part, test in PARTS if test(file, function))
        shares[part] += own
        if file.endswith(("forward>", "backward>")):
            generated[function] = generated.get(function, 0.0) + own
    total = sum(shares.values())
    print(f"\nwhere a compiled step's time goes: cProfile over {steps} steps on {name!r} ({total:.2f}s profiled)")
    for part, seconds in shares.items():
        print(f"  {part:58} {100 * seconds / total:5.1f}%")
    largest = sorted(generated.items(), key=lambda item: -item[1])[:6]
    print("  the largest generated functions: " + ", ".join(f"{f} {100 * t / total:.1f}%" for f, t in largest))


def alone(name: str, rounds: int = 121) -> None:
    """The compiled step by itself as the example runs it (the tokens' Values made in its forward),
    timed as the harness times it (a full collection before each step, then its forward and its
    backward), medians of ``rounds`` steps after warm-up calls: the figure to compare between two
    versions of the code, run alternately, without the noise of microgpt's much longer step
    beside it."""
    docs = example.load_names()
    uchars = sorted(set("".join(docs)))
    tokens = [len(uchars)] + [uchars.index(ch) for ch in name] + [len(uchars)]
    model = vjpgrad_model(initial_weights(len(uchars) + 1), len(uchars) + 1)
    step, params = example.make_step_loss(model, compiled=True), model.parameters()
    for _ in range(3):  # record, compile (or load), replay once
        step(tokens).backward()
    forwards, backwards = [], []
    clock = time.perf_counter
    for _ in range(rounds):
        for p in params:
            p.grad = 0.0
        gc.collect()
        t0 = clock()
        loss = step(tokens)
        t1 = clock()
        loss.backward()
        t2 = clock()
        del loss
        forwards.append(t1 - t0)
        backwards.append(t2 - t1)
    forward, backward = 1000 * statistics.median(forwards), 1000 * statistics.median(backwards)
    print(
        f"the compiled step on {name!r} alone, medians of {rounds} steps (a collection before each): "
        f"forward {forward:.3f} ms, backward {backward:.3f} ms, forward + backward {forward + backward:.3f} ms"
    )


def cpu_time(name: str, rounds: int = 12) -> None:
    """The compiled step and microgpt's design in one process, in CPU time (``time.process_time``:
    what other processes on a loaded machine take is not counted), interleaved: three compiled
    steps for each microgpt-style step, ``rounds`` times, after warm-up calls. Prints the medians
    of forward + backward and of a step's total (zeroing ``.grad`` and freeing the graph included),
    and microgpt-style / compiled on each."""
    docs = example.load_names()
    uchars = sorted(set("".join(docs)))
    tokens = [len(uchars)] + [uchars.index(ch) for ch in name] + [len(uchars)]
    weights = initial_weights(len(uchars) + 1)
    model = vjpgrad_model(weights, len(uchars) + 1)
    compiled, params = example.make_step_loss(model, compiled=True), model.parameters()
    peer = MicrogptModel(weights, MicroValue, lambda v: v.data)
    clock = time.process_time

    def timed(step: Callable[[Sequence[int]], Any], leaves: list[Any]) -> tuple[float, float]:
        start = clock()
        for p in leaves:
            p.grad = 0.0
        before = clock()
        loss = step(tokens)
        loss.backward()
        after = clock()
        del loss  # the graph freed inside the step's total
        return after - before, clock() - start

    for _ in range(3):  # record, compile (or load), replay once
        timed(compiled, params)
    timed(peer.step_loss, peer.parameters())
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    for _ in range(rounds):
        ours.extend(timed(compiled, params) for _ in range(3))
        theirs.append(timed(peer.step_loss, peer.parameters()))
    both, total = (statistics.median(t[k] for t in ours) * 1000 for k in (0, 1))
    peer_both, peer_total = (statistics.median(t[k] for t in theirs) * 1000 for k in (0, 1))
    print(f"CPU time on {name!r}, medians of {len(ours)} compiled and {len(theirs)} microgpt-style steps, interleaved:")
    print(f"  vjpgrad compiled: forward + backward {both:.2f} ms, a step's total {total:.2f} ms")
    print(f"  microgpt-style:   forward + backward {peer_both:.1f} ms, a step's total {peer_total:.1f} ms")
    ratios = f"{peer_both / both:.1f}x forward + backward, {peer_total / total:.1f}x a step's total"
    print(f"  microgpt-style / vjpgrad compiled: {ratios}")


def _straight_line(lines: int, locals_: int, shape: str, shuffled: bool = False) -> Callable[..., Any]:
    """A function of ``lines`` statements over ``locals_`` float arguments, in one of the generated
    code's two shapes: ``reverse`` is ``a += g * b`` (a reverse pass's line, two float operations),
    ``forward`` a line of a 16-term chain ``(((p0 * x0) + (p1 * x1)) + ...)`` (a neuron's sum, 31
    float operations). The statements walk the arguments in order, or, ``shuffled``, in an order
    drawn at random (seeded): as a reverse pass reads values made far apart."""
    names = [f"a{k}" for k in range(locals_)]
    order = list(range(locals_))
    if shuffled:
        random.Random(0).shuffle(order)
    body = []
    for i in range(lines):
        if shape == "reverse":
            body.append(f"    a{order[(2 * i) % locals_]} += g * a{order[(2 * i + 1) % locals_]}")
        else:
            terms = [f"(a{(32 * i + 2 * t) % locals_} * a{(32 * i + 2 * t + 1) % locals_})" for t in range(16)]
            chain = terms[0]
            for term in terms[1:]:
                chain = f"({chain} + {term})"
            body.append(f"    a{(32 * i) % locals_} = {chain}")
    source = f"def f(g, {', '.join(names)}):\n" + "\n".join(body) + "\n    return a0\n"
    return _function_of(source)


def _copies_summed(copies: int, parameters: int, width: int = 16) -> tuple[float, float]:
    """What the gradients of a block's parameters cost over a run of its copies, two ways, in
    seconds (medians): the parameters laid out as rows of a ``width``-column matrix, parameter
    ``(r, c)`` handed ``g_r * x_c`` by each copy (a row's gradient, a column's input), as a
    linear layer's weights are. Apart, as the code is written: a generator whose frame holds the
    running gradients through the run (read from a list when it begins, written back when
    ``None`` is sent), each copy's values sent in, each of its statements adding the copy's term
    (``p5 += g0 * x5``). Summed: each copy's row gradients and inputs kept, then one statement a
    parameter adding every copy's term in the copies' order (``p5 = p5 + g0_0 * x5_0 + g0_1 *
    x5_1 + ...``). The same multiplications and additions in the same order, so the same bits
    (checked here), in fewer statements. Both are generators made once, each call sending into
    its frame, so that neither pays for a fresh frame (the summed one has some 3,300 locals).
    Code built from numbers alone."""
    rows = -(-parameters // width)
    cells = [(r, c) for r in range(rows) for c in range(width)][:parameters]
    factors = [f"g{r}" for r in range(rows)] + [f"x{c}" for c in range(width)]
    gradients = ", ".join(f"p{k}" for k in range(parameters))
    body = "\n".join(f"            p{k} += g{r} * x{c}" for k, (r, c) in enumerate(cells))
    run = _function_of(
        f"def f(G):\n    a = yield\n    while True:\n        {gradients}, = G\n        while a is not None:\n"
        f"            {', '.join(factors)}, = a\n{body}\n            a = yield\n"
        f"        G[:] = ({gradients},)\n        a = yield\n"
    )
    kept = "\n".join(f"        {', '.join(f'{x}_{m}' for x in factors)}, = vs[{m}]" for m in range(copies))
    sums = "\n".join(
        f"        p{k} = p{k} + " + " + ".join(f"g{r}_{m} * x{c}_{m}" for m in range(copies))
        for k, (r, c) in enumerate(cells)
    )
    summing = _function_of(
        f"def f(G):\n    vs = yield\n    while True:\n{kept}\n        {gradients}, = G\n{sums}\n"
        f"        G[:] = ({gradients},)\n        vs = yield\n"
    )
    rng = random.Random(0)
    values = [tuple(rng.uniform(-1.0, 1.0) for _ in factors) for _ in range(copies)]
    held: list[float] = []
    frame, summed = run(held), summing(held)
    next(frame)
    next(summed)

    def apart() -> list[float]:
        held[:] = (-0.0,) * parameters
        for v in values:
            frame.send(v)
        frame.send(None)
        return list(held)

    def at_once() -> list[float]:
        held[:] = (-0.0,) * parameters
        summed.send(values)
        return list(held)

    assert [x.hex() for x in apart()] == [x.hex() for x in at_once()], "the two ways must add alike, bit for bit"
    return _per_call(apart, []), _per_call(at_once, [])


def _empty_call(locals_: int) -> Callable[..., Any]:
    """A function with ``locals_`` locals that it never assigns (the assignment is behind a test
    that fails) and one argument: what its call costs is its frame's."""
    source = (
        f"def f(g):\n    if g is None:\n        {' = '.join(f'a{k}' for k in range(locals_))} = 0.0\n    return g\n"
    )
    return _function_of(source)


def _function_of(source: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # code built from numbers alone, to time the interpreter
    function: Callable[..., Any] = namespace["f"]
    return function


def _per_call(function: Callable[..., Any], arguments: list[Any], calls: int = 31) -> float:
    """Median seconds of one call."""
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        function(*arguments)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _lines_run(function: Callable[..., Any], *arguments: Any) -> int:
    """How many lines of generated code one call of ``function`` runs (counted by a trace)."""
    count = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if not frame.f_code.co_filename.startswith("<vjpgrad.compile"):
            return None
        if event == "line":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        function(*arguments)
    finally:
        sys.settrace(None)
    return count


def floor(name: str, rounds: int = 15) -> None:
    """The compiled step's parts timed alone, without a profiler (medians of ``rounds`` steps),
    beside CPython's floor for straight-line code of the generated code's shapes on this machine,
    with few values and with as many as its largest block has: what a line costs as the working
    set grows (a call's own cost taken off), and what a call of a function with many locals costs
    before it runs a line (CPython 3.11 and later give a frame of more than about 2,000 locals
    memory of its own at each call)."""
    import inspect
    import types

    docs = example.load_names()
    uchars = sorted(set("".join(docs)))
    tokens = [len(uchars)] + [uchars.index(ch) for ch in name] + [len(uchars)]
    model = vjpgrad_model(initial_weights(len(uchars) + 1), len(uchars) + 1)
    step, params = example.make_step_loss(model, compiled=True), model.parameters()
    inside = inspect.getclosurevars(step).nonlocals  # the example's compiled function and its arguments
    compiled, arguments_of = inside["run"], inside["arguments"]

    def rows() -> tuple[list[Any]]:
        return (arguments_of(tokens),)  # the tokens as Values, as the example's step makes them

    for _ in range(3):  # record, compile (or load), replay once
        step(tokens).backward()
    replay = compiled._last  # the recording the calls replay
    forward = replay.code.forward  # each a pass's kept frames (compiler.run.Frames), called as a function
    reverse = replay.code.backward_for(frozenset({0}))
    parts: dict[str, list[float]] = {
        "the tokens' Values": [],
        "the compiled call": [],
        "generated forward": [],
        "backward()": [],
        "generated reverse": [],
        "zeroing .grad": [],
    }
    clock = time.perf_counter
    for _ in range(rounds):
        t0 = clock()
        for p in params:
            p.grad = 0.0
        t1 = clock()
        arguments = rows()
        t2 = clock()
        loss = compiled(*arguments)
        t3 = clock()
        loss.backward()
        t4 = clock()
        parts["zeroing .grad"].append(t1 - t0)
        parts["the tokens' Values"].append(t2 - t1)
        parts["the compiled call"].append(t3 - t2)
        parts["backward()"].append(t4 - t3)
        leaves = arguments[0]
        data = [x._data for x in leaves] + [p._data for p in replay.parameters]
        zeros = (-0.0,) * len(data)  # where each gradient starts, as a whole pass starts them
        t5 = clock()
        values = forward(data)
        t6 = clock()
        reverse((1.0,), values, data, zeros)
        parts["generated forward"].append(t6 - t5)
        parts["generated reverse"].append(clock() - t6)
        del loss, values
    ms = {part: 1000 * statistics.median(times) for part, times in parts.items()}
    operations = len(replay.recorded.live)
    lines = _lines_run(reverse, (1.0,), forward(data), data, (-0.0,) * len(data))
    print(f"the compiled step on {name!r}, its parts timed alone (medians of {rounds} steps):")
    made = len(arguments[0])
    tokens_ms = ms["the tokens' Values"]
    print(f"  the tokens as Values ({made})        {tokens_ms:6.2f} ms")
    call, fwd = ms["the compiled call"], ms["generated forward"]
    back, rev = ms["backward()"], ms["generated reverse"]
    print(f"  the compiled call                {call:6.2f} ms, of which the generated forward {fwd:.2f} ms")
    print(f"  backward()                       {back:6.2f} ms, of which the generated reverse {rev:.2f} ms")
    print(f"  zeroing .grad ({len(params):,} parameters)  {ms['zeroing .grad']:6.2f} ms")
    print(f"  the generated forward: {operations:,} recorded operations, {1e6 * fwd / operations:.1f} ns each")
    shown = f"{lines:,} statements run (a sum of an operand's contributions is one), {1e6 * rev / lines:.1f} ns each"
    print(f"  the generated reverse: {shown}")
    blocks = [
        f
        for f in forward.function.__globals__.values()
        if isinstance(f, types.FunctionType) and f.__code__.co_filename.startswith("<vjpgrad.compile")
    ]
    block = max(blocks, key=lambda f: f.__code__.co_nlocals)
    size = block.__code__.co_nlocals
    print(
        f"  locals: the forward {forward.function.__code__.co_nlocals:,}, "
        f"the reverse {reverse.function.__code__.co_nlocals:,}, "
        f"their largest block ({block.__name__}, run once per copy) {size:,}"
    )
    print(
        f"CPython {sys.version.split()[0]}'s floor for straight-line code on this machine, a call's own cost taken off:"
    )
    for shape, count, per_line, what in (
        ("reverse", 5000, 1, "a reverse line (a += g * b)"),
        ("forward", 300, 31, "an operation of a forward chain (16 terms)"),
    ):
        figures = []
        for width, shuffled in [(100, False), (size, False)] + [(size, True)] * (shape == "reverse"):
            numbers = [0.5 + k / (4 * width) for k in range(width + 1)]
            taken = _per_call(_straight_line(count, width, shape, shuffled), numbers)
            empty = _per_call(_straight_line(0, width, shape), numbers)
            figures.append(1e9 * (taken - empty) / (count * per_line))
        shown = f"{figures[0]:.1f} ns with 100 locals, {figures[1]:.1f} ns with {size:,} read in order"
        print(f"  {what}: {shown}" + (f", {figures[2]:.1f} ns in no order" if len(figures) > 2 else ""))
    costs = [
        f"{width:,} {1e6 * _per_call(_empty_call(width), [0.5], 101):.1f} µs" for width in (1000, 2000, size, 10000)
    ]
    print("  a call that runs no line, by its locals: " + ", ".join(costs))
    program = replay.code.program
    owned = getattr(program, "_owned", [])  # a folded program's: the parameters each block alone reads
    if not any(owned):
        return  # a step whose code folds no block that holds parameters
    k = max(range(len(owned)), key=lambda k: len(owned[k]))  # the block holding most parameters
    copies, held = program.blocks[k].copies, len(owned[k])
    apart, summed = _copies_summed(copies, held)
    print(
        f"  the gradients of {held:,} parameters over {copies} copies of block {k + 1}, a product a copy each: "
        f"a statement per copy, held in the block's frame (as the code is written) {1000 * apart:.2f} ms, "
        f"one statement of {copies} terms a parameter {1000 * summed:.2f} ms (the same bits)"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=None, help="rounds per engine (default 7; --alone: steps, 121)")
    parser.add_argument("--name", default="isabella", help="the name the step trains on")
    parser.add_argument("--profile", action="store_true", help="where a compiled step's time goes (cProfile)")
    parser.add_argument("--cpu", action="store_true", help="compiled / microgpt-style in CPU time, one process")
    parser.add_argument("--floor", action="store_true", help="the compiled step's parts beside CPython's floor")
    parser.add_argument("--alone", action="store_true", help="the compiled step alone, to compare two versions")
    parser.add_argument(
        "--torch", action="store_true", help="PyTorch 0-d tensors too (torch imported into the process)"
    )
    parser.add_argument(
        "--gc-threshold",
        type=int,
        default=None,
        metavar="N",
        help="the collector's first threshold for this run (CPython 3.10 to 3.12: 700, 3.13: 2000)",
    )
    args = parser.parse_args(argv)
    if args.gc_threshold is not None:
        if args.gc_threshold < 1:
            parser.error(f"--gc-threshold must be at least 1, got {args.gc_threshold}")
        gc.set_threshold(args.gc_threshold, *gc.get_threshold()[1:])
    rounds = args.rounds or 7
    if args.profile:
        profile_compiled(args.name)
        return
    if args.cpu:
        cpu_time(args.name, rounds)
        return
    if args.floor:
        floor(args.name, rounds)
        return
    if args.alone:
        alone(args.name, args.rounds or 121)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import compare

    given = " (--gc-threshold)" if args.gc_threshold is not None else ""
    print(f"Python {sys.version.split()[0]}; gc on, thresholds {gc.get_threshold()}{given}")
    if not args.torch:
        print("  (torch 0-d left out: --torch adds it, and with it torch's objects to every collection's walk)")
    gpt_step(rounds, compare, args.name, with_torch=args.torch)


if __name__ == "__main__":
    main()
