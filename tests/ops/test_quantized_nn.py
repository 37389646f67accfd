"""MXNet's quantized layers (gpunda/ops/quantization/nn.py, quantized_rnn.py) against NumPy
references of MXNet's formulas and values observed on MXNet 1.9.1's CPU wheel."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import gpunda as mx
from gpunda import nd
from gpunda.base import GpundaError

c = nd.contrib
_RNG = np.random.default_rng(7)
_I32 = 2147483647.0


def R(v):
    return nd.array([v], dtype="float32")


def i8(*shape):
    return _RNG.integers(-127, 128, shape).astype(np.int8)


def u8(*shape):
    return _RNG.integers(0, 256, shape).astype(np.uint8)


def _np_conv2d(x, w, stride=1, pad=0):
    x = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(x, w.shape[2:], axis=(2, 3))[:, :, ::stride, ::stride]
    return np.einsum("nchwij,fcij->nfhw", win, w.astype(np.int64))


def _range(d, w, levels=127.0):
    f = np.float32
    return float((f(d) / f(levels)) * (f(w) / f(127.0)) * f(_I32))


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_conv_accumulates_exactly_in_int32_with_the_product_range(dtype):
    x = (i8 if dtype == "int8" else u8)(2, 4, 7, 7)
    w = i8(8, 4, 3, 3)
    out, lo, hi = c.quantized_conv(nd.array(x, dtype=dtype), nd.array(w, dtype="int8"),
                                   R(-3.0), R(2.5), R(-0.7), R(0.9), kernel=(3, 3),
                                   num_filter=8, pad=(1, 1), stride=(2, 2), no_bias=True)
    assert out.dtype == np.int32 and out.shape == (2, 8, 4, 4)
    np.testing.assert_array_equal(out.asnumpy(), _np_conv2d(x, w, stride=2, pad=1))
    # MXNet's CPU kernel reports the int8 x int8 range for uint8 data too
    assert hi.asnumpy()[0] == pytest.approx(_range(3.0, 0.9), rel=1e-6)
    assert lo.asnumpy()[0] == -hi.asnumpy()[0]


def test_conv_bias_is_rescaled_into_output_steps():
    x, w, b = i8(1, 4, 5, 5), i8(8, 4, 3, 3), i8(8)
    out = c.quantized_conv(nd.array(x, dtype="int8"), nd.array(w, dtype="int8"),
                           nd.array(b, dtype="int8"), R(-3.0), R(2.5), R(-0.7), R(0.9),
                           R(-0.01), R(0.02), kernel=(3, 3), num_filter=8)[0].asnumpy()
    steps = np.trunc(b.astype(np.float32) * np.float32(0.02 / 127) /
                     np.float32(_range(3.0, 0.9) / _I32))
    np.testing.assert_array_equal(out, _np_conv2d(x, w) + steps.reshape(1, -1, 1, 1))
    # all ranges +-127 (MXNet's test_quantized_conv setup): the bias is added as is
    same = c.quantized_conv(nd.array(x, dtype="int8"), nd.array(w, dtype="int8"),
                            nd.array(b, dtype="int8"), *[R(v) for v in [-127.0, 127.0] * 3],
                            kernel=(3, 3), num_filter=8)[0].asnumpy()
    np.testing.assert_array_equal(same, _np_conv2d(x, w) + b.reshape(1, -1, 1, 1))


def test_conv_3d_and_symbolic_inference():
    x, w = u8(1, 3, 4, 6, 6), i8(8, 3, 1, 3, 3)
    out = c.quantized_conv(nd.array(x, dtype="uint8"), nd.array(w, dtype="int8"), R(-1.0),
                           R(1.0), R(-1.0), R(1.0), kernel=(1, 3, 3), num_filter=8,
                           no_bias=True)[0].asnumpy()
    ref = np.stack([_np_conv2d(x[:, :, d], w[:, :, 0]) for d in range(4)], axis=2)
    np.testing.assert_array_equal(out, ref)
    q = mx.sym.contrib.quantized_conv(data=mx.sym.Variable("qdata", dtype="int8"),
                                      kernel=(3, 3), num_filter=16, name="qc")
    assert q.list_arguments() == ["qdata", "qc_weight", "qc_bias", "qc_min_data",
                                  "qc_max_data", "qc_min_weight", "qc_max_weight",
                                  "qc_min_bias", "qc_max_bias"]
    assert q.list_outputs() == ["qc_output", "qc_min_output", "qc_max_output"]
    args, outs, _ = q.infer_shape(qdata=(2, 4, 9, 9))
    assert args[1:3] == [(16, 4, 3, 3), (16,)] and set(args[3:]) == {(1,)}
    assert outs == [(2, 16, 7, 7), (1,), (1,)]
    targs, touts, _ = q.infer_type(qdata="int8")
    assert targs[1:3] == [np.int8, np.int8] and set(targs[3:]) == {np.float32}
    assert touts == [np.int32, np.float32, np.float32]


def test_conv_rejects_groups_and_float_data():
    x, w = nd.array(i8(1, 4, 5, 5), dtype="int8"), nd.array(i8(8, 2, 3, 3), dtype="int8")
    with pytest.raises(GpundaError, match="num_group"):
        c.quantized_conv(x, w, R(-1), R(1), R(-1), R(1), kernel=(3, 3), num_filter=8,
                         num_group=2, no_bias=True)
    with pytest.raises(GpundaError, match="data must be int8 or uint8"):
        c.quantized_conv(nd.ones((1, 4, 5, 5)), w, R(-1), R(1), R(-1), R(1), kernel=(3, 3),
                         num_filter=8, no_bias=True)


@pytest.mark.parametrize("dtype,levels", [("int8", 127.0), ("uint8", 255.0)])
def test_fully_connected_with_bias(dtype, levels):
    x = (i8 if dtype == "int8" else u8)(5, 3, 2, 2)
    w, b = i8(7, 12), i8(7)
    out, lo, hi = c.quantized_fully_connected(
        nd.array(x, dtype=dtype), nd.array(w, dtype="int8"), nd.array(b, dtype="int8"),
        R(-2.0), R(3.0), R(-1.0), R(0.5), R(-0.2), R(0.1), num_hidden=7)
    out_range = _range(3.0, 1.0, levels)
    steps = np.trunc(b.astype(np.float32) * (np.float32(0.2 / 127) / np.float32(out_range / _I32)))
    ref = x.reshape(5, -1).astype(np.int64) @ w.T.astype(np.int64) + steps
    np.testing.assert_array_equal(out.asnumpy(), ref)
    assert hi.asnumpy()[0] == pytest.approx(out_range, rel=1e-6)
    flat = c.quantized_fully_connected(
        nd.array(x.reshape(5, 2, 6), dtype=dtype), nd.array(i8(7, 6), dtype="int8"), R(-2.0),
        R(3.0), R(-1.0), R(0.5), num_hidden=7, no_bias=True, flatten=False)[0]
    assert flat.shape == (5, 2, 7)


def _np_pool(x, k, s, fn):
    win = sliding_window_view(x.astype(np.float64), (k, k), axis=(2, 3))[:, :, ::s, ::s]
    return fn(win, axis=(-2, -1))


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_pooling_max_and_avg_keep_dtype_and_range(dtype):
    x = (i8 if dtype == "int8" else u8)(2, 3, 9, 9)
    for kind, fn in (("max", np.max), ("avg", np.mean)):
        out, lo, hi = c.quantized_pooling(nd.array(x, dtype=dtype), R(-1.0), R(2.0),
                                          kernel=(3, 3), stride=(2, 2), pool_type=kind)
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out.asnumpy(), np.rint(_np_pool(x, 3, 2, fn)))
        assert (lo.asnumpy()[0], hi.asnumpy()[0]) == (-1.0, 2.0)


def test_pooling_values_observed_on_mxnet():
    x = nd.array([[[[-7, 3, 5, 2], [1, -4, 9, 8], [6, 0, -3, 11], [2, 5, 7, -9]]]],
                 dtype="int8")
    avg = c.quantized_pooling(x, R(-1.0), R(1.0), kernel=(2, 2), stride=(1, 1), pool_type="avg")
    assert avg[0].asnumpy().tolist() == [[[[-2, 3, 6], [1, 0, 6], [3, 2, 2]]]]
    # a 'full' window past the edge divides by the whole kernel (MXNet's int8 kernel)
    full = c.quantized_pooling(x, R(-1.0), R(1.0), kernel=(3, 3), stride=(2, 2),
                               pool_type="avg", pooling_convention="full")
    assert full[0].asnumpy().tolist() == [[[[1, 4], [2, 1]]]]
    with pytest.raises(GpundaError, match="pool_type"):
        c.quantized_pooling(x, R(-1.0), R(1.0), kernel=(2, 2), pool_type="sum")


def test_act_flatten_embedding_pass_ranges_through():
    x = i8(2, 3, 4)
    out, lo, hi = c.quantized_act(nd.array(x, dtype="int8"), R(-1.0), R(2.0), act_type="relu")
    np.testing.assert_array_equal(out.asnumpy(), np.maximum(x, 0))
    assert (lo.asnumpy()[0], hi.asnumpy()[0]) == (-1.0, 2.0)
    # uint8 data: MXNet types the output int8 and reinterprets the bytes
    u = c.quantized_act(nd.array([[0, 130, 255, 7]], dtype="uint8"), R(0), R(1), act_type="relu")
    assert u[0].dtype == np.int8 and u[0].asnumpy().tolist() == [[0, -126, -1, 7]]
    with pytest.raises(GpundaError, match="relu"):
        c.quantized_act(nd.array(x, dtype="int8"), R(-1.0), R(2.0), act_type="tanh")
    f = c.quantized_flatten(nd.array(x, dtype="int8"), R(-1.0), R(2.0))
    np.testing.assert_array_equal(f[0].asnumpy(), x.reshape(2, 12))
    w = i8(5, 3)
    e = c.quantized_embedding(nd.array([[0, 3], [2, 9]]), nd.array(w, dtype="int8"), R(-0.4),
                              R(0.6), input_dim=5, output_dim=3)
    np.testing.assert_array_equal(e[0].asnumpy(), w[[[0, 3], [2, 4]]])   # indices clipped
    assert e[0].dtype == np.int8 and e[2].asnumpy()[0] == pytest.approx(0.6)


def test_concat_rescales_to_the_widest_range():
    a = nd.array([[-100, 20, 127], [5, -128, 64]], dtype="int8")
    b = nd.array([[250, 3, 128], [0, 17, 255]], dtype="uint8")
    out, lo, hi = c.quantized_concat(a, b, R(-1.5), R(0.5), R(0.0), R(2.0), num_args=2, dim=1)
    # observed on MXNet 1.9.1: int8 output over [-1.5, 2.0]
    assert out.dtype == np.int8
    assert out.asnumpy().tolist() == [[-75, 15, 95, 125, 1, 64], [4, -96, 48, 0, 8, 127]]
    assert (lo.asnumpy()[0], hi.asnumpy()[0]) == (-1.5, 2.0)
    s = mx.sym.contrib.quantized_concat(mx.sym.Variable("a"), mx.sym.Variable("b"),
                                        mx.sym.Variable("a_min"), mx.sym.Variable("a_max"),
                                        mx.sym.Variable("b_min"), mx.sym.Variable("b_max"),
                                        num_args=2, dim=1)
    _, outs, _ = s.infer_shape(a=(2, 3), b=(2, 5))
    assert outs == [(2, 8), (1,), (1,)]
    assert s.infer_type(a="uint8", b="uint8")[1][0] == np.uint8


def test_batch_norm_needs_calibration_and_matches_mxnet():
    x = nd.array([[[[-100, 20], [127, 5]], [[-128, 64], [3, -7]]]], dtype="int8")
    args = (nd.array([0.5, 2.0]), nd.array([0.1, -0.3]), nd.array([0.2, -0.1]),
            nd.array([1.5, 0.25]), R(-2.0), R(2.0))
    out, lo, hi = c.quantized_batch_norm(x, *args, min_calib_range=-3.0, max_calib_range=2.5,
                                         eps=1e-3)
    assert out.asnumpy().tolist() == [[[[-26, 6], [35, 2]], [[-128, 127], [12, -14]]]]
    assert (lo.asnumpy()[0], hi.asnumpy()[0]) == (-3.0, 2.5)
    real = x.asnumpy() * 2.0 / 127.5
    g, b, m, v = (a.asnumpy().reshape(1, 2, 1, 1) for a in args[:4])
    ref = ((real - m) / np.sqrt(v + 1e-3) * g + b) * 127.5 / 3.0
    np.testing.assert_allclose(out.asnumpy(), np.clip(ref, -128, 127), atol=1)
    with pytest.raises(GpundaError, match="min_calib_range"):
        c.quantized_batch_norm(x, *args)


def test_quantized_rnn_is_the_float_lstm_on_dequantized_data():
    T, N, C, H = 5, 2, 8, 6
    data = _RNG.uniform(-1, 1, (T, N, C)).astype(np.float32)
    w = nd.array(_RNG.uniform(-1, 1, 4 * H * C + 4 * H * H + 8 * H).astype(np.float32))
    st, ce = (nd.array(_RNG.uniform(-1, 1, (1, N, H)).astype(np.float32)) for _ in range(2))
    scale = 128.0 / (data.max() - data.min())
    shift = 128.0 - data.max() * scale
    q = (data * scale + shift + 0.5).astype(np.uint8)
    outs = c.quantized_rnn(nd.array(q, dtype="uint8"), w, st, ce, R(scale), R(shift),
                           state_size=H, num_layers=1, mode="lstm", state_outputs=True)
    deq = (q.astype(np.float32) - np.float32(shift)) / np.float32(scale)
    ref = nd.RNN(nd.array(deq), w, st, ce, state_size=H, num_layers=1, mode="lstm",
                 state_outputs=True)
    for o, r in zip(outs, ref):
        np.testing.assert_allclose(o.asnumpy(), r.asnumpy(), rtol=1e-5, atol=1e-6)
    flt = nd.RNN(nd.array(data), w, st, ce, state_size=H, num_layers=1, mode="lstm")
    assert np.mean((flt.asnumpy() - outs[0].asnumpy()) ** 2) < 1e-3   # MXNet's own bound
    with pytest.raises(GpundaError, match="lstm"):
        c.quantized_rnn(nd.array(q, dtype="uint8"), w, st, ce, R(scale), R(shift),
                        state_size=H, num_layers=1, mode="gru")


def test_symbolic_quantized_fc_like_mxnets_test():
    qdata = mx.sym.Variable("qdata", shape=(4, 6), dtype="int8")
    fc = mx.sym.contrib.quantized_fully_connected(data=qdata, num_hidden=3, no_bias=True)
    names = fc.list_arguments()
    exe = fc.simple_bind(ctx=mx.cpu(), type_dict={names[1]: "int8"}, grad_req="null")
    x, w = i8(4, 6), i8(3, 6)
    exe.arg_dict[names[0]][:] = nd.array(x, dtype="int8")
    exe.arg_dict[names[1]][:] = nd.array(w, dtype="int8")
    for n, v in zip(names[2:], (-1.0, 1.0, -1.0, 1.0)):
        exe.arg_dict[n][:] = v
    out = exe.forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), x.astype(np.int64) @ w.T.astype(np.int64))
