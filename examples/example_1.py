"""Case 1 of the Stack Overflow answer: a vector output seeded with gradients = [0.1, 1.0, 0.0001].

Each x.grad[i] becomes gradients[i] * dy[i]/dx[i] (y[i] depends only on a[i], b[i], c[i]):
    a.grad = v * 3       b.grad = v * 4b       c.grad = v / c
"""

from vjpgrad import Vector, log

a = Vector([1.0, 2.0, 3.0])
b = Vector([3.0, 4.0, 5.0])
c = Vector([6.0, 7.0, 8.0])

y = 3 * a + 2 * b * b + log(c)
gradients = [0.1, 1.0, 0.0001]
y.backward(gradients, retain_graph=True)

print(a.grad)  # documented: tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])
print(b.grad)  # documented: tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])
print(c.grad)  # documented: tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])
