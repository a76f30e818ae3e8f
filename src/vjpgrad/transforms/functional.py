"""Derivatives beyond one ``backward`` call: ``gradients`` (PyTorch's ``torch.autograd.grad``),
function transforms in the style of JAX and HIPS autograd, and ``gradcheck``.

The transforms take functions of plain floats and lists of floats and return plain floats
and lists. Called inside another transform they return Values (and Vectors), which is what
makes ``grad(grad(f))`` and ``hessian = jacobian(grad(f))`` work: each level differentiates
the graph the level inside it built (``create_graph=True``).
"""

from __future__ import annotations

import numbers
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from vjpgrad.core import graph, ops
from vjpgrad.core.backward import check_flag, differentiable_reverse_pass, free, reverse_pass
from vjpgrad.core.modes import USER_FRAMES, enable_grad, refuse_number, state
from vjpgrad.core.ops import IDENTITY
from vjpgrad.core.seeds import scalar_seed, seeds_for
from vjpgrad.core.value import Value, unary
from vjpgrad.core.vector import Vector
from vjpgrad.transforms import check

Scalar = Any

Values = Value | Vector | Sequence[Value]

UNUSED_MESSAGE = (
    "One of the differentiated Values appears to not have been used in the graph. "
    "Set allow_unused=True if this is the desired behavior."
)


def _as_values(x: object, what: str) -> list[Value]:
    if isinstance(x, Value):
        return [x]
    if isinstance(x, Vector):
        return list(x)
    if isinstance(x, Sequence) and not isinstance(x, str) and all(isinstance(item, Value) for item in x):
        return list(x)
    if isinstance(x, Sequence) and not isinstance(x, str):
        index = next((i for i, item in enumerate(x) if isinstance(item, Vector)), None)
        if index is not None:
            raise TypeError(
                f"{what} is a {type(x).__name__} holding a Vector ({what}[{index}]): pass x itself, gradients(y, x), "
                "for one gradient per element, or its Values with others', [*x, *w]"
            )
    raise TypeError(f"{what} must be a Value, a Vector or a sequence of Values, got {type(x).__name__}")


def gradients(
    outputs: Values,
    inputs: Values,
    seeds: Any = None,
    *,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> list[Value]:
    """The gradient of ``sum_i seeds[i] * outputs[i]`` with respect to each input, as PyTorch's
    ``torch.autograd.grad``: returned, one Value per input, without touching any ``.grad``.

    ``seeds`` defaults to 1.0 for a single output, and for each of a list of outputs (each one
    number, as PyTorch seeds a list of scalar outputs); a Vector's elements need theirs. With
    ``create_graph=True`` the gradients are Values on a new graph, so they can be differentiated
    again (derivatives of any order); ``retain_graph`` defaults to ``create_graph``, as in PyTorch. An input the
    outputs do not depend on raises ``RuntimeError`` unless ``allow_unused=True``, when its
    gradient is 0.0.
    """
    with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
        outs = _as_values(outputs, "outputs")
        ins = _as_values(inputs, "inputs")
        create = check_flag(create_graph, "create_graph")
        retain = create if retain_graph is None else check_flag(retain_graph, "retain_graph")
        check_flag(allow_unused, "allow_unused")
        count = None if isinstance(outputs, Value) else len(outs)
        if seeds is None and isinstance(outputs, (list, tuple)):  # one-number outputs, each seeded 1 (PyTorch's
            seeds = [1.0] * len(outs)  # implicit ones); a Vector is one output of many elements: it needs its seeds
        seed_list = seeds_for(count, seeds, name="seeds", differentiable=create)
        for index, x in enumerate(ins):
            if not x.requires_grad:
                raise RuntimeError(
                    f"inputs[{index}] does not require grad: nothing can be differentiated with respect to it"
                )
        if create:
            grads: dict[Any, Any] = differentiable_reverse_pass(outs, seed_list)
        else:
            grads = reverse_pass(outs, [float(s) for s in seed_list])
        if not allow_unused and any(x not in grads for x in ins):
            raise RuntimeError(UNUSED_MESSAGE)
        result = [_as_value(grads.get(x, 0.0)) for x in ins]
        if not retain:
            free(grads)
        return result


def _as_value(x: Scalar) -> Value:
    return x if isinstance(x, Value) else Value(x, requires_grad=False)


# ---- function transforms ------------------------------------------------------------------


@dataclass(frozen=True)
class Transformed:
    """What a transform made a function from, kept on it as ``.transformed``: a transform above
    (``vjpgrad.vmap``) reads it to write the derivative itself rather than call the function.
    ``kind`` is the transform's name, ``primals`` the points of a ``vjp`` function."""

    kind: str
    function: Callable[..., Any]
    argnums: int | Sequence[int] = 0
    primals: tuple[Any, ...] = ()
    # a vjp function's graph, as vjp made it: its outputs (Values or numbers) and the Values of each primal
    graph: tuple[list[Any], list[list[Value]]] | None = None
    # where vjp made it: the recording running then (compile's, vmap's), or None
    made_in: Any = None


def _mark(transformed: Callable[..., Any], made: Transformed) -> None:
    vars(transformed)["transformed"] = made


@contextmanager
def _transform() -> Iterator[bool]:
    """Enter a transform; yields whether it is nested inside another (then it answers in Values).

    A transform records its graph even inside ``no_grad()``: differentiating is its job.
    """
    nested = state.transform_depth > 0
    state.transform_depth += 1
    try:
        with enable_grad():
            yield nested
    finally:
        state.transform_depth -= 1


_IN_NUMBERS = (
    "a transform of numbers answers in numbers, as in eager code (so does the vjp_fn of a vjp of numbers): "
    "give it the function's Values that take gradient (vjp(f, x), grad(f)(x) with x such a Value), which it "
    "answers in Values, or call it outside the function and pass in what it gives"
)
"""What a recording's refusal says where a transform that answers in numbers meets its Values."""


def _variable(x: Value | float) -> Value:
    """This transform's own variable for ``x``.

    A number becomes a new leaf. A Value from an enclosing transform gets an identity node
    on top: a variable distinct from the enclosing one (so ``grad(lambda y: y * x)(x)``
    differentiates with respect to ``y`` alone, not to ``x`` twice: no "perturbation
    confusion"), through which the enclosing transform still differentiates.
    """
    if isinstance(x, Value) and x.requires_grad:
        return unary(IDENTITY, x)
    if isinstance(x, Value):  # a number to the transform: inside compile or vmap, refused saying so
        refuse_number("a transform reads the number of a Value that takes no gradient", _IN_NUMBERS)
    return Value(x.data if isinstance(x, Value) else x)


class _Argument:
    """One argument of a transformed function, lifted onto the graph: a float becomes a
    Value, a list of floats a Vector, each element this transform's own variable."""

    def __init__(self, arg: object, position: int) -> None:
        self.is_list = False
        if isinstance(arg, Value):
            self.lifted: Value | Vector = _variable(arg)
            self.nested = arg.requires_grad
        elif isinstance(arg, numbers.Real):
            self.lifted, self.nested = Value(arg), False
        elif isinstance(arg, (Vector, list, tuple)):
            items = list(arg)
            for item in items:
                if not isinstance(item, (Value, numbers.Real)):
                    raise TypeError(
                        f"argument {position} must be a number or a list of numbers, has a {type(item).__name__}"
                    )
            self.nested = any(isinstance(item, Value) and item.requires_grad for item in items)
            # each element is this transform's own variable, an enclosing one's Value included
            self.lifted = Vector([_variable(item) for item in items])
            self.is_list = True
        else:
            raise TypeError(f"argument {position} must be a number or a list of numbers, got {type(arg).__name__}")

    @property
    def values(self) -> list[Value]:
        return list(self.lifted) if isinstance(self.lifted, Vector) else [self.lifted]

    def shape(self, flat: list[Any], nested: bool) -> Any:
        """Gradients of this argument's Values, shaped like the argument."""
        if nested:
            return Vector([_as_value(g) for g in flat]) if self.is_list else _as_value(flat[0])
        plain = [float(g) for g in flat]
        return plain if self.is_list else plain[0]


def checked_positions(argnums: int | Sequence[int], count: int) -> list[int]:
    """The positional arguments to differentiate, checked as torch.func checks them (but as
    ValueError, where torch.func raises RuntimeError): each in range, at least one, none twice.
    ``vmap`` of a transform checks its ``argnums`` here too."""
    if not isinstance(argnums, (int, Sequence)) or isinstance(argnums, (str, bytes)):
        raise TypeError(f"argnums must be an int or a tuple of ints, got {type(argnums).__name__}")
    numbers_ = [argnums] if isinstance(argnums, int) else list(argnums)
    if not numbers_:
        raise ValueError("argnums must be non-empty: name at least one positional argument to differentiate")
    for k in numbers_:
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"argnums must be an int or a tuple of ints, got {type(k).__name__}")
        if not -count <= k < count:
            raise ValueError(f"argnums {k} is out of range for a function called with {count} arguments")
    positions = [k % count for k in numbers_]
    if len(set(positions)) != len(positions):
        raise ValueError(f"argnums elements must be unique, got {argnums!r}")
    return positions


def _call(
    f: Callable[..., Any], args: tuple[Any, ...], positions: list[int], kwargs: dict[str, Any] | None = None
) -> tuple[Any, list[_Argument], bool]:
    """Call ``f`` with the arguments at ``positions`` lifted onto the graph; the others, and
    the keyword arguments, go to ``f`` as they are (JAX and torch.func differentiate only
    positional arguments)."""
    arguments = [_Argument(args[k], k) for k in positions]
    lifted = list(args)
    for k, argument in zip(positions, arguments, strict=True):
        lifted[k] = argument.lifted
    running = _running.__dict__.setdefault("variables", [])
    running.append(frozenset(id(value) for argument in arguments for value in argument.values))
    try:
        return f(*lifted, **(kwargs or {})), arguments, any(a.nested for a in arguments)
    finally:
        running.pop()


_running = threading.local()
"""Per thread, the ids of the variables of each transform whose function is running (``_call``)."""


def differentiated_now() -> frozenset[int]:
    """The ids of the variables of every transform whose function runs now on this thread: what a
    Value must be computed from to take part in their gradients (``vmap`` refuses to read one)."""
    return frozenset().union(*_running.__dict__.get("variables", ()))


def _outputs(out: object, transform: str) -> tuple[list[Value | float], bool]:
    """The outputs of a function as a list, and whether it returned a single scalar."""
    if isinstance(out, Value):
        return [out], True
    if isinstance(out, numbers.Real):
        return [float(out)], True
    if isinstance(out, Vector):
        return list(out), False
    if isinstance(out, (list, tuple)) and all(isinstance(y, (Value, numbers.Real)) for y in out):
        return [y if isinstance(y, Value) else float(y) for y in out], False
    kinds = (
        "a number, a Value, a Vector or a matrix (a list of Vectors)"
        if transform == "jacobian"
        else ("a number, a Value or a Vector")
    )
    held = _first_odd(out)
    holding = f" holding a {held}" if held is not None else ""
    raise TypeError(f"{transform}: the function must return {kinds}, got {type(out).__name__}{holding}")


def _first_odd(out: object) -> str | None:
    """The kind of the first item of a returned list or tuple that is not a number or a Value (one
    that is not a row of them either, first), for the error that refuses it; None for another result."""
    if not isinstance(out, (list, tuple)):
        return None
    not_rows = [y for y in out if not isinstance(y, (Value, numbers.Real, Vector, list, tuple))]
    odd = not_rows or [y for y in out if not isinstance(y, (Value, numbers.Real))]
    return type(odd[0]).__name__ if odd else None


def _matrix(out: object) -> tuple[list[Value | float], int] | None:
    """A function's output that is a matrix, a list (or tuple) of rows, each a Vector or a list of
    numbers and Values, all of one length (what ``jacobian`` returns inside another transform): its
    elements row after row, and the rows' length. None for any other output."""
    if not isinstance(out, (list, tuple)) or not out or not all(isinstance(r, (Vector, list, tuple)) for r in out):
        return None
    rows = [list(r) for r in out]
    if not all(isinstance(y, (Value, numbers.Real)) for r in rows for y in r):
        return None
    lengths = sorted({len(r) for r in rows})
    if len(lengths) != 1 or not lengths[0]:
        raise ValueError(
            f"jacobian: the function returned rows of lengths {', '.join(map(str, lengths))}: a matrix of outputs "
            "has rows of one length, at least one element each"
        )
    return [y if isinstance(y, Value) else float(y) for r in rows for y in r], lengths[0]


def _lower(outputs: list[Value | float], scalar: bool, nested: bool) -> Any:
    if nested:
        values = [_as_value(y) for y in outputs]
        return values[0] if scalar else Vector(values)
    if any(isinstance(y, Value) for y in outputs):  # inside compile or vmap, a recording's Values: refused
        refuse_number("a transform of numbers reads its result's numbers", _IN_NUMBERS)
    plain = [float(y) for y in outputs]
    return plain[0] if scalar else plain


def _inputs(arguments: list[_Argument]) -> list[Value]:
    return [value for argument in arguments for value in argument.values]


def _rows(outputs: list[Value | float], seeds: list[list[Any]], inputs: list[Value], nested: bool) -> list[list[Any]]:
    """For each seed vector, the gradients of ``sum_i seed[i] * outputs[i]`` with respect to
    each of ``inputs``: one reverse pass each."""
    live = [(y, k) for k, y in enumerate(outputs) if isinstance(y, Value) and y.requires_grad]
    rows = []
    for seed in seeds:
        used = [(y, seed[k]) for y, k in live]
        if not used:
            rows.append([0.0] * len(inputs))
            continue
        roots, weights = [y for y, _ in used], [s for _, s in used]
        if nested:
            grads: dict[Any, Any] = differentiable_reverse_pass(roots, weights)
        else:  # inside compile or vmap, of a recording's Values: refused, saying what to do
            refuse_number("a transform of numbers runs a reverse pass to numbers", _IN_NUMBERS)
            grads = reverse_pass(roots, [float(s) for s in weights])
        rows.append([grads.get(x, 0.0) for x in inputs])
    return rows


def _split(flat: list[Any], arguments: list[_Argument], nested: bool) -> list[Any]:
    shaped, start = [], 0
    for argument in arguments:
        n = len(argument.values)
        shaped.append(argument.shape(flat[start : start + n], nested))
        start += n
    return shaped


def value_and_grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., tuple[Any, Any]]:
    """``f`` transformed to return ``(f(*args), grad(f)(*args))`` from one evaluation.

    Keyword arguments are passed to ``f`` and not differentiated."""

    def value_and_grad_f(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
            positions = checked_positions(argnums, len(args))
            with _transform() as outer:
                out, arguments, nested_args = _call(f, args, positions, kwargs)
                nested = outer or nested_args
                outputs, scalar = _outputs(out, "grad")
                if not scalar:
                    raise TypeError(
                        f"grad requires a function with a scalar output, but it returned {len(outputs)} values: "
                        "use jacobian(f) for the full Jacobian, or vjp(f, ...) for a vector-Jacobian product"
                    )
                (row,) = _rows(outputs, [[1.0]], _inputs(arguments), nested)
                shaped = _split(row, arguments, nested)
                return _lower(outputs, True, nested), shaped[0] if isinstance(argnums, int) else tuple(shaped)

    value_and_grad_f.__name__ = f"value_and_grad({getattr(f, '__name__', 'f')})"
    _mark(value_and_grad_f, Transformed("value_and_grad", f, argnums))
    return value_and_grad_f


def grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """``f`` transformed to return its gradient with respect to argument ``argnums``.

    ``f`` must return a scalar. The gradient is shaped like the argument: a float for a
    float, a list for a list; a tuple of them for a tuple of ``argnums``. Transforms nest:
    ``grad(grad(f))(x)`` is the second derivative. Keyword arguments are passed to ``f``
    and not differentiated, as in JAX and torch.func.
    """
    with_value = value_and_grad(f, argnums)

    def grad_f(*args: Any, **kwargs: Any) -> Any:
        return with_value(*args, **kwargs)[1]

    grad_f.__name__ = f"grad({getattr(f, '__name__', 'f')})"
    _mark(grad_f, Transformed("grad", f, argnums))
    return grad_f


def vjp(f: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]:
    """``(f(*primals), vjp_fn)``: ``vjp_fn(v)`` is ``v^T J``, one cotangent per primal.

    The cotangent ``v`` has the shape of ``f``'s output (a number for a scalar output, a
    list for a list); each returned cotangent has the shape of its primal. ``vjp_fn`` can
    be called many times: the graph is kept. Called inside another transform it answers in
    Values computed from the cotangent (so ``grad(lambda c: vjp_fn(c)[0])`` differentiates
    through it), else in numbers (a cotangent Value is read as its number, and the graph stays
    kept for the next call).
    """
    with _transform() as outer:
        out, arguments, nested_args = _call(f, primals, list(range(len(primals))))
    nested = outer or nested_args
    outputs, scalar = _outputs(out, "vjp")

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
            # called inside a transform it answers in Values computed from the cotangent, whatever
            # vjp's own nesting was: grad(lambda c: vjp_fn(c)[0]) differentiates through it, as
            # torch.func's and JAX's vjp_fn do (a transform's pass frees no graph: vjp's stays kept)
            now = nested or state.transform_depth > 0
            given = cotangent if isinstance(cotangent, (list, tuple, Vector)) else [cotangent]
            if not now and any(isinstance(c, Value) for c in given):  # inside compile or vmap: refused, saying so
                refuse_number("vjp_fn(cotangent) reads the cotangent's number", _IN_NUMBERS)
            # the cotangent has the shape of the output: the seed rules of backward (core.seeds)
            seed = seeds_for(None if scalar else len(outputs), cotangent, name="cotangent", differentiable=now)
            (row,) = _rows(outputs, [seed], _inputs(arguments), now)
            return tuple(_split(row, arguments, now))

    kept = (list(outputs), [list(argument.values) for argument in arguments])
    _mark(vjp_fn, Transformed("vjp", f, primals=tuple(primals), graph=kept, made_in=state.recording))
    return _lower(outputs, scalar, nested), vjp_fn


def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``(f(*primals), J t)``: the Jacobian-vector product, by forward mode.

    Each tangent has the shape of its primal. The graph ``f`` builds is walked once from the
    inputs forward, carrying ``d node = sum of local derivative x d operand`` along.
    """
    with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
        if not isinstance(primals, (list, tuple)) or not isinstance(tangents, (list, tuple)):
            raise TypeError("jvp takes primals and tangents as tuples (or lists) of arguments")
        if len(primals) != len(tangents):
            raise ValueError(f"jvp got {len(primals)} primals but {len(tangents)} tangents")
        with _transform() as outer:
            out, arguments, nested_args = _call(f, tuple(primals), list(range(len(primals))))
        nested = outer or nested_args
        outputs, scalar = _outputs(out, "jvp")
        seeds: dict[Value, Scalar] = {}
        for k, (argument, tangent) in enumerate(zip(arguments, tangents, strict=True)):
            flat = list(tangent) if argument.is_list else [tangent]
            if argument.is_list and (isinstance(tangent, str) or not isinstance(tangent, (Sequence, Vector))):
                raise TypeError(f"tangent {k} must be a list like its primal, got {type(tangent).__name__}")
            if len(flat) != len(argument.values):
                raise ValueError(f"tangent {k} has length {len(flat)} but its primal has length {len(argument.values)}")
            for value, t in zip(argument.values, flat, strict=True):
                seeds[value] = scalar_seed(t, f"tangent {k}", differentiable=nested)
        tangent_out = _forward_pass(outputs, seeds, nested)
        return _lower(outputs, scalar, nested), _lower(tangent_out, scalar, nested)


def _forward_pass(outputs: list[Value | float], seeds: dict[Value, Scalar], nested: bool) -> list[Value | float]:
    """Forward mode over the recorded graph: each node's tangent is the sum over its edges of
    local derivative x the operand's tangent, nodes taken in the order they were made; the sum
    starts from -0.0, as a reverse pass's sums do (so one contribution keeps its bits, a -0.0
    tangent included, as torch.func.jvp's), and a node no tangent reaches has 0.0."""
    live = [y for y in outputs if isinstance(y, Value) and y.requires_grad]
    tangents: dict[Any, Any] = dict(seeds)
    if live:
        with graph.pass_lock:
            order, _ = graph.reached(live)
        for node in reversed(order):
            if node in seeds:
                continue
            found = graph.saved_as_values(node) if nested else graph.edges(node)
            total: Any = None
            for position, operand, saved in found:
                if operand in tangents and saved is not ops.MASKED:  # a mask passes exactly 0, even of inf
                    local = ops.local_derivative(graph.gradient_of(node, position), saved)
                    part = local * tangents[operand]
                    total = part if total is None else total + part  # -0.0 + part is part, to the bit
            tangents[node] = 0.0 if total is None else total
    return [tangents.get(y, 0.0) if isinstance(y, Value) else 0.0 for y in outputs]


def jacobian(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """``f`` transformed to return its Jacobian ``J[i][j] = d out[i] / d arg[j]``.

    One reverse pass per output (one vector-Jacobian product per basis vector). The shape
    follows the output and the argument: a float for a scalar of a scalar, a list when one
    of them is a list, a list of rows when both are; a tuple of them for a tuple of argnums.
    An output that is a matrix (a list of Vectors, as a Jacobian is) gives one matrix per row:
    ``jacobian(jacobian(f))`` is the array of third derivatives, as ``jacrev(jacrev(f))``.
    Keyword arguments are passed to ``f`` and not differentiated.
    """

    def jacobian_f(*args: Any, **kwargs: Any) -> Any:
        with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
            positions = checked_positions(argnums, len(args))
            with _transform() as outer:
                out, arguments, nested_args = _call(f, args, positions, kwargs)
                nested = outer or nested_args
                matrix = _matrix(out)
                outputs, scalar = (matrix[0], False) if matrix is not None else _outputs(out, "jacobian")
                basis = [[1.0 if i == k else 0.0 for i in range(len(outputs))] for k in range(len(outputs))]
                rows = [_split(row, arguments, nested) for row in _rows(outputs, basis, _inputs(arguments), nested)]
                per_argument = []
                for k in range(len(arguments)):
                    column = [row[k] for row in rows]
                    if matrix is not None:  # one row of the result per row of the output
                        width = matrix[1]
                        column = [column[i : i + width] for i in range(0, len(column), width)]
                    per_argument.append(column[0] if scalar else column)
                return per_argument[0] if isinstance(argnums, int) else tuple(per_argument)

    jacobian_f.__name__ = f"jacobian({getattr(f, '__name__', 'f')})"
    _mark(jacobian_f, Transformed("jacobian", f, argnums))
    return jacobian_f


def hessian(f: Callable[..., Any], argnums: int = 0) -> Callable[..., Any]:
    """``f`` transformed to return its matrix of second derivatives: ``jacobian(jacobian(f))``, the
    numbers of torch.func's ``jacrev(jacrev(f))`` (its ``hessian`` runs forward over reverse and may
    differ in the last bit); of a function with several outputs, one matrix per output."""
    if isinstance(argnums, bool) or not isinstance(argnums, int):
        raise TypeError(f"hessian takes one argnums, an int, got {type(argnums).__name__}")
    hessian_f = jacobian(jacobian(f, argnums), argnums)
    hessian_f.__name__ = f"hessian({getattr(f, '__name__', 'f')})"
    _mark(hessian_f, Transformed("hessian", f, argnums))
    return hessian_f


# ---- gradcheck -----------------------------------------------------------------------------


def gradcheck(
    f: Callable[..., Any],
    inputs: float | Sequence[float],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
) -> bool:
    """Check the engine's gradients of ``f`` at ``inputs`` against central finite differences.

    ``f`` takes one Value per input and returns a Value (or a Vector: then every row of the
    Jacobian is checked). Each derivative must satisfy ``|analytic - numeric| <= atol +
    rtol * |numeric|``, with ``numeric = (f(x + eps) - f(x - eps)) / (2 eps)``. Returns True,
    or raises ``AssertionError`` with a table of every derivative, so it can be used as-is in
    a pytest test. As with ``torch.autograd.gradcheck``, the defaults suit double precision,
    which is all vjpgrad has: where ``f`` is not smooth within ``eps`` of an input (relu at
    0, a pole), the two legitimately disagree.
    """
    with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
        xs = check.points(inputs)
        check.tolerances("gradcheck", eps, atol, rtol)
        outputs, _ = _outputs(f(*[Value(x) for x in xs]), "gradcheck")
        vector = len(outputs) > 1
        rows, failed = [], False
        for i in range(len(outputs)):  # one row of the Jacobian per output: the VJP with a basis seed
            seed = [1.0 if k == i else 0.0 for k in range(len(outputs))] if vector else None
            analytic = check.analytic(f, xs, seed)
            numeric = check.numeric(f, xs, seed, eps)
            for j, (x, a, n) in enumerate(zip(xs, analytic, numeric, strict=True)):
                ok = check.agree(a, n, atol, rtol)
                failed = failed or not ok
                rows.append(([str(i), str(j)] if vector else [str(j)], x, a, n, ok))
        if failed:
            heading = (
                f"gradcheck failed: analytic gradient differs from central differences (eps={eps:g}, "
                f"atol={atol:g}, rtol={rtol:g})"
            )
            columns = ["output", "input"] if vector else ["input"]
            raise AssertionError(check.table(heading, [*columns, "analytic", "numeric"], rows))
        return True
