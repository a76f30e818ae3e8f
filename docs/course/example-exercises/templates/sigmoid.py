"""Exercise {{number}}: sigmoid on your engine's Values.

Check it with

    vjpgrad course check . {{number}}
"""


def sigmoid(x):
    """1 / (1 + exp(-x)) for a Value x, as a Value that backward() can go through."""
    raise NotImplementedError("exercise {{number}}: write sigmoid")
