"""mx.contrib.amp: LossScaler's scale schedule and the op-list functions, against MXNet 1.9.1
(/work/mxref)."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.contrib import amp
from gpunda.contrib.amp.loss_scaler import LossScaler


def test_loss_scaler_schedule_matches_mxnet():
    s = LossScaler()
    assert s.loss_scale == 2. ** 16
    p1 = mx.gluon.Parameter("a", shape=(3,))
    p2 = mx.gluon.Parameter("b", shape=(2,), grad_req="null")      # no gradient: skipped
    p1.initialize()
    p2.initialize()
    s._scale_seq_len = 3
    seq = []
    for bad in [0, 1, 0, 0, 0, 0, 1, 0]:
        p1.grad()[:] = float("nan") if bad else 1.0
        seq.append((s.has_overflow([p1, p2]), s.loss_scale, s._next_loss_scale, s._unskipped))
    # (overflow, loss_scale, next scale, clean checks) per step, from MXNet 1.9.1
    assert seq == [(False, 65536.0, 65536.0, 1), (True, 65536.0, 32768.0, 0),
                   (False, 32768.0, 32768.0, 1), (False, 32768.0, 32768.0, 2),
                   (False, 32768.0, 65536.0, 0), (False, 65536.0, 65536.0, 1),
                   (True, 65536.0, 32768.0, 0), (False, 32768.0, 32768.0, 1)]


def test_loss_scaler_caps_the_scale_and_sees_inf_in_any_chunk():
    s = LossScaler()
    s._scale_seq_len = 1
    ps = [mx.gluon.Parameter("p%d" % i, shape=(1,)) for i in range(450)]   # 3 chunks of 200
    for p in ps:
        p.initialize()
    for _ in range(12):
        assert not s.has_overflow(ps)
    assert s._next_loss_scale == 2. ** 24            # MXNet's maximum
    ps[420].grad()[:] = float("inf")
    assert s.has_overflow(ps)
    with pytest.raises(mx.MXNetError, match="none of the parameters has a gradient"):
        s.has_overflow([])


def test_op_lists_are_mxnets():
    # lengths and members from MXNet 1.9.1
    assert amp.list_lp16_ops("float16") == ["Convolution", "Deconvolution", "FullyConnected",
                                            "RNN"]
    assert amp.list_lp16_ops(np.float16) is amp.list_lp16_ops("float16")
    assert amp.list_lp16_ops(amp.amp.bfloat16) == ["Convolution", "FullyConnected"]
    assert amp.list_lp16_use_fp32_params("float16") is None
    assert amp.list_lp16_use_fp32_params(amp.amp.bfloat16)["BatchNorm"][1] == "gamma"
    assert "SoftmaxOutput" in amp.list_loss_output_functions("float16")
    assert amp.amp.bfloat16 == np.dtype([("bfloat16", np.uint16)])
    with pytest.raises(AssertionError, match="not supported"):
        amp.list_fp32_ops("float64")


def test_cast_helpers():
    x = mx.nd.ones(2)
    assert amp.amp._cast_symbol_NDArray(x, "float16").dtype == np.float16   # MXNet: float16
    i = mx.nd.ones(2, dtype="int32")
    assert amp.amp._cast_symbol_NDArray(i, "float16") is i
    s = amp.amp._cast_symbol_NDArray(mx.sym.var("x"), "float16")
    assert s.eval(x=x)[0].dtype == np.float16
    assert amp.amp._get_fun_to_wrap("_contrib_box_nms", mx.nd, {"_contrib_": mx.nd.contrib}) \
        == ("box_nms", mx.nd.contrib)
    assert amp.amp._get_fun_to_wrap("_random_uniform", mx.nd, {"_random_": mx.nd.random}) \
        == ("_random_uniform", mx.nd._internal)


# -- the AMP mode, against MXNet 1.9.1 (tests/data/amp_mxnet191.json, made by
# tests/data/make_amp_fixture.py from the cases of tests/data/amp_scenarios.py) ------------

import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
_ROOT = os.path.dirname(os.path.dirname(_DATA))


def _mxnet(case):
    with open(os.path.join(_DATA, "amp_mxnet191.json")) as f:
        return json.load(f)[case]


def _gpunda(case):
    """gpunda's result of ``case``, run in its own process: amp.init changes the op
    namespaces for the rest of a process, so the other tests never see it."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    # the answers are MXNet's CPU build's: the scenario runs on the CPU, not the stand-in GPU
    env.pop("GPUNDA_TEST_STANDIN_GPU", None)
    r = subprocess.run([sys.executable, os.path.join(_DATA, "amp_scenarios.py"), "gpunda", case],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _scenarios():
    import importlib.util
    spec = importlib.util.spec_from_file_location("amp_scenarios",
                                                  os.path.join(_DATA, "amp_scenarios.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_convert_symbol_and_model_insert_mxnets_casts():
    # the whole graph (op, name, dtype attrs, inputs, heads) of convert_symbol for float16
    # and bfloat16, with and without cast_optional_params/data_names/excluded names, custom
    # lists, remove_amp_cast on save, and convert_model's parameter dtypes (no amp.init)
    got = _scenarios().case_convert(mx)
    want = _mxnet("convert")
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key


def test_convert_hybrid_block_matches_mxnet_and_runs_float16():
    sc = _scenarios()
    assert sc.case_hybrid(mx) == _mxnet("hybrid")
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(8, in_units=3), mx.gluon.nn.Activation("relu"),
            mx.gluon.nn.Dense(4, in_units=8))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, (5, 3)), ctx=mx.cpu())
    ref = net(x).asnumpy()
    with pytest.raises(RuntimeError, match="hybridize"):
        amp.convert_hybrid_block(mx.gluon.nn.Dense(2), ctx=mx.cpu())
    for cop in (False, True):
        blk = amp.convert_hybrid_block(net, ctx=mx.cpu(), cast_optional_params=cop)
        y = blk(x)
        # MXNet's CPU refuses float16 FullyConnected; gpunda computes it (docs/compat.md)
        assert y.dtype == np.float32
        np.testing.assert_allclose(y.asnumpy(), ref, rtol=2e-2, atol=2e-2)


def test_convert_bucketing_module_matches_mxnet():
    got = _gpunda("bucketing")
    assert got == _mxnet("bucketing")
    assert got["params"]["fc_weight"] == "float16"       # cast_optional_params


def test_remove_amp_cast_keeps_head_casts():
    x = mx.sym.var("x")
    c = mx.sym.amp_cast(x, dtype="float16", name="c")
    m = mx.sym.amp_multicast(c, mx.sym.var("y"), num_outputs=2, name="m")
    out = mx.sym.Group([mx.sym.elemwise_add(m[0], m[1], name="s"), c])
    plain = json.loads(out.tojson())
    assert [n["op"] for n in plain["nodes"]] == ["null", "null", "elemwise_add", "amp_cast"]
    assert [n["op"] for n in json.loads(out.tojson(remove_amp_cast=False))["nodes"]] == \
        ["null", "amp_cast", "null", "amp_multicast", "elemwise_add"]


def test_init_wraps_nd_ops_as_mxnet():
    got, want = _gpunda("nd"), _mxnet("nd")
    assert got.keys() == want.keys()
    for key in want:
        if key == "softmax_output_grad":    # SoftmaxOutput's gradient times 2**16
            np.testing.assert_allclose(got[key], want[key], rtol=1e-5)
        elif key == "initialized":
            assert got[key] is want[key] is True
        else:
            assert got[key][0] == want[key][0], key                  # the output dtype
            if want[key][1] is not None:
                np.testing.assert_allclose(got[key][1], want[key][1], atol=2e-3)
    # MXNet computes float16 FullyConnected only with cuDNN; gpunda on the CPU too
    assert got["fc32"][0] == got["fc16"][0] == "float16"


def test_init_bfloat16_wraps_and_computes_bfloat16():
    got, want = _gpunda("nd_bf16"), _mxnet("nd_bf16")
    assert got["softmax32"] == want["softmax32"] == "float32"
    assert got["add32"] == want["add32"] == "float32"
    # MXNet's record dtype, "[('bfloat16', '<u2')]", in both
    assert got["fc32"] == want["fc32"]


def test_init_wraps_sym_ops_as_mxnet():
    assert _gpunda("sym") == _mxnet("sym")


def test_training_with_loss_scaling_matches_mxnet():
    got, want = _gpunda("train"), _mxnet("train")
    # the scale halves on each overflowing float16 step (skipped), then holds
    assert [r[1:] for r in got["rec"]] == [r[1:] for r in want["rec"]]
    assert [r[1] for r in want["rec"][:5]] == [65536., 32768., 16384., 8192., 4096.]
    np.testing.assert_allclose([r[0] for r in got["rec"]], [r[0] for r in want["rec"]],
                               rtol=3e-3)
    assert got["rec"][-1][0] < 0.06 * got["rec"][0][0]       # it converges
    np.testing.assert_allclose(got["w"], want["w"], rtol=1e-3)
    np.testing.assert_allclose(got["b"], want["b"], rtol=1e-3)
    np.testing.assert_allclose(got["unscaled_ratio"], want["unscaled_ratio"], rtol=1e-3)
    assert got["scale_after_unscale"] == want["scale_after_unscale"] == 1.0


def test_amp_off_costs_nothing_and_bad_use_is_refused():
    # no amp.init in this process: the namespaces are gpunda's own functions
    assert amp.amp._amp_initialized is False
    assert not hasattr(mx.nd.FullyConnected, "__wrapped__")
    trainer = mx.gluon.Trainer([mx.gluon.Parameter("w", shape=(1,))], "sgd")
    with pytest.raises(AssertionError, match="did you forget to call amp.init"):
        amp.init_trainer(trainer)
    with pytest.raises(AssertionError, match="amp.init_trainer"):
        with amp.scale_loss(mx.nd.ones(1), trainer):
            pass
    with pytest.raises(TypeError, match="only compatible with Gluon Trainer"):
        amp.unscale(mx.optimizer.SGD())
    with pytest.raises(AssertionError, match="float16 and bfloat16"):
        amp.convert_symbol(mx.sym.var("x"), target_dtype="float64")
    with pytest.raises(AssertionError, match="Common ops"):
        amp.convert_symbol(mx.sym.var("x"), target_dtype_ops=["FullyConnected"],
                           fp32_ops=["FullyConnected"])
    with pytest.raises(AssertionError, match="none of"):
        amp.convert_symbol(mx.sym.var("x"), target_dtype_ops=["no_such_op"])
