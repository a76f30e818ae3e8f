"""``vjpgrad.compile``: record a function once, replay it as generated straight-line Python.

The rule: a compiled function gives exactly the bits eager code gives, or it refuses with
``DataDependentError`` naming the user's file and line. There is no third outcome.

- Structure fixes a recording: the kinds, nesting and lengths of the arguments, which of them
  are the same Value, whether each requires grad, the value of every int, bool, NumPy integer
  or bool, string or None argument, the identity of any other object passed (``self``), the
  names of keyword arguments, and grad mode. A new structure is a new recording.
- Floats, NumPy floats and Values are data: a new number replays the same code. A Value made
  inside from a float argument (``Value(lr)``) holds that argument's number at every call.
- Reading a Value's number while recording (``.data``, ``.grad``, ``float()``, ``int()``,
  ``.item()``, ``bool()``, ``if`` on a Value, any comparison including ``==``, formatting) is
  refused, whoever made the Value: the recording would fix the branch or the number it read.
- ``detach()`` inside is a cut: no gradient passes, the result requires no grad.
- Parameters are the Values the function reaches without being given them (closed over,
  globals, attributes of ``self``). Each is found again at every call by the path the
  recording found it by (``model.layers[0].w[2]``): a parameter rebound since
  (``m.w = Value(5.0)``, a checkpoint loaded) or a list of them that changed length makes a
  new recording, never a stale replay. Other Python state the function reads (a flag, a
  string attribute) is fixed when it is recorded, as ``jax.jit`` fixes it: call
  ``f.reset()`` after changing such state.

The modules, in the order a first call uses them: ``record`` (the arguments' structure, one
recorded run, what it read), ``guard`` (where the parameters are), ``write`` (the code, from
the graph and the table's rules), ``run`` (the code loaded, called and differentiated).
This package imports the core and ``vjpgrad.codegen``; the core never imports it: it meets
the core through ``graph.Recording``, ``modes.refusing_numbers`` and ``Op.backward``.
"""

from vjpgrad.compiler.run import Compiled, compile
from vjpgrad.core.modes import DataDependentError

__all__ = ["Compiled", "DataDependentError", "compile"]
