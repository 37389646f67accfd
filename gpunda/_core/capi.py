"""The ctypes face of MXNet's C API, for code written against ``mxnet.base``.

MXNet's Python layer talks to ``libmxnet`` through ctypes handles and
``check_call(_LIB.MXFoo(...))``. gpunda has no C library; what it keeps is:

- the ctypes helpers (``c_str``, ``c_array``, ...) and handle types, which are
  plain ctypes and work unchanged;
- a handle table: an ``NDArrayHandle`` or ``SymbolHandle`` (a ``ctypes.c_void_p``)
  whose value is a key of ``_handles``; ``NDArray(handle=h)`` / ``Symbol(h)`` take the
  object the key names (ownership moves to the new object, as MXNet's constructors take
  the handle);
- ``_LIB``: the few C entry points that mean something here, written in Python
  with C-API conventions (return 0, write results through ``byref``). Any other
  entry point is importable by name and raises "not supported" when reached: there is
  no libmxnet behind it.
"""
from __future__ import annotations

import ctypes
import os
import weakref

from gpunda.base import GpundaError, NotImplementedForGpunda
from gpunda._core import hooks

# As MXNet's base.py: code that handles DLPack capsules through ctypes.pythonapi (MXNet's
# own tests do) relies on these result types being set at import.
ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p

mx_uint = ctypes.c_uint
mx_int = ctypes.c_int
mx_float = ctypes.c_float
mx_float_p = ctypes.POINTER(mx_float)
NDArrayHandle = ctypes.c_void_p
FunctionHandle = ctypes.c_void_p
OpHandle = ctypes.c_void_p
CachedOpHandle = ctypes.c_void_p
SymbolHandle = ctypes.c_void_p
ExecutorHandle = ctypes.c_void_p
DataIterCreatorHandle = ctypes.c_void_p
DataIterHandle = ctypes.c_void_p
KVStoreHandle = ctypes.c_void_p
RecordIOHandle = ctypes.c_void_p
RtcHandle = ctypes.c_void_p
CudaModuleHandle = ctypes.c_void_p
CudaKernelHandle = ctypes.c_void_p
ProfileHandle = ctypes.c_void_p
DLPackHandle = ctypes.c_void_p


def c_str(string):
    """A ``ctypes.c_char_p`` holding ``string`` encoded as UTF-8."""
    return ctypes.c_char_p(string.encode("utf-8"))


def c_str_array(strings):
    """A ``const char **`` (ctypes array) of the UTF-8 encoded ``strings``."""
    arr = (ctypes.c_char_p * len(strings))()
    arr[:] = [s.encode("utf-8") for s in strings]
    return arr


def c_array(ctype, values):
    """A ctypes array of ``ctype`` holding ``values``."""
    out = (ctype * len(values))()
    out[:] = values
    return out


def c_array_buf(ctype, buf):
    """A ctypes array of ``ctype`` sharing the memory of a writable buffer ``buf``."""
    return (ctype * len(buf)).from_buffer(buf)


def c_handle_array(objs):
    """A ``void **`` of the objects' handles (each object's ``.handle``)."""
    arr = (ctypes.c_void_p * len(objs))()
    arr[:] = [_handle_value(o.handle) for o in objs]
    return arr


def _handle_value(h):
    if isinstance(h, ctypes.c_void_p):
        return h.value
    if isinstance(h, int) or h is None:
        return h
    return new_handle(h).value     # a gpunda object used as its own handle


def ctypes2buffer(cptr, length):
    """Copy ``length`` bytes at a ``POINTER(c_char)`` into a new bytearray."""
    if not isinstance(cptr, ctypes.POINTER(ctypes.c_char)):
        raise TypeError("expected char pointer")
    res = bytearray(length)
    ctypes.memmove((ctypes.c_char * length).from_buffer(res), cptr, length)
    return res


def ctypes2numpy_shared(cptr, shape):
    """A float32 NumPy array of ``shape`` sharing the memory at a ``POINTER(c_float)``."""
    import numpy as np
    if not isinstance(cptr, mx_float_p):
        raise RuntimeError("expected float pointer")
    size = 1
    for s in shape:
        size *= s
    buf = (mx_float * size).from_address(ctypes.addressof(cptr.contents))
    return np.frombuffer(buf, dtype=np.float32).reshape(shape)


# -- the handle table ---------------------------------------------------------
_handles = {}


def new_handle(obj):
    """A handle (``ctypes.c_void_p``) naming ``obj`` in the handle table."""
    key = id(obj)
    _handles[key] = obj
    return NDArrayHandle(key)


# Handles that name a live object without keeping it alive: an NDArray given to ctypes
# (``ctypes.cast(arr, NDArrayHandle)``, as MXNet's monitor callbacks do) lends itself here.
_lent = weakref.WeakValueDictionary()


def lend_handle(obj):
    """The handle value of ``obj``, valid while ``obj`` lives (``obj`` keeps its owner)."""
    key = id(obj)
    _lent[key] = obj
    return key


def peek_handle(handle):
    """The object ``handle`` names, left in the table (None when it names nothing); a
    gpunda object passed as its own handle is itself."""
    if not isinstance(handle, (ctypes.c_void_p, int)) and handle is not None:
        return handle
    key = handle.value if isinstance(handle, ctypes.c_void_p) else handle
    obj = _handles.get(key)
    return obj if obj is not None else _lent.get(key)


def take_handle(handle, what="NDArray"):
    """The object ``handle`` names, removed from the table (its new owner holds it)."""
    key = _handle_value(handle) if not isinstance(handle, int) else handle
    try:
        return _handles.pop(key)
    except KeyError:
        obj = _lent.get(key)
        if obj is not None:
            return obj
        noun = "an array" if what == "NDArray" else f"a {what}"
        raise GpundaError(f"{what}: handle={handle!r} does not name {noun} gpunda handed "
                          f"out (only handles from gpunda's _LIB calls are valid)") from None


def _symbol_arg(handle, where):
    """The Symbol a ``SymbolHandle`` argument names (``sym.handle`` is the Symbol itself);
    the caller keeps it."""
    Symbol = hooks.Symbol
    if Symbol is not None and isinstance(handle, Symbol):
        return handle
    key = _handle_value(handle) if not isinstance(handle, int) else handle
    obj = _handles.get(key)
    if obj is None:
        obj = _lent.get(key)
    if Symbol is None or not isinstance(obj, Symbol):
        raise GpundaError(f"_LIB.{where}: {handle!r} is not a SymbolHandle gpunda handed out "
                          f"(pass sym.handle)")
    return obj


def _strings(array, count, where):
    """The ``count`` strings of a ``const char **`` argument (c_str_array)."""
    n = count.value if isinstance(count, ctypes._SimpleCData) else int(count)
    if n and array is None:
        raise GpundaError(f"_LIB.{where}: {n} names announced but no array given")
    return [_decode(array[i]) for i in range(n)]


def _partitioning(where):
    if hooks.subgraph_api is None:
        raise hooks.missing("subgraph_api", f"_LIB.{where}")
    return hooks.subgraph_api()


def _out_pointer(ref):
    """The ctypes object a ``ctypes.byref(x)`` argument points at."""
    obj = getattr(ref, "_obj", ref)
    if not isinstance(obj, ctypes._SimpleCData):
        raise GpundaError(f"_LIB: output argument {ref!r} must be ctypes.byref(<ctypes value>)")
    return obj


# -- the C entry points that have a meaning in gpunda -------------------------
class _Lib:
    """``mxnet.base._LIB``: C-API entry points gpunda provides, in Python."""

    _last_error = ""

    def MXGetLastError(self):
        return _Lib._last_error.encode("utf-8")

    def MXNDArrayFromDLPack(self, dlpack, out):
        """``dlpack`` is a pointer to a DLManagedTensor; ownership moves to the new array."""
        ptr = dlpack.value if isinstance(dlpack, ctypes.c_void_p) else int(dlpack)
        _out_pointer(out).value = new_handle(hooks.from_dlpack_pointer(ptr)).value
        return 0

    MXNDArrayFromDLPackEx = None   # replaced below: same call with a transient flag

    def MXNDArraySyncCopyFromNDArray(self, handle_dst, handle_src, i):
        """Copy the array ``handle_src`` names into part ``i`` of ``handle_dst``'s (-1: its
        data, else aux array ``i``): how MXNet fills a sparse array allocated with
        ``sparse._new_alloc_handle(..., aux_shapes)``."""
        where = "MXNDArraySyncCopyFromNDArray"
        dst, src = peek_handle(handle_dst), peek_handle(handle_src)
        if hooks.sync_copy_from_ndarray is None:
            raise hooks.missing("sync_copy_from_ndarray", f"_LIB.{where}")
        j = i.value if isinstance(i, ctypes._SimpleCData) else int(i)
        hooks.sync_copy_from_ndarray(dst, src, j)
        return 0

    def MXNDArrayWaitAll(self):
        hooks.nd.waitall()
        return 0

    def MXGetGPUCount(self, out):
        _out_pointer(out).value = hooks.num_gpus()
        return 0

    def MXGetEnv(self, name, out):
        value = os.environ.get(_decode(name))
        _out_pointer(out).value = None if value is None else value.encode("utf-8")
        return 0

    def MXSetEnv(self, name, value):
        name = _decode(name)
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = _decode(value)
        return 0

    def MXSetNumOMPThreads(self, thread_num):
        # the threads of gpunda's CPU kernels and its BLAS (NOTE [CPU threads])
        from gpunda._core import threads
        threads.set_num_threads(int(getattr(thread_num, "value", thread_num)))
        return 0

    # graph partitioning (MXNet's c_api_test.cc and MXGenBackendSubgraph), over
    # NOTE [Subgraph partitioning] in gpunda/_frontend/subgraph.py
    def MXBuildSubgraphByOpNames(self, sym, prop_name, num_ops, op_names, out):
        where = "MXBuildSubgraphByOpNames"
        res = _partitioning(where).build_by_op_names(
            _symbol_arg(sym, where), _decode(prop_name), _strings(op_names, num_ops, where))
        _out_pointer(out).value = new_handle(res).value
        return 0

    def MXSetSubgraphPropertyOpNames(self, prop_name, num_ops, op_names):
        where = "MXSetSubgraphPropertyOpNames"
        _partitioning(where).set_op_names(_decode(prop_name),
                                          _strings(op_names, num_ops, where))
        return 0

    def MXSetSubgraphPropertyOpNamesV2(self, prop_name, num_ops, op_names):
        where = "MXSetSubgraphPropertyOpNamesV2"
        _partitioning(where).set_property_op_names(_decode(prop_name),
                                                   _strings(op_names, num_ops, where))
        return 0

    def MXRemoveSubgraphPropertyOpNames(self, prop_name):
        _partitioning("MXRemoveSubgraphPropertyOpNames").remove_op_names(_decode(prop_name))
        return 0

    def MXRemoveSubgraphPropertyOpNamesV2(self, prop_name):
        _partitioning("MXRemoveSubgraphPropertyOpNamesV2").remove_property_op_names(
            _decode(prop_name))
        return 0

    def MXGenBackendSubgraph(self, sym, backend, out):
        where = "MXGenBackendSubgraph"
        res = _partitioning(where).backend_symbol(_symbol_arg(sym, where), _decode(backend))
        _out_pointer(out).value = new_handle(res).value
        return 0

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedForGpunda(f"_LIB.{name} (MXNet's C library entry point) is not "
                                      f"supported: gpunda has no libmxnet; its _LIB provides "
                                      f"only the entry points docs/compat.md lists")

    def __repr__(self):
        return "<gpunda C-API stand-in (_LIB)>"


_Lib.MXNDArrayFromDLPackEx = lambda self, dlpack, transient, out: self.MXNDArrayFromDLPack(dlpack, out)


def _decode(s):
    if isinstance(s, ctypes.c_char_p):
        s = s.value
    return s.decode("utf-8") if isinstance(s, bytes) else s


_LIB = _Lib()


class MXCallbackList(ctypes.Structure):
    """The callback table MXNet passed to custom operators (layout kept for ctypes code)."""
    _fields_ = [("num_callbacks", ctypes.c_int),
                ("callbacks", ctypes.POINTER(ctypes.CFUNCTYPE(ctypes.c_int))),
                ("contexts", ctypes.POINTER(ctypes.c_void_p))]
