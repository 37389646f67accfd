"""MXNet's binary NDArray file format: ``nd.save``, ``nd.load`` and friends.

A file is a header (u64 magic 0x112, u64 reserved, u64 count), one record per
array, then the names (u64 count, then u64 length + UTF-8 bytes each). The
record layouts V0..V3 are described in the MXNet fixtures' FORMAT.md; in short:

* V2 (magic 0xF993FAC9): stype, [storage shape], shape, context, dtype,
  [aux descriptors], values, [aux data]. What MXNet 1.x writes by default.
* V3 (magic 0xF993FACA): the same, written under NumPy shape semantics, where
  ndim 0 is a real 0-d array and ndim -1 marks "no array".
* V1 (magic 0xF993FAC8) and V0 (no magic, u32 dims): older dense layouts,
  read only.

Reading is defensive: every size is checked against the bytes that remain
before anything is allocated, so a truncated or hostile file raises
``GpundaError`` (naming the file and the problem) instead of crashing or
allocating gigabytes. Writing goes to a temporary file that replaces the target
only once everything is written.
"""
from __future__ import annotations

import io as _pyio
import os
import struct
from collections import namedtuple

import numpy as np

from gpunda.base import GpundaError, GpundaTypeError, GpundaValueError
from gpunda.context import Context, cpu
from gpunda._core import bf16 as _core_bf16

__all__ = ["save", "load", "load_frombuffer", "save_to_bytes", "load_raw", "RawArray"]

FILE_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA

_STYPES = {0: "default", 1: "row_sparse", 2: "csr"}
_STYPE_IDS = {v: k for k, v in _STYPES.items()}
_NUM_AUX = {"default": 0, "row_sparse": 1, "csr": 2}

# type code -> dtype as stored on disk (little-endian)
_CODE2DTYPE = {0: np.dtype("<f4"), 1: np.dtype("<f8"), 2: np.dtype("<f2"), 3: np.dtype("u1"),
               4: np.dtype("<i4"), 5: np.dtype("i1"), 6: np.dtype("<i8"), 7: np.dtype("?"),
               8: np.dtype("<i2"), 9: np.dtype("<u2"), 10: np.dtype("<u4"), 11: np.dtype("<u8")}
# keyed by kind+itemsize so that the byte order of the in-memory dtype does not matter
_KEY2CODE = {d.kind + str(d.itemsize): c for c, d in _CODE2DTYPE.items()}
# bfloat16 (code 12): its values are read as 2-byte units under this marker dtype and viewed
# as ml_dtypes' bfloat16 (gpunda/_core/bf16.py), loaded only when a file holds one
_BF16 = np.dtype([("bfloat16", "<u2")])
_CODE2DTYPE_READ = {**_CODE2DTYPE, 12: _BF16}

_MAX_NDIM = 64                 # NumPy's limit; MXNet files never come close
_MAX_ELEMS_BYTES = 1 << 62     # beyond this a shape is corrupt whatever the file size
_MIN_RECORD_BYTES = 4          # a V0 "none" record is a lone u32 ndim of 0
_ARENA_MIN_BYTES = 1 << 20     # below this separate allocations are as fast
_ARENA_ALIGN = 64              # cache-line (and SIMD) alignment of every array

_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")
_HEADER = struct.Struct("<QQQ")
_CTX_DTYPE = struct.Struct("<iii")
_CTX = struct.Struct("<ii")


#: One record as stored: ``data`` is the values array (dense values, csr data,
#: row_sparse rows), ``aux`` the index arrays (csr: indptr, indices;
#: row_sparse: indices), ``version`` 0..3. ``data`` is None for a "none" record.
RawArray = namedtuple("RawArray", "stype shape dtype data aux version dev_type dev_id")


_NONE_CACHE = {}


def _none_record(stype, version):
    """The shared RawArray of a "none" record (no array behind the handle)."""
    key = (stype, version)
    r = _NONE_CACHE.get(key)
    if r is None:
        r = _NONE_CACHE[key] = RawArray(stype, None, None, None, (), version, None, None)
    return r


# -- reading -----------------------------------------------------------------------

class _Source:
    """Sequential reader over a binary stream of known length."""

    def __init__(self, f, size, where):
        self.f, self.size, self.pos, self.where = f, size, 0, where
        self.arena, self.arena_off, self.arena_addr = None, 0, 0

    def start_arena(self, n):
        """Carve the arrays out of one buffer as large as the rest of the file.

        One big allocation is faulted in with huge pages, many separate ones page
        by page: this halves the load time of a large checkpoint. The price: the
        arrays of one file keep that buffer alive together (``copy()`` one to free
        it from the rest). Untouched pages of the buffer cost no memory.
        """
        if self.remaining() >= _ARENA_MIN_BYTES:
            # room for the data (at most the rest of the file) and its alignment padding
            size = self.remaining() + _ARENA_ALIGN * min(n + 1, 1 << 16)
            try:
                self.arena = np.empty(size, np.uint8)
            except MemoryError:     # then one allocation per array
                return
            self.arena_addr = self.arena.ctypes.data

    def error(self, msg):
        return GpundaError(f"{self.where}: {msg}")

    def remaining(self):
        return self.size - self.pos

    def need(self, n, what):
        if n > self.size - self.pos:
            raise self.error(f"truncated or corrupt: {what} needs {n} bytes at offset {self.pos} "
                             f"but only {self.size - self.pos} remain")

    def read(self, n, what):
        self.need(n, what)
        b = self.f.read(n)
        if len(b) != n:    # the file shrank while we read it
            raise self.error(f"unexpected end of data at offset {self.pos} reading {what}")
        self.pos += n
        return b

    def unpack(self, st, what):
        return st.unpack(self.read(st.size, what))

    def read_array(self, dtype, shape, what):
        count = 1
        for d in shape:
            count *= d
        nbytes = count * dtype.itemsize
        self.need(nbytes, what)
        off = self.arena_off + (-(self.arena_addr + self.arena_off) % _ARENA_ALIGN)
        if nbytes and self.arena is not None and off + nbytes <= self.arena.size:
            slot = self.arena[off:off + nbytes]
            self.arena_off = off + nbytes
            arr = slot.view(dtype).reshape(shape)
        else:
            arr = np.empty(shape, dtype)
        if nbytes:
            view = memoryview(arr.reshape(-1).view(np.uint8))
            got = 0
            while got < nbytes:
                n = self.f.readinto(view[got:])
                if not n:
                    raise self.error(f"unexpected end of data at offset {self.pos + got} "
                                     f"reading {what}")
                got += n
            self.pos += nbytes
        if not dtype.isnative:
            arr = arr.astype(dtype.newbyteorder("="))
        return arr


def _read_shape(src, what, wide=True):
    """(ndim, dims) of a shape field; wide: i32 ndim + i64 dims, else u32 ndim + u32 dims."""
    ndim = src.unpack(_I32 if wide else _U32, f"{what} ndim")[0]
    if ndim < -1 or ndim > _MAX_NDIM:
        raise src.error(f"corrupt {what}: ndim={ndim} (must be -1..{_MAX_NDIM})")
    if ndim <= 0:
        return ndim, ()
    size = 8 if wide else 4
    dims = struct.unpack(f"<{ndim}{'q' if wide else 'I'}", src.read(size * ndim, f"{what} dims"))
    return ndim, dims


def _check_dims(src, dims, itemsize, what):
    """Reject negative dims and shapes whose byte size is absurd before allocating."""
    total = itemsize
    for d in dims:
        if d < 0:
            raise src.error(f"corrupt {what}: shape {tuple(dims)} has a negative dim")
        total *= max(d, 1)
        if total > _MAX_ELEMS_BYTES:
            raise src.error(f"corrupt {what}: shape {tuple(dims)} is absurdly large")


def _read_dtype(src, what):
    code = src.unpack(_I32, f"{what} dtype")[0]
    dt = _CODE2DTYPE_READ.get(code)
    if dt is None:
        raise src.error(f"{what} has unknown dtype code {code}")
    return dt


def _read_record(src, i):
    what = f"array {i}"
    head = src.unpack(_U32, f"{what} header")[0]
    if head in (V2_MAGIC, V3_MAGIC):
        version = 2 if head == V2_MAGIC else 3
        stype_id = src.unpack(_I32, f"{what} stype")[0]
        stype = _STYPES.get(stype_id)
        if stype is None:
            raise src.error(f"{what} has unknown storage type code {stype_id}")
        sshape = None
        if stype != "default":
            nd_, sshape = _read_shape(src, f"{what} storage shape")
            if nd_ <= 0 or -1 in sshape:
                raise src.error(f"corrupt {what}: sparse storage shape has ndim {nd_}")
        ndim, shape = _read_shape(src, f"{what} shape")
        # V2 (legacy shapes): ndim 0 means "no array"; V3: ndim -1 or a -1 dim does
        if ndim == -1 or (version == 2 and ndim == 0) or -1 in shape:
            return _none_record(stype, version)
        dev_type, dev_id = src.unpack(_CTX, f"{what} context")
        dtype = _read_dtype(src, what)
        aux_desc = []
        for k in range(_NUM_AUX[stype]):
            adt = _read_dtype(src, f"{what} aux {k}")
            if adt.kind != "i":
                raise src.error(f"{what} aux {k} (sparse indices) has dtype {adt}; MXNet "
                                f"stores indices as signed integers (int64)")
            and_, ashape = _read_shape(src, f"{what} aux {k} shape")
            if and_ != 1:
                raise src.error(f"corrupt {what}: aux {k} shape {ashape} is not 1-d")
            aux_desc.append((adt, ashape))
        # a sparse array's logical shape may be huge; only its stored parts are allocated
        _check_dims(src, shape, dtype.itemsize if sshape is None else 0, what)
        if sshape is not None:
            _check_dims(src, sshape, dtype.itemsize, what)
            _check_sparse_shapes(src, stype, shape, sshape, [s for _, s in aux_desc], what)
        for adt, ashape in aux_desc:
            _check_dims(src, ashape, adt.itemsize, what)
        values = _widen(src.read_array(dtype, sshape if sshape is not None else shape,
                                       f"{what} values"))
        aux = tuple(src.read_array(adt, ashape, f"{what} aux {k} data")
                    for k, (adt, ashape) in enumerate(aux_desc))
        if stype != "default":
            _check_sparse_indices(src, stype, shape, values, aux, what)
        _check_bool(src, values, what)
        return RawArray(stype, tuple(shape), values.dtype, values, aux, version, dev_type, dev_id)
    if head == V1_MAGIC:
        version = 1
        ndim, shape = _read_shape(src, f"{what} shape")
    else:
        # V0 has no magic: the u32 just read is ndim, followed by u32 dims
        version = 0
        ndim = head
        if ndim > _MAX_NDIM:
            raise src.error(f"{what} does not start with a known record magic (0x{head:08x}), "
                            f"nor is it a plausible legacy ndim")
        shape = struct.unpack(f"<{ndim}I", src.read(4 * ndim, f"{what} dims")) if ndim else ()
    if ndim <= 0:
        return _none_record("default", version)
    dev_type, dev_id = src.unpack(_CTX, f"{what} context")
    dtype = _read_dtype(src, what)
    _check_dims(src, shape, dtype.itemsize, what)
    values = _widen(src.read_array(dtype, shape, f"{what} values"))
    _check_bool(src, values, what)
    return RawArray("default", tuple(shape), values.dtype, values, (), version, dev_type, dev_id)


def _widen(values):
    """bfloat16 values (read under the _BF16 marker) as bfloat16; others unchanged."""
    if values.dtype != _BF16:
        return values
    return values.view("<u2").view(_core_bf16.dtype())


def _check_bool(src, values, what):
    # a flipped bit would give a bool byte NumPy treats inconsistently
    if values.dtype == np.bool_ and values.size and values.view(np.uint8).max() > 1:
        raise src.error(f"corrupt {what}: bool values must be bytes 0 or 1")


def _check_sparse_shapes(src, stype, shape, sshape, ashapes, what):
    if stype == "csr":
        ok = (len(shape) == 2 and len(sshape) == 1 and ashapes[0] == (shape[0] + 1,)
              and ashapes[1] == sshape)
        rule = "csr needs a 2-d shape, indptr of rows+1 and nnz indices matching the values"
    else:
        ok = (len(shape) >= 1 and len(sshape) == len(shape) and tuple(sshape[1:]) == tuple(shape[1:])
              and ashapes[0] == (sshape[0],) and sshape[0] <= shape[0])
        rule = "row_sparse needs stored rows matching the shape's trailing dims and one index per row"
    if not ok:
        raise src.error(f"corrupt {what}: {stype} shape {tuple(shape)}, storage shape "
                        f"{tuple(sshape)}, aux shapes {[tuple(a) for a in ashapes]}: {rule}")


def _check_sparse_indices(src, stype, shape, values, aux, what):
    aux = [a.astype(np.int64, copy=False) for a in aux]
    if stype == "csr":
        indptr, indices = aux
        nnz = values.shape[0]
        if indptr[0] != 0 or indptr[-1] != nnz or (indptr.size > 1 and np.any(np.diff(indptr) < 0)):
            raise src.error(f"corrupt {what}: csr indptr must rise from 0 to nnz={nnz}")
        if indices.size and (indices.min() < 0 or indices.max() >= shape[1]):
            raise src.error(f"corrupt {what}: csr column index out of range [0, {shape[1]})")
    else:
        (idx,) = aux
        if idx.size and (idx.min() < 0 or idx.max() >= shape[0]
                         or (idx.size > 1 and np.any(np.diff(idx) <= 0))):
            raise src.error(f"corrupt {what}: row_sparse indices must be increasing and in "
                            f"[0, {shape[0]})")


def _read_file(src):
    """(records, names or None) from a whole NDArray file."""
    magic, _reserved, n = src.unpack(_HEADER, "file header")
    if magic != FILE_MAGIC:
        if magic.to_bytes(8, "little").lstrip()[:1] == b"{":
            raise src.error(f"not an MXNet NDArray file (bad magic 0x{magic:x}, expected "
                            f"0x112): it looks like a symbol JSON; load it with mx.sym.load "
                            f"(or mx.model.load_checkpoint)")
        raise src.error(f"not an MXNet NDArray file (bad magic 0x{magic:x}, expected 0x112)")
    if n * _MIN_RECORD_BYTES > src.remaining():
        raise src.error(f"corrupt: header claims {n} arrays but only {src.remaining()} bytes follow")
    src.start_arena(n)
    records = [_read_record(src, i) for i in range(n)]
    k = src.unpack(_U64, "name count")[0]
    if k not in (0, n):
        raise src.error(f"corrupt: {k} names for {n} arrays (must be 0 or {n})")
    if k * 8 > src.remaining():
        raise src.error(f"truncated or corrupt: {k} names need at least {8 * k} bytes, "
                        f"{src.remaining()} remain")
    names = None
    if k:
        names = []
        for i in range(k):
            ln = src.unpack(_U64, f"name {i} length")[0]
            raw = src.read(ln, f"name {i}")
            try:
                names.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise src.error(f"name {i} is not valid UTF-8") from None
    if src.remaining():
        raise src.error(f"corrupt: {src.remaining()} unexpected bytes after the names at "
                        f"offset {src.pos}")
    return records, names


def _open_source(fname, where):
    if isinstance(fname, (bytes, bytearray, memoryview)):
        buf = bytes(fname)
        return _Source(_pyio.BytesIO(buf), len(buf), where), None
    path = _path(fname, where)
    try:
        f = open(path, "rb")
        size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise GpundaError(f"{where}: cannot read {path!r}: {e.strerror or e}") from None
    return _Source(f, size, f"{where}: file {path!r}"), f


def load_raw(fname):
    """Parse an NDArray file (path or bytes) without building NDArrays.

    Returns ``(records, names)``: a list of :class:`RawArray` with NumPy parts,
    and the list of names, or None for a list file.
    """
    src, f = _open_source(fname, "load_raw")
    try:
        return _read_file(src)
    finally:
        if f is not None:
            f.close()


def _to_ndarray(rec, ctx):
    from gpunda.ndarray.ndarray import _new
    if rec.data is None:
        return None
    if rec.stype == "default":
        data = rec.data if ctx._xp is np else ctx.backend.from_host(rec.data)
        return _new(data, ctx)
    from gpunda.ndarray import sparse
    if rec.stype == "csr":
        indptr, indices = rec.aux
        return sparse.csr_matrix((rec.data, indices.astype(np.int64, copy=False),
                                  indptr.astype(np.int64, copy=False)),
                                 shape=rec.shape, ctx=ctx, dtype=rec.data.dtype)
    return sparse.row_sparse_array((rec.data, rec.aux[0].astype(np.int64, copy=False)),
                                   shape=rec.shape, ctx=ctx, dtype=rec.data.dtype)


def _check_shape_mode(records, where):
    """MXNet loads a V3 record (NumPy shapes) only under ``np_shape(True)`` and a V2 one
    only with it off: the two modes read zero-size and 0-d shapes differently."""
    from gpunda.util import is_np_shape
    np_mode = is_np_shape()
    for i, r in enumerate(records):
        if r.version == 3 and not np_mode:
            raise GpundaError(f"{where}: array {i} was saved under NumPy shape semantics; load it "
                              f"inside `with mx.np_shape(True):`")
        if r.version == 2 and np_mode:
            raise GpundaError(f"{where}: array {i} was saved with legacy shape semantics; load it "
                              f"outside np_shape(True) (inside `with mx.np_shape(False):`)")


def record_bytes(a, where="__getstate__"):
    """One array's record alone (no file header): MXNet's ``MXNDArraySaveRawBytes``."""
    from gpunda.util import is_np_shape
    return b"".join(bytes(c) for c in _record_chunks(a, "array", is_np_shape(), where))


def read_record_bytes(buf, where="__setstate__"):
    """The RawArray in bytes made by :func:`record_bytes` (or by MXNet)."""
    src, _ = _open_source(bytes(buf), where)
    rec = _read_record(src, 0)
    if src.remaining():
        raise src.error(f"corrupt: {src.remaining()} unexpected bytes after the array")
    return rec


def _assemble(records, names, ctx):
    ctx = cpu() if ctx is None else Context(ctx)
    arrays = [_to_ndarray(r, ctx) for r in records]
    if names is None:
        return arrays
    return dict(zip(names, arrays))


def load(fname, ctx=None):
    """Load arrays saved by ``nd.save`` or MXNet's ``mx.nd.save``.

    Args:
        fname: path of a ``.params`` / ``.nd`` file (any record version V0..V3,
            dense, csr and row_sparse).
        ctx: where to put the arrays (default ``cpu()``; the saved context is ignored).

    Returns:
        A dict name -> NDArray (in file order) when the file was saved from a
        dict, else a list. A "none" record (an empty MXNet handle) loads as None.
        On CPU the arrays of a file over 1 MiB share one 64-byte aligned buffer
        (as fast as ``np.fromfile``); it is freed when the last of them goes.

    Example:
        >>> nd.save('x.params', {'w': nd.ones((2, 3))}); nd.load('x.params')['w'].shape
        (2, 3)
    """
    src, f = _open_source(_path(fname, "load"), "load")
    try:
        records, names = _read_file(src)
    finally:
        if f is not None:
            f.close()
    _check_shape_mode(records, "load")
    return _assemble(records, names, ctx)


def load_frombuffer(buf, ctx=None):
    """Like :func:`load`, from the bytes of an NDArray file."""
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise GpundaTypeError(f"load_frombuffer: buf must be bytes, got {type(buf).__name__}")
    src, _ = _open_source(buf, "load_frombuffer")
    records, names = _read_file(src)
    _check_shape_mode(records, "load_frombuffer")
    return _assemble(records, names, ctx)


# -- writing ------------------------------------------------------------------------

def _path(fname, where):
    if isinstance(fname, os.PathLike):
        fname = os.fspath(fname)
    if not isinstance(fname, str):
        raise GpundaTypeError(f"{where}: fname must be a str or path, got "
                              f"{type(fname).__name__}")
    return fname


def _container(data, where):
    """(arrays, names or None) from a single NDArray, a list/tuple or a dict."""
    from gpunda.ndarray.ndarray import NDArray
    if isinstance(data, NDArray):
        return [data], None
    if isinstance(data, dict):
        for k in data:
            if not isinstance(k, str):
                raise GpundaError(f"{where}: dict keys must be str, got {k!r}")
        return list(data.values()), list(data.keys())
    if isinstance(data, (list, tuple)):
        return list(data), None
    # the exception classes are MXNet's: TypeError for a bad element, ValueError here
    raise GpundaValueError(f"{where}: data must be an NDArray, a list of NDArrays or a dict "
                           f"str -> NDArray, got {type(data).__name__}")



def _host_le(a, ctx):
    """Contiguous little-endian host copy (or view) of backend array ``a``."""
    h = a if isinstance(a, np.ndarray) else ctx.backend.to_host(a)
    h = np.asarray(h, order="C")   # (ascontiguousarray would turn 0-d into 1-d)
    if h.dtype.byteorder == ">" or (h.dtype.byteorder == "=" and not np.little_endian):
        h = h.astype(h.dtype.newbyteorder("<"))
    return h


def _bytes_of(h):
    return memoryview(h.reshape(-1).view(np.uint8))


def _shape_bytes(shape):
    return struct.pack(f"<i{len(shape)}q", len(shape), *shape)


def _code_of(dtype, what, where):
    if _core_bf16.is_bf16(dtype):
        return 12
    code = _KEY2CODE.get(dtype.kind + str(dtype.itemsize))
    if code is None or dtype.kind not in "fiub":
        raise GpundaError(f"{where}: {what} has dtype {dtype}, which the MXNet format cannot store")
    return code


def _raw_of(x):
    """Backend array and context of an NDArray or of a sparse part."""
    return x._data, x._ctx


def _record_chunks(a, label, v3, where):
    from gpunda.ndarray.ndarray import NDArray
    if not isinstance(a, NDArray):
        # a TypeError, as MXNet's "save only accept dict str->NDArray or list of NDArray"
        raise GpundaTypeError(f"{where}: {label} is a {type(a).__name__}, not an NDArray")
    stype = getattr(a, "stype", "default")
    magic = V3_MAGIC if v3 else V2_MAGIC
    ctx_fields = (1, 0)  # always written as cpu(0): loaders ignore it and every host has one
    if stype == "default":
        h = _host_le(*_raw_of(a))
        if h.ndim == 0 and not v3:
            raise GpundaError(f"{where}: {label} is 0-d (shape ()), which MXNet's V2 format cannot "
                              f"store; reshape it to (1,) or save under util.np_shape(True)")
        code = _code_of(h.dtype, label, where)
        yield (_U32.pack(magic) + _I32.pack(0) + _shape_bytes(h.shape)
               + _CTX_DTYPE.pack(*ctx_fields, code))
        yield _bytes_of(h)
        return
    if stype not in ("csr", "row_sparse"):
        raise GpundaError(f"{where}: {label} has storage type {stype!r}, which cannot be saved")
    if v3:
        raise GpundaError(f"{where}: {label} is {stype}; MXNet cannot save sparse arrays under "
                          f"NumPy shape semantics (util.np_shape(True))")
    values = _host_le(*_raw_of(a.data))
    code = _code_of(values.dtype, label, where)
    if stype == "csr":
        aux = [_host_le(*_raw_of(a.indptr)), _host_le(*_raw_of(a.indices))]
    else:
        aux = [_host_le(*_raw_of(a.indices))]
    # MXNet 1.x only reads int64 index arrays
    aux = [x if x.dtype == np.dtype("<i8") else x.astype("<i8") for x in aux]
    head = (_U32.pack(magic) + _I32.pack(_STYPE_IDS[stype]) + _shape_bytes(values.shape)
            + _shape_bytes(tuple(a.shape)) + _CTX_DTYPE.pack(*ctx_fields, code))
    head += b"".join(_I32.pack(6) + _shape_bytes(x.shape) for x in aux)
    yield head
    yield _bytes_of(values)
    for x in aux:
        yield _bytes_of(x)


def _chunks(arrays, names, where):
    """The file as a stream of byte chunks; array data goes out as memoryviews (no copy).

    Each element is checked when its turn comes, so a bad one fails mid-way."""
    from gpunda.util import is_np_shape
    v3 = is_np_shape()
    yield _HEADER.pack(FILE_MAGIC, 0, len(arrays))
    for i, a in enumerate(arrays):
        label = f"array {i}" if names is None else f"array {names[i]!r}"
        yield from _record_chunks(a, label, v3, where)
    if names is None:
        yield _U64.pack(0)
        return
    out = [_U64.pack(len(names))]
    for nm in names:
        b = nm.encode("utf-8")
        out.append(_U64.pack(len(b)) + b)
    yield b"".join(out)


def save_to_bytes(data):
    """The bytes ``nd.save`` would write for ``data`` (see :func:`save`)."""
    return b"".join(_chunks(*_container(data, "save_to_bytes"), "save_to_bytes"))


def save(fname, data):
    """Save arrays in MXNet's binary format, readable by ``mx.nd.load`` of MXNet 1.x.

    Args:
        fname: target path. Written atomically: the bytes go to a temporary file
            in the same folder which then replaces ``fname``, so a failed save
            leaves any previous file untouched.
        data: an NDArray, a list/tuple of NDArrays, or a dict str -> NDArray
            (``mx.nd.load`` then returns a dict). Dense arrays of any MXNet dtype,
            csr and row_sparse. Records are V2, or V3 under ``util.np_shape(True)``
            (needed for 0-d arrays), with the context written as cpu(0).

    Example:
        >>> nd.save('model-0000.params', {'arg:w': nd.ones((2, 3))})
    """
    path = os.path.realpath(_path(fname, "save"))   # keep a symlink, replace its target
    folder, base = os.path.split(path)
    chunks = _chunks(*_container(data, "save"), "save")
    tmp = os.path.join(folder, f".{base}.{os.urandom(6).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except OSError as e:
        raise GpundaError(f"save: cannot write {fname!r}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
        try:
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        except FileNotFoundError:
            pass
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise GpundaError(f"save: writing {fname!r} failed: {e.strerror or e}") from None
        raise
