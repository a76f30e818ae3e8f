"""The repository's own text speaks to its users: no tracker numbers in the code, tests, docs,
benchmarks or configuration (the history lives in CHANGELOG.md and the commit messages)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

READ = ("src", "docs", "tests", "benchmarks", "examples")
"""The folders whose text users and contributors read."""
CONFIG = ("pyproject.toml", ".ci/run", "README.md", "CONTRIBUTING.md", "ARCHITECTURE.md", ".gitignore")
"""The configuration and the pages at the top of the repository (CHANGELOG.md may keep history)."""
SUFFIXES = frozenset({".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".rst", ".ipynb", ".js", ".css"})
SKIPPED = frozenset({"_build", "__pycache__", ".hypothesis", "mutants", ".ipynb_checkpoints"})

# written in two parts, so that this file does not match its own pattern
TRACKER_NUMBER = re.compile("iss" + r"ue\s*#?\d+", re.IGNORECASE)


def texts() -> list[Path]:
    """Every text file of ``READ`` and ``CONFIG`` (built output and caches left out)."""
    found = [ROOT / name for name in CONFIG if (ROOT / name).is_file()]
    for folder in READ:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and not SKIPPED & set(path.parts):
                found.append(path)
    return found


def test_no_text_names_a_tracker_issue_by_number() -> None:
    files = texts()
    assert len(files) > 100  # the folders were found
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if TRACKER_NUMBER.search(line)
    ]
    assert hits == [], "history belongs in CHANGELOG.md and commit messages:\n" + "\n".join(hits)


def test_the_pattern_finds_what_it_is_for() -> None:
    word = "iss" + "ue"
    for text in (f"{word} 23", f"{word} #16", f"({word.title()} #11)", f"{word.upper()}23"):
        assert TRACKER_NUMBER.search(text), text
    for text in ("the issue", "an issue with 2 operands", "tissue", f"{word}s"):
        assert not TRACKER_NUMBER.search(text), text
