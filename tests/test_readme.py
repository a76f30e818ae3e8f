"""The README's interactive examples run as doctests, so the README keeps saying what the code does."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import vjpgrad
from vjpgrad import Value, Vector

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_readme_examples_print_what_the_readme_says() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    interactive = "\n".join(block for block in blocks if block.lstrip().startswith(">>>"))
    assert interactive.count(">>>") >= 15
    test = doctest.DocTestParser().get_doctest(
        interactive, {"vjpgrad": vjpgrad, "Value": Value, "Vector": Vector}, "README", str(README), 0
    )
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
