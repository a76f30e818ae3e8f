"""``vjpgrad.compile``: record a function once, replay it as generated straight-line Python.

The rule: a compiled function gives exactly the bits eager code gives, or it refuses with
``DataDependentError`` naming the user's file and line. There is no third outcome.

- Compile watches the function's whole world (``world``): everything it can reach from its
  arguments, closure cells, defaults and the globals its code names, transitively through the
  functions and methods it reaches, through attributes, slots, containers (with their lengths
  and order) and classes. Anything there that differs from a recording records anew; a guard
  written as straight-line Python (``guard``) checks it at every call. Python's library,
  installed packages, builtins and C objects' insides are watched by identity only; a world of
  more than ``world.WORLD_LIMIT`` objects and items is refused. Whether a recording is stale
  for a call (and the call records anew) is decided in one place, ``run.Replay.stale_for``.
- Values are data, read at every call. Python and NumPy numbers are structure, keyed by their
  bits (as ``torch.compile`` specializes Python scalars), as are strings, bools, None, the
  arguments' kinds, nesting and lengths, which of their containers are one object, keyword
  arguments' names and order, and grad mode.
  More than ``RECOMPILE_LIMIT`` recordings of one structure that differ only in numbers warn
  (``RecompileWarning``) and run the function uncompiled from then on.
- The first call with a structure runs the function eagerly while the core records every
  operation; that call returns the recorded run's own result (it is eager code). Reading a
  Value's number while recording is refused, and so is any change the call makes to its world
  (a side effect: a replay would not make it).
- ``detach()`` inside is a cut: no gradient passes, the result requires no grad.
- ``f.reset()`` drops every recording; ``f.times_recorded`` counts them.

The modules, in the order the calls use them: the first call with a structure runs ``world``
(what the function can reach), ``record`` (the arguments' structure, one recorded run, what it
read) and ``guard`` (the world's check, as code), and returns the recorded run's result; the
first replay, at the second call, runs ``write`` (the code, from the graph and the table's rules),
``fold`` (a block the recording repeats, written once as a loop or a function) and ``cache`` (the
code kept on disk, read instead of written when this machine compiled it before); ``run`` holds
the recordings and calls and differentiates the code at every call. This package imports the core and
``vjpgrad.codegen`` and the recording hooks; the core never imports it: it meets the core through
those hooks (``vjpgrad.recording``: ``Recording``, ``recorded_graph``, a compiled call's node state
and gradients), ``modes.refusing_numbers`` and the operation's own hooks (``Op.backward``,
``Op.release``, ``Op.whole_pass``).
"""

from vjpgrad.compiler.run import Compiled, compile
from vjpgrad.core.modes import DataDependentError
from vjpgrad.recording import RecompileWarning

__all__ = ["Compiled", "DataDependentError", "RecompileWarning", "compile"]
