"""The reference solution of exercise 8.

With s = softmax(x), ds[i]/dx[j] = s[i] * (delta_ij - s[j]), so
(v^T J)[j] = sum_i v[i] s[i] (delta_ij - s[j]) = s[j] * (v[j] - sum_i v[i] s[i]).
"""

import math


def softmax_vjp(x, v):
    m = max(x)
    exps = [math.exp(xi - m) for xi in x]
    total = sum(exps)
    s = [e / total for e in exps]
    dot = sum(vi * si for vi, si in zip(v, s, strict=True))
    return [si * (vi - dot) for si, vi in zip(s, v, strict=True)]
