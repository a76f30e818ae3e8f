"""Typical wrong solutions of the course's exercises, each a small change to the reference solution.

A mistake replaces one piece of one solution file (``old``, which must occur exactly once) with what
a student typically writes (``new``). tests/test_course.py checks each against its exercise: the
exercise must fail, its message must contain every fragment of ``expect`` (the wrong node, edge or
input, and what the mistake usually is) and none of ``forbid`` (what would give the answer away).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mistake:
    name: str
    exercise: int
    file: str
    old: str
    new: str
    expect: tuple[str, ...]
    slow: bool = False
    forbid: tuple[str, ...] = ()


MISTAKES = (
    Mistake(
        "the central difference divided by h, not 2h",
        1,
        "derivatives.py",
        "return (f(*up) - f(*down)) / (2 * h)",
        "return (f(*up) - f(*down)) / h",
        ("central_difference(lambda x: x * x, 3.0) is 12", "6 at x = 3"),
    ),
    Mistake(
        "a one-sided difference, which a small step hides",
        1,
        "derivatives.py",
        "return (f(*up) - f(*down)) / (2 * h)",
        "return (f(*up) - f(*xs)) / h",
        ("central_difference(lambda x: x * x, 3.0, h=0.5) is 6.5", "one-sided"),
        forbid=("f(x - h)",),
    ),
    Mistake(
        "a good step that is too small",
        1,
        "derivatives.py",
        "return 1e-12, 1e-5, 1e-1",
        "return 1e-14, 1e-12, 1e-1",
        ("with h = 1e-12", "within 1e-8"),
    ),
    Mistake(
        "= instead of += in the closure of *",
        2,
        "engine.py",
        "            self.grad += other.data * out.grad\n            other.grad += self.data * out.grad",
        "            self.grad = other.data * out.grad\n            other.grad = self.data * out.grad",
        ("<-- first difference", "(*) handed x1", "do not assign with ="),
    ),
    Mistake(
        "the closure of * written but never attached to out",
        2,
        "engine.py",
        """            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    # ---- exercise 3""",
        """            other.grad += self.data * out.grad

        return out

    # ---- exercise 3""",
        ("<-- first difference", "handed nothing to any operand", "out._backward = _backward"),
    ),
    Mistake(
        "* hands each operand its own number",
        2,
        "engine.py",
        "            self.grad += other.data * out.grad\n            other.grad += self.data * out.grad",
        "            self.grad += self.data * out.grad\n            other.grad += other.data * out.grad",
        ("<-- first difference", "the edge t3 -> t2 (*) handed t2", "check the local derivative of *"),
    ),
    Mistake(
        "+ hands 1, the local derivative alone, without out.grad",
        2,
        "engine.py",
        "            self.grad += out.grad\n            other.grad += out.grad",
        "            self.grad += 1.0\n            other.grad += 1.0",
        ("the edge t2 -> t1 (+) handed t1 1", "local derivative alone", "multiply by out.grad (the chain rule"),
    ),
    Mistake(
        "* hands the other operand's number, without out.grad",
        2,
        "engine.py",
        "            self.grad += other.data * out.grad\n            other.grad += self.data * out.grad",
        "            self.grad += other.data\n            other.grad += self.data",
        ("the edge t1 -> x1 (*) handed x1", "local derivative alone", "multiply by out.grad (the chain rule"),
    ),
    Mistake(
        "* hands out.grad alone, without the local derivative",
        2,
        "engine.py",
        "            self.grad += other.data * out.grad\n            other.grad += self.data * out.grad",
        "            self.grad += out.grad\n            other.grad += out.grad",
        ("the edge t3 -> t2 (*) handed t2 1", "out.grad alone", "multiply out.grad by it (the chain rule)"),
    ),
    Mistake(
        "+ forgets the graph",
        2,
        "engine.py",
        'out = Value(self.data + other.data, (self, other), "+")',
        'out = Value(self.data + other.data, (), "+")',
        ("is not in t", "._prev", "Value(data, (self, other), op)"),
    ),
    Mistake(
        "* forgets to return its result",
        2,
        "engine.py",
        "        out._backward = _backward\n        return out\n\n    # ---- exercise 3",
        "        out._backward = _backward\n\n    # ---- exercise 3",
        ("t1 = x1 * x2 gave None, not a Value (is out returned?)",),
    ),
    Mistake(
        "tanh's derivative written 1 - tanh",
        3,
        "engine.py",
        "self.grad += (1 - out.data**2) * out.grad",
        "self.grad += (1 - out.data) * out.grad",
        ("(tanh) handed x1", "check the local derivative of tanh"),
    ),
    Mistake(
        "exp hands its local derivative, out.data, without out.grad",
        3,
        "engine.py",
        "self.grad += out.data * out.grad",
        "self.grad += out.data",
        ("the edge t1 -> x1 (exp) handed x1", "multiply by out.grad (the chain rule"),
    ),
    Mistake(
        "relu's derivative 1 at 0",
        3,
        "engine.py",
        "self.grad += (self.data > 0) * out.grad",
        "self.grad += (self.data >= 0) * out.grad",
        ("the edge t1 -> x1 (relu) handed x1 1", "check the local derivative of relu"),
    ),
    Mistake(
        "a recursive topological order (micrograd's)",
        4,
        "engine.py",
        """        order, seen = [], set()
        stack = [(self, False)]  # (node, whether its operands are listed already)
        while stack:
            node, operands_listed = stack.pop()
            if operands_listed:
                order.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                stack.extend((child, False) for child in node._prev if child not in seen)
        return order""",
        """        order, seen = [], set()

        def build(node):
            if node not in seen:
                seen.add(node)
                for child in node._prev:
                    build(child)
                order.append(node)

        build(self)
        return order""",
        ("RecursionError", "10,000 links", "with a loop"),
    ),
    Mistake(
        "no topological sort: closures run in the order a breadth-first walk meets the nodes",
        4,
        "engine.py",
        """        order = self.topological_order()
        for node in order:  # exercise 5: this pass's gradients only, in the intermediate nodes
            if node._prev:
                node.grad = 0.0
        self.grad += 1.0  # exercise 5: += so that a leaf output accumulates too (exercise 4: = 1.0 will do)
        for node in reversed(order):
            node._backward()""",
        """        self.grad = 1.0
        queue, seen = [self], {self}
        while queue:
            node = queue.pop(0)
            node._backward()
            for child in node._prev:
                if child not in seen:
                    seen.add(child)
                    queue.append(child)""",
        ("<-- first difference", "the order is not topological"),
    ),
    Mistake(
        "the topological order run as it is, not reversed",
        4,
        "engine.py",
        """        for node in reversed(order):
            node._backward()""",
        """        for node in order:
            node._backward()""",
        ("<-- first difference", "ran every node after its operands", "reversed, the output first"),
        forbid=("the order is not topological",),
    ),
    Mistake(
        "micrograd's second pass: the intermediate nodes keep the first pass's gradients",
        5,
        "engine.py",
        """        for node in order:  # exercise 5: this pass's gradients only, in the intermediate nodes
            if node._prev:
                node.grad = 0.0
        self.grad += 1.0  # exercise 5: += so that a leaf output accumulates too (exercise 4: = 1.0 will do)""",
        """        self.grad = 1.0""",
        ("after the 2nd pass, a.grad is 12 in yours, 6 in vjpgrad", "from the pass before", "set the intermediate"),
    ),
    Mistake(
        "the output's seed set, not added: a leaf output does not accumulate",
        5,
        "engine.py",
        "        self.grad += 1.0  # exercise 5",
        "        self.grad = 1.0  # exercise 5",
        ("x = Value(2.0); x.backward(); x.backward() leaves x.grad at 1", "its seed of 1 too"),
    ),
    Mistake(
        "zero_grad zeroes only the output",
        5,
        "engine.py",
        """        for node in self.topological_order():
            node.grad = 0.0""",
        """        self.grad = 0.0""",
        ("zero_grad(), x1.grad is", "not 0", "must reach every value"),
    ),
    Mistake(
        "the seed forgotten for b (4b, not v * 4b)",
        6,
        "seeds.py",
        "grad_b = [vi * 4 * bi for vi, bi in zip(v, b, strict=True)]",
        "grad_b = [4 * bi for bi in b]",
        ("your gradients differ from vjpgrad's", "b[0]", "<-- wrong"),
    ),
    Mistake(
        "backward() on each output, without its seed",
        6,
        "seeds.py",
        "    total = y[0] * v[0]  # sum_i v[i] * y[i]: its gradient is v^T J\n"
        "    for vi, yi in zip(v[1:], y[1:], strict=True):\n"
        "        total = total + vi * yi\n"
        "    total.backward()",
        "    for yi in y:\n        yi.backward()",
        ("your gradients differ from vjpgrad's", "a[0]", "<-- wrong"),
    ),
    Mistake(
        "the seeds of a one-element output not summed: only the first is used",
        7,
        "example_3.py",
        "    total = seeds[0] * y\n    for s in seeds[1:]:\n        total = total + s * y\n",
        "    total = seeds[0] * y\n",
        ("your gradients differ from vjpgrad's", "a ", "<-- wrong"),
    ),
    Mistake(
        "softmax's VJP with the diagonal of J only",
        8,
        "softmax.py",
        "    dot = sum(vi * si for vi, si in zip(v, s, strict=True))\n"
        "    return [si * (vi - dot) for si, vi in zip(s, v, strict=True)]",
        "    return [si * (1 - si) * vi for si, vi in zip(s, v, strict=True)]",
        ("your gradients differ from vjpgrad's", "x[0]", "<-- wrong"),
    ),
    Mistake(
        "softmax's VJP through the whole Jacobian",
        8,
        "softmax.py",
        "    dot = sum(vi * si for vi, si in zip(v, s, strict=True))\n"
        "    return [si * (vi - dot) for si, vi in zip(s, v, strict=True)]",
        "    n = len(s)\n"
        "    jacobian = [[s[i] * ((i == j) - s[j]) for j in range(n)] for i in range(n)]\n"
        "    return [sum(v[i] * jacobian[i][j] for i in range(n)) for j in range(n)]",
        ("MB at its peak", "1,000 x 1,000"),
    ),
    Mistake(
        "a checker that moves every input at once",
        9,
        "gradient_checker.py",
        "        numeric = central_difference(f, *xs, arg=i, h=h)",
        "        numeric = (f(*[x + h for x in xs]) - f(*[x - h for x in xs])) / (2 * h)",
        ("wrong_gradients returned",),
    ),
    Mistake(
        "a checker with an absolute tolerance only",
        9,
        "gradient_checker.py",
        "if abs(g - numeric) > tol * max(1.0, abs(numeric)):",
        "if abs(g - numeric) > tol:",
        ("exp(x) * y", "wrong_gradients returned [0, 1]", "tol * max(1, |numeric|)"),
    ),
    Mistake(
        "softsign's derivative without the square",
        10,
        "softsign.py",
        "return 1 / (1 + abs(x)) ** 2",
        "return 1 / (1 + abs(x))",
        ("your gradients differ from the expected ones", "x ", "<-- wrong"),
    ),
    Mistake(
        "softsign's rule written with math, which cuts the graph of a second derivative",
        10,
        "softsign.py",
        "return 1 / (1 + abs(x)) ** 2",
        "import math\n\n    return 1 / (1 + math.fabs(x)) ** 2",
        ("float() of a Value: ", "not math.sin(x)", "(softsign.py, line "),
        forbid=("_pytest", "<string>"),  # no line of the checks' process: the student's is named
    ),
    Mistake(
        "the gradients never zeroed between steps",
        11,
        "mlp.py",
        "        loss.zero_grad()\n",
        "",
        ("at the 2nd step", "still held the 1st step's gradient", "Zero every parameter's gradient before each"),
        slow=True,
    ),
    Mistake(
        "b's gradient with one of its two shares",
        12,
        "straight_line.py",
        "    g_b = g_b + g_t2 * 2  # t2 = 2 * b\n",
        "",
        ("your b.grad is", "b is used twice", "the sum of both shares"),
        forbid=("g_", "def ", "vjpgrad.compile wrote"),
    ),
    Mistake(
        "the reverse pass written as a loop",
        12,
        "straight_line.py",
        "    g_b = g_t3 * t2\n    g_b = g_b + g_t2 * 2  # t2 = 2 * b",
        "    g_b = 0.0\n    for term in (g_t3 * t2, g_t2 * 2):\n        g_b = g_b + term",
        ("example_1 has a for loop",),
    ),
)
