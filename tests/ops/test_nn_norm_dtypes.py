"""The dtypes of the normalisation ops' parameters (NOTE [BatchNorm parameter dtypes]).

MXNet 1.9.1 keeps BatchNorm's gamma, beta and moving statistics in float32 for float16 data
(the data's dtype otherwise), returns its mean/var outputs in that dtype and refuses
parameters of another dtype; LayerNorm and GroupNorm take one dtype for all inputs. The
numbers below were recorded from MXNet 1.9.1 on the CPU.
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd
from gpunda.base import GpundaError

nd = mx.nd
F16, F32, F64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")

# float16 data; float32 parameters float16 cannot hold (the 1e-4.. offsets)
X = np.array([[[[1.8828125, 0.33837890625], [5.86328125, 0.495849609375]],
               [[1.21875, 4.1640625], [-0.818359375, -0.1832275390625]],
               [[1.375, 0.34033203125], [-1.3857421875, 0.59033203125]]],
              [[[0.2822265625, 2.20703125], [-2.330078125, -0.400390625]],
               [[3.302734375, 4.71484375], [-2.021484375, 2.2890625]],
               [[-0.96142578125, -0.7138671875], [-0.74365234375, 0.155029296875]]]], F16)
HEAD = np.array([[[[0.99658203125, 0.71240234375], [0.05914306640625, -0.36328125]],
                  [[0.00328826904296875, -0.10595703125], [0.79296875, -0.63134765625]],
                  [[-0.006195068359375, -0.10107421875], [-0.05230712890625, 0.249267578125]]],
                 [[[0.1976318359375, 1.3349609375], [-0.08685302734375, 1.5615234375]],
                  [[-0.305908203125, -0.477783203125], [0.1007080078125, 0.35546875]],
                  [[0.26953125, 1.2919921875], [1.1396484375, 0.494384765625]]]], F16)
GAMMA = np.array([1.3, -0.7, 2.1], F32) + np.float32(1e-4)
BETA = np.array([0.1, 0.2, -0.3], F32) + np.float32(1e-5)
MM = np.array([0.5, -1.0, 0.25], F32) + np.float32(3e-5)
MV = np.array([1.5, 0.75, 2.0], F32) + np.float32(7e-5)


def _arrays():
    return [nd.array(v, dtype=v.dtype, ctx=mx.cpu()) for v in (X, GAMMA, BETA, MM, MV)]


def test_batchnorm_float16_data_float32_parameters_inference_as_mxnet():
    x, g, b, mm, mv = _arrays()
    y, mean, var = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False, output_mean_var=True,
                                eps=1e-3)
    assert (y.dtype, mean.dtype, var.dtype) == (F16, F32, F32)
    want_y = [[[[1.5673828125, -0.07147216796875], [5.79296875, 0.0955810546875]],
               [[-1.591796875, -3.97265625], [0.05328369140625, -0.460205078125]],
               [[1.369140625, -0.166015625], [-2.728515625, 0.204833984375]]],
              [[[-0.131103515625, 1.9111328125], [-2.904296875, -0.85546875]],
               [[-3.2734375, -4.4140625], [1.025390625, -2.45703125]],
               [[-2.099609375, -1.73046875], [-1.7744140625, -0.44091796875]]]]
    np.testing.assert_allclose(y.asnumpy().astype(F64), want_y, rtol=2e-3, atol=2e-3)
    # the moving mean as it is, in float32 (a float16 round trip is 3e-5 off)
    np.testing.assert_array_equal(mean.asnumpy(), MM)
    # 1/sqrt(moving_var + eps): MXNet's CPU kernel forms var + eps in float16 (up to 2.5e-4
    # off); gpunda's is the float32 one, checked against float64 NumPy below
    np.testing.assert_allclose(var.asnumpy(), [0.8162309527397156, 1.153949499130249,
                                               0.7067617774009705], rtol=5e-4)
    np.testing.assert_allclose(var.asnumpy(), 1 / np.sqrt(MV.astype(F64) + 1e-3), rtol=1e-6)


def test_batchnorm_float16_training_keeps_float32_statistics_and_gradients_as_mxnet():
    x, g, b, mm, mv = _arrays()
    for a in (x, g, b):
        a.attach_grad()
    with autograd.record():
        y, mean, var = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False, output_mean_var=True,
                                    eps=1e-3, momentum=0.9)
    y.backward(nd.array(HEAD, dtype=F16, ctx=mx.cpu()))
    assert (y.dtype, mean.dtype, var.dtype, mm.dtype, mv.dtype) == (F16, F32, F32, F32, F32)
    assert (x.grad.dtype, g.grad.dtype, b.grad.dtype) == (F16, F32, F32)
    want_y = [[[[0.587890625, -0.308837890625], [2.8984375, -0.2171630859375]],
               [[0.311279296875, -0.58837890625], [0.93408203125, 0.740234375]],
               [[3.419921875, 0.92578125], [-3.23828125, 1.5283203125]]],
              [[[-0.341064453125, 0.7763671875], [-1.8583984375, -0.7373046875]],
               [[-0.325439453125, -0.7568359375], [1.302734375, -0.01568603515625]],
               [[-2.212890625, -1.615234375], [-1.6875, 0.478759765625]]]]
    np.testing.assert_allclose(y.asnumpy().astype(F64), want_y, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(mean.asnumpy(), [1.042388916015625, 1.5832977294921875,
                                                -0.167999267578125], rtol=1e-6)
    # MXNet's float16 CPU kernel forms x - mean in float16: its variance is 3e-4 off the
    # exact one (gpunda's, checked against float64 NumPy below)
    np.testing.assert_allclose(var.asnumpy(), [0.4465164542198181, 0.4367608428001404,
                                               1.147993564605713], rtol=5e-4)
    xm = X.astype(F64)
    bvar = xm.var(axis=(0, 2, 3))
    np.testing.assert_allclose(var.asnumpy(), 1 / np.sqrt(bvar + 1e-3), rtol=1e-6)
    # moving statistics updated in float32 (MXNet: after backward, same values)
    np.testing.assert_allclose(mm.asnumpy(), [0.5542658567428589, -0.7416431903839111,
                                              0.20822708308696747], rtol=1e-6)
    np.testing.assert_allclose(mv.asnumpy(), [1.8515255451202393, 1.1991817951202393,
                                              1.8758419752120972], rtol=2e-4)
    np.testing.assert_allclose(mv.asnumpy(), MV * 0.9 + bvar * 0.1, rtol=1e-6)
    want_dx = [[[[0.255126953125, 0.0960693359375], [-0.304443359375, -0.529296875]],
                [[-0.0027713775634765625, -0.03802490234375], [-0.19677734375, 0.223876953125]],
                [[-0.2548828125, -0.986328125], [-1.7080078125, -0.020599365234375]]],
               [[[-0.2025146484375, 0.4501953125], [-0.357421875, 0.591796875]],
                [[0.0430908203125, 0.062744140625], [0.042999267578125, -0.1353759765625]],
                [[-0.7255859375, 1.8603515625], [1.4775390625, 0.359130859375]]]]
    np.testing.assert_allclose(x.grad.asnumpy().astype(F64), want_dx, rtol=3e-3, atol=3e-3)
    np.testing.assert_allclose(g.grad.asnumpy(), [0.11876945197582245, -1.3971772193908691,
                                                  -1.4048714637756348], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(b.grad.asnumpy(), [4.412109375, -0.26856231689453125,
                                                  3.285247802734375], rtol=1e-6)


def test_batchnorm_float16_gradient_rule_matches_the_fused_kernel():
    # the differentiable rule (create_graph) casts float16 data to the parameters' float32
    def run(create_graph):
        x, g, b, mm, mv = _arrays()
        for a in (x, g, b):
            a.attach_grad()
        with autograd.record():
            y = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False, eps=1e-3)
        head = nd.array(HEAD, dtype=F16, ctx=mx.cpu())
        if create_graph:
            grads = autograd.grad(y, [x, g, b], head_grads=head, create_graph=True)
        else:
            y.backward(head)
            grads = [x.grad, g.grad, b.grad]
        assert [a.dtype for a in grads] == [F16, F32, F32]
        return [a.asnumpy().astype(F64) for a in grads]
    for a, b in zip(run(False), run(True)):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("data,param,at,mx_name", [
    ("float16", "float16", "gamma", "gamma"), ("float16", "float64", "gamma", "gamma"),
    ("float64", "float32", "gamma", "gamma"), ("float32", "float16", "moving_var", "var")])
def test_batchnorm_refuses_parameters_of_another_dtype_as_mxnet(data, param, at, mx_name):
    # MXNet: "This layer requires uniform type. Expected 'float32' v.s. given 'float16' at
    # 'gamma'" (its names for the moving statistics are mean and var)
    want = "float32" if data == "float16" else data
    x = nd.ones((2, 3, 2), dtype=data)
    ins = {n: nd.ones(3, dtype=want) for n in ("gamma", "beta", "moving_mean", "moving_var")}
    ins[at] = nd.ones(3, dtype=param)
    with pytest.raises(GpundaError, match=f"uniform type. Expected '{want}' v.s. given "
                                          f"'{param}' at '{mx_name}'"):
        nd.BatchNorm(x, ins["gamma"], ins["beta"], ins["moving_mean"], ins["moving_var"])
    s = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")
    name = "bn_" + at
    with pytest.raises(GpundaError, match=f"'bn'.*at '{mx_name}'"):
        s.infer_type(data=data, **{name: param})


def test_batchnorm_refuses_integer_data_as_mxnet():
    x = nd.ones((2, 3), dtype="int32")
    with pytest.raises(GpundaError, match="only support floating point types, not int32"):
        nd.BatchNorm(x, *[nd.ones(3, dtype="int32") for _ in range(4)])
    with pytest.raises(GpundaError, match="'bn'.*floating point types, not int32"):
        mx.sym.BatchNorm(mx.sym.var("data"), name="bn").infer_type(data="int32")


# (data dtype) -> MXNet 1.9.1's infer_type: (arguments, outputs, aux); BatchNorm_v1 the same
_BN_TYPES = {
    "float16": (["float16", "float32", "float32"], ["float16"], ["float32", "float32"]),
    "float32": (["float32"] * 3, ["float32"], ["float32"] * 2),
    "float64": (["float64"] * 3, ["float64"], ["float64"] * 2),
}


def _names(types):
    return [[np.dtype(t).name for t in part] for part in types]


@pytest.mark.parametrize("dtype", sorted(_BN_TYPES))
@pytest.mark.parametrize("make", [
    lambda d, **kw: mx.sym.BatchNorm(d, name="b", **kw),
    lambda d, **kw: mx.sym.BatchNorm_v1(d, name="b", **kw),
    lambda d, **kw: mx.sym.contrib.BatchNormWithReLU(d, name="b", **kw),
    lambda d, **kw: mx.sym.contrib.SyncBatchNorm(d, name="b", key="k", **kw)],
    ids=["BatchNorm", "BatchNorm_v1", "BatchNormWithReLU", "SyncBatchNorm"])
def test_batchnorm_family_infer_type_as_mxnet(make, dtype):
    s = make(mx.sym.var("data"))
    assert _names(s.infer_type(data=dtype)) == [list(p) for p in _BN_TYPES[dtype]]
    # mean and var outputs in the parameters' dtype
    args, outs, aux = _BN_TYPES[dtype]
    s = make(mx.sym.var("data"), output_mean_var=True)
    assert _names(s.infer_type(data=dtype))[1] == [dtype, aux[0], aux[0]]
    # nothing follows from a parameter's dtype alone (MXNet: all None)
    assert s.infer_type(b_gamma=args[1]) == (None, None, None)


def test_sync_batchnorm_types_integer_data_as_mxnet():
    # MXNet's SyncBatchNorm type rule lets integer data through (its parameters follow)
    s = mx.sym.contrib.SyncBatchNorm(mx.sym.var("data"), name="b", key="k")
    assert _names(s.infer_type(data="int32")) == [["int32"] * 3, ["int32"], ["int32"] * 2]


def test_sync_batchnorm_and_batchnorm_relu_run_float16_with_float32_parameters():
    x, g, b, mm, mv = _arrays()
    want = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False).asnumpy()
    y, mean, var = nd.contrib.SyncBatchNorm(x, g, b, mm, mv, key="k", fix_gamma=False,
                                            output_mean_var=True)
    assert (y.dtype, mean.dtype, var.dtype) == (F16, F32, F32)
    np.testing.assert_array_equal(y.asnumpy(), want)
    np.testing.assert_array_equal(var.asnumpy(), MV)       # SyncBatchNorm's var is the var
    r = nd.contrib.BatchNormWithReLU(x, g, b, mm, mv, fix_gamma=False)
    assert r.dtype == F16
    np.testing.assert_array_equal(r.asnumpy(), np.maximum(want, 0))
    with pytest.raises(GpundaError, match="_contrib_SyncBatchNorm: This layer requires"):
        nd.contrib.SyncBatchNorm(x, g.astype("float16"), b, mm, mv, key="k")


@pytest.mark.parametrize("op", ["LayerNorm", "GroupNorm", "InstanceNorm"])
def test_layer_group_instance_norm_take_one_dtype(op):
    # MXNet: LayerNorm/GroupNorm infer float16 parameters for float16 data and refuse
    # float32 ones ("Incompatible attr ... expected float16, got float32"); InstanceNorm
    # runs float32 only there, so mixed dtypes are refused as well
    x = nd.array(X, dtype=F16)
    kw = {"num_groups": 3} if op == "GroupNorm" else {}
    C = 2 if op == "LayerNorm" else 3
    fn = getattr(nd, op)
    with pytest.raises(GpundaError, match=f"{op}: inputs must have the same dtype.*"
                                          f"data is float16, gamma is float32"):
        fn(x, nd.ones(C), nd.zeros(C), **kw)
    y = fn(x, nd.ones(C, dtype=F16), nd.zeros(C, dtype=F16), **kw)
    assert y.dtype == F16
    if op != "InstanceNorm":
        s = getattr(mx.sym, op)(mx.sym.var("data"), name="n", **kw)
        assert _names(s.infer_type(data="float16")) == [["float16"] * 3, ["float16"], []]


def test_gluon_batchnorm_after_cast_float16_keeps_float32_as_mxnet():
    # MXNet 1.9.1: net.cast('float16') leaves BatchNorm's parameters (and their gradients)
    # in float32, hybridized or not, and the net runs float16 data forward and backward
    from gpunda.gluon import nn
    x = nd.array(X, dtype=F16)
    for hybridize in (False, True):
        net = nn.HybridSequential(prefix="m_")
        with net.name_scope():
            net.add(nn.Conv2D(3, 3, padding=1, in_channels=3), nn.BatchNorm())
        net.initialize(mx.init.Xavier())    # the default context, as x
        net.cast("float16")
        if hybridize:
            net.hybridize()
        with autograd.record():
            y = net(x)
        y.backward()
        assert y.dtype == F16
        dtypes = {k: np.dtype(p.dtype).name for k, p in net.collect_params().items()}
        assert dtypes == {"m_conv0_weight": "float16", "m_conv0_bias": "float16",
                          "m_batchnorm0_gamma": "float32", "m_batchnorm0_beta": "float32",
                          "m_batchnorm0_running_mean": "float32",
                          "m_batchnorm0_running_var": "float32"}
        grads = {k: np.dtype(p.grad().dtype).name for k, p in net.collect_params().items()
                 if p.grad_req != "null"}
        assert grads == {"m_conv0_weight": "float16", "m_conv0_bias": "float16",
                         "m_batchnorm0_gamma": "float32", "m_batchnorm0_beta": "float32"}
