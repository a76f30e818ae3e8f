"""The seed's Example 2: scalars and no seed, so backward() seeds y with 1.0.

The gradients are the plain derivatives at the point: dy/da = 3, dy/db = 4b = 4,
dy/dc = 1/c = 10.
"""

from vjpgrad import Value, log

a = Value(0.1)
b = Value(1.0)
c = Value(0.1)
y = 3 * a + 2 * b * b + log(c)

y.backward()

print(a.grad)  # 3.0 (PyTorch printed the 0-d tensor as tensor(3.))
print(b.grad)  # 4.0 (PyTorch: tensor(4.))
print(c.grad)  # 10.0 (PyTorch: tensor(10.))
