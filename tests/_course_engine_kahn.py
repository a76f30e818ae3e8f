"""A second engine of micrograd's shape, written independently of the course's reference solution,
for tests/test_course.py: a correct engine written otherwise must pass the engine exercises too.

It keeps micrograd's contract (``_backward`` adds ``.grad`` x local derivative into each operand's
``.grad``) and differs from the reference everywhere else: each node stores its local derivatives at
forward time and ``_backward`` is a method that reads them, ``_prev`` is a tuple that keeps an operand
used twice twice, the reverse pass is Kahn's algorithm (a node runs once every use of it has handed
it its share), a pass sets every gradient aside, runs from zero and adds them back (so intermediate
nodes accumulate over passes too, as vjpgrad's), and tanh's derivative is written (1 - t)(1 + t).
"""

import math


class Value:
    def __init__(self, data, _children=(), _op="", _locals=()):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_children)
        self._op = _op
        self._locals = tuple(_locals)  # d self / d each of _prev, in order

    def _backward(self):
        for child, local in zip(self._prev, self._locals, strict=True):
            child.grad += local * self.grad

    @staticmethod
    def _lift(x):
        return x if isinstance(x, Value) else Value(x)

    def __add__(self, other):
        other = self._lift(other)
        return Value(self.data + other.data, (self, other), "+", (1.0, 1.0))

    def __mul__(self, other):
        other = self._lift(other)
        return Value(self.data * other.data, (self, other), "*", (other.data, self.data))

    def __pow__(self, k):
        return Value(self.data**k, (self,), f"**{k}", (k * self.data ** (k - 1),))

    def exp(self):
        e = math.exp(self.data)
        return Value(e, (self,), "exp", (e,))

    def log(self):
        return Value(math.log(self.data), (self,), "log", (1 / self.data,))

    def tanh(self):
        t = math.tanh(self.data)
        return Value(t, (self,), "tanh", ((1 - t) * (1 + t),))

    def relu(self):
        return Value(max(self.data, 0.0), (self,), "relu", (1.0 if self.data > 0 else 0.0,))

    def _reached(self):
        """Every node this one depends on, and how many uses of each the pass will meet."""
        uses = {self: 0}
        todo = [self]
        while todo:
            node = todo.pop()
            for child in node._prev:
                if child not in uses:
                    uses[child] = 0
                    todo.append(child)
                uses[child] += 1
        return uses

    def backward(self):
        uses = self._reached()
        kept = {node: node.grad for node in uses}  # set aside: this pass starts from zero
        for node in uses:
            node.grad = 0.0
        self.grad = 1.0
        ready = [self]
        while ready:  # Kahn: a node is ready once every use of it has handed it its share
            node = ready.pop()
            node._backward()
            for child in node._prev:
                uses[child] -= 1
                if uses[child] == 0:
                    ready.append(child)
        for node, grad in kept.items():
            node.grad += grad

    def zero_grad(self):
        for node in self._reached():
            node.grad = 0.0

    def __neg__(self):
        return self * -1

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * other**-1

    def __rtruediv__(self, other):
        return other * self**-1
