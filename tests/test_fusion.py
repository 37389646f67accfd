"""The fusion pass (gpunda/_engine/fusion, NOTE [Fusion in CachedOp] in cached_op.py).

Fused against unfused on the CPU: a CachedOp's fused view runs each group through the
NumPy evaluator of the very Program its CUDA kernel is printed from (fusion/reference.py),
and its values and gradients must equal the op-by-op plan's (the independent reference:
each op's own compute body and gradient rule). Also: the records mirror their ops, the
partition respects cycles and outside readers, the generated sources' properties."""
import os
import subprocess
import sys

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, sym
from gpunda._engine import fusion
from gpunda._engine.cached_op import CachedOp
from gpunda._engine.fusion.group import FusedGroup
from gpunda.ops.raw import RawF
from gpunda.ops.registry import all_ops


@pytest.fixture(autouse=True)
def _cpu():
    with mx.cpu():
        yield


def _run(cop, arrays, head_grad=None, need=None, train=True, bwd_train=None):
    """Outputs and input gradients of one recorded call of ``cop`` (a CachedOp or a fused
    view) on copies of ``arrays`` (NumPy); the backward runs in mode ``bwd_train``
    (default: the forward's)."""
    args = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    for k, a in enumerate(args):
        if need is None or need[k]:
            a.attach_grad()
    with autograd.record(train_mode=train):
        out = cop(*args)
    outs = out if isinstance(out, list) else [out]
    hg = head_grad or [np.ones(o.shape, o.dtype) for o in outs]
    autograd.backward(outs, [mx.nd.array(h, dtype=h.dtype) for h in hg],
                      train_mode=train if bwd_train is None else bwd_train)
    return ([o.asnumpy() for o in outs],
            [a.grad.asnumpy() if a.grad is not None else None for a in args])


def _compare(s, arrays, train=True, rtol=1e-5, atol=1e-6, min_groups=1, seed=None):
    cop = CachedOp(s, {"static_alloc": True})
    view = cop._fused_view(train)
    assert view is not cop and len(view._fusion_groups) >= min_groups
    if seed is not None:
        mx.random.seed(seed)
    ref = _run(cop, arrays, train=train)
    if seed is not None:
        mx.random.seed(seed)
    got = _run(view, arrays, train=train)
    for a, b in zip(ref[0] + ref[1], got[0] + got[1]):
        if a is None:
            assert b is None
            continue
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)
    launched = sum(g.launches for g in view._fusion_groups)
    assert launched >= 2 * len(view._fusion_groups)     # forward and backward kernels ran
    assert not any(g.fallbacks for g in view._fusion_groups)
    return cop, view


# -- records mirror their ops -------------------------------------------------------------

_PARAMS = {"Activation": [{"act_type": t} for t in
                          ("relu", "sigmoid", "tanh", "softrelu", "softsign")],
           "LeakyReLU": [{"act_type": t, "slope": 0.3} for t in ("leaky", "elu", "selu", "gelu")],
           "clip": [{"a_min": -0.5, "a_max": 0.7}, {"a_min": 0.5, "a_max": -0.2}],
           "Cast": [{"dtype": "float64"}, {"dtype": "float16"}],
           "Dropout": [{"p": 0.3}],
           "BatchNorm": [{"fix_gamma": False, "eps": 1e-3}, {"fix_gamma": True}]}


def _record_cases():
    for name, op in sorted(all_ops().items()):
        if op.pointwise is None:
            continue
        for kw in _PARAMS.get(name, [{"scalar": 1.7}] if "scalar" in op.param_map else [{}]):
            yield name, kw


def _inputs(op, p, rs, shape=(3, 4)):
    names = op.input_names(p)
    xs = []
    for k, n in enumerate(names):
        sh = shape
        if op.pointwise.broadcast == "channel":     # (2, 3, 4) data, vectors along p.axis
            sh = (2, 3, 4) if k == 0 else ((2, 3, 4)[p.axis],)
        if op.name == "LayerNorm" and k:            # gamma, beta along the last axis
            sh = shape[-1:]
        x = rs.uniform(0.2, 2.0, sh) * rs.choice([-1, 1], sh)
        if op.name.split("_")[-1] in ("sqrt", "rsqrt", "log", "log1p") or \
                "power" in op.name or n == "moving_var":
            x = np.abs(x)
        if n == "condition":
            x = (rs.uniform(size=shape) > 0.5).astype(np.float64)
        xs.append(x.astype(np.float32))
    return xs


@pytest.mark.parametrize("name,kw", list(_record_cases()))
def test_record_mirrors_the_op(name, kw):
    """Each Pointwise record computes what its op's body computes, and each gradient
    expression what the op's gradient rule gives (float32, one op as a group)."""
    from gpunda.ops.registry import get_op
    op = get_op(name)
    p = op.parse_params(kw)
    spec = op.pointwise.spec(p, False)
    assert not isinstance(spec, str), spec

    class St:
        pass
    st = St()
    st.op, st.p, st.name = op, p, name
    nin = len(op.input_names(p))
    st.ins = list(range(nin))
    st.outs = list(range(nin, nin + len(spec[0])))
    g = FusedGroup([st], [spec], st.ins, st.outs[:1], 0)
    rs = np.random.RandomState(3)
    xs = _inputs(op, p, rs)
    want = op.compute(np, p, *[x.copy() for x in xs], ctx=mx.cpu()) if op.wants_ctx else \
        op.compute(np, p, *[x.copy() for x in xs])
    want = want[0] if isinstance(want, (tuple, list)) else want
    got = g.run_forward(np, xs, None)
    assert got.dtype == want.dtype
    tol = 2e-3 if got.dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)
    og = rs.uniform(-1, 1, want.shape).astype(want.dtype)
    outs = op.compute(np, p, *[x.copy() for x in xs], ctx=mx.cpu()) if op.wants_ctx else \
        op.compute(np, p, *[x.copy() for x in xs])
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    ogs = [og] + [np.zeros_like(o) for o in outs[1:]]
    F = RawF(np, mx.cpu())
    if op.grad_need:
        ref = op.gradient(F, p, xs, outs, ogs, need=(True,) * nin)
    else:
        ref = op.gradient(F, p, xs, outs, ogs) if op.gradient else [None] * nin
    got_g = g.run_backward(np, xs, [og], (True,) * nin, None)
    for k, (r, q) in enumerate(zip(ref, got_g)):
        if r is None:
            assert q is None or not np.any(q) or op.pointwise.grads and \
                (spec[1][k] is None), (k, q)
            continue
        np.testing.assert_allclose(q.astype(np.float64), np.asarray(r, np.float64),
                                   rtol=tol, atol=tol)


# -- fused against unfused: graphs --------------------------------------------------------

def test_chain_with_broadcast_and_two_outputs():
    x, b = sym.var("x"), sym.var("b")
    h = sym.broadcast_add(x, b)
    a = sym.Activation(h, act_type="relu") * 2 + 1
    y = sym.sigmoid(a) - sym.tanh(x) * sym.LeakyReLU(x, act_type="gelu")
    s = sym.Group([y, sym.exp(a)])      # an intermediate read outside the group: a head
    rs = np.random.RandomState(0)
    cop, view = _compare(s, [rs.randn(4, 5).astype(np.float32),
                             rs.randn(5).astype(np.float32)])
    rep = cop.fusion_report(train=True)
    assert len(rep["groups"]) == 1 and rep["groups"][0]["outputs"] == 2
    assert rep["left_out"] == [] and rep["fused_steps"] == 1


def test_group_does_not_close_a_cycle_through_a_gemm():
    """exp(x) feeds a FullyConnected and the add after it: putting exp and add in one
    group would need the GEMM inside it; they must stay apart and values stay right."""
    x, w = sym.var("x"), sym.var("w")
    e = sym.exp(x) * 0.5
    f = sym.FullyConnected(e, w, num_hidden=6, no_bias=True)
    y = sym.tanh(f + e) * 3
    cop = CachedOp(y, {"static_alloc": True})
    part = fusion.partition(cop._steps, cop._nin, cop._heads, True)
    names = [[cop._steps[i].op.name for i in g] for g in part.groups]
    assert ["exp", "_mul_scalar"] in names
    assert ["elemwise_add", "tanh", "_mul_scalar"] in names
    rs = np.random.RandomState(1)
    _compare(y, [rs.randn(6, 6).astype(np.float32), rs.randn(6, 6).astype(np.float32)],
             min_groups=2)


def test_noncontiguous_and_broadcast_inputs_read_through_strides():
    x, r, c = sym.var("x"), sym.var("r"), sym.var("c")
    t = sym.transpose(x, axes=(1, 0, 2))          # a strided input to the group
    y = sym.broadcast_mul(sym.broadcast_add(t, r), c) / 3 - 1
    rs = np.random.RandomState(2)
    _compare(y, [rs.randn(3, 4, 5).astype(np.float32), rs.randn(4, 1, 5).astype(np.float32),
                 rs.randn(5).astype(np.float32)])


def test_float64_and_cast_inside_a_group():
    x = sym.var("x")
    y = sym.Cast(sym.exp(x) * 0.25, dtype="float32") + 1
    y = sym.sqrt(sym.abs(y)) * sym.sigmoid(y)
    rs = np.random.RandomState(4)
    _compare(y, [rs.randn(5, 3)], rtol=1e-6)


def test_shapes_outside_the_kernel_model_run_member_by_member():
    """elemwise_add of unequal shapes inside a group: the group runs op by op, so the
    op's own error is raised, as in the unfused plan."""
    x, y = sym.var("x"), sym.var("y")
    s = sym.exp(sym.elemwise_add(sym.tanh(x), y)) * 2
    view = CachedOp(s, {"static_alloc": True})._fused_view(False)
    with pytest.raises(mx.base.MXNetError, match="elemwise_add"):
        view(mx.nd.ones((2, 3)), mx.nd.ones((3,))).asnumpy()
    assert any("shapes differ" in k for k in view._fusion_groups[0].fallbacks)


def test_predict_forward_training_backward_of_batchnorm():
    """MXNet's BatchNorm backward reads the backward's mode: after a predict-mode forward,
    a training backward uses batch statistics. A group holding a BatchNorm then runs its
    members' own rules, so its gradients stay the unfused ones."""
    x, g, b, m, v = (sym.var(n) for n in ("x", "g", "b", "m", "v"))
    y = sym.Activation(sym.BatchNorm(x, g, b, m, v, fix_gamma=False), act_type="relu") * 2
    rs = np.random.RandomState(5)
    arrays = [rs.randn(2, 3, 4, 4).astype(np.float32)] + \
        [rs.randn(3).astype(np.float32) for _ in range(3)] + \
        [np.abs(rs.randn(3)).astype(np.float32) + 0.5]
    cop = CachedOp(y, {"static_alloc": True})
    view = cop._fused_view(False)
    ref = _run(cop, arrays, train=False, bwd_train=True)
    got = _run(view, arrays, train=False, bwd_train=True)
    for a, q in zip(ref[0] + ref[1], got[0] + got[1]):
        np.testing.assert_allclose(q, a, rtol=1e-5, atol=1e-6)
    assert view._fusion_groups[0].launches == 1      # the forward kernel only


def test_create_graph_gradients_through_a_group():
    """A create_graph backward runs the members' own rules on NDArrays, so the second
    derivative of the fused graph is the unfused one's."""
    x = sym.var("x")
    y = sym.tanh(x) * sym.exp(x) + 1
    cop = CachedOp(y, {"static_alloc": True})
    res = []
    for c in (cop, cop._fused_view(True)):
        a = mx.nd.array(np.linspace(-1, 1, 7))
        a.attach_grad()
        with autograd.record():
            out = c(a)
            (g,) = autograd.grad(out, [a], create_graph=True)
            z = (g * g).sum()
        z.backward()
        res.append((g.asnumpy(), a.grad.asnumpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)


# -- fused against unfused: model-zoo and text graphs ------------------------------------

def _block_compare(block, data_shapes, train, seed=0, **kw):
    block.initialize(mx.init.Xavier(magnitude=1.5))
    rs = np.random.RandomState(seed)
    data = [rs.randint(0, 2, sh).astype(np.float32) if kw.get("tokens")
            else rs.randn(*sh).astype(np.float32) for sh in data_shapes]
    block(*[mx.nd.array(d) for d in data])          # runs the deferred initialization
    names = [f"in{k}" for k in range(len(data_shapes))]
    s = block(*[sym.var(n) for n in names])
    params = {p.name: p for p in block.collect_params().values()}
    given = dict(zip(names, data))
    arrays = [given[n] if n in given else params[n].data().asnumpy() for n in s.list_inputs()]
    return _compare(s, arrays, train=train, seed=seed, rtol=kw.get("rtol", 2e-4),
                    atol=kw.get("atol", 2e-5))


@pytest.mark.parametrize("train", [True, False])
def test_resnet18_v1(train):
    from gpunda.gluon.model_zoo import vision
    _block_compare(vision.resnet18_v1(classes=10), [(2, 3, 32, 32)], train)


def test_mobilenet_v2():
    from gpunda.gluon.model_zoo import vision
    _, view = _block_compare(vision.mobilenet_v2_0_25(classes=10), [(2, 3, 32, 32)], False)
    # inference: every BatchNorm joins the relu6 (clip) after it
    assert all(any(op == "BatchNorm" for op in g.describe()["ops"])
               for g in view._fusion_groups)


@pytest.mark.parametrize("train", [True, False])
def test_bert_like_encoder(train):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from gpunda._testing.fusion_models import BertEncoder
    enc = BertEncoder(vocab=50, layers=2, units=16, hidden=32, heads=2, max_len=8,
                      dropout=0.1)
    _block_compare(enc, [(2, 8), (2, 8), (2, 8)], train, tokens=True)


def test_unrolled_lstm():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from gpunda._testing.fusion_models import LSTMLM
    _, view = _block_compare(LSTMLM(vocab=30, units=8, steps=4, dropout=0.0), [(3, 4)],
                             True, tokens=True)
    # per step the gates' element-wise arithmetic is one group
    assert len(view._fusion_groups) >= 4


# -- generated sources -------------------------------------------------------------------

def _chain(dtype="float32"):
    x, b = sym.var("x"), sym.var("b")
    a = sym.Activation(sym.broadcast_add(x, b), act_type="tanh") * 0.5
    y = sym.exp(sym.FullyConnected(a, num_hidden=4, no_bias=True, name="fc")) + 1
    return sym.sqrt(sym.abs(y)) * 2


def test_one_kernel_per_group_and_direction():
    s = _chain()
    srcs = fusion.sources_for(s, {"x": (3, 4), "b": (4,), "fc_weight": (4, 4)})
    cop = CachedOp(s)
    ngroups = len(cop.fusion_report(train=False)["groups"])
    assert ngroups == 2 and len(srcs) == 2 * ngroups      # forward and backward per group
    for name, src in srcs:
        assert name.startswith("gpunda_fused_")
        assert src.count("__global__") == 1
        assert f'extern "C" __global__ void {name}(' in src
        assert "#include" not in src                       # self-contained for NVRTC
    # forward of the first group: tanh(x + b) * 0.5, b read with stride 0 along axis 0
    fwd = srcs[0][1]
    assert "in1[c1]" in fwd and "gp_tanh" in fwd


def test_float16_loads_and_stores_through_float():
    """float16 data is computed in float inside the kernel (MXNet's fused kernels did the
    same): loads convert up, the values are floats, stores round once."""
    s = _chain()
    srcs = fusion.sources_for(s, {"x": (3, 4), "b": (4,), "fc_weight": (4, 4)},
                              {"x": "float16", "b": "float16", "fc_weight": "float16"},
                              backward=False)
    for _, src in srcs:
        body = src.split('extern "C"')[1]
        assert "const unsigned short* __restrict__ in0" in body
        assert "gp_h2f(in0[" in body and "gp_f2h((float)" in body
        assert "const float v" in body and "half" not in body
    # the reference evaluator rounds once at the end: exact float32 math, then float16
    x = sym.var("x")
    y = sym.exp(x) * 3 - sym.tanh(x)
    cop = CachedOp(y, {"static_alloc": True})
    a = np.linspace(-2, 2, 50).astype(np.float16)
    got = cop._fused_view(False)(mx.nd.array(a, dtype="float16")).asnumpy()
    a32 = a.astype(np.float32)
    want = (np.exp(a32) * np.float32(3) - np.tanh(a32)).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-3)


def test_float64_groups_compute_in_double():
    x = sym.var("x")
    srcs = fusion.sources_for(sym.exp(x) * 3 - sym.tanh(x), {"x": (5,)}, {"x": "float64"})
    assert all("const double v" in s and "const float v" not in s.split('extern "C"')[1]
               for _, s in srcs)


def test_cpu_calls_never_build_a_fused_view():
    x = sym.var("x")
    cop = CachedOp(sym.exp(x) * 3 - sym.tanh(x), {"static_alloc": True})
    cop(mx.nd.ones((4,)))
    with autograd.record():
        cop(mx.nd.ones((4,)))
    assert cop._fusion_views == {}


def test_report_names_why_nodes_were_left_out():
    s = _chain()
    rep = CachedOp(s, {"static_alloc": True}).fusion_report(train=True)
    left = {d["node"]: d["reason"] for d in rep["left_out"]}
    assert left == {"fc": "not element-wise (GEMM)"}
    s = sym.Dropout(sym.exp(sym.var("x")), p=0.5) + 1
    rep = CachedOp(s, {"static_alloc": True}).fusion_report(train=True)
    assert any("random numbers" in d["reason"] for d in rep["left_out"])
    rep = CachedOp(s, {"static_alloc": True}).fusion_report(train=False)
    assert rep["left_out"] == [] and rep["groups"][0]["ops"] == ["exp", "Dropout",
                                                                  "_plus_scalar"]
    small = CachedOp(sym.exp(sym.var("x")) + 1)            # inlined: runs op by op
    assert "inline_limit" in small.fusion_report()["reason"]


def test_mxnet_use_fusion_0_turns_it_off():
    code = ("import gpunda as mx\nfrom gpunda._engine import fusion\n"
            "from gpunda._engine.cached_op import CachedOp\n"
            "s = mx.sym.exp(mx.sym.var('x')) * 2 + 1\n"
            "r = CachedOp(s, {'static_alloc': True}).fusion_report()\n"
            "print(fusion.ENABLED, r['reason'], len(r['groups']))\n")
    root = os.path.join(os.path.dirname(__file__), "..")
    env = dict(os.environ, MXNET_USE_FUSION="0", PYTHONPATH=os.path.abspath(root))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, cwd=root).stdout.split()
    assert out == ["False", "MXNET_USE_FUSION=0", "0"]


# -- the stand-in gpu(0): the fused path inside CachedOp ---------------------------------

class _Net(mx.gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.d1 = mx.gluon.nn.Dense(8, in_units=5)
            self.bn = mx.gluon.nn.BatchNorm(in_channels=8)
            self.d2 = mx.gluon.nn.Dense(4, in_units=8)

    def hybrid_forward(self, F, x):
        h = self.bn(self.d1(x))
        h = F.LeakyReLU(h, act_type="gelu") * 0.5 + F.tanh(h)
        h = F.Dropout(h, p=0.3)
        return F.broadcast_add(F.sigmoid(self.d2(h)), F.exp(-F.abs(h)).sum(axis=1,
                                                                           keepdims=True))


def _net_run(ctx, static):
    mx.random.seed(7)
    net = _Net()
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.hybridize(static_alloc=static, static_shape=static)
    x = mx.nd.array(np.random.RandomState(0).randn(3, 5), ctx=ctx)
    x.attach_grad()
    outs = [net(x).asnumpy() for _ in range(3)]          # warm-up, capture, replay
    with autograd.record(train_mode=False):
        z = net(x)
    z.backward(train_mode=False)
    return outs, x.grad.asnumpy(), net.d1.weight.grad().asnumpy(), net


@pytest.mark.parametrize("static", [False, True])
def test_standin_gpu_runs_the_fused_kernels(standin_gpu, static):
    cpu = _net_run(mx.cpu(), static)
    gpu = _net_run(mx.gpu(0), static)
    for a, b in zip(cpu[0] + [cpu[1], cpu[2]], gpu[0] + [gpu[1], gpu[2]]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    cop = gpu[3]._cached_op
    view = cop._fusion_views[False]
    assert view is not cop and view._fusion_groups
    assert all(g.launches > 0 for g in view._fusion_groups)
    rep = gpu[3].fusion_report(train=False)
    assert rep == cop.fusion_report(train=False)
    assert rep["fallbacks"] == {} and any("BatchNorm" in g["ops"] for g in rep["groups"])
    assert cpu[3]._cached_op._fusion_views == {}


class _ChannelNet(mx.gluon.HybridBlock):
    """BatchNorm + relu over NCHW maps: a group reading channel vectors (broadcast
    strides), whose kernel source bakes every axis but the batch axis."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.bn = mx.gluon.nn.BatchNorm(in_channels=3)

    def hybrid_forward(self, F, x):
        return F.relu(self.bn(x)) * 2.0


def test_standin_gpu_kernel_shared_across_batch_sizes(standin_gpu):
    """Two graphs that differ only in the batch size compile to one kernel name; each
    launch must still cover its own batch (the emulation reads it from n)."""
    for batch in (2, 5):
        x = np.random.RandomState(batch).randn(batch, 3, 4, 4).astype(np.float32)
        got = {}
        for ctx in (mx.cpu(), mx.gpu(0)):
            net = _ChannelNet()
            net.initialize(mx.init.Xavier(), ctx=ctx)
            net.bn.running_mean.set_data(mx.nd.array([0.1, -0.2, 0.3], ctx=ctx))
            net.hybridize(static_alloc=True, static_shape=True)
            got[ctx.device_type] = net(mx.nd.array(x, ctx=ctx)).asnumpy()
        np.testing.assert_allclose(got["gpu"], got["cpu"], rtol=1e-5, atol=1e-6)


def test_standin_gpu_without_fusion(standin_gpu, monkeypatch):
    """MXNET_USE_FUSION=0 (fusion.ENABLED false): gpu(0) runs the op-by-op plan."""
    monkeypatch.setattr(fusion, "ENABLED", False)
    cpu = _net_run(mx.cpu(), False)
    gpu = _net_run(mx.gpu(0), False)
    np.testing.assert_allclose(gpu[1], cpu[1], rtol=1e-5, atol=1e-6)
    assert gpu[3]._cached_op._fusion_views == {}
    assert gpu[3]._cached_op.fusion_report()["reason"] == "MXNET_USE_FUSION=0"


def _nvrtc():
    """libnvrtc from the nvidia-cuda-nvrtc wheel (CUDA 12 or 13), or None."""
    import ctypes
    import glob
    try:
        import nvidia.cuda_nvrtc as pkg
    except ImportError:
        try:
            import nvidia.cu13 as pkg
        except ImportError:
            return None
    for d in pkg.__path__:
        for f in sorted(glob.glob(os.path.join(d, "**", "libnvrtc.so*"), recursive=True)):
            if "builtins" not in f:
                return ctypes.CDLL(f)
    return None


def test_generated_sources_compile_with_nvrtc():
    """Every fused kernel of a ResNet, an LSTM and float16 variants compiles for sm_80 with
    NVRTC alone (no GPU, no driver, no headers)."""
    import ctypes
    lib = _nvrtc()
    if lib is None:
        pytest.skip("NVRTC not installed (pip install nvidia-cuda-nvrtc-cu12)")
    from gpunda.gluon.model_zoo import vision
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from gpunda._testing.fusion_models import LSTMLM
    r18 = vision.resnet18_v1()(sym.var("data"))
    f16 = {n: ("float32" if n.endswith(("gamma", "beta", "mean", "var")) else "float16")
           for n in r18.list_inputs()}
    lstm = LSTMLM(steps=2)(sym.var("tokens"))
    srcs = (fusion.sources_for(r18, {"data": (2, 3, 64, 64)}, f16) +
            fusion.sources_for(lstm, {"tokens": (4, 2)}, train=True))
    assert len(srcs) > 20
    for name, src in srcs:
        prog = ctypes.c_void_p()
        assert lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"k.cu", 0, None,
                                      None) == 0
        opts = (ctypes.c_char_p * 1)(b"--gpu-architecture=sm_80")
        rc = lib.nvrtcCompileProgram(prog, 1, opts)
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, log)
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        assert rc == 0, (name, log.value.decode()[:2000])


# -- training-mode Dropout: a random mask kernel and a multiply that fuses ----------------

def _dropout_graph(**kw):
    x, y = sym.var("x"), sym.var("y")
    a = sym.Dropout(sym.exp(x), **kw) + y              # the multiply joins exp and the add
    b = sym.Dropout(sym.tanh(y) * 2, p=0.3) - x        # a second draw, on another branch
    return a * b


@pytest.mark.parametrize("kw", [{"p": 0.5}, {"p": 0.2, "axes": (0,)}, {"p": 1.0},
                                {"p": 0.4, "mode": "always"}])
@pytest.mark.parametrize("train", [True, False])
def test_dropout_splits_into_mask_and_fused_multiply(kw, train):
    """While Dropout drops, its mask is its own random kernel and data * mask joins the
    group; values and gradients equal the unfused graph's exactly (same seed, same draws
    in the same order), including p=1 (MXNet's NaN mask) and a mask shared along axes."""
    s = _dropout_graph(**kw)
    rs = np.random.RandomState(0)
    arrays = [rs.randn(4, 5).astype(np.float32) for _ in s.list_inputs()]
    cop, view = _compare(s, arrays, train=train, rtol=0, atol=0, seed=7)
    rep = cop.fusion_report(train=train)
    drops = kw.get("mode") == "always" or train        # the first Dropout; the second: train
    ops = [op for g in rep["groups"] for op in g["ops"]]
    assert ops.count("_dropout_apply") == int(drops) + int(train)
    assert ops.count("Dropout") == 2 - int(drops) - int(train)
    assert rep["split"] == int(drops) + int(train)
    masks = [d for d in rep["left_out"] if d["op"] == "_dropout_mask"]
    assert len(masks) == rep["split"]
    assert all("random numbers" in d["reason"] for d in masks)
    if drops and kw["p"] < 1:       # the masks were drawn: some zeros, nothing else lost
        out_ref = _run(cop, arrays, train=train)[0][0]
        assert np.isfinite(out_ref).all()


def test_dropout_split_keeps_the_random_stream_order():
    """The fused plan draws its masks in the unfused plan's order, even where a group
    could otherwise run a later draw first."""
    x = sym.var("x")
    d1 = sym.Dropout(sym.exp(x), p=0.5)
    d2 = sym.Dropout(sym.exp(x) * 3, p=0.5)
    s = (d1 + 1) * (d2 + 2) + sym.FullyConnected(d1, num_hidden=5, no_bias=True,
                                                  flatten=False)
    cop = CachedOp(s, {"static_alloc": True})
    view = cop._fused_view(True)
    orig = [st.name for st in cop._steps if st.op.random]
    got = [st.name.replace("_mask", "") for st in view._steps if st.op.random]
    assert got == orig
    rs = np.random.RandomState(1)
    arrays = [rs.randn(*((3, 5) if n == "x" else (5, 5))).astype(np.float32)
              for n in s.list_inputs()]
    _compare(s, arrays, train=True, rtol=0, atol=0, seed=3)


def test_dropout_split_alone_is_undone():
    """A Dropout with no element-wise neighbour stays one step (splitting would add a
    kernel)."""
    s = sym.FullyConnected(sym.Dropout(sym.var("x"), p=0.5), num_hidden=3, no_bias=True)
    s = sym.FullyConnected(s, num_hidden=2, no_bias=True)
    rep = CachedOp(s, {"static_alloc": True}).fusion_report(train=True)
    assert rep["split"] == 0 and rep["groups"] == []
    assert [d["op"] for d in rep["left_out"]].count("Dropout") == 1


def test_dropout_split_float16():
    x, y = sym.var("x"), sym.var("y")
    s = sym.Dropout(x, p=0.3) + y
    rs = np.random.RandomState(2)
    arrays = [rs.randn(6, 7).astype(np.float16) for _ in range(2)]
    _compare(s, arrays, train=True, rtol=1e-3, atol=1e-3, seed=5)


def test_dropout_split_bfloat16_multiplies_by_the_ops_scale():
    """A bfloat16 Dropout computes on float32 and rounds once: x * float32(1 / (1 - p)).
    Its split must not round the mask to bfloat16 first (1 / 0.7 is no bfloat16): the
    mask stays float32 and the multiply rounds once, bit for bit the unfused values."""
    x, y = sym.var("x"), sym.var("y")
    s = sym.Dropout(sym.tanh(x), p=0.3) * y
    rs = np.random.RandomState(2)
    arrays = [rs.randn(6, 7) * 3, rs.randn(6, 7) * 3]
    cop = CachedOp(s, {"static_alloc": True})
    view = cop._fused_view(True)
    assert cop.fusion_report(True)["split"] == 1
    outs = []
    for c in (cop, view):
        args = [mx.nd.array(a, dtype="bfloat16") for a in arrays]
        mx.random.seed(5)
        with autograd.record(train_mode=True):
            outs.append(c(*args))
    a, b = (o.asnumpy().astype(np.float32) for o in outs)
    np.testing.assert_array_equal(b, a)
    bf = outs[0].asnumpy().dtype
    t = np.tanh(arrays[0].astype(bf).astype(np.float32)).astype(bf).astype(np.float32)
    kept = a != 0
    d = (t * np.float32(1 / 0.7)).astype(bf).astype(np.float32)
    want = (d * arrays[1].astype(bf).astype(np.float32)).astype(bf).astype(np.float32)
    assert 0 < kept.sum() < kept.size
    np.testing.assert_array_equal(a[kept], want[kept])


def test_dropout_split_counts():
    """Counted on the plan: the split Dropout's backward joins its group's kernel."""
    x, y = sym.var("x"), sym.var("y")
    s = sym.exp(sym.Dropout(x, p=0.5) + y)
    c = fusion.kernel_counts(s, {"x": (4, 5)}, train=True, grad_inputs=["x", "y"])
    # unfused: Dropout, add, exp forward and backward; fused: mask + one group forward,
    # one group backward (the mask has no gradient)
    assert c["forward"] == (3, 2) and c["backward"] == (3, 1) and c["split"] == 1


# -- row reductions: softmax and LayerNorm as row kernels ---------------------------------

@pytest.mark.parametrize("temperature", [None, 0.7])
def test_softmax_row_group_with_prologue_and_epilogue(temperature):
    """scale -> softmax -> * y is one row kernel each way; values and gradients equal
    the unfused ops' (NumPy's softmax and its gradient rule) to float32 rounding."""
    x, y = sym.var("x"), sym.var("y")
    kw = {} if temperature is None else {"temperature": temperature}
    s = sym.softmax(x * 0.25, axis=-1, **kw) * y
    rs = np.random.RandomState(4)
    arrays = [rs.randn(3, 5, 37).astype(np.float32) * 4, rs.randn(3, 5, 37).astype(np.float32)]
    _, view = _compare(s, arrays, rtol=1e-5, atol=1e-6)
    (g,) = view._fusion_groups
    assert g.row and g.describe()["ops"] == ["_mul_scalar", "softmax", "elemwise_mul"]


def test_layernorm_row_group_gradients_of_gamma_and_beta():
    """residual add -> LayerNorm -> GELU in one row kernel; gamma/beta gradients are the
    backward kernel's per-element terms summed over the rows."""
    x, r = sym.var("x"), sym.var("r")
    s = sym.LeakyReLU(sym.LayerNorm(x + r, sym.var("gamma"), sym.var("beta"), eps=1e-3),
                      act_type="gelu")
    rs = np.random.RandomState(5)
    arrays = {"x": rs.randn(4, 6, 300), "r": rs.randn(4, 6, 300),
              "gamma": rs.uniform(0.5, 1.5, 300), "beta": rs.randn(300)}
    _, view = _compare(s, [arrays[n].astype(np.float32) for n in s.list_inputs()],
                       rtol=1e-4, atol=1e-5)
    assert [g.describe()["ops"] for g in view._fusion_groups] == \
        [["elemwise_add", "LayerNorm", "LeakyReLU"]]


def test_row_group_float16_and_strided_input():
    x = sym.var("x")
    s = sym.LayerNorm(sym.transpose(x, axes=(1, 0)) * 2, sym.var("gamma"), sym.var("beta"))
    s = sym.softmax(s + 1)
    rs = np.random.RandomState(6)
    shapes = {"x": (9, 4), "gamma": (9,), "beta": (9,)}
    for dt, tol in (("float32", 1e-5), ("float16", 2e-3)):
        arrays = [rs.randn(*shapes[n]).astype(dt) for n in s.list_inputs()]
        _compare(s, arrays, rtol=tol, atol=tol)


def test_row_group_left_out_when_not_along_the_last_axis():
    x = sym.var("x")
    s = sym.softmax(sym.exp(x), axis=0) + 1
    rep = CachedOp(s, {"static_alloc": True}).fusion_report(train=True)
    why = {d["op"]: d["reason"] for d in rep["left_out"]}
    assert "axis=0" in why["softmax"]


def test_row_kernel_source_has_one_pass_per_reduction():
    from gpunda._engine.fusion.codegen import kernel_source
    from gpunda._engine.fusion.expr import Program, parse
    prog = Program(["float"])
    e = prog.emit(parse("exp(data - rmax(data)) / rsum(exp(data - rmax(data)))"),
                  {"data": prog.load(0)}, None, "float")
    prog.outputs = [e]
    prog = prog.pruned()
    _, src = kernel_source(prog, ["float32"], ["float32"], (5, 33), [(33, 1)])
    assert src.count("__syncthreads();\n      for (int s_") == 2 and "n / 33LL" in src
    from gpunda._engine.fusion.reference import evaluate
    a = np.random.RandomState(0).randn(5, 33).astype(np.float32)
    (got,) = evaluate(prog, [a], (5, 33), [(33, 1)], [np.float32])
    want = np.exp(a - a.max(-1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(-1, keepdims=True), rtol=1e-6)


def test_layernorm_vector_of_wrong_length_raises_the_ops_error():
    """A gamma that would broadcast (shape (1,)) is not fused: the op's own check runs."""
    x = sym.var("x")
    s = sym.exp(sym.LayerNorm(sym.exp(x), sym.var("gamma"), sym.var("beta")))
    view = CachedOp(s, {"static_alloc": True})._fused_view(True)
    args = [mx.nd.ones((2, 5)), mx.nd.ones((1,)), mx.nd.ones((5,))]
    with pytest.raises(mx.base.MXNetError, match="gamma"):
        view(*args)


def test_dropout_after_softmax_joins_its_row_group():
    """The attention-weight pattern: the mask step reads the softmax's input for its shape
    (NOTE [Fusion partition]), so scale -> softmax -> dropout multiply -> * v is one
    group, and the masks are the unfused ones (same seed)."""
    x, y = sym.var("x"), sym.var("y")
    s = sym.Dropout(sym.softmax(x * 0.5), p=0.3) * y
    rs = np.random.RandomState(8)
    arrays = [rs.randn(4, 3, 16).astype(np.float32) for _ in range(2)]
    cop, view = _compare(s, arrays, rtol=1e-5, atol=1e-6, seed=11)
    assert [g.describe()["ops"] for g in view._fusion_groups] == \
        [["_mul_scalar", "softmax", "_dropout_apply", "elemwise_mul"]]
    mask_step = [st for st in view._steps if st.op.name == "_dropout_mask"][0]
    assert mask_step.ins == (cop._steps[0].ins[0],)        # x, not the softmax output
