"""The reference solution of exercise 13."""


def sigmoid(x):
    return (1 + (-1 * x).exp()) ** -1
