"""Case 3 of the Stack Overflow answer: one-element inputs, a three-element seed.

`torch.empty` returned whatever was in memory; it was zeros, and `Vector.empty` always gives
zeros, so this reproduces the documented output every time. y has one element, so the
three seeds are summed into it (the output was broadcast): v = 0.1 + 1.0 + 0.0001 = 1.1001.
    a.grad = 3 * 1.1001 = 3.3003    b.grad = 4 * 0 * 1.1001 = 0    c.grad = 1.1001 / 0 = inf
PyTorch summed such a seed before version 1.3 and refuses it now ("Mismatch in shape"), so
vjpgrad warns when it sums one; here the summing is the point, and the warning is silenced.
"""

import warnings

from vjpgrad import SummedSeedWarning, Vector, log

a = Vector.empty(1)
b = Vector.empty(1)
c = Vector.empty(1)

y = 3 * a + 2 * b * b + log(c)  # log(0) = -inf, so y = [-inf]

gradients = [0.1, 1.0, 0.0001]
with warnings.catch_warnings():  # "the seed has 3 numbers for an output of one number, so they were summed..."
    warnings.simplefilter("ignore", SummedSeedWarning)
    y.backward(gradients)

print(a.grad)  # documented: tensor([3.3003])
print(b.grad)  # documented: tensor([0.])
print(c.grad)  # documented: tensor([inf])
