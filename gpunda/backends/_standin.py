"""A strict CuPy stand-in: ``gpu(0)`` on a machine without a GPU, for tests only.

Enabled by ``GPUNDA_TEST_STANDIN_GPU=1`` (or ``enabled()`` in a test); never
loaded otherwise, never meant for users. The computation runs on NumPy, but
everything gpunda can observe follows CuPy (version installed, read from its
namespaces by _standin_names.py), so a CuPy-only mistake fails on CPU CI:

* the array module offers only CuPy's names, keyword arguments and dtypes;
  anything else raises as CuPy would (AttributeError, TypeError, ValueError);
* arrays are not NumPy arrays: ``np.asarray(x)`` raises TypeError, mixing with
  NumPy arrays raises TypeError, NumPy functions dispatch to CuPy's or fail
  (``__array_function__``); ``float(x)``, ``bool(x)``, ``x.item()``,
  ``x.tolist()``, iteration and printing work, as in CuPy (a synchronisation);
  the only way to host memory is ``get()`` / ``asnumpy`` / the backend's
  ``to_host``;
* reductions and scalar indexing give 0-d arrays, not NumPy scalars;
* sparse matrices follow cupyx.scipy.sparse (_standin_sparse.py);
* memory and stream capture are simulated (_standin_cuda.py).
"""
from __future__ import annotations

import contextlib
import os
import types

import numpy as np

from . import _standin_cuda as _cuda
from . import _standin_names as _names
from ._numpy import Backend

__all__ = ["ndarray", "xp", "StandinBackend", "enabled", "env_enabled", "NAME"]

NAME = "gpunda test stand-in (CuPy rules on NumPy)"

_check_sync, _check_h2d, _check_lib = _cuda.check_sync, _cuda.check_h2d, _cuda.check_library
_SCALARS = (int, float, complex, bool, np.generic)

# what runs a CUDA library under CuPy (raises inside a capture)
_CUBLAS = frozenset({"matmul", "dot", "vdot", "inner", "tensordot", "einsum", "kron"})
# what needs the host to know a device value (output size depends on the data, ...)
_SYNCING = frozenset({"nonzero", "flatnonzero", "argwhere", "unique", "compress", "extract",
                      "bincount", "histogram", "tril_indices", "triu_indices", "array_split",
                      "trim_zeros", "select"})
# what copies host data to the device (accepts NumPy arrays and lists)
_FROM_HOST = frozenset({"array", "asarray", "asanyarray", "ascontiguousarray",
                        "asfortranarray", "copy", "asarray_chkfinite", "frombuffer",
                        "fromstring", "fromfile", "fromiter"})


def env_enabled():
    """Whether ``GPUNDA_TEST_STANDIN_GPU`` asks for the stand-in."""
    return os.environ.get("GPUNDA_TEST_STANDIN_GPU", "").strip().lower() not in (
        "", "0", "false", "no")


# ------------------------------------------------------------------ array wrapping

def _check_dtype(dt):
    k = dt.kind
    if k not in "biufc" or (k == "f" and dt.itemsize > 8) or (k == "c" and dt.itemsize > 16):
        raise ValueError(f"Unsupported dtype {dt}")


def _root(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _new(a):
    """Wrap NumPy array ``a`` produced on the "device" (accounted once per buffer)."""
    _check_dtype(a.dtype)
    _cuda.note_alloc(_root(a))
    w = object.__new__(ndarray)
    w._a = a
    return w


def _wrap(r, known):
    """Results of a NumPy call as stand-in values (``known``: id -> wrapper of inputs)."""
    if isinstance(r, np.ndarray):
        w = known.get(id(r)) if known else None
        return w if w is not None else _new(r)
    if isinstance(r, np.generic):
        if isinstance(r, (np.bool_, np.number)):
            return _new(np.asarray(r))
        return r
    if isinstance(r, tuple):
        return tuple(_wrap(x, known) for x in r)
    if isinstance(r, list):
        return [_wrap(x, known) for x in r]
    return r


def _unwrap(x, host_ok, where, known):
    if type(x) is ndarray:
        known[id(x._a)] = x
        return x._a
    if isinstance(x, np.ndarray):
        if not host_ok:
            raise TypeError(f"Unsupported type {type(x)} ({where}: CuPy does not take NumPy "
                            f"arrays; copy to the device first)")
        _check_h2d(where)
        return x.copy()
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v, host_ok, where, known) for v in x)
    if host_ok and hasattr(x, "__array__") and not isinstance(x, _SCALARS):
        raise TypeError(f"Unsupported type {type(x)} ({where})")
    return x


def _fresh(r, known):
    """Positions of arrays in a flattened result that are new memory, not inputs/views."""
    out = []
    for i, x in enumerate(_flat(r)):
        if isinstance(x, np.ndarray) and id(x) not in known:
            out.append((i, x))
    return out


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [y for x in r for y in _flat(x)]
    return [r]


def _call(fn, args, kwargs, where, host_ok=False, writes=None):
    """Run NumPy ``fn`` on unwrapped args; account, record for replay, and wrap."""
    known = {}
    a = tuple(_unwrap(x, host_ok, where, known) for x in args)
    k = {n: _unwrap(v, host_ok, where, known) for n, v in kwargs.items()} if kwargs else {}
    cap = _cuda.capturing()
    if cap is not None:
        for t in (writes(a, k) if writes else (k.get("out"),)):
            if isinstance(t, tuple):
                for tt in t:
                    _cuda.snapshot(tt)
            else:
                _cuda.snapshot(t)
    r = fn(*a, **k)
    res = _wrap(r, known)
    if cap is not None:
        fresh = _fresh(r, known)

        def replay(fn=fn, a=a, k=k, fresh=fresh):
            got = _flat(fn(*a, **k))
            for i, buf in fresh:
                np.copyto(buf, got[i])
        _cuda.record(replay)
    return res


def _index(key, where):
    """An index for NumPy from a CuPy-style index (host index arrays are copied)."""
    known = {}
    items = key if isinstance(key, tuple) else (key,)
    out = []
    for s in items:
        if type(s) is ndarray:
            if s._a.dtype.kind == "b":
                _check_sync(f"{where} with a boolean mask")
            out.append(s._a)
        elif isinstance(s, (np.ndarray, list)):
            _check_h2d(where)
            v = np.array(s)
            if v.dtype.kind == "b":
                _check_sync(f"{where} with a boolean mask")
            out.append(v)
        else:
            out.append(s)
    return tuple(out) if isinstance(key, tuple) else out[0], known


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, a):
        f = a.flags
        self.c_contiguous, self.f_contiguous, self.owndata = f.c_contiguous, f.f_contiguous, \
            f.owndata

    def __getitem__(self, name):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[name]


class _MemPtr:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


class ndarray:
    """An array on the stand-in GPU: CuPy's ndarray surface over a NumPy buffer."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100
    __hash__ = None

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is not None or strides is not None:
            raise NotImplementedError("gpunda test stand-in: ndarray(memptr=/strides=)")
        a = np.empty(shape, dtype, order=order)
        _check_dtype(a.dtype)
        _cuda.note_alloc(a)
        self._a = a

    # host conversion, as CuPy allows or refuses it
    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    def get(self, stream=None, order="C", out=None, blocking=True):
        _check_sync("ndarray.get")
        h = np.array(self._a, order=order, copy=True)
        if out is not None:
            np.copyto(out, h)
            return out
        return h

    def set(self, arr, stream=None):
        _check_h2d("ndarray.set")
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray (got {type(arr)})")
        np.copyto(self._a, arr)

    def item(self):
        _check_sync("ndarray.item")
        return self._a.item()

    def tolist(self):
        _check_sync("ndarray.tolist")
        return self._a.tolist()

    def tobytes(self, order="C"):
        _check_sync("ndarray.tobytes")
        return self._a.tobytes(order)

    def __bool__(self):
        _check_sync("bool(ndarray)")
        return bool(self._a)

    def __float__(self):
        _check_sync("float(ndarray)")
        return float(self._a)

    def __int__(self):
        _check_sync("int(ndarray)")
        return int(self._a)

    def __complex__(self):
        _check_sync("complex(ndarray)")
        return complex(self._a)

    def __repr__(self):
        _check_sync("repr(ndarray)")
        return repr(self._a)

    def __str__(self):
        _check_sync("str(ndarray)")
        return str(self._a)

    def __format__(self, spec):
        _check_sync("format(ndarray)")
        return format(self._a if self._a.ndim else self._a[()], spec)

    def __reduce__(self):
        return _rebuild, (self.get(),)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __len__(self):
        if self._a.ndim == 0:
            raise TypeError("len() of unsized object")
        return self._a.shape[0]

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._a.shape[0]))

    # attributes
    shape = property(lambda s: s._a.shape, lambda s, v: setattr(s._a, "shape", v))
    dtype = property(lambda s: s._a.dtype)
    ndim = property(lambda s: s._a.ndim)
    size = property(lambda s: s._a.size)
    itemsize = property(lambda s: s._a.itemsize)
    nbytes = property(lambda s: s._a.nbytes)
    strides = property(lambda s: s._a.strides)
    flags = property(lambda s: _Flags(s._a))
    T = property(lambda s: _new(s._a.T))
    mT = property(lambda s: _new(np.swapaxes(s._a, -1, -2)))
    real = property(lambda s: _new(s._a.real))
    imag = property(lambda s: _call(lambda a: a.imag, (s,), {}, "ndarray.imag"))
    data = property(lambda s: _MemPtr(s._a.__array_interface__["data"][0]))
    device = property(lambda s: _cuda.Device(0))

    @property
    def base(self):
        b = self._a.base
        return _new(b) if isinstance(b, np.ndarray) else None

    @property
    def __cuda_array_interface__(self):
        d = dict(self._a.__array_interface__)
        d["version"] = 3
        d.pop("descr", None)
        return d

    def __dlpack_device__(self):
        return (2, 0)

    # indexing
    def __getitem__(self, key):
        k, _ = _index(key, "ndarray.__getitem__")
        r = self._a[k]
        if not isinstance(r, np.ndarray):
            # CuPy gives a 0-d view where NumPy gives a scalar
            kk = k if isinstance(k, tuple) else (k,)
            r = self._a[kk + (Ellipsis,)]
        res = _new(r)
        if _cuda.capturing() is not None and not np.shares_memory(r, self._a):
            src = self._a

            def replay(src=src, k=k, buf=r):
                np.copyto(buf, src[k])
            _cuda.record(replay)
        return res

    def __setitem__(self, key, value):
        k, _ = _index(key, "ndarray.__setitem__")
        if type(value) is ndarray:
            v = value._a
        elif isinstance(value, (np.ndarray, list)):
            _check_h2d("ndarray.__setitem__")
            v = np.array(value)
        else:
            v = value
        _check_dtype(np.asarray(v).dtype) if not isinstance(v, _SCALARS) else None
        _cuda.snapshot(self._a)
        self._a[k] = v
        dst = self._a

        def replay(dst=dst, k=k, v=v):
            dst[k] = v
        _cuda.record(replay)

    # NumPy protocol dispatch, as CuPy's: to CuPy's function of the same name, or refuse
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        f = getattr(xp, ufunc.__name__, None)
        if method == "__call__" and callable(f) and not _is_missing(f):
            return f(*inputs, **kwargs)     # CuPy's ufunc, or its function (matmul)
        if not isinstance(f, _Ufunc):
            return NotImplemented
        return getattr(f, method)(*inputs, **kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        mod = xp
        for part in func.__module__.split(".")[1:]:
            mod = getattr(mod, part, None) if not part.startswith("_") else mod
            if mod is None:
                return NotImplemented
        f = getattr(mod, func.__name__, None)
        if f is None or _is_missing(f):
            return NotImplemented
        return f(*args, **kwargs)


def _rebuild(host):
    return xp.asarray(host)


# binary/unary operators go through the stand-in ufuncs (so they refuse NumPy operands)
_BINOPS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
           "floordiv": "floor_divide", "mod": "remainder", "pow": "power",
           "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
           "lshift": "left_shift", "rshift": "right_shift", "divmod": "divmod"}
_CMPOPS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
           "gt": "greater", "ge": "greater_equal"}


def _defer(other):
    return (not isinstance(other, (ndarray, _SCALARS))
            and getattr(other, "__array_priority__", 0) > ndarray.__array_priority__)


def _binop(uname, reflected=False, inplace=False):
    def op(self, other):
        if _defer(other):
            return NotImplemented
        u = getattr(xp, uname)
        if inplace:
            u(self, other, out=self)
            return self
        return u(other, self) if reflected else u(self, other)
    return op


for _n, _u in _BINOPS.items():
    setattr(ndarray, f"__{_n}__", _binop(_u))
    setattr(ndarray, f"__r{_n}__", _binop(_u, reflected=True))
    if _n != "divmod":
        setattr(ndarray, f"__i{_n}__", _binop(_u, inplace=True))
for _n, _u in _CMPOPS.items():
    setattr(ndarray, f"__{_n}__", _binop(_u))
for _n, _u in {"neg": "negative", "pos": "positive", "abs": "absolute",
               "invert": "invert"}.items():
    setattr(ndarray, f"__{_n}__", lambda self, _u=_u: getattr(xp, _u)(self))


def _matmul(self, other):
    if _defer(other):
        return NotImplemented
    return xp.matmul(self, other)


ndarray.__matmul__ = _matmul
ndarray.__rmatmul__ = lambda self, other: (NotImplemented if _defer(other)
                                           else xp.matmul(other, self))


def _method(name, spec):
    npm = getattr(np.ndarray, name)
    where = f"cupy.ndarray.{name}"
    writes = None
    if name in ("fill", "put", "sort", "partition", "byteswap"):
        writes = lambda a, k: (a[0],)   # noqa: E731 -- the array itself

    def m(self, *args, **kwargs):
        spec.check_kwargs(kwargs, where)
        if name == "dot" and self._a.dtype.kind in "fc":
            _check_lib("cuBLAS", where)
        elif name in ("nonzero", "compress"):
            _check_sync(where)
        return _call(npm, (self,) + args, kwargs, where, writes=writes)
    m.__name__ = name
    return m


def _scatter(name, ufunc):
    def m(self, slices, value):
        k, _ = _index(slices, f"cupy.ndarray.{name}")
        return _call(lambda a, v: ufunc.at(a, k, v), (self, value), {},
                     f"cupy.ndarray.{name}", writes=lambda a, kw: (a[0],))
    return m


_OWN = set(vars(ndarray)) | {"get", "set", "scatter_add", "scatter_max", "scatter_min"}


def _install_methods():
    for name, spec in _names.ndarray_methods().items():
        if name in _OWN or name.startswith("__") or spec.kind != "method":
            continue
        if hasattr(np.ndarray, name):
            setattr(ndarray, name, _method(name, spec))
        else:
            setattr(ndarray, name, _missing(f"cupy.ndarray.{name}"))
    ndarray.scatter_add = _scatter("scatter_add", np.add)
    ndarray.scatter_max = _scatter("scatter_max", np.maximum)
    ndarray.scatter_min = _scatter("scatter_min", np.minimum)


def _missing(qual):
    def f(*a, **k):
        raise NotImplementedError(f"{qual} exists in CuPy but the gpunda test stand-in has no "
                                  f"NumPy emulation of it")
    f._standin_missing = True
    return f


def _is_missing(f):
    return getattr(f, "_standin_missing", False)


# ------------------------------------------------------------------ the namespace

class _Ufunc:
    """A CuPy ufunc on the stand-in: scalars and stand-in arrays only, CuPy's kwargs."""

    def __init__(self, name, npu, cpu):
        self.__name__ = self.name = name
        self._np, self._cp = npu, cpu
        self.nin, self.nout, self.nargs = cpu.nin, cpu.nout, cpu.nargs
        self.types = cpu.types

    def _args(self, args):
        for x in args:
            if not isinstance(x, (ndarray,) + _SCALARS):
                raise TypeError(f"Unsupported type {type(x)} (cupy.{self.name})")

    def __call__(self, *args, **kwargs):
        _names.UFUNC_KWARGS and self._check(kwargs, "")
        self._args(args)
        return _call(self._np, args, kwargs, f"cupy.{self.name}")

    def _check(self, kwargs, meth):
        if meth:
            spec = _names.ufunc_methods().get(meth)
            if spec is None:
                raise AttributeError(f"cupy ufunc has no method {meth!r}")
            spec.check_kwargs(kwargs, f"cupy.{self.name}.{meth}")
        else:
            bad = [k for k in kwargs if k not in _names.UFUNC_KWARGS]
            if bad:
                raise TypeError(f"Wrong arguments {dict((k, kwargs[k]) for k in bad)} "
                                f"(cupy.{self.name})")

    def _meth(self, meth, args, kwargs, writes=None):
        self._check(kwargs, meth)
        return _call(getattr(self._np, meth), args, kwargs, f"cupy.{self.name}.{meth}",
                     writes=writes)

    def reduce(self, *a, **k):
        return self._meth("reduce", a, k)

    def accumulate(self, *a, **k):
        return self._meth("accumulate", a, k)

    def reduceat(self, *a, **k):
        return self._meth("reduceat", a, k)

    def outer(self, *a, **k):
        self._args(a)
        return self._meth("outer", a, k)

    def at(self, a, indices, b=None):
        if self._cp._scatter_op is None:
            raise NotImplementedError(f"`{self.name}.at` is not supported by CuPy")
        k, _ = _index(indices, f"cupy.{self.name}.at")
        args = (a,) if b is None else (a, b)
        return _call(lambda x, *v: self._np.at(x, k, *v), args, {}, f"cupy.{self.name}.at",
                     writes=lambda aa, kw: (aa[0],))

    def __repr__(self):
        return f"<ufunc 'cupy_{self.name}' (gpunda test stand-in)>"


def _function(qual, name, spec, npf, lib=None):
    host_ok = name in _FROM_HOST and qual.count(".") == 1
    syncs = name in _SYNCING or (name == "where")
    writes = (lambda a, k: (a[0] if a else k.get("dst"),)) if name == "copyto" else None
    cublas = name in _CUBLAS

    def f(*args, **kwargs):
        spec.check_kwargs(kwargs, qual)
        if lib is not None:
            _check_lib(lib, qual)
        elif cublas and _float_args(args):
            _check_lib("cuBLAS", qual)
        if syncs and (name != "where" or len(args) + len(kwargs) == 1):
            _check_sync(qual)
        if name == "copyto" and args and isinstance(args[1] if len(args) > 1 else None,
                                                       np.ndarray):
            raise TypeError(f"Unsupported type {type(args[1])} (cupy.copyto)")
        return _call(npf, args, kwargs, qual, host_ok=host_ok, writes=writes)
    f.__name__ = name
    f.__qualname__ = qual
    return f


def _float_args(args):
    for x in args:
        if type(x) is ndarray and x._a.dtype.kind in "fc":
            return True
        if isinstance(x, (list, tuple)) and _float_args(x):
            return True
    return False


class _Namespace(types.ModuleType):
    """A CuPy module on the stand-in; attributes are made on first use from CuPy's names."""

    def __init__(self, cupy_name, np_mod, lib=None, extra=None):
        super().__init__(cupy_name)
        self._cupy_name, self._np_mod, self._lib = cupy_name, np_mod, lib
        self._extra = extra or {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._extra:
            v = self._extra[name]
        else:
            spec = _names.spec_of(self._cupy_name, name)
            if spec is None:
                raise AttributeError(f"module {self._cupy_name!r} has no attribute {name!r} "
                                     f"(CuPy {_cupy_version()} lacks it; gpunda test stand-in)")
            v = self._make(name, spec)
        setattr(self, name, v)
        return v

    def _make(self, name, spec):
        npv = getattr(self._np_mod, name, None)
        if npv is not None and npv is spec.obj:
            return npv                       # dtypes, scalar types, constants: NumPy's own
        if spec.kind == "ufunc" and isinstance(npv, np.ufunc):
            return _Ufunc(name, npv, spec.obj)
        if callable(npv) and spec.kind in ("function", "ufunc"):
            return _function(f"{self._cupy_name}.{name}", name, spec, npv, self._lib)
        if spec.kind == "value" and npv is not None:
            return npv
        return _missing(f"{self._cupy_name}.{name}")

    def __dir__(self):
        return sorted(set(_names.namespace(self._cupy_name)) | set(self._extra))


def _cupy_version():
    import cupy
    return cupy.__version__


def _asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if type(a) is ndarray:
        return a.get(order=order, out=out)
    return np.asarray(a, order=order)


def _get_array_module(*args):
    for a in args:
        if type(a) is ndarray or hasattr(a, "_standin_sparse"):
            return xp
    return np


class _RawModule:
    """``cupy.RawModule``: kernels run through NumPy emulations registered by name."""

    emulations = {}

    def __init__(self, code=None, path=None, options=(), backend="nvrtc", **kw):
        self.code = code

    def get_function(self, name):
        emu = self.emulations.get(name)
        if emu is None:
            raise NotImplementedError(f"gpunda test stand-in: no NumPy emulation of the "
                                      f"CUDA kernel {name!r}")

        def kernel(grid, block, args, shared_mem=0, stream=None):
            out_ix = emu.out_index
            known = {}
            a = tuple(_unwrap(x, False, name, known) for x in args)
            _cuda.snapshot(a[out_ix])
            emu(grid, block, a)
            _cuda.record(lambda a=a: emu(grid, block, a))
        return kernel


def _emulate_gpunda_gemm(grid, block, args):
    """backends/_cuda_gemm.py's kernel: C[z] = A[z] @ B[z] read through element strides."""
    a, b, c, M, N, K, sab, sam, sak, sbb, sbk, sbn, z0 = args
    M, N, K = int(M), int(N), int(K)
    it = a.itemsize
    acc = np.float32 if a.dtype == np.float16 else a.dtype
    c3 = c.reshape(-1, M, N)
    st = np.lib.stride_tricks.as_strided
    nz = int(z0) + int(grid[2])
    a3 = st(a, (nz, M, K), (int(sab) * it, int(sam) * it, int(sak) * it))
    b3 = st(b, (nz, K, N), (int(sbb) * it, int(sbk) * it, int(sbn) * it))
    for z in range(int(z0), nz):
        c3[z] = (a3[z].astype(acc) @ b3[z].astype(acc)).astype(c.dtype)


_emulate_gpunda_gemm.out_index = 2
_RawModule.emulations["gpunda_gemm"] = _emulate_gpunda_gemm


class _RandomState:
    """``cupy.random.RandomState`` over NumPy's (cuRAND under CuPy: refused in a capture)."""

    def __init__(self, seed=None, method=None):
        self._rs = np.random.RandomState(seed)

    def __getattr__(self, name):
        spec = _names.class_methods("cupy.random", "RandomState").get(name)
        npm = getattr(self._rs, name, None)
        if spec is None or npm is None:
            raise AttributeError(f"cupy.random.RandomState has no attribute {name!r}")

        def m(*args, **kwargs):
            spec.check_kwargs(kwargs, f"cupy.random.RandomState.{name}")
            _check_lib("cuRAND", f"RandomState.{name}")
            dtype = kwargs.pop("dtype", None) if name not in ("randint", "choice") else None
            r = _call(npm, args, kwargs, f"cupy.random.RandomState.{name}")
            if dtype is not None and type(r) is ndarray:
                r = r.astype(dtype, copy=False)
            return r
        return m


def _build():
    import cupyx.scipy.special  # noqa: F401 -- makes the namespace importable
    import scipy.special

    from . import _standin_sparse
    cuda = types.ModuleType("cupy.cuda")
    for n in ("Device", "Stream", "Event", "Graph", "MemoryPool", "using_allocator",
              "get_current_stream", "runtime", "memory", "is_available"):
        setattr(cuda, n, getattr(_cuda, n))
    cuda.get_device_id = lambda: 0
    stride_tricks = _Namespace("cupy.lib.stride_tricks", np.lib.stride_tricks)
    lib = types.ModuleType("cupy.lib")
    lib.stride_tricks = stride_tricks
    random = _Namespace("cupy.random", np.random, lib="cuRAND",
                        extra={"RandomState": _RandomState})
    top = _Namespace("cupy", np, extra={
        "ndarray": ndarray, "cuda": cuda, "asnumpy": _asnumpy,
        "get_array_module": _get_array_module, "RawModule": _RawModule,
        "get_default_memory_pool": _cuda.get_default_memory_pool,
        "is_available": _cuda.is_available, "__version__": _cupy_version(),
        "linalg": _Namespace("cupy.linalg", np.linalg, lib="cuSOLVER"),
        "fft": _Namespace("cupy.fft", np.fft),
        "random": random, "lib": lib, "ufunc": _Ufunc})
    top.__version__ = _cupy_version()
    top.linalg.norm = _function("cupy.linalg.norm", "norm",
                                _names.spec_of("cupy.linalg", "norm"), np.linalg.norm)
    special = _Namespace("cupyx.scipy.special", scipy.special)
    sparse = _standin_sparse.build_namespace()
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add = lambda a, slices, value: a.scatter_add(slices, value)
    cupyx.scatter_max = lambda a, slices, value: a.scatter_max(slices, value)
    cupyx.scatter_min = lambda a, slices, value: a.scatter_min(slices, value)
    return top, special, sparse, cupyx


_install_methods()
xp, special, sparse, cupyx = _build()


# ----------------------------------------------------------------------- backend

class StandinBackend(Backend):
    """The test stand-in GPU: CuPy's rules, NumPy's arithmetic. Never for users."""

    name = "standin"
    is_gpu = True
    supports_graphs = True
    is_standin = True

    def __init__(self, device_id=0):
        self.xp = xp
        self.device_id = device_id
        self._device = _cuda.Device(device_id)

    @property
    def sp(self):
        return sparse

    @property
    def special(self):
        return special

    @property
    def oom_error(self):
        import cupy.cuda.memory as real
        return real.OutOfMemoryError

    def device_scope(self):
        return self._device

    def from_host(self, arr):
        _check_h2d("from_host")
        return _new(np.array(np.asarray(arr), copy=True))

    def to_host(self, arr):
        if type(arr) is ndarray:
            return arr.get()
        return np.asarray(arr)

    def is_array(self, obj):
        return type(obj) is ndarray

    def synchronize(self):
        _cuda.get_current_stream().synchronize()

    def memory_info(self):
        return _cuda.runtime.memGetInfo()

    def empty_cache(self):
        _cuda.get_default_memory_pool().free_all_blocks()


@contextlib.contextmanager
def enabled():
    """Make ``gpu(0)`` the stand-in for the duration (the pytest fixture's body)."""
    from .. import backends, context
    from . import discovery
    old_env = os.environ.get("GPUNDA_TEST_STANDIN_GPU")
    os.environ["GPUNDA_TEST_STANDIN_GPU"] = "1"
    saved = discovery._probe_result, dict(backends._gpus)
    try:
        _reset(discovery, backends, context)
        yield
    finally:
        if old_env is None:
            os.environ.pop("GPUNDA_TEST_STANDIN_GPU", None)
        else:
            os.environ["GPUNDA_TEST_STANDIN_GPU"] = old_env
        _reset(discovery, backends, context)
        discovery._probe_result = saved[0]
        backends._gpus.update(saved[1])


def _reset(discovery, backends, context):
    discovery._probe_result = None
    backends._gpus.clear()
    for (dt, _), ctx in context.Context._interned.items():
        if dt == "gpu":
            ctx._backend = ctx._xp = None
    context._reset_default_for_tests()
