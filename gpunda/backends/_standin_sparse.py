"""``cupyx.scipy.sparse`` of the test stand-in GPU, over scipy.sparse.

Only the formats cupyx has (coo, csr, csc, dia as ``*_matrix`` and
``*_array``), only the attributes and methods its classes have (read from the
installed cupyx), only its data dtypes (bool, float32, float64, complex64,
complex128), and dense parts are stand-in arrays, not NumPy arrays. Every
sparse call is cuSPARSE under CuPy, so each one raises inside a stream capture.
"""
from __future__ import annotations

import types

import numpy as np

from gpunda.backends import _standin_array as _s
from gpunda.backends import _standin_cuda as _cuda
from gpunda.backends import _standin_names as _names

_DTYPES = frozenset(np.dtype(t) for t in ("bool", "float32", "float64", "complex64",
                                           "complex128"))
_FORMATS = ("coo", "csr", "csc", "dia")
_PARTS = ("data", "indices", "indptr", "row", "col", "offsets")
_MOD = "cupyx.scipy.sparse"


def _is_sparse(x):
    return getattr(x, "_standin_sparse", False)


def _to_scipy(x, where):
    if _is_sparse(x):
        return x._m
    if type(x) is _s.ndarray:
        return x._a
    if isinstance(x, np.ndarray):
        raise TypeError(f"Unsupported type {type(x)} ({where}: cupyx.scipy.sparse takes "
                        f"CuPy arrays)")
    if isinstance(x, (tuple, list)):
        return type(x)(_to_scipy(v, where) for v in x)
    return x


def _from_scipy(r):
    import scipy.sparse as ss
    if ss.issparse(r):
        cls = _classes.get((r.format, isinstance(r, ss.sparray)))
        if cls is None:
            raise NotImplementedError(f"cupyx.scipy.sparse has no {r.format} format")
        return cls._wrap(r)
    if isinstance(r, np.matrix):
        r = np.asarray(r)
    return _s._wrap(r, None)


class _Sparse:
    """Base of the stand-in sparse classes (``_m`` is the scipy matrix)."""

    _standin_sparse = True
    _scipy = None
    format = None
    __array_priority__ = 101

    def __init__(self, arg1, shape=None, dtype=None, copy=False):
        import scipy.sparse as ss
        _cuda.check_library("cuSPARSE", f"{type(self).__name__}()")
        if isinstance(arg1, np.ndarray):
            raise TypeError(f"Unsupported type {type(arg1)} ({type(self).__name__}: pass a "
                            f"CuPy array, a tuple of them, or a SciPy sparse matrix)")
        if ss.issparse(arg1):
            _cuda.check_h2d(type(self).__name__)
            m = self._scipy(arg1, shape=shape, dtype=dtype, copy=True)
        else:
            m = self._scipy(_to_scipy(arg1, type(self).__name__), shape=shape, dtype=dtype,
                            copy=copy)
        self._set(m)

    @classmethod
    def _wrap(cls, m):
        obj = object.__new__(cls)
        obj._set(m)
        return obj

    def _set(self, m):
        if m.dtype not in _DTYPES:
            raise ValueError(f"Only bool, float32, float64, complex64 and complex128 are "
                             f"supported (got {m.dtype})")
        object.__setattr__(self, "_m", m)
        for p in _PARTS:
            v = getattr(m, p, None)
            if isinstance(v, np.ndarray):
                _cuda.note_alloc(_s._root(v))

    def __getattr__(self, name):
        spec = _names.class_methods(_MOD, type(self).__name__).get(name)
        if spec is None and not (name in _PARTS and hasattr(self._m, name)):
            raise AttributeError(f"{_MOD}.{type(self).__name__} has no attribute {name!r}")
        if name in ("tobsr", "todok", "tolil"):
            raise NotImplementedError(f"{_MOD}.{type(self).__name__}.{name} is not supported "
                                      f"by cupyx")
        v = getattr(self._m, name)
        if not callable(v):
            import scipy.sparse as ss
            if isinstance(v, np.ndarray) or ss.issparse(v):
                return _from_scipy(v)
            return v
        return self._method(name, spec, v)

    def __setattr__(self, name, value):
        if name in _PARTS:
            setattr(self._m, name, _to_scipy(value, name))
        elif name in ("has_sorted_indices", "has_canonical_format", "shape"):
            setattr(self._m, name, value)
        else:
            raise AttributeError(f"cannot set {name!r} on {_MOD}.{type(self).__name__}")

    def _method(self, name, spec, fn):
        where = f"{_MOD}.{type(self).__name__}.{name}"

        def m(*args, **kwargs):
            spec.check_kwargs(kwargs, where)
            _cuda.check_library("cuSPARSE", where)
            if name == "get":
                _cuda.check_sync(where)
                return self._m.copy()
            r = getattr(self._m, name)(*_to_scipy(args, where),
                                       **{k: _to_scipy(v, where) for k, v in kwargs.items()})
            return _from_scipy(r)
        return m

    def __repr__(self):
        return f"<{type(self).__name__} {self._m.shape} nnz={self._m.nnz} (gpunda test stand-in)>"


def _operator(name):
    def op(self, *args):
        where = f"{_MOD}.{type(self).__name__}.{name}"
        _cuda.check_library("cuSPARSE", where)
        r = getattr(self._m, name)(*_to_scipy(args, where))
        return r if r is NotImplemented else _from_scipy(r)
    return op


_classes = {}


def _make_class(fmt, is_array):
    import scipy.sparse as ss
    name = f"{fmt}_{'array' if is_array else 'matrix'}"
    cls = type(name, (_Sparse,), {"_scipy": getattr(ss, name), "format": fmt,
                                  "__module__": _MOD})
    for n in _names.class_methods(_MOD, name):
        if n.startswith("__") and n.endswith("__") and n not in vars(_Sparse) and \
                n not in ("__init__", "__getattr__", "__setattr__", "__new__", "__class__",
                          "__dict__", "__doc__", "__module__", "__weakref__", "__slots__",
                          "__init_subclass__", "__subclasshook__", "__getattribute__",
                          "__delattr__", "__dir__", "__reduce__", "__reduce_ex__",
                          "__sizeof__", "__format__", "__str__", "__hash__", "__eq__",
                          "__ne__", "__array_priority__", "__annotations__",
                          "__class_getitem__", "__getstate__"):
            if hasattr(ss.csr_matrix, n):
                setattr(cls, n, _operator(n))
    _classes[(fmt, is_array)] = cls
    return cls


def _helper(name, spec):
    import scipy.sparse as ss
    fn = getattr(ss, name, None)
    if fn is None:
        return _s._missing(f"{_MOD}.{name}")
    where = f"{_MOD}.{name}"

    def f(*args, **kwargs):
        spec.check_kwargs(kwargs, where)
        if name in ("issparse", "isspmatrix") or name.startswith("isspmatrix_"):
            x = args[0] if args else None
            return _is_sparse(x) and (name in ("issparse", "isspmatrix")
                                      or x.format == name.split("_")[1])
        _cuda.check_library("cuSPARSE", where)
        return _from_scipy(fn(*_to_scipy(args, where),
                              **{k: _to_scipy(v, where) for k, v in kwargs.items()}))
    return f


def build_namespace():
    """The stand-in ``cupyx.scipy.sparse`` module."""
    mod = types.ModuleType(_MOD)
    specs = _names.namespace(_MOD)
    for fmt in _FORMATS:
        for is_array in (False, True):
            name = f"{fmt}_{'array' if is_array else 'matrix'}"
            if name in specs:
                setattr(mod, name, _make_class(fmt, is_array))
    for name, spec in specs.items():
        if hasattr(mod, name):
            continue
        if spec.kind == "function":
            setattr(mod, name, _helper(name, spec))
    mod.spmatrix = mod.sparray = _Sparse
    return mod
