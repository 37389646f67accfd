"""The INT8 quantization scenarios shared by real MXNet 1.9.1 (make_quant_fixture.py) and
gpunda (tests/test_quantization_flow.py): synthetic data, the two float models (a
model-zoo ResNetV1 at 32x32, a BERT-like encoder block), and the quantization configs.
Everything random comes from NumPy's RandomState, so both sides see the same arrays.

Usage as a script (what make_quant_fixture.py runs under gpunda):
    python quant_scenarios.py gpunda OUTDIR   # quantize the fixture's float models with
                                               # gpunda and save symbol + params in OUTDIR
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "quant_flow")
N_CLASSES = 4
CALIB_BATCHES = 2      # calibration: 2 batches of 16
BATCH = 16
N_TEST = 64            # held-back data

# the configs each model is quantized with on both sides: (name, function, kwargs).
# MXNet's CPU runs the unfused CNN graphs badly or not at all (its unfused quantized_conv
# takes only uint8 data and then reports the output range of int8 data), so the CNN's
# accuracy is compared with MXNet's fused quantize_model_mkldnn (its classifier kept float,
# without which MXNet's run fails on reading oneDNN data); the unfused CNN graphs are
# compared node by node.
CONFIGS = {
    "cnn": [("naive_int8", "quantize_model", dict(calib_mode="naive",
                                                  quantized_dtype="int8")),
            ("entropy_int8_full", "quantize_model", dict(calib_mode="entropy",
                                                         quantized_dtype="int8",
                                                         quantize_mode="full")),
            ("naive_auto_nobn", "quantize_model", dict(calib_mode="naive",
                                                       quantized_dtype="auto",
                                                       excluded_op_names=["BatchNorm"])),
            ("mkldnn_naive_int8", "quantize_model_mkldnn",
             dict(calib_mode="naive", quantized_dtype="int8",
                  excluded_sym_names=["resnet_dense0_fwd"]))],
    "bert": [("naive_int8", "quantize_model", dict(calib_mode="naive",
                                                   quantized_dtype="int8")),
             ("entropy_int8", "quantize_model", dict(calib_mode="entropy",
                                                     quantized_dtype="int8")),
             ("none_int8", "quantize_model", dict(calib_mode="none",
                                                  quantized_dtype="int8"))],
}
# graphs compared node by node only: MXNet's CPU runs this one, but with uint8 data its
# quantized_conv reports the output range of int8 data (twice too wide), so its accuracy
# collapses, and gpunda's reference kernels (which share that range rule) saturate
# differently from oneDNN's; the outputs of the two say nothing about the pass
GRAPH_ONLY = {("cnn", "naive_auto_nobn")}


def cnn_data(n, seed):
    """``(images (n, 3, 32, 32) in [0, 1], labels)``: each class a smooth colour template
    plus noise."""
    rs = np.random.RandomState(1234)
    templates = rs.rand(N_CLASSES, 3, 4, 4).repeat(8, axis=2).repeat(8, axis=3)
    rs = np.random.RandomState(seed)
    y = rs.randint(0, N_CLASSES, size=n)
    x = 0.6 * templates[y] + 0.4 * rs.rand(n, 3, 32, 32)
    return x.astype(np.float32), y.astype(np.float32)


def bert_data(n, seed):
    """``(sequences (n, 8, 16), labels)``: each class a direction added to Gaussian tokens."""
    rs = np.random.RandomState(4321)
    dirs = rs.randn(N_CLASSES, 1, 16)
    rs = np.random.RandomState(seed)
    y = rs.randint(0, N_CLASSES, size=n)
    x = rs.randn(n, 8, 16) + 1.5 * dirs[y]
    return x.astype(np.float32), y.astype(np.float32)


DATA = {"cnn": cnn_data, "bert": bert_data}


def make_cnn(mx):
    """A model-zoo ResNetV1 (BasicBlockV1, one block per stage, narrow; the ImageNet stem
    conv7x7/bn/relu/maxpool, whose relu keeps every conv input non-negative)."""
    from importlib import import_module
    resnet = import_module(mx.__name__ + ".gluon.model_zoo.vision.resnet")
    return resnet.ResNetV1(resnet.BasicBlockV1, [1, 1, 1, 1], [8, 8, 12, 16, 24],
                           classes=N_CLASSES, thumbnail=False, prefix="resnet_")


def make_bert(mx):
    """A BERT-like encoder block: self-attention (Dense q/k/v, batch_dot, softmax), a
    residual add and LayerNorm, a GELU feed-forward, mean pooling and a classifier."""
    nn = mx.gluon.nn

    class Encoder(mx.gluon.HybridBlock):
        def __init__(self, units=16, hidden=32, **kw):
            super().__init__(**kw)
            self._units = units
            with self.name_scope():
                self.qkv = nn.Dense(3 * units, flatten=False, prefix="qkv_")
                self.proj = nn.Dense(units, flatten=False, prefix="proj_")
                self.ln1 = nn.LayerNorm(prefix="ln1_")
                self.ffn1 = nn.Dense(hidden, flatten=False, prefix="ffn1_")
                self.ffn2 = nn.Dense(units, flatten=False, prefix="ffn2_")
                self.ln2 = nn.LayerNorm(prefix="ln2_")
                self.out = nn.Dense(N_CLASSES, prefix="cls_")

        def hybrid_forward(self, F, x):
            q, k, v = F.split(self.qkv(x), num_outputs=3, axis=-1)
            att = F.softmax(F.batch_dot(q, k, transpose_b=True) / 4.0, axis=-1)
            h = self.ln1(x + self.proj(F.batch_dot(att, v)))
            f = self.ffn2(F.LeakyReLU(self.ffn1(h), act_type="gelu"))
            h = self.ln2(h + f)
            return self.out(F.mean(h, axis=1))

    return Encoder(prefix="bert_")


MODELS = {"cnn": make_cnn, "bert": make_bert}
SHAPES = {"cnn": (BATCH, 3, 32, 32), "bert": (BATCH, 8, 16)}


def calib_iter(mx, model):
    """The calibration batches as an NDArrayIter (labels named softmax_label)."""
    x, y = DATA[model](CALIB_BATCHES * BATCH, seed=7)
    return mx.io.NDArrayIter(x, y, batch_size=BATCH, label_name="softmax_label")


def test_data(model):
    return DATA[model](N_TEST, seed=99)


def with_softmax(mx, sym):
    """The exported float graph ending in SoftmaxOutput, as quantize_model's examples use."""
    return mx.sym.SoftmaxOutput(sym, name="softmax")


def load_float(mx, model):
    """``(symbol with SoftmaxOutput, arg_params, aux_params)`` of the fixture's float model;
    its weights are stored as float16 and used as float32."""
    sym = mx.sym.load(os.path.join(FIXTURE, f"{model}-symbol.json"))
    saved = mx.nd.load(os.path.join(FIXTURE, f"{model}-0000.params"))
    args = {k[4:]: v.astype("float32") for k, v in saved.items() if k.startswith("arg:")}
    auxs = {k[4:]: v.astype("float32") for k, v in saved.items() if k.startswith("aux:")}
    return sym, args, auxs


def quantize(mx, model, config):
    """Quantize the fixture's float ``model`` with ``config``: (qsym, qarg, qaux)."""
    sym, args, auxs = load_float(mx, model)
    fn, kwargs = {c[0]: c[1:] for c in CONFIGS[model]}[config]
    mode = kwargs.get("calib_mode")
    it = calib_iter(mx, model)
    return getattr(mx.contrib.quant, fn)(
        sym, args, auxs, ctx=mx.cpu(), calib_data=it if mode != "none" else None,
        num_calib_examples=CALIB_BATCHES * BATCH, **kwargs)


def predict(mx, sym, args, auxs, model):
    """The (N_TEST, classes) outputs of ``sym`` on the held-back data, run by a Module."""
    x, _ = test_data(model)
    mod = mx.mod.Module(sym, data_names=("data",), label_names=("softmax_label",),
                        context=mx.cpu())
    mod.bind(data_shapes=[("data", SHAPES[model])],
             label_shapes=[("softmax_label", (BATCH,))], for_training=False)
    mod.set_params(args, auxs)
    outs = []
    for i in range(0, N_TEST, BATCH):
        mod.forward(mx.io.DataBatch([mx.nd.array(x[i:i + BATCH])]), is_train=False)
        outs.append(mod.get_outputs()[0].asnumpy())
    return np.concatenate(outs)


def save_quantized(mx, outdir):
    """gpunda's side for the fixture maker: quantize every config, save each as
    ``<model>_<config>-symbol.json`` / ``-0000.params`` in ``outdir``."""
    for model, configs in CONFIGS.items():
        for config, _, _ in configs:
            qsym, qarg, qaux = quantize(mx, model, config)
            mx.model.save_checkpoint(os.path.join(outdir, f"{model}_{config}"), 0, qsym,
                                     qarg, qaux)


if __name__ == "__main__":
    if sys.argv[1] == "gpunda":
        sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
        import gpunda
        save_quantized(gpunda, sys.argv[2])
