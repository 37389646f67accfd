"""GEMM epilogues (NOTE [GEMM epilogues] in gpunda/_engine/fusion/partition.py): a
FullyConnected's bias add split off its GEMM joins the element-wise group after it.

Fused against unfused on the CPU (the fused view runs each group through the NumPy
evaluator of its kernel's Program) and on the test stand-in gpu(0): values and the
gradients of data, weight and bias must equal the op-by-op plan's, whose FullyConnected
adds its own bias and sums its own bias gradient."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, sym
from gpunda._engine import fusion
from gpunda._engine.cached_op import CachedOp


@pytest.fixture(autouse=True)
def _cpu():
    with mx.cpu():
        yield


def _run(cop, arrays, train=True, dtype="float32"):
    args = [mx.nd.array(a, dtype=dtype) for a in arrays]
    for a in args:
        a.attach_grad()
    with autograd.record(train_mode=train):
        out = cop(*args)
    head = np.linspace(-1, 1, out.size).reshape(out.shape)
    out.backward(mx.nd.array(head, dtype=dtype), train_mode=train)
    return [out.asnumpy()] + [a.grad.asnumpy() for a in args]


def _compare(s, arrays, train=True):
    cop = CachedOp(s, {"static_alloc": True})
    view = cop._fused_view(train)
    ref, got = _run(cop, arrays, train), _run(view, arrays, train)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    return cop, view


def _arrays(s, shapes, seed=0):
    rs = np.random.RandomState(seed)
    return [rs.randn(*shapes[n]).astype(np.float32) for n in s.list_inputs()]


def _ops(view):
    return [st.op.name for st in view._steps]


@pytest.mark.parametrize("flatten,dshape", [(False, (2, 3, 5)), (True, (4, 2, 3))])
def test_bias_add_joins_the_gelu_after_it(flatten, dshape):
    x = sym.var("x")
    y = sym.LeakyReLU(sym.FullyConnected(x, num_hidden=6, flatten=flatten, name="fc"),
                      act_type="gelu")
    s = y * 0.5
    k = dshape[-1] if not flatten else int(np.prod(dshape[1:]))
    shapes = {"x": dshape, "fc_weight": (6, k), "fc_bias": (6,)}
    cop, view = _compare(s, _arrays(s, shapes))
    rep = cop.fusion_report(True)
    assert [g["ops"] for g in rep["groups"]] == [["_bias_add", "LeakyReLU", "_mul_scalar"]]
    # the GEMM runs without its bias; the add is inside the group's kernel
    gemm = [st for st in view._steps if st.op.name == "FullyConnected"]
    assert len(gemm) == 1 and gemm[0].p.no_bias and len(gemm[0].ins) == 2
    assert not any(g.fallbacks for g in view._fusion_groups)
    # the bias broadcasts over leading axes: the backward kernel sums its gradient
    # itself (NOTE [Column sums]), an output of its own
    (g,) = view._fusion_groups
    assert g.in_slots[0] == gemm[0].outs[0] and len(g.in_slots) == 2
    assert list(g._stored.values()) == [[0, 1]]


def test_convolution_bias_sum_reads_the_data_gradient_buffer():
    """A convolution's bias runs along axis 1, no column sum: its gradient is its data's
    ("g"), which the backward kernel stores once; the bias sum reads that buffer."""
    x = sym.var("x")
    c = sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    s = sym.tanh(c) * 2
    shapes = {"x": (2, 3, 5, 5), "conv_weight": (4, 3, 3, 3), "conv_bias": (4,)}
    _, view = _compare(s, _arrays(s, shapes))
    (g,) = view._fusion_groups
    assert [m.st.op.name for m in g.members][0] == "_bias_add"
    assert list(g._stored.values()) == [[0, 0]]
    # counted: dX, dW, the group and the bias sum
    assert fusion.kernel_counts(s, {"x": (2, 3, 5, 5)}, train=True,
                                grad_inputs=["x", "conv_weight", "conv_bias"]
                                )["backward"][1] == 4


def test_split_is_undone_when_the_add_finds_no_group():
    """A Dense read by a GEMM only keeps its own bias add (no kernel saved otherwise)."""
    x = sym.var("x")
    h = sym.FullyConnected(x, num_hidden=4, name="fc1")
    s = sym.exp(sym.FullyConnected(h, num_hidden=3, name="fc2")) + 1
    shapes = {"x": (2, 5), "fc1_weight": (4, 5), "fc1_bias": (4,), "fc2_weight": (3, 4),
              "fc2_bias": (3,)}
    cop, view = _compare(s, _arrays(s, shapes))
    fcs = [st for st in view._steps if st.op.name == "FullyConnected"]
    assert [st.p.no_bias for st in fcs] == [False, True]
    assert _ops(view).count("FullyConnected") == 2
    assert cop._fused_view(True)._nslots == cop._nslots + 1


def test_bias_of_shape_h_1_runs_member_by_member():
    """MXNet accepts an (H, 1) bias: the group's kernel takes vectors of shape (H,) only,
    so that signature runs the group op by op, with the same values."""
    x, b = sym.var("x"), sym.var("b")
    s = sym.tanh(sym.FullyConnected(x, bias=b, num_hidden=3, name="fc")) * 2
    shapes = {"x": (4, 5), "fc_weight": (3, 5), "b": (3, 1)}
    _, view = _compare(s, _arrays(s, shapes))
    assert any(g.fallbacks for g in view._fusion_groups)


def test_dropout_mask_reads_the_gemm_so_the_multiply_joins_the_add():
    """Dense -> Dropout -> residual add: the mask takes its shape from the GEMM's result,
    so the bias add, the Dropout multiply and the add are one group."""
    x = sym.var("x")
    d = sym.Dropout(sym.FullyConnected(x, num_hidden=5, flatten=False, name="fc"), p=0.4)
    s = sym.LayerNorm(x + d, name="ln")
    shapes = {"x": (2, 3, 5), "fc_weight": (5, 5), "fc_bias": (5,), "ln_gamma": (5,),
              "ln_beta": (5,)}
    cop = CachedOp(s, {"static_alloc": True})
    view = cop._fused_view(True)
    arrays = _arrays(s, shapes)
    mx.random.seed(3)
    ref = _run(cop, arrays)
    mx.random.seed(3)
    got = _run(view, arrays)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    groups = [g["ops"] for g in cop.fusion_report(True)["groups"]]
    assert groups == [["_bias_add", "_dropout_apply", "elemwise_add", "LayerNorm"]]


def test_convolution_bias_joins_an_inference_batchnorm():
    """Predict mode: the convolution's bias add (along axis 1) joins BatchNorm and relu;
    in training (BatchNorm's statistics are not element-wise) the split is undone."""
    x = sym.var("x")
    c = sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    s = sym.relu(sym.BatchNorm(c, fix_gamma=False, name="bn"))
    shapes = {"x": (2, 3, 5, 5), "conv_weight": (4, 3, 3, 3), "conv_bias": (4,),
              "bn_gamma": (4,), "bn_beta": (4,), "bn_moving_mean": (4,),
              "bn_moving_var": (4,)}
    arrays = _arrays(s, shapes)
    arrays[-1] = np.abs(arrays[-1]) + 0.5           # a variance
    cop, view = _compare(s, arrays, train=False)
    assert [g["ops"] for g in cop.fusion_report(False)["groups"]] == \
        [["_bias_add", "BatchNorm", "relu"]]
    assert not any(g.fallbacks for g in view._fusion_groups)
    assert cop.fusion_report(True)["groups"] == []
    assert fusion.kernel_counts(s, {"x": (2, 3, 5, 5)}, train=True)["epilogues"] == 0


def test_counts_charge_the_bias_add_and_sum():
    """Counted: unfused, FullyConnected is its GEMM plus its bias add forward and a GEMM
    per gradient plus the bias sum backward; fused, the add is inside the group and the
    sum is the group's sum over its broadcast bias, made by the group's backward kernel
    (NOTE [Column sums])."""
    x = sym.var("x")
    s = sym.Activation(sym.FullyConnected(x, num_hidden=6, name="fc"), act_type="tanh") * 2
    c = fusion.kernel_counts(s, {"x": (3, 4)}, train=True)    # x needs no gradient
    # unfused: GEMM + bias add, tanh, *2 forward; dW, db, tanh', *2' backward.
    # fused: GEMM, group forward; dW, group (with the bias sum) backward
    assert c["forward"] == (4, 2) and c["backward"] == (4, 2) and c["epilogues"] == 1
    c = fusion.kernel_counts(s, {"x": (3, 4)}, train=True, grad_inputs=["x", "fc_weight"])
    # dX and dW GEMMs on both sides; the bias needs no gradient: no sum
    assert c["backward"] == (4, 3)


class _Net(mx.gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.d1 = mx.gluon.nn.Dense(7, in_units=5, flatten=False)
            self.d2 = mx.gluon.nn.Dense(3, in_units=7, flatten=False)

    def hybrid_forward(self, F, x):
        return F.broadcast_add(self.d2(F.LeakyReLU(self.d1(x), act_type="gelu")),
                               x.sum(axis=-1, keepdims=True))


def _net_run(ctx):
    mx.random.seed(1)
    net = _Net()
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.hybridize(static_alloc=True)
    x = mx.nd.array(np.random.RandomState(0).randn(2, 4, 5), ctx=ctx)
    x.attach_grad()
    for _ in range(2):
        with autograd.record():
            y = net(x)
        y.backward()
    grads = [p.grad(ctx).asnumpy() for p in net.collect_params().values()]
    return [y.asnumpy(), x.grad.asnumpy()] + grads, net


def test_standin_gpu_runs_the_epilogue_kernels(standin_gpu):
    cpu, _ = _net_run(mx.cpu())
    gpu, net = _net_run(mx.gpu(0))
    for a, b in zip(cpu, gpu):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    rep = net.fusion_report(train=True)
    assert rep["fallbacks"] == {}
    assert any(g["ops"][:2] == ["_bias_add", "LeakyReLU"] for g in rep["groups"])
    view = net._cached_op._fusion_views[True]
    assert all(g.launches > 0 for g in view._fusion_groups)


# -- a channel vector that spans the group's iteration shape --------------------------------
# A Dense on one row: the bias (C,) is read as (1, C), the group's whole shape, so its
# gradient needs no sum, only a reshape back to (C,) (a Module bound for batch 1 failed
# here: "gradient of shape (1, 2) does not fit the gradient buffer of shape (2,)").

def _single_row_cases():
    x = sym.var("x")
    fc = sym.Activation(sym.FullyConnected(x, num_hidden=2, name="fc"), act_type="sigmoid")
    fc3 = sym.tanh(sym.FullyConnected(x, num_hidden=3, flatten=False, name="fc")) * 2
    conv = sym.relu(sym.Convolution(x, kernel=(3, 3), num_filter=4, name="conv")) * 3
    return [
        ("dense", fc * 1, {"x": (1, 2), "fc_weight": (2, 2), "fc_bias": (2,)}, True),
        ("dense_3d", fc3, {"x": (1, 1, 5), "fc_weight": (3, 5), "fc_bias": (3,)}, True),
        ("conv_1x1_output", conv, {"x": (1, 2, 3, 3), "conv_weight": (4, 2, 3, 3),
                                   "conv_bias": (4,)}, True),
        ("batchnorm", sym.relu(sym.BatchNorm(x, fix_gamma=False, name="bn")) * 2,
         {"x": (1, 3), "bn_gamma": (3,), "bn_beta": (3,), "bn_moving_mean": (3,),
          "bn_moving_var": (3,)}, False),
    ]


@pytest.mark.parametrize("case", _single_row_cases(), ids=lambda c: c[0])
def test_vector_spanning_the_group_gets_its_own_shape_back(case):
    _, s, shapes, train = case
    arrays = _arrays(s, shapes)
    if "bn_moving_var" in shapes:
        arrays[-1] = np.abs(arrays[-1]) + 0.5
    cop = CachedOp(s, {"static_alloc": True})
    view = cop._fused_view(train)
    assert len(view._fusion_groups) == 1
    ref, got = _run(cop, arrays, train), _run(view, arrays, train)
    for a, b in zip(ref, got):
        assert b.shape == a.shape
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert not any(g.fallbacks for g in view._fusion_groups)


def test_counts_no_bias_sum_for_a_single_row():
    x = sym.var("x")
    s = sym.Activation(sym.FullyConnected(x, num_hidden=6, name="fc"), act_type="tanh") * 2
    # fused backward: dW and the group; the bias's gradient is the group's, reshaped
    assert fusion.kernel_counts(s, {"x": (1, 4)}, train=True)["backward"] == (4, 2)
    # two rows: the group's kernel sums them (NOTE [Column sums])
    assert fusion.kernel_counts(s, {"x": (2, 4)}, train=True)["backward"] == (4, 2)


# -- the split rounds as the op does ---------------------------------------------------------
# Unfused, FullyConnected and Convolution on float16 write the GEMM in float16 and add the
# bias in float16; on bfloat16 they compute on float32 copies (the GEMM and the bias add)
# and round once. The split must do the same: bitwise equal values and gradients, where the
# group itself rounds as its ops do (relu commutes with rounding; a bfloat16 group runs its
# ops one by one). One exception: a group sums a float16 input's gradient in float32 and
# rounds once (as CuPy's float16 sum accumulates in float), where NumPy's float16 sum
# along the batch axis rounds at each step, so the float16 bias gradient may differ there
# by an ulp.

def _bits(x):
    return x.astype(np.float32)


def _epilogue_graph(kind, act):
    x = sym.var("x")
    if kind == "dense":
        y = sym.FullyConnected(x, num_hidden=6, flatten=False, name="fc")
        shapes = {"x": (3, 4, 7), "fc_weight": (6, 7), "fc_bias": (6,)}
    else:
        y = sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
        shapes = {"x": (2, 3, 5, 5), "conv_weight": (4, 3, 3, 3), "conv_bias": (4,)}
    y = sym.LeakyReLU(y, act_type="gelu") if act == "gelu" else sym.Activation(y, act_type=act)
    return y * 2, shapes


@pytest.mark.parametrize("dtype,kind,act", [
    ("float16", "dense", "relu"), ("float16", "conv", "relu"),
    ("bfloat16", "dense", "relu"), ("bfloat16", "dense", "tanh"),
    ("bfloat16", "dense", "sigmoid"), ("bfloat16", "dense", "gelu"),
    ("bfloat16", "conv", "relu"), ("bfloat16", "conv", "tanh")])
def test_split_rounds_as_the_op(dtype, kind, act):
    s, shapes = _epilogue_graph(kind, act)
    cop = CachedOp(s, {"static_alloc": True})
    view = cop._fused_view(True)
    assert cop.fusion_report(True)["groups"][0]["ops"][0] == "_bias_add"
    arrays = [a * 3 for a in _arrays(s, shapes, seed=5)]    # values whose sums round
    ref, got = _run(cop, arrays, dtype=dtype), _run(view, arrays, dtype=dtype)
    for k, (a, b) in enumerate(zip(ref, got)):
        assert b.dtype == a.dtype
        if dtype == "float16" and k == 3:       # the bias sum (see above)
            np.testing.assert_allclose(_bits(b), _bits(a), rtol=2e-3)
        else:
            np.testing.assert_array_equal(_bits(b), _bits(a))


def test_bfloat16_dense_then_dropout_keeps_the_dtype_and_the_ops_values():
    """The Dropout mask after a split bfloat16 Dense reads the GEMM's float32 result for its
    shape: the multiply still gives bfloat16, and the very values of the unfused plan."""
    x = sym.var("x")
    d = sym.Dropout(sym.FullyConnected(x, num_hidden=5, flatten=False, name="fc"), p=0.4)
    s = x + d
    shapes = {"x": (2, 3, 5), "fc_weight": (5, 5), "fc_bias": (5,)}
    cop = CachedOp(s, {"static_alloc": True})
    view = cop._fused_view(True)
    assert cop.fusion_report(True)["groups"][0]["ops"][:2] == ["_bias_add", "_dropout_apply"]
    arrays = [a * 3 for a in _arrays(s, shapes, seed=5)]
    mx.random.seed(3)
    ref = _run(cop, arrays, dtype="bfloat16")
    mx.random.seed(3)
    got = _run(view, arrays, dtype="bfloat16")
    assert [b.dtype for b in got] == [a.dtype for a in ref]
    np.testing.assert_array_equal(_bits(got[0]), _bits(ref[0]))
    np.testing.assert_array_equal(_bits(got[-1]), _bits(ref[-1]))     # the bias sum
