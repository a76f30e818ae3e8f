"""The function transforms as JAX and torch.func define them: keyword arguments, argnums,
and nesting through list, tuple and Vector arguments without perturbation confusion; held
against torch.func (float64) on generated functions when PyTorch is installed."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vjpgrad import Value, Vector, grad, hessian, jacobian, jvp, value_and_grad

# ---- keyword arguments and argnums --------------------------------------------------------------


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


# ---- perturbation confusion through lists, tuples and Vectors -------------------------------------

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
TORCHSCRIPT_WARNING = "ignore:`torch.jit.script` is deprecated:DeprecationWarning"


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

SMOOTH: list[tuple[str, Callable[[Any, Any], Any]]] = [
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
    st.tuples(st.integers(0, len(SMOOTH) - 1), st.integers(0, 100), st.integers(0, 100)), min_size=1, max_size=8
)


def evaluate(body: Body, v: Sequence[Any], x: Any) -> Any:
    """A smooth scalar function of a sequence v and a scalar x: every step may use any
    earlier node; the result adds the last node to x * v[0] so both arguments always count."""
    nodes = [*v, x]
    for op, i, j in body:
        nodes.append(SMOOTH[op][1](nodes[i % len(nodes)], nodes[j % len(nodes)]))
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
