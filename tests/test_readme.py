"""The README's interactive examples run as doctests, so the README keeps saying what the code does."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_readme_examples_print_what_the_readme_says() -> None:
    # each interactive block on its own, in a fresh namespace: as a reader pastes it
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    interactive = [block for block in blocks if block.lstrip().startswith(">>>")]
    assert sum(block.count(">>>") for block in interactive) >= 15
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for k, block in enumerate(interactive):
        test = doctest.DocTestParser().get_doctest(block, {}, f"README block {k}", str(README), 0)
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
