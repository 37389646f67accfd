"""Blocks: naming, deferred init, parameters, save/load, hybridize, export, bad input."""
import os

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, gluon, nd
from gpunda.base import GpundaError
from gpunda.gluon import nn

CPU = mx.cpu()


def _mlp(prefix=None):
    net = nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu"))
        net.add(nn.Dense(3))
    return net


def test_names_follow_mxnet_1x():
    with mx.name.NameManager():
        d = nn.Dense(3)
        d2 = nn.Dense(3)
        assert d.name == "dense0" and d2.name == "dense1"
        assert list(d.collect_params().keys()) == ["dense0_weight", "dense0_bias"]
        net = _mlp()
        assert net.name == "hybridsequential0"
        assert list(net.collect_params().keys()) == [
            "hybridsequential0_dense0_weight", "hybridsequential0_dense0_bias",
            "hybridsequential0_dense1_weight", "hybridsequential0_dense1_bias"]
        # the activation child of a Dense is named after its type
        assert net[0].act.name == "hybridsequential0_dense0_relu"
        assert nn.Activation("tanh").name == "tanh0"
        assert nn.Conv2D(4, 3).name == "conv0" and nn.MaxPool2D().name == "pool0"


def test_collect_params_select():
    net = _mlp("m_")
    assert list(net.collect_params(".*weight").keys()) == ["m_dense0_weight", "m_dense1_weight"]
    assert list(net.collect_params("m_dense1_.*|.*0_bias").keys()) == [
        "m_dense0_bias", "m_dense1_weight", "m_dense1_bias"]


def test_dense_forward_matches_numpy(rng):
    for flatten in (True, False):
        d = nn.Dense(5, flatten=flatten, in_units=6 if flatten else 3)
        d.initialize(mx.init.Normal(0.5), ctx=CPU)
        x = rng.standard_normal((2, 2, 3) if flatten else (4, 2, 3)).astype(np.float32)
        w = d.weight.data().asnumpy()
        b = d.bias.data().asnumpy()
        y = d(nd.array(x, ctx=CPU)).asnumpy()
        ref = x.reshape(2, -1) @ w.T + b if flatten else x @ w.T + b
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_deferred_init_fills_shape_on_first_forward():
    d = nn.Dense(4)
    d.initialize(ctx=CPU)
    assert d.weight.shape == (4, 0)
    with pytest.raises(gluon.DeferredInitializationError, match="dense.*_weight"):
        d.weight.data()
    d(nd.ones((2, 7), ctx=CPU))
    assert d.weight.shape == (4, 7)
    assert d.weight.data().shape == (4, 7)


def test_deferred_init_through_hybridized_stack(rng):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(3, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.Flatten(), nn.Dense(2))
    net.initialize(ctx=CPU)
    net.hybridize()
    x = nd.array(rng.standard_normal((2, 2, 4, 4)), ctx=CPU)
    y = net(x)
    assert y.shape == (2, 2)
    shapes = {k: v.shape for k, v in net.collect_params().items()}
    assert shapes[net[0].weight.name] == (3, 2, 3, 3)
    assert shapes[net[1].gamma.name] == (3,)
    assert shapes[net[4].weight.name] == (2, 48)


def test_hybridized_equals_imperative_forward_and_grads(rng):
    net = _mlp()
    net.initialize(mx.init.Xavier(), ctx=CPU)
    x = nd.array(rng.standard_normal((4, 5)).astype(np.float32), ctx=CPU)
    outs, grads = [], []
    for hyb in (False, True):
        net.hybridize(hyb)
        with autograd.record():
            y = net(x)
            loss = (y * y).sum()
        loss.backward()
        outs.append(y.asnumpy())
        grads.append({k: p.grad().asnumpy().copy() for k, p in net.collect_params().items()})
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)
    for k in grads[0]:
        np.testing.assert_allclose(grads[0][k], grads[1][k], rtol=1e-4, atol=1e-5)
    assert net._cached_op is not None


def test_dense_shape_mismatch_names_block_and_parameter():
    d = nn.Dense(3, in_units=5)
    d.initialize(ctx=CPU)
    with pytest.raises(GpundaError) as e:
        d(nd.ones((2, 7), ctx=CPU))
    msg = str(e.value)
    assert d.name in msg and d.weight.name in msg and "7" in msg


def test_data_on_other_context_names_parameter():
    d = nn.Dense(3, in_units=4)
    d.initialize(ctx=CPU)
    x = nd.ones((2, 4), ctx=mx.cpu(1))
    with pytest.raises(GpundaError) as e:
        d(x)
    msg = str(e.value)
    assert d.weight.name in msg and "cpu(1)" in msg and d.name in msg


def test_uninitialized_parameter_error():
    d = nn.Dense(3, in_units=4)
    with pytest.raises(GpundaError, match="has not been initialized"):
        d(nd.ones((2, 4), ctx=CPU))


def test_children_of_hybridblock_must_be_hybrid():
    net = nn.HybridSequential()
    with pytest.raises(GpundaError, match="HybridSequential"):
        net.add(nn.Lambda(lambda x: x))


def test_save_load_parameters_round_trip(tmp_path, rng):
    net = _mlp()
    net.initialize(mx.init.Normal(1.0), ctx=CPU)
    x = nd.array(rng.standard_normal((3, 5)), ctx=CPU, dtype="float32")
    y = net(x).asnumpy()
    f = str(tmp_path / "net.params")
    net.save_parameters(f)
    loaded = nd.load(f)
    assert sorted(loaded) == ["0.bias", "0.weight", "1.bias", "1.weight"]
    net2 = _mlp()
    net2.load_parameters(f, ctx=CPU)
    np.testing.assert_array_equal(net2(x).asnumpy(), y)
    # collect_params().save keeps full names; load_parameters accepts them too
    f2 = str(tmp_path / "net_full.params")
    net.collect_params().save(f2, strip_prefix=net.prefix)
    net3 = _mlp()
    net3.load_parameters(f2, ctx=CPU)
    np.testing.assert_array_equal(net3(x).asnumpy(), y)


def test_loaded_parameters_without_ctx_go_to_the_current_context(tmp_path, fake_gpu):
    # MXNet puts them on cpu(), its default device; gpunda's default may be a GPU, so
    # they follow the current context (and stay on cpu(0) when that is the default)
    net = _mlp()
    net.initialize(ctx=CPU)
    net.hybridize()
    x = nd.ones((2, 5), ctx=CPU)
    net(x)
    f = str(tmp_path / "net.params")
    net.save_parameters(f)
    net.export(str(tmp_path / "exp"))
    with CPU:
        on_cpu = _mlp()
        on_cpu.load_parameters(f)
    assert {c for p in on_cpu.collect_params().values() for c in p.list_ctx()} == {CPU}
    with fake_gpu:
        on_gpu = _mlp()
        on_gpu.load_parameters(f)
        imported = gluon.SymbolBlock.imports(str(tmp_path / "exp-symbol.json"), "data",
                                             str(tmp_path / "exp-0000.params"))
    for blk in (on_gpu, imported):
        assert {c for p in blk.collect_params().values() for c in p.list_ctx()} == {fake_gpu}
        np.testing.assert_allclose(blk(x.copyto(fake_gpu)).asnumpy(), net(x).asnumpy(),
                                   rtol=1e-6)


def test_load_parameters_missing_and_extra_names_listed(tmp_path):
    small = nn.HybridSequential()
    with small.name_scope():
        small.add(nn.Dense(3, in_units=5))
    small.initialize(ctx=CPU)
    f = str(tmp_path / "small.params")
    small.save_parameters(f)
    big = _mlp()
    with pytest.raises(GpundaError) as e:
        big.load_parameters(f, ctx=CPU)
    msg = str(e.value)
    assert "1.weight" in msg and "1.bias" in msg and "allow_missing" in msg
    # shape differs for '0.weight' (8x5 vs 3x5)
    big2 = nn.HybridSequential()
    with big2.name_scope():
        big2.add(nn.Dense(3), nn.Dense(2))
    big2.load_parameters(f, ctx=CPU, allow_missing=True)
    assert big2[0].weight.shape == (3, 5)
    f2 = str(tmp_path / "big.params")
    net = _mlp()
    net.initialize(ctx=CPU)
    net(nd.ones((1, 5), ctx=CPU))
    net.save_parameters(f2)
    with pytest.raises(GpundaError) as e:
        small.load_parameters(f2, ctx=CPU)
    msg = str(e.value)
    assert "1.weight" in msg and "1.bias" in msg and "ignore_extra" in msg
    with pytest.raises(GpundaError, match="shape"):
        small.load_parameters(f2, ctx=CPU, ignore_extra=True)   # 0.weight is 8x5 there


def test_export_and_symbolblock_imports(tmp_path, rng):
    net = nn.HybridSequential(prefix="exp_")
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, in_channels=2), nn.BatchNorm(in_channels=4),
                nn.Activation("relu"), nn.Dense(3))
    net.initialize(mx.init.Xavier(), ctx=CPU)
    net.hybridize()
    x = nd.array(rng.standard_normal((2, 2, 5, 5)), ctx=CPU, dtype="float32")
    y = net(x).asnumpy()
    path = str(tmp_path / "m")
    assert net.export(path, epoch=3) is None     # MXNet 1.9.1 returns nothing
    sym_file, params_file = path + "-symbol.json", path + "-0003.params"
    assert os.path.basename(params_file) == "m-0003.params"
    keys = set(nd.load(params_file))
    assert "arg:exp_conv0_weight" in keys and "aux:exp_batchnorm0_running_mean" in keys
    blk = gluon.SymbolBlock.imports(sym_file, ["data"], params_file, ctx=CPU)
    np.testing.assert_allclose(blk(x).asnumpy(), y, rtol=1e-5, atol=1e-6)


def test_symbolblock_imports_an_export_without_parameters(tmp_path):
    # nd.save of an empty dict writes the bytes of an empty list (MXNet 1.9.1 writes
    # 12 01 00 .. 00, 32 bytes, for both) and nd.load reads []; MXNet's
    # SymbolBlock.imports takes it as no parameters
    data = mx.sym.var("data")
    mx.sym.exp(data).save(str(tmp_path / "e-symbol.json"))
    nd.save(str(tmp_path / "e-0000.params"), {})
    raw = (tmp_path / "e-0000.params").read_bytes()
    assert raw == bytes.fromhex("12010000000000000000000000000000"
                                "00000000000000000000000000000000")
    assert nd.load(str(tmp_path / "e-0000.params")) == []
    blk = gluon.SymbolBlock.imports(str(tmp_path / "e-symbol.json"), ["data"],
                                    str(tmp_path / "e-0000.params"), ctx=CPU)
    np.testing.assert_allclose(blk(nd.array([0.0, 1.0])).asnumpy(), [1.0, np.e], rtol=1e-6)
    # a block that has parameters still misses them in such a file
    with pytest.raises(Exception, match="fc_weight"):
        mx.sym.FullyConnected(data, num_hidden=2, name="fc").save(str(tmp_path / "f-symbol.json"))
        gluon.SymbolBlock.imports(str(tmp_path / "f-symbol.json"), ["data"],
                                  str(tmp_path / "e-0000.params"), ctx=CPU)


def test_export_requires_forward():
    net = _mlp()
    net.initialize(ctx=CPU)
    with pytest.raises(GpundaError, match="hybridize"):
        net.export("never")


_FIX = os.environ["GPUNDA_MXNET_FIXTURES"]


@pytest.mark.mxnet_fixtures
def test_gluon_model_loads_mxnet_export_and_matches():
    """The same Gluon code as MXNet's generator gives the same names, values and grads."""
    exp = np.load(f"{_FIX}/cnn-expected.npz")
    with mx.name.NameManager():
        net = nn.HybridSequential(prefix="cnn_")
        with net.name_scope():
            net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                    nn.MaxPool2D(2), nn.Conv2D(16, 3, strides=2, padding=1), nn.BatchNorm(),
                    nn.Activation("relu"), nn.AvgPool2D(2), nn.Flatten(), nn.Dense(10))
    net.collect_params().load(f"{_FIX}/cnn-0000.params", ctx=CPU)
    x = nd.array(exp["in__data"], ctx=CPU)
    np.testing.assert_allclose(net(x).asnumpy(), exp["predict__out__0"], rtol=1e-4, atol=1e-5)
    head = nd.array(exp["head__0"], ctx=CPU)
    with autograd.record(train_mode=False):
        y = net(x)
    autograd.backward([y], [head], train_mode=False)
    for name, p in net.collect_params().items():
        key = f"grad_predict__param__{name}"
        if key in exp.files:
            np.testing.assert_allclose(p.grad().asnumpy(), exp[key], rtol=1e-4, atol=1e-5,
                                       err_msg=name)


@pytest.mark.mxnet_fixtures
def test_symbolblock_imports_mxnet_fixture():
    exp = np.load(f"{_FIX}/mlp-expected.npz")
    blk = gluon.SymbolBlock.imports(f"{_FIX}/mlp-symbol.json", ["data"],
                                    f"{_FIX}/mlp-0000.params", ctx=CPU)
    assert "mlp_dense0_weight" in blk.collect_params()
    y = blk(nd.array(exp["in__data"], ctx=CPU))
    np.testing.assert_allclose(y.asnumpy(), exp["predict__out__0"], rtol=1e-4, atol=1e-5)


def test_block_hooks_and_apply():
    net = _mlp()
    net.initialize(ctx=CPU)
    seen = []
    h = net[0].register_forward_hook(lambda blk, inp, out: seen.append(out.shape))
    net(nd.ones((2, 5), ctx=CPU))
    h.detach()
    net(nd.ones((2, 5), ctx=CPU))
    assert seen == [(2, 8)]
    names = []
    net.apply(lambda b: names.append(type(b).__name__))
    assert names == ["Activation", "Dense", "Dense", "HybridSequential"]


def test_custom_hybridblock_with_own_params(rng):
    class Scale(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.s = self.params.get("s", shape=(1, 3), init=mx.init.Constant(2.0))

        def hybrid_forward(self, F, x, s):
            return F.broadcast_mul(x, s)

    blk = Scale(prefix="sc_")
    blk.initialize(ctx=CPU)
    assert list(blk.collect_params()) == ["sc_s"]
    x = nd.array(rng.standard_normal((2, 3)), ctx=CPU, dtype="float32")
    for hyb in (False, True):
        blk.hybridize(hyb)
        np.testing.assert_allclose(blk(x).asnumpy(), 2 * x.asnumpy(), rtol=1e-6)


def test_sequential_plain_block_and_slicing():
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Dense(4, in_units=3), nn.Lambda(lambda x: x * 2), nn.Dense(2, in_units=4))
    net.initialize(ctx=CPU)
    assert len(net) == 3
    x = nd.ones((1, 3), ctx=CPU)
    h = net[0](x)
    np.testing.assert_allclose(net[:2](x).asnumpy(), 2 * h.asnumpy(), rtol=1e-6)
    y = net(x)
    assert y.shape == (1, 2)


def test_symbolblock_from_symbol_infers_shapes_and_block_on_symbol():
    data = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=4, name="fc1"), act_type="relu")
    out = mx.sym.FullyConnected(h, num_hidden=2, name="fc2")
    blk = gluon.SymbolBlock(out, data)
    assert list(blk.collect_params()) == ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    blk.initialize(mx.init.One(), ctx=CPU)
    y = blk(nd.ones((3, 5), ctx=CPU))
    assert blk.collect_params()["fc1_weight"].shape == (4, 5)
    # One() fills weights and biases alike: 5*1+1 per hidden unit, then 4*6+1
    np.testing.assert_allclose(y.asnumpy(), np.full((3, 2), 25.0))
    d = nn.Dense(3, in_units=5, prefix="dd_")
    s = d(mx.sym.var("data"))
    assert s.list_arguments() == ["data", "dd_weight", "dd_bias"]


def test_initialize_twice_warns_and_force_reinit():
    d = nn.Dense(2, in_units=2)
    d.initialize(mx.init.Zero(), ctx=CPU)
    with pytest.warns(UserWarning, match="already initialized"):
        d.initialize(mx.init.One(), ctx=CPU)
    np.testing.assert_array_equal(d.weight.data().asnumpy(), np.zeros((2, 2)))
    d.initialize(mx.init.One(), ctx=CPU, force_reinit=True)
    np.testing.assert_array_equal(d.weight.data().asnumpy(), np.ones((2, 2)))
    # the bias keeps its own initializer ('zeros') whatever the default is
    np.testing.assert_array_equal(d.bias.data().asnumpy(), np.zeros(2))


def test_load_parameters_accepts_export_file(tmp_path, rng):
    net = _mlp("ld_")
    net.initialize(mx.init.Normal(1.0), ctx=CPU)
    net.hybridize()
    x = nd.array(rng.standard_normal((2, 5)), ctx=CPU, dtype="float32")
    y = net(x).asnumpy()
    net.export(str(tmp_path / "ld"))
    params_file = str(tmp_path / "ld-0000.params")
    net2 = _mlp("ld_")
    net2.load_parameters(params_file, ctx=CPU)
    np.testing.assert_array_equal(net2(x).asnumpy(), y)


def test_hybridized_block_with_two_inputs_and_two_outputs(rng):
    class Two(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.fc = nn.Dense(3, in_units=4)

        def hybrid_forward(self, F, a, b):
            h = self.fc(a)
            return h + b, F.relu(h)

    blk = Two()
    blk.initialize(ctx=CPU)
    a = nd.array(rng.standard_normal((2, 4)), ctx=CPU, dtype="float32")
    b = nd.array(rng.standard_normal((2, 3)), ctx=CPU, dtype="float32")
    ref = [o.asnumpy() for o in blk(a, b)]
    blk.hybridize()
    got = blk(a, b)
    assert isinstance(got, list) and len(got) == 2
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g.asnumpy(), r, rtol=1e-6)
    assert blk._cached_graph[0][0].name == "data0"


def test_hybridized_deferred_block_traces_hybrid_forward_with_symbols_only():
    # MXNet's HybridBlock infers deferred shapes symbolically: a hybridized block's
    # hybrid_forward never sees NDArrays; an imperative one runs on NDArrays only (its
    # Dense child infers its own weight shape)
    seen = []

    class Net(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.dense = nn.Dense(4)

        def hybrid_forward(self, F, x):
            seen.append(F.__name__.split(".")[-1])
            return self.dense(x) * 2

    for hybrid, expect in ((True, ["symbol"]), (False, ["ndarray"])):
        seen.clear()
        net = Net()
        net.initialize(ctx=CPU)
        if hybrid:
            net.hybridize()
        y = net(nd.ones((2, 3), ctx=CPU))
        assert seen == expect and y.shape == (2, 4)
        assert net.dense.weight.shape == (4, 3)


# -- MXNet 1.9.1 input and attribute rules -----------------------------------------------
class _AddAB(gluon.HybridBlock):
    def hybrid_forward(self, F, a, b=None):
        if a is None:
            return b
        if b is None:
            return a
        return a + b


@pytest.mark.parametrize("hybridize", [False, True])
def test_hybrid_block_none_first_input(hybridize):
    blk = _AddAB()
    if hybridize:
        blk.hybridize()
    x = nd.array([1.0, 2.0])
    np.testing.assert_allclose(blk(None, x).asnumpy(), [1.0, 2.0])
    if hybridize:
        # the cached graph took None first: an NDArray there is a different structure
        with pytest.raises(ValueError):
            blk(x, x)


def test_hybrid_block_input_rules():
    with pytest.raises(ValueError):
        _AddAB()(None, None)
    with pytest.raises(ValueError):
        _AddAB()(nd.ones((2,)), mx.sym.var("a"))
    blk = _AddAB()
    blk.hybridize()
    with pytest.raises(ValueError):     # a scalar is not an array input once hybridized
        blk(nd.ones((2,)), 1)
    blk = _AddAB()
    blk.hybridize()
    with pytest.raises(ValueError):
        blk(nd.ones((2,), ctx=mx.cpu(1)), nd.ones((2,), ctx=mx.cpu(2)))
    # trailing None may come and go (default arguments)
    blk = _AddAB()
    blk.hybridize()
    x = nd.array([3.0])
    assert blk(x, None).asnumpy()[0] == 3.0 and blk(x).asnumpy()[0] == 3.0
    # un-hybridized, a HybridBlock takes lists and scalars like a Block
    assert _AddAB()([nd.ones((2,)), nd.ones((2,))][0], 2).asnumpy().tolist() == [3.0, 3.0]


def test_block_attr_type_change_is_type_error():
    b = gluon.Block()
    b.c = gluon.Block()
    with pytest.raises(TypeError):
        b.c = (2,)
    b.plain = None
    b.plain = 1     # ordinary attributes may change type


def test_unregistered_block_container_warns():
    class M(gluon.Block):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.layers = [nn.Dense(2), nn.Dense(3)]
                self.data = {"a": 1}

    with pytest.warns(UserWarning, match="unregistered container"):
        M().collect_params()


def test_dense_zero_units():
    # MXNet builds Dense(0) (its weight shape stays unknown); a negative count is refused
    assert nn.Dense(0, in_units=3).weight.shape == (0, 3)
    with pytest.raises(GpundaError, match="units"):
        nn.Dense(-1)


def test_load_deduplicated_shared_parameters(tmp_path):
    class B(gluon.Block):
        def __init__(self, params=None):
            super().__init__(params=params)
            with self.name_scope():
                self.weight = self.params.get("weight", shape=(2, 2))

    class C(gluon.Block):
        def __init__(self, b1, b2):
            super().__init__()
            self.b1, self.b2 = b1, b2

    def make():
        b1 = B()
        return C(b1, B(b1.collect_params()))

    c = make()
    c.initialize()
    f = str(tmp_path / "p.params")
    c.save_parameters(f, deduplicate=True)
    assert list(nd.load(f)) == ["b1.weight"]
    c2 = make()
    c2.load_parameters(f)
    np.testing.assert_allclose(c2.b2.weight.data().asnumpy(), c.b1.weight.data().asnumpy())


def test_summary_refuses_hybridized():
    net = _mlp()
    net.initialize()
    net.hybridize()
    with pytest.raises(AssertionError):
        net.summary(nd.ones((2, 4)))


def test_symbol_block_refuses_row_sparse_var():
    data = mx.sym.var("data")
    out = mx.sym.dot(data, mx.sym.var("weight", stype="row_sparse"))
    with pytest.raises(AssertionError, match="row_sparse"):
        gluon.SymbolBlock(out, data)


def test_invalid_stype_is_assertion_error():
    with pytest.raises(AssertionError):
        gluon.Parameter("w", shape=(2,), stype="bad")
    with pytest.raises(AssertionError):
        gluon.Parameter("w", shape=(2,), grad_stype="bad")


def test_shared_params_with_equal_initializer():
    class M(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.p = self.params.get("p", shape=(1,), init=mx.init.Constant(-10.0))

    a = M()
    assert M(params=a.collect_params()).p is a.p
    assert mx.init.Constant(-10.0) == mx.init.Constant(-10.0) != mx.init.Constant(1.0)


def test_reload_with_saved_dtype_recasts(tmp_path):
    f = str(tmp_path / "d.params")
    p0 = gluon.ParameterDict("")
    p0.get("w0", shape=(2, 2), dtype="float32")
    p0.initialize(mx.init.One())
    p0.save(f)
    p1 = gluon.ParameterDict("")
    p1.get("w0", shape=(2, 2), dtype="float16")
    p1.load(f, cast_dtype=True, dtype_source="current")
    assert p1["w0"].data().dtype == np.float16
    p1.load(f, cast_dtype=True, dtype_source="saved")     # already initialized: recast
    assert p1["w0"].data().dtype == np.float32
    np.testing.assert_array_equal(p1["w0"].data().asnumpy(), np.ones((2, 2)))


def _three_dense():
    net = mx.gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        for _ in range(3):
            net.add(mx.gluon.nn.Dense(4))
    net.initialize()
    return net


def test_inline_limit_decides_whether_the_tape_shows_ops_or_one_call():
    import json
    net = _three_dense()
    x = mx.nd.ones((2, 4))
    counts = {}
    for limit in (3, 0):
        net.hybridize(inline_limit=limit)
        with mx.autograd.record():
            y = net(x)
        ops = [n["op"] for n in json.loads(mx.autograd.get_symbol(y).tojson())["nodes"]]
        counts[limit] = len(ops)
        y.backward()
        assert ("_CachedOp" in ops) == (limit == 0)
        g = net[0].weight.grad().asnumpy().copy()
        if limit == 0:
            np.testing.assert_allclose(g, g_inlined, rtol=1e-6)
        g_inlined = g
    # MXNet 1.9.1's test_inline: 3 x (weight, bias, FullyConnected) + data inlined,
    # 6 parameters + data + one _CachedOp node otherwise
    assert counts == {3: 10, 0: 8}


def test_register_op_hook_reports_each_op_with_mxnet_names():
    net = mx.gluon.nn.HybridSequential(prefix="m_")
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(2))
        net.add(mx.gluon.nn.Activation("relu"))
    net.initialize()
    net.hybridize()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.shape)),
                         monitor_all=True)
    x = mx.nd.ones((3, 5))
    y = net(x)
    assert seen == [(b"m_dense0_fwd_data", b"FullyConnected", (3, 5)),
                    (b"m_dense0_fwd_weight", b"FullyConnected", (2, 5)),
                    (b"m_dense0_fwd_bias", b"FullyConnected", (2,)),
                    (b"m_dense0_fwd_output", b"FullyConnected", (3, 2)),
                    (b"m_relu0_fwd_input0", b"Activation", (3, 2)),   # no input names
                    (b"m_relu0_fwd_output", b"Activation", (3, 2))]
    outputs = []
    net.register_op_hook(lambda name, op, arr: outputs.append(arr.asnumpy()))
    y2 = net(x)
    assert len(outputs) == 2
    np.testing.assert_allclose(outputs[1], y2.asnumpy())
    np.testing.assert_allclose(y2.asnumpy(), y.asnumpy())
    with pytest.raises(GpundaError, match="callable"):
        net._cached_op._register_op_hook(3)


def test_optimize_for_and_backends():
    net = _three_dense()
    with pytest.raises(ValueError, match="backend"):
        net.optimize_for(mx.nd.ones((1, 4)))
    with pytest.raises(GpundaError, match="'MKLDNN'"):
        net.optimize_for(mx.nd.ones((1, 4)), backend="MKLDNN")
    with pytest.raises(GpundaError, match="'myPart'"):
        net.hybridize(True, "myPart")


def test_symbol_compose_in_place():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    s = a * 2
    s._compose(a=b + 1)
    assert s.list_arguments() == ["b"]
    np.testing.assert_allclose(s.eval(b=mx.nd.ones(2))[0].asnumpy(), [4, 4])


def test_reset_ctx_of_uninitialized_parameter_is_a_value_error_as_mxnet():
    # GluonCV's model builders (get_faster_rcnn, ...) call reset_ctx on every parameter
    # and skip the uninitialised ones with `except ValueError`. MXNet 1.9.1 on this net:
    # the two never-initialised ones raise "Cannot reset context for Parameter
    # 'dense0_weight' because it has not been initialized."; the initialised and the
    # deferred ones move to cpu(1), and every parameter ends on cpu(1) after a forward
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(3, in_units=2), nn.Dense(2))
        net[0].initialize(ctx=mx.cpu(0))
        net[1].initialize(ctx=mx.cpu(0))      # deferred: in_units unknown
        net.add(nn.Dense(1))                  # never initialised
    skipped = []
    for v in net.collect_params().values():
        try:
            v.reset_ctx(mx.cpu(1))
        except ValueError as e:
            assert isinstance(e, GpundaError)
            assert str(e).startswith(f"Cannot reset context for Parameter {v.name!r} because "
                                     f"it has not been initialized.")
            skipped.append(v.name)
    assert skipped == ["dense0_weight", "dense0_bias"]
    assert net[1].weight.list_ctx() == [mx.cpu(1)]     # the deferred one took the context
    net[2].initialize(ctx=mx.cpu(1))
    y = net(nd.ones((4, 2), ctx=mx.cpu(1)))
    assert y.context == mx.cpu(1)
    assert all(p.list_ctx() == [mx.cpu(1)] for p in net.collect_params().values())
