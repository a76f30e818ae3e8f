"""gradients, the function transforms, and higher-order derivatives: against finite
differences always, and against PyTorch (float64) when it is installed."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from _helpers import central_difference, close
from hypothesis import given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector, grad, gradients, hessian, jacobian, jvp, value_and_grad, vjp

try:
    import torch
except ImportError:  # pragma: no cover - the PyTorch cross-checks skip
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch cross-checks need torch")

xs = st.floats(0.2, 2.0)

# Scalar functions written once for both engines: Values and torch tensors share these methods.
COMPOSITES: dict[str, Callable[[Any], Any]] = {
    "x**3 sin x": lambda x: x**3 * x.sin(),
    "exp(tanh x) / x": lambda x: (x.tanh()).exp() / x,
    "log(1 + x*x) * cos x": lambda x: (x * x + 1).log() * x.cos(),
    "sqrt(x) * sigmoid(2x)": lambda x: x.sqrt() * (2 * x).sigmoid(),
    "x ** x": lambda x: x**x,
    "2 ** x - 1 / x": lambda x: 2**x - 1 / x,
    "tan(x / 3) * relu(x)": lambda x: (x / 3).tan() * x.relu(),
}


def torch_derivatives(f: Callable[[Any], Any], x: float, order: int) -> list[float]:
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)  # type: ignore[union-attr]
    y, found = f(t), []
    for _ in range(order):
        (y,) = torch.autograd.grad(y, t, create_graph=True)  # type: ignore[union-attr]
        found.append(y.item())
    return found


# ---- gradients -----------------------------------------------------------------------------


def test_gradients_returns_values_and_leaves_grad_alone() -> None:
    a, b = Value(2.0), Value(3.0)
    y = a * b + a
    ga, gb = gradients(y, [a, b])
    assert (ga.data, gb.data) == (4.0, 2.0)
    assert (a.grad, b.grad) == (0.0, 0.0)
    assert not ga.requires_grad


def test_gradients_frees_the_graph_unless_retained() -> None:
    a = Value(2.0)
    y = a * a
    gradients(y, [a], retain_graph=True)
    gradients(y, [a])
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        gradients(y, [a])


def test_gradients_with_create_graph_differentiates_again() -> None:
    a = Value(1.5)
    y = a**4
    (d1,) = gradients(y, a, create_graph=True)
    (d2,) = gradients(d1, a, create_graph=True)
    (d3,) = gradients(d2, a)
    assert (d1.data, d2.data, d3.data) == (4 * 1.5**3, 12 * 1.5**2, 24 * 1.5)


def test_gradients_with_seeds_is_a_vjp() -> None:
    x = Vector([1.0, 2.0])
    y = x * x
    gx = gradients(y, x, seeds=[3.0, 0.5])
    assert [g.data for g in gx] == [6.0, 2.0]


def test_an_unused_input_raises_like_pytorch_unless_allowed() -> None:
    a, b = Value(1.0), Value(2.0)
    y = a * 3
    with pytest.raises(RuntimeError, match=r"appears to not have been used in the graph.*allow_unused=True"):
        gradients(y, [a, b], retain_graph=True)
    ga, gb = gradients(y, [a, b], allow_unused=True)
    assert (ga.data, gb.data) == (3.0, 0.0)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda a, y: gradients(y, [Value(1.0, requires_grad=False)]),
            RuntimeError,
            r"inputs\[0\] does not require grad",
        ),
        (
            lambda a, y: gradients(y, "a"),
            TypeError,
            "inputs must be a Value, a Vector or a sequence of Values, got str",
        ),
        (lambda a, y: gradients(3.0, [a]), TypeError, "outputs must be a Value"),
        (
            lambda a, y: gradients(y, [a], seeds=[1.0, 2.0]),
            TypeError,
            "seeds must be a real number for a single output, got list",
        ),
        (lambda a, y: gradients(y, [a], seeds="x"), TypeError, "seeds must be a real number"),
        (lambda a, y: gradients(y, [a], create_graph=1), TypeError, "create_graph must be a bool"),
        (lambda a, y: gradients(Vector([y, y]), [a]), RuntimeError, "implicitly created only for scalar outputs"),
    ],
)
def test_gradients_refuses_bad_input_before_anything_changes(
    call: Callable[[Value, Value], Any], error: type[Exception], message: str
) -> None:
    a = Value(2.0)
    y = a * a
    with pytest.raises(error, match=message):
        call(a, y)
    (g,) = gradients(y, [a])  # the graph is intact
    assert g.data == 4.0


@needs_torch
@pytest.mark.parametrize("name", list(COMPOSITES))
@given(x=xs)
def test_first_second_and_third_derivatives_agree_with_pytorch(name: str, x: float) -> None:
    f = COMPOSITES[name]
    ours = [grad(f)(x), grad(grad(f))(x), grad(grad(grad(f)))(x)]
    theirs = torch_derivatives(f, x, 3)
    for order, (mine, expected) in enumerate(zip(ours, theirs, strict=True), start=1):
        assert math.isclose(mine, expected, rel_tol=1e-9, abs_tol=1e-12), (name, x, order, mine, expected)


@needs_torch
@given(x=xs, y=xs)
def test_gradients_with_create_graph_twice_agrees_with_pytorch(x: float, y: float) -> None:
    def f(a: Any, b: Any) -> Any:
        return a * b.exp() + (a * a * b).sin()

    a, b = Value(x), Value(y)
    ga, gb = gradients(f(a, b), [a, b], create_graph=True)
    gaa, gab = gradients(ga, [a, b], create_graph=True)
    gba, gbb = gradients(gb, [a, b])
    ta, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (x, y))  # type: ignore[union-attr]
    tga, tgb = torch.autograd.grad(f(ta, tb), [ta, tb], create_graph=True)  # type: ignore[union-attr]
    expected = [*torch.autograd.grad(tga, [ta, tb], retain_graph=True), *torch.autograd.grad(tgb, [ta, tb])]  # type: ignore[union-attr]
    for mine, theirs in zip([gaa, gab, gba, gbb], expected, strict=True):
        assert math.isclose(mine.data, theirs.item(), rel_tol=1e-9, abs_tol=1e-12)


# ---- the transforms: shapes, nesting, errors ----------------------------------------------


def test_grad_of_a_float_is_a_float_and_of_a_list_a_list() -> None:
    assert grad(lambda x: x * x)(3.0) == 6.0
    assert grad(lambda v: v[0] * v[1])([2.0, 5.0]) == [5.0, 2.0]
    assert isinstance(grad(lambda x: x * x)(3), float)


def test_grad_with_several_argnums_returns_a_tuple() -> None:
    def f(x: Value, y: Value, z: float) -> Value:
        return x * y * z

    assert grad(f, argnums=(0, 1))(2.0, 3.0, 4.0) == (12.0, 8.0)
    assert grad(f, argnums=1)(2.0, 3.0, 4.0) == 8.0
    assert value_and_grad(f, argnums=-2)(2.0, 3.0, 4.0) == (24.0, 8.0)


def test_grad_of_a_constant_function_is_zero() -> None:
    assert grad(lambda x: 3.0)(1.0) == 0.0
    assert grad(lambda v: v[0])([1.0, 2.0]) == [1.0, 0.0]


def test_grad_of_a_non_scalar_function_points_to_jacobian_and_vjp() -> None:
    with pytest.raises(TypeError, match=r"scalar output.*jacobian.*vjp"):
        grad(lambda v: v * 2)([1.0, 2.0])


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: grad(lambda x: x)("1"), TypeError, "argument 0 must be a number or a list of numbers, got str"),
        (
            lambda: grad(lambda x: x)([1.0, "a"]),
            TypeError,
            "argument 0 must be a number or a list of numbers, has a str",
        ),
        (lambda: grad(lambda x: x, argnums=2)(1.0), ValueError, "argnums 2 is out of range"),
        (lambda: grad(lambda x: "s")(1.0), TypeError, "must return a number, a Value or a Vector, got str"),
        (lambda: hessian(lambda x: x, argnums=(0,))(1.0), TypeError, "hessian takes one argnums"),
    ],
)
def test_transforms_refuse_bad_input(call: Callable[[], Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_a_transform_inside_another_answers_in_values() -> None:
    inner: list[Any] = []

    def f(x: Value) -> Value:
        g = grad(lambda y: y * y * x)(x)  # d/dy (y^2 x) at y = x: 2x^2
        inner.append(g)
        return g

    assert grad(f)(3.0) == 12.0  # d/dx 2x^2 = 4x, not d/dx 3x^2: y is not x
    assert isinstance(inner[0], Value)
    assert grad(lambda x: grad(lambda y: y * x)(x))(5.0) == 1.0  # JAX's perturbation-confusion test


def test_a_closure_over_an_outer_variable_is_differentiated_through() -> None:
    assert grad(lambda x: grad(lambda y: x * y)(2.0))(3.0) == 1.0


@pytest.mark.parametrize("name", list(COMPOSITES))
@given(x=xs)
def test_grad_agrees_with_finite_differences(name: str, x: float) -> None:
    f = COMPOSITES[name]
    assert close(grad(f)(x), central_difference(lambda t: f(Value(t)).data, x))
    assert close(grad(grad(f))(x), central_difference(grad(f), x), rel=1e-3, abs_tol=1e-5)


# ---- vjp, jvp, jacobian, hessian ------------------------------------------------------------


def two_inputs(v: Any, w: Any) -> Any:
    """R^2 x R -> R^3, written for Vectors and torch tensors alike."""
    return [v[0] * v[1] * w, (v[0] * w).sin(), v[1].exp() - w * w]


def as_vector(f: Callable[..., list[Any]]) -> Callable[..., Vector]:
    return lambda *args: Vector(f(*args))


def test_vjp_cotangents_are_shaped_like_the_primals() -> None:
    out, vjp_fn = vjp(as_vector(two_inputs), [1.0, 2.0], 0.5)
    assert out == pytest.approx([1.0, math.sin(0.5), math.exp(2.0) - 0.25])
    dv, dw = vjp_fn([1.0, 0.0, 0.0])
    assert dv == pytest.approx([1.0, 0.5])  # d(v0 v1 w)/dv = (v1 w, v0 w)
    assert dw == pytest.approx(2.0)
    dv, dw = vjp_fn([0.0, 0.0, 1.0])  # called again: the graph is kept
    assert dv == pytest.approx([0.0, math.exp(2.0)])
    with pytest.raises(ValueError, match="cotangent has length 2 but the output has length 3"):
        vjp_fn([1.0, 2.0])
    with pytest.raises(TypeError, match="cotangent must be a sequence of numbers"):
        vjp_fn(1.0)


def test_jvp_is_forward_mode_j_times_t() -> None:
    out, tangent = jvp(as_vector(two_inputs), ([1.0, 2.0], 0.5), ([1.0, 0.0], 0.0))
    assert out == pytest.approx([1.0, math.sin(0.5), math.exp(2.0) - 0.25])
    assert tangent == pytest.approx([1.0, 0.5 * math.cos(0.5), 0.0])  # the column d/dv0
    _, scalar_tangent = jvp(lambda x: x * x, (3.0,), (2.0,))
    assert scalar_tangent == 12.0
    with pytest.raises(ValueError, match="tangent 0 has length 1 but its primal has length 2"):
        jvp(as_vector(two_inputs), ([1.0, 2.0], 0.5), ([1.0], 0.0))


def test_jacobian_shapes() -> None:
    assert jacobian(lambda x: x * x)(3.0) == 6.0
    assert jacobian(lambda x: Vector([x, x * x]))(3.0) == [1.0, 6.0]
    assert jacobian(lambda v: v[0] * v[1])([2.0, 3.0]) == [3.0, 2.0]
    assert jacobian(lambda v: Vector([v[0] * v[1], v[0] + v[1]]))([2.0, 3.0]) == [[3.0, 2.0], [1.0, 1.0]]


def test_hessian_of_a_quadratic_form() -> None:
    # f(v) = v0^2 v1 + 3 v1^2: H = [[2 v1, 2 v0], [2 v0, 6]]
    assert hessian(lambda v: v[0] * v[0] * v[1] + 3 * v[1] * v[1])([1.0, 2.0]) == [[4.0, 2.0], [2.0, 6.0]]


@needs_torch
@given(v0=xs, v1=xs, w=xs)
def test_vjp_jvp_jacobian_hessian_agree_with_torch_autograd_functional(v0: float, v1: float, w: float) -> None:
    functional = torch.autograd.functional  # type: ignore[union-attr]

    def t(x: Any) -> Any:
        return torch.tensor(x, dtype=torch.float64)  # type: ignore[union-attr]

    def torch_f(v: Any, w_: Any) -> Any:
        return torch.stack(two_inputs(v, w_))  # type: ignore[union-attr]

    primals = (t([v0, v1]), t(w))
    cotangent = [0.3, -1.2, 2.0]
    _, (tv, tw) = functional.vjp(torch_f, primals, t(cotangent))
    _, vjp_fn = vjp(as_vector(two_inputs), [v0, v1], w)
    dv, dw = vjp_fn(cotangent)
    assert dv == pytest.approx(tv.tolist(), rel=1e-12)
    assert dw == pytest.approx(tw.item(), rel=1e-12)

    tangents = (t([0.7, -0.2]), t(1.5))
    _, tangent_out = functional.jvp(torch_f, primals, tangents)
    _, ours = jvp(as_vector(two_inputs), ([v0, v1], w), ([0.7, -0.2], 1.5))
    assert ours == pytest.approx(tangent_out.tolist(), rel=1e-12, abs=1e-15)

    jv, jw = functional.jacobian(torch_f, primals)
    ours_v, ours_w = jacobian(as_vector(two_inputs), argnums=(0, 1))([v0, v1], w)
    assert ours_v == [pytest.approx(row, rel=1e-12) for row in jv.tolist()]
    assert ours_w == pytest.approx(jw.tolist(), rel=1e-12)

    def scalar(v: Any) -> Any:
        return v[0] ** 3 * v[1] + (v[0] * v[1]).sin() + v[1].exp() / v[0]

    expected = functional.hessian(scalar, t([v0, v1])).tolist()
    assert hessian(scalar)([v0, v1]) == [pytest.approx(row, rel=1e-10) for row in expected]


@needs_torch
def test_a_third_order_mixed_derivative_agrees_with_pytorch() -> None:
    def f(a: Any, b: Any) -> Any:
        return (a * b).sin() * a.exp() + a**2 * b**3

    d_abb = grad(lambda a, b: grad(lambda a2, b2: grad(f, 1)(a2, b2), 1)(a, b), 0)(0.7, 1.3)
    ta, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (0.7, 1.3))  # type: ignore[union-attr]
    (gb,) = torch.autograd.grad(f(ta, tb), tb, create_graph=True)  # type: ignore[union-attr]
    (gbb,) = torch.autograd.grad(gb, tb, create_graph=True)  # type: ignore[union-attr]
    (gabb,) = torch.autograd.grad(gbb, ta)  # type: ignore[union-attr]
    assert d_abb == pytest.approx(gabb.item(), rel=1e-12)


def test_transforms_accept_module_functions() -> None:
    assert grad(vjpgrad.log)(2.0) == 0.5
    assert grad(lambda x: vjpgrad.exp(vjpgrad.sin(x)))(0.0) == 1.0
