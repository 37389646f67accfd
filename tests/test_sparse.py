"""Sparse NDArrays: creation, parts, conversion between every pair of stypes,
slicing, copies, validation errors; checked against SciPy / NumPy and MXNet fixtures."""
import os
import pickle

import numpy as np
import pytest
import scipy.sparse as sps

import gpunda as mx
from gpunda import nd
from gpunda.base import GpundaError
from gpunda.ndarray.sparse import CSRNDArray, RowSparseNDArray

FIXTURES = os.environ["GPUNDA_MXNET_FIXTURES"]


def _dense_with_zero_rows(rng, shape=(5, 4)):
    d = rng.standard_normal(shape).astype(np.float32)
    d[rng.random(shape) < 0.5] = 0
    d[1] = 0
    return d


# -- creation ------------------------------------------------------------------

def test_csr_from_parts_matches_scipy():
    data, indices, indptr = [1.5, -2.0, 3.0], [0, 2, 1], [0, 2, 2, 3]
    a = nd.sparse.csr_matrix((data, indices, indptr), shape=(3, 4))
    ref = sps.csr_matrix((data, indices, indptr), shape=(3, 4)).toarray()
    assert isinstance(a, CSRNDArray) and a.stype == "csr"
    assert a.shape == (3, 4) and a.dtype == np.float32 and a.context == mx.current_context()
    np.testing.assert_array_equal(a.asnumpy(), ref)
    assert a.indices.dtype == np.int64 and a.indptr.dtype == np.int64
    assert a.indices.asnumpy().tolist() == indices and a.indptr.asnumpy().tolist() == indptr
    np.testing.assert_array_equal(a.data.asnumpy(), np.float32(data))
    # shape inferred from the parts
    assert nd.sparse.csr_matrix((data, indices, indptr)).shape == (3, 3)


def test_csr_from_scipy_canonicalises_and_copies():
    # duplicate and unsorted entries in a SciPy matrix are summed and sorted
    m = sps.csr_matrix((np.float64([1, 2, 5]), [2, 0, 2], [0, 3, 3]), shape=(2, 3))
    a = nd.sparse.csr_matrix(m)
    assert a.dtype == np.float64
    np.testing.assert_array_equal(a.asnumpy(), m.toarray())
    assert a.indices.asnumpy().tolist() == [0, 2]
    a.check_format()
    m.data[:] = 0     # the CSRNDArray owns its memory
    assert a.asnumpy().sum() == 8
    s = a.asscipy()
    assert isinstance(s, sps.csr_matrix)
    np.testing.assert_array_equal(s.toarray(), [[2, 0, 6], [0, 0, 0]])


def test_csr_from_dense_coo_and_shape(rng):
    d = _dense_with_zero_rows(rng)
    for src in (d, nd.array(d)):
        a = nd.sparse.csr_matrix(src)
        assert isinstance(a, CSRNDArray)
        np.testing.assert_array_equal(a.asnumpy(), d)
        assert a.indptr.asnumpy().tolist() == sps.csr_matrix(d).indptr.tolist()
    c = nd.sparse.csr_matrix(([1, 2], ([0, 2], [1, 1])), shape=(3, 2))
    np.testing.assert_array_equal(c.asnumpy(), [[0, 1], [0, 0], [0, 2]])
    z = nd.sparse.csr_matrix((2, 5), dtype="float64")
    assert z.shape == (2, 5) and z.dtype == np.float64 and z.asnumpy().sum() == 0
    assert z.indptr.asnumpy().tolist() == [0, 0, 0]


def test_row_sparse_from_parts_dense_and_shape(rng):
    a = nd.sparse.row_sparse_array(([[1., 2.], [3., 4.]], [1, 3]), shape=(5, 2))
    assert isinstance(a, RowSparseNDArray) and a.stype == "row_sparse"
    ref = np.zeros((5, 2), np.float32)
    ref[[1, 3]] = [[1, 2], [3, 4]]
    np.testing.assert_array_equal(a.asnumpy(), ref)
    assert a.indices.dtype == np.int64 and a.indices.asnumpy().tolist() == [1, 3]
    assert a.data.shape == (2, 2)
    assert nd.sparse.row_sparse_array(([[1., 2.]], [4])).shape == (5, 2)   # inferred
    d = rng.standard_normal((4, 2, 3)).astype(np.float32)
    d[[0, 2]] = 0
    r = nd.sparse.row_sparse_array(d)
    assert r.indices.asnumpy().tolist() == [1, 3] and r.data.shape == (2, 2, 3)
    np.testing.assert_array_equal(r.asnumpy(), d)
    lst = nd.sparse.row_sparse_array([[0, 0], [3, 4]])    # a list is a dense source
    assert lst.shape == (2, 2) and lst.indices.asnumpy().tolist() == [1]
    assert nd.sparse.csr_matrix([[0, 0, 1], [2, 0, 0], [0, 0, 0]]).indptr.asnumpy().tolist() == [0, 1, 2, 2]
    z = nd.sparse.row_sparse_array((6, 3, 2))
    assert z.shape == (6, 3, 2) and z.indices.shape == (0,) and z.data.shape == (0, 3, 2)


def test_zeros_every_way():
    for stype, cls in (("csr", CSRNDArray), ("row_sparse", RowSparseNDArray)):
        for z in (nd.sparse.zeros(stype, (3, 4), dtype="float64"),
                  nd.zeros((3, 4), stype=stype, dtype="float64"),
                  nd.sparse.empty(stype, (3, 4), dtype="float64")):
            assert type(z) is cls and z.shape == (3, 4) and z.dtype == np.float64
            np.testing.assert_array_equal(z.asnumpy(), np.zeros((3, 4)))
    assert nd.sparse.zeros("default", (2,)).stype == "default"
    with pytest.raises(GpundaError, match="csr.*2-D"):
        nd.sparse.zeros("csr", (2, 3, 4))
    for make in (lambda: nd.sparse.zeros("coo", (2, 3)), lambda: nd.zeros((2, 3), stype="coo"),
                 lambda: nd.sparse.empty("coo", (2, 3)), lambda: nd.empty((2, 3), stype="coo")):
        with pytest.raises(ValueError, match="stype='coo'"):     # MXNet: ValueError / Exception
            make()
    e = nd.empty((2, 3), stype="row_sparse", dtype="int32")
    assert type(e) is RowSparseNDArray and e.dtype == np.int32 and e.indices.shape == (0,)


def test_sparse_array_function():
    m = sps.random(4, 3, density=0.5, format="csr", dtype=np.float32, random_state=1)
    a = nd.sparse.array(m)
    assert isinstance(a, CSRNDArray)
    np.testing.assert_array_equal(a.asnumpy(), m.toarray())
    b = nd.sparse.array(a, dtype="float64")
    assert b.dtype == np.float64 and isinstance(b, CSRNDArray)
    r = nd.sparse.array(a.tostype("row_sparse"))
    assert isinstance(r, RowSparseNDArray)
    with pytest.raises(ValueError, match="sparse.array: source_array"):
        nd.sparse.array(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="dense NDArray; use tostype"):
        nd.sparse.array(nd.zeros((2, 2)))
    # the context defaults to the current one, not the source's (MXNet's code)
    assert nd.sparse.array(a.copyto(mx.cpu(1))).context == mx.current_context()
    assert nd.sparse.array(a, ctx=mx.cpu(2)).context == mx.cpu(2)


def test_nd_array_of_a_sparse_source_is_sparse():
    m = sps.random(4, 3, density=0.5, format="csr", dtype=np.float64, random_state=2)
    for src, cls in ((m, CSRNDArray), (nd.sparse.csr_matrix(m), CSRNDArray),
                     (nd.sparse.csr_matrix(m).tostype("row_sparse"), RowSparseNDArray)):
        a = nd.array(src)
        assert type(a) is cls and a.dtype == np.float64
        np.testing.assert_array_equal(a.asnumpy(), m.toarray())
    assert nd.array(m, dtype="float32").dtype == np.float32


@pytest.mark.mxnet_fixtures
def test_mxnet_fixture_parts_rebuild_bit_exact():
    ref = np.load(os.path.join(FIXTURES, "nd_sparse.npz"))
    c = nd.sparse.csr_matrix((ref["arr0_data"], ref["arr0_indices"], ref["arr0_indptr"]),
                             shape=ref["arr0"].shape)
    assert c.dtype == np.float32
    np.testing.assert_array_equal(c.asnumpy(), ref["arr0"])
    np.testing.assert_array_equal(c.indptr.asnumpy(), ref["arr0_indptr"])
    r = nd.sparse.row_sparse_array((ref["arr1_data"], ref["arr1_indices"]), shape=ref["arr1"].shape)
    np.testing.assert_array_equal(r.asnumpy(), ref["arr1"])
    # and back: MXNet's parts from the dense values
    np.testing.assert_array_equal(nd.array(ref["arr1"]).tostype("row_sparse").indices.asnumpy(),
                                  ref["arr1_indices"])
    np.testing.assert_array_equal(nd.array(ref["arr0"]).tostype("csr").indices.asnumpy(),
                                  ref["arr0_indices"])


# -- conversion ---------------------------------------------------------------------

@pytest.mark.parametrize("src", ["default", "csr", "row_sparse"])
@pytest.mark.parametrize("dst", ["default", "csr", "row_sparse"])
def test_tostype_every_pair(rng, src, dst):
    d = _dense_with_zero_rows(rng)
    x = nd.array(d).tostype(src)
    assert x.stype == src
    for y in (x.tostype(dst), nd.cast_storage(x, stype=dst), nd.sparse.cast_storage(x, dst)):
        assert y.stype == dst and y.shape == d.shape and y.dtype == np.float32
        np.testing.assert_array_equal(y.asnumpy(), d)
        if dst != "default":
            y.check_format()
    if dst == "row_sparse":
        assert y.indices.asnumpy().tolist() == [i for i in range(5) if d[i].any()]


@pytest.mark.parametrize("stype,cls", [("csr", CSRNDArray), ("row_sparse", RowSparseNDArray)])
def test_generic_invoke_of_cast_storage_gives_the_sparse_class(stype, cls, rng):
    from gpunda._engine import imperative
    d = rng.standard_normal((4, 3)).astype(np.float32)
    d[1] = 0
    x = nd.array(d)
    for y in (imperative.invoke("cast_storage", [x], stype=stype),
              nd._internal.cast_storage(x, stype=stype)):
        assert type(y) is cls and y.stype == stype
        np.testing.assert_array_equal(y.asnumpy(), d)
    back = imperative.invoke("cast_storage", [y], stype="default")
    assert back.stype == "default"
    np.testing.assert_array_equal(back.asnumpy(), d)


def test_tostype_csr_needs_2d():
    r = nd.sparse.row_sparse_array((3, 2, 2))
    with pytest.raises(ValueError, match="must be 2-D"):      # MXNet: ValueError
        r.tostype("csr")
    for shape in ((3,), (1, 1, 3)):
        with pytest.raises(ValueError, match="must be 2-D"):
            nd.ones(shape).tostype("csr")
        with pytest.raises(GpundaError, match="csr needs a 2-D"):
            nd.cast_storage(nd.ones(shape), stype="csr")


def test_copy_copyto_astype_context(rng):
    d = _dense_with_zero_rows(rng)
    for st in ("csr", "row_sparse"):
        x = nd.array(d).tostype(st)
        c = x.copy()
        assert c.stype == st and c is not x
        np.testing.assert_array_equal(c.asnumpy(), d)
        c2 = x.copyto(mx.cpu(1))
        assert c2.context == mx.cpu(1) and c2.stype == st
        np.testing.assert_array_equal(c2.asnumpy(), d)
        assert x.as_in_context(mx.current_context()) is x
        h = x.astype("float64")
        assert h.stype == st and h.dtype == np.float64
        np.testing.assert_array_equal(h.asnumpy(), d.astype(np.float64))
        # into existing arrays of any stype (converted to the target's stype)
        for tgt_st in ("default", "csr", "row_sparse"):
            tgt = nd.zeros(d.shape, stype=tgt_st)
            x.copyto(tgt)
            assert tgt.stype == tgt_st
            np.testing.assert_array_equal(tgt.asnumpy(), d)
        with pytest.raises(GpundaError, match="copyto: target has shape"):
            x.copyto(nd.zeros((2, 2)))
    # dense into sparse
    t = nd.sparse.zeros("row_sparse", d.shape)
    nd.array(d).copyto(t)
    assert t.stype == "row_sparse"
    np.testing.assert_array_equal(t.asnumpy(), d)


def test_setitem_full_assignment(rng):
    d = _dense_with_zero_rows(rng)
    r = nd.sparse.zeros("row_sparse", d.shape)
    r[:] = nd.array(d)
    np.testing.assert_array_equal(r.asnumpy(), d)
    c = nd.sparse.zeros("csr", d.shape)
    c[:] = sps.csr_matrix(d)
    np.testing.assert_array_equal(c.asnumpy(), d)
    with pytest.raises(TypeError, match=r"only supports x\[:\]"):      # MXNet's error types
        c[0] = 1
    with pytest.raises(ValueError, match="slice"):
        r[1:3] = nd.zeros((2, 2))
    with pytest.raises(GpundaError, match="source has shape"):
        r[:] = nd.zeros((2, 2))
    # a number fills every row of a row_sparse array; csr refuses numbers, as MXNet
    r[:] = 2.5
    np.testing.assert_array_equal(r.asnumpy(), np.full(d.shape, 2.5, np.float32))
    assert r.indices.asnumpy().tolist() == list(range(d.shape[0]))
    r[:] = np.float32(0)
    assert r.indices.shape == (0,) and not r.asnumpy().any()
    with pytest.raises(ValueError, match="number to a CSRNDArray"):
        c[:] = 1
    with pytest.raises(TypeError, match="cannot assign a dict"):
        r[:] = {}


def test_csr_row_slicing(rng):
    d = _dense_with_zero_rows(rng, (6, 4))
    a = nd.array(d).tostype("csr")
    for key, ref in ((slice(1, 3), d[1:3]), (slice(None, 4), d[:4]), (slice(4, None), d[4:]),
                     (slice(-2, None), d[-2:]), (2, d[2:3]), (-1, d[5:6]), (slice(3, 1), d[3:1])):
        s = a[key]
        assert isinstance(s, CSRNDArray)
        np.testing.assert_array_equal(s.asnumpy(), ref)
        s.check_format()
    with pytest.raises(GpundaError, match="step 1"):
        a[::2]
    with pytest.raises(GpundaError, match="row 9 is out of range"):
        a[9]
    r = a.tostype("row_sparse")
    assert r[:] is r
    with pytest.raises(GpundaError, match=r"only supports \[:\]"):
        r[1]


def test_dense_only_methods_raise_clearly():
    r = nd.sparse.zeros("row_sparse", (4, 2))
    with pytest.raises(GpundaError, match="reshape is not supported for RowSparseNDArray"):
        r.reshape((2, 4))
    with pytest.raises(GpundaError, match="DLPack"):
        r.to_dlpack_for_read()
    assert f"<RowSparseNDArray 4x2 @{mx.current_context()}>" in repr(r)


def test_pickle_round_trip(rng):
    d = _dense_with_zero_rows(rng)
    for st in ("csr", "row_sparse"):
        x = nd.array(d).tostype(st)
        y = pickle.loads(pickle.dumps(x))
        assert y.stype == st
        np.testing.assert_array_equal(y.asnumpy(), d)


def test_attach_grad_row_sparse():
    w = nd.ones((4, 3))
    w.attach_grad(stype="row_sparse")
    assert isinstance(w.grad, RowSparseNDArray) and w.grad.shape == (4, 3)
    assert w.grad.indices.shape == (0,)


def test_holder_gradient_protocol():
    # what autograd does with raw storage: accumulate, write, copy
    from gpunda.ops.sparse.ops import RSPData
    a = RSPData(np.int64([0, 2]), np.float32([[1, 1], [2, 2]]), (4, 2))
    b = RSPData(np.int64([2, 3]), np.float32([[1, 0], [5, 5]]), (4, 2))
    s = a + b
    assert isinstance(s, RSPData) and s.indices.tolist() == [0, 2, 3]
    np.testing.assert_array_equal(np.asarray(s), np.asarray(a) + np.asarray(b))
    dense = np.ones((4, 2), np.float32)
    np.testing.assert_array_equal(dense + a, 1 + np.asarray(a))
    np.testing.assert_array_equal(a + dense, 1 + np.asarray(a))
    a[...] = dense
    assert a.indices.tolist() == [0, 1, 2, 3]


# -- bad input -------------------------------------------------------------------------

@pytest.mark.parametrize("parts,shape,msg", [
    (([1., 2.], [0, 1], [0, 2, 1, 2]), (3, 3), r"indptr must be non-decreasing, but indptr\[1\]=2 > indptr\[2\]=1"),
    (([1., 2.], [0, 7], [0, 1, 2]), (2, 3), r"indices\[1\]=7 is out of range for 3 columns"),
    (([1., 2.], [0, 1], [0, 1, 2]), (3, 3), "indptr has length 3 but shape .* needs 4"),
    (([1., 2.], [0, 1], [1, 1, 2]), (2, 3), r"indptr\[0\]=1 must be 0"),
    (([1., 2.], [0, 1], [0, 1, 3]), (2, 3), r"indptr\[-1\]=3 must equal"),
    (([1., 2.], [0, 1], [0, -1, 2]), (2, 3), r"indptr\[1\]=-1 must not be negative"),
    # a column twice in a row (in any order); one row merely unsorted is valid to compute
    # with, as in MXNet (tests/test_not_supported_sites.py)
    (([1., 2.], [1, 1], [0, 2, 2]), (2, 3), r"column indices of row 0 must be sorted and unique.*"
                                            r"indices\[0\]=1 then indices\[1\]=1"),
])
def test_malformed_csr_is_created_and_check_format_names_the_problem(parts, shape, msg):
    # MXNet creates such an array and only check_format reports it; gpunda also
    # refuses to compute with it (MXNet would read out of bounds)
    arrays = [np.array(p) for p in parts]
    before = [a.copy() for a in arrays]
    a = nd.sparse.csr_matrix(tuple(arrays), shape=shape)
    for a_, b_ in zip(arrays, before):
        np.testing.assert_array_equal(a_, b_)      # inputs untouched
    with pytest.raises(GpundaError, match="check_format: " + msg):
        a.check_format()
    assert a.indptr.asnumpy().tolist() == list(parts[2])      # the parts stay readable
    for use in (a.asnumpy, a.asscipy, lambda: a * 2, lambda: a.copyto(mx.cpu(1)).asnumpy(),
                lambda: nd.sparse.array(a), lambda: a.copyto(nd.sparse.zeros("csr", shape)),
                lambda: a.tostype("default")):
        with pytest.raises(GpundaError, match="malformed"):
            use()
    a[:] = np.ones(shape, np.float32)       # assigning valid values repairs it
    a.check_format()
    np.testing.assert_array_equal(a.asnumpy(), np.ones(shape))


@pytest.mark.parametrize("parts,shape,msg", [
    (([1., 2., 3.], [0, 1], [0, 1, 2]), (2, 3), "data has length 3 but indices has length 2"),
    (([1., 2.], [0.5, 1], [0, 1, 2]), (2, 3), "indices must hold integers"),
])
def test_csr_parts_that_cannot_fit_are_refused(parts, shape, msg):
    with pytest.raises(GpundaError, match="csr_matrix: " + msg):
        nd.sparse.csr_matrix(tuple(np.array(p) for p in parts), shape=shape)


@pytest.mark.parametrize("make", [
    lambda: nd.sparse.csr_matrix(([1.], [0], [0, 1]), shape=(1, 2, 3)),   # shape not 2-D
    lambda: nd.sparse.csr_matrix(([[1.]], [0], [0, 1]), shape=(1, 2)),    # data not 1-D
    lambda: nd.sparse.csr_matrix(([1.], [0], []), shape=(1, 2)),          # empty indptr
    lambda: nd.sparse.csr_matrix((np.zeros(0), [], [0, 0])),             # nothing to infer from
    lambda: nd.sparse.row_sparse_array((np.zeros((0, 2)), [])),
    lambda: nd.sparse.row_sparse_array((np.zeros((1, 0)), [0]), shape=(3, 0)),
    lambda: nd.sparse.row_sparse_array(([[1.]], [[0]]), shape=(3, 1)),
    lambda: nd.sparse.csr_matrix((1, 2, 3, 4)),
    lambda: nd.sparse.row_sparse_array((1,)),
])
def test_invalid_shapes_are_value_errors(make):
    with pytest.raises(ValueError):          # MXNet: ValueError('invalid shape') and friends
        make()


@pytest.mark.parametrize("parts,shape,msg", [
    (([[1.], [2.]], [3, 1]), (4, 1), r"sorted ascending and unique.*indices\[0\]=3 is followed by 1"),
    (([[1.], [2.]], [1, 1]), (4, 1), r"sorted ascending and unique.*indices\[0\]=1 is followed by 1"),
    (([[1.], [2.]], [1, 4]), (4, 1), r"indices\[1\]=4 is out of range for 4 rows"),
    (([[1.], [2.]], [1, -2]), (4, 1), r"indices\[1\]=-2 is out of range for 4 rows"),
])
def test_malformed_row_sparse_is_created_and_check_format_names_it(parts, shape, msg):
    a = nd.sparse.row_sparse_array(parts, shape=shape)
    with pytest.raises(GpundaError, match="check_format: .*" + msg):
        a.check_format()
    a.check_format(full_check=False)        # the sizes fit
    with pytest.raises(GpundaError, match="malformed"):
        a + a


@pytest.mark.parametrize("parts,shape,msg", [
    (([[1.], [2.]], [1]), (4, 1), "data has 2 rows but indices has length 1"),
    (([[1., 2.]], [1]), (4, 1), r"data has shape \(1, 2\) but rows of an array of shape \(4, 1\)"),
])
def test_row_sparse_parts_that_cannot_fit_are_refused(parts, shape, msg):
    with pytest.raises(GpundaError, match="row_sparse_array: .*" + msg):
        nd.sparse.row_sparse_array(parts, shape=shape)


def test_shapes_are_inferred_as_mxnet_does():
    # csr: (len(indptr) - 1, max(indices) + 1); row_sparse: last row id + 1
    assert nd.sparse.csr_matrix(([1., 2.], [3, 1], [0, 1, 2])).shape == (2, 4)
    assert nd.sparse.row_sparse_array(([[1., 2.], [3., 4.]], [1, 5])).shape == (6, 2)
    r = nd.sparse.row_sparse_array(([[1., 2.], [3., 4.]], [3, 1]))       # unsorted: last id
    assert r.shape == (2, 2)
    with pytest.raises(GpundaError, match="out of range for 2 rows"):
        r.check_format()
    assert nd.sparse.row_sparse_array(([1., 2.], [1, 3])).shape == (4,)


def test_default_dtypes_and_contexts():
    ones = np.ones((2, 3))
    for f in (nd.sparse.csr_matrix, nd.sparse.row_sparse_array):
        assert f(ones).dtype == np.float64                   # NumPy source: its dtype
        assert f(nd.array(ones, dtype="float16")).dtype == np.float16
        assert f(ones.tolist()).dtype == np.float32           # list: float32
        a = f(ones, dtype="int32", ctx=mx.cpu(1))
        assert a.dtype == np.int32 and a.context == mx.cpu(1)
        np.testing.assert_array_equal(a.asnumpy(), ones)
        with mx.cpu(3):
            assert f(ones).context == mx.cpu(3)
            assert f((2, 3)).context == mx.cpu(3)
    assert nd.sparse.csr_matrix((np.int64([1, 2]), [0, 1], [0, 1, 2])).dtype == np.int64
    assert nd.sparse.csr_matrix(([1, 2], [0, 1], [0, 1, 2])).dtype == np.float32
    csr, rsp = nd.sparse.csr_matrix(ones), nd.sparse.row_sparse_array(ones)
    with pytest.raises(ValueError, match="RowSparseNDArray"):
        nd.sparse.csr_matrix(rsp)
    with pytest.raises(ValueError, match="CSRNDArray"):
        nd.sparse.row_sparse_array(csr)
    assert nd.sparse.csr_matrix(csr, dtype="int32").dtype == np.int32


def test_shape_mismatches():
    # MXNet's _check_shape: a given shape beside a source of another one is a ValueError
    msg = r"shape mismatch: shape=\(3, 3\) but the source has shape \(2, 2\)"
    for make in (lambda: nd.sparse.csr_matrix(np.ones((2, 2)), shape=(3, 3)),
                 lambda: nd.sparse.row_sparse_array(np.ones((2, 2)), shape=(3, 3)),
                 lambda: nd.sparse.csr_matrix((2, 2), shape=(3, 3)),
                 lambda: nd.sparse.row_sparse_array((2, 2), shape=(3, 3)),
                 lambda: nd.sparse.csr_matrix(sps.eye(2, format="csr"), shape=(3, 3))):
        with pytest.raises(ValueError, match=msg):
            make()
    with pytest.raises(ValueError, match="a dense source must be 2-D"):
        nd.sparse.csr_matrix(np.ones((2, 2, 2)))


def test_check_format_catches_corrupted_parts():
    from gpunda.ops.sparse.ops import CSRData, RSPData
    from gpunda.ndarray.sparse import _wrap
    bad = _wrap(CSRData(np.float32([1, 2]), np.int64([0, 5]), np.int64([0, 1, 2]), (2, 3)), mx.cpu())
    bad.check_format(full_check=False)          # sizes are fine
    with pytest.raises(GpundaError, match=r"check_format: indices\[1\]=5 is out of range"):
        bad.check_format()
    r = _wrap(RSPData(np.int64([2, 0]), np.ones((2, 1), np.float32), (3, 1)), mx.cpu())
    with pytest.raises(GpundaError, match="check_format: row_sparse indices must be sorted"):
        r.check_format()


@pytest.mark.gpu
def test_gpu_creation_and_conversion(rng):
    d = _dense_with_zero_rows(rng)
    for st in ("csr", "row_sparse"):
        x = nd.array(d, ctx=mx.gpu(0)).tostype(st)
        assert x.context == mx.gpu(0) and x.stype == st
        np.testing.assert_array_equal(x.asnumpy(), d)
        y = x.copyto(mx.cpu())
        np.testing.assert_array_equal(y.asnumpy(), d)
        assert y.copyto(mx.gpu(0)).stype == st
    c = nd.sparse.csr_matrix(sps.csr_matrix(d), ctx=mx.gpu(0))
    np.testing.assert_array_equal(c.asscipy().toarray(), d)
