"""The engine: what ``Value(2.0) * 3`` and ``.backward()`` need, and nothing else.

- ``floats``: float functions with PyTorch's results at the edges (inf, nan, -0.0);
- ``ops``: the table of operations: each one's forward and its backward formula, side by side;
- ``operators`` and ``functions``: Value's operators and methods, Vector's methods and the
  module functions, GENERATED from the table (``python -m vjpgrad.codegen --write``);
- ``graph``: how a node is laid out and the one reverse pass that walks it;
- ``value``, ``vector``: the two public types; ``format``: a Vector printed as PyTorch prints;
- ``seeds``: every seed argument read by one rule; ``backward``: a pass run and accumulated;
- ``modes``: per-thread switches (``no_grad``, ``detect_anomaly``) and the refusal of
  reading a number, which ``vjpgrad.compile`` turns on while it records, and ``Recorder``, what
  the core calls on the recording hooks (``vjpgrad.recording``) while a function is recorded.

The core imports nothing else of vjpgrad, not even for a type. The layers above meet it
through public names and a few documented interfaces: ``graph``'s functions for the passes;
for ``vjpgrad.compile`` and ``vjpgrad.vmap``, the recording hooks (``vjpgrad.recording``, on a
line of its own above the core, which the core calls through ``modes.Recorder`` and never
imports), ``modes.refusing_numbers``, and ``Op.backward``, ``Op.release``, ``Op.whole_pass`` (an
operation that runs its own backward, frees its own state, runs a whole pass alone). The
node's slots are ``graph``'s; the generated operators fill new nodes through the lines
``graph.make_inline`` writes, and ``value`` and ``ops.data_of`` read a Value's number from its
slot. Nothing in the core reads a caller's frame except to name the user's line in an error.
"""
