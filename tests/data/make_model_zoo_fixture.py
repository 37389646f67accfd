"""Make tests/data/model_zoo_mxnet191*: gluon.model_zoo.vision as real MXNet 1.9.1 builds it.

Run with MXNet 1.9.1 (CPU): python tests/data/make_model_zoo_fixture.py

Writes
- model_zoo_mxnet191_params.json.gz: for every model name of ``get_model`` (and a few
  variants), the network's prefix and its parameters in order as
  [structural name, full name, shape], shapes inferred for a canonical input;
- model_zoo_mxnet191_outputs.npz: the output of selected networks whose weights come from
  ``seeded_arrays`` below (NumPy only, so the test rebuilds the same weights without a file);
- model_zoo_mxnet191_<case>.params: small networks initialized by MXNet, their BN statistics
  moved by a training step, saved by ``save_parameters`` (or ``save_params``: the legacy
  names), with their outputs in model_zoo_mxnet191_outputs.npz;
- model_zoo_mxnet191_graphs.json.gz: for those small networks, the [op, name] of every node
  of the graph ``export`` writes after ``hybridize``.

The test imports this file for ``seeded_arrays``, ``seeded_input``, ``NAME_CASES``,
``OUTPUT_CASES`` and ``FILE_CASES``; MXNet is imported only when it runs as a script.
"""
import gzip
import json
import os

import numpy as np

# name -> (kwargs, input shape for shape inference)
NAME_CASES = {name: ({}, (1, 3, 299, 299) if name == "inceptionv3" else (1, 3, 224, 224))
              for name in [
                  "alexnet", "densenet121", "densenet161", "densenet169", "densenet201",
                  "inceptionv3", "mobilenet0.25", "mobilenet0.5", "mobilenet0.75",
                  "mobilenet1.0", "mobilenetv2_0.25", "mobilenetv2_0.5", "mobilenetv2_0.75",
                  "mobilenetv2_1.0", "resnet18_v1", "resnet34_v1", "resnet50_v1",
                  "resnet101_v1", "resnet152_v1", "resnet18_v2", "resnet34_v2", "resnet50_v2",
                  "resnet101_v2", "resnet152_v2", "squeezenet1.0", "squeezenet1.1", "vgg11",
                  "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]}
NAME_CASES.update({
    "resnet18_v1/thumbnail": ({"thumbnail": True, "classes": 10}, (1, 3, 32, 32)),
    "resnet50_v2/thumbnail": ({"thumbnail": True, "classes": 10}, (1, 3, 32, 32)),
    "vgg11/classes10": ({"classes": 10}, (1, 3, 32, 32)),
})

# case -> (model name, kwargs, input shape, slow): outputs with seeded_arrays weights
OUTPUT_CASES = {
    "alexnet": ("alexnet", {"classes": 10}, (1, 3, 67, 67), False),
    "resnet18_v1": ("resnet18_v1", {"classes": 10}, (2, 3, 64, 64), False),
    "resnet50_v1_thumb": ("resnet50_v1", {"classes": 10, "thumbnail": True}, (1, 3, 32, 32),
                          False),
    "resnet18_v2_thumb": ("resnet18_v2", {"classes": 10, "thumbnail": True}, (2, 3, 32, 32),
                          False),
    "resnet50_v2": ("resnet50_v2", {"classes": 10}, (1, 3, 64, 64), False),
    "vgg11_bn": ("vgg11_bn", {"classes": 10}, (1, 3, 32, 32), False),
    "mobilenet0.5": ("mobilenet0.5", {"classes": 10}, (2, 3, 64, 64), False),
    "mobilenetv2_0.5": ("mobilenetv2_0.5", {"classes": 10}, (2, 3, 64, 64), False),
    "squeezenet1.0": ("squeezenet1.0", {"classes": 10}, (1, 3, 224, 224), False),
    "squeezenet1.1": ("squeezenet1.1", {"classes": 10}, (1, 3, 224, 224), False),
    "densenet121": ("densenet121", {"classes": 10}, (1, 3, 224, 224), True),
    "inceptionv3": ("inceptionv3", {"classes": 10}, (1, 3, 299, 299), True),
}

# case -> (constructor in vision, positional args, kwargs, input shape, save format)
FILE_CASES = {
    "mobilenet0_25": ("mobilenet0_25", (), {"classes": 10}, (2, 3, 32, 32), "structural"),
    "mobilenet_v2_0_25": ("mobilenet_v2_0_25", (), {"classes": 10}, (2, 3, 32, 32),
                          "structural"),
    "resnetv1_small": ("ResNetV1", ("BasicBlockV1", [1, 1, 1, 1], [8, 8, 16, 24, 32]),
                       {"classes": 10, "thumbnail": True}, (2, 3, 32, 32), "legacy"),
    "resnetv2_small": ("ResNetV2", ("BottleneckV2", [1, 1, 2, 1], [8, 16, 24, 32, 40]),
                       {"classes": 10}, (2, 3, 64, 64), "structural"),
    "densenet_small": ("DenseNet", (8, 4, [2, 2]), {"classes": 10, "dropout": 0.1},
                       (2, 3, 56, 56), "structural"),
}


def seeded_arrays(names_shapes, seed=0):
    """Weights for ``[(structural name, shape), ...]`` from NumPy's seeded PCG64 generator.

    Uniform values (``Generator.random`` in float32: fast, and its stream is fixed across
    NumPy versions), scaled so activations stay O(1) through deep networks in inference
    mode: BN gammas and variances in [0.5, 1.5), means, betas and biases in [-0.1, 0.1),
    weights with variance 2 / fan_in.
    """
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in names_shapes:
        shape = tuple(shape)
        u = rng.random(shape, dtype=np.float32)
        if name.endswith(("running_var", "gamma")):
            a = u + np.float32(0.5)
        elif name.endswith(("running_mean", "beta", "bias")):
            a = (u - np.float32(0.5)) * np.float32(0.2)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            a = (u - np.float32(0.5)) * np.float32(np.sqrt(24.0 / fan_in))
        out[name] = a
    return out


def seeded_input(shape, seed=1):
    return np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32)


def _write_json_gz(path, obj):
    # mtime=0: the same content gives the same bytes, so a rerun leaves git clean
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(json.dumps(obj, separators=(",", ":")).encode())


def _main():
    import mxnet as mx
    from mxnet.gluon.model_zoo import vision

    here = os.path.dirname(os.path.abspath(__file__))
    names = {}
    for case, (kwargs, shape) in NAME_CASES.items():
        with mx.name.NameManager():
            net = vision.get_model(case.split("/")[0], **kwargs)
        net.infer_shape(mx.nd.zeros(shape))
        names[case] = {"prefix": net.prefix, "input": list(shape), "kwargs": kwargs,
                       "params": [[k, p.name, list(p.shape)]
                                  for k, p in net._collect_params_with_prefix().items()]}
    _write_json_gz(os.path.join(here, "model_zoo_mxnet191_params.json.gz"), names)

    outputs = {}
    for case, (name, kwargs, shape, _slow) in OUTPUT_CASES.items():
        net = vision.get_model(name, **kwargs)
        net.initialize()
        x = mx.nd.array(seeded_input(shape))
        net(x)
        params = net._collect_params_with_prefix()
        arrays = seeded_arrays([(k, p.shape) for k, p in params.items()])
        for k, p in params.items():
            p.set_data(mx.nd.array(arrays[k]))
        outputs[case] = net(x).asnumpy()
        print(case, outputs[case].shape, float(np.abs(outputs[case]).max()))

    graphs = {}
    for case, (ctor, args, kwargs, shape, fmt) in FILE_CASES.items():
        args = tuple(getattr(vision, a) if isinstance(a, str) else a for a in args)
        with mx.name.NameManager():
            net = getattr(vision, ctor)(*args, **kwargs)
        net.initialize()
        net.hybridize()
        net(mx.nd.zeros(shape))
        net.export(os.path.join(here, "_graph"))
        with open(os.path.join(here, "_graph-symbol.json")) as f:
            graphs[case] = [[n["op"], n["name"]] for n in json.load(f)["nodes"]]
        for suffix in ("-symbol.json", "-0000.params"):
            os.remove(os.path.join(here, "_graph" + suffix))

    mx.random.seed(7)
    for case, (ctor, args, kwargs, shape, fmt) in FILE_CASES.items():
        args = tuple(getattr(vision, a) if isinstance(a, str) else a for a in args)
        net = getattr(vision, ctor)(*args, **kwargs)
        net.initialize(mx.init.Xavier(magnitude=2.5))
        x = mx.nd.array(seeded_input(shape, seed=3))
        with mx.autograd.record():       # a training step moves the BN running statistics
            net(x)
        outputs["file_" + case] = net(x).asnumpy()
        path = os.path.join(here, f"model_zoo_mxnet191_{case}.params")
        if fmt == "legacy":
            net.save_params(path)
        else:
            net.save_parameters(path)
        print(case, os.path.getsize(path))
    np.savez_compressed(os.path.join(here, "model_zoo_mxnet191_outputs.npz"), **outputs)
    _write_json_gz(os.path.join(here, "model_zoo_mxnet191_graphs.json.gz"), graphs)


if __name__ == "__main__":
    _main()
