"""The README and the documentation's pages: their interactive examples run as doctests, so the
pages keep saying what the code does; and the README stays short and names the question.

Each ``>>>`` block runs on its own, in a fresh namespace, as a reader pastes it. The pages'
examples are the API reference's examples too (each page under docs/reference opens with
one): running them here, with the standard library's doctest, checks them on every Python
CI tests, without a second Sphinx build. The docstrings' own examples, if any, run the same
way (test_docstring_examples_print_what_they_say).
"""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import pytest
from _pages import DOCS, README, ROOT, docs_pages, example_pages, is_doctest, is_notebook, name, python_blocks

QUESTION = "https://stackoverflow.com/questions/43451125"
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
PUBLIC_MODULES = ["vjpgrad", "vjpgrad.nn", "vjpgrad.nn.functional", "vjpgrad.optim", "vjpgrad.testing"]


def run_interactive_blocks(path: Path) -> doctest.TestResults:
    """Every ``>>>`` block of a page, each alone in a fresh namespace; failures are reported as doctest does."""
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    for line, code in python_blocks(path.read_text(encoding="utf-8")):
        if is_doctest(code):
            test = doctest.DocTestParser().get_doctest(code, {}, f"{name(path)}:{line}", str(path), line - 1)
            runner.run(test)
    return runner.summarize(verbose=False)


def interactive_examples(path: Path) -> int:
    return sum(code.count("\n>>> ") + code.startswith(">>> ") for _, code in python_blocks(path.read_text()))


def test_the_readme_examples_print_what_the_readme_says() -> None:
    assert interactive_examples(README) >= 8
    results = run_interactive_blocks(README)
    assert results.failed == 0


@pytest.mark.parametrize("page", [page for page in example_pages() if page != README], ids=name)
def test_each_page_of_the_docs_prints_what_it_says(page: Path) -> None:
    results = run_interactive_blocks(page)
    assert results.failed == 0


def test_the_checker_finds_a_wrong_example(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n```python\n>>> 1 + 1\n3\n```\n```python\n>>> 2 * 2\n4\n```\n", encoding="utf-8")
    assert run_interactive_blocks(page) == doctest.TestResults(failed=1, attempted=2)


def test_every_reference_page_opens_with_an_example() -> None:
    pages = sorted((DOCS / "reference").glob("*.md"))
    assert len(pages) >= 5
    for page in pages:
        if page.name == "index.md":
            continue
        assert interactive_examples(page) >= 2, f"{name(page)} has no example"


def test_docstring_examples_print_what_they_say() -> None:
    # the docstrings of the public modules, as sphinx -b doctest would run the API reference's
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    finder = doctest.DocTestFinder(exclude_empty=True)
    for module_name in PUBLIC_MODULES:
        for test in finder.find(importlib.import_module(module_name)):
            runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_the_readme_is_at_most_200_lines_and_names_the_question_with_its_link() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    prose = " ".join(text.split())
    assert f'["Pytorch, what are the gradient arguments"]({QUESTION})' in prose
    assert QUESTION in (DOCS / "start-here.md").read_text(encoding="utf-8")


def test_the_four_cases_table_of_the_readme_is_the_one_start_here_explains() -> None:
    rows = [line for line in README.read_text(encoding="utf-8").splitlines() if re.match(r"\| [1-4]\. ", line)]
    assert len(rows) == 4
    start_here = (DOCS / "start-here.md").read_text(encoding="utf-8").splitlines()
    assert all(row in start_here for row in rows)


def test_the_readme_gives_the_two_set_up_commands_that_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    assert "pip install . && python -m vjpgrad" in text
    assert "pip install -e '.[test]' && pytest" in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install --quiet -e '.[test]'" in ci
    assert '"$main/bin/python" -m vjpgrad' in ci


def test_the_docs_build_command_is_the_same_everywhere_it_is_written() -> None:
    command = "python -m sphinx -W --keep-going -b html docs docs/_build/html"
    for path in (README, ROOT / "CONTRIBUTING.md", DOCS / "conf.py"):
        assert command in path.read_text(encoding="utf-8"), name(path)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert command.replace("python", '"$main/bin/python"', 1) in ci  # in the main environment, with the extra


@pytest.mark.parametrize("page", [README, *docs_pages(), ROOT / "examples" / "notebook.ipynb"], ids=name)
def test_no_page_calls_the_question_the_seed_question(page: Path) -> None:
    # to a learner, a seed is the gradient vector v: "the seed question" would read as a question about v
    text = " ".join(page.read_text(encoding="utf-8").split()).lower()
    assert not re.search(r"seed question|the seed's", text)


def test_the_readme_links_the_pages_of_the_docs() -> None:
    text = README.read_text(encoding="utf-8")
    learners_pages = [page for page in docs_pages() if page.parent.name not in ("reference", "course")]
    assert len(learners_pages) >= 18
    for page in learners_pages:
        relative = name(page)
        if relative != "docs/index.md":  # the site's front page: the README links the folder
            assert f"]({relative})" in text, f"the README does not link {relative}"
    for relative in ("docs/reference/index.md", "docs/course/index.md", "docs"):
        assert f"]({relative})" in text, f"the README does not link {relative}"


def test_the_notebooks_are_recognised_as_notebooks() -> None:
    tutorials = sorted((DOCS / "tutorials").glob("*.md"))
    assert len(tutorials) == 6
    assert all(is_notebook(page.read_text(encoding="utf-8")) for page in tutorials)
    assert not is_notebook((DOCS / "start-here.md").read_text(encoding="utf-8"))
