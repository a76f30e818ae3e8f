"""A function's world: everything it can reach, observed as a list of facts.

``observe`` walks, from a function and the objects a call was given, everything the function
can reach, each object as the row of ``KINDS`` its type falls in says: the one table of kinds
of object, each with how its state is read or why it is refused. A user's function: its code,
closure cells, defaults, attributes (``__dict__``) and the globals its code names (and the code
of every function it reaches, transitively); a library's function where it wraps the user's
(``__wrapped__``, ``singledispatch``'s registry, vjpgrad's transforms, the functions in the
closure of a wrapper made without ``functools.wraps``); instances' ``__dict__``s and slots;
containers' items, their lengths and order (a dict's keys by value, as its values); buffers
(``bytearray``, ``array``, a NumPy array) by their bytes; weak references and containers by
what they hold; the classes and bases of the objects reached (their ``__dict__`` keys, the
entries its code names, and their special methods, which Python calls without naming them);
a user's module's entries its code names, those it lacks, and its ``__getattr__``; a library's
abstract classes the code names (``collections.abc.Sized``): what is registered with each and
with its subclasses, which ``isinstance`` answers from; the names
its code finds in ``builtins`` (``fn.__builtins__``). Where the
code reached computes names (``getattr``, ``vars``, ``globals()``, an ``attrgetter`` held...),
every entry of the namespaces it reaches is watched; where it compares with ``is``, which
numbers are one object. What it observes is a list of ``Fact``: each object's identity, each
Python or NumPy number's type and bits, each string, bytes, bool and None, each Value's
identity, ``requires_grad`` and attributes, each random generator's state.

Two observations of one world are equal exactly when nothing the function can reach changed.
``compile`` compares the world before and after the recorded call (a side effect is refused; a
generator's state changed is a random draw) and turns the observation into the guard of each
later call (``guard.written``), which does not check generators' states.

Not walked into, and so watched by identity only: installed code (``installed_locations``:
its modules, classes and functions, and its objects that keep their own state, a logger, a
lock), vjpgrad itself, and C objects' insides; plain data of a library (an
``argparse.Namespace``, a ``ChainMap``, a dataclass, a ``ConfigParser``, a ``queue.Queue``,
``os.environ``, vjpgrad's models and optimizers) is walked like the user's, so is the plain data
a library's module keeps where the code reads it (``_MODULE_STATE``: ``os.environ`` read as
``os.environ`` or through ``os.getenv``), and the bytes of
ctypes data and of an ``mmap`` are compared as a buffer's. A name the code reads that its
globals lack is looked up in the function's builtins: Python's own (``len``, ``print``) by
identity, a name set or rebound there by the user's code walked as a global. Refused
(``UnwatchableError``): iterators and generators, ``weakref.proxy``, frames, an object whose
class defines ``__getattribute__`` or whose attribute access raises anything but
``AttributeError``, what hides the state it holds (a ``functools.cmp_to_key`` key, a
``numpy.frompyfunc`` ufunc, a ctypes pointer, a ``queue.SimpleQueue``, a ``ContextVar``). A
user's ``functools.lru_cache`` is walked to the function it wraps, and a call of it while
recording is refused (its cache is C state). A world of more than ``WORLD_LIMIT`` objects and
items is refused at recording, naming its largest container.
"""

from __future__ import annotations

import abc
import argparse
import array
import builtins
import collections
import contextlib
import dataclasses
import datetime
import decimal
import dis
import enum
import functools
import importlib.util
import inspect
import io
import numbers
import operator
import os
import random
import re
import site
import string
import struct
import sys
import sysconfig
import threading
import types
import weakref
from collections.abc import Callable, Collection
from typing import Any, NamedTuple

from vjpgrad.core.modes import OWN_CODE
from vjpgrad.core.value import Value

WORLD_LIMIT = 100_000
"""Objects and container items a world may hold, at most: beyond it, recording is refused
(the guard checks each of them at every call, so a dataset the function names would make
every call slow; pass the part the function needs as an argument instead)."""

MISSING = type("Missing", (), {"__repr__": lambda self: "<missing>"})()
"""What a namespace holds under a name it does not hold (a builtin, or a name defined later)."""


def _folder(path: str) -> str:
    return os.path.join(os.path.abspath(path), "")


def _site_folders() -> list[str]:
    """Where ``site`` installs packages: site-packages of this Python (or environment) and the user's."""
    found = []
    for folders in (getattr(site, "getsitepackages", list), getattr(site, "getusersitepackages", str)):
        try:
            got: Any = folders()
        except Exception:
            continue
        if got is not None:  # Pyodide's site has no user folder: getusersitepackages() gives None
            found += [got] if isinstance(got, str) else list(got)
    return found


_PYTHONS_BUILTINS = dict(vars(builtins))
"""Python's builtins as they were when vjpgrad was imported: a compiled function's names found
there are checked by identity; a name set or rebound since is walked as a global."""


def _is_pythons_builtin(key: str, x: Any) -> bool:
    """An entry of builtins (or its absence) checked by identity alone: Python's own, unchanged."""
    return x is MISSING or (x is _PYTHONS_BUILTINS.get(key, MISSING) and not is_scalar(x))


_installed: dict[tuple[str, ...], tuple[str, ...]] = {}
_STARTED_IN = _folder(os.getcwd())
"""The current folder when vjpgrad was imported: the user's project, wherever the program goes."""


_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", ".git")
"""What marks a folder as a project's root: the files pytest and packaging tools look for."""


@functools.lru_cache(maxsize=64)
def _project_root(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` that holds one of ``_PROJECT_MARKERS``: the
    project a script or a test run from a subfolder belongs to (``course/tests`` in
    ``course/``, whose ``src`` pytest's ``pythonpath`` puts on ``sys.path``); None if none."""
    here = os.path.abspath(folder)
    while True:
        if any(os.path.exists(os.path.join(here, marker)) for marker in _PROJECT_MARKERS):
            return _folder(here)
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def installed_locations() -> tuple[str, ...]:
    """The folders where installed code lives (never walked; watched by identity): Python's
    library and site-packages (``sysconfig``), ``site``'s folders (the user site too), and every
    other entry of ``sys.path`` outside the user's project (``PYTHONPATH`` entries, folders
    added by ``.pth`` files). The user's project is the current folder (now, and when vjpgrad
    was imported) and the folder of the script run, with the folders under them: code found
    there is the user's, unless it is under an installed location itself (a ``.venv`` in the
    project)."""
    key = tuple(sys.path)
    known = _installed.get(key)
    if known is not None:
        return known
    roots = set(_pythons_folders()) | set(on_path_outside_the_project())
    _installed.clear()  # one sys.path at a time
    known = _installed[key] = tuple(sorted(roots))
    return known


def _pythons_folders() -> list[str]:
    """Python's library and site-packages (``sysconfig``) and ``site``'s folders."""
    paths = sysconfig.get_paths()
    roots = [_folder(p) for name in ("stdlib", "platstdlib", "purelib", "platlib") if (p := paths.get(name))]
    return roots + [_folder(p) for p in _site_folders()]


def installed_file(path: str) -> bool:
    """Whether a file is installed code (never walked): Python's library and site-packages, and
    vjpgrad's own code, always; else a file in the user's project (``project_folders``) is theirs,
    whatever folder above it is on ``sys.path`` (``sys.path.insert(0, "..")`` as an absolute path,
    PyCharm's project folder on ``PYTHONPATH``); else one under another folder of ``sys.path``
    (``on_path_outside_the_project``) is installed."""
    if path.startswith((*OWN_CODE, "<frozen")):
        return True
    where = os.path.abspath(path)
    if where.startswith((*_python_folders(), *OWN_CODE)):
        return True
    if where.startswith(tuple(project_folders())):
        return False
    return where.startswith(installed_locations())


def _python_folders() -> tuple[str, ...]:
    """Python's library and site-packages (``_pythons_folders``), by ``sys.path`` (a virtual
    environment's folders come with it)."""
    key = ("python", *sys.path)
    known = _installed.get(key)
    if known is None:
        known = _installed[key] = tuple(_pythons_folders())
    return known


def project_folders() -> list[str]:
    """The user's project: the current folder (now, and when vjpgrad was imported), the running
    script's, and the nearest folder above each that holds a project's marker (``_project_root``)."""
    here = os.getcwd()
    main = vars(sys.modules.get("__main__", types.ModuleType("__main__"))).get("__file__")
    key = ("project", here, main if isinstance(main, str) else "")
    known = _installed.get(key)
    if known is None:
        project = [_folder(here), _STARTED_IN]
        if isinstance(main, str):
            project.append(_folder(os.path.dirname(main)))
        known = _installed[key] = (*project, *(root for root in map(_project_root, project) if root is not None))
    return list(known)


def on_path_outside_the_project() -> list[str]:
    """The folders of ``sys.path`` outside the user's project (the current folder, now and when
    vjpgrad was imported, and the script's): their code counts as installed. A refusal that
    cannot find a Value names them, since a user's model imported from there is not looked into.
    A relative entry is the user's: Python makes every entry absolute at startup (``site``), so
    one that is not was added by the user's code (``sys.path.append("..")`` in a notebook)."""
    project = project_folders()
    python = _python_folders()
    found: list[str] = []
    for entry in sys.path:
        if entry and not os.path.isabs(entry):  # added by the user's code (sys.path.append("..")): theirs
            continue
        folder = _folder(entry or os.curdir)
        if not folder.startswith((*project, *python)) and folder not in found and os.path.isdir(folder):
            found.append(folder)
    return found


_PLAIN = (int, float, str, bytes, bool, type(None), complex)
_SEQUENCES = (list, tuple, collections.deque, set, frozenset)
_DICTS = (dict, collections.OrderedDict, collections.defaultdict, collections.Counter)
_METADATA = frozenset(
    {
        "__module__",
        "__qualname__",
        "__doc__",
        "__dict__",
        "__weakref__",
        "__annotations__",
        "__slots__",
        "__firstlineno__",
        "__static_attributes__",
        "__orig_bases__",
        "__parameters__",
        "__match_args__",
        "__dataclass_fields__",
        "__dataclass_params__",
        "__abstractmethods__",
        "_abc_impl",
        "__slotnames__",
    }
)
_PYTHONS_CACHES = frozenset({"__slotnames__", "__annotations__", "__warningregistry__"})
"""Entries Python adds to a class's namespace the first time it needs them (``copyreg`` caches
the slots' names there at the first ``copy.copy`` or pickle of an instance; reading
``C.__annotations__`` of a class with none puts an empty dict there): not walked, and one
added while recording is no side effect (``first_difference``); the guard still compares the
class's keys whole, so the next call records once more, with the cache there. A module's
``__warningregistry__`` (made by the first warning its code issues) is one too."""
_ENUMS_CACHES = frozenset({"_value2member_map_", "_unhashable_values_"})
"""Entries of an enum class's namespace that enum fills as members are looked up by value: a
combination of flags (``Flag.A & Flag.B``, the value 0) is made once and kept in
``_value2member_map_``. A member is made from its value alone, so what the cache holds is no
state a result reads: not walked, as Python's caches above are not."""
_READ_BY_LIBRARIES = frozenset({"__dataclass_fields__"})
"""Entries of a class's namespace that libraries read without the code naming them
(``dataclasses.fields``, ``asdict``, ``replace``): walked wherever a class holds them, as its
special methods are. Its ``__annotations__`` (read by ``typing.get_type_hints`` and
``inspect.get_annotations``) are Python's cache as well: see ``_Walk._annotations``."""
VMAPPED_MEMBERS = ("function", "in_dims", "out_dims", "fast", "chunk_size")
"""What a ``vjpgrad.vmap`` of a function holds that its calls read: the function and the
settings it was made with (its programs are vmap's own bookkeeping, guarded by vmap itself)."""


MEMBERS = frozenset(
    {
        "__annotations__",
        "__closure__",
        "__code__",
        "__defaults__",
        "__kwdefaults__",
        "__globals__",
        "__self__",
        "__func__",
        "__bases__",
        "__dict__",
        "func",
        "args",
        "keywords",
        "kwds",  # what @contextmanager made of a call: its keywords (its function and arguments: above)
        "fget",
        "fset",
        "fdel",
        "cell_contents",
        "__builtins__",
        "fn",  # a compiled function's own function (vjpgrad's name)
        *VMAPPED_MEMBERS,  # a vmapped function's function and settings (vjpgrad's names)
        "mapping",  # a dict view's dict, as a read-only proxy
        "alive",  # a weakref.finalize's
        "__thisclass__",  # a super's class
        "__context__",  # an exception's: the ones it was raised in and from, and its traceback
        "__cause__",
        "__traceback__",
        "default_factory",  # a defaultdict's
        "pyfunc",  # a numpy.vectorize's function, and its settings:
        "otypes",
        "excluded",
        "signature",
        "__wrapped__",  # a functools.lru_cache wrapper's function
        "start",  # a slice's
        "stop",
        "step",
        "__origin__",  # a types.GenericAlias's (list[x])
        "__args__",  # and a types.UnionType's (int | x)
        "value",  # enum.auto's, member's and nonmember's
        "type",  # a dataclasses.InitVar's
    }
)
"""The attributes a step may read by name (Python's own: never a user's text)."""
_float_bits = struct.Struct("<d").pack
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement (or a C extension's heap type)


Fact = tuple[Any, ...]
"""One thing observed: ``(kind, var, expected...)``. Kinds: ``("get", child, parent, how, key)``
reads an object into a variable; ``("unpack", tuple_var, child_vars)``; ``("is", var, id)``;
``("same", var, exact)`` a scalar; ``("rg", var, flag)``; ``("attrs", var, items)`` a Value's
plain attributes (its label); ``("ids", var, ids)``, ``("rgs", var, flags)``, ``("attrses", var,
items)`` and ``("scalars", var, exacts)`` for every item of a tuple variable at once;
``("absent", var, names)`` names a namespace does not hold; ``("empty", var)`` an empty cell;
``("annotated", var, flag)`` whether a class's namespace holds annotations;
``("partition", 0, members, groups)`` which of the numbers at ``members`` (``(var, item)``, item
-1 for the variable itself, var -1 for the ``item``-th number argument) are one object."""


def exact(x: Any) -> Any:
    """A scalar as a key that tells apart what ``==`` does not (-0.0 from 0.0, 1 from True
    from 1.0, a nan from nothing else): its type and its value or bits."""
    if type(x) is float:
        return (float, _float_bits(x))
    tobytes = getattr(x, "tobytes", None)
    if tobytes is not None and _is_number(x):  # a NumPy scalar: its bytes
        return (type(x), tobytes())
    if x is MISSING:
        return (None, "missing")
    if type(x) is complex:  # each part's bits: complex(-0.0, 0.0) == 0j
        return (complex, _float_bits(x.real), _float_bits(x.imag))
    if type(x).__module__ == "decimal":  # sign, digits and exponent: Decimal("1.0") == Decimal("1.00")
        return (type(x), x.as_tuple())
    return (type(x), x)


_CACHES_KEYS = tuple(exact(k) for k in sorted(_PYTHONS_CACHES))
"""The keys of ``_PYTHONS_CACHES`` as a class's keys fact holds them (``exact``)."""


def _is_number(x: Any) -> bool:
    """A number that is not a Value: Python's, a Fraction, a Decimal, a NumPy scalar."""
    return is_number_kind(type(x))


def module_of(x: Any) -> str:
    """``x.__module__`` where it is a string, else "": a Cython metatype's (a ``cyfunction``'s class's
    class, reached from ``from numpy.random import default_rng``) is a descriptor, and a class made
    by ``type()`` without a module has none."""
    module = getattr(x, "__module__", "")
    return module if isinstance(module, str) else ""


def is_number_kind(kind: type) -> bool:
    """The type of a number that is not a Value (``_is_number``), or of a string, bytes, bool or None."""
    if kind in _PLAIN:
        return True
    module = module_of(kind)
    if module in ("fractions", "decimal"):
        return issubclass(kind, numbers.Number)
    return module == "numpy" and (issubclass(kind, numbers.Number) or kind.__name__ in ("bool", "bool_"))


def is_scalar(x: Any) -> bool:
    """What the world watches by value: numbers (their bits), strings, bytes, bools, None."""
    return x is MISSING or _is_number(x)


def is_library(x: Any) -> bool:
    """A module, class or function of Python's library, an installed package or vjpgrad: never
    walked into (watched by identity)."""
    if isinstance(x, types.ModuleType):
        path = vars(x).get("__file__")  # from its dict: a module's __getattr__ (PEP 562) never runs
        if not isinstance(path, str):  # built into Python, or made by the user's code (types.ModuleType)
            return vars(x).get("__name__") in sys.builtin_module_names
        return installed_file(path)
    code = getattr(x, "__code__", None)
    if isinstance(x, types.FunctionType) and isinstance(code, types.CodeType):
        return installed_file(code.co_filename)
    name = module_of(x)
    module = sys.modules.get(name)
    if module is None:  # made by code run without a module of its own (exec): the user's, if Python
        return not (isinstance(x, type) and x.__flags__ & _HEAP_TYPE) and not isinstance(x, types.FunctionType)
    if isinstance(x, type) and x.__flags__ & _HEAP_TYPE and name in _MAKERS and not _holds(module, x):
        return False  # made by types.new_class or abc.ABCMeta("C", ...) in the user's code: named for the maker
    return name == "builtins" or is_library(module)


_MAKERS = frozenset({"types", "abc", "typing", "enum", "collections", "dataclasses"})
"""Library modules whose functions make classes a caller names as they like, and which may name
the maker's module as the class's (``types.new_class("Config")``: ``'types'``): such a class the
module does not itself hold is the caller's."""


def _holds(module: types.ModuleType, kind: type) -> bool:
    """Whether ``module`` holds ``kind`` under its qualified name (read from the dicts: no
    ``__getattr__`` runs)."""
    held: Any = module
    for part in str(getattr(kind, "__qualname__", "")).split("."):
        namespace = getattr(held, "__dict__", None)
        held = namespace.get(part) if isinstance(namespace, (dict, types.MappingProxyType)) else None
    return held is kind


def _libraries_cache(wrapper: Any, wrapped: Any) -> bool:
    """A ``functools.lru_cache`` a library defined: what it wraps is the library's, and the library
    holds the cache under that function's name (its module's attribute, or its class's). A cache
    the user made of a library's callable (``lru_cache(os.getenv)``, of ``table.get``) is not."""
    if not is_library(wrapped):
        return False
    held: Any = sys.modules.get(getattr(wrapped, "__module__", None) or "")
    for name in str(getattr(wrapped, "__qualname__", "<locals>")).split("."):
        namespace = getattr(held, "__dict__", None)  # read from the dict: no __getattr__ of a module runs
        held = namespace.get(name) if isinstance(namespace, (dict, types.MappingProxyType)) else None
    return held is wrapper or getattr(held, "__func__", None) is wrapper  # a staticmethod's cache too


_DATA_MODULES = ("vjpgrad.nn", "vjpgrad.core.vector", "vjpgrad.optim", "vjpgrad.transforms")
"""vjpgrad's own classes whose instances are plain data a function reads (a Vector, an
``nn.MLP`` and its layers, an optimizer's ``lr``, what a transform wraps): walked like a user's."""


def _is_vjpgrads_data(kind: type) -> bool:
    """A class of vjpgrad's whose instances are plain data (``_DATA_MODULES``: ``Vector``,
    ``nn.Module`` and its models): its namespace is walked as a user's class's is, so that a method
    the user sets on it (``Vector.normalized = ...``, ``Module.l2 = ...``) is their code, watched."""
    module = module_of(kind)
    return module.startswith(_DATA_MODULES) and module.partition(".")[0] == "vjpgrad"


_MODULE_STATE: dict[str, dict[str, tuple[str, ...]]] = {
    "os": {"environ": ("environ", "getenv"), "environb": ("environb", "getenvb")},
    "sys": {"argv": ("argv",)},
}
"""Plain data a library's module keeps that code reads through the module or the module's
functions (``os.environ["LR"]``, ``os.getenv("LR")``, ``from os import getenv``, ``"--double" in
sys.argv``): per module, each
entry walked and the names that read it. Where the code names one of them, the entry is walked
as the user's data is; the rest of the module is watched by identity, as installed code is."""

_DATA_CLASSES = frozenset(
    {
        types.SimpleNamespace,
        argparse.Namespace,
        collections.UserDict,
        collections.UserList,
        collections.UserString,
        collections.ChainMap,
        functools.partialmethod,
        functools.singledispatchmethod,
    }
)
"""Python's own classes whose instances hold the user's settings or data in their ``__dict__``
(a ``ChainMap``'s ``maps``, a ``UserDict``'s ``data``): walked like a user's instance, their
class watched by identity."""


def _instance_of_user_class(x: Any) -> bool:
    """An object whose attributes are the user's data: walked into. A library class's instance
    is, when it is plain data: one of ``_DATA_CLASSES``, vjpgrad's data or a library's dataclass.
    Other library objects (a logger, a ``random.Random``, a NumPy array) keep the library's own
    state and are watched by identity (the compile tutorial says so)."""
    kind = type(x)
    if kind in _DATA_CLASSES or module_of(kind).startswith(_DATA_MODULES):
        return True
    return not is_library(kind) or "__dataclass_fields__" in getattr(kind, "__dict__", {})


class UnwatchableError(Exception):
    """The world holds an object whose state compile cannot watch and a replay would not keep."""

    def __init__(self, where: str, what: str, instead: str) -> None:
        super().__init__(where, what, instead)
        self.where, self.what, self.instead = where, what, instead


def _plain_attributes(value: Value) -> bool:
    """A Value whose own attributes are strings or None (a label): compared as a whole."""
    return all(type(item) is str or item is None for item in vars(value).values())


def _raised(name: str, x: Any, error: Exception) -> UnwatchableError:
    """The refusal of an object whose own code raised while its state was read, naming the
    method that raised (the innermost of the user's frames of the error) and its line."""
    frame = None
    trace = error.__traceback__
    while trace is not None:
        if not is_library_file(trace.tb_frame.f_code.co_filename):
            frame = trace
        trace = trace.tb_next
    what = f"{type(error).__name__}: {error!s:.80}"
    if frame is None:  # raised inside Python's own code (a C method of its type)
        return UnwatchableError(
            name,
            f"a {type(x).__qualname__} whose state vjpgrad could not read: reading it raised {what}",
            f"keep the numbers {name} holds in a plain object, list, dict or Value",
        )
    code = frame.tb_frame.f_code
    method = getattr(code, "co_qualname", None) or next(  # Python 3.10's code has its plain name only
        (
            f"{kind.__qualname__}.{code.co_name}"
            for kind in type(x).__mro__
            if getattr(kind.__dict__.get(code.co_name), "__code__", None) is code
        ),
        code.co_name,
    )
    at = f"{code.co_filename}:{frame.tb_lineno}"
    if code.co_name == "__getattr__":
        return UnwatchableError(
            name,
            f"an object whose {method} raised {what} at {at} (Python expects AttributeError for an attribute an "
            "object does not hold), so vjpgrad cannot read its state",
            f"make {type(x).__qualname__}'s __getattr__ raise AttributeError for a name it does not hold",
        )
    return UnwatchableError(
        name,
        f"a {type(x).__qualname__} whose {method} raised {what} at {at} while vjpgrad read its state",
        f"make {method} work for any {type(x).__qualname__}, or keep the numbers {name} holds in a plain object, "
        "list, dict or Value",
    )


def slots(kind: type, users_only: bool = False) -> tuple[tuple[str, Any], ...]:
    """The slots an object of ``kind`` has, each as the name Python stores it under (a private
    one mangled: ``_Scaled__scale``) and what reads it, for each class of ``kind``'s MRO that
    declares ``__slots__`` or is the user's (of the user's alone with ``users_only``): the member
    descriptors its ``__dict__`` holds for itself (found so whatever the declaration says: it names
    a private slot unmangled, may be an iterator spent when the class was made, may be replaced or
    deleted after it), then each slot the declaration names whose descriptor the class replaced by
    another (a property, a validating descriptor of the user's), read through that one."""
    found: dict[str, Any] = {}
    for k in kind.__mro__:
        entries = k.__dict__
        if k is object or ((users_only or "__slots__" not in entries) and is_library(k)):
            continue
        for name, descriptor in entries.items():
            if type(descriptor) is types.MemberDescriptorType and descriptor.__objclass__ is k:
                found.setdefault(name, descriptor)
        declared = entries.get("__slots__", ())
        for name in (declared,) if isinstance(declared, str) else declared if isinstance(declared, Collection) else ():
            held = _mangled(k, name) if isinstance(name, str) else "__dict__"
            if held not in ("__dict__", "__weakref__") and _data_descriptor(entries.get(held)):
                found.setdefault(held, entries[held])
    return tuple(found.items())


def _data_descriptor(x: Any) -> bool:
    """Whether a class entry reads and writes its objects' state (a property, a validator of the
    user's in a slot's place): a method, which only reads, holds no slot."""
    return hasattr(type(x), "__get__") and hasattr(type(x), "__set__")


def _mangled(kind: type, name: str) -> str:
    """The name a slot declared as ``name`` has in its class: a private one (``__scale``) is
    ``_Scaled__scale`` there, as Python mangles it."""
    if name.startswith("__") and not name.endswith("__") and kind.__name__.strip("_"):
        return f"_{kind.__name__.lstrip('_')}{name}"
    return name


@functools.lru_cache(maxsize=256)
def user_slots(kind: type) -> tuple[tuple[str, Any], ...]:
    """The slots a user's subclass of Value, Vector (or of a named tuple) adds (``slots``; vjpgrad's
    own classes' slots are its own state)."""
    return slots(kind, users_only=True)


def _iterated_by(kind: type) -> type | None:
    """The container type of ``_SEQUENCES`` (or ``WeakSet``) whose own ``__iter__`` reads the items
    of a ``kind``, where ``kind`` overrides it; None where iterating a ``kind`` is that already."""
    base = next(k for k in kind.__mro__ if k in _SEQUENCES or k is weakref.WeakSet)
    return None if kind.__iter__ is base.__iter__ else base  # type: ignore[attr-defined]


def is_library_file(file: str) -> bool:
    """A file of vjpgrad, of Python's library or of an installed package (or code vjpgrad wrote)."""
    return installed_file(file)


_SETS_UP = frozenset({"__init__", "__new__", "__post_init__", "__init_subclass__", "__set_name__"})
"""The names of constructors' code: it sets an object up, as a rule before any call."""

_CLOCK_MODULES = frozenset({"time", "datetime", "_datetime", "timeit"})
"""The modules of ``DRAWING_MODULES`` whose functions read the clock."""

DRAWING_MODULES = frozenset({"random", "_random", "secrets", "os", "posix", "nt", "uuid", "numpy"}) | _CLOCK_MODULES
"""The modules whose functions draw random numbers (``numpy``: and those under it, ``numpy.random``)
or read the clock (``time``, ``datetime``), which a replay would not do again either: a world
that holds a generator, or whose code (constructors' aside) names one of these modules or of
their functions or classes (``datetime.date``), may draw; a recording watches such a world's
draws and readings to name the line (``record.DrawWatch``)."""


def _functions_by_name(*found: tuple[types.ModuleType, str]) -> dict[Any, str]:
    """Each function of ``found`` (a module and a name, where the module has it) with its name."""
    return {getattr(module, name): f"{module.__name__}.{name}" for module, name in found if hasattr(module, name)}


PROCESS_STATE = _functions_by_name(
    (os, "getcwd"),
    (os, "getcwdb"),
    (sys, "getsizeof"),
    (sys, "getrefcount"),
    (sys, "getrecursionlimit"),
    (sys, "getallocatedblocks"),
    (sys, "getswitchinterval"),
)
"""C functions that read the process's state, which moves with no object of the world changed
(the current folder, a list's capacity, an object's references), each with its name: a call of
one while recording (the user's, or a library's for the user: ``Path.cwd()``) is a reading a
replay would repeat, refused as the clock's is (``record.DrawWatch``)."""
OWN_READINGS = _functions_by_name(
    (os, "getpid"),
    (os, "getppid"),
    (sys, "exc_info"),
    (sys, "exception"),
    (threading, "get_ident"),
    (threading, "get_native_id"),
)
"""C functions that read the process's id, the calling thread's or the exception being handled,
each with its name: a call of one by the user's code while recording (``threading.current_thread()``
among them, which reads the thread's) is a reading a replay would repeat, refused as the clock's
is; a library's own reading (a log record notes the process and the thread) is the library's."""
THREADS_MODULE = threading.__file__
"""Where ``threading``'s functions live, which read the calling thread for the code that called
them (``current_thread``): a reading is that code's."""
THREAD_READERS = frozenset({"current_thread", "currentThread"})
"""The functions of ``threading`` that hand the code calling them the calling thread: a reading of
it by that code. Its other functions' readings (``Thread()``, ``join()``) are threading's own."""
_READS_PROCESS_STATE = frozenset(
    name.rpartition(".")[2] for name in (*PROCESS_STATE.values(), *OWN_READINGS.values(), *THREAD_READERS)
)
"""Their names: a world whose code names one (``sys.getsizeof``) is watched while recorded, as
one that may draw (naming ``sys`` alone is not: the watch costs a recording's time)."""
_READS_THE_FOLDER = frozenset({"cwd", "resolve", "absolute", "abspath", "realpath", "relpath"})
"""What reads the current folder for the user (pathlib's and ``os.path``'s): named, the world is
watched while recorded as one that names a reading of the process's state is."""


def _draws(x: Any) -> bool:
    """A module of ``DRAWING_MODULES``, or a function or built-in of one (read from Python's
    own kinds only: no object's own code runs)."""
    return _drawing_module(x) is not None


_TYPES_MODULE = type.__dict__["__module__"]
"""``type``'s own ``__module__``, read past a metaclass's (which may be the user's code)."""


def _drawing_module(x: Any) -> str | None:
    """The module of ``DRAWING_MODULES`` that ``x`` is, or whose function, built-in, clock class or
    generator's class it is (``datetime`` for a subclass of ``datetime.date``, ``random`` for
    ``random.SystemRandom``, ``numpy`` for ``numpy.random.RandomState``); None for anything else."""
    kind = type(x)
    if kind is types.ModuleType:
        name = vars(x).get("__name__")
    elif kind in (types.FunctionType, types.BuiltinFunctionType) or kind.__name__ == "cython_function_or_method":
        name = x.__module__
    elif kind is types.MethodType:  # NumPy's global generator's methods (numpy.random.permutation)
        return _drawing_module(x.__func__)
    elif issubclass(kind, type):  # a class whose methods read the clock (datetime.datetime.now, date.today, a
        # subclass's), or a generator's class (random.SystemRandom, numpy.random.RandomState), which may
        # draw from the system's entropy as it makes one: type's own reads, none of the class's code runs
        if issubclass(x, datetime.date):
            return "datetime"
        try:
            name = _TYPES_MODULE.__get__(x)
        except AttributeError:  # a class made by type() where the globals hold no __name__ has none
            return None
        random_class = isinstance(name, str) and (name in ("random", "_random") or name.startswith("numpy.random"))
        return name.partition(".")[0] if random_class else None
    else:
        return None
    root = name.partition(".")[0] if isinstance(name, str) else None
    return root if root in DRAWING_MODULES else None


_SEEN_IN_STATE = frozenset({"random", "_random", "numpy"})
"""The modules of ``DRAWING_MODULES`` whose draws a generator's state shows (compared before and
after a recording run, with or without the watch); the others' (the clock's, the system's
entropy's) only the watch sees."""

_FROM_ENTROPY = frozenset(
    {"SystemRandom", "default_rng", "SeedSequence", "RandomState", "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"}
)
"""What draws from the system's entropy in ``random`` and ``numpy`` (a generator made without a
seed), by its own name: no state that was there before shows it, only the watch, which a
constructor naming one (or one held under any other name, ``_note_drawing``) has a recording run under."""


def _unseen(module: str, x: Any) -> bool:
    """Whether the draws or readings of ``x``, of the drawing module ``module``, change no state
    that a recording compares (the clock's, the process's, the system's entropy's): only the
    watch sees them."""
    return module not in _SEEN_IN_STATE or getattr(x, "__name__", None) in _FROM_ENTROPY


def _draws_unseen(x: Any) -> bool:
    """A function, built-in or class of ``DRAWING_MODULES`` whose draws no state shows
    (``os.urandom``, ``random.SystemRandom``, ``time.time``), wherever the world holds it (an item
    of a list, a dict's value): a module aside, as in ``_reads_clock``."""
    if type(x) is types.ModuleType:
        return False
    module = _drawing_module(x)
    return module is not None and _unseen(module, x)


def _reads_clock(x: Any) -> bool:
    """A function of ``time``, ``datetime`` or ``timeit``, a class deriving from ``datetime.date``
    or an instance of one (their ``now``, ``today``): what reads the clock wherever the world holds it (a default, an
    attribute, a ``staticmethod``), a module aside (a constructor's ``import time`` is not called
    by the function: modules count where the code names them, ``_draws``)."""
    kind = type(x)
    if kind is types.ModuleType:
        return False
    if issubclass(kind, type):
        return issubclass(x, datetime.date)
    if issubclass(kind, datetime.date):  # a date or datetime held: its now() and today() read the clock
        return True
    if kind is types.MethodType:
        return _reads_clock(x.__func__)
    return kind in (types.FunctionType, types.BuiltinFunctionType) and x.__module__ in _CLOCK_MODULES


class WorldTooLargeError(Exception):
    """The world holds more than ``WORLD_LIMIT`` objects and items."""

    def __init__(self, where: str, size: int) -> None:
        super().__init__(where, size)
        self.where, self.size = where, size


@dataclasses.dataclass
class Snapshot:
    """What ``observe`` saw: the facts in order, how a reader names each variable, and the
    Values found (the parameters a recording may read)."""

    facts: list[Fact] = dataclasses.field(default_factory=list)
    names: list[str] = dataclasses.field(default_factory=list)  # var -> how a reader names it
    labels: dict[int, list[str]] = dataclasses.field(default_factory=dict)  # tuple var -> how each item is named
    values: dict[int, Value] = dataclasses.field(default_factory=dict)  # id -> every Value reached
    value_at: dict[int, Value] = dataclasses.field(default_factory=dict)  # var -> the Value read into it
    raw: list[Any] = dataclasses.field(default_factory=list)  # per fact: the objects the guard compares with
    constants: list[Any] = dataclasses.field(default_factory=list)  # the objects the facts name by id, kept alive
    roots: int = 0
    numbers: list[str] = dataclasses.field(
        default_factory=list
    )  # how a reader names each number argument (``partition``)
    may_draw: bool = False  # the world reaches a generator, or a module or function that draws (``DRAWING_MODULES``)
    # the attribute names the code reached may read of a Value it is given (``x.label``,
    # ``x.scale``): every name it names, or None where it computes names (``getattr``, ``vars``)
    attribute_names: frozenset[str] | None = frozenset()
    # whether the code may tell a Value it is given carries an attribute it did not carry at
    # recording, or was made otherwise: it computes names, reads ``label`` (a class default) or
    # how the Value was made (``GRAPH_NAMES``), or catches exceptions
    asks_attributes: bool = False
    class_keys: set[int] = dataclasses.field(default_factory=set)  # the vars that list a class's keys
    # (id of an instance, name) -> the instance, for each functools.cached_property of its class not yet
    # filled in its __dict__: a fill while recording is the cache's, no side effect (``observe``'s ``unfilled``)
    unfilled: dict[tuple[int, str], Any] = dataclasses.field(default_factory=dict)
    # those the recorded run filled, as ``Class.name``: a replay would not, so the recording is not kept
    filled: list[str] = dataclasses.field(default_factory=list)

    def describe(self, var: int, item: int | None = None) -> str:
        """How a reader names a variable, or an item of a tuple variable."""
        if var < 0:  # a number argument
            return self.numbers[item or 0]
        name = self.names[var]
        if item is None or item < 0:
            return name
        labels = self.labels.get(var)
        return name + (labels[item] if labels is not None and item < len(labels) else f"[{item}]")

    def shape(self) -> tuple[Any, ...]:
        """The facts with every number replaced by its type: two worlds that differ only in
        numbers have one shape (a function recorded again and again for numbers)."""
        return tuple(_masked(fact) for fact in self.facts)


def _masked(fact: Fact) -> Fact:
    kind = fact[0]
    if kind == "same":
        return ("same", fact[1], number_masked(fact[2]))
    if kind == "scalars":
        return ("scalars", fact[1], tuple(number_masked(e) for e in fact[2]))
    if kind in ("generator", "state", "calls"):  # a generator's state, a buffer's content, a count: numbers
        return (kind, fact[1])
    return fact


def number_masked(key: Any) -> Any:
    """A scalar's key (``exact``) with a number's value left out: its type alone."""
    kind = key[0]
    return (kind,) if isinstance(kind, type) and is_number_type(kind) else key


def is_number_type(kind: type) -> bool:
    """A type of numbers (int, float, a Fraction, a NumPy float), not bool."""
    return kind is not bool and issubclass(kind, (numbers.Number, float, int)) and module_of(kind) != "vjpgrad"


class _Walk:
    """One walk of a world (see the module docstring)."""

    def __init__(self, limit: int, unfilled: dict[tuple[int, str], Any] | None = None) -> None:
        self.snapshot = Snapshot()
        self.unfilled = unfilled or {}  # an earlier walk's: the cached_property fills left out of this one
        self.cached_names: dict[type, tuple[str, ...]] = {}  # a class -> its cached_property names
        self.seen: dict[int, int] = {}  # id -> the var the object was first walked at
        self.queue: collections.deque[tuple[int, Any]] = collections.deque()
        self.names: set[str] = set()  # every name the code reached names
        self.namespaces: list[tuple[int, Any, set[str], bool]] = []  # (var, mapping, names done, globals?)
        # (a library module's var, its entries, its _MODULE_STATE row, the entries walked)
        self.module_state: list[tuple[int, dict[str, Any], dict[str, tuple[str, ...]], dict[str, int]]] = []
        self.named_done: dict[int, set[str]] = {}  # id(globals) -> the names already watched there
        self.globals_at: dict[int, tuple[int, dict[str, Any]]] = {}  # id(globals) -> (a function's var, them)
        self.builtins_at: dict[int, tuple[int, set[str]]] = {}  # id(builtins) -> (their var, the names watched)
        self.keyed: set[int] = set()  # ids of the namespaces whose keys are watched
        # the code reached reads names it computes: every entry of classes and modules (attributes),
        # or of globals, is watched
        self.computed_attributes = self.computed_globals = False
        self.reaches_builtins = False  # the builtins module itself: builtins.eval, builtins.globals()
        self.catches = False  # the code reached handles exceptions (``try``, ``with``)
        self.classes: list[tuple[int, type]] = []  # the user's classes walked that are not abstract
        # (var, entries, names walked: the dict's var) of each library module reached (``_walk_library_abcs``)
        self.library_modules: list[tuple[int, dict[str, Any], dict[str, int]]] = []
        # what an entry no code names holds (walked where the code computes names): a function
        # there that looks modules up by name is watched, not refused, as the code may never call it
        self.reached_unnamed: set[int] = set()
        self.unnamed: set[int] = set()  # the variables reached through such an entry (its attributes...)
        self.inside_unnamed = False  # the object being expanded was reached through one
        self.globals_walked: set[int] = set()  # ids of the globals whose every entry is watched
        self.identities = False  # the code reached compares objects with `is`: numbers' identities are watched
        # (var, place, object) of each object watched by identity: the object at var (place -1), or
        # item `place` of the tuple variable var (a list of objects, whose identities are one fact)
        self.by_identity: list[tuple[int, int, Any]] = []
        self.drawing_names: set[str] = set()  # entries of namespaces that hold what draws (``_draws``)
        self.unseen_drawing_names: set[str] = set()  # of them, those whose draws no state shows (the clock)
        self.called_names: set[str] = set()  # the names the code reached names, constructors' code aside
        self.constructor_names: set[str] = set()  # the names constructors' code names
        self.limit = limit
        self.size = 0
        self.largest = ("", 0)

    # ---- variables and facts ----------------------------------------------------------------------

    def var(self, name: str) -> int:
        self.snapshot.names.append(name)
        if self.inside_unnamed:
            self.unnamed.add(len(self.snapshot.names) - 1)
        return len(self.snapshot.names) - 1

    def fact(self, *parts: Any, raw: Any = None) -> None:
        """Note a fact; ``raw``: the objects the guard compares with (the fact has their keys)."""
        self.snapshot.facts.append(parts)
        self.snapshot.raw.append(raw)
        self.count(1, parts[1])

    def count(self, n: int, var: int) -> None:
        self.size += n
        if n > self.largest[1]:
            self.largest = (self.snapshot.names[var], n)
        if self.size > self.limit:
            raise WorldTooLargeError(*self.largest)

    def get(self, parent: int, how: str, key: Any, name: str) -> int:
        child = self.var(name)
        self.fact("get", child, parent, how, key)
        return child

    # ---- one object -----------------------------------------------------------------------------

    def child(self, var: int, x: Any) -> None:
        """Watch ``x``, read into ``var``: a scalar by value, anything else by identity and parts."""
        if is_scalar(x):
            self.fact("same", var, exact(x), raw=x)
            return
        self.fact("is", var, id(x))
        self.by_identity.append((var, -1, x))
        self.snapshot.constants.append(x)
        if id(x) in self.seen:  # walked already, at another place: its identity here is enough
            return
        self.seen[id(x)] = var
        if issubclass(type(x), Value):  # by its type: an object's own __class__ may run its code
            self.snapshot.values[id(x)] = x
            self.fact("rg", var, x.requires_grad)
            self._attributes(var, x)
            if type(x) is not Value and not is_library(type(x)):  # a user's subclass: its methods and class attributes
                self.child(self.get(var, "class", None, f"type({self.snapshot.names[var]})"), type(x))
                self._own_slots(var, x)
            return
        self.queue.append((var, x))

    def identity(self, var: int, x: Any) -> None:
        """Watch ``x``, read into ``var``, by identity alone (a traceback: its frames are not data)."""
        if is_scalar(x):
            self.fact("same", var, exact(x), raw=x)
            return
        self.fact("is", var, id(x))
        self.snapshot.constants.append(x)

    def _attributes(self, var: int, value: Value) -> None:
        """A Value's own attributes (its label, or what a user keeps on it)."""
        self.snapshot.value_at[var] = value
        attributes = vars(value)
        if _plain_attributes(value):
            self.fact("attrs", var, tuple(attributes.items()), raw=dict(attributes))
        else:
            self._mapping(self.get(var, "dict", None, self.snapshot.names[var]), attributes, attribute=True)

    def expand(self, var: int, x: Any) -> None:
        """The parts of ``x`` (walked once, at the first place it was reached), as the row of
        ``KINDS`` its type falls in says: a container's items, a function's parts, an
        instance's class, attributes and slots, or a refusal."""
        self.inside_unnamed = var in self.unnamed
        if _reads_clock(x) or _draws_unseen(x) or _reads_torchs_seed(x) or id(x) in _PROCESS_READERS:  # anywhere:
            self.snapshot.may_draw = True  # the recording watches its calls, which no generator's state shows
        try:
            how = row_of(type(x))[1]
            how(self, var, x)
            if how not in _WALKS_INSTANCE and not is_library(type(x)):
                self._instance(var, x)  # a user's subclass of a handled type: its class and attributes too
        except (UnwatchableError, WorldTooLargeError):
            raise
        except Exception as error:  # the object's own code raised (a __getattr__ raising KeyError)
            raise _raised(self.snapshot.names[var], x, error) from None

    def _sequence(self, var: int, x: Any) -> None:
        """A list, tuple, deque, set or frozenset (or a WeakSet): its items, in order, as its
        container type iterates them (a user's subclass's ``__iter__`` may show fewer than it
        holds, and indexing reads them all); a user's subclass's attributes too."""
        base: Any = _iterated_by(type(x))
        items = list(x) if base is None else list(base.__iter__(x))
        labels = None if isinstance(x, (set, frozenset, weakref.WeakSet)) else [f"[{k}]" for k in range(len(items))]
        key = type(x) is tuple if base is None else base  # how the guard reads them (``guard._Writer.iterated``)
        self.items(self.get(var, "items", key, self.snapshot.names[var]), items, labels)
        if type(x) not in _SEQUENCES:
            self._object(var, x)

    def _dict(self, var: int, x: Any) -> None:
        self._mapping(var, x)
        if isinstance(x, collections.defaultdict):  # what it makes for a missing key
            self._members(var, x, ("default_factory",))
        if type(x) not in _DICTS:  # a user's subclass of dict: its attributes too
            self._object(var, x)

    def _weak_mapping(self, var: int, x: Any) -> None:
        """A ``WeakValueDictionary`` or ``WeakKeyDictionary``: its live keys and values, read by
        its own methods (Python's weakref module), as a dict's."""
        self._mapping(var, x, own=True)

    def _content(self, var: int, x: Any) -> None:
        """A buffer that changes in place (``bytearray``, ``array.array``, ``memoryview``, a
        NumPy array): its whole content, compared at each call as numbers are. A NumPy array of
        Python objects is refused: its bytes are the objects' addresses, which say nothing of
        the objects' state (and a new object may be made where a freed one was)."""
        if getattr(getattr(x, "dtype", None), "hasobject", False):
            name = self.snapshot.names[var]
            raise UnwatchableError(
                name,
                "a NumPy array of Python objects (dtype=object), whose bytes are the objects' addresses, not "
                "their state",
                f"keep the objects {name} holds in a list, which vjpgrad walks, or an array of numbers",
            )
        self.fact("state", var, content(x), raw=content(x))

    def _generator(self, var: int, x: Any) -> None:
        """A random generator (``random.Random``, a NumPy ``Generator`` or ``RandomState``):
        its state, compared before and after the recording run only (a draw there is refused:
        a replay would not draw); the guard does not check it, as drawing outside is fine."""
        self.fact("generator", var, generator_state(x), raw=x)  # raw: where a recording run's draw is traced
        self.snapshot.may_draw = True

    def _weak_method(self, var: int, x: weakref.WeakMethod[Any]) -> None:
        """A ``weakref.WeakMethod``: each call makes a new bound method; its object and function
        are what it holds."""
        method = x()
        call = self.get(var, "call", None, f"{self.snapshot.names[var]}()")
        if method is None:
            self.fact("same", call, exact(None), raw=None)
        else:
            self._members(call, method, ("__self__", "__func__"))

    def _compiled(self, var: int, x: Any) -> None:
        """A compiled function: its function (called inside, it is recorded as part of this one)
        and what the user keeps on it (``f.scale``), not compile's bookkeeping."""
        self._members(var, x, ("fn",))
        name = self.snapshot.names[var]
        kept = [key for key in vars(x) if key not in COMPILED_STATE]
        self._named(self.get(var, "dict", None, name), vars(x), kept, name + ".")

    def _object(self, var: int, x: Any) -> None:
        """Any other object: a user's (or plain data of a library's) instance is walked; a
        library's or C object is watched by identity."""
        if _instance_of_user_class(x):
            self._instance(var, x)

    def _context_manager(self, var: int, x: Any) -> None:
        """What ``@contextmanager`` made: its function, arguments and keywords, which make it anew
        at each use as a decorator. Entering it deletes them (its generator then runs once): one
        used up holds nothing more (a guard that finds them gone where they were records anew)."""
        if "func" in vars(x):
            self._members(var, x, ("func", "args", "kwds"))

    def _refused(self, var: int, x: Any) -> None:
        name = self.snapshot.names[var]
        what, instead = _REFUSED[row_of(type(x))[0]]
        raise UnwatchableError(name, what, instead.format(name=name))

    def _members(self, var: int, x: Any, members: tuple[str, ...]) -> None:
        """Parts read as attributes of Python's own types (a method's ``__self__``...)."""
        name = self.snapshot.names[var]
        for member in members:
            self.child(self.get(var, "member", member, f"{name}.{member}"), getattr(x, member))

    def _wrapper(self, var: int, x: Any, members: tuple[str, ...]) -> None:
        """A library's wrapper of a function (``functools.partial``, ``numpy.vectorize``, a
        ``vjpgrad.vmap``): its function and settings (``members``), and the attributes set on it."""
        self._members(var, x, members)
        self._attributes_set(var, x)

    def _attributes_set(self, var: int, x: Any) -> None:
        """Attributes a user set on a library's wrapper (``act.gain = 2.0``), watched as a function's
        own attributes are: the names its ``__dict__`` holds, in order (one added or deleted is
        seen), and what each name holds that is not the wrapper's own (``_OWN_ATTRIBUTES``: its
        settings and its bookkeeping, which its members or its own guard cover)."""
        attributes = getattr(x, "__dict__", None)
        if type(attributes) is not dict:
            return
        own = _own_attributes(type(x))
        name = self.snapshot.names[var]
        held = self.get(var, "dict", None, name)
        keys = list(attributes)
        self.items(self.get(held, "keys", True, name), keys, _labels(keys, attribute=True))
        self._named(held, attributes, [k for k in keys if k not in own], f"{name}.")

    def _any_function(self, var: int, fn: types.FunctionType) -> None:
        """A user's function: its code, parts and the globals it names. A library's (or
        vjpgrad's) is watched by identity, and opened where it wraps the user's: its attributes
        (``__wrapped__``, set by ``functools.wraps``, ``contextmanager``, ``singledispatch``
        with its ``registry``, vjpgrad's ``no_grad``, and ``grad``'s ``transformed``)."""
        if not is_library(fn):
            self._function(var, fn)
            return
        if _looks_modules_up(fn) and not self.inside_unnamed:  # held under a name the code names
            raise _looking_modules_up(self.snapshot.names[var], fn)
        if _reads_attributes(fn):  # static = inspect.getattr_static: names computed
            self.computed_attributes = True
        self._module_state_of_function(var, fn)
        # a bound method there is the library's own machinery (singledispatch's cache.clear)
        opened = [k for k, x in fn.__dict__.items() if not isinstance(x, (types.BuiltinMethodType, types.MethodType))]
        name = self.snapshot.names[var]
        if opened:
            self._named(self.get(var, "dict", None, name), fn.__dict__, opened, f"{name}.")
        if fn.__closure__:  # a wrapper made without functools.wraps, a ContextDecorator's object
            self._wrapped_in_closure(var, fn, name, functions="__wrapped__" not in fn.__dict__)

    def _wrapped_in_closure(self, var: int, fn: types.FunctionType, name: str, functions: bool) -> None:
        """What of the user's a library's wrapper closes over: the functions (the user's function
        it wraps, where ``functions``: it names none as ``__wrapped__``) and the instances of the
        user's classes (a ``contextlib.ContextDecorator`` of the user's, whose ``__enter__`` the
        wrapper runs) and what ``@contextmanager`` made of the user's function and arguments; its
        other cells (the library's caches and settings) are the library's,
        watched as it is: not at all."""
        closure = fn.__closure__ or ()
        held = []
        for cell in closure:
            try:
                held.append(cell.cell_contents)
            except ValueError:  # empty
                held.append(None)

        def users(x: Any) -> bool:
            if isinstance(x, (types.FunctionType, functools.partial, types.MethodType)):
                return functions
            if isinstance(x, _MADE_BY_CONTEXTMANAGER):  # a decorator @contextmanager made: the user's arguments
                return True
            return not is_scalar(x) and not isinstance(x, type) and _instance_of_user_class(x)

        if not any(map(users, held)):
            return
        cells = self.get(var, "member", "__closure__", f"{name}.__closure__")
        unpacked = [self.var(f"{name}.{free}") for free in fn.__code__.co_freevars]
        self.fact("unpack", cells, tuple(unpacked))
        for cell_var, cell, x in zip(unpacked, closure, held, strict=True):
            if users(x):
                self.fact("is", cell_var, id(cell))
                self.snapshot.constants.append(cell)
                self._cell(cell_var, cell, self.snapshot.names[cell_var])

    def _through_builtins(self) -> None:
        """Where the world holds the builtins module itself, ``builtins.eval(...)`` and
        ``builtins.globals()`` read globals and attributes by computed names as the builtins
        loaded as names do (``net.eval()`` alone, a model's method, does not)."""
        if self.reaches_builtins and not self.names.isdisjoint(COMPUTED_GLOBALS):
            self.computed_globals = self.computed_attributes = True

    def _user_module(self, var: int, module: types.ModuleType) -> None:
        """A user's module: the entries its code names, once every name is known (``finish``),
        and those it does not hold; its ``__getattr__`` (PEP 562), which Python calls for them."""
        if module is builtins:
            self.reaches_builtins = True
            self._through_builtins()
        if is_library(module):
            self._module_state(var, module)
            if module is not builtins:
                self.library_modules.append((var, vars(module), {}))
            return
        entries = vars(module)
        entries_var = self.get(var, "dict", None, self.snapshot.names[var])
        special = [key for key in ("__getattr__", "__dir__") if key in entries]
        for key in special:
            self.child(self.get(entries_var, "entry", key, f"{self.snapshot.names[var]}.{key}"), entries[key])
        self.namespaces.append((entries_var, entries, set(special), False))

    def _module_state(self, var: int, module: types.ModuleType) -> None:
        """A library's module whose row of ``_MODULE_STATE`` names plain data it keeps: the
        entries the code reads, walked once every name is known (``finish``)."""
        name = vars(module).get("__name__")
        if not isinstance(name, str):
            return
        row = _MODULE_STATE.get(name)
        if row is not None and sys.modules.get(name) is module:
            self.module_state.append((var, vars(module), row, {}))

    def _module_state_of_function(self, var: int, fn: types.FunctionType) -> None:
        """A library's function that reads its module's plain data (``os.getenv``): that entry of
        its globals, walked."""
        for module_name, row in _MODULE_STATE.items():
            module = sys.modules.get(module_name)
            if module is None or fn.__globals__ is not vars(module):
                continue
            for entry, readers in row.items():
                if fn.__name__ in readers and entry in fn.__globals__:
                    name = self.snapshot.names[var]
                    entries = self.get(var, "member", "__globals__", f"{name}.__globals__")
                    self.child(self.get(entries, "entry", entry, f"{module_name}.{entry}"), fn.__globals__[entry])

    def _walk_module_state(self) -> bool:
        """The entries of ``module_state`` the code now names: walked; whether any was."""
        progress = False
        for var, entries, row, done in self.module_state:
            for entry, readers in row.items():
                if entry not in done and entry in entries and not self.names.isdisjoint(readers):
                    name = self.snapshot.names[var]
                    # the module's dict is read once, at the first entry walked
                    entries_var = next(iter(done.values()), None)
                    if entries_var is None:
                        entries_var = self.get(var, "dict", None, name)
                    done[entry] = entries_var
                    progress = True
                    self.child(self.get(entries_var, "entry", entry, f"{name}.{entry}"), entries[entry])
        return progress

    def _user_class(self, var: int, kind: type) -> None:
        if _reads_attributes(kind):  # operator.attrgetter held under another name: names computed
            self.computed_attributes = True
        if not is_library(kind) or kind is Value or _is_vjpgrads_data(kind):
            self._class(var, kind)
        elif _abstract(kind):  # a library's abstract class (collections.abc.Sized, numbers.Real)
            # what is registered with it and its subclasses answers isinstance: the user's register() calls
            registered = abc_registry(kind)
            self.fact("registry", var, registered, raw=registered)

    def _holds_abstract(self, module: types.ModuleType) -> bool:
        """Whether a library's module holds an abstract class under a name the code names (a
        module on the way to one, ``collections.abc``; not ``numpy.random``, imported where it is
        first used, whose appearing while recording is no change of the world)."""
        entries = vars(module)
        return any(_abstract(entries[key]) for key in self.names.intersection(entries))

    def _walk_library_abcs(self) -> bool:
        """The entries of the library modules reached that the code now names and that are abstract
        classes (``collections.abc.Sized``) or modules (``collections.abc``, on the way to one):
        walked, so that a class the user registers with one, or with a subclass of their own, is a
        change of the world; whether any was."""
        progress = False
        for var, entries, done in self.library_modules:
            for key in sorted(self.names.intersection(entries) - done.keys()):
                entry = entries[key]
                if not (_abstract(entry) or (type(entry) is types.ModuleType and self._holds_abstract(entry))):
                    continue
                name = self.snapshot.names[var]
                entries_var = next(iter(done.values()), None)  # the module's dict, read once
                if entries_var is None:
                    entries_var = self.get(var, "dict", None, name)
                done[key] = entries_var
                progress = True
                self.child(self.get(entries_var, "entry", key, f"{name}.{key}"), entry)
        return progress

    def _view(self, var: int, view: Any) -> None:
        """A view of a dict (``d.values()`` kept in a variable): the dict's keys and values, read
        through the view's ``mapping`` (a proxy made anew at each read: not watched by identity)."""
        name = self.snapshot.names[var]
        self._mapping(self.get(var, "member", "mapping", name), view.mapping, own=True)

    def _proxy(self, var: int, proxy: types.MappingProxyType[Any, Any]) -> None:
        """A read-only proxy of a mapping: the mapping's keys (in order) and values."""
        self._mapping(var, proxy, own=True)

    def _cached(self, var: int, wrapper: Any) -> None:
        """A function wrapped by ``functools.lru_cache`` (or ``cache``): its cache is C state
        that no guard can read, and eager code returns what it cached even after what the
        function reads changed, which a replay cannot reproduce. A library's is watched by
        identity, as the library is. The user's (one a library did not define: the user's own
        ``functools.lru_cache(table.get)`` too) has the function it wraps walked (the code may
        call ``cached.__wrapped__``), and how often it was called is compared before and after
        the recording only (``calls``): a call of the cache while recording is refused then."""
        wrapped = getattr(wrapper, "__wrapped__", None)
        if wrapped is None or _libraries_cache(wrapper, wrapped):
            return
        info = wrapper.cache_info()
        self.fact("calls", var, (info.hits, info.misses))
        self._members(var, wrapper, ("__wrapped__",))
        self._attributes_set(var, wrapper)

    def _builtin(self, var: int, method: Any) -> None:
        """A built-in function or method: its object (``table.get``'s table; a function's module),
        and, for one that asks identity (``operator.is_`` held in a variable), the numbers' identities."""
        if any(method is asks for asks in _ASKS_IDENTITY):
            self.identities = True
        if _reads_attributes(method):  # read = getattr, fill = "{0.scale}".format: names computed
            self.computed_attributes = True
        if any(method is reads for reads in _READS_GLOBALS):
            self.computed_globals = True
        if _looks_modules_up(method) and not self.inside_unnamed:  # imp = __import__
            raise _looking_modules_up(self.snapshot.names[var], method)
        self._members(var, method, ("__self__",))

    def _reference(self, var: int, reference: weakref.ref[Any]) -> None:
        self.child(self.get(var, "call", None, f"{self.snapshot.names[var]}()"), reference())

    def _instance(self, var: int, x: Any) -> None:
        """An instance of a user's class: its class, its attributes and its slots. One whose
        class defines ``__getattribute__`` is refused: reading its state would run its code."""
        name = self.snapshot.names[var]
        reads = next((k for k in type(x).__mro__ if "__getattribute__" in k.__dict__), object)
        if reads is not object and not is_library(reads):
            raise UnwatchableError(
                name,
                f"an instance of {type(x).__qualname__}, whose class defines __getattribute__: vjpgrad "
                "cannot read its state without running that code",
                f"keep the numbers {name} serves in a plain object, dict or Value",
            )
        self.child(self.get(var, "class", None, f"type({name})"), type(x))
        try:
            attributes = object.__getattribute__(x, "__dict__")  # neither __getattr__ nor __getattribute__ runs
        except AttributeError:  # slots only
            attributes = None
        if type(attributes) is dict:
            cached = self._cached_properties(type(x))
            self.snapshot.unfilled.update(((id(x), k), x) for k in cached if k not in attributes)
            if self.unfilled and any((id(x), k) in self.unfilled for k in cached):
                attributes = {k: v for k, v in attributes.items() if (id(x), k) not in self.unfilled}
            self._mapping(self.get(var, "dict", None, name), attributes, attribute=True)
        for slot, descriptor in slots(type(x)):
            self._slot(var, x, descriptor, f"{name}.{slot}")

    def _cached_properties(self, kind: type) -> tuple[str, ...]:
        """The names of ``kind``'s ``functools.cached_property`` attributes (its own and its bases')."""
        names = self.cached_names.get(kind)
        if names is None:
            found = {k for c in kind.__mro__ for k, v in vars(c).items() if isinstance(v, functools.cached_property)}
            names = self.cached_names[kind] = tuple(sorted(found))
        return names

    def _own_slots(self, var: int, x: Any) -> None:
        """The slots a user's subclass of Value adds (the Value's own are its state, not the world's)."""
        kind: type = type(x)
        for slot, descriptor in user_slots(kind):
            self._slot(var, x, descriptor, f"{self.snapshot.names[var]}.{slot}")

    def _slot(self, var: int, x: Any, descriptor: Any, name: str) -> None:
        self.snapshot.constants.append(descriptor)
        try:
            held = descriptor.__get__(x)
        except AttributeError:  # an empty slot
            self.fact("no slot", var, descriptor)
            return
        self.child(self.get(var, "slot", descriptor, name), held)

    def _cell(self, var: int, cell: types.CellType, name: str | None = None) -> None:
        name = self.snapshot.names[var] if name is None else name
        try:
            contents = cell.cell_contents
        except ValueError:  # empty: a name not yet bound in the enclosing function
            self.fact("empty", var)
            return
        if _draws(contents):  # a module or function that draws, held in a closure (np = importorskip(...))
            self.snapshot.may_draw = True
        self.child(self.get(var, "member", "cell_contents", name), contents)

    def _function(self, var: int, fn: types.FunctionType) -> None:
        name = self.snapshot.names[var]
        code = fn.__code__
        self.fact("code", var, id(code))  # writable: a function whose code was replaced is another
        self.snapshot.constants.append(code)
        self._names(var, fn, FUNCTION_NAMES)
        names = _code_names(code)
        loaded = _global_names(code)  # the names it loads (or sets) as globals: its globals' entries it reads
        self.names |= names
        if code.co_name not in _SETS_UP:  # a constructor's code runs before any call, as a rule
            self.called_names |= names
        else:  # but an object made inside the function runs it at each call
            self.constructor_names |= names
        attributes = names - _BUILTINS_ONLY  # net.eval() names an attribute, not the builtin
        computed = not attributes.isdisjoint(COMPUTED_ATTRIBUTES) or not loaded.isdisjoint(COMPUTED_ATTRIBUTES)
        self.computed_attributes = self.computed_attributes or computed
        self.computed_globals = (
            self.computed_globals or not loaded.isdisjoint(COMPUTED_GLOBALS) or "__globals__" in names
        )
        self._through_builtins()
        self.identities = self.identities or _compares_identity(code) or not names.isdisjoint(IDENTITY_NAMES)
        self.catches = self.catches or _catches(code)
        if id(fn) not in self.reached_unnamed and var not in self.unnamed:
            _refuse_modules_found_at_run_time(fn, name, names)
            _refuse_frames_read_at_run_time(name, names)
        if fn.__closure__ is None and fn.__defaults__ is None and fn.__kwdefaults__ is None and not _held(fn):
            # no closure, defaults, attributes or annotations: one check for the five (raw: the function,
            # for a difference to name the attribute it was given)
            self.fact("bare", var, raw=fn)
        else:
            self._parts(var, fn, name)
            if fn.__dict__:  # f.slope, f.calls
                self._mapping(self.get(var, "dict", None, name), fn.__dict__, attribute=True)
            else:
                self.fact("no attributes", var, raw=fn)
        namespace = fn.__globals__  # read-only: the same function has the same globals
        self.globals_at.setdefault(id(namespace), (var, namespace))
        done = self.named_done.setdefault(id(namespace), set())
        new = sorted(loaded - done)
        if new:
            done.update(new)
            self._named(self.get(var, "member", "__globals__", f"{name}.__globals__"), namespace, new, "")
            lacking = [key for key in new if key not in namespace]
            if lacking:
                self._builtins(var, fn, lacking)

    def _builtins(self, var: int, fn: types.FunctionType, names: list[str]) -> None:
        """The names a user's function's code names that its globals lack: Python looks them up
        in its builtins (``fn.__builtins__``, fixed with the function). Those that are Python's
        own, as when vjpgrad was imported (``len``, ``print``), or absent, are checked by identity
        in one fact; any other (``builtins.SCALE = 2.0``, a ``len`` rebound) is walked as a global."""
        namespace: dict[str, Any] = fn.__builtins__  # type: ignore[attr-defined,unused-ignore]  # mypy 2.4 misses typeshed's property
        known = self.builtins_at.get(id(namespace))
        if known is None:
            self.snapshot.constants.append(namespace)
            at = self.get(var, "member", "__builtins__", "builtins")
            known = self.builtins_at[id(namespace)] = (at, set())
        at, done = known
        new = [key for key in names if key not in done]
        done.update(new)
        own = [key for key in new if _is_pythons_builtin(key, namespace.get(key, MISSING))]
        if own:
            held = tuple(namespace.get(key, MISSING) for key in own)
            self.fact("builtins", at, tuple(own), tuple(map(id, held)), raw=held)
            self.snapshot.constants.append(held)
        for key in new:
            if key not in own:
                self.child(self.get(at, "entry", key, f"builtins.{key}"), namespace[key])

    def _parts(self, var: int, fn: types.FunctionType, name: str) -> None:
        """A function's closure cells (by the names the code gives them) and its defaults."""
        closure = fn.__closure__ or ()
        cells = self.get(var, "member", "__closure__", f"{name}.__closure__")
        if not closure:
            self.fact("same", cells, exact(None), raw=None)
        else:
            unpacked = [self.var(free) for free in fn.__code__.co_freevars]
            self.fact("unpack", cells, tuple(unpacked))
            for cell_var, cell in zip(unpacked, closure, strict=True):
                self.fact("is", cell_var, id(cell))
                self.snapshot.constants.append(cell)
                self._cell(cell_var, cell, self.snapshot.names[cell_var])
        self.child(self.get(var, "member", "__defaults__", f"{name}.__defaults__"), fn.__defaults__)
        self.child(self.get(var, "member", "__kwdefaults__", f"{name}.__kwdefaults__"), fn.__kwdefaults__)
        self.child(self.get(var, "member", "__annotations__", f"{name}.__annotations__"), fn.__annotations__)

    def _names(self, var: int, x: Any, attributes: tuple[str, ...]) -> None:
        """What a function or class holds outside its ``__dict__`` that code may read and a user
        may set (``fn.__name__ = "relu"``), each by identity: another name is another world."""
        held = tuple(getattr(x, attribute) for attribute in attributes)
        self.fact("names", var, attributes, tuple(map(id, held)))
        self.snapshot.constants.extend(held)

    def _class(self, var: int, kind: type) -> None:
        if kind.__flags__ & _HEAP_TYPE:  # a class statement's: its names can be set (a builtin's cannot)
            self._names(var, kind, CLASS_NAMES)
        name = getattr(kind, "__qualname__", self.snapshot.names[var])
        entries = kind.__dict__
        entries_var = self.get(var, "dict", None, name)
        keys = self.get(entries_var, "keys", True, name)
        self.snapshot.labels[keys] = [f".{k}" if type(k) is str else f"[{_named_key(k)}]" for k in entries]
        self.snapshot.class_keys.add(keys)
        self.fact("scalars", keys, tuple(exact(k) for k in entries), raw=tuple(entries))  # its names, in order
        self.keyed.add(id(entries))
        caches = _PYTHONS_CACHES | _ENUMS_CACHES if isinstance(kind, enum.EnumMeta) else _PYTHONS_CACHES
        special = sorted(k for k in entries if k not in caches and _read_unnamed(k, kind))
        done = set(special) | caches
        for key in special:  # called or read by Python without being named: __call__, __init__, __annotations__...
            self.child(self.get(entries_var, "entry", key, f"{name}.{key}"), entries[key])
        self._annotations(entries_var, entries, name)
        self.namespaces.append((entries_var, entries, done, False))
        bases = self.get(var, "member", "__bases__", f"{name}.__bases__")
        self.items(bases, list(kind.__bases__), [f"[{k}]" for k in range(len(kind.__bases__))])
        if "_abc_impl" in entries:  # an abstract class: what is registered with it is C state
            self.fact("state", var, content(kind), raw=content(kind))
        else:  # its subclasses, where the code asks for them (``Base.__subclasses__()``): see ``observe``
            self.classes.append((var, kind))

    def _annotations(self, var: int, entries: Any, name: str) -> None:
        """A class's annotations, which libraries read without the code naming them: whether it
        holds any (none, and an empty dict Python puts there when they are first read, are one
        fact, so that reading them while recording is no side effect), and what they hold."""
        annotations = entries.get("__annotations__")
        self.fact("annotated", var, bool(annotations))
        if annotations:
            self.child(self.get(var, "entry", "__annotations__", f"{name}.__annotations__"), annotations)

    def _named(self, var: int, namespace: Any, names: list[str], prefix: str) -> None:
        """The entries of a namespace (globals, a module, a class) that the code names."""
        absent = tuple(n for n in names if n not in namespace)
        if absent:
            self.fact("absent", var, absent)
        for key in names:
            if key in namespace:
                self._note_drawing(key, namespace[key])
                self.child(self.get(var, "entry", key, f"{prefix}{key}"), namespace[key])

    def _note_drawing(self, key: str, x: Any) -> None:
        """An entry ``key`` of a namespace the code names, holding ``x``: noted where ``x`` draws
        (``drawing_names``), and where no generator's state shows its draws (``unseen_drawing_names``)."""
        module = _drawing_module(x)
        if module is not None:
            self.drawing_names.add(key)
            if _unseen(module, x):  # SystemRandom as SR
                self.unseen_drawing_names.add(key)

    def _mapping(self, var: int, mapping: Any, attribute: bool = False, own: bool | None = None) -> None:
        """A dict's keys (in order) and values; attributes are named ``.name``, items ``[key]``.
        ``own``: read by the mapping's own methods (Python's dicts, a proxy), not dict's (a
        subclass's, whose methods may be the user's; an ``OrderedDict`` subclass's by
        OrderedDict's, whose order ``move_to_end`` keeps apart from dict's)."""
        name = self.snapshot.names[var]
        own = type(mapping) in _DICTS if own is None else own  # Python's own: its methods run no user code
        reader: bool | str = own or ("ordered" if isinstance(mapping, collections.OrderedDict) else False)
        kind = dict if reader is False else collections.OrderedDict
        keys = list(mapping) if own else list(kind.keys(mapping))
        labels = _labels(keys, attribute)
        self.items(self.get(var, "keys", reader, name), keys, labels)
        values = list(mapping.values()) if own else list(kind.values(mapping))
        self.items(self.get(var, "values", reader, name), values, labels)

    def items(self, var: int, items: list[Any], labels: list[str] | None) -> None:
        """Every item of a tuple variable: by value, identity and flags at once where they are
        all scalars, all Values or all other objects, one by one otherwise."""
        if labels is not None:
            self.snapshot.labels[var] = labels
        self.count(len(items), var)
        if all(is_scalar(x) for x in items):
            self.fact("scalars", var, tuple(exact(x) for x in items), raw=tuple(items))
        elif all(type(x) is Value and _plain_attributes(x) for x in items):  # parameters, labelled or not
            self._values_at_once(var, items)
        elif not any(is_scalar(x) or isinstance(x, Value) for x in items):
            self._objects_at_once(var, items, labels)
        else:
            unpacked = self._unpacked(var, len(items), labels)
            for item_var, x in zip(unpacked, items, strict=True):
                self.child(item_var, x)

    def _values_at_once(self, var: int, items: list[Value]) -> None:
        """A list of Values: their identities, flags and attributes, each a fact for them all."""
        self.fact("ids", var, tuple(map(id, items)))
        self.fact("rgs", var, tuple(x.requires_grad for x in items))
        attributes = [vars(x).copy() for x in items]
        self.fact("attrses", var, tuple(tuple(a.items()) for a in attributes), raw=attributes)
        for x in items:
            self.seen.setdefault(id(x), var)
            self.snapshot.values[id(x)] = x
        self.snapshot.constants.append(tuple(items))

    def _objects_at_once(self, var: int, items: list[Any], labels: list[str] | None) -> None:
        """A list of objects: their identities in one fact, then the parts of those not yet walked."""
        self.fact("ids", var, tuple(map(id, items)))
        self.by_identity += [(var, k, x) for k, x in enumerate(items)]
        self.snapshot.constants.append(tuple(items))
        new = [k for k, x in enumerate(items) if id(x) not in self.seen]
        if not new:
            return
        unpacked = self._unpacked(var, len(items), labels)
        for k in new:
            if id(items[k]) not in self.seen:  # an object twice in the list is walked once
                self.seen[id(items[k])] = unpacked[k]
                self.queue.append((unpacked[k], items[k]))

    def _unpacked(self, var: int, count: int, labels: list[str] | None) -> list[int]:
        """A variable for each item of a tuple variable, named as a reader names the item."""
        name = self.snapshot.names[var]
        unpacked = [self.var(name + (labels[k] if labels else "{...}")) for k in range(count)]
        self.fact("unpack", var, tuple(unpacked))
        return unpacked

    def _whole_namespaces(self) -> None:
        """Where the code reached computes names (``getattr(obj, name)``, ``vars(C)[key]``: the
        classes' and modules' namespaces; ``globals()[name]``: the globals): each such namespace's
        keys, in order, and (in ``finish``) every entry."""
        if self.computed_globals:
            for namespace_id, (fn_var, namespace) in self.globals_at.items():
                if namespace_id not in self.keyed and namespace_id not in self.globals_walked:
                    self.globals_walked.add(namespace_id)
                    name = f"{self.snapshot.names[fn_var]}.__globals__"
                    entries = self.get(fn_var, "member", "__globals__", name)
                    self.namespaces.append((entries, namespace, self.named_done[namespace_id], True))
        for var, namespace, _, is_globals in self.namespaces:
            if id(namespace) not in self.keyed and self._whole(is_globals):
                self.keyed.add(id(namespace))
                keys = self.get(var, "keys", True, self.snapshot.names[var])
                self.snapshot.class_keys.add(keys)  # Python may add a cache there (__warningregistry__)
                self.fact("scalars", keys, tuple(exact(k) for k in namespace), raw=tuple(namespace))

    def _whole(self, is_globals: bool) -> bool:
        """Whether every entry of a namespace (globals, or a class's or module's) is watched."""
        return self.computed_globals if is_globals else self.computed_attributes

    def _wanted(self, namespace: Any, done: set[str], is_globals: bool) -> list[str]:
        """The entries of a namespace to watch now: those the code names, or all of them where
        it computes names (builtins aside: not watched)."""
        if self._whole(is_globals):  # a module's warnings registry aside: what it holds changes as Python runs
            return [k for k in namespace if k not in done and k not in ("__builtins__", "__warningregistry__")]
        return sorted((self.names & namespace.keys()) - done - {"__warningregistry__"})

    def finish(self) -> None:
        """Walk until nothing is left: objects, then the namespaces' entries the code names
        (which may reach more code, naming more)."""
        while True:
            while self.queue:
                self.expand(*self.queue.popleft())
            if self.computed_attributes or self.computed_globals:
                self._whole_namespaces()
            progress = False
            for var, namespace, done, is_globals in self.namespaces:
                if not is_globals and id(namespace) not in self.keyed:  # a module: the names it lacks are facts
                    absent = sorted(self.names - namespace.keys() - done)
                    if absent:
                        done.update(absent)
                        self.fact("absent", var, tuple(absent))
                new = self._wanted(namespace, done, is_globals)
                if new:
                    done.update(new)
                    progress = True
                    prefix = self.snapshot.names[var] + "."
                    self.inside_unnamed = False
                    for key in new:
                        entry = self.get(var, "entry", key, f"{prefix}{key}")
                        if key not in self.names:  # watched because the code computes names
                            self.reached_unnamed.add(id(namespace[key]))
                            self.unnamed.add(entry)
                        else:
                            self._note_drawing(key, namespace[key])
                        self.child(entry, namespace[key])
            progress = self._walk_module_state() or progress
            progress = self._walk_library_abcs() or progress
            if not progress and not self.queue:
                return


_CALLED_UNNAMED = frozenset({"keys"})
"""Methods Python calls without the code naming them that are not special names: a mapping's
``keys`` (``f(**settings)``, ``dict(settings)``, ``{**settings}``)."""


def _read_unnamed(key: Any, kind: type) -> bool:
    """Whether an entry of a user's class ``kind`` may be read without the code naming it: a
    special name (``__call__``, ``__add__``...), what Python or libraries read (``_CALLED_UNNAMED``,
    ``_READ_BY_LIBRARIES``), and an entry a library's base class reads of its subclasses
    (``_library_reads``: ``json.JSONEncoder`` calls ``default``; ``ast.NodeVisitor`` calls
    ``visit_Constant`` by a name it computes, so every entry)."""
    if key in _READ_BY_LIBRARIES or key in _CALLED_UNNAMED:
        return True
    if type(key) is str and key.startswith("__"):
        return key not in _METADATA
    if key in _METADATA:
        return False
    read = _library_reads(kind)
    return read is None or key in read


_LIBRARY_READS: weakref.WeakKeyDictionary[type, frozenset[str] | None] = weakref.WeakKeyDictionary()


def _library_reads(kind: type) -> frozenset[str] | None:
    """The names the library's code in ``kind`` reads (its functions' globals and attributes: the
    subclass's methods and settings it calls or reads by name): the code of its library bases and
    of a library's functions its own classes hold (``namedtuple``'s ``_asdict`` reads the class's
    ``_fields``; ``visit = ast.NodeVisitor.visit``). None where that code computes names
    (``getattr(self, "visit_" + name)``), so that it may read any: every entry is then watched (a
    class that holds ``copy.deepcopy`` too, whose ``getattr`` reads what it copies). Read from the
    code itself, once a class."""
    if kind in _LIBRARY_READS:
        return _LIBRARY_READS[kind]
    names: set[str] = set()
    for base in kind.__mro__:
        if base is object:
            continue
        library = base is not kind and is_library(base)
        for item in vars(base).values():
            function = getattr(item, "__func__", getattr(item, "fget", item))  # a static, class or property's
            code = getattr(function, "__code__", None)
            if isinstance(code, types.CodeType) and (library or is_library(function)):
                names |= _code_names(code)
    found = None if not names.isdisjoint(COMPUTED_ATTRIBUTES) else frozenset(names)
    _LIBRARY_READS[kind] = found
    return found


def _held(fn: types.FunctionType) -> bool:
    """Whether a function holds attributes or annotations (which ``typing.get_type_hints`` and
    ``inspect`` read without the code naming them)."""
    return bool(fn.__dict__ or fn.__annotations__)


def _labels(keys: list[Any], attribute: bool) -> list[str]:
    """How a reader names each entry of a mapping: ``.name`` for an attribute, ``[key]`` for an item."""
    return [f".{k}" if attribute and type(k) is str else f"[{_named_key(k)}]" for k in keys]


def _named_key(key: Any) -> str:
    """How a message names a dict's key: its repr, or its type's name where its ``__repr__``
    raises (only a name: the key itself is watched as any other)."""
    try:
        return repr(key)
    except Exception:
        return f"<{type(key).__qualname__} object>"


def content(x: Any) -> Any:
    """What a buffer holds (``KINDS``' buffers and NumPy arrays), as one comparable key: a NumPy
    array's dtype (a record's field names too), shape and strides with its bytes (and a masked
    array's mask), a ``bytearray``'s, ``array``'s, ctypes object's or ``mmap``'s bytes (a closed
    mmap: none)."""
    if isinstance(x, type):  # a class: its subclasses, and the classes registered with each abstract one
        return _registered(x)
    if _is_numpy_array(type(x)) or _is_numpy_record(type(x)):  # a record of a structured array: a view of it
        mask = getattr(x, "_mask", None)  # a masked array's (its tobytes() fills the masked places)
        dtype = x.dtype.str if x.dtype.names is None else (x.dtype.str, repr(x.dtype))  # '|V8' names no field
        return (dtype, x.shape, x.strides, x.tobytes(), *(() if mask is None else (mask.tobytes(),)))
    if type(x).__module__ == "mmap":  # its bytes and its position (what read() and tell() give)
        return (type(x), None) if x.closed else (type(x), x.tell(), bytes(x))
    if isinstance(x, decimal.Context):  # its precision, rounding, exponents, traps and flags
        return (type(x), repr(x))
    return (type(x), x.tobytes() if isinstance(x, memoryview) else bytes(x))


def _abstract(x: Any) -> bool:
    """An abstract class (``abc.ABCMeta``'s, which keeps what is registered with it)."""
    return issubclass(type(x), type) and "_abc_impl" in vars(x)


_REGISTRIES: weakref.WeakKeyDictionary[type, tuple[Any, Any]] = weakref.WeakKeyDictionary()
"""Each library abstract class's ``_registered``, with the ABC cache token it was read at."""


def abc_registry(kind: type) -> Any:
    """The classes registered with the abstract class ``kind`` or with any of its subclasses, which
    ``isinstance(x, kind)`` answers from (a new subclass, or a class registered elsewhere, changes
    no answer), each held weakly, in the order of their ids. Read anew only when a class was
    registered with any abstract class since (``abc.get_cache_token()``, which every ``register``
    moves; ``isinstance``'s own caches hold until it moves too): a guard's check of a library's
    abstract class costs a lookup."""
    token = abc.get_cache_token()
    kept = _REGISTRIES.get(kind)
    if kept is not None and kept[0] == token:
        return kept[1]
    registered = {id(c): c for _, classes in _registered(kind) for c in classes}
    found = tuple(weakref.ref(registered[k]) for k in sorted(registered))
    _REGISTRIES[kind] = (token, found)
    return found


def registry_changed(kind: type, recorded: tuple[Any, ...]) -> bool:
    """Whether what is registered with the abstract class ``kind`` (``abc_registry``) differs from
    ``recorded``, a class collected since aside on both sides (it has no instance left to ask
    about, and a registry read before it died still names it until abc's token moves)."""
    now = tuple(ref for ref in abc_registry(kind) if ref() is not None)  # kept until the token moves
    return now != tuple(ref for ref in recorded if ref() is not None)


def _registered(kind: type) -> tuple[tuple[type, tuple[type, ...]], ...]:
    """A class's C state that ``isinstance`` and ``__subclasses__()`` answer from: for it and
    each of its subclasses, in turn, the classes registered with it (``Marker.register(C)``, an
    abstract class's; none for another)."""
    found: list[tuple[type, tuple[type, ...]]] = []
    waiting, seen = [kind], set()
    while waiting:
        k = waiting.pop()
        if id(k) in seen:
            continue
        seen.add(id(k))
        registry = abc._get_dump(k)[0] if "_abc_impl" in k.__dict__ else set()  # type: ignore[attr-defined]
        found.append((k, tuple(sorted((c for c in (r() for r in registry) if c is not None), key=id))))
        waiting.extend(type.__subclasses__(k))
    return tuple(found)


def generator_state(x: Any) -> Any:
    """A random generator's state, as one comparable key."""
    if isinstance(x, random.Random):
        return x.getstate()
    bits = getattr(x, "bit_generator", None) or getattr(x, "_bit_generator", None) or x
    return _comparable(bits.state)


def _comparable(state: Any) -> Any:
    """A NumPy generator's state (dicts, arrays, numbers) as nested tuples that ``==`` compares."""
    if isinstance(state, dict):
        return tuple((k, _comparable(v)) for k, v in state.items())
    if isinstance(state, (list, tuple)):
        return tuple(map(_comparable, state))
    tobytes = getattr(state, "tobytes", None)
    return (str(getattr(state, "dtype", "")), tobytes()) if tobytes is not None else state


def _is_numpy_array(kind: type) -> bool:
    """A NumPy array, or a subclass of NumPy's (a masked array)."""
    return any(_is_numpy(k, "ndarray") for k in kind.__mro__)


def _is_numpy(kind: type, *names: str) -> bool:
    """A NumPy type of one of ``names`` (read from the type: NumPy is never imported here)."""
    return module_of(kind).startswith("numpy") and kind.__name__ in names


def _is_library_iterator(kind: type) -> bool:
    """An iterator of a library's, or a user's subclass of one (``class Count(itertools.count)``):
    its position is the library's state (C state, for Python's own). A user's iterator written in
    Python, deriving at most from an abstract one (``collections.abc.Iterator``), is walked."""
    if not hasattr(kind, "__next__"):
        return False
    return any(
        is_library(k) and "__next__" in vars(k) and not getattr(vars(k)["__next__"], "__isabstractmethod__", False)
        for k in kind.__mro__
    )


COMPILED_STATE = frozenset(
    {"fn", "__wrapped__", "_cache", "_last", "_lock", "_previous", "_repeats", "_shapes", "eager", "times_recorded"}
)
"""A compiled function's own state (``run.Compiled``): its function, then compile's bookkeeping,
which changes at each recording and is not part of the world (the tutorial says so)."""


def _is_compiled(kind: type) -> bool:
    return module_of(kind) == "vjpgrad.compiler.run" and kind.__name__ == "Compiled"


def _is_vmapped(kind: type) -> bool:
    return module_of(kind) == "vjpgrad.batched.run" and kind.__name__ == "Vmapped"


def _bare() -> None:
    """A function with nothing of its own: what a fresh wrapper is made around (``_own_attributes``)."""


_OWN_ATTRIBUTES: dict[type, frozenset[str]] = {}
"""A wrapper's type -> the names a fresh one of that type holds in its ``__dict__``: its settings
and bookkeeping (a ``numpy.vectorize``'s ufunc cache, a vmap's programs), not the user's."""


def _own_attributes(kind: type) -> frozenset[str]:
    """The attribute names a wrapper of type ``kind`` has of its own: read once from a fresh one
    made around ``_bare`` (so they follow the library's version). A partial has none: any
    attribute of one (or of a subclass's instance) is the user's."""
    own = _OWN_ATTRIBUTES.get(kind)
    if own is None:
        make: Any = kind
        if issubclass(kind, functools.partial):
            fresh: Any = None
        elif issubclass(kind, functools._lru_cache_wrapper):
            fresh = functools.lru_cache(_bare)
        elif _is_vmapped(kind):
            fresh = make(_bare, 0, 0, False, None)
        else:  # numpy.vectorize
            fresh = make(_bare)
        own = _OWN_ATTRIBUTES[kind] = frozenset(vars(fresh)) if fresh is not None else frozenset()
    return own


def _is_numpy_generator(kind: type) -> bool:
    return _is_numpy(kind, "Generator", "RandomState") or (
        module_of(kind).startswith("numpy.random") and hasattr(kind, "state")
    )


_IMMUTABLE = (
    range,
    type(Ellipsis),
    type(NotImplemented),
    types.CodeType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
    enum.Enum,
    *(getattr(enum, name) for name in ("verify",) if hasattr(enum, name)),  # 3.11 on
)
"""Python's kinds whose objects never change once made (or whose state no function reads as
data: a descriptor, an enum member)."""

_HOLDING_A_VALUE = (enum.auto, *(getattr(enum, name) for name in ("member", "nonmember") if hasattr(enum, name)))
"""enum's wrappers of a value (``enum.nonmember([...])``, 3.11 on): walked to their value."""

_BY_IDENTITY = (type(threading.RLock()), type(threading.Lock()))
"""Python's kinds whose state is not data a result reads (a lock): by identity."""

_PLAIN_DATA = (
    *_DATA_CLASSES,
    dataclasses.Field,
    contextlib.ExitStack,
    contextlib.AsyncExitStack,
    contextlib.closing,
    contextlib.aclosing,
    contextlib.nullcontext,
    contextlib.suppress,
    contextlib.redirect_stdout,
    contextlib.redirect_stderr,
    *((contextlib.chdir,) if hasattr(contextlib, "chdir") else ()),
)
"""Python's kinds that hold what they were given in their ``__dict__``: walked as a user's
instance is."""


_TORCH_STATE = frozenset(
    {"torch._C.TensorBase", "torch.nn.modules.module.Module", "torch.optim.optimizer.Optimizer", "torch._C.Generator"}
)
"""PyTorch's kinds whose state is its own memory (a tensor's numbers, changed in place by an
optimizer's step; a module's parameters; a generator's state), by the names of the classes they
derive from (PyTorch is never imported here): refused in a compiled function's world."""

_MADE_BY_CONTEXTMANAGER = (contextlib._GeneratorContextManager, contextlib._AsyncGeneratorContextManager)
"""What ``@contextlib.contextmanager`` (and its async twin) makes of the user's function and the
arguments a call gives it; used as a decorator, each call makes it anew from those (its generator,
made once, is not what runs)."""

_KEY_WRAPPER = type(functools.cmp_to_key(lambda a, b: 0))
"""What ``functools.cmp_to_key`` makes: C's ``KeyWrapper``, whose comparison function it does
not show."""


def _derives_from(names: frozenset[str]) -> Callable[[type], bool]:
    """A row's test: the kind, or a class it derives from, is one of ``names`` (``module.Name``:
    their modules are not imported here)."""
    return lambda kind: any(f"{k.__module__}.{k.__name__}" in names for k in kind.__mro__)


_LIBRARY_PLAIN_DATA = frozenset(
    {
        "configparser.RawConfigParser",
        "configparser.SectionProxy",
        "string.Template",
        "textwrap.TextWrapper",
        "threading.Event",
        "queue.Queue",
        "os._Environ",
        "numpy.polynomial._polybase.ABCPolyBase",
        "numpy.poly1d",
        "typing._BaseGenericAlias",
    }
)
"""Classes of Python's library (and NumPy's) whose instances hold their state in their
``__dict__`` (an Event's flag, a Queue's deque, ``os.environ``'s dict, a polynomial's array of
coefficients, what a ``typing.List[X]`` or ``Annotated[float, settings]`` holds): walked as a
user's instance is."""

_C_BUFFERS = frozenset({"_ctypes._SimpleCData", "_ctypes.Array", "_ctypes.Structure", "_ctypes.Union", "mmap.mmap"})
"""A ctypes number, array or structure, or an ``mmap``: state in its bytes (the buffer protocol)."""


def _thread_local(walk: _Walk, var: int, x: Any) -> None:
    """A ``threading.local``: the attributes it holds for the calling thread (its own C code
    serves them, as the guard reads them, in the thread that calls)."""
    name = walk.snapshot.names[var]
    walk._mapping(walk.get(var, "dict", None, name), x.__dict__, attribute=True)


def _ufunc(walk: _Walk, var: int, x: Any) -> None:
    """A NumPy ufunc: NumPy's own by identity; one made by ``numpy.frompyfunc`` holds a Python
    function it does not show: refused."""
    if str(getattr(x, "__name__", "")).endswith("(vectorized)"):
        name = walk.snapshot.names[var]
        raise UnwatchableError(
            name,
            "a ufunc made by numpy.frompyfunc, whose Python function vjpgrad cannot read",
            "call numpy.frompyfunc(...) inside the function, where its function is watched, or use numpy.vectorize",
        )


def _is_immutable(kind: type) -> bool:
    return (
        kind is object
        or issubclass(kind, _IMMUTABLE)
        or (_is_numpy_scalar(kind) and not is_number_kind(kind) and not _is_numpy_record(kind))
    )


def _is_numpy_record(kind: type) -> bool:
    """A record of a NumPy structured array (``table[0]``, a ``numpy.void``): a view of the
    array's memory, which a write to the array changes."""
    return any(_is_numpy(k, "void") for k in kind.__mro__)


def _is_numpy_scalar(kind: type) -> bool:
    """A NumPy scalar type (``numpy.generic`` and below), read from the type."""
    return module_of(kind).startswith("numpy") and any(k.__name__ == "generic" for k in kind.__mro__)


_ABSTRACT = (
    contextlib.AbstractContextManager,
    contextlib.AbstractAsyncContextManager,
    contextlib.ContextDecorator,
    contextlib.AsyncContextDecorator,
)


def _derives_from_abstract(kind: type) -> bool:
    return any(base in _ABSTRACT for base in kind.__mro__)


def _abstract_instance(walk: _Walk, var: int, x: Any) -> None:
    """An instance of a subclass of one of Python's abstract bases, walked as any object; an
    instance of the base itself (a ``ContextDecorator()`` given attributes) as a user's."""
    if type(x) in _ABSTRACT:
        walk._instance(var, x)
    else:
        walk._object(var, x)


def _exception(walk: _Walk, var: int, x: Any) -> None:
    """An exception kept as data: its ``args``, the exceptions it was raised in and from
    (``__context__``, ``__cause__``, walked: code may read what they hold), its traceback by
    identity (its frames are not data; raised again, it has another, and the call records anew),
    the fields of Python's own exception classes (``UnicodeDecodeError.start``, ``OSError.errno``,
    ``StopIteration.value``: members of C structs, not in its ``__dict__``) and its attributes."""
    walk._members(var, x, ("args", "__context__", "__cause__"))
    name = walk.snapshot.names[var]
    walk.identity(walk.get(var, "member", "__traceback__", f"{name}.__traceback__"), x.__traceback__)
    for kind in type(x).__mro__:
        if is_library(kind):
            for field, descriptor in kind.__dict__.items():
                if type(descriptor) is types.MemberDescriptorType:
                    walk._slot(var, x, descriptor, f"{name}.{field}")
    walk._instance(var, x)


def _system_random(walk: _Walk, var: int, x: Any) -> None:
    """A ``random.SystemRandom``: no state to read; the world may draw (``record.DrawWatch``
    sees its draws from the system's entropy)."""
    walk.snapshot.may_draw = True


def _nothing(walk: _Walk, var: int, x: Any) -> None:
    """Watched where it is read (a number by its value, a Value by identity and flags): no parts."""


def _immutable(walk: _Walk, var: int, x: Any) -> None:
    """An object that never changes, watched by identity; ``str.format`` held in a variable reads
    attributes by the names its template spells: every entry of the namespaces reached is watched."""
    if _reads_attributes(x):
        walk.computed_attributes = True


def _name_getter(walk: _Walk, var: int, x: Any) -> None:
    """An ``operator.attrgetter`` or ``methodcaller`` held in a variable reads attributes by a
    name the code does not spell: every entry of the namespaces reached is watched. A
    ``methodcaller`` that holds an argument other than a number, a string or None is refused: C
    keeps its arguments, and shows them only through ``__reduce__`` (a new tuple at each call),
    so what a list or a dict among them holds could change unseen."""
    walk.computed_attributes = True
    if isinstance(x, operator.methodcaller):
        _refuse_held_objects(walk, var, x, "an argument", "call the method by name inside the function")


def _refuse_held_objects(walk: _Walk, var: int, x: Any, held: str, instead: str) -> None:
    """Refuse a ``methodcaller`` or ``itemgetter`` that holds an object (a list, a dict) as ``held``:
    C keeps what it holds, and shows it only through ``__reduce__``, so a change in it goes unseen."""
    if not _holds_constants(x):
        name = walk.snapshot.names[var]
        raise UnwatchableError(
            name,
            f"an operator.{type(x).__name__} that holds an object as {held}, which vjpgrad cannot watch (C keeps it)",
            f"{instead}, or hold a functools.partial or a lambda as {name}, whose arguments are watched",
        )


def _constant(x: Any, depth: int = 0) -> bool:
    """A number, a string, None, or a tuple, frozenset or slice of them: what never changes."""
    if type(x) in _PLAIN:
        return True
    if depth > 8:
        return False
    if type(x) in (tuple, frozenset):
        return all(_constant(part, depth + 1) for part in x)
    return type(x) is slice and all(_constant(part, depth + 1) for part in (x.start, x.stop, x.step))


def _holds_constants(caller: Any) -> bool:
    """Whether what a ``methodcaller`` or ``itemgetter`` holds (a name and arguments, or items)
    never changes (``_constant``): ``__reduce__`` gives ``(kind, (name, *args))`` or ``(kind,
    items)``, or ``(partial(methodcaller, name, **kwargs), args)`` where keywords are held."""
    reduced: Any = caller.__reduce__()
    made, args = reduced[0], reduced[1]
    keywords = made.keywords.values() if isinstance(made, functools.partial) else ()
    return all(_constant(part) for part in (*args, *keywords))


def _item_getter(walk: _Walk, var: int, x: Any) -> None:
    """An ``operator.itemgetter``: by identity where its items never change (``obj[0]``, a key);
    refused where it holds a list or a dict as an item, which C keeps out of sight."""
    _refuse_held_objects(walk, var, x, "an item", "index inside the function")


KINDS: list[tuple[str, Any, Callable[[_Walk, int, Any], None]]] = [
    ("number, string, bytes, bool or None: by value", is_number_kind, _nothing),
    ("file or stream: by identity", io.IOBase, _nothing),
    ("immutable: by identity (str.format, which reads attributes by name: names computed)", _is_immutable, _immutable),
    ("lock: by identity", _BY_IDENTITY, _nothing),
    ("slice: its start, stop and step", slice, lambda walk, var, x: walk._members(var, x, ("start", "stop", "step"))),
    (
        "generic alias (list[x]): its origin and arguments",
        types.GenericAlias,
        lambda walk, var, x: walk._members(var, x, ("__origin__", "__args__")),
    ),
    ("NumPy record (a structured array's row): its dtype and bytes", _is_numpy_record, _Walk._content),
    ("union type (int | x): its arguments", types.UnionType, lambda walk, var, x: walk._members(var, x, ("__args__",))),
    (
        "enum.auto, member or nonmember: its value",
        _HOLDING_A_VALUE,
        lambda walk, var, x: walk._members(var, x, ("value",)),
    ),
    ("dataclasses.InitVar: its type", dataclasses.InitVar, lambda walk, var, x: walk._members(var, x, ("type",))),
    ("operator.itemgetter: by identity (one holding an object: refused)", operator.itemgetter, _item_getter),
    ("weakref.finalize: whether it is alive", weakref.finalize, lambda walk, var, x: walk._members(var, x, ("alive",))),
    ("frame or traceback: refused", (types.FrameType, types.TracebackType), _Walk._refused),
    ("coroutine or async generator: refused", (types.CoroutineType, types.AsyncGeneratorType), _Walk._refused),
    ("exception: its args and attributes", BaseException, _exception),
    ("plain data of Python's: walked as a user's instance", _PLAIN_DATA, _Walk._instance),
    (
        "plain data of Python's library (configparser, string.Template, textwrap, threading.Event, queue.Queue, "
        "os.environ, typing's aliases): walked as a user's instance",
        _derives_from(_LIBRARY_PLAIN_DATA),
        _Walk._instance,
    ),
    ("decimal.Context: its settings and flags", decimal.Context, _Walk._content),
    (
        "functools.cached_property: its function",
        functools.cached_property,
        lambda walk, var, x: walk._members(var, x, ("func",)),
    ),
    ("Value: identity, requires_grad and attributes", Value, _nothing),
    ("weakref.WeakMethod: its object and function", weakref.WeakMethod, _Walk._weak_method),
    ("weak reference: its referent", weakref.ref, _Walk._reference),
    ("weakref.proxy: refused", (weakref.ProxyType, weakref.CallableProxyType), _Walk._refused),
    (
        "weak dict: its live keys and values",
        (weakref.WeakValueDictionary, weakref.WeakKeyDictionary),
        _Walk._weak_mapping,
    ),
    (
        "sequence or set: its items in order",
        (list, tuple, collections.deque, set, frozenset, weakref.WeakSet),
        _Walk._sequence,
    ),
    ("dict: its keys in order and values", dict, _Walk._dict),
    ("buffer: its content", (bytearray, array.array, memoryview), _Walk._content),
    ("ctypes pointer: refused", _derives_from(frozenset({"_ctypes._Pointer"})), _Walk._refused),
    ("ctypes py_object: refused", _derives_from(frozenset({"ctypes.py_object"})), _Walk._refused),
    ("queue.SimpleQueue: refused", _derives_from(frozenset({"_queue.SimpleQueue"})), _Walk._refused),
    ("contextvars.ContextVar: refused", _derives_from(frozenset({"_contextvars.ContextVar"})), _Walk._refused),
    ("ctypes data or mmap: its bytes", _derives_from(_C_BUFFERS), _Walk._content),
    ("threading.local: this thread's attributes", threading.local, _thread_local),
    (
        "random.SystemRandom: no state (its draws, from the system's entropy, are refused at recording)",
        random.SystemRandom,
        _system_random,
    ),
    ("random generator: its state, before and after the recording", random.Random, _Walk._generator),
    (
        "function: its code, closure, defaults, attributes and the globals it names",
        types.FunctionType,
        _Walk._any_function,
    ),
    (
        "bound method: its object and function",
        types.MethodType,
        lambda walk, var, x: walk._members(var, x, ("__self__", "__func__")),
    ),
    # a built-in method holds its object (``table.get``, ``steps.append``, ``steps.__len__``): the
    # object is watched too (for a built-in function, its module, watched by identity)
    ("built-in function or method: its object", (types.BuiltinMethodType, types.MethodWrapperType), _Walk._builtin),
    (
        "functools.partial: its function, arguments, keywords and the attributes set on it",
        functools.partial,
        lambda walk, var, x: walk._wrapper(var, x, ("func", "args", "keywords")),
    ),
    (
        "what @contextlib.contextmanager makes: its function, arguments and keywords (not its generator)",
        _MADE_BY_CONTEXTMANAGER,
        _Walk._context_manager,
    ),
    (
        "property (DynamicClassAttribute, enum.property): its functions",
        (property, types.DynamicClassAttribute),
        lambda walk, var, x: walk._members(var, x, ("fget", "fset", "fdel")),
    ),
    ("super: its class and object", super, lambda walk, var, x: walk._members(var, x, ("__thisclass__", "__self__"))),
    ("functools.cmp_to_key's key: refused", _KEY_WRAPPER, _Walk._refused),
    (
        "static or class method: its function",
        (staticmethod, classmethod),
        lambda walk, var, x: walk._members(var, x, ("__func__",)),
    ),
    ("cell: its contents", types.CellType, _Walk._cell),
    (
        "module: the entries its code names (a user's; a library's _MODULE_STATE and abstract classes)",
        types.ModuleType,
        _Walk._user_module,
    ),
    (
        "class: its entries, special methods and bases (a user's; a library's abstract class: what is registered)",
        type,
        _Walk._user_class,
    ),
    ("dict view: its dict", (type({}.keys()), type({}.values()), type({}.items())), _Walk._view),
    ("mapping proxy: its mapping", types.MappingProxyType, _Walk._proxy),
    (
        "functools.lru_cache wrapper: its function and attributes set on it; a user's called while recording: refused",
        functools._lru_cache_wrapper,
        _Walk._cached,
    ),
    ("operator.attrgetter or methodcaller: names computed", (operator.attrgetter, operator.methodcaller), _name_getter),
    ("iterator or generator: refused", _is_library_iterator, _Walk._refused),
    ("PyTorch tensor, module, optimizer or generator: refused", _derives_from(_TORCH_STATE), _Walk._refused),
    ("unittest.mock object: refused", _derives_from(frozenset({"unittest.mock.NonCallableMock"})), _Walk._refused),
    ("NumPy array: its dtype, shape, strides and content (a masked one's mask too)", _is_numpy_array, _Walk._content),
    (
        "NumPy vectorize: its function, settings and the attributes set on it",
        lambda kind: _is_numpy(kind, "vectorize"),
        lambda walk, var, x: walk._wrapper(var, x, ("pyfunc", "otypes", "excluded", "signature")),
    ),
    ("NumPy ufunc: by identity (one made by numpy.frompyfunc: refused)", lambda kind: _is_numpy(kind, "ufunc"), _ufunc),
    ("NumPy random generator: its state, before and after the recording", _is_numpy_generator, _Walk._generator),
    ("compiled function: its function", _is_compiled, _Walk._compiled),
    (
        "vmapped function: its function, settings and the attributes set on it",
        _is_vmapped,
        lambda walk, var, x: walk._wrapper(var, x, VMAPPED_MEMBERS),
    ),
    # by the classes an object's class derives from, not issubclass: an ABC's hook would take a
    # memoryview (which has __enter__ and __exit__) for a context manager
    (
        "abstract base of Python's: a subclass's instance walked as any object",
        _derives_from_abstract,
        _abstract_instance,
    ),
    ("object: a user's instance walked (class, attributes, slots); a library's by identity", object, _Walk._object),
]
"""How the world reads each kind of object: the first row whose types (or test) the object's
type falls in says how its state is read, or why it is refused. Every type is in the last row
at worst (an object); the test of this table enumerates Python's own types and checks that each
falls in a row made for it."""

_REFUSED = {
    "ctypes pointer: refused": (
        "a ctypes pointer, whose target vjpgrad does not follow (only its address shows)",
        "hold the object it points to itself, or read what {name} points to outside and pass it in",
    ),
    "ctypes py_object: refused": (
        "a ctypes py_object, whose object vjpgrad does not follow (only its address shows)",
        "hold the object itself",
    ),
    "queue.SimpleQueue: refused": (
        "a queue.SimpleQueue, whose items vjpgrad cannot read (they are C state)",
        "take what {name} holds outside the function and pass it in, or use a queue.Queue",
    ),
    "contextvars.ContextVar: refused": (
        "a contextvars.ContextVar, whose value depends on the context the call runs in",
        "read {name}.get() outside the function and pass the value in",
    ),
    "functools.cmp_to_key's key: refused": (
        "a key made by functools.cmp_to_key, whose comparison function vjpgrad cannot read (it is C state)",
        "make the key inside the function (functools.cmp_to_key(compare)), where compare is watched",
    ),
    "PyTorch tensor, module, optimizer or generator: refused": (
        "a PyTorch object (a tensor, module, optimizer or generator), whose numbers are PyTorch's memory, which "
        "vjpgrad does not watch (an in-place change, an optimizer's step, would go unseen)",
        "read the numbers {name} holds outside the function and pass them in (as numbers or Values), "
        "or call the function uncompiled",
    ),
    "unittest.mock object: refused": (
        "a unittest.mock object, which makes its attributes when they are first read (and answers any call), "
        "so that vjpgrad cannot tell what it holds",
        "use a plain object (types.SimpleNamespace, a dataclass) for {name}, or call the function uncompiled",
    ),
    "weakref.proxy: refused": (
        "a weakref.proxy, whose referent vjpgrad cannot read without running its code",
        "keep a weakref.ref (read it as {name}()) or the object itself",
    ),
    "iterator or generator: refused": (
        "an iterator, whose position vjpgrad cannot watch (a replay would not advance it)",
        "draw what {name} gives outside the function and pass it in as arguments",
    ),
    "coroutine or async generator: refused": (
        "a coroutine or async generator, whose position vjpgrad cannot watch",
        "run {name} outside the function and pass what it gives in as arguments",
    ),
    "frame or traceback: refused": (
        "a frame or traceback, whose local variables vjpgrad cannot watch",
        "keep the numbers {name} holds in a plain object and pass them in",
    ),
}
"""Why a row refuses its objects, and what to do instead."""


_ROWS: dict[type, tuple[str, Callable[[_Walk, int, Any], None]]] = {}


def row_of(kind: type) -> tuple[str, Callable[[_Walk, int, Any], None]]:
    """The row of ``KINDS`` a type falls in: its name and how its objects are walked."""
    row = _ROWS.get(kind)
    if row is None:
        row = next(
            (name, how)
            for name, kinds, how in KINDS
            if (issubclass(kind, kinds) if isinstance(kinds, (type, tuple)) else kinds(kind))
        )  # the last row holds every type
        if len(_ROWS) < 4096:
            _ROWS[kind] = row
    return row


_WALKS_INSTANCE = (_Walk._object, _Walk._instance, _Walk._sequence, _Walk._dict, _exception)
"""The rows that walk a user's subclass's class and attributes themselves. Every other row reads
only what its type holds, so a user's subclass of its type (a method overridden, a class attribute,
an enum member's value) is walked as a user's instance too, after the row."""

COMPUTED_ATTRIBUTES = frozenset(
    {
        "getattr",
        "hasattr",
        "setattr",
        "delattr",
        "vars",
        "__dict__",
        "__getattribute__",
        "attrgetter",
        "methodcaller",
        "dir",
        "getmembers",
        "getmembers_static",
        "getattr_static",
        "format",
        "format_map",
        "vformat",
        "__match_args__",
        "eval",
        "exec",
    }
)
"""Names whose use reads attributes by a name computed at run time (``getattr(C, name)``,
``vars(C)[key]``, the names ``dir`` lists, ``inspect.getattr_static``, and a format field
``"{0.scale}".format(C)``, whose attribute only a string spells, a positional ``match`` class
pattern, whose attributes ``__match_args__`` spells): where the code reached names one, every entry of the
classes and the user's modules reached is watched, not only those the code names."""
COMPUTED_GLOBALS = frozenset({"globals", "locals", "eval", "exec"})
"""Names whose use reads globals by a name computed at run time (``globals()[name]``): where the
code reached names one, every entry of the globals of the functions reached is watched."""

GRAPH_NAMES = frozenset({"op", "_op", "is_leaf", "parents", "_prev"})
"""A Value's names that tell how it was made (a leaf, or which operation made it): where the code
reached names one, how each Value a call is given was made is structure."""
VALUES_OWN_NAMES = GRAPH_NAMES | {"label"}
"""A Value's names that every Value answers, whether or not it carries an attribute of its own."""
CARRIED = {"detach": "label"}
"""A Value's methods whose result carries an attribute of the Value they are called on
(``x.detach()`` keeps ``x``'s label): where the code reached names one, it reads that attribute
of the Values a call is given."""

IDENTITY_NAMES = frozenset({"is_", "is_not", "id"})
"""Names whose use asks an object's identity as ``is`` does (``operator.is_(lr, DEFAULT)``,
``id(lr) == id(DEFAULT)``): where the code reached names one, which numbers are one object is
watched."""
_ASKS_IDENTITY = (operator.is_, operator.is_not, id)
_READS_ATTRIBUTES = (
    getattr,
    hasattr,
    setattr,
    delattr,
    vars,
    dir,
    eval,
    exec,
    str.format,
    str.format_map,
    inspect.getattr_static,
    inspect.getmembers,
    *(getattr(inspect, name) for name in ("getmembers_static",) if hasattr(inspect, name)),  # 3.11 on
    string.Formatter.format,
    string.Formatter.vformat,
    string.Formatter.get_field,
    operator.attrgetter,
    operator.methodcaller,
)
"""What reads attributes by a name computed at run time, held in a variable (``read = getattr``,
``fill = "{0.scale}".format``, ``static = inspect.getattr_static``): the code need not name it."""


def _reads_attributes(x: Any) -> bool:
    """Whether ``x`` is one of ``_READS_ATTRIBUTES``, or one bound to its object (a template's
    ``format``): the method of the object's type of that name is one of them."""
    if any(x is reads for reads in _READS_ATTRIBUTES):
        return True
    owner, name = getattr(x, "__self__", None), getattr(x, "__name__", None)
    if owner is None or not isinstance(name, str) or isinstance(owner, types.ModuleType):
        return False
    method = inspect.getattr_static(type(owner), name, None)
    return any(method is reads for reads in _READS_ATTRIBUTES)


_READS_GLOBALS = (globals, locals, eval, exec)
FUNCTION_NAMES = ("__name__", "__qualname__", "__doc__", "__module__")
"""What a Python function holds of its own besides its code, closure, defaults, annotations and
``__dict__``, which a user may set and code may read (a registry keyed by ``fn.__name__``, or by
``f"{fn.__module__}.{fn.__qualname__}"``)."""
CLASS_NAMES = ("__name__", "__qualname__")
"""What a class made by a class statement holds outside its ``__dict__`` that a user may set
(its ``__doc__`` and ``__module__`` are entries of its ``__dict__``)."""

MODULES_BY_NAME = frozenset({"__import__"})
"""Names whose use looks a module up at run time, by a name computed then (as ``sys.modules[name]``
does) or by an object (``inspect.getmodule(f)``, which looks in ``sys.modules``): the function is
refused at recording, since the world cannot follow the lookup. The library functions that do it
are refused whatever name holds them (``LOOKING_MODULES_UP``), and through their modules where the
code names both (``_LOOKUPS_BY_NAME``); a function of the user's named ``import_module`` is theirs."""

LOOKING_MODULES_UP = (
    ("importlib", "import_module"),
    ("pkgutil", "resolve_name"),  # pkgutil.resolve_name("pkg.mod:Config.scale"): and the attributes after it
    ("pydoc", "locate"),
    ("inspect", "getmodule"),
    ("builtins", "__import__"),
)
"""The library functions that look a module up by a name given at run time (module, function):
refused where the world holds one, under any name (``from pydoc import locate``)."""


_LOOKUPS_BY_NAME = (
    {"sys", "modules"},
    {"importlib", "import_module"},
    {"inspect", "getmodule"},
    {"pkgutil", "resolve_name"},
    {"pydoc", "locate"},
)
"""The names a function's code names together where it looks a module up through its module
(``pydoc.locate(...)``: a library module's functions are not walked; held under any other name, the
function itself is refused, ``LOOKING_MODULES_UP``)."""


def _looking_modules_up(name: str, fn: Any) -> UnwatchableError:
    """The refusal of a function of ``LOOKING_MODULES_UP`` the world holds as ``name``."""
    return UnwatchableError(
        name,
        f"{fn.__module__}.{fn.__qualname__}, which looks a module up at run time by a name it is given, which "
        "vjpgrad cannot follow to what it reads there",
        "import the module by name where the function is defined (import scales), so that vjpgrad watches "
        "what the function reads from it",
    )


def _looks_modules_up(fn: Any) -> bool:
    """Whether ``fn`` is one of ``LOOKING_MODULES_UP`` (their modules as imported: none is imported here)."""
    return any(fn is getattr(sys.modules.get(module), name, None) for module, name in LOOKING_MODULES_UP)


FRAME_NAMES = frozenset({"_getframe", "currentframe", "getouterframes", "f_back", "f_globals", "f_locals"})
"""Names whose use reads a frame while the function runs (``sys._getframe(1).f_locals``): where
the code reached names one, the function is refused at recording, since the world cannot follow
a frame to the variables it reads."""

_IDENTITY_OF_CONSTANTS = (type(None), bool, type(Ellipsis), str)


@functools.lru_cache(maxsize=4096)
def _compares_identity(code: types.CodeType) -> bool:
    """Whether a code object (or code nested in it) compares with ``is`` or ``is not`` other
    than to None, True, False or a string constant: ``lr is DEFAULT`` asks a number's identity."""
    previous = None
    for instruction in dis.get_instructions(code):
        if instruction.opname == "IS_OP" and not (
            previous is not None
            and previous.opname == "LOAD_CONST"
            and isinstance(previous.argval, _IDENTITY_OF_CONSTANTS)
        ):
            return True
        previous = instruction
    return any(_compares_identity(const) for const in code.co_consts if isinstance(const, types.CodeType))


def _refuse_frames_read_at_run_time(name: str, names: frozenset[str]) -> None:
    """``UnwatchableError`` for a function (``name``, whose code names ``names``) that reads a
    frame while it runs (``FRAME_NAMES``): its caller's globals and locals are no part of the
    world, and a compiled call's callers are not eager code's."""
    if not names.isdisjoint(FRAME_NAMES):
        raise UnwatchableError(
            name,
            "whose code reads a frame while it runs (sys._getframe, inspect.currentframe, f_back, f_globals, "
            "f_locals): a caller's variables are no part of what vjpgrad watches, and a compiled call "
            "has other callers than eager code",
            "pass what it reads there as an argument",
        )


def _refuse_modules_found_at_run_time(fn: types.FunctionType, name: str, names: frozenset[str]) -> None:
    """``UnwatchableError`` for a function (``name``, whose code names ``names``) that finds a
    module while it runs, where the world cannot follow it: by its name (``sys.modules``,
    ``importlib.import_module``), or a module of the user's it imports inside (``import config``)."""
    if not names.isdisjoint(MODULES_BY_NAME) or any(pair <= names for pair in _LOOKUPS_BY_NAME):
        raise UnwatchableError(
            name,
            "whose code looks a module up at run time (sys.modules, importlib.import_module, __import__, "
            "inspect.getmodule, pkgutil.resolve_name, pydoc.locate), which vjpgrad cannot follow to what it reads "
            "there",
            "import the module by name where the function is defined (import scales), so that vjpgrad watches "
            "what the function reads from it",
        )
    imported = next((m for m in _imports(fn.__code__) if _users_module(fn, *m)), None)
    if imported is not None:
        top = _top_module(fn, *imported)
        raise UnwatchableError(
            name,
            f"whose code imports {top} while it runs (an import inside a function), a module of yours that "
            "vjpgrad cannot follow from there to what the function reads in it",
            f"import {top} at the top of the module where the function is defined, so that vjpgrad watches what "
            "the function reads from it",
        )


@functools.lru_cache(maxsize=4096)
def _imports(code: types.CodeType) -> tuple[tuple[str, int], ...]:
    """The modules a code object (or code nested in it) imports while it runs (``import``
    inside a function): each its name and level (``from . import x``: 1)."""
    found: list[tuple[str, int]] = []
    instructions = list(dis.get_instructions(code))
    for k, instruction in enumerate(instructions):
        if instruction.opname == "IMPORT_NAME":
            level = instructions[k - 2].argval if k >= 2 and instructions[k - 2].opname == "LOAD_CONST" else 0
            found.append((str(instruction.argval), level if type(level) is int else 0))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found.extend(_imports(const))
    return tuple(found)


def _top_module(fn: types.FunctionType, name: str, level: int) -> str:
    """The top-level package an import a function runs finds its module in."""
    if not level:
        return name.partition(".")[0]
    package = fn.__globals__.get("__package__") or ""
    return (package.partition(".")[0] if isinstance(package, str) else "") or name.partition(".")[0]


def _users_module(fn: types.FunctionType, name: str, level: int) -> bool:
    """Whether an import a function runs gets a module of the user's: its top-level package is
    one (imported, or found without importing it) outside installed code. One that cannot be
    found is left to fail as in eager code."""
    top = _top_module(fn, name, level)
    module = sys.modules.get(top)
    if module is not None:
        return not is_library(module)
    try:
        spec = importlib.util.find_spec(top)  # a top-level name: nothing is imported to find it
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    places = [spec.origin] if spec.has_location and spec.origin else list(spec.submodule_search_locations or ())
    return any(not installed_file(place) for place in places)


@functools.lru_cache(maxsize=4096)
def _catches(code: types.CodeType) -> bool:
    """Whether a code object (or code nested in it) handles exceptions (``try``, ``with``): a
    ``try`` around ``x.scale`` tells whether a Value carries the attribute."""
    if any(instruction.opname in ("PUSH_EXC_INFO", "SETUP_FINALLY") for instruction in dis.get_instructions(code)):
        return True
    return any(_catches(const) for const in code.co_consts if isinstance(const, types.CodeType))


_BUILTINS_ONLY = frozenset({"eval", "exec"})
"""Names of ``COMPUTED_ATTRIBUTES`` that compute names only as the builtins, loaded as globals:
as attributes they are a model's own (``net.eval()``, PyTorch's spelling)."""

_GLOBAL_OPS = frozenset(
    {
        "LOAD_GLOBAL",
        "STORE_GLOBAL",
        "DELETE_GLOBAL",
        "LOAD_NAME",
        "STORE_NAME",
        "DELETE_NAME",
        "LOAD_FROM_DICT_OR_GLOBALS",
    }
)
"""The instructions that read or write a name in the globals (a class body's ``LOAD_NAME`` too)."""


@functools.lru_cache(maxsize=4096)
def _global_names(code: types.CodeType) -> frozenset[str]:
    """The names a code object and the code nested in it load or set as globals: which entries of
    its globals it reads or writes (an attribute of the same name, ``x.data`` beside a global
    ``data``, is not one)."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_OPS and isinstance(i.argval, str)}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return frozenset(names)


@functools.lru_cache(maxsize=4096)
def _code_names(code: types.CodeType) -> frozenset[str]:
    """The names a code object and the code nested in it read (globals and attributes), the
    attributes its ``match`` class patterns read among them (``_matched_names``)."""
    names = set(code.co_names) | _matched_names(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return frozenset(names)


@functools.lru_cache(maxsize=4096)
def _matched_names(code: types.CodeType) -> frozenset[str]:
    """The attributes a code object's ``match`` class patterns read, which it does not load as
    names: a keyword pattern's (``case Config(act="relu")``), a constant tuple that
    ``MATCH_CLASS`` takes, and for a positional pattern (``case Config("relu")``) the names its
    class's ``__match_args__`` gives, named by ``"__match_args__"``: one of the names that
    compute names (``COMPUTED_ATTRIBUTES``)."""
    if "MATCH_CLASS" not in dis.opmap or dis.opmap["MATCH_CLASS"] not in code.co_code:
        return frozenset()
    names: set[str] = set()
    previous = None
    for instruction in dis.get_instructions(code):
        if instruction.opname == "MATCH_CLASS":
            if previous is not None and previous.opname == "LOAD_CONST" and isinstance(previous.argval, tuple):
                names.update(name for name in previous.argval if isinstance(name, str))
            if instruction.arg:  # positional sub-patterns: __match_args__ names them
                names.add("__match_args__")
        previous = instruction
    return frozenset(names)


def _identity_matters(x: Any) -> bool:
    """A number whose identity its value does not decide (not a bool or a small int, which
    Python keeps one of each)."""
    return _is_number(x) and type(x) is not bool and not (type(x) is int and -5 <= x <= 256)


def _is_nan(x: Any) -> bool:
    """A nan (of any kind of number): ``x in (NAN,)`` and ``[x] == [NAN]`` ask its identity."""
    try:
        return bool(x != x)
    except ArithmeticError:  # a signalling Decimal NaN refuses comparison
        return True


def _partition(walk: _Walk, numbers: list[tuple[str, Any]]) -> None:
    """Which of the world's numbers (and the number arguments) are one object: watched where
    the code reached compares with ``is``, so that ``lr is DEFAULT`` is not answered for an
    equal number, and wherever a nan is among them, since containment and the comparison of
    containers ask identity before ``==`` (``label in (NAN,)`` holds for NAN itself only). A
    number made anew at each call stays an object of its own: one recording. ``numbers`` holds
    the containers a call was given too (keyed by their content): where the code compares with
    ``is``, they are grouped with the world's objects of their kinds, so that ``options is
    DEFAULTS`` is not answered for an equal copy. A class's keys are names, not numbers a code
    compares: left out, so that a cache Python adds to the class (``_PYTHONS_CACHES``) changes
    no partition either."""
    members: list[tuple[int, int]] = [(-1, k) for k in range(len(numbers))]
    objects = [x for _, x in numbers]
    kinds = {type(x) for x in objects if not is_scalar(x)}
    if walk.identities and kinds:
        for var, place, x in walk.by_identity:
            if type(x) in kinds:
                members.append((var, place))
                objects.append(x)
    for fact, raw in zip(walk.snapshot.facts, walk.snapshot.raw, strict=True):
        if fact[0] == "same" and _identity_matters(raw):
            members.append((fact[1], -1))
            objects.append(raw)
        elif fact[0] == "scalars" and fact[1] not in walk.snapshot.class_keys:
            for k, x in enumerate(raw):
                if _identity_matters(x):
                    members.append((fact[1], k))
                    objects.append(x)
    if len(members) > 1 and (walk.identities or any(map(_is_nan, objects))):
        walk.snapshot.numbers = [name for name, _ in numbers]
        walk.fact("partition", 0, tuple(members), groups(objects), raw=objects)


def groups(objects: Any) -> tuple[int, ...]:
    """Each object's group: the position of the first of the objects that it is."""
    first: dict[int, int] = {}
    return tuple([first.setdefault(id(x), len(first)) for x in objects])


TORCH_SEED_READERS = frozenset({"initial_seed", "get_rng_state"})
"""PyTorch's functions that read what its global generator was seeded with, or its state
(``torch.initial_seed()``, ``torch.get_rng_state()``, the generator's own ``initial_seed`` and
``get_state``, reached through ``default_generator``): named, the recording is watched, as a reading
a replay would repeat (a ``torch.manual_seed`` outside, between calls, changes what they read)."""


_PROCESS_READERS = frozenset(
    id(f) for f in (*PROCESS_STATE, *OWN_READINGS, *(getattr(threading, name, None) for name in THREAD_READERS)) if f
)
"""The functions that read the process's or the thread's state (``PROCESS_STATE``, ``OWN_READINGS``,
``threading.current_thread``), by identity (they live as long as their modules): held under any
name (``from threading import current_thread as me``, an item of a dict), the recording is watched."""


def _reads_torchs_seed(x: Any) -> bool:
    """Whether ``x`` is one of PyTorch's functions that read its global generator's seed or state
    (``TORCH_SEED_READERS``), by identity: held under a name of the user's (``from torch import
    initial_seed as s0``), the recording is watched all the same. Never imports PyTorch."""
    torch = sys.modules.get("torch")
    return torch is not None and any(x is getattr(torch, name, None) for name in TORCH_SEED_READERS)


def _may_draw(walk: _Walk) -> bool:
    """Whether the code reached names a drawing module or function the world holds, a reading of
    the process's state or the current folder, PyTorch's global generator, or (in a constructor,
    which runs at each call for an object the function makes) a reading no generator's state shows:
    a recording run is then watched (``record.DrawWatch``)."""
    return (
        not walk.drawing_names.isdisjoint(walk.called_names)
        or not _READS_PROCESS_STATE.isdisjoint(walk.called_names)
        or not _READS_THE_FOLDER.isdisjoint(walk.called_names)
        or ("default_generator" in walk.names and "torch" in sys.modules)  # PyTorch's, seeded by its own methods
        or (not TORCH_SEED_READERS.isdisjoint(walk.names) and "torch" in sys.modules)  # its seed or state read
        # a constructor's reading that no state shows (an object made inside the function reads the clock)
        or not walk.unseen_drawing_names.isdisjoint(walk.constructor_names)
        or not _FROM_ENTROPY.isdisjoint(walk.constructor_names)
        or not _READS_PROCESS_STATE.isdisjoint(walk.constructor_names)
        or not _READS_THE_FOLDER.isdisjoint(walk.constructor_names)
    )


def observe(
    roots: list[tuple[str, Any]],
    limit: int = WORLD_LIMIT,
    numbers: list[tuple[str, Any]] | None = None,
    unfilled: dict[tuple[int, str], Any] | None = None,
) -> Snapshot:
    """The world reachable from ``roots`` (each a name and an object: the function, the
    objects a call was given), as facts. Raises ``WorldTooLargeError`` beyond ``limit``.
    ``numbers``: the number arguments (named), whose identities are watched with the world's
    numbers where the code compares with ``is``. ``unfilled``: an earlier walk's
    ``Snapshot.unfilled``, the ``functools.cached_property`` caches empty then, left out of this
    walk: a walk after a recording so sees a cache the recording filled as no change to refuse (eager
    code filled it). A replay would not fill it, so such a recording is not kept (``filled``, set by
    the recorder): the next call records once more, with the cache there, and what the cache holds
    is watched from then on, as any attribute; where the cache is emptied again between calls, each
    call records anew, until compile gives up and runs the function as it is."""
    walk = _Walk(limit, unfilled)
    for name, root in roots:
        var = walk.var(name)
        walk.seen.setdefault(id(root), var)
        walk.snapshot.constants.append(root)
        if isinstance(root, Value):
            walk.snapshot.values[id(root)] = root
            walk.fact("rg", var, root.requires_grad)
            walk._attributes(var, root)  # the walk's own step
            if type(root) is not Value and not is_library(type(root)):
                walk._own_slots(var, root)
        elif not is_scalar(root):
            walk.queue.append((var, root))
    walk.snapshot.roots = len(roots)
    # the Value class, through which every Value's methods and operators are found: a method the
    # user sets there (Value.swish = ...) is their code, walked as a user's class's entries are
    value_class = walk.get(0, "constant", Value, "Value")
    walk.seen[id(Value)] = value_class
    walk.queue.append((value_class, Value))
    walk.finish()
    if "__subclasses__" in walk.names:  # a registry of subclasses: which there are is C state of each class
        for var, kind in walk.classes:
            walk.fact("state", var, content(kind), raw=content(kind))
    walk.snapshot.may_draw = walk.snapshot.may_draw or _may_draw(walk)
    names = frozenset(walk.names) | {CARRIED[name] for name in walk.names.intersection(CARRIED)}
    walk.snapshot.attribute_names = None if walk.computed_attributes else names
    asks = walk.computed_attributes or walk.catches or not names.isdisjoint(VALUES_OWN_NAMES)
    walk.snapshot.asks_attributes = asks
    _partition(walk, numbers or [])
    return walk.snapshot


class Difference(NamedTuple):
    """Where two observations of a world first differ (``first_difference``): the place, as a
    reader names it (``self.steps``, ``cache[0]``), and what about it differs, one of
    ``ASPECTS``' keys ("" for the place itself: its value, or the object there). What a caller
    decides (a random draw, a cache called) it reads from ``aspect``; ``str()`` is the reader's
    whole phrase (``cache[0] (added)``)."""

    place: str
    aspect: str = ""

    def __str__(self) -> str:
        return self.place + ASPECTS[self.aspect]


def first_difference(before: Snapshot, after: Snapshot, registries: bool = True) -> Difference | None:
    """Where two observations of a world first differ, as a reader names it; None if equal. A
    cache Python added to a class's namespace (``_PYTHONS_CACHES``) is no difference, nor, where
    ``registries`` is False (a recording's side effects), what is registered with a library's
    abstract class: an import the function makes registers its classes there (``import sqlite3``:
    ``Sequence.register(Row)``), which no replay needs to do again."""
    for k, (old, new) in enumerate(zip(before.facts, after.facts, strict=False)):
        if old != new and not _caches_added(before, old, new):
            if not registries and old[0] == new[0] == "registry" and old[1] == new[1]:
                continue
            return _difference(before, after, old, new, before.raw[k], after.raw[k])
    if len(before.facts) != len(after.facts):
        longer = before if len(before.facts) > len(after.facts) else after
        fact = longer.facts[min(len(before.facts), len(after.facts))]
        return Difference(longer.describe(fact[2] if fact[0] == "get" else fact[1]))
    return None


def _caches_added(before: Snapshot, old: Fact, new: Fact) -> bool:
    """Whether two facts differ only in a class's keys that Python added as caches."""
    if old[0] != "scalars" or new[0] != "scalars" or old[1] != new[1] or old[1] not in before.class_keys:
        return False
    return tuple(k for k in new[2] if k not in _CACHES_KEYS) == tuple(k for k in old[2] if k not in _CACHES_KEYS)


ASPECTS = {
    "": "",
    "requires_grad": " (its requires_grad)",
    "attributes": " (its attributes)",
    "identity": " (its identity)",
    "added": " (added)",
    "removed": " (removed)",
    "drawn": " (its state: random numbers were drawn from it)",  # a random generator whose state moved
    "called": " (a functools.lru_cache: it was called)",  # a user's functools.lru_cache called (or cleared)
    "flags": " (its flags, which decimal's arithmetic sets as it computes: Inexact, Rounded...)",  # a Context's
}
"""What about a place two observations differ in (``Difference.aspect``), and how a reader's
phrase says it after the place."""
_ASPECT_OF_FACT = {
    "rg": "requires_grad",
    "rgs": "requires_grad",
    "attrs": "attributes",
    "generator": "drawn",
    "calls": "called",
}
"""The aspect a difference in a fact of each kind is (the kinds not here: the place itself)."""


def differs_in_number(before: Snapshot, after: Snapshot) -> bool:
    """Whether the first difference of two observations is a number's value alone."""
    for old, new in zip(before.facts, after.facts, strict=False):
        if old != new:
            return old[0] in ("same", "scalars") and _masked(old) == _masked(new)
    return False


def _identity_difference(before: Snapshot, old: Fact, new: Fact) -> Difference:
    """The first number of a ``partition`` fact that is now another object (or one with another)."""
    k = next((k for k, (a, b) in enumerate(zip(old[3], new[3], strict=False)) if a != b), 0)
    member_var, member_item = old[2][k] if k < len(old[2]) else (0, -1)
    return Difference(before.describe(member_var, member_item), "identity")


def _difference(
    before: Snapshot, after: Snapshot, old: Fact, new: Fact, raw: Any = None, raw_after: Any = None
) -> Difference:
    """How a reader names what differs between two facts at one place of two observations
    (``raw``, ``raw_after``: what the guard compares each with)."""
    kind, var = old[0], old[1]
    named = _function_attribute(before, old, new, raw, raw_after) or _named_part(before, after, old, new)
    if named is not None:
        return named
    items = ("unpack", "ids", "rgs", "attrses", "scalars")  # facts about every item of a tuple variable
    if var != new[1] or kind == "get" or (kind != new[0] and not (kind in items and new[0] in items)):
        return Difference(before.describe(var))
    if kind not in items:
        return Difference(before.describe(var), _aspect(old, new))
    return _items_difference(before, after, kind, var, old[2], new[2])


def _named_part(before: Snapshot, after: Snapshot, old: Fact, new: Fact) -> Difference | None:
    """Where two facts of one kind name parts of one place: which numbers are one object
    (``partition``), a name of builtins or a function's own (``__name__``), a Value's attribute."""
    kind, var = old[0], old[1]
    if kind == "partition" and new[0] == kind:
        return _identity_difference(before, old, new)
    if kind in ("builtins", "names") and new[0] == kind and old[2] == new[2]:  # a name of builtins, a function's
        k = next((k for k, (a, b) in enumerate(zip(old[3], new[3], strict=True)) if a != b), 0)
        return Difference(f"builtins.{old[2][k]}" if kind == "builtins" else f"{before.describe(var)}.{old[2][k]}")
    if kind == "attrs" and var in after.value_at:  # a Value's own attributes: name the one that changed
        was, now = dict(old[2]), vars(after.value_at[var])
        changed = [k for k in {**was, **now} if was.get(k, MISSING) is not now.get(k, MISSING)]
        return Difference(f"{before.describe(var)}.{changed[0]}" if changed else before.describe(var))
    return None


def _function_attribute(before: Snapshot, old: Fact, new: Fact, raw: Any, raw_after: Any) -> Difference | None:
    """An attribute a function of the world was given (``f.calls = 1``) or lost (``del f.tag``) where
    it had none or has none now (its ``bare`` or ``no attributes`` fact, which holds the function):
    named, where the facts alone would name the function, or the first of its parts that differs."""
    if old[0] in ("bare", "no attributes") and isinstance(raw, types.FunctionType) and raw.__dict__:
        return Difference(f"{before.describe(old[1])}.{next(iter(raw.__dict__))}", "added")
    if new[0] in ("bare", "no attributes") and isinstance(raw_after, types.FunctionType):
        return _attribute_removed(before, new[1], raw_after)
    return None


def _attribute_removed(before: Snapshot, var: int, fn: types.FunctionType) -> Difference | None:
    """The first attribute the function at ``var`` had (the keys of its ``__dict__`` as ``before``
    read them) that it has no more, or None."""
    dicts = {f[1] for f in before.facts if f[0] == "get" and f[2] == var and f[3] == "dict"}
    keys = {f[1] for f in before.facts if f[0] == "get" and f[2] in dicts and f[3] == "keys"}
    for fact, raw in zip(before.facts, before.raw, strict=True):
        if fact[0] == "scalars" and fact[1] in keys:
            gone = [k for k in raw if k not in fn.__dict__]
            if gone:
                return Difference(f"{before.describe(var)}.{gone[0]}", "removed")
    return None


def _aspect(old: Fact, new: Fact) -> str:
    """What about one place two facts of one kind say differs (``ASPECTS``): a decimal.Context's
    flags alone, or the aspect the fact's kind is about."""
    if old[0] == "state" and _flags_alone(old[2], new[2]):
        return "flags"
    return _ASPECT_OF_FACT.get(old[0], "")


_FLAGS = re.compile(r"flags=\[[^\]]*\]")


def _flags_alone(old: Any, new: Any) -> bool:
    """Whether two states of a ``decimal.Context`` (``content``: its type and repr) differ in
    their flags alone: what its arithmetic sets, not a setting the code changed."""
    if not (isinstance(old[0], type) and issubclass(old[0], decimal.Context) and old[0] is new[0]):
        return False
    return _FLAGS.sub("", old[1]) == _FLAGS.sub("", new[1])


def _items_difference(
    before: Snapshot, after: Snapshot, kind: str, var: int, old_items: tuple[Any, ...], new_items: tuple[Any, ...]
) -> Difference:
    """The first item of a tuple variable that differs, was added or was removed."""
    k = next((k for k, (a, b) in enumerate(zip(old_items, new_items, strict=False)) if a != b), None)
    if k is not None and len(old_items) == len(new_items):
        return Difference(before.describe(var, k), _ASPECT_OF_FACT.get(kind, ""))
    if k is None:
        k = min(len(old_items), len(new_items))
    if len(new_items) > len(old_items):
        return Difference(after.describe(var, k), "added")
    if len(new_items) < len(old_items):
        return Difference(before.describe(var, k), "removed")
    return Difference(before.describe(var, k))
