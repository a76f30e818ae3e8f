"""The core's last holes (issue 19, items 7-15): each test failed before its fix."""

from __future__ import annotations

import math

import pytest

import vjpgrad
from vjpgrad import Value, Vector
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported
from vjpgrad.optim import SGD, Adam, AdamW

# ---- == and != compare data, hashing stays by identity (item 2) -----------------------------------


def test_equality_compares_data_as_a_0d_tensor_does() -> None:
    y = Value(2.0) * 3
    assert y == 6.0
    assert (y != 6.0) is False
    assert Value(1.5) == Value(1.5)
    assert Value(1.5) != Value(2.5)
    assert Value(math.nan) != Value(math.nan)
    assert 6.0 == y  # noqa: SIM300 - the reflected comparison is the subject


def test_equality_with_a_foreign_type_is_false_not_an_error() -> None:
    assert Value(1.0) != "1.0"
    assert Value(1.0) != [1.0]
    assert (Value(1.0) == None) is False  # noqa: E711 - the comparison itself is the subject


def test_values_stay_dict_keys_and_set_members_by_identity() -> None:
    a, b = Value(1.0), Value(1.0)
    assert a == b
    assert len({a, b}) == 2
    grads = {a: "a", b: "b"}
    assert grads[a] == "a"
    assert grads[b] == "b"
    assert hash(a) != hash(b)


# ---- micrograd's _prev and _op (SPEC §2) -------------------------------------------------------------


def test_prev_is_the_set_of_parents_and_op_the_symbol_as_in_micrograd() -> None:
    a, b = Value(2.0), Value(3.0)
    c = a * b
    assert c._prev == {a, b}
    assert c._op == "*"
    assert a._prev == set()
    assert a._op == ""
    assert (a * a)._prev == {a}
    assert vjpgrad.exp(a)._op == "exp"
    assert (3 * a)._prev == {a}  # the constant 3 is not a Value


# ---- .grad set to None (items 7 and 8) --------------------------------------------------------------


def test_grad_none_on_an_intermediate_counts_as_zero() -> None:
    x = Value(3.0)
    t = x * 2
    y = t * t
    t.grad = None
    y.backward()
    assert x.grad == 24.0
    assert t.grad == 12.0


def test_a_grad_of_the_wrong_type_is_refused_when_it_is_assigned() -> None:
    x = Value(3.0)
    with pytest.raises(TypeError, match=r"\.grad .* str"):
        x.grad = "0"  # type: ignore[assignment]  # the wrong type is the subject
    assert x.grad == 0.0


@pytest.mark.parametrize("optimizer", [SGD, Adam, AdamW])
def test_optimizers_skip_a_parameter_whose_grad_is_none(optimizer: type) -> None:
    kwargs = {"momentum": 0.9, "weight_decay": 0.1} if optimizer is SGD else {"weight_decay": 0.1}
    a, b = Value(1.0), Value(2.0)
    step = optimizer([a, b], lr=0.1, **kwargs)
    (a * b).backward()
    b.grad = None
    step.step()
    assert b.data == 2.0
    assert b.grad is None
    assert a.data != 1.0
    assert "momentum_buffer" not in step.state_dict()["state"][1]


# ---- seeds that are dicts or sets are refused (item 9) ----------------------------------------------


@pytest.mark.parametrize("seed", [{0: 5.0, 1: 7.0}, {5.0, 7.0}, frozenset({5.0, 7.0})])
def test_a_dict_or_set_seed_is_refused_by_every_entry_point(seed: object) -> None:
    def output() -> tuple[Vector, Vector]:
        x = Vector([1.0, 2.0])
        return x, x * x

    x, y = output()
    with pytest.raises(TypeError, match=r"(dict|set|frozenset)"):
        y.backward(seed)  # type: ignore[arg-type]  # the wrong type is the subject
    assert x.grad.tolist() == [0.0, 0.0]
    with pytest.raises(TypeError, match=r"(dict|set|frozenset)"):
        vjpgrad.gradients(y, x, seed)
    with pytest.raises(TypeError, match=r"(dict|set|frozenset)"):
        vjpgrad.explain(y, seed)  # type: ignore[arg-type]  # the wrong type is the subject
    _, vjp_fn = vjpgrad.vjp(lambda v: [v[0] * v[1], v[1]], [1.0, 2.0])
    with pytest.raises(TypeError, match=r"(dict|set|frozenset)"):
        vjp_fn(seed)


# ---- create_graph through a mask gives a differentiable zero (item 10) ------------------------------


@pytest.mark.parametrize(
    ("f", "at"),
    [
        (lambda x: x.relu(), -1.0),
        (lambda x: abs(x), 0.0),
        (lambda x: F.max([x, 2.0]), 1.0),
        (lambda x: x**0, 3.0),
    ],
)
def test_a_masked_first_derivative_is_a_zero_that_can_be_differentiated_again(f: object, at: float) -> None:
    x = Value(at)
    (g,) = vjpgrad.gradients(f(x), x, create_graph=True)  # type: ignore[operator]  # f is a lambda
    assert g.data == 0.0
    assert g.requires_grad
    (gg,) = vjpgrad.gradients(g, x, allow_unused=True)
    assert gg.data == 0.0


def test_grad_of_grad_of_relu_is_zero_not_an_error() -> None:
    assert vjpgrad.grad(vjpgrad.grad(lambda x: x.relu()))(-1.0) == 0.0
    assert vjpgrad.grad(vjpgrad.grad(lambda x: abs(x)))(0.0) == 0.0


# ---- forward mode skips masked edges (item 11) -------------------------------------------------------


@pytest.mark.parametrize("tangent", [math.inf, math.nan, -math.inf])
def test_jvp_through_a_mask_is_exactly_zero_whatever_the_tangent(tangent: float) -> None:
    assert vjpgrad.jvp(lambda x: x.relu(), (-1.0,), (tangent,))[1] == 0.0
    assert vjpgrad.jvp(lambda x: x**0, (2.0,), (tangent,))[1] == 0.0
    assert vjpgrad.jvp(lambda x: F.max([x, 2.0]), (1.0,), (tangent,))[1] == 0.0


# ---- a huge int gets the OverflowError (item 12) ------------------------------------------------------


def test_an_int_too_large_for_a_float_is_an_overflow_error_naming_its_size() -> None:
    with pytest.raises(OverflowError, match=r"about 5,?001 digits"):
        Value(10**5000)
    with pytest.raises(OverflowError, match=r"310 digits"):
        Value(10**309)


# ---- .data assigned between forward and backward (item 13) ------------------------------------------


def test_a_pass_uses_the_numbers_of_the_forward_pass_at_every_order() -> None:
    x = Value(3.0)
    y = x * x
    x.data = 5.0
    (first,) = vjpgrad.gradients(y, x, retain_graph=True)
    (differentiable,) = vjpgrad.gradients(y, x, create_graph=True)
    assert first.data == 6.0
    assert differentiable.data == 6.0


def test_the_saved_numbers_of_other_operations_are_those_of_the_forward_pass_too() -> None:
    x = Value(0.5)
    y = vjpgrad.tanh(x) * vjpgrad.exp(x)
    (before,) = vjpgrad.gradients(y, x, retain_graph=True)
    x.data = 2.0
    (first,) = vjpgrad.gradients(y, x, retain_graph=True)
    (differentiable,) = vjpgrad.gradients(y, x, create_graph=True)
    assert first.data == before.data
    assert differentiable.data == before.data


# ---- Vector: NumPy indices, dot of unequal lengths (item 14) ----------------------------------------


def test_a_vector_takes_a_numpy_integer_index_as_a_list_does() -> None:
    np = pytest.importorskip("numpy")
    v = Vector([1.0, 2.0, 3.0])
    assert v[np.int64(1)] is v[1]
    assert v[np.int32(-1)] is v[2]
    with pytest.raises(TypeError, match="bool"):
        v[np.bool_(True)]  # type: ignore[call-overload]  # the wrong type is the subject


def test_dot_of_unequal_lengths_is_refused_as_torch_dot_refuses() -> None:
    with pytest.raises(ValueError, match=r"dot.* 3 .* 2"):
        Vector([1.0, 2.0, 3.0]).dot(Vector([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"dot.* 2 .* 1"):
        Vector([1.0, 2.0]).dot([1.0])


# ---- max of a signed-zero tie (item 15): the first of equal values, as Python's max --------------------
# torch.max's vectorised reduction returns either zero by length and position ([-0.0, 0.0] gives 0.0,
# [-1.0, -0.0, 0.0, -0.0, 0.0] gives -0.0): a known difference, listed in the docs.


def test_max_of_a_signed_zero_tie_is_the_first_operand() -> None:
    assert math.copysign(1.0, F.max([-0.0, 0.0]).data) == -1.0
    assert math.copysign(1.0, F.max([0.0, -0.0]).data) == 1.0
    assert math.copysign(1.0, F.max([0.0, -0.0, 0.0]).data) == 1.0


@pytest.mark.parametrize(("name", "at"), [("relu", -1.0), ("relu", 0.0), ("abs", 0.0), ("abs", 2.0)])
def test_relu_and_abs_first_derivatives_stay_differentiable_as_in_torch(name: str, at: float) -> None:
    torch = pytest.importorskip("torch")
    x = Value(at)
    (g,) = vjpgrad.gradients(getattr(x, name)() if name == "relu" else abs(x), x, create_graph=True)
    t = torch.tensor(at, dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad(getattr(torch, name)(t), t, create_graph=True)
    assert g.requires_grad == tg.requires_grad
    assert g.data == tg.item()
    (gg,) = vjpgrad.gradients(g, x, allow_unused=True)
    (tgg,) = torch.autograd.grad(tg, t, allow_unused=True)
    assert gg.data == (0.0 if tgg is None else tgg.item())
