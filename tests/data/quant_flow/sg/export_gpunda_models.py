import json, sys, numpy as np, gpunda as mx
from gpunda.contrib import quantization as q
fx = sys.argv[1]; out = sys.argv[2]
sym = mx.sym.load(fx + '/cnn-symbol.json')
d = mx.nd.load(fx + '/cnn-0000.params')
arg = {k[4:]: v for k, v in d.items() if k.startswith('arg:')}
aux = {k[4:]: v for k, v in d.items() if k.startswith('aux:')}
data = np.load(fx + '/data.npz')
for name, mode, dtype, gran in [('naive_auto_tensor', 'naive', 'auto', 'tensor-wise'), ('entropy_auto_channel', 'entropy', 'auto', 'channel-wise')]:
    it = mx.io.NDArrayIter(mx.nd.array(data['calib']), batch_size=8)
    qsym, qarg, qaux = q.quantize_model_mkldnn(sym, arg, aux, ctx=mx.cpu(), calib_mode=mode, calib_data=it, quantized_dtype=dtype, quantize_granularity=gran, label_names=None)
    qsym.save(f'{out}/{name}-symbol.json')
    mx.nd.save(f'{out}/{name}-0000.params', {**{'arg:' + k: v for k, v in qarg.items()}, **{'aux:' + k: v for k, v in qaux.items()}})
