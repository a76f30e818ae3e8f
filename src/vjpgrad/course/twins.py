"""The same graph in two engines, the student's and vjpgrad, compared node by node.

A ``Program`` is a computation graph written as straight-line code: leaves with their numbers,
then one operation a line on earlier nodes and numbers, so that a node may be used twice.
Hypothesis generates them (``programs``). A ``Twin`` builds one in vjpgrad and in any engine of
micrograd's shape (``Value(data)``, the operators, ``.exp() .log() .tanh() .relu()``, ``.data
.grad ._prev ._backward``), names each node alike and compares:

- the forward pass: each node's number and operands (``check_forward``);
- each edge of the reverse pass, with the student's ``_backward`` closures called in vjpgrad's
  order (``check_closures``: exercises 2 and 3, before the student has a ``backward()``);
- every gradient after the student's own ``backward()``, once or twice (``check_backward``,
  ``check_passes``: exercises 4 and 5).

Any correct engine passes, whatever its internals and rounding: numbers are compared with a
relative tolerance. A difference raises ``MismatchError``, whose message is vjpgrad's ``explain`` steps
beside the student's numbers for the same nodes, with the first step that differs (in the order of
the reverse pass) marked and named, and what that difference usually means.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import vjpgrad
from vjpgrad.course import remote
from vjpgrad.course.expect import advice

# ---- programs -------------------------------------------------------------------------------------


Operand = str | float
"""A node's name (``"x1"``, ``"t2"``) or a number."""


@dataclass(frozen=True)
class Instruction:
    """``name = op(operands)``: for ``**`` the second operand is the exponent, a number."""

    name: str
    op: str
    operands: tuple[Operand, ...]

    @property
    def text(self) -> str:
        terms = [_term(x) for x in self.operands]
        if self.op in BINARY:
            return f"{terms[0]} {self.op} {terms[1]}"
        return f"{self.op}({terms[0]})"

    @property
    def nodes(self) -> list[str]:
        """The operands that are nodes, each once, in order."""
        return list(dict.fromkeys(x for x in self.operands if isinstance(x, str)))


def _term(x: Operand) -> str:
    return x if isinstance(x, str) else repr(x)


BINARY = ("+", "*", "**")
OPERATIONS: dict[str, Callable[..., Any]] = {
    "+": lambda a, b: a + b,
    "*": lambda a, b: a * b,
    "**": lambda a, k: a**k,
    "exp": lambda a: a.exp(),
    "log": lambda a: a.log(),
    "tanh": lambda a: a.tanh(),
    "relu": lambda a: a.relu(),
}
"""Each operation, written once for both engines: what the student's Value must support."""


@dataclass(frozen=True)
class Program:
    """A graph as straight-line code: ``leaves`` (name, number), then ``instructions``.

    The output is the last node. ``repr`` is the code on one line, as hypothesis shows it.
    """

    leaves: tuple[tuple[str, float], ...]
    instructions: tuple[Instruction, ...]

    @property
    def output(self) -> str:
        return self.instructions[-1].name if self.instructions else self.leaves[-1][0]

    @property
    def names(self) -> list[str]:
        """Every node, leaves first, then in the order of computation."""
        return [name for name, _ in self.leaves] + [i.name for i in self.instructions]

    def lines(self) -> list[str]:
        out = [f"{name} = {x!r}" for name, x in self.leaves]
        for i in self.instructions:
            out.append(f"{i.name} = {i.text}" + ("    (the output)" if i.name == self.output else ""))
        return out

    def __repr__(self) -> str:
        return "; ".join(line.split("    (")[0] for line in self.lines())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """As hypothesis shows a generated program: its code on one line."""
        printer.text(repr(self))

    def instruction(self, name: str) -> Instruction | None:
        return next((i for i in self.instructions if i.name == name), None)

    def users(self, name: str) -> list[str]:
        """The operations that use ``name`` as an operand."""
        return [i.name for i in self.instructions if name in i.nodes]


def _code_of(node: Any) -> tuple[str, int, str] | None:
    """Where a node's ``_backward`` was written (file, line, name: plain data, read through the
    student's process where it runs there), or None where that cannot be read."""
    try:
        code = node._backward.__code__
        found = (str(code.co_filename), int(code.co_firstlineno), str(code.co_name))
    except Exception:  # a method of a C class, a callable object: no code to compare
        return None
    return found


class MismatchError(AssertionError):
    """The student's engine disagrees with vjpgrad; the message says where and shows both."""


SMALL = Program(
    (("x1", 1.5), ("x2", -0.5)),
    (
        Instruction("t1", "*", ("x1", "x2")),
        Instruction("t2", "+", (2.0, "t1")),
        Instruction("t3", "*", ("t2", "x1")),
    ),
)
"""A small graph of + and * with a number on each side and a node used twice: each generated
check tries it first, so that a check of code not written yet, or plainly wrong, ends at once."""


SHORTCUT = Program(
    (("x1", 1.5),),
    (
        Instruction("t1", "*", ("x1", 2.0)),
        Instruction("t2", "*", ("t1", 3.0)),
        Instruction("t3", "*", ("t2", 0.5)),
        Instruction("t4", "+", ("t3", "t1")),
    ),
)
"""t1 used by the output both directly and through a chain: a reverse pass that runs a node as soon
as it meets it (in any order of _prev) runs t1 before t2 has handed it its share."""


def smallest(op: str) -> Program:
    """The smallest graph that uses ``op``, at a point where every engine defines it."""
    return Program((("x1", 0.75),), (Instruction("t1", op, ("x1", 2) if op in BINARY else ("x1",)),))


def chained(op: str) -> Program:
    """``smallest(op)`` times 3: ``op``'s result is not the output, so its ``out.grad`` is 3, not 1, and
    a ``_backward`` that forgets to multiply by ``out.grad`` shows."""
    first = smallest(op)
    return Program(first.leaves, (*first.instructions, Instruction("t2", "*", ("t1", 3.0))))


def build(program: Program, value_type: type[Any]) -> dict[str, Any]:
    """Run ``program`` in an engine: every node by name, made with ``value_type`` and the operators.

    An operation that gives something other than a ``value_type`` stops it with ``MismatchError``."""
    __tracebackhide__ = True
    nodes: dict[str, Any] = {name: value_type(x) for name, x in program.leaves}
    for i in program.instructions:
        operands = [nodes[x] if isinstance(x, str) else x for x in i.operands]
        nodes[i.name] = OPERATIONS[i.op](*operands)
        if not isinstance(nodes[i.name], value_type):
            made = nodes[i.name]
            raise MismatchError(f"{i.name} = {i.text} gave {made!r}, not a Value (is out returned?)\n  {program!r}")
    return nodes


CONSTANTS = (2.0, -1.0, 0.5, 3.0)
EXPONENTS = (2, 3, -1, 0.5, -0.5, 1.5)
LIMIT = 1e3
"""No node's number grows beyond this, so that no engine overflows and gradients stay readable."""


def _defined(op: str, operands: Sequence[float]) -> bool:
    """Whether ``op`` is defined, finite and moderate on these numbers in every engine (math's
    functions raise where vjpgrad gives inf or nan, and a fractional power of a negative number is
    complex in Python)."""
    x = operands[0]
    if op == "log":
        return x > 0.05
    if op == "exp":
        return x < 5
    if op == "**":
        k = operands[1]
        if k != int(k) and x < 0.1:
            return False
        if k < 0 and abs(x) < 0.1:
            return False
    return True


def programs(
    ops: Sequence[str] = ("+", "*"),
    *,
    max_leaves: int = 3,
    max_operations: int = 6,
    low: float = -2.0,
    high: float = 2.0,
    must_use: str | None = None,
) -> Any:
    """A hypothesis strategy of ``Program`` s using ``ops``, with numbers defined in every engine.

    Each operation's first operand is the latest node or an earlier one, its second any node or a
    number (on either side of ``+`` and ``*``), so graphs have chains, branches and nodes used twice,
    and shrink to the shortest chain. ``must_use`` puts that operation last (on a leaf at 1.0 if it
    is not defined where it was drawn).
    """
    from hypothesis import strategies as st

    unknown = sorted(set(ops) - set(OPERATIONS))
    if unknown:
        raise ValueError(f"unknown operations {unknown}: the operations are {list(OPERATIONS)}")

    # Each strategy is made once and drawn from again: hypothesis works out a new strategy's properties
    # (whether it can be empty, which values it can reuse) the first time it is drawn from, which took
    # most of exercise 3's checking time when a strategy was made anew for each operand drawn.
    counts, lengths = st.integers(1, max_leaves), st.integers(1, max_operations)
    leaf_numbers = st.floats(low, high, allow_nan=False, allow_infinity=False)
    operations, exponents, sides = st.sampled_from(list(ops)), st.sampled_from(EXPONENTS), st.booleans()
    sampled: dict[tuple[Operand, ...], Any] = {}
    seconds: dict[tuple[str, ...], Any] = {}

    def one_of(choices: Sequence[Operand]) -> Any:
        key = tuple(choices)
        if key not in sampled:
            sampled[key] = st.sampled_from(key)
        return sampled[key]

    def second_of(names: Sequence[str]) -> Any:
        key = tuple(names)
        if key not in seconds:
            seconds[key] = st.one_of(one_of(key), one_of(CONSTANTS))
        return seconds[key]

    @st.composite
    def draw_program(draw: Any) -> Program:
        count = draw(counts)
        numbers_drawn = [draw(leaf_numbers) for _ in range(count)]
        leaves = tuple((f"x{k + 1}", x) for k, x in enumerate(numbers_drawn))
        values = dict(leaves)
        names = [name for name, _ in leaves]
        instructions: list[Instruction] = []
        length = draw(lengths)
        for k in range(length):
            last = must_use is not None and k == length - 1
            op = must_use if last else draw(operations)
            assert op is not None
            first = draw(one_of([names[-1], *names[:-1]]))
            operands: tuple[Operand, ...]
            if op == "**":
                operands = (first, draw(exponents))
            elif op in BINARY:
                second: Operand = draw(second_of(names))
                operands = (second, first) if draw(sides) else (first, second)
            else:
                operands = (first,)
            numbers_in = [values[x] if isinstance(x, str) else x for x in operands]
            if not _defined(op, numbers_in):
                continue
            result = float(build(Program(tuple(values.items()), (Instruction("t", op, operands),)), vjpgrad.Value)["t"])
            if not math.isfinite(result) or abs(result) > LIMIT:
                continue
            name = f"t{len(instructions) + 1}"
            instructions.append(Instruction(name, op, operands))
            values[name] = result
            names.append(name)
        if must_use is not None and all(i.op != must_use for i in instructions):  # it was undefined where drawn
            leaf = f"x{len(leaves) + 1}"
            leaves += ((leaf, 1.0),)  # 1.0: every operation is defined there
            operands = (leaf, 2) if must_use in BINARY else (leaf,)
            instructions.append(Instruction(f"t{len(instructions) + 1}", must_use, operands))
        return Program(leaves, tuple(instructions))

    return draw_program()


# ---- comparing numbers ------------------------------------------------------------------------------


def close(theirs: object, ours: float, scale: float = 0.0) -> bool:
    """Whether the student's number agrees with vjpgrad's up to rounding: a relative tolerance, and
    an absolute one of the size of the terms that were added (a sum of terms that cancel keeps
    the terms' rounding)."""
    if isinstance(theirs, bool) or not isinstance(theirs, numbers.Real):
        return False
    theirs = float(theirs)
    if math.isnan(ours) or math.isnan(theirs):
        return math.isnan(ours) and math.isnan(theirs)
    return math.isclose(theirs, ours, rel_tol=1e-6, abs_tol=1e-9 + 1e-6 * scale)


def number(x: object) -> str:
    """A number as the tables show it."""
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        return f"{float(x):.6g}"
    return "-" if x is None else remote.type_name(x)


def numbers_apart(theirs: object, ours: float) -> tuple[str, str]:
    """Both numbers, with enough digits to tell them apart."""
    a, b = number(theirs), number(ours)
    if a == b and isinstance(theirs, numbers.Real):
        a, b = f"{float(theirs)!r}", f"{ours!r}"
    return a, b


# ---- one pass of the student's reverse pass, recorded ---------------------------------------------


@dataclass
class Call:
    """One call of a node's ``_backward``: the node's gradient then, and what each operand received."""

    node: str
    upstream: object
    before: dict[str, object]
    after: dict[str, object]

    def received(self, operand: str) -> object:
        before, after = self.before[operand], self.after[operand]
        if isinstance(before, numbers.Real) and isinstance(after, numbers.Real):
            return float(after) - float(before)
        return after


@dataclass
class Recording:
    """The student's ``_backward`` calls of one pass, in the order they ran."""

    calls: list[Call] = field(default_factory=list)
    instrumented: bool = True
    start: dict[str, object] = field(default_factory=dict)
    """Each node's ``.grad`` when the pass began."""

    def of(self, node: str) -> list[Call]:
        return [call for call in self.calls if call.node == node]


@dataclass(frozen=True)
class Edge:
    """An edge of vjpgrad's reverse pass, its steps summed: ``node`` hands ``contribution`` to ``operand``."""

    step: int
    node: str
    op: str
    operand: str
    upstream: float
    locals: tuple[float, ...]
    contribution: float

    @property
    def scale(self) -> float:
        return sum(abs(self.upstream * local) for local in self.locals)


class Twin:
    """One ``Program`` built in vjpgrad and in the student's engine, with vjpgrad's pass explained."""

    def __init__(self, program: Program, value_type: type[Any]) -> None:
        self.program = program
        self.value_type = value_type
        self.ours: dict[str, vjpgrad.Value] = build(program, vjpgrad.Value)
        self.theirs = build(program, value_type)
        self.explanation = vjpgrad.explain(self.ours[program.output], names=self.ours)
        self.edges = self._edges()

    def _edges(self) -> list[Edge]:
        grouped: dict[tuple[str, str], list[vjpgrad.Step]] = {}
        for step in self.explanation.steps:
            grouped.setdefault((step.node, step.operand), []).append(step)
        return [
            Edge(k, node, steps[0].op, operand, steps[0].upstream, tuple(s.local for s in steps),
                 sum(s.contribution for s in steps))
            for k, ((node, operand), steps) in enumerate(grouped.items(), start=1)
        ]  # fmt: skip

    def gradient(self, name: str) -> float:
        """vjpgrad's gradient of node ``name`` in one pass (0 for a node the output does not use)."""
        return self.explanation.gradients.get(self.ours[name], 0.0)

    def scale(self, name: str) -> float:
        """The size of the terms that made ``name``'s gradient."""
        terms = [edge.scale for edge in self.edges if edge.operand == name]
        return sum(terms) + (1.0 if name == self.program.output else 0.0)

    def reached(self) -> list[str]:
        """The operations the output depends on, in the order vjpgrad's pass runs them."""
        return [name for name in reversed(self.program.names) if self.ours[name] in self.explanation.gradients]

    # ---- the forward pass

    def check_forward(self) -> None:
        """Each node is one of the student's Values, with vjpgrad's number and its operands in ``_prev``."""
        __tracebackhide__ = True
        for name in self.program.names:
            node, ours = self.theirs[name], self.ours[name]
            instruction = self.program.instruction(name)
            made = f"{name} = {instruction.text}" if instruction else name
            if not close(node.data, ours.data, abs(ours.data)):
                theirs_text, ours_text = numbers_apart(node.data, ours.data)
                raise MismatchError(f"{made} is {theirs_text} in yours, {ours_text} in vjpgrad\n\n{self._graph()}")
            if instruction is None:
                continue
            prev = list(getattr(node, "_prev", ()))
            for operand in instruction.nodes:
                if not any(p is self.theirs[operand] for p in prev):
                    raise MismatchError(
                        f"{made}: {operand} is not in {name}._prev, so the reverse pass cannot reach it"
                        + advice(": make the result with Value(data, (self, other), op)")
                        + f"\n\n{self._graph()}"
                    )

    # ---- the student's closures, called in vjpgrad's order

    def drive_closures(self) -> Recording:
        """Seed the output with 1 and call each node's ``_backward`` once, in vjpgrad's order."""
        recording = Recording()
        self.theirs[self.program.output].grad = 1.0
        for name in self.reached():
            if self.program.instruction(name) is not None:
                self._call(recording, name, self.theirs[name]._backward)
        return recording

    def _call(self, recording: Recording, name: str, run: Callable[[], object]) -> None:
        instruction = self.program.instruction(name)
        assert instruction is not None
        operands = instruction.nodes
        node = self.theirs[name]
        before = {x: self.theirs[x].grad for x in operands}
        call = Call(name, node.grad, before, {})
        recording.calls.append(call)
        run()
        call.after.update({x: self.theirs[x].grad for x in operands})

    def check_closures(self) -> None:
        """Every edge hands vjpgrad's contribution when the closures run in vjpgrad's order."""
        __tracebackhide__ = True
        self.check_forward()
        recording = self.drive_closures()
        report = self._first_difference(recording)
        if report is not None:
            raise MismatchError(self._report(recording, "your _backward closures differ from vjpgrad's", report))

    # ---- the student's backward()

    def record_backward(self) -> Recording:
        """Run the student's ``backward()`` on the output with every operation's ``_backward`` watched."""
        recording = Recording(start={name: node.grad for name, node in self.theirs.items()})
        originals: dict[str, Any] = {}
        for instruction in self.program.instructions:
            node = self.theirs[instruction.name]
            original = node._backward

            def watched(name: str = instruction.name, original: Callable[[], object] = original) -> None:
                self._call(recording, name, original)

            try:
                node._backward = watched
                originals[instruction.name] = original
            except AttributeError:  # an engine whose nodes refuse new attributes: compare the results only
                recording.instrumented = False
        try:
            self.theirs[self.program.output].backward()
        finally:
            for name, original in originals.items():
                self.theirs[name]._backward = original
        return recording

    def wrong_gradients(self, names: Sequence[str], times: int = 1) -> list[str]:
        return [
            name
            for name in names
            if not close(self.theirs[name].grad, times * self.gradient(name), times * self.scale(name))
        ]

    def check_backward(self) -> None:
        """After the student's ``backward()``, every node's ``.grad`` is vjpgrad's gradient."""
        __tracebackhide__ = True
        recording = self.record_backward()
        wrong = self.wrong_gradients(self.program.names)
        if wrong:
            raise MismatchError(self._report(recording, self._headline(wrong), self._first_difference(recording)))

    def leaves(self) -> list[str]:
        return [name for name, _ in self.program.leaves]

    def check_passes(self, passes: int = 2) -> None:
        """After ``passes`` calls of the student's ``backward()``, each leaf holds ``passes`` times one pass."""
        __tracebackhide__ = True
        leaves = self.leaves()
        for k in range(1, passes + 1):
            recording = self.record_backward()
            wrong = self.wrong_gradients(leaves, times=k)
            if wrong:
                which = "pass" if k == 1 else f"{_ordinal(k)} pass"
                headline = self._headline(wrong, times=k, after=f"after the {which}")
                if k > 1:
                    headline += (
                        f"\n(vjpgrad, as PyTorch, adds the same gradients again at each pass: {k} passes give "
                        f"{k} times one pass)"
                    )
                raise MismatchError(self._report(recording, headline, self._first_difference(recording), k, leaves))

    def _headline(self, wrong: Sequence[str], times: int = 1, after: str = "after backward()") -> str:
        first = wrong[0]
        theirs, ours = numbers_apart(self.theirs[first].grad, times * self.gradient(first))
        others = f" (and {', '.join(wrong[1:])})" if len(wrong) > 1 else ""
        return f"{after}, {first}.grad is {theirs} in yours, {ours} in vjpgrad{others}"

    # ---- the report

    def _first_difference(self, recording: Recording) -> tuple[int, str] | None:
        """The first edge, in vjpgrad's order, whose node or contribution differs: (its step, why)."""
        if not recording.instrumented:
            return None
        for edge in self.edges:
            calls = recording.of(edge.node)
            if not calls:
                return edge.step, (
                    f"{edge.node}'s _backward was never called: your backward() did not reach {edge.node}, "
                    f"which the output uses"
                )
            if len(calls) > 1:
                return edge.step, (
                    f"{edge.node}'s _backward ran {len(calls)} times: each node must run exactly once"
                    + advice(" (keep a set of the nodes already listed)", " (in vjpgrad it runs once)")
                )
            call = calls[0]
            if not close(call.upstream, edge.upstream, self.scale(edge.node)):
                return edge.step, self._why_upstream(recording, edge, call)
            received = call.received(edge.operand)
            if not close(received, edge.contribution, edge.scale):
                return edge.step, self._why_contribution(edge, call, received)
        return None

    def _ran_operands_first(self, recording: Recording) -> bool:
        """Whether the pass ran each operation after the operations it was made from (a topological
        order, not reversed: the mistake of ``for v in topo`` where ``reversed(topo)`` was meant)."""
        first: dict[str, int] = {}
        for k, c in enumerate(recording.calls):
            first.setdefault(c.node, k)
        pairs = [
            (first[operand], first[i.name])
            for i in self.program.instructions
            if i.name in first
            for operand in i.nodes
            if operand in first and operand != i.name
        ]
        return bool(pairs) and all(made < user for made, user in pairs)

    def _why_upstream(self, recording: Recording, edge: Edge, call: Call) -> str:
        node = edge.node
        theirs, ours = numbers_apart(call.upstream, edge.upstream)
        said = f"{node}'s _backward ran when {node}.grad was {theirs}, but its gradient is {ours}"
        position = recording.calls.index(call)
        ran_at = {id(c): k for k, c in enumerate(recording.calls)}
        later = [user for user in self.program.users(node) if any(ran_at[id(c)] > position for c in recording.of(user))]
        kept = recording.start.get(node, 0)
        if isinstance(kept, numbers.Real) and kept != 0 and close(call.upstream, edge.upstream + float(kept)):
            return f"{said}: it still held {number(kept)} from the pass before, and handed on old + new" + advice(
                ". At the start of each pass set the intermediate nodes' grads to 0 (the leaves keep theirs)"
            )
        if later and self._ran_operands_first(recording):
            return (
                f"{said} once every node that uses it has handed it its share: it ran before {later[0]}, which "
                f"uses {node}. Your pass ran every node after its operands, the order they were made in"
                + advice(": a backward pass runs that order reversed, the output first", "")
            )
        if later:
            return (
                f"{said} once every node that uses it has handed it its share: it ran before {later[0]}, which "
                f"uses {node}: the order is not topological (a node must come after every node made from it)"
            )
        if node == self.program.output:
            return f"{said}: the pass must start with the output's grad at 1 (the seed)"
        return f"{said} (every node that uses it had run: was {node}.grad changed elsewhere?)"

    def _why_contribution(self, edge: Edge, call: Call, received: object) -> str:
        theirs, ours = numbers_apart(received, edge.contribution)
        local = " + ".join(number(x) for x in edge.locals)
        said = (
            f"the edge {edge.node} -> {edge.operand} ({edge.op}) handed {edge.operand} {theirs}; vjpgrad's hands "
            f"{ours} = upstream {number(edge.upstream)} x local derivative {local}"
        )
        why = (
            self._never_attached(edge, call)
            or self._assigned_not_added(edge, call, received)
            or self._without_chain_rule(edge, received)
            or advice(
                f"check the local derivative of {edge.op} in your _backward",
                f"the local derivative of {edge.op} is {local} here",
            )
        )
        return f"{said}: {why}"

    def _never_attached(self, edge: Edge, call: Call) -> str | None:
        """Why, when the node's ``_backward`` handed nothing to any operand and is the function a leaf
        has (where its code can be read: through the student's process it may not): the operation's
        closure was written but never attached to ``out``."""
        if any(call.received(operand) != 0 for operand in call.before) or not self.program.leaves:
            return None
        default, own = _code_of(self.theirs[self.program.leaves[0][0]]), _code_of(self.theirs[edge.node])
        if default is not None and own is not None and own != default:  # a closure of its own, which hands 0
            return None
        return f"{edge.node}'s _backward handed nothing to any operand, and it is the _backward a leaf has" + advice(
            ": was the closure attached to the result (out._backward = _backward, before return out)?"
        )

    def _assigned_not_added(self, edge: Edge, call: Call, received: object) -> str | None:
        """Why, when the contribution is one use's share, or the operand's gradient was replaced."""
        before, after = call.before[edge.operand], call.after[edge.operand]
        if len(edge.locals) > 1 and close(received, edge.contribution / len(edge.locals), edge.scale):
            return f"{edge.operand} is used {len(edge.locals)} times in {edge.node} and only one use counted" + advice(
                ": add into .grad with +=, do not assign with ="
            )
        if before != 0 and close(after, edge.contribution / len(edge.locals), edge.scale):
            return f"{edge.operand}.grad held {number(before)} and was replaced, not added to" + advice(
                ": add into .grad with +=, do not assign with =", f" ({edge.operand}.grad is {number(after)} after it)"
            )
        return None

    def _without_chain_rule(self, edge: Edge, received: object) -> str | None:
        """Why, when the contribution is one factor of the chain rule's product without the other:
        ``out.grad`` alone, or the local derivative alone (or the operand's own number). Where the local
        derivative is 1 the product is ``out.grad``, and where ``out.grad`` is 1 the product is the local
        derivative: those cannot be told apart, and ``out.grad`` alone then reads as a local derivative
        of 1 as well, which the message says."""
        local = sum(edge.locals)
        alone = not close(local, 1.0) and close(received, edge.upstream, abs(edge.upstream))
        if alone and close(edge.upstream, 1.0):
            return "that is out.grad alone (or a local derivative of 1)" + advice(
                f": check the local derivative of {edge.op}, {number(local)} here, and multiply out.grad by it "
                "(the chain rule)",
                f"; the local derivative of {edge.op} is {number(local)} here",
            )
        if alone:
            return "that is out.grad alone" + advice(
                f": multiply it by the local derivative of {edge.op}, {number(local)} here "
                "(the chain rule: what an operand receives is out.grad x the local derivative)",
                f"; the local derivative of {edge.op} is {number(local)} here",
            )
        if close(edge.upstream, 1.0):
            return None
        upstream = number(edge.upstream)
        if close(received, local, abs(local)):
            return f"that is the local derivative alone, but {edge.node}.grad is {upstream} here" + advice(
                ": multiply by out.grad (the chain rule: what an operand receives is out.grad x the local derivative)"
            )
        data = self.ours[edge.operand].data
        if close(received, data, abs(data)):
            return f"that is {edge.operand}'s own number" + advice(
                ", but an operand receives out.grad x the local derivative: "
                f"multiply by out.grad (the chain rule; {edge.node}.grad is {upstream} here)",
                f" ({edge.node}.grad is {upstream} here)",
            )
        return None

    def _report(
        self,
        recording: Recording,
        headline: str,
        first: tuple[int, str] | None,
        times: int = 1,
        shown: Sequence[str] | None = None,
    ) -> str:
        """The message of a ``MismatchError``: the graph, vjpgrad's pass beside the student's (the first
        difference marked), and the gradients (of ``shown``, all nodes by default) after ``times`` passes."""
        rows = [("step", "node", "op", "to", "upstream", "yours", "contribution", "yours", "")]
        for edge in self.edges:
            calls = recording.of(edge.node)
            upstream = calls[0].upstream if calls else None
            received = calls[0].received(edge.operand) if calls else None
            mark = "<-- first difference" if first is not None and edge.step == first[0] else ""
            rows.append(
                (str(edge.step), edge.node, edge.op, edge.operand, number(edge.upstream), number(upstream),
                 number(edge.contribution), number(received), mark)
            )  # fmt: skip
        lines = [headline, "", self._graph(), "", "The reverse pass as vjpgrad's explain() runs it, beside yours"]
        lines.append("(upstream: the node's gradient when its _backward runs; contribution: what it adds to `to`):")
        lines += _table(rows)
        if first is not None:
            lines += ["", f"First difference, step {first[0]}: {first[1]}."]
        elif recording.instrumented:
            lines += ["", "Every edge handed what vjpgrad's does: the gradients were changed outside _backward."]
        lines += ["", "Your gradients and vjpgrad's:"]
        grads = [("node", "vjpgrad", "yours", "")]
        for name in self.program.names if shown is None else shown:
            ours, theirs = times * self.gradient(name), self.theirs[name].grad
            ok = close(theirs, ours, times * self.scale(name))
            grads.append((name, number(ours), number(theirs), "" if ok else "<-- differs"))
        lines += _table(grads)
        return "\n".join(lines)

    def _graph(self) -> str:
        return "The graph (the same in both engines):\n" + "\n".join("  " + line for line in self.program.lines())


def _ordinal(k: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
