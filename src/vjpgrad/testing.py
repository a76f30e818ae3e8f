"""Helpers for pytest-driven exercises: check a learner's gradients, on thousands of graphs.

``assert_grad_close`` compares the gradients vjpgrad computes for a function with expected
ones (or with central differences) and fails with a table a learner can read. The
hypothesis strategies ``values``, ``vectors`` and ``expressions`` generate inputs and random
expression graphs; hypothesis is imported only when a strategy is asked for.
"""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from vjpgrad.core import floats, functions
from vjpgrad.core.seeds import SummedSeedWarning, scalar_seed
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector
from vjpgrad.transforms import check

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

HYPOTHESIS_HINT = (
    "vjpgrad.testing's strategies need hypothesis: pip install hypothesis (or pip install -e '.[test]' in your "
    "clone of vjpgrad)"
)


def _hypothesis() -> Any:
    try:
        from hypothesis import strategies
    except ImportError as error:
        raise ImportError(HYPOTHESIS_HINT) from error
    return strategies


# ---- assert_grad_close --------------------------------------------------------------------------


# Each helper below sets ``__tracebackhide__``: pytest then leaves its frames out of a failure's
# traceback, so a learner sees their own test line and the table, not this module's source.


def _input_names(f: Callable[..., Any], count: int, names: Sequence[str] | None) -> list[str]:
    """The names the table gives the inputs: ``names``, else ``f``'s parameters, else 0, 1, 2..."""
    __tracebackhide__ = True
    if names is not None:
        given = list(names)
        if len(given) != count:
            raise ValueError(f"names has {len(given)} names but there are {count} inputs")
        for i, name in enumerate(given):
            if not isinstance(name, str):
                raise TypeError(f"names[{i}] must be a str, got {type(name).__name__}")
        return given
    numbered = [str(j) for j in range(count)]
    if isinstance(f, Expression):
        return list(f.variables) if len(f.variables) == count else numbered
    try:
        parameters = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):  # a builtin or an object without a readable signature
        return numbered
    found: list[str] = []
    for parameter in parameters:
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            found.append(parameter.name)
        elif parameter.kind is parameter.VAR_POSITIONAL:
            found += [f"{parameter.name}[{k}]" for k in range(count - len(found))]
        if len(found) >= count:
            break
    return found[:count] if len(found) >= count else numbered


def assert_grad_close(
    f: Callable[..., Any],
    inputs: float | Sequence[float],
    expected: float | Sequence[float] | None = None,
    *,
    seed: float | Sequence[float] | None = None,
    atol: float = 1e-6,
    rtol: float = 1e-4,
    eps: float = 1e-6,
    names: Sequence[str] | None = None,
    yours: Literal["f", "expected"] | None = None,
) -> None:
    """Assert that the gradients of ``f`` at ``inputs`` are close to ``expected``.

    ``f`` takes one Value per input and returns a Value (or a Vector, with ``seed`` one
    number per element, as ``y.backward(seed)`` takes). Its gradients, from
    ``backward(seed)``, are compared with ``expected`` (one number per input) or, when
    ``expected`` is None, with central differences of ``sum_i seed[i] * f(...)[i]``. Each
    must satisfy ``|got - want| <= atol + rtol * |want|``, ``want`` being the reference
    (the expected or numeric gradient, or vjpgrad's when ``yours="expected"``).

    On failure the ``AssertionError`` is a table: each input (named by ``names``, else by
    ``f``'s parameters), its value, the two gradients and their difference, with the wrong
    ones marked; pytest shows it without this helper's source. ``yours`` says which side
    is the learner's work, labelled "yours": ``"f"`` when they wrote ``f`` or its derivative
    rule, ``"expected"`` when they computed the gradients by hand (vjpgrad's are then the
    reference).
    """
    __tracebackhide__ = True
    if yours not in (None, "f", "expected"):
        raise ValueError(f"yours must be 'f', 'expected' or None, got {yours!r}")
    check.tolerances("assert_grad_close", eps, atol, rtol)
    xs = check.points(inputs)
    labels = _input_names(f, len(xs), names)
    if expected is not None:
        want_list: list[Any] = [expected] if isinstance(expected, numbers.Real) else list(expected)  # type: ignore[arg-type]  # checked by scalar_seed below
        if len(want_list) != len(xs):
            raise ValueError(f"expected has {len(want_list)} gradients but there are {len(xs)} inputs")
        want = [scalar_seed(w, f"expected[{i}]") for i, w in enumerate(want_list)]
    got = check.analytic(f, xs, seed, hint="pass seed=[...]")
    if expected is None:
        source = "numeric"
        with warnings.catch_warnings():  # a summed seed was said once, by the analytic pass
            warnings.simplefilter("ignore", SummedSeedWarning)
            want = check.numeric(f, xs, seed, eps)
    else:
        source = "expected"
    if yours == "expected":  # the learner's numbers against vjpgrad's
        heading = f"your gradients differ from vjpgrad's (atol={atol:g}, rtol={rtol:g}):"
        columns, checked, reference = ("yours", "vjpgrad"), want, got
    else:
        whose = "your gradients" if yours == "f" else "gradients"
        heading = f"{whose} differ from the {source} ones (atol={atol:g}, rtol={rtol:g}):"
        columns, checked, reference = ("yours" if yours == "f" else "vjpgrad", source), got, want
    rows = []
    failed = False
    for name, x, g, w in zip(labels, xs, checked, reference, strict=True):
        ok = check.agree(g, w, atol, rtol)
        failed = failed or not ok
        rows.append(([name], x, g, w, ok))
    if failed:
        raise AssertionError(check.table(heading, ["input", *columns], rows, mark="<-- wrong"))


# ---- hypothesis strategies ------------------------------------------------------------------------


def values(min_value: float = -10.0, max_value: float = 10.0) -> SearchStrategy[Value]:
    """Fresh leaf Values with finite data in [min_value, max_value]."""
    st = _hypothesis()
    return st.floats(min_value, max_value, allow_nan=False, allow_infinity=False).map(Value)  # type: ignore[no-any-return]  # hypothesis is imported lazily, untyped here


def vectors(length: int | None = None, min_value: float = -10.0, max_value: float = 10.0) -> SearchStrategy[Vector]:
    """Vectors of fresh leaf Values: of ``length`` elements, or of 1 to 8 when it is None."""
    st = _hypothesis()
    if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 0):
        raise ValueError(f"length must be a non-negative int or None, got {length!r}")
    sizes = {"min_size": length, "max_size": length} if length is not None else {"min_size": 1, "max_size": 8}
    floats = st.floats(min_value, max_value, allow_nan=False, allow_infinity=False)
    return st.lists(floats, **sizes).map(Vector)  # type: ignore[no-any-return]  # as above


UNARY_OPS = {"neg", "sin", "cos", "tanh", "sigmoid", "exp", "log", "sqrt", "relu", "abs", "square"}
BINARY_OPS = {"+", "-", "*", "/"}
DEFAULT_OPS = ("+", "-", "*", "neg", "sin", "cos", "tanh", "sigmoid")
"""Operations smooth everywhere, so finite differences agree with the engine on any input."""


@dataclass(frozen=True)
class Expression:
    """A random expression over named variables: call it with Values (or numbers, or torch
    tensors) for the variables, in order or by name; ``text`` is how it reads."""

    tree: Any
    variables: tuple[str, ...]

    @property
    def text(self) -> str:
        return _text(self.tree)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) + len(kwargs) != len(self.variables):
            raise TypeError(f"{self.text} takes {len(self.variables)} values ({', '.join(self.variables)})")
        env = dict(zip(self.variables, args, strict=False))
        for name, value in kwargs.items():
            if name not in self.variables or name in env:
                raise TypeError(f"{self.text}: unexpected or repeated variable {name!r}")
            env[name] = value
        return _evaluate(self.tree, env)

    def __repr__(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


def _text(tree: Any) -> str:
    if isinstance(tree, str):
        return tree
    if isinstance(tree, float):
        return repr(tree)
    op, *args = tree
    if op in BINARY_OPS:
        return f"({_text(args[0])} {op} {_text(args[1])})"
    if op == "neg":
        return f"-{_text(args[0])}"
    if op == "square":  # a negation, a negative number or a square squared is put in parentheses: -x**2 is -(x**2)
        base = args[0]
        bare = not (isinstance(base, float) and math.copysign(1.0, base) < 0) and not (
            isinstance(base, tuple) and base[0] in ("neg", "square")
        )
        return f"{_text(base)}**2" if bare else f"({_text(base)})**2"
    return f"{op}({_text(args[0])})"


def _evaluate(tree: Any, env: dict[str, Any]) -> Any:
    if isinstance(tree, str):
        return env[tree]
    if isinstance(tree, float):
        return tree
    op, *args = tree
    xs = [_evaluate(arg, env) for arg in args]
    if op == "+":
        return xs[0] + xs[1]
    if op == "-":
        return xs[0] - xs[1]
    if op == "*":
        return xs[0] * xs[1]
    numbers_only = all(isinstance(x, numbers.Real) for x in xs)  # a constant subtree: IEEE, never a Python error
    if op == "/":
        return floats.div(float(xs[0]), float(xs[1])) if numbers_only else xs[0] / xs[1]
    if op == "neg":
        return -xs[0]
    if op == "square":
        return floats.power(float(xs[0]), 2.0) if numbers_only else xs[0] ** 2
    if op == "abs":
        return abs(xs[0])
    if isinstance(xs[0], numbers.Real):  # a constant subtree: vjpgrad's IEEE functions
        return getattr(functions, op)(xs[0])
    return getattr(xs[0], op)()  # a Value, a Vector, or another engine's tensor


def expressions(
    variables: Sequence[str],
    ops: Sequence[str] = DEFAULT_OPS,
    max_depth: int = 4,
    constants: bool = True,
) -> SearchStrategy[Expression]:
    """Random expression graphs over ``variables``, shrinking to the smallest failing one.

    ``ops`` are drawn from ``+ - * /`` and ``neg sin cos tanh sigmoid exp log sqrt relu abs
    square``; the default uses only those smooth everywhere. Each variable may appear any
    number of times, so the graphs share nodes; ``constants`` adds small numbers as leaves.
    """
    st = _hypothesis()
    names = tuple(variables)
    if not names or not all(isinstance(n, str) and n.isidentifier() for n in names):
        raise ValueError(f"variables must be a non-empty list of names, got {variables!r}")
    unknown = [op for op in ops if op not in UNARY_OPS | BINARY_OPS]
    if unknown or not ops:
        raise ValueError(f"unknown ops {unknown}: choose from {sorted(BINARY_OPS)} and {sorted(UNARY_OPS)}")
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
        raise ValueError(f"max_depth must be a non-negative int, got {max_depth!r}")
    leaf = st.sampled_from(names)
    if constants:
        leaf = leaf | st.sampled_from([0.5, 1.0, 2.0, -1.5])
    unary = [op for op in ops if op in UNARY_OPS]
    binary = [op for op in ops if op in BINARY_OPS]

    def tree(depth: int) -> Any:
        if depth == 0:
            return leaf
        below = tree(depth - 1)
        options = [leaf]
        if unary:
            options.append(st.tuples(st.sampled_from(unary), below))
        if binary:
            options.append(st.tuples(st.sampled_from(binary), below, below))
        return st.one_of(*options)  # leaves first, so shrinking heads for small trees

    return tree(max_depth).map(lambda t: Expression(t, names))  # type: ignore[no-any-return]  # as above


__all__ = ["Expression", "assert_grad_close", "expressions", "values", "vectors"]
