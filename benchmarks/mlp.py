"""4. micrograd's demo step: MLP(2, [16, 16, 1]) on 100 points (added with vjpgrad.nn)."""

from __future__ import annotations

from typing import Any


def mlp_step(engines: list[Any], rounds: int, compare: Any) -> dict[str, Any]:
    print("\n4. MLP demo step: not available until vjpgrad.nn exists")
    return {}
