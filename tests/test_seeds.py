"""The seed of a reverse pass, the gradient vector ``v`` of a vector-Jacobian product: one set of
rules, read the same way and refused with the same words by every entry point (``backward``,
``gradients``, ``vjp``, ``explain``, ``to_dot``, ``vjpgrad.testing`` and the command line); and the
four cases of the Stack Overflow answer to "Pytorch, what are the gradient arguments"
(https://stackoverflow.com/questions/43451125), reproduced exactly: as numbers, as the example
scripts' printed output and as the ``python -m vjpgrad`` report.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _helpers import answer_expression, four_outputs, message, numpy

import vjpgrad
from vjpgrad import SummedSeedWarning, Value, Vector, explain, gradients, log
from vjpgrad.cli.main import main
from vjpgrad.testing import assert_grad_close

# ---- the four cases of the Stack Overflow answer -------------------------------------------------


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SUMMED = "numbers for an output of one number, so they were summed into one seed"
"""What the warning says when a longer seed is summed into a one-number output (case 3)."""


def summed() -> pytest.WarningsRecorder:
    """Where a test sums a longer seed into a one-number output on purpose: the warning is asserted."""
    return pytest.warns(UserWarning, match=SUMMED)


def test_example_1_vector_seed() -> None:
    a, b, c = Vector([1.0, 2.0, 3.0]), Vector([3.0, 4.0, 5.0]), Vector([6.0, 7.0, 8.0])
    y = 3 * a + 2 * b * b + log(c)
    y.backward([0.1, 1.0, 0.0001], retain_graph=True)
    assert a.grad.data == pytest.approx([0.3, 3.0, 0.0003], rel=1e-15)
    assert b.grad.data == pytest.approx([1.2, 16.0, 0.002], rel=1e-15)  # v * 4b
    assert c.grad.data == pytest.approx([0.1 / 6, 1 / 7, 0.0001 / 8], rel=1e-15)  # v / c


def test_example_2_scalars_without_a_seed() -> None:
    a, b, c = Value(0.1), Value(1.0), Value(0.1)
    y = 3 * a + 2 * b * b + log(c)
    y.backward()
    assert (a.grad, b.grad, c.grad) == (3.0, 4.0, 10.0)


def test_example_3_empty_inputs_and_a_summed_seed() -> None:
    a, b, c = Vector.empty(1), Vector.empty(1), Vector.empty(1)
    y = 3 * a + 2 * b * b + log(c)
    assert y.data == [-math.inf]
    with summed():
        y.backward([0.1, 1.0, 0.0001])
    assert a.grad.data == [3 * (0.1 + 1.0 + 0.0001)]
    assert str(a.grad) == "tensor([3.3003])"
    assert b.grad.data == [0.0]
    assert c.grad.data == [math.inf]


def test_example_4_two_passes_accumulate() -> None:
    a, b, c = Value(1.0), Value(1.0), Value(1.0)
    y = 3 * a + 2 * b * b + log(c)
    y.backward(retain_graph=True)
    y.backward()
    assert (a.grad, b.grad, c.grad) == (6.0, 8.0, 2.0)


@pytest.mark.slow  # each example script in a process
@pytest.mark.parametrize(
    ("script", "printed"),
    [
        (
            "example_1.py",
            [
                "tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])",
                "tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])",
                "tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])",
            ],
        ),
        ("example_2.py", ["tensor(3.)", "tensor(4.)", "tensor(10.)"]),
        ("example_3.py", ["tensor([3.3003])", "tensor([0.])", "tensor([inf])"]),
        ("example_4.py", ["tensor(6.)", "tensor(8.)", "tensor(2.)"]),
    ],
)
def test_each_example_script_prints_the_documented_output(script: str, printed: list[str]) -> None:
    result = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == printed
    assert result.stderr == ""  # case 3 sums its seed on purpose: the script says so, not a warning


def test_the_command_reports_all_four_cases_agree(capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # case 3's summed seed is the report's subject, not a warning
        assert main([]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.count(" ok") == 12
    assert "DIFFERS" not in out
    assert "all four cases agree with the answer." in out
    assert "tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])   tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])" in out


def test_the_command_speaks_of_cases_and_the_answer_as_the_readme_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("Case ")] == [
        "Case 1",
        "Case 2",
        "Case 3",
        "Case 4",
    ]
    assert "the gradients the answer shows beside the ones vjpgrad computes" in out
    assert "https://stackoverflow.com/questions/43451125" in out
    assert out.count("the answer   ") == 4  # the column of the answer's gradients, in each case
    assert out.splitlines()[-1] == "all four cases agree with the answer."
    for word in ("Example", "documented", "seed question"):
        assert word not in out


def test_no_source_or_example_calls_the_question_the_seed_question() -> None:
    # to a learner, a seed is the gradient vector v (test_pages.py checks the pages and the notebooks)
    sources = [*(EXAMPLES.parent / "src").rglob("*.py"), *EXAMPLES.rglob("*.py")]
    assert len(sources) > 20
    assert [p.name for p in sources if "seed question" in " ".join(p.read_text(encoding="utf-8").split()).lower()] == []


def test_the_command_fails_when_a_case_differs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vjpgrad.cli import cases as _cases

    wrong = _cases.Case("a wrong case", "y.backward()", {"a.grad": "tensor(7.)"}, _cases.example_2)
    monkeypatch.setattr(_cases, "CASES", (*_cases.CASES, wrong))
    assert main([]) == 1
    assert "DIFFERS" in capsys.readouterr().out


CASE_INPUTS = [  # the answer's a, b, c (and v) in each case, as Vectors
    {"a": [1.0, 2.0, 3.0], "b": [3.0, 4.0, 5.0], "c": [6.0, 7.0, 8.0], "v": [0.1, 1.0, 0.0001]},
    {"a": [0.1], "b": [1.0], "c": [0.1]},
    {"a": [0.0], "b": [0.0], "c": [0.0]},
    {"a": [1.0], "b": [1.0], "c": [1.0]},
]


@pytest.mark.parametrize("k", range(4), ids=["case1", "case2", "case3", "case4"])
def test_each_cases_rule_gives_its_gradients_and_its_why_is_printed(k: int) -> None:
    from vjpgrad.cli import cases as _cases

    case = _cases.CASES[k]
    computed = case.compute()
    assert set(case.rules) == set(case.documented)
    for name, rule in case.rules.items():
        # the rule as the command prints it ("v × 4b"), read as arithmetic on the case's inputs
        expression = re.sub(r"(\d)([a-z])", r"\1 * \2", rule.replace("×", "*"))
        inputs = {key: Vector(values) for key, values in CASE_INPUTS[k].items()}
        result = eval(expression, {"__builtins__": {}}, inputs)  # our own rule text, not user input
        values = result.tolist() if isinstance(result, Vector) else [float(result)] * len(CASE_INPUTS[k]["a"])
        shown = [float(x) for x in _cases._NUMBER.findall(computed[name])]
        assert shown == pytest.approx(values, rel=1e-4), (name, rule)
    report, _ = _cases.report()
    assert f"\n  {case.why}\n" in report
    for name, rule in case.rules.items():
        assert f"    {name} = {rule}   " in report


@pytest.mark.slow  # a vjpgrad process
def test_python_dash_m_vjpgrad_exits_0() -> None:
    result = subprocess.run([sys.executable, "-m", "vjpgrad"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "all four cases agree" in result.stdout


def test_the_report_states_the_general_rule_once_before_the_cases() -> None:
    from vjpgrad.cli import cases as _cases

    report, _ = _cases.report()
    assert report.count("x.grad = Σᵢ v[i] · ∂y[i]/∂x") == 1
    assert report.index("Σᵢ v[i]") < report.index("Case 1:")


def test_the_report_says_what_current_pytorch_does_with_case_3_and_why() -> None:
    from vjpgrad.cli import cases as _cases

    report, _ = _cases.report()
    case_3 = report[report.index("Case 3:") : report.index("Case 4:")]
    assert "current PyTorch (1.3 and later) refuses this call: RuntimeError: Mismatch in shape" in case_3
    assert "the answer ran on a PyTorch before 1.3, which summed it" in case_3
    assert "2017" not in case_3  # the answer's torch.tensor(0.1) is a 0-d tensor: PyTorch 0.4 (2018) or later
    assert all("Mismatch" not in report[report.index(f"Case {k}:") :][:400] for k in (1, 2, 4))


def test_current_pytorch_refuses_case_3_with_the_words_the_report_quotes() -> None:
    torch = pytest.importorskip("torch")
    from vjpgrad.cli import cases as _cases

    a = torch.empty(1, requires_grad=True)
    with pytest.raises(RuntimeError) as caught:
        (3 * a).backward(torch.tensor([0.1, 1.0, 0.0001]))
    quoted = " ".join(line.strip() for line in _cases.CASES[2].pytorch_today)
    assert str(caught.value) in quoted
    a.grad = None
    (3 * a).backward(torch.tensor([0.1 + 1.0 + 0.0001]))  # the advice the report gives
    assert abs(float(a.grad[0]) - 3.3003) < 1e-6


# ---- the seed of a single output: a real number, 1.0 by default ----------------------------------


def test_backward_from_a_leaf_seeds_it() -> None:
    a = Value(1.0)
    a.backward(2.5)
    assert a.grad == 2.5


def test_the_seed_scales_every_gradient() -> None:
    a, b, c = Value(1.0), Value(2.0), Value(4.0)
    answer_expression(a, b, c).backward(0.5)
    assert (a.grad, b.grad, c.grad) == (1.5, 4.0, -0.5 / 16)


@pytest.mark.parametrize(("seed", "name"), [("1", "str"), ({1.0}, "set"), (1j, "complex")])
def test_a_seed_that_is_not_a_number_is_a_type_error(seed: object, name: str) -> None:
    a = Value(1.0)
    y = a * 2
    with pytest.raises(TypeError, match=f"seed must be a real number.*got {name}"):
        y.backward(seed)  # type: ignore[arg-type]
    assert a.grad == 0.0
    y.backward()  # nothing was freed by the failed call
    assert a.grad == 2.0


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda y: y.backward("1"), TypeError, "the seed must be a real number for a single output, got str"),
        (lambda y: explain(y, {1.0: 2.0}), TypeError, "seed must be a real number for a single output, got dict"),
        (lambda y: gradients(y, [y.parents[0]], seeds="s"), TypeError, "seeds must be a real number for a single"),
    ],
)
def test_a_bad_single_seed_is_named(call: Any, error: type[Exception], text: str) -> None:
    x = Value(2.0)
    with pytest.raises(error) as caught:
        call(x * x)
    assert message(caught).startswith(text)


@pytest.mark.parametrize(("seeds", "kind"), [({0: 1.0, 1: 2.0}, "dict"), ({1.0, 2.0}, "set")])
def test_a_dict_or_set_of_seeds_is_refused_saying_why(seeds: object, kind: str) -> None:
    y = Vector([1.0, 2.0]) * 2
    with pytest.raises(TypeError) as caught:
        y.backward(seeds)
    assert message(caught) == (
        f"the seed must be a sequence of numbers, one number per output in order, got a {kind}: "
        "a dict would give its keys and a set its own order"
    )


def test_a_value_seed_gives_float_gradients_in_a_plain_pass() -> None:
    x = Value(3.0)
    w = Value(2.0)  # requires grad, but a plain pass takes its number
    (x * x).backward(w)  # type: ignore[arg-type]  # a Value seed is a number too
    assert type(x.grad) is float
    assert x.grad == 12.0
    y = Value(1.0)
    Vector([y * 5.0, y]).backward([w, Value(1.0)])  # type: ignore[list-item]
    assert type(y.grad) is float
    assert y.grad == 11.0
    assert w.grad == 0.0


def test_a_value_seed_of_a_single_output_stays_on_the_graph_with_create_graph() -> None:
    x, w = Value(3.0), Value(2.0)
    (g,) = gradients(x * x, [x], seeds=w, create_graph=True)
    assert g.data == 12.0  # w * 2x
    (dg_dw,) = gradients(g, [w])
    assert dg_dw.data == 6.0  # 2x
    constant = Value(2.0, requires_grad=False)
    (h,) = gradients(x * x, [x], seeds=constant, create_graph=True)
    assert h.data == 12.0


def test_numpy_seeds() -> None:
    np = pytest.importorskip("numpy")
    x = Value(2.0)
    (x * x).backward(np.float64(0.5))
    assert x.grad == 2.0
    (x * x).backward(np.array(0.25))  # a 0-d array is a number
    assert x.grad == 3.0
    Vector([x * 1.0, x * 3.0]).backward(np.array([1.0, 2.0]))
    assert x.grad == 10.0
    with summed():
        (x * x).backward(np.array([0.5, 0.25]))  # a 1-d array: several weights of one number, summed
    assert x.grad == 13.0
    with pytest.raises(TypeError) as caught:
        (x * x).backward(np.array([[1.0]]))  # a 2-d array holds rows, not numbers
    assert message(caught).startswith("the seed[0] is a ndarray, not a number: a seed is one number per element")


def test_a_numpy_object_that_is_not_a_number_is_refused() -> None:
    np = pytest.importorskip("numpy")
    x = Value(2.0)
    with pytest.raises(TypeError) as caught:
        (x * x).backward(np.sin)
    assert message(caught) == "the seed must be a real number for a single output, got ufunc"


def test_a_fake_zero_dimensional_array_outside_numpy_is_refused() -> None:
    class Scalarish:
        shape = ()

        def __float__(self) -> float:
            return 1.0

    x = Value(2.0)
    with pytest.raises(TypeError) as caught:
        (x * x).backward(Scalarish())  # type: ignore[arg-type]
    assert message(caught) == "the seed must be a real number for a single output, got Scalarish"


def test_several_weights_of_one_value_are_summed_as_pytorch_before_1_3_did() -> None:
    # the answer's case 3 on one number: PyTorch's engine sums a longer seed into a 0-d output
    # too (3.3003 = 3 × 1.1001); its front end has refused it since 1.3
    a, b, c = Value(0.0), Value(0.0), Value(1.0)
    with summed():
        answer_expression(a, b, c).backward([0.1, 1.0, 0.0001])
    assert (a.grad, b.grad) == (3 * (0.1 + 1.0 + 0.0001), 0.0)
    assert c.grad == -(0.1 + 1.0 + 0.0001)  # d(c**-1)/dc = -1 at c = 1
    one = Vector.zeros(1)
    with summed():
        answer_expression(one, one, one + 1.0).backward([0.1, 1.0, 0.0001])  # type: ignore[arg-type]
    assert one.grad[0].data == a.grad + b.grad + c.grad  # the same seed as Vector.empty(1)'s
    x = Value(3.0)
    (x * x).backward([0.5])  # a one-element list is that element
    assert x.grad == 3.0
    with summed():
        (x * x).backward(Vector([1.0, 1.0], requires_grad=False))
    assert x.grad == 15.0


def test_several_weights_of_one_value_are_checked_before_anything_changes() -> None:
    x = Value(3.0)
    y = x * x
    with pytest.raises(TypeError) as caught:
        y.backward([1.0, "2"])  # type: ignore[arg-type]
    assert message(caught) == "the seed[1] must be a real number, got str"
    with pytest.raises(ValueError, match="empty") as caught_empty:
        y.backward([])
    assert (
        message(caught_empty) == "the seed is empty, for an output of one number: pass one number, or no seed for 1.0"
    )
    assert x.grad == 0.0
    y.backward()
    assert x.grad == 6.0


def test_a_longer_seed_on_a_one_number_loss_is_summed_and_a_warning_at_the_users_line_says_so() -> None:
    # the hint of "grad can be implicitly created only for scalar outputs" kept after adding .sum():
    # SPEC §4 sums it (case 3), which gives 3 times the gradient, so the learner is told
    x = Vector([1.0, 2.0, 3.0])
    loss = (x * x).sum()
    with pytest.warns(UserWarning, match=SUMMED) as caught:
        loss.backward([1.0] * 3)
    line = sys._getframe().f_lineno - 1
    assert x.grad.data == [6.0, 12.0, 18.0]  # 3 × [2, 4, 6]
    (warning,) = caught
    assert (warning.filename, warning.lineno) == (__file__, line)
    assert str(warning.message) == (
        "the seed has 3 numbers for an output of one number, so they were summed into one seed, 3.0: this "
        'reproduces PyTorch before version 1.3 (case 3 of the Stack Overflow question "Pytorch, what are the '
        'gradient arguments"); PyTorch now refuses it (RuntimeError: Mismatch in shape). A one-number output '
        "takes one number: pass 3.0, or no seed for 1.0"
    )


def test_the_warning_is_said_once_per_line_as_python_says_a_warning() -> None:
    # a training loop that makes the mistake at every step is told once, not at every step
    x = Vector([1.0, 2.0, 3.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own: once per line of the user's code
        for _ in range(5):
            (x * x).sum().backward([1.0] * 3)
    assert len([w for w in caught if issubclass(w.category, SummedSeedWarning)]) == 1
    assert x.grad.data == [30.0, 60.0, 90.0]  # every step still summed: 5 × 3 × [2, 4, 6]


def test_the_warning_is_given_in_code_that_runs_without_a_module_name() -> None:
    # a doctest, a notebook's exec: globals without __name__ (warn_explicit drops a warning of module None)
    with pytest.warns(UserWarning, match=SUMMED) as caught:
        exec("from vjpgrad import Value\nx = Value(2.0)\n(x * x).backward([1.0, 2.0])", {})
    assert (caught[0].filename, caught[0].lineno) == ("<string>", 3)


def test_a_seed_of_the_outputs_length_or_of_one_number_is_not_warned_about() -> None:
    x = Vector([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x * x).backward([1.0, 1.0])
        (x * x).sum().backward([1.0])  # a one-element list is that element
        Vector([x[0] * 1.0]).backward([2.0])
        (x * x).sum().backward()
    assert x.grad.data == [2.0 + 2.0 + 2.0 + 2.0, 4.0 + 4.0 + 4.0]


def test_a_nested_seed_says_a_seed_is_one_number_per_element_in_the_outputs_order() -> None:
    x = Vector([1.0, 2.0, 3.0])  # y: a 2 x 3 matrix, as a Vector of its rows laid end to end
    y = Vector([x[0] * x[1], x[1] * x[2], x[0] * 2.0, x[2] * x[2], x[0] + x[1], x[1] * 5.0])
    with pytest.raises(TypeError) as caught:
        y.backward([[1.0, 0.0, 0.0], [0.0, 0.0, 10.0]])  # type: ignore[list-item]
    assert message(caught) == (
        "the seed[0] is a list, not a number: a seed is one number per element of the output, in the output's "
        "order (6 numbers here); a matrix-shaped seed is laid out row by row, as the output's elements are: "
        '[w for row in seed for w in row] (see "What shape is the seed for a matrix-shaped output?" in the '
        "documentation's questions learners ask)"
    )
    assert x.grad.data == [0.0, 0.0, 0.0]
    y.backward([w for row in [[1.0, 0.0, 0.0], [0.0, 0.0, 10.0]] for w in row])  # the advice; nothing was freed
    assert x.grad.data == [2.0, 51.0, 0.0]
    with pytest.raises(TypeError, match=r"^the seed\[0\] is a tuple, not a number: .* \(1 number here\)"):
        (x[0] * 2.0).backward([(1.0, 2.0)])  # type: ignore[list-item]


# ---- the seed of a Vector: one number per element ------------------------------------------------


def test_no_seed_on_a_longer_vector_is_pytorchs_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (Vector([1.0, 2.0]) * 2).backward()


def test_the_seed_of_a_vector_names_its_argument_and_the_fix() -> None:
    x = Value(1.0)
    y = Vector([x * 1.0, x * 2.0, x * 3.0])
    with pytest.raises(RuntimeError) as caught:
        y.backward()
    assert message(caught) == (
        "grad can be implicitly created only for scalar outputs: the output has 3 elements, "
        "so pass a seed of one number per element, e.g. [1.0] * 3"
    )
    with pytest.raises(RuntimeError) as caught:
        explain(y)
    assert message(caught).endswith("so pass a seed of one number per element, e.g. [1.0] * 3")
    with pytest.raises(TypeError) as bad_element:
        y.backward([1.0, "2", 3.0])  # type: ignore[list-item]
    assert message(bad_element) == "the seed[1] must be a real number, got str"
    with pytest.raises(TypeError) as not_a_sequence:
        y.backward(1.0)  # type: ignore[arg-type]
    assert message(not_a_sequence).startswith("the seed must be a sequence of numbers")
    with pytest.raises(
        ValueError, match=r"^the seed has length 2 but the output has length 3: pass one number per element$"
    ):
        y.backward([1.0, 2.0])
    assert x.grad == 0.0


def test_no_seed_on_a_length_1_vector_seeds_it_with_one() -> None:
    x = Vector([3.0])
    (x * x).backward()
    assert x.grad.data == [6.0]


def test_a_longer_seed_on_a_length_1_output_is_summed() -> None:
    x = Vector([1.0])
    with summed():
        (x * 3).backward([0.1, 1.0, 0.0001])
    assert x.grad.data == [3 * (0.1 + 1.0 + 0.0001)]


@pytest.mark.parametrize(("seed", "total"), [([1.0, 2.0], 3.0), ([0.5, 0.25, 0.125], 0.875), ([4.0], 4.0)])
def test_a_longer_seed_of_a_length_1_output_is_summed(seed: list[float], total: float) -> None:
    x = Value(1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Vector([x * 2.0]).backward(seed)
    assert x.grad == 2.0 * total
    assert len(caught) == (len(seed) > 1)  # a one-element seed is that element: nothing was summed


def test_an_empty_seed_of_a_length_1_output_asks_for_one_number() -> None:
    # not "one number per element": several would be summed into a one-number output, with a warning
    x = Value(1.0)
    with pytest.raises(
        ValueError, match=r"^the seed is empty, for an output of one number: pass one number, or no seed for 1\.0$"
    ):
        Vector([x * 2.0]).backward([])


@pytest.mark.parametrize("seed", [[], Vector([]), ()])
def test_an_empty_seed_on_a_length_1_output_is_refused_before_anything_changes(seed: object) -> None:
    # a longer seed is summed into a length-1 output (it was broadcast); an empty one is not a
    # seed of length 0 summed to 0.0 but a mistake
    x = Vector([1.0])
    y = x * 3
    with pytest.raises(ValueError, match="the seed is empty, for an output of one number"):
        y.backward(seed)  # type: ignore[arg-type]
    assert x.grad.data == [0.0]
    with pytest.raises(ValueError, match="seeds is empty, for an output of one number"):
        vjpgrad.gradients(y, list(x), seed)
    y.backward([2.0])  # nothing was freed by the refused calls
    assert x.grad.data == [6.0]


def test_a_seed_vector_works_like_a_list() -> None:
    x = Vector([1.0, 2.0])
    (x * x).backward(Vector([0.5, 2.0]))
    assert x.grad.data == [1.0, 8.0]


def test_a_numpy_array_is_a_seed() -> None:
    np: Any = numpy()
    a = Vector([1.0, 2.0, 3.0])
    (a * a).backward(np.array([0.1, 1.0, 0.0001]))
    assert a.grad.tolist() == [0.1 * 1.0 + 0.1 * 1.0, 1.0 * 2.0 + 1.0 * 2.0, 0.0001 * 3.0 + 0.0001 * 3.0]


@pytest.mark.parametrize(
    ("seed", "error", "message"),
    [
        ([1.0, 2.0], ValueError, "the seed has length 2 but the output has length 3"),
        ([1.0], ValueError, "the seed has length 1 but the output has length 3"),
        ("abc", TypeError, "the seed must be a sequence of numbers.*got str"),
        (1.0, TypeError, "the seed must be a sequence of numbers.*got float"),
        ([1.0, "x", 2.0], TypeError, r"the seed\[1\] must be a real number, got str"),
    ],
)
def test_bad_seeds_are_refused_before_anything_changes(seed: object, error: type[Exception], message: str) -> None:
    x = Vector([1.0, 2.0, 3.0])
    y = x * 2
    with pytest.raises(error, match=message):
        y.backward(seed)  # type: ignore[arg-type]
    assert x.grad.data == [0.0, 0.0, 0.0]
    y.backward([1.0, 1.0, 1.0])  # the graph was not freed by the failed call
    assert x.grad.data == [2.0, 2.0, 2.0]


def test_backward_takes_pytorchs_spelling_of_the_seed() -> None:
    q = Vector([1.0, 2.0]) * 3
    a = q[0].parents[0]
    q.backward(gradient=[1.0, 1.0])  # the autograd tutorial's Q.backward(gradient=external_grad)
    assert a.grad == 3.0
    y = Value(2.0)
    (y * y).backward(gradient=0.5)
    assert y.grad == 2.0
    with pytest.raises(TypeError, match="same seed, pass one"):
        (y * y).backward(1.0, gradient=1.0)


def test_backward_takes_pytorchs_spelling_gradient_too() -> None:
    x = Value(1.0)
    y = Vector([x * 2.0, x * 3.0])
    y.backward(gradient=[1.0, 10.0], retain_graph=True)
    assert x.grad == 32.0
    with pytest.raises(TypeError) as caught:
        y.backward([1.0, 1.0], gradient=[1.0, 1.0])
    assert message(caught) == "backward() got both gradients= and gradient=: they are the same seed, pass one"
    y.backward([1.0, 1.0])  # frees the graph: retain_graph is False by default
    assert x.grad == 37.0
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward([1.0, 1.0])


# ---- one set of rules, whatever takes the seed ---------------------------------------------------


SEED = [0.1, 1.0, 0.0001]


def example_3() -> tuple[Vector, Vector, Vector, Vector]:
    """The Stack Overflow answer's Example 3: one element each, all zeros."""
    a, b, c = Vector.empty(1), Vector.empty(1), Vector.empty(1)
    return a, b, c, 3 * a + 2 * b * b + vjpgrad.log(c)


def through_backward(seed: Any) -> float:
    a, _, _, y = example_3()
    y.backward(seed)
    return a[0].grad


def through_gradients(seed: Any) -> float:
    a, _, _, y = example_3()
    return vjpgrad.gradients(y, a, seed)[0].data


def through_explain(seed: Any) -> float:
    a, _, _, y = example_3()
    return vjpgrad.explain(y, seed).gradients[a[0]]


def through_to_dot(seed: Any) -> float:
    a, _, _, y = example_3()
    text = vjpgrad.to_dot(y, seed, names={"a": a}, edges="chain")
    return 3.3003 if "= 3.3" in text else float("nan")  # the chain rule's label on a's edge


def through_testing(seed: Any) -> float:
    assert_grad_close(lambda a: Vector([3 * a]), [0.0], expected=[3.3003], seed=seed)
    return 3.3003


def through_vjp(seed: Any) -> float:
    _, vjp_fn = vjpgrad.vjp(lambda a: Vector([3 * a]), 0.0)
    (gradient,) = vjp_fn(seed)
    return float(gradient)


ENTRY_POINTS: list[Callable[[Any], float]] = [
    through_backward,
    through_gradients,
    through_explain,
    through_to_dot,
    through_testing,
]


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__name__)
def test_a_longer_seed_on_a_one_element_output_is_summed_everywhere(entry: Callable[[Any], float]) -> None:
    # the Stack Overflow answer's Example 3: a.grad = 3 x (0.1 + 1.0 + 0.0001) = 3.3003, and said
    with summed():
        assert entry(SEED) == pytest.approx(3.3003, rel=1e-12)


@pytest.mark.parametrize("entry", [*ENTRY_POINTS, through_vjp], ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("seed", "error", "words"),
    [
        ("abc", TypeError, "must be a sequence of numbers"),
        ([1.0, "x"], TypeError, r"\[1\] must be a real number, got str"),
        ([], ValueError, "is empty, for an output of one number"),
    ],
)
def test_a_bad_seed_is_refused_with_the_same_words_everywhere(
    entry: Callable[[Any], float], seed: Any, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        entry(seed)


@pytest.mark.parametrize("seed", [{0: 5.0, 1: 7.0}, {5.0, 7.0}, frozenset({5.0, 7.0})])
def test_a_dict_or_set_seed_is_refused_by_every_entry_point(seed: object) -> None:
    def output() -> tuple[Vector, Vector]:
        x = Vector([1.0, 2.0])
        return x, x * x

    x, y = output()
    with pytest.raises(TypeError, match=r"(dict|set|frozenset)"):
        y.backward(seed)  # type: ignore[arg-type]  # the wrong type is the subject
    assert x.grad.tolist() == [0.0, 0.0]
    with pytest.raises(TypeError, match=r"(dict|set|frozenset)"):
        vjpgrad.gradients(y, x, seed)
    with pytest.raises(TypeError, match=r"(dict|set|frozenset)"):
        vjpgrad.explain(y, seed)  # type: ignore[arg-type]  # the wrong type is the subject
    _, vjp_fn = vjpgrad.vjp(lambda v: [v[0] * v[1], v[1]], [1.0, 2.0])
    with pytest.raises(TypeError, match=r"(dict|set|frozenset)"):
        vjp_fn(seed)


@pytest.mark.slow  # a vjpgrad process
def test_the_command_line_sums_a_longer_seed_too() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "vjpgrad", "3*a + 2*b*b + log(c)", "a=0,", "b=0,", "c=0,", "--seed", "0.1,1,0.0001"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "a.grad = tensor([3.3003])" in result.stdout
    assert "c.grad = tensor([inf])" in result.stdout


def test_no_seed_on_a_longer_output_is_pytorchs_runtime_error_everywhere() -> None:
    a = Vector([1.0, 2.0])
    y = a * 2
    for call in (lambda: y.backward(), lambda: vjpgrad.gradients(y, a), lambda: vjpgrad.explain(y)):
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
            call()
    assert a.grad.tolist() == [0.0, 0.0]  # refused before anything changed
    y.backward([1.0, 1.0])  # and nothing was freed
    assert a.grad.tolist() == [2.0, 2.0]
    _ = Value  # the scalar case: a Value's seed defaults to 1.0


# ---- the gradient is linear in the seed ----------------------------------------------------------


def pass_with(seed: list[float]) -> tuple[float, float]:
    a, b = Value(0.7), Value(1.3)
    four_outputs(a, b).backward(seed)
    return a.grad, b.grad


def test_the_gradient_is_linear_in_the_seed() -> None:
    u, v = [1.0, 0.0, 2.0, -1.0], [0.0, 3.0, -1.0, 0.5]
    pu, pv = pass_with(u), pass_with(v)
    for alpha, beta in [(2.0, -3.0), (0.5, 0.25), (-1.0, 1.0)]:
        combined = pass_with([alpha * p + beta * q for p, q in zip(u, v, strict=True)])
        for got, gu, gv in zip(combined, pu, pv, strict=True):
            assert math.isclose(got, alpha * gu + beta * gv, rel_tol=1e-12, abs_tol=1e-12)
    # each element alone: the seed picks rows of the Jacobian
    rows = [pass_with([1.0 if i == k else 0.0 for i in range(4)]) for k in range(4)]
    full = pass_with([1.0, 1.0, 1.0, 1.0])
    for j in range(2):
        assert math.isclose(full[j], math.fsum(row[j] for row in rows), rel_tol=1e-12)


def test_a_pytorch_tensor_is_a_seed_as_in_y_backward_gradients() -> None:
    torch = pytest.importorskip("torch")
    a, listed = Vector([1.0, 2.0, 3.0]), Vector([1.0, 2.0, 3.0])
    (3 * a + a * a).backward(torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float64))  # the question's habit
    (3 * listed + listed * listed).backward([0.1, 1.0, 0.0001])
    assert list(a.grad) == list(listed.grad) == [0.5, 7.0, 0.0009000000000000001]
    x = Value(2.0)
    (x * x).backward(torch.tensor(0.5))  # a 0-d tensor is a number (float32 0.5 is exact)
    assert x.grad == 2.0
    with pytest.raises(TypeError) as caught:
        Vector([x * 1.0, x * 2.0]).backward(torch.tensor([[1.0, 1.0]]))  # rows, not numbers
    assert message(caught).startswith("the seed[0] is a Tensor, not a number: a seed is one number per element")
    with pytest.raises(TypeError):
        (x * x).backward(torch.tensor(1 + 1j))  # a complex number is no seed
    with pytest.raises(TypeError):
        (x * x).backward(torch.tensor(True))  # nor a bool
    (x * x).backward(torch.tensor(2))  # an integer is, as a 0-d NumPy integer is
    assert x.grad == 10.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # float() of a tensor that requires grad warns in PyTorch
        (x * x).backward(torch.tensor(0.5, requires_grad=True))
    assert x.grad == 12.0


def test_assert_grad_close_says_a_summed_seed_once_per_call() -> None:
    # its central differences run the function again with the same seed: said by the analytic pass alone
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_grad_close(lambda *xs: xs[0] * 3.0, [2.0] * 4, seed=[1.0, 1.0])
    assert [w.category for w in caught] == [SummedSeedWarning]
