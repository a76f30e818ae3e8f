"""vjpgrad.testing: assert_grad_close, the strategies, and the exercises that use them."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import find, given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector, custom_op
from vjpgrad.testing import Expression, assert_grad_close, expressions, values, vectors

ROOT = Path(__file__).resolve().parent.parent


def test_correct_gradients_pass_against_expected_and_numeric() -> None:
    assert_grad_close(lambda a, b: a * b + a.sin(), [0.5, 2.0], expected=[2.0 + math.cos(0.5), 0.5])
    assert_grad_close(lambda a, b: a * b + a.sin(), [0.5, 2.0])


def test_a_wrong_rule_fails_with_a_table_that_names_the_input() -> None:
    @custom_op
    def square(x: float) -> float:
        return x * x

    @square.derivative
    def _(x: float | Value, out: float | Value) -> float | Value:
        return x  # should be 2x

    with pytest.raises(AssertionError) as failure:
        assert_grad_close(lambda a, b: square(a) + b, [3.0, 1.0])
    lines = str(failure.value).splitlines()
    assert lines[0] == "gradients differ from the numeric ones (atol=1e-06, rtol=0.0001):"
    assert lines[1].split() == ["input", "value", "vjpgrad", "numeric", "difference"]
    assert lines[2].split()[:3] == ["0", "3", "3"]  # input 0 at 3: vjpgrad says 3, the truth is 6
    assert float(lines[2].split()[3]) == pytest.approx(6.0)
    assert lines[2].endswith("<-- wrong")
    assert lines[3].endswith("ok")  # input 1 is fine


def test_a_seed_makes_it_a_vjp_check() -> None:
    def f(a: Value, b: Value) -> Vector:
        return Vector([a * b, a + b])

    assert_grad_close(f, [2.0, 3.0], expected=[0.5 * 3.0 + 2.0, 0.5 * 2.0 + 2.0], seed=[0.5, 2.0])
    assert_grad_close(f, [2.0, 3.0], seed=[0.5, 2.0])
    with pytest.raises(RuntimeError, match=r"implicitly created only for scalar outputs.*pass seed="):
        assert_grad_close(f, [2.0, 3.0])
    with pytest.raises(ValueError, match="seed has length 1 but the output has length 2"):
        assert_grad_close(f, [2.0, 3.0], seed=[1.0])


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="expected has 1 gradients but there are 2 inputs"):
        assert_grad_close(lambda a, b: a * b, [1.0, 2.0], expected=[1.0])
    with pytest.raises(TypeError, match=r"inputs\[0\] must be a real number, got str"):
        assert_grad_close(lambda a: a, ["1"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="f must return a Value, a Vector or a number, got str"):
        assert_grad_close(lambda a: "a", [1.0])


def test_a_constant_function_has_zero_gradients() -> None:
    assert_grad_close(lambda a: 3.0, [1.0], expected=[0.0])


@given(values(-2, 2), vectors(3, 0, 1))
def test_values_and_vectors_are_fresh_leaves_in_range(v: Value, vec: Vector) -> None:
    assert v.is_leaf
    assert v.requires_grad
    assert -2 <= v.data <= 2
    assert len(vec) == 3
    assert all(x.is_leaf and 0 <= x.data <= 1 for x in vec)


@given(expressions(["a", "b"]), st.floats(-2, 2), st.floats(-2, 2))
def test_expressions_are_callables_with_a_readable_text(expression: Expression, a: float, b: float) -> None:
    assert repr(expression) == expression.text
    result = expression(Value(a), Value(b))
    assert isinstance(result, (Value, float))
    by_name = expression(b=Value(b), a=Value(a))
    assert float(by_name) == float(result)
    assert_grad_close(expression, [a, b])  # the default ops are smooth: always differentiable


def test_expressions_shrink_to_the_smallest_failing_one() -> None:
    smallest = find(expressions(["a", "b"]), lambda e: "*" in e.text and "b" in e.text)
    assert smallest.text in ("(a * b)", "(b * a)", "(b * b)")


def test_an_expression_evaluates_like_its_text() -> None:
    e = Expression(("+", ("*", "x", 2.0), ("sin", "y")), ("x", "y"))
    assert e.text == "((x * 2.0) + sin(y))"
    assert e(1.5, 0.5) == 3.0 + math.sin(0.5)
    with pytest.raises(TypeError, match="takes 2 values"):
        e(1.0)


def test_strategy_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown ops"):
        expressions(["x"], ops=["^"])
    with pytest.raises(ValueError, match="variables must be a non-empty list of names"):
        expressions([])
    with pytest.raises(ValueError, match="max_depth must be a non-negative int"):
        expressions(["x"], max_depth=-1)
    with pytest.raises(ValueError, match="length must be a non-negative int"):
        vectors(-1)


def test_without_hypothesis_the_strategies_say_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    monkeypatch.setitem(sys.modules, "hypothesis.strategies", None)
    with pytest.raises(ImportError, match=r"pip install 'vjpgrad\[test\]'"):
        values()
    assert_grad_close(lambda a: a * a, [2.0], expected=[4.0])  # needs no hypothesis


def run_exercises(mode: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VJPGRAD_EXERCISE": mode}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "examples/exercises"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


def test_the_exercises_pass_against_the_solutions() -> None:
    result = run_exercises("solution")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "14 passed" in result.stdout


def test_the_exercises_fail_readably_against_a_wrong_rule() -> None:
    result = run_exercises("wrong")
    assert result.returncode == 1
    assert "gradients differ from the expected ones" in result.stdout
    assert "<-- wrong" in result.stdout
    assert "expression=x," in result.stdout  # hypothesis shrank the random expression to x


def test_the_unsolved_exercises_fail() -> None:
    result = run_exercises("exercise")
    assert result.returncode == 1
    assert "NotImplementedError" in result.stdout


def test_module_is_importable_without_touching_hypothesis() -> None:
    code = "import sys, vjpgrad.testing; print('hypothesis' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
    assert vjpgrad.testing.HYPOTHESIS_HINT
