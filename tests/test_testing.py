"""vjpgrad.testing: assert_grad_close and the strategies.

The exercises that use them are the course's (vjpgrad course): tests/test_course.py checks them."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import find, given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector, custom_op
from vjpgrad.testing import Expression, assert_grad_close, expressions, values, vectors


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
    assert lines[2].split()[:3] == ["a", "3", "3"]  # input a at 3: vjpgrad says 3, the truth is 6
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
    with pytest.raises(ImportError, match=r"pip install hypothesis \(or pip install -e '\.\[test\]' in your clone"):
        values()
    assert_grad_close(lambda a: a * a, [2.0], expected=[4.0])  # needs no hypothesis


def test_module_is_importable_without_touching_hypothesis() -> None:
    code = "import sys, vjpgrad.testing; print('hypothesis' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
    assert vjpgrad.testing.HYPOTHESIS_HINT


# ---- what a learner reads when a check fails ----------------------------------------------------


def failure_lines(f: Any, inputs: list[float], **kwargs: Any) -> list[str]:
    with pytest.raises(AssertionError) as failure:
        assert_grad_close(f, inputs, **kwargs)
    return str(failure.value).splitlines()


def test_the_table_names_each_input_by_its_parameter() -> None:
    def f(weight: Value, bias: Value) -> Value:
        return weight * 2.0 + bias

    lines = failure_lines(f, [1.0, 1.0], expected=[2.0, 5.0])
    assert [line.split()[0] for line in lines[2:]] == ["weight", "bias"]
    assert lines[3].endswith("<-- wrong")

    class Opaque:  # no signature to read (inspect.signature raises TypeError): the inputs are numbered
        __signature__ = "unreadable"

        def __call__(self, a: Value, b: Value) -> Value:
            return a * b

    lines = failure_lines(Opaque(), [2.0, 3.0], expected=[0.0, 0.0])
    assert [line.split()[0] for line in lines[2:]] == ["0", "1"]


def test_variadic_inputs_are_named_by_position_in_the_star_argument() -> None:
    lines = failure_lines(lambda first, *rest: first * rest[0] * rest[1], [1.0, 2.0, 3.0], expected=[0.0, 0.0, 0.0])
    assert [line.split()[0] for line in lines[2:]] == ["first", "rest[0]", "rest[1]"]


def test_an_expression_names_its_variables_and_names_can_be_given() -> None:
    e = Expression(("*", "x", "y"), ("x", "y"))
    lines = failure_lines(e, [2.0, 3.0], expected=[0.0, 0.0])
    assert [line.split()[0] for line in lines[2:]] == ["x", "y"]
    lines = failure_lines(lambda *xs: xs[0] * xs[1], [2.0, 3.0], expected=[0.0, 0.0], names=["a[0]", "b[0]"])
    assert [line.split()[0] for line in lines[2:]] == ["a[0]", "b[0]"]


def test_your_rule_is_labelled_yours_against_the_expected_or_numeric_gradient() -> None:
    lines = failure_lines(lambda x: x * x * x, [2.0], expected=[11.0], yours="f")
    assert lines[0] == "your gradients differ from the expected ones (atol=1e-06, rtol=0.0001):"
    assert lines[1].split() == ["input", "value", "yours", "expected", "difference"]
    assert [float(s) for s in lines[2].split()[1:5]] == [2.0, 12.0, 11.0, 1.0]  # yours 3x^2 = 12
    lines = failure_lines(lambda x: Value(x.data * x.data), [3.0], yours="f")  # a rule that forgets the graph
    assert lines[1].split() == ["input", "value", "yours", "numeric", "difference"]
    assert float(lines[2].split()[2]) == 0.0
    assert float(lines[2].split()[3]) == pytest.approx(6.0)


def test_gradients_you_computed_by_hand_are_labelled_yours_against_vjpgrad() -> None:
    lines = failure_lines(lambda a, b: a * b, [2.0, 5.0], expected=[5.0, 3.0], yours="expected")
    assert lines[0] == "your gradients differ from vjpgrad's (atol=1e-06, rtol=0.0001):"
    assert lines[1].split() == ["input", "value", "yours", "vjpgrad", "difference"]
    assert lines[2].split()[:4] == ["a", "2", "5", "5"]
    assert lines[2].endswith("ok")
    assert lines[3].split()[:5] == ["b", "5", "3", "2", "1"]  # yours 3, vjpgrad's da*b/db = a = 2: 3 - 2
    assert lines[3].endswith("<-- wrong")


def test_the_tolerance_is_relative_to_the_reference_not_to_yours() -> None:
    # |yours - ref| <= atol + rtol * |ref|: 100.5 vs 100 passes with rtol=0.01 (1.0 allowed) ...
    assert_grad_close(lambda a: a * 100.0, [1.0], expected=[100.5], rtol=0.01, yours="expected")
    # ... and 1.0 vs 0.5 fails even though rtol * |yours| = 0.5 would let it pass
    with pytest.raises(AssertionError, match="wrong"):
        assert_grad_close(lambda a: a * 0.5, [1.0], expected=[1.0], atol=0.0, rtol=0.5, yours="expected")


def test_bad_names_and_yours_are_refused_before_f_runs() -> None:
    calls: list[int] = []

    def f(a: Value) -> Value:
        calls.append(1)
        return a

    with pytest.raises(ValueError, match="yours must be 'f', 'expected' or None, got 'mine'"):
        assert_grad_close(f, [1.0], yours="mine")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="names has 2 names but there are 1 inputs"):
        assert_grad_close(f, [1.0], names=["a", "b"])
    with pytest.raises(TypeError, match=r"names\[0\] must be a str, got int"):
        assert_grad_close(f, [1.0], names=[0])  # type: ignore[list-item]
    assert calls == []


FAILING_CHECK = """
from vjpgrad.testing import assert_grad_close


def test_a_wrong_derivative():
    assert_grad_close(lambda weight, bias: weight * weight + bias, [3.0, 1.0], expected=[5.0, 1.0])
"""


def test_pytest_shows_the_table_and_not_the_helpers_source(tmp_path: Path) -> None:
    (tmp_path / "test_learner.py").write_text(FAILING_CHECK)
    helper = Path(vjpgrad.testing.__file__)
    here = str(helper.parent.parent)  # the vjpgrad this process tests, wherever the subprocess runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_learner.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    out = result.stdout
    assert "gradients differ from the expected ones" in out
    assert "weight" in out
    assert "<-- wrong" in out
    assert "assert_grad_close(lambda weight, bias" in out  # the learner's own line is shown ...
    helper_source = helper.read_text().splitlines()
    shown = [line for line in helper_source if len(line.strip()) > 20 and line.strip() in out]
    assert shown == []  # ... and none of the helper's
    assert "testing.py" not in out
    assert len(out.splitlines()) < 30
