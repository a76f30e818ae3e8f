"""The command line: the documented cases, expressions, and hostile input refused in one line."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vjpgrad import Value, Vector
from vjpgrad.__main__ import main
from vjpgrad._expr import MAX_DEPTH, ExpressionError, evaluate, parse


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_the_seed_example_1_with_its_derivation(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys, "3*a + 2*b*b + log(c)", "a=1,2,3", "b=3,4,5", "c=6,7,8", "--seed", "0.1,1,0.0001", "--explain"
    )
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[1] == "a.grad = tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])"
    assert lines[2] == "b.grad = tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])"
    assert lines[3] == "c.grad = tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])"
    assert "Seeds (the v of v^T J): y[0] = 0.1, y[1] = 1, y[2] = 0.0001" in out
    assert "  b[1].grad += 1 x 8 + 4 x 2 = 16" in out


def test_scalars_print_repr_exact_floats(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "3*a + 2*b*b + log(c)", "a=0.1", "b=1", "c=0.1")
    assert status == 0
    y = (3 * 0.1 + 2 * 1.0 * 1.0) + math.log(0.1)  # the same float operations, in the same order
    assert out.splitlines() == [f"y = {y!r}", "a.grad = 3.0", "b.grad = 4.0", "c.grad = 10.0"]


def test_a_scalar_seed_scales_the_gradients(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "x * x", "x=3", "--seed", "0.5")
    assert status == 0
    assert out.splitlines()[1] == "x.grad = 3.0"


def test_an_expression_of_constants_has_no_gradients(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "2 ** 10 - exp(0)")
    assert (status, out) == (0, "y = 1023.0\n")


@pytest.mark.parametrize(
    ("expression", "printed"), [("1/0", "inf"), ("0/0", "nan"), ("10.0**400", "inf"), ("log(0)", "-inf")]
)
def test_constants_follow_ieee_754_too(capsys: pytest.CaptureFixture[str], expression: str, printed: str) -> None:
    status, out, _ = run(capsys, expression)
    assert (status, out) == (0, f"y = {printed}\n")


def test_a_variable_the_expression_does_not_use_gets_zero(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "x * 2", "x=1", "unused=5")
    assert status == 0
    assert out.splitlines()[1:] == ["x.grad = 2.0", "unused.grad = 0.0"]


def test_dot_writes_the_graph(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "g.dot"
    status, out, _ = run(capsys, "sigmoid(w*x + b)", "w=0.5", "x=2", "b=-1", "--dot", str(target))
    assert status == 0
    text = target.read_text()
    assert text.startswith("digraph vjpgrad {")
    assert '"sigmoid"' in text
    assert "seed 1" not in text
    assert f"graph written to {target}" in out


def test_an_expression_may_start_with_a_minus_sign(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "-x * 2", "x=3", "--seed=0.5")
    assert status == 0
    assert out.splitlines() == ["y = -6.0", "x.grad = -1.0"]


def test_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "--help")
    assert status == 0
    assert "examples:" in out
    assert "--explain" in out


HOSTILE = [
    ("__import__('os').system('echo pwned')", [], "an attribute cannot be called"),
    ("__import__('os')", [], "__import__ is not a known function"),
    ("a.__class__", ["a=1"], "an attribute is not allowed"),
    ("a[0]", ["a=1,2"], "a subscript is not allowed"),
    ("(lambda: 1)()", [], "a lambda cannot be called"),
    ("lambda: 1", [], "a lambda is not allowed"),
    ("[x for x in a]", ["a=1,2"], "a comprehension is not allowed"),
    ("import os", [], "does not parse"),
    ("foo(a)", ["a=1"], "foo is not a known function"),
    ("log(a, a)", ["a=1"], r"log\(\) takes exactly one argument"),
    ("log()", [], r"log\(\) takes exactly one argument"),
    ("log(x=a)", ["a=1"], r"log\(\) takes exactly one argument"),
    ("log(*a)", ["a=1,2"], r"log\(\) takes exactly one argument"),
    ("b + 1", ["a=1"], "b has no value"),
    ("'a' * 3", [], "'a' is not a number"),
    ("True + a", ["a=1"], "True is not a number"),
    ("1j * a", ["a=1"], "1j is not a number"),
    ("a if a else a", ["a=1"], "an if expression is not allowed"),
    ("a < 2", ["a=1"], "a comparison is not allowed"),
    ("a and a", ["a=1"], "and/or is not allowed"),
    ("(x := 2)", [], "an assignment is not allowed"),
    ("f'{a}'", ["a=1"], "a string is not allowed"),
    ("a, a", ["a=1"], "a tuple is not allowed"),
    ("a @ a", ["a=1"], "the operator MatMult is not allowed"),
    ("a // 2", ["a=1"], "the operator FloorDiv is not allowed"),
    ("a % 2", ["a=1"], "the operator Mod is not allowed"),
    ("~a", ["a=1"], "the operator Invert is not allowed"),
    ("not a", ["a=1"], "the operator Not is not allowed"),
    ("exp", [], "exp is a function: call it"),
    ("exp + 1", [], "exp is a function: call it"),
    ("(" * 300 + "a" + ")" * 300, ["a=1"], "nested more deeply than 200 levels|too many nested parentheses"),
    ("-" * 5000 + "a", ["a=1"], "nested more deeply than 200 levels"),
    ("a+" * 5001 + "a", ["a=1"], "the limit is 10,000"),
    ("", [], "the expression is empty"),
    ("a\x00", ["a=1"], "NUL"),
    ("a * b", ["a=1,2", "b=1,2,3"], "Vector lengths 2 and 3 do not match"),
    ("a", ["a=1,x,3"], "a: 'x' is not a number"),
    ("a", ["a="], "a: '' is not a number"),
    ("a", ["a"], "'a' is not an assignment"),
    ("a", ["a=1", "a=2"], "a is given twice"),
    ("a", ["log=1"], "'log' is a function name"),
    ("a", ["1a=1"], "'1a' is not a variable name"),
    ("a", ["for=1"], "'for' is not a variable name"),
    ("a * 2", ["a=1,2"], "grad can be implicitly created only for scalar outputs"),
    ("a * 2", ["a=1,2", "--seed", "1"], "gradients has length 1 but the output has length 2"),
    ("a * 2", ["a=1", "--seed", "1,2"], "the output is a scalar, so --seed takes one number"),
    ("a * 2", ["a=1", "--seed", "one"], "--seed: 'one' is not a number"),
    ("a", ["a=1", "--frobnicate"], "unrecognized option --frobnicate"),
    ("a", ["a=1", "--seed"], "--seed needs a value"),
    ("a", ["a=1", "--seed", "1", "--seed=2"], "--seed is given twice"),
    ("a", ["a=1", "--explain=yes"], "--explain takes no value"),
    ("--seed", ["1"], "no expression given"),
    ("a", ["a=1", "--dot", "/nonexistent-dir/x/g.dot"], "FileNotFoundError"),
]


@pytest.mark.parametrize(("expression", "rest", "message"), HOSTILE, ids=[h[0][:40] for h in HOSTILE])
def test_hostile_input_is_one_line_on_stderr_and_exit_2(
    capsys: pytest.CaptureFixture[str], expression: str, rest: list[str], message: str
) -> None:
    status, _, err = run(capsys, expression, *rest)
    assert status == 2
    assert err.endswith("\n")
    assert err.count("\n") == 1, err
    assert err.startswith("vjpgrad: error: ")
    assert re.search(message, err), err


def test_nothing_in_the_text_is_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    attacks = [
        f"__import__('os').system('touch {marker}')",
        f"open('{marker}', 'w')",
        f"exec(\"open('{marker}', 'w')\")",
        f"[open('{marker}', 'w') for _ in (1,)]",
    ]
    for attack in attacks:
        result = subprocess.run([sys.executable, "-m", "vjpgrad", attack], capture_output=True, text=True)
        assert result.returncode == 2
        assert "Traceback" not in result.stderr
        assert len(result.stderr.splitlines()) == 1
    assert not marker.exists()


def test_the_console_entry_reports_in_one_line_without_a_traceback() -> None:
    result = subprocess.run([sys.executable, "-m", "vjpgrad", "a.b"], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (2, "")
    assert (
        result.stderr
        == "vjpgrad: error: an attribute is not allowed: only numbers, names, + - * / **, and function calls\n"
    )


# ---- fuzzing the parser ------------------------------------------------------------------------

TOKENS = "a b 1 2.5 1e308 + - * / ** ( ) , . [ ] : = lambda for in if else 's' __import__ exp log foo @ % ~ not { } j"
TOKENS_LIST = [*TOKENS.split(), " "]
ENV = {"a": Value(0.7), "b": Vector([1.0, -2.0])}


def check_parser(text: str) -> None:
    try:
        tree = parse(text)
    except ExpressionError:
        return
    try:
        result = evaluate(tree, ENV)
    except ExpressionError:
        return
    except ValueError as error:  # an elementwise length mismatch is the only other refusal
        message = str(error)
    else:
        assert isinstance(result, (Value, Vector, float))
        return
    assert "do not match" in message


@given(st.text(max_size=60))
def test_random_text_gives_a_result_or_the_parsers_own_error(text: str) -> None:
    check_parser(text)


@given(st.lists(st.sampled_from(TOKENS_LIST), max_size=25).map("".join))
def test_random_python_like_source_gives_a_result_or_the_parsers_own_error(text: str) -> None:
    check_parser(text)


@given(st.integers(1, 400))
def test_depth_is_limited_exactly(depth: int) -> None:
    text = "-" * (depth - 1) + "a"
    if depth <= MAX_DEPTH:
        assert evaluate(parse(text), ENV).data == (-1) ** (depth - 1) * 0.7
    else:
        with pytest.raises(ExpressionError, match="nested more deeply"):
            parse(text)
