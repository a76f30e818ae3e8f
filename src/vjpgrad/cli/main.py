"""The command line, ``python -m vjpgrad`` or ``vjpgrad``.

Without arguments it prints the four cases of the Stack Overflow answer
(https://stackoverflow.com/questions/43451125), the gradients the answer shows beside the ones
vjpgrad computes, and exits 0 only when all agree. With an expression it evaluates it over
the variables given and prints the output and every gradient:

    vjpgrad '3*a + 2*b*b + log(c)' a=1,2,3 b=3,4,5 c=6,7,8 --seed 0.1,1,0.0001 --explain

Any problem with the input is one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import difflib
import io
import itertools
import keyword
import math
import os
import re
import sys
import unicodedata
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vjpgrad.cli.cases import report
from vjpgrad.cli.expr import (
    FUNCTIONS,
    MAX_DEPTH,
    MAX_LENGTH,
    NOT_TEXT,
    ExpressionError,
    evaluate,
    not_text,
    parse,
    to_float,
    variables,
)
from vjpgrad.compiler import cache
from vjpgrad.core.seeds import SummedSeedWarning, seeds_for
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector
from vjpgrad.course import main as course
from vjpgrad.display.dot import to_dot
from vjpgrad.display.explain import Explanation, explain

EXAMPLES = f"""\
examples:
  vjpgrad                                   the four cases of the Stack Overflow answer
  vjpgrad '3*a + 2*b*b + log(c)' a=1,2,3 b=3,4,5 c=6,7,8 --seed 0.1,1,0.0001
  vjpgrad '3*a + 2*b*b + log(c)' a=0.1 b=1 c=0.1           scalars: seeded with 1.0
  vjpgrad 'x * exp(-x)' x=2 --explain                       the chain rule, step by step
  vjpgrad 'sigmoid(w*x + b)' w=0.5 x=2 b=-1 --dot graph.dot
  vjpgrad '3*a + 2*b*b + log(c)' a=1,2,3 b=3,4,5 c=6,7,8 --seed 0.1,1,0.0001 --html pass.html
                                            a page that steps through the pass in a browser
  vjpgrad --x x=3                                           an expression may start with -
  vjpgrad course init mycourse                              the course: build your own engine (course --help)
  vjpgrad explain-torch script.py --html pages
                                            each backward pass of a PyTorch script, replayed as Values
  vjpgrad cache [--clear]                                   where vjpgrad.compile keeps its code; --clear empties it

A variable is NAME=NUMBER (a scalar) or NAME=N1,N2,... (a vector; NAME=5, is a vector of
one). Names are case-sensitive. The output is printed as y, or as out when a variable is
named y. The expression may use numbers, variables, + - * / ** (not ^), parentheses and
the functions {" ".join(FUNCTIONS)}.
It is parsed, never run as Python. It may be {MAX_LENGTH:,} characters long and nest
{MAX_DEPTH} levels deep: each parenthesis, call and unary sign is a level, and a flat chain
such as x+x+...+x is one level however long.

Options and the expression: only --seed, --explain, --dot and --html are options, and --help (or -h
as the first word). The first other word is the expression, even when it starts with a
minus sign (vjpgrad --x x=3 is -(-x)), and every word after it is a variable. After the
word --, no word is an option: vjpgrad -- --seed seed=2.
"""


CONSTANTS = {
    "e": ("2.718281828459045", "write exp(x) for e**x"),
    "pi": ("3.141592653589793", "write 3.141592653589793"),
    "tau": ("6.283185307179586", "write 6.283185307179586"),
    "inf": ("1e309", "write 1e309 for infinity"),
    "nan": ("nan", "write 0*1e309 for nan"),
}
"""Names a learner may expect to mean a number: the number, and how to write it in an expression."""
NO_CONSTANTS = "there are no named constants"


def output_name(variables: Collection[str]) -> str:
    """The output's name in what is printed: ``y``, or when a variable is named ``y``, ``out`` (then
    ``out2``, ``out3``... if ``out`` is a variable too), so that ``y.grad`` is never ambiguous."""
    candidates = itertools.chain(("y", "out"), (f"out{i}" for i in itertools.count(2)))
    return next(name for name in candidates if name not in variables)


def _not_finite(numbers: Sequence[float]) -> dict[str, list[int]]:
    """Where ``numbers`` are nan, inf and -inf, by kind, in that order (a kind none is, left out)."""
    found: dict[str, list[int]] = {"nan": [], "inf": [], "-inf": []}
    for i, x in enumerate(numbers):
        if not math.isfinite(x):
            found["nan" if math.isnan(x) else "inf" if x > 0 else "-inf"].append(i)
    return {kind: where for kind, where in found.items() if where}


def _part(name: str, thing: Value | Vector, where: list[int], rank: int = 0) -> list[tuple[int, int, str]]:
    """Each element of ``where`` as the note names it (``y[2]``), with where it comes in the note:
    ``rank`` (the variable's place), then its index."""
    if isinstance(thing, Value):
        return [(rank, 0, name)]
    return [(rank, i, f"{name}[{i}]") for i in where]


def _listed(parts: list[str], most: int = 6) -> str:
    """``a``, ``a and b``, ``a, b and c``; past ``most``, the first and how many more."""
    if len(parts) > most:
        parts = [*parts[: most - 1], f"{len(parts) - most + 1} more"]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _note(found: dict[str, list[tuple[int, int, str]]], why_nan: str, why_infinite: str) -> str:
    """One note for the parts that are nan and those that are infinite, each kind with its cause,
    the parts of each in their order."""
    said = []
    nan = [text for *_, text in sorted(found.get("nan", []))]
    if nan:
        said.append(f"{_listed(nan)} {'is' if len(nan) == 1 else 'are'} nan: {why_nan}")
    infinite = [text for *_, text in sorted(found.get("inf", []) + found.get("-inf", []))]
    if infinite:
        kinds = " or ".join(kind for kind in ("inf", "-inf") if found.get(kind))
        said.append(f"{_listed(infinite)} {'is' if len(infinite) == 1 else 'are'} {kinds}: {why_infinite}")
    return f"note: {'; '.join(said)}; --explain shows each step" if said else ""


def _remark(y: Value | Vector, name: str) -> str:
    """A note when the output holds nan or an infinity: the expression left a domain somewhere."""
    kinds = _not_finite(y.tolist() if isinstance(y, Vector) else [y.data])
    return _note(
        {kind: _part(name, y, where) for kind, where in kinds.items()},
        "an operation left its domain (log or sqrt of a negative number, 0/0, inf - inf...)",
        "a division by zero, log(0) or an overflow",
    )


def _gradient_remark(env: dict[str, Value | Vector]) -> str:
    """A note when a gradient holds nan or an infinity: a local derivative is infinite somewhere."""
    found: dict[str, list[tuple[int, int, str]]] = {}
    for rank, (name, value) in enumerate(env.items()):
        grads = value.grad.tolist() if isinstance(value, Vector) else [value.grad]
        for kind, where in _not_finite(grads).items():
            found.setdefault(kind, []).extend(_part(f"{name}.grad", value, where, rank))
    return _note(
        found,
        "an infinite local derivative met a zero (inf x 0), or an operation left its domain",
        "a local derivative is infinite there (sqrt or log at 0, 1/x at 0...), or a product overflowed",
    )


def _case_hint(name: str, given: Collection[str]) -> str | None:
    """A given name that differs from ``name`` only in case (``X`` for ``x``), if there is one."""
    return next((other for other in given if other != name and other.casefold() == name.casefold()), None)


class CommandError(ValueError):
    """Bad command-line input: reported as one line and exit status 2."""


@dataclass
class Arguments:
    """The command line, read: the expression, its variables and the options."""

    expression: str
    assignments: list[str] = field(default_factory=list)
    seed: str | None = None
    explain: bool = False
    dot: Path | None = None
    html: Path | None = None


def _help() -> str:
    parser = argparse.ArgumentParser(
        prog="vjpgrad",
        description="Evaluate an expression and print the gradient of every variable (reverse mode).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("expression", help="the expression, e.g. '3*a + 2*b*b + log(c)'")
    parser.add_argument("assignments", nargs="*", metavar="NAME=VALUES", help="a variable: x=1.5 or v=1,2,3")
    parser.add_argument("--seed", metavar="V1,V2,...", help="the seed: one number per output element")
    parser.add_argument("--explain", action="store_true", help="print the reverse pass step by step")
    parser.add_argument("--dot", metavar="FILE", help="write the graph as Graphviz DOT text to FILE")
    parser.add_argument("--html", metavar="FILE", help="write a page that steps through the reverse pass to FILE")
    return parser.format_help()


_OPTIONS = ("--seed", "--explain", "--dot", "--html")
_OPTION_LIKE = re.compile(r"--?[A-Za-z][\w-]*(=.*)?")
_OPTIONS_ARE = "the options are --seed, --explain, --dot and --html; see --help"
_OPTION_WORDS = frozenset(option.removeprefix("--") for option in (*_OPTIONS, "--help"))
"""The options' names without their dashes: a first word the learner meant as an option."""


def read_arguments(arguments: Sequence[str]) -> Arguments:
    """Read the command line by hand: only the known options are options, and the first word
    that is not one is the expression, whatever it starts with ('-x * 2', '--x'). After it,
    a word shaped like an option can only be a mistyped one. After ``--``, no word is an
    option."""
    positionals: list[str] = []
    options: dict[str, str | None] = {}
    words = iter(arguments)
    for word in words:
        if word == "--":  # the end of the options: every word after it is the expression or a variable
            positionals += words
            break
        name, equals, value = word.partition("=")
        if name not in _OPTIONS:
            if positionals and _OPTION_LIKE.fullmatch(word):
                raise CommandError(f"unrecognized option {name} ({_OPTIONS_ARE})")
            positionals.append(word)
            continue
        if name in options:
            raise CommandError(f"{name} is given twice")
        if name == "--explain":
            if equals:
                raise CommandError("--explain takes no value")
            options[name] = None
            continue
        if not equals:
            following = next(words, None)
            if following is None:
                raise CommandError(f"{name} needs a value")
            value = following
        options[name] = value
    if not positionals:
        raise CommandError("no expression given (see --help)")
    dot, html = options.get("--dot"), options.get("--html")
    return Arguments(
        positionals[0],
        positionals[1:],
        options.get("--seed"),
        "--explain" in options,
        None if dot is None else Path(dot),
        None if html is None else Path(html),
    )


def _all_numbers(text: str) -> bool:
    """Whether ``text`` is numbers and commas alone (what a Python list in brackets holds)."""
    items = [item.strip() for item in text.split(",")]
    items = items[:-1] if len(items) > 1 and not items[-1] else items
    try:
        return bool(items) and all(_number(item) is not None for item in items)
    except ValueError:
        return False


def _number(item: str) -> float:
    """A value's number: what ``float`` reads, or an integer as the expression's literals are
    (``0x10``, ``0b11``, ``0o17``, in ASCII digits), too large for a float being inf as there, its
    sign applied to that float as the expression's minus is (``-0x0`` is ``-0.0``); ValueError if
    neither."""
    if not item.strip().isascii():  # float() reads other digits (Arabic-Indic, full-width): the expression does not
        raise ValueError(item)
    try:
        return float(item)
    except ValueError:
        written = item.strip()
        body = written[1:] if written[:1] in ("-", "+") else written
        if body[:1] in ("-", "+") or body != body.strip():  # ASCII already: checked above
            raise
        number = to_float(int(body, 0))
        return -number if written.startswith("-") else number


def _numbers(text: str, what: str) -> list[float]:
    if not_text(text):
        raise CommandError(f"{what} holds {NOT_TEXT}")
    bare = text.strip()
    if len(bare) > 1 and (bare[0], bare[-1]) in (("[", "]"), ("(", ")")) and _all_numbers(bare[1:-1]):
        inner = ",".join(item.strip() for item in bare[1:-1].split(",") if item.strip())
        inner += "," if "," not in inner else ""  # one number with a comma: a vector of one, as "5," is
        spelled = f"--seed {inner}" if what == "--seed" else f"{what}={inner}"
        raise CommandError(f"{what}: {bare!r} is a list in brackets: write {spelled} (the numbers and commas alone)")
    items = text.split(",")
    if items and items[-1] == "" and len(items) > 1:
        items = items[:-1]  # "5," is a vector of one
    numbers = []
    for item in items:
        try:
            numbers.append(_number(item))
        except ValueError:
            written = item.strip()
            constant = CONSTANTS.get(written.casefold())
            advice = "" if constant is None else f" ({NO_CONSTANTS}: write {constant[0]} for {written})"
            raise CommandError(f"{what}: {written!r} is not a number{advice}") from None
    return numbers


def _variable(assignment: str) -> tuple[str, Value | Vector]:
    written, equals, text = assignment.partition("=")
    if not_text(assignment):
        named = f"the value of {written.strip()!r}" if equals and not not_text(written) else "an assignment"
        raise CommandError(f"{named} holds {NOT_TEXT}")
    written = written.strip()
    if not equals:
        raise CommandError(f"{assignment!r} is not an assignment: write NAME=VALUES, e.g. x=1.5 or v=1,2,3")
    name = unicodedata.normalize("NFKC", written)  # as Python's parser reads the expression's names
    if not written.isidentifier() or keyword.iskeyword(name):
        raise CommandError(f"{written!r} is not a variable name")
    if name in FUNCTIONS:
        raise CommandError(f"{name!r} is a function name; choose another variable name")
    numbers = _numbers(text, name)
    if "," in text:
        vector = Vector(numbers)
        for i, value in enumerate(vector):
            value.label = f"{name}[{i}]"
        return name, vector
    return name, Value(numbers[0], label=name)


def _show(x: Any) -> str:
    if isinstance(x, Vector):
        return str(x).replace("\n", "\n" + " " * 4)
    return repr(float(x))


def run(arguments: Sequence[str]) -> list[str]:
    """Evaluate an expression from command-line arguments: the lines to print, the output
    and every gradient. Everything that can fail is done before anything is printed."""
    args = read_arguments(arguments)
    try:
        return _evaluate(args)
    except (CommandError, ExpressionError) as error:
        word = args.expression.strip()
        if _OPTION_LIKE.fullmatch(word):  # e.g. a mistyped option first: vjpgrad --explian ...
            raise CommandError(f"{error} ({word} was read as the expression: {_OPTIONS_ARE})") from None
        named = {assignment.partition("=")[0].strip() for assignment in args.assignments if "=" in assignment}
        if word in _OPTION_WORDS and word not in named:  # an option without its dashes: vjpgrad explain ...
            raise CommandError(
                f"{error} ({word} was read as the expression: the option is --{word}; see --help)"
            ) from None
        if word.isidentifier() and args.assignments and "=" not in args.assignments[0]:  # vjpgrad grad 'x*x' x=2
            raise CommandError(
                f"{error} ({word} was read as the expression: the expression comes first, e.g. vjpgrad 'x*x' x=2)"
            ) from None
        raise


def _evaluate(args: Arguments) -> list[str]:
    """The steps of a run: read the variables, check that each has a value, compute the output,
    read the seed, run the pass, then say what it gave and write the files asked for."""
    tree = parse(args.expression)
    env, written = _environment(args.assignments)
    used = variables(tree)
    _check_given(used, env, written)
    seeds = None if args.seed is None else _numbers(args.seed, "--seed")
    y = evaluate(tree, env)
    if not isinstance(y, (Value, Vector)):  # an expression of constants alone
        y = Value(float(y), requires_grad=False)
    with warnings.catch_warnings(record=True) as caught:  # a summed seed (case 3): a note, said once
        warnings.simplefilter("always", SummedSeedWarning)
        seed = _seed(y, seeds)
        name = output_name(env)
        lines = [f"{name} = {_show(y)}", *_present(_remark(y, name))]
        explanation = _backward(y, seed, env, name, explain_it=args.explain or args.html is not None)
    lines += [f"{name}.grad = {_show(value.grad)}" for name, value in env.items()]  # 0.0 if y does not use it
    lines += _present(_gradient_remark(env))
    lines += _unused_notes(env, used)
    summed = [str(w.message) for w in caught if issubclass(w.category, SummedSeedWarning)]
    for other in (w for w in caught if not issubclass(w.category, SummedSeedWarning)):  # not ours to hold back
        warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
    lines += [f"note: {summed[0]}"] if summed else []
    if explanation is not None and args.explain:
        lines += ["", str(explanation)]
    return lines + _write_files(args, y, seed, explanation, {name: y, **env})


def _present(remark: str | None) -> list[str]:
    """A remark as the lines to print: none when there is none."""
    return [remark] if remark else []


def _environment(assignments: Sequence[str]) -> tuple[dict[str, Value | Vector], dict[str, str]]:
    """The variables the arguments give (``x=1,2``), and each one's argument as written."""
    env: dict[str, Value | Vector] = {}
    written: dict[str, str] = {}
    for assignment in assignments:
        name, value = _variable(assignment)
        if name in env:
            raise CommandError(f"{name} is given twice")
        env[name] = value
        written[name] = assignment.strip()
    return env, written


def _check_given(used: list[str], env: dict[str, Value | Vector], written: dict[str, str]) -> None:
    """Refuse an expression that uses a variable with no value, saying what to write."""
    missing = [name for name in used if name not in env]
    if not missing:
        return
    first, hint = missing[0], ""
    other = _case_hint(first, [name for name in env if name not in used])
    if other is not None:
        hint = f" ({written[other]} gives {other}, which the expression does not use: names are case-sensitive)"
    elif first in CONSTANTS:
        number, write = CONSTANTS[first]
        hint = f" ({NO_CONSTANTS}: {write}, or give {first}={number})"
    raise CommandError(
        f"{', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no value: give e.g. {first}=1.5{hint}"
    )


def _seed(y: Value | Vector, seeds: list[float] | None) -> float | list[float] | None:
    """The seed of the pass from ``--seed``, checked by the seed rules of backward before anything
    is printed, with the command line's hint."""
    if isinstance(y, Value) and seeds is not None:
        if len(seeds) != 1:  # refused, as PyTorch now does; Value.backward sums them with a warning
            total = seeds[0] if seeds else 0.0
            for s in seeds[1:]:
                total = total + s
            sum_of = f": their sum, {total!r}, is what Value.backward would take (with a warning)" if seeds else ""
            raise CommandError(f"the output is a scalar, so --seed takes one number, got {len(seeds)}{sum_of}")
        return seeds[0]
    if isinstance(y, Vector) and y.requires_grad:
        try:
            seeds_for(len(y), seeds, name="--seed", hint=f"e.g. --seed {','.join(['1'] * len(y))}")
        except (RuntimeError, ValueError) as error:
            raise CommandError(str(error)) from None
    return seeds


def _backward(
    y: Value | Vector, seed: float | list[float] | None, env: dict[str, Value | Vector], name: str, explain_it: bool
) -> Explanation | None:
    """Run the pass from ``y`` (if it depends on a variable); its explanation when asked for."""
    if not y.requires_grad:
        return None
    names = {name: y, **env}  # the variables' names win where the output is a variable itself
    explanation = explain(y, seed, names=names) if explain_it else None
    if isinstance(y, Value):
        y.backward(1.0 if seed is None else seed)  # one float for a Value
    else:
        y.backward(seed)  # type: ignore[arg-type]  # a Vector's seed is --seed's list (see _seed)
    return explanation


def _unused_notes(env: dict[str, Value | Vector], used: list[str]) -> list[str]:
    """A note for each variable the expression does not use that differs only in case from one it does."""
    notes = []
    for unused in (name for name in env if name not in used):
        other = _case_hint(unused, used)
        if other is not None:
            notes.append(f"note: the expression does not use {unused} (it uses {other}): names are case-sensitive")
    return notes


def _write_files(
    args: Arguments,
    y: Value | Vector,
    seed: float | list[float] | None,
    explanation: Explanation | None,
    names: dict[str, Value | Vector],
) -> list[str]:
    """Write the ``--dot`` and ``--html`` files asked for; the lines that say so. The picture names
    its boxes as the printed lines and the page do (``names``: the output's, then the variables').
    A page with no pass to step through is refused before any file is written."""
    if args.html is not None and explanation is None:
        raise CommandError("--html needs an output that depends on a variable: there is no pass to step through")
    files: list[tuple[str, Path, str]] = []
    lines = []
    if args.dot is not None:
        with warnings.catch_warnings():  # a summed seed was said above, as a note
            warnings.simplefilter("ignore", SummedSeedWarning)
            files.append(("--dot", args.dot, to_dot(y, seed, names=names)))
        lines.append(f"graph written to {args.dot}")
    if args.html is not None and explanation is not None:
        files.append(("--html", args.html, explanation.to_html(title=args.expression)))
        lines.append(f"page written to {args.html}: open it in a browser to step through the pass")
    _write_whole(files)
    return lines


def _write_whole(files: list[tuple[str, Path, str]]) -> None:
    """Write each ``(option, path, text)``, every text made and every path checked first (a folder,
    or one file named by both options, is refused before any is written). Each is written where its
    path leads, as a shell's ``>`` writes: through a link, into a pipe, keeping the file's
    permissions. A write that fails says which, and what was written before it."""
    for option, path, _ in files:
        if path.is_dir():
            raise CommandError(f"{option} {path}: is a folder; give the name of a file to write")
    if len(files) == 2 and os.path.realpath(files[0][1]) == os.path.realpath(files[1][1]):
        raise CommandError(f"--dot and --html name one file, {files[0][1]}: give each a file of its own")
    done: list[str] = []
    for option, path, content in files:
        try:
            path.write_text(content, encoding="utf-8")
        except OSError as error:
            before = f"; {', '.join(done)} was written" if done else "; no file was written"
            raise CommandError(f"{option} {path}: could not write it ({error.strerror or error}){before}") from None
        done.append(f"{option} {path}")


_SAYS_WHAT_IS_WRONG = (CommandError, ExpressionError, TypeError, ValueError, RuntimeError, OverflowError)
"""Errors whose words say what was wrong (the command line's own, and vjpgrad's): shown as they are."""


COMMANDS = ("course", "cache", "explain-torch")
"""The command line's commands beside its expressions: a first word close to one is named."""
CACHE_HELP = """usage: vjpgrad cache [--clear]

Where vjpgrad.compile keeps the code it writes (VJPGRAD_CACHE_DIR, or the user's cache folder):
its directory, how many entries and how many megabytes; VJPGRAD_CACHE=0 turns it off.

  --clear   remove every entry first, then show the (empty) cache"""


def _cache_command(arguments: list[str]) -> int:
    """``vjpgrad cache``: where compile's code cache is and what it holds; ``--clear`` empties it."""
    if arguments in (["--help"], ["-h"]):
        print(CACHE_HELP)
        return 0
    if arguments not in ([], ["--clear"]):
        print(f"vjpgrad: error: vjpgrad cache takes only --clear, got {' '.join(arguments)!r}", file=sys.stderr)
        return 2
    if arguments == ["--clear"]:
        print(f"removed {cache.clear()} cache files")
    info = cache.info()
    if not info.enabled:
        print("the compiled-code cache is off (VJPGRAD_CACHE)")
        return 0
    # a directory's name is bytes on POSIX: shown with what is not text escaped, never a crash
    shown = "(none)" if info.directory is None else os.fsencode(info.directory).decode("utf-8", "backslashreplace")
    print(f"directory: {shown}")
    print(f"entries: {info.entries} ({info.size / 1e6:.1f} MB)")
    if info.problem is not None:
        print(f"not used: {info.problem}".encode("utf-8", "backslashreplace").decode("utf-8"))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status. An output that cannot hold a character of
    the report (``vjpgrad > out.txt`` in Windows' cp1252: Σ, ∂, a Greek name) gets Python's escape
    for it (``\\u2202``), not a traceback."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")
    try:
        return _main(argv)
    except BrokenPipeError:  # the reader has gone (| head): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 1


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["course"]:  # the course has its own command line: vjpgrad course --help
        return course(arguments[1:])
    if arguments[:1] == ["cache"]:
        return _cache_command(arguments[1:])
    if arguments[:1] == ["explain-torch"]:  # PyTorch's own backward passes, replayed (imports torch)
        from vjpgrad.cli.explain_torch import main as explain_torch

        return explain_torch(arguments[1:])
    if not arguments:
        text, all_agree = report()
        print(text)
        return 0 if all_agree else 1
    options = arguments[: arguments.index("--")] if "--" in arguments else arguments
    if arguments[0] == "-h" or "--help" in options:
        print(_help())
        return 0
    try:
        lines = run(arguments)
    except Exception as error:  # the contract: any failure is one line and exit 2, never a traceback
        message = " ".join(str(error).split()) or type(error).__name__
        if not isinstance(error, _SAYS_WHAT_IS_WRONG):  # anything else is named, as it is unexpected
            message = f"{type(error).__name__}: {message}"
        assigned = {argument.partition("=")[0].strip() for argument in arguments[1:] if "=" in argument}
        meant = difflib.get_close_matches(arguments[0].replace("_", "-"), COMMANDS, n=1, cutoff=0.75)
        if meant and arguments[0] not in assigned:  # no variable of that name: a command's name mistyped
            message += f" (did you mean 'vjpgrad {meant[0]}'?)"
        print(f"vjpgrad: error: {message}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
