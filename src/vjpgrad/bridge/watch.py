"""``watch_torch()``: record the learner's PyTorch code as it runs, and replay each backward pass.

Two hooks see everything, and change nothing PyTorch computes:

- a ``TorchDispatchMode`` sees each ATen operation with its arguments and results, in order
  (under autograd: the forward only; the mode is off while PyTorch's backward runs, whose
  formulas for max, min, median and prod take another branch under any mode), and ``replay``
  makes its result's nodes;
- ``torch.autograd.backward`` (which ``Tensor.backward`` calls) is wrapped: the real backward
  runs first, then the pass is replayed from the recorded graph with the same seed and each
  leaf's ``.grad`` is compared with PyTorch's, element by element, bit by bit.

A tensor is known by its identity (the watch keeps every tensor it saw alive, so an id is never
reused). A tensor whose numbers changed where the watch did not see it (through ``.data``, or
in place through another view of its memory) is noticed at its next use: a leaf is read again;
anything else cannot be replayed, and says so.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import inspect
import itertools
import math
import os
import re
import struct
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch.utils import _python_dispatch
from torch.utils._python_dispatch import TorchDispatchMode

import vjpgrad.bridge.replay as replay
from vjpgrad.bridge import TorchReplayError
from vjpgrad.bridge.passes import LeafReport, Pass
from vjpgrad.bridge.replay import (
    MATMUL32_NOTE,
    MATMUL_NOTE,
    PROCESSOR_NOTES,
    Call,
    Entry,
    Item,
    NotReplayableError,
    fingerprint,
    is_single,
    numbers_of,
    numbers_of_index,
)
from vjpgrad.bridge.single import Single, in_dtype, ulps
from vjpgrad.compiler.record import collection_paused  # the watch keeps every node alive, as a recording does
from vjpgrad.compiler.world import installed_file  # the learner's file or an installed one, as compile tells them
from vjpgrad.core import graph
from vjpgrad.core.modes import is_own_code
from vjpgrad.core.value import Value
from vjpgrad.core.vector import Vector
from vjpgrad.display.explain import Arguments, Explanation, explained
from vjpgrad.display.text import printable

NO_GRADIENT = {
    # operations whose result takes no gradient from their operands (shapes, randomness, masks)
    "detach", "lift_fresh", "zero_", "fill_", "ones_like", "zeros_like", "empty_like", "full_like", "rand_like",
    "randn_like", "new_zeros", "new_ones", "new_empty", "new_full", "normal_", "uniform_", "bernoulli_",
    "random_", "sign", "sgn", "floor", "ceil", "round", "trunc", "_local_scalar_dense", "eq", "ne", "lt", "le",
    "gt", "ge", "isnan", "isinf", "isfinite", "argmax", "argmin", "logical_not", "logical_and", "logical_or",
}  # fmt: skip
MATRIX_PRODUCTS = {"mm", "mv", "dot", "addmm", "bmm"}
VERSIONS_NOTE = (
    "a leaf the pass reached as it was before a change in place under no_grad and after (several versions of one "
    ".grad): PyTorch adds the part of each use of every version one at a time, newest first, where the replay "
    "adds each version's sum, which may round apart by an ulp"
)
"""A reason a leaf reached in several versions may differ (``_through_generations``)."""

OFF_PATH_NOTE = (
    "an element no path of the pass reaches: PyTorch's gradient is dense, a selection's backward (split's "
    "and unbind's for the parts the pass does not use) fills the elements it did not "
    "pick with 0, and the operations before it "
    "multiply that 0 (0 times a negative number is -0.0; with an infinity or a nan, nan), where the replay "
    "gives such an element 0.0"
)
SUM_NOTE = (
    "a sum of many numbers (or along an outer dimension), which PyTorch's kernels may add in an order "
    "the replay does not follow"
)

NAN_SIGNS_NOTE = (
    "a nan's sign and payload, which IEEE 754 leaves to the machine code: where two nans meet in an "
    "addition or a product, the result is one or the other, and PyTorch's kernels and Python choose apart "
    "(CPython 3.11 and later even between a line's first runs and its later ones)"
)

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # vjpgrad's package directory
_TORCH = os.path.dirname(os.path.abspath(torch.__file__))


LARGEST = 100_000
"""The most elements a tensor may have for the watch to replay it element by element: past it, a
learner's script would wait minutes for Values it could never read."""


def too_large(t: torch.Tensor, how: str = "made") -> str:
    """Why a tensor of more than ``LARGEST`` elements is not replayed, and where the learner's code
    ``how`` ("made" or "read") it."""
    return (
        f"a tensor of {t.numel():,} elements, {how} at {user_location()}: the watch replays tensors of up to "
        f"{LARGEST:,} elements, one node each"
    )


KERNELS = "ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX"
"""The settings under which PyTorch runs the kernels the replay follows on any x86-64 processor
with AVX2: ATen's AVX2 kernels, and Intel MKL's AVX path for matrix products (set before PyTorch
starts: in the shell, before the script)."""


def kernels_note(matrix: bool) -> str:
    """What a pass that differs says where PyTorch runs kernels other than those the replay follows
    (an AVX-512 processor, with ``KERNELS`` not set): how to see the pass with those, and, for a
    pass with a ``matrix`` product, that one may differ even so; "" where it runs them."""
    capability = torch.backends.cpu.get_cpu_capability()
    wide = getattr(torch.cpu, "_is_avx512_supported", lambda: False)()
    if capability == "AVX2" and not (wide and os.environ.get("MKL_CBWR", "").upper() != "AVX"):
        return ""
    products = " (a matrix product may still differ in its last bits: the reasons above name it)" if matrix else ""
    return (
        f"(PyTorch ran this processor's own kernels ({capability}{', MKL on its widest path' if wide else ''}), "
        f"some of which add in another order than the replay follows: run the script with {KERNELS} set, "
        f"for instance `{KERNELS} vjpgrad explain-torch script.py`, to see it with the ones it follows{products})"
    )


def _too_large(t: torch.Tensor, reason: str) -> Entry:
    """The entry of a tensor of more than ``LARGEST`` elements (``reason``: ``too_large``'s): one
    that takes gradient cannot be replayed; constants (a dataset) are not held, and what takes no
    gradient from them (a batch cut from it, its size) is more constants, read from PyTorch's
    results; only an operation that takes gradient and reads them (``w @ dataset.T``) is not
    replayed, saying why."""
    if t.requires_grad:
        return Entry(t, [], is_single(t), b"", poisoned=reason)
    return Entry(t, [], is_single(t), b"", large=reason)


def user_location() -> str:
    """``file:line`` of the learner's code that is running (the first frame outside torch,
    vjpgrad and the standard library's context managers)."""
    return where(_user_frame())


def where(frame: types.FrameType | None) -> str:
    """``file:line`` of ``frame``, as every line of the watch names a place: the file's name
    ``printable`` (a path's terminal escape codes written ``\\x1b``, never raw)."""
    return "<unknown>" if frame is None else printable(f"{frame.f_code.co_filename}:{frame.f_lineno}")


def _learners_code(code: types.CodeType) -> bool:
    """Whether ``code`` is the learner's: outside torch, vjpgrad (whole path components: a learner's
    ``vjpgrad_user/`` is theirs), Python's frozen modules and the standard library's context
    managers, runner and partials."""
    path = os.path.abspath(code.co_filename)
    if path.startswith((_HERE + os.sep, _TORCH + os.sep)) or code.co_filename.startswith("<frozen"):
        return False
    return os.path.basename(path) not in ("contextlib.py", "runpy.py", "functools.py")


def _user_frame() -> types.FrameType | None:
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and not _learners_code(frame.f_code):
        frame = frame.f_back
    return frame


@dataclasses.dataclass(frozen=True)
class _Raised:
    """An error a pass raised, as its summary says it: its first line, and the line of the learner's
    own code PyTorch's pass called (a hook, a custom ``Function``'s backward) that it came out of,
    if any (raised there, or by what that line called: ``json.dumps``, a PyTorch operation); else
    an installed function PyTorch's pass called as a hook (``register_hook(json.dumps)``)."""

    message: str  # "ValueError: no" (its class as a traceback names it), or PyTorch's words
    raised_in: str = ""  # "mine (hook.py:6)": the learner's innermost frame in its traceback (or the library's)
    by_library: bool = False  # no frame of the learner's: an installed function PyTorch's pass called raised it

    @classmethod
    def of(cls, error: BaseException) -> _Raised:
        """``error``, caught around PyTorch's call: its traceback runs from the watch's frame inward,
        so a frame in it of code neither PyTorch's nor vjpgrad's is code PyTorch's pass called; of
        those, the learner's innermost (``installed_file`` tells an installed package's file from
        theirs, as compile does), else the outermost, the installed function PyTorch called."""
        try:
            lines = str(error).splitlines()
        except Exception:  # the learner's __str__ raised: said as Python's traceback says it
            lines = ["<exception str() failed>"]
        first = printable(next((line for line in lines if line.strip()), ""))  # ("\nsecond line": its second)
        frames: list[tuple[types.CodeType, int]] = []
        tb = error.__traceback__
        while tb is not None:
            frames.append((tb.tb_frame.f_code, tb.tb_lineno))
            tb = tb.tb_next
        called = [(code, line) for code, line in frames if _learners_code(code)]
        learners = [(code, line) for code, line in called if not installed_file(code.co_filename)]
        if not called:  # PyTorch's words, as the other lines of a refused pass quote them
            return cls(first or type(error).__name__)
        code, line = learners[-1] if learners else called[0]
        raised_in = f"{printable(code.co_name)} ({printable(f'{code.co_filename}:{line}')})"
        kind = printable(_class_name(type(error)))
        return cls(f"{kind}: {first}" if first else kind, raised_in, by_library=not learners)

    def fields(self) -> dict[str, Any]:
        """What a ``Pass`` that raised holds of it."""
        return {"pytorch_error": self.message, "raised_in": self.raised_in, "raised_by_library": self.by_library}


def _class_name(kind: type[BaseException]) -> str:
    """An exception's class as a traceback names it: ``ValueError``, ``mymodule.MyError``."""
    module = kind.__module__
    if not isinstance(module, str):
        module = "<unknown>"
    return kind.__qualname__ if module in ("builtins", "__main__") else f"{module}.{kind.__qualname__}"


def _unfinished(raised: _Raised, ran: list[str] | None) -> str:
    """Why a call that raised is not replayed: the learner's code (``raised.raised_in``), a
    function PyTorch called, or PyTorch stopped it; and the ``.grad`` of the leaves the watch knows
    that PyTorch had added into before (``ran``), where that stays. Nothing is said of a ``.grad``
    the watch does not know (of a graph made before it) or could not read."""
    who = "that function" if raised.by_library else "your code"
    if raised.raised_in and ran:
        return (
            f"PyTorch's pass stopped where {who} raised, after adding into {', '.join(ran)}: a pass PyTorch "
            "did not finish is not replayed, and what it added before the error stays there"
        )
    if raised.raised_in:
        return f"PyTorch's pass stopped where {who} raised: a pass PyTorch did not finish is not replayed"
    if ran:
        return (
            f"PyTorch raised during its pass, after adding into {', '.join(ran)}: a pass PyTorch did not "
            "finish is not replayed, and what it added before its error stays there"
        )
    # (whether PyTorch's engine had begun is not said: the engine's checks of its arguments and its
    # refusals mid-pass, of a graph already freed or of a hook's result, raise from the same frame)
    return "PyTorch stopped at its error, so there is no finished pass to replay"


_EVAL_FRAME = os.path.join("torch", "_dynamo", "eval_frame.py")  # how its file's name ends, wherever torch is


def compiled_call() -> str | None:
    """Where the learner called a ``torch.compile``'d function or module that is running now (the
    first line outside PyTorch above its wrapper), or None. PyTorch turns ``torch.compile`` off while
    a dispatch mode watches, so under the watch it runs as eager PyTorch: its wrapper's frame
    (``_TorchDynamoContext.__call__``'s, its ``self`` a context that compiles, not one that disables
    it) is what shows it. Each frame's file is compared first: the frame's locals are read only for
    PyTorch's ``eval_frame.py``."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(_EVAL_FRAME) and _compiles(frame.f_locals.get("self")):
            caller = frame.f_back
            while caller is not None and os.path.abspath(caller.f_code.co_filename).startswith(_TORCH + os.sep):
                caller = caller.f_back
            return where(caller)
        frame = frame.f_back
    return None


def _compiles(context: Any) -> bool:
    """Whether ``context`` is a ``torch.compile`` context that compiles (not ``torch.compiler.disable``'s)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    dynamo = getattr(eval_frame, "_TorchDynamoContext", None)
    disable = getattr(eval_frame, "DisableContext", None)
    return dynamo is not None and isinstance(context, dynamo) and not (disable and isinstance(context, disable))


_WRAPPERS = ("torch._compile", "torch._dynamo", "torch.utils._contextlib", "torch.overrides", "torch._jit_internal")
"""PyTorch's modules of wrappers (a decorator's ``inner``, grad mode's ``decorate_context``): a frame
of theirs names no function the learner called."""


def _inside() -> str:
    """`` (inside torch.nn.GRU)``: the PyTorch module or function the learner's line called, where
    an operation they did not write themselves runs inside it (the outermost frame of PyTorch's
    Python code under the learner's, wrappers aside); "" where there is none (a function of
    PyTorch's written in C)."""
    user = _user_frame()
    frame: types.FrameType | None = sys._getframe(1)
    called = None
    while frame is not None and frame is not user:
        module = frame.f_globals.get("__name__", "")
        if os.path.abspath(frame.f_code.co_filename).startswith(_TORCH + os.sep) and not module.startswith(_WRAPPERS):
            called = frame
        frame = frame.f_back
    if called is None or user is None:
        return ""
    owner = called.f_locals.get("self")
    if isinstance(owner, torch.optim.Optimizer):  # its step, through the decorator PyTorch wraps it in
        return f" (inside torch.optim.{type(owner).__name__})"
    if isinstance(owner, torch.nn.Module):
        kind = type(owner)
        named = f"torch.nn.{kind.__name__}" if kind.__module__.startswith("torch.") else f"{kind.__name__}'s forward"
        return f" (inside {named})"
    if isinstance(owner, torch.Tensor):
        return f" (inside torch.Tensor.{called.f_code.co_name})"
    return f" (inside {called.f_globals.get('__name__', 'torch')}.{called.f_code.co_name})"


def _through_torch_func() -> bool:
    """Whether the learner's call reached ``torch.autograd.grad`` through ``torch.func`` (its
    ``grad``, ``vjp``, ``jacrev`` ... call it from ``torch/_functorch``): the pass is then named
    as the transform, not as a call the learner never wrote."""
    functorch = os.path.join(_TORCH, "_functorch") + os.sep
    user = _user_frame()
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and frame is not user:
        if os.path.abspath(frame.f_code.co_filename).startswith(functorch):
            return True
        frame = frame.f_back
    return False


def _name(short: str) -> str:
    return short


CHANGES_KEPT = 100
"""The changes in place the watch keeps, the latest (``Watch._changed``): a pass PyTorch refuses for
one of them names it (``Watch._changes``)."""

_STALE = re.compile(
    r"\[(?P<type>[\w.]+) \[(?P<shape>[\d, ]*)\]\](?:, which is output \d+ of (?P<fn>[\w:]+),)? "
    r"is at version (?P<now>\d+); expected version (?P<then>\d+) instead"
)
"""What PyTorch's "modified by an inplace operation" says of the tensor: its type and shape, the
operation that made it (none for a leaf), and its version now and when the pass saved it."""

_VIEWS = frozenset({
    "AsStrided", "T", "Transpose", "Permute", "View", "Expand", "Select", "Slice", "Squeeze", "Unsqueeze", "Alias",
    "Diagonal", "Unfold", "Unbind", "Split", "SplitWithSizes", "Narrow",
})  # fmt: skip
"""The operations whose result is a view of their operand, as PyTorch's messages name them."""

_ACTIVATIONS = frozenset({
    "relu_", "relu6_", "leaky_relu_", "elu_", "celu_", "selu_", "silu_", "mish_", "hardtanh_", "hardswish_",
    "hardsigmoid_", "threshold_", "rrelu_",
})  # fmt: skip
"""The in-place activations a module runs with ``inplace=True`` (``nn.ReLU(inplace=True)``)."""

_OPERATORS = {"add_": "+=", "sub_": "-=", "mul_": "*=", "div_": "/=", "pow_": "**="}
"""The in-place operations a learner writes as an operator, said both ways (``h += 1`` is ``add_``);
an assignment into a part (``x[0] = 1.0``) is said ``[...] =`` beside PyTorch's ``copy_``, ``fill_``
or ``index_put_``."""


def _as_written(op: str) -> str:
    """An in-place operation in PyTorch's name and as the learner may have written it: ``add_ or
    +=``, ``[...] = (index_put_)``; any other by PyTorch's name."""
    if op == "index_put_":
        return f"[...] = ({op})"  # x[mask] = 0.0, y[idx] = v * 2: an assignment into a part
    return f"{op} or {_OPERATORS[op]}" if op in _OPERATORS else op


def _fn_name(function: Any) -> str:
    """A node of PyTorch's graph by the name its messages use: ``Exp`` for ``ExpBackward0``,
    ``CopySlices`` for ``torch::autograd::CopySlices``; "" for none (a leaf, constants)."""
    if function is None:
        return ""
    name = function if isinstance(function, str) else type(function).__name__
    return re.sub(r"Backward\d*$", "", name.rsplit("::", 1)[-1])


@dataclasses.dataclass
class _Change:
    """A change in place the watch saw: the operation (``mul_``), the learner's line, the PyTorch
    module or function it ran inside ("" for the learner's own line), the tensor changed and its
    base (a view's), the version of their counter before the change, and the nodes of PyTorch's
    graph that had made them (none for a leaf or constants)."""

    op: str
    location: str
    inside: str
    tensor: torch.Tensor
    base: torch.Tensor | None
    version: int
    made_by: tuple[Any, ...]

    @classmethod
    def of(cls, func: Any, t: torch.Tensor) -> _Change:
        base = t._base
        made_by = tuple(x.grad_fn for x in (t, base) if x is not None and x.grad_fn is not None)
        return cls(op_name(func).split(".")[0], user_location(), _inside(), t, base, _version(t), made_by)

    @property
    def changed(self) -> torch.Tensor:
        """The tensor the learner changed: a view's base, or the tensor itself."""
        return self.base if self.base is not None else self.tensor

    @property
    def spelled(self) -> str:
        """The change, in PyTorch's name and as the learner may have written it: ``mul_ or *=``,
        ``[...] = (copy_)`` on their own line; PyTorch's name alone inside PyTorch's code (an
        optimizer's step)."""
        if self.inside:
            return self.op
        if self.op in ("copy_", "fill_") and self.base is not None:
            return f"[...] = ({self.op})"  # x[0] = 1.0: an assignment into a part
        return _as_written(self.op)

    def advice(self, name: str | None, call: str, saved_leaf: bool) -> tuple[str, str]:
        """What happened, and what the learner can write instead, ``name`` being the tensor's (None:
        it has none where the pass was called): for a weight (a leaf that requires grad) changed
        between the forward pass and this one, an optimizer's step after the pass; for an input
        (PyTorch's message names no operation that made what it saved, ``saved_leaf``), the forward
        pass run again; for a part assigned into, a new tensor made whole; else the operation that
        makes a new tensor, where there is one."""
        changed = self.changed
        it, copy = (name, f"{name} = {name}.clone()") if name else ("it", "a .clone() of it")
        if changed.is_leaf and changed.requires_grad:
            return "Changed in place after the forward pass read it", (
                f"Step {it} after the last {call} through this graph (an optimizer's step), or run the forward "
                f"pass again after the change"
            )
        if saved_leaf:
            return "Changed in place after the forward pass read it", (
                f"Run the forward pass again after changing {it}, or change a copy ({copy} before the change)"
            )
        if self.spelled.startswith("[...] ="):
            return "Changed in place after the forward pass saved it", (
                f"Make a new tensor rather than assign into a part of {it} (torch.where, torch.cat), or assign "
                f"into a copy ({copy} before the assignment)"
            )
        made = self.op[:-1]
        instead = f" ({made}, not {self.op})" if not made.startswith("_") and hasattr(torch.Tensor, made) else ""
        module = "; inplace=False for the module" if self.op in _ACTIVATIONS else ""
        return "Changed in place after the forward pass saved it", (
            f"Make a new tensor rather than change {it} in place{instead}{module}, or change a copy ({copy} before "
            "the change)"
        )

    def explains(self, stale: re.Match[str], tier: int) -> bool:
        """Whether this change may be the one PyTorch's message ``stale`` names: it moved that
        version counter (now at the version the message says, made after the pass saved it), on a
        tensor (or its base) of the type the message says, and by ``tier``: 0, of its shape and
        made by the operation it names; 1, of its shape (a ``detach()`` of it shares the counter);
        2, of its dimensions reversed (a view of it, ``W.t()``, saved by a matrix product); 3, of as
        many elements (another view)."""
        now, then = int(stale["now"]), int(stale["then"])
        if not (_version(self.tensor) == now and then <= self.version < now):
            return False
        tensors = [x for x in (self.tensor, self.base) if x is not None]
        if stale["type"] not in {x.type() for x in tensors}:
            return False
        shape = [int(n) for n in stale["shape"].split(",") if n.strip()]
        if tier == 2:  # a transposed view (``W.t()``, saved by a matrix product): its dimensions reversed
            return shape[::-1] in [list(x.shape) for x in tensors]
        if tier == 3:  # another view of as many elements
            return math.prod(shape) in {x.numel() for x in tensors}
        if shape not in [list(x.shape) for x in tensors]:
            return False
        names = {_fn_name(node) for node in self.made_by} | {_fn_name(x.grad_fn) for x in tensors}
        return tier == 1 or _fn_name(stale["fn"] or "") in names

    def reached(self, nodes: set[int], variables: set[int]) -> bool | None:
        """Whether the refused pass's graph holds this change's tensor (its node, or for a leaf the
        node that accumulates into it: ``nodes``, ``variables``, ids); None where it cannot tell (a
        tensor no graph holds: an input, constants)."""
        if self.made_by:
            return any(id(node) in nodes for node in self.made_by)
        changed = self.changed
        if changed.is_leaf and changed.requires_grad:
            return id(changed) in variables
        return None


def _walk(starts: list[Any], follow: Callable[[Any], bool] = lambda node: True) -> tuple[list[Any], set[int], set[int]]:
    """The nodes of PyTorch's graph reached from ``starts`` through the nodes ``follow`` lets a walk
    go on from, their ids, and the leaves among them that a pass accumulates into (ids)."""
    found: list[Any] = []
    nodes: set[int] = set()
    variables: set[int] = set()
    stack = list(starts)
    while stack:
        node = stack.pop()
        if node is None or id(node) in nodes:
            continue
        found.append(node)
        nodes.add(id(node))
        variable = getattr(node, "variable", None)
        if variable is not None:
            variables.add(id(variable))
        if follow(node):
            stack.extend(after for after, _ in node.next_functions)
    return found, nodes, variables


def _stale_neighbours(graph_nodes: list[Any]) -> tuple[set[int], set[int]] | None:
    """The nodes whose saved tensors a change in place made stale (reading one raises PyTorch's own
    "modified by an inplace operation"), with the nodes and leaves they read, through views (ids):
    where the tensor changed is. None where no node says so."""
    stale = [node for node in graph_nodes if _holds_a_stale_tensor(node)]
    if not stale:
        return None
    first = {id(node) for node in stale}  # the operands of a stale node, then on through views
    _, nodes, variables = _walk(stale, lambda node: id(node) in first or _fn_name(node) in _VIEWS)
    return nodes, variables


def _narrowed(found: list[_Change], roots: Sequence[Any]) -> list[_Change]:
    """Of the changes that may be the one PyTorch names, those by a node of the refused pass's graph
    whose saved tensor went stale (``_stale_neighbours``), then those the graph holds at all; all of
    them where none is."""
    graph_nodes, nodes, variables = _walk([r.grad_fn for r in roots if isinstance(r, torch.Tensor)])
    near = _stale_neighbours(graph_nodes)
    if near is not None:
        found = [c for c in found if c.reached(*near) is True] or found
    return [c for c in found if c.reached(nodes, variables) is True] or found


def _holds_a_stale_tensor(node: Any) -> bool:
    """Whether a node of PyTorch's graph saved a tensor changed in place since (PyTorch's pass would
    refuse to read it)."""
    for name in dir(node):
        if name.startswith("_saved_"):
            try:
                getattr(node, name)
            except RuntimeError as error:
                if "modified by an inplace operation" in str(error):
                    return True
            except Exception:  # a saved value this version of PyTorch cannot hand back
                continue
    return False


def op_name(func: Any) -> str:
    """``mul.Tensor``: an ATen operation's name and overload."""
    return f"{func._schema.name.split('::')[-1]}.{func._overloadname}"


def _tensors(x: Any) -> Iterator[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y)


def _dynamo_forgets() -> None:
    """Clear what Dynamo remembers of the code it ran uncompiled under the watch: called first under
    a dispatch mode, a ``torch.compile``'d function's code is skipped for good, and after the watch
    the program ran it eagerly, its gradients eager PyTorch's. Cleared, its next call compiles."""
    dynamo = sys.modules.get("torch._dynamo")
    reset = getattr(dynamo, "reset", None)
    if reset is not None:
        reset()


UNCOMPILED = (
    "torch.compile: the function called at {} ran uncompiled under the watch (PyTorch turns torch.compile "
    "off while a dispatch mode watches), so every 'PyTorch's' above is eager PyTorch's. Run without the "
    "watch, its compiled kernels fuse and reorder operations, and the gradients your program computes may "
    "differ from these in their last bits."
)
"""What the summary says where a ``torch.compile``'d function ran under the watch."""


_UNINITIALISED = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})
"""The operations whose results hold whatever was in memory (``torch.empty``)."""

_UNWRITTEN_NOTE = (
    "{}: made by torch.empty, and nothing wrote to {} since: the numbers are whatever was in memory, so they, "
    "and the gradients they take part in, change from run to run (torch.zeros, torch.ones or torch.tensor give "
    "numbers of your own)"
)
"""The line under a pass whose leaves ``torch.empty`` made and nothing wrote (case 3 of the question,
as its answer writes it)."""


UNWRITTEN_LIMIT = 10_000
"""The largest tensor of ``torch.empty``'s whose numbers the watch keeps, to tell whether anything
wrote them (a learner's leaf made so is a few numbers; a layer's weight is written by its
initialiser)."""


def _memory(t: torch.Tensor) -> int | None:
    """Where a tensor's memory begins (its storage's, shared by its views, a ``detach()`` and an
    ``nn.Parameter`` made of it); None for a tensor with no storage of its own to read (sparse)."""
    if t.layout != torch.strided:
        return None
    return int(t.untyped_storage().data_ptr())


def _bits(t: torch.Tensor) -> bytes:
    """The bits of a tensor's numbers (nan's among them), and its type."""
    return fingerprint(t, numbers_of(t))


def _seeded_vector(roots: Sequence[Any], seeds: Sequence[Any]) -> bool:
    """Whether a pass started from one tensor of several elements with the learner's gradient
    argument (``y.backward(v)``): what its summary explains as a vector-Jacobian product."""
    return len(roots) == 1 and isinstance(roots[0], torch.Tensor) and roots[0].numel() > 1 and seeds[0] is not None


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


_TORCH_HOME = os.path.join(os.path.dirname(torch.__file__), "")
"""Where PyTorch's own Python files are: its frames under the watch's mode are the operation's call."""

_DISPATCH_WRAPPERS = frozenset(
    {os.path.join(_TORCH_HOME, "_compile.py"), os.path.join(_TORCH_HOME, "_dynamo", "eval_frame.py")}
)
"""The files of the wrappers PyTorch calls a dispatch mode's ``__torch_dispatch__`` through (its
Dynamo's ``disable``), which a traceback shows only under a watch."""

_PASSING_ON = frozenset({"__torch_dispatch__", "_backward", "_autograd_grad", "_engine"})
"""The watch's functions that pass a learner's call on to PyTorch (its mode, and the ``backward``,
``grad`` and engine it wraps): where an error reaches the learner through these alone, it is the
learner's; through any other function of vjpgrad's, it is a defect of the watch's."""


def _learners_frames(error: BaseException, first: types.TracebackType) -> None:
    """The traceback of an error leaving the watch's with block, and of its cause and context, their
    frames the ones they show without the watch (``_without_the_watch``)."""
    seen: set[int] = set()
    while id(error) not in seen:
        seen.add(id(error))
        _without_the_watch(first)
        following = error.__cause__ or error.__context__
        if following is None or following.__traceback__ is None:
            return
        error, first = following, following.__traceback__


def _without_the_watch(first: types.TracebackType) -> None:
    """The frames of one traceback, as it shows them without the watch: the watch's own frames
    that pass the learner's call on to PyTorch (its dispatch mode, the ``backward`` and ``grad``
    it wraps) are taken out, and so are the wrappers PyTorch calls the mode through and PyTorch's
    frames of the operation's call inside it (``func(*args)``, where its C++ code raised). An
    error that went through any other function of vjpgrad's is a defect to report: its traceback
    is kept whole, as it is with ``VJPGRAD_FULL_TRACEBACK=1``. ``first`` stays first."""
    entries: list[types.TracebackType] = []
    entry: types.TracebackType | None = first
    while entry is not None:
        entries.append(entry)
        entry = entry.tb_next
    dropped = [is_own_code(e.tb_frame) for e in entries]
    if any(drop and e.tb_frame.f_code.co_name not in _PASSING_ON for e, drop in zip(entries, dropped, strict=True)):
        return
    for k, e in enumerate(entries):
        if e.tb_frame.f_code.co_name != "__torch_dispatch__" or not dropped[k]:  # the watch's mode: its file's
            continue
        for j in range(k + 1, len(entries)):  # the operation's call (PyTorch's, which raised in C++)
            dropped[j] = dropped[j] or entries[j].tb_frame.f_code.co_filename.startswith(_TORCH_HOME)
        j = k - 1
        while j > 0 and entries[j].tb_frame.f_code.co_filename in _DISPATCH_WRAPPERS:
            dropped[j] = True
            j -= 1
        break
    kept = [e for e, drop in zip(entries, dropped, strict=True) if not drop or e is first]
    for before, after in itertools.pairwise(kept):
        before.tb_next = after
    kept[-1].tb_next = None


class _Mode(TorchDispatchMode):  # type: ignore[misc]  # torch is read as Any (pyproject.toml)
    def __init__(self, watch: Watch) -> None:
        super().__init__()
        self.watch = watch

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        watch = self.watch
        if watch.paused:
            return func(*args, **kwargs)
        with collection_paused():
            try:
                before: Any = watch.before(func, args, kwargs)
            except Exception as error:  # the learner's code runs on, whatever the watch makes of it
                before = error
        if watch.uncompiled is None:
            watch.uncompiled = compiled_call()
        out = func(*args, **kwargs)
        with collection_paused():
            watch.after(func, args, kwargs, out, before)
        return out


class Watch:
    """What ``watch_torch()`` returns: ``passes`` holds one ``Pass`` per backward call, in order."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self.passes: list[Pass] = []
        # where a torch.compile'd function was called whose operations the watch saw: it ran uncompiled
        self.uncompiled: str | None = None
        self.paused = 0
        self._entries: dict[int, Entry] = {}
        self._leaves: dict[int, list[Entry]] = {}  # each leaf tensor's generations (a step under no_grad makes one)
        self._mode = _Mode(self)
        self._unnamed: list[Entry] = []  # tensors made since the last pass, in order: t1, t2... unless named
        self._described: list[tuple[Value, Value | None, str]] = []
        self._described_done = 0  # how many of them a pass has named
        self._count = 0
        self._leaf_numbers: dict[int, int] = {}  # each leaf the learner names nowhere: leaf 1, leaf 2...
        self._names_given: set[str] = set()  # every name the learner gave a tensor in a pass: never made up
        self._made_names: dict[str, Entry] = {}  # each name made up (t1...), and what holds it
        self._shown_operands: weakref.WeakKeyDictionary[Value, int] = weakref.WeakKeyDictionary()  # Call.onto_zero's
        self._arguments: weakref.WeakKeyDictionary[Value, Arguments] = weakref.WeakKeyDictionary()  # Call.arguments'
        self._renamed: dict[Value, list[tuple[int, str]]] = {}  # a label a later pass replaced: (last pass, label)
        self._named_before: dict[int, str] = {}  # each leaf's name of the learner's in the last pass that named it
        self._only: set[int] | None = None  # the leaves a pass accumulates into, when backward names them
        self._original: Any = None
        self._original_grad: Any = None
        self._original_engine: Any = None
        self._thread: int | None = None  # the thread that entered the watch: the one its mode sees
        self._on = False  # inside its with block: entered again, it is refused
        self._elsewhere_lock = threading.Lock()
        self._under_another = False  # another watch entered inside this one: its own tensors are among ours
        self._graphs_of_gradients = False  # a pass with create_graph=True ran: its gradients are tensors unseen
        self._changed: collections.deque[_Change] = collections.deque(
            maxlen=CHANGES_KEPT
        )  # the latest changes in place
        self._changes_seen = 0  # all of them, counted: more than CHANGES_KEPT, the oldest are not kept
        self._changing: list[_Change] = []  # the changes of the operation running, kept once it returns
        self._listed: list[tuple[torch.Tensor, int]] = []  # a _foreach_ operation's tensors and versions before it
        self._read_at: dict[int, set[int]] = {}  # each tensor's versions an operation read or made (by id)
        self._unwritten: dict[int | None, tuple[torch.Tensor, bytes]] = {}  # torch.empty's tensors by address, bits

    @property
    def _unseen(self) -> str:
        """How a tensor the watch never saw made came to be: before the watch, or (once a pass with
        ``create_graph=True`` ran) as a gradient, a second derivative's start."""
        return _UNSEEN_GRADIENT if self._graphs_of_gradients else _UNSEEN

    # ---- the context manager -------------------------------------------------------------------

    def __repr__(self) -> str:
        """How many passes, and what each did: ``<vjpgrad.watch_torch(): 2 passes, 1 equal to
        PyTorch's to the bit, 1 differs>``."""
        equal = sum(p.matches for p in self.passes)
        differ = sum(p.replayed and not p.matches for p in self.passes)
        refused = len(self.passes) - equal - differ
        said = [f"{len(self.passes)} pass{'es' if len(self.passes) != 1 else ''}"]
        said += [f"{equal} equal to PyTorch's to the bit"] if equal else []
        said += [f"{differ} {'differs' if differ == 1 else 'differ'}"] if differ else []
        said += [f"{refused} not replayed"] if refused else []
        return f"<vjpgrad.watch_torch(): {', '.join(said)}>"

    def _add(self, done: Pass) -> None:
        """A pass, done: kept in ``passes``, with how to pick the kernels the replay follows where
        PyTorch runs others (``kernels_note``) and an operation of the pass depends on them: a matrix
        product, or one whose kernel was measured on AVX2 alone (``replay.PROCESSOR_NOTES``). The
        others' reasons (an order of adding, a hook of the learner's) hold on every processor: under
        them, other kernels would change nothing."""
        matrix = not MATRIX_NOTES.isdisjoint(done.reasons)
        if matrix or not PROCESSOR_NOTES.isdisjoint(done.reasons):
            done.kernels = self._kernels[matrix]
        self.passes.append(done)

    def __enter__(self) -> Watch:
        with _CHAIN_LOCK:
            if self._on:  # it would take its own backward for PyTorch's: every pass would then loop, for good
                raise RuntimeError(
                    "this watch_torch() is already on (its with block is running): a watch is entered once; "
                    "its passes go on being watched inside, so the inner with is not needed"
                )
            self._thread = threading.get_ident()
            self._kernels = (kernels_note(matrix=False), kernels_note(matrix=True))
            if not _ENTERED:
                _PYTORCHS[:] = [torch.autograd.backward, torch.autograd.grad, getattr(torch.autograd, _ENGINE, None)]
            _ENTERED.append(self)
            _rewire()
            self._on = True
        try:
            self._mode.__enter__()
        except BaseException:
            self._leave()
            raise
        return self

    def __exit__(self, kind: object, error: BaseException | None, traceback: types.TracebackType | None) -> None:
        try:
            self._mode.__exit__(None, None, None)
        finally:
            self._leave()
            if self.uncompiled is not None:
                _dynamo_forgets()
        if error is not None and traceback is not None and not os.environ.get("VJPGRAD_FULL_TRACEBACK"):
            _learners_frames(error, traceback)

    def _leave(self) -> None:
        """Out of the chain of watches entered, PyTorch's functions wired anew through the others."""
        with _CHAIN_LOCK:
            if any(watch is self for watch in _ENTERED):
                del _ENTERED[next(k for k, watch in enumerate(_ENTERED) if watch is self)]
            _rewire()
            self._on = False

    def _engine(self, *args: Any, **kwargs: Any) -> Any:
        """PyTorch's engine, which ``torch.autograd.backward`` and ``grad`` start every pass
        through: a pass that reaches it on the watched thread while no pass of the watch's runs
        was started by a ``backward`` or ``grad`` bound before the watch swapped them (``from
        torch.autograd import grad`` in a notebook's first cell). It runs as without the watch and
        is listed, not replayed, saying what to write instead."""
        if threading.get_ident() != self._thread or self.paused:
            return self._original_engine(*args, **kwargs)
        frame = _user_frame()
        location = where(frame)
        call = "backward" if kwargs.get("accumulate_grad", True) else "torch.autograd.grad"
        self.paused += 1
        try:
            with self._mode_off():
                result = self._original_engine(*args, **kwargs)
        except Exception as error:  # listed with its error, as a pass the watch started is
            raised = _Raised.of(error)
            self._add(Pass(len(self.passes) + 1, location, [], [], False, replayed=False, reason=_IMPORTED_BEFORE,
                           call=call, **raised.fields()))  # fmt: skip
            raise
        finally:
            self.paused -= 1
        done = Pass(len(self.passes) + 1, location, [], [], False, replayed=False, reason=_IMPORTED_BEFORE, call=call)
        self._add(done)
        if self.strict:
            raise TorchReplayError(done.summary())
        return result

    @property
    def matches(self) -> bool:
        """Every pass replayed, each ``.grad`` equal to PyTorch's to the bit."""
        return all(p.matches for p in self.passes)

    def summary(self) -> str:
        said = "\n\n".join(p.summary() for p in self.passes) or "No backward pass ran."
        if self.uncompiled is not None:
            said += "\n\n" + UNCOMPILED.format(self.uncompiled)
        return said

    # ---- the tensors ---------------------------------------------------------------------------

    def entry(self, t: torch.Tensor) -> Entry:
        """The entry of a tensor an operation reads: the one the watch made, or (for a tensor it
        has not seen, or whose numbers changed unseen) a new one."""
        known = self._entries.get(id(t))
        if known is not None and known.tensor is not t:  # another tensor's, which had this id
            known = None
        settled = self._settled(t, known)
        if settled is not None:
            return settled
        unfollowed = replay.unfollowed_type(t, f"read at {user_location()}") if t.requires_grad else None
        if unfollowed is not None:
            return self._remember(t, Entry(t, [], is_single(t), b"", poisoned=unfollowed))
        numbers = constant_numbers(t)
        mark = fingerprint(t, numbers)
        leaf = _is_leaf(t)
        unseen = known is not None and known.fingerprint != mark  # (w.data *= 2)
        if known is not None and known.fingerprint == mark:
            became_leaf = leaf and not known.leaf and not known.takes_gradient  # requires_grad_(True)
            if not became_leaf and known.leaf == leaf:  # a leaf stops being one with requires_grad_(False)
                return self._unless_a_function_made_it(t, known)
        if leaf:
            entry = Entry(t, replay.leaf_items(t), is_single(t), mark, leaf=True, seen_at=user_location())
            entry.changed_unseen = unseen
            return self._remember(t, entry)
        if t.requires_grad:
            how = _CHANGED_UNSEEN if known is not None else _subclass(t) or self._unseen
            reason = f"a tensor read at {user_location()}, {how}"
            return self._remember(t, Entry(t, list(numbers), is_single(t), mark, poisoned=reason))
        return self._remember(t, Entry(t, list(numbers), is_single(t), mark))

    def _settled(self, t: torch.Tensor, known: Entry | None) -> Entry | None:
        """The entry of ``t`` decided before its numbers are read: one that could not be replayed
        (with its first reason), a tensor too large to hold (a dataset, where it was made), a view
        changed through its base (``_from_base``); else None."""
        if known is not None and (known.poisoned or (known.large and not t.requires_grad)):
            return known
        if t.numel() > LARGEST:  # where it was made, where the watch saw that; else where it is read
            made = known.large if known is not None and known.large else None
            return self._remember(t, _too_large(t, made or too_large(t, "read")))
        return self._from_base(t) if known is not None and known.version != _version(t) else None

    def _unless_a_function_made_it(self, t: torch.Tensor, known: Entry) -> Entry:
        """``known``, or, for the output of a ``torch.autograd.Function`` (the learner's own, or one
        of PyTorch's written in Python), an entry that says why no pass through it is replayed. Its
        forward runs under no_grad, so the watch saw its results made as constants; PyTorch attaches
        the function's backward only after, and a pass through it runs that backward, which is
        Python code of the function's own, not an ATen formula the replay has. Without this, a pass
        through it would be replayed with the function's path cut, and differ for a wrong reason."""
        function = t.grad_fn
        if not isinstance(function, torch.autograd.function.BackwardCFunction) or known.takes_gradient:
            return known
        name = getattr(getattr(function, "_forward_cls", None), "__name__", type(function).__name__)
        if name == "BackwardHookFunction":  # what PyTorch wraps a module's input and output in for its hooks
            reason = (
                f"a tensor read at {user_location()} goes through a module's backward hook "
                "(register_full_backward_hook): a pass through it runs the hook, which the replay does not run"
            )
        else:
            reason = (
                f"the result of the torch.autograd.Function {name}, read at {user_location()}: a pass through it "
                "runs its own backward method, which the replay does not run"
            )
        return self._remember(t, Entry(t, [], is_single(t), b"", poisoned=reason))

    def _remember(self, t: torch.Tensor, entry: Entry) -> Entry:
        entry.version = _version(t)  # an in-place operation's result: before PyTorch raises it, so it reads as moved
        self._entries[id(t)] = entry
        if entry.leaf:
            self._leaves.setdefault(id(t), []).append(entry)
        return entry

    def before(self, func: Any, args: Any, kwargs: Any = None) -> tuple[dict[int, Entry], dict[int, torch.Tensor]]:
        """Before an operation runs: its operands' entries, and a copy of each operand it changes
        (given by position, or by keyword: ``out=``), each change noted as it will be (``_Change``)."""
        entries = {id(t): self.entry(t) for t in _tensors(args)}
        copies: dict[int, torch.Tensor] = {}
        if self._changing or self._listed:  # an operation that raised: it changed nothing
            self._changing, self._listed = [], []
        schema = func._schema.arguments
        for argument, value in zip(schema, args, strict=False):
            if argument.alias_info is not None and argument.alias_info.is_write:
                if isinstance(value, torch.Tensor):
                    self._written(func, value, entries, copies)
                elif isinstance(value, (list, tuple)):  # a _foreach_ operation's list
                    self._listed = [(x, _version(x)) for x in value if isinstance(x, torch.Tensor)]
                    for x, _ in self._listed:
                        self._written(func, x, entries, copies)
        if kwargs:  # out=
            for argument in schema:
                if argument.alias_info is not None and argument.alias_info.is_write and argument.name in kwargs:
                    value = kwargs[argument.name]
                    if isinstance(value, torch.Tensor):
                        self._written(func, value, entries, copies)
        self._note_reads(args)
        return entries, copies

    def _note_reads(self, args: Any) -> None:
        """The version at which an operation reads each operand it does not change: what a pass may
        save of it (``_read_when_saved``)."""
        changed = {id(c.tensor) for c in self._changing}
        for x in _tensors(args):
            if id(x) not in changed:
                self._read_at.setdefault(id(x), set()).add(_version(x))

    def _written(
        self, func: Any, value: torch.Tensor, entries: dict[int, Entry], copies: dict[int, torch.Tensor]
    ) -> None:
        """An operand ``func`` changes: a copy of it as it was (the replay reads it), and the change noted."""
        copies[id(value)] = value.clone()
        entries[id(copies[id(value)])] = entries.get(id(value)) or self.entry(value)
        self._changing.append(_Change.of(func, value))

    def after(self, func: Any, args: Any, kwargs: Any, out: Any, before: Any) -> None:
        """After an operation ran: the entries of the tensors it made or changed, and its changes in
        place kept (an operation that raised changed nothing, and is not among them)."""
        outputs = list(_tensors(out))
        try:
            self._changes_kept(func, outputs)
        except Exception:  # never let the watch break the learner's code
            self._changing, self._listed = [], []
        if not outputs:
            return
        base = op_name(func).split(".")[0]
        if base in _UNINITIALISED:  # whatever was in memory, by where it lies
            made = [t for t in outputs if 0 < t.numel() <= UNWRITTEN_LIMIT and t.layout == torch.strided]
            self._unwritten.update((_memory(t), (t, _bits(t))) for t in made)
        elif self._unwritten:  # written in place (an initialiser's zeros_, copy_), or through out=
            written = [*args[:1], kwargs.get("out")] if base.endswith("_") else [kwargs.get("out")]
            for t in (a for a in written if isinstance(a, torch.Tensor)):
                self._unwritten.pop(_memory(t), None)
        try:
            if isinstance(before, Exception):
                raise before
            entries, copies = before
            self._made(func, args, kwargs, outputs, entries, copies)
        except Exception as error:  # never let the watch break the learner's code
            said = str(error) or ("out of memory" if isinstance(error, MemoryError) else "(no message)")
            reason = f"the watch could not follow {op_name(func)} at {user_location()}: {type(error).__name__}: {said}"
            for t in outputs:
                self._remember(t, Entry(t, [], is_single(t), b"", poisoned=reason))

    def _changes_kept(self, func: Any, outputs: list[torch.Tensor]) -> None:
        """An operation's changes in place kept, once it returned; a ``_foreach_`` operation's list
        followed (``_after_a_list``); and the version at which each result that takes gradient was
        made, at which its operation may have saved it (exp, sigmoid)."""
        if self._changing:
            self._changes_seen += len(self._changing)
            self._changed.extend(self._changing)
            self._changing = []
        if self._listed:
            self._after_a_list(func)
        for x in outputs:
            if x.requires_grad and x._base is None and x.grad_fn is not None:
                self._read_at.setdefault(id(x), set()).add(_version(x))

    def _after_a_list(self, func: Any) -> None:
        """After a ``_foreach_`` operation changed a list of tensors in place (an optimizer's step with
        ``foreach=True``): their version counters moved, as PyTorch moves them without the watch (its
        ``_foreach_`` kernels move none under a dispatch mode, so a pass over a graph that saved one
        would run where PyTorch refuses it), and each taken as a step under no_grad takes it (a
        leaf's new numbers, or constants'); one that takes gradient as a graph's part is not replayed."""
        listed, self._listed = self._listed, []
        unmoved = [x for x, version in listed if _version(x) == version]
        if unmoved:
            torch.autograd.graph.increment_version(unmoved)
        for x, _ in listed:
            if x._base is not None:  # a view (Adam's view_as_real of a complex weight): its base is read anew
                continue
            if torch.is_grad_enabled() and x.requires_grad and not _is_leaf(x):
                reason = f"{op_name(func).split('.')[0]} at {user_location()}{_inside()} changed it in place"
                self._remember(x, Entry(x, [], is_single(x), b"", poisoned=reason))
            else:
                self._plain(x)

    def _made(
        self,
        func: Any,
        args: Any,
        kwargs: Any,
        outputs: list[torch.Tensor],
        entries: dict[int, Entry],
        copies: dict[int, torch.Tensor],
    ) -> None:
        name = op_name(func)
        base = name.split(".")[0]
        flowing = [e for e in entries.values() if e.takes_gradient or e.poisoned]
        refused = _refused_before(name, args, entries, flowing, outputs)
        if refused is not None:  # through a view, its base is not replayed either
            for t in [*outputs, *_bases_changed(base, args, outputs)]:
                self._remember(t, Entry(t, [], is_single(t), b"", poisoned=refused))
            return
        if not _takes_gradient(base, flowing, outputs):
            self._no_gradient_through(name, _bases_changed(base, args, outputs), outputs)
            return
        poisoned = _first_reason(flowing, outputs) or next((e.large for e in entries.values() if e.large), None)
        notes = frozenset().union(*(e.notes for e in flowing)) | _product_note(base, outputs) | _saved_hooks_note()
        if poisoned is None:
            swapped = tuple(copies.get(id(a), a) if isinstance(a, torch.Tensor) else a for a in args)
            poisoned = self._replay(Call(name, swapped, dict(kwargs), entries, outputs), notes)
        if poisoned is not None:  # through a view, its base is not replayed either
            for t in [*outputs, *_bases_changed(base, args, outputs)]:
                self._remember(t, Entry(t, [], is_single(t), b"", poisoned=poisoned))

    def _no_gradient_through(self, name: str, changed: list[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        """Results the replay takes no gradient through, and the bases ``changed`` through a view: a
        base not replayed stays so (its other elements still hold what the replay did not follow)."""
        if changed and torch.is_grad_enabled():
            if self._filled_through_view(outputs[0]):
                return  # z[0].zero_(): constants in z where the view shows it, z's other elements as they were
            entry = self._entries.get(id(changed[0]))
            if entry is not None and entry.tensor is changed[0] and entry.poisoned:
                self._remember(outputs[0], Entry(outputs[0], [], is_single(outputs[0]), b"", poisoned=entry.poisoned))
                return
        for t in [*outputs, *changed]:  # p[1:].mul_ under no_grad: p too
            self._without_gradient(name, t)

    def _without_gradient(self, name: str, t: torch.Tensor) -> None:
        """A result the replay takes no gradient through: constants, or a leaf (a step under
        no_grad); or, where PyTorch does take gradient through it (a tensor inside the graph
        changed in place under no_grad: its graph kept, its numbers new), not replayed."""
        inside = t.requires_grad and t.grad_fn is not None and t.dtype in replay.DIFFERENTIABLE
        if torch.is_grad_enabled() or not inside:  # with grad on: zero_, normal_... whose gradient is zero
            self._plain(t)
            return
        written = _as_written(name.split(".")[0])
        reason = (
            f"PyTorch's {written} at {user_location()}{_inside()} changed a tensor that takes gradient "
            "with grad mode off (in torch.no_grad(), yours or one PyTorch's own function turns on), which keeps "
            "its graph: the replay does not follow its gradient there"
        )
        self._remember(t, Entry(t, [], is_single(t), b"", poisoned=reason))

    def _replay(self, call: Call, notes: frozenset[str]) -> str | None:
        """Make the nodes of ``call``'s results; None, or why it could not be replayed."""
        try:
            made = replay.replay(call)
        except NotReplayableError as error:
            written = _as_written(str(error))
            return f"PyTorch's {written} at {user_location()}{_inside()}, which the replay does not reproduce"
        notes |= call.notes | ({SUM_NOTE} if call.sums_over > 0 else set())
        self._described += call.described
        self._shown_operands.update(call.onto_zero)
        self._arguments.update(call.arguments)
        for t, items in zip(call.outputs, made, strict=True):
            entry = Entry(t, items, is_single(t), fingerprint(t, numbers_of(t)), notes=notes)
            self._unnamed.append(self._remember(t, entry))
        for t, items in zip(call.outputs, made, strict=True):
            if func_changes(call, t) and t._base is not None:
                self._through_view(t, items)
        return None

    def _through_view(self, view: torch.Tensor, items: list[Item]) -> bool:
        """An operation changed ``view`` in place: the elements of its base that it shows are now
        ``items`` (PyTorch's CopySlices), the others stay as they were; False where the base has
        no entry to change (made before the watch, or not replayed)."""
        base = view._base
        entry = self._entries.get(id(base))
        if entry is None or entry.tensor is not base or entry.poisoned or entry.large:
            return False
        shown, position = _shown_in(view, base)
        updated = list(entry.items)
        for s, item in zip(shown, items, strict=True):
            updated[position[s]] = item
        self._remember(base, Entry(base, updated, entry.single, fingerprint(base, numbers_of(base)), notes=entry.notes))
        return True

    def _filled_through_view(self, view: torch.Tensor) -> bool:
        """An operation that takes no gradient (``zero_``, ``fill_``) changed ``view`` in place with
        grad mode on: the view is constants, and so are the elements of its base it shows, the
        base's others keep their gradient (PyTorch's CopySlices). False where the base has no entry
        to change, or the view is too large to hold."""
        if view.numel() > LARGEST or view._base is None or view._base.dtype != view.dtype:
            return False
        numbers = constant_numbers(view)
        if not self._through_view(view, list(numbers)):
            return False
        self._remember(view, Entry(view, list(numbers), is_single(view), fingerprint(view, numbers)))
        return True

    def _from_base(self, view: torch.Tensor) -> Entry | None:
        """The entry of a view whose memory was changed in place after the watch last saw it (its
        version counter, which it shares with its base, moved), as by its base (``v = t[:2];
        t.mul_(x)``): the base's elements the view shows, as the watch made them, where the base's
        entry holds the base's numbers as they are now; else None."""
        base = view._base
        entry = None if base is None or _is_leaf(view) else self._entries.get(id(base))
        if entry is None or entry.tensor is not base or entry.poisoned or entry.large or base.dtype != view.dtype:
            return None
        if len(entry.items) != base.numel() or entry.fingerprint != fingerprint(base, numbers_of(base)):
            return None
        shown, position = _shown_in(view, base)
        if not all(s in position for s in shown):
            return None
        items = [entry.items[position[s]] for s in shown]
        return self._remember(
            view, Entry(view, items, entry.single, fingerprint(view, numbers_of(view)), notes=entry.notes)
        )

    def _plain(self, t: torch.Tensor) -> None:
        """A tensor made or changed with no gradient flowing: a leaf (a step under no_grad) or constants."""
        if t.numel() > LARGEST:  # changed in place (an optimizer's step): still where it was made
            known = self._entries.get(id(t))
            said = known.large or known.poisoned if known is not None and known.tensor is t else None
            self._remember(t, _too_large(t, said or too_large(t)))
            return
        numbers = constant_numbers(t)
        mark = fingerprint(t, numbers)
        if _is_leaf(t):
            self._remember(t, Entry(t, replay.leaf_items(t), is_single(t), mark, leaf=True, seen_at=user_location()))
        else:
            self._remember(t, Entry(t, list(numbers), is_single(t), mark))

    # ---- a backward pass -----------------------------------------------------------------------

    def _backward(self, *args: Any, **kwargs: Any) -> None:
        if threading.get_ident() != self._thread:
            return self._elsewhere(self._original, "backward", args, kwargs)  # type: ignore[no-any-return]
        self._under_another |= torch.autograd.backward != self._backward  # a watch entered inside, its own on top
        if self.paused:  # PyTorch's own, inside a pass (a reentrant checkpoint's): a part of that pass
            with self._mode_off():
                return self._original(*args, **kwargs)  # type: ignore[no-any-return]
        bound = self._bound(args, kwargs)
        args, kwargs = bound.args, bound.kwargs  # what PyTorch's backward is then handed
        given = bound.arguments
        roots, seeds = _roots_and_seeds(given)
        retain = bool(given.get("retain_graph")) or bool(given.get("create_graph"))
        self._graphs_of_gradients |= bool(given.get("create_graph"))
        frame = _user_frame()
        location = where(frame)
        names = _names(frame)
        self.paused += 1
        try:
            before = self._grads_before(roots)
            try:
                with self._mode_off():
                    self._original(*args, **kwargs)
            except Exception as error:  # PyTorch refused the call, or the learner's hook raised: listed, raised on
                self._only = None
                raised = _Raised.of(error)
                refused = None
                if not raised.raised_in:  # (a "Mismatch in shape" of a grad inside a hook is not case 3)
                    with collection_paused():
                        refused = self._refused(roots, seeds, raised.message, location, names)
                ran = [] if isinstance(before, str) else self._changed_grads(before, names)
                listed = refused or self._not_run(roots, seeds, retain, raised, location, ran)
                listed.notes += self._changes(error, names, roots)
                self._add(listed)
                raise
            inputs = given.get("inputs")
            self._only = None if inputs is None else {id(t) for t in _tensors(inputs)}  # backward(inputs=...)
            if isinstance(before, str):
                done = Pass(len(self.passes) + 1, location, [], [], retain, replayed=False, reason=before)
            else:
                with collection_paused():
                    done = self._replayed(roots, seeds, retain, location, names, before)
        finally:
            self.paused -= 1
        self._add(done)
        if self.strict and not done.matches:
            raise TorchReplayError(done.summary())

    def _bound(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
        """``backward``'s arguments by name, defaults included, each iterable of outputs, seeds or
        inputs read once into a tuple (``_read_once``); arguments PyTorch refuses raise its own error."""
        try:
            bound = _signature(self._original).bind(*args, **kwargs)
        except TypeError:  # arguments PyTorch refuses: its own error, as without the watch
            with self._mode_off():
                self._original(*args, **kwargs)
            raise
        bound.apply_defaults()
        for key in ("tensors", "grad_tensors", "grad_variables", "inputs"):
            if key in bound.arguments:
                bound.arguments[key] = _read_once(bound.arguments[key])
        return bound

    def _grads_before(self, roots: list[Any]) -> dict[int, list[float] | None] | str:
        """Each known leaf's ``.grad`` before the pass (by the leaf's id), or why it could not be read.
        A root the watch has not seen read is looked at first: a leaf (``x.backward()``) is then
        among the leaves, and anything else says why it cannot be replayed."""
        try:
            with collection_paused():
                for root in roots:
                    if isinstance(root, torch.Tensor):
                        self.entry(root)
            found = {key: _grad_of(gens[-1].tensor) for key, gens in self._leaves.items()}
            return found | {key: _grad_of(entry.tensor) for key, entry in self._retained()}
        except Exception as error:  # never let the watch break the learner's code: the pass runs on
            return f"the watch could not read the leaves' .grad before it: {type(error).__name__}: {error}"

    def _autograd_grad(self, *args: Any, **kwargs: Any) -> Any:
        """``torch.autograd.grad``, run as without the watch, its pass replayed: what it hands back
        (the gradients of ``inputs``, leaves or tensors inside the graph) compared with the replay's,
        element by element, as ``.grad`` is after ``backward``; ``.grad`` is left alone, as PyTorch
        leaves it. A pass that makes a graph of its gradients (``create_graph=True``) or runs a batch
        of seeds (``is_grads_batched``), and ``torch.func``'s transforms, are listed, not replayed."""
        if threading.get_ident() != self._thread:
            return self._elsewhere(self._original_grad, "torch.autograd.grad", args, kwargs)
        self._under_another |= torch.autograd.grad != self._autograd_grad
        if self.paused:  # PyTorch's own, inside a pass (a custom backward's, a hook's): a part of that pass
            with self._mode_off():
                return self._original_grad(*args, **kwargs)
        frame = _user_frame()
        location = where(frame)
        func = _through_torch_func()
        call = "torch.func" if func else "torch.autograd.grad"
        given: dict[str, Any] | None = None
        if not func:
            bound = self._bound_grad(args, kwargs)
            args, kwargs, given = bound.args, bound.kwargs, bound.arguments
        names = _names(frame)
        self.paused += 1
        try:
            with self._mode_off():
                result = self._original_grad(*args, **kwargs)
        except Exception as error:  # PyTorch refused it, or a hook raised: listed, as a refused backward is
            raised = _Raised.of(error)
            seed, shapes = _given_seed(given)
            refused = Pass(
                len(self.passes) + 1, location, [], seed, False, replayed=False, call=call,
                reason=_unfinished(raised, []), **raised.fields(), seed_shapes=shapes,
                notes=self._changes(error, names, _grad_outputs(given, args), "torch.autograd.grad"),
            )  # fmt: skip
            self._add(refused)
            raise
        finally:
            self.paused -= 1
        self._graphs_of_gradients |= bool(given is not None and given.get("create_graph"))  # replayed or not
        unreplayed = _grad_unreplayed(given)
        if unreplayed is not None:
            done = Pass(len(self.passes) + 1, location, [], [], False, replayed=False, reason=unreplayed, call=call)
        else:
            assert given is not None  # torch.func's are listed above
            self.paused += 1
            try:
                with collection_paused():
                    done = self._replayed_grad(given, result, location, names)
            finally:
                self.paused -= 1
        self._add(done)
        if self.strict and not done.matches:
            raise TorchReplayError(done.summary())
        return result

    def _bound_grad(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
        """``torch.autograd.grad``'s arguments by name, defaults included, ``outputs``, ``inputs`` and
        ``grad_outputs`` read once into tuples where they are other iterables (``model.parameters()``);
        arguments PyTorch refuses raise its own error."""
        grad = self._original_grad
        while isinstance(getattr(grad, "__self__", None), Watch):
            grad = grad.__self__._original_grad
        try:
            bound = inspect.signature(grad).bind(*args, **kwargs)
        except (TypeError, ValueError):
            with self._mode_off():
                self._original_grad(*args, **kwargs)
            raise
        bound.apply_defaults()
        for key in ("outputs", "inputs", "grad_outputs"):
            if key in bound.arguments:
                bound.arguments[key] = _read_once(bound.arguments[key])
        return bound

    def _grad_entries(
        self, roots: list[torch.Tensor], wrt: list[torch.Tensor], names: dict[int, str]
    ) -> tuple[list[Entry | None], str | None]:
        """The entries of a ``torch.autograd.grad`` pass's outputs (None for one the watch never
        saw made) and inputs (a leaf never read among them: it needs no history), and why the pass
        cannot be replayed, if it cannot: the first output not seen made, named, or the first
        entry's reason."""
        found = [self._entries.get(id(t)) for t in roots] + [self.entry(t) for t in wrt]
        missing = next(
            (_unseen(t, names, self._unseen) for t, e in zip(roots, found[: len(roots)], strict=True) if not e), None
        )
        return found, missing or next((e.poisoned for e in found if e and e.poisoned), None)

    def _replayed_grad(self, given: dict[str, Any], result: Any, location: str, names: dict[int, str]) -> Pass:
        """``torch.autograd.grad``'s pass replayed: the replay's gradient of each of ``inputs``
        beside what PyTorch returned for it (``result``)."""
        roots, seeds, wrt = _grad_tensors(given)
        retain = bool(given.get("retain_graph")) or bool(given.get("create_graph"))
        self._graphs_of_gradients |= bool(given.get("create_graph"))
        seed = [v for root, s in zip(roots, seeds, strict=True) for v in self._seed_numbers(root, s)]
        shapes = _seed_shapes(roots, seeds)
        number = len(self.passes) + 1
        call = "torch.autograd.grad"
        try:
            found, missing = self._grad_entries(roots, wrt, names)
            if missing is not None:
                return Pass(
                    number, location, [], seed, retain, replayed=False, reason=missing, call=call, seed_shapes=shapes
                )
            entries = [e for e in found if e is not None]
            items = [item for e in entries[: len(roots)] for item in e.items]
            self._label(names)
            outs, kept = _seeded([(x, v) for x, v in zip(items, seed, strict=True)])
            gradients = _cotangents(outs, kept)
            changed = self._changed_unseen(gradients, names)
            if changed is not None:
                return Pass(
                    number, location, [], seed, retain, replayed=False, reason=changed, call=call, seed_shapes=shapes
                )
            reports, unnamed = self._all_returned(wrt, entries[len(roots) :], result, gradients, names)
            notes = _applying(frozenset().union(*(e.notes for e in entries)), gradients) | self._hooks(outs, names)
            notes |= _nan_signs(reports) | _precision_notes(notes)
            notes |= self._unseen_constant(reports, notes, names)
            scalar = len(items) == 1 and roots[0].dim() == 0
            asked = frozenset(x for entry in entries[len(roots) :] for x in entry.items if isinstance(x, Value))
            explainer = functools.partial(self._as_of, number, outs, kept, scalar, call, asked) if outs else None
            return Pass(
                number, location, outs, seed, retain, call=call, leaves=reports, reasons=sorted(notes), notes=unnamed,
                explainer=explainer, vector=_seeded_vector(roots, seeds), seed_shapes=shapes,
            )  # fmt: skip
        except Exception as error:  # the learner's code runs on
            reason = f"the watch failed to replay it: {type(error).__name__}: {error}"
            return Pass(
                number, location, [], seed, retain, replayed=False, reason=reason, call=call, seed_shapes=shapes
            )

    def _all_returned(
        self, wrt: list[Any], entries: list[Entry], result: Any, gradients: dict[Value, Any], names: dict[int, str]
    ) -> tuple[list[LeafReport], list[str]]:
        """Each input's comparison (``_returned``), and a line for each input with no name of the learner's."""
        reports: list[LeafReport] = []
        unnamed: list[str] = []
        for k, (t, latest, returned) in enumerate(zip(wrt, entries, result, strict=True)):
            report = self._returned(t, latest, returned, gradients, names.get(id(t)) or f"inputs[{k}]")
            if report is None:
                continue
            reports.append(report)
            if id(t) not in names:
                unnamed.append(
                    f"{report.name} is the tensor at index {k} of the inputs, with no name where grad was called"
                )
        return reports, unnamed

    def _returned(
        self, t: torch.Tensor, latest: Entry, returned: Any, gradients: dict[Value, Any], name: str
    ) -> LeafReport | None:
        """The replay's gradient of ``t`` beside the one ``torch.autograd.grad`` returned for it: of
        the generation of ``t`` the pass reached (a leaf stepped under ``no_grad`` after the forward,
        as ``gradcheck`` steps its input, is a new generation for the watch). None for an input
        PyTorch returned None for (``allow_unused``) that the replay does not reach either."""
        generations = self._leaves.get(id(t)) or [latest]
        entry = next((g for g in reversed(generations) if any(v in gradients for v in g.items)), latest)
        if returned is None and not any(item in gradients for item in entry.items):
            return None
        replayed = [
            float(in_dtype(float(gradients.get(item, 0.0)) if isinstance(item, Value) else 0.0, entry.single))
            for item in entry.items
        ]
        pytorch = [math.nan] * len(replayed) if returned is None else numbers_of(returned)
        distances = [ulps(a, b, is_single(t)) for a, b in zip(replayed, pytorch, strict=True)]
        return LeafReport(
            name, tuple(t.shape), replayed, pytorch, distances, "'s gradient (returned)", single=is_single(t)
        )

    def _elsewhere(self, original: Any, call: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A pass run on another thread than the one that entered the watch (Autograd mechanics'
        ``threading.Thread(target=train_fn)``): PyTorch's dispatch modes are each thread's own, so
        the watch never saw that thread's operations. The pass runs as without the watch and is
        listed, not replayed, saying so; it touches nothing of the watched thread's replay."""
        frame = _user_frame()
        location = where(frame)
        reason = (
            "it ran on another thread than the one that entered watch_torch(), whose operations the "
            "watch does not see (PyTorch's dispatch modes are each thread's own)"
        )
        try:
            result = original(*args, **kwargs)
        except Exception as refused:
            self._listed_elsewhere(location, call, reason, _Raised.of(refused))
            raise
        done = self._listed_elsewhere(location, call, reason, None)
        if self.strict:
            raise TorchReplayError(done.summary())
        return result

    def _listed_elsewhere(self, location: str, call: str, reason: str, error: _Raised | None) -> Pass:
        with self._elsewhere_lock:  # two threads' passes are numbered one after the other
            done = Pass(len(self.passes) + 1, location, [], [], False, replayed=False, reason=reason, call=call)
            if error is not None:
                done = dataclasses.replace(done, **error.fields())
            self._add(done)
        return done

    def _mode_off(self) -> contextlib.AbstractContextManager[Any]:
        """The watch's dispatch mode taken off while PyTorch's own pass runs: some of PyTorch's
        backward formulas (max, min, median, prod) take another branch, with other numbers, while
        any dispatch mode is active (``areAnyTensorSubclassLike``). A mode the learner entered
        after the watch stays, and ours under it."""
        if _python_dispatch._get_current_dispatch_mode() is self._mode:
            return _python_dispatch._pop_mode_temporarily()  # type: ignore[no-any-return]
        return contextlib.nullcontext()

    def _seed_numbers(self, root: torch.Tensor, seed: Any) -> list[float]:
        """The seed of ``root`` as PyTorch's pass uses it: a seed tensor of another type (float64 for a
        float32 output, integers) is first turned into the output's type by PyTorch's engine."""
        if seed is None:
            return [1.0] * root.numel()
        if not isinstance(seed, torch.Tensor):
            return [float(seed)] * root.numel()
        return numbers_of(seed.to(root.dtype) if root.dtype in replay.DIFFERENTIABLE else seed)

    def _replayed(
        self,
        roots: list[torch.Tensor],
        seeds: list[Any],
        retain: bool,
        location: str,
        names: dict[int, str],
        before: dict[int, list[float] | None],
    ) -> Pass:
        seed = [v for root, s in zip(roots, seeds, strict=True) for v in self._seed_numbers(root, s)]
        shapes = _seed_shapes(roots, seeds)
        number = len(self.passes) + 1
        try:
            found = [self._entries.get(id(root)) for root in roots]
            missing = next(
                (
                    e.poisoned if e else "an output made before watch_torch() began"
                    for e in found
                    if not e or e.poisoned
                ),
                None,
            )
            if missing is not None:
                return Pass(number, location, [], seed, retain, replayed=False, reason=missing, seed_shapes=shapes)
            items = [item for e in found for item in e.items]  # type: ignore[union-attr]
            self._label(names)
            outputs, kept = _seeded([(x, s) for x, s in zip(items, seed, strict=True)])
            scalar = len(items) == 1 and roots[0].dim() == 0
            retained = self._retained()
            gradients = _cotangents(outputs, kept) if retained else _gradients(outputs, kept)
            changed = self._changed_unseen(gradients, names)
            if changed is not None:
                return Pass(number, location, [], seed, retain, replayed=False, reason=changed, seed_shapes=shapes)
            notes = _applying(frozenset().union(*(e.notes for e in found if e)), gradients)
            notes |= _precision_notes(notes)
            hooks = self._hooks(outputs, names)
            notes |= hooks
            leaves, seen, unnamed = self._compare(gradients, before, names)
            leaves += self._retained_reports(retained, gradients, before, names)
            seen |= _nan_signs(leaves)
            unseen = self._unseen_constant(leaves, notes | seen, names)
            reasons = sorted(notes | seen | unseen)
            return Pass(
                number,
                location,
                outputs,
                seed,
                retain,
                explainer=self._explainer(number, outputs, kept, scalar),
                leaves=leaves,
                reasons=reasons,
                notes=unnamed,
                learners_reasons=sorted(hooks | unseen | (notes & {SAVED_HOOKS_NOTE})),
                vector=_seeded_vector(roots, seeds),
                seed_shapes=shapes,
            )
        except Exception as error:  # the learner's code runs on
            reason = f"the watch failed to replay it: {type(error).__name__}: {error}"
            return Pass(number, location, [], seed, retain, replayed=False, reason=reason, seed_shapes=shapes)

    def _retained(self) -> list[tuple[int, Entry]]:
        """The tensors inside the graph whose ``.grad`` PyTorch keeps (``h.retain_grad()``, as
        makemore's backprop ninja keeps 19 of them), by id, as the watch holds them."""
        return [
            (key, entry)
            for key, entry in self._entries.items()
            if not entry.leaf and not entry.poisoned and entry.takes_gradient and entry.tensor.retains_grad
        ]

    def _retained_reports(
        self,
        retained: list[tuple[int, Entry]],
        gradients: dict[Value, Any],
        before: dict[int, list[float] | None],
        names: dict[int, str],
    ) -> list[LeafReport]:
        """Each retained tensor's ``.grad`` (accumulated over the passes, as a leaf's is) beside the
        replay's gradient of it, where the pass reached it or changed its ``.grad``; a tensor with no
        name of the learner's where backward was called is named by its place among them."""
        reports = []
        for k, (key, entry) in enumerate(retained):
            if not any(v in gradients for v in entry.items) and _same_bits(before.get(key), _grad_of(entry.tensor)):
                continue
            name = names.get(key) or f"retained tensor {k + 1}"
            reports.append(_leaf_report(name, entry, gradients, before.get(key), before))
        return reports

    def _changed_unseen(self, gradients: dict[Value, Any], names: dict[int, str]) -> str | None:
        """Why a pass is not replayed when a leaf it reaches changed after the operations read it,
        by no operation the watch saw (``w.data *= 2``, which bumps no version: PyTorch's backward
        then multiplies by the new numbers it saved, the replay by those it saw): its numbers now
        are not those the pass read, and a generation made since was made for an unseen change, or
        the numbers changed since the last. A change the watch saw (an in-place step under
        ``no_grad``) is PyTorch's to refuse where it matters (a saved tensor's version). None when
        no such leaf."""
        for key, generations in self._leaves.items():
            at = next((k for k in range(len(generations) - 1, -1, -1) if _reaches(generations[k], gradients)), None)
            if at is None:
                continue
            reached, later = generations[at], generations[at + 1 :]
            now = fingerprint(reached.tensor, constant_numbers(reached.tensor))
            if now == reached.fingerprint:  # as the pass read it (changed and put back, as gradcheck does)
                continue
            if any(g.changed_unseen for g in later) or now != generations[-1].fingerprint:
                name = names.get(key) or f"the leaf first read at {reached.seen_at}"
                return (
                    f"{name} changed where the watch could not see (through .data, or another tensor sharing its "
                    "memory) after the operations of this pass read it: PyTorch's backward multiplies by the "
                    "numbers it saved, which changed with it, and the replay has the ones it saw"
                )
        return None

    def _unseen_constant(
        self, leaves: Sequence[LeafReport], reasons: frozenset[str], names: dict[int, str]
    ) -> set[str]:
        """Where a pass differs and no reason is known: a constant the watch saw read whose numbers
        now are not those it read, by no operation it saw (its version unchanged: through NumPy's
        memory, which ``torch.from_numpy`` shares, or ``.data``), named as the likely reason: PyTorch's
        backward multiplies by the numbers it saved, which changed with it. Read only then (each
        constant's numbers read again), so a pass that matches costs nothing more; never where a watch
        was entered inside this one (its replay's own tensors, made and changed, are among those seen)."""
        if reasons or self._under_another or all(leaf.matches for leaf in leaves):
            return set()  # (under another watch, whose own tensors the watch saw made and changed, no claim)
        for key, entry in list(self._entries.items()):
            t = entry.tensor
            if entry.leaf or entry.poisoned or entry.large or t.requires_grad or entry.version != _version(t):
                continue
            if fingerprint(t, constant_numbers(t)) != entry.fingerprint:
                name = names.get(key) or "a tensor an operation read"
                return {
                    f"{name} changed where the watch could not see (through NumPy's memory, which torch.from_numpy "
                    "shares, or .data) after an operation read it: PyTorch's backward multiplies by the numbers it "
                    "saved, which changed with it, and the replay has the ones it saw"
                }
        return set()

    def _changed_grads(self, before: dict[int, list[float] | None], names: dict[int, str]) -> list[str]:
        """The ``.grad`` of each known leaf that changed since ``before`` (``_grads_before``), by the
        learner's names: PyTorch's pass ran, at least in part, before its error."""
        try:
            now = self._grads_before([])
        except Exception:  # never let the watch break the learner's code
            return []
        if isinstance(now, str):
            return []
        changed = [key for key, held in before.items() if not _same_bits(now.get(key), held)]  # nan is itself
        return [f"{names[key]}.grad" if key in names else "the .grad of a leaf not named" for key in changed]

    def _not_run(
        self, roots: list[torch.Tensor], seeds: list[Any], retain: bool, raised: _Raised, location: str,
        ran: list[str] | None = None,
    ) -> Pass:  # fmt: skip
        """A backward call that raised, with no pass to replay: listed with the error's message, where
        the learner's code raised it (a hook its pass called), and the ``.grad`` the pass changed
        before the error (``ran``)."""
        seed = [v for s in seeds for v in _given_numbers(s)]
        return Pass(
            len(self.passes) + 1,
            location,
            [],
            seed,
            retain,
            replayed=False,
            reason=_unfinished(raised, ran),
            pytorch_ran=bool(ran),
            **raised.fields(),
            seed_shapes=_seed_shapes(roots, seeds),
        )

    def _changes(
        self, error: Exception, names: dict[int, str], roots: Sequence[Any], call: str = "backward()"
    ) -> list[str]:
        """For a pass PyTorch refused because "one of the variables needed for gradient computation
        has been modified by an inplace operation" (its message names the tensor by its type, shape
        and the operation that made it, not as the learner does): the change in place that did it,
        among those the watch saw (``_Change.explains``), named as the learner names the tensor,
        with its line, and what to write instead. Nothing where the watch cannot tell: PyTorch's
        error is raised on as it is, whatever happens here."""
        try:
            return self._changes_named(error, names, call, roots)
        except Exception:  # never let the watch change the learner's error
            return []

    def _changes_named(self, error: Exception, names: dict[int, str], call: str, roots: Sequence[Any]) -> list[str]:
        stale = _STALE.search(str(error)) if "modified by an inplace operation" in str(error) else None
        if stale is None:
            return []
        # where PyTorch's message names a view as what it saved, the changed tensor is its base: a
        # tensor of the view's very shape is not it
        tiers = (0, 2, 3) if _fn_name(stale["fn"] or "") in _VIEWS else (0, 1, 2, 3)
        candidates = [c for c in self._changed if self._read_when_saved(c, int(stale["then"]))]
        found = next((f for tier in tiers if (f := [c for c in candidates if c.explains(stale, tier)])), [])
        if not found:
            if self._changes_seen > len(self._changed):
                return [
                    f"The watch keeps the latest {CHANGES_KEPT} changes in place, and the one PyTorch names is not "
                    "among them: it was made earlier"
                ]
            return []
        found = _narrowed(found, roots)
        said = list(
            dict.fromkeys(f"{c.spelled} on {self._changed_name(c, names)} at {c.location}{c.inside}" for c in found)
        )
        change = found[0]
        head, advice = change.advice(names.get(id(change.changed)), call, saved_leaf=not stale["fn"])
        return [f"{head}: {'; '.join(said)}. {advice}"]

    def _read_when_saved(self, change: _Change, then: int) -> bool:
        """Whether the tensor a change changed (or its base) may be the one a pass saved at version
        ``then``: an operation read it at that version (or made it then, taking gradient), or none
        read it at all (a ``detach()`` of the saved one, which shares its counter). A weight that an
        initialisation changed before any operation read it was read at the next version only."""
        reads = [self._read_at[id(x)] for x in (change.tensor, change.base) if x is not None and id(x) in self._read_at]
        return not reads or any(then in versions for versions in reads)

    def _changed_name(self, change: _Change, names: dict[int, str]) -> str:
        """The tensor a change changed, as the learner names it where the pass was called."""
        if id(change.tensor) in names:
            return names[id(change.tensor)]
        if change.base is not None and id(change.base) in names:
            return f"{names[id(change.base)]} (through a view of it)"
        return "a tensor not named where the pass was called"

    def _refused(
        self, roots: list[torch.Tensor], seeds: list[Any], message: str, location: str, names: dict[int, str]
    ) -> Pass | None:
        """A pass PyTorch refused (with ``message``) because its seed is longer than a one-element
        output (case 3 of the Stack Overflow answer): replayed as the PyTorch of the answer ran it,
        the seed summed."""
        if "Mismatch in shape" not in message or len(roots) != 1 or roots[0].numel() != 1 or seeds[0] is None:
            return None
        entry = self._entries.get(id(roots[0]))
        if entry is None or entry.poisoned or not isinstance(entry.items[0], Value):
            return None
        numbers = numbers_of(seeds[0])
        total: float = in_dtype(numbers[0], entry.single)
        for v in numbers[1:]:
            total = total + in_dtype(v, entry.single)
        self._label(names)
        leaves, _, unnamed = self._compare(_gradients([entry.items[0]], [float(total)]), None, names)
        return Pass(
            len(self.passes) + 1,
            location,
            [entry.items[0]],
            numbers,
            False,
            explainer=functools.partial(
                self._as_of, len(self.passes) + 1, [entry.items[0]], [float(total)], roots[0].dim() == 0
            ),
            leaves=leaves,
            notes=unnamed,
            pytorch_error=message,
            seed_shapes=_seed_shapes(roots, seeds),
            ran_as=(
                "as the PyTorch of the answer ran it (before version 1.3): the seed summed into the output's "
                f"one element, {float(total)!r}"
            ),
        )

    def _explainer(
        self, number: int, outputs: list[Value], seeds: list[float], scalar: bool
    ) -> Callable[[], Explanation] | None:
        """How a ``backward`` pass's explanation is made when first read (``_as_of``), shown toward
        the inputs it names, if it names some; None for a pass with no output replayed."""
        if not outputs:
            return None
        return functools.partial(self._as_of, number, outputs, seeds, scalar, toward=self._inputs_asked())

    def _inputs_asked(self) -> frozenset[Value] | None:
        """The nodes of the tensors a ``backward(inputs=...)`` names, None where it names none: a
        leaf's, each version of it, or a tensor's computed inside the graph (``h = a * b``)."""
        if self._only is None:
            return None
        found = [entry for key in self._only for entry in self._leaves.get(key, [])]
        found += [self._entries[key] for key in self._only if key in self._entries]
        return frozenset(x for entry in found for x in entry.items if isinstance(x, Value))

    def _hooks(self, outputs: list[Value], names: dict[int, str]) -> frozenset[str]:
        """A hook on a tensor the pass reached (``register_hook``, or one run after ``.grad``
        accumulates) may change the gradient PyTorch passes on: the replay does not run hooks, so
        a pass that differs names them as a reason."""
        hooked = [(key, entry) for key, entry in self._entries.items() if _hook_kinds(entry.tensor)]
        if not hooked:
            return frozenset()
        with graph.pass_lock:
            order, leaves = graph.reached(outputs)
        reached = set(order) | set(leaves)
        return frozenset(
            f"a hook on {names.get(key, 'a tensor')} ({kind}), which the replay does not run"
            for key, entry in hooked
            if any(isinstance(x, Value) and x in reached for x in entry.items)
            for kind in _hook_kinds(entry.tensor)
        )

    def _label(self, names: dict[int, str]) -> None:
        """Name the elements of the tensors the learner named (``a[1]``, ``W[0,1]``, ``y``), the
        others' by the order they were made (``t1[0]``), and each expand node by what it expands."""
        named: list[tuple[Entry | None, str]] = [(self._entries.get(key), name) for key, name in names.items()]
        named += self._made_up(names)
        changed: set[int] = set()  # the nodes whose label this pass changed
        for entry, name in named:
            if entry is not None:
                changed.update(self._name_elements(entry, name))
        self._name_described(changed)

    def _name_elements(self, entry: Entry, name: str) -> list[int]:
        """Label each element of ``entry``'s tensor by ``name`` and its index (``W[0,1]``); the ids of
        the nodes whose label changed. A tensor not replayed has no elements to label."""
        if len(entry.items) != entry.tensor.numel():
            return []
        indices = _indices(tuple(entry.tensor.shape))
        return [
            id(item)
            for index, item in zip(indices, entry.items, strict=True)
            if isinstance(item, Value) and self._relabel(item, name + index)
        ]

    def _made_up(self, names: dict[int, str]) -> list[tuple[Entry | None, str]]:
        """Names for what the learner's code names nowhere in this pass: each tensor made since the last
        pass that takes gradient, ``t1``, ``t2``... past every name the learner has given in any pass
        (one made up earlier that the learner now gives another tensor is made up anew); each leaf a
        pass has met, ``leaf 1``... (``_leaf_name``)."""
        made_up: list[tuple[Entry | None, str]] = []
        given = {name.split("[", 1)[0]: key for key, name in names.items()}
        self._names_given |= given.keys()
        for base, key in given.items():  # the learner's now: the tensor that had it made up is named anew
            older = self._made_names.get(base)
            if older is not None and id(older.tensor) != key and id(older.tensor) not in names:
                made_up.append((older, self._fresh(older)))
        for made in self._unnamed:
            if id(made.tensor) not in names and made.takes_gradient:
                made_up.append((made, self._fresh(made)))
        self._unnamed = []
        for key, generations in self._leaves.items():  # a leaf a pass met, with no name here: leaf 1...
            if key not in names and key in self._leaf_numbers:
                made_up += [(generation, self._leaf_name(key)) for generation in generations]
        return made_up

    def _fresh(self, entry: Entry) -> str:
        """The next made-up name, ``t1``, ``t2``..., that the learner has given nothing, for ``entry``."""
        self._count += 1
        while f"t{self._count}" in self._names_given:
            self._count += 1
        name = f"t{self._count}"
        self._made_names[name] = entry
        return name

    def _name_described(self, changed: set[int]) -> None:
        """Name each node that stands for no tensor by what it is made from (``Call.described``): the
        ones made since the last pass, and the older ones whose source a name changed (``changed``, the
        ids of the nodes whose label this pass changed; in the order they were made: a source first)."""
        done, self._described_done = self._described_done, len(self._described)
        for k, (node, source, text) in enumerate(self._described):
            again = k >= done or (source is not None and id(source) in changed)
            if again and self._relabel(node, text.format(source.label if source is not None else "")):
                changed.add(id(node))

    def _leaf_name(self, key: int) -> str:
        """The name of a leaf tensor the learner's code names nowhere in a pass: ``leaf 1``, ``leaf 2``...
        numbered when a pass first meets it (``_compare``), its elements labelled then (``leaf 1[0]``),
        the same in every pass, its summary and its explanation."""
        number = self._leaf_numbers.get(key)
        if number is None:
            number = self._leaf_numbers[key] = len(self._leaf_numbers) + 1
            for generation in self._leaves[key]:
                self._name_elements(generation, f"leaf {number}")
        return f"leaf {number}"

    def _relabel(self, node: Value, label: str) -> bool:
        """Give ``node`` the label this pass names it by, keeping the one the earlier passes named
        it by (``_as_of``): a pass's table reads the names its summary read (``old_b = b`` renames).
        Whether its label changed."""
        if node.label == label:
            return False
        if node.label:
            self._renamed.setdefault(node, []).append((len(self.passes), node.label))
        node.label = label
        return True

    def _as_of(
        self,
        number: int,
        outputs: list[Value],
        seeds: list[float],
        scalar: bool,
        handed_back: str = "",
        toward: frozenset[Value] | None = None,
    ) -> Explanation:
        """Pass ``number``'s explanation, its nodes labelled as that pass named them (``_relabel``);
        ``handed_back``: the call that returned the pass's gradients (``torch.autograd.grad``), if
        not ``backward``; ``toward``: the nodes the pass was asked for (``backward(inputs=...)``,
        ``torch.autograd.grad``'s inputs), where it was: only the part of the graph that leads to
        them is shown, the part PyTorch runs (``_toward``)."""
        then = {
            node: next(label for last, label in history if last >= number)
            for node, history in self._renamed.items()
            if history[-1][0] >= number
        }
        now: dict[Value, str | None] = {node: node.label for node in then}
        for node, label in then.items():
            node.label = label
        try:
            explanation = dataclasses.replace(self._explained(outputs, seeds, scalar), handed_back=handed_back)
            return explanation if toward is None else _toward(explanation, outputs, toward)
        finally:
            for node, held in now.items():
                node.label = held

    def _explained(self, outputs: list[Value], seeds: list[float], scalar: bool) -> Explanation:
        """The explanation of a pass from ``outputs``, without the edges the replay holds for the bits
        alone (``Call.onto_zero``): what it shows, each leaf's sum included, is what the pass depends on."""
        output: Value | Vector = outputs[0] if scalar else Vector(outputs)
        return explained(
            output, seeds[0] if scalar else seeds, shown_operands=self._shown_operands, arguments=self._arguments
        )

    def _compare(
        self, gradients: dict[Value, float], before: dict[int, list[float] | None] | None, names: dict[int, str]
    ) -> tuple[list[LeafReport], frozenset[str], list[str]]:
        """Each leaf's ``.grad`` as the replay makes it beside PyTorch's, the reasons the comparison
        itself finds (an element no path reaches, to which PyTorch gave -0.0 or nan), and a line for
        each leaf with no name of the learner's (``_unnamed_note``)."""
        reports: list[LeafReport] = []
        found: set[str] = set()
        unnamed: list[str] = []
        empty: list[str] = []  # the leaves torch.empty made, which nothing wrote since
        for key, generations in self._leaves.items():
            if self._only is not None and key not in self._only:
                continue  # backward(inputs=...) leaves the others' .grad as it was
            reached, here = _reached_versions(generations, gradients, found)
            if reached is None:  # not in the replay: compared all the same where PyTorch's pass changed its .grad
                reached = generations[-1]
                if before is None or _same_bits(before.get(key), _grad_of(reached.tensor)):
                    continue
            earlier = None if before is None else before.get(key)
            name = names.get(key) or self._leaf_name(key)
            if key in names:
                self._named_before[key] = name
            else:
                unnamed.append(self._unnamed_line(key, name, reached, names))
            report = _leaf_report(name, reached, here, earlier, before)
            if self._unwritten_leaf(reached.tensor):
                empty.append(name)
            if report.pytorch is not None and any(
                d != 0 and item not in here and _dense_zero(number)
                for item, number, d in zip(reached.items, report.pytorch, report.distances, strict=True)
            ):
                found.add(OFF_PATH_NOTE)
            reports.append(report)
        if empty:
            unnamed.append(_UNWRITTEN_NOTE.format(_listed(empty), "it" if len(empty) == 1 else "them"))
        return reports, frozenset(found), unnamed

    def _unwritten_leaf(self, t: torch.Tensor) -> bool:
        """Whether ``t`` lies where ``torch.empty`` made a tensor (itself, a ``detach()``, an
        ``nn.Parameter`` of it, a view of all of it), with the numbers it left there, and no
        operation in place wrote there since (an initialiser's ``zeros_`` over memory that was zero
        is a write; one the watch does not see, through NumPy's view of the memory, is told by the bits)."""
        made = self._unwritten.get(_memory(t)) if t.numel() else None
        return made is not None and made[0].numel() == t.numel() and _bits(t) == made[1]

    def _unnamed_line(self, key: int, name: str, leaf: Entry, names: dict[int, str]) -> str:
        """The line under a pass for a leaf with no name there (``leaf 1``): where the learner's name
        for it in an earlier pass now holds another tensor (``w = w - lr * w.grad``), that and the step
        to write instead; else where the leaf was first used (``_unnamed_note``)."""
        old = self._named_before.get(key)
        holder = next((k for k, n in names.items() if n == old), None)
        if old is None or holder is None:
            return _unnamed_note(name, self._leaves[key][0].seen_at)
        made = self._entries.get(holder)
        computed = made is not None and _computed_from(made, leaf)
        return (
            f"{name} is the leaf that {old} named in an earlier pass; {old} now holds "
            + ("a tensor computed from it" if computed else "another tensor")
            + f" (after {old} = {old} - lr * {old}.grad, {old} is a new tensor, not a leaf: its .grad stays None and "
            f"PyTorch warns when it is read); to step a parameter, change it in place where no graph is recorded: "
            f"with torch.no_grad(): {old} -= lr * {old}.grad"
        )


def _grad_outputs(given: dict[str, Any] | None, args: tuple[Any, ...]) -> list[torch.Tensor]:
    """The outputs ``torch.autograd.grad`` was given, by position or by keyword."""
    return list(_tensors(given.get("outputs") if given is not None else args[:1]))


def _reached_versions(
    generations: list[Entry], gradients: dict[Value, float], found: set[str]
) -> tuple[Entry | None, dict[Value, float]]:
    """The newest version of a leaf the pass reached (None: none), and the gradients with every
    version's added into its elements (``_through_generations``), the reason they may differ added
    to ``found`` where there are several."""
    gens = [g for g in generations if any(v in gradients for v in g.items)]
    if len(gens) < 2:
        return (gens[-1] if gens else None), gradients
    found.add(VERSIONS_NOTE)
    return gens[-1], _through_generations(gradients, gens)


def _through_generations(gradients: dict[Value, float], generations: list[Entry]) -> dict[Value, float]:
    """``gradients`` with each element of a leaf's newest generation given the sum of what the pass
    gave that element in every generation it reached: a pass through a weight as it was before a
    step under no_grad and after (``h = w * 3`` kept with retain_graph, then ``h * w``) reaches two
    generations of one leaf, whose ``.grad`` PyTorch adds both into (one AccumulateGrad), in the
    tensor's type, in the order its engine hands them over: the newest generation's first (its
    operations were made last, and the engine runs the latest made first)."""
    newest = generations[-1]
    merged = dict(gradients)
    for k, item in enumerate(newest.items):
        parts = [
            x
            for g in reversed(generations)
            if k < len(g.items) and isinstance(x := g.items[k], Value) and x in gradients
        ]
        if len(parts) < 2 or not isinstance(item, Value):
            continue
        total = in_dtype(float(gradients[parts[0]]), newest.single)
        for part in parts[1:]:
            total = total + in_dtype(float(gradients[part]), newest.single)
        merged[item] = float(total)
    return merged


def _computed_from(made: Entry, leaf: Entry) -> bool:
    """Whether a tensor's elements are each made by an operation that reads the leaf's element at
    the same place (``w - lr * w.grad``, ``w * 2``)."""
    if len(made.items) != len(leaf.items):
        return False
    return all(
        isinstance(x, Value) and isinstance(y, Value) and any(o is y for o in graph.operands(x))
        for x, y in zip(made.items, leaf.items, strict=True)
    )


def _refused_before(
    name: str, args: Any, entries: dict[int, Entry], flowing: list[Entry], outputs: list[torch.Tensor]
) -> str | None:
    """Why an operation's results cannot be replayed, known before its rule is looked up: a
    ``fill_`` with a tensor that takes gradient (a NO_GRADIENT operation that PyTorch takes
    gradient through all the same), or a result of a type the replay does not follow (float16,
    bfloat16) that gradient flows into; None otherwise."""
    base = name.split(".")[0]
    value = entries.get(id(args[1])) if name == "fill_.Tensor" and len(args) > 1 else None
    if value is not None and (value.takes_gradient or value.poisoned) and torch.is_grad_enabled():
        return (
            f"PyTorch's fill_ with a tensor that takes gradient at {user_location()}, which the replay does not "
            "reproduce"
        )
    if not (flowing and torch.is_grad_enabled() and base not in NO_GRADIENT):
        return None
    made = f"made by PyTorch's {base} at {user_location()}"
    unfollowed = next((r for t in outputs if (r := replay.unfollowed_type(t, made))), None)
    if unfollowed is None:
        return None
    return _first_reason(flowing, outputs) or unfollowed  # the first reason, where it began


def _reduced_precision() -> str | None:
    """The setting under which PyTorch's float32 matrix products may multiply in a lower precision
    (bfloat16, TensorFloat-32), as the learner would write it, or None (full float32, PyTorch's
    default). ``torch.get_float32_matmul_precision()`` raises once the newer per-backend settings
    (``fp32_precision``) are mixed with it: those are read then, the most specific first."""
    try:
        precision = torch.get_float32_matmul_precision()
    except RuntimeError:
        precision = None
    if precision is not None:
        return None if precision == "highest" else f"torch.set_float32_matmul_precision('{precision}')"
    for name in ("torch.backends.mkldnn.matmul", "torch.backends.mkldnn", "torch.backends"):
        setting: Any = torch
        for part in name.split(".")[1:]:
            setting = getattr(setting, part, None)
        value = getattr(setting, "fp32_precision", None)
        if value in (None, "none"):  # inherits the next one's
            continue
        return None if value == "ieee" else f"{name}.fp32_precision = '{value}'"
    return None


MATRIX_NOTES = frozenset({MATMUL_NOTE, MATMUL32_NOTE})
"""The reasons a matrix product gives: a pass with one may differ in its last bits whatever the kernels."""


def _product_note(base: str, outputs: list[torch.Tensor]) -> frozenset[str]:
    """Why a matrix product's gradients may differ: the kernels' order (``MATMUL32_NOTE`` for a
    product of float32 numbers, where the precision PyTorch multiplies in may be reduced too)."""
    if base not in MATRIX_PRODUCTS:
        return frozenset()
    return frozenset({MATMUL32_NOTE if any(t.dtype == torch.float32 for t in outputs) else MATMUL_NOTE})


SAVED_HOOKS_NOTE = (
    "an operation ran under your torch.autograd.graph.saved_tensors_hooks: PyTorch's backward multiplies by "
    "what the unpack hook returns in place of what the operation saved, which the replay does not run"
)


def _toward(explanation: Explanation, outputs: list[Value], targets: frozenset[Value]) -> Explanation:
    """``explanation`` cut to the nodes that lead to ``targets`` (and the targets): PyTorch's pass
    for some inputs (``backward(inputs=[a])``, ``torch.autograd.grad(y, [a])``) runs only that part
    of the graph, and leaves the other leaves' ``.grad`` as they were. A node that leads to a target
    is handed its gradient by nodes that lead to it too: its steps and sums stay as they were."""
    order, _ = graph.reached(outputs)
    leading: set[Value] = set(targets)
    for node in reversed(order):  # each node after the operands it was computed from
        if any(operand in leading for operand in graph.operands(node)):
            leading.add(node)
    names = {value: name for value, name in explanation.names.items() if value in leading or value in outputs}
    kept = {name for value, name in names.items() if value in leading}
    return dataclasses.replace(
        explanation,
        steps=[step for step in explanation.steps if step.operand in kept],
        gradients={value: g for value, g in explanation.gradients.items() if value in leading},
        names=names,
        formulas={name: shown for name, shown in explanation.formulas.items() if name in kept},
    )


def _saved_hooks_note() -> frozenset[str]:
    """``SAVED_HOOKS_NOTE`` where the operation under way runs under a pair of
    ``saved_tensors_hooks`` of the learner's (PyTorch's own function tells, in C), else nothing.
    PyTorch's own pairs (``save_on_cpu``, a non-reentrant ``checkpoint``), told by where their
    pack hook's code lies, give the numbers back as they were: a pass under them that differs does
    so for another reason, which the note would hide."""
    top = getattr(torch._C._autograd, "_top_saved_tensors_default_hooks", None)
    hooks = top(False) if top is not None else None
    if hooks is None:
        return frozenset()
    code = getattr(hooks[0], "__code__", None)
    pytorchs = code is not None and code.co_filename.startswith(_TORCH_HOME)
    return frozenset() if pytorchs else frozenset({SAVED_HOOKS_NOTE})


def _precision_notes(notes: frozenset[str]) -> frozenset[str]:
    """Why a pass through a float32 matrix product (``notes`` holds ``MATMUL32_NOTE``) may differ,
    from the precision its backward products run under now: the replay reads PyTorch's forward
    numbers, so the forward's setting does not matter."""
    setting = _reduced_precision() if MATMUL32_NOTE in notes else None
    if setting is None:
        return frozenset()
    return frozenset(
        {
            f"a float32 matrix product under {setting}: PyTorch may multiply in a lower precision (bfloat16 or "
            "TensorFloat-32), which the replay does not follow; full float32 is PyTorch's default"
        }
    )


def _takes_gradient(base: str, flowing: list[Entry], outputs: list[torch.Tensor]) -> bool:
    """Whether an operation's results take gradient: some operand does, grad mode is on, the
    operation is differentiable and a result is of a floating type the replay follows."""
    differentiable = any(t.dtype in replay.DIFFERENTIABLE for t in outputs)
    return bool(flowing) and torch.is_grad_enabled() and base not in NO_GRADIENT and differentiable


def _first_reason(flowing: list[Entry], outputs: list[torch.Tensor]) -> str | None:
    """Why the results cannot be replayed (an operand that could not be, or a result too large), or None."""
    poisoned = next((e.poisoned for e in flowing if e.poisoned), None)
    return poisoned or next((too_large(t) for t in outputs if t.numel() > LARGEST), None)


def func_changes(call: Call, t: torch.Tensor) -> bool:
    """Whether ``call`` changed ``t`` in place (its first operand was copied before it ran)."""
    first = call.args[0] if call.args else None
    return isinstance(first, torch.Tensor) and first is not t and call.name.split(".")[0].endswith("_")


def _leaf_report(
    name: str,
    reached: Entry,
    gradients: dict[Value, float],
    earlier: list[float] | None,
    before: dict[int, list[float] | None] | None,
) -> LeafReport:
    """One leaf's ``.grad`` as the replay makes it (what it held before the pass, plus the pass's
    gradient, in the tensor's type) beside PyTorch's (None where PyTorch ran no such pass)."""
    single = reached.single
    replayed: list[float] = []
    parts: list[float] = []
    for k, item in enumerate(reached.items):
        part = in_dtype(float(gradients.get(item, 0.0) if isinstance(item, Value) else 0.0), single)
        parts.append(float(part))
        replayed.append(float(part if earlier is None else in_dtype(earlier[k], single) + part))
    pytorch = None if before is None else _grad_of(reached.tensor)
    if pytorch is None and before is not None:
        pytorch = [float("nan")] * len(replayed)
    compared = is_single(reached.tensor)  # in PyTorch's type now, whatever the replay took it for
    distances = [] if pytorch is None else [ulps(a, b, compared) for a, b in zip(replayed, pytorch, strict=True)]
    held = None if earlier is None or _same_bits(earlier, [0.0] * len(earlier)) else earlier
    report = LeafReport(name, tuple(reached.tensor.shape), replayed, pytorch, distances, single=compared)
    return report if held is None else dataclasses.replace(report, held=list(held), added=parts)


def _unnamed_note(name: str, seen_at: str) -> str:
    """The line under a pass for a leaf with no name where backward was called (``leaf 1``) or in
    the learner's code that called that (``_names``), often the tensor of
    ``x = torch.randn(3, requires_grad=True) * 2``, where ``x`` names the product."""
    return (
        f"{name} has no name the watch found where backward was called or in the code that called it; it was "
        f"first used at {seen_at or '<unknown>'} (where a name holds a result such as "
        "x = torch.randn(3, requires_grad=True) * 2, x is the product, which is not a leaf: its .grad stays None; "
        "the leaf is the tensor made with requires_grad=True)"
    )


def _dense_zero(number: float) -> bool:
    """What PyTorch's 0 becomes when an operation multiplies it: -0.0 (by a negative number) or nan."""
    return math.isnan(number) or (number == 0.0 and math.copysign(1.0, number) < 0)


def _same_bits(a: list[float] | None, b: list[float] | None) -> bool:
    """Whether two ``.grad``s (None where there is none) hold the same numbers, bit for bit."""
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and struct.pack(f"<{len(a)}d", *a) == struct.pack(f"<{len(b)}d", *b)


def _hook_kinds(t: torch.Tensor) -> list[str]:
    """How the learner hooked ``t``, by the name of the method that registered each kind of hook:
    ``register_hook`` (it sees, and may replace, the gradient passed on) and
    ``register_post_accumulate_grad_hook`` (run after ``.grad`` accumulates; it may change it)."""
    kinds = {"_backward_hooks": "register_hook", "_post_accumulate_grad_hooks": "register_post_accumulate_grad_hook"}
    return [method for attribute, method in kinds.items() if getattr(t, attribute, None)]


def _reaches(entry: Entry, gradients: dict[Value, Any]) -> bool:
    """Whether a pass's gradients reach a generation of a leaf."""
    return any(v in gradients for v in entry.items)


def constant_numbers(t: torch.Tensor) -> list[float]:
    """The numbers of a tensor the replay may hold as constants: a floating tensor's, a boolean
    mask's, and an integer tensor's as floats (``x * torch.arange(3)``: PyTorch turns them into the
    float operand's type); none for a complex tensor, which the replay does not follow."""
    if t.dtype.is_complex:
        return []
    if t.dtype.is_floating_point or t.dtype == torch.bool:
        return numbers_of(t)
    return [float(v) for v in numbers_of(t)]


def _is_leaf(t: torch.Tensor) -> bool:
    return bool(t.requires_grad) and t.grad_fn is None and t.dtype in replay.DIFFERENTIABLE


def _grad_of(t: torch.Tensor) -> list[float] | None:
    grad = t.grad
    return None if grad is None else numbers_of(grad)


def _seed_shapes(roots: Sequence[Any], seeds: Sequence[Any]) -> list[tuple[int, ...]]:
    """The shapes a pass's seed is written in (``Pass.seed_shapes``): each seed's own where it is a
    tensor (one PyTorch refuses for its shape is written in it, the shape its message names), else
    its output's (a number, or no seed: one for each element)."""
    return [
        tuple(seed.shape if isinstance(seed, torch.Tensor) else root.shape)
        for root, seed in zip(roots, seeds, strict=True)
    ]


def _given_seed(given: dict[str, Any] | None) -> tuple[list[float], list[tuple[int, ...]] | None]:
    """The seed of a ``torch.autograd.grad`` PyTorch refused (its ``grad_outputs``) and its shapes, as
    a refused backward's (``_not_run``); none where its arguments cannot be read (PyTorch's error says
    what they were) or it came through ``torch.func`` (``given`` None)."""
    try:
        roots, seeds, _ = _grad_tensors(given or {})
        return [v for s in seeds for v in _given_numbers(s)], _seed_shapes(roots, seeds)
    except Exception:  # never let the watch change the learner's error
        return [], None


def _given_numbers(seed: Any) -> list[float]:
    """The numbers of a seed as the learner gave it to a call PyTorch refused (none for no seed)."""
    try:
        if isinstance(seed, torch.Tensor):
            return numbers_of(seed)
        return [float(v) for v in seed] if isinstance(seed, (list, tuple)) else [float(seed)]
    except Exception:  # not numbers at all: PyTorch's message says what it got
        return []


@functools.cache
def _indices(shape: tuple[int, ...]) -> list[str]:
    """``[0,0]``, ``[0,1]``...: each element's index in row-major order (one empty for a 0-d tensor)."""
    if not shape:
        return [""]
    return ["[" + ",".join(map(str, index)) + "]" for index in itertools.product(*map(range, shape))]


CALLERS = 64
"""How many frames of the learner's code, from the one that called backward outward, ``_names``
reads (a recursion deeper than that names its leaves by the innermost frames')."""


def _names(frame: types.FrameType | None) -> dict[int, str]:
    """The learner's names for tensors, by id (``_names_at``): those of the frame that called
    backward, then of the frames of the learner's code that called it, up to ``CALLERS`` (a
    helper's ``train_step(loss)`` names no leaf; its caller's ``model`` does), each naming only the
    tensors the frames inside it did not. A frame of installed code (a library's trainer between
    the learner's frames, whose ``module`` is the learner's ``net``) names nothing. One budget of
    items read (``NAMES_READ``) serves the whole walk."""
    names: dict[int, str] = {}
    read: set[int] = set()  # the globals of a module read once, at its innermost frame
    budget = [NAMES_READ]
    frames = 0
    while frame is not None and frames < CALLERS:
        if _learners_code(frame.f_code) and not installed_file(frame.f_code.co_filename):
            frames += 1
            for key, name in _names_at(frame, read, budget).items():
                names.setdefault(key, name)
        frame = frame.f_back
    return names


def _names_at(frame: types.FrameType, read: set[int], budget: list[int]) -> dict[int, str]:
    """The names of one frame: its locals (and its module's globals, unless in ``read``) and the
    parameters of the modules there (``model.fc.weight``), reading at most ``budget`` items of
    containers (``_kept_names``).
    A module's path wins over a plain name: after ``for p in model.parameters(): ...`` the loop's
    ``p`` still holds the last parameter, which is ``model.bias``, not ``p``. Of two plain names,
    the first bound wins (the locals before the globals): after ``for p in [W, b]: ...``, ``b``
    is still ``b``. Tensors and modules kept in a dict, list or tuple there are named by where they
    are kept (``params["w"]``, ``layers[0].weight``), after the plain names."""
    names: dict[int, str] = {}
    scopes = [] if frame.f_locals is frame.f_globals else [frame.f_locals]
    if id(frame.f_globals) not in read:
        read.add(id(frame.f_globals))
        scopes.append(frame.f_globals)
    paths: dict[int, str] = {}
    kept: list[tuple[str, Any]] = []
    for scope in scopes:
        for key, value in list(scope.items()):
            if key.startswith("__"):
                continue
            with contextlib.suppress(Exception):  # an object that raises when read is not named
                _name_of(key, value, names, paths, kept)
    _kept_names(kept, names, paths, budget)
    return names | paths


def _kept_names(kept: list[tuple[str, Any]], names: dict[int, str], paths: dict[int, str], budget: list[int]) -> None:
    """The tensors and modules' parameters in the dicts, lists and tuples ``kept`` (by the name
    that holds each), named by where they are kept, a level at a time (``params["w"]`` before
    ``params["layer1"]["w"]``), to ``CONTAINER_DEPTH`` levels, while ``budget`` lasts."""
    for _ in range(CONTAINER_DEPTH):
        deeper: list[tuple[str, Any]] = []
        for key, container in kept:
            if budget[0] <= 0:  # a pass's naming stays cheap beside the pass, whatever the scope holds
                return
            with contextlib.suppress(Exception):  # a container of the learner's that raises when read
                _names_in(key, container, names, paths, deeper, budget)
        kept = deeper[:CONTAINER_ITEMS]


def _names_in(
    key: str, container: Any, names: dict[int, str], paths: dict[int, str], deeper: list[tuple[str, Any]],
    budget: list[int],
) -> None:  # fmt: skip
    """The items of one dict, list or tuple ``container`` (held at ``key``) named, the first
    ``CONTAINER_ITEMS``, or the attributes of an object of the learner's (``_Attributes``: ``n.w``);
    an item that raises when read is not named."""
    if isinstance(container, _Attributes):
        budget[0] -= min(len(container.attributes), CONTAINER_ITEMS)
        for k, value in itertools.islice(container.attributes.items(), CONTAINER_ITEMS):
            if isinstance(k, str) and k.isidentifier():
                with contextlib.suppress(Exception):
                    _name_of(f"{key}.{k}", value, names, paths, deeper)
        return
    budget[0] -= min(len(container), CONTAINER_ITEMS)
    pairs = container.items() if isinstance(container, dict) else enumerate(container)
    for k, value in itertools.islice(pairs, CONTAINER_ITEMS):
        if not isinstance(k, (str, int)):
            continue
        plain = isinstance(k, str) and k.isprintable() and '"' not in k and "\\" not in k
        with contextlib.suppress(Exception):
            _name_of(f'{key}["{k}"]' if plain else f"{key}[{k!r}]", value, names, paths, deeper)


def _name_of(
    where: str, value: Any, names: dict[int, str], paths: dict[int, str], containers: list[tuple[str, Any]]
) -> None:
    """``value``, found at ``where`` (a name, ``params["w"]``): a tensor named so unless named
    already, a module's parameters by their paths from it, a dict, list or tuple kept in
    ``containers`` to look in next."""
    if isinstance(value, torch.Tensor):
        names.setdefault(id(value), where)
    elif isinstance(value, torch.nn.Module):
        _module_paths(where, value, paths)
    elif isinstance(value, (dict, list, tuple)):
        containers.append((where, value))
    elif _learners(value):
        containers.append((where, _Attributes(object.__getattribute__(value, "__dict__"))))


@dataclasses.dataclass(frozen=True)
class _Attributes:
    """The attributes of an object of the learner's own class, looked in as a dict is (``n.w``)."""

    attributes: dict[str, Any]


_NOT_INSTANCES = (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType)


def _learners(value: Any) -> bool:
    """Whether ``value`` is an object of a class of the learner's own, with attributes: the class
    defined in the script (``__main__``) or in a file of theirs, not in an installed library, the
    standard library or vjpgrad (micrograd's ``Neuron`` keeping ``self.w`` written in PyTorch)."""
    if isinstance(value, _NOT_INSTANCES) or not isinstance(object.__getattribute__(value, "__dict__"), dict):
        return False
    module = type(value).__module__
    if module == "__main__":
        return True
    if not isinstance(module, str) or module.partition(".")[0] == "vjpgrad":
        return False
    path = getattr(sys.modules.get(module), "__file__", None)
    if not isinstance(path, str):
        return False
    installed = f"{os.sep}site-packages{os.sep}" in path or f"{os.sep}dist-packages{os.sep}" in path
    return not installed and not path.startswith(_PREFIXES)


_PREFIXES = tuple({os.path.join(p, "") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)})
"""The interpreter's folders: a class whose module lies there is the standard library's."""

CONTAINER_ITEMS = 1_000
"""The items of each dict, list or tuple (or object's attributes) where backward is called that
``_names`` looks in."""
NAMES_READ = 50_000
"""The most items (of dicts, lists, tuples and objects) ``_names`` reads for one pass, in all the
frames it reads: a scope that holds a dataset of nested lists costs some milliseconds a pass, not a
second."""
CONTAINER_DEPTH = 6
"""How deep in dicts, lists, tuples and the learner's objects ``_names`` looks (``params["layer1"]["w"]``:
2; micrograd's ``model.layers[0].neurons[1].w``: 5)."""


def _module_paths(where: str, module: torch.nn.Module, paths: dict[int, str]) -> None:
    """Each parameter of ``module`` by its path from ``where`` as Python reaches it (``model.fc.weight``,
    ``model[0].weight``: ``_python_path``), unless named."""
    for pname, p in module.named_parameters():
        paths.setdefault(id(p), where + _python_path(module, pname))


_INDEXED = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ParameterList)
"""The modules whose parts a learner reaches by their position (``model[0]``, ``layers[1]``)."""


def _python_path(module: torch.nn.Module, dotted: str) -> str:
    """``named_parameters``'s ``layers.0.weight`` as the learner types it from ``module``:
    ``.layers[0].weight``: a part of a ``Sequential``, ``ModuleList`` or ``ParameterList`` by its
    position, one that is a name by ``.``, any other (a ``ModuleDict``'s key ``"2"``) by ``["2"]``."""
    text, current = "", module
    for part in dotted.split("."):
        if part.isdigit() and isinstance(current, _INDEXED):
            text += f"[{part}]"
        elif part.isidentifier():
            text += f".{part}"
        else:
            text += f'["{part}"]' if part.isprintable() and '"' not in part and "\\" not in part else f"[{part!r}]"
        inner = current._modules.get(part)
        current = inner if inner is not None else current  # a parameter's name ends the path
    return text


def _seeded(pairs: list[tuple[Item, float]]) -> tuple[list[Value], list[float]]:
    """The outputs that take gradient, with their seeds (an element that is a constant takes none)."""
    kept = [(x, s) for x, s in pairs if isinstance(x, Value)]
    return [x for x, _ in kept], [s for _, s in kept]


def _grad_unreplayed(given: dict[str, Any] | None) -> str | None:
    """Why a ``torch.autograd.grad`` call (its arguments by name; None for ``torch.func``'s) is not
    replayed, or None where it is."""
    if given is None:
        return (
            "torch.func's transforms (grad, vjp, jacrev, ...) hand their gradients back from a pass of their "
            "own, which the watch does not replay: write loss.backward() to see this pass replayed"
        )
    if given.get("create_graph"):
        return (
            "create_graph=True makes a graph of the gradients it hands back, a pass the replay does not make: "
            "without it, the gradients it returns are compared"
        )
    if given.get("is_grads_batched"):
        return "is_grads_batched=True runs a batch of seeds at once (a vmap over the pass), which is not replayed"
    inputs = given.get("inputs")
    if not all(
        isinstance(t, torch.Tensor) for t in ([inputs] if isinstance(inputs, torch.Tensor) else list(inputs or ()))
    ):
        return "inputs that are not tensors (a GradientEdge), which the watch does not follow"
    return None


def _grad_tensors(given: dict[str, Any]) -> tuple[list[Any], list[Any], list[Any]]:
    """``torch.autograd.grad``'s outputs, a seed for each (None where none was given, or where their
    counts differ, which PyTorch refuses), and its inputs, each as a list."""
    outputs, seeds, inputs = given["outputs"], given.get("grad_outputs"), given["inputs"]
    roots = [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)
    seeds = [seeds] if isinstance(seeds, torch.Tensor) or seeds is None else list(seeds)
    wrt = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
    return roots, seeds if len(seeds) == len(roots) else [None] * len(roots), wrt


def _applying(notes: frozenset[str], gradients: dict[Value, Any]) -> frozenset[str]:
    """The reasons a pass may differ that apply to it: those that need a gradient holding an
    infinity or a nan (``replay.NAN_ONLY_NOTES``) left out where every gradient is finite."""
    if notes.isdisjoint(replay.NAN_ONLY_NOTES) or not all(map(math.isfinite, gradients.values())):
        return notes
    return notes - replay.NAN_ONLY_NOTES


def _nan_signs(reports: list[LeafReport]) -> frozenset[str]:
    """``NAN_SIGNS_NOTE`` where an element of a leaf differs from PyTorch's as a nan alone (nan
    against nan, another sign or payload), else nothing. Which sign a nan keeps where two meet is the
    machine code's: CPython 3.11 and later keep the first operand's in ``(-nan) + nan`` on a
    line's first runs and the second's once the line is specialised, so the replay's nan may have
    either sign."""
    for report in reports:
        if report.pytorch is not None and any(
            d != 0 and math.isnan(a) and math.isnan(b)
            for a, b, d in zip(report.replayed, report.pytorch, report.distances, strict=True)
        ):
            return frozenset({NAN_SIGNS_NOTE})
    return frozenset()


def _cotangents(outputs: list[Value], seeds: list[float], *, leaves_only: bool = False) -> dict[Value, Any]:
    """What the pass gives every node it reaches, leaves and the nodes inside the graph alike (the
    gradient ``torch.autograd.grad`` hands back for a tensor inside the graph), or the leaves alone
    (``leaves_only``): the engine's own pass (``graph.propagate``), without the record of every
    edge that ``explain`` keeps, and without touching any ``.grad``."""
    with graph.pass_lock:
        order, leaves = graph.reached(outputs)
        graph.seed(outputs, seeds)
        graph.propagate(order)
        kept = leaves if leaves_only else (*order, *leaves)
        return {node: graph.cotangent(node) for node in kept}


def _gradients(outputs: list[Value], seeds: list[float]) -> dict[Value, float]:
    """What the pass gives each leaf it reaches (``backward``'s gradients): ``_cotangents`` kept to
    the leaves."""
    return _cotangents(outputs, seeds, leaves_only=True)


def _roots_and_seeds(given: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """``backward``'s outputs as a list, and a seed for each (None where none was given, or where
    their counts differ, which PyTorch refuses)."""
    tensors = given["tensors"]
    roots = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
    seeds = given.get("grad_tensors")
    if seeds is None:
        seeds = given.get("grad_variables")
    if isinstance(seeds, torch.Tensor) or seeds is None:
        seeds = [seeds]
    else:
        try:
            seeds = list(seeds)
        except TypeError:  # (backward(2.0): not iterable, and PyTorch's own error says so)
            seeds = [seeds]
    return roots, seeds if len(seeds) == len(roots) else [None] * len(roots)


def _read_once(given: Any) -> Any:
    """An argument of ``backward`` as a tuple when it is an iterable other than a tensor (a
    generator, ``inputs=model.parameters()``): PyTorch takes any iterable, and a generator the
    watch read first would reach PyTorch empty. A tensor, a GradientEdge, None, and what is not
    iterable (for PyTorch's own error) are left as they are."""
    if given is None or isinstance(given, (torch.Tensor, torch.autograd.graph.GradientEdge)):
        return given
    try:
        return tuple(given)
    except TypeError:
        return given


def _pytorchs_backward(
    tensors: Any,
    grad_tensors: Any = None,
    retain_graph: Any = None,
    create_graph: bool = False,
    grad_variables: Any = None,
    inputs: Any = None,
) -> None:
    """The signature of ``torch.autograd.backward`` in every torch the bridge takes (2.1 to 2.14)."""


_ENTERED: list[Watch] = []
"""The watches entered and not exited, in the order they were entered: each one hands what it does
not watch to the one before it, the first to PyTorch's own (``_PYTORCHS``). Kept here, not in each
watch, so that watches exited in another order (two threads, each with its own; ``__exit__`` called
by hand) leave the chain whole and PyTorch as it was once the last one exits."""
_PYTORCHS: list[Any] = []
"""``torch.autograd.backward``, ``grad`` and the engine's entry point as they were before the first
watch of ``_ENTERED`` was entered."""
_CHAIN_LOCK = threading.Lock()


def _rewire() -> None:
    """Wire PyTorch's functions through the watches entered, the latest first (under ``_CHAIN_LOCK``)."""
    if not _PYTORCHS:
        return
    backward, grad, engine = _PYTORCHS
    for watch in _ENTERED:
        watch._original, watch._original_grad, watch._original_engine = backward, grad, engine
        backward, grad = watch._backward, watch._autograd_grad
        engine = None if engine is None else watch._engine
    torch.autograd.backward, torch.autograd.grad = backward, grad
    if engine is not None:
        setattr(torch.autograd, _ENGINE, engine)


def _signature(backward: Any) -> inspect.Signature:
    """``torch.autograd.backward``'s own signature, through the watches entered before this one
    (a learner's ``watch_torch()`` inside ``explain-torch``'s: each sees the arguments as given).
    A function of the learner's in its place that names no ``tensors`` (``*args, **kwargs``) is
    read by PyTorch's signature, to which it hands them on."""
    while isinstance(getattr(backward, "__self__", None), Watch):
        backward = backward.__self__._original
    signature = inspect.signature(backward)
    return signature if "tensors" in signature.parameters else inspect.signature(_pytorchs_backward)


def _subclass(t: torch.Tensor) -> str:
    """Why a tensor of a subclass of ``torch.Tensor`` (not ``nn.Parameter``) was never seen made, or ""
    for a plain tensor: its class wraps each result in a new object of its own, after the operation
    the watch saw, so no result of it is one the watch knows."""
    kind = type(t)
    if kind is torch.Tensor or issubclass(kind, torch.nn.Parameter):
        return ""
    return (
        f"of {kind.__name__}, a subclass of torch.Tensor: its operations hand back new objects of its class, "
        "which the watch never sees made, so it replays plain tensors and nn.Parameter only"
    )


_UNSEEN = (
    "made before watch_torch() began: the watch did not see the operations that made it (run the forward pass "
    "inside the watch)"
)
_UNSEEN_GRADIENT = (
    "made by a backward pass with create_graph=True or before watch_torch() began. A pass from a gradient, or "
    "from a tensor computed from one, is a second derivative; the replay shows first derivatives only"
)
_CHANGED_UNSEEN = "changed where the watch could not see (its numbers, by no operation the watch saw)"


def _unseen(t: torch.Tensor, names: dict[int, str], how: str) -> str:
    """Why a pass from ``t``, which the watch never saw made (``how``: ``Watch._unseen``), is not
    replayed, naming it."""
    name = names.get(id(t))
    return f"{name + ', ' if name else ''}a tensor {how}"


_ENGINE = "_engine_run_backward"
"""The name in ``torch.autograd`` of the function ``backward`` and ``grad`` start PyTorch's engine
with (torch 2.3 on); the watch passes every pass through it, and lists one it did not start."""
_IMPORTED_BEFORE = (
    "it was started through torch.autograd's backward or grad imported before watch_torch() began "
    "(from torch.autograd import grad), which the watch cannot replay: write torch.autograd.grad(...) "
    "or torch.autograd.backward(...), or y.backward(), inside the watch"
)


def _bases_changed(op: str, args: Any, outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The base of the view an in-place operation (``op``, its name without overload) changed
    (``p[1:].mul_(2)`` changes ``p``): its first operand's, where that is a view and is its result."""
    first = outputs[0] if outputs else None
    if first is None or not op.endswith("_") or not args or args[0] is not first or first._base is None:
        return []
    return [first._base]


def _shown_in(view: torch.Tensor, base: torch.Tensor) -> tuple[list[int], dict[int, int]]:
    """Where a view's elements lie in their memory, in its order, and which of its base's elements
    (by position, row-major) lies at each place of that memory: the view's element ``k`` is the
    base's element ``position[shown[k]]``."""
    places = torch.arange(base.untyped_storage().nbytes() // base.element_size())
    shown = numbers_of_index(torch.as_strided(places, view.shape, view.stride(), view.storage_offset()))
    where = numbers_of_index(torch.as_strided(places, base.shape, base.stride(), base.storage_offset()))
    return shown, {s: k for k, s in enumerate(where)}


def _version(t: torch.Tensor) -> int:
    """PyTorch's version counter of ``t``, which each in-place change of it (or of a tensor that
    shares its memory as a view) raises; -1 for a tensor that keeps none (an inference tensor)."""
    try:
        return int(t._version)
    except (RuntimeError, AttributeError):
        return -1


__all__ = ["Single", "TorchReplayError", "Watch"]
