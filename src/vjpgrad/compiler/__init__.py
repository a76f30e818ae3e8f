"""``vjpgrad.compile``: record a function once, replay it as generated straight-line Python.

The rule: a compiled function gives exactly the bits eager code gives, or it refuses with
``DataDependentError`` naming the user's file and line. There is no third outcome, for
everything compile can see: the Values and numbers it is given, the Values it reaches, and the
Python numbers, strings and flags it reads on its way to them (below). Like ``jax.jit``, it does
not replay what Python does off that path: randomness (``random.random()``) and the contents of
plain data containers the function reads (a list of floats it closes over) are fixed when it is
recorded; pass such data as arguments.

- The first call with a structure of arguments runs the function eagerly while the core records
  every operation; that call returns the recorded run's own result (it is eager code). The
  code is written and loaded when the recording is first replayed.
- Structure fixes a recording: the kinds, nesting and lengths of the arguments (numbers, Values,
  Vectors, lists, tuples and dicts of them), which of them are the same Value, whether each
  requires grad, the exact value of every int, bool, NumPy integer or bool, string, None or
  other exact number (a Fraction, a NumPy float32), the identity of any other object passed
  (``self``), keyword arguments' names, and grad mode. A new structure is a new recording.
- Floats (and NumPy float64s) and Values are data: a new number replays the same code. A float
  argument is data where it meets a Value (``x * lr``, ``Value(lr)``); where the function uses
  it as a Python number (``lr * 2``, ``lr == 0.0``, ``math.exp(lr)``), it becomes structure,
  so Python computes with the real float, exactly as eager code does.
- Reading a Value's number while recording is refused, whoever made the Value (``.data``,
  ``.grad``, ``float()``, ``int()``, ``.item()``, ``bool()``, ``if`` on a Value, any comparison
  including ``==``, formatting), and so are ``backward()``, ``explain()`` and passes that give
  numbers inside; a refusal caught by the function's own ``except`` still refuses.
- ``detach()`` inside is a cut: no gradient passes, the result requires no grad.
- Parameters are the Values the function reaches without being given them (closed over,
  globals, defaults, attributes of ``self``, of its class or of a module, items of containers).
  Each is found again at every call by every path the recording found it by, and the numbers,
  strings and flags on the way (``self.training``, ``self.temperature``, a global ``LR``) are
  checked: a parameter rebound since, a container of them that changed size, or such a number
  changed makes a new recording, never a stale replay. A Value the function reads but that
  cannot be found this way is refused.
- A Value made inside and kept by the function's objects (a weight made on the first call) is a
  parameter from then on; a Value computed inside or a float argument kept (``self.last = h``),
  or a list or dict argument changed inside (``cache.append(k)``), is refused: a replay would not
  do it again.
- ``f.reset()`` drops every recording; ``f.times_recorded`` counts them.

The modules, in the order a first call uses them: ``record`` (the arguments' structure, one
recorded run, what it read), ``guard`` (where the parameters are), ``write`` (the code, from
the graph and the table's rules), ``run`` (the code loaded, called and differentiated).
This package imports the core and ``vjpgrad.codegen``; the core never imports it: it meets
the core through ``graph.Recording``, ``modes.refusing_numbers`` and ``Op.backward``.
"""

from vjpgrad.compiler.run import Compiled, RecompileWarning, compile
from vjpgrad.core.modes import DataDependentError

__all__ = ["Compiled", "DataDependentError", "RecompileWarning", "compile"]
