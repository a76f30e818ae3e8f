"""The course's exercises, in order: the one place that says what each is, where it is written and how it is checked.

Each exercise names the student's files it is written in (written by ``vjpgrad course init`` from
``templates/``), the parts of them it asks for (what ``vjpgrad course solution N`` shows from
``solutions/``), its check (a pytest file in ``checks/``) and a hint. Adding an exercise is adding a
row here and its three files; docs/course/instructor.md says how.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Exercise:
    """One exercise: what to write, where, how it is checked, and a hint for when one is stuck."""

    number: int
    slug: str
    title: str
    files: tuple[str, ...]
    """The student's files it is written in, e.g. ``("engine.py",)``."""
    parts: tuple[str, ...]
    """What it asks for, as names in the first of its files: ``"central_difference"``, ``"Value.__add__"``;
    none when it is the whole file."""
    hint: str
    stretch: bool = False
    """A stretch exercise is shown and checked but not needed for the course to be done."""

    @property
    def check(self) -> str:
        """The file of ``checks/`` that grades it."""
        return f"check_{self.number:02d}_{self.slug.replace('-', '_')}.py"

    @property
    def label(self) -> str:
        """The title, marked when the exercise is a stretch."""
        return self.title + (" (stretch)" if self.stretch else "")

    @property
    def heading(self) -> str:
        return f"{self.number}. {self.label}"


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        1,
        "central-differences",
        "central differences, and why the step size matters",
        ("derivatives.py",),
        ("central_difference", "step_sizes"),
        "f'(x) is about (f(x + h) - f(x - h)) / (2h): one step each side, divided by the distance between the "
        "two points, which is 2h. Only the argument `arg` moves; the others stay as they are. For the step "
        "sizes, print the error |central_difference(math.exp, 1.0, h=h) - math.e| for h = 1e-1, 1e-2, ... 1e-14: "
        "it falls as h shrinks (the curve is nearly straight over a short step) until rounding takes over "
        "(f(x+h) - f(x-h) subtracts two nearly equal numbers, and each carries an error of about 1e-16).",
    ),
    Exercise(
        2,
        "add-mul",
        "+ and * that record the graph, with their backward closures",
        ("engine.py",),
        ("Value.__add__", "Value.__mul__"),
        "Make out = Value(self.data + other.data, (self, other), '+'), then define a function _backward() that "
        "adds out.grad times the local derivative into each operand's grad, and store it as out._backward. "
        "The local derivative of a + b is 1 for both; of a * b it is b for a and a for b. Add with +=, never "
        "assign with =: in a * a both operands are the same Value, and each use must add its share.",
    ),
    Exercise(
        3,
        "more-ops",
        "**, exp, log, tanh and relu, with their local derivatives",
        ("engine.py",),
        ("Value.__pow__", "Value.exp", "Value.log", "Value.tanh", "Value.relu"),
        "Each is one operand and one local derivative, added into self.grad times out.grad: "
        "d/dx x**k = k * x**(k - 1); d/dx exp(x) = exp(x), which is out.data; d/dx log(x) = 1 / x; "
        "d/dx tanh(x) = 1 - tanh(x)**2, which is 1 - out.data**2; relu(x) = max(x, 0) has derivative 1 where "
        "x > 0 and 0 elsewhere (0 at x = 0 too, as PyTorch and micrograd say).",
    ),
    Exercise(
        4,
        "backward",
        "the topological order and backward(), with a loop: 10,000 links",
        ("engine.py",),
        ("Value.topological_order", "Value.backward"),
        "A node's _backward may run only once its gradient is complete, that is after every node that uses it "
        "has run. List the nodes so that each comes after its operands (a depth-first walk that appends a node "
        "once all its operands are listed), then call _backward on them in reverse, after setting the "
        "output's grad to 1. Walk with a loop and your own stack of (node, operands_done) pairs: a recursive "
        "walk needs one Python frame per link and Python stops near 1,000.",
    ),
    Exercise(
        5,
        "accumulation",
        "two passes are twice one (Example 4), and zero_grad",
        ("engine.py",),
        ("Value.backward", "Value.zero_grad"),
        "A second backward() must add the same gradients again to the leaves, as PyTorch does: Example 4 gives "
        "6, 8, 2 after two passes, twice 3, 4, 1. An intermediate node still holds the first pass's gradient, so "
        "the second pass hands its operands old + new: start each pass with every intermediate node's grad at "
        "0 (the leaves keep theirs, that is the accumulation), then add 1 to the output's grad. zero_grad() "
        "sets the grad of the value and of every value it was computed from to 0.",
    ),
    Exercise(
        6,
        "seeds",
        "the seed of y.backward(v): Example 1's VJP, by hand and by engine",
        ("seeds.py",),
        ("vjp_by_hand", "vjp_with_engine"),
        "y.backward(v) gives each input the gradient of sum_i v[i] * y[i]. Here y[i] = 3a[i] + 2b[i]**2 + "
        "log(c[i]) depends only on a[i], b[i], c[i], so the Jacobian is diagonal and the VJP is v[i] times "
        "the local derivatives: 3, 4b[i], 1/c[i]. With your engine, build the scalar L = sum of v[i] * y[i] "
        "and call L.backward() once.",
    ),
    Exercise(
        7,
        "example-3",
        "Example 3: one output, three seeds, and 3.3003",
        ("example_3.py",),
        ("example_3",),
        "In Example 3 the output has one element but the seed has three: PyTorch's engine reads it as the "
        "output broadcast to three copies, y[0] = y[1] = y[2] = y, so the VJP is sum_i seeds[i] * y: the seeds "
        "add up. dy/da = 3 everywhere, so a.grad = 3 * (0.1 + 1.0 + 0.0001) = 3.3003. With your engine: "
        "build the sum of seeds[i] * y and call backward() on it.",
    ),
    Exercise(
        8,
        "softmax-vjp",
        "softmax's VJP without building its Jacobian",
        ("softmax.py",),
        ("softmax_vjp",),
        "With s = softmax(x), ds[i]/dx[j] = s[i] * (delta_ij - s[j]). So (v^T J)[j] = sum_i v[i] s[i] "
        "(delta_ij - s[j]) = s[j] * (v[j] - sum_i v[i] s[i]): one dot product, then one line per element. "
        "Subtract max(x) before exp so that large inputs do not overflow; it does not change softmax.",
    ),
    Exercise(
        9,
        "gradient-checker",
        "a gradient checker that catches a wrong rule",
        ("gradient_checker.py",),
        ("wrong_gradients",),
        "For each input i, move only xs[i] by +h and -h (your central_difference from exercise 1 does this "
        "with arg=i), and compare with grads[i]: it is wrong when |grads[i] - numeric| > tol * max(1, "
        "|numeric|). Return the list of the wrong positions, in order; an empty list means all agree.",
    ),
    Exercise(
        10,
        "custom-op",
        "a derivative rule for vjpgrad: softsign with custom_op",
        ("softsign.py",),
        (),
        "softsign(x) = x / (1 + |x|). For x > 0 it is x / (1 + x), whose derivative is 1 / (1 + x)**2; for "
        "x < 0 it is x / (1 - x), derivative 1 / (1 - x)**2. Both are 1 / (1 + |x|)**2. Write it with "
        "operators and abs() so that it also works on Values: then vjpgrad differentiates your rule too.",
    ),
    Exercise(
        11,
        "mlp",
        "an MLP trained on the two moons with your engine",
        ("mlp.py",),
        ("Neuron.__call__", "train"),
        "A neuron is tanh(w . x + b) (or relu, or nothing for the last layer). Train as micrograd's demo does: "
        "the loss is the mean of relu(1 - label * score) over the points, plus 1e-4 times the sum of the "
        "squared parameters; each step zero the gradients, call backward(), and move every parameter by "
        "-learning_rate * p.grad, with a learning rate that falls from 1.0 to 0.1. MLP(2, [6, 6, 1]) and "
        "60 steps are enough; keep it under a minute.",
    ),
    Exercise(
        12,
        "straight-line",
        "Example 1's reverse pass as straight-line code, as vjpgrad.compile writes it",
        ("straight_line.py",),
        ("example_1",),
        "Write the forward pass one operation a line (t1 = 3 * a, t2 = 2 * b, t3 = t2 * b, ...), then the "
        "reverse pass one line per edge, from the output back: g_y = v, g_t4 = g_y, ... and each gradient "
        "of a node used twice is a sum. When it passes, compare it with print(vjpgrad.compile(f).source) for "
        "f = lambda a, b, c: 3*a + 2*b*b + vjpgrad.log(c), called on Values and backward(v).",
        stretch=True,
    ),
)


def exercise(number: int) -> Exercise:
    """The exercise numbered ``number``; ``ValueError`` naming the range when there is none."""
    for ex in EXERCISES:
        if ex.number == number:
            return ex
    raise ValueError(f"there is no exercise {number}: they are numbered 1 to {len(EXERCISES)} (vjpgrad course list)")


def student_files() -> tuple[str, ...]:
    """Every file ``init`` writes, in the order the exercises need them."""
    return tuple(dict.fromkeys(name for ex in EXERCISES for name in ex.files))


def folder(name: str) -> Path:
    """One of the package's data folders: ``templates``, ``checks`` or ``solutions``.

    A path on disk, not an importlib resource: pytest runs the checks as files."""
    return Path(__file__).resolve().parent / name
