"""What CuPy offers, read from the installed cupy / cupyx (test stand-in only).

The stand-in GPU (``_standin.py``) and the op namespace check
(tests/test_cupy_namespace.py) accept exactly what these functions report:
the public names of a CuPy namespace and the keyword arguments of each
callable, taken from ``inspect.signature`` or, for Cython methods without
one, from the signature line Cython embeds in the docstring. Nothing here is
a hand-written list of CuPy's API; importing cupy needs no GPU.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import re

__all__ = ["Spec", "namespace", "spec_of", "ndarray_methods", "UFUNC_KWARGS"]

# cupy's ufunc.__call__ takes **kwargs and rejects all but these ("Wrong arguments"):
# found by calling cupy.add(1, 2, k=v) on a GPU-less machine, where every other
# keyword raises TypeError before any device work (see tests/test_standin.py).
UFUNC_KWARGS = frozenset({"out", "dtype", "casting"})


class Spec:
    """One CuPy callable: its accepted keyword names (None: not knowable, any)."""

    __slots__ = ("name", "kind", "params", "varkw", "obj")

    def __init__(self, name, kind, params, varkw, obj):
        self.name, self.kind, self.params, self.varkw, self.obj = name, kind, params, varkw, obj

    def check_kwargs(self, kwargs, where):
        """TypeError naming the first keyword CuPy's callable does not take."""
        if self.params is None or self.varkw:
            return
        for k in kwargs:
            if k not in self.params:
                raise TypeError(f"{where}() got an unexpected keyword argument {k!r} "
                                f"(CuPy {_cupy_version()} does not accept it)")

    def __repr__(self):
        return f"Spec({self.name!r}, {self.kind}, params={sorted(self.params or ())})"


def _cupy_version():
    import cupy
    return cupy.__version__


_SIG_LINE = re.compile(r"^\s*[\w.]*?(\w+)\((.*)\)")


def _params_from_doc(doc):
    """Keyword names from a Cython-embedded signature line ``Cls.m(self, int axis=-1)``."""
    if not doc:
        return None, False
    m = _SIG_LINE.match(doc.strip().splitlines()[0])
    if m is None:
        return None, False
    names, varkw = set(), False
    for part in _split_args(m.group(2)):
        part = part.strip()
        if not part or part in ("/", "*"):
            continue
        if part.startswith("**"):
            varkw = True
            continue
        if part.startswith("*"):
            continue
        head = part.split("=", 1)[0].strip()
        name = head.split()[-1].split(":")[0].strip()   # drop Cython types ("int axis")
        if name != "self" and name.isidentifier():
            names.add(name)
    return frozenset(names), varkw


def _split_args(s):
    depth, cur, out = 0, "", []
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _spec(name, obj):
    import cupy
    if isinstance(obj, cupy.ufunc):
        return Spec(name, "ufunc", UFUNC_KWARGS, False, obj)
    if inspect.isclass(obj):
        kind, target = "class", obj.__init__
    elif callable(obj):
        kind, target = "function", obj
    else:
        return Spec(name, "value", None, False, obj)
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        params, varkw = _params_from_doc(getattr(target, "__doc__", None))
        if params is None and kind == "class":
            params, varkw = _params_from_doc(getattr(obj, "__doc__", "").strip()
                                             .replace("__init__(", "__init__(self, ", 1))
        return Spec(name, kind, params, varkw, obj)
    P = inspect.Parameter
    params = frozenset(p.name for p in sig.parameters.values()
                       if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY) and p.name != "self")
    varkw = any(p.kind is P.VAR_KEYWORD for p in sig.parameters.values())
    return Spec(name, kind, params, varkw, obj)


@functools.lru_cache(maxsize=None)
def namespace(modname):
    """{public name: Spec} of CuPy module ``modname`` (e.g. "cupy", "cupyx.scipy.special")."""
    mod = importlib.import_module(modname)
    out = {}
    for n in dir(mod):
        if n.startswith("_"):
            continue
        try:
            obj = getattr(mod, n)
        except Exception:   # noqa: BLE001 -- a lazy attribute that needs a device
            continue
        if inspect.ismodule(obj):
            continue
        out[n] = _spec(n, obj)
    return out


def spec_of(modname, name):
    """The Spec of ``modname.name`` or None when CuPy has no such name."""
    return namespace(modname).get(name)


@functools.lru_cache(maxsize=None)
def class_methods(modname, clsname):
    """{public attribute: Spec} of a CuPy class (``cupy.ndarray``, a cupyx sparse class)."""
    cls = getattr(importlib.import_module(modname), clsname)
    out = {}
    for n in dir(cls):
        if n.startswith("_") and not (n.startswith("__") and n.endswith("__")):
            continue
        obj = inspect.getattr_static(cls, n, None)
        if isinstance(obj, (property,)) or type(obj).__name__ == "getset_descriptor":
            out[n] = Spec(n, "attribute", None, False, obj)
            continue
        meth = getattr(cls, n, None)
        if callable(meth):
            try:
                sig = inspect.signature(meth)
            except (TypeError, ValueError):
                params, varkw = _params_from_doc(getattr(meth, "__doc__", None))
                out[n] = Spec(n, "method", params, varkw, meth)
                continue
            P = inspect.Parameter
            params = frozenset(p.name for p in sig.parameters.values()
                               if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)
                               and p.name != "self")
            varkw = any(p.kind is P.VAR_KEYWORD for p in sig.parameters.values())
            out[n] = Spec(n, "method", params, varkw, meth)
        else:
            out[n] = Spec(n, "attribute", None, False, obj)
    return out


def ndarray_methods():
    """{attribute: Spec} of ``cupy.ndarray``."""
    return class_methods("cupy", "ndarray")


def ufunc_methods():
    """{method: Spec} of a cupy ufunc (reduce, accumulate, reduceat, outer, at)."""
    import cupy
    out = {}
    for n in ("reduce", "accumulate", "reduceat", "outer", "at"):
        m = getattr(cupy.add, n, None)
        if m is not None:
            params, varkw = _params_from_doc(m.__doc__)
            out[n] = Spec(n, "method", params, varkw, m)
    return out
