"""Exercise 13: sigmoid on your engine's Values.

Check it with

    vjpgrad course check . 13
"""


def sigmoid(x):
    """1 / (1 + exp(-x)) for a Value x, as a Value that backward() can go through."""
    raise NotImplementedError("exercise 13: write sigmoid")
