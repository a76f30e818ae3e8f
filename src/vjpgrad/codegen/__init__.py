"""Writing code from the table of operations: the eager engine's modules and compile's lines.

- ``symbols``: the table's rules called with names instead of numbers write code (``Code``);
- ``eager``: writes ``core/operators.py`` and ``core/functions.py`` from the table
  (``python -m vjpgrad.codegen --write``; ``--check`` in CI).

``vjpgrad.compiler`` writes a recorded function's code with the same symbols. This package
imports the core and nothing above it; the core never imports it (it imports the files this
package wrote).
"""
