"""MXNet 1.9.1 checkpoints (mlp, cnn, textemb) reproduce MXNet's outputs and gradients.

Each fixture model has ``M-symbol.json`` + ``M-0000.params`` and the values MXNet
computed (``M-expected.npz``) with the recipes of the fixtures README: predict,
grad_predict (record(train_mode=False) + backward(train_mode=False)) and, for
the BatchNorm model, one train-mode step with the running stats after it.
"""
import hashlib
import json
import os

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

FIX = os.environ["GPUNDA_MXNET_FIXTURES"]
MODELS = ["mlp", "cnn", "textemb"]
pytestmark = pytest.mark.mxnet_fixtures


def _fixture(model):
    with open(os.path.join(FIX, f"{model}-manifest.json")) as f:
        manifest = json.load(f)
    return manifest, np.load(os.path.join(FIX, f"{model}-expected.npz"))


def _tol(manifest):
    t = manifest.get("suggested_tolerance") or {"rtol": 1e-4, "atol": 1e-5}
    return t["rtol"], t["atol"]


def _close(actual, expected, manifest, what):
    rtol, atol = _tol(manifest)
    actual = actual.asnumpy() if hasattr(actual, "asnumpy") else np.asarray(actual)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def _inputs(manifest, npz, with_grad):
    xs = []
    for spec in manifest["inputs"]:
        x = mx.nd.array(npz[spec["npz_key"]], dtype=spec["dtype"])
        if with_grad and spec["role"] == "float":
            x.attach_grad()
        xs.append(x)
    return xs


def _heads(manifest, npz):
    return [mx.nd.array(npz[o["head_npz_key"]]) for o in manifest["outputs"]]


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _block(model):
    gluon = pytest.importorskip("gpunda.gluon")
    if not hasattr(gluon, "SymbolBlock"):
        pytest.skip("gluon.SymbolBlock is not available")
    manifest, _ = _fixture(model)
    names = [i["name"] for i in manifest["inputs"]]
    return gluon.SymbolBlock.imports(os.path.join(FIX, f"{model}-symbol.json"), names,
                                     os.path.join(FIX, f"{model}-0000.params"), ctx=mx.current_context())


# -- checkpoint loading and saving --------------------------------------------------------

def _checkpoint(model):
    """load_checkpoint (arrays on cpu(0), as in MXNet), moved to the default device."""
    sym, args, auxs = mx.model.load_checkpoint(os.path.join(FIX, model), 0)
    ctx = mx.current_context()
    return (sym, {k: v.as_in_context(ctx) for k, v in args.items()},
            {k: v.as_in_context(ctx) for k, v in auxs.items()})


@pytest.mark.parametrize("model", MODELS)
def test_load_checkpoint_splits_args_and_aux(model):
    manifest, _ = _fixture(model)
    sym, args, auxs = _checkpoint(model)
    want_args = {p["name"]: p for p in manifest["params"] if p["kind"] == "arg"}
    want_aux = {p["name"]: p for p in manifest["params"] if p["kind"] == "aux"}
    assert set(args) == set(want_args) and set(auxs) == set(want_aux)
    for name, arr in list(args.items()) + list(auxs.items()):
        spec = want_args.get(name) or want_aux[name]
        host = arr.asnumpy()
        assert host.shape == tuple(spec["shape"]) and host.dtype == np.dtype(spec["dtype"])
        assert hashlib.sha256(host.tobytes()).hexdigest() == spec["sha256"]
    # the graph agrees on which variables are parameters and which are aux states
    inputs = {i["name"] for i in manifest["inputs"]}
    assert set(sym.list_arguments()) - inputs - {"softmax_label"} == set(args)
    assert set(sym.list_auxiliary_states()) == set(auxs)


@pytest.mark.parametrize("model", MODELS)
def test_checkpoint_roundtrip(model, tmp_path):
    sym, args, auxs = _checkpoint(model)
    prefix = str(tmp_path / model)
    mx.model.save_checkpoint(prefix, 7, sym, args, auxs)
    assert sorted(os.listdir(tmp_path)) == [f"{model}-0007.params", f"{model}-symbol.json"]
    sym2, args2, auxs2 = mx.model.load_checkpoint(prefix, 7)
    for a, b in ((args, args2), (auxs, auxs2)):
        assert list(a) == list(b)
        for k in a:
            assert a[k].asnumpy().tobytes() == b[k].asnumpy().tobytes()
    with open(os.path.join(FIX, f"{model}-symbol.json")) as f:
        orig = json.load(f)
    with open(prefix + "-symbol.json") as f:
        new = json.load(f)
    strip = lambda g: [(n["op"], n["name"], [e[:2] for e in n["inputs"]]) for n in g["nodes"]]  # noqa: E731
    assert strip(new) == strip(orig)
    assert [e[:2] for e in new["heads"]] == [e[:2] for e in orig["heads"]]
    if not auxs:
        # arg-only checkpoints come out byte for byte as MXNet wrote them
        with open(os.path.join(FIX, f"{model}-0000.params"), "rb") as f:
            assert (tmp_path / f"{model}-0007.params").read_bytes() == f.read()


def test_save_checkpoint_key_layout_and_errors(tmp_path):
    prefix = str(tmp_path / "m")
    w, m = mx.nd.ones((2, 2)), mx.nd.zeros((2,))
    mx.model.save_checkpoint(prefix, 0, None, {"w": w}, {"m": m})
    assert list(mx.nd.load(prefix + "-0000.params")) == ["arg:w", "aux:m"]
    args, auxs = mx.model.load_params(prefix, 0)
    assert list(args) == ["w"] and list(auxs) == ["m"]
    with pytest.raises(GpundaError, match="aux_params\\['bad'\\]"):
        mx.model.save_checkpoint(prefix, 1, None, {"w": w}, {"bad": np.zeros(2)})
    assert not os.path.exists(prefix + "-0001.params")
    with pytest.raises(GpundaError, match="epoch"):
        mx.model.save_checkpoint(prefix, -1, None, {"w": w}, {})
    mx.nd.save(prefix + "-0002.params", {"weight": w})   # Block.save_parameters style
    with pytest.raises(GpundaError, match="'weight'.*arg:"):
        mx.model.load_params(prefix, 2)
    mx.model.save_checkpoint(prefix, 3, None, {}, {})
    assert mx.model.load_params(prefix, 3) == ({}, {})
    missing = tmp_path / "no" / "such"
    with pytest.raises(GpundaError, match="folder .*no/such.* does not exist"):
        mx.model.save_checkpoint(str(missing / "m"), 0, mx.sym.var("x"), {"w": w}, {})
    assert not (tmp_path / "no").exists()


# -- numerical reproduction via gluon.SymbolBlock -----------------------------------------

@pytest.mark.parametrize("model", MODELS)
def test_symbolblock_predict(model):
    manifest, npz = _fixture(model)
    net = _block(model)
    outs = _as_list(net(*_inputs(manifest, npz, with_grad=False)))
    assert len(outs) == len(manifest["outputs"])
    for o, spec in zip(outs, manifest["outputs"]):
        _close(o, npz[spec["predict_npz_key"]], manifest, f"{model} predict output {spec['index']}")


@pytest.mark.parametrize("model", MODELS)
def test_symbolblock_grad_predict(model):
    manifest, npz = _fixture(model)
    net = _block(model)
    xs = _inputs(manifest, npz, with_grad=True)
    with mx.autograd.record(train_mode=False):
        outs = _as_list(net(*xs))
    mx.autograd.backward(outs, _heads(manifest, npz), train_mode=False)
    params = net.collect_params()
    checked = 0
    for key in manifest["expectations"]["grad_predict"]["keys"]:
        kind, name = key.split("__")[1:]
        if kind == "in":
            spec = next(i for i in manifest["inputs"] if i["name"] == name)
            g = xs[manifest["inputs"].index(spec)].grad
        else:
            g = params[name].grad()
        _close(g, npz[key], manifest, f"{model} {key}")
        checked += 1
    assert checked == len(manifest["expectations"]["grad_predict"]["keys"])
    # predict mode must leave the running statistics alone
    for key in [k for k in npz.files if k.startswith("predict__aux_after__")]:
        name = key.split("__")[2]
        _close(params[name].data(), npz[key], manifest, key)


def test_symbolblock_cnn_train_step():
    manifest, npz = _fixture("cnn")
    net = _block("cnn")
    xs = _inputs(manifest, npz, with_grad=True)
    with mx.autograd.record(train_mode=True):
        outs = _as_list(net(*xs))
    mx.autograd.backward(outs, _heads(manifest, npz), train_mode=True)
    _close(outs[0], npz["train__out__0"], manifest, "cnn train output")
    params = net.collect_params()
    for key in manifest["expectations"]["train"]["keys"]:
        parts = key.split("__")
        if parts[0] == "grad_train":
            g = xs[0].grad if parts[1] == "in" else params[parts[2]].grad()
            _close(g, npz[key], manifest, key)
        elif parts[0] == "train" and parts[1] == "aux_after":
            _close(params[parts[2]].data(), npz[key], manifest, key)


# -- the same through CachedOp and the executor ------------------------------------------

def _cached_op_inputs(sym, manifest, npz, args, auxs, with_grad):
    data = dict(zip([i["name"] for i in manifest["inputs"]], _inputs(manifest, npz, with_grad)))
    values = {**args, **auxs, **data}
    if with_grad:
        for k in args:
            values[k].attach_grad()
    return [values[n] for n in sym.list_inputs()], data


@pytest.mark.parametrize("model", MODELS)
def test_cached_op_predict_and_grad(model):
    if not hasattr(mx, "CachedOp"):
        pytest.skip("gpunda.CachedOp is not available")
    manifest, npz = _fixture(model)
    sym, args, auxs = _checkpoint(model)
    op = mx.CachedOp(sym)
    ins, data = _cached_op_inputs(sym, manifest, npz, args, auxs, with_grad=True)
    outs = _as_list(op(*ins))
    for o, spec in zip(outs, manifest["outputs"]):
        _close(o, npz[spec["predict_npz_key"]], manifest, f"{model} CachedOp predict")
    with mx.autograd.record(train_mode=False):
        outs = _as_list(op(*ins))
    mx.autograd.backward(outs, _heads(manifest, npz), train_mode=False)
    for key in manifest["expectations"]["grad_predict"]["keys"]:
        kind, name = key.split("__")[1:]
        g = data[name].grad if kind == "in" else args[name].grad
        _close(g, npz[key], manifest, f"{model} CachedOp {key}")


@pytest.mark.parametrize("model", MODELS)
def test_executor_predict(model):
    manifest, npz = _fixture(model)
    sym, args, auxs = _checkpoint(model)
    if not hasattr(sym, "bind"):
        pytest.skip("Symbol.bind is not available")
    data = dict(zip([i["name"] for i in manifest["inputs"]], _inputs(manifest, npz, False)))
    exe = sym.bind(mx.current_context(), args={**args, **data}, aux_states=auxs, grad_req="null")
    outs = exe.forward(is_train=False)
    for o, spec in zip(outs, manifest["outputs"]):
        _close(o, npz[spec["predict_npz_key"]], manifest, f"{model} executor predict")
