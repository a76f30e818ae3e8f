"""Exercise 8: a Jacobian that is not diagonal: the VJP of softmax, without building J.

softmax(x)[i] = exp(x[i]) / sum_j exp(x[j]). Each output depends on every input, so its
Jacobian J is a full n x n matrix. A reverse pass never builds it: it only needs v^T J.
Check it with

    vjpgrad course check . 8
"""

import math


def softmax_vjp(x, v):
    """v^T J for J the Jacobian of softmax at x (two lists of floats of one length), as a list of
    floats, in time and memory proportional to len(x) (n = 2,000 must not build 4 million entries).
    """
    raise NotImplementedError("exercise 8: write softmax_vjp")
