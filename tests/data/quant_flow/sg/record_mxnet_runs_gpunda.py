import json, sys, numpy as np, mxnet as mx
gpx, fx, name = sys.argv[1], sys.argv[2], sys.argv[3]
sym = mx.sym.load(f'{gpx}/{name}-symbol.json'); d = mx.nd.load(f'{gpx}/{name}-0000.params')
arg = {k[4:]: v for k, v in d.items() if k.startswith('arg:')}; aux = {k[4:]: v for k, v in d.items() if k.startswith('aux:')}
t = np.load(f'{fx}/data.npz')['test']
y = sym.bind(mx.cpu(), {'data': mx.nd.array(t), **arg}, aux_states=aux).forward()[0].asnumpy()
path = f'{fx}/results.json'; r = json.load(open(path)); r['mxnet_runs_gpunda_' + name] = y.tolist(); json.dump(r, open(path, 'w'))
print(name, 'ok')
