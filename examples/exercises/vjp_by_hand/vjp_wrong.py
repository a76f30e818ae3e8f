"""A deliberately wrong answer, the usual slip: the seed is forgotten for b (dy/db, not v dy/db)."""


def vjp_example_1(a, b, c, v):
    grad_a = [vi * 3 for vi in v]
    grad_b = [4 * bi for bi in b]
    grad_c = [vi / ci for vi, ci in zip(v, c, strict=True)]
    return grad_a, grad_b, grad_c
