"""Your reverse-mode engine: exercises 2 to 5 of the vjpgrad course.

A Value is a number that remembers how it was computed: the operation (_op), its operands
(_prev) and a closure (_backward) that hands the gradient of the result back to the operands.
This is micrograd's shape (https://github.com/karpathy/micrograd): vjpgrad's checks build the
same graphs in your engine and in vjpgrad and compare every node's gradient.

Each TODO raises NotImplementedError until you write it. Check your work with

    vjpgrad course check          (all exercises)  or  vjpgrad course check . 2  (exercise 2)
    vjpgrad course hint 2         (when you are stuck)
"""

import math  # for exercise 3: math.exp, math.log, math.tanh


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
        raise NotImplementedError("exercise 2: write Value.__add__ and its _backward")

    def __mul__(self, other):
        """self * other: a new Value whose _backward adds out.grad x (the other operand) into each grad."""
        other = other if isinstance(other, Value) else Value(other)
        raise NotImplementedError("exercise 2: write Value.__mul__ and its _backward")

    # ---- exercise 3: more operations, one local derivative each ----------------------------

    def __pow__(self, k):
        """self ** k, for a number k (an int or a float, not a Value)."""
        assert isinstance(k, (int, float)), "only a number exponent"
        raise NotImplementedError("exercise 3: write Value.__pow__ and its _backward")

    def exp(self):
        """e ** self."""
        raise NotImplementedError("exercise 3: write Value.exp and its _backward")

    def log(self):
        """The natural logarithm of self (self.data > 0)."""
        raise NotImplementedError("exercise 3: write Value.log and its _backward")

    def tanh(self):
        """The hyperbolic tangent of self."""
        raise NotImplementedError("exercise 3: write Value.tanh and its _backward")

    def relu(self):
        """max(self, 0); its derivative at 0 is 0, as PyTorch's and micrograd's."""
        raise NotImplementedError("exercise 3: write Value.relu and its _backward")

    # ---- exercises 4 and 5: the reverse pass -------------------------------------------------

    def topological_order(self):
        """Every Value this one was computed from, itself included, each listed after its operands.

        Exercise 4: build it with a loop, not with recursion (a chain of 10,000 links must work).
        """
        raise NotImplementedError("exercise 4: write Value.topological_order")

    def backward(self):
        """Fill .grad of every Value this one was computed from with d(self)/d(that Value).

        Exercise 4: set self.grad to 1, then call each node's _backward, the output first, in the
        reverse of the topological order. Exercise 5 comes back here: a second backward() must add
        the same gradients again to the leaves (the values made directly, not by an operation).
        """
        raise NotImplementedError("exercise 4: write Value.backward")

    def zero_grad(self):
        """Exercise 5: set .grad of this Value and of every Value it was computed from to 0."""
        raise NotImplementedError("exercise 5: write Value.zero_grad")

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
