"""vjpgrad.testing by hand: the strategies built inside the tests (so a mutation run sees
their construction), Expression's text and evaluation, and assert_grad_close's tolerance,
nan handling and table."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from vjpgrad import Value, Vector
from vjpgrad.testing import Expression, assert_grad_close, expressions, values, vectors


def depth(tree: Any) -> int:
    if isinstance(tree, (str, float)):
        return 0
    return 1 + max(depth(arg) for arg in tree[1:])


# ---- values and vectors --------------------------------------------------------------------------


@given(st.data())
def test_values_are_finite_leaves_in_their_range(data: st.DataObject) -> None:
    v = data.draw(values(-2.0, 3.0))
    assert isinstance(v, Value)
    assert v.is_leaf
    assert v.requires_grad
    assert -2.0 <= v.data <= 3.0
    w = data.draw(values())
    assert -10.0 <= w.data <= 10.0


def test_infinite_bounds_still_give_finite_values() -> None:
    with pytest.raises(NoSuchExample):
        find(values(-math.inf, math.inf), lambda v: not math.isfinite(v.data), settings=settings(max_examples=300))
    with pytest.raises(NoSuchExample):
        find(
            vectors(2, -math.inf, math.inf),
            lambda v: not all(math.isfinite(x) for x in v.data),
            settings=settings(max_examples=300),
        )


def test_values_reach_both_ends_and_no_further() -> None:
    assert find(values(), lambda v: v.data >= 9.5).data <= 10.0
    assert find(values(), lambda v: v.data <= -9.5).data >= -10.0
    with pytest.raises(NoSuchExample):
        find(values(), lambda v: not math.isfinite(v.data) or abs(v.data) > 10.0, settings=settings(max_examples=300))


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


# ---- expressions ------------------------------------------------------------------------------------


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
        find(expressions(["x"], constants=False), lambda e: any(isinstance(t, float) for t in leaves_of(e.tree)))


def leaves_of(tree: Any) -> list[Any]:
    if isinstance(tree, (str, float)):
        return [tree]
    return [leaf for arg in tree[1:] for leaf in leaves_of(arg)]


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
]


@pytest.mark.parametrize(("tree", "text", "value"), TREES, ids=[t[1] for t in TREES])
def test_an_expression_reads_and_evaluates_as_written(tree: Any, text: str, value: float) -> None:
    e = Expression(tree, ("x", "y"))
    assert e.text == text == str(e) == repr(e)
    assert float(e(3.0, 0.5)) == value  # numbers: vjpgrad's IEEE functions
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


# ---- assert_grad_close --------------------------------------------------------------------------


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
    assert str(caught.value).endswith("so pass one seed per element, pass seed=[...]")


def test_outputs_that_take_no_gradient_are_left_out_of_the_pass() -> None:
    assert_grad_close(lambda a: Vector([a * 2.0, Value(3.0, requires_grad=False)]), [1.0], seed=[1.0, 5.0])
    assert_grad_close(
        lambda a: Vector([a * 2.0, Value(3.0, requires_grad=False)]), [1.0], expected=[2.0], seed=[1.0, 5.0]
    )
