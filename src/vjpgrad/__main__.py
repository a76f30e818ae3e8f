"""The command line: ``python -m vjpgrad`` (or ``vjpgrad``) prints the four documented cases."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from vjpgrad._cases import report


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments:
        text, all_agree = report()
        print(text)
        return 0 if all_agree else 1
    print("vjpgrad: expressions are not supported yet; run without arguments", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
