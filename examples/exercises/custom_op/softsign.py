"""Exercise: the derivative rule of softsign(x) = x / (1 + |x|).

Replace the NotImplementedError with d softsign(x) / dx. Write it with operators and
vjpgrad's functions (abs, vjpgrad.exp...), not math's, so that it also works on Values and
second derivatives come out right. Check it with:

    VJPGRAD_EXERCISE=exercise pytest examples/exercises/custom_op
"""

import vjpgrad


@vjpgrad.custom_op
def softsign(x):
    return x / (1 + abs(x))


@softsign.derivative
def _(x, out):
    raise NotImplementedError("write d/dx softsign(x) here")
