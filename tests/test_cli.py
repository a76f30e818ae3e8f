"""The command line: the documented cases, expressions, and hostile input refused in one line."""

from __future__ import annotations

import ast
import math
import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import vjpgrad
from vjpgrad import Value, Vector
from vjpgrad.cli.expr import MAX_DEPTH, ExpressionError, evaluate, parse
from vjpgrad.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def test_files_are_checked_before_any_is_written_and_written_where_their_paths_lead(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--dot`` and ``--html`` are both made and checked before either is written: a folder given
    as ``--html`` left the ``--dot`` file written, with Python's error; one file named by both is
    refused. Each is written where its path leads, as ``>`` writes (through a link, keeping the
    file's permissions), and a write that fails says which and what was written before it."""
    dot, folder = tmp_path / "g.dot", tmp_path / "pages"
    folder.mkdir()
    status, out, err = run(capsys, "x*x", "x=2", "--dot", str(dot), "--html", str(folder))
    assert (status, out) == (2, "")
    assert f"--html {folder}: is a folder" in err
    assert not dot.exists()
    status, _, err = run(capsys, "x*x", "x=2", "--dot", str(dot), "--html", str(tmp_path / "." / "g.dot"))
    assert status == 2
    assert "--dot and --html name one file" in err
    assert not dot.exists()
    real_page = tmp_path / "real.html"
    real_page.write_text("old", encoding="utf-8")
    real_page.chmod(0o600)
    link = tmp_path / "link.html"
    link.symlink_to(real_page)
    assert run(capsys, "x*x", "x=2", "--dot", str(dot), "--html", str(link))[0] == 0
    assert link.is_symlink()
    assert "<svg" in real_page.read_text(encoding="utf-8")
    assert real_page.stat().st_mode & 0o777 == 0o600
    assert dot.read_text(encoding="utf-8").startswith("digraph")
    real = Path.write_text

    def full_disk(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        if self.name.endswith(".html"):
            raise OSError(28, "No space left on device")
        return real(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_disk)
    status, out, err = run(capsys, "x*x", "x=2", "--dot", str(dot), "--html", str(tmp_path / "new.html"))
    assert (status, out) == (2, "")
    page = tmp_path / "new.html"
    assert f"--html {page}: could not write it (No space left on device); --dot {dot} was written" in err


@pytest.mark.parametrize("encoding", ["ascii", "cp1252"])
def test_an_output_that_cannot_hold_its_symbols_gets_them_escaped_not_a_traceback(encoding: str) -> None:
    """``vjpgrad > out.txt`` where the output is not UTF-8 (Windows' cp1252): the report's Σ and ∂
    raised UnicodeEncodeError with a traceback, and the expression's results were lost. Written
    with Python's escapes instead, and the status is the command's."""
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    for words in ([], ["α*α", "α=2"]):
        ran = subprocess.run(
            [sys.executable, "-m", "vjpgrad", *words], capture_output=True, text=True, env=env, encoding=encoding
        )
        assert ran.returncode == 0, ran.stderr
        assert "Traceback" not in ran.stderr
    assert "\\u03b1" in ran.stdout  # α, escaped
    assert "4" in ran.stdout


def test_an_expression_of_bytes_that_are_not_text_is_named_so(capsys: pytest.CaptureFixture[str]) -> None:
    """A byte the terminal's encoding cannot read (``$'x*\\xff'``, or a Greek name under a non-UTF-8
    locale) reaches Python as a lone surrogate: said so, where the parser's refusal read "a chain
    of operators is too long"."""
    status, out, err = run(capsys, "x*\udcff", "x=1")
    assert (status, out) == (2, "")
    assert "holds bytes that are not text" in err
    assert "chain of operators" not in err


@pytest.mark.parametrize(
    ("assignment", "named"),
    [("x\udcff=1", "an assignment"), ("x=1\udcff", "the value of 'x'"), ("x=1,\udcff2", "the value of 'x'")],
)
def test_an_assignment_of_bytes_that_are_not_text_is_named_so(
    capsys: pytest.CaptureFixture[str], assignment: str, named: str
) -> None:
    """As the expression's: a name or a value with a byte the terminal's encoding cannot read said
    only that ``'x\\udcff'`` "is not a variable name", or a number; it names the bytes."""
    status, out, err = run(capsys, "x", assignment)
    assert (status, out) == (2, "")
    assert f"{named} holds bytes that are not text in this terminal's encoding" in err
    assert "\\udcff" not in err


def test_a_name_with_a_terminals_code_is_written_escaped_in_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "x*1", "\x1b[31mx=\udcff")
    assert status == 2
    assert "\x1b" not in err
    assert "\\x1b[31mx" in err


@pytest.mark.parametrize("written", ["\u0661\u0662", "\uff11"])
def test_a_value_in_digits_other_than_ascii_is_not_a_number(capsys: pytest.CaptureFixture[str], written: str) -> None:
    """``float()`` reads Arabic-Indic and full-width digits; the expression's numbers are ASCII."""
    status, _, err = run(capsys, "2*x", f"x={written}")
    assert status == 2
    assert "is not a number" in err


def test_the_answers_example_1_with_its_derivation(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys, "3*a + 2*b*b + log(c)", "a=1,2,3", "b=3,4,5", "c=6,7,8", "--seed", "0.1,1,0.0001", "--explain"
    )
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[1] == "a.grad = tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])"
    assert lines[2] == "b.grad = tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])"
    assert lines[3] == "c.grad = tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])"
    assert "Seeds (the v of v^T J): y[0] = 0.1, y[1] = 1, y[2] = 0.0001" in out
    assert "  b[1].grad += 1 × 8 + 4 × 2 = 16" in out


def test_case_3s_summed_seed_is_a_note_on_the_output_not_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "3*a + 2*b*b + log(c)", "a=0,", "b=0,", "c=0,", "--seed", "0.1,1,0.0001")
    assert (status, err) == (0, "")  # no "<frozen runpy>:88: UserWarning" on stderr, once per place it sums
    lines = out.splitlines()
    assert lines[0] == "y = tensor([-inf])"
    assert lines[2:5] == ["a.grad = tensor([3.3003])", "b.grad = tensor([0.])", "c.grad = tensor([inf])"]
    notes = [line for line in lines if line.startswith("note: --seed")]
    assert notes == [
        "note: --seed has 3 numbers for an output of one number, so they were summed into one seed, 1.1001: this "
        'reproduces PyTorch before version 1.3 (case 3 of the Stack Overflow question "Pytorch, what are the '
        'gradient arguments"); PyTorch now refuses it (RuntimeError: Mismatch in shape). A one-number output takes '
        "one number: pass 1.1001, or no seed for 1.0"
    ]


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
    assert status == 0
    assert out.splitlines()[0] == f"y = {printed}"
    assert out.splitlines()[1].startswith(f"note: y is {printed}: ")


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


@pytest.mark.parametrize(
    ("expression", "assignments", "output"),
    [
        ("x*z + 1", ["x=2", "z=3"], "y\\ndata 7"),
        ("x*y + 1", ["x=2", "y=3,4"], "out[1]\\ndata 9"),
        ("x", ["x=3"], "x\\ndata 3"),
    ],
)
def test_dot_names_the_output_as_the_printed_lines_do(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, expression: str, assignments: list[str], output: str
) -> None:
    """The output's box is named as the printed ``y = ...`` names it (``out`` where a variable is
    ``y``), as the page and ``--explain`` name it; a variable that is the output keeps its name. It
    was a box with no name, among named leaves."""
    target = tmp_path / "g.dot"
    seed = ["--seed", "1,1"] if "," in " ".join(assignments) else []
    status, _, _ = run(capsys, expression, *assignments, *seed, "--dot", str(target))
    assert status == 0
    assert f'label="{output}' in target.read_text()


def test_an_expression_may_start_with_a_minus_sign(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "-x * 2", "x=3", "--seed=0.5")
    assert status == 0
    assert out.splitlines() == ["y = -6.0", "x.grad = -1.0"]


def test_help_shows_examples(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "--help")
    assert status == 0
    assert "examples:" in out
    assert "--explain" in out


def test_an_expression_split_by_a_shell_that_keeps_single_quotes_says_how_to_quote(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Windows' cmd.exe keeps single quotes and splits at spaces: vjpgrad '3*a + 2*b*b' reaches the
    # command as the words '3*a, +, 2*b*b'
    status, _, err = run(capsys, "'3*a", "+", "2*b*b'", "a=1", "b=2")
    assert status == 2
    assert "single quote" in err
    assert 'double quotes: vjpgrad "3*a + 2*b*b"' in err


@pytest.mark.parametrize("expression", ["'x*y'", "'sqrt(x)'", "'1/x'"])
def test_an_expression_without_spaces_kept_in_single_quotes_says_how_to_quote(
    capsys: pytest.CaptureFixture[str], expression: str
) -> None:
    # cmd.exe hands vjpgrad 'x*y' x=2 y=3 over with its quotes: a string, which said it "is not a number"
    status, _, err = run(capsys, expression, "x=2", "y=3")
    assert status == 2
    assert "single quote" in err
    assert "is not a number" not in err
    assert f'double quotes: vjpgrad "{expression[1:-1]}"' in err


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
    ("a * 2", ["a=1,2", "--seed", "1"], "--seed has length 1 but the output has length 2"),
    (
        "a * 2",
        ["a=1", "--seed", "1,2"],
        r"the output is a scalar, so --seed takes one number, got 2: their sum, 3\.0, "
        r"is what Value\.backward would take \(with a warning\)$",
    ),
    ("a * 2", ["a=1", "--seed", "one"], "--seed: 'one' is not a number"),
    ("a", ["a=1", "--frobnicate"], "unrecognized option --frobnicate"),
    ("a", ["a=1", "--seed"], "--seed needs a value"),
    ("a", ["a=1", "--seed", "1", "--seed=2"], "--seed is given twice"),
    ("a", ["a=1", "--explain=yes"], "--explain takes no value"),
    ("--seed", ["1"], "no expression given"),
    ("a", ["a=1", "--dot", "/nonexistent-dir/x/g.dot"], "--dot /nonexistent-dir/x/g.dot: could not write it"),
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


@pytest.mark.slow  # four vjpgrad processes; the quick loop keeps the whitelist's refusals in this process
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


@pytest.mark.slow  # processes, or a search of long chains: seconds
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


@pytest.mark.slow  # hypothesis over arbitrary text: seconds; the quick loop keeps the shaped inputs below
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


# ---- depth, names, big literals, options, validation before printing -----------------------


@pytest.mark.parametrize("operator", ["+", "-", "*", "/"])
def test_a_long_flat_chain_is_not_nesting(capsys: pytest.CaptureFixture[str], operator: str) -> None:
    status, out, err = run(capsys, operator.join(["x"] * 201), "x=1")
    assert (status, err) == (0, "")
    expected = {"+": (201.0, 201.0), "-": (-199.0, -199.0), "*": (1.0, 201.0), "/": (1.0, -199.0)}[operator]
    assert out.splitlines() == [f"y = {expected[0]!r}", f"x.grad = {expected[1]!r}"]


def test_the_length_limit_is_the_one_that_bites_for_a_flat_sum(capsys: pytest.CaptureFixture[str]) -> None:
    text = "+".join(["x"] * 5000)  # 9,999 characters
    status, out, err = run(capsys, text, "x=2")
    assert (status, err) == (0, "")
    assert out.splitlines() == ["y = 10000.0", "x.grad = 5000.0"]
    status, _, err = run(capsys, text + "+x", "x=2")
    assert status == 2
    assert "the limit is 10,000" in err


def test_a_long_chain_of_powers_is_flat_too(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "**".join(["x"] * 2000), "x=1")
    assert (status, err) == (0, "")
    assert out.splitlines()[0] == "y = 1.0"


@pytest.mark.parametrize(
    ("template", "levels_per_nesting"),
    [("({})", 1), ("exp({})", 1), ("-{}", 1), ("-({})", 2), ("x ** -{}", 1), ("x + sin(x * {}) - x", 1)],
)
def test_true_nesting_is_limited_at_200_levels(template: str, levels_per_nesting: int) -> None:
    def nested(times: int) -> str:
        text = "x"
        for _ in range(times):
            text = template.format(text)
        return text

    allowed = (MAX_DEPTH - 1) // levels_per_nesting  # the innermost x is level 1
    assert isinstance(evaluate(parse(nested(allowed)), {"x": Value(0.5)}), Value)
    with pytest.raises(ExpressionError, match="nested more deeply than 200 levels"):
        parse(nested(allowed + 1))


@pytest.mark.slow  # processes, or a search of long chains: seconds
@pytest.mark.parametrize(
    "expression",
    ["(" * 201 + "x" + ")" * 201, "exp(" * 201 + "x" + ")" * 201, "sin(-" * 1500 + "x" + ")" * 1500, "-(" * 900],
)
def test_deep_nesting_is_one_line_in_a_real_process(expression: str) -> None:
    result = subprocess.run([sys.executable, "-m", "vjpgrad", expression, "x=1"], capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("vjpgrad: error: it is nested more deeply than 200 levels")
    assert len(result.stderr.splitlines()) == 1


def test_names_are_nfkc_normalised_as_python_does(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "\U0001d465*2", "\U0001d465=3")  # mathematical italic x
    assert (status, err) == (0, "")
    assert out.splitlines() == ["y = 6.0", "x.grad = 2.0"]
    status, _, err = run(capsys, "x*2", "\U0001d465=3", "x=1")
    assert status == 2
    assert "x is given twice" in err
    status, _, err = run(capsys, "x", "x=1", "\U0001d425\U0001d428\U0001d420=1")  # bold "log"
    assert status == 2
    assert "'log' is a function name" in err


@pytest.mark.parametrize(
    ("literal", "printed"), [("1" + "0" * 400, "inf"), ("0x1" + "0" * 300, "inf"), ("1" + "0" * 5000, "inf")]
)
def test_a_huge_integer_literal_is_inf_like_a_float_literal(
    capsys: pytest.CaptureFixture[str], literal: str, printed: str
) -> None:
    assert float("1" + "0" * 400) == math.inf  # what Python gives 1e400 written out
    status, out, err = run(capsys, f"x * {literal}", "x=1")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert (lines[0], lines[2]) == (f"y = {printed}", f"x.grad = {printed}")
    assert lines[1].startswith("note: y is inf")


def test_an_integer_literal_converts_to_the_nearest_float(capsys: pytest.CaptureFixture[str]) -> None:
    literal = "9007199254740993"  # 2**53 + 1: the nearest float is 2**53
    status, out, _ = run(capsys, literal)
    assert (status, out) == (0, f"y = {float(2**53)!r}\n")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--x", "x=3"], ["y = 3.0", "x.grad = 1.0"]),
        (["--x*2", "x=3", "--seed", "2"], ["y = 6.0", "x.grad = 4.0"]),
        (["x=3", "--x"], None),  # 'x=3' is the expression, so --x can only be a mistyped option
        (["--seed", "2", "--x", "x=3"], ["y = 3.0", "x.grad = 2.0"]),
        (["--", "--seed", "seed=3"], ["y = 3.0", "seed.grad = 1.0"]),
        (["--", "-h", "h=3"], ["y = -3.0", "h.grad = -1.0"]),
        (["--", "--help", "help=2"], ["y = 2.0", "help.grad = 1.0"]),
    ],
)
def test_an_expression_may_look_like_an_option(
    capsys: pytest.CaptureFixture[str], arguments: list[str], expected: list[str] | None
) -> None:
    status, out, err = run(capsys, *arguments)
    if expected is None:
        assert status == 2
        assert "unrecognized option --x" in err
        return
    assert (status, err) == (0, "")
    assert out.splitlines() == expected


def test_help_says_how_options_and_expressions_are_told_apart(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "--help")
    assert "--x" in out
    assert "only --seed, --explain, --dot and --html are options" in " ".join(out.split())


def test_help_may_come_after_the_expression(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "x", "x=1", "--help")
    assert (status, err) == (0, "")
    assert "examples:" in out


def test_the_command_lines_of_the_docs_print_what_the_docs_say(capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "how-to" / "command-line.md").read_text()
    sessions = "".join(re.findall(r"```console\n(.*?)```", page, flags=re.DOTALL))
    commands = re.findall(r"^\$ vjpgrad (.*)\n((?:[^$].*\n)*)", sessions, flags=re.MULTILINE)
    assert len(commands) >= 5
    for command, shown in commands:
        status, out, err = run(capsys, *shlex.split(command))
        assert out + err == shown, command
        assert status == (2 if err else 0)


def test_a_mistyped_option_read_as_the_expression_is_pointed_out(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "--explian", "x*2", "x=1")
    assert status == 2
    assert "--explian was read as the expression" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("arguments", "hint"),
    [
        # vjpgrad.explain(y, v) is a function and explain-torch a command: a learner tries explain as one
        (["explain", "x*x", "x=2"], "(explain was read as the expression: the option is --explain; see --help)"),
        (["explain", "x=2"], "(explain was read as the expression: the option is --explain; see --help)"),
        (["help"], "(help was read as the expression: the option is --help; see --help)"),
        (
            ["grad", "x*x", "x=2"],
            "(grad was read as the expression: the expression comes first, e.g. vjpgrad 'x*x' x=2)",
        ),
    ],
)
def test_a_word_read_as_the_expression_says_so(
    capsys: pytest.CaptureFixture[str], arguments: list[str], hint: str
) -> None:
    status, _, err = run(capsys, *arguments)
    assert status == 2
    assert err.endswith(hint + "\n"), err
    assert err.count("\n") == 1


def test_a_variable_named_as_an_option_is_no_mistake(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain * 2", "explain=3")
    assert status == 0
    assert "6" in out


@pytest.mark.parametrize(
    "arguments",
    [
        ["x * 2", "x=1,2,3"],
        ["x * 2", "x=1,2,3", "--seed", "1,2"],
        ["x * 2", "x=1,2,3", "--seed", "1,1,1", "--dot", "/nonexistent-dir/x/g.dot"],
        ["x * 2", "x=1", "--explain", "--dot", "/nonexistent-dir/x/g.dot"],
    ],
)
def test_nothing_is_printed_before_an_error(capsys: pytest.CaptureFixture[str], arguments: list[str]) -> None:
    status, out, err = run(capsys, *arguments)
    assert (status, out) == (2, "")
    assert err.startswith("vjpgrad: error: ")


# ---- messages that say what to write ---------------------------------------------------------


def test_a_vector_output_without_a_seed_suggests_the_seed_option(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "x * 2", "x=1,2,3")
    assert (status, out) == (2, "")
    assert "--seed 1,1,1" in err
    assert "y.backward" not in err
    status, _, err = run(capsys, "x * y", "x=1,2", "y=5")
    assert "--seed 1,1" in err


@pytest.mark.parametrize(
    ("expression", "suggestion"),
    [("x^2", "x**2 for x^2"), ("(x + 1) ^ 3", "(x + 1) ** 3"), ("2*\u00e9^2", "\u00e9**2")],
)
def test_a_caret_is_pointed_to_the_power_operator(
    capsys: pytest.CaptureFixture[str], expression: str, suggestion: str
) -> None:
    status, _, err = run(capsys, expression, "x=2")
    assert status == 2
    assert "BitXor" not in err
    assert suggestion in err


# ---- the functions come from the operations table ------------------------------------------------


def test_every_function_of_the_table_is_accepted_and_listed(capsys: pytest.CaptureFixture[str]) -> None:
    from vjpgrad.cli import expr as _expr

    _, help_text, _ = run(capsys, "--help")
    for name in _expr.FUNCTIONS:
        assert name in help_text
        if _expr.ARITY[name] == 2:  # a function of two operands: atan2(x, w)
            status, out, err = run(capsys, f"{name}(x, w)", "x=0.5", "w=-2")
            assert (status, err) == (0, "")
            value, other = Value(0.5), Value(-2.0)
            y = getattr(value, name)(other)
            y.backward()
            assert out.splitlines() == [f"y = {y.data!r}", f"x.grad = {value.grad!r}", f"w.grad = {other.grad!r}"]
            continue
        status, out, err = run(capsys, f"{name}(x)", "x=0.5")
        assert (status, err) == (0, "")
        value = Value(0.5)
        y = abs(value) if name == "abs" else getattr(value, name)()
        y.backward()
        assert out.splitlines() == [f"y = {y.data!r}", f"x.grad = {value.grad!r}"]


def test_atan2_of_two_variables_gives_both_gradients(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "atan2(y, x)", "y=1", "x=2")
    assert (status, err) == (0, "")
    y, x = Value(1.0), Value(2.0)
    out_value = vjpgrad.atan2(y, x)
    out_value.backward()
    assert out.splitlines() == [f"out = {out_value.data!r}", f"y.grad = {y.grad!r}", f"x.grad = {x.grad!r}"]
    assert (y.grad, x.grad) == (0.4, -0.2)  # x / (x² + y²), -y / (x² + y²)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("atan2(x)", "atan2() takes exactly 2 arguments"),
        ("atan2(x, x, x)", "atan2() takes exactly 2 arguments"),
        ("log(x, x)", "log() takes exactly one argument"),
        ("(x, 2)", "a tuple is not allowed"),
    ],
)
def test_a_function_called_with_the_wrong_number_of_arguments_says_how_many(
    capsys: pytest.CaptureFixture[str], expression: str, message: str
) -> None:
    status, out, err = run(capsys, expression, "x=1")
    assert (status, out) == (2, "")
    assert message in err


def test_a_function_of_two_operands_takes_numbers_and_vectors(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "hypot(x, 3) + atan2(2, x)", "x=1,2", "--seed", "1,1")
    assert (status, err) == (0, "")
    x = vjpgrad.Vector([1.0, 2.0])
    y = vjpgrad.hypot(x, 3) + vjpgrad.atan2(2, x)
    y.backward([1.0, 1.0])
    assert f"x.grad = {x.grad!s}" in out.splitlines()


@pytest.mark.slow  # a vjpgrad process
def test_a_function_added_to_the_table_reaches_the_command_line() -> None:
    # find the table by identity wherever it lives, add a function to it, and reload the CLI
    script = """
import importlib, sys
import vjpgrad.cli.expr as expr
from vjpgrad import Value
table = expr.OPERATIONS
from vjpgrad.core.ops import Op, times
double = Op("double", 1, lambda x: 2.0 * x, (lambda x, out: 2.0,), (times,), "_double({0})", doc="2 x")
holders = [(m, k) for n, m in list(sys.modules.items()) if n.startswith("vjpgrad") and m is not expr
           for k, v in vars(m).items() if v is table]
assert holders
for module, attribute in holders:
    setattr(module, attribute, (*table, double))
Value.double = lambda self: self * 2.0
import vjpgrad.core.functions as functions  # what the generator writes for the new row
functions.double = lambda x: 2.0 * x if isinstance(x, float) else x.double()
importlib.reload(expr)
import vjpgrad.cli.main as cli
importlib.reload(cli)
cli.main(["--help"])
cli.main(["double(x) + double(3)", "x=5"])
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "double" in result.stdout.split("examples:")[1]
    assert result.stdout.splitlines()[-2:] == ["y = 16.0", "x.grad = 2.0"]


# ---- a long chain is read as Python's parser reads it ------------------------------------------------

NUMBERS = ["1", "2.5", "1e3", ".5", "5.", "0x1F", "1_000", "0", "00", "1E-2", "0o17", "0b1", "3e+2"]
NAMES = ["a", "b", "\U0001d465", "_q1", "exp_", "\u00e9"]
SPACE = st.sampled_from(["", " "])


def _join(*parts: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(*parts).map("".join)


def _language(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        _join(children, SPACE, st.sampled_from(["+", "-", "*", "/", "**"]), SPACE, children),
        _join(st.sampled_from(["-", "+"]), SPACE, children),
        _join(st.just("("), children, st.just(")")),
        _join(
            st.sampled_from(["exp", "log", "\U0001d460\U0001d456\U0001d45b", "foo"]),
            st.just("("),
            children,
            st.just(")"),
        ),
        _join(
            st.sampled_from(["atan2", "hypot", "bar"]),
            st.just("("),
            children,
            st.just(","),
            SPACE,
            children,
            st.just(")"),
        ),
    )


EXPRESSIONS = st.recursive(st.sampled_from(NUMBERS + NAMES), _language, max_leaves=25)


def _floats(tree: ast.AST) -> str:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            node.value = float(node.value)
    return ast.dump(tree)


CHAINS = st.lists(st.tuples(EXPRESSIONS, st.sampled_from(["+", "-", "*", "/", " + ", "*-"])), min_size=1, max_size=8)


@pytest.mark.slow  # processes, or a search of long chains: seconds
@given(CHAINS, EXPRESSIONS)
def test_a_chain_read_in_pieces_is_the_tree_pythons_parser_builds(chain: list[tuple[str, str]], last: str) -> None:
    from vjpgrad.cli.expr import _in_pieces

    text = "".join(part + operator for part, operator in chain) + last
    pieces = _in_pieces(text, chain=1)  # a piece at every place the text may be cut
    whole = ast.parse(text, mode="eval").body
    assert ast.dump(pieces, include_attributes=True) == ast.dump(whole, include_attributes=True)


@pytest.mark.slow  # processes, or a search of long chains: seconds
@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("**".join(["x"] * 3300), "1.0"),
        ("exp(" + "+".join(["x"] * 4900) + ") * 0", "nan"),
        ("x*" * 2000 + "-".join(["x"] * 2900), "-2898.0"),
    ],
)
def test_a_chain_too_long_for_pythons_parser_is_read_or_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], expression: str, value: str
) -> None:
    status, out, err = run(capsys, expression, "x=1")
    if status == 0:  # Python's parser reads some whole on some versions (3.10 and 3.13: the second and third)
        assert (err, out.splitlines()[0]) == ("", f"y = {value}")
    else:
        assert (status, out) == (2, "")
        assert err == "vjpgrad: error: Python's parser cannot read it: a chain of operators is too long for it\n"


def test_variables_are_listed_in_order_of_first_use() -> None:
    from vjpgrad.cli.expr import variables

    assert variables(parse("b * exp(c) + a - b / d")) == ["b", "c", "a", "d"]


@pytest.mark.parametrize(
    ("expression", "expected"), [("exp(x,)", "y = 2.718281828459045"), ("x * 2  # a comment", "y = 2.0")]
)
def test_what_python_reads_and_the_small_parser_does_not_passes_the_whitelist(
    capsys: pytest.CaptureFixture[str], expression: str, expected: str
) -> None:
    status, out, _ = run(capsys, expression, "x=1")
    assert (status, out.splitlines()[0]) == (0, expected)


@pytest.mark.parametrize(
    ("expression", "message"),
    [("+".join(["x"] * 4000) + ".y", "'.' at column 8000"), ("+".join(["x"] * 4000) + "+", "ends where an operand")],
)
def test_an_error_deep_into_a_long_flat_text_is_located(
    capsys: pytest.CaptureFixture[str], expression: str, message: str
) -> None:
    status, _, err = run(capsys, expression, "x=1")
    assert status == 2
    assert message in err
    assert err.count("\n") == 1


def test_html_writes_a_page_that_steps_through_the_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "pass.html"
    args = ["3*a + 2*b*b + log(c)", "a=1,2,3", "b=3,4,5", "c=6,7,8", "--seed", "0.1,1,0.0001", "--html", str(page)]
    assert main(args) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "c[2]" in text  # the variables' names, as explain gives them
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # self-contained: nothing fetched
    assert f"page written to {page}" in capsys.readouterr().out


@pytest.mark.slow  # a vjpgrad process
def test_html_of_a_constant_expression_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "vjpgrad", "2 * 3", "--html", str(tmp_path / "p.html")], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "no pass to step through" in result.stderr
    assert not (tmp_path / "p.html").exists()


# ---- messages a learner can act on ----------------------------------------------------------------


def test_a_number_written_against_a_name_says_to_multiply(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "2x + 1", "x=3")
    assert (status, out) == (2, "")
    assert "2x" in err
    assert "2*x" in err
    assert "invalid decimal literal" not in err


@pytest.mark.parametrize(("expression", "name"), [("e**x", "e"), ("pi * x", "pi")])
def test_constants_are_named_as_missing_with_the_way_to_write_them(
    capsys: pytest.CaptureFixture[str], expression: str, name: str
) -> None:
    status, _, err = run(capsys, expression, "x=1")
    assert status == 2
    assert f"{name} has no value" in err
    assert "no named constants" in err
    assert ("exp(x)" in err) if name == "e" else ("3.141592653589793" in err)


def test_a_vjpgrad_error_shows_its_words_without_the_class_name(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "a + b", "a=1,2", "b=1,2,3")
    assert status == 2
    assert err == (
        "vjpgrad: error: Vector lengths 2 and 3 do not match "
        "(only equal lengths, or a length-1 Vector, can be combined elementwise)\n"
    )


@pytest.mark.parametrize(("expression", "value", "word"), [("log(-x)", "x=1", "nan"), ("1/x", "x=0", "inf")])
def test_a_result_outside_the_domain_gets_a_remark(
    capsys: pytest.CaptureFixture[str], expression: str, value: str, word: str
) -> None:
    status, out, _ = run(capsys, expression, value)
    assert status == 0
    assert out.splitlines()[0] == f"y = {word}"
    assert f"note: y is {word}" in out
    assert "--explain" in out


# ---- vjpgrad cache ---------------------------------------------------------------------------------


def test_cache_says_where_compiled_code_is_kept_and_clear_empties_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vjpgrad

    monkeypatch.setenv("VJPGRAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VJPGRAD_CACHE", raising=False)
    square = vjpgrad.compile(lambda x: x * x + 1.0)
    for _ in range(2):  # recorded, then written and stored
        square(Value(3.0)).backward()
    status, out, _ = run(capsys, "cache")
    assert status == 0
    assert f"directory: {tmp_path / 'cache'}" in out
    assert "entries: 1 " in out
    status, out, _ = run(capsys, "cache", "--clear")
    assert status == 0
    assert out.splitlines()[0] == "removed 1 cache files"
    assert "entries: 0 " in out


def test_cache_off_says_so(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VJPGRAD_CACHE", "0")
    assert run(capsys, "cache") == (0, "the compiled-code cache is off (VJPGRAD_CACHE)\n", "")


def test_cache_with_another_word_is_an_error_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "cache", "--purge")
    assert (status, out) == (2, "")
    assert "--purge" in err


# ---- a learner's trial on Python 3.12: names that clash, and notes that say more -------------------


def test_a_variable_named_y_does_not_share_the_outputs_name(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "x*y", "x=2", "y=3")
    assert (status, err) == (0, "")
    assert out.splitlines() == ["out = 6.0", "x.grad = 3.0", "y.grad = 2.0"]


def test_explain_names_the_output_apart_from_a_variable_named_y(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "y*y", "y=3", "--explain")
    assert status == 0
    assert out.splitlines()[:2] == ["out = 9.0", "y.grad = 6.0"]
    assert "Seeds (the v of v^T J): out = 1" in out
    assert "  out = y * y" in out
    assert "y = y * y" not in out.replace("out = y * y", "")


def test_a_vector_output_and_its_note_take_the_same_name(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "log(x - y)", "x=2,5", "y=3", "--seed", "1,1", "--explain")
    assert status == 0
    assert out.splitlines()[0].startswith("out = tensor([")
    assert out.splitlines()[1].startswith("note: out[0] is nan: ")
    assert "Seeds (the v of v^T J): out[0] = 1, out[1] = 1" in out


def test_the_output_takes_a_name_that_no_variable_has(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "y * out", "y=2", "out=3")
    assert status == 0
    assert out.splitlines() == ["out2 = 6.0", "y.grad = 3.0", "out.grad = 2.0"]


@pytest.mark.parametrize(
    ("expression", "written", "instead"),
    [
        ("2(x+1)", "2(x+1) is a number followed by a parenthesis", "write 2*(x+1) for the product"),
        ("2 (x + 1) - x", "2 (x + 1) is a number followed by a parenthesis", "write 2*(x + 1) for the product"),
        ("-3.5(x)", "3.5(x) is a number followed by a parenthesis", "write 3.5*(x) for the product"),
        ("(x+1)(x-1)", "(x+1)(x-1) is an expression followed by a parenthesis", "write (x+1)*(x-1) for the product"),
        ("exp(x)(x+1)", "exp(x)(x+1) is an expression followed by a parenthesis", "write exp(x)*(x+1)"),
        ("(x)(x)", "(x)(x) is an expression followed by a parenthesis", "write (x)*(x) for the product"),
        ("2(x)(x)", "2(x) is a number followed by a parenthesis", "write 2*(x) for the product"),
    ],
)
def test_a_parenthesis_after_a_number_or_an_expression_says_to_multiply(
    capsys: pytest.CaptureFixture[str], expression: str, written: str, instead: str
) -> None:
    status, out, err = run(capsys, expression, "x=1")
    assert (status, out) == (2, "")
    assert written in err
    assert instead in err
    assert "Constant" not in err
    assert "cannot be called" not in err


@pytest.mark.parametrize(
    ("expression", "said"),
    [("'a'(x)", "a string cannot be called"), ("2(x, x)", "the number 2 cannot be called"), ("x(x)", "x is not a")],
)
def test_what_cannot_be_called_is_named_in_words(
    capsys: pytest.CaptureFixture[str], expression: str, said: str
) -> None:
    status, _, err = run(capsys, expression, "x=1")
    assert status == 2
    assert said in err
    assert "Constant" not in err


@pytest.mark.parametrize(("name", "number"), [("pi", "3.141592653589793"), ("e", "2.718281828459045"), ("PI", "3.14")])
def test_a_named_constant_as_a_value_gets_the_constants_advice(
    capsys: pytest.CaptureFixture[str], name: str, number: str
) -> None:
    status, _, err = run(capsys, "sin(x)", f"x={name}")
    assert status == 2
    assert f"x: {name!r} is not a number" in err
    assert "there are no named constants" in err
    assert f"write {number}" in err
    assert f"for {name})" in err


@pytest.mark.parametrize(
    ("expression", "advice"),
    [
        ("ln(x)", "log is the natural logarithm: write log(x)"),
        ("Exp(x)", "names are case-sensitive: write exp(x)"),
        ("SQRT(x)", "names are case-sensitive: write sqrt(x)"),
        ("log10(x)", "write log(x) / log(10)"),
    ],
)
def test_a_function_from_elsewhere_is_pointed_to_vjpgrads(
    capsys: pytest.CaptureFixture[str], expression: str, advice: str
) -> None:
    status, _, err = run(capsys, expression, "x=2")
    assert status == 2
    assert "is not a known function" in err
    assert advice in err


def test_a_variable_given_in_another_case_is_named_in_the_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "x*x", "X=2")
    assert (status, out) == (2, "")
    assert "x has no value" in err
    assert "X=2 gives X, which the expression does not use: names are case-sensitive" in err


def test_an_unused_variable_in_another_case_gets_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "x*x", "x=2", "X=3")
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "y = 4.0",
        "x.grad = 4.0",
        "X.grad = 0.0",
        "note: the expression does not use X (it uses x): names are case-sensitive",
    ]


@pytest.mark.parametrize(
    ("arguments", "gradient", "note"),
    [
        (["sqrt(x)", "x=0"], "x.grad = inf", "note: x.grad is inf: "),
        (["0 * sqrt(x)", "x=0"], "x.grad = nan", "note: x.grad is nan: "),
        (
            ["sqrt(v) + w", "v=0,1", "w=1", "--seed", "1,1"],
            "v.grad = tensor([   inf, 0.5000])",
            "note: v.grad[0] is inf: ",
        ),
    ],
)
def test_a_gradient_that_is_not_finite_gets_a_note(
    capsys: pytest.CaptureFixture[str], arguments: list[str], gradient: str, note: str
) -> None:
    status, out, err = run(capsys, *arguments)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert not lines[1].startswith("note:")  # the output is finite: no note under it
    assert gradient in lines
    (remark,) = [line for line in lines if line.startswith("note:")]
    assert remark.startswith(note)
    assert remark.endswith("--explain shows each step")


def test_finite_gradients_get_no_note(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "sqrt(x)", "x=4")
    assert "note:" not in out


def test_a_refused_html_page_writes_no_dot_file_either(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    dot, page = tmp_path / "g.dot", tmp_path / "p.html"
    status, out, err = run(capsys, "2*3", "--dot", str(dot), "--html", str(page))
    assert (status, out) == (2, "")
    assert "--html needs an output that depends on a variable" in err
    assert not dot.exists()
    assert not page.exists()


# ---- vjpgrad cache and a directory whose name is not UTF-8 ------------------------------------------


@pytest.mark.slow  # a vjpgrad process
def test_vjpgrad_cache_prints_a_directory_whose_name_is_not_utf8(tmp_path: Path) -> None:
    """The cache takes ``VJPGRAD_CACHE_DIR`` as bytes (surrogate-escaped) and works there, but the
    ``vjpgrad cache`` command prints the path as text: under ``PYTHONIOENCODING=utf-8`` (CI, many
    terminals) it dies with UnicodeEncodeError ('surrogates not allowed') and a traceback."""
    if os.name != "posix" or sys.platform == "darwin":
        pytest.skip("a file name of arbitrary bytes is POSIX (not macOS)")
    folder = os.fsencode(tmp_path) + b"/cache\xff"
    environment = {k: v for k, v in os.environ.items() if k != "VJPGRAD_CACHE"}
    env_bytes = {os.fsencode(k): os.fsencode(v) for k, v in environment.items()}
    env_bytes[b"VJPGRAD_CACHE_DIR"] = folder
    env_bytes[b"PYTHONIOENCODING"] = b"utf-8"
    run = subprocess.run([sys.executable, "-m", "vjpgrad", "cache"], env=env_bytes, capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    assert b"directory:" in run.stdout


# ---- a learner's slips: help where they ask for it, and the command they meant -------------------


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_cache_help_says_what_it_shows_and_clear(capsys: pytest.CaptureFixture[str], flag: str) -> None:
    status, out, err = run(capsys, "cache", flag)
    assert (status, err) == (0, "")
    assert out.startswith("usage: vjpgrad cache [--clear]")
    assert "--clear" in out.splitlines()[-1]


@pytest.mark.parametrize(
    ("typed", "meant"), [("explan-torch", "explain-torch"), ("explain_torch", "explain-torch"), ("cahce", "cache")]
)
def test_a_mistyped_command_is_named_with_the_one_meant(
    capsys: pytest.CaptureFixture[str], typed: str, meant: str
) -> None:
    status, out, err = run(capsys, typed, "script.py")
    assert (status, out) == (2, "")
    assert f"did you mean 'vjpgrad {meant}'?" in err


def test_an_expression_near_a_commands_name_still_runs(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "cach*2", "cach=3")  # a variable may be named like a command
    assert status == 0
    assert out.splitlines() == ["y = 6.0", "cach.grad = 2.0"]


def test_an_error_in_an_expression_near_a_commands_name_names_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "cach", "cach=[1,x]")  # cach is a variable here: its value is what is wrong
    assert status == 2
    assert "did you mean" not in err


@pytest.mark.parametrize(
    ("written", "advice"), [("a=[1,2,3]", "write a=1,2,3"), ("a=[1, 2]", "write a=1,2"), ("a=[1]", "write a=1,")]
)
def test_a_list_written_with_brackets_is_told_how_to_write_it(
    capsys: pytest.CaptureFixture[str], written: str, advice: str
) -> None:
    status, _, err = run(capsys, "3*a", written)
    assert status == 2
    assert f"{advice} (the numbers" in err


@pytest.mark.parametrize("written", ["a=(2*3)", "a=[x]"])
def test_brackets_around_what_is_not_numbers_get_no_list_advice(
    capsys: pytest.CaptureFixture[str], written: str
) -> None:
    status, _, err = run(capsys, "3*a", written)
    assert status == 2
    assert "is a list in brackets" not in err


def test_a_summed_seed_with_dot_is_one_note_and_no_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # to_dot reads the seed again: what the note said is not said twice, nor raised under -W error
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["3*a", "a=0,", "--seed", "0.1,1,0.0001", "--dot", str(tmp_path / "g.dot")]) == 0
    out = capsys.readouterr().out
    assert out.count("note: ") == 1
    assert (tmp_path / "g.dot").is_file()


@pytest.mark.parametrize(
    ("arguments", "note"),
    [
        (
            ["a*1", "a=1,inf,nan,2", "--seed", "1,1,1,1"],
            "note: y[2] is nan: an operation left its domain (log or sqrt of a negative number, 0/0, inf - inf...); "
            "y[1] is inf: a division by zero, log(0) or an overflow; --explain shows each step",
        ),
        (
            ["log(a)", "a=0,0,-1,1,0", "--seed", "1,1,1,1,1"],
            "note: y[2] is nan: an operation left its domain (log or sqrt of a negative number, 0/0, inf - inf...); "
            "y[0], y[1] and y[4] are -inf: a division by zero, log(0) or an overflow; --explain shows each step",
        ),
        (
            ["sqrt(v) + 0 * sqrt(w)", "v=0,1", "w=0", "--seed", "1,1"],
            "note: w.grad is nan: an infinite local derivative met a zero (inf x 0), or an operation left its domain; "
            "v.grad[0] is inf: a local derivative is infinite there (sqrt or log at 0, 1/x at 0...), or a product "
            "overflowed; --explain shows each step",
        ),
    ],
)
def test_a_note_names_each_kind_of_number_where_it_is(
    capsys: pytest.CaptureFixture[str], arguments: list[str], note: str
) -> None:
    status, out, err = run(capsys, *arguments)
    assert (status, err) == (0, "")
    assert note in out.splitlines()


def test_a_notes_elements_come_in_their_order_whatever_their_sign(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "1 / a", "a=-0.0,0,2", "--seed", "1,1,1")
    assert status == 0
    assert "note: y[0] and y[1] are inf or -inf: " in out  # y[0] is -inf, y[1] inf: listed as they come


@pytest.mark.parametrize(
    ("written", "number"),
    [("0x10", 16.0), ("-0b11", -3.0), ("0o17", 15.0), ("1_000", 1000.0), ("0x" + "f" * 300, math.inf)],
)
def test_a_value_takes_the_integers_the_expression_takes(
    capsys: pytest.CaptureFixture[str], written: str, number: float
) -> None:
    """``x*0x10`` reads ``0x10`` as Python does; ``x=0x10`` said it "is not a number". A value now
    takes what a literal of the expression takes, an integer too large for a float being inf."""
    status, out, _ = run(capsys, "x*0x10", f"x={written}")
    assert status == 0
    assert f"x.grad = {16.0!r}" in out
    assert f"y = {number * 16.0!r}" in out
    status, out, _ = run(capsys, "x*2", f"x={written},0x2", "--seed", "1,1")
    assert status == 0
    assert "x.grad = tensor([2., 2.])" in out
    assert out.splitlines()[0].endswith("4.])")


@pytest.mark.parametrize("written", ["-0x0", "-0b0", "- 0o0"])
def test_a_negative_integer_zero_is_negative_zero_as_in_the_expression(
    capsys: pytest.CaptureFixture[str], written: str
) -> None:
    """``1/-0x0`` is ``-inf``: the minus applies to the float ``0.0``. ``x=-0x0`` read the integer
    ``-0``, which is ``0``, and gave ``inf``."""
    status, out, _ = run(capsys, "1/x", f"x={written}")
    assert status == (2 if " " in written else 0)
    if status == 0:
        assert out.splitlines()[0] == "y = -inf"


@pytest.mark.parametrize("written", ["0x", "0x1g", "0b2", "1__0", "0x1.8", "0x\u0661\u0662", "0b\uff11"])
def test_a_value_that_python_would_not_read_as_an_integer_is_still_not_a_number(
    capsys: pytest.CaptureFixture[str], written: str
) -> None:
    status, _, err = run(capsys, "2*x", f"x={written}")
    assert status == 2
    assert f"x: {written!r} is not a number" in err


def test_hex_in_brackets_gets_the_list_advice(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "2*x", "x=[0x10,0x20]", "--seed", "1,1")
    assert status == 2
    assert "is a list in brackets: write x=0x10,0x20" in err


@pytest.mark.parametrize("written", ["1\u00a0", "1,\u20092"])
def test_a_value_beside_a_unicode_space_is_read_as_float_reads_it(
    capsys: pytest.CaptureFixture[str], written: str
) -> None:
    # float() takes any space around a number; the ASCII check is of the number itself
    status, _, _ = run(capsys, "2*x", f"x={written}", *(["--seed", "1,1"] if "," in written else []))
    assert status == 0
