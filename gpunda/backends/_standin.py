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

from gpunda.backends import _standin_cuda as _cuda
from gpunda.backends import _standin_names as _names
from gpunda.backends._numpy import Backend
from gpunda.backends._standin_array import (_SCALARS, _call, _check_h2d, _check_lib, _check_sync, _index,
                             _missing, _new, _unwrap, ndarray)

__all__ = ["ndarray", "xp", "StandinBackend", "enabled", "env_enabled", "NAME"]

NAME = "gpunda test stand-in (CuPy rules on NumPy)"


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


# ------------------------------------------------------------------ the namespace

class _Ufunc:
    """A CuPy ufunc on the stand-in: scalars and stand-in arrays only, CuPy's kwargs."""

    is_cupy_ufunc = True

    def __init__(self, name, npu, cpu):
        self.__name__ = self.name = name
        self._np, self._cp = npu, cpu
        self.nin, self.nout, self.nargs = cpu.nin, cpu.nout, cpu.nargs
        self.types = cpu.types

    def _args(self, args):
        for x in args:
            if not isinstance(x, (ndarray,) + _SCALARS):
                raise TypeError(f"Unsupported type {type(x)} (cupy.{self.name})")
            if type(x) is ndarray and x._a.dtype.kind == "V":
                self._bf16(x._a.dtype)

    def _bf16(self, dt):
        """CuPy 14 has bfloat16 loops (type char ``E``, ml_dtypes') in most ufuncs, but not in
        the bitwise ones, divmod, gcd/lcm, float_power, logical_not/xor: refuse those."""
        if not any(dt.char in t.split("->")[0] for t in self.types):
            raise TypeError(f"Wrong type ({dt},) of arguments for cupy_{self.name}: CuPy has "
                            f"no bfloat16 loop for it")

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
            # a kernel with several outputs (the fusion pass's) names each
            for ix in out_ix if isinstance(out_ix, tuple) else (out_ix,):
                _cuda.snapshot(a[ix])
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


def _from_dlpack(x, *, device=None, copy=None):
    from gpunda.backends import _standin_dlpack
    return _new(_standin_dlpack.import_(x))


def _build():
    import cupyx.scipy.special  # noqa: F401 -- makes the namespace importable
    import scipy.special

    from gpunda.backends import _standin_sparse
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
        "random": random, "lib": lib, "ufunc": _Ufunc, "from_dlpack": _from_dlpack})
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
    from gpunda import backends, context
    from gpunda.backends import discovery
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
