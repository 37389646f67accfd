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
