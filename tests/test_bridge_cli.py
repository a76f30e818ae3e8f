"""``vjpgrad explain-torch SCRIPT.py [--html DIR]``: the script runs as itself, each pass is
summarised, one stepper page per pass is written, and the exit status says how it went."""

from __future__ import annotations

import html
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

CASE_1 = """\
import torch

a = torch.tensor([1.0, 2.0, 3.0], requires_grad = True)
b = torch.tensor([3.0, 4.0, 5.0], requires_grad = True)
c = torch.tensor([6.0, 7.0, 8.0], requires_grad = True)

y=3*a + 2*b*b + torch.log(c)
gradients = torch.FloatTensor([0.1, 1.0, 0.0001])
y.backward(gradients,retain_graph=True)
y.backward(gradients)

print(a.grad)
"""


def test_a_script_that_is_not_there_exits_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vjpgrad.cli import explain_torch as command

    assert command.main([str(tmp_path / "nowhere.py")]) == 2
    assert "no such script" in capsys.readouterr().err


def test_without_html_the_summary_says_how_to_step_through_each_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary alone shows no step of the vector-Jacobian product: a last line says how to see
    them (``--html``), and it is not there when the pages were asked for."""
    pytest.importorskip("torch")
    from vjpgrad.cli import explain_torch as command

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    script = tmp_path / "learner.py"
    script.write_text(CASE_1)
    assert command.main([str(script)]) == 0
    out = capsys.readouterr().out
    assert "equal to PyTorch's to the bit" in out
    assert f"vjpgrad explain-torch {script} --html" in out.splitlines()[-1]
    assert command.main([str(script), "--html", str(tmp_path / "pages")]) == 0
    assert "--html" not in capsys.readouterr().out


def test_the_hint_to_step_through_passes_is_left_out_where_no_pass_has_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no pass was replayed, or its outputs hold no element (an empty tensor), no page can
    step through it: no line sends the learner to ``--html`` (a review as a learner met it), and
    ``--html`` says why an empty output has no page."""
    pytest.importorskip("torch")
    from vjpgrad.cli import explain_torch as command

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    script = tmp_path / "learner.py"
    script.write_text("import torch\nx = torch.ones(0, requires_grad=True)\n(x * 2).sum().backward()\n")
    command.main([str(script)])
    assert "--html" not in capsys.readouterr().out
    command.main([str(script), "--html", str(tmp_path / "pages")])
    assert "no page for pass 1: its outputs hold no element to start a pass from" in capsys.readouterr().out


def test_a_watch_says_what_its_passes_did_when_printed() -> None:
    torch = pytest.importorskip("torch")
    import vjpgrad

    x = torch.tensor([0.5, 1.5], requires_grad=True)
    with vjpgrad.watch_torch() as w:
        (x * 3.0).sum().backward()
    assert repr(w) == "<vjpgrad.watch_torch(): 1 pass, 1 equal to PyTorch's to the bit>"


CASE_3 = """\
import torch

a = torch.tensor(1.0, requires_grad=True)
b = torch.tensor(1.0, requires_grad=True)
c = torch.tensor(1.0, requires_grad=True)
y = 3 * a + 2 * b * b + torch.log(c)
try:
    y.backward(torch.FloatTensor([0.1, 1.0, 0.0001]))
except RuntimeError as error:
    print("PyTorch:", str(error).splitlines()[0])
"""


def test_the_page_of_a_pass_pytorch_refused_says_so_and_how_it_was_replayed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Case 3 of the Stack Overflow answer: PyTorch refuses a seed of three numbers for a 0-d
    output, and the replay runs it as the PyTorch of the answer did, the seed summed. Its page
    says both where a learner reads first, its title, not only the summary printed beside it."""
    pytest.importorskip("torch")
    from vjpgrad.cli import explain_torch as command

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    script = tmp_path / "case3.py"
    script.write_text(CASE_3)
    assert command.main([str(script), "--html", str(tmp_path / "pages")]) == 2
    assert "PyTorch refused it" in capsys.readouterr().out
    page = (tmp_path / "pages" / "pass-1.html").read_text(encoding="utf-8")
    assert "PyTorch refused it" in page
    assert "the seed summed" in page


HOOKED = """\
import torch
a = torch.tensor(2.0, requires_grad=True)
y = a * a
y.backward(retain_graph=True)
y.backward()
x = torch.tensor([1.0, -2.0], requires_grad=True)
x.register_hook(lambda g: g * 10)
(x * x).sum().backward()
torch.special.i0(x).sum().backward()
"""


def test_each_page_carries_its_pass_verdict_and_a_pass_without_a_page_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page read alone says what the summary says of its pass: each leaf's verdict (a second
    pass adding onto the .grad the first left, a hook that scaled PyTorch's gradient); a pass
    not replayed gets a line saying so, not silence; and a page an earlier run wrote for a pass
    this run has no page for is removed, saying so, so no page looks current that is not (an
    outside review found the pages silent on all three)."""
    pytest.importorskip("torch")
    from vjpgrad.cli import explain_torch as command

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "pass-9.html").write_text(f"<title>learner.py, pass 9</title><div {command.PAGE_MARK}>", encoding="utf-8")
    (pages / "pass-notes.html").write_text("the learner's own", encoding="utf-8")
    (pages / "pass-8.html").write_text("a page of the learner's, not the watch's", encoding="utf-8")
    script = tmp_path / "hooked.py"
    script.write_text(HOOKED)
    assert command.main([str(script), "--html", str(pages)]) == 2
    out = capsys.readouterr().out
    assert "no page for pass 4: it was not replayed" in out
    assert f"removed {pages / 'pass-9.html'}, a page an earlier run wrote" in out
    assert sorted(p.name for p in pages.iterdir()) == [
        "pass-1.html", "pass-2.html", "pass-3.html", "pass-8.html", "pass-notes.html"
    ]  # fmt: skip
    summaries = out.split("\n\n")
    for number in (2, 3):
        page = (pages / f"pass-{number}.html").read_text(encoding="utf-8")
        (summary,) = [s for s in summaries if s.startswith(f"Pass {number}:")]
        for line in summary.splitlines()[1:]:
            assert html.escape(line.strip()) in page, line
    assert "hook" in (pages / "pass-3.html").read_text(encoding="utf-8")
    assert "a.grad = 8, the 4 it held plus this pass&#x27;s 4: equal to PyTorch" in (pages / "pass-2.html").read_text(
        encoding="utf-8"
    )  # the page's running total ends at this pass's 4


def test_a_folder_is_named_a_folder_not_a_missing_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vjpgrad.cli import explain_torch as command

    assert command.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a folder, not a script" in err
    assert "no such script" not in err


def test_a_script_with_a_syntax_error_shows_only_its_line_and_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vjpgrad.cli import explain_torch as command

    script = tmp_path / "learner.py"
    script.write_text("import torch\nx = torch.ones(2, requires_grad=True\ny = x * 2\n", encoding="utf-8")
    assert command.main([str(script)]) == 1
    out, err = capsys.readouterr()
    assert out == ""  # no summary of passes: the script never started
    assert "SyntaxError" in err
    assert "learner.py" in err
    assert "runpy" not in err
    assert "explain_torch.py" not in err  # vjpgrad's own frames are not the learner's


def test_max_steps_without_html_is_refused_before_the_script_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--max-steps`` bounds the pages ``--html`` writes: alone it would do nothing, so it is a
    usage error (exit 2, argparse's) that says what to add, and the script does not run."""
    from vjpgrad.cli import explain_torch as command

    ran = tmp_path / "ran"
    script = tmp_path / "learner.py"
    script.write_text(f"open({str(ran)!r}, 'w').close()\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        command.main([str(script), "--max-steps", "5"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--max-steps bounds the pages --html writes: add --html DIR" in err
    assert not ran.exists()


@pytest.mark.parametrize(
    ("argv", "html", "script_args"),
    [
        (["learner.py", "--", "--html", "x"], None, ["--html", "x"]),
        (["learner.py", "a", "--", "b"], None, ["a", "b"]),
        (["learner.py", "--html", "out", "--", "--max-steps", "3"], "out", ["--max-steps", "3"]),
        (["learner.py", "a", "--"], None, ["a"]),
        (["--html", "out", "--", "learner.py", "a", "--", "b"], "out", ["a", "--", "b"]),
        (["learner.py", "--epochs", "3", "--", "--lr", "0.1"], None, ["--epochs", "3", "--lr", "0.1"]),
        (["learner.py", "--htm", "x", "--max", "3"], None, ["--htm", "x", "--max", "3"]),
    ],
)
def test_words_after_the_first_double_dash_reach_the_script_as_they_are(
    argv: list[str], html: str | None, script_args: list[str]
) -> None:
    """As ``python SCRIPT.py ARGS`` would: ``--`` ends vjpgrad's options wherever it stands, is
    not passed on itself, and every word after it reaches the script, even one spelled like
    vjpgrad's own option; a word that only begins like one of them (``--htm``) is the script's."""
    from vjpgrad.cli import explain_torch as command

    arguments = command._arguments(argv)
    assert (arguments.script, arguments.html, arguments.args) == ("learner.py", html, script_args)


def explain_torch(tmp_path: Path, source: str, *extra: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("torch")
    script = tmp_path / "learner.py"
    script.write_text(source, encoding="utf-8")
    command = [sys.executable, "-m", "vjpgrad", "explain-torch", str(script), *extra]
    return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300)


@pytest.mark.slow  # starts Python and imports torch
def test_every_pass_matches_exit_0_and_one_page_per_pass(tmp_path: Path) -> None:
    done = explain_torch(tmp_path, CASE_1, "--html", str(tmp_path / "pages"))
    assert done.returncode == 0, done.stderr
    assert "tensor([6.0000e-01, 6.0000e+00, 6.0000e-04])" in done.stdout  # the script ran, both passes
    assert done.stdout.count("equal to PyTorch's to the bit") == 6
    assert "learner.py:9" in done.stdout
    assert "learner.py:10" in done.stdout
    pages = sorted(p.name for p in (tmp_path / "pages").iterdir())
    assert pages == ["pass-1.html", "pass-2.html"]
    assert "c[2]" in (tmp_path / "pages" / "pass-2.html").read_text(encoding="utf-8")


@pytest.mark.slow  # starts Python and imports torch
def test_a_pass_larger_than_a_page_holds_gets_a_line_not_a_page(tmp_path: Path) -> None:
    """``--max-steps N``: a pass of more steps gets no page (a page holds every step, about a
    kilobyte each) but a line saying why; its summary and the exit status are as for any pass."""
    done = explain_torch(tmp_path, CASE_1, "--html", str(tmp_path / "pages"), "--max-steps", "5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("equal to PyTorch's to the bit") == 6
    assert "no page for pass 1: its " in done.stdout
    assert "no page for pass 2: its " in done.stdout
    assert "more than a page holds (5, --max-steps)" in done.stdout
    assert list((tmp_path / "pages").iterdir()) == []
    refused = explain_torch(tmp_path, CASE_1, "--max-steps", "0")
    assert refused.returncode == 2
    assert "--max-steps: at least 1 step, got 0" in refused.stderr


@pytest.mark.slow  # starts Python and imports torch
def test_a_pass_not_replayed_exits_2_and_names_the_operation_and_line(tmp_path: Path) -> None:
    source = "import torch\nx = torch.ones(2, requires_grad=True)\ny = torch.special.i0(x).sum()\ny.backward()\n"
    done = explain_torch(tmp_path, source)
    assert done.returncode == 2, done.stderr
    assert "not replayed" in done.stdout
    assert "i0" in done.stdout
    assert "learner.py:3" in done.stdout


@pytest.mark.slow  # starts Python and imports torch
def test_a_script_that_raises_exits_1_with_its_traceback(tmp_path: Path) -> None:
    source = CASE_1.replace("y.backward(gradients)\n", "y.backward(gradients)\ny.backward(gradients)\n")
    done = explain_torch(tmp_path, source.replace("retain_graph=True", "retain_graph=False"))
    assert done.returncode == 1
    assert "Traceback" in done.stderr
    assert "learner.py" in done.stderr
    assert "RuntimeError" in done.stderr
    assert "Pass 1" in done.stdout  # the pass before the error is still shown


@pytest.mark.slow  # starts Python and imports torch
def test_the_script_gets_its_arguments_and_its_directory_on_the_path(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("SCALE = 3.0\n", encoding="utf-8")
    source = (
        "import sys, torch\nfrom helper import SCALE\nassert __name__ == '__main__'\n"
        "x = torch.tensor([float(sys.argv[1])], requires_grad=True)\n(SCALE * x).sum().backward()\nprint(x.grad)\n"
    )
    done = explain_torch(tmp_path, source, "2.5")
    assert done.returncode == 0, done.stderr
    assert "tensor([3.])" in done.stdout


@pytest.mark.slow  # starts Python and imports torch
def test_the_script_is_given_its_file_as_python_gives_it_an_absolute_path(tmp_path: Path) -> None:
    """``python learner.py`` sets ``__file__`` to the script's absolute path (Python 3.9 and
    later), so a script that changes directory still finds files beside it; the passes' lines
    name it that way too."""
    pytest.importorskip("torch")
    (tmp_path / "learner.py").write_text(
        "import os, torch\nprint('file', __file__)\nos.chdir(os.path.dirname(__file__) + '/..')\n"
        "x = torch.ones(2, requires_grad=True)\n(x * x).sum().backward()\n",
        encoding="utf-8",
    )
    plain = subprocess.run([sys.executable, "learner.py"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    command = [sys.executable, "-m", "vjpgrad", "explain-torch", "learner.py"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"file {tmp_path / 'learner.py'}" in plain.stdout
    assert f"file {tmp_path / 'learner.py'}" in done.stdout
    assert f"backward at {tmp_path / 'learner.py'}:5" in done.stdout


def test_a_pages_folder_that_cannot_be_made_is_one_line_before_the_script_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vjpgrad.cli import explain_torch as command

    script = tmp_path / "learner.py"
    script.write_text("print('the script ran')\n", encoding="utf-8")
    (tmp_path / "taken").write_text("a file, not a folder\n", encoding="utf-8")
    for folder in (tmp_path / "taken", tmp_path / "taken" / "pages"):
        assert command.main(["--html", str(folder), str(script)]) == 2
        out, err = capsys.readouterr()
        assert out == ""  # the script never started
        assert err.startswith("vjpgrad explain-torch: error: cannot write pages into ")
        assert str(folder) in err
        assert err.count("\n") == 1
        assert "Traceback" not in err


def test_sys_exit_with_a_message_prints_it_and_exits_1_as_python_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    from vjpgrad.cli import explain_torch as command

    script = tmp_path / "learner.py"
    script.write_text("import sys\nsys.exit('no data file: give one')\n", encoding="utf-8")
    assert command.main([str(script)]) == 1
    assert "no data file: give one\n" in capsys.readouterr().err
    script.write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    assert command.main([str(script)]) == 0
    assert capsys.readouterr().err == ""
    script.write_text("import sys\nsys.exit(3)\n", encoding="utf-8")  # the script's own status, said
    assert command.main([str(script)]) == 1
    assert "the script exited with status 3" in capsys.readouterr().err
    script.write_text("raise SystemExit(True)\n", encoding="utf-8")  # Python exits 1 for True
    assert command.main([str(script)]) == 1
    assert "the script exited with status 1\n" in capsys.readouterr().err


def test_a_notebook_is_refused_saying_how_to_watch_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a notebook's JSON reads as Python until null: it ran, and failed with NameError: name 'null'
    from vjpgrad.cli import explain_torch as command

    notebook = tmp_path / "lesson.ipynb"
    notebook.write_text('{"cells": [], "metadata": {"kernelspec": null}, "nbformat": 4}', encoding="utf-8")
    assert command.main([str(notebook)]) == 2
    said = capsys.readouterr().err
    assert "lesson.ipynb is a Jupyter notebook" in said
    assert "with vjpgrad.watch_torch() as w:" in said
    assert "jupyter nbconvert --to script" in said


def test_the_hint_to_step_through_quotes_a_path_a_shell_would_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")

    from vjpgrad.cli import explain_torch as command

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    script = tmp_path / "dir with space" / "ü é.py"
    script.parent.mkdir()
    script.write_text(CASE_1, encoding="utf-8")
    assert command.main([str(script)]) == 0
    hint = capsys.readouterr().out.splitlines()[-1]
    assert f"vjpgrad explain-torch {shlex.quote(str(script))} --html pages" in hint
    pasted = hint[hint.index("vjpgrad explain-torch") : -1]  # as a learner pastes it into a shell
    assert shlex.split(pasted)[2] == str(script)


def test_an_empty_html_folder_is_refused_not_taken_for_the_current_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vjpgrad.cli import explain_torch as command

    for argv in (["learner.py", "--html="], ["--html", "", "learner.py"]):
        with pytest.raises(SystemExit) as exited:
            command._arguments(argv)
        assert exited.value.code == 2
        assert "--html: a folder to write the pages into, got ''" in capsys.readouterr().err


CURSOR_MOVING = "a\x1b[31mred\x1b[0m\rover\u202eturned.py"  # colour codes, a carriage return, a right-to-left mark


def test_a_script_whose_path_moves_the_cursor_is_named_escaped_in_every_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary's ``at file:line`` and the hint name the script as Python writes such characters
    (``\\x1b``), never raw: a path's escape codes would recolour or overwrite the learner's terminal."""
    pytest.importorskip("torch")
    from vjpgrad.cli import explain_torch as command

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    script = tmp_path / CURSOR_MOVING
    script.write_text(CASE_1, encoding="utf-8")
    assert command.main([str(script)]) == 0
    out = capsys.readouterr().out
    assert not {"\x1b", "\r", "\u202e"} & set(out)
    assert "a\\x1b[31mred\\x1b[0m\\rover\\u202eturned.py:9" in out  # the first pass's line


@pytest.mark.parametrize("name", [f"it's {CURSOR_MOVING}", "caf\udce9.py"])  # the second: a byte not UTF-8
def test_the_hint_names_a_path_that_moves_the_cursor_as_bash_reads_it_back(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    import shutil

    from vjpgrad.cli import explain_torch as command

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash to read the hint back")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    script = tmp_path / name
    script.write_text(CASE_1, encoding="utf-8")
    assert command.main([str(script)]) == 0
    hint = capsys.readouterr().out.splitlines()[-1]
    pasted = hint[hint.index("vjpgrad explain-torch ") + len("vjpgrad explain-torch ") : hint.index(" --html pages")]
    assert "\x1b" not in pasted
    read_back = subprocess.run([bash, "-c", f"printf %s {pasted}"], capture_output=True, check=True).stdout
    assert read_back == os.fsencode(script)


@pytest.mark.parametrize("kind", ["missing", "folder", "notebook"])
def test_a_path_refused_before_the_script_runs_is_named_escaped(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vjpgrad.cli import explain_torch as command

    path = tmp_path / (CURSOR_MOVING + (".ipynb" if kind == "notebook" else ""))
    if kind == "folder":
        path.mkdir()
    elif kind == "notebook":
        path.write_text('{"cells": [], "nbformat": 4}', encoding="utf-8")
    assert command.main([str(path)]) == 2
    said = capsys.readouterr().err
    assert not {"\x1b", "\r", "\u202e"} & set(said)
    assert "a\\x1b[31mred" in said


@pytest.mark.parametrize(
    ("typed", "theirs", "hint"),
    [
        ("args.py", ["3"], "vjpgrad explain-torch args.py --html pages -- 3"),
        ("./-dash.py", [], "vjpgrad explain-torch ./-dash.py --html pages"),
        ("-dash.py", ["--html", "x"], "vjpgrad explain-torch --html pages -- -dash.py --html x"),
    ],
)
def test_the_hint_runs_the_script_as_it_was_run_its_words_and_path_as_typed(
    typed: str,
    theirs: list[str],
    hint: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hint's command runs the same script with the same words: they were left out (a script
    that reads ``sys.argv[1]`` then failed), and ``./-dash.py`` lost its ``./`` (then an option)."""
    pytest.importorskip("torch")
    from vjpgrad.cli import explain_torch as command

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.chdir(tmp_path)
    (tmp_path / typed.removeprefix("./")).write_text(
        "import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\n",
        encoding="utf-8",
    )
    run = ["--", typed, *theirs] if typed.startswith("-") else [typed, *(["--"] if theirs else []), *theirs]
    assert command.main(run) == 0
    said = capsys.readouterr().out.splitlines()[-1]
    assert said == f"(to step through each pass, edge by edge: {hint})"
    words = shlex.split(hint)[2:]
    again = command._arguments(words)  # the hint's words read back: the same script, the same words for it
    assert (again.script, again.args, again.html) == (typed, theirs, "pages")


@pytest.mark.filterwarnings("ignore:.*is deprecated:DeprecationWarning")  # torch._dynamo's import, not ours
def test_a_page_of_a_pass_a_torch_compiled_function_ran_in_says_it_ran_uncompiled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary's torch.compile paragraph is on each page too: a page said 'equal to PyTorch's to
    the bit' alone (a review's case)."""
    pytest.importorskip("torch")
    from vjpgrad.cli import explain_torch as command

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    script = tmp_path / "compiled.py"
    script.write_text(
        "import torch\n@torch.compile\ndef loss(x):\n    return torch.tanh(x).sum()\n"
        "x = torch.linspace(-1.0, 1.0, 3, requires_grad=True)\nloss(x).backward()\n",
        encoding="utf-8",
    )
    assert command.main([str(script), "--html", str(tmp_path / "pages")]) == 0
    page = (tmp_path / "pages" / "pass-1.html").read_text(encoding="utf-8")
    assert "ran uncompiled under the watch" in page
    assert "ran uncompiled under the watch" in capsys.readouterr().out
