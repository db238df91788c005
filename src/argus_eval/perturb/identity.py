"""Fingerprints of a user's perturbation function, so that a rerun recomputes what its changed code made.

A built-in perturbation is named by its condition id alone (its code is the release's). A perturbation a
user registers can change under the same name between two runs into one folder, so its records' input
stamps and its kept perturbed images also carry a fingerprint of what it computes (`code_fingerprint`):
its module and qualified name, its code (bytecode, constants, the names it reads), its defaults, the
values its closure holds and the module-level values and helper functions of its own module it reads,
each followed down a few levels. Line numbers, file paths and comments are left out, so moving the
function in its file recomputes nothing.

The fingerprint is the same in every process and on every rerun of one Python version: no id(), no
address, no hash() of a string (salted per process); sets are sorted. What has no code to read (a
builtin, a C function, a NumPy ufunc) is named by its module and qualified name alone, and a callable
object by its class's `__call__` and the plain values of its attributes: a change there is not seen,
which is what an explicit version (ImagePerturbation's `version`) is for.
"""

from __future__ import annotations

import functools
import hashlib
import json
import types
from typing import Any

import numpy as np

_DEPTH = 6  # how far helpers, closures and constants are followed: a fingerprint stays cheap and finite
_PLAIN = (type(None), bool, int, float, complex, str)
_ITEMS = 4096  # items of one collection described: past it, its length and type (a fingerprint stays cheap)


def code_fingerprint(fn: object) -> str:
    """A short hex digest of what fn computes, stable across processes (see the module docstring)."""
    described = _Describe().any(fn, _DEPTH)
    text = json.dumps(described, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def _name(obj: object) -> str:
    """module:qualname of a function, class or builtin (its type's for anything else)."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not isinstance(qualname, str):
        return _name(type(obj))
    return f"{module if isinstance(module, str) else '?'}:{qualname}"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Describe:
    """One fingerprint's walk: a JSON-able description of an object, each function described once."""

    def __init__(self) -> None:
        # what is being or was described: a cycle (a recursive helper) is named, not followed again.
        # id() only tells objects apart during this walk; it never enters the description.
        self._seen: set[int] = set()

    def any(self, obj: object, depth: int) -> Any:
        """obj described: plain values by value, code by content, other objects by their type's name."""
        try:
            return self._any(obj, depth)
        except Exception as e:  # a hostile object (a property that raises): its type names it
            return ["unreadable", _name(type(obj)), type(e).__name__]

    def _any(self, obj: object, depth: int) -> Any:
        if isinstance(obj, float):
            return ["float", repr(obj)]  # repr: -0.0, nan and inf as themselves, not as JSON rounds them
        if isinstance(obj, _PLAIN):
            return [type(obj).__name__, obj if not isinstance(obj, complex) else repr(obj)]
        if isinstance(obj, bytes | bytearray):
            return ["bytes", _digest(bytes(obj))]
        if isinstance(obj, np.ndarray):
            if obj.dtype.hasobject:
                return ["array", obj.dtype.str, list(obj.shape)]
            return ["array", obj.dtype.str, list(obj.shape), _digest(np.ascontiguousarray(obj).tobytes())]
        if isinstance(obj, np.generic):
            return ["scalar", obj.dtype.str, repr(obj.item())]
        if isinstance(obj, types.CodeType):
            return self._code(obj, depth)
        if isinstance(obj, types.ModuleType):
            return ["module", obj.__name__]
        if depth <= 0:
            return ["ref", _name(obj)]
        if isinstance(obj, tuple | list | set | frozenset | dict) and len(obj) > _ITEMS:
            return ["large", type(obj).__name__, len(obj)]
        if isinstance(obj, tuple | list):
            return [type(obj).__name__, [self.any(o, depth - 1) for o in obj]]
        if isinstance(obj, set | frozenset):
            items = [json.dumps(self.any(o, depth - 1), sort_keys=True) for o in obj]
            return [type(obj).__name__, sorted(items)]  # sorted: a set's order follows str hashes
        if isinstance(obj, dict):
            pairs = [[self.any(k, depth - 1), self.any(v, depth - 1)] for k, v in obj.items()]
            return ["dict", sorted(pairs, key=lambda p: json.dumps(p, sort_keys=True))]
        if isinstance(obj, types.FunctionType):
            return self._function(obj, depth)
        if isinstance(obj, functools.partial):
            keywords = {str(k): v for k, v in obj.keywords.items()}
            return ["partial", self.any(obj.func, depth - 1), self.any(obj.args, depth - 1),
                    self.any(keywords, depth - 1)]  # fmt: skip
        if isinstance(obj, types.MethodType):
            return ["method", self.any(obj.__func__, depth - 1), self._state(obj.__self__, depth - 1)]
        if isinstance(obj, type):
            call = obj.__dict__.get("__call__")
            return ["class", _name(obj), self.any(call, depth - 1) if call is not None else None]
        if isinstance(obj, types.BuiltinFunctionType | types.BuiltinMethodType) or not hasattr(
            obj, "__dict__"
        ):
            return ["ref", _name(obj)]  # no code to read: its name alone (a version says more)
        return self._state(obj, depth)

    def _state(self, obj: object, depth: int) -> Any:
        """A callable object (or a bound method's self): its class's __call__ and plain attributes."""
        if isinstance(obj, types.ModuleType | type):
            return self.any(obj, depth)
        # the __call__ its class runs (its own or a base's), read statically: no property of obj runs
        call = next((k.__dict__["__call__"] for k in type(obj).__mro__ if "__call__" in k.__dict__), None)
        code = self.any(call, depth - 1) if isinstance(call, types.FunctionType) else None
        attributes = getattr(obj, "__dict__", None) or {}
        kinds = (*_PLAIN, bytes, np.ndarray, np.generic, tuple, list, dict)
        plain = {str(k): v for k, v in attributes.items() if isinstance(v, kinds)}
        return ["object", _name(type(obj)), code, self.any(plain, 2)]

    def _code(self, code: types.CodeType, depth: int) -> Any:
        return [
            "code",
            code.co_name,
            _digest(code.co_code),
            [code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags],
            list(code.co_names),
            list(code.co_varnames),
            list(code.co_freevars),
            list(code.co_cellvars),
            [self.any(c, depth) for c in code.co_consts],  # nested functions' code objects among them
        ]

    def _function(self, fn: types.FunctionType, depth: int) -> Any:
        if id(fn) in self._seen:
            return ["again", _name(fn)]
        self._seen.add(id(fn))
        closure = []
        for cell in fn.__closure__ or ():
            try:
                closure.append(self.any(cell.cell_contents, depth - 1))
            except ValueError:  # an empty cell (a name assigned after the function was made)
                closure.append(None)
        return [
            "function",
            _name(fn),
            self._code(fn.__code__, depth),
            self.any(fn.__defaults__, depth - 1),
            self.any(fn.__kwdefaults__, depth - 1),
            closure,
            self._globals(fn, depth),
        ]

    def _globals(self, fn: types.FunctionType, depth: int) -> Any:
        """The module-level values fn's code reads: constants and arrays by value, functions and classes
        of fn's own module by content (a helper it calls), anything else by name."""
        names: set[str] = set()
        stack = [fn.__code__]
        while stack:
            code = stack.pop()
            names.update(code.co_names)
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        module = fn.__module__
        out = []
        for name in sorted(names):
            if name not in fn.__globals__:
                continue  # an attribute name, a builtin, or a global not yet assigned
            value = fn.__globals__[name]
            own = getattr(value, "__module__", None) == module
            if isinstance(value, types.FunctionType | type) and not own:
                out.append([name, ["ref", _name(value)]])  # a library's function: its name, not its code
            else:
                out.append([name, self.any(value, depth - 1)])
        return out
