"""examples/gpt.py: a tiny GPT on names learns (its loss falls), samples names, and its
training step reads no data."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))

import gpt  # noqa: E402

import vjpgrad  # noqa: E402


def test_the_names_are_lowercase_letters_one_per_line() -> None:
    names = gpt.load_names()
    assert len(names) > 5000
    assert len(set(names)) == len(names)
    assert all(name.isalpha() and name.islower() and name.isascii() for name in names)
    assert {"mary", "james", "linda", "john"} <= set(names)
    assert max(len(name) for name in names) + 1 < 16  # every name and its end token fit the block


def test_a_small_gpt_learns_names_its_loss_falls() -> None:
    # 8 wide (4 heads of 2), 150 names: the loss starts at about ln(27), a uniform guess
    _, losses, chars, _ = gpt.train(steps=150, seed=1, n_embd=8, out=lambda line: None)
    first, last = sum(losses[:30]) / 30, sum(losses[-30:]) / 30
    assert first == pytest.approx(math.log(27), abs=0.25)
    assert last < first - 0.3
    assert len(chars) == 27


def test_the_step_is_one_graph_per_name_with_the_loss_of_every_position() -> None:
    model = gpt.GPT(vocab_size=27, n_embd=4, rng=random.Random(0))
    step_loss = gpt.make_step_loss(model)
    tokens = [26, 0, 1, 26]  # BOS a b BOS: three predictions
    loss = step_loss(tokens)
    loss.backward()
    by_position = []
    for n in range(3):
        keys: list[list[list[gpt.Value]]] = [[]]
        values: list[list[list[gpt.Value]]] = [[]]
        for pos in range(n + 1):
            logits = model(tokens[pos], pos, keys, values)
        by_position.append(gpt.F.cross_entropy(logits, tokens[n + 1]).data)
    assert loss.data == pytest.approx(sum(by_position) / 3, rel=1e-14)
    # weight tying: the output layer is wte, so a letter that is never an input still gets gradient
    assert all(p.grad != 0.0 for p in model.state_dict["wte"][2])  # c: only an output class here


def test_the_compiled_step_is_the_eager_step_bit_for_bit() -> None:
    # compile refuses any data read while it records: the step reads none, and its replay
    # (the second name of the same length) gives the eager one-hot step's loss and gradients
    # exactly, and microgpt's index step's to rounding
    results = []
    for compiled, one_hot in ((False, True), (True, True), (False, False)):
        model = gpt.GPT(vocab_size=27, n_embd=4, rng=random.Random(0))
        step_loss = gpt.make_step_loss(model, compiled=compiled, one_hot=one_hot)
        for tokens in ([26, 7, 8, 26], [26, 1, 1, 26]):
            for p in model.parameters():
                p.grad = 0.0
            loss = step_loss(tokens)
            loss.backward()
        results.append((loss.data, [p.grad for p in model.parameters()]))
    assert results[0] == results[1]
    assert results[2][0] == pytest.approx(results[1][0], rel=1e-14)
    assert results[2][1] == pytest.approx(results[1][1], rel=1e-12, abs=1e-15)


def test_sampling_reads_data_by_design_so_it_cannot_be_compiled() -> None:
    model = gpt.GPT(vocab_size=27, n_embd=4, rng=random.Random(0))
    chars = [*"abcdefghijklmnopqrstuvwxyz", "<BOS>"]
    with pytest.raises(RuntimeError, match="call it uncompiled"):
        vjpgrad.compile(lambda: gpt.sample(model, chars, count=1))()


def test_the_example_runs_from_the_command_line_and_samples_names() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "gpt.py"), "--steps", "3", "--n-embd", "4", "--samples", "3", "--eager"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "running eager (--eager)" in result.stdout
    assert "mean loss of the last 3 steps" in result.stdout
    samples = [
        line.split(": ", 1)[1] if ": " in line else "" for line in result.stdout.splitlines() if "sample" in line
    ]
    assert len(samples) == 3
    assert all(set(name) <= set("abcdefghijklmnopqrstuvwxyz") for name in samples)


def test_bad_flags_are_refused() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "gpt.py"), "--n-embd", "6"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "--n-embd must be a positive multiple of 4" in result.stderr
