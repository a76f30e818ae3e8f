"""Your own operation (``custom_op``): a float function plus its derivative rule, in every feature;
and the ways a rule is written wrong, each refused with a message that names the fix.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from _helpers import central_difference, close, numpy
from hypothesis import given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector, custom_op, grad, gradcheck, hessian


@custom_op
def softplus(x: float) -> float:
    """log(1 + e^x), stable for any x."""
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


@softplus.derivative
def _softplus_derivative(x: float | Value, out: float | Value) -> float | Value:
    return vjpgrad.sigmoid(x)


@custom_op
def logaddexp(x: float, y: float) -> float:
    """log(e^x + e^y), stable for any x and y."""
    m = max(x, y)
    return m + math.log(math.exp(x - m) + math.exp(y - m))


@logaddexp.derivative
def _logaddexp_derivative(
    x: float | Value, y: float | Value, out: float | Value
) -> tuple[float | Value, float | Value]:
    return vjpgrad.exp(x - out), vjpgrad.exp(y - out)


def test_on_numbers_it_is_the_float_function() -> None:
    assert softplus(0.0) == math.log(2.0)
    assert softplus(1000.0) == 1000.0  # no overflow
    assert logaddexp(1000.0, 1000.0) == 1000.0 + math.log(2.0)


def test_on_values_it_is_an_operation_with_its_name() -> None:
    x = Value(0.5)
    y = softplus(x)
    assert (y.op, y.parents) == ("softplus", (x,))
    y.backward()
    assert x.grad == pytest.approx(1 / (1 + math.exp(-0.5)))


@given(st.floats(-30, 30), st.floats(-30, 30))
def test_derivatives_match_central_differences(x: float, y: float) -> None:
    a, b = Value(x), Value(y)
    logaddexp(a, b).backward()
    assert close(a.grad, central_difference(lambda t: logaddexp(t, y), x))
    assert close(b.grad, central_difference(lambda t: logaddexp(x, t), y))
    assert close(grad(softplus)(x), central_difference(softplus, x))


def test_numbers_and_values_mix_in_either_order() -> None:
    b = Value(2.0)
    assert logaddexp(1.0, b).parents == (b,)
    assert logaddexp(b, 1.0).data == logaddexp(2.0, 1.0)
    (logaddexp(1.0, b) * 2).backward()
    assert b.grad == pytest.approx(2 * math.exp(2.0 - logaddexp(1.0, 2.0)))


def test_an_operation_of_two_defined_in_a_function_takes_gradient_where_its_operands_do() -> None:
    @custom_op
    def hypot(x: float, y: float) -> float:
        return math.hypot(x, y)

    @hypot.derivative
    def _(x: float | Value, y: float | Value, out: float | Value) -> tuple[float | Value, float | Value]:
        return x / out, y / out

    a, b = Value(3.0), Value(4.0)
    both = hypot(a, b)
    assert (both.data, both.op, both.parents) == (5.0, "hypot", (a, b))
    both.backward()
    assert (a.grad, b.grad) == (0.6, 0.8)
    cases = [
        ((Value(3.0), 4.0), [6.0]),
        ((3.0, Value(4.0)), [8.0]),
        ((Value(3.0), Value(4.0, requires_grad=False)), [6.0, 0.0]),
        ((Value(3.0, requires_grad=False), Value(4.0)), [0.0, 8.0]),
    ]
    for operands, expected in cases:
        out = hypot(*operands)
        assert (out.data, out.requires_grad) == (5.0, True)
        out.backward(10.0)
        assert [x.grad for x in operands if isinstance(x, Value)] == expected
    a = Value(3.0, requires_grad=False)
    for constant in (hypot(a, Value(4.0, requires_grad=False)), hypot(3.0, Value(4.0, requires_grad=False))):
        assert (constant.data, constant.requires_grad, constant.is_leaf) == (5.0, False, True)
    assert "y = hypot(3, b)" in str(vjpgrad.explain(hypot(3.0, Value(4.0, label="b"))))  # the number operand is kept


def test_it_applies_elementwise_to_vectors_with_broadcasting() -> None:
    v = Vector([-1.0, 0.0, 1.0])
    assert softplus(v).data == [softplus(-1.0), softplus(0.0), softplus(1.0)]
    assert logaddexp(v, 0.0).data == [logaddexp(x, 0.0) for x in (-1.0, 0.0, 1.0)]
    assert logaddexp(0.0, v).data == [logaddexp(0.0, x) for x in (-1.0, 0.0, 1.0)]
    w = logaddexp(v, Vector([5.0]))
    w.backward([1.0, 1.0, 1.0])
    assert sum(v.grad.data) + 0 == pytest.approx(sum(math.exp(x - logaddexp(x, 5.0)) for x in (-1.0, 0.0, 1.0)))


def test_a_rule_written_with_vjpgrad_functions_gives_higher_orders() -> None:
    # softplus'' = sigmoid' = sigmoid (1 - sigmoid)
    s = 1 / (1 + math.exp(-0.3))
    assert grad(grad(softplus))(0.3) == pytest.approx(s * (1 - s), rel=1e-12)
    h = hessian(lambda v: logaddexp(v[0], v[1]))([0.2, -0.4])
    p = math.exp(0.2 - logaddexp(0.2, -0.4))
    assert h == [
        [pytest.approx(p * (1 - p)), pytest.approx(-p * (1 - p))],
        [pytest.approx(-p * (1 - p)), pytest.approx(p * (1 - p))],
    ]


def test_gradcheck_passes_a_correct_rule() -> None:
    assert gradcheck(lambda a, b: logaddexp(a, b) * softplus(a), [0.3, -1.2])


def test_gradcheck_catches_a_wrong_rule_and_names_the_input() -> None:
    @custom_op
    def cube(x: float) -> float:
        return x**3

    @cube.derivative
    def _wrong(x: float | Value, out: float | Value) -> float | Value:
        return 3 * x  # should be 3 * x**2

    with pytest.raises(AssertionError) as failure:
        gradcheck(cube, [2.0])
    message = str(failure.value)
    assert "gradcheck failed" in message
    assert "<-- differs" in message
    assert "6" in message  # the analytic 3 * 2
    assert "12" in message  # the numeric 3 * 2**2


def test_without_a_rule_it_works_on_numbers_but_refuses_values() -> None:
    @custom_op
    def double(x: float) -> float:
        return 2 * x

    assert double(3.0) == 6.0
    with pytest.raises(RuntimeError, match=r"double has no derivative rule yet: define one with @double\.derivative"):
        double(Value(1.0))


def test_bad_definitions_and_calls_are_type_errors() -> None:
    with pytest.raises(TypeError, match=r"a function of one or two numbers, .*; three takes 3"):

        @custom_op
        def three(x: float, y: float, z: float) -> float:
            return x

    with pytest.raises(TypeError, match=r"\(def f\(x\) or def f\(x, y\)\); <lambda> takes \*xs"):
        custom_op(lambda *xs: xs[0])  # it said "takes 0"

    with pytest.raises(TypeError, match=r"softplus\(\) takes 1 argument, got 2"):
        softplus(1.0, 2.0)
    with pytest.raises(TypeError, match=r"softplus\(\) takes numbers, Values or Vectors, got str"):
        softplus("1")

    @custom_op
    def pair(x: float, y: float) -> float:
        return x * y

    @pair.derivative
    def _single(x: float | Value, y: float | Value, out: float | Value) -> float | Value:
        return y

    with pytest.raises(TypeError, match=r"must return a pair \(d/dx, d/dy\), got float"):
        pair(Value(1.0), Value(2.0))


# ---- a rule written the wrong way ----------------------------------------------------------------


def test_a_rule_written_with_math_is_refused_for_higher_derivatives() -> None:
    @custom_op
    def my_sin(x: float) -> float:
        return math.sin(x)

    @my_sin.derivative
    def _(x: float | Value, out: float | Value) -> float:
        return math.cos(x)  # a float, even for a Value: the graph would be cut silently

    assert vjpgrad.grad(my_sin)(0.5) == math.cos(0.5)  # first derivatives are fine
    with pytest.raises(TypeError, match=r"vjpgrad.sin\(x\), not math.sin\(x\)"):
        vjpgrad.grad(vjpgrad.grad(my_sin))(0.5)


def test_a_rule_that_forgets_to_return_says_so() -> None:
    @custom_op
    def cube(x: float) -> float:
        return x**3

    @cube.derivative
    def _(x: float, out: float) -> None:
        3 * x * x  # the mistake under test: no return

    with pytest.raises(TypeError, match="returned None: did it forget to return"):
        cube(Value(2.0))


def test_a_rule_that_divides_by_zero_gets_ieee_results() -> None:
    @custom_op
    def root(x: float) -> float:
        return math.sqrt(x)

    @root.derivative
    def _(x: float | Value, out: float | Value) -> float | Value:
        return 0.5 / out  # Python's float division raises at out = 0

    x = Value(0.0)
    root(x).backward()
    assert x.grad == math.inf  # as sqrt's derivative at 0


def test_custom_ops_take_any_real_number() -> None:
    @custom_op
    def hyp(x: float, y: float) -> float:
        return math.hypot(x, y)

    @hyp.derivative
    def _(x: float | Value, y: float | Value, out: float | Value) -> tuple[float | Value, float | Value]:
        return x / out, y / out

    np: Any = numpy()
    assert hyp(Value(3.0), np.int64(4)).data == 5.0
    assert hyp(Fraction(3), Value(4.0)).data == 5.0
    out = hyp(Vector([3.0, 4.0]), Fraction(4))
    assert isinstance(out, Vector)
    assert out.tolist() == [5.0, math.hypot(4.0, 4.0)]


def test_a_custom_rules_mistake_shows_the_users_frames_and_the_message() -> None:
    import math
    import traceback

    @vjpgrad.custom_op
    def softsign(x: float) -> float:
        return x / (1 + abs(x))

    @softsign.derivative
    def _(x: float, out: float) -> float:
        return 1 / (1 + math.fabs(x)) ** 2

    x = Value(0.5)
    with pytest.raises(TypeError, match="vjpgrad's functions") as caught:
        vjpgrad.gradients(softsign(x), x, create_graph=True)
    frames = traceback.extract_tb(caught.value.__traceback__)
    # the library's frames are those in the imported package's own folder (not any path that
    # happens to contain "vjpgrad": a clone named vjpgrad holds this test file too)
    package = Path(vjpgrad.__file__).resolve().parent
    ours = [f for f in frames if Path(f.filename).resolve().is_relative_to(package)]
    theirs = [f for f in frames if f not in ours]
    assert [f.name for f in theirs] == ["test_a_custom_rules_mistake_shows_the_users_frames_and_the_message", "_"]
    assert len(ours) <= 3  # the entry point, and where the number was read
    assert ours[0].name == "gradients"


@custom_op
def softsign_op(x: float) -> float:
    return x / (1 + abs(x))


@softsign_op.derivative
def _softsign_by_pieces(x: float | Value, out: float | Value) -> float | Value:
    # a rule written by pieces, as PyTorch lets a backward branch on its input
    if x > 0:
        return 1 / (1 + x) ** 2
    return 1 / (1 - x) ** 2


@pytest.mark.parametrize("x", [-2.0, -0.5, 0.5, 2.0])
def test_a_rule_that_branches_on_its_input_gives_higher_derivatives(x: float) -> None:
    # the branch is taken at x, as eager code takes it: each piece's own derivative, to the bit
    def reference(x: Value) -> Value:
        return x / (1 + abs(x))

    assert grad(grad(softsign_op))(x) == grad(grad(reference))(x)
    assert grad(grad(softsign_op))(x) == pytest.approx(-2 * math.copysign(1, x) / (1 + abs(x)) ** 3)


def test_a_rule_that_branches_is_still_refused_where_a_branch_would_be_recorded() -> None:
    # under compile (and vmap) a branch taken once would be replayed for every number
    def second(x: Value) -> Value:
        return grad(softsign_op)(x) * 1.0

    assert second(Value(0.5)).data == grad(softsign_op)(0.5)
    with pytest.raises(vjpgrad.DataDependentError, match=r"comparing a Value \(>\)"):
        vjpgrad.compile(lambda x: grad(softsign_op)(x))(Value(0.5))


def test_a_compiled_function_calls_a_rule_by_pieces_with_each_calls_number() -> None:
    # a first derivative calls the rule with numbers at each replay: each call takes its own piece
    compiled = vjpgrad.compile(lambda x: softsign_op(x) * 3.0)
    for number in (0.5, -2.0, 3.0, -0.25):
        x, y = Value(number), Value(number)
        compiled(x).backward()
        (softsign_op(y) * 3.0).backward()
        assert x.grad == y.grad == 3.0 / (1 + abs(number)) ** 2


def test_a_rule_is_not_called_where_nothing_is_recorded() -> None:
    # under no_grad the rule's answer would be thrown away: eager code does not ask for it, as PyTorch
    # runs no backward in the forward pass (a rule written for part of the domain must not break it)
    calls: list[float] = []

    @custom_op
    def double(x: float) -> float:
        return 2.0 * x

    @double.derivative
    def _(x: Any, out: Any) -> Any:
        calls.append(float(x))
        if x > 1.0:
            raise ValueError("this rule is only written for x <= 1")
        return 2.0

    @custom_op
    def both(x: float, y: float) -> float:
        return x * y

    @both.derivative
    def _(x: Any, y: Any, out: Any) -> Any:
        calls.append(float(x))
        return y, x

    with vjpgrad.no_grad():
        y = double(Value(3.0))
        z = both(Value(3.0), Value(4.0)) + both(2.0, Value(1.0))
    assert (y.data, y.requires_grad, z.data, z.requires_grad) == (6.0, False, 14.0, False)
    assert calls == []
    double(Value(0.5))  # recorded: the rule is called as the operation runs
    assert calls == [0.5]


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        (None, "of forgot_returns returned None: did it forget to return its result"),
        ("1.5", "of forgot_returns must return a real number, got str"),
        ([1.5], "of forgot_returns must return a real number, got list"),
        (memoryview(b"1.5"), "of forgot_returns must return a real number, got memoryview"),
        (1.5 + 0.5j, "of forgot_returns must return a real number, got complex"),  # float() of NumPy's drops 0.5j
    ],
)
def test_a_function_that_returns_no_number_is_named(returned: Any, message: str) -> None:
    def forgot_returns(x: float) -> Any:
        x * 2.0
        return returned

    op = custom_op(forgot_returns)
    op.derivative(lambda x, out: 2.0)
    for argument in (1.5, Value(1.5)):
        with pytest.raises(TypeError, match=message):
            op(argument)


def test_a_function_may_return_any_number_float_reads() -> None:
    # a 0-d array, NumPy's and the standard library's numbers, as float() takes them (the review of the fix)
    from decimal import Decimal

    np = numpy()
    for returned, number in (
        (np.array(0.5), 0.5),
        (np.bool_(True), 1.0),
        (Decimal("0.25"), 0.25),
        (np.float32(2.5), 2.5),
    ):
        op = custom_op(lambda x, r=returned: r)
        op.derivative(lambda x, out: 0.0)
        assert op(1.0) == number
        assert op(Value(1.0)).data == number


def test_explain_writes_an_operation_of_two_as_a_call() -> None:
    a, b = Value(0.2, label="a"), Value(-0.4, label="b")
    y = logaddexp(a, b)
    y.label = "y"
    assert vjpgrad.explain(y).formulas == {"y": "logaddexp(a, b)"}
