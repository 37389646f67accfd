"""MXNet 1.9.1's private module-level helpers (issue 28: the module surface) do what
MXNet's do. Expected values were recorded by running the same calls on real MXNet 1.9.1."""
import ctypes
import gc
import inspect

import numpy as np
import pytest

import gpunda as mx
from gpunda.ndarray import ndarray as n


def test_slice_helpers_match_mxnet():
    assert n._get_index_range(None, None, 5, -1) == (4, -1, -1)
    assert n._get_index_range(-7, 10, 5) == (0, 5, 1)
    assert n._get_index_range(2, -1, 5, 2) == (2, 4, 2)
    with pytest.raises(ValueError):
        n._get_index_range(0, 1, 5, 0)
    assert (n._get_dim_size(4, -1, -1), n._get_dim_size(0, 5, 2), n._get_dim_size(3, 3, 1)) \
        == (5, 3, 0)
    with pytest.raises(AssertionError):
        n._get_dim_size(5, 0, 1)
    assert n._get_slice_len(slice(1, None, 3), 10) == 3
    assert n._get_slice_len(slice(None, None, -2), 7) == 4
    assert n._int_to_slice(-1) == slice(-1, None) and n._int_to_slice(2) == slice(2, 3)
    for i in range(-4, 4):     # the slice selects what the integer selects
        assert list(range(4))[n._int_to_slice(i)] == [list(range(4))[i]]


def test_broadcast_and_index_kind_helpers_match_mxnet():
    assert n._get_broadcast_shape((2, 1, 3), (4, 1)) == (2, 4, 3)
    assert n._get_broadcast_shape((2, 1, 3), (4, 1)) == np.broadcast_shapes((2, 1, 3), (4, 1))
    with pytest.raises(ValueError, match="not broadcastable"):
        n._get_broadcast_shape((2,), (3,))
    assert n._broadcast_shapes([mx.nd.ones((3, 1)), mx.nd.ones((1, 4))]) == (3, 4)
    assert n._shape_for_bcast((3, 4), 4, [0, 2]) == (1, 3, 1, 4)
    assert n._shape_for_bcast((5,), 3, [1]) == (1, 1, 5)
    assert [n._is_advanced_index(x) for x in (1, [1], slice(1), None, range(2), mx.nd.ones(1))] \
        == [True, True, False, False, True, True]
    with pytest.raises(mx.MXNetError, match="illegal index type"):
        n._is_advanced_index(1.5)
    with pytest.raises(IndexError, match="along axis 2; size is 4 but corresponding boolean "
                                         "size is 5"):
        n.check_boolean_array_dimension((2, 3, 4), 1, (3, 5))
    n.check_boolean_array_dimension((2, 3, 4), 1, (3, 4))
    assert (n._NDARRAY_NO_ZERO_DIM_BOOL_ARRAY, n._NDARRAY_ZERO_DIM_BOOL_ARRAY_FALSE,
            n._NDARRAY_ZERO_DIM_BOOL_ARRAY_TRUE) == (-1, 0, 1)


def test_handles_storage_type_and_ufunc_helper():
    a = n.NDArray(n._new_alloc_handle((2, 3), mx.cpu(), False, "int32"))
    assert a.shape == (2, 3) and a.dtype == np.int32
    assert n._storage_type(mx.nd.ones(2).handle) == 0
    assert n._storage_type(mx.nd.sparse.zeros("csr", (2, 2)).handle) == 2
    assert n._ufunc_helper(2, 3, None, lambda x, y: x * y, None) == 6
    out = n._ufunc_helper(mx.nd.ones(2), 3, None, None, lambda x, y: x + y)
    np.testing.assert_array_equal(out.asnumpy(), [4., 4.])
    assert n._ufunc_helper(2, mx.nd.ones(1), None, None, lambda x, s: ("l", s),
                           lambda x, s: ("r", s)) == ("r", 2.0)
    with pytest.raises(TypeError):
        n._ufunc_helper(mx.nd.ones(1), "x", None, None, None)
    assert mx.nd._GRAD_REQ_MAP == {"null": 0, "write": 1, "add": 3}
    # mx.nd re-exports these as MXNet's ndarray/__init__.py does (same objects)
    assert mx.nd._DTYPE_NP_TO_MX is n._DTYPE_NP_TO_MX and mx.nd._DTYPE_NP_TO_MX[np.float16] == 2
    assert mx.nd._DTYPE_MX_TO_NP is n._DTYPE_MX_TO_NP
    assert mx.nd._ndarray_cls is mx.nd.sparse._ndarray_cls
    from gpunda.runtime import Features
    assert n._int64_enabled() is n._INT64_TENSOR_SIZE_ENABLED is True
    assert Features().is_enabled("INT64_TENSOR_SIZE") is n._int64_enabled()


def test_dlpack_structures_have_mxnets_layout_and_deleter_frees_once():
    assert ctypes.sizeof(n.DLTensor) == 48 and ctypes.sizeof(n.DLManagedTensor) == 64
    assert ctypes.sizeof(n.DLDataType) == 4 and n.DLDataType.TYPE_MAP["float16"] == (2, 16, 1)
    assert (n._c_str_dltensor.value, n._c_str_used_dltensor.value) == (b"dltensor",
                                                                        b"used_dltensor")
    # a DLPack capsule nobody imported: the deleter runs once, and the capsule is then used
    calls = []
    managed = n.DLManagedTensor()
    cb = ctypes.CFUNCTYPE(None, ctypes.POINTER(n.DLManagedTensor))(lambda p: calls.append(1))
    managed.deleter = cb
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                  ctypes.c_void_p]
    cap = new(ctypes.addressof(managed), b"dltensor", None)
    n._dlpack_deleter(id(cap))
    n._dlpack_deleter(id(cap))
    assert calls == [1]
    with pytest.raises(mx.MXNetError):
        mx.nd.from_dlpack(cap)


def test_contrib_helpers_match_mxnet():
    from gpunda.ndarray import contrib as c
    flat, fmt = c._flatten([mx.nd.ones(1), [mx.nd.ones(1), mx.nd.ones(1)]], "x")
    assert len(flat) == 3 and fmt == [0, [0, 0]]
    assert c._regroup([1, 2, 3, 4], [0, [0, 0]]) == ([1, [2, 3]], [4])
    assert c._flatten_list([[1, 2], [3]]) == [1, 2, 3]
    r = c._get_rescale_grad(0.5)
    assert r.asnumpy().tolist() == [0.5] and r.context == mx.cpu() and r.dtype == np.float32


def test_sparse_helpers_match_mxnet():
    from gpunda.ndarray import sparse as sp
    assert sp._STORAGE_AUX_TYPES == {"row_sparse": [np.int64], "csr": [np.int64, np.int64]}
    assert sp._prepare_default_dtype([1, 2], None) == np.float32
    assert sp._prepare_default_dtype(np.ones(2, dtype="int8"), None) == np.int8
    assert isinstance(sp._prepare_src_array([1, 2], "float64"), np.ndarray)
    cs = sp._csr_matrix_from_definition([1., 2.], [0, 2], [0, 1, 1, 2])
    assert cs.shape == (3, 3) and cs.asnumpy().tolist() == [[1, 0, 0], [0, 0, 0], [0, 0, 2]]
    rs = sp._row_sparse_ndarray_from_definition([[1, 2], [3, 4]], [1, 3])
    assert rs.shape == (4, 2) and rs.dtype == np.float32
    assert rs.asnumpy().tolist() == [[0, 0], [1, 2], [0, 0], [3, 4]]
    with pytest.raises(NotImplementedError, match="only int64"):
        sp._csr_matrix_from_definition([1.], [0], [0, 1], indices_type="int32")
    with pytest.raises(ValueError, match=r"Shape mismatch detected. \(2, 3\) v.s. \(3, 2\)"):
        sp._check_shape((2, 3), (3, 2))
    h = sp._new_alloc_handle("row_sparse", (3, 2), mx.cpu(), False, "float32", ["int64"])
    z = sp._ndarray_cls(h)
    assert type(z) is sp.RowSparseNDArray and z.asnumpy().tolist() == [[0, 0]] * 3
    dense = sp._ndarray_cls(mx.nd.ones((2,)).handle)
    assert type(dense) is mx.nd.NDArray
    with pytest.raises(mx.MXNetError):
        sp._ndarray_cls(mx.nd.ones((2,)).handle, stype=2)


def test_register_helpers():
    from gpunda.ndarray import register as rg
    with pytest.raises(TypeError):
        rg._verify_all_np_ndarrays("_npi_add", "add", [mx.nd.ones(1)], None)
    rg._verify_all_np_ndarrays("_npi_add", "add", [mx.np.ones(1), None], mx.np.ones(1))
    rg._verify_all_legacy_ndarrays("x", "x", [mx.nd.ones(1)], None)
    with pytest.raises(TypeError):
        rg._verify_all_legacy_ndarrays("x", "x", [mx.nd.ones(1)], [mx.np.ones(1)])
    f = rg._make_ndarray_function(None, "_plus_scalar", "plus_s")
    assert f.__name__ == "plus_s"
    assert f(mx.nd.ones(2), scalar=3).asnumpy().tolist() == [4, 4]


def test_random_helpers_dispatch_as_mxnet():
    from gpunda.ndarray import random as nr
    from gpunda.symbol import random as sr
    from gpunda.base import _Null
    seen = nr._random_helper(lambda *p, **k: k, None, [0, 1], _Null, None, None, None, {})
    assert seen["shape"] == 1 and seen["ctx"] == mx.current_context()      # MXNet: shape 1
    arr = nr._random_helper(None, lambda *p, **k: p, [mx.nd.ones(1), mx.nd.ones(1)], (2,),
                            None, None, None, {})
    assert len(arr) == 2
    with pytest.raises(AssertionError):
        nr._random_helper(None, None, [mx.nd.ones(1), 1], None, None, None, None, {})
    with pytest.raises(ValueError):
        sr._random_helper(None, None, ["a"], None, None, {})
    s = mx.sym.Variable("s")
    assert sr._random_helper(None, lambda *p, **k: "sampler", [s, s], None, None, {}) == "sampler"


def test_np_helpers_match_mxnet():
    from gpunda.numpy import multiarray as ma, stride_tricks as stt, utils as u
    assert stt._broadcast_shape(mx.np.ones((2, 1)), mx.np.ones((3,))) == (2, 3)
    assert u._get_np_op("solve") is np.linalg.solve and u._ONP_OP_MODULES[0] is np
    with pytest.raises(ValueError):
        u._get_np_op("no_such_numpy_function")
    assert mx.np._STR_2_DTYPE_ is u._STR_2_DTYPE_
    x = mx.np.arange(6)
    v = ma._reshape_view(x, 2, 3)
    v[0, 0] = 7
    assert x.asnumpy().tolist() == [7, 1, 2, 3, 4, 5] and v.shape == (2, 3)
    assert type(v) is mx.np.ndarray
    vals, ctx = ma._as_onp_array([mx.np.ones(2, ctx=mx.cpu()), 3])
    assert isinstance(vals[0], np.ndarray) and vals[1] == 3 and ctx == mx.cpu()
    y = ma._as_mx_np_array(np.arange(3.))
    assert type(y) is mx.np.ndarray and y.dtype == np.float64
    z = ma._np_ndarray_cls(ma._new_alloc_handle((2,), mx.cpu(), False, "float32"))
    assert type(z) is mx.np.ndarray and z.shape == (2,)
    with pytest.raises(ValueError):
        ma._np_ndarray_cls(mx.nd.sparse.zeros("csr", (2, 2)).handle, stype=-1)


def test_np_ufunc_helpers():
    from gpunda.numpy import _op
    from gpunda.symbol import numpy as sym_np
    assert _op._ufunc_helper(2, 3, None, lambda a, b, out=None: a - b, None) == -1
    got = _op._ufunc_helper(mx.np.ones(2), mx.np.ones(2), lambda a, b, out=None: "arrays",
                            None, None)
    assert got == "arrays"
    assert _op._unary_func_helper(4.0, None, lambda x: x + 1) == 5.0
    with pytest.raises(TypeError):
        _op._unary_func_helper("s", None, None)
    s = mx.sym.var("s").as_np_ndarray()
    assert sym_np._ufunc_helper(s, 2, None, None, lambda x, scalar, is_int, out: (
        scalar, is_int)) == (2.0, True)
    assert sym_np._unary_func_helper(s, lambda x, out=None: "sym", None) == "sym"


def test_numpy_op_doc_gives_mxnets_signatures():
    import gpunda.numpy_op_signature  # noqa: F401  (sets the signatures)
    assert str(inspect.signature(mx.np.copy)) == "(a, out=None)"
    assert str(inspect.signature(mx.np.random.shuffle)) == "(x)"
    assert str(inspect.signature(mx.npx.constraint_check)) == "(x, msg)"
    assert str(inspect.signature(mx.npx.reshape)) == "(a, newshape, reverse=False, order='C')"
    a, o = mx.np.array([1, 2, 3]), mx.np.zeros(3)
    assert mx.np.copy(a, out=o) is o and o.asnumpy().tolist() == [1, 2, 3]


def test_autograd_parse_head_and_scope():
    from gpunda import autograd as ag
    x = mx.nd.ones(2)
    hh, gg = ag._parse_head(x, None)
    assert len(hh) == 1 and isinstance(gg, ctypes.c_void_p) and gg.value is None
    g = mx.nd.ones(2) * 3
    hh, gg = ag._parse_head([x], [g])
    assert mx.nd.NDArray(handle=ctypes.c_void_p(gg[0])).asnumpy().tolist() == [3, 3]
    with pytest.raises(mx.MXNetError):
        ag._parse_head([x, x], [g])
    with ag._RecordingStateScope(True, False):
        assert ag.is_recording() and not ag.is_training()
    assert not ag.is_recording()


def test_operator_registry_holds_live_custom_ops():
    from gpunda import operator as op
    assert op._STORAGE_TYPE_ID_TO_STR == {-1: "undefined", 0: "default", 1: "row_sparse",
                                          2: "csr"}
    assert isinstance(op._registry, op._Registry)

    class Twice(op.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

    @op.register("h28e_twice")
    class TwiceProp(op.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Twice()

    before = op._registry.counter
    y = mx.nd.Custom(mx.nd.ones(2), op_type="h28e_twice")
    assert y.asnumpy().tolist() == [2, 2]
    assert op._registry.counter >= before + 2      # the prop and the op instance
    held = [v for v in op._registry.ref_holder.values() if isinstance(v, Twice)]
    assert held
    del y, held
    gc.collect()
    assert not [v for v in op._registry.ref_holder.values() if isinstance(v, Twice)]


def test_util_flags_and_sanity_check(caplog):
    from gpunda import util
    assert util._CUDA_SUCCESS == 0
    with pytest.raises(NotImplementedError, match="function f does not support parameter out"):
        util._sanity_check_params("f", ["out"], {"out": 1})
    util._sanity_check_params("f", ["out"], {})
    util._set_np_shape_logged = False
    prev = util.set_np_shape(True)
    try:
        assert util._set_np_shape_logged is True
    finally:
        util.set_np_shape(prev)


@pytest.mark.parametrize("module,name", [
    ("gpunda.ndarray._internal", "_imperative_invoke"),
    ("gpunda.ndarray._internal", "_set_ndarray_class"),
    ("gpunda.ndarray._internal", "_set_np_ndarray_class"),
    ("gpunda.symbol._internal", "_set_symbol_class"),
    ("gpunda.symbol._internal", "_set_np_symbol_class"),
    ("gpunda.symbol._internal", "_symbol_creator"),
    ("gpunda.ndarray.register", "_generate_ndarray_function_code"),
    ("gpunda.ndarray.ndarray", "_new_from_shared_mem"),
    ("gpunda.ndarray", "_new_empty_handle")])
def test_c_library_names_are_stubs_that_say_so(module, name):
    import functools
    import operator
    parts = module.split(".")
    obj = functools.reduce(getattr, parts[1:], mx)
    with pytest.raises(mx.MXNetError, match="not supported"):
        fn = operator.attrgetter(name)(obj)
        fn(*(() if name == "_new_empty_handle" else (1, 2, 3, 4)))


def test_base_classes_are_gpundas():
    assert isinstance(mx.np.ones(1), mx.nd._internal.NDArrayBase)
    assert isinstance(mx.nd.ones(1), mx.nd.op.NDArrayBase)
    assert isinstance(mx.sym.var("a"), mx.sym._internal.SymbolBase)
    c = mx.nd._internal.CachedOp(mx.sym.var("a") * 2)
    assert c(mx.nd.ones(2)).asnumpy().tolist() == [2, 2]
    assert mx.nd.op.CachedOp is c.__class__
