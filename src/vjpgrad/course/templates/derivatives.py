"""Exercise 1: a derivative by central differences, and why the step size matters.

No autodiff yet: just the definition of the derivative, with a small step h. Check it with

    vjpgrad course check . 1
"""


def central_difference(f, *xs, arg=0, h=1e-6):
    """The partial derivative of f(*xs) with respect to xs[arg], by central differences:
    move xs[arg] by +h and by -h, keep the other arguments, and take the slope between the two.
    """
    raise NotImplementedError("exercise 1: write central_difference")


def step_sizes():
    """Three steps h for central_difference(math.exp, 1.0, h=h), whose exact answer is math.e:
    (too_small, good, too_large). With the good one the error is below 1e-8; with the two
    others it is above 1e-6, for two different reasons. Try a few and print the errors.
    """
    raise NotImplementedError("exercise 1: write step_sizes")
