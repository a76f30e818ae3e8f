"""Seeing a reverse pass: as data, text, notebook HTML, a stepper page and a picture.

- ``explain``: the pass step by step, as data (``Explanation``, ``Step``), run by the core's
  own ``graph.propagate``; its ``str()`` is the table;
- ``text``: how every view writes a number and the table of steps (one place for both);
- ``notebook``: rich display in Jupyter (gives Value and Vector their ``_repr_html_``);
- ``stepper``: one self-contained HTML page that steps through the pass (offline, escaped);
- ``dot``: Graphviz DOT text and drawings (Graphviz's when installed, else pure Python in the
  stepper's layout).

Imports go one way: ``text`` <- ``notebook``, ``stepper`` <- ``explain`` <- ``dot``. The core
never imports this package.
"""
