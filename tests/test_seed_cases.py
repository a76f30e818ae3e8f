"""The four cases of the Stack Overflow answer, reproduced exactly: as numbers, as the
example scripts' printed output, and as the ``python -m vjpgrad`` report."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from vjpgrad import Value, Vector, log
from vjpgrad.cli.main import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


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


def test_the_command_reports_all_four_cases_agree(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
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
    # to a learner, a seed is the gradient vector v (test_readme.py checks the pages and the notebook)
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


def test_python_dash_m_vjpgrad_exits_0() -> None:
    result = subprocess.run([sys.executable, "-m", "vjpgrad"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "all four cases agree" in result.stdout
