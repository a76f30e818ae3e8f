"""The reference solution of exercise 9."""

from derivatives import central_difference


def wrong_gradients(f, xs, grads, h=1e-6, tol=1e-4):
    wrong = []
    for i, g in enumerate(grads):
        numeric = central_difference(f, *xs, arg=i, h=h)
        if abs(g - numeric) > tol * max(1.0, abs(numeric)):
            wrong.append(i)
    return wrong
