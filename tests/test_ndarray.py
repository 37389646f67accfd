"""Dense NDArray: creation, properties, conversion, indexing and operators vs NumPy."""
import pickle

import numpy as np
import pytest

import gpunda as mx
from gpunda import nd


def test_creation_defaults_and_dtypes():
    a = nd.array([[1, 2, 3], [4, 5, 6]])
    assert a.shape == (2, 3) and a.dtype == np.float32 and a.size == 6 and a.ndim == 2
    assert a.context == mx.current_context() == a.ctx
    assert nd.array(np.arange(3, dtype=np.int64)).dtype == np.float32  # MXNet 1.x: float32
    assert nd.array(np.arange(3), dtype="int64").dtype == np.int64
    assert nd.array(nd.array([1], dtype="int32")).dtype == np.int32     # NDArray keeps its dtype
    assert nd.array([1, 2], dtype="float16").dtype == np.float16
    assert nd.zeros((2, 3)).asnumpy().tolist() == [[0] * 3] * 2
    assert nd.ones(4, dtype="int32").asnumpy().tolist() == [1] * 4
    assert nd.full((2,), 7.5).asnumpy().tolist() == [7.5, 7.5]
    assert nd.empty((3, 0)).shape == (3, 0)
    np.testing.assert_array_equal(nd.arange(2, 11, 3).asnumpy(), np.arange(2, 11, 3, dtype=np.float32))
    np.testing.assert_array_equal(nd.arange(3, repeat=2).asnumpy(), [0, 0, 1, 1, 2, 2])
    z = nd.zeros_like(a)
    o = nd.ones_like(a)
    assert z.shape == o.shape == (2, 3) and o.asnumpy().sum() == 6
    assert nd.zeros((2,), ctx=mx.cpu(1)).context == mx.cpu(1)


@pytest.mark.parametrize("bad", ["float", "floatt", "complex64", "str"])
def test_bad_dtype_names(bad):
    if bad == "float":      # MXNet accepts 'float' as float32
        assert nd.zeros((1,), dtype=bad).dtype == np.float32
        return
    with pytest.raises(mx.GpundaError, match=repr(bad)):
        nd.zeros((1,), dtype=bad)


@pytest.mark.parametrize("shape", [(-1, 2), (2.5,), ("a",), (True,)])
def test_bad_shapes(shape):
    with pytest.raises(mx.GpundaError, match="shape"):
        nd.zeros(shape)


def test_conversion_and_copies():
    src = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = nd.array(src)
    src[0, 0] = 100                    # array() copied
    assert a.asnumpy()[0, 0] == 0
    h = a.asnumpy()
    h[0, 1] = 50                        # asnumpy copied
    assert a.asnumpy()[0, 1] == 1
    assert nd.array([3.5]).asscalar() == np.float32(3.5)
    with pytest.raises(mx.GpundaError, match="size-1"):
        a.asscalar()
    b = a.copy()
    b[:] = 0
    assert a.asnumpy().sum() == 15
    c = nd.zeros((2, 3))
    a.copyto(c)
    np.testing.assert_array_equal(c.asnumpy(), a.asnumpy())
    with pytest.raises(mx.GpundaError, match="shape"):
        a.copyto(nd.zeros((3, 2)))
    d = a.copyto(mx.cpu(1))
    assert d.context == mx.cpu(1) and d.asnumpy().sum() == 15
    assert a.as_in_context(a.context) is a
    e = a.astype("int32")
    assert e.dtype == np.int32 and e.asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert a.astype(np.float32, copy=False) is a
    np.testing.assert_array_equal(np.asarray(a), a.asnumpy())
    assert np.asarray(a, dtype=np.float64).dtype == np.float64



def test_copyto_between_overlapping_views_and_across_dtypes():
    # MXNet 1.9.1's observed results: the copy reads the source as it was before
    a = nd.arange(10)
    a[1:].copyto(a[:-1])
    assert a.asnumpy().tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 9]
    b = nd.arange(10)
    b[:-1].copyto(b[1:])
    assert b.asnumpy().tolist() == [0, 0, 1, 2, 3, 4, 5, 6, 7, 8]
    c = nd.zeros((3,), dtype="int32")
    nd.array([1.7, 2.2, -3.9]).copyto(c)
    assert c.dtype == np.int32 and c.asnumpy().tolist() == [1, 2, -3]
    src = nd.array([[1, 2], [3, 4]])
    dst = nd.zeros((2, 2))
    src.copyto(dst)
    src[:] = 0                          # the target holds a copy, not a view
    assert dst.asnumpy().tolist() == [[1, 2], [3, 4]]

def test_pickle_round_trip():
    a = nd.array([[1.5, -2.0]], dtype="float64")
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == np.float64 and b.context == a.context
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())


def test_repr_like_mxnet():
    a = nd.array([[1, 2, 3], [4, 5, 6]])
    r = repr(a)
    assert r.endswith(f"<NDArray 2x3 @{mx.current_context()}>") and r.startswith("\n[[1. 2. 3.]")
    a.wait_to_read()
    nd.waitall()


def test_dlpack_zero_copy_with_numpy():
    a = nd.array([1.0, 2.0, 3.0], ctx=mx.cpu())    # NumPy imports CPU memory only
    view = np.from_dlpack(a)
    a[1] = 20
    assert view[1] == 20                      # shares memory
    host = np.arange(4, dtype=np.float32)
    b = nd.from_dlpack(host)   # CPU memory stays on the CPU
    host[0] = 9
    assert b.asnumpy()[0] == 9
    b[1] = 7
    assert host[1] == 7
    assert a.__dlpack_device__()[0] == 1


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    t = torch.arange(4, dtype=torch.float32)
    a = nd.from_dlpack(t)
    t[0] = 5
    assert a.asnumpy()[0] == 5
    back = torch.from_dlpack(a)
    a[1] = 8
    assert back[1].item() == 8


def test_basic_indexing_reads_and_views():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = nd.array(x)
    np.testing.assert_array_equal(a[1].asnumpy(), x[1])
    np.testing.assert_array_equal(a[:, 1:3].asnumpy(), x[:, 1:3])
    np.testing.assert_array_equal(a[..., ::2].asnumpy(), x[..., ::2])
    np.testing.assert_array_equal(a[1, 2].asnumpy(), x[1, 2])
    assert a[1, 2, 3].shape == (1,)       # legacy mode: no 0-d arrays
    with mx.util.np_shape(True):
        assert a[1, 2, 3].shape == ()
    v = a[0]
    v[:] = -1                              # first-axis slices are views, as in MXNet
    assert a.asnumpy()[0].sum() == -12
    with pytest.raises(mx.GpundaError, match="does not fit"):
        a[5]


def test_reshape_is_a_view_like_mxnet():
    a = nd.arange(12).reshape((3, 4))
    v = a.reshape((-1,))[:6].reshape((2, 3))   # MXNet codes and a first-axis slice
    v[:] = 7
    np.testing.assert_array_equal(a.asnumpy().ravel(), [7] * 6 + list(range(6, 12)))
    np.testing.assert_array_equal(a.reshape(0, -1).asnumpy(), a.asnumpy())
    assert a.reshape((-3,)).shape == (12,) and a.reshape(-1, 3, reverse=True).shape == (4, 3)
    with pytest.raises(mx.base.GpundaError, match=r"Reshape.*\(5, 5\)"):
        a.reshape((5, 5))


def test_reshape_while_recording_is_differentiable():
    x = nd.array(np.arange(6.0), dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = (x.reshape((2, 3)) * nd.array([[1.0], [2.0]], dtype="float64")).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [1, 1, 1, 2, 2, 2])


def test_advanced_indexing():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = nd.array(x)
    idx = nd.array([2, 0])
    np.testing.assert_array_equal(a[idx].asnumpy(), x[[2, 0]])
    np.testing.assert_array_equal(a[[0, 2], [1, 3]].asnumpy(), x[[0, 2], [1, 3]])
    np.testing.assert_array_equal(a[:, [3, 0]].asnumpy(), x[:, [3, 0]])


def test_assignment():
    a = nd.zeros((3, 4))
    a[1] = 5
    a[:, 2] = nd.array([1, 2, 3])
    a[0, 0:2] = np.array([7, 8])
    a[[2, 2], [0, 1]] = 9
    expected = np.zeros((3, 4), np.float32)
    expected[1] = 5
    expected[:, 2] = [1, 2, 3]
    expected[0, 0:2] = [7, 8]
    expected[2, 0:2] = 9
    np.testing.assert_array_equal(a.asnumpy(), expected)
    with pytest.raises(mx.GpundaError):
        a[:, 0] = nd.ones((5,))
    np.testing.assert_array_equal(a.asnumpy(), expected)   # unchanged after a failed write


BIN = [("+", np.add), ("-", np.subtract), ("*", np.multiply), ("/", np.divide),
       ("**", np.power), ("%", np.mod)]


@pytest.mark.parametrize("sym, ref", BIN)
@pytest.mark.parametrize("sa, sb", [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)),
                                    ((4, 1, 2), (3, 1))])
def test_binary_broadcast_matches_numpy(rng, sym, ref, sa, sb):
    x = rng.uniform(0.5, 2, sa).astype(np.float32)
    y = rng.uniform(0.5, 2, sb).astype(np.float32)
    r = eval(f"a {sym} b", {"a": nd.array(x), "b": nd.array(y)})
    np.testing.assert_allclose(r.asnumpy(), ref(x, y), rtol=1e-5)
    assert r.dtype == np.float32


@pytest.mark.parametrize("sym, ref", BIN)
def test_scalars_on_either_side(rng, sym, ref):
    x = rng.uniform(0.5, 2, (3,)).astype(np.float32)
    a = nd.array(x)
    np.testing.assert_allclose(eval(f"a {sym} 1.5").asnumpy(), ref(x, np.float32(1.5)), rtol=1e-5)
    np.testing.assert_allclose(eval(f"1.5 {sym} a").asnumpy(), ref(np.float32(1.5), x), rtol=1e-5)


def test_integer_arrays_keep_dtype_with_scalars():
    a = nd.array([1, 2, 3], dtype="int32")
    assert (a + 1).dtype == np.int32 and (a * 2).asnumpy().tolist() == [2, 4, 6]
    assert (a + 1.5).dtype == np.int32    # MXNet casts the scalar to the array dtype


@pytest.mark.parametrize("sym, ref", [("==", np.equal), ("!=", np.not_equal), (">", np.greater),
                                      (">=", np.greater_equal), ("<", np.less),
                                      ("<=", np.less_equal)])
def test_comparisons_give_input_dtype(sym, ref):
    x = np.array([[1, 2, 3]], np.float32)
    y = np.array([[2], [2]], np.float32)
    r = eval(f"a {sym} b", {"a": nd.array(x), "b": nd.array(y)})
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r.asnumpy(), ref(x, y).astype(np.float32))
    r2 = eval(f"a {sym} 2", {"a": nd.array(x)})
    np.testing.assert_array_equal(r2.asnumpy(), ref(x, 2).astype(np.float32))


def test_unary_operators_and_inplace():
    x = np.array([-1.5, 2.0], np.float32)
    a = nd.array(x)
    np.testing.assert_array_equal((-a).asnumpy(), -x)
    np.testing.assert_array_equal(abs(a).asnumpy(), np.abs(x))
    b = a.copy()
    ident = id(b)
    b += 1
    b *= nd.array([2.0, 3.0])
    b -= 0.5
    b /= 2
    assert id(b) == ident
    np.testing.assert_allclose(b.asnumpy(), ((x + 1) * [2, 3] - 0.5) / 2)
    c = nd.ones((2, 3))
    c += nd.array([1.0, 2.0, 3.0])          # broadcasting in place
    np.testing.assert_array_equal(c.asnumpy()[1], [2, 3, 4])
    with pytest.raises(mx.GpundaError, match="out\\[0\\] has shape"):
        d = nd.ones((3,))
        d += nd.ones((2, 3))
    np.testing.assert_array_equal(d.asnumpy(), [1, 1, 1])


def test_mismatched_broadcast_names_op_and_shapes():
    with pytest.raises(mx.GpundaError) as e:
        nd.ones((2, 3)) + nd.ones((4,))
    msg = str(e.value)
    assert "broadcast_add" in msg and "(2, 3)" in msg and "(4,)" in msg


def test_non_ndarray_input_is_named():
    with pytest.raises(mx.GpundaError, match="input rhs must be an NDArray"):
        nd.broadcast_add(nd.ones((2,)), [1, 2])


def test_bool_len_iter():
    assert bool(nd.array([1.0])) and not bool(nd.array([0.0]))
    with pytest.raises(mx.GpundaError, match="ambiguous"):
        bool(nd.ones((2,)))
    a = nd.array([[1, 2], [3, 4]])
    assert len(a) == 2 and [r.asnumpy().tolist() for r in a] == [[1, 2], [3, 4]]


# -- MXNet 1.9.1 behaviours of the NDArray surface ---------------------------------------

def test_python_exceptions_where_mxnet_raises_them():
    with pytest.raises(ValueError, match="not a scalar"):
        mx.nd.ones((2,)).asscalar()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.nd.ones((2, 3)))
    with pytest.raises(ValueError):
        mx.nd.ones((2, 3, 5)).reshape((2, 3))          # MXNet issue 18886
    with pytest.raises(mx.MXNetError):                  # still a GpundaError too
        mx.nd.ones((2,)).asscalar()
    assert not bool(mx.nd.array([])) and bool(mx.nd.ones((1,)))


def test_inplace_flatten_squeeze_expand_dims_are_views():
    x = mx.nd.array(np.arange(6.0).reshape(2, 1, 3))
    views = [x.flatten(inplace=True), x.squeeze(axis=1, inplace=True),
             x.expand_dims(0, inplace=True)]
    copies = [x.flatten(), x.squeeze(axis=1), x.expand_dims(0)]
    assert [v.shape for v in views] == [(2, 3), (2, 3), (1, 2, 1, 3)]
    x[0] = -1
    for v in views:
        assert v.asnumpy().reshape(-1)[0] == -1
    for c in copies:
        assert c.asnumpy().reshape(-1)[0] == 0


def test_fluent_methods_of_variadic_ops():
    x = mx.nd.array(np.random.default_rng(0).standard_normal((2, 6)))
    for name in ("softmax", "log_softmax", "softmin"):
        np.testing.assert_allclose(getattr(x, name)(axis=0).asnumpy(),
                                   getattr(mx.nd, name)(x, axis=0).asnumpy())
    assert [p.shape for p in x.split_v2(3, axis=1)] == [(2, 2)] * 3
    assert x.reshape_like(rhs=mx.nd.ones((3, 4))).shape == (3, 4)


def test_pickle_state_is_mxnets_record():
    a = mx.nd.array([[1, 2], [3, 4]])
    # the bytes MXNet 1.9.1's __getstate__ gives for this array
    want = (b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"
            b"\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
            b"\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@")
    assert a.__getstate__() == {"handle": bytearray(want)}
    b = mx.nd.zeros((1,))
    b.__setstate__({"handle": bytearray(want)})
    assert b.asnumpy().tolist() == [[1, 2], [3, 4]] and b.dtype == np.float32
    import pickle
    c = pickle.loads(pickle.dumps(mx.nd.array([1, 2], dtype="int64")))
    assert c.dtype == np.int64 and c.asnumpy().tolist() == [1, 2]


def test_setstate_of_a_gpu_array_without_a_gpu_lands_on_the_cpu():
    # state of mx.nd.arange(1, ctx=mx.gpu()) (MXNet's test_ndarray)
    state = {"handle": bytearray(
        b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"
        b"\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")}
    a = mx.nd.arange(1)
    a.__setstate__(state)
    assert a.asnumpy().tolist() == [0.0]
    if mx.num_gpus() == 0:
        assert a.context == mx.cpu()


def test_module_constants_of_mxnet_ndarray_ndarray():
    m = mx.nd.ndarray
    assert m.py_slice is slice
    assert m._STORAGE_TYPE_STR_TO_ID == {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
    assert m._STORAGE_TYPE_ID_TO_STR[2] == "csr"
    assert m._GRAD_REQ_MAP == {"null": 0, "write": 1, "add": 3}
    assert m._DTYPE_NP_TO_MX[np.float32] == 0 and m._DTYPE_NP_TO_MX[np.int64] == 6
    assert m._DTYPE_MX_TO_NP[7] is np.bool_ and m._DTYPE_MX_TO_NP[-1] is None
    assert mx.np_shape is mx.util.np_shape and mx.is_np_shape() is False


def test_more_misuse_raises_the_python_exception_mxnet_raises():
    # each checked on MXNet 1.9.1
    x = mx.nd.ones((2, 3))
    for f, exc in ((lambda: int(x), TypeError), (lambda: float(x), TypeError),
                   (lambda: x.astype("notatype"), TypeError), (lambda: x[::0], ValueError),
                   (lambda: x.broadcast_to((4, 4)), ValueError),
                   (lambda: x.copyto("cpu"), TypeError), (lambda: mx.nd.array("abc"), TypeError),
                   (lambda: x == "a", TypeError), (lambda: x != "a", TypeError),
                   (lambda: x.__iadd__("s"), TypeError)):
        with pytest.raises(exc):
            f()
    assert (x == None) is False and (x != None) is True     # noqa: E711 (MXNet's rule)
    assert int(x[0, 0]) == 1 and float(x[1, 2]) == 1.0


def test_mxnet_ndarray_ndarray_all_names_exist():
    m = mx.nd.ndarray
    for name in ("NDArray", "concatenate", "_DTYPE_NP_TO_MX", "_DTYPE_MX_TO_NP", "_GRAD_REQ_MAP",
                 "ones", "add", "arange", "linspace", "eye", "divide", "equal", "full", "greater",
                 "greater_equal", "imdecode", "lesser", "lesser_equal", "logical_and",
                 "logical_or", "logical_xor", "maximum", "minimum", "moveaxis", "modulo",
                 "multiply", "not_equal", "onehot_encode", "power", "subtract", "true_divide",
                 "waitall", "_new_empty_handle", "histogram", "split_v2", "to_dlpack_for_read",
                 "to_dlpack_for_write", "from_dlpack", "from_numpy", "zeros",
                 "indexing_key_expand_implicit_axes", "get_indexing_dispatch_code",
                 "get_oshape_of_gather_nd_op"):      # MXNet 1.9.1's __all__
        assert name in m.__all__ and hasattr(m, name), name
    with pytest.raises(mx.base.NotImplementedForGpunda, match="not supported: "):
        m._new_empty_handle()


@pytest.mark.parametrize("make", [lambda s: nd.zeros(s), lambda s: nd.ones(s),
                                  lambda s: nd.full(s, 2.0)])
def test_unknown_legacy_shapes_need_np_shape(make):
    # MXNet 1.9.1: () and 0 dimensions are unknown sizes to _zeros/_ones/_full outside np_shape
    for shape in [(), (0, 1, 3, 0)]:
        with pytest.raises(mx.MXNetError, match="unknown outside mx.np_shape"):
            make(shape)
    with mx.np_shape():
        assert make(()).shape == () and make((0, 4)).shape == (0, 4)
    assert nd.empty((0,)).shape == (0,)


def test_broadcast_methods_line_up_trailing_axes():
    # MXNet 1.9.1's NDArray.broadcast_to / broadcast_like methods prepend axes of length 1
    # (the ops do not); answers recorded from MXNet 1.9.1
    a = mx.nd.array(np.arange(4))
    b = mx.nd.zeros((2, 3, 4))
    r = a.broadcast_like(b)
    assert r.shape == (2, 3, 4) and r[1, 2].asnumpy().tolist() == [0, 1, 2, 3]
    c = mx.nd.array(np.arange(3)).reshape((3, 1)).broadcast_like(b)
    assert c[0, :, 0].asnumpy().tolist() == [0, 1, 2]
    assert mx.nd.array([[1], [2]]).broadcast_to((3, 2, 2)).asnumpy().tolist() == \
        [[[1, 1], [2, 2]]] * 3
    assert a.broadcast_to((0, 4)).shape == (1, 4)      # the op's 0: keep the size
    for src, shape in [((4,), (2, 3)), ((1, 1, 4), (3, 4)), ((1, 4), (3, 0))]:
        with pytest.raises(ValueError, match="broadcast"):
            mx.nd.ones(src).broadcast_to(shape)
    with pytest.raises(mx.base.MXNetError):
        mx.nd.broadcast_like(a, b)                     # the op keeps MXNet's strict rule
    x = mx.nd.ones((4,))
    x.attach_grad()
    with mx.autograd.record():
        y = x.broadcast_like(b)
    y.backward()
    assert x.grad.asnumpy().tolist() == [6, 6, 6, 6]
