"""Parameters keep the dtype of the checkpoint they are loaded from, by every loading path.

``data/dtype_ckpt/`` holds float16, float64 and int32 checkpoints written by real MXNet
1.9.1 and, in ``records.npz``, what MXNet 1.9.1 does when each is loaded by each path:
the parameters' dtypes and the forward's output, or the exception it raised (made by
``data/make_dtype_checkpoint_fixture.py``, whose paths ``_load`` below mirrors).
"""
import os

import numpy as np
import pytest

import gpunda as mx
from gpunda import gluon
from gpunda.base import GpundaError

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "dtype_ckpt")
REC = np.load(os.path.join(HERE, "records.npz"))
INPUTS = np.load(os.path.join(HERE, "inputs.npz"))
CASES = sorted({k.rsplit("/", 1)[0] for k in REC.files})


def _pdtypes(params):
    return sorted(f"{k}:{np.dtype(p.dtype).name}" for k, p in params.items())


def _load(model, path):
    """Load checkpoint ``model`` by ``path``; returns (dtypes or None, block or module)."""
    pre = os.path.join(HERE, model)
    dt = model.split("_")[1]
    x = mx.nd.array(INPUTS[model + "/x"], dtype=dt, ctx=mx.cpu())
    sym, args, aux = mx.model.load_checkpoint(pre, 0)
    if path.startswith(("sb_", "imports")):
        if path == "sb_typed_load_parameters":
            net = gluon.SymbolBlock(sym, [mx.sym.var("data", dtype=dt)])
            net.load_parameters(pre + "-0000.params", ctx=mx.cpu())
        elif path == "sb_internal_load_dict":
            net = gluon.SymbolBlock(sym, sym.get_internals()["data"])
            net.collect_params().load_dict(dict(args, **aux), ctx=mx.cpu())
        elif path == "sb_plain_load_dict":
            net = gluon.SymbolBlock(sym, mx.sym.var("data"))
            net.collect_params().load_dict(dict(args, **aux), ctx=mx.cpu())
        else:
            net = gluon.SymbolBlock.imports(pre + "-symbol.json", ["data"],
                                            pre + "-0000.params", ctx=mx.cpu())
            if path == "imports_hybridized":
                net.hybridize()
                net(x)
        return _pdtypes(net.collect_params()), net(x)
    if path.startswith("module"):
        desc = [mx.io.DataDesc("data", (2, 4), dtype=dt)]
        if path == "module_load_bind":
            mod = mx.mod.Module.load(pre, 0, data_names=["data"], label_names=None,
                                     context=mx.cpu())
            mod.bind(data_shapes=desc, for_training=False)
        else:
            mod = mx.mod.Module(sym, data_names=["data"], label_names=None, context=mx.cpu())
            mod.bind(data_shapes=desc, for_training=False)
            mod.set_params(args, aux)
        a, b = mod.get_params()
        dtypes = sorted(f"{k}:{np.dtype(v.dtype).name}" for k, v in {**a, **b}.items())
        mod.forward(mx.io.DataBatch([x]), is_train=False)
        return dtypes, mod.get_outputs()[0]
    if path == "symbol_bind":
        ex = sym.bind(mx.cpu(), dict(args, data=x), aux_states=aux)
        return None, ex.forward()[0]
    net = gluon.nn.HybridSequential(prefix="")
    with net.name_scope():
        net.add(gluon.nn.Dense(3, activation="relu", prefix="fc1_"))
    if path == "dense_hybridized_saved":
        net.initialize(ctx=mx.cpu())
        net.hybridize()
        net(x.astype("float32"))       # builds a CachedOp whose weights were float32
    net.load_parameters(pre + "-0000.params", ctx=mx.cpu(), cast_dtype=True,
                        dtype_source="saved")
    return _pdtypes(net.collect_params()), net(x)


@pytest.mark.parametrize("case", CASES)
def test_loading_keeps_checkpoint_dtype_as_mxnet(case):
    model, path = case.split("/")
    if case + "/error" in REC.files:
        # MXNet 1.9.1 refuses (AssertionError): float32 parameters and no cast_dtype
        with pytest.raises(AssertionError, match="cast_dtype") as info:
            _load(model, path)
        assert isinstance(info.value, GpundaError)
        return
    dtypes, out = _load(model, path)
    if case + "/dtypes" in REC.files:
        assert dtypes == REC[case + "/dtypes"].tolist()
    want = REC[case + "/out"]
    got = out.asnumpy()
    assert got.dtype == np.dtype(model.split("_")[1])
    # float64: MXNet adds BatchNorm's eps as a float32 (1e-3 + 4.7e-11), 3e-10 apart; a float32
    # round trip of the weights would be some 1e-7 apart
    tol = 2e-3 if got.dtype == np.float16 else 1e-9
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


def test_symbolblock_infers_parameter_dtypes_from_inputs():
    # MXNet 1.9.1: the parameters get the graph's dtypes from the inputs' declared ones,
    # float32 when an input declares none (with the checkpoint's graph: sym.infer_type)
    sym, _, _ = mx.model.load_checkpoint(os.path.join(HERE, "fc_float64"), 0)
    typed = gluon.SymbolBlock(sym, mx.sym.var("data", dtype="float64"))
    assert {np.dtype(p.dtype).name for p in typed.collect_params().values()} == {"float64"}
    plain = gluon.SymbolBlock(sym, mx.sym.var("data"))
    assert {np.dtype(p.dtype).name for p in plain.collect_params().values()} == {"float32"}
    half = gluon.SymbolBlock(mx.sym.var("d", dtype="float16") * mx.sym.var("w"),
                             mx.sym.var("d", dtype="float16"))
    assert half.collect_params()["w"].dtype == np.float16


def test_symbolblock_params_must_be_a_parameterdict():
    # MXNet fails with AttributeError deep inside; gpunda names the argument
    sym, args, _ = mx.model.load_checkpoint(os.path.join(HERE, "nodt_float64"), 0)
    with pytest.raises(TypeError, match="ParameterDict.*load_dict") as info:
        gluon.SymbolBlock(sym, mx.sym.var("data"), params=args)
    assert isinstance(info.value, GpundaError)
    shared = gluon.SymbolBlock(sym, mx.sym.var("data", dtype="float64"))
    other = gluon.SymbolBlock(sym, mx.sym.var("data", dtype="float64"),
                              params=shared.collect_params())
    assert other.collect_params()["fc1_weight"] is shared.collect_params()["fc1_weight"]
