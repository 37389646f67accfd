"""Each fused node of MXNet's quantized CNN alone, on random int8/uint8 data: its inputs and
MXNet's outputs (and the same node uncalibrated), for bit-level checks.

    python record_mxnet_layers.py FIXTURE_DIR NAME [full]

uint8 data spans 0..63 (no int16 pair saturates in oneDNN's AVX2 u8 x s8 products), or with
``full`` 0..255 (pairs saturate; written to layers_NAME_full.json)."""
import json, sys, numpy as np, mxnet as mx
fx, name = sys.argv[1], sys.argv[2]
full = sys.argv[3:] == ['full']
js = json.load(open(f'{fx}/{name}-symbol.json'))
d = mx.nd.load(f'{fx}/{name}-0000.params')
params = {k[4:]: v for k, v in d.items()}
qsym = mx.sym.load_json(json.dumps(js))
ints = qsym.get_internals()
_, out_shapes, _ = ints.infer_shape(data=(1, 3, 8, 8))
_, out_types, _ = ints.infer_type(data='float32')
shape_of = dict(zip(ints.list_outputs(), out_shapes)); type_of = dict(zip(ints.list_outputs(), out_types))
nodes = js['nodes']
def entry_name(e):
    n = nodes[e[0]]
    if n['op'] == 'null': return n['name']
    outs = [o for o in ints.list_outputs() if o.startswith(n['name'] + '_')]
    return outs[e[1]]
rs = np.random.RandomState(3)
rec = {}
for k, n in enumerate(nodes):
    if not n['op'].startswith('_sg_mkldnn'): continue
    for variant in ('calib', 'nocalib'):
        node = json.loads(json.dumps(n))
        if variant == 'nocalib':
            a = node.get('attrs', {})
            if 'min_calib_range' not in a: continue
            a.pop('min_calib_range'); a.pop('max_calib_range')
        mini, feed = [], {}
        for i, e in enumerate(n['inputs']):
            src = nodes[e[0]]
            if src['op'] == 'null':
                vname = src['name']; feed[vname] = params[vname]
            else:
                vname = f'in{i}'
                en = entry_name(e); shp = shape_of[en]; dt = np.dtype(type_of[en])
                if shp == (1,):
                    continue
                if dt == np.uint8: val = rs.randint(0, 256 if full else 64, shp)
                elif dt == np.int8: val = rs.randint(-127, 128, shp)
                else: val = rs.uniform(-1, 1, shp)
                feed[vname] = mx.nd.array(val, dtype=dt)
                r = float(rs.uniform(0.5, 2.0))
                feed[vname + '_min'] = mx.nd.array([0.0 if dt == np.uint8 else -r])
                feed[vname + '_max'] = mx.nd.array([r])
            mini.append({'op': 'null', 'name': vname, 'inputs': []})
        # wire min/max: inputs after the data entries refer to output 1/2 of producers
        names = []
        for i, e in enumerate(n['inputs']):
            src = nodes[e[0]]
            if src['op'] == 'null': names.append(src['name'])
            else:
                first = [j for j, f in enumerate(n['inputs']) if f[0] == e[0] and nodes[f[0]]['op'] != 'null']
                owner = 'in%d' % min(j for j in first if (n['inputs'][j][1] == 0))
                names.append(owner if e[1] == 0 else owner + ('_min' if e[1] == 1 else '_max'))
        vars_ = sorted(set(names), key=names.index)
        mini = [{'op': 'null', 'name': v, 'inputs': []} for v in vars_]
        node['inputs'] = [[vars_.index(v), 0, 0] for v in names]
        mini.append(node)
        g = {'nodes': mini, 'arg_nodes': list(range(len(vars_))), 'heads': [[len(vars_), 0, 0]],
             'attrs': {'mxnet_version': ['int', 10901]}}
        s = mx.sym.load_json(json.dumps(g))
        args = {v: feed[v] for v in s.list_arguments()}
        auxs = {v: feed[v] for v in s.list_auxiliary_states()}
        ex = s.bind(mx.cpu(), args, aux_states=auxs)
        outs = [o.asnumpy() for o in ex.forward()]
        key = f"{n['name']}:{variant}"
        rec[key] = {'graph': g, 'inputs': {v: feed[v].asnumpy().tolist() for v in vars_ if v.startswith('in')},
                    'dtypes': {v: str(feed[v].dtype.__name__ if hasattr(feed[v].dtype, '__name__') else feed[v].dtype) for v in vars_ if v.startswith('in')},
                    'outputs': [o.tolist() for o in outs], 'out_dtypes': [str(o.dtype) for o in outs]}
        print(key, [o.dtype for o in outs])
json.dump(rec, open(f'{fx}/layers_{name}{"_full" if full else ""}.json', 'w'))
