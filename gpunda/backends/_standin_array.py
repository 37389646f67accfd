"""Arrays of the test stand-in GPU: CuPy's ndarray surface over a NumPy buffer.

Test-only (see _standin.py). Each operation unwraps its stand-in arguments,
runs NumPy, accounts new buffers as device allocations, records itself for
replay while a stream capture is on (_standin_cuda.py), and wraps the result
(NumPy scalars become 0-d arrays, as CuPy returns them).
"""
from __future__ import annotations

import numpy as np

from gpunda.backends import _standin_cuda as _cuda

_check_sync, _check_h2d, _check_lib = _cuda.check_sync, _cuda.check_h2d, _cuda.check_library
_SCALARS = (int, float, complex, bool, np.generic)


def _xp():
    from gpunda.backends import _standin    # the stand-in cupy module (built once, on first import)
    return _standin.xp


def _names():
    from gpunda.backends import _standin_names
    return _standin_names


def _check_dtype(dt):
    k = dt.kind
    if k not in "biufc" or (k == "f" and dt.itemsize > 8) or (k == "c" and dt.itemsize > 16):
        # CuPy 14 takes ml_dtypes' bfloat16 (a 'V'-kind NumPy dtype), and no other extension
        if not (k == "V" and dt.name == "bfloat16" and dt.names is None):
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
    # dtype arguments (np.float32 is a class with an __array__ attribute) pass through
    if host_ok and hasattr(x, "__array__") and not isinstance(x, _SCALARS + (type, np.dtype)):
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

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from gpunda.backends import _standin_dlpack
        return _standin_dlpack.export(self._a)

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
        f = getattr(_xp(), ufunc.__name__, None)
        if method == "__call__" and callable(f) and not _is_missing(f):
            return f(*inputs, **kwargs)     # CuPy's ufunc, or its function (matmul)
        if not getattr(f, "is_cupy_ufunc", False):
            return NotImplemented
        return getattr(f, method)(*inputs, **kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        mod = _xp()
        for part in func.__module__.split(".")[1:]:
            mod = getattr(mod, part, None) if not part.startswith("_") else mod
            if mod is None:
                return NotImplemented
        f = getattr(mod, func.__name__, None)
        if f is None or _is_missing(f):
            return NotImplemented
        return f(*args, **kwargs)


def _rebuild(host):
    return _xp().asarray(host)


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
        u = getattr(_xp(), uname)
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
    setattr(ndarray, f"__{_n}__", lambda self, _u=_u: getattr(_xp(), _u)(self))


def _matmul(self, other):
    if _defer(other):
        return NotImplemented
    return _xp().matmul(self, other)


ndarray.__matmul__ = _matmul
ndarray.__rmatmul__ = lambda self, other: (NotImplemented if _defer(other)
                                           else _xp().matmul(other, self))


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
    for name, spec in _names().ndarray_methods().items():
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


_install_methods()
