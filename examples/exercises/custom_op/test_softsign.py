"""Checks the derivative rule of softsign (VJPGRAD_EXERCISE picks exercise, solution or wrong).

vjpgrad differentiates with your rule, so its gradients are labelled "yours" (yours="f").
"""

import importlib
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vjpgrad import grad
from vjpgrad.testing import assert_grad_close, expressions

MODULES = {"exercise": "softsign", "solution": "softsign_solution", "wrong": "softsign_wrong"}
softsign = importlib.import_module(MODULES[os.environ.get("VJPGRAD_EXERCISE", "solution")]).softsign


def test_the_derivative_at_one_is_a_quarter():
    assert_grad_close(softsign, [1.0], expected=[0.25], yours="f")


@pytest.mark.parametrize("x", [-3.0, -0.5, 0.0, 0.25, 2.0])
def test_the_derivative_matches_central_differences(x):
    assert_grad_close(softsign, [x], yours="f")


@given(expressions(["x"]), st.floats(-3, 3))
def test_inside_any_expression(expression, x):
    assert_grad_close(lambda x: softsign(expression(x)), [x], yours="f")


@pytest.mark.parametrize("x", [-2.0, -0.5, 0.5, 2.0])
def test_the_rule_is_differentiable_too(x):
    second = grad(grad(softsign))(x)
    assert_grad_close(lambda x: grad(softsign)(x), [x], expected=[second], yours="f")
    h = 1e-5
    numeric = (grad(softsign)(x + h) - grad(softsign)(x - h)) / (2 * h)
    assert second == pytest.approx(numeric, rel=1e-4)
