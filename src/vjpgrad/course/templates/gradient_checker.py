"""Exercise 9: a gradient checker of your own, the tool that catches a wrong derivative rule.

vjpgrad.gradcheck and torch.autograd.gradcheck do this: compare the gradients an engine gives
with central differences, one input at a time. Check yours with

    vjpgrad course check . 9
"""

from derivatives import central_difference


def wrong_gradients(f, xs, grads, h=1e-6, tol=1e-4):
    """The positions i (a list, in order) where grads[i] is not the derivative of f(*xs) with
    respect to xs[i]: where |grads[i] - numeric| > tol * max(1, |numeric|), numeric being the
    central difference. f takes floats and returns a float.
    """
    raise NotImplementedError("exercise 9: write wrong_gradients")
