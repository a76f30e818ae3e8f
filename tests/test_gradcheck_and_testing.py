"""Checking gradients: ``gradcheck`` (True for correct gradients, an AssertionError with a table
otherwise) and ``vjpgrad.testing`` (``assert_grad_close`` and the hypothesis strategies ``values``,
``vectors`` and ``expressions``), through their public behaviour and by hand (the strategies built
inside the tests, so a mutation run sees their construction).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

import vjpgrad
from vjpgrad import Value, Vector, custom_op, gradcheck
from vjpgrad.testing import Expression, assert_grad_close, expressions, values, vectors

# ---- gradcheck -----------------------------------------------------------------------------------


def test_correct_gradients_pass() -> None:
    assert gradcheck(lambda a, b: (a * b).sin() + a.exp() / b, [0.5, 2.0]) is True
    assert gradcheck(lambda x: x.log(), 3.0) is True


def test_vector_outputs_check_every_row_of_the_jacobian() -> None:
    assert gradcheck(lambda a, b: Vector([a * b, a + b, a.tanh()]), [0.3, 0.7])


def test_a_kink_inside_eps_is_reported_with_a_table() -> None:
    # relu'(0) = 0 by convention; central differences straddle the kink and see 1/2 x b = 1
    with pytest.raises(AssertionError) as failure:
        gradcheck(lambda a, b: a.relu() * b, [0.0, 2.0])
    lines = str(failure.value).splitlines()
    assert lines[0].startswith("gradcheck failed: analytic gradient differs from central differences")
    assert lines[1].split() == ["input", "value", "analytic", "numeric", "difference"]
    assert lines[2].split() == ["0", "0", "0", "1", "-1", "<--", "differs"]
    assert lines[3].split() == ["1", "2", "0", "0", "0", "ok"]


def test_a_vector_output_names_the_output_row() -> None:
    with pytest.raises(AssertionError) as failure:
        gradcheck(lambda a: Vector([a * 2, a.relu()]), [0.0])
    lines = str(failure.value).splitlines()
    assert lines[1].split()[:2] == ["output", "input"]
    assert lines[2].split() == ["0", "0", "0", "2", "2", "0", "ok"]
    assert lines[3].split()[-2:] == ["<--", "differs"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"eps": 0.0}, "eps must be a positive number"),
        ({"atol": -1.0}, "atol must be a non-negative number"),
        ({"rtol": math.nan}, "rtol must be a non-negative number"),
    ],
)
def test_bad_tolerances_are_value_errors(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gradcheck(lambda x: x, [1.0], **kwargs)
    with pytest.raises(ValueError, match=f"assert_grad_close {message}"):
        assert_grad_close(lambda x: x, [1.0], **kwargs)


@pytest.mark.parametrize("check", [gradcheck, assert_grad_close])
def test_a_bool_is_no_tolerance(check: Any) -> None:
    with pytest.raises(ValueError, match="eps must be a positive number, got True"):
        check(lambda x: x, [1.0], eps=True)


def test_a_check_leaves_every_grad_and_graph_outside_f_as_it_was() -> None:
    # as torch.autograd.gradcheck: a check in a notebook must not change the next training step
    w = Value(2.0)
    h = w * 3.0
    assert gradcheck(lambda x: (w * x - 1.0) ** 2 + h * x, [1.0])
    assert_grad_close(lambda x: (w * x - 1.0) ** 2 + h * x, [1.0])
    assert_grad_close(lambda x: w * x, [1.0], expected=[2.0])
    assert (w.grad, h.grad) == (0.0, 0.0)
    (h * 2.0).backward()  # the graph made outside f is still there
    assert w.grad == 6.0


@pytest.mark.parametrize("check", [gradcheck, assert_grad_close])
def test_a_check_inside_no_grad_still_differentiates(check: Any) -> None:
    # as vjpgrad.grad does: a check turns recording on for f, whatever the caller's mode
    with vjpgrad.no_grad():
        check(lambda x: x * x, [1.0])
        assert not vjpgrad.is_grad_enabled()


def test_bad_inputs_are_type_errors() -> None:
    with pytest.raises(TypeError, match=r"inputs\[1\] must be a real number, got str"):
        gradcheck(lambda a, b: a * b, [1.0, "2"])  # type: ignore[list-item]


# ---- assert_grad_close ---------------------------------------------------------------------------


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
    for inputs in (None, "12", object()):  # named, not "'NoneType' object is not iterable"
        with pytest.raises(TypeError, match=r"inputs must be a number or a sequence of numbers, got \w+"):
            vjpgrad.gradcheck(lambda a: a, inputs)  # type: ignore[arg-type]


def test_a_constant_function_has_zero_gradients() -> None:
    assert_grad_close(lambda a: 3.0, [1.0], expected=[0.0])


def test_a_single_input_and_a_single_expected_gradient_may_be_numbers() -> None:
    assert_grad_close(lambda a: a * a, 3.0, expected=6.0)
    assert_grad_close(lambda a: a * a, 3.0)
    with pytest.raises(AssertionError):
        assert_grad_close(lambda a: a * a, 3.0, expected=5.0)


def test_the_table_names_the_source_and_shows_the_difference() -> None:
    with pytest.raises(AssertionError) as caught:
        assert_grad_close(lambda a, b: a * b, [2.0, 3.0], expected=[6.0, 2.0])
    lines = str(caught.value).splitlines()
    assert lines[0] == "gradients differ from the expected ones (atol=1e-06, rtol=0.0001):"
    assert lines[1].split() == ["input", "value", "vjpgrad", "expected", "difference"]
    assert lines[2].split() == ["a", "2", "3", "6", "-3", "<--", "wrong"]  # named by f's parameters
    assert lines[3].split() == ["b", "3", "2", "2", "0", "ok"]


def test_the_tolerance_is_atol_plus_rtol_times_the_expected_inclusive() -> None:
    assert_grad_close(lambda a: a * 1.0, [0.0], expected=[1.5], atol=0.5, rtol=0.0)  # |1 - 1.5| = 0.5: in
    with pytest.raises(AssertionError):
        assert_grad_close(lambda a: a * 1.0, [0.0], expected=[1.5], atol=0.49, rtol=0.0)
    assert_grad_close(lambda a: a * 5.0, [0.0], expected=[4.0], atol=0.0, rtol=0.25)  # |5 - 4| = 0.25 * 4
    with pytest.raises(AssertionError):
        assert_grad_close(lambda a: a * 5.0, [0.0], expected=[4.0], atol=0.0, rtol=0.2)


def test_nan_matches_only_nan() -> None:
    assert_grad_close(lambda a: a.sqrt(), [-1.0], expected=[math.nan])  # d sqrt at -1 is nan
    with pytest.raises(AssertionError):
        assert_grad_close(lambda a: a.sqrt(), [-1.0], expected=[1.0])
    with pytest.raises(AssertionError):
        assert_grad_close(lambda a: a * 2.0, [1.0], expected=[math.nan])
    assert_grad_close(lambda a: a.log(), [0.0], expected=[math.inf])  # inf == inf


@pytest.mark.parametrize(
    ("f", "x", "expected"),
    [
        (lambda a: a.sqrt(), 0.0, 0.0),  # sqrt'(0) is inf: no tolerance reaches it
        (lambda a: a.log(), 0.0, -123.0),
        (lambda a: 1 / a, 0.0, math.inf),  # the truth is -inf
        (lambda a: a * 3.0, 1.0, math.inf),
    ],
)
def test_an_infinity_matches_only_itself(f: Any, x: float, expected: float) -> None:
    with pytest.raises(AssertionError, match="<-- wrong"):
        assert_grad_close(f, [x], expected=[expected])
    with pytest.raises(AssertionError, match="<-- wrong"):
        assert_grad_close(f, [x], expected=[expected], yours="expected")


def test_gradcheck_fails_a_wrong_rule_where_the_difference_overflows() -> None:
    @custom_op
    def my_exp(x: float) -> float:
        return float(vjpgrad.exp(x))  # inf past the largest float, as IEEE's exp

    @my_exp.derivative
    def _(x: Any, out: Any) -> Any:
        return -out  # the wrong sign: -inf at x, where the central difference overflows to inf

    with pytest.raises(AssertionError, match="differs"):
        gradcheck(my_exp, [709.782712893384])


def test_inputs_and_expected_gradients_may_be_values() -> None:
    # a Value is read as its number, as a seed is
    assert_grad_close(lambda a: a * a, [Value(3.0)], expected=[Value(6.0)])  # type: ignore[list-item]
    assert_grad_close(lambda a, b: a * b, [Value(2.0), 5.0])  # type: ignore[list-item]


def test_a_bad_expected_gradient_is_named() -> None:
    with pytest.raises(TypeError) as caught:
        assert_grad_close(lambda a: a, [1.0], expected=["1"])  # type: ignore[list-item]
    assert str(caught.value) == "expected[0] must be a real number, got str"


def test_a_number_output_is_compared_with_its_seeded_central_difference() -> None:
    # f reads the number: vjpgrad sees no graph (gradient 0), central differences see d/da a*a = 6
    with pytest.raises(AssertionError) as caught:
        assert_grad_close(lambda a: float(a * a), [3.0])
    assert float(str(caught.value).splitlines()[2].split()[3]) == pytest.approx(6.0)
    with pytest.raises(AssertionError) as caught:
        assert_grad_close(lambda a: float(a * a), [3.0], seed=2.0)
    assert float(str(caught.value).splitlines()[2].split()[3]) == pytest.approx(12.0)
    with pytest.raises(TypeError) as refused:
        assert_grad_close(lambda a: 1.0, [3.0], seed="2")  # type: ignore[arg-type]
    assert str(refused.value) == "seed must be a real number, got str"


def test_a_vector_output_without_a_seed_says_how_to_pass_one() -> None:
    with pytest.raises(RuntimeError) as caught:
        assert_grad_close(lambda a: Vector([a, a * 2.0]), [1.0])
    assert str(caught.value).endswith("so pass a seed of one number per element, pass seed=[...]")


def test_outputs_that_take_no_gradient_are_left_out_of_the_pass() -> None:
    assert_grad_close(lambda a: Vector([a * 2.0, Value(3.0, requires_grad=False)]), [1.0], seed=[1.0, 5.0])
    assert_grad_close(
        lambda a: Vector([a * 2.0, Value(3.0, requires_grad=False)]), [1.0], expected=[2.0], seed=[1.0, 5.0]
    )


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


@pytest.mark.slow  # a pytest process, or a search of many drawn expressions: seconds
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


# ---- the strategies: values and vectors ----------------------------------------------------------


@given(values(-2, 2), vectors(3, 0, 1))
def test_values_and_vectors_are_fresh_leaves_in_range(v: Value, vec: Vector) -> None:
    assert v.is_leaf
    assert v.requires_grad
    assert -2 <= v.data <= 2
    assert len(vec) == 3
    assert all(x.is_leaf and 0 <= x.data <= 1 for x in vec)


@given(st.data())
def test_values_are_finite_leaves_in_their_range(data: st.DataObject) -> None:
    v = data.draw(values(-2.0, 3.0))
    assert isinstance(v, Value)
    assert v.is_leaf
    assert v.requires_grad
    assert -2.0 <= v.data <= 3.0
    w = data.draw(values())
    assert -10.0 <= w.data <= 10.0


@pytest.mark.slow  # a pytest process, or a search of many drawn expressions: seconds
def test_infinite_bounds_still_give_finite_values() -> None:
    with pytest.raises(NoSuchExample):
        find(values(-math.inf, math.inf), lambda v: not math.isfinite(v.data), settings=settings(max_examples=300))
    with pytest.raises(NoSuchExample):
        find(
            vectors(2, -math.inf, math.inf),
            lambda v: not all(math.isfinite(x) for x in v.data),
            settings=settings(max_examples=300),
        )


@pytest.mark.slow  # a search of drawn values, or a process: seconds
def test_values_reach_both_ends_and_no_further() -> None:
    assert find(values(), lambda v: v.data >= 9.5).data <= 10.0
    assert find(values(), lambda v: v.data <= -9.5).data >= -10.0
    with pytest.raises(NoSuchExample):
        find(values(), lambda v: not math.isfinite(v.data) or abs(v.data) > 10.0, settings=settings(max_examples=300))


@pytest.mark.slow  # a search of drawn values, or a process: seconds
@given(st.data())
def test_vectors_have_the_asked_length_and_finite_elements(data: st.DataObject) -> None:
    v = data.draw(vectors(3, -1.0, 1.0))
    assert isinstance(v, Vector)
    assert len(v) == 3
    assert all(x.is_leaf and x.requires_grad and -1.0 <= x.data <= 1.0 for x in v)
    w = data.draw(vectors())
    assert 1 <= len(w) <= 8
    assert all(-10.0 <= x.data <= 10.0 for x in w)
    assert len(data.draw(vectors(0))) == 0


@pytest.mark.slow  # a pytest process, or a search of many drawn expressions: seconds
def test_vectors_of_any_length_run_from_1_to_8() -> None:
    assert len(find(vectors(), lambda v: len(v) >= 8)) == 8
    assert len(find(vectors(), lambda v: True)) == 1
    with pytest.raises(NoSuchExample):
        find(vectors(), lambda v: len(v) > 8 or len(v) == 0, settings=settings(max_examples=300))
    with pytest.raises(NoSuchExample):
        find(
            vectors(2),
            lambda v: any(not math.isfinite(x.data) or abs(x.data) > 10.0 for x in v),
            settings=settings(max_examples=300),
        )
    assert find(vectors(2), lambda v: v.data[0] >= 9.5).data[0] <= 10.0
    assert find(vectors(1, 5.0, 7.0), lambda v: v.data[0] >= 6.9).data[0] <= 7.0


@pytest.mark.parametrize("length", [-1, True, 2.0, "3"])
def test_a_bad_vector_length_is_refused(length: Any) -> None:
    with pytest.raises(
        ValueError, match=f"^{re.escape(f'length must be a non-negative int or None, got {length!r}')}$"
    ):
        vectors(length)


# ---- the strategies: expressions -----------------------------------------------------------------


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


def test_a_constant_subtree_at_a_domain_edge_gives_ieee_numbers_not_a_python_error() -> None:
    """A constant subtree (or numbers given) is worked out in numbers: ``1.0 / (0.5 - 0.5)`` raised
    Python's ZeroDivisionError and ``1e200**2`` its OverflowError, where the same expression on
    Values gives inf, as on any engine's tensors: a teacher's ``@given(expressions(...))`` failed
    at once. Now vjpgrad's IEEE division and power, as its unary functions already were."""
    pole = Expression(("+", "x", ("/", 1.0, ("-", 0.5, 0.5))), ("x",))
    assert pole(Value(1.0)).data == math.inf
    assert pole(1.0) == math.inf
    assert Expression(("/", "x", "y"), ("x", "y"))(0.0, 0.0) != Expression(("/", "x", "y"), ("x", "y"))(0.0, 0.0)
    assert Expression(("/", "x", "y"), ("x", "y"))(-1.0, 0.0) == -math.inf
    huge = Expression(("*", "x", ("square", 1e200)), ("x",))
    assert huge(Value(2.0)).data == math.inf
    assert huge(2.0) == math.inf


def depth(tree: Any) -> int:
    if isinstance(tree, (str, float)):
        return 0
    return 1 + max(depth(arg) for arg in tree[1:])


@pytest.mark.slow  # it searches for rare expressions
def test_expressions_hold_every_constant_and_only_those() -> None:
    for constant in ("0.5", "1.0", "2.0", "-1.5"):

        def holds(e: Expression, c: str = constant) -> bool:
            return c in e.text.replace("(", " ").replace(")", " ").split()

        assert constant in find(expressions(["x"]), holds).text
    with pytest.raises(NoSuchExample):
        find(
            expressions(["x"]),
            lambda e: any(isinstance(t, float) and t not in (0.5, 1.0, 2.0, -1.5) for t in leaves_of(e.tree)),
            settings=settings(max_examples=300),
        )
    with pytest.raises(NoSuchExample):
        find(
            expressions(["x"], constants=False),
            lambda e: any(isinstance(t, float) for t in leaves_of(e.tree)),
            settings=settings(max_examples=300),  # as many as the search above: find's default is 2,000
        )


def leaves_of(tree: Any) -> list[Any]:
    if isinstance(tree, (str, float)):
        return [tree]
    return [leaf for arg in tree[1:] for leaf in leaves_of(arg)]


@pytest.mark.slow  # a pytest process, or a search of many drawn expressions: seconds
def test_expressions_are_at_most_max_depth_deep_and_reach_it() -> None:
    assert depth(find(expressions(["x"]), lambda e: depth(e.tree) >= 4).tree) == 4
    with pytest.raises(NoSuchExample):
        find(expressions(["x"]), lambda e: depth(e.tree) > 4, settings=settings(max_examples=300))
    assert depth(find(expressions(["x"], max_depth=1), lambda e: depth(e.tree) == 1).tree) == 1
    with pytest.raises(NoSuchExample):
        find(expressions(["x", "y"], max_depth=0), lambda e: depth(e.tree) > 0)


def test_expressions_use_unary_and_binary_ops() -> None:
    unary = find(expressions(["x"], ops=["sin", "+"]), lambda e: e.text.startswith("sin("))
    assert unary.tree[0] == "sin"
    binary = find(expressions(["x"], ops=["sin", "+"]), lambda e: "+" in e.text)
    assert "+" in binary.text
    only_unary = find(expressions(["x"], ops=["exp"], constants=False), lambda e: depth(e.tree) == 2)
    assert only_unary.text == "exp(exp(x))"
    assert only_unary(Value(0.0)).data == math.e


@pytest.mark.slow  # a pytest process, or a search of many drawn expressions: seconds
@given(st.data())
def test_a_drawn_expression_can_be_called_on_its_variables(data: st.DataObject) -> None:
    e = data.draw(expressions(["a", "b"], max_depth=3))
    assert e.variables == ("a", "b")
    result = e(Value(0.5), Value(-1.5))
    assert isinstance(result, (Value, float))


@pytest.mark.parametrize(
    ("variables", "kwargs", "text"),
    [
        ([1], {}, "variables must be a non-empty list of names, got [1]"),
        (["a b"], {}, "variables must be a non-empty list of names, got ['a b']"),
        (["x"], {"max_depth": True}, "max_depth must be a non-negative int, got True"),
        (["x"], {"max_depth": 1.0}, "max_depth must be a non-negative int, got 1.0"),
        (["x"], {"max_depth": -1}, "max_depth must be a non-negative int, got -1"),
        (["x"], {"ops": []}, "unknown ops []: choose from ['*', '+', '-', '/'] and"),
    ],
)
def test_bad_expression_arguments_are_refused(variables: Any, kwargs: dict[str, Any], text: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(text)}"):
        expressions(variables, **kwargs)


def test_max_depth_0_is_allowed() -> None:
    assert find(expressions(["x"], max_depth=0), lambda e: True).text in ("x", "0.5", "1.0", "2.0", "-1.5")


TREES: list[tuple[Any, str, float]] = [
    (("-", "x", "y"), "(x - y)", 3.0 - 0.5),
    (("/", "x", "y"), "(x / y)", 3.0 / 0.5),
    (("*", "x", "y"), "(x * y)", 1.5),
    (("+", "x", 2.0), "(x + 2.0)", 5.0),
    (("neg", "y"), "-y", -0.5),
    (("square", ("-", "y", "x")), "(y - x)**2", 6.25),
    (("abs", ("-", "y", "x")), "abs((y - x))", 2.5),
    (("exp", ("neg", "y")), "exp(-y)", math.exp(-0.5)),
    (("log", "x"), "log(x)", math.log(3.0)),
    (("sqrt", "x"), "sqrt(x)", math.sqrt(3.0)),
    (("relu", ("neg", "x")), "relu(-x)", 0.0),
    (("tanh", "y"), "tanh(y)", math.tanh(0.5)),
    (("square", ("neg", "x")), "(-x)**2", 9.0),  # not -x**2, which Python reads as -(x**2)
    (("neg", ("square", "x")), "-x**2", -9.0),
    (("*", "x", ("square", -1.5)), "(x * (-1.5)**2)", 6.75),
    (("square", ("square", "y")), "(y**2)**2", 0.0625),  # not y**2**2, which is y**(2**2)
]


@pytest.mark.parametrize(("tree", "text", "value"), TREES, ids=[t[1] for t in TREES])
def test_an_expression_reads_and_evaluates_as_written(tree: Any, text: str, value: float) -> None:
    e = Expression(tree, ("x", "y"))
    assert e.text == text == str(e) == repr(e)
    assert float(e(3.0, 0.5)) == value  # numbers: vjpgrad's IEEE functions
    functions = {name: getattr(vjpgrad, name) for name in ("exp", "log", "sqrt", "relu", "tanh")}
    assert eval(text, {**functions, "x": 3.0, "y": 0.5}) == value  # the text, read as Python, is that function
    assert e(Value(3.0), Value(0.5)).data == value  # Values: the graph
    assert e(y=0.5, x=3.0) == e(3.0, 0.5)


def test_an_expression_refuses_wrong_variables_naming_them() -> None:
    e = Expression(("+", "x", "y"), ("x", "y"))
    with pytest.raises(TypeError) as caught:
        e(1.0)
    assert str(caught.value) == "(x + y) takes 2 values (x, y)"
    with pytest.raises(TypeError) as caught:
        e(1.0, z=2.0)
    assert str(caught.value) == "(x + y): unexpected or repeated variable 'z'"
    with pytest.raises(TypeError) as caught:
        e(1.0, x=2.0)
    assert str(caught.value) == "(x + y): unexpected or repeated variable 'x'"
    assert e(1.0, y=2.0) == 3.0


def test_strategy_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown ops"):
        expressions(["x"], ops=["^"])
    with pytest.raises(ValueError, match="variables must be a non-empty list of names"):
        expressions([])
    with pytest.raises(ValueError, match="max_depth must be a non-negative int"):
        expressions(["x"], max_depth=-1)
    with pytest.raises(ValueError, match="length must be a non-negative int"):
        vectors(-1)


# ---- without hypothesis --------------------------------------------------------------------------


def test_without_hypothesis_the_strategies_say_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    monkeypatch.setitem(sys.modules, "hypothesis.strategies", None)
    with pytest.raises(ImportError, match=r"pip install hypothesis \(or pip install -e '\.\[test\]' in your clone"):
        values()
    assert_grad_close(lambda a: a * a, [2.0], expected=[4.0])  # needs no hypothesis


@pytest.mark.slow  # a search of drawn values, or a process: seconds
def test_module_is_importable_without_touching_hypothesis() -> None:
    code = "import sys, vjpgrad.testing; print('hypothesis' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
    assert vjpgrad.testing.HYPOTHESIS_HINT
