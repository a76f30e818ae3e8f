"""The seed's Example 4: two backward passes, and gradients accumulate.

One pass gives 3, 4, 1; the second adds the same again: 6, 8, 2. Zero them between passes
(`a.zero_grad()`) when you want fresh gradients.
"""

from vjpgrad import Value, log

a = Value(1.0)
b = Value(1.0)
c = Value(1.0)
y = 3 * a + 2 * b * b + log(c)

y.backward(retain_graph=True)
y.backward()

print(a.grad)  # 6.0 (PyTorch printed the 0-d tensor as tensor(6.))
print(b.grad)  # 8.0 (PyTorch: tensor(8.))
print(c.grad)  # 2.0 (PyTorch: tensor(2.))
