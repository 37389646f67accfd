"""Make tests/data/quant_flow/ with real MXNet 1.9.1 (CPU, oneDNN): run with MXNet's Python,
    MXNET_SUBGRAPH_BACKEND=NONE /work/mxref/bin/python tests/data/make_quant_fixture.py
(without MXNET_SUBGRAPH_BACKEND=NONE, MXNet's calibration Module fuses conv+bn+relu while
collecting, so the layer names the quantization pass asks for are never seen and most
requantize nodes stay uncalibrated; gpunda has no such fusion.)

For each model of quant_scenarios.py (a ResNetV1 and a BERT-like block):
1. trains it briefly with Gluon on the synthetic training data and saves the float
   checkpoint (``<model>-symbol.json``, ``<model>-0000.params``, weights rounded to float16
   to keep the fixture small; both sides use them as float32);
2. quantizes it with each config of ``CONFIGS`` by ``mx.contrib.quant.quantize_model``
   from the same calibration batches and records the quantized graph (nodes: op, name,
   attrs, inputs), the checksums of the quantized params and, where MXNet's CPU kernels run
   the graph, its top-1 on the held-back data and its outputs of the first batch (else
   the error MXNet raised); the first config's symbol is saved as MXNet
   wrote it (``<model>_mx-symbol.json``), for the BERT block with its params
   (``bert_mx-0000.params``);
3. runs gpunda (``quant_scenarios.py gpunda DIR``, /work/main/.venv/bin/python) to quantize
   the same float checkpoints, loads each of gpunda's quantized symbols and params into
   MXNet and records MXNet's outputs of them.
Everything recorded goes to ``results.json``.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import mxnet as mx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quant_scenarios as S  # noqa: E402

GPUNDA_PY = "/work/main/.venv/bin/python"


def train(model):
    mx.random.seed(0)
    np.random.seed(0)
    net = S.MODELS[model](mx)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x, y = S.DATA[model](512, seed=1)
    trainer = mx.gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.005})
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(6):
        for i in range(0, len(x), 32):
            xb, yb = mx.nd.array(x[i:i + 32]), mx.nd.array(y[i:i + 32])
            with mx.autograd.record():
                loss = loss_fn(net(xb), yb)
            loss.backward()
            trainer.step(32)
    with tempfile.TemporaryDirectory() as tmp:
        net.export(os.path.join(tmp, "m"), 0)
        sym, args, auxs = mx.model.load_checkpoint(os.path.join(tmp, "m"), 0)
    sym = S.with_softmax(mx, sym)
    _save_json(sym, f"{model}-symbol.json")
    save = {"arg:" + k: v.astype("float16") for k, v in args.items()}
    save.update({"aux:" + k: v.astype("float16") for k, v in auxs.items()})
    mx.nd.save(os.path.join(S.FIXTURE, f"{model}-0000.params"), save)


def _save_json(sym, name):
    with open(os.path.join(S.FIXTURE, name), "w") as f:
        json.dump(json.loads(sym.tojson()), f, separators=(",", ":"))


def graph(qsym):
    """The quantized graph, compact: a variable as its name, an op node as
    [op, name, attrs, inputs as [node, index]]."""
    js = json.loads(qsym.tojson())
    return {"nodes": [n["name"] if n["op"] == "null" else
                      [n["op"], n["name"], n.get("attrs", {}), [e[:2] for e in n["inputs"]]]
                      for n in js["nodes"]], "heads": [e[:2] for e in js["heads"]]}


def checksums(params):
    """Per quantized param (``*_quantize*``): dtype, sum and sum of squares; the float
    params copied unchanged: dtype only."""
    return {k: [str(v.dtype), float(v.asnumpy().astype("f8").sum()),
                float((v.asnumpy().astype("f8") ** 2).sum())] if "_quantize" in k
            else [str(v.dtype)] for k, v in params.items()}


def run(sym, args, auxs, model):
    """MXNet's top-1 on the held-back data and its outputs of the first batch."""
    try:
        out = S.predict(mx, sym, args, auxs, model)
        return {"top1": out.argmax(1).tolist(), "head": np.round(out[:S.BATCH], 4).tolist()}
    except Exception as e:          # MXNet's CPU kernels refuse the graph
        return "error: " + str(e).strip().splitlines()[-1][:200]


def main():
    os.makedirs(S.FIXTURE, exist_ok=True)
    res = {"script": "tests/data/make_quant_fixture.py", "mxnet": mx.__version__}
    for model in S.MODELS:
        train(model)
        sym, args, auxs = S.load_float(mx, model)
        r = res[model] = {"labels": S.test_data(model)[1].astype(int).tolist(),
                          "float": run(sym, args, auxs, model)}
        for k, (config, _, _) in enumerate(S.CONFIGS[model]):
            qsym, qarg, qaux = S.quantize(mx, model, config)
            if k == 0:       # the CNN's quantized params would not fit the fixture
                _save_json(qsym, f"{model}_mx-symbol.json")
                if model == "bert":
                    save = {"arg:" + k: v for k, v in qarg.items()}
                    save.update({"aux:" + k: v for k, v in qaux.items()})
                    mx.nd.save(os.path.join(S.FIXTURE, f"{model}_mx-0000.params"), save)
            r[config] = {"params": checksums(qarg), "outputs": run(qsym, qarg, qaux, model)}
            if k and "mkldnn" not in config:   # the first one is <model>_mx-symbol.json
                r[config]["graph"] = graph(qsym)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([GPUNDA_PY, os.path.join(S.HERE, "quant_scenarios.py"), "gpunda", tmp],
                       check=True)
        for model, configs in S.CONFIGS.items():
            for config, _, _ in configs:
                qsym, qarg, qaux = mx.model.load_checkpoint(
                    os.path.join(tmp, f"{model}_{config}"), 0)
                res[model][config]["mxnet_runs_gpunda"] = run(qsym, qarg, qaux, model)
    with open(os.path.join(S.FIXTURE, "results.json"), "w") as f:
        json.dump(res, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
