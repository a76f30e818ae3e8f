"""micrograd's demo, done right: train MLP(2, [16, 16, 1]) on two moons to 100% accuracy.

The data set is generated here (no download, no scikit-learn), with a fixed seed. The loss is
micrograd's: the max-margin (hinge) loss plus L2 regularisation, with its learning-rate
schedule. With matplotlib installed (pip install matplotlib (or pip install -e '.[plot]' in your
clone of vjpgrad)) it writes moons.png: the decision boundary and the loss curve.

    python examples/moons.py [--steps 100] [--out moons.png]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time

import vjpgrad
from vjpgrad import Value
from vjpgrad.nn import MLP


def make_moons(n: int = 100, noise: float = 0.1, seed: int = 1) -> tuple[list[tuple[float, float]], list[int]]:
    """Two interleaving half circles, labels -1 and +1, with Gaussian noise."""
    rng = random.Random(seed)
    points, labels = [], []
    for i in range(n):
        t = math.pi * (i // 2) / (n // 2 - 1)
        if i % 2 == 0:
            x, y, label = math.cos(t), math.sin(t), -1
        else:
            x, y, label = 1 - math.cos(t), 0.5 - math.sin(t), 1
        points.append((x + rng.gauss(0, noise), y + rng.gauss(0, noise)))
        labels.append(label)
    return points, labels


def loss(model: MLP, points: list[tuple[float, float]], labels: list[int]) -> tuple[Value, float]:
    """micrograd's loss: mean hinge loss + 1e-4 * sum of squared parameters; and the accuracy."""
    scores = [model(list(p)) for p in points]
    margins = [(1 + -label * score).relu() for label, score in zip(labels, scores, strict=True)]  # type: ignore[operator]
    data_loss = sum(margins, Value(0.0, requires_grad=False)) * (1.0 / len(margins))
    reg_loss = 1e-4 * sum((p * p for p in model.parameters()), Value(0.0, requires_grad=False))
    correct = [(label > 0) == (score.data > 0) for label, score in zip(labels, scores, strict=True)]  # type: ignore[union-attr]
    return data_loss + reg_loss, sum(correct) / len(correct)


def train(steps: int = 100, seed: int = 1337) -> tuple[MLP, list[float], list[float], float]:
    points, labels = make_moons()
    model = MLP(2, [16, 16, 1], seed=seed)
    losses, accuracies = [], []
    start = time.perf_counter()
    for k in range(steps):
        total_loss, accuracy = loss(model, points, labels)
        model.zero_grad()
        total_loss.backward()
        learning_rate = 1.0 - 0.9 * k / 100
        with vjpgrad.no_grad():
            for p in model.parameters():
                p.data -= learning_rate * p.grad
        losses.append(total_loss.data)
        accuracies.append(accuracy)
        progress = f"step {k + 1:3d}/{steps}  loss {total_loss.data:.4f}  accuracy {accuracy:6.1%}"
        if sys.stdout.isatty():  # one line that updates in place
            print(f"\r{progress}", end="" if k + 1 < steps else "\n", flush=True)
        else:
            print(progress)
    return model, losses, accuracies, (time.perf_counter() - start) / steps


def picture(model: MLP, losses: list[float], path: str) -> bool:
    """The decision boundary and the loss curve, if matplotlib is installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(
            "For the picture of the decision boundary: "
            "pip install matplotlib (or pip install -e '.[plot]' in your clone of vjpgrad)"
        )
        return False
    points, labels = make_moons()
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    grid = [(-1.5 + 4.0 * i / 59, -1.25 + 2.75 * j / 59) for j in range(60) for i in range(60)]
    with vjpgrad.no_grad():
        scores = [model(list(g)).data > 0 for g in grid]  # type: ignore[union-attr]
    xs = [[-1.5 + 4.0 * i / 59 for i in range(60)] for _ in range(60)]
    ys = [[-1.25 + 2.75 * j / 59] * 60 for j in range(60)]
    zs = [[float(scores[j * 60 + i]) for i in range(60)] for j in range(60)]
    left.contourf(xs, ys, zs, levels=[-0.5, 0.5, 1.5], colors=["#c6dbef", "#f4c7c3"], alpha=0.8)
    left.scatter([p[0] for p in points], [p[1] for p in points], c=labels, cmap="coolwarm", edgecolors="k", s=25)
    left.set_title("MLP(2, [16, 16, 1]) decision boundary")
    right.plot(range(1, len(losses) + 1), losses)
    right.set_xlabel("step")
    right.set_ylabel("loss")
    right.set_yscale("log")
    right.set_title("training loss")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"wrote {path}")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--out", default="moons.png")
    args = parser.parse_args(argv)
    model, losses, accuracies, per_step = train(args.steps)
    print(f"final loss {losses[-1]:.4f}, training accuracy {accuracies[-1]:.0%}, {per_step * 1000:.1f} ms per step")
    picture(model, losses, args.out)
    return 0 if accuracies[-1] == 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
