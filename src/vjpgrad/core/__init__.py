"""The engine: what ``Value(2.0) * 3`` and ``.backward()`` need; and, in ``recording`` above
it, the hooks through which compile and vmap record and replay.

- ``floats``: float functions with PyTorch's results at the edges (inf, nan, -0.0);
- ``ops``: the table of operations: each one's forward and its backward formula, side by side;
- ``operators`` and ``functions``: Value's operators and methods, Vector's methods and the
  module functions, GENERATED from the table (``python -m vjpgrad.codegen --write``);
- ``graph``: how a node is laid out and the one reverse pass that walks it;
- ``value``, ``vector``: the two public types; ``format``: a Vector printed as PyTorch prints;
- ``seeds``: every seed argument read by one rule; ``backward``: a pass run and accumulated;
- ``modes``: per-thread switches (``no_grad``, ``detect_anomaly``) and the refusal of
  reading a number, which ``vjpgrad.compile`` turns on while it records;
- ``recording``: the hooks of ``vjpgrad.compile`` and ``vjpgrad.vmap``, above the engine (which
  never imports it): a function recorded (``Recording``, ``recorded_graph``), and a compiled
  call replayed as one node (its state and its gradients, many at once). With ``graph`` it is
  the only module that reads or writes a node's slots.

The core imports nothing else of vjpgrad. The layers above meet it through public names and
a few documented interfaces: ``graph``'s functions for the passes; for ``vjpgrad.compile``
and ``vjpgrad.vmap``, ``recording`` (what a recording sees, how a replayed call's node keeps its
state), ``modes.refusing_numbers``, and ``Op.backward``, ``Op.release``, ``Op.whole_pass`` (an
operation that runs its own backward, frees its own state, runs a whole pass alone). Nothing
in the core reads a caller's frame except to name the user's line in an error.
"""
