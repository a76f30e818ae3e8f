"""The reference solution of exercise 12: the forward pass, then one line per edge, backwards."""

import math


def example_1(a, b, c, v):
    t1 = 3 * a
    t2 = 2 * b
    t3 = t2 * b
    t4 = t1 + t3
    t5 = math.log(c)
    y = t4 + t5
    g_y = v
    g_t4 = g_y  # y = t4 + t5
    g_t5 = g_y
    g_c = g_t5 / c  # t5 = log(c)
    g_t1 = g_t4  # t4 = t1 + t3
    g_t3 = g_t4
    g_t2 = g_t3 * b  # t3 = t2 * b: b is used twice, in t3 and in t2
    g_b = g_t3 * t2
    g_b = g_b + g_t2 * 2  # t2 = 2 * b
    g_a = g_t1 * 3  # t1 = 3 * a
    return y, g_a, g_b, g_c
