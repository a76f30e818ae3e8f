"""Case 4 of the Stack Overflow answer: two backward passes, and gradients accumulate.

One pass gives 3, 4, 1; the second adds the same again: 6, 8, 2. Zero them between passes
(`a.zero_grad()`) when you want fresh gradients.
"""

from vjpgrad import Value, log
from vjpgrad.core.format import format_scalar  # prints a number as PyTorch prints a 0-d tensor

a = Value(1.0)
b = Value(1.0)
c = Value(1.0)
y = 3 * a + 2 * b * b + log(c)

y.backward(retain_graph=True)
y.backward()

print(format_scalar(a.grad))  # documented: tensor(6.)
print(format_scalar(b.grad))  # documented: tensor(8.)
print(format_scalar(c.grad))  # documented: tensor(2.)
