"""A tiny GPT trained on first names, on vjpgrad Values: Karpathy's microgpt, line for line
where it can be, with vjpgrad.nn.functional for the maths and vjpgrad.optim.Adam.

The model is microgpt's: token and position embeddings, RMSNorm, one block of causal
self-attention with 4 heads and an MLP with a squared relu, residual connections, and an
output layer that shares the token embedding (weight tying). It reads a name one letter at
a time and learns to predict the next letter; a step trains on one name. At the end it
makes up new names, sampled with a fixed seed.

The names are examples/data/names.txt: 5,163 US first names from the Census Bureau's 1990
first-name frequency files (public domain), as shipped in the PyPI package ``names``.

Compiled (the default), the training step is the same function, given each letter as a Value
holding its index (``requires_grad=False``) rather than as an int: numbers are structure to
compile (an int picks which row of the embedding a recording uses; a float is fixed in the
code, as ``torch.compile`` specializes Python scalars) while Values are data. The embedding
lookup ``F.embedding(token, wte)`` and the cross-entropy's target then pick their row and
class by a ``take`` node, the same numbers as ``wte[token]``, so ``vjpgrad.compile`` records
the step once per name length and replays it as code for every name of that length.
``--eager`` runs microgpt's own step, int indices and all, as plain Values. Loss starts
near ln(27) = 3.30 (a uniform guess over 26 letters and the end-of-name token).

    python examples/gpt.py [--steps 500] [--seed 42] [--eager] [--samples 20]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import vjpgrad
import vjpgrad.nn.functional as F  # noqa: N812  # PyTorch's spelling
from vjpgrad import Value, Vector
from vjpgrad.compiler import cache
from vjpgrad.optim import Adam

NAMES = Path(__file__).resolve().parent / "data" / "names.txt"
Matrix = list[list[Value]]


def load_names(path: Path = NAMES) -> list[str]:
    """One name a line; lines starting with # are comments."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


class GPT:
    """microgpt's model: parameters in a state_dict of matrices (lists of rows of Values)."""

    def __init__(
        self,
        vocab_size: int,
        n_embd: int = 16,
        n_head: int = 4,
        n_layer: int = 1,
        block_size: int = 16,
        rng: random.Random | None = None,
    ) -> None:
        if n_embd % n_head:
            raise ValueError(f"n_embd ({n_embd}) must be a multiple of n_head ({n_head})")
        rng = rng or random.Random(42)
        self.n_embd, self.n_head, self.n_layer, self.block_size = n_embd, n_head, n_layer, block_size
        self.head_dim = n_embd // n_head

        def matrix(nout: int, nin: int, std: float = 0.08) -> Matrix:
            return [[Value(rng.gauss(0, std)) for _ in range(nin)] for _ in range(nout)]

        # no lm_head: the output layer is the token embedding (weight tying)
        self.state_dict = {"wte": matrix(vocab_size, n_embd), "wpe": matrix(block_size, n_embd)}
        for i in range(n_layer):
            self.state_dict[f"layer{i}.attn_wq"] = matrix(n_embd, n_embd)
            self.state_dict[f"layer{i}.attn_wk"] = matrix(n_embd, n_embd)
            self.state_dict[f"layer{i}.attn_wv"] = matrix(n_embd, n_embd)
            self.state_dict[f"layer{i}.attn_wo"] = matrix(n_embd, n_embd)
            self.state_dict[f"layer{i}.mlp_fc1"] = matrix(4 * n_embd, n_embd)
            self.state_dict[f"layer{i}.mlp_fc2"] = matrix(n_embd, 4 * n_embd)

    def parameters(self) -> list[Value]:
        return [p for mat in self.state_dict.values() for row in mat for p in row]

    def __call__(
        self,
        token: int | Value,
        pos_id: int,
        keys: list[list[list[Value]]],
        values: list[list[list[Value]]],
    ) -> list[Value]:
        """The logits of the token after ``token`` (its index: an int, or a Value holding it) at
        position ``pos_id``; ``keys`` and ``values`` hold the earlier positions' (per layer), and
        this one's is appended."""
        state_dict, head_dim = self.state_dict, self.head_dim
        tok_emb = F.embedding(token, state_dict["wte"])  # token embedding: the row wte[token]
        pos_emb = state_dict["wpe"][pos_id]  # position embedding
        x = [t + p for t, p in zip(tok_emb, pos_emb, strict=True)]  # joint token and position embedding
        x = F.rms_norm(x, eps=1e-5)  # not redundant: the residual stream bypasses the blocks' norms

        for li in range(self.n_layer):
            # 1) multi-head causal self-attention: this position attends to itself and the past
            x_residual = x
            x = F.rms_norm(x, eps=1e-5)
            q = F.linear(x, state_dict[f"layer{li}.attn_wq"])
            k = F.linear(x, state_dict[f"layer{li}.attn_wk"])
            v = F.linear(x, state_dict[f"layer{li}.attn_wv"])
            keys[li].append(k)
            values[li].append(v)
            x_attn: list[Value] = []
            for h in range(self.n_head):
                hs = h * head_dim
                q_h = q[hs : hs + head_dim]
                k_h = [ki[hs : hs + head_dim] for ki in keys[li]]
                v_h = [vi[hs : hs + head_dim] for vi in values[li]]
                attn_logits = [score / head_dim**0.5 for score in F.linear(q_h, k_h)]  # q . k_t for each t
                attn_weights = F.softmax(attn_logits)
                head_out = F.linear(attn_weights, [list(column) for column in zip(*v_h, strict=True)])  # sum_t w_t v_t
                x_attn.extend(head_out)
            x = F.linear(x_attn, state_dict[f"layer{li}.attn_wo"])
            x = [a + b for a, b in zip(x, x_residual, strict=True)]
            # 2) MLP: expand 4x, squared relu, project back
            x_residual = x
            x = F.rms_norm(x, eps=1e-5)
            x = F.linear(x, state_dict[f"layer{li}.mlp_fc1"])
            x = [xi.relu() ** 2 for xi in x]
            x = F.linear(x, state_dict[f"layer{li}.mlp_fc2"])
            x = [a + b for a, b in zip(x, x_residual, strict=True)]

        return F.linear(x, state_dict["wte"])  # weight tying: the output layer is wte


def make_step_loss(
    model: GPT, compiled: bool = False, as_values: bool | None = None
) -> Callable[[Sequence[int]], Value]:
    """The training step's forward pass: one name's tokens in, its mean loss out.

    Eager, it is microgpt's: each token and target an int index. Compiled, the same function is
    given each token as a Value holding its index (``as_values`` says which, if you want the
    other): data to ``vjpgrad.compile``, so that one recording serves every name of a length.
    """

    def loss_of(tokens: Sequence[int] | Sequence[Value]) -> Value:
        n = min(model.block_size, len(tokens) - 1)
        keys: list[list[list[Value]]] = [[] for _ in range(model.n_layer)]
        values: list[list[list[Value]]] = [[] for _ in range(model.n_layer)]
        losses = []
        for pos_id in range(n):
            token, target = tokens[pos_id], tokens[pos_id + 1]
            logits = model(token, pos_id, keys, values)
            losses.append(F.cross_entropy(logits, target))  # -log p(target)
        return Vector(losses).mean()  # the mean over the name's positions

    if not (compiled if as_values is None else as_values):
        return loss_of

    run = vjpgrad.compile(loss_of) if compiled else loss_of

    def arguments(tokens: Sequence[int]) -> list[Value]:
        """The name's tokens as Values that take no gradient: data to a compiled step (new Values
        at each step, made at once from the tokens by Vector)."""
        n = min(model.block_size, len(tokens) - 1)
        return list(Vector([float(t) for t in tokens[: n + 1]], requires_grad=False))

    def step_loss(tokens: Sequence[int]) -> Value:
        return run(arguments(tokens))

    return step_loss


def train(
    steps: int = 1000,
    seed: int = 42,
    eager: bool = False,
    n_embd: int = 16,
    n_layer: int = 1,
    report_every: int = 100,
    out: Callable[[str], None] = print,
) -> tuple[GPT, list[float], list[str], Callable[[str], list[int]]]:
    """Train one name per step; returns the model, the loss of every step, the characters
    and the encoder (name -> tokens)."""
    rng = random.Random(seed)
    docs = load_names()
    rng.shuffle(docs)
    out(f"num docs: {len(docs)}")

    # the tokenizer: each letter is a token, and BOS marks both ends of a name
    uchars = sorted(set("".join(docs)))
    BOS = len(uchars)  # noqa: N806  # microgpt's name
    vocab_size = len(uchars) + 1
    out(f"vocab size: {vocab_size}")

    def encode(doc: str) -> list[int]:
        return [BOS] + [uchars.index(ch) for ch in doc] + [BOS]

    model = GPT(vocab_size, n_embd=n_embd, n_layer=n_layer, rng=rng)
    params = model.parameters()
    out(f"num params: {len(params)}")

    step_loss = make_step_loss(model, compiled=not eager)  # compiled: recorded once per name length
    out("running eager (--eager)" if eager else "running compiled (vjpgrad.compile); --eager to compare")

    learning_rate, beta1, beta2, eps_adam = 0.01, 0.85, 0.99, 1e-8
    optimizer = Adam(params, lr=learning_rate, betas=(beta1, beta2), eps=eps_adam)
    losses: list[float] = []
    # compiled, the first step of each name length runs eagerly while it is recorded and the
    # second compiles that length's code (or loads it from the cache a previous run filled)
    seen: dict[int, int] = {}  # name length -> steps so far
    first_steps = [0.0, 0.0]  # seconds of every length's first step, and of its second
    cache_before = cache.info().entries
    start = time.perf_counter()
    for step in range(steps):
        step_start = time.perf_counter()
        tokens = encode(docs[step % len(docs)])
        loss = step_loss(tokens)
        optimizer.zero_grad()
        loss.backward()
        optimizer.lr = learning_rate * (1 - step / steps)  # linear decay to 0
        optimizer.step()
        losses.append(loss.data)
        occurrence = seen[len(tokens)] = seen.get(len(tokens), 0) + 1
        if occurrence <= 2:
            first_steps[occurrence - 1] += time.perf_counter() - step_start
        if (step + 1) % report_every == 0 or step + 1 == steps:
            recent = losses[-report_every:]
            elapsed = time.perf_counter() - start
            mean = f"mean of last {len(recent)} {sum(recent) / len(recent):.4f}"
            out(f"step {step + 1:5d} / {steps} | loss {loss.data:.4f} | {mean} | {elapsed:5.1f}s")
    if not eager:
        info = cache.info()
        stored = f"{info.entries - cache_before} new entries in {info.directory}" if info.enabled else "off"
        again = sum(1 for count in seen.values() if count >= 2)  # a length met once is never compiled
        out(
            f"compile: {len(seen)} name lengths, each recorded on its first step ({first_steps[0]:.1f}s in all); "
            f"{again} met again, each compiled or loaded on its second ({first_steps[1]:.1f}s); code cache: {stored}"
        )
    return model, losses, [*uchars, "<BOS>"], encode


def sample(model: GPT, chars: list[str], count: int = 20, temperature: float = 0.5, seed: int = 42) -> list[str]:
    """New names, one letter at a time from the model's distribution (reads data: not training)."""
    rng = random.Random(seed)
    BOS = len(chars) - 1  # noqa: N806
    names = []
    with vjpgrad.no_grad():
        for _ in range(count):
            keys: list[list[list[Value]]] = [[] for _ in range(model.n_layer)]
            values: list[list[list[Value]]] = [[] for _ in range(model.n_layer)]
            token_id, name = BOS, ""
            for pos_id in range(model.block_size):
                logits = model(token_id, pos_id, keys, values)
                probs = F.softmax([logit / temperature for logit in logits])
                token_id = rng.choices(range(len(chars)), weights=[p.data for p in probs])[0]
                if token_id == BOS:
                    break
                name += chars[token_id]
            names.append(name)
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000, help="training steps, one name each (default 1000)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the shuffle, the weights and the samples")
    parser.add_argument("--eager", action="store_true", help="run the step as plain Values, not compiled")
    parser.add_argument("--samples", type=int, default=20, help="names to make up at the end (default 20)")
    parser.add_argument("--n-embd", type=int, default=16, help="embedding width, a multiple of 4 (default 16)")
    parser.add_argument("--n-layer", type=int, default=1, help="transformer blocks (default 1)")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.n_embd < 4 or args.n_embd % 4:
        parser.error("--n-embd must be a positive multiple of 4 (there are 4 heads)")
    if args.n_layer < 1:
        parser.error("--n-layer must be at least 1")

    start = time.perf_counter()
    model, losses, chars, _ = train(args.steps, args.seed, args.eager, args.n_embd, args.n_layer)
    elapsed = time.perf_counter() - start
    last = losses[-100:]
    print(f"mean loss of the last {len(last)} steps: {sum(last) / len(last):.4f} (ln 27 = {math.log(27):.4f})")
    print(f"{elapsed:.1f}s, {1000 * elapsed / args.steps:.1f} ms per step")
    print("--- inference (new, made-up names) ---")
    for i, name in enumerate(sample(model, chars, args.samples, seed=args.seed)):
        print(f"sample {i + 1:2d}: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
