"""Your own operation: numerically stable softplus and logaddexp, and logsumexp built on them.

The naive log(1 + exp(x)) overflows at x = 1000; the stable forms below do not. Each
operation is a float function plus its derivative rule; the rule is written with vjpgrad's
functions, so it also works on Values and higher derivatives come for free.
"""

import math

import vjpgrad
from vjpgrad import Value, Vector, custom_op, grad, gradcheck


@custom_op
def softplus(x):
    """log(1 + e^x), stable for any x."""
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


@softplus.derivative
def _(x, out):
    return vjpgrad.sigmoid(x)  # d/dx log(1 + e^x)


@custom_op
def logaddexp(x, y):
    """log(e^x + e^y), stable for any x and y."""
    m = max(x, y)
    return m + math.log(math.exp(x - m) + math.exp(y - m))


@logaddexp.derivative
def _(x, y, out):
    return vjpgrad.exp(x - out), vjpgrad.exp(y - out)  # the softmax weights of x and y


def logsumexp(v):
    """log(sum_i e^v[i]): a fold of logaddexp."""
    total = v[0]
    for x in v[1:]:
        total = logaddexp(total, x)
    return total


x = Value(1000.0)
y = softplus(x)
y.backward()
print(f"softplus(1000) = {y.data}, d/dx = {x.grad}")  # 1000.0 and 1.0: no overflow

print(f"softplus''(0.3) = {grad(grad(softplus))(0.3):.6f}")  # sigmoid'(0.3) = 0.244458

v = Vector([1.0, 2.0, 3.0, 1000.0])
lse = logsumexp(v)
lse.backward()
print(f"logsumexp({v.data}) = {lse.data}")
print(f"its gradient, the softmax: {v.grad}")

print("gradcheck:", gradcheck(lambda a, b, c: logsumexp(Vector([a, b, c])), [0.5, -1.0, 2.0]))
