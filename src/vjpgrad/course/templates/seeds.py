"""Exercise 6: what the numbers in y.backward(gradients) are, by hand and with your engine.

In the Stack Overflow question "Pytorch, what are the gradient arguments"
(https://stackoverflow.com/questions/43451125), case 1 computes, for vectors a, b, c,

    y = 3*a + 2*b*b + torch.log(c)
    y.backward(torch.FloatTensor([0.1, 1.0, 0.0001]))

and prints a.grad = [0.3, 3.0, 0.0003]. The seed v = [0.1, 1.0, 0.0001] is the v of the
vector-Jacobian product v^T J: after y.backward(v), a.grad holds d/da of sum_i v[i] * y[i].
Check your work with

    vjpgrad course check . 6
"""

from engine import Value


def vjp_by_hand(a, b, c, v):
    """(a.grad, b.grad, c.grad) after y.backward(v) for y = 3*a + 2*b*b + log(c) (elementwise,
    lists of floats of one length), as three lists of floats, computed with plain arithmetic.
    """
    raise NotImplementedError("exercise 6: write vjp_by_hand")


def vjp_with_engine(a, b, c, v):
    """The same three lists, computed with your engine: make a Value per number, build y[i] for
    each i, then one scalar whose gradient is the VJP, and call backward() once on it.
    """
    raise NotImplementedError("exercise 6: write vjp_with_engine")
