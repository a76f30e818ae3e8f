"""``python -m vjpgrad``: the command line (``vjpgrad.cli.main``)."""

import sys

from vjpgrad.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
