"""Exercise: the gradient arguments, by hand.

For y = 3*a + 2*b*b + log(c) (elementwise, vectors of equal length) and a seed v, return
the lists that y.backward(v) leaves in a.grad, b.grad and c.grad, computed with plain
arithmetic: no vjpgrad. Check it with:

    VJPGRAD_EXERCISE=exercise pytest examples/exercises/vjp_by_hand
"""


def vjp_example_1(a, b, c, v):
    """(a.grad, b.grad, c.grad) after y.backward(v), as three lists of floats."""
    raise NotImplementedError("compute v^T J for each input")
