"""Exercise 7: case 3, or why a one-element output seeded with three numbers gives 3.3003.

Case 3 of the Stack Overflow answer to "Pytorch, what are the gradient arguments"
(https://stackoverflow.com/questions/43451125) makes a, b and c of ONE element each, then

    y = 3*a + 2*b*b + torch.log(c)
    y.backward(torch.FloatTensor([0.1, 1.0, 0.0001]))

and prints a.grad = [3.3003]: three seeds for one output. Find out why, then do the same with
your engine. Check it with

    vjpgrad course check . 7
"""

from engine import Value


def example_3(a, b, c, seeds):
    """(a.grad, b.grad, c.grad), three floats, after the reverse pass PyTorch's engine runs for
    y = 3*a + 2*b*b + log(c) of one element (a, b, c are numbers, c > 0) seeded with ``seeds``
    (a list of any length), computed with your engine.
    """
    raise NotImplementedError("exercise 7: write example_3")
