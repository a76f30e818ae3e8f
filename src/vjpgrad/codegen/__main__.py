"""``python -m vjpgrad.codegen --write`` (or ``--check``): the eager engine's generated modules."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
    here = Path.cwd() / "src" / "vjpgrad" / "core"
    if here.is_dir() and here.resolve() != eager.CORE:  # a clone, while Python imports another vjpgrad
        print(
            f"python -m vjpgrad.codegen --write writes into the vjpgrad Python imports, {eager.CORE.parent}, "
            f"not this folder's src/vjpgrad: run it as PYTHONPATH=src python -m vjpgrad.codegen --write "
            "(or pip install -e . here first)",
            file=sys.stderr,
        )
        return 2
    for name in eager.write():
        print(f"wrote {eager.CORE / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
