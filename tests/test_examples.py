"""The example scripts run and print what they claim."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(script: str, *args: str) -> str:
    result = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_jacobian_view_shows_backward_is_v_transpose_j() -> None:
    out = run("jacobian_view.py")
    assert "backward(v) gives exactly v^T J" in out
    assert "a.grad       = [0.30000000000000004, 3.0, 0.00030000000000000003]" in out


def test_custom_op_example_is_stable_and_checks_its_gradient() -> None:
    out = run("custom_op.py")
    assert "softplus(1000) = 1000.0, d/dx = 1.0" in out
    assert "softplus''(0.3) = 0.244458" in out
    assert "gradcheck: True" in out
