"""``vjpgrad.compile``: record a function once, replay it as generated straight-line Python.

The rule: a compiled function gives exactly the bits eager code gives, or it refuses with
``DataDependentError`` naming the user's file and line. There is no third outcome.

- Structure fixes a recording: the kinds, nesting and lengths of the arguments, which of them
  are the same Value, whether each requires grad, the value (and type) of every int, bool,
  NumPy integer or bool, string, None or other exact number (a Fraction, a NumPy float32), the
  identity of any other object passed (``self``), the names of keyword arguments, and grad
  mode. A new structure is a new recording.
- Floats (and NumPy float64s) and Values are data: a new number replays the same code. A float
  argument is data where it meets a Value (``x * lr``, ``Value(lr)``); where the function uses
  it as a Python number (``lr * 2``, ``lr == 0.0``, ``math.exp(lr)``, ``round(lr)``), it becomes
  structure, so Python computes with the real float, exactly as eager code does.
- Reading a Value's number while recording is refused, whoever made the Value (``.data``,
  ``.grad``, ``float()``, ``int()``, ``.item()``, ``bool()``, ``if`` on a Value, any comparison
  including ``==``, formatting), and so are ``backward()``, ``explain()`` and passes that give
  numbers inside: the recording would fix what they read, and a replay would not do them again.
- ``detach()`` inside is a cut: no gradient passes, the result requires no grad.
- Parameters are the Values the function reaches without being given them (closed over,
  globals, defaults, attributes of ``self`` or of a module). Each is found again at every call by
  every path the recording found it by (``model.layers[0].w[2]``): a parameter rebound since
  (``m.w = Value(5.0)``, a checkpoint loaded) or a list of them that changed length makes a new
  recording, never a stale replay; a Value the function reads but that cannot be found this way
  is refused. A Value made inside and kept by the function's objects (a weight made on the first
  call) is a parameter from then on; a Value computed inside and kept (``self.last = h``), or a
  list argument changed inside (``cache.append(k)``), is refused: a replay would not do it again.
- Other Python state the function reads (a flag, a string attribute, ``random.random()``) is
  fixed when it is recorded, as ``jax.jit`` fixes it: call ``f.reset()`` after changing it.

The modules, in the order a first call uses them: ``record`` (the arguments' structure, one
recorded run, what it read), ``guard`` (where the parameters are), ``write`` (the code, from
the graph and the table's rules), ``run`` (the code loaded, called and differentiated).
This package imports the core and ``vjpgrad.codegen``; the core never imports it: it meets
the core through ``graph.Recording``, ``modes.refusing_numbers`` and ``Op.backward``.
"""

from vjpgrad.compiler.run import Compiled, compile
from vjpgrad.core.modes import DataDependentError

__all__ = ["Compiled", "DataDependentError", "compile"]
