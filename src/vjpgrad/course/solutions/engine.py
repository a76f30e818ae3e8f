"""The reference solution of exercises 2 to 5: a micrograd-shaped engine with an iterative
topological order and PyTorch's accumulation over passes."""

import math


class Value:
    """A scalar that records the graph of the computation that made it."""

    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0.0
        self._backward = lambda: None  # a leaf has no operands to hand its gradient to
        self._prev = set(_children)
        self._op = _op

    # ---- exercise 2: + and * record the graph ---------------------------------------------

    def __add__(self, other):
        """self + other: a new Value whose _backward adds out.grad x 1 into each operand's grad."""
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        """self * other: a new Value whose _backward adds out.grad x (the other operand) into each grad."""
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    # ---- exercise 3: more operations, one local derivative each ----------------------------

    def __pow__(self, k):
        """self ** k, for a number k (an int or a float, not a Value)."""
        assert isinstance(k, (int, float)), "only a number exponent"
        out = Value(self.data**k, (self,), f"**{k}")

        def _backward():
            self.grad += k * self.data ** (k - 1) * out.grad

        out._backward = _backward
        return out

    def exp(self):
        """e ** self."""
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad

        out._backward = _backward
        return out

    def log(self):
        """The natural logarithm of self (self.data > 0)."""
        out = Value(math.log(self.data), (self,), "log")

        def _backward():
            self.grad += out.grad / self.data

        out._backward = _backward
        return out

    def tanh(self):
        """The hyperbolic tangent of self."""
        out = Value(math.tanh(self.data), (self,), "tanh")

        def _backward():
            self.grad += (1 - out.data**2) * out.grad

        out._backward = _backward
        return out

    def relu(self):
        """max(self, 0); its derivative at 0 is 0, as PyTorch's and micrograd's."""
        out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")

        def _backward():
            self.grad += (self.data > 0) * out.grad

        out._backward = _backward
        return out

    # ---- exercises 4 and 5: the reverse pass -------------------------------------------------

    def topological_order(self):
        """Every Value this one was computed from, itself included, each listed after its operands.

        Exercise 4: build it with a loop, not with recursion (a chain of 10,000 links must work).
        """
        order, seen = [], set()
        stack = [(self, False)]  # (node, whether its operands are listed already)
        while stack:
            node, operands_listed = stack.pop()
            if operands_listed:
                order.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                stack.extend((child, False) for child in node._prev if child not in seen)
        return order

    def backward(self):
        """Fill .grad of every Value this one was computed from with d(self)/d(that Value).

        Exercise 4: set self.grad to 1, then call each node's _backward, the output first, in the
        reverse of the topological order. Exercise 5 comes back here: a second backward() must add
        the same gradients again to the leaves (the values made directly, not by an operation).
        """
        order = self.topological_order()
        for node in order:  # exercise 5: this pass's gradients only, in the intermediate nodes
            if node._prev:
                node.grad = 0.0
        self.grad += 1.0  # exercise 5: += so that a leaf output accumulates too (exercise 4: = 1.0 will do)
        for node in reversed(order):
            node._backward()

    def zero_grad(self):
        """Exercise 5: set .grad of this Value and of every Value it was computed from to 0."""
        for node in self.topological_order():
            node.grad = 0.0

    # ---- written for you: every other operator, from the ones above ------------------------

    def __neg__(self):  # -self
        return self * -1

    def __radd__(self, other):  # other + self
        return self + other

    def __sub__(self, other):  # self - other
        return self + (-other)

    def __rsub__(self, other):  # other - self
        return other + (-self)

    def __rmul__(self, other):  # other * self
        return self * other

    def __truediv__(self, other):  # self / other
        return self * other**-1

    def __rtruediv__(self, other):  # other / self
        return other * self**-1

    def __repr__(self):
        return f"Value(data={self.data}, grad={self.grad})"
