"""vmap(grad(f)) raises an internal IndexError where eager grad(f) works: three copies of a
block (a neuron ending in ** 0, whose gradient is masked), the third reading the first's weights."""
import numpy as np
from vjpgrad import Value, grad, vmap

def f(p, x):
    h = []
    for j in range(3):
        w = p[3 * j % 6: 3 * j % 6 + 3]          # neuron 2 reads p[0:3] again, as neuron 0 does
        t = w[0] * x[0] + w[1] * x[1] + w[2] * x[2]
        h.append(t ** 0)                          # also fails with t ** 0.0 * 2.0
    return h[0] + h[1] + h[2]

p = [0.5, -0.25, 0.75, 1.5, -1.0, 2.0]
xs = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
print("eager:", [grad(f)(p, [Value(v, requires_grad=False) for v in x]) for x in xs])
v = vmap(grad(f), in_dims=(None, 0))
try:
    print("vmap: ", v(p, xs))
except Exception as e:
    print("vmap raised", type(e).__name__ + ":", e)
    print([l.strip() for l in v.source.splitlines() if "_row(" in l or "_stack_as" in l or "gf0_4 =" in l])
