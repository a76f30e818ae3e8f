"""What are the gradient arguments? Case 1 of the Stack Overflow answer, with the Jacobian built explicitly.

y = 3a + 2b*b + log(c) maps the nine numbers (a, b, c) to three. Its Jacobian J is 3 × 9.
`y.backward(v)` never builds J: it computes v^T J directly. Here we build J with
`vjpgrad.jacobian`, multiply by v by hand, and see that the product is exactly what
`a.grad`, `b.grad` and `c.grad` hold after `y.backward(v)`.
"""

from vjpgrad import Vector, jacobian, log


def f(a, b, c):
    return 3 * a + 2 * b * b + log(c)


a0, b0, c0 = [1.0, 2.0, 3.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]
v = [0.1, 1.0, 0.0001]

# J with respect to each input: three 3 × 3 blocks, diagonal because y[i] uses only a[i], b[i], c[i]
blocks = jacobian(f, argnums=(0, 1, 2))(a0, b0, c0)
for name, block in zip("abc", blocks, strict=True):
    print(f"dy/d{name} =")
    for row in block:
        print("   ", "  ".join(f"{x:8.4f}" for x in row))

# v^T J, by hand
vjp_by_hand = {}
for name, block in zip("abc", blocks, strict=True):
    vjp_by_hand[name] = [sum(v[i] * block[i][j] for i in range(3)) for j in range(3)]

# what backward computes
a, b, c = Vector(a0), Vector(b0), Vector(c0)
f(a, b, c).backward(v)
by_backward = {"a": a.grad.data, "b": b.grad.data, "c": c.grad.data}

print()
print(f"v = {v}")
for name in "abc":
    print(f"v^T dy/d{name} = {vjp_by_hand[name]}")
    print(f"{name}.grad       = {by_backward[name]}")
    pairs = zip(vjp_by_hand[name], by_backward[name], strict=True)
    assert all(abs(x - y) <= 1e-15 * max(1.0, abs(x)) for x, y in pairs)
print("\nbackward(v) gives exactly v^T J: the gradient arguments are the v of a vector-Jacobian product.")
