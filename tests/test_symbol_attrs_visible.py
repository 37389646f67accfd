"""Attributes MXNet puts on variables, and the outputs a Symbol lists (visible ones only).

Every expected value below was recorded from real MXNet 1.9.1 (/work/mxref), with the
snippet that gave it quoted next to it.
"""
import json

import pytest

import gpunda as mx
from gpunda.base import GpundaError

S = mx.sym
nn = mx.gluon.nn


# ---------------------------------------------------------------------------
# variable attributes

def test_var_with_every_keyword_tojson():
    # mx.sym.var('x', shape=(2,3), lr_mult=2, wd_mult=0.5, dtype='float16',
    #            init=mx.init.Xavier(), stype='csr', __foo__='bar').tojson()
    want = ('{\n  "nodes": [\n    {\n      "op": "null", \n      "name": "x", \n      "attrs": {\n'
            '        "__dtype__": "2", \n        "__foo__": "bar", \n        "__init__": '
            '"[\\"xavier\\", {\\"rnd_type\\": \\"uniform\\", \\"factor_type\\": \\"avg\\", '
            '\\"magnitude\\": 3}]", \n        "__lr_mult__": "2", \n        "__shape__": '
            '"(2, 3)", \n        "__storage_type__": "2", \n        "__wd_mult__": "0.5"\n'
            '      }, \n      "inputs": []\n    }\n  ], \n  "arg_nodes": [0], \n'
            '  "node_row_ptr": [0, 1], \n  "heads": [[0, 0, 0]], \n'
            '  "attrs": {"mxnet_version": ["int", 10901]}\n}')
    x = S.var('x', shape=(2, 3), lr_mult=2, wd_mult=0.5, dtype='float16',
              init=mx.init.Xavier(), stype='csr', __foo__='bar')
    assert x.tojson() == want
    # sorted(x.list_attr().items())
    assert sorted(x.list_attr().items()) == [
        ('__dtype__', '2'), ('__foo__', 'bar'),
        ('__init__', '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]'),
        ('__lr_mult__', '2'), ('__shape__', '(2, 3)'), ('__storage_type__', '2'),
        ('__wd_mult__', '0.5'), ('lr_mult', '2'), ('wd_mult', '0.5')]


@pytest.mark.parametrize("shape, text", [
    # mx.sym.var('x', shape=...).list_attr()['__shape__']: MXNet writes str(shape)
    ((2, 3), "(2, 3)"), ([2, 3], "[2, 3]"), (5, "5"), ((0, 3), "(0, 3)"), ((4,), "(4,)")])
def test_var_shape_attr_is_str_of_shape(shape, text):
    assert S.var('x', shape=shape).list_attr() == {"__shape__": text}


def test_list_shape_attr_still_infers():
    y = S.var('x', shape=[2, 3]) * 2
    assert y.infer_shape()[1] == [(2, 3)]
    assert S.var('x', shape=5).infer_shape()[1] == [(5,)]


@pytest.mark.parametrize("stype, code", [("default", "0"), ("row_sparse", "1"), ("csr", "2")])
def test_var_stype_attr(stype, code):
    # mx.sym.var('x', stype=...).list_attr()
    assert S.var('x', stype=stype).list_attr() == {"__storage_type__": code}


def test_parameter_var_always_has_storage_type():
    # mx.gluon.Parameter('w', shape=(3, 4)).var().list_attr()
    p = mx.gluon.Parameter('w', shape=(3, 4))
    assert p.var().list_attr() == {
        '__dtype__': '0', '__lr_mult__': '1.0', '__shape__': '(3, 4)', '__storage_type__': '0',
        '__wd_mult__': '1.0', 'lr_mult': '1.0', 'wd_mult': '1.0'}
    p = mx.gluon.Parameter('w', shape=(3, 4), stype='row_sparse', grad_stype='row_sparse')
    assert p.var().list_attr()['__storage_type__'] == '1'
    # Parameter('w', shape=(3,4), init=mx.init.Xavier(), lr_mult=2, dtype='float16')
    p = mx.gluon.Parameter('w', shape=(3, 4), init=mx.init.Xavier(), lr_mult=2, dtype='float16')
    assert p.var().list_attr() == {
        '__dtype__': '2', '__init__': '["xavier", {"rnd_type": "uniform", "factor_type": '
        '"avg", "magnitude": 3}]', '__lr_mult__': '2', '__shape__': '(3, 4)',
        '__storage_type__': '0', '__wd_mult__': '1.0', 'lr_mult': '2', 'wd_mult': '1.0'}


def test_exported_gluon_net_attrs(tmp_path):
    # net = HybridSequential(); net.add(Conv2D(4, 3, in_channels=3),
    #     BatchNorm(in_channels=4), Dense(2, in_units=64)); initialize; hybridize;
    # net(nd.ones((1,3,6,6))); net(mx.sym.var('data')).attr_dict()
    net = nn.HybridSequential(prefix='hybridsequential0_')
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, in_channels=3), nn.BatchNorm(in_channels=4),
                nn.Dense(2, in_units=64))
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((1, 3, 6, 6)))
    ad = net(S.var('data')).attr_dict()
    assert sorted(ad['hybridsequential0_batchnorm0_running_mean'].items()) == [
        ('__dtype__', '0'), ('__init__', 'zeros'), ('__lr_mult__', '1.0'), ('__shape__', '(4,)'),
        ('__storage_type__', '0'), ('__wd_mult__', '1.0'), ('lr_mult', '1.0'),
        ('wd_mult', '1.0')]
    assert sorted(ad['hybridsequential0_dense0_weight'].items()) == [
        ('__dtype__', '0'), ('__lr_mult__', '1.0'), ('__shape__', '(2, 64)'),
        ('__storage_type__', '0'), ('__wd_mult__', '1.0'), ('lr_mult', '1.0'),
        ('wd_mult', '1.0')]
    net.export(str(tmp_path / 'net'))
    nodes = json.load(open(tmp_path / 'net-symbol.json'))['nodes']
    params = [n for n in nodes if n['op'] == 'null' and n['name'] != 'data']
    assert params and all(n['attrs']['__storage_type__'] == '0' for n in params)


# ---------------------------------------------------------------------------
# visible outputs

def _net():
    data, label = S.var('data'), S.var('softmax_label')
    x = S.Convolution(data, kernel=(3, 3), num_filter=4, name='conv')
    x = S.BatchNorm(x, name='bn')
    x = S.Dropout(x, p=0.5, name='drop')
    x = S.LayerNorm(x, name='ln')
    x = S.InstanceNorm(x, name='inorm')
    x = S.Pooling(x, kernel=(2, 2), pool_type='max', name='pool')
    x = S.Flatten(x, name='flat')
    x = S.L2Normalization(x, name='l2n')
    x = S.FullyConnected(x, num_hidden=6, name='fc')
    x = S.LeakyReLU(x, act_type='prelu', name='rrelu')
    x2 = S.reshape(x, shape=(0, 2, 3), name='rs')
    r = S.RNN(S.transpose(x2, axes=(1, 0, 2)), S.var('rnn_params'), S.var('rnn_state'),
              S.var('rnn_cell'), state_size=4, num_layers=1, mode='lstm', state_outputs=True,
              name='rnn')
    y = S.FullyConnected(S.Flatten(S.transpose(r[0], axes=(1, 0, 2))), num_hidden=3,
                         name='fc2')
    bn2 = S.BatchNorm(y, output_mean_var=True, name='bn2')
    sm = S.SoftmaxOutput(bn2[0], label, name='softmax')
    return S.Group([sm, r[1], bn2[2], S.make_loss(S.sum(x), name='ml'), S.BlockGrad(x)])


# MXNet 1.9.1: _net().get_internals().list_outputs() (the transpose/flatten/sum/
# blockgrad names come from MXNet's global name counters in a fresh process)
_INTERNALS = [
    "data", "conv_weight", "conv_bias", "conv_output", "bn_gamma", "bn_beta", "bn_moving_mean",
    "bn_moving_var", "bn_output", "drop_output", "ln_gamma", "ln_beta", "ln_output",
    "inorm_gamma", "inorm_beta", "inorm_output", "pool_output", "flat_output", "l2n_output",
    "fc_weight", "fc_bias", "fc_output", "rrelu_gamma", "rrelu_output", "rs_output",
    "transpose_output", "rnn_params", "rnn_state", "rnn_cell", "rnn_output",
    "rnn_state_output", "rnn_statecell_output", "transpose_output", "flatten_output",
    "fc2_weight", "fc2_bias", "fc2_output", "bn2_gamma", "bn2_beta", "bn2_moving_mean",
    "bn2_moving_var", "bn2_output", "bn2_mean", "bn2_var", "softmax_label", "softmax_output",
    "sum_output", "ml_loss", "blockgrad_output"]


def _strip_counter(name):
    # transpose0_output / transpose1_output -> transpose_output (auto-named nodes)
    for base in ("transpose", "flatten", "sum", "blockgrad"):
        if name.startswith(base) and name[len(base):len(base) + 1].isdigit():
            return base + name[len(base):].lstrip("0123456789")
    return name


def test_get_internals_lists_visible_outputs_only():
    out = _net()
    internals = out.get_internals()
    assert len(internals) == 49                    # 58 with hidden outputs
    assert [_strip_counter(n) for n in internals.list_outputs()] == _INTERNALS
    assert len(internals.get_internals()) == 49
    assert [s.name for s in internals][8:10] == ["bn", "drop"]


def test_positional_and_named_indexing_of_internals():
    internals = _net().get_internals()
    # MXNet: [I[i].list_outputs() for i in range(0, 49, 7)]
    got = [internals[i].list_outputs()[0] for i in range(0, 49, 7)]
    assert got == ["data", "bn_moving_var", "inorm_beta", "fc_output", "rnn_cell",
                   "fc2_bias", "bn2_mean"]
    assert internals[2:5].list_outputs() == ["conv_bias", "conv_output", "bn_gamma"]
    # a hidden output has no name to look up: ValueError (MXNet's class)
    with pytest.raises(ValueError):
        internals['bn_mean']
    with pytest.raises(ValueError):
        internals['drop_mask']
    with pytest.raises(IndexError):
        internals[49]
    with pytest.raises(TypeError):
        internals[1.5]


def test_json_heads_and_shapes_of_internals():
    internals = _net().get_internals()
    heads = json.loads(internals.tojson())['heads']
    assert len(heads) == 49
    # MXNet: the rnn node (29) lists 3 heads, bn2 (39) 3, every other node one
    assert [h[:2] for h in heads[29:32]] == [[29, 0], [29, 1], [29, 2]]
    assert [h[:2] for h in heads[41:44]] == [[39, 0], [39, 1], [39, 2]]
    assert len(S.load_json(internals.tojson())) == 49
    _, out_shapes, _ = internals.infer_shape_partial(data=(2, 3, 10, 10), softmax_label=(2,))
    assert len(out_shapes) == 49
    # MXNet: out_shapes[8:13] (bn_output, drop_output, ln_gamma, ln_beta, ln_output)
    assert out_shapes[8:13] == [(2, 4, 8, 8), (2, 4, 8, 8), (8,), (8,), (2, 4, 8, 8)]
    # bn2_output, bn2_mean, bn2_var, softmax_label, softmax_output, sum, ml_loss, blockgrad
    assert out_shapes[-8:] == [(2, 3), (3,), (3,), (2,), (2, 3), (1,), (1,), (2, 6)]


def test_internal_output_still_computes():
    internals = _net().get_internals()
    ex = internals['bn_output'].simple_bind(mx.cpu(), data=(2, 3, 10, 10))
    assert [o.shape for o in ex.forward()] == [(2, 4, 8, 8)]


def test_children_and_group_outputs():
    out = _net()
    assert len(out) == 5
    assert out.list_outputs()[:3] == ["softmax_output", "rnn_state_output", "bn2_var"]
    bn = out.get_internals()['bn_output']
    assert bn.get_children().list_outputs() == [
        "conv_output", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]


@pytest.mark.parametrize("make, want", [
    # MXNet 1.9.1: sym.get_internals().list_outputs() of one op on var 'data' named 'o'
    (lambda d: S.Dropout(d, name='o'), ["data", "o_output"]),
    (lambda d: S.LRN(d, nsize=3, name='o'), ["data", "o_output"]),
    (lambda d: S.L2Normalization(d, name='o'), ["data", "o_output"]),
    (lambda d: S.GroupNorm(d, name='o'), ["data", "o_gamma", "o_beta", "o_output"]),
    (lambda d: S.BilinearSampler(d, S.var('g'), name='o'), ["data", "g", "o_output"]),
    (lambda d: S.ROIPooling(d, S.var('r'), pooled_size=(2, 2), spatial_scale=1.0, name='o'),
     ["data", "r", "o_output"]),
    (lambda d: S.RNN(d, S.var('p'), S.var('s'), state_size=4, num_layers=1, mode='rnn_tanh',
                     name='o'), ["data", "p", "s", "o_output"]),
    (lambda d: S.contrib.box_nms(d, name='o'), ["data", "o_output0"]),
    (lambda d: S.sort(d, name='o'), ["data", "o_output0"]),
    (lambda d: S.topk(d, ret_typ='value', name='o'), ["data", "o_output0"]),
    (lambda d: S.topk(d, ret_typ='both', name='o'), ["data", "o_output0", "o_output1"]),
    (lambda d: S.moments(d, axes=(0,), name='o'), ["data", "o_output0", "o_output1"]),
    (lambda d: S.CTCLoss(d, S.var('l'), name='o'), ["data", "l", "o_output0"]),
    (lambda d: S.LayerNorm(d, output_mean_var=True, name='o'),
     ["data", "o_gamma", "o_beta", "o_output", "o_mean", "o_std"]),
    (lambda d: S.InstanceNorm(d, name='o'), ["data", "o_gamma", "o_beta", "o_output"]),
    (lambda d: S.split(d, num_outputs=1, squeeze_axis=True, name='o'), ["data", "o_output0"]),
    (lambda d: S.contrib.quantize_v2(d, name='o'),
     ["data", "o_output0", "o_output1", "o_output2"]),
    (lambda d: S.sample_multinomial(d, name='o'), ["data", "o_output"]),
    (lambda d: S.sample_multinomial(d, get_prob=True, name='o'),
     ["data", "o_output0", "o_output1"]),
    (lambda d: S.LeakyReLU(d, name='o'), ["data", "o_output"]),
    (lambda d: S.contrib.MultiProposal(d, S.var('b'), S.var('i'), name='o'),
     ["data", "b", "i", "o_output"]),
])
def test_single_op_internals(make, want):
    assert make(S.var('data')).get_internals().list_outputs() == want


def test_executor_monitor_still_sees_hidden_outputs():
    # MXNet's monitor reports every output array of each op, hidden ones included
    sym = S.Dropout(S.var('data'), name='d1')
    ex = sym.simple_bind(mx.cpu(), data=(2, 3))
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(name.decode()
                                                            if isinstance(name, bytes)
                                                            else name))
    ex.forward()
    assert "d1_output" in seen and "d1_mask" in seen


def test_getitem_error_classes_are_mxnets():
    a = S.var('a')
    with pytest.raises(ValueError):     # MXNet: Cannot find output that matches name
        a['b']
    with pytest.raises(TypeError):      # Symbol only support integer index
        a[1.5]
    with pytest.raises(IndexError):     # past the end (ends iteration)
        a[1]
    with pytest.raises(GpundaError):    # and still gpunda's own error class
        a[1]
