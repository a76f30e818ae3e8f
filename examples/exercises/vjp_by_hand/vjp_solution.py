"""Solution: y[i] depends only on a[i], b[i], c[i], so J is diagonal and v^T J is v times
the local derivatives: dy/da = 3, dy/db = 4b, dy/dc = 1/c."""


def vjp_example_1(a, b, c, v):
    grad_a = [vi * 3 for vi in v]
    grad_b = [vi * 4 * bi for vi, bi in zip(v, b, strict=True)]
    grad_c = [vi / ci for vi, ci in zip(v, c, strict=True)]
    return grad_a, grad_b, grad_c
