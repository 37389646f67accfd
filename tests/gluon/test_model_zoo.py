"""gluon.model_zoo against real MXNet 1.9.1 (fixtures from tests/data/make_model_zoo_fixture.py).

- every architecture: prefix, parameter names (structural and full) and shapes as MXNet's;
- outputs equal MXNet's with the same weights (seeded NumPy weights, or files MXNet saved);
- hybridized equals imperative; pretrained files found in $MXNET_HOME/models, or a clear error.
"""
import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import gpunda as mx
from gpunda import nd
from gpunda.base import GpundaError
from gpunda.gluon.model_zoo import model_store, vision

DATA = Path(__file__).resolve().parent.parent / "data"
_spec = importlib.util.spec_from_file_location("make_model_zoo_fixture",
                                               DATA / "make_model_zoo_fixture.py")
fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fixture)

with gzip.open(DATA / "model_zoo_mxnet191_params.json.gz", "rt") as _f:
    MX_PARAMS = json.load(_f)
with gzip.open(DATA / "model_zoo_mxnet191_graphs.json.gz", "rt") as _f:
    MX_GRAPHS = json.load(_f)
MX_OUTPUTS = dict(np.load(DATA / "model_zoo_mxnet191_outputs.npz"))

# every name MXNet 1.9.1 has in gluon.model_zoo.vision
VISION_NAMES = (
    "AlexNet BasicBlockV1 BasicBlockV2 BottleneckV1 BottleneckV2 DenseNet Inception3 MobileNet "
    "MobileNetV2 ResNetV1 ResNetV2 SqueezeNet VGG alexnet densenet densenet121 densenet161 "
    "densenet169 densenet201 get_mobilenet get_mobilenet_v2 get_model get_resnet get_vgg "
    "inception inception_v3 mobilenet mobilenet0_25 mobilenet0_5 mobilenet0_75 mobilenet1_0 "
    "mobilenet_v2_0_25 mobilenet_v2_0_5 mobilenet_v2_0_75 mobilenet_v2_1_0 resnet "
    "resnet101_v1 resnet101_v2 resnet152_v1 resnet152_v2 resnet18_v1 resnet18_v2 resnet34_v1 "
    "resnet34_v2 resnet50_v1 resnet50_v2 squeezenet squeezenet1_0 squeezenet1_1 vgg vgg11 "
    "vgg11_bn vgg13 vgg13_bn vgg16 vgg16_bn vgg19 vgg19_bn").split()


def assert_close_to_mxnet(got, want):
    # float32 through up to ~100 layers: relative to the output's scale
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def _param_list(net):
    return [[k, p.name, list(p.shape)] for k, p in net._collect_params_with_prefix().items()]


# -- names ---------------------------------------------------------------------------------
def test_vision_has_every_mxnet_name():
    missing = [n for n in VISION_NAMES if not hasattr(vision, n)]
    assert not missing
    # as in MXNet, `vision.alexnet` is the constructor, `vision.resnet` the module
    assert callable(vision.alexnet) and vision.resnet.__name__.endswith("vision.resnet")
    assert callable(model_store.get_model_file) and callable(model_store.purge)


def test_model_zoo_loads_lazily():
    code = ("import sys, gpunda, gpunda.gluon; "
            "assert 'gpunda.gluon.model_zoo' not in sys.modules; "
            "gpunda.gluon.model_zoo.vision.resnet18_v1; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("case", sorted(MX_PARAMS))
def test_parameter_names_and_shapes_equal_mxnets(case):
    ref = MX_PARAMS[case]
    with mx.name.NameManager():
        net = vision.get_model(case.split("/")[0], **ref["kwargs"])
    net.infer_shape(nd.zeros(tuple(ref["input"])))
    assert net.prefix == ref["prefix"]
    assert _param_list(net) == ref["params"]


def test_children_are_features_and_output():
    net = vision.squeezenet1_1()
    assert list(net._children) == ["features", "output"]
    assert isinstance(net.features, mx.gluon.nn.HybridSequential)


def test_get_model_names_and_unknown():
    net = vision.get_model("ResNet18_V1", classes=7, thumbnail=True)
    assert isinstance(net, vision.ResNetV1) and net.output._units == 7
    assert isinstance(vision.get_model("squeezenet1.1"), vision.SqueezeNet)
    assert isinstance(vision.get_model("mobilenetv2_0.25"), vision.MobileNetV2)
    with pytest.raises(ValueError, match=r"Model resnet19_v1 is not supported.*\n\talexnet"):
        vision.get_model("resnet19_v1")


def test_bad_architecture_arguments():
    with pytest.raises(ValueError, match="Options are 1 and 2"):
        vision.get_resnet(3, 18)
    with pytest.raises(ValueError, match="invalid number of layers: 20"):
        vision.get_resnet(1, 20)
    with pytest.raises(ValueError, match="invalid number of layers: 12"):
        vision.get_vgg(12)
    with pytest.raises(ValueError, match="SqueezeNet version 2.0"):
        vision.SqueezeNet("2.0")


# -- outputs ---------------------------------------------------------------------------------
def _seed_weights(net, x):
    net.infer_shape(x)
    params = net._collect_params_with_prefix()
    arrays = fixture.seeded_arrays([(k, p.shape) for k, p in params.items()])
    net.collect_params().load_dict({p.name: nd.array(arrays[k]) for k, p in params.items()},
                                   ctx=mx.current_context())


def _output_cases():
    for case, (_name, _kw, _shape, slow) in sorted(fixture.OUTPUT_CASES.items()):
        yield pytest.param(case, marks=pytest.mark.slow) if slow else case


@pytest.mark.parametrize("case", list(_output_cases()))
def test_output_equals_mxnets_with_the_same_weights(case):
    name, kwargs, shape, _slow = fixture.OUTPUT_CASES[case]
    net = vision.get_model(name, **kwargs)
    x = nd.array(fixture.seeded_input(shape))
    _seed_weights(net, x)
    assert_close_to_mxnet(net(x).asnumpy(), MX_OUTPUTS[case])


def _file_net(case):
    ctor, args, kwargs, shape, _fmt = fixture.FILE_CASES[case]
    args = tuple(getattr(vision, a) if isinstance(a, str) else a for a in args)
    return getattr(vision, ctor)(*args, **kwargs), nd.array(fixture.seeded_input(shape, seed=3))


@pytest.mark.parametrize("case", sorted(fixture.FILE_CASES))
def test_mxnet_saved_parameters_give_mxnets_output(case):
    net, x = _file_net(case)
    net.load_parameters(str(DATA / f"model_zoo_mxnet191_{case}.params"),
                        ctx=mx.current_context())
    want = MX_OUTPUTS["file_" + case]
    assert_close_to_mxnet(net(x).asnumpy(), want)
    net.hybridize()
    assert_close_to_mxnet(net(x).asnumpy(), want)


@pytest.mark.parametrize("case", sorted(fixture.FILE_CASES))
def test_exported_graph_equals_mxnets(case, tmp_path):
    ctor, args, kwargs, shape, _fmt = fixture.FILE_CASES[case]
    args = tuple(getattr(vision, a) if isinstance(a, str) else a for a in args)
    with mx.name.NameManager():
        net = getattr(vision, ctor)(*args, **kwargs)
    net.initialize()
    net.hybridize()
    net(nd.zeros(shape))
    net.export(str(tmp_path / "net"))
    with open(tmp_path / "net-symbol.json") as f:
        nodes = [[n["op"], n["name"]] for n in json.load(f)["nodes"]]
    assert nodes == MX_GRAPHS[case]


@pytest.mark.parametrize("case", ["mobilenet_v2_0_25", "densenet_small"])
def test_hybridized_equals_imperative_and_trains(case):
    net, x = _file_net(case)
    net.load_parameters(str(DATA / f"model_zoo_mxnet191_{case}.params"),
                        ctx=mx.current_context())
    imperative = net(x).asnumpy()
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), imperative, rtol=1e-5, atol=1e-6)
    # the backward reaches every parameter (in predict mode, forward and backward: in
    # training mode a BN feeding only BNs through linear layers gets an exactly zero beta
    # gradient; as MXNet's, BatchNorm's backward follows the backward's train_mode)
    with mx.autograd.record(train_mode=False):
        loss = net(x).sum()
    loss.backward(train_mode=False)
    grads = [p.grad().asnumpy() for p in net.collect_params().values() if p.grad_req != "null"]
    assert grads and all(np.isfinite(g).all() and np.abs(g).sum() > 0 for g in grads)


# -- pretrained files ------------------------------------------------------------------------
@pytest.fixture
def mxnet_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    return tmp_path


def test_pretrained_without_the_file_says_which_file_goes_where(mxnet_home):
    with pytest.raises(GpundaError) as e:
        vision.mobilenet0_25(pretrained=True)
    msg = str(e.value)
    assert "mobilenet0.25-9f83e440.params" in msg and str(mxnet_home / "models") in msg
    assert "gluon/models/mobilenet0.25-9f83e440.zip" in msg
    with pytest.raises(GpundaError, match="resnet18_v1-a0666292.params"):
        vision.get_model("resnet18_v1", pretrained=True, root=str(mxnet_home / "elsewhere"))
    with pytest.raises(ValueError, match="Pretrained model for resnet19_v1 is not available"):
        model_store.get_model_file("resnet19_v1")


def test_pretrained_loads_the_file_from_mxnet_home(mxnet_home, caplog):
    models = mxnet_home / "models"
    models.mkdir()
    shutil.copy(DATA / "model_zoo_mxnet191_mobilenet0_25.params",
                models / "mobilenet0.25-9f83e440.params")
    net = vision.get_model("mobilenet0.25", pretrained=True, classes=10,
                           ctx=mx.current_context())
    _, x = _file_net("mobilenet0_25")
    assert_close_to_mxnet(net(x).asnumpy(), MX_OUTPUTS["file_mobilenet0_25"])
    assert "differs from the file MXNet published" in caplog.text
    assert model_store.get_model_file("mobilenet0.25") == str(models /
                                                             "mobilenet0.25-9f83e440.params")
    model_store.purge()
    assert not list(models.iterdir())


def test_pretrained_unpacks_mxnets_zip(tmp_path):
    src = DATA / "model_zoo_mxnet191_mobilenet_v2_0_25.params"
    with zipfile.ZipFile(tmp_path / "mobilenetv2_0.25-ae8f9392.zip", "w") as zf:
        zf.write(src, "mobilenetv2_0.25-ae8f9392.params")
    net = vision.mobilenet_v2_0_25(pretrained=True, classes=10, root=str(tmp_path),
                                   ctx=mx.current_context())
    _, x = _file_net("mobilenet_v2_0_25")
    assert_close_to_mxnet(net(x).asnumpy(), MX_OUTPUTS["file_mobilenet_v2_0_25"])
    assert (tmp_path / "mobilenetv2_0.25-ae8f9392.params").exists()


def test_pretrained_file_names_follow_mxnets_store():
    want = {"mobilenet1.0", "mobilenet0.75", "mobilenet0.5", "mobilenet0.25",
            "mobilenetv2_1.0", "mobilenetv2_0.75", "mobilenetv2_0.5", "mobilenetv2_0.25",
            "squeezenet1.0", "squeezenet1.1", "inceptionv3", "vgg16_bn", "resnet152_v2"}
    assert want <= set(model_store._model_sha1)
    # every get_model name has a published file (MXNet uses the same names for both)
    assert set(vision._MODELS) == set(model_store._model_sha1)
    assert model_store.short_hash("vgg19_bn") == "f360b758"


def test_default_root_is_mxnet_home_models(monkeypatch):
    monkeypatch.delenv("MXNET_HOME", raising=False)
    assert model_store.default_root() == os.path.join(os.path.expanduser("~"), ".mxnet",
                                                      "models")
    monkeypatch.setenv("MXNET_HOME", "/some/where")
    assert mx.base.data_dir() == "/some/where"
