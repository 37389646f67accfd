"""The mx.contrib.amp cases of tests/contrib/test_contrib_amp.py, written once for MXNet and
gpunda: ``python amp_scenarios.py <mxnet|gpunda> <case>`` prints the case's result as JSON.
make_amp_fixture.py records MXNet 1.9.1's into amp_mxnet191.json; the test runs gpunda's,
each case in its own process (amp.init changes the op namespaces for good)."""
import importlib
import json
import sys

import numpy as np


def compact(sym):
    """(nodes as (op, name, dtype attrs, input names), heads) of ``sym``'s JSON with casts."""
    j = json.loads(sym.tojson(remove_amp_cast=False))
    nodes = j["nodes"]
    res = []
    for n in nodes:
        a = n.get("attrs", {})
        keep = {k: v for k, v in a.items() if k in ("dtype", "num_outputs", "__dtype__")}
        res.append([n["op"], n["name"], keep, [[nodes[i[0]]["name"], i[1]] for i in n["inputs"]]])
    return [res, [[nodes[h[0]]["name"], h[1]] for h in j["heads"]]]


def small_net(mx):
    data, data2 = mx.sym.var("data"), mx.sym.var("data2")
    fc1 = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    bn = mx.sym.BatchNorm(fc1, name="bn")
    act = mx.sym.Activation(bn, act_type="relu", name="act")
    act2 = mx.sym.Activation(act, act_type="softrelu", name="act2")
    s = mx.sym.elemwise_add(act, act2, name="add1")
    s2 = mx.sym.broadcast_add(s, data2, name="badd")
    fc2 = mx.sym.FullyConnected(s2, num_hidden=4, name="fc2")
    sp = mx.sym.SliceChannel(fc2, num_outputs=2, name="split")
    c = mx.sym.concat(sp[0], sp[1], data2, dim=1, name="cat")
    return mx.sym.Group([mx.sym.softmax(c, name="sm"), fc2])


def case_convert(mx):
    """convert_symbol / convert_model of small_net (no amp.init)."""
    amp = importlib.import_module(mx.__name__ + ".contrib.amp")
    out = {}
    for td in ("float16", "bfloat16"):
        for cop in (False, True):
            s = amp.convert_symbol(small_net(mx), target_dtype=td, cast_optional_params=cop)
            out[f"{td}-{cop}"] = compact(s)
            out[f"{td}-{cop}-plain"] = compact(mx.sym.load_json(s.tojson()))
        s = amp.convert_symbol(small_net(mx), target_dtype=td, data_names=["data", "data2"],
                               excluded_sym_names=["fc2"])
        out[f"{td}-dn"] = compact(s)
        s = amp.convert_symbol(small_net(mx), target_dtype=td, data_names=["data"],
                               cast_optional_params=True)
        out[f"{td}-dn1"] = compact(s)
    s = amp.convert_symbol(small_net(mx), target_dtype="float16",
                           target_dtype_ops=["FullyConnected"], fp32_ops=["softmax"],
                           conditional_fp32_ops=[("Activation", "act_type", ["relu"])])
    out["custom-lists"] = compact(s)
    net = small_net(mx)
    shapes = dict(zip(net.list_arguments(), net.infer_shape(data=(2, 3), data2=(2, 1))[0]))
    aux_shapes = dict(zip(net.list_auxiliary_states(),
                          net.infer_shape(data=(2, 3), data2=(2, 1))[2]))
    for cop in (False, True):
        args = {k: mx.nd.ones(v) for k, v in shapes.items() if k not in ("data", "data2")}
        aux = {k: mx.nd.ones(v) for k, v in aux_shapes.items()}
        s, a2, x2 = amp.convert_model(net, args, aux, target_dtype="float16",
                                      cast_optional_params=cop)
        out[f"model-{cop}"] = [compact(s), {k: str(np.dtype(v.dtype)) for k, v in a2.items()},
                               {k: str(np.dtype(v.dtype)) for k, v in x2.items()}]
    return out


def case_hybrid(mx):
    """convert_hybrid_block of a small Gluon net (no amp.init)."""
    amp = importlib.import_module(mx.__name__ + ".contrib.amp")
    net = mx.gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(8, in_units=3), mx.gluon.nn.BatchNorm(in_channels=8),
                mx.gluon.nn.Activation("relu"), mx.gluon.nn.Dense(4, in_units=8))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    net.hybridize()
    net(mx.nd.ones((2, 3), ctx=mx.cpu()))
    out = {}
    for cop in (False, True):
        blk = amp.convert_hybrid_block(net, target_dtype="float16", ctx=mx.cpu(),
                                       cast_optional_params=cop)
        out[str(cop)] = [compact(blk._cached_graph[1] if blk._cached_graph else
                                 blk(mx.sym.var("data"))),
                         {k: str(np.dtype(p.dtype)) for k, p in blk.collect_params().items()}]
    return out


def case_bucketing(mx):
    """convert_bucketing_module (amp.amp's; MXNet's package does not export it)."""
    amp = importlib.import_module(mx.__name__ + ".contrib.amp")

    def sym_gen(key):
        fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=key, name="fc")
        out = mx.sym.FullyConnected(mx.sym.Activation(fc, act_type="relu", name="relu"),
                                    num_hidden=2, name="out")
        return mx.sym.SoftmaxOutput(out, name="softmax"), ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4, context=mx.cpu())
    mod.bind(data_shapes=[("data", (2, 3))], label_shapes=[("softmax_label", (2,))])
    mod.init_params()
    res = amp.amp.convert_bucketing_module(mod, cast_optional_params=True)
    out = {str(k): compact(m._symbol) for k, m in res._buckets.items()}
    args, _ = res.get_params()
    out["params"] = {k: str(np.dtype(v.dtype)) for k, v in args.items()}
    return out


def case_nd(mx):
    """Output dtypes (and values) of nd ops after amp.init() (float16)."""
    amp = importlib.import_module(mx.__name__ + ".contrib.amp")
    amp.init()
    amp.init()          # a second call does nothing
    x16 = mx.nd.array([[1, 2, 3], [-1, 0, .5]], dtype="float16")
    x32 = mx.nd.array([[1, 2, 3], [-1, 0, .5]])
    w, b = mx.nd.ones((4, 3)), mx.nd.zeros(4)
    out = {}
    for name, f, read in [
            ("softmax16", lambda: mx.nd.softmax(x16), True),
            ("softmax32", lambda: mx.nd.softmax(x32), True),
            ("add16_32", lambda: mx.nd.elemwise_add(x16, x32), True),
            ("add32_16", lambda: mx.nd.elemwise_add(x32, x16), True),
            ("add16_16", lambda: mx.nd.elemwise_add(x16, x16), True),
            ("bcast16_32", lambda: mx.nd.broadcast_add(x16, x32), True),
            ("concat", lambda: mx.nd.concat(x16, x32, dim=0), True),
            ("softrelu16", lambda: mx.nd.Activation(x16, act_type="softrelu"), True),
            ("relu16", lambda: mx.nd.Activation(x16, act_type="relu"), True),
            ("op_namespace", lambda: mx.nd.op.elemwise_add(x16, x32), True),
            # MXNet's CPU FullyConnected refuses float16 (its error comes at the next wait)
            ("fc32", lambda: mx.nd.FullyConnected(x32, w, b, num_hidden=4), False),
            ("fc16", lambda: mx.nd.FullyConnected(x16, w, b, num_hidden=4), False)]:
        r = f()
        out[name] = [str(np.dtype(r.dtype)),
                     r.asnumpy().astype(np.float64).round(3).tolist() if read else None]
    try:
        mx.nd.waitall()
    except Exception:
        pass
    # the loss outputs scale their gradient by the loss scale
    x = mx.nd.array([[1., 2., 3.], [0., 0., 1.]])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.SoftmaxOutput(x, mx.nd.array([2, 0]))
    y.backward()
    out["softmax_output_grad"] = x.grad.asnumpy().astype(np.float64).round(2).tolist()
    out["initialized"] = importlib.import_module(
        mx.__name__ + ".contrib.amp.amp")._amp_initialized
    return out


def case_nd_bf16(mx):
    """Output dtypes after amp.init('bfloat16') of ops that do not need bfloat16 arithmetic."""
    amp = importlib.import_module(mx.__name__ + ".contrib.amp")
    amp.init("bfloat16")
    x32 = mx.nd.array([[1, 2, 3], [-1, 0, .5]])
    out = {"softmax32": str(np.dtype(mx.nd.softmax(x32).dtype)),
           "add32": str(np.dtype(mx.nd.elemwise_add(x32, x32).dtype))}
    try:
        r = mx.nd.FullyConnected(x32, mx.nd.ones((4, 3)), mx.nd.zeros(4), num_hidden=4)
        out["fc32"] = str(r.dtype)
    except Exception as e:      # MXNet without oneDNN's bfloat16 kernels
        out["fc32"] = "error: " + str(e).splitlines()[0]
    return out


def case_sym(mx):
    """A Symbol graph built after amp.init()."""
    amp = importlib.import_module(mx.__name__ + ".contrib.amp")
    amp.init()
    data, d2 = mx.sym.var("data"), mx.sym.var("d2")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    bn = mx.sym.BatchNorm(fc, name="bn")
    a = mx.sym.Activation(bn, act_type="softrelu", name="a")
    a2 = mx.sym.Activation(a, act_type="relu", name="a2")
    s = mx.sym.elemwise_add(a2, d2, name="s")
    so = mx.sym.SoftmaxOutput(mx.sym.softmax(s, name="sm"), name="so")
    ex = so.simple_bind(mx.cpu(), data=(2, 3), d2=(2, 4))
    return [compact(so), so.list_arguments(), so.list_auxiliary_states(),
            {k: str(np.dtype(v.dtype)) for k, v in ex.arg_dict.items()}]


def case_train(mx):
    """A float16 Gluon model trained with amp.init_trainer/scale_loss: the first steps
    overflow (float16 gradients of a loss scaled by 2**16) and are skipped while the scale
    halves; then it converges."""
    amp = importlib.import_module(mx.__name__ + ".contrib.amp")
    gluon, autograd = mx.gluon, mx.autograd
    amp.init()

    class Lin(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.w = self.params.get("w", shape=(1, 4), dtype="float16",
                                         init=mx.init.Zero())
                self.b = self.params.get("b", shape=(1,), dtype="float16", init=mx.init.Zero())

        def hybrid_forward(self, F, x, w, b):
            return F.broadcast_add(F.sum(F.broadcast_mul(x, w), axis=1), b)

    rs = np.random.RandomState(0)
    X = rs.uniform(-1, 1, (16, 4)).astype("float16")
    Y = (X.astype("float32") @ np.array([1.5, -2., 0.5, 1.]) + 0.3).astype("float16")
    net = Lin(prefix="lin_")
    net.initialize(ctx=mx.cpu())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.2})
    amp.init_trainer(trainer)
    loss_fn = gluon.loss.L2Loss()
    x, y = mx.nd.array(X, dtype="float16"), mx.nd.array(Y, dtype="float16")
    rec = []
    for _ in range(40):
        with autograd.record():
            loss = loss_fn(net(x), y)
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
        trainer.step(16)
        rec.append([float(loss.mean().asscalar()), trainer._amp_loss_scaler.loss_scale,
                    trainer._amp_loss_scaler._next_loss_scale])
    # unscale: the gradients divided by the scale now, the next step leaves them
    with autograd.record():
        loss = loss_fn(net(x), y)
        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)
    scaled_grad = net.w.grad().asnumpy().astype(np.float64)
    amp.unscale(trainer)
    return {"rec": rec, "w": net.w.data().asnumpy().astype(np.float64).tolist(),
            "b": net.b.data().asnumpy().astype(np.float64).tolist(),
            "unscaled_ratio": (scaled_grad / net.w.grad().asnumpy()).tolist(),
            "scale_after_unscale": trainer._scale}


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    module = importlib.import_module(sys.argv[1])
    print(json.dumps(globals()["case_" + sys.argv[2]](module)))
