"""Mistakes a learner makes, and spellings a PyTorch user types: each one either works as
PyTorch would have it or fails loudly with a message that names the fix."""

from __future__ import annotations

import math
import weakref
from fractions import Fraction
from typing import Any

import pytest

import vjpgrad
from vjpgrad import Value, Vector, custom_op


def numpy() -> object:
    """NumPy, for the tests of NumPy operands (they skip where it is not installed)."""
    return pytest.importorskip("numpy")


# ---- custom operations whose rule is written the wrong way ------------------------------------


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


def test_numpy_scalars_work_on_either_side_of_an_operator() -> None:
    np: Any = numpy()
    x = Value(3.0)
    assert isinstance(np.float64(2.0) * x, Value)  # not a NumPy object array
    assert (np.float64(2.0) * x).data == 6.0
    v = Vector([1.0, 2.0])
    assert isinstance(np.float64(2.0) * v, Vector)
    assert (np.int64(3) - v).tolist() == [2.0, 1.0]
    assert (v * Fraction(1, 2)).tolist() == [0.5, 1.0]


# ---- Values as PyTorch's 0-d tensors behave -------------------------------------------------------


def test_truthiness_and_comparisons_are_on_the_data() -> None:
    assert not Value(0.0)
    assert Value(-2.0)
    x = Value(1.5)
    assert x > 0
    assert x >= 1.5
    assert x < Value(2.0)
    assert not x <= 1
    assert x == Value(1.5)  # equality is on the data too, as a 0-d tensor's
    assert len({x, Value(1.5)}) == 2  # while hashing stays by identity: Values are dict keys and set members


def test_backward_takes_pytorchs_spelling_of_the_seed() -> None:
    q = Vector([1.0, 2.0]) * 3
    a = q[0].parents[0]
    q.backward(gradient=[1.0, 1.0])  # the autograd tutorial's Q.backward(gradient=external_grad)
    assert a.grad == 3.0
    y = Value(2.0)
    (y * y).backward(gradient=0.5)
    assert y.grad == 2.0
    with pytest.raises(TypeError, match="same seed, pass one"):
        (y * y).backward(1.0, gradient=1.0)


def test_a_numpy_array_is_a_seed() -> None:
    np: Any = numpy()
    a = Vector([1.0, 2.0, 3.0])
    (a * a).backward(np.array([0.1, 1.0, 0.0001]))
    assert a.grad.tolist() == [0.1 * 1.0 + 0.1 * 1.0, 1.0 * 2.0 + 1.0 * 2.0, 0.0001 * 3.0 + 0.0001 * 3.0]


def test_float_of_a_vector_needs_exactly_one_element() -> None:
    assert float(Vector([2.0])) == 2.0
    with pytest.raises(TypeError, match="only one-element Vectors can be converted to Python scalars"):
        float(Vector([1.0, 2.0]))


# ---- Values take attributes and weak references, as micrograd's and PyTorch's do ------------------


def test_values_take_user_attributes() -> None:
    n = Value(1.0)
    n._vis_color = "red"  # Eureka Labs' micrograd training script sets this
    n.m = 0.0  # and its AdamW keeps moments on the parameter
    assert (n._vis_color, n.m) == ("red", 0.0)
    assert (n * 2).data == 2.0


def test_values_can_be_weakly_referenced() -> None:
    x = Value(1.0)
    ref = weakref.ref(x)
    assert ref() is x
    del x
    assert ref() is None  # no cycle keeps a Value alive


# ---- numbers a Value cannot hold --------------------------------------------------------------------


def test_numpy_bools_are_numbers_and_huge_ints_overflow_with_a_message() -> None:
    np: Any = numpy()
    assert Value(np.True_).data == 1.0
    with pytest.raises(OverflowError, match="too large to be converted to a float"):
        Value(10**400)
    with pytest.raises(TypeError, match=r"got numpy.str_"):
        Value(np.str_("1"))


def test_grad_set_to_none_counts_as_zero_and_a_wrong_grad_is_refused_before_any_change() -> None:
    a, b = Value(1.0), Value(2.0)
    y = a * b
    a.grad = None  # PyTorch's way to zero a gradient
    y.backward(retain_graph=True)
    assert (a.grad, b.grad) == (2.0, 1.0)
    with pytest.raises(TypeError, match=r"\.grad of a Value must be a real number or None, got str"):
        b.grad = "oops"  # type: ignore[assignment]  # the wrong type is the subject
    assert (a.grad, b.grad, y.grad) == (2.0, 1.0, 1.0)  # nothing changed


# ---- an error shows the user's lines, not a wall of vjpgrad's frames (issue 21) ------------------------


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
    ours = [f for f in frames if "/vjpgrad/" in f.filename.replace("\\", "/")]
    theirs = [f for f in frames if f not in ours]
    assert [f.name for f in theirs] == ["test_a_custom_rules_mistake_shows_the_users_frames_and_the_message", "_"]
    assert len(ours) <= 3  # the entry point, and where the number was read
    assert ours[0].name == "gradients"


def test_full_tracebacks_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    import traceback

    monkeypatch.setenv("VJPGRAD_FULL_TRACEBACK", "1")
    y = Vector([1.0, 2.0]) * 2
    with pytest.raises(RuntimeError) as caught:
        y.backward()
    names = [f.name for f in traceback.extract_tb(caught.value.__traceback__)]
    assert "seeds_for" in names
