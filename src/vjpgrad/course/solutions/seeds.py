"""The reference solution of exercise 6.

y[i] depends only on a[i], b[i], c[i], so the Jacobian is diagonal and v^T J is v times the
local derivatives: dy/da = 3, dy/db = 4b, dy/dc = 1/c.
"""

from engine import Value


def vjp_by_hand(a, b, c, v):
    grad_a = [vi * 3 for vi in v]
    grad_b = [vi * 4 * bi for vi, bi in zip(v, b, strict=True)]
    grad_c = [vi / ci for vi, ci in zip(v, c, strict=True)]
    return grad_a, grad_b, grad_c


def vjp_with_engine(a, b, c, v):
    a, b, c = ([Value(x) for x in xs] for xs in (a, b, c))
    y = [3 * ai + 2 * bi * bi + ci.log() for ai, bi, ci in zip(a, b, c, strict=True)]
    total = y[0] * v[0]  # sum_i v[i] * y[i]: its gradient is v^T J
    for vi, yi in zip(v[1:], y[1:], strict=True):
        total = total + vi * yi
    total.backward()
    return [x.grad for x in a], [x.grad for x in b], [x.grad for x in c]
