"""Record MXNet 1.9.1's fused INT8 flow on a small CNN (run with /work/mxref/bin/python)."""
import json, sys, os
import numpy as np, mxnet as mx
from mxnet.contrib import quantization as q
out_dir = sys.argv[1]
np.random.seed(7); mx.random.seed(7)

def build():
    data = mx.sym.var('data')
    c1 = mx.sym.Convolution(data, num_filter=8, kernel=(3, 3), pad=(1, 1), name='conv1')
    b1 = mx.sym.BatchNorm(c1, name='bn1', fix_gamma=False)
    r1 = mx.sym.Activation(b1, act_type='relu', name='relu1')
    c2 = mx.sym.Convolution(r1, num_filter=8, kernel=(3, 3), pad=(1, 1), name='conv2')
    b2 = mx.sym.BatchNorm(c2, name='bn2', fix_gamma=False)
    r2 = mx.sym.Activation(b2 + r1, act_type='relu', name='relu2')
    p = mx.sym.Pooling(r2, kernel=(2, 2), stride=(2, 2), pool_type='max', name='pool')
    c3 = mx.sym.Convolution(p, num_filter=8, kernel=(1, 1), no_bias=True, name='conv3')
    f = mx.sym.flatten(c3)
    h = mx.sym.Activation(mx.sym.FullyConnected(f, num_hidden=16, name='fc1'),
                          act_type='relu', name='relu3')
    fc = mx.sym.FullyConnected(h, num_hidden=10, name='fc2')
    return mx.sym.softmax(fc, name='softmax')

sym = build()
mod = mx.mod.Module(sym, label_names=None)
mod.bind(data_shapes=[('data', (8, 3, 8, 8))], for_training=False)
mod.init_params(mx.init.Xavier())
arg, aux = mod.get_params()
for k in aux:
    aux[k] = mx.nd.random.uniform(0.5, 1.5, aux[k].shape) if 'var' in k else \
        mx.nd.random.uniform(-.2, .2, aux[k].shape)
for k in arg:
    if k.endswith('bias'):
        arg[k] = mx.nd.random.uniform(-.1, .1, arg[k].shape)
calib = np.random.uniform(-1, 1, (16, 3, 8, 8)).astype(np.float32)
test = np.random.uniform(-1, 1, (32, 3, 8, 8)).astype(np.float32)
sym.save(os.path.join(out_dir, 'cnn-symbol.json'))
mx.nd.save(os.path.join(out_dir, 'cnn-0000.params'),
           {**{'arg:' + k: v for k, v in arg.items()}, **{'aux:' + k: v for k, v in aux.items()}})
np.savez_compressed(os.path.join(out_dir, 'data.npz'), calib=calib, test=test)

def run(s, a, x):
    ex = s.bind(mx.cpu(), {'data': mx.nd.array(x), **{k: v for k, v in a[0].items() if k in s.list_arguments()}},
                aux_states={k: v for k, v in a[1].items() if k in s.list_auxiliary_states()})
    return ex.forward()[0].asnumpy()

res = {'float': run(sym, (arg, aux), test).tolist()}
fsym = sym.get_backend_symbol('MKLDNN_QUANTIZE')
fsym.save(os.path.join(out_dir, 'fused-symbol.json'))
res['fused_float'] = run(fsym, (arg, aux), test).tolist()
CONFIGS = {'naive_auto_tensor': ('naive', 'auto', 'tensor-wise'),
           'entropy_int8_channel': ('entropy', 'int8', 'channel-wise'), 'entropy_auto_channel': ('entropy', 'auto', 'channel-wise'), 'entropy_auto_tensor': ('entropy', 'auto', 'tensor-wise'), 'naive_int8_tensor': ('naive', 'int8', 'tensor-wise'),
           'naive_auto_channel': ('naive', 'auto', 'channel-wise')}
only = sys.argv[2:]
for name, (mode, dtype, gran) in CONFIGS.items():
    if only and name not in only:
        continue
    c = calib if dtype != 'uint8' else np.abs(calib)
    t = test if dtype != 'uint8' else np.abs(test)
    it = mx.io.NDArrayIter(mx.nd.array(c), batch_size=8)
    qsym, qarg, qaux = q.quantize_model_mkldnn(sym, arg, aux, ctx=mx.cpu(), calib_mode=mode,
                                               calib_data=it, quantized_dtype=dtype,
                                               quantize_granularity=gran, label_names=None)
    qsym.save(os.path.join(out_dir, name + '-symbol.json'))
    mx.nd.save(os.path.join(out_dir, name + '-0000.params'),
               {**{'arg:' + k: v for k, v in qarg.items()}, **{'aux:' + k: v for k, v in qaux.items()}})
    res[name] = run(qsym, (qarg, qaux), t).tolist()
    res[name + '_float'] = run(sym, (arg, aux), t).tolist()
path = os.path.join(out_dir, 'results.json')
old = json.load(open(path)) if os.path.exists(path) else {}
old.update(res)
json.dump(old, open(path, 'w'))
print('ok')
