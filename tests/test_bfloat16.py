"""bfloat16 end to end: NDArray, ops, Symbol, Gluon, save/load, amp_cast and AMP conversion.

MXNet 1.9.1's answers are in tests/data/bf16_mxnet191.npz and bf16_mxnet191.params, written
by tests/data/make_bf16_fixture.py under /work/mxref (MXNet 1.9.1, CPU wheel), e.g.

    b = mx.nd.amp_cast(mx.nd.array(x), dtype=mx.contrib.amp.amp.bfloat16)
    back = mx.nd.amp_cast(b, dtype="float32").asnumpy()
    mx.nd.save("bf16_mxnet191.params", {"bf": b, "f32": mx.nd.array(x[:4])})
    conv = amp.convert_hybrid_block(net, target_dtype="bfloat16", ctx=mx.cpu())

The rounding rule (docs/compat.md): an op given bfloat16 computes in float32 and rounds its
result to nearest even (NOTE [bfloat16 compute] in gpunda/ops/_bf16.py).
"""
import json
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import gpunda as mx
from gpunda.contrib import amp

_DATA = os.path.join(os.path.dirname(__file__), "data")
_BF = np.dtype(ml_dtypes.bfloat16)
_MX_RECORD = np.dtype([("bfloat16", np.uint16)])      # MXNet's own spelling


def _ref():
    return np.load(os.path.join(_DATA, "bf16_mxnet191.npz"))


def _fixture_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "make_bf16_fixture", os.path.join(_DATA, "make_bf16_fixture.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rne(x):
    """float32 -> bfloat16 -> float32, round to nearest even, by bit arithmetic (independent
    of ml_dtypes): add 0x7FFF plus the kept part's lowest bit, drop the low 16 bits."""
    u = np.atleast_1d(np.asarray(x, np.float32)).view(np.uint32).astype(np.uint64)
    c = np.uint64
    r = ((u + c(0x7FFF) + ((u >> c(16)) & c(1))) & c(0xFFFF0000)).astype(np.uint32)
    out = r.view(np.float32).reshape(np.shape(x))
    return np.where(np.isnan(x), np.float32(np.nan), out)


def _f32(a):
    return a.asnumpy().astype(np.float32)


def test_import_does_not_load_ml_dtypes():
    code = "import sys, gpunda; print('ml_dtypes' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(__file__)), timeout=120)
    assert r.stdout.strip() == "False", r.stderr[-2000:]


def test_every_spelling_names_one_dtype():
    for spelling in ("bfloat16", _MX_RECORD, ml_dtypes.bfloat16, _BF, amp.amp.bfloat16):
        x = mx.nd.zeros((2, 3), dtype=spelling)
        # MXNet's NDArray.dtype for bfloat16 is its record; the data is ml_dtypes'
        assert x.dtype == _MX_RECORD and x.asnumpy().dtype == _BF
    assert amp.amp.bfloat16 == _MX_RECORD
    assert mx.nd.ndarray._DTYPE_NP_TO_MX[x.dtype] == 12       # MXNet's own lookup
    with pytest.raises(TypeError, match="bfloat17"):
        mx.nd.zeros(2, dtype="bfloat17")


def test_creation_astype_asnumpy():
    x = mx.nd.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.7182817], dtype="bfloat16")
    h = x.asnumpy()
    assert h.dtype == _BF
    np.testing.assert_array_equal(h.astype(np.float32), [1.0, 1.0, 1.015625, -2.71875])
    assert mx.nd.ones((2,), dtype="bfloat16").asnumpy().dtype == _BF
    np.testing.assert_array_equal(_f32(mx.nd.full((2,), 0.1, dtype="bfloat16")), [0.10009765625] * 2)
    y = mx.nd.array([0.1, 3.3]).astype("bfloat16")
    np.testing.assert_array_equal(_f32(y), _rne(np.float32([0.1, 3.3])))
    assert y.astype("float32").dtype == np.float32
    # a NumPy bfloat16 source keeps MXNet's rule: float32 unless dtype is given
    assert mx.nd.array(h).dtype == np.float32
    assert mx.nd.array(h, dtype="bfloat16").dtype == _MX_RECORD


def test_amp_cast_rounds_as_mxnet():
    r = _ref()
    x, back = r["x"], r["back"]
    got = _f32(mx.nd.amp_cast(mx.nd.amp_cast(mx.nd.array(x), dtype="bfloat16"),
                              dtype="float32"))
    # MXNet's CPU cast flushes subnormals to zero (oneDNN's denormal mode); gpunda keeps them
    sub = (np.abs(x) < 2.0 ** -126) & (x != 0)
    assert sub.sum() == 1
    np.testing.assert_array_equal(got[~sub], back[~sub])
    np.testing.assert_array_equal(got, _rne(x))
    assert got[sub][0] != 0 and back[sub][0] == 0


def test_elementwise_ops_against_mxnet():
    # MXNet's mshadow bfloat16 kernels truncate their float32 result; gpunda rounds it to
    # nearest even: within one bfloat16 step of MXNet's, and equal to the rounded float32
    r = _ref()
    ox = r["ox"]
    b = mx.nd.amp_cast(mx.nd.array(ox), dtype="bfloat16")
    v = _rne(ox)                                   # the bfloat16 inputs, as float32
    ref = {"tanh": np.tanh(v), "relu": np.maximum(v, 0), "sqrt": np.sqrt(np.abs(v)),
           "square": v * v, "add": v + v, "mul": v * v, "exp": np.exp(v),
           "clip": np.clip(v, -1, 1), "sum": np.sum(v, dtype=np.float32).reshape(1),
           "concat": np.concatenate([v, v], 0)}
    got = {"tanh": mx.nd.tanh(b), "relu": mx.nd.relu(b), "sqrt": mx.nd.sqrt(mx.nd.abs(b)),
           "square": mx.nd.square(b), "add": b + b, "mul": b * b, "exp": mx.nd.exp(b),
           "clip": mx.nd.clip(b, -1, 1), "sum": mx.nd.sum(b), "concat": mx.nd.concat(b, b, dim=0)}
    for k, want in ref.items():
        g = got[k]
        assert g.dtype == _MX_RECORD, k
        np.testing.assert_array_equal(_f32(g), _rne(want.astype(np.float32)), err_msg=k)
        mxv = r["op_" + k]
        if k == "sum":      # MXNet's reduction accumulates in (truncating) bfloat16
            exact = np.sum(v.astype(np.float64))
            assert abs(_f32(g)[0] - exact) < abs(mxv[0] - exact) / 4
            continue
        ulp = np.spacing(np.abs(mxv).astype(ml_dtypes.bfloat16)).astype(np.float32)
        assert (np.abs(_f32(g) - mxv) <= ulp).all(), k


def test_matmul_and_reductions_accumulate_in_float32():
    # 1 + 512 * 2**-9 accumulated in bfloat16 stays 1.0 (each addend is under half a step)
    ones = mx.nd.ones((513,), dtype="bfloat16")
    vals = mx.nd.array([1.0] + [2.0 ** -9] * 512, dtype="bfloat16")
    assert float(_f32(mx.nd.dot(vals, ones))[0]) == 2.0
    assert float(_f32(mx.nd.sum(vals))[0]) == 2.0
    a = np.random.RandomState(0).uniform(-1, 1, (3, 40)).astype(np.float32)
    w = np.random.RandomState(1).uniform(-1, 1, (5, 40)).astype(np.float32)
    y = mx.nd.FullyConnected(mx.nd.array(a, dtype="bfloat16"), mx.nd.array(w, dtype="bfloat16"),
                             no_bias=True, num_hidden=5)
    assert y.dtype == _MX_RECORD
    np.testing.assert_array_equal(_f32(y), _rne(_rne(a) @ _rne(w).T))


def test_type_rules_decide_the_output_dtype():
    x = mx.nd.array([[3.0, 1.0, 2.0]], dtype="bfloat16")
    assert mx.nd.topk(x, k=2).dtype == np.float32          # its dtype parameter
    assert mx.nd.argmax(x, axis=1).dtype == _MX_RECORD
    assert mx.nd.Cast(x, dtype="float32").dtype == np.float32
    m = mx.nd.amp_multicast(x, mx.nd.ones((1, 3)), num_outputs=2)
    assert [o.dtype for o in m] == [np.float32, np.float32]
    m = mx.nd.amp_multicast(x, mx.nd.ones((1, 3)), num_outputs=2, cast_narrow=True)
    assert [o.dtype for o in m] == [_MX_RECORD, _MX_RECORD]
    assert mx.nd.all_finite(x).dtype == np.float32


def test_mixed_float_types():
    b16, f32 = mx.nd.ones((2,), dtype="bfloat16"), mx.nd.ones((2,))
    # legacy ops refuse mixed inputs as MXNet does, naming bfloat16
    with pytest.raises(mx.MXNetError, match="lhs is bfloat16, rhs is float32"):
        mx.nd.elemwise_add(b16, f32)
    with pytest.raises(mx.MXNetError, match="lhs is bfloat16, rhs is float32"):
        mx.nd.dot(b16, f32)
    # BatchNorm's type rule: bfloat16 data, float32 parameters (MXNet's AccReal)
    x = mx.nd.array(np.arange(8).reshape(1, 2, 2, 2), dtype="bfloat16")
    y = mx.nd.BatchNorm(x, f32, mx.nd.zeros(2), mx.nd.zeros(2), f32)
    assert y.dtype == _MX_RECORD
    _, out_t, _ = mx.sym.BatchNorm(mx.sym.var("x")).infer_type(x="bfloat16")
    assert out_t == [_MX_RECORD]
    # mx.np promotes as NumPy does
    a = mx.np.ones((2,), dtype="bfloat16")
    assert (a + mx.np.ones((2,))).dtype == np.float32
    assert (a * a).dtype == _BF


def test_in_place_updates_round_into_the_bfloat16_array():
    w = mx.nd.array([1.0, 2.0, -3.0], dtype="bfloat16")
    g = mx.nd.array([0.5, 0.25, 1.0], dtype="bfloat16")
    mx.nd.sgd_update(w, g, lr=0.01, wd=0.0, out=w)
    assert w.dtype == _MX_RECORD
    np.testing.assert_array_equal(_f32(w), _rne(np.float32([1.0, 2.0, -3.0])
                                                 - np.float32(0.01) * np.float32([0.5, 0.25, 1])))


def test_autograd_gradients_are_bfloat16():
    x = mx.nd.array([0.5, -1.25, 2.0], dtype="bfloat16")
    x.attach_grad()
    with mx.autograd.record():
        y = (mx.nd.tanh(x) * x).sum()
    y.backward()
    assert x.grad.dtype == _MX_RECORD
    v = np.float32([0.5, -1.25, 2.0])
    t = np.tanh(v)
    # each recorded op's gradient is rounded as its forward is (mul's, then tanh's)
    want = _rne(_rne(t) + _rne(v * _rne(1 - _rne(t) ** 2)))
    np.testing.assert_allclose(_f32(x.grad), want, rtol=2 ** -7)


def test_save_load_mxnet_file(tmp_path):
    path = os.path.join(_DATA, "bf16_mxnet191.params")
    d = mx.nd.load(path)
    assert d["bf"].dtype == _MX_RECORD and d["f32"].dtype == np.float32
    np.testing.assert_array_equal(_f32(d["bf"]), _ref()["back"])
    out = str(tmp_path / "again.params")
    mx.nd.save(out, d)
    with open(out, "rb") as f, open(path, "rb") as g:
        assert f.read() == g.read()        # byte for byte what MXNet wrote


def test_symbol_var_dtype_and_infer_type():
    x = mx.sym.var("x", dtype="bfloat16")
    assert x.attr("__dtype__") == "12"                 # MXNet's kBfloat16
    y = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    arg_t, out_t, _ = y.infer_type()
    assert arg_t == [_MX_RECORD] * 3 and out_t == [_MX_RECORD]     # MXNet's spelling
    _, out_t, _ = mx.sym.amp_cast(mx.sym.var("a"), dtype="bfloat16").infer_type(a="float32")
    assert out_t == [_MX_RECORD]
    ex = y.simple_bind(mx.cpu(), x=(2, 4))
    assert ex.arg_dict["fc_weight"].dtype == _MX_RECORD
    ex.arg_dict["x"][:] = 1
    ex.arg_dict["fc_weight"][:] = 0.5
    ex.arg_dict["fc_bias"][:] = 0.1
    np.testing.assert_array_equal(_f32(ex.forward()[0]), np.full((2, 3), _rne(2.1)))
    js = json.loads(y.tojson())
    assert js["nodes"][0]["attrs"]["__dtype__"] == "12"


def _cnn(fx):
    net = fx.small_cnn(mx)
    # the default context: cpu(0), or the stand-in gpu(0) under --standin-gpu
    net.initialize(ctx=mx.current_context())
    for name, v in fx.cnn_params(net).items():
        net.collect_params()[name].set_data(mx.nd.array(v))
    return net


def test_gluon_cast_train_and_save(tmp_path):
    fx = _fixture_module()
    net = _cnn(fx)
    data = mx.nd.array(_ref()["data"], dtype="bfloat16")
    net.cast("bfloat16")
    # BatchNorm keeps float32 statistics for 16-bit data, as its float16 cast (MXNet's rule)
    dts = {k.split("_", 1)[1]: p.data().asnumpy().dtype.name
           for k, p in net.collect_params().items()}
    assert dts == {"conv0_weight": "bfloat16", "conv0_bias": "bfloat16",
                   "batchnorm0_gamma": "float32", "batchnorm0_beta": "float32",
                   "batchnorm0_running_mean": "float32", "batchnorm0_running_var": "float32",
                   "dense0_weight": "bfloat16", "dense0_bias": "bfloat16"}
    y = net(data)
    net.hybridize()
    yh = net(data)
    assert yh.dtype == _MX_RECORD
    np.testing.assert_array_equal(_f32(yh), _f32(y))
    np.testing.assert_allclose(_f32(y), _ref()["y32"], rtol=0.03, atol=0.15)
    w0 = _f32(net[0].weight.data())
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    with mx.autograd.record():
        loss = net(data).sum()
    loss.backward()
    trainer.step(2)
    assert net[0].weight.grad().dtype == _MX_RECORD
    assert net[0].weight.data().dtype == _MX_RECORD
    assert not np.array_equal(_f32(net[0].weight.data()), w0)
    path = str(tmp_path / "net.params")
    net.save_parameters(path)
    net2 = fx.small_cnn(mx)
    net2.cast("bfloat16")
    net2.load_parameters(path)
    np.testing.assert_array_equal(_f32(net2(data)), _f32(net(data)))


def _cnn_reference(fx, data):
    """The converted CNN in NumPy, rounding where MXNet's converted graph casts to bfloat16
    (Convolution and FullyConnected in bfloat16; BatchNorm, relu, Pooling follow their
    bfloat16 input; Flatten in float32) and each bfloat16 op's float32 result."""
    p = {k.split("_", 1)[1]: v for k, v in fx.cnn_params(fx.small_cnn(mx)).items()}
    x = _rne(data)
    w, b = _rne(p["conv0_weight"]), _rne(p["conv0_bias"])
    n, c, h, wd = x.shape
    cols = np.stack([x[:, :, i:i + h - 2, j:j + wd - 2] for i in range(3) for j in range(3)], -1)
    conv = np.einsum("nchwk,ock->nohw", cols, w.reshape(4, 2, 9)) + b[None, :, None, None]
    y = _rne(conv.astype(np.float32))
    mean, var = p["batchnorm0_running_mean"], p["batchnorm0_running_var"]
    g, beta = p["batchnorm0_gamma"], p["batchnorm0_beta"]
    y = (y - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5) * \
        g[None, :, None, None] + beta[None, :, None, None]
    y = _rne(np.maximum(_rne(y.astype(np.float32)), 0))
    y = y.reshape(n, 4, 3, 2, 3, 2).max(axis=(3, 5)).reshape(n, -1)
    out = y @ _rne(p["dense0_weight"]).T + _rne(p["dense0_bias"])
    return _rne(out.astype(np.float32))


def test_convert_hybrid_block_bfloat16_runs_as_mxnet_converts():
    fx = _fixture_module()
    r = _ref()
    net = _cnn(fx)
    net.hybridize()
    np.testing.assert_allclose(net(mx.nd.array(r["data"])).asnumpy(), r["y32"], rtol=1e-5,
                               atol=1e-5)
    conv = amp.convert_hybrid_block(net, target_dtype="bfloat16", ctx=mx.current_context())
    # MXNet's converted graph (casts and their dtypes) and parameter dtypes
    got = json.loads(conv._cached_graph[1].tojson(remove_amp_cast=False))["nodes"]
    want = json.loads(str(r["graph"]))["nodes"]
    key = [(n["op"], n["name"], n.get("attrs", {}).get("dtype")) for n in got]
    assert key == [(n["op"], n["name"], n.get("attrs", {}).get("dtype")) for n in want]
    pdt = sorted(k + ":" + str(np.dtype(p.dtype)) for k, p in conv.collect_params().items())
    assert pdt == list(r["pdt"])
    # MXNet's bfloat16 Convolution needs oneDNN on an AVX512 CPU, so its outputs are not
    # recorded: gpunda's against the NumPy reference at the same cast points, and near
    # MXNet's float32 outputs
    y = conv(mx.nd.array(r["data"]))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.asnumpy(), _cnn_reference(fx, r["data"]), rtol=2 ** -7,
                               atol=2e-2)
    np.testing.assert_allclose(y.asnumpy(), r["y32"], rtol=0.02, atol=0.15)
    assert not np.array_equal(y.asnumpy(), r["y32"])       # it did run in bfloat16


def test_bfloat16_named_while_profiling_keeps_working_after(tmp_path):
    # the profiler swaps computes while it runs and puts back what it found; bfloat16 named
    # in between must stay wrapped (fresh process: bfloat16 not named before)
    code = (
        "import gpunda as mx, numpy as np\n"
        "mx.profiler.set_config(profile_all=True, filename=%r)\n"
        "mx.profiler.set_state('run')\n"
        "a = mx.nd.ones((2, 3), dtype='bfloat16')\n"
        "mx.nd.dot(a, a.T).wait_to_read()\n"
        "mx.profiler.set_state('stop')\n"
        "y = mx.nd.dot(a, a.T)\n"
        "print(y.asnumpy().dtype.name, float(y.asnumpy().astype('f4')[0, 0]))\n"
    ) % str(tmp_path / "profile.json")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(__file__)), timeout=120)
    assert r.stdout.strip().splitlines()[-1] == "bfloat16 3.0", r.stderr[-2000:]


def test_mxnet_bf16_operator_pattern():
    # the pattern of MXNet 1.9.1's tests/python/mkl/test_bf16_operator.py: a Symbol whose
    # data variable is bfloat16 (MXNet's record spelling), bound with simple_bind, fed with
    # amp_cast data; BatchNorm keeps float32 parameters (bf16_use_fp32_params)
    bf = amp.amp.bfloat16
    rs = np.random.RandomState(3)
    x = rs.uniform(0, 10, (2, 3, 5, 5)).astype(np.float32)
    g, b, m, v = (rs.uniform(0, 10, 3).astype(np.float32) for _ in range(4))
    sym = mx.sym.BatchNorm(mx.sym.Variable("data", dtype=bf), eps=2e-5, fix_gamma=False,
                           use_global_stats=True, name="bn")
    ex = sym.simple_bind(ctx=mx.cpu(), data=x.shape)
    assert ex.arg_dict["data"].dtype == bf and ex.arg_dict["bn_gamma"].dtype == np.float32
    ex.arg_dict["data"][:] = mx.nd.amp_cast(mx.nd.array(x), dtype=bf)
    for name, val in (("bn_gamma", g), ("bn_beta", b)):
        ex.arg_dict[name][:] = val
    ex.aux_dict["bn_moving_mean"][:] = m
    ex.aux_dict["bn_moving_var"][:] = v
    out = ex.forward()[0]
    assert out.dtype == bf
    c = (slice(None), None, None)
    want = _rne(((_rne(x) - m[c]) / np.sqrt(v[c] + np.float32(2e-5)) * g[c] + b[c])
                .astype(np.float32))
    np.testing.assert_allclose(_f32(mx.nd.amp_cast(out, dtype="float32")), want, rtol=2 ** -7)
    # a Convolution with bfloat16 weights through type_dict
    csym = mx.sym.Convolution(mx.sym.Variable("data", dtype=bf), kernel=(3, 3), num_filter=2,
                              name="conv")
    ex = csym.simple_bind(ctx=mx.cpu(), data=x.shape,
                          type_dict={"conv_weight": bf, "conv_bias": bf})
    assert ex.arg_dict["conv_weight"].dtype == bf
    w = rs.uniform(-1, 1, (2, 3, 3, 3)).astype(np.float32)
    ex.arg_dict["data"][:] = mx.nd.amp_cast(mx.nd.array(x), dtype=bf)
    ex.arg_dict["conv_weight"][:] = mx.nd.amp_cast(mx.nd.array(w), dtype=bf)
    ex.arg_dict["conv_bias"][:] = 0
    cols = np.stack([_rne(x)[:, :, i:i + 3, j:j + 3] for i in range(3) for j in range(3)], -1)
    want = _rne(np.einsum("nchwk,ock->nohw", cols, _rne(w).reshape(2, 3, 9)).astype(np.float32))
    np.testing.assert_allclose(_f32(ex.forward()[0]), want, rtol=2 ** -7, atol=1e-6)


def test_convert_model_bfloat16_runs_in_a_module():
    # MXNet's convert_model graph for bfloat16 is checked against MXNet in
    # tests/contrib/test_contrib_amp.py; here the converted model runs
    rs = np.random.RandomState(4)
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    out = mx.sym.Activation(mx.sym.BatchNorm(fc, name="bn"), act_type="relu")
    arg = {"fc1_weight": mx.nd.array(rs.uniform(-1, 1, (4, 3))), "fc1_bias": mx.nd.zeros(4),
           "bn_gamma": mx.nd.ones(4), "bn_beta": mx.nd.zeros(4)}
    aux = {"bn_moving_mean": mx.nd.zeros(4), "bn_moving_var": mx.nd.ones(4)}
    s2, a2, x2 = amp.convert_model(out, arg, aux, target_dtype="bfloat16",
                                   cast_optional_params=True)
    assert a2["fc1_weight"].dtype == amp.amp.bfloat16 and a2["bn_gamma"].dtype == np.float32
    x = rs.uniform(-1, 1, (2, 3)).astype(np.float32)
    outs = []
    for sym, args, auxs in ((out, arg, aux), (s2, a2, x2)):
        mod = mx.mod.Module(sym, data_names=["data"], label_names=None)
        mod.bind(data_shapes=[("data", (2, 3))], for_training=False)
        mod.set_params(args, auxs)
        mod.forward(mx.io.DataBatch([mx.nd.array(x)]))
        outs.append(mod.get_outputs()[0])
    assert outs[1].dtype == np.float32       # the graph casts its outputs back, as MXNet's
    w = _rne(arg["fc1_weight"].asnumpy())
    want = _rne(np.maximum(_rne(_rne(_rne(x) @ w.T) / np.sqrt(np.float32(1 + 1e-3))), 0))
    np.testing.assert_allclose(_f32(outs[1]), want, rtol=2 ** -7, atol=1e-6)
    np.testing.assert_allclose(_f32(outs[1]), outs[0].asnumpy(), rtol=0.02, atol=0.02)
