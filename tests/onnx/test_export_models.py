"""Model zoo architectures and MXNet 1.9.1 checkpoints -> ONNX -> ONNX Runtime and back.

Reference: gpunda's own forward pass (itself checked against MXNet in the fixture and zoo
tests) and, for the checkpoints, MXNet 1.9.1's stored predictions.
"""
import os

import numpy as np
import pytest

from _onnx_check import onnx, check_all, run_ort, RTOL, ATOL

import gpunda as mx
from gpunda.gluon.model_zoo import vision

FIX = os.environ.get("GPUNDA_MXNET_FIXTURES", "")


def _randomize(net, seed=0):
    """Weights with a spread like trained ones (the fixtures' recipe), so outputs are not
    ~0 and BatchNorm's running statistics matter."""
    rng = np.random.default_rng(seed)
    for name, p in sorted(net.collect_params().items()):
        shape = p.shape
        if name.endswith("running_var") or name.endswith("gamma"):
            v = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        elif name.endswith("running_mean") or name.endswith("beta") or name.endswith("bias"):
            v = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.1)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            v = rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(fan_in))
        p.set_data(mx.nd.array(v))


# the smallest input each architecture allows; the largest are marked slow (> ~5 s)
_SIZE = {"alexnet": 63, "inceptionv3": 299}
_FAST = {"resnet18_v1", "resnet18_v2", "mobilenet0.25", "mobilenet0.5", "mobilenet0.75",
         "mobilenet1.0", "mobilenetv2_0.25", "mobilenetv2_0.5", "mobilenetv2_0.75",
         "mobilenetv2_1.0", "squeezenet1.1"}
for _n in vision._MODELS:
    if _n.startswith(("densenet", "squeezenet")):
        _SIZE[_n] = 224


def _zoo_params():
    for n in sorted(vision._MODELS):
        marks = [] if n in _FAST else [pytest.mark.slow]
        yield pytest.param(n, marks=marks, id=n)


@pytest.mark.parametrize("name", list(_zoo_params()))
def test_model_zoo_roundtrip(name, tmp_path):
    net = vision.get_model(name, classes=10)
    size = _SIZE.get(name, 32)
    x = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, (1, 3, size, size)))
    net.initialize()
    net(x)
    _randomize(net)
    want = net(x).asnumpy()
    assert np.abs(want).max() > 1e-3   # a comparison of near-zeros would prove nothing
    sym = net(mx.sym.var("data"))
    params = {k: v.data() for k, v in net.collect_params().items()}
    path = tmp_path / f"{name}.onnx"
    assert mx.onnx.export_model(sym, params, [x.shape], np.float32, str(path)) == str(path)
    onnx.checker.check_model(onnx.load(str(path)))
    check_all(path, {"data": x.asnumpy()}, [want])


def _fixture(model):
    pytest.importorskip("onnxruntime")
    exp = np.load(os.path.join(FIX, f"{model}-expected.npz"))
    return (os.path.join(FIX, f"{model}-symbol.json"), os.path.join(FIX, f"{model}-0000.params"),
            exp)


def _bind_checkpoint(model, x):
    """An Executor of the fixture checkpoint on the current context (gpu(0) under
    --standin-gpu): load_checkpoint reads the arrays onto the CPU, bind wants them
    all on its context, as MXNet's does."""
    ctx = mx.current_context()
    sym, args, auxs = mx.model.load_checkpoint(os.path.join(FIX, model), 0)
    args = {k: v.as_in_context(ctx) for k, v in args.items()}
    auxs = {k: v.as_in_context(ctx) for k, v in auxs.items()}
    return sym.bind(ctx, dict(args, data=mx.nd.array(x, ctx=ctx)), aux_states=auxs,
                    grad_req="null")


@pytest.mark.mxnet_fixtures
@pytest.mark.parametrize("model", ["mlp", "cnn", "textemb"])
def test_checkpoint_roundtrip(model, tmp_path):
    sym_file, params_file, exp = _fixture(model)
    x = exp["in__data"]
    want = exp["predict__out__0"]
    path = tmp_path / f"{model}.onnx"
    mx.onnx.export_model(sym_file, params_file, [x.shape], np.float32, str(path))
    check_all(path, {"data": x}, [want])
    # gpunda's own forward of the checkpoint gives the same numbers
    ex = _bind_checkpoint(model, x)
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), want, rtol=RTOL, atol=ATOL)


@pytest.mark.mxnet_fixtures
@pytest.mark.parametrize("model", ["mlp", "cnn", "textemb"])
def test_checkpoint_dynamic_batch(model, tmp_path):
    sym_file, params_file, exp = _fixture(model)
    x = exp["in__data"]
    path = tmp_path / f"{model}.onnx"
    dyn = [(None,) + x.shape[1:]]
    mx.onnx.export_model(sym_file, params_file, [x.shape], np.float32, str(path),
                         dynamic=True, dynamic_input_shapes=dyn)
    m = onnx.load(str(path))
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param
    # a batch of another size than the one exported with: each row as MXNet's
    for rows in (x[:1], np.concatenate([x, x[::-1]])):
        ex = _bind_checkpoint(model, rows)
        want = ex.forward()[0].asnumpy()
        got = run_ort(path, {"data": rows})[0]
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_zoo_dynamic_batch(tmp_path):
    net = vision.get_model("resnet18_v1", classes=10)
    net.initialize()
    x = mx.nd.array(np.random.RandomState(2).uniform(-1, 1, (3, 3, 32, 32)))
    net(x)
    _randomize(net)
    want = net(x).asnumpy()
    sym = net(mx.sym.var("data"))
    params = {k: v.data() for k, v in net.collect_params().items()}
    path = tmp_path / "r18.onnx"
    mx.onnx.export_model(sym, params, [(1, 3, 32, 32)], np.float32, str(path), dynamic=True,
                         dynamic_input_shapes=[(None, 3, 32, 32)])
    np.testing.assert_allclose(run_ort(path, {"data": x.asnumpy()})[0], want, rtol=RTOL,
                               atol=ATOL)
