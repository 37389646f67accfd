"""Sparse storage: raw holders, conversions, native kernels, and the sparse-only ops.

Storage (what a sparse NDArray keeps in its ``_data`` slot):

* ``CSRData``: MXNet's parts ``data`` (nnz,), ``indices`` (nnz,) int64 and
  ``indptr`` (rows+1,) int64, canonical (column indices sorted and unique in
  each row), plus a cached scipy / cupyx csr matrix built on first use.
* ``RSPData``: ``indices`` (k,) int64 sorted unique row ids and ``values``
  (k, *shape[1:]) dense rows. Neither SciPy nor CuPy has this format.

Holders are immutable by convention: kernels make new holders (index arrays may
be shared between holders, never written in place). The only in-place changes
are ``holder[...] = value`` and ``holder += value``, which rebind the parts;
autograd uses them to write and accumulate gradients. A holder made from parts
that fail MXNet's format check (MXNet creates such arrays; ``check_format``
reports them) keeps the reason in ``_bad``; ``refuse_if_malformed`` stops any
computation with it. A csr holder whose only flaw is column indices out of order
within rows (``_unsorted``; NOTE [Unsorted csr columns]) is valid, as in MXNet: it
keeps its parts as given, and ``canonical()`` gives the row-sorted holder the kernels
compute with. Kernels may therefore trust the canonical layout.

Which stypes an op's output has follows MXNet 1.9.1's FInferStorageType of that
op (see the comments at each plan entry); the csr structure ops (take, slice,
concat, getnnz) are in ``sparse_csr_ops.py``.

# NOTE [Sparse kernels]
An op's ``OpDef.sparse`` dict says what it computes natively on sparse storage::

    op.sparse[("csr", "default")] = kernel   # exact input stypes
    op.sparse[("row_sparse", "*")] = kernel  # "*" matches any stype in that slot
    op.sparse["*"] = kernel                  # any combination (tried last)
    op.sparse["grad"] = rule                 # stype-aware gradient rule (optional)

``kernel(xp, sp, p, *raw) -> raw | tuple of raw | NotImplemented``: ``raw`` are
the inputs' storage (backend array for 'default', CSRData / RSPData otherwise);
each output's type is its storage type. ``xp``/``sp`` are the backend's array
and sparse modules, so one body serves NumPy/SciPy and CuPy/cupyx. Returning
``NotImplemented`` declines (a parameter combination it does not cover) and the
call falls back: densify, ``op.compute``, dense output, logged once per op.

``rule(p, ins, outs, ograds, need) -> list | NotImplemented`` works on NDArrays
with ``gpunda.nd`` ops (so sparse dispatch and recording apply); ``need[i]`` is
False when input i needs no gradient (skip a costly dense gradient of a csr
input). Without a rule, or when it returns NotImplemented, the op's dense
gradient rule runs on densified values. Dispatch is ``_sparse_invoke`` in
gpunda/ndarray/sparse.py.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda._core import hooks
from gpunda.ops.registry import OpDef, Param, register, get_op
from gpunda.ops._util import norm_axes, legacy_scalar

__all__ = ["CSRData", "RSPData", "to_stype", "to_dense", "stype_of", "install"]

INDEX = np.int64
STYPES = ("default", "csr", "row_sparse")

# dtypes the sparse matrix libraries compute with (parts of other dtypes may still be stored)
_SCIPY_DTYPES = frozenset(np.dtype(t) for t in (
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float32", "float64", "complex64", "complex128"))
_CUPYX_DTYPES = frozenset(np.dtype(t) for t in ("bool", "float32", "float64", "complex64",
                                                 "complex128"))


def xp_of(a):
    """numpy or cupy, whichever owns array ``a``."""
    from gpunda.backends import array_module
    return array_module(a)


def sp_of(xp):
    """scipy.sparse or cupyx.scipy.sparse for array module ``xp``."""
    if xp is np:
        import scipy.sparse as s
        return s
    from gpunda.backends import backend_of_xp
    return backend_of_xp(xp).sp


def _i64(xp, a):
    return a.astype(INDEX, copy=False) if a.dtype != INDEX else a


def _first_true(xp, mask):
    """Index of the first True in a 1-D mask, or -1."""
    if mask.size == 0:
        return -1
    i = int(xp.argmax(mask))
    return i if bool(mask[i]) else -1


_KEEP = {}


class _Holder:
    __slots__ = ("__weakref__",)    # Custom ops find their forward's state by the output
    # numpy/cupy must defer to our reflected operators (gradient accumulation)
    __array_ufunc__ = None
    __array_priority__ = 2000.0

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __array__(self, dtype=None, copy=None):
        d = to_dense(self)
        if not isinstance(d, np.ndarray):
            d = d.get()
        return d if dtype is None else d.astype(dtype, copy=False)

    @property
    def __cuda_array_interface__(self):
        # lets CuPy take a sparse gradient where a dense array is expected (dense .grad)
        if self.xp is np:
            raise AttributeError("__cuda_array_interface__")
        d = to_dense(self)
        _KEEP[id(self)] = d      # the interface points into d: keep it alive
        if len(_KEEP) > 64:
            _KEEP.pop(next(iter(_KEEP)))
        return d.__cuda_array_interface__

    def __add__(self, other):
        return add_raw(self, other)

    def __radd__(self, other):
        return add_raw(other, self)

    def __iadd__(self, other):
        self._rebind(to_stype(add_raw(self, other), self.stype, dtype=self.dtype))
        return self

    def __setitem__(self, key, value):
        if not (key is Ellipsis or key == slice(None)):
            raise GpundaError(f"{self.stype} storage: only [:] / [...] assignment is supported, "
                              f"got key={key!r}")
        self._rebind(to_stype(value, self.stype, copy=True, dtype=self.dtype))

    def _gpunda_wrap(self, ctx):
        """This storage as the matching NDArray subclass on ``ctx``."""
        return hooks.wrap_storage(self, ctx)

    def refuse_if_malformed(self, where):
        """Raise when this holder was built from parts that failed the format check.

        MXNet lets such an array be created and only ``check_format`` reports it;
        computing with it could index out of bounds, so gpunda refuses that."""
        if self._bad is not None:
            raise GpundaError(f"{where}: the {self.stype} array is malformed ({self._bad}); "
                              f"only its parts and check_format() can be used")


class CSRData(_Holder):
    """Raw csr storage (see the module docstring)."""

    __slots__ = ("data", "indices", "indptr", "shape", "_m", "_cols", "_bad", "_unsorted",
                 "_canon")
    stype = "csr"

    def __init__(self, data, indices, indptr, shape, m=None):
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = tuple(int(d) for d in shape)
        self._m = m
        self._cols = None
        self._bad = None        # why the parts are malformed (set by creation from parts)
        self._unsorted = False  # some row's columns are out of order (creation from parts)
        self._canon = None      # the row-sorted holder of an unsorted one, made on first use

    @classmethod
    def from_matrix(cls, m):
        """Holder for a scipy / cupyx sparse matrix (canonicalised, not copied if csr)."""
        m = m.tocsr()
        if not m.has_canonical_format:
            m = m.copy()
            m.sum_duplicates()
        xp = xp_of(m.data)
        return cls(m.data, _i64(xp, m.indices), _i64(xp, m.indptr), m.shape, m)

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def nnz(self):
        return int(self.data.shape[0])

    @property
    def xp(self):
        return xp_of(self.data)

    def _rebind(self, other):
        self.data, self.indices, self.indptr, self._m = (other.data, other.indices,
                                                         other.indptr, other._m)
        self._cols = None
        self._bad = other._bad
        self._unsorted, self._canon = other._unsorted, other._canon

    def copy(self):
        c = CSRData(self.data.copy(), self.indices.copy(), self.indptr.copy(), self.shape)
        c._bad, c._unsorted = self._bad, self._unsorted
        return c

    def canonical(self):
        """This holder with each row's column indices ascending (itself when they are):
        the layout kernels and the csr matrix assume. Cached."""
        if not self._unsorted:
            return self
        c = self._canon
        if c is None:
            xp = self.xp
            order = xp.lexsort(xp.stack([self.indices, self.row_ids()]))
            c = self._canon = CSRData(self.data[order], self.indices[order], self.indptr,
                                      self.shape)
        return c

    def supported(self):
        """Whether the sparse library computes with this dtype."""
        return self.dtype in (_SCIPY_DTYPES if self.xp is np else _CUPYX_DTYPES)

    def mat(self, where):
        """The csr matrix (scipy or cupyx) over these parts; cached."""
        if self._unsorted:
            return self.canonical().mat(where)
        m = self._m
        if m is None:
            self.refuse_if_malformed(where)
            xp = self.xp
            if not self.supported():
                lib = "scipy.sparse" if xp is np else "cupyx.scipy.sparse"
                ok = sorted(d.name for d in (_SCIPY_DTYPES if xp is np else _CUPYX_DTYPES))
                raise GpundaError(f"{where}: csr dtype {self.dtype.name} is not supported by "
                                  f"{lib}; supported: {', '.join(ok)} (cast with astype)")
            sp = sp_of(xp)
            cls = getattr(sp, "csr_array", None) or sp.csr_matrix
            m = cls((self.data, self.indices, self.indptr), shape=self.shape)
            try:
                m.has_sorted_indices = True     # our parts are canonical: skip a re-check
            except AttributeError:
                pass
            self._m = m
        return m

    def columns(self):
        """Sorted distinct column ids that hold values (int64); cached."""
        c = self._cols
        if c is None:
            xp = self.xp
            present = (xp.bincount(self.indices, minlength=self.shape[1]) > 0 if self.nnz
                       else xp.zeros(self.shape[1], bool))
            c = self._cols = _i64(xp, xp.flatnonzero(present))
        return c

    def row_ids(self):
        """Row of every stored value."""
        xp = self.xp
        return xp.searchsorted(self.indptr[1:], xp.arange(self.nnz, dtype=INDEX), side="right")

    def astype(self, dtype, copy=True):
        if not copy and self.dtype == dtype:
            return self
        return CSRData(self.data.astype(dtype), self.indices, self.indptr, self.shape)


class RSPData(_Holder):
    """Raw row_sparse storage (see the module docstring)."""

    __slots__ = ("indices", "values", "shape", "_bad")
    stype = "row_sparse"

    def __init__(self, indices, values, shape):
        self.indices, self.values = indices, values
        self.shape = tuple(int(d) for d in shape)
        self._bad = None

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def data(self):
        return self.values

    @property
    def xp(self):
        return xp_of(self.values)

    def _rebind(self, other):
        self.indices, self.values = other.indices, other.values
        self._bad = other._bad

    def copy(self):
        c = RSPData(self.indices.copy(), self.values.copy(), self.shape)
        c._bad = self._bad
        return c

    def astype(self, dtype, copy=True):
        if not copy and self.dtype == dtype:
            return self
        return RSPData(self.indices, self.values.astype(dtype), self.shape)


def stype_of(raw):
    """Storage type of a raw value."""
    return raw.stype if isinstance(raw, _Holder) else "default"


# ----------------------------------------------------------------------------
# conversions (every pair; one body for NumPy and CuPy)

def empty_like_stype(xp, stype, shape, dtype):
    """All-zero storage of ``stype``."""
    if stype == "csr":
        return CSRData(xp.zeros(0, dtype), xp.zeros(0, INDEX), xp.zeros(shape[0] + 1, INDEX), shape)
    if stype == "row_sparse":
        return RSPData(xp.zeros(0, INDEX), xp.zeros((0,) + tuple(shape[1:]), dtype), shape)
    return xp.zeros(shape, dtype)


def to_dense(raw):
    """A dense backend array with the values of ``raw``."""
    if isinstance(raw, _Holder):
        raw.refuse_if_malformed("densify")
    if isinstance(raw, CSRData):
        raw = raw.canonical()
        if raw.supported():
            return raw.mat("densify").toarray()
        xp = raw.xp
        out = xp.zeros(raw.shape, raw.dtype)
        if raw.nnz:
            out[raw.row_ids(), raw.indices] = raw.data
        return out
    if isinstance(raw, RSPData):
        xp = raw.xp
        out = xp.zeros(raw.shape, raw.dtype)
        if raw.indices.shape[0]:
            out[raw.indices] = raw.values
        return out
    return raw


def _dense_to_csr(xp, d):
    if d.ndim != 2:
        raise GpundaError(f"cast_storage: csr needs a 2-D array, got shape {d.shape}")
    r, c = xp.nonzero(d)
    counts = xp.bincount(r, minlength=d.shape[0]) if r.size else xp.zeros(d.shape[0], INDEX)
    indptr = xp.zeros(d.shape[0] + 1, INDEX)
    indptr[1:] = xp.cumsum(counts)
    return CSRData(d[r, c], _i64(xp, c), indptr, d.shape)


def _dense_to_rsp(xp, d):
    if d.ndim < 1:
        raise GpundaError(f"cast_storage: row_sparse needs at least 1 dimension, got shape {d.shape}")
    n = d.shape[0]
    flat = d.reshape(n, -1)
    keep = (flat != 0).any(axis=1) if flat.shape[1] else xp.zeros(n, bool)
    idx = _i64(xp, xp.flatnonzero(keep))
    return RSPData(idx, d[idx], d.shape)


def _csr_to_rsp(xp, c):
    idx = _i64(xp, xp.flatnonzero(xp.diff(c.indptr) > 0))
    values = xp.zeros((idx.shape[0], c.shape[1]), c.dtype)
    if c.nnz:
        values[xp.searchsorted(idx, c.row_ids()), c.indices] = c.data
    return RSPData(idx, values, c.shape)


def _rsp_to_csr(xp, r):
    if len(r.shape) != 2:
        raise GpundaError(f"cast_storage: csr needs a 2-D array, got row_sparse shape {r.shape}")
    sub = _dense_to_csr(xp, r.values)
    counts = xp.zeros(r.shape[0], INDEX)
    counts[r.indices] = xp.diff(sub.indptr)
    indptr = xp.zeros(r.shape[0] + 1, INDEX)
    indptr[1:] = xp.cumsum(counts)
    return CSRData(sub.data, sub.indices, indptr, r.shape)


def to_stype(raw, stype, copy=False, dtype=None):
    """``raw`` converted to storage ``stype`` (a copy when ``copy`` or converting)."""
    if isinstance(raw, _Holder):
        raw.refuse_if_malformed("cast_storage")
        if raw.stype == "csr" and (stype != "csr" or copy or dtype is not None):
            raw = raw.canonical()
    if dtype is not None and raw.dtype != dtype:
        raw, copy = raw.astype(dtype), False
    src = stype_of(raw)
    xp = raw.xp if isinstance(raw, _Holder) else xp_of(raw)
    if src == stype:
        if not copy:
            return raw
        if stype == "csr":
            return CSRData(raw.data.copy(), raw.indices.copy(), raw.indptr.copy(), raw.shape)
        if stype == "row_sparse":
            return RSPData(raw.indices.copy(), raw.values.copy(), raw.shape)
        return raw.copy()
    if stype == "default":
        return to_dense(raw)
    if raw.dtype == np.bool_:
        # MXNet's sparse storage kernels are instantiated for numeric types only (NOTE
        # [Dtypes a kernel is instantiated for]): a bool csr/row_sparse array cannot be made
        raise GpundaError(f"cast_storage: a bool array cannot be stored as {stype} (MXNet's "
                          f"sparse kernels have no bool type: Unknown type enum 7); cast it "
                          f"to a numeric dtype first")
    if stype == "csr":
        return _dense_to_csr(xp, raw) if src == "default" else _rsp_to_csr(xp, raw)
    if stype == "row_sparse":
        return _dense_to_rsp(xp, raw) if src == "default" else _csr_to_rsp(xp, raw)
    raise GpundaError(f"cast_storage: stype={stype!r} is not one of {list(STYPES)}")


# ----------------------------------------------------------------------------
# element-wise kernels

def _rsp_union(xp, a, b, sign):
    idx = xp.unique(xp.concatenate([a.indices, b.indices]))
    dt = np.result_type(a.dtype, b.dtype)
    out = xp.zeros((idx.shape[0],) + a.values.shape[1:], dt)
    out[xp.searchsorted(idx, a.indices)] = a.values
    if sign > 0:
        out[xp.searchsorted(idx, b.indices)] += b.values
    else:
        out[xp.searchsorted(idx, b.indices)] -= b.values
    return RSPData(_i64(xp, idx), out, a.shape)


def _rsp_intersect(xp, a, b):
    pos = xp.searchsorted(b.indices, a.indices)
    pos_c = xp.minimum(pos, max(b.indices.shape[0] - 1, 0))
    hit = (b.indices[pos_c] == a.indices) if b.indices.shape[0] else xp.zeros(a.indices.shape, bool)
    ia = xp.flatnonzero(hit)
    return RSPData(a.indices[ia], a.values[ia] * b.values[pos_c[ia]], a.shape)


def add_raw(a, b):
    """a + b for raw values of any storage (gradient accumulation): rsp+rsp and
    csr+csr stay sparse, anything else is dense."""
    sa, sb = stype_of(a), stype_of(b)
    if sa == sb == "default":
        return a + b
    if sa == sb == "row_sparse":
        return _rsp_union(a.xp, a, b, 1)
    if sa == sb == "csr" and a.supported() and b.supported():
        return CSRData.from_matrix(a.mat("add") + b.mat("add"))
    if sa == "default":
        return _scatter_add(xp_of(a), a, b, 1)
    if sb == "default":
        return _scatter_add(xp_of(b), b, a, 1)
    return to_dense(a) + to_dense(b)


def _scatter_add(xp, d, s, sign):
    """dense ± sparse -> dense, touching only the stored entries."""
    dt = np.result_type(d.dtype, s.dtype)
    out = d.astype(dt, copy=True)
    if isinstance(s, RSPData):
        if sign > 0:
            out[s.indices] += s.values
        else:
            out[s.indices] -= s.values
    elif s.nnz:
        r = s.row_ids()
        # canonical csr has distinct (row, col) pairs, so fancy += is exact
        if sign > 0:
            out[r, s.indices] += s.data
        else:
            out[r, s.indices] -= s.data
    return out


def _binary_kernel(kind):
    def kernel(xp, sp, p, a, b):
        if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
            return NotImplemented     # broadcasting or mixed dtypes: the dense rules apply
        sa, sb = stype_of(a), stype_of(b)
        if sa == sb == "row_sparse":
            if kind == "mul":
                return _rsp_intersect(xp, a, b)
            return _rsp_union(xp, a, b, 1 if kind == "add" else -1)
        if sa == sb == "csr":
            if not (a.supported() and b.supported()):
                return NotImplemented
            ma, mb = a.mat("elemwise"), b.mat("elemwise")
            r = ma + mb if kind == "add" else ma - mb if kind == "sub" else ma.multiply(mb)
            return CSRData.from_matrix(r)
        if kind in ("add", "sub"):
            if sa == "default":          # dense ± sparse -> dense
                return _scatter_add(xp, a, b, 1 if kind == "add" else -1)
            if sb == "default":
                return _scatter_add(xp, -b if kind == "sub" else b, a, 1)
            return NotImplemented
        # mul with one dense side keeps the sparse side's storage
        s, d = (a, b) if sb == "default" else (b, a) if sa == "default" else (None, None)
        if s is None:
            return NotImplemented
        if isinstance(s, RSPData):
            return RSPData(s.indices, s.values * d[s.indices], s.shape)
        return CSRData(s.data * d[s.row_ids(), s.indices], s.indices, s.indptr, s.shape)
    return kernel


def _broadcast_kernel(kind):
    """broadcast_<kind> with MXNet's storage rules: a sparse and a dense array of the
    same shape add/subtract to dense; csr times / divided by a dense array that
    broadcasts to its shape stays csr; any other sparse combination falls back."""
    same_shape = _binary_kernel(kind)

    def kernel(xp, sp, p, a, b):
        sa, sb = stype_of(a), stype_of(b)
        if kind in ("add", "sub"):
            if (sa == "default") == (sb == "default"):
                return NotImplemented       # two sparse inputs: MXNet falls back too
            return same_shape(xp, sp, p, a, b)
        if sa != "csr" or sb != "default" or a.dtype != b.dtype:
            return NotImplemented
        try:
            if np.broadcast_shapes(a.shape, tuple(b.shape)) != a.shape:
                return NotImplemented
        except ValueError:
            return NotImplemented           # the dense op names the mismatch
        at = xp.broadcast_to(b, a.shape)[a.row_ids(), a.indices]
        vals = a.data * at if kind == "mul" else a.data / at
        return CSRData(vals.astype(a.dtype, copy=False), a.indices, a.indptr, a.shape)
    return kernel


def _add_n_kernel(xp, sp, p, *xs):
    """add_n of row_sparse arrays only: row_sparse (the union of their rows), as MXNet."""
    if not xs or not all(isinstance(x, RSPData) for x in xs) or \
            len({(tuple(x.shape), x.dtype) for x in xs}) != 1:
        return NotImplemented
    r = xs[0]
    for x in xs[1:]:
        r = _rsp_union(xp, r, x, 1)
    return r if len(xs) > 1 else r.copy()


def _valuewise(op):
    """Kernel applying a zero-preserving op to the stored values only."""
    def kernel(xp, sp, p, x):
        if isinstance(x, CSRData):
            return CSRData(op.compute(xp, p, x.data), x.indices, x.indptr, x.shape)
        if isinstance(x, RSPData):
            return RSPData(x.indices, op.compute(xp, p, x.values), x.shape)
        return NotImplemented
    return kernel


def _clip_kernel(op):
    vw = _valuewise(op)

    def kernel(xp, sp, p, x):
        if not p.a_min <= 0 <= p.a_max:
            return NotImplemented    # zeros would change: the result is dense
        return vw(xp, sp, p, x)
    return kernel


def _keeps_zero(op, p, dtype):
    """Whether scalar op ``op`` maps 0 to 0 with params ``p`` (MXNet's storage rule
    for the scalar logic and +/- ops: ``OP::Map(0, scalar) == 0``)."""
    return not op.compute(np, p, np.zeros(1, dtype))[0]


def _scalar_kernel(op, dense_result):
    """Kernel of a scalar op: same stype as the input when 0 stays 0; otherwise a
    dense result, computed here when MXNet declares one (``dense_result``: +/-
    scalar) or by the logged fallback (comparisons, as MXNet falls back)."""
    vw = _valuewise(op)

    def kernel(xp, sp, p, x):
        if not isinstance(x, _Holder):
            return NotImplemented
        if _keeps_zero(op, p, x.dtype):
            return vw(xp, sp, p, x)
        return op.compute(xp, p, to_dense(x)) if dense_result else NotImplemented
    return kernel


def _scatter_div_kernel(xp, sp, p, a, b):
    """row_sparse lhs / any rhs: the lhs's stored rows divided by the same rows of the rhs."""
    if not isinstance(a, RSPData) or tuple(a.shape) != tuple(b.shape):
        return NotImplemented
    rows = to_dense(b)[a.indices] if a.indices.size else xp.zeros_like(a.values)
    return RSPData(a.indices, (a.values / rows).astype(a.values.dtype, copy=False), a.shape)


def _zeros_like_kernel(xp, sp, p, x):
    if isinstance(x, _Holder):
        return empty_like_stype(xp, x.stype, x.shape, x.dtype)
    return NotImplemented


# ----------------------------------------------------------------------------
# reductions over csr

def _csr_reduce(mean):
    def kernel(xp, sp, p, x):
        if not isinstance(x, CSRData) or not x.supported():
            return NotImplemented
        name = "mean" if mean else "sum"
        axes = norm_axes(p.axis, 2, name, exclude=p.exclude)
        if not axes:
            return NotImplemented
        kd = p.keepdims
        if axes == (0, 1):
            r = x.data.sum(dtype=x.dtype)
            if mean:
                r = r / max(x.shape[0] * x.shape[1], 1) if x.size else xp.asarray(np.nan)
            r = xp.asarray(r, dtype=x.dtype)
            return r.reshape(1, 1) if kd else legacy_scalar(xp, r)
        ax = axes[0]
        r = xp.asarray(x.mat(name).sum(axis=ax)).reshape(-1)
        if mean:
            r = r / x.shape[ax]
        r = r.astype(x.dtype, copy=False)
        if kd:
            r = r.reshape((1, -1) if ax == 0 else (-1, 1))
        return r
    return kernel


# ----------------------------------------------------------------------------
# dot

def _dot_dtype_check(a, b):
    if a.dtype != b.dtype:
        raise GpundaError(f"Operator dot: lhs dtype {a.dtype.name} and rhs dtype {b.dtype.name} "
                          f"must be equal")


def _dot_csr_any(xp, sp, p, a, b):
    """dot(csr, dense|rsp): dense, or row_sparse with transpose_a (MXNet's stypes)."""
    if p.transpose_b or b.ndim not in (1, 2):
        return NotImplemented
    _dot_dtype_check(a, b)
    m = a.mat("Operator dot: input lhs")
    if isinstance(b, RSPData):
        b = to_dense(b)
    rows, cols = a.shape
    if not p.transpose_a:
        if cols != b.shape[0]:
            raise GpundaError(f"Operator dot: shape mismatch: lhs shape {a.shape} and rhs shape "
                              f"{tuple(b.shape)}")
        return xp.ascontiguousarray(m @ b)
    if rows != b.shape[0]:
        raise GpundaError(f"Operator dot: shape mismatch: lhs shape {a.shape} (transpose_a=True) "
                          f"and rhs shape {tuple(b.shape)}")
    dense = xp.ascontiguousarray(m.T @ b)
    # only the csr's distinct column ids can be non-zero rows of csr.T @ b
    idx = a.columns()
    if idx.shape[0] == cols:
        return RSPData(idx, dense, dense.shape)
    return RSPData(idx, dense[idx], dense.shape)


def _dot_dense_csr(xp, sp, p, a, b):
    """dot(dense, csr): dense (cuSPARSE/SciPy through the transposes)."""
    if a.ndim != 2:
        return NotImplemented
    _dot_dtype_check(a, b)
    m = b.mat("Operator dot: input rhs")
    A = a.T if p.transpose_a else a
    inner = b.shape[1] if p.transpose_b else b.shape[0]
    if A.shape[1] != inner:
        raise GpundaError(f"Operator dot: shape mismatch: lhs shape {tuple(a.shape)} "
                          f"(transpose_a={p.transpose_a}) and rhs shape {b.shape} "
                          f"(transpose_b={p.transpose_b})")
    r = (m @ A.T).T if p.transpose_b else (m.T @ A.T).T
    return xp.ascontiguousarray(r)


def _with_forward_stype(kernel):
    def k(xp, sp, p, *xs):
        r = kernel(xp, sp, p, *xs)
        fs = getattr(p, "forward_stype", None)
        if r is NotImplemented or fs in (None, "None") or fs == stype_of(r):
            return r
        if fs not in STYPES:
            raise GpundaError(f"Operator dot: forward_stype={fs!r} is not one of {list(STYPES)}")
        return to_stype(r, fs)
    return k


def _dot_grad(p, ins, outs, ograds, need):
    """Gradients with MXNet's stypes: dot(csr, dns) -> rhs grad row_sparse."""
    nd = hooks.nd
    if ins is None:
        return NotImplemented
    a, b = ins
    g = ograds[0]
    ta, tb = p.transpose_a, p.transpose_b
    if a.stype == "csr" and b.stype != "csr" and not tb and b.ndim == 2:
        if not ta:      # C = A B: dB = A^T g (row_sparse), dA = g B^T
            gb = nd.dot(a, g, transpose_a=True) if need[1] else None
            ga = nd.dot(g, b.tostype("default"), transpose_b=True) if need[0] else None
        else:           # C = A^T B: dB = A g, dA = B g^T
            gb = nd.dot(a, g) if need[1] else None
            ga = nd.dot(b.tostype("default"), g, transpose_b=True) if need[0] else None
        return [ga, gb]
    if a.stype == "default" and b.stype == "csr" and not ta:
        g = g.tostype("default")
        if not tb:      # C = A B: dA = g B^T, dB = A^T g
            ga = nd.dot(g, b, transpose_b=True) if need[0] else None
            gb = nd.dot(a, g, transpose_a=True) if need[1] else None
        else:           # C = A B^T: dA = g B, dB = g^T A
            ga = nd.dot(g, b) if need[0] else None
            gb = nd.dot(g, a, transpose_a=True) if need[1] else None
        return [ga, gb]
    return NotImplemented


# ----------------------------------------------------------------------------
# sparse-only operators

def _cast_storage_kernel(xp, sp, p, x):
    return to_stype(x, p.stype, copy=True)


register(OpDef(
    "cast_storage", lambda xp, p, x: to_stype(x, p.stype, copy=True),
    params=[Param("stype", "enum", choices=STYPES, doc="the storage type of the output")],
    gradient=lambda F, p, i, o, g: [g[0]], save=(), family="sparse", sparse_out=True,
    sparse={"*": _cast_storage_kernel, "grad": lambda p, i, o, g, need: [g[0]]},
    doc="Convert to storage type `stype` ('default', 'csr' or 'row_sparse').\n"
        "Called as nd.cast_storage / NDArray.tostype, which return the sparse classes."))


def _retain_kernel(xp, sp, p, data, indices):
    if not isinstance(data, RSPData):
        return NotImplemented
    want = xp.unique(_i64(xp, to_dense(indices).reshape(-1)))
    have = data.indices
    if want.shape[0] == 0 or have.shape[0] == 0:
        return RSPData(have[:0], data.values[:0], data.shape)
    pos = xp.minimum(xp.searchsorted(want, have), want.shape[0] - 1)
    keep = xp.flatnonzero(want[pos] == have)
    return RSPData(have[keep], data.values[keep], data.shape)


def _retain_dense(xp, p, data, indices):
    # a dense input (gradient rules, symbols): the same rows kept, the others zeroed
    if data.ndim < 1:
        raise GpundaError("Operator _sparse_retain: input data must have at least 1 dimension")
    want = _i64(xp, to_dense(indices).reshape(-1))
    want = want[(want >= 0) & (want < data.shape[0])]
    out = xp.zeros_like(data)
    out[want] = data[want]
    return out


def _retain_grad(p, ins, outs, ograds, need):
    nd = hooks.nd
    if not need[0]:
        return [None, None]
    g = ograds[0]
    if g.stype != "row_sparse":
        g = nd.cast_storage(g, stype="row_sparse")
    return [nd._sparse_retain(g, ins[1]), None]


register(OpDef(
    "_sparse_retain", _retain_dense, inputs=("data", "indices"), family="sparse",
    save=("inputs",), no_grad_inputs=("indices",),
    gradient=lambda F, p, i, o, g: [F._sparse_retain(g[0], i[1]), None],
    sparse={("row_sparse", "*"): _retain_kernel, "grad": _retain_grad},
    doc="Keep only the rows of row_sparse `data` whose ids are in `indices`\n"
        "(nd.sparse.retain). The result is row_sparse (dense for a dense input)."))


def _sq_axes(p, ndim):
    return norm_axes(p.axis, ndim, "_square_sum", exclude=p.exclude)


def _square_sum_dense(xp, p, x):
    axes = _sq_axes(p, x.ndim)
    r = (x * x).sum(axis=axes, keepdims=p.keepdims)
    return legacy_scalar(xp, xp.asarray(r, dtype=x.dtype))


def _square_sum_rsp(xp, sp, p, x):
    if not isinstance(x, RSPData):
        return NotImplemented
    nd_ = len(x.shape)
    axes = _sq_axes(p, nd_)
    v2 = x.values * x.values
    if 0 in axes:   # absent rows are zeros and add nothing
        r = v2.sum(axis=axes, keepdims=p.keepdims)
        return legacy_scalar(xp, xp.asarray(r, dtype=x.dtype))
    rr = v2.sum(axis=axes, keepdims=p.keepdims)
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if p.keepdims else \
        tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if p.keepdims and nd_ == 2:     # MXNet: (rsp, axis=1, keepdims=True) -> rsp
        return RSPData(x.indices, rr, out_shape)
    out = xp.zeros(out_shape, x.dtype)
    out[x.indices] = rr
    return out


def _expand_like(g, shape, axes):
    """Reduced ``g`` (with or without kept dims) reshaped to broadcast against ``shape``."""
    ks = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return g.reshape(ks)


def _bss_compute(xp, p, g, x):
    axes = _sq_axes(p, x.ndim)
    return (2 * x * _expand_like(to_dense(g), x.shape, axes)).astype(x.dtype)


def _bss_rsp(xp, sp, p, g, x):
    if not isinstance(x, RSPData):
        return NotImplemented
    axes = _sq_axes(p, len(x.shape))
    ge = _expand_like(to_dense(g), x.shape, axes)
    if ge.shape[0] != 1:
        ge = ge[x.indices]
    return RSPData(x.indices, (2 * x.values * ge).astype(x.dtype), x.shape)


_SQ_PARAMS = [Param("axis", "axis", None, "axis or axes to reduce"),
              Param("keepdims", "bool", False), Param("exclude", "bool", False)]
register(OpDef(
    "_backward_square_sum", _bss_compute, inputs=("ograd", "data"), params=_SQ_PARAMS,
    family="sparse", hidden=True, save=("inputs",), sparse={("*", "row_sparse"): _bss_rsp},
    gradient=lambda F, p, i, o, g: [
        F.sum(F._backward_square_sum(F.ones_like(i[0]), i[1], axis=p.axis, keepdims=p.keepdims,
                                     exclude=p.exclude) * g[0],
              axis=p.axis, keepdims=p.keepdims, exclude=p.exclude),
        F._backward_square_sum(i[0], g[0], axis=p.axis, keepdims=p.keepdims, exclude=p.exclude)],
    doc="Gradient of _square_sum: 2 * data * ograd (row_sparse for row_sparse data)."))


def _square_sum_grad_dense(F, p, ins, outs, og):
    return [F._backward_square_sum(og[0], ins[0], axis=p.axis, keepdims=p.keepdims,
                                   exclude=p.exclude)]


def _square_sum_grad(p, ins, outs, ograds, need):
    nd = hooks.nd
    return [nd._backward_square_sum(ograds[0], ins[0], axis=p.axis, keepdims=p.keepdims,
                                    exclude=p.exclude)]


register(OpDef(
    "_square_sum", _square_sum_dense, params=_SQ_PARAMS, family="sparse", save=("inputs",),
    gradient=_square_sum_grad_dense,
    sparse={("row_sparse",): _square_sum_rsp, "grad": _square_sum_grad},
    doc="Sum of squares over `axis` (row_sparse aware: axis=1 with keepdims gives\n"
        "row_sparse, other reductions give dense)."))


# ----------------------------------------------------------------------------
# Embedding(sparse_grad=True): a row_sparse weight gradient

def _scatter_add_rows(xp, out, idx, vals):
    if xp is np:
        np.add.at(out, idx, vals)
    else:
        out.scatter_add(idx, vals)


def _embedding_rsp_grad(xp, p, data, g):
    idx = xp.clip(to_dense(data).astype(INDEX), 0, p.input_dim - 1).reshape(-1)
    rows, inv = xp.unique(idx, return_inverse=True)
    g = to_dense(g)
    vals = xp.zeros((rows.shape[0], p.output_dim), g.dtype)
    _scatter_add_rows(xp, vals, inv.reshape(-1), g.reshape(-1, p.output_dim))
    return RSPData(_i64(xp, rows), vals, (p.input_dim, p.output_dim))


register(OpDef(
    "_embedding_rsp_grad", _embedding_rsp_grad, inputs=("data", "ograd"),
    params=[Param("input_dim", "int"), Param("output_dim", "int")],
    sparse={"*": lambda xp, sp, p, d, g: _embedding_rsp_grad(xp, p, d, g)},
    gradient=lambda F, p, i, o, g: [
        None, F.Embedding(i[0], g[0], input_dim=p.input_dim, output_dim=p.output_dim)],
    save=("inputs",), hidden=True, family="sparse", nondiff=True, sparse_out=True,
    doc="Embedding's weight gradient as row_sparse: only the looked-up rows\n"
        "(not differentiable again, like MXNet's Embedding backward)."))


def _wrap_embedding(op):
    """Embedding's gradient, giving a row_sparse weight gradient when sparse_grad=True."""
    dense_rule = op.gradient
    if dense_rule is None or getattr(dense_rule, "_sparse_wrapped", False):
        return

    def rule(F, p, ins, outs, og):
        if p.sparse_grad:
            return [None, F._embedding_rsp_grad(ins[0], og[0], input_dim=p.input_dim,
                                                 output_dim=p.output_dim)]
        return dense_rule(F, p, ins, outs, og)
    rule._sparse_wrapped = True
    op.gradient = rule


# ----------------------------------------------------------------------------
# optimizer updates with a row_sparse gradient (lazy_update=True)

def _lazy_update(op):
    """Kernel running ``op``'s dense update on the gradient's rows only: weight rows
    and state rows (mom, mean, var) not in ``grad.indices`` are left untouched,
    as MXNet's lazy update does. lazy_update=False falls back (dense update); ops
    without that parameter (sparse adagrad) always update lazily."""
    def kernel(xp, sp, p, w, g, *states):
        if not getattr(p, "lazy_update", True) or not isinstance(g, RSPData) or stype_of(w) != "default" or \
                any(stype_of(s) != "default" for s in states):
            return NotImplemented
        if tuple(g.shape) != tuple(w.shape):
            raise GpundaError(f"Operator {op.name}: input grad has shape {g.shape} but weight "
                              f"has shape {tuple(w.shape)}")
        rows = g.indices
        sub = [s[rows] for s in states]
        new_rows = op.compute(xp, p, w[rows], g.values, *sub)
        for s, r in zip(states, sub):
            s[rows] = r          # the op updated the gathered copies of its state rows
        out = w.copy()
        out[rows] = new_rows
        return out
    return kernel


def _std_opt_update(op):
    """Sparse-path kernel of the updates with MXNet's StdOptStorageType (sgd_mom_update,
    adam_update): refuse states of unequal storage types before anything is written (NOTE
    [Update ops check before they write]), run the lazy update for a dense weight and a
    row_sparse grad, and leave every other combination to the dense fallback."""
    lazy = _lazy_update(op)

    def kernel(xp, sp, p, w, g, *states):
        first = stype_of(states[0])
        for i, s in enumerate(states[1:], 3):
            if stype_of(s) != first:
                raise GpundaError(f"Operator {op.name}: Inconsistent storage types detected "
                                  f"in state {i}: {stype_of(s)} vs {first} (every state must "
                                  f"have one storage type); nothing was updated")
        return lazy(xp, sp, p, w, g, *states)
    return kernel


def _adagrad(xp, p, w, g, history):
    if p.wd != 0:
        raise GpundaError(f"Operator _sparse_adagrad_update: wd={p.wd} is not supported "
                          f"(MXNet's sparse adagrad_update needs wd=0)")
    for name, a in (("grad", g), ("history", history)):
        if tuple(a.shape) != tuple(w.shape):
            raise GpundaError(f"Operator _sparse_adagrad_update: input {name} has shape "
                              f"{tuple(a.shape)} but weight has shape {tuple(w.shape)}")
    gr = g.astype(w.dtype, copy=False) * w.dtype.type(p.rescale_grad)
    if p.clip_gradient >= 0:
        gr = xp.clip(gr, -p.clip_gradient, p.clip_gradient)
    history += gr * gr
    return (w - p.lr * gr / xp.sqrt(history + p.epsilon)).astype(w.dtype, copy=False)


register(OpDef(
    "_sparse_adagrad_update", _adagrad, inputs=("weight", "grad", "history"),
    params=[Param("lr", "float", doc="learning rate"), Param("epsilon", "float", 1e-7),
            Param("wd", "float", 0.0, "must be 0 (as in MXNet)"),
            Param("rescale_grad", "float", 1.0), Param("clip_gradient", "float", -1.0)],
    nondiff=True, mutates=(2,), save=(), family="sparse",
    doc="AdaGrad step (nd.sparse.adagrad_update): g = clip(rescale_grad * grad);\n"
        "history += g**2; weight - lr * g / sqrt(history + epsilon). With a row_sparse\n"
        "grad only its rows of weight and history change; MXNet has no dense form."))


# ----------------------------------------------------------------------------
# kernels on ops of other families, installed once they are registered

# the unary ops MXNet 1.9.1 computes on sparse storage (erf and softsign also keep 0
# but MXNet densifies them, and so does Cast; astype keeps the stype)
_ZERO_PRESERVING = (
    "abs", "sign", "negative", "square", "sqrt", "cbrt", "relu", "sin", "tan", "arcsin",
    "arctan", "sinh", "tanh", "arcsinh", "arctanh", "expm1", "log1p", "degrees", "radians",
    "floor", "ceil", "rint", "trunc", "round", "fix", "_copy",
    "_mul_scalar", "_div_scalar", "BlockGrad", "make_loss",
    "_contrib_round_ste", "_contrib_sign_ste")

# MXNet's _random_<dist>_like ops give a row_sparse input a row_sparse result with every
# row stored (csr falls back to dense, as in MXNet)
_RANDOM_LIKE = ("uniform", "normal", "gamma", "exponential", "poisson", "negative_binomial",
                "generalized_negative_binomial")


def _quadratic_kernel(op):
    vw = _valuewise(op)

    def kernel(xp, sp, p, x):
        return vw(xp, sp, p, x) if p.c == 0 else NotImplemented
    return kernel


def _random_like_kernel(op):
    def kernel(xp, sp, p, x, ctx=None):
        if not isinstance(x, RSPData):
            return NotImplemented
        vals = op.compute(xp, p, xp.zeros(x.shape, x.dtype), ctx)
        return RSPData(_i64(xp, xp.arange(x.shape[0])), vals, x.shape)
    kernel.wants_ctx = True
    return kernel


def _same_stype_grad(sign):
    def rule(p, ins, outs, ograds, need):
        g = ograds[0]
        if ins is None or any(tuple(x.shape) != tuple(g.shape) for x in ins):
            return NotImplemented     # broadcasting: the dense rule sums over axes
        return [g, -g if sign < 0 else g]
    return rule


def _plan():
    plan = []
    for n in _ZERO_PRESERVING:
        plan.append((n, "*", _valuewise))
    plan.append(("clip", "*", _clip_kernel))
    # MXNet: BinaryScalarStorageTypeWithDenseResultStorageType (+/-) and
    # BinaryScalarLogicStorageType (comparisons): sparse iff 0 stays 0
    for n in ("_plus_scalar", "_minus_scalar"):
        plan.append((n, "*", lambda op: _scalar_kernel(op, True)))
    for n in ("equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal"):
        plan.append((f"_{n}_scalar", "*", lambda op: _scalar_kernel(op, False)))
    plan.append(("zeros_like", "*", lambda op: _zeros_like_kernel))
    # MXNet's QuadraticOpStorageType: csr stays csr when c == 0 (0 maps to 0)
    plan.append(("_contrib_quadratic", ("csr",), _quadratic_kernel))
    for n in _RANDOM_LIKE:
        plan.append((f"_random_{n}_like", ("row_sparse",), _random_like_kernel))
    # MXNet's _scatter_* ops: a sparse lhs keeps its storage, only stored values computed
    for n in ("_scatter_plus_scalar", "_scatter_minus_scalar"):
        plan.append((n, "*", _valuewise))
    plan.append(("_scatter_elemwise_div", ("row_sparse", "*"), lambda op: _scatter_div_kernel))
    # MXNet: ElemwiseStorageType (elemwise_*), BinaryBroadcastAdd/MulStorageType (broadcast_*)
    for kind in ("add", "sub", "mul"):
        plan.append(("elemwise_" + kind, "*", (lambda k: lambda op: _binary_kernel(k))(kind)))
    for kind in ("add", "sub", "mul", "div"):
        plan.append(("broadcast_" + kind, "*", (lambda k: lambda op: _broadcast_kernel(k))(kind)))
    plan.append(("add_n", "*", lambda op: _add_n_kernel))
    # MXNet's IdentityAttrLikeRhsStorageType: the output takes rhs's storage type (a dense
    # lhs with a row_sparse rhs gives row_sparse), holding lhs's values
    plan.append(("_identity_with_attr_like_rhs", "*", lambda op: _identity_like_rhs_kernel))
    for n in ("elemwise_add", "broadcast_add"):
        plan.append((n, "grad", lambda op: _same_stype_grad(1)))
    for n in ("elemwise_sub", "broadcast_sub"):
        plan.append((n, "grad", lambda op: _same_stype_grad(-1)))
    plan.append(("sum", ("csr",), lambda op: _csr_reduce(False)))
    plan.append(("mean", ("csr",), lambda op: _csr_reduce(True)))
    plan.append(("dot", ("csr", "default"), lambda op: _with_forward_stype(_dot_csr_any)))
    plan.append(("dot", ("csr", "row_sparse"), lambda op: _with_forward_stype(_dot_csr_any)))
    plan.append(("dot", ("default", "csr"), lambda op: _with_forward_stype(_dot_dense_csr)))
    plan.append(("dot", "grad", lambda op: _dot_grad))
    plan.append(("_sparse_adagrad_update", ("default", "row_sparse", "default"), _lazy_update))
    plan.append(("ftrl_update", ("default", "row_sparse", "default", "default"), _lazy_update))
    plan.append(("sgd_update", ("default", "row_sparse"), _lazy_update))
    # MXNet's StdOptStorageType: the states share one storage type, checked before the
    # update (nothing is written); the lazy update runs for a dense weight and rsp grad
    for n in ("sgd_mom_update", "adam_update"):
        plan.append((n, "*", _std_opt_update))
    return plan


def _identity_like_rhs_kernel(xp, sp, p, lhs, rhs):
    if tuple(lhs.shape) != tuple(rhs.shape):
        raise GpundaError(f"Operator _identity_with_attr_like_rhs: lhs shape {tuple(lhs.shape)} "
                          f"and rhs shape {tuple(rhs.shape)} must be equal")
    return to_stype(lhs, stype_of(rhs), copy=True)


def install():
    """Attach the sparse kernels to ops registered by other families (idempotent;
    ops not registered yet are skipped and picked up by a later call)."""
    from gpunda.base import GpundaError as _E
    from gpunda.ops.sparse import csr as sparse_csr_ops
    sparse_csr_ops.install()
    for name, key, make in _plan():
        try:
            op = get_op(name)
        except _E:
            continue
        if key not in op.sparse:
            op.sparse[key] = make(op)
    try:
        _wrap_embedding(get_op("Embedding"))
    except _E:
        pass


try:    # the dot op lives in linalg; import it first so its kernels can be attached
    from gpunda.ops.tensor import linalg  # noqa: F401
except ImportError:
    pass
install()
