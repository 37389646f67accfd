"""Sparse NDArrays (MXNet 1.x ``mx.nd.sparse``) and the storage-type dispatcher.

``CSRNDArray`` (2-D compressed rows) and ``RowSparseNDArray`` (a subset of rows
of an array of any rank >= 1) are NDArray subclasses whose ``_data`` slot holds
a storage holder (``CSRData`` / ``RSPData`` from gpunda/ops/sparse/ops.py).

Dispatch: ``imperative.invoke_parsed`` sends every call with a sparse input to
``_sparse_invoke``: it looks the input stypes up in ``op.sparse`` (NOTE [Sparse
kernels] in sparse_ops.py), runs the native kernel, or falls back (densify,
compute, dense output) and logs that once per op on the ``gpunda`` logger
(``GPUNDA_STORAGE_FALLBACK_LOG=0`` silences it). Under ``autograd.record()``
the call is recorded like a dense one; its node gets a per-node rule that
handles sparse values and hands each input a gradient of the stype that input
can take (sparse for sparse-aware nodes and sparse gradient buffers, dense
otherwise).

Two ops produce sparse output from dense inputs (``cast_storage``,
``_embedding_rsp_grad``); they set ``OpDef.sparse_out``, so invoke sends every
call of theirs through ``_sparse_invoke`` (``nd.cast_storage`` also checks its
arguments here). Raw storage holders
offer ``_gpunda_wrap(ctx)`` (the matching NDArray class), which
``autograd.grad`` uses for sparse gradients.

Creation (``csr_matrix``, ``row_sparse_array``, ``zeros``, ``empty``, ``array``)
and ``check_format`` live in ``_sparse_create.py``; a holder built from
malformed parts carries the reason in ``_bad`` and is refused by every
computation (``_sparse_invoke``, ``to_dense``, ``to_stype``).
"""
from __future__ import annotations

import os
import sys
import types

import numpy as np

from gpunda._engine import autograd as _ag
from gpunda._engine import imperative as _imp
from gpunda.base import GpundaError, NotSupportedForSparseNDArray, c_array_buf, check_call  # noqa: F401
from gpunda.base import GpundaTypeError, GpundaValueError
from gpunda.base import integer_types, numeric_types  # noqa: F401  (MXNet's module has them)
from gpunda.context import Context, current_context
from gpunda.ops.sparse import ops as _so
from gpunda.ops.registry import get_op, parse_dtype
from gpunda.ops.sparse.ops import CSRData, RSPData, to_stype, to_dense, stype_of
from gpunda.ndarray.ndarray import NDArray, _new
from gpunda.ndarray.ndarray import array as _dense_array

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix",
           "row_sparse_array", "zeros", "empty", "array", "add", "subtract", "multiply",
           "divide", "cast_storage", "retain"]

from gpunda.base import gpunda_log as _log
_is_rec = _ag._is_rec


# ----------------------------------------------------------------------------
# the classes

class BaseSparseNDArray(NDArray):
    """Common part of CSRNDArray and RowSparseNDArray (MXNet's BaseSparseNDArray)."""

    __slots__ = ()

    def __repr__(self):
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n<{type(self).__name__} {shape_info} @{self._ctx}>"

    def __len__(self):
        return self.shape[0]

    def asnumpy(self):
        """A dense NumPy copy of the values."""
        d = to_dense(self._data)
        if d is self._data:
            d = d.copy()
        return d if isinstance(d, np.ndarray) else self._ctx.backend.to_host(d)

    @property
    def data(self):
        """The stored values as a dense NDArray (a copy)."""
        return _new(self._data.data.copy(), self._ctx)

    @property
    def indices(self):
        """The int64 index array as an NDArray (a copy)."""
        return _new(self._data.indices.copy(), self._ctx)

    def _sparse_unsupported(self, what):
        raise GpundaError(f"{what} is not supported for {type(self).__name__} "
                          f"(stype {self.stype}); convert with tostype('default') first")

    def reshape(self, *shape, **kwargs):
        """Not supported on sparse storage (as in MXNet): GpundaError."""
        self._sparse_unsupported("reshape")

    def __dlpack__(self, *args, **kwargs):
        self._sparse_unsupported("DLPack export")

    def to_dlpack_for_read(self):
        self._sparse_unsupported("DLPack export")

    to_dlpack_for_write = to_dlpack_for_read

    def __reduce__(self):
        d = self._data
        host = self._ctx.backend.to_host
        parts = tuple(host(a) for a in ((d.data, d.indices, d.indptr) if d.stype == "csr"
                                        else (d.values, d.indices)))
        return (_unpickle, (self.stype, parts, d.shape, self._ctx.device_type,
                            self._ctx.device_id))

    def detach(self):
        """The same storage, cut from the autograd graph."""
        a = _wrap(self._data, self._ctx)
        a._base = self._base if self._base is not None else self
        return a

    def _assign_from(self, src):
        raw = src._data if isinstance(src, NDArray) else src
        if not isinstance(raw, (CSRData, RSPData)) and not hasattr(raw, "shape"):
            raw = self._ctx.backend.xp.full(self.shape, raw, self._data.dtype)
        if tuple(raw.shape) != tuple(self.shape):
            raise GpundaError(f"assign: source has shape {tuple(raw.shape)} but the "
                              f"{type(self).__name__} has shape {self.shape}")
        self._data[...] = raw
        _ag.bump_version(self)

    def __setitem__(self, key, value):
        """``x[:] = value``: an NDArray of any stype, a NumPy array / list, a SciPy
        matrix, or (row_sparse only, as in MXNet) a number filling every row.
        MXNet's errors: other keys raise TypeError, a slice with bounds ValueError."""
        name = type(self).__name__
        if isinstance(key, slice) and key != slice(None):
            raise ValueError(f"__setitem__: assignment with slice {key!r} for {name} is not "
                             f"implemented; only x[:] = value is supported")
        if not (key is Ellipsis or key == slice(None)):
            raise TypeError(f"__setitem__: {name} only supports x[:] = value, got key={key!r}")
        _ag.check_writable(self, "__setitem__")
        if isinstance(value, NDArray):
            if value._ctx is not self._ctx:
                value = value.as_in_context(self._ctx)
        elif hasattr(value, "tocsr"):
            value = csr_matrix(value, ctx=self._ctx, dtype=self.dtype)
        elif isinstance(value, (np.ndarray, list, tuple)):
            value = _dense_array(value, ctx=self._ctx, dtype=self.dtype)
        elif isinstance(value, numeric_types) and not isinstance(value, bool):
            if self.stype == "csr":
                raise ValueError("__setitem__: assigning a number to a CSRNDArray is not "
                                 "supported (as in MXNet); assign an array instead")
            value = self._filled(value)
        else:
            raise TypeError(f"__setitem__: cannot assign a {type(value).__name__} to a {name}; "
                            f"use an NDArray, NumPy array, SciPy matrix or a number")
        self._assign_from(value)

    # MXNet's BaseSparseNDArray: +, - and * of one shape use the elemwise ops (csr+csr
    # stays csr); / keeps NDArray's broadcast_div. In place: compute, copy back.
    def __add__(self, other):
        return add(self, other)

    def __sub__(self, other):
        return subtract(self, other)

    def __mul__(self, other):
        return multiply(self, other)

    def astype(self, dtype, copy=True):
        """A copy in ``dtype`` with the same storage type (``self`` when ``copy=False``
        and the dtype matches), as MXNet's sparse astype."""
        dt = parse_dtype(dtype, "astype")
        if not copy and self._data.dtype == dt:
            return self
        with self._ctx.backend.device_scope():
            return _wrap(to_stype(self._data, self.stype, copy=True, dtype=dt), self._ctx)

    def _update_from(self, result):
        _ag.check_writable(self, "in-place update")
        result.copyto(self)
        return self

    def __iadd__(self, other):
        return self._update_from(add(self, other))

    def __isub__(self, other):
        return self._update_from(subtract(self, other))

    def __imul__(self, other):
        return self._update_from(multiply(self, other))

    def __itruediv__(self, other):
        return self._update_from(self / other)

    __idiv__ = __itruediv__

    def _filled(self, value):
        """Storage of this shape and dtype holding ``value`` everywhere (every row
        stored, as MXNet's _set_value on row_sparse; no rows for 0)."""
        xp = self._ctx.backend.xp
        n = self.shape[0] if value != 0 else 0
        with self._ctx.backend.device_scope():
            return RSPData(xp.arange(n, dtype=_so.INDEX),
                           xp.full((n,) + self.shape[1:], value, self.dtype), self.shape)

    # MXNet's storage introspection: csr keeps (indptr, indices), row_sparse (indices,)
    _AUX = {"csr": ("indptr", "indices"), "row_sparse": ("indices",)}

    @property
    def _num_aux(self):
        """How many index arrays the storage keeps (csr 2, row_sparse 1)."""
        return len(self._AUX[self.stype])

    def _aux_type(self, i):
        """dtype of index array ``i`` (always int64)."""
        return getattr(self._data, self._AUX[self.stype][i]).dtype.type

    @property
    def _aux_types(self):
        return [self._aux_type(i) for i in range(self._num_aux)]

    def _aux_data(self, i):
        """A copy of index array ``i`` as an NDArray (csr: 0 indptr, 1 indices)."""
        return _new(getattr(self._data, self._AUX[self.stype][i]).copy(), self._ctx)

    def _at(self, idx):
        raise NotSupportedForSparseNDArray(self._at, "[idx]", idx)

    def _slice(self, start, stop):
        raise NotSupportedForSparseNDArray(self._slice, None, start, stop)

    def _copy_into(self, other):
        """Copy into NDArray ``other``, converted to its stype (``copyto`` checks first)."""
        src = self.as_in_context(other._ctx)
        raw = to_stype(src._data, other.stype, dtype=np.dtype(other.dtype))
        if other.stype == "default":
            other._assign_from(_new(raw, other._ctx))
        else:
            other._assign_from(raw)

    def _to_ctx(self, ctx):
        return _transfer(self, ctx)

    def check_format(self, full_check=True):
        """Raise GpundaError (MXNetError) when the parts do not form a valid array of
        this stype, naming the first problem.

        ``full_check=False`` checks only the part sizes (cheap); the full check also
        checks indptr, index ranges and ordering, as MXNet's does.
        """
        from gpunda.ndarray._sparse_create import check_format
        check_format(self._data, full_check)


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format (MXNet's CSRNDArray).

    Parts: ``data`` (values), ``indices`` (column ids, int64), ``indptr`` (row
    starts, int64). ``asscipy()`` gives a ``scipy.sparse.csr_matrix``.
    """

    __slots__ = ()
    stype = "csr"

    @property
    def indptr(self):
        """The int64 row-pointer array as an NDArray (a copy)."""
        return _new(self._data.indptr.copy(), self._ctx)

    def asscipy(self):
        """A ``scipy.sparse.csr_matrix`` copy (on the host)."""
        import scipy.sparse as sps
        d = self._data
        d.refuse_if_malformed("asscipy")
        host = self._ctx.backend.to_host
        return sps.csr_matrix((np.array(host(d.data)), np.array(host(d.indices)),
                               np.array(host(d.indptr))), shape=d.shape)

    def __getitem__(self, key):
        n = self.shape[0]
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            k = int(key)
            if not -n <= k < n:
                raise GpundaError(f"__getitem__: row {key} is out of range for a CSRNDArray "
                                  f"with {n} rows")
            k %= n
            start, stop = k, k + 1
        elif isinstance(key, slice):
            if key.step not in (None, 1):
                raise GpundaError(f"__getitem__: CSRNDArray slicing needs step 1, got {key!r}")
            start, stop, _ = key.indices(n)
            stop = max(stop, start)
        else:
            raise GpundaError(f"__getitem__: CSRNDArray supports an int or a row slice, got "
                              f"{key!r}")
        d = self._data
        d.refuse_if_malformed("__getitem__")
        lo, hi = int(d.indptr[start]), int(d.indptr[stop])
        rows = CSRData(d.data[lo:hi].copy(), d.indices[lo:hi].copy(),
                       d.indptr[start:stop + 1] - lo, (stop - start, self.shape[1]))
        rows._unsorted = d._unsorted    # the rows keep their column order, as in MXNet
        return _wrap(rows, self._ctx)


class RowSparseNDArray(BaseSparseNDArray):
    """A subset of rows of an array (MXNet's RowSparseNDArray): ``indices``
    (sorted unique int64 row ids) and ``data`` (those rows, dense)."""

    __slots__ = ()
    stype = "row_sparse"

    def __getitem__(self, key):
        if key is Ellipsis or key == slice(None):
            return self
        raise GpundaError(f"__getitem__: RowSparseNDArray only supports [:], got {key!r}")

    def retain(self, *args, **kwargs):
        """Keep only the rows whose ids are in ``indices`` (``nd.sparse.retain``)."""
        return retain(self, *args, **kwargs)


_alloc = object.__new__
_HOLDERS = (CSRData, RSPData)
_CLS = {"csr": CSRNDArray, "row_sparse": RowSparseNDArray}


def _wrap(raw, ctx):
    """An NDArray of the class matching raw storage ``raw``."""
    st = stype_of(raw)
    if st == "default":
        return _new(raw, ctx)
    a = _alloc(_CLS[st])
    a._data = raw
    a._ctx = ctx
    return a


def _rewrap(x):
    """A plain NDArray that autograd made around sparse storage -> the sparse class."""
    if x is None or type(x) is not NDArray or stype_of(x._data) == "default":
        return x
    a = _wrap(x._data, x._ctx)
    a._ag = x._ag
    return a


def _transfer(src, ctx):
    d = src._data
    host = src._ctx.backend.to_host
    b = ctx.backend

    def mv(a):
        return b.from_host(host(a))
    with b.device_scope():
        if d.stype == "csr":
            raw = CSRData(mv(d.data), mv(d.indices), mv(d.indptr), d.shape)
        else:
            raw = RSPData(mv(d.indices), mv(d.values), d.shape)
    raw._bad = d._bad
    if d.stype == "csr":
        raw._unsorted = d._unsorted
    return _wrap(raw, ctx)


def _unpickle(stype, parts, shape, dev_type, dev_id):
    try:
        ctx = Context(dev_type, dev_id)
        ctx.backend
    except GpundaError:
        ctx = Context("cpu", 0)
    if stype == "csr":
        return csr_matrix(tuple(parts), shape=shape, ctx=ctx)
    return row_sparse_array(tuple(parts), shape=shape, ctx=ctx)


# ----------------------------------------------------------------------------
# dispatch

_fallback_logged = set()


def _log_fallback(op, stypes, p, ctx):
    if op.name in _fallback_logged:
        return
    if os.environ.get("GPUNDA_STORAGE_FALLBACK_LOG", "1") == "0":
        return
    _fallback_logged.add(op.name)
    _log.warning("Operator %s has no sparse kernel for input stypes (%s) with params %s on %s; "
                 "falling back to dense compute (densify the inputs, dense output). Logged once "
                 "per op; set GPUNDA_STORAGE_FALLBACK_LOG=0 to silence.",
                 op.name, ", ".join(stypes), p._given if p is not None else {}, ctx)


def find_kernel(op, stypes):
    """The kernel ``op.sparse`` declares for input ``stypes``, or None."""
    table = op.sparse
    if not table:
        return None
    k = table.get(stypes)
    if k is not None:
        return k
    for key, fn in table.items():
        if isinstance(key, tuple) and len(key) == len(stypes) and "*" in key and \
                all(a == "*" or a == b for a, b in zip(key, stypes)):
            return fn
    return table.get("*")


def _compute(op, p, stypes, raws, ctx):
    backend = ctx.backend
    xp = backend.xp
    kern = find_kernel(op, stypes)
    if kern is not None:
        res = (kern(xp, backend.sp, p, *raws, ctx=ctx) if getattr(kern, "wants_ctx", False)
               else kern(xp, backend.sp, p, *raws))
        if res is not NotImplemented:
            return res
    _log_fallback(op, stypes, p, ctx)
    dense = [to_dense(r) for r in raws]
    res = op.compute(xp, p, *dense, ctx=ctx) if op.wants_ctx else op.compute(xp, p, *dense)
    for i in op.mutated(p) if op.mutates else ():
        if stypes[i] != "default":      # the op wrote into a densified copy: store it back
            raws[i][...] = dense[i]
    return res


def _sparse_invoke(op, inputs, p, out=None):
    """``invoke_parsed`` for calls involving sparse storage (see the module docstring)."""
    ctx = None
    for x in inputs:
        if not isinstance(x, NDArray) or (ctx is not None and x._ctx is not ctx):
            _imp._check_inputs(op, p, inputs)
        if ctx is None:
            ctx = x._ctx
    if ctx is None:
        ctx = current_context()
    stypes = tuple(x.stype for x in inputs)
    raws = tuple(x._data for x in inputs)
    for r in raws:
        if r.__class__ in _HOLDERS and r._bad is not None:
            r.refuse_if_malformed(f"Operator {op.name}")
    if any(getattr(r, "_unsorted", False) for r in raws):      # kernels read sorted rows
        raws = tuple(r.canonical() if getattr(r, "_unsorted", False) else r for r in raws)
    try:
        with ctx.backend.device_scope():
            res = _compute(op, p, stypes, raws, ctx)
    except GpundaError:
        raise
    except Exception as e:
        raise _imp._op_error(op, inputs, p, e) from e
    if op.n_outputs(p) == 1:
        outs = [_wrap(res, ctx)]
    else:
        outs = [_wrap(r, ctx) for r in res]
    for i in op.mutated(p) if op.fwd_mutates else ():
        x = inputs[i]
        _ag.bump_version(x)
    if _is_rec() and not op.nondiff:
        _ag._record(op, p, inputs, outs)
        e = outs[0]._ag
        if e is not None:
            e[0].fn = _node_rule(op, e[0])
    if out is not None:
        return _write_out(op, p, outs, out, inputs)
    nvis = op.n_visible(p)
    return outs[0] if nvis == 1 else outs[:nvis]


def _write_out(op, p, outs, out, inputs=()):
    targets = [out] if isinstance(out, NDArray) else list(out)
    fixed = []
    for t, r in zip(targets, outs):
        if isinstance(t, NDArray) and t.stype != r.stype and t.shape == r.shape:
            r2 = _wrap(to_stype(r._data, t.stype), r._ctx)
            r2._ag = r._ag
            r = r2
        fixed.append(r)
    fixed.extend(outs[len(fixed):])
    return _imp._write_out(op, p, fixed, out, inputs)


# ----------------------------------------------------------------------------
# autograd through sparse calls

def _takes_sparse(entry):
    """Whether the producer of ``entry`` can take a sparse gradient."""
    node = entry[0]
    if node.is_leaf:
        g = node.grad
        return g is not None and g.stype != "default"
    return getattr(node.fn, "_sparse_aware", False)


def _node_rule(op, node):
    """The gradient rule of one sparse-path node (see the module docstring)."""
    def rule(F, p, ins, outs, ograds):
        nd_mode = isinstance(F, types.ModuleType)
        ctx = node.ctx
        if nd_mode:
            ins_n = list(ins) if ins is not None else None
            outs_n = [_rewrap(o) for o in outs] if outs is not None else None
            g_n = [_rewrap(g) for g in ograds]
        else:
            ins_n = [_wrap(r, ctx) for r in ins] if ins is not None else None
            outs_n = [_wrap(r, ctx) for r in outs] if outs is not None else None
            g_n = [None if g is None else _wrap(g, ctx) for g in ograds]
        need = [e is not None for e in node.inputs]
        grads = NotImplemented
        srule = op.sparse.get("grad") if op.sparse else None
        if srule is not None:
            grads = srule(p, ins_n, outs_n, g_n, need)
        if grads is NotImplemented:
            if op.gradient is None:
                raise GpundaError(f"Operator {op.name} has no gradient rule; it cannot be "
                                  f"differentiated")
            if nd_mode:
                def dn(a):
                    return a if a is None or a.stype == "default" else F.cast_storage(a, stype="default")
                grads = op.gradient(F, p, None if ins_n is None else [dn(a) for a in ins_n],
                                    None if outs_n is None else [dn(a) for a in outs_n],
                                    [dn(a) for a in g_n])
            else:
                def dr(a):
                    return None if a is None else to_dense(a)
                grads = op.gradient(F, p, None if ins is None else [dr(a) for a in ins],
                                    None if outs is None else [dr(a) for a in outs],
                                    [dr(a) for a in ograds])
        res = []
        for e, g in zip(node.inputs, grads):
            if e is None or g is None:
                res.append(None)
                continue
            if nd_mode:
                if not isinstance(g, NDArray):
                    g = _wrap(g, ctx)
                if g.stype != "default" and not _takes_sparse(e):
                    g = F.cast_storage(g, stype="default")
            else:
                if isinstance(g, NDArray):
                    g = g._data
                if stype_of(g) != "default" and not _takes_sparse(e):
                    g = to_dense(g)
            res.append(g)
        return res
    rule._sparse_aware = True
    return rule


# ----------------------------------------------------------------------------
# namespace: nd.sparse.<op> and the functions that must reach the sparse path

def cast_storage(data, stype=None, out=None, name=None, **kwargs):
    """``data`` converted to storage type ``stype`` ('default', 'csr', 'row_sparse').

    Always goes through the storage dispatcher, so dense -> sparse gives the
    sparse classes (and is recorded for autograd)."""
    op = get_op("cast_storage")
    if stype is None:
        stype = kwargs.pop("stype", None)
    if kwargs:
        raise GpundaError(f"Operator cast_storage: unknown parameters {sorted(kwargs)}")
    if not isinstance(data, NDArray):
        raise GpundaError(f"Operator cast_storage: input data must be an NDArray, got "
                          f"{type(data).__name__}")
    p = op.parse_params({"stype": stype})
    return _sparse_invoke(op, (data,), p, out)


cast_storage.op = get_op("cast_storage")


def retain(*args, **kwargs):
    """``retain(data, indices)``: the rows of row_sparse ``data`` whose ids are in
    ``indices`` (MXNet's ``_sparse_retain``; the op checks inputs and parameters)."""
    from gpunda.ndarray import _op
    return _op._sparse_retain(*args, **kwargs)


_SCALAR_OPS = {"add": ("_plus_scalar", "_plus_scalar"), "sub": ("_minus_scalar", "_rminus_scalar"),
               "mul": ("_mul_scalar", "_mul_scalar"), "div": ("_div_scalar", "_rdiv_scalar")}


def _elemwise_or_broadcast(kind, lhs, rhs):
    """MXNet's sparse ufunc helper: elemwise_<kind> for two NDArrays of one shape
    (so csr+csr stays csr), broadcast_<kind> for other shapes, the scalar ops for
    a number on either side."""
    from gpunda.ndarray import _op
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        if lhs.shape == rhs.shape:
            return getattr(_op, "elemwise_" + kind)(lhs, rhs)
        return getattr(_op, "broadcast_" + kind)(lhs, rhs)
    if isinstance(lhs, NDArray) and isinstance(rhs, numeric_types):
        return getattr(_op, _SCALAR_OPS[kind][0])(lhs, scalar=rhs)
    if isinstance(rhs, NDArray) and isinstance(lhs, numeric_types):
        return getattr(_op, _SCALAR_OPS[kind][1])(rhs, scalar=lhs)
    if isinstance(lhs, NDArray) or isinstance(rhs, NDArray):
        raise TypeError(f"sparse {kind}: cannot combine {type(lhs).__name__} and "
                        f"{type(rhs).__name__}")
    import operator
    return {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
            "div": operator.truediv}[kind](lhs, rhs)


def add(lhs, rhs):
    """lhs + rhs; rsp+rsp -> rsp and csr+csr -> csr for equal shapes."""
    return _elemwise_or_broadcast("add", lhs, rhs)


def subtract(lhs, rhs):
    """lhs - rhs; rsp-rsp -> rsp and csr-csr -> csr for equal shapes."""
    return _elemwise_or_broadcast("sub", lhs, rhs)


def multiply(lhs, rhs):
    """lhs * rhs; sparse * dense keeps the sparse storage."""
    return _elemwise_or_broadcast("mul", lhs, rhs)


def divide(lhs, rhs):
    """lhs / rhs (dense unless rhs is a scalar)."""
    return _elemwise_or_broadcast("div", lhs, rhs)


gs_retain = retain      # MXNet's name for the generated op function


def __getattr__(name):
    # every op is reachable as nd.sparse.<name>, and sparse-only ops registered as
    # _sparse_<name> (adagrad_update) under their short name, as in MXNet
    from gpunda.ndarray import _op
    if name == "op":
        return _op
    fn = getattr(_op, name, None)
    if fn is None and not name.startswith("_"):
        fn = getattr(_op, "_sparse_" + name, None)
    if fn is None or name.startswith("__"):
        raise AttributeError(f"module 'gpunda.ndarray.sparse' has no attribute {name!r}")
    return fn


def _embedding_rsp_grad(data, ograd, out=None, name=None, **params):
    """Embedding's row_sparse weight gradient (hidden op used by its gradient rule);
    always dispatched as sparse because its output is sparse from dense inputs."""
    op = get_op("_embedding_rsp_grad")
    return _sparse_invoke(op, (data, ograd), op.parse_params(params), out)


_embedding_rsp_grad.op = get_op("_embedding_rsp_grad")


from gpunda.ndarray._sparse_create import csr_matrix, row_sparse_array, zeros, empty, array  # noqa: E402

# -- MXNet's private helpers of mxnet.ndarray.sparse ------------------------------------
# the index types of each storage's auxiliary arrays (csr: indptr, indices)
_STORAGE_AUX_TYPES = {"row_sparse": [np.int64], "csr": [np.int64, np.int64]}


def _check_shape(s1, s2):
    """ValueError when shapes ``s1`` and ``s2`` are both given (non-empty) and differ."""
    if s1 and s2 and s1 != s2:
        raise GpundaValueError(f"Shape mismatch detected. {s1} v.s. {s2}")


def _prepare_src_array(source_array, dtype):
    """``source_array`` as it is when an NDArray or a NumPy array, else as a NumPy array of
    ``dtype`` (TypeError when it is not array-like)."""
    if isinstance(source_array, (NDArray, np.ndarray)):
        return source_array
    try:
        return np.array(source_array, dtype=dtype)
    except Exception:
        raise GpundaTypeError("values must be array like object") from None


def _prepare_default_dtype(src_array, dtype):
    """``dtype``, or when None the source's dtype (an NDArray, a NumPy array or a SciPy CSR
    matrix) and float32 for anything else."""
    if dtype is not None:
        return dtype
    if isinstance(src_array, (NDArray, np.ndarray)):
        return src_array.dtype
    spsp = sys.modules.get("scipy.sparse")     # a SciPy matrix means SciPy is loaded
    if spsp is not None and isinstance(src_array, spsp.csr_matrix):
        return src_array.dtype
    return np.float32


def _aux_types(stype, given):
    types_ = [t if g is None else g for t, g in zip(_STORAGE_AUX_TYPES[stype], given)]
    for t in types_:
        if np.dtype(t) != np.dtype(np.int64):
            raise NotImplementedError("only int64 is supported for aux types")
    return types_


def _csr_matrix_from_definition(data, indices, indptr, shape=None, ctx=None, dtype=None,
                                indices_type=None, indptr_type=None):
    """A CSRNDArray from its three parts (see ``csr_matrix``); the index types must be
    int64, as in MXNet."""
    _aux_types("csr", (indptr_type, indices_type))
    dtype = _prepare_default_dtype(data, dtype)
    from gpunda.ndarray._sparse_create import _csr_from_parts, _ctx_of, _check_shape as _shp
    shape = None if shape is None else _shp(shape, "csr_matrix")
    return _csr_from_parts((_prepare_src_array(data, dtype), indices, indptr), shape,
                           _ctx_of(ctx), dtype, "csr_matrix")


def _row_sparse_ndarray_from_definition(data, indices, shape=None, ctx=None, dtype=None,
                                        indices_type=None):
    """A RowSparseNDArray from its values and row ids (see ``row_sparse_array``); the
    index type must be int64, as in MXNet."""
    _aux_types("row_sparse", (indices_type,))
    dtype = _prepare_default_dtype(data, dtype)
    from gpunda.ndarray._sparse_create import _rsp_from_parts, _ctx_of, _check_shape as _shp
    shape = None if shape is None else _shp(shape, "row_sparse_array")
    return _rsp_from_parts((_prepare_src_array(data, dtype), indices), shape, _ctx_of(ctx),
                           dtype, "row_sparse_array")


def _new_alloc_handle(stype, shape, ctx, delay_alloc, dtype, aux_types, aux_shapes=None):
    """A handle (``NDArrayHandle``) to a new sparse array of storage ``stype``;
    ``CSRNDArray(handle)`` / ``RowSparseNDArray(handle)`` take it. The auxiliary types
    must be int64 (as in MXNet). Without ``aux_shapes`` the array holds no values; with
    them its parts get those shapes, as MXNet allocates them (csr: ``[indptr, indices]``,
    data shaped as indices; row_sparse: ``[indices]``, data ``(k,) + shape[1:]``), zeros
    where MXNet leaves them uninitialised, to be filled with
    ``_LIB.MXNDArraySyncCopyFromNDArray`` (``delay_alloc`` is ignored: storage is made
    now)."""
    from gpunda.ndarray._sparse_create import allocate_parts
    for t in aux_types:
        if np.dtype(t) != np.dtype(np.int64):
            raise NotImplementedError("only int64 is supported for aux types")
    from gpunda._core.capi import new_handle
    if aux_shapes is None:
        return new_handle(zeros(stype, tuple(shape), ctx=ctx, dtype=dtype))
    return new_handle(allocate_parts(stype, tuple(shape), ctx, dtype, aux_shapes))


def _ndarray_cls(handle, writable=True, stype=-1):
    """The array ``handle`` names as the class of its storage type (NDArray, CSRNDArray or
    RowSparseNDArray); ``stype`` (a storage type id, -1: read it from the array) must be
    the array's."""
    from gpunda._core.capi import take_handle
    from gpunda.ndarray.ndarray import _storage_type, _STORAGE_TYPE_ID_TO_STR
    actual = _storage_type(handle)
    if stype == -1:
        stype = actual
    if stype not in (0, 1, 2):
        raise GpundaError(f"unknown storage type: {stype}")
    if stype != actual:
        raise GpundaError(f"_ndarray_cls: stype={stype} ({_STORAGE_TYPE_ID_TO_STR[stype]}) "
                          f"but the array's storage is {_STORAGE_TYPE_ID_TO_STR[actual]}")
    src = handle if isinstance(handle, NDArray) else take_handle(handle)
    return _wrap(src._data, src._ctx)


def _install():
    _so.install()
    _imp._sparse_invoke = _sparse_invoke
    from gpunda.ndarray import _op
    pkg = sys.modules.get("gpunda.ndarray")
    # ops whose output is sparse from dense inputs must not take the dense fast path
    for name, fn in (("cast_storage", cast_storage),
                     ("_embedding_rsp_grad", _embedding_rsp_grad)):
        setattr(_op, name, fn)
        if pkg is not None and not name.startswith("_"):
            setattr(pkg, name, fn)


_install()
