"""Case 2 of the Stack Overflow answer: scalars and no seed, so backward() seeds y with 1.0.

The gradients are the plain derivatives at the point: dy/da = 3, dy/db = 4b = 4,
dy/dc = 1/c = 10.
"""

from vjpgrad import Value, log
from vjpgrad.core.format import format_scalar  # prints a number as PyTorch prints a 0-d tensor

a = Value(0.1)
b = Value(1.0)
c = Value(0.1)
y = 3 * a + 2 * b * b + log(c)

y.backward()

print(format_scalar(a.grad))  # documented: tensor(3.)
print(format_scalar(b.grad))  # documented: tensor(4.)
print(format_scalar(c.grad))  # documented: tensor(10.)
