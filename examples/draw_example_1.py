"""Draw case 1 of the Stack Overflow answer after y.backward([0.1, 1.0, 0.0001]) into example_1.svg
in the current folder (or the file named first on the command line: python draw_example_1.py g.svg).

With the graphviz Python package, pip install graphviz (or pip install -e '.[viz]' in your clone of
vjpgrad), and Graphviz's dot program (apt-get install graphviz), the picture is Graphviz's drawing;
without them, vjpgrad draws it in pure Python.
"""

import sys
from pathlib import Path

from vjpgrad import Vector, draw, log

a = Vector([1.0, 2.0, 3.0])
b = Vector([3.0, 4.0, 5.0])
c = Vector([6.0, 7.0, 8.0])
for name, vector in (("a", a), ("b", b), ("c", c)):
    for i, value in enumerate(vector):
        value.label = f"{name}[{i}]"

y = 3 * a + 2 * b * b + log(c)
for i, value in enumerate(y):
    value.label = f"y[{i}]"
gradients = [0.1, 1.0, 0.0001]
y.backward(gradients)

target = Path(sys.argv[1] if len(sys.argv) > 1 else "example_1.svg")
print(draw(y, target, seed=gradients))
