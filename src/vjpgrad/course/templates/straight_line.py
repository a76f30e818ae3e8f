"""Exercise 12 (stretch): case 1's reverse pass as straight-line code, as vjpgrad.compile writes it.

For numbers a, b, c and a seed v, y = 3*a + 2*b*b + log(c). Write the forward pass one
operation a line and then the reverse pass one line per edge of the graph, from the output
back to the inputs: no loops, no engine, no function calls but math.log. When it passes,
compare it with the code vjpgrad writes:

    import vjpgrad
    f = vjpgrad.compile(lambda a, b, c: 3 * a + 2 * b * b + vjpgrad.log(c))
    y = f(vjpgrad.Value(1.0), vjpgrad.Value(2.0), vjpgrad.Value(3.0))
    y.backward(0.5)
    print(f.source)

Check it with

    vjpgrad course check . 12
"""

import math


def example_1(a, b, c, v):
    """(y, a.grad, b.grad, c.grad) after y.backward(v), four floats, in straight-line code."""
    raise NotImplementedError("exercise 12: write example_1")
