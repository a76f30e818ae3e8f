"""A deliberately wrong rule, the usual slip: the square of the denominator is forgotten."""

import vjpgrad


@vjpgrad.custom_op
def softsign(x):
    return x / (1 + abs(x))


@softsign.derivative
def _(x, out):
    return 1 / (1 + abs(x))
