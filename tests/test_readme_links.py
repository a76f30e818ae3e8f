"""Every file the README links to or shows (images, relative links) is in the repository.

A file that exists only in the working copy (ignored by .gitignore, never added) shows on
the author's machine and is a broken image everywhere else, so the check is against what
git tracks (``git ls-files``), not against the disk.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^)]*[\"'])?\s*\)")
HTML_LINK = re.compile(r"<(?:img|a|source)\b[^>]*?\b(?:src|href)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//|#)", re.IGNORECASE)


def linked_paths(markdown: str) -> list[str]:
    """The repository paths a Markdown text links to, outside code (fragments and queries dropped)."""
    prose = re.sub(r"^(```|~~~).*?^\1[ \t]*$", "", markdown, flags=re.DOTALL | re.MULTILINE)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    targets = LINK.findall(prose) + HTML_LINK.findall(prose)
    paths = []
    for target in targets:
        if EXTERNAL.match(target):
            continue
        path = re.split(r"[#?]", target, maxsplit=1)[0].strip("/")
        if path and path not in paths:
            paths.append(path.removeprefix("./"))
    return paths


def tracked_files() -> set[str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    result = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"not a git checkout: {result.stderr.strip()}")
    return set(filter(None, result.stdout.split("\0")))


def in_repository(path: str, tracked: set[str]) -> bool:
    """A tracked file, or a folder that holds one."""
    return path in tracked or any(name.startswith(path + "/") for name in tracked)


def test_every_file_the_readme_links_to_is_tracked_by_git() -> None:
    # the check itself: links in prose are found, links in code are not, folders count
    text = (
        "See ![a picture](docs/a.png) and [the code](examples/x.py#L3), [a folder](examples),\n"
        '<img src="docs/b.svg" width=10>, [web](https://example.org/c.png), [here](#usage),\n'
        '[titled](docs/t.md "Title"), `[not](in_code.py)`\n'
        "```python\nx = [y](z.py)\n```\n"
    )
    assert linked_paths(text) == ["docs/a.png", "examples/x.py", "examples", "docs/t.md", "docs/b.svg"]
    tracked = {"docs/a.png", "examples/x.py"}
    assert in_repository("examples", tracked)
    assert not in_repository("docs/b.svg", tracked)
    assert not in_repository("exam", tracked)

    paths = linked_paths(README.read_text(encoding="utf-8"))
    assert any(path.endswith((".png", ".svg")) for path in paths)  # the README shows pictures
    tracked = tracked_files()
    missing = [path for path in paths if not in_repository(path, tracked)]
    assert missing == [], f"README.md links to files git does not track: {missing} (ignored by .gitignore?)"
