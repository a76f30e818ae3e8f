"""The reference solution of exercise 10.

d/dx x / (1 + |x|) = ((1 + |x|) - x * sign(x)) / (1 + |x|)**2 = 1 / (1 + |x|)**2.
"""

import vjpgrad


@vjpgrad.custom_op
def softsign(x):
    return x / (1 + abs(x))


@softsign.derivative
def _(x, out):
    return 1 / (1 + abs(x)) ** 2
