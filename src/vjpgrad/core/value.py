"""``Value``: a scalar that records how it was computed, so gradients can flow back to it.

Each operation makes a node (``graph.make``) holding its result, its operands and what each
edge saved for the backward pass. The operators and the table's methods (``__mul__``,
``exp``...) are in ``core/operators.py``, written from the table of ``core/ops.py`` (one
function per face of a row), and Value inherits them; this module adds what a Value is (its
constructor, its number as Python reads it, comparisons, ``backward``) and the two operators
that choose between rows (``**`` and ``number / Value``), as PyTorch does.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, NoReturn, SupportsIndex, Union, overload

from vjpgrad.core import graph, operators, ops
from vjpgrad.core.backward import backward
from vjpgrad.core.floats import as_number
from vjpgrad.core.graph import Node
from vjpgrad.core.modes import USER_FRAMES, refuse_branch, refuse_number, state, switches_on
from vjpgrad.core.ops import Op

_COPYING = "copying or pickling a Value (copy.copy, copy.deepcopy, pickle)"
_COPY_INSTEAD = (
    "use the Value itself (an operation makes a new Value and never changes its operands), or x.detach() "
    "for a constant that follows the number; copy outside the function"
)
"""A copy's refusal inside a recorded function, and what to do instead (``modes.refuse_number``)."""

Operand = Union["Value", float]
"""What arithmetic accepts beside a Value: a Value or any real number."""

_make = graph.make


def unary(op: Op, x: Value) -> Value:
    """Apply a one-operand operation to a Value."""
    data = x._data
    out = op.forward(data)
    saved = op.saved[0](data, out) if x.requires_grad and graph.keeps_edges() else None
    return _make(Value, out, op, x, saved, None, None)


def nary(op: Op, xs: tuple[Value, ...]) -> Value:
    """Apply an operation of any number of operands, each a Value (``nn.functional.max``
    makes Values of its numbers first, as ``torch.max`` takes one tensor)."""
    datas = [x._data for x in xs]
    out = op.forward(*datas)
    takes_grad = [x.requires_grad for x in xs]
    if not any(takes_grad) or not graph.keeps_edges():
        return _make(Value, out, op, xs, None, None, None)
    saved = op.saved[0](tuple(datas), out)
    kept = tuple(s if takes else None for s, takes in zip(saved, takes_grad, strict=True))
    return _make(Value, out, op, xs, kept, None, None)


_Operator = Callable[["Value", Any], "Value"]


def binary_operators(op: Op) -> tuple[_Operator, _Operator]:
    """``self <op> other`` and ``other <op> self`` for an operation that is not in the table (a
    custom operation), calling its rules on every node; the table's own operators are written
    out in ``core/operators.py``. A number operand is a constant, not a node; any other type
    returns ``NotImplemented`` so Python raises its usual TypeError."""
    forward = op.forward
    saved_x, saved_y = op.saved

    def operator(self: Value, other: Any) -> Value:
        if isinstance(other, Value):
            y = other._data
            other_takes_grad = other.requires_grad
        else:
            number = as_number(other)
            if number is None:
                return NotImplemented  # type: ignore[no-any-return]  # NotImplemented is typed Any
            y = other = number
            other_takes_grad = False
        x = self._data
        out = forward(x, y)
        keeps = graph.keeps_edges()
        da = saved_x(x, y, out) if self.requires_grad and keeps else None
        db = saved_y(x, y, out) if other_takes_grad and keeps else None
        return _make(Value, out, op, self, da, other, db)

    def reflected_operator(self: Value, other: Any) -> Value:
        x = as_number(other)
        if x is None:
            return NotImplemented  # type: ignore[no-any-return]  # NotImplemented is typed Any
        y = self._data
        out = forward(x, y)
        db = saved_y(x, y, out) if self.requires_grad and graph.keeps_edges() else None
        return _make(Value, out, op, x, None, self, db)

    for function, name in ((operator, op.name), (reflected_operator, f"r{op.name}")):
        function.__name__ = function.__qualname__ = name  # what repr() shows
    return operator, reflected_operator


def _check_data(data: object) -> float:
    """``data`` as a float, or a TypeError (OverflowError) that says what was wrong."""
    if isinstance(data, (bool, int, float)):
        pass
    elif type(data).__module__ == "numpy" and type(data).__name__ in ("bool", "bool_"):
        data = bool(data)  # a NumPy bool, which is not numbers.Real
    elif isinstance(data, Value) or not isinstance(data, numbers.Real):
        kind = type(data)
        plain = kind.__module__ == "builtins" or kind.__module__.startswith("vjpgrad")
        name = kind.__name__ if plain else f"{kind.__module__}.{kind.__qualname__}"
        hint = ": use the Value itself, or .detach() for a constant copy" if isinstance(data, Value) else ""
        raise TypeError(f"Value() takes a real number (int, float, bool, Fraction, a NumPy scalar), got {name}{hint}")
    try:
        return float(data)
    except OverflowError:
        shown = f"an int of {_digits(data)} digits" if isinstance(data, int) else repr(data)
        raise OverflowError(
            f"Value(): {shown} is too large to be converted to a float without overflow "
            "(the largest float is about 1.8e308; pass float('inf') if you mean infinity)"
        ) from None


def _digits(n: int) -> str:
    """How many decimal digits ``n`` has, without ``str(n)`` (refused beyond 4,300 digits)."""
    size = abs(n)
    if size.bit_length() <= 14_000:  # about 4,200 digits: within what str() of an int allows
        return str(len(str(size)))
    estimate = int(size.bit_length() * math.log10(2)) + 1
    return f"about {estimate:,}"


def _micrograds_children(children: Collection[object], op: object) -> str:
    """The message for micrograd's ``Value(data, _children, _op)``: what to write instead."""
    if not children:
        return (
            "Value() got an empty collection as its second argument, as in micrograd's Value(data, _children, _op): "
            "vjpgrad records the children itself (there is no _children argument: the operators build the graph), "
            "so write Value(data) instead for a leaf (the second argument is requires_grad, a bool)"
        )
    if isinstance(op, str) and len(children) == 2 and op in ("+", "-", "*", "/", "**"):
        instead = f"a {op} b"
    elif isinstance(op, str) and len(children) == 1 and op.startswith("**"):
        instead = f"a{op}"
    elif isinstance(op, str) and len(children) == 1 and op.isidentifier():
        instead = f"a.{op}()"
    else:
        instead = "a + b, a * b, a.tanh()..."
    return (
        f"Value() got {'a Value' if len(children) == 1 else f'{len(children)} Values'} as its second argument, "
        "as in micrograd's Value(data, _children, _op): "
        "vjpgrad records the children itself (there is no _children argument: the operators build the graph), "
        f"so write {instead} instead, with {'a the Value' if len(children) == 1 else 'a, b the Values'} you passed; "
        "Value(data) alone makes a leaf "
        "(the second argument is requires_grad, a bool)"
    )


def _pytorchs(name: str, instead: str) -> Any:
    """A tensor's attribute a Value has not (``grad_fn``...): reading it raises ``AttributeError``
    saying what vjpgrad has instead (a class attribute: reading any other attribute costs nothing more)."""

    def refused(self: object) -> NoReturn:
        raise AttributeError(f"a vjpgrad Value has no {name} (a PyTorch tensor's): {instead}")

    return property(refused)


class Value(operators.ValueOperators):
    """A scalar in a computation graph.

    ``Value(data, requires_grad=True, label=None)``: ``data`` is any real number, stored as
    a float. Arithmetic and the functions below build new Values that remember their
    operands; ``backward()`` then fills ``.grad`` of every Value that requires grad with
    the derivative of the output with respect to it.

    ``.grad`` accumulates, as in PyTorch: each ``backward`` call adds this pass's gradients
    to what is there. Call ``zero_grad()`` between passes when you want fresh ones.
    """

    __slots__ = ()
    __array_ufunc__ = None  # NumPy defers to us: np.float64(2) * x is a Value, not an array

    def __init__(
        self,
        data: float | numbers.Real,
        requires_grad: bool = True,
        label: str | None = None,
    ) -> None:
        if type(data) is float and type(requires_grad) is bool and label is None:
            number = data  # the common case, a float (a row of data, a model's weights): nothing to check
        else:
            if isinstance(requires_grad, (tuple, list, set, frozenset)) and all(
                isinstance(c, Value) for c in requires_grad
            ):
                raise TypeError(_micrograds_children(requires_grad, label))
            number = _check_data(data)
            if not isinstance(requires_grad, bool):
                raise TypeError(f"Value() requires_grad must be a bool, got {type(requires_grad).__name__}")
            if label is not None and not isinstance(label, str):
                raise TypeError(f"Value() label must be a str or None, got {type(label).__name__}")
        graph.init_leaf(self, number, requires_grad, label)
        if switches_on[0] and state.recording is not None:  # made inside a function compile records
            state.recording.made_leaf(self)

    # ---- what it is ---------------------------------------------------------------------

    @property
    def op(self) -> str:
        """Name of the operation that made this Value (``"*"``, ``"log"``...), ``""`` for a leaf."""
        op = graph.shown_op(self)
        return "" if op is None else op.shown

    @property
    def parents(self) -> tuple[Value, ...]:
        """The Values this one was computed from (number constants are not Values)."""
        if graph.shown_op(self) is None:
            return ()
        return tuple(x for x in graph.operands(self) if isinstance(x, Value))

    @property
    def is_leaf(self) -> bool:
        """True for a Value made by the user (or a constant), False for an operation's result."""
        return graph.shown_op(self) is None

    # ---- micrograd's names, so that its code (draw_dot, trace) runs on Values ------------------

    @property
    def _prev(self) -> set[Value]:
        """micrograd's name for the parents: the set of Values this one was computed from."""
        return set(self.parents)

    @property
    def _op(self) -> str:
        """micrograd's name for ``op``: the symbol of the operation that made it, ``""`` for a leaf."""
        return self.op

    @property
    def _backward(self) -> NoReturn:
        """micrograd's per-node closure, which vjpgrad has not: an AttributeError that says what to
        call instead (a class attribute: reading any other attribute costs nothing more)."""
        raise AttributeError(
            "a vjpgrad Value has no _backward: each operation's derivative rule lives in one table, and "
            "o.backward() runs them all in order; to see each step micrograd's o._backward() takes, one edge at a "
            "time, print(vjpgrad.explain(o))"
        )

    # PyTorch's names a learner brings, which a Value has not: each says what vjpgrad has instead
    retain_grad = _pytorchs(
        "retain_grad", "every Value the pass reaches gets its .grad, results of operations too, so none needs keeping"
    )
    grad_fn = _pytorchs("grad_fn", ".op names the operation that made it ('' for a leaf), .parents its operands")
    requires_grad_ = _pytorchs(
        "requires_grad_", "set v.requires_grad = True (or False) on a leaf; Value(x) requires grad as it is made"
    )

    # ---- the number, as Python reads it -------------------------------------------------------
    # Each of these reads the data property, which vjpgrad.compile refuses while it records.

    def __repr__(self) -> str:
        refuse_number(
            "printing a Value", "print what the function returns, outside it, or call it without compile or vmap"
        )
        label = "" if self.label is None else f", label={self.label!r}"
        grad = "" if self.requires_grad else ", requires_grad=False"
        return f"Value(data={self.data!r}, grad={self._grad!r}{grad}{label})"

    def __format__(self, spec: str) -> str:
        """``f"{loss:.4f}"`` formats the data, as for a 0-d tensor; ``f"{v}"`` is ``repr``."""
        refuse_number(
            "formatting a Value", "format what the function returns, outside it, or call it without compile or vmap"
        )
        return format(self._data, spec) if spec else repr(self)

    def __float__(self) -> float:
        refuse_number("float() of a Value")
        return self._data

    def __int__(self) -> int:
        """``int(v)`` truncates the data, as for a 0-d tensor (ValueError for nan, OverflowError for inf)."""
        refuse_number("int() of a Value")
        return int(self._data)

    @overload
    def __round__(self, ndigits: None = None) -> int: ...
    @overload
    def __round__(self, ndigits: int) -> float: ...
    def __round__(self, ndigits: int | None = None) -> int | float:
        """``round(v)`` rounds the data as ``round()`` rounds a float: a plain number, off the graph
        (round's slope is zero wherever it has one), as ``int(v)`` is."""
        refuse_number("round() of a Value")
        return round(self._data) if ndigits is None else round(self._data, ndigits)

    def __bool__(self) -> bool:
        """Truthiness of the data, as a PyTorch 0-d tensor: ``Value(0.0)`` is false."""
        refuse_branch("bool() of a Value (an if or while on a Value)")
        return bool(self._data)

    def item(self) -> float:
        """The data as a Python float, as ``tensor.item()``."""
        refuse_number("Value.item()")
        return self._data

    def detach(self) -> Value:
        """A new leaf with the same data that requires no grad: a constant cut from the graph."""
        if switches_on[0] and state.recording is not None:  # compile records the cut: its number changes
            cut = _make(Value, self._data, ops.DETACH, self, None, None, None)
            if self.label is not None:
                cut.label = self.label
            return cut
        return Value(self._data, requires_grad=False, label=self.label)

    # ---- copies: made from the number, so refused while a function is recorded -------------------
    # copy.copy, copy.deepcopy and pickle read a Value through object.__reduce_ex__, which asks
    # __getstate__ for the slots (since Python 3.11; before, it reads them itself, so 3.10 refuses
    # in __reduce_ex__). One check of ``switches_on`` outside a recording.

    if sys.version_info >= (3, 11):

        def __getstate__(self) -> object:
            """What a copy or a pickle is made from, the number among it: refused while a function
            is recorded (vmap, compile), as reading the number is, since the copy would hold the
            recorded sample's number, a constant in the replay."""
            if switches_on[0] and state.refusal:
                refuse_number(_COPYING, _COPY_INSTEAD)
            return object.__getstate__(self)

    else:

        def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
            """``copy.copy``, ``copy.deepcopy`` and ``pickle``: refused while a function is recorded,
            as ``__getstate__`` is on Python 3.11 and later."""
            if switches_on[0] and state.refusal:
                refuse_number(_COPYING, _COPY_INSTEAD)
            return object.__reduce_ex__(self, protocol)

    def zero_grad(self) -> None:
        """Set ``.grad`` to 0.0."""
        self.grad = 0.0

    def backward(
        self,
        grad: float | numbers.Real | Iterable[float | numbers.Real] | None = None,
        *,
        retain_graph: bool = False,
        gradient: Any = None,
        create_graph: bool = False,
    ) -> None:
        """Add d(self)/dx times ``grad`` into ``x.grad`` for every x this Value depends on.

        ``grad`` is the seed: the gradient of some final quantity with respect to this
        Value (1.0 when this Value is that quantity); PyTorch's spelling ``gradient=`` works
        too. The pass adds its gradients to ``.grad`` of every node that requires grad,
        leaves and intermediates alike, so two calls give exactly twice one call. Without
        ``retain_graph=True`` the pass frees what it used, and a later pass through it
        raises ``RuntimeError``. ``create_graph=True`` (PyTorch's way to differentiate the
        gradients again) raises ``TypeError`` saying to use ``vjpgrad.gradients``, which can.

        Several weights (``y.backward([0.1, 1.0, 0.0001])``) are summed into one seed, with a
        ``UserWarning``, as PyTorch did before version 1.3 (its C++ engine still does) and as
        ``Vector.empty(1)`` does: the answer's case 3 on one number (current PyTorch refuses it,
        "Mismatch in shape").

        Case 2 of the Stack Overflow answer: one output, so the seed is 1.0 and the gradients
        are the plain derivatives, ``3``, ``4b`` and ``1/c``; a second pass adds them again.

        >>> from vjpgrad import Value, log
        >>> a, b, c = Value(0.1), Value(1.0), Value(0.1)
        >>> y = 3 * a + 2 * b * b + log(c)
        >>> y.backward(retain_graph=True)   # the seed: 1.0
        >>> a.grad, b.grad, c.grad
        (3.0, 4.0, 10.0)
        >>> y.backward()                    # gradients accumulate
        >>> a.grad, b.grad, c.grad
        (6.0, 8.0, 20.0)
        """
        with USER_FRAMES:  # an error shows the user's lines, not vjpgrad's
            if grad is not None and gradient is not None:
                raise TypeError("backward() got both grad= and gradient=: they are the same seed, pass one")
            seed = grad if gradient is None else gradient
            backward([self], None, seed, retain_graph=retain_graph, create_graph=create_graph)

    # ---- comparisons: on the data, as PyTorch's 0-d tensors; hashing stays by identity ------------
    # So ``assert y == 6.0`` works as it does on a tensor, and Values remain dict keys and set
    # members (a dict finds a key by identity before it compares).

    def _other(self, other: object, what: str) -> float | None:
        refuse_branch(f"comparing a Value ({what})")
        return other._data if isinstance(other, Node) else as_number(other)

    def __eq__(self, other: object) -> bool:
        y = self._other(other, "==")
        return NotImplemented if y is None else self._data == y

    def __ne__(self, other: object) -> bool:
        y = self._other(other, "!=")
        return NotImplemented if y is None else self._data != y

    __hash__ = Node.__hash__  # by identity: equal data does not make two Values one key

    def __lt__(self, other: object) -> bool:
        y = self._other(other, "<")
        return NotImplemented if y is None else self._data < y

    def __le__(self, other: object) -> bool:
        y = self._other(other, "<=")
        return NotImplemented if y is None else self._data <= y

    def __gt__(self, other: object) -> bool:
        y = self._other(other, ">")
        return NotImplemented if y is None else self._data > y

    def __ge__(self, other: object) -> bool:
        y = self._other(other, ">=")
        return NotImplemented if y is None else self._data >= y

    # ---- the operators that choose between rows of the table (the others are inherited) ---------

    def __pow__(self, other: Operand) -> Value:
        """self ** other: a number exponent takes PyTorch's special cases (x ** 2 is x * x)."""
        if isinstance(other, Node):
            return self._pow_value(other)
        return self._pow_number(other)

    def __rtruediv__(self, other: float) -> Value:
        """other / self, computed as (1 / self) * other like PyTorch (same rounding, same edges)."""
        if as_number(other) is None:
            return NotImplemented
        return self.reciprocal() * other

    def __pos__(self) -> Value:
        """+self, which is self, as in PyTorch."""
        return self


operators.bind(Value)  # the inherited operators make Values from now on


def from_floats(numbers: Sequence[float], requires_grad: bool) -> list[Value]:
    """``[Value(x, requires_grad) for x in numbers]`` for a list or tuple of floats (exactly
    ``float``: nothing to check or convert), made in one loop (``graph.new_leaves``): what a
    Vector of floats is made of. A function being recorded is told of each, as ``Value()`` tells
    it (``Recorder.made_leaf``)."""
    made = graph.new_leaves(Value, numbers, requires_grad)
    if switches_on[0] and state.recording is not None:
        for leaf in made:
            state.recording.made_leaf(leaf)
    return made
