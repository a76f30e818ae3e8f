"""Shared test settings: hypothesis sized for a 2-core machine."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=int(os.environ.get("VJPGRAD_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# Mutation runs (pyproject.toml, [tool.mutmut]) pass --hypothesis-profile=mutation: the same examples
# for every mutant and no example database, so a run is repeatable and a clean run never replays a
# failure found elsewhere.
settings.register_profile(
    "mutation",
    max_examples=int(os.environ.get("VJPGRAD_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    database=None,
)
settings.load_profile("default")
