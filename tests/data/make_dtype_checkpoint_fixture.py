"""Make tests/data/dtype_ckpt/ with real MXNet 1.9.1 (CPU): checkpoints whose parameters
are float16, float64 and int32, and what MXNet does when each is loaded by each path
(tests/gluon/test_param_dtype_loading.py).

Run with /work/mxref/bin/python (mxnet 1.9.1) from any directory. Models:

* ``fc_float64``: data declared float64 (``__dtype__`` in the json) -> FullyConnected(3)
  -> BatchNorm -> relu, moving statistics set away from 0/1;
* ``nodt_float64``: data -> FullyConnected(3) -> relu bound with float64 data, so the
  json declares no dtype and only the .params file says float64;
* ``ew_float16`` / ``ew_int32``: data declared float16 / int32 -> data * w + b -> relu
  (elementwise: MXNet's CPU FullyConnected runs neither dtype);
* ``bn_float16``: data declared float16 -> data * w + b -> BatchNorm -> relu: w and b are
  float16, BatchNorm's gamma, beta and moving statistics float32 (MXNet keeps them so for
  float16 data), with values float16 cannot hold.

``softmax_float32``: a legacy training checkpoint, data -> FullyConnected(3) ->
SoftmaxOutput (its json holds ``softmax_label``), for the ONNX export given data and
label shapes; ``softmax.npz`` holds its input ``x`` and MXNet's output ``out``.

``records.npz`` holds, per ``model/path``: ``dtypes`` ("name:dtype" strings, sorted),
``out`` (the forward's output for ``model/x``) or ``error`` (the exception class name).
Each path runs in a fresh process, so that an asynchronous MXNet error of one path
cannot surface in the next.
"""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dtype_ckpt")
MODELS = ("fc_float64", "nodt_float64", "ew_float16", "ew_int32", "bn_float16")
PATHS = ("sb_typed_load_parameters", "sb_internal_load_dict", "sb_plain_load_dict",
         "imports", "imports_hybridized", "module_load_bind", "module_set_params",
         "symbol_bind", "dense_saved", "dense_hybridized_saved")


def model_dtype(model):
    return model.split("_")[1]


def make():
    import mxnet as mx
    os.makedirs(HERE, exist_ok=True)
    rng = np.random.RandomState(30)
    xs = {}
    for model in MODELS:
        dt = model_dtype(model)
        if model == "nodt_float64":
            data = mx.sym.var("data")
        else:
            data = mx.sym.var("data", dtype=dt)
        if model.startswith(("ew", "bn")):
            w, b = mx.sym.var("ew_weight"), mx.sym.var("ew_bias")
            out = mx.sym.elemwise_add(mx.sym.elemwise_mul(data, w), b)
            if model.startswith("bn"):
                out = mx.sym.BatchNorm(out, fix_gamma=False, name="bn1")
            out = mx.sym.relu(out, name="relu1")
        else:
            out = mx.sym.FullyConnected(data, num_hidden=3, name="fc1")
            if model == "fc_float64":
                out = mx.sym.BatchNorm(out, fix_gamma=False, name="bn1")
            out = mx.sym.Activation(out, act_type="relu", name="relu1")
        mod = mx.mod.Module(out, data_names=["data"], label_names=None)
        mod.bind(data_shapes=[mx.io.DataDesc("data", (2, 4), dtype=dt)], for_training=False)
        mod.init_params(mx.init.Zero())     # values are set below
        args, aux = mod.get_params()
        for name, arr in list(args.items()) + list(aux.items()):
            v = rng.uniform(-2, 2, arr.shape) if dt != "int32" else rng.randint(-3, 4, arr.shape)
            if name.endswith("moving_var"):
                v = np.abs(v) + 0.5
            arr[:] = v.astype(arr.dtype)
        mod.set_params(args, aux)
        mod.save_checkpoint(os.path.join(HERE, model), 0)
        x = rng.uniform(-1, 1, (2, 4)) if dt != "int32" else rng.randint(-3, 4, (2, 4))
        xs[model + "/x"] = x.astype(dt)
    np.savez(os.path.join(HERE, "inputs.npz"), **xs)


def make_softmax():
    import mxnet as mx
    rng = np.random.RandomState(31)
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc1")
    out = mx.sym.SoftmaxOutput(fc, name="softmax")
    mod = mx.mod.Module(out, data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=[("data", (2, 4))], label_shapes=[("softmax_label", (2,))])
    mod.init_params(mx.init.Uniform(1))
    mod.save_checkpoint(os.path.join(HERE, "softmax_float32"), 0)
    x = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.zeros((2,))]), is_train=False)
    np.savez(os.path.join(HERE, "softmax.npz"), x=x, out=mod.get_outputs()[0].asnumpy())


def run_path(model, path):
    """One loading path in MXNet; prints a json record."""
    import mxnet as mx
    from mxnet import gluon
    pre = os.path.join(HERE, model)
    dt = model_dtype(model)
    x = mx.nd.array(np.load(os.path.join(HERE, "inputs.npz"))[model + "/x"], dtype=dt)
    sym, args, aux = mx.model.load_checkpoint(pre, 0)
    rec = {}

    def pdtypes(params):
        return sorted("%s:%s" % (k, np.dtype(p.dtype).name) for k, p in params.items())

    try:
        if path.startswith("sb_") or path.startswith("imports"):
            if path == "sb_typed_load_parameters":
                net = gluon.SymbolBlock(sym, [mx.sym.var("data", dtype=dt)])
                net.load_parameters(pre + "-0000.params")
            elif path == "sb_internal_load_dict":
                net = gluon.SymbolBlock(sym, sym.get_internals()["data"])
                full = dict(args)
                full.update(aux)
                net.collect_params().load_dict(full)
            elif path == "sb_plain_load_dict":
                net = gluon.SymbolBlock(sym, mx.sym.var("data"))
                rec["dtypes"] = pdtypes(net.collect_params())
                net.collect_params().load_dict(dict(args, **aux))
            else:
                net = gluon.SymbolBlock.imports(pre + "-symbol.json", ["data"],
                                                pre + "-0000.params")
                if path == "imports_hybridized":
                    net.hybridize()
                    net(x)
            rec["dtypes"] = pdtypes(net.collect_params())
            rec["out"] = net(x).asnumpy().tolist()
        elif path.startswith("module"):
            if path == "module_load_bind":
                mod = mx.mod.Module.load(pre, 0, data_names=["data"], label_names=None)
                mod.bind(data_shapes=[mx.io.DataDesc("data", (2, 4), dtype=dt)],
                         for_training=False)
            else:
                mod = mx.mod.Module(sym, data_names=["data"], label_names=None)
                mod.bind(data_shapes=[mx.io.DataDesc("data", (2, 4), dtype=dt)],
                         for_training=False)
                mod.set_params(args, aux)
            a, b = mod.get_params()
            rec["dtypes"] = sorted("%s:%s" % (k, np.dtype(v.dtype).name)
                                   for k, v in list(a.items()) + list(b.items()))
            mod.forward(mx.io.DataBatch([x]), is_train=False)
            rec["out"] = mod.get_outputs()[0].asnumpy().tolist()
        elif path == "symbol_bind":
            ex = sym.bind(mx.cpu(), dict(args, data=x), aux_states=aux)
            rec["out"] = ex.forward()[0].asnumpy().tolist()
        elif path.startswith("dense"):
            if model != "nodt_float64":
                return None
            net = gluon.nn.HybridSequential(prefix="")
            with net.name_scope():
                net.add(gluon.nn.Dense(3, activation="relu", prefix="fc1_"))
            if path == "dense_hybridized_saved":
                net.initialize()
                net.hybridize()
                net(x.astype("float32"))
            net.load_parameters(pre + "-0000.params", cast_dtype=True, dtype_source="saved")
            rec["dtypes"] = pdtypes(net.collect_params())
            rec["out"] = net(x).asnumpy().tolist()
        mx.nd.waitall()
    except Exception as e:          # noqa: BLE001 - the record is what MXNet raised
        rec.pop("out", None)
        rec["error"] = type(e).__name__
    return rec


def main():
    if len(sys.argv) == 3:
        rec = run_path(sys.argv[1], sys.argv[2])
        print("RECORD " + json.dumps(rec))
        os._exit(0)         # skip MXNet's shutdown hook, which re-raises async errors
    make()
    make_softmax()
    out = {}
    for model in MODELS:
        for path in PATHS:
            res = subprocess.run([sys.executable, os.path.abspath(__file__), model, path],
                                 capture_output=True, text=True, check=True)
            line = [l for l in res.stdout.splitlines() if l.startswith("RECORD ")][-1]
            rec = json.loads(line[7:])
            if rec is None:
                continue
            key = "%s/%s" % (model, path)
            for k, v in rec.items():
                out["%s/%s" % (key, k)] = np.array(v)
            print(key, rec)
    np.savez(os.path.join(HERE, "records.npz"), **out)


if __name__ == "__main__":
    main()
