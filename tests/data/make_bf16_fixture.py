"""Records MXNet 1.9.1's bfloat16 answers for tests/test_bfloat16.py into bf16_mxnet191.npz
and bf16_mxnet191.params. Run with /work/mxref/bin/python (MXNet 1.9.1, its CPU wheel):

    /work/mxref/bin/python tests/data/make_bf16_fixture.py tests/data

MXNet 1.9.1 cannot make a bfloat16 NDArray from Python (NumPy has no such dtype), but its
amp_cast op makes one, and convert_hybrid_block runs a block in bfloat16 on the CPU."""
import os
import sys

import numpy as np


def cast_values(mx):
    """float32 values and what amp_cast to bfloat16 and back gives (rounding)."""
    base = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -2.7182817,
                     3.1415927, 1e-3, 65504.0, 3.4e38, -0.0, 1e-40, 123456.79, 0.1, 2 ** -126,
                     np.inf, -np.inf], dtype=np.float32)
    rs = np.random.RandomState(0)
    x = np.concatenate([base, rs.standard_normal(48).astype(np.float32) * 10])
    b = mx.nd.amp_cast(mx.nd.array(x), dtype=mx.contrib.amp.amp.bfloat16)
    back = mx.nd.amp_cast(b, dtype="float32").asnumpy()
    return x, back, b


def small_cnn(mx, prefix="cnn_"):
    """The CNN both sides convert (tests/test_bfloat16.py builds it with gpunda)."""
    net = mx.gluon.nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(mx.gluon.nn.Conv2D(4, 3, in_channels=2), mx.gluon.nn.BatchNorm(in_channels=4),
                mx.gluon.nn.Activation("relu"), mx.gluon.nn.MaxPool2D(2),
                mx.gluon.nn.Flatten(), mx.gluon.nn.Dense(5, in_units=36))
    return net


def cnn_params(net):
    """Deterministic parameter values (same RandomState draw in the test)."""
    rs = np.random.RandomState(1)
    vals = {}
    for name, p in sorted(net.collect_params().items()):
        v = rs.uniform(-1, 1, p.shape).astype(np.float32)
        if name.endswith("running_var"):
            v = np.abs(v) + 0.5
        vals[name] = v
    return vals


def op_results(mx, b16):
    """MXNet's mshadow bfloat16 kernels on a bfloat16 array (read back through amp_cast)."""
    f = lambda y: mx.nd.amp_cast(y, dtype="float32").asnumpy()
    return {"tanh": f(mx.nd.tanh(b16)), "relu": f(mx.nd.relu(b16)),
            "sqrt": f(mx.nd.sqrt(mx.nd.abs(b16))), "square": f(mx.nd.square(b16)),
            "add": f(b16 + b16), "mul": f(b16 * b16), "exp": f(mx.nd.exp(b16)),
            "clip": f(mx.nd.clip(b16, -1, 1)), "sum": f(mx.nd.sum(b16)),
            "concat": f(mx.nd.concat(b16, b16, dim=0))}


def main(out_dir):
    import mxnet as mx
    from mxnet.contrib import amp
    x, back, b = cast_values(mx)
    # a file holding a bfloat16 array, as MXNet writes it (dtype code 12)
    mx.nd.save(os.path.join(out_dir, "bf16_mxnet191.params"), {"bf": b, "f32": mx.nd.array(x[:4])})
    ox = (np.linspace(-3, 3, 12).reshape(3, 4) + 0.013).astype(np.float32)
    ops = op_results(mx, mx.nd.amp_cast(mx.nd.array(ox), dtype=amp.amp.bfloat16))
    # the converted CNN: MXNet's graph and parameter dtypes (its bfloat16 Convolution and
    # FullyConnected need oneDNN on an AVX512 CPU, so the outputs cannot be recorded here)
    net = small_cnn(mx)
    net.initialize(ctx=mx.cpu())
    for name, v in cnn_params(net).items():
        net.collect_params()[name].set_data(mx.nd.array(v))
    data = np.random.RandomState(2).uniform(-2, 2, (2, 2, 8, 8)).astype(np.float32)
    net.hybridize()
    y32 = net(mx.nd.array(data)).asnumpy()
    conv = amp.convert_hybrid_block(net, target_dtype="bfloat16", ctx=mx.cpu())
    graph = conv._cached_graph[1].tojson(remove_amp_cast=False)
    pdt = [k + ":" + str(np.dtype(p.dtype)) for k, p in sorted(conv.collect_params().items())]
    np.savez(os.path.join(out_dir, "bf16_mxnet191.npz"), x=x, back=back, data=data, y32=y32,
             ox=ox, graph=np.array(graph), pdt=np.array(pdt),
             **{"op_" + k: v for k, v in ops.items()})
    print("recorded", back[:6])


if __name__ == "__main__":
    main(sys.argv[1])
