"""Derivatives beyond one ``backward``: ``gradients`` (``torch.autograd.grad``), ``create_graph`` and
higher orders, and the function transforms as JAX and torch.func define them (``grad``,
``value_and_grad``, ``vjp``, ``jvp``, ``jacobian``, ``hessian``): keyword arguments, argnums, and
nesting through list, tuple and Vector arguments without perturbation confusion. Against finite
differences always, and against PyTorch (float64: torch.autograd.functional, torch.func) when it
is installed.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from _helpers import bits, central_difference, close, four_outputs
from hypothesis import given
from hypothesis import strategies as st
from op_cases import CASES, MAX_WITH_CONSTANTS, OpCase, Spelling, value_points

import vjpgrad
from vjpgrad import Value, Vector, grad, gradients, hessian, jacobian, jvp, value_and_grad, vjp
from vjpgrad.nn import functional as F  # noqa: N812 - as torch.nn.functional is imported

try:
    import torch
except ImportError:  # pragma: no cover - the PyTorch cross-checks skip
    torch = None


needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch cross-checks need torch")


xs = st.floats(0.2, 2.0)


# ---- gradients: torch.autograd.grad --------------------------------------------------------------


def test_gradients_returns_values_and_leaves_grad_alone() -> None:
    a, b = Value(2.0), Value(3.0)
    y = a * b + a
    ga, gb = gradients(y, [a, b])
    assert (ga.data, gb.data) == (4.0, 2.0)
    assert (a.grad, b.grad) == (0.0, 0.0)
    assert not ga.requires_grad


def test_gradients_equals_backward_and_leaves_grad_alone() -> None:
    a, b = Value(0.7), Value(1.3)
    y = four_outputs(a, b)
    ga, gb = vjpgrad.gradients(y, [a, b], [1.0, -2.0, 0.5, 3.0], retain_graph=True)
    assert (a.grad, b.grad) == (0.0, 0.0)
    y.backward([1.0, -2.0, 0.5, 3.0])
    assert (ga.data, gb.data) == (a.grad, b.grad)


def test_gradients_frees_the_graph_unless_retained() -> None:
    a = Value(2.0)
    y = a * a
    gradients(y, [a], retain_graph=True)
    gradients(y, [a])
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        gradients(y, [a])


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
            lambda a, y: gradients(y, [a], seeds={1.0: 2.0}),
            TypeError,
            "seeds must be a real number for a single output, got dict",
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


# ---- create_graph and higher orders --------------------------------------------------------------


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


def test_gradients_with_create_graph_differentiates_again() -> None:
    a = Value(1.5)
    y = a**4
    (d1,) = gradients(y, a, create_graph=True)
    (d2,) = gradients(d1, a, create_graph=True)
    (d3,) = gradients(d2, a)
    assert (d1.data, d2.data, d3.data) == (4 * 1.5**3, 12 * 1.5**2, 24 * 1.5)


@pytest.mark.slow  # central differences or torch.func over every operation: seconds
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


FORMS = [(case, form) for case in CASES for form in case.spellings()]


def first_derivatives_alike(fn: Callable[..., Any], points: list[tuple[float, ...]]) -> None:
    """At each point, the differentiable pass gives the float pass's gradients, bit for bit."""
    for point in points:
        xs = [Value(x) for x in point]
        out = fn(*xs)
        if not out.requires_grad:
            continue
        plain = vjpgrad.gradients(out, xs, retain_graph=True)
        graphed = vjpgrad.gradients(out, xs, create_graph=True)
        assert [bits(g.data) for g in graphed] == [bits(g.data) for g in plain], point


@pytest.mark.parametrize(("case", "form"), FORMS, ids=[f"{case.name}: {form.text}" for case, form in FORMS])
def test_create_graph_gives_the_same_first_derivatives(case: OpCase, form: Spelling) -> None:
    for numbers in form.number_choices():
        first_derivatives_alike(form.of_values(numbers), value_points(form.values))


@pytest.mark.parametrize(("name", "fn", "count"), MAX_WITH_CONSTANTS, ids=[m[0] for m in MAX_WITH_CONSTANTS])
def test_create_graph_gives_the_same_first_derivatives_of_max_with_constants(
    name: str, fn: Callable[..., Any], count: int
) -> None:
    first_derivatives_alike(fn, value_points(count))


# ---- second derivatives against central differences of the first -------------------------------


def central_difference_of_order_4(f: Callable[[float], float], x: float, h: float) -> float:
    """f'(x) from f at x +- h and x +- 2h: its error falls as h ** 4. The differences are taken
    first, so a constant f gives exactly 0."""
    return (8 * (f(x + h) - f(x - h)) - (f(x + 2 * h) - f(x - 2 * h))) / (12 * h)


@pytest.mark.slow  # central differences or torch.func over every operation: seconds
@pytest.mark.parametrize(("case", "form"), FORMS, ids=[f"{case.name}: {form.text}" for case, form in FORMS])
@given(data=st.data())
def test_each_second_derivative_agrees_with_central_differences_of_the_first(
    case: OpCase, form: Spelling, data: st.DataObject
) -> None:
    xs = list(data.draw(case.domain, label="operands"))  # a form with a number for a Value takes that operand

    def call(values: list[float]) -> tuple[Any, list[Value]]:
        args = [Value(x) if kind == "v" else x for kind, x in zip(form.operands, values, strict=True)]
        return form.call(*args), args

    for i, kind in enumerate(form.operands):
        if kind != "v":
            continue
        out, args = call(xs)
        (g,) = vjpgrad.gradients(out, [args[i]], create_graph=True)
        # a first derivative that is a constant (x + y's) takes no gradient: the second is 0
        second = vjpgrad.gradients(g, [args[i]], allow_unused=True)[0].data if g.requires_grad else 0.0

        def first(t: float, i: int = i) -> float:
            out, args = call([t if k == i else x for k, x in enumerate(xs)])
            return vjpgrad.gradients(out, [args[i]])[0].data

        h = 1e-6 * max(1.0, abs(xs[i]))
        numeric = central_difference_of_order_4(first, xs[i], h)
        rounding = 8 * 2**-52 * abs(first(xs[i])) / h  # a few ulps of each first derivative, over 12h / 8
        assert math.isclose(second, numeric, rel_tol=1e-6, abs_tol=1e-8 + rounding), (form.text, xs, i, second, numeric)


COMPOSITIONS: list[tuple[str, Callable[[Any], Any], float]] = [
    ("x ** x", lambda x: x**x, 1.3),
    ("x / (1 + x * x)", lambda x: x / (1 + x * x), 0.35),
    ("abs * x", lambda x: abs(x) * x, -1.5),
    ("relu ** 2", lambda x: x.relu() ** 2, 1.2),
    ("max(x * x, 2 - x)", lambda x: F.max([x * x, 2 - x]), 1.5),
]
"""Second derivatives through a Value used twice, a mask and max (each operation alone is above)."""


def first_derivative(fn: Callable[[Any], Any], x0: float) -> float:
    x = Value(x0)
    fn(x).backward()
    return x.grad


@pytest.mark.parametrize(("name", "fn", "x0"), COMPOSITIONS, ids=[s[0] for s in COMPOSITIONS])
def test_second_derivatives_of_compositions_agree_with_central_differences_of_the_first(
    name: str, fn: Callable[[Any], Any], x0: float
) -> None:
    x = Value(x0)
    (g,) = vjpgrad.gradients(fn(x), [x], create_graph=True)
    (gg,) = vjpgrad.gradients(g, [x])
    h = 1e-5
    numeric = (first_derivative(fn, x0 + h) - first_derivative(fn, x0 - h)) / (2 * h)
    assert math.isclose(gg.data, numeric, rel_tol=1e-6, abs_tol=1e-8), (name, gg.data, numeric)


def test_second_derivatives_by_hand() -> None:
    # d2/dx2 x ** 2.5 = 2.5 * 1.5 * x ** 0.5 = 7.5 at 4; d2/dx2 exp = exp; d2/dx2 x ** 3 = 6x
    assert vjpgrad.grad(vjpgrad.grad(lambda x: x**2.5))(4.0) == 7.5
    assert vjpgrad.grad(vjpgrad.grad(lambda x: x**3))(-2.0) == -12.0
    assert vjpgrad.grad(vjpgrad.grad(lambda x: x.exp()))(0.0) == 1.0
    # the mask of x ** y where y == 0 holds in the differentiable pass too: d/dx x ** y = 0 there
    x, y = Value(0.0), Value(0.0)
    gx, gy = vjpgrad.gradients(x**y, [x, y], create_graph=True)
    assert (bits(gx.data), bits(gy.data)) == (bits(0.0), bits(0.0))  # 0 ** 0: d/dy masked where x == 0 <= y


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


# ---- grad, value_and_grad, vjp, jvp, jacobian, hessian -------------------------------------------


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
        (lambda: grad(lambda x: x, argnums=1.0)(1.0), TypeError, "argnums must be an int or a tuple of ints, got fl"),
        (lambda: grad(lambda x: x, argnums=None)(1.0), TypeError, "argnums must be an int .* got NoneType"),
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


@pytest.mark.slow  # finite differences, or torch, over every case: seconds
@pytest.mark.parametrize("name", list(COMPOSITES))
@given(x=xs)
def test_grad_agrees_with_finite_differences(name: str, x: float) -> None:
    f = COMPOSITES[name]
    assert close(grad(f)(x), central_difference(lambda t: f(Value(t)).data, x))
    assert close(grad(grad(f))(x), central_difference(grad(f), x), rel=1e-3, abs_tol=1e-5)


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


def test_a_vjp_fn_made_outside_a_transform_is_differentiated_inside_one() -> None:
    """``vjp_fn`` of a top-level ``vjp`` called inside ``grad`` answers in Values through which the
    cotangent is differentiated, as torch.func's and JAX's: d/dc (c * f'(x)) = f'(x), not 0.0.
    Called at the top level, with a number or a Value, it answers in numbers and keeps its graph
    for the next call."""
    x = 0.4
    slope = math.sin(x) + x * math.cos(x)  # d/dx (sin(x) * x)
    _, vjp_fn = vjp(lambda t: vjpgrad.sin(t) * t, x)
    assert grad(lambda c: vjp_fn(c)[0])(2.0) == slope
    assert jacobian(lambda c: vjp_fn(c)[0])(2.0) == slope
    assert vjp_fn(2.0) == (2.0 * slope,)  # on a number, still a number
    assert vjp_fn(Value(2.0)) == (2.0 * slope,)  # a Value at the top level: its number
    assert grad(lambda c: vjp_fn(c)[0])(2.0) == slope  # the graph kept: called again, the same
    _, vjp_vector = vjp(lambda v: Vector([v[0] * v[1], v[1] * 2.0]), [3.0, 0.5])
    assert grad(lambda c: vjp_vector([c, 1.0])[0][1])(2.0) == 3.0  # d/dc (c * v0 + 2)


@pytest.mark.parametrize(
    "transformed",
    [
        lambda w: vjpgrad.grad(lambda t: t * w)(3.0),
        lambda w: vjpgrad.value_and_grad(lambda t: t * w)(3.0)[1],
        lambda w: jacobian(lambda t: [t * w, t])(3.0)[0],
        lambda w: vjpgrad.hessian(lambda t: t * t * w)(3.0),
        lambda w: vjpgrad.jvp(lambda t: t * w, (3.0,), (1.0,))[1],
        lambda w: vjp(lambda t: t * w, 3.0)[0],
        lambda w: vjp(lambda t: t * w, Value(3.0, requires_grad=False))[0],
    ],
    ids=["grad", "value_and_grad", "jacobian", "hessian", "jvp", "vjp", "vjp of a Value taking no gradient"],
)
def test_every_transform_of_numbers_inside_a_recording_says_to_give_it_values(transformed: Any) -> None:
    """Each transform of numbers refuses inside compile with the same advice (grad's, jacobian's
    and hessian's said "take gradients of what the function returns, outside it"; a vjp of a Value
    taking no gradient, "use a vjpgrad operation instead")."""
    with pytest.raises(vjpgrad.DataDependentError, match=r"give it the function's Values"):
        vjpgrad.compile(lambda w: transformed(w) * w)(Value(1.5))


def test_a_transform_answering_in_numbers_inside_a_recording_says_to_give_it_values() -> None:
    """Inside ``vjpgrad.compile``'s recording, a transform of numbers (``vjp(f, 3.0)``) and the
    ``vjp_fn`` of one answer in numbers, as eager code's, reading a Value's number, which a replay
    cannot: refused, as before, but the advice was the general one (use a vjpgrad operation
    instead), which names nothing the user wrote. It says to give them Values (then the compiled
    function gives eager code's numbers), or to call them outside."""
    w = Value(2.0)
    _, vjp_fn = vjp(lambda t: t * w, 3.0)

    def of_numbers(c: Value) -> Value:
        _, made_here = vjp(lambda t: t * w, 3.0)
        return made_here(1.0)[0] * c

    def of_values(c: Value) -> Value:
        _, made_here = vjp(lambda t: t * w, Value(3.0))
        return made_here(c)[0] * c

    refused = {"vjp_fn(cotangent) reads": lambda c: vjp_fn(c)[0] * c, "a transform of numbers reads": of_numbers}
    for what, f in refused.items():
        with pytest.raises(vjpgrad.DataDependentError, match=re.escape(what) + r".*give it the function.s Values"):
            vjpgrad.compile(f)(Value(1.5))
    compiled = vjpgrad.compile(of_values)
    for c in (1.5, 2.5, 2.5):
        found, eager = Value(c), Value(c)
        compiled(found).backward()
        of_values(eager).backward()
        assert bits(found.grad) == bits(eager.grad) == bits(4.0 * c)
    assert compiled.times_recorded == 1


def test_jvp_is_forward_mode_j_times_t() -> None:
    out, tangent = jvp(as_vector(two_inputs), ([1.0, 2.0], 0.5), ([1.0, 0.0], 0.0))
    assert out == pytest.approx([1.0, math.sin(0.5), math.exp(2.0) - 0.25])
    assert tangent == pytest.approx([1.0, 0.5 * math.cos(0.5), 0.0])  # the column d/dv0
    _, scalar_tangent = jvp(lambda x: x * x, (3.0,), (2.0,))
    assert scalar_tangent == 12.0
    with pytest.raises(ValueError, match="tangent 0 has length 1 but its primal has length 2"):
        jvp(as_vector(two_inputs), ([1.0, 2.0], 0.5), ([1.0], 0.0))


@pytest.mark.parametrize("tangent", [math.inf, math.nan, -math.inf])
def test_jvp_through_a_mask_is_exactly_zero_whatever_the_tangent(tangent: float) -> None:
    assert vjpgrad.jvp(lambda x: x.relu(), (-1.0,), (tangent,))[1] == 0.0
    assert vjpgrad.jvp(lambda x: x**0, (2.0,), (tangent,))[1] == 0.0
    assert vjpgrad.jvp(lambda x: F.max([x, 2.0]), (1.0,), (tangent,))[1] == 0.0


def test_jvp_keeps_a_negative_zero_tangent_as_torch_func_does() -> None:
    """A node's tangent is the sum of its operands' contributions started from -0.0, as the reverse
    pass starts its sums, so one contribution keeps its bits: the tangent of ``x * 2.0`` along
    ``-0.0`` is ``-0.0``, as torch.func.jvp gives (the sum started from 0.0 made it 0.0)."""
    assert bits(vjpgrad.jvp(lambda x: x * 2.0, (1.0,), (-0.0,))[1]) == bits(-0.0)
    assert bits(vjpgrad.jvp(lambda x: (x * 2.0).exp(), (1.0,), (-0.0,))[1]) == bits(-0.0)
    assert bits(vjpgrad.jvp(lambda x, y: x * y, (1.0, 3.0), (-0.0, -0.0))[1]) == bits(-0.0)
    assert bits(vjpgrad.jvp(lambda x, y: x * y, (1.0, 3.0), (0.0, -0.0))[1]) == bits(0.0)  # -0.0 + 0.0
    assert vjpgrad.jvp(lambda x: x * x, (3.0,), (1.0,))[1] == 6.0
    torch = pytest.importorskip("torch")
    from torch.func import jvp as torch_jvp

    one = torch.tensor(1.0, dtype=torch.float64)
    with warnings.catch_warnings():  # torch.func's first jvp of a process warns of torch.jit.script's deprecation
        warnings.simplefilter("ignore", DeprecationWarning)
        found = torch_jvp(lambda x: x * 2.0, (one,), (torch.tensor(-0.0, dtype=torch.float64),))[1]
    assert bits(float(found)) == bits(-0.0)


def test_jacobian_shapes() -> None:
    assert jacobian(lambda x: x * x)(3.0) == 6.0
    assert jacobian(lambda x: Vector([x, x * x]))(3.0) == [1.0, 6.0]
    assert jacobian(lambda v: v[0] * v[1])([2.0, 3.0]) == [3.0, 2.0]
    assert jacobian(lambda v: Vector([v[0] * v[1], v[0] + v[1]]))([2.0, 3.0]) == [[3.0, 2.0], [1.0, 1.0]]


def test_a_jacobian_of_a_jacobian_is_the_array_of_third_order_as_jacrev_of_jacrev() -> None:
    """The transforms nest: ``jacobian`` of a function returning a matrix (a list of Vectors, what
    ``jacobian`` itself returns inside another transform) gives one matrix per output row, each
    element ``d out[i][j] / d arg[k]``, as JAX's and torch.func's ``jacrev(jacrev(f))``. It raised
    "must return a number, a Value or a Vector, got list"."""

    def f(v: Any) -> Vector:
        return Vector([v[0] * v[1] * v[1], vjpgrad.sin(v[0])])

    third = jacobian(jacobian(f))([0.3, 0.7])
    x, y = 0.3, 0.7
    assert third == [[[0.0, 2.0 * y], [2.0 * y, 2.0 * x]], [[-math.sin(x), 0.0], [0.0, 0.0]]]
    rows = jacobian(lambda v: [Vector([v[0] * v[1], v[1]]), Vector([v[0], 3.0])])([2.0, 5.0])
    assert rows == [[[5.0, 2.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 0.0]]]
    assert jacobian(lambda x: [Vector([x, x * x])])(3.0) == [[1.0, 6.0]]  # a scalar argument: numbers
    with pytest.raises(TypeError, match=r"jacobian: the function must return .* or a matrix .* got list holding a str"):
        jacobian(lambda v: [Vector([v[0]]), "a"])([1.0])
    with pytest.raises(TypeError, match=r"or a matrix \(a list of Vectors\), got list holding a list"):
        jacobian(lambda v: [[Vector([v[0]])]])([1.0])  # a table of tables: one level of rows only
    with pytest.raises(ValueError, match="rows of one length"):
        jacobian(lambda v: [Vector([v[0]]), Vector([v[0], v[0]])])([1.0])
    torch = pytest.importorskip("torch")
    from torch.func import jacrev

    at = torch.tensor([0.3, 0.7], dtype=torch.float64)
    with warnings.catch_warnings():  # as torch.func's jvp above, should a first call of a process warn
        warnings.simplefilter("ignore", DeprecationWarning)
        expected = jacrev(jacrev(lambda t: torch.stack([t[0] * t[1] * t[1], torch.sin(t[0])])))(at)
    assert bits_of_nested(third) == bits_of_nested(expected.tolist())


def test_a_hessian_of_a_vector_valued_function_is_one_matrix_per_output_as_torch_funcs() -> None:
    """``hessian(f)`` of a function with several outputs gives one matrix of second derivatives
    per output, as ``torch.func.hessian``; it raised grad's "scalar output" error."""

    def f(v: Any) -> Vector:
        return Vector([v[0] * v[0] * v[1], vjpgrad.sin(v[1]) * v[0]])

    x, y = 1.5, 0.25
    assert hessian(f)([x, y]) == [[[2 * y, 2 * x], [2 * x, 0.0]], [[0.0, math.cos(y)], [math.cos(y), -math.sin(y) * x]]]
    assert hessian(lambda v: v[0] * v[0] * v[1])([x, y]) == [[2 * y, 2 * x], [2 * x, 0.0]]  # a scalar: one matrix
    torch = pytest.importorskip("torch")
    from torch.func import jacrev

    at = torch.tensor([x, y], dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        expected = jacrev(jacrev(lambda t: torch.stack([t[0] * t[0] * t[1], torch.sin(t[1]) * t[0]])))(at)
    assert bits_of_nested(hessian(f)([x, y])) == bits_of_nested(expected.tolist())


def bits_of_nested(x: Any) -> Any:
    return [bits_of_nested(y) for y in x] if isinstance(x, list) else bits(x)


def test_hessian_of_a_quadratic_form() -> None:
    # f(v) = v0^2 v1 + 3 v1^2: H = [[2 v1, 2 v0], [2 v0, 6]]
    assert hessian(lambda v: v[0] * v[0] * v[1] + 3 * v[1] * v[1])([1.0, 2.0]) == [[4.0, 2.0], [2.0, 6.0]]


@pytest.mark.slow  # finite differences, or torch, over every case: seconds
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


# ---- keyword arguments and argnums ---------------------------------------------------------------


def scaled_product(x: Any, y: Any, *, scale: float = 1.0, shift: float = 0.0) -> Any:
    return x * y * scale + shift


def test_keyword_arguments_reach_the_function_and_are_not_differentiated() -> None:
    assert grad(scaled_product)(2.0, 3.0, scale=10.0) == 30.0
    assert grad(scaled_product, argnums=1)(2.0, 3.0, scale=10.0, shift=7.0) == 20.0
    assert value_and_grad(scaled_product)(2.0, 3.0, scale=10.0, shift=1.0) == (61.0, 30.0)
    assert grad(scaled_product, argnums=(0, 1))(2.0, 3.0, scale=-1.0) == (-3.0, -2.0)
    assert jacobian(lambda v, *, k: [v[0] * k, v[1] * v[0]])([2.0, 3.0], k=4.0) == [[4.0, 0.0], [3.0, 2.0]]
    assert hessian(lambda x, *, k: k * x**3)(2.0, k=0.5) == 6.0


def test_keyword_arguments_reach_nested_transforms() -> None:
    # d/dx of d/dy (x * y * scale) = scale
    inner = grad(scaled_product, argnums=1)
    assert grad(lambda x: inner(x, 3.0, scale=5.0))(2.0) == 5.0


@pytest.mark.parametrize("transform", [grad, value_and_grad, jacobian])
def test_repeated_argnums_are_refused(transform: Callable[..., Any]) -> None:
    # torch.func raises "argnums elements must be unique" (as a RuntimeError); the same
    # argument twice would otherwise give two lifted copies and a wrong gradient
    with pytest.raises(ValueError, match=r"argnums elements must be unique, got \(0, 0\)"):
        transform(scaled_product, argnums=(0, 0))(2.0, 3.0)
    with pytest.raises(ValueError, match=r"argnums elements must be unique, got \(1, -1\)"):
        transform(scaled_product, argnums=(1, -1))(2.0, 3.0)


@pytest.mark.parametrize("transform", [grad, value_and_grad, jacobian])
def test_empty_argnums_are_refused(transform: Callable[..., Any]) -> None:
    with pytest.raises(ValueError, match="argnums must be non-empty"):
        transform(scaled_product, argnums=())(2.0, 3.0)


def test_the_wording_is_torch_funcs() -> None:
    torch = pytest.importorskip("torch")
    x = torch.tensor(2.0, dtype=torch.float64)
    for argnums, message in (((0, 0), r"argnums elements must be unique, got \(0, 0\)"), ((), "non-empty")):
        with pytest.raises(RuntimeError, match=message):
            torch.func.grad(scaled_product, argnums=argnums)(x, x)


# ---- nesting through containers, without perturbation confusion ----------------------------------


CONTAINERS: list[Callable[[list[Any]], Any]] = [list, tuple, Vector]


@pytest.mark.parametrize("container", CONTAINERS, ids=["list", "tuple", "Vector"])
def test_grad_of_grad_through_a_container_keeps_the_variables_apart(container: Callable[[list[Any]], Any]) -> None:
    # d/dx [d/dv0 (v0 * x) at v = [x]] = d/dx x = 1: the inner variable is not the outer x
    assert grad(lambda x: grad(lambda v: v[0] * x)(container([x]))[0])(5.0) == 1.0
    assert float(grad(lambda v: v[0] * 5.0)(container([5.0]))[0]) == 5.0


@pytest.mark.parametrize("container", CONTAINERS, ids=["list", "tuple", "Vector"])
def test_grad_of_hessian_through_a_container(container: Callable[[list[Any]], Any]) -> None:
    # d/dx [d2/dv0^2 (v0^2 x)] = d/dx 2x = 2
    assert grad(lambda x: hessian(lambda v: v[0] ** 2 * x)(container([x]))[0][0])(5.0) == 2.0


@pytest.mark.parametrize("container", CONTAINERS, ids=["list", "tuple", "Vector"])
def test_jvp_of_jvp_through_a_container(container: Callable[[list[Any]], Any]) -> None:
    def inner(x: Any) -> Any:
        return jvp(lambda v: v[0] * x, (container([x]),), (container([1.0]),))[1]  # = x

    assert jvp(inner, (5.0,), (1.0,)) == (5.0, 1.0)


# torch.func's forward mode imports code that warns about TorchScript on first use
TORCHSCRIPT_WARNING = "ignore:`torch.jit.script` is deprecated"  # a DeprecationWarning, a FutureWarning from torch 2.14


@pytest.mark.slow  # torch's examples: seconds
@pytest.mark.filterwarnings(TORCHSCRIPT_WARNING)
def test_pytorch_agrees_on_the_perturbation_confusion_examples() -> None:
    torch = pytest.importorskip("torch")
    func = torch.func
    five, one = torch.tensor(5.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64)
    assert func.grad(lambda x: func.grad(lambda v: v[0] * x)([x])[0])(five).item() == 1.0
    assert func.grad(lambda x: func.hessian(lambda v: v[0] ** 2 * x)([x])[0][0])(five).item() == 2.0
    inner = func.jvp(lambda x: func.jvp(lambda v: v[0] * x, ([x],), ([one],))[1], (five,), (one,))
    assert [t.item() for t in inner] == [5.0, 1.0]


# ---- nested transforms against torch.func --------------------------------------------------------


SMOOTH_STEPS: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("add", lambda a, b: a + b),
    ("mul", lambda a, b: a * b),
    ("sub", lambda a, b: a - 0.5 * b),
    ("sin", lambda a, b: a.sin()),
    ("tanh", lambda a, b: (a * b).tanh()),
    ("exp", lambda a, b: (a.tanh()).exp()),
    ("div", lambda a, b: a / (1.5 + b * b)),
    ("square", lambda a, b: a**2),
    ("log", lambda a, b: (a * a + 1.0).log()),
    ("sigmoid", lambda a, b: (a - b).sigmoid()),
]


Body = list[tuple[int, int, int]]


bodies = st.lists(
    st.tuples(st.integers(0, len(SMOOTH_STEPS) - 1), st.integers(0, 100), st.integers(0, 100)), min_size=1, max_size=8
)


def evaluate(body: Body, v: Sequence[Any], x: Any) -> Any:
    """A smooth scalar function of a sequence v and a scalar x: every step may use any
    earlier node; the result adds the last node to x * v[0] so both arguments always count."""
    nodes = [*v, x]
    for op, i, j in body:
        nodes.append(SMOOTH_STEPS[op][1](nodes[i % len(nodes)], nodes[j % len(nodes)]))
    return nodes[-1] + x * v[0]


def both(value: Any) -> float:
    return float(value.item()) if hasattr(value, "item") else float(value)


def assert_close(ours: Any, theirs: Any) -> None:
    """Nested derivatives: equal to 1e-9 (PyTorch differentiates its backward kernels with
    formulas of their own, so beyond first order the last bits may differ)."""
    if isinstance(ours, (list, tuple, Vector)):
        assert isinstance(theirs, (list, tuple)) or getattr(theirs, "ndim", 0) == 1
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert_close(a, b)
        return
    a, b = both(ours), both(theirs)
    assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (a, b)


def nested(
    lib: Any, body: Body, wrap: Callable[[list[Any]], Any], k: int, lift: Callable[[float], Any] = float
) -> dict[str, Callable[[Any], Any]]:
    """Compositions of transforms, written once for ``lib`` (vjpgrad or torch.func); ``lift``
    makes a constant tangent (torch.func takes only tensors)."""
    grad_, hessian_, jvp_ = lib.grad, lib.hessian, lib.jvp
    jacobian_ = lib.jacobian if hasattr(lib, "jacobian") else lib.jacrev

    def inner_grad(x: Any, v: list[Any]) -> Any:
        return grad_(lambda w: evaluate(body, w, x))(wrap(v))

    def inner_jvp(x: Any, p: Any) -> Any:
        tangent = wrap([lift(1.0), lift(0.5), lift(-1.0)])
        return jvp_(lambda w: evaluate(body, w, x), (wrap([x, p[1], p[2]]),), (tangent,))[1]

    return {
        "grad of grad[k]": lambda p: grad_(lambda x: inner_grad(x, [x * 1.5, p[1], x])[k])(p[0]),
        "grad of hessian[k][0]": lambda p: grad_(
            lambda x: hessian_(lambda w: evaluate(body, w, x))(wrap([p[1], x, p[0]]))[k][0]
        )(p[0]),
        "jvp of grad[k]": lambda p: jvp_(lambda x: inner_grad(x, [x, p[1], p[0]])[k], (p[0],), (p[2],))[1],
        "jacobian of grad": lambda p: jacobian_(lambda x: inner_grad(x, [x, p[1], x * x]))(p[0]),
        "grad of grad of grad": lambda p: grad_(grad_(grad_(lambda x: evaluate(body, [x, p[1], x], x))))(p[0]),
        "jvp of jvp": lambda p: jvp_(lambda x: inner_jvp(x, p), (p[0],), (p[2],))[1],
    }


@pytest.mark.slow  # central differences or torch.func over every operation: seconds
@pytest.mark.filterwarnings(TORCHSCRIPT_WARNING)
@given(
    bodies,
    st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3),
    st.sampled_from(["list", "tuple", "Vector"]),
    st.integers(0, 2),
)
def test_nested_transforms_agree_with_torch_func(body: Body, point: list[float], kind: str, k: int) -> None:
    torch = pytest.importorskip("torch")
    import vjpgrad

    ours_wrap = {"list": list, "tuple": tuple, "Vector": Vector}[kind]
    theirs_wrap = {"list": list, "tuple": tuple, "Vector": list}[kind]  # a Vector is a list to torch
    ours = nested(vjpgrad, body, ours_wrap, k)
    theirs = nested(torch.func, body, theirs_wrap, k, lambda c: torch.tensor(c, dtype=torch.float64))
    tensors = [torch.tensor(p, dtype=torch.float64) for p in point]
    constants = [Value(p, requires_grad=False) for p in point]  # methods like a tensor's, no gradient
    for name in ours:
        assert_close(ours[name](constants), theirs[name](tensors))


def test_nested_results_on_numbers_are_plain_floats_and_lists() -> None:
    body: Body = [(1, 0, 3), (4, 1, 2)]
    import vjpgrad

    found = nested(vjpgrad, body, Vector, 1)
    assert type(found["grad of grad[k]"]([0.5, 0.2, 0.1])) is float
    jac = found["jacobian of grad"]([0.5, 0.2, 0.1])
    assert type(jac) is list
    assert all(type(item) is float for item in jac)


def test_a_value_argument_of_an_outer_transform_stays_distinct_in_a_vector() -> None:
    # the transform's variable for the Value is new (d/dv0 of v0 * outer is 5, not 2 * 5)
    outer = Value(5.0)
    assert grad(lambda v: v[0] * outer)(Vector([outer])).data == [5.0]


def test_gradients_of_a_list_holding_a_vector_says_to_pass_the_vector_itself() -> None:
    x = Vector([1.0, 2.0])
    y = (x * x).sum()
    with pytest.raises(TypeError) as caught:
        gradients(y, [x])  # type: ignore[list-item]
    assert str(caught.value) == (
        "inputs is a list holding a Vector (inputs[0]): pass x itself, gradients(y, x), for one gradient per "
        "element, or its Values with others', [*x, *w]"
    )
    assert [g.data for g in gradients(y, x)] == [2.0, 4.0]


def test_gradients_of_a_list_of_one_number_outputs_seeds_each_with_one_as_pytorch() -> None:
    """torch.autograd.grad([y1, y2], [a]) seeds each scalar output with 1 (implicitly): a list of
    Values is such a list; a Vector is one output of many elements, which needs its seeds."""
    a = Value(1.0)
    (g,) = gradients([a * a, a * 3.0], [a])
    assert g.data == 5.0  # 2a + 3
    (g,) = gradients((a * a,), [a])
    assert g.data == 2.0
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        gradients(Vector([a * a, a * 3.0]), [a])
    if torch is not None:
        t = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
        (tg,) = torch.autograd.grad([t * t, t * 3.0], [t])
        assert tg.item() == 5.0
