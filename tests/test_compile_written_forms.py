"""The forms compile's code writes in place of a helper call: the same bits as the helper.

``x ** k`` with an exponent written in the code runs the branch of ``powers.power_scalar`` for
that exponent written out (``x * x`` for 2, ``x`` for 1...), and ``max`` runs Python's ``max``
where no operand is nan and its saved rule written out. Each form is checked against the helper
it replaces on the edge values (0, -0.0, inf, nan, negative bases), to the raw bits (a nan's sign
too), and through ``vjpgrad.compile`` against eager code.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import pytest
from _helpers import bits
from hypothesis import given, settings
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector
from vjpgrad.codegen.symbols import NAMESPACE, Code
from vjpgrad.compiler.write import NESTED, ZERO, Sums, _max_template, _power_template, picked_addition
from vjpgrad.core import floats, ops, powers
from vjpgrad.nn import functional as F  # noqa: N812  # PyTorch's spelling

EXPONENTS = [0.0, -0.0, 1.0, 2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.5, -1.5, 4.0, 2.5, math.inf, -math.inf, math.nan]
"""Every branch of ``powers.power_scalar`` (``floats.POWER_STEPS``) and exponents on either side of them."""

EDGES = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 1e-310, -1e-310, 1e200, -1e200]
EDGES += [math.inf, -math.inf, math.nan, -math.nan]

values = st.one_of(st.sampled_from(EDGES), st.floats(allow_nan=True, allow_infinity=True))


def raw(x: float) -> bytes:
    """A float's bits exactly, a nan's sign and payload included."""
    return struct.pack("<d", x)


def run(template: str, *operands: float) -> Any:
    """A written form evaluated on numbers, as the generated code evaluates it: in its namespace."""
    names = [f"x{k}" for k in range(len(operands))]
    text = template.format(*names)
    return eval(text, dict(NAMESPACE), dict(zip(names, operands, strict=True)))  # our own template


@pytest.mark.parametrize("k", EXPONENTS)
@given(x=values)
@settings(max_examples=60, deadline=None)
def test_a_constant_power_written_out_is_power_scalars_bits(k: float, x: float) -> None:
    assert raw(run(_power_template(k), x)) == raw(powers.power_scalar(x, k))


@pytest.mark.parametrize("k", EXPONENTS)
@given(x=values, g=values)
@settings(max_examples=40, deadline=None)
def test_a_constant_powers_derivative_written_out_is_the_rules_bits(k: float, x: float, g: float) -> None:
    # the table's saved rule and gradient, called on Code symbols with k a number, against the
    # same rule called on floats: what the reverse pass of x ** k adds
    rule, gradient = ops.POW_SCALAR.saved[0], ops.POW_SCALAR.gradients[0]
    out = powers.power_scalar(x, k)
    saved = rule(Code("{0}", atomic=True), k, Code("{1}", atomic=True))
    expected = rule(x, k, out)
    if expected is ops.MASKED:
        assert saved is ops.MASKED
        return
    code = ops.contribution(gradient, Code("{2}", atomic=True), saved)
    text = code.text if isinstance(code, Code) else repr(code)
    # nan against nan: which one a product hands on is C's choice, and no part of the contract
    assert bits(run(text, x, out, g)) == bits(ops.contribution(gradient, g, expected))


def test_the_exponents_checked_include_every_one_power_scalar_computes_by_steps() -> None:
    # the forms here and powers.py are both written from floats.POWER_STEPS: these tests check they
    # agree, and tests/test_operations.py that the steps are PyTorch's
    assert set(floats.POWER_STEPS) <= set(EXPONENTS)


@pytest.mark.parametrize("k", sorted(floats.POWER_STEPS))
def test_the_written_forms_call_no_power_helper(k: float) -> None:
    # so that the bit tests above test what runs: power_scalar's branch, not power_scalar
    assert "_pow_scalar" not in _power_template(k)
    assert "_pow(" not in _power_template(k)  # nor C's pow: the exponent's own steps
    assert "_pow_scalar" in Code("x", atomic=True).pow_scalar(Code("k", atomic=True)).text  # k unknown: the helper


@given(xs=st.lists(values, min_size=2, max_size=12))
@settings(max_examples=300, deadline=None)
def test_max_written_out_is_the_tables_max_bits(xs: list[float]) -> None:
    # Python's max where no operand is nan; the first nan where one is (the table's forward)
    assert raw(run(_max_template(len(xs)), *xs)) == raw(ops.MAX.forward(*xs))


@pytest.mark.parametrize(
    "xs",
    [
        [-0.0, 0.0],
        [0.0, -0.0],
        [1.0, math.nan, 2.0],
        [1.0, -math.nan, math.nan],
        [math.nan, 3.0],
        [math.inf, math.inf, 1.0],
        [-math.inf, -math.inf],
        [2.0, 2.0, 2.0],
    ],
)
def test_max_of_ties_zeros_and_nans_is_the_tables_max(xs: list[float]) -> None:
    assert raw(run(_max_template(len(xs)), *xs)) == raw(ops.MAX.forward(*xs))


def outcome(f: Any, xs: list[float], seed: float) -> tuple[list[Any], list[Any]]:
    """The bits of f's outputs and of its arguments' gradients after a backward seeded with ``seed``."""
    args = [Value(x) for x in xs]
    out = f(args)
    outs = list(out) if isinstance(out, (list, Vector)) else [out]
    Vector(outs).backward([seed * (1 + k) for k in range(len(outs))])
    return [bits(y.data) for y in outs], [bits(a.grad) for a in args]


def compiled_and_eager(f: Any, xs: list[float], seed: float = 1.0) -> tuple[Any, Any]:
    compiled = vjpgrad.compile(f)
    compiled([Value(x) for x in xs])  # recorded: the next call replays the written code
    return outcome(compiled, xs, seed), outcome(f, xs, seed)


@pytest.mark.parametrize("k", [2, 2.0, 1.0, 3.0, 0.5, -0.5, -1.0, -2.0, 0.0, 1.5])
@given(x=values)
@settings(max_examples=25, deadline=None)
def test_a_compiled_constant_power_is_eagers_bits(k: float, x: float) -> None:
    def power(xs: list[Value]) -> list[Value]:
        return [xs[0] ** k, (xs[0] * 1.5) ** k]  # an operand by its name, and one written into the power

    compiled, eager = compiled_and_eager(power, [x])
    assert compiled == eager


def test_the_squared_relu_of_a_gpt_is_written_as_a_product() -> None:
    def squared_relu(xs: list[Value]) -> list[Value]:
        return [x.relu() ** 2 for x in xs]

    compiled = vjpgrad.compile(squared_relu)
    compiled([Value(0.5), Value(-0.25)])
    compiled([Value(0.5), Value(-0.25)])
    assert "_pow_scalar" not in compiled.source
    assert outcome(compiled, [-0.0, 3.0], 1.0) == outcome(squared_relu, [-0.0, 3.0], 1.0)


@given(xs=st.lists(values, min_size=2, max_size=7), seed=values)
@settings(max_examples=80, deadline=None)
def test_a_compiled_max_and_softmax_are_eagers_bits(xs: list[float], seed: float) -> None:
    def shifted(xs: list[Value]) -> list[Value]:
        return [F.max(xs) * 2.0, *F.softmax(xs)]  # the max alone, and the softmax's shift by it

    compiled, eager = compiled_and_eager(shifted, xs, seed)
    assert compiled == eager


@pytest.mark.parametrize(
    "xs", [[1.0, 1.0, 0.5], [-0.0, 0.0, -1.0], [math.nan, 1.0, math.nan], [2.0, math.inf, math.inf], [3.0, -math.nan]]
)
def test_a_compiled_max_hands_tied_and_nan_operands_eagers_shares(xs: list[float]) -> None:
    # ties and nans: each operand equal to the maximum (or nan, where it is nan) takes g / count
    def largest(xs: list[Value]) -> Value:
        return F.max(xs)

    compiled = vjpgrad.compile(largest)
    compiled([Value(x) for x in xs])
    assert "_max_of" in compiled.source
    assert outcome(compiled, xs, 3.0) == outcome(largest, xs, 3.0)


# ---- take's reverse pass: one picked addition, each zero once -----------------------------------


@given(
    handed=st.lists(st.tuples(st.one_of(st.just(None), values), st.booleans(), st.booleans()), min_size=1, max_size=40),
    start=st.one_of(st.just(None), values),
)
@settings(max_examples=300, deadline=None)
def test_a_sum_written_from_what_waits_and_dropping_every_zero_after_its_first_is_the_sums_bits(
    handed: list[tuple[float | None, bool, bool]], start: Any
) -> None:
    # each contribution: a number (None stands for exactly 0.0, ZERO), whether it may wait, and
    # whether the sum is written out after it (a block's call, a pick); the sum starts at start
    # (a parameter's gradient so far) or at its first contribution, as a pass writes it
    sums = Sums()
    variables: dict[str, float] = {} if start is None else {"g": start}
    expected = start
    statements = []
    for k, (x, wait, flush) in enumerate(handed):
        code = ZERO if x is None else f"x{k}"  # a number by name: a nan's payload kept
        variables[f"x{k}"] = number = 0.0 if x is None else x
        expected = number if expected is None else expected + number
        statements += sums.add("g", start is not None or k > 0, code, wait)
        if flush:
            statements += sums.written()
    waiting, holder = sums.read("g")
    statements += waiting
    exec("\n".join(statements), {}, variables)  # our own statements: variables and numbers
    assert bits(variables[holder]) == bits(expected)  # a nan's payload is no part of the contract
    assert all(s.count(" + ") < NESTED + 1 for s in statements)  # a long sum is written in pieces


def test_a_zero_is_handed_again_to_a_sum_that_starts_anew() -> None:
    sums = Sums()
    assert sums.add("g", False, ZERO) == ["g = 0.0"]
    assert sums.add("g", True, ZERO) == []  # its sum has had 0.0
    assert sums.add("g", False, "x") == ["g = x"]  # another sum in that variable
    assert sums.add("g", True, ZERO) == ["g += 0.0"]


def test_what_waits_is_written_as_one_statement_where_the_sum_is_read() -> None:
    sums = Sums()
    assert sums.add("g_a", True, "g_y * w0", wait=True) == []
    assert sums.add("g_a", True, "g_z * w1", wait=True) == []
    assert sums.add("g_b", False, "g_y * v0", wait=True) == []
    assert sums.read("g_a") == (["g_a = g_a + (g_y * w0) + (g_z * w1)"], "g_a")
    # a contribution that reads a preparing line's variable is added at once, after what waits
    assert sums.add("g_b", True, "_s[0] * g_z") == ["g_b = g_y * v0", "g_b += _s[0] * g_z"]
    assert sums.read("g_b") == ([], "g_b")


def test_a_sum_whose_one_contribution_is_its_users_gradient_is_read_there() -> None:
    sums = Sums()
    sums.add("g_a", False, "g_y", wait=True, name=True)
    assert sums.read("g_a") == ([], "g_y")  # an addition's operand: no copy
    sums.add("g_b", False, "g_y", wait=True, name=True)
    assert sums.read("g_b", shared=False) == (["g_b = g_y"], "g_b")  # an output's own, returned
    sums.add("g_c", True, "g_y", wait=True, name=True)
    assert sums.read("g_c") == (["g_c += g_y"], "g_c")  # it had a sum before


@pytest.mark.parametrize("count", [1, 2, 3, 7, 27])
def test_the_picked_addition_adds_to_the_leaf_at_its_position_alone(count: int) -> None:
    positions = [k for k in range(1, count + 1) if k != 2]  # a gap: an element that takes no gradient
    statements = "\n".join(picked_addition("(0.0 + g)", [(k, f"v{k}") for k in positions]))
    assert statements.count("_at ==") == len(positions)
    for at in range(count + 2):
        variables = {f"v{k}": -0.0 for k in positions} | {"_at": at, "g": 1.5}
        exec(statements, {}, variables)  # our own statements
        assert [variables[f"v{k}"] for k in positions] == [1.5 if k == at else -0.0 for k in positions]


def test_a_compiled_takes_reverse_pass_adds_to_the_picked_element_alone_and_each_zero_once() -> None:
    # 27 rows of 2, as microgpt's names: eager code hands every row a contribution at every take
    # and checks the index at each; the compiled forward checks each index once, and the reverse
    # pass adds to the picked element alone, and hands each element its zero once
    weight = [[Value(0.25 * k - 3.0), Value(1.0 - 0.5 * k)] for k in range(27)]

    def loss(tokens: list[Value]) -> Value:
        rows = [F.embedding(token, weight) for token in tokens]
        return rows[0][0] * rows[1][1] - rows[2][0] * 0.5 + rows[2][1] * rows[0][1] + rows[1][0]

    compiled = vjpgrad.compile(loss)
    for ks in ([3.0, 3.0, 26.0], [0.0, 26.0, 3.0], [5.0, 5.0, 5.0]):
        results = []
        for run in (loss, compiled):
            for row in weight:
                row[0].grad = row[1].grad = -0.0
            run(list(Vector(ks, requires_grad=False))).backward()
            results.append([bits(p.grad) for row in weight for p in row])
        assert results[0] == results[1]
    forward, backward = compiled.source.split("def backward(")
    assert forward.count("= _take_position(") == 3  # one check an index, not one a column
    statements = [line for line in backward.splitlines() if not line.lstrip().startswith("#")]
    assert not any("_take_position" in line for line in statements)  # the forward checked them
    picks = [line for line in statements if "_at ==" in line]
    assert len(picks) == 6 * 27  # a take: one test an element, and one addition
    assert sum(line.lstrip().startswith("if _at == 1:") for line in picks) == 6
    zeros = [line.split()[0] for line in statements if line.endswith(("+= 0.0", "= 0.0"))]
    assert sorted(zeros) == sorted({f"g_p{k}" for k in range(54)})  # each element's zero once
