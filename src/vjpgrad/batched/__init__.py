"""``vjpgrad.vmap``: the same recorded code run once on a column of samples (NumPy arrays).

It sits above the compiler's layer and beside it: it records a function through the recording
hooks as ``vjpgrad.compile`` does (``vjpgrad.recording``'s ``Recording`` and ``recorded_graph``,
``modes.refusing_numbers``) and writes array code from the recorded graph and the table.

- ``arrays``: NumPy, imported lazily, and the helpers array code calls, exact and fast;
- ``templates``: each op of the table as array code (forward templates by op name; the
  table's backward rules called on array symbols);
- ``write``: the forward and reverse passes of a recorded graph as array code;
- ``statements``: that code's statements as data, the rewrites decided from them, and their text;
- ``workspace``: the arrays of a program's previous call, written into by the next;
- ``run``: ``vmap`` (arguments, recording, chunks, results) and ``batch_sum``.
"""

from vjpgrad.batched.run import Vmapped, batch_sum, vmap

__all__ = ["Vmapped", "batch_sum", "vmap"]
