"""The command line, ``python -m vjpgrad`` or ``vjpgrad``.

Without arguments it prints the four documented cases of the seed question, documented
against computed, and exits 0 only when all agree. With an expression it evaluates it over
the variables given and prints the output and every gradient:

    vjpgrad '3*a + 2*b*b + log(c)' a=1,2,3 b=3,4,5 c=6,7,8 --seed 0.1,1,0.0001 --explain

Any problem with the input is one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vjpgrad._cases import report
from vjpgrad._dot import to_dot
from vjpgrad._explain import explain
from vjpgrad._expr import FUNCTIONS, ExpressionError, evaluate, parse, variables
from vjpgrad._value import Value
from vjpgrad._vector import Vector

EXAMPLES = """\
examples:
  vjpgrad                                   the four documented cases of the seed question
  vjpgrad '3*a + 2*b*b + log(c)' a=1,2,3 b=3,4,5 c=6,7,8 --seed 0.1,1,0.0001
  vjpgrad '3*a + 2*b*b + log(c)' a=0.1 b=1 c=0.1           scalars: seeded with 1.0
  vjpgrad 'x * exp(-x)' x=2 --explain                       the chain rule, step by step
  vjpgrad 'sigmoid(w*x + b)' w=0.5 x=2 b=-1 --dot graph.dot

A variable is NAME=NUMBER (a scalar) or NAME=N1,N2,... (a vector; NAME=5, is a vector of
one). The expression may use numbers, variables, + - * / **, parentheses and the
functions exp log sqrt sin cos tan tanh sigmoid relu abs. It is parsed, never run as Python.
"""


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
    return parser.format_help()


_OPTION = re.compile(r"--[A-Za-z][\w-]*(=.*)?")


def read_arguments(arguments: Sequence[str]) -> Arguments:
    """Read the command line by hand: the first word that is not an option is the expression,
    even when it starts with a minus sign ('-x * 2'); only ``--name`` words are options."""
    positionals: list[str] = []
    options: dict[str, str | None] = {}
    words = iter(arguments)
    for word in words:
        if not _OPTION.fullmatch(word):
            positionals.append(word)
            continue
        name, equals, value = word.partition("=")
        if name not in ("--seed", "--dot", "--explain"):
            raise CommandError(f"unrecognized option {name} (the options are --seed, --explain, --dot; see --help)")
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
    dot = options.get("--dot")
    path = None if dot is None else Path(dot)
    return Arguments(positionals[0], positionals[1:], options.get("--seed"), "--explain" in options, path)


def _numbers(text: str, what: str) -> list[float]:
    items = text.split(",")
    if items and items[-1] == "" and len(items) > 1:
        items = items[:-1]  # "5," is a vector of one
    numbers = []
    for item in items:
        try:
            numbers.append(float(item))
        except ValueError:
            raise CommandError(f"{what}: {item.strip()!r} is not a number") from None
    return numbers


def _variable(assignment: str) -> tuple[str, Value | Vector]:
    name, equals, text = assignment.partition("=")
    name = name.strip()
    if not equals:
        raise CommandError(f"{assignment!r} is not an assignment: write NAME=VALUES, e.g. x=1.5 or v=1,2,3")
    if not name.isidentifier() or keyword.iskeyword(name):
        raise CommandError(f"{name!r} is not a variable name")
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


def run(arguments: Sequence[str]) -> int:
    """Evaluate an expression from command-line arguments; print output and gradients."""
    args = read_arguments(arguments)
    tree = parse(args.expression)
    env: dict[str, Value | Vector] = {}
    for assignment in args.assignments:
        name, value = _variable(assignment)
        if name in env:
            raise CommandError(f"{name} is given twice")
        env[name] = value
    missing = [name for name in variables(tree) if name not in env]
    if missing:
        raise CommandError(
            f"{', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no value: give e.g. {missing[0]}=1.5"
        )
    y = evaluate(tree, env)
    if not isinstance(y, (Value, Vector)):  # an expression of constants alone
        y = Value(float(y), requires_grad=False)
    seeds = None if args.seed is None else _numbers(args.seed, "--seed")
    seed: float | list[float] | None = seeds
    if isinstance(y, Value) and seeds is not None:
        if len(seeds) != 1:
            raise CommandError(f"the output is a scalar, so --seed takes one number, got {len(seeds)}")
        seed = seeds[0]
    print(f"y = {_show(y)}")
    explanation = None
    if y.requires_grad:
        explanation = explain(y, seed, names=env) if args.explain else None
        if isinstance(y, Value):
            y.backward(1.0 if seed is None else seed)  # type: ignore[arg-type]
        else:
            y.backward(seed)
    for name, value in env.items():  # 0.0 for a variable the output does not depend on
        print(f"{name}.grad = {_show(value.grad)}")
    if explanation is not None:
        print()
        print(explanation)
    if args.dot is not None:
        args.dot.write_text(to_dot(y, seed))
        print(f"graph written to {args.dot}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments:
        text, all_agree = report()
        print(text)
        return 0 if all_agree else 1
    if arguments[0] in ("-h", "--help"):
        print(_help())
        return 0
    try:
        return run(arguments)
    except Exception as error:  # the contract: any failure is one line and exit 2, never a traceback
        message = " ".join(str(error).split()) or type(error).__name__
        if not isinstance(error, (CommandError, ExpressionError)):
            message = f"{type(error).__name__}: {message}"
        print(f"vjpgrad: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
