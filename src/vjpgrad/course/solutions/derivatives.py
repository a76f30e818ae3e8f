"""The reference solution of exercise 1."""


def central_difference(f, *xs, arg=0, h=1e-6):
    """The partial derivative of f(*xs) with respect to xs[arg], by central differences."""
    up = list(xs)
    down = list(xs)
    up[arg] += h
    down[arg] -= h
    return (f(*up) - f(*down)) / (2 * h)


def step_sizes():
    """(too_small, good, too_large) for central_difference(math.exp, 1.0, h=h).

    The error has two parts. The curve: the central difference is off by about h**2 / 6 * f'''(x),
    which falls as h shrinks. Rounding: f(x+h) and f(x-h) each carry an error of about 1e-16 * f(x),
    and their difference is divided by 2h, so it grows as 1e-16 / h. The sum is smallest near
    h = 1e-5 (about 1e-10 here); at 1e-12 rounding gives about 1e-4, at 0.1 the curve gives 5e-3.
    """
    return 1e-12, 1e-5, 1e-1
