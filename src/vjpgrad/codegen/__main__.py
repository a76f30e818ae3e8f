"""``python -m vjpgrad.codegen --write`` (or ``--check``): the eager engine's generated modules."""

from __future__ import annotations

import argparse
import sys

from vjpgrad.codegen import eager


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vjpgrad.codegen", description=__doc__)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--write", action="store_true", help="write core/operators.py, core/functions.py and core/powers.py"
    )
    action.add_argument("--check", action="store_true", help="exit 1 if they differ from what the table writes")
    args = parser.parse_args(argv)
    if args.check:
        stale = eager.stale()
        for name in stale:
            print(f"vjpgrad/core/{name} is not what the table writes: run python -m vjpgrad.codegen --write")
        return 1 if stale else 0
    for name in eager.write():
        print(f"wrote vjpgrad/core/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
