"""The written pages, the README and the pages of docs/: every example runs as written (a ``>>>``
block as a doctest, any other block alone as a script), every file the README links to or shows is
tracked by git, and what the pages say agrees with the project (the commands CI runs, the Stack
Overflow question named with its link). The site's build is tested in test_docs.py.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _pages import DOCS, README, ROOT, docs_pages, example_pages, is_doctest, is_notebook, name, python_blocks

# ---- the interactive examples, as doctests -------------------------------------------------------


QUESTION = "https://stackoverflow.com/questions/43451125"


OPTIONS = doctest.ELLIPSIS
"""No NORMALIZE_WHITESPACE: a page shows what prints, line for line (a long line wrapped by hand
is not what a learner who pastes the block sees)."""


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


@pytest.mark.slow  # every docstring example
def test_docstring_examples_print_what_they_say() -> None:
    # the docstrings of the public modules and of every public name they offer (Value, Vector,
    # explain... are defined in the package's own modules), as the API reference shows them
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    finder = doctest.DocTestFinder(exclude_empty=True)
    seen: set[str] = set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", [])
        objects = [(module_name, module), *((f"{module_name}.{n}", getattr(module, n)) for n in names)]
        for qualified, obj in objects:
            if not (inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            for test in finder.find(obj, qualified):
                if test.name not in seen:
                    seen.add(test.name)
                    runner.run(test)
    assert {"vjpgrad.Value.backward", "vjpgrad.Vector.backward", "vjpgrad.explain", "vjpgrad.draw"} <= seen
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
    assert command.replace("python", '"$docs/bin/python"', 1) in ci  # in a fresh environment, the extra alone
    assert "\"$docs/bin/python\" -m pip install --quiet -e '.[docs]'" in ci


@pytest.mark.parametrize("page", [README, *docs_pages(), ROOT / "examples" / "notebook.ipynb"], ids=name)
def test_no_page_gives_the_question_a_nickname_that_reads_as_one_about_the_seed(page: Path) -> None:
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
    assert len(tutorials) == 9
    assert all(is_notebook(page.read_text(encoding="utf-8")) for page in tutorials)
    assert not is_notebook((DOCS / "start-here.md").read_text(encoding="utf-8"))


# ---- every other block runs alone, as a script ---------------------------------------------------


OPTIONAL_EXTRAS = {
    "graphviz": "pip install graphviz",
    "matplotlib": "pip install matplotlib",
    "numpy": "pip install numpy",
    "torch": "pip install torch",
}
"""Modules a block may need that vjpgrad's tests do not install: without them it skips."""


SNIPPETS = [
    (page, line, code)
    for page in example_pages()
    for line, code in python_blocks(page.read_text(encoding="utf-8"))
    if not is_doctest(code)
]


def missing_extra(error: BaseException) -> str | None:
    """Why an ImportError is an absent optional extra (to skip), or None (a real failure)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ImportError):
            root = (seen.name or "").partition(".")[0]
            if root in OPTIONAL_EXTRAS:
                return f"needs the optional {root} ({OPTIONAL_EXTRAS[root]})"
            if seen.name is None and "install" in str(seen):  # vjpgrad's own hint for an optional extra
                return f"needs an optional extra: {seen}"
        if type(seen).__name__ == "ExecutableNotFound":  # graphviz without Graphviz's dot program
            return "needs Graphviz's dot program (apt-get install graphviz)"
        seen = seen.__cause__
    return None


def run_alone(line: int, code: str, page: Path) -> dict[str, Any]:
    """Run one block as a script whose line numbers are the page's, then its test functions."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile("\n" * (line - 1) + code, str(page), "exec"), namespace)
    for key, value in list(namespace.items()):
        if key.startswith("test") and inspect.isfunction(value):
            value()
    return namespace


@pytest.fixture(scope="module")
def checked() -> None:
    """The checker itself, once: it finds the blocks and their lines, and a block that leans on
    another, or whose tests fail, fails; only an absent optional extra skips."""
    text = "intro\n```python\nx = 1\n```\n\n```python\n>>> 1\n1\n```\n```bash\nls\n```\n```python\ny = 2\n```\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (7, ">>> 1\n1\n"), (14, "y = 2\n")]
    assert [is_doctest(code) for _, code in python_blocks(text)] == [False, True, False]
    assert SNIPPETS  # the hypothesis test of docs/how-to/testing.md at least
    with pytest.raises(NameError, match="data"):
        run_alone(1, "for x in data:\n    pass\n", Path("page.md"))
    with pytest.raises(AssertionError):
        run_alone(1, "def test_it():\n    assert 1 == 2\n", Path("page.md"))  # the block's tests are called
    with pytest.raises(ImportError) as error:
        run_alone(1, "import matplotlib_that_is_not_there\n", Path("page.md"))
    assert missing_extra(error.value) is None  # a module that is no optional extra is a failure
    absent = ModuleNotFoundError("No module named 'torch'", name="torch")
    assert missing_extra(absent) == "needs the optional torch (pip install torch)"


@pytest.mark.usefixtures("checked")
@pytest.mark.parametrize(("page", "line", "code"), SNIPPETS, ids=[f"{name(page)}:{line}" for page, line, _ in SNIPPETS])
def test_each_block_runs_alone(
    page: Path, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a block that writes a file writes it here
    monkeypatch.setattr(sys, "argv", [str(page)])
    try:
        run_alone(line, code, page)
    except ImportError as error:
        reason = missing_extra(error)
        if reason is None:
            raise
        pytest.skip(f"{name(page)} line {line} {reason}")


# ---- every file the README links to or shows is in the repository --------------------------------


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


# ---- the lists of functions follow the table -------------------------------------------------------


def test_every_list_of_the_functions_on_a_page_is_the_tables() -> None:
    # a page that lists "the functions" names every function of core/ops.py's FUNCTIONS, no more
    from vjpgrad.core import ops

    table = sorted(op.name for op in ops.FUNCTIONS)
    lists = []
    for page in [README, *docs_pages()]:
        text = " ".join(page.read_text(encoding="utf-8").split())
        for found in re.finditer(r"[Tt]he functions are ((?:`\w+`(?:, | and )?)+)", text):
            lists.append((name(page), sorted(re.findall(r"`(\w+)`", found.group(1)))))
    assert lists, "no page lists the functions: the pattern above no longer finds them"
    assert [(page, names) for page, names in lists if names != table] == []


_COUNTS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def test_a_list_of_the_functions_names_those_of_one_operand_first_and_counts_the_others() -> None:
    """Where a page lists the functions and says "the last two take two operands", the functions
    of two operands are those last ones: a function of one operand added after them (the recipe's
    step 6 says before) passed the comparison of the names alone, the page then saying it took two."""
    from vjpgrad.core import ops

    arity = {op.name: op.arity for op in ops.FUNCTIONS}
    twos = sum(op.arity == 2 for op in ops.FUNCTIONS)
    checked = 0
    for page in [README, *docs_pages()]:
        text = " ".join(page.read_text(encoding="utf-8").split())
        pattern = r"[Tt]he functions are ((?:`\w+`(?:, | and )?)+)(?:; the last (\w+) take two operands)?"
        for found in re.finditer(pattern, text):
            names = re.findall(r"`(\w+)`", found.group(1))
            assert [arity[n] for n in names] == sorted(arity[n] for n in names), (name(page), names)
            if found.group(2) is not None:
                assert _COUNTS[found.group(2)] == twos, (name(page), found.group(0))
                checked += 1
    assert checked, "no page says how many take two operands: the pattern above no longer finds it"


def test_the_command_lines_page_lists_the_functions_an_expression_may_call() -> None:
    # "What an expression may contain": the table's functions of one operand and abs, then those of two
    from vjpgrad.cli.expr import ARITY

    text = " ".join((DOCS / "how-to" / "command-line.md").read_text(encoding="utf-8").split())
    found = re.search(r"calls of `([\w ]+)` and of ((?:`\w+`(?:, | and )?)+), of two operands", text)
    assert found is not None, "the page's list of what an expression may call is not found"
    ones, twos = found.group(1).split(), re.findall(r"`(\w+)`", found.group(2))
    assert sorted(ones) == sorted(k for k, n in ARITY.items() if n == 1)
    assert sorted(twos) == sorted(k for k, n in ARITY.items() if n == 2)


def test_the_api_reference_documents_every_function_of_the_table() -> None:
    # the docs build fails on a public name the reference leaves out; this says so in the quick loop
    from vjpgrad.core import ops

    reference = (DOCS / "reference" / "vjpgrad.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\.\. autofunction:: vjpgrad\.(\w+)$", reference, re.M))
    assert "exp" in documented
    assert sorted(op.name for op in ops.FUNCTIONS if op.name not in documented) == []


def test_start_heres_matrix_of_case_1_is_the_jacobian_its_weights_and_their_product() -> None:
    from vjpgrad import Vector, log

    page = (DOCS / "start-here.md").read_text(encoding="utf-8")
    table = re.search(r'<table class="vjp-matrix">.*?</table>', page, re.S)
    assert table is not None
    rows = {
        row[0]: row[1:]
        for row in (
            [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr)]
            for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(0), re.S)
        )
    }
    assert rows["output"][1:] == [f"{n}[{k}]" for n in "abc" for k in range(3)]  # its corner named for a screen reader

    def gradients(seed: list[float]) -> list[float]:
        a, b, c = Vector([1.0, 2.0, 3.0]), Vector([3.0, 4.0, 5.0]), Vector([6.0, 7.0, 8.0])
        (3 * a + 2 * b * b + log(c)).backward(seed)
        return [*a.grad.tolist(), *b.grad.tolist(), *c.grad.tolist()]

    v = [0.1, 1.0, 0.0001]
    for i in range(3):  # row i of J: the gradients of y[i] alone
        shown = rows[f"y[{i}]"]
        assert float(shown[0]) == v[i]
        one_hot = [1.0 if k == i else 0.0 for k in range(3)]
        assert [float(x) for x in shown[1:]] == pytest.approx(gradients(one_hot), rel=5e-4)
    assert [float(x) for x in rows["vᵀJ"][1:]] == pytest.approx(gradients(v), rel=5e-4)


def micrograd_draw_dot() -> Any:
    """The Digraph that coming-from-micrograd's draw_dot block makes, run as the page has it."""
    pytest.importorskip("graphviz", reason="the block needs the graphviz package (pip install graphviz)")
    page = (DOCS / "coming-from-micrograd.md").read_text(encoding="utf-8")
    (code,) = [code for _, code in python_blocks(page) if "def draw_dot" in code]
    namespace: dict[str, Any] = {"print": lambda *args: None}
    exec(compile(code, "coming-from-micrograd.md", "exec"), namespace)  # the page's own example
    return namespace["dot"]


def svg_shapes(svg: str) -> tuple[int, int, list[str]]:
    return svg.count('class="node"'), svg.count('class="edge"'), sorted(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_the_micrograd_pages_picture_is_what_its_draw_dot_draws() -> None:
    drawn = micrograd_draw_dot().pipe(format="svg").decode("utf-8")
    committed = (DOCS / "micrograd-draw-dot.svg").read_text(encoding="utf-8")
    assert svg_shapes(committed) == svg_shapes(drawn)  # the same boxes, ovals, arrows and labels
    assert svg_shapes(drawn)[:2] == (9, 8)  # 6 Values, 3 operations; 5 operand arrows, 3 op arrows


if __name__ == "__main__":  # python tests/test_pages.py: redraws docs/micrograd-draw-dot.svg
    (DOCS / "micrograd-draw-dot.svg").write_bytes(micrograd_draw_dot().pipe(format="svg"))


def test_the_site_has_its_own_favicon_served_with_it() -> None:
    # a browser asks every site for one: without it, a 404 in the log of every page, offline too
    import ast

    conf = ast.parse((DOCS / "conf.py").read_text(encoding="utf-8"))
    set_to = {
        target.id: node.value.value
        for node in conf.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    icon = DOCS / set_to["html_favicon"]
    assert icon.is_file()
    text = icon.read_text(encoding="utf-8")
    assert text.startswith("<svg ")
    assert "<title>vjpgrad</title>" in text
