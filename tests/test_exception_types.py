"""The exception class of each error MXNet 1.9.1 raises from Python, for the same
condition in gpunda: MXNet's class exactly, or a gpunda class deriving from it (and from
GpundaError, which is MXNetError), so code that catches MXNet's class keeps working.

The table was made by running each condition below on real MXNet 1.9.1 (/work/mxref) and
recording the class of what it raised, e.g. for the first row:

    net = gluon.nn.Dense(2, in_units=2); net.initialize()
    t = gluon.Trainer(net.collect_params(), 'sgd')
    with mx.autograd.record(): y = net(nd.ones((1, 2)))
    y.backward(); t.step(1); t.step(1)        # -> UserWarning (raised, not warned)

MXNet classes a gpunda class derives from: UserWarning (GpundaUserWarning),
AssertionError (GpundaAssertionError), ValueError (GpundaValueError), TypeError
(GpundaTypeError), IndexError (GpundaIndexError), KeyError (GpundaKeyError),
NotImplementedError (GpundaNotImplementedError), DeprecationWarning
(GpundaDeprecationWarning); RuntimeError and MXNetError: GpundaError itself.

Conditions checked and left (gpunda's class differs; see the helper's report): NDArray
__setitem__ of a str value (TypeError in MXNet), NDArray.reshape with an unknown keyword
(TypeError), nd.array of a ragged list (TypeError), nd.from_numpy of complex (ValueError),
CSRNDArray [a:b:2] / [i, j] (ValueError), csr<->row_sparse tostype (ValueError),
an op given a Python int as input (AssertionError), lr_scheduler / initializer argument checks
(ValueError / AssertionError).
"""
import os
import tempfile
import warnings

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import MXNetError

nd, S, gluon = mx.nd, mx.sym, mx.gluon
_DIR = tempfile.mkdtemp(prefix="gpunda_exc_")


def _tmp(name):
    return os.path.join(_DIR, name)


C = {}


def case(name):
    def put(f):
        C[name] = f
        return f
    return put

def trainer_stale():
    net = gluon.nn.Dense(2, in_units=2); net.initialize()
    t = gluon.Trainer(net.collect_params(), 'sgd')
    with mx.autograd.record(): y = net(nd.ones((1, 2)))
    y.backward(); t.step(1); t.step(1)
case('trainer stale grad')(trainer_stale)

def tr():
    net = gluon.nn.Dense(2, in_units=2); net.initialize(); return gluon.Trainer(net.collect_params(), 'sgd'), net
case('trainer learning_rate no optimizer')(lambda: (lambda t: (setattr(t, '_optimizer', None), t.learning_rate))(tr()[0]))
case('trainer set_learning_rate no optimizer')(lambda: (lambda t: (setattr(t, '_optimizer', None), t.set_learning_rate(0.1)))(tr()[0]))

def opt_lrsched():
    o = mx.optimizer.SGD(lr_scheduler=mx.lr_scheduler.FactorScheduler(2)); o.set_learning_rate(0.1)
case('optimizer set_lr with scheduler')(opt_lrsched)
case('trainer params not list')(lambda: gluon.Trainer(3, 'sgd'))
case('trainer params bad element')(lambda: gluon.Trainer([3], 'sgd'))
case('trainer optimizer_params with instance')(lambda: gluon.Trainer(tr()[1].collect_params(), mx.optimizer.SGD(), {'learning_rate': 1}))
case('optimizer create unknown')(lambda: mx.optimizer.create('nosuchopt'))
case('param data uninit')(lambda: gluon.Parameter('w', shape=(2,)).data())
case('param grad uninit')(lambda: gluon.Parameter('w', shape=(2,)).grad())
case('param list_ctx uninit')(lambda: gluon.Parameter('w', shape=(2,)).list_ctx())

def p_wrongctx():
    p = gluon.Parameter('w', shape=(2,)); p.initialize(ctx=mx.cpu(0)); p.data(mx.cpu(1))
case('param data wrong ctx')(p_wrongctx)

def p_gradnull():
    p = gluon.Parameter('w', shape=(2,), grad_req='null'); p.initialize(); p.grad()
case('param grad null')(p_gradnull)

def p_deferred():
    p = gluon.Parameter('w', shape=(0,), allow_deferred_init=True); p.initialize(); p.data()
case('param deferred data')(p_deferred)
case('param init bad shape')(lambda: gluon.Parameter('w', shape=(0,)).initialize())
case('param reset_ctx uninit')(lambda: gluon.Parameter('w', shape=(2,)).reset_ctx(mx.cpu()))

def p_rsp_data():
    p = gluon.Parameter('w', shape=(2,2), stype='row_sparse'); p.initialize(); p.data()
case('param row_sparse data()')(p_rsp_data)

def p_rsp_list():
    p = gluon.Parameter('w', shape=(2,2), stype='row_sparse'); p.initialize(); p.list_data()
case('param row_sparse list_data()')(p_rsp_list)

def p_rsd_dense():
    p = gluon.Parameter('w', shape=(2,2)); p.initialize(); p.row_sparse_data(nd.array([0]))
case('param dense row_sparse_data')(p_rsd_dense)

def p_rsd_notrainer():
    p = gluon.Parameter('w', shape=(2,2), stype='row_sparse'); p.initialize(); p.row_sparse_data(nd.array([0]))
case('param rsp no trainer')(p_rsd_notrainer)

def p_rsd_type():
    p = gluon.Parameter('w', shape=(2,2), stype='row_sparse'); p.initialize(); p.row_sparse_data([0])
case('param row_id not NDArray')(p_rsd_type)

def p_trainer_twice():
    net = gluon.nn.Dense(2, in_units=2, prefix='a_'); net.initialize()
    gluon.Trainer(net.collect_params(), 'sgd'); gluon.Trainer(net.collect_params(), 'sgd')
case('param trainer set twice (dense ok)')(p_trainer_twice)

def p_trainer_twice_rsp():
    p = gluon.Parameter('w', shape=(2,2), stype='row_sparse'); p.initialize()
    pd = gluon.ParameterDict(); pd._params['w'] = p
    gluon.Trainer(pd, 'sgd'); gluon.Trainer(pd, 'sgd')
case('param rsp trainer twice')(p_trainer_twice_rsp)
case('get_constant missing')(lambda: gluon.ParameterDict().get_constant('c'))

def pd_load_missing():
    net = gluon.nn.Dense(2, in_units=2); net.initialize(); net.save_parameters(_tmp('e.params'))
    n2 = gluon.nn.Dense(2, in_units=2, use_bias=False); n2.load_parameters(_tmp('e.params'))
case('load_parameters extra')(pd_load_missing)

def pd_load_missing2():
    net = gluon.nn.Dense(2, in_units=2, use_bias=False); net.initialize(); net.save_parameters(_tmp('f.params'))
    n2 = gluon.nn.Dense(2, in_units=2); n2.load_parameters(_tmp('f.params'))
case('load_parameters missing')(pd_load_missing2)

def blk_attr_type():
    b = gluon.nn.Sequential(); b.x = gluon.nn.Dense(2); b.x = 3
case('block change attr type')(blk_attr_type)

def hyb_mixed():
    b = gluon.nn.Dense(2, in_units=2); b.initialize(); b.hybridize(); b(nd.ones((1,2)), S.var('x')) 
case('hybrid forward mixed')(hyb_mixed)

def hyb_out_bad():
    class B(gluon.HybridBlock):
        def hybrid_forward(self, F, x): return 3
    b = B(); b.hybridize(); b(nd.ones((1,)))
case('hybrid output not array')(hyb_out_bad)

def hyb_export_nohyb():
    b = gluon.nn.Dense(2, in_units=2); b.initialize(); b.export(_tmp('x'))
case('export not hybridized')(hyb_export_nohyb)

def save_params_dep():
    b = gluon.nn.Dense(2, in_units=2); b.initialize(); b.save_params(_tmp('sp'))
case('save_params')(save_params_dep)

def optimize_for_nobackend():
    b = gluon.nn.Dense(2, in_units=2); b.initialize(); b.optimize_for(nd.ones((1,2)))
case('optimize_for no backend')(optimize_for_nobackend)
case('dataloader batch_size missing')(lambda: gluon.data.DataLoader(gluon.data.ArrayDataset(np.ones(3))))
case('dataloader shuffle+sampler')(lambda: gluon.data.DataLoader(gluon.data.ArrayDataset(np.ones(3)), batch_size=1, shuffle=True, sampler=gluon.data.SequentialSampler(3)))
case('dataloader batch_sampler+bs')(lambda: gluon.data.DataLoader(gluon.data.ArrayDataset(np.ones(3)), batch_size=1, batch_sampler=[[0]]))
case('BatchSampler bad last_batch')(lambda: list(gluon.data.BatchSampler(gluon.data.SequentialSampler(3), 2, 'foo')))
case('loss label_format')(lambda: gluon.loss.LogisticLoss(label_format='x'))
case('rnn cell bidir step')(lambda: gluon.rnn.BidirectionalCell(gluon.rnn.RNNCell(2), gluon.rnn.RNNCell(2))(nd.ones((1,2)), []))
case('Embedding sparse hybrid?')(lambda: gluon.nn.Embedding(3, 2, sparse_grad=True).hybridize() or None)
case('split_data uneven')(lambda: gluon.utils.split_data(nd.ones((3,2)), 2, even_split=True))
case('split_data too few')(lambda: gluon.utils.split_data(nd.ones((1,2)), 2))
case('kv unknown capability')(lambda: mx.kv.create('local').is_capable('foo'))
case('kv gradient compression local')(lambda: mx.kv.create('local').set_gradient_compression({'type': '2bit'}))
case('kv create bad type')(lambda: mx.kv.create(3))
case('kv create unknown name')(lambda: mx.kv.create('nosuch'))
case('model _create_kvstore bad')(lambda: mx.model._create_kvstore(3, 1, {}))
case('nd iadd readonly')(lambda: (lambda a: (setattr(a, 'writable', False), a.__iadd__(1)))(nd.ones(2)))
case('nd add bad type')(lambda: nd.ones(2) + 'x')
case('nd iadd bad type')(lambda: nd.ones(2).__iadd__('x'))
case('nd bool multi')(lambda: bool(nd.ones(2)))
case('nd setitem sequence scalar')(lambda: nd.ones(()).__setitem__((), [1, 2]))
case('nd getitem too many')(lambda: nd.ones((2,))[0, 0])
case('nd getitem oob')(lambda: nd.ones((2,))[5])
case('nd getitem oob neg')(lambda: nd.ones((2,))[-5])
case('nd getitem oob axis1')(lambda: nd.ones((2,3))[0, 5])
case('nd getitem step0')(lambda: nd.ones((2,))[::0])
case('nd getitem empty tuple')(lambda: nd.ones((2,))[()])
case('nd getitem float')(lambda: nd.ones((2,))[1.5])
case('nd getitem two ellipsis')(lambda: nd.ones((2,2))[..., ...])
case('nd setitem oob')(lambda: nd.ones((2,)).__setitem__(5, 1))
case('nd setitem bad value')(lambda: nd.ones((2,)).__setitem__(0, 'x'))
case('nd reshape bad')(lambda: nd.ones((2,3)).reshape((4,)))
case('nd reshape kw')(lambda: nd.ones((2,3)).reshape((6,), foo=1))
case('nd asscalar')(lambda: nd.ones((2,)).asscalar())
case('nd copyto bad')(lambda: nd.ones(2).copyto(3))
case('nd tostype csr 1d')(lambda: nd.ones(2).tostype('csr'))
case('nd arange step0')(lambda: nd.arange(0, 3, 0))
case('nd array bad source')(lambda: nd.array(object()))
case('nd array ragged')(lambda: nd.array([[1, 2], [3]]))
case('nd moveaxis bad')(lambda: nd.moveaxis(nd.ones((2,3)), 5, 0))
case('nd split uneven')(lambda: nd.split_v2(nd.ones(3), 2))
case('nd split bad sections')(lambda: nd.split_v2(nd.ones(3), 'x'))
case('nd histogram bad bins')(lambda: nd.histogram(nd.ones(3), bins='x'))
case('nd save bad fname')(lambda: nd.save(3, [nd.ones(1)]))
case('nd save bad data')(lambda: nd.save(_tmp('x.nd'), [3]))
case('nd save bad data2')(lambda: nd.save(_tmp('x.nd'), 3))
case('nd load bad fname')(lambda: nd.load(3))
case('nd load_frombuffer bad')(lambda: nd.load_frombuffer(3))
case('nd from_numpy noncontig')(lambda: nd.from_numpy(np.ones((3,3))[:, ::2]))
case('nd from_numpy bad dtype')(lambda: nd.from_numpy(np.ones(2, dtype=np.complex64)))
case('nd power bad types')(lambda: nd.power('a', 'b'))
case('nd maximum bad types')(lambda: nd.maximum('a', 'b'))
case('nd broadcast_to bad')(lambda: nd.ones((2,3)).broadcast_to((4,3)))
case('csr getitem int?')(lambda: nd.sparse.zeros('csr', (2,2))[0:1:2])
case('csr getitem tuple')(lambda: nd.sparse.zeros('csr', (2,2))[0, 0])
case('csr setitem slice')(lambda: nd.sparse.zeros('csr', (2,2)).__setitem__(slice(0, 1), nd.ones((1, 2))))
case('csr setitem num')(lambda: nd.sparse.zeros('csr', (2,2)).__setitem__(slice(None), 1))
case('csr setitem int')(lambda: nd.sparse.zeros('csr', (2,2)).__setitem__(0, 1))
case('rsp getitem int')(lambda: nd.sparse.zeros('row_sparse', (2,2))[0])
case('rsp getitem slice')(lambda: nd.sparse.zeros('row_sparse', (2,2))[0:1])
case('rsp setitem int')(lambda: nd.sparse.zeros('row_sparse', (2,2)).__setitem__(0, 1))
case('csr tostype rsp')(lambda: nd.sparse.zeros('csr', (2,2)).tostype('row_sparse'))
case('rsp tostype csr')(lambda: nd.sparse.zeros('row_sparse', (2,2)).tostype('csr'))
case('sparse zeros bad stype')(lambda: nd.sparse.zeros('foo', (2,2)))
case('sparse array bad src')(lambda: nd.sparse.array(3))
case('csr_matrix bad tuple')(lambda: nd.sparse.csr_matrix((1, 2, 3, 4)))
case('rsp_matrix bad tuple')(lambda: nd.sparse.row_sparse_array((1, 2, 3)))
case('csr copyto bad')(lambda: nd.sparse.zeros('csr', (2,2)).copyto(3))
case('sym add bad')(lambda: S.var('a') + 'x')
case('sym radd bad')(lambda: 'x' + S.var('a'))
case('sym compose bad')(lambda: S.var('a')(3))
case('sym compose kw bad')(lambda: S.FullyConnected(num_hidden=2)(data=3))
case('sym getitem name missing')(lambda: S.var('a')['b'])
case('sym getitem float')(lambda: S.var('a')[1.5])
case('sym getitem oob')(lambda: S.var('a')[1])
case('sym getitem neg')(lambda: S.Group([S.var('a'), S.var('b')])[-1])
case('sym set_attr nonstr')(lambda: S.var('a')._set_attr(foo=1))
case('sym list_attr recursive')(lambda: S.var('a').list_attr(recursive=True))
case('sym infer_type unknown arg')(lambda: S.var('a').infer_type(b='float32'))
case('sym infer_type bad dtype')(lambda: S.var('a').infer_type(a='nosuch'))
case('sym infer_shape unknown arg')(lambda: S.var('a').infer_shape(b=(2,)))
case('sym infer_shape bad shape')(lambda: S.var('a').infer_shape(a=3))
case('sym infer_shape bad pos')(lambda: S.var('a').infer_shape(3))
case('sym save bad fname')(lambda: S.var('a').save(3))
case('sym bind args len')(lambda: (S.var('a') + S.var('b')).bind(mx.cpu(), [nd.ones(1)]))
case('sym bind args type')(lambda: (S.var('a')).bind(mx.cpu(), [3]))
case('sym bind args missing')(lambda: (S.var('a') + S.var('b')).bind(mx.cpu(), {'a': nd.ones(1)}))
case('sym bind args bad')(lambda: (S.var('a')).bind(mx.cpu(), 3))
case('sym bind ctx bad')(lambda: (S.var('a')).bind(3, [nd.ones(1)]))
case('sym bind grad_req bad')(lambda: (S.var('a')*2).bind(mx.cpu(), [nd.ones(1)], args_grad=[nd.ones(1)], grad_req='foo'))
case('sym simple_bind grad_req empty list')(lambda: (S.var('a')*2).simple_bind(mx.cpu(), grad_req=[], a=(1,)))
case('sym simple_bind grad_req empty dict')(lambda: (S.var('a')*2).simple_bind(mx.cpu(), grad_req={}, a=(1,)))
case('sym simple_bind type_dict bad')(lambda: (S.var('a')*2).simple_bind(mx.cpu(), type_dict={'a': 'nosuch'}, a=(1,)))
case('sym simple_bind stype_dict bad')(lambda: (S.var('a')*2).simple_bind(mx.cpu(), stype_dict={'a': 'nosuch'}, a=(1,)))
case('sym simple_bind shape bad')(lambda: (S.var('a')*2).simple_bind(mx.cpu(), a=3))
case('sym simple_bind shared_arg_names bad')(lambda: (S.var('a')*2).simple_bind(mx.cpu(), shared_arg_names=3, a=(1,)))
case('sym simple_bind shared_buffer bad')(lambda: (S.var('a')*2).simple_bind(mx.cpu(), shared_buffer=3, a=(1,)))
case('sym var bad name')(lambda: S.var(3))
case('sym var bad kw')(lambda: S.var('a', foo=1))
case('sym Group bad')(lambda: S.Group([3]))
case('sym Group not list')(lambda: S.Group(3))
case('sym load bad fname')(lambda: S.load(3))
case('sym load_json bad')(lambda: S.load_json(3))
case('sym pow bad')(lambda: S.pow('a', 'b'))
case('sym maximum bad')(lambda: S.maximum('a', 'b'))
case('sym histogram bad bins')(lambda: S.histogram(S.var('a'), bins='x'))
case('sym histogram null range')(lambda: S.histogram(S.var('a'), bins=3))
case('sym split bad')(lambda: S.split_v2(S.var('a'), 'x'))
case('sym optimize_for args None')(lambda: S.var('a').optimize_for('MKLDNN', None, None, mx.cpu()))
case('sym reshape kw')(lambda: S.var('a').reshape((2,), foo=1))
case('sym copy')(lambda: S.var('a').copy())
case('sym asnumpy')(lambda: S.var('a').asnumpy())
case('sym wait_to_read')(lambda: S.var('a').wait_to_read())
case('sym bool')(lambda: bool(S.var('a')))
case('sym iter len multi')(lambda: len(S.var('a')))
case('module bind twice?')(lambda: None)

def mod_noparams():
    m = mx.mod.Module(S.FullyConnected(S.var('data'), num_hidden=2, name='fc'), label_names=None); m.bind([('data', (1,2))]); m.get_params()
case('module get_params uninit')(mod_noparams)

def mod_init_missing():
    m = mx.mod.Module(S.FullyConnected(S.var('data'), num_hidden=2, name='fc'), label_names=None); m.bind([('data', (1,2))])
    m.init_params(initializer=None, arg_params={}, allow_missing=False)
case('module init_params missing, initializer None')(mod_init_missing)

def mod_init_missing2():
    m = mx.mod.Module(S.FullyConnected(S.var('data'), num_hidden=2, name='fc'), label_names=None); m.bind([('data', (1,2))])
    m.init_params(arg_params={'fc_weight': nd.ones((2,2))}, allow_missing=False)
case('module init_params missing')(mod_init_missing2)
case('module bad data_names')(lambda: mx.mod.Module(S.FullyConnected(S.var('data'), num_hidden=2, name='fc'), data_names=['x'], label_names=None))
case('module bad label_names')(lambda: mx.mod.Module(S.FullyConnected(S.var('data'), num_hidden=2, name='fc'), label_names=['lab']))

def mod_score_bad():
    m = mx.mod.Module(S.FullyConnected(S.var('data'), num_hidden=2, name='fc'), label_names=None); m.bind([('data', (1,2))]); m.init_params(); m.predict(3)
case('module predict bad eval_data')(mod_score_bad)

def mod_grad_req_bad():
    m = mx.mod.Module(S.FullyConnected(S.var('data'), num_hidden=2, name='fc'), label_names=None); m.bind([('data', (1,2))], grad_req=3)
case('module bind grad_req bad')(mod_grad_req_bad)

def mod_load_bad():
    open(_tmp('bad.params'), 'wb').close()
    mx.mod.Module(S.FullyConnected(S.var('data'), num_hidden=2, name='fc'), label_names=None).load_params(_tmp('bad.params'))
case('module load_params empty file')(mod_load_bad)

def mod_load_bad2():
    nd.save(_tmp('bad2.params'), {'foo:bar': nd.ones(1)})
    m = mx.mod.Module(S.FullyConnected(S.var('data'), num_hidden=2, name='fc'), label_names=None); m.bind([('data', (1,2))]); m.load_params(_tmp('bad2.params'))
case('module load_params bad key')(mod_load_bad2)
case('base_module forward abstract')(lambda: mx.mod.BaseModule().forward(None))
case('io NDArrayIter rsp')(lambda: mx.io.NDArrayIter(nd.sparse.zeros('row_sparse', (2,2)), batch_size=1))
case('io NDArrayIter csr shuffle')(lambda: mx.io.NDArrayIter(nd.sparse.zeros('csr', (2,2)), batch_size=1, shuffle=True))
case('io NDArrayIter csr pad')(lambda: mx.io.NDArrayIter(nd.sparse.zeros('csr', (3,2)), batch_size=2, last_batch_handle='pad'))
case('io NDArrayIter bad data')(lambda: mx.io.NDArrayIter(3, batch_size=1))
case('io NDArrayIter bad dict value')(lambda: mx.io.NDArrayIter({'a': 3}, batch_size=1))
case('io NDArrayIter bad last_batch')(lambda: mx.io.NDArrayIter(np.ones((3,2)), batch_size=2, last_batch_handle='foo'))
case('io CSVIter positional')(lambda: mx.io.CSVIter('x'))
case('io DataDesc bad?')(lambda: mx.io.DataDesc.get_list(3, 4))
case('lr sched bad')(lambda: mx.lr_scheduler.FactorScheduler(0))
case('init bad name')(lambda: mx.init.create('nosuch'))
case('model FeedForward?')(lambda: None)
case('nd readonly setitem')(lambda: (lambda a: (setattr(a, 'writable', False), a.__setitem__(0, 1)))(nd.ones(2)))
case('nd ctx bad')(lambda: nd.ones(2, ctx='foo'))
case('nd astype bad')(lambda: nd.ones(2).astype('nosuch'))
case('nd dtype ones bad')(lambda: nd.ones(2, dtype='nosuch'))
case('nd op bad param')(lambda: nd.FullyConnected(nd.ones((1,2)), nd.ones((2,2)), no_bias=True, num_hidden='x'))
case('nd op missing param')(lambda: nd.FullyConnected(nd.ones((1,2)), nd.ones((2,2)), no_bias=True))
case('nd op unknown param')(lambda: nd.relu(nd.ones(2), foo=1))
case('nd op shape mismatch')(lambda: nd.elemwise_add(nd.ones(2), nd.ones(3)))
case('nd op bad input type')(lambda: nd.relu(3))
case('nd op ctx mismatch')(lambda: nd.elemwise_add(nd.ones(2, ctx=mx.cpu(0)), nd.ones(2, ctx=mx.cpu(1))).wait_to_read())
case('autograd backward twice')(lambda: (lambda x: (x.attach_grad(), (lambda y: (y.backward(), y.backward()))(mx.autograd.record().__enter__() or (x*2)), ))(nd.ones(1)))
case('sym eval missing arg')(lambda: (S.var('a') + S.var('b')).eval(ctx=mx.cpu(), a=nd.ones(1)))
case('metric create bad')(lambda: mx.metric.create('nosuch'))
case('metric check label shapes')(lambda: mx.metric.Accuracy().update([nd.ones(2)], [nd.ones(2), nd.ones(2)]))


# (condition, the class MXNet 1.9.1 raised)
TABLE = [
    ('trainer stale grad', UserWarning),
    ('trainer learning_rate no optimizer', UserWarning),
    ('trainer set_learning_rate no optimizer', UserWarning),
    ('optimizer set_lr with scheduler', UserWarning),
    ('trainer params not list', ValueError),
    ('trainer params bad element', ValueError),
    ('trainer optimizer_params with instance', AssertionError),
    ('optimizer create unknown', ValueError),
    ('param data uninit', RuntimeError),
    ('param grad uninit', RuntimeError),
    ('param list_ctx uninit', RuntimeError),
    ('param data wrong ctx', RuntimeError),
    ('param grad null', RuntimeError),
    ('param deferred data', MXNetError),
    ('param init bad shape', ValueError),
    ('param reset_ctx uninit', ValueError),
    ('param row_sparse data()', RuntimeError),
    ('param row_sparse list_data()', RuntimeError),
    ('param dense row_sparse_data', RuntimeError),
    ('param rsp no trainer', RuntimeError),
    ('param rsp trainer twice', RuntimeError),
    ('get_constant missing', KeyError),
    ('load_parameters extra', AssertionError),
    ('load_parameters missing', AssertionError),
    ('block change attr type', TypeError),
    ('hybrid forward mixed', ValueError),
    ('hybrid output not array', ValueError),
    ('export not hybridized', RuntimeError),
    ('optimize_for no backend', ValueError),
    ('dataloader batch_size missing', ValueError),
    ('dataloader shuffle+sampler', ValueError),
    ('dataloader batch_sampler+bs', ValueError),
    ('BatchSampler bad last_batch', ValueError),
    ('loss label_format', ValueError),
    ('rnn cell bidir step', NotImplementedError),
    ('split_data uneven', ValueError),
    ('split_data too few', ValueError),
    ('kv unknown capability', ValueError),
    ('kv gradient compression local', Exception),
    ('kv create bad type', TypeError),
    ('model _create_kvstore bad', TypeError),
    ('nd add bad type', TypeError),
    ('nd iadd bad type', TypeError),
    ('nd bool multi', ValueError),
    ('nd setitem sequence scalar', MXNetError),
    ('nd getitem too many', IndexError),
    ('nd getitem oob', IndexError),
    ('nd getitem oob neg', IndexError),
    ('nd getitem oob axis1', IndexError),
    ('nd getitem step0', ValueError),
    ('nd getitem float', ValueError),
    ('nd getitem two ellipsis', IndexError),
    ('nd setitem oob', IndexError),
    ('nd reshape bad', ValueError),
    ('nd asscalar', ValueError),
    ('nd copyto bad', TypeError),
    ('nd tostype csr 1d', ValueError),
    ('nd arange step0', MXNetError),
    ('nd array bad source', TypeError),
    ('nd moveaxis bad', ValueError),
    ('nd split uneven', ValueError),
    ('nd split bad sections', ValueError),
    ('nd histogram bad bins', ValueError),
    ('nd save bad data', TypeError),
    ('nd save bad data2', ValueError),
    ('nd load bad fname', TypeError),
    ('nd load_frombuffer bad', TypeError),
    ('nd from_numpy noncontig', ValueError),
    ('nd power bad types', TypeError),
    ('nd maximum bad types', TypeError),
    ('nd broadcast_to bad', ValueError),
    ('csr setitem slice', ValueError),
    ('csr setitem num', ValueError),
    ('csr setitem int', Exception),
    ('rsp getitem int', Exception),
    ('rsp getitem slice', Exception),
    ('rsp setitem int', TypeError),
    ('sparse zeros bad stype', ValueError),
    ('sparse array bad src', ValueError),
    ('csr_matrix bad tuple', ValueError),
    ('csr copyto bad', TypeError),
    ('sym add bad', TypeError),
    ('sym radd bad', TypeError),
    ('sym compose bad', TypeError),
    ('sym compose kw bad', TypeError),
    ('sym getitem name missing', ValueError),
    ('sym getitem float', TypeError),
    ('sym getitem oob', IndexError),
    ('sym set_attr nonstr', ValueError),
    ('sym list_attr recursive', DeprecationWarning),
    ('sym infer_type unknown arg', MXNetError),
    ('sym infer_type bad dtype', TypeError),
    ('sym infer_shape unknown arg', MXNetError),
    ('sym infer_shape bad shape', TypeError),
    ('sym infer_shape bad pos', TypeError),
    ('sym save bad fname', TypeError),
    ('sym bind args len', ValueError),
    ('sym bind args type', TypeError),
    ('sym bind args missing', ValueError),
    ('sym bind args bad', TypeError),
    ('sym bind ctx bad', TypeError),
    ('sym bind grad_req bad', ValueError),
    ('sym simple_bind grad_req empty list', RuntimeError),
    ('sym simple_bind grad_req empty dict', RuntimeError),
    ('sym simple_bind type_dict bad', TypeError),
    ('sym simple_bind stype_dict bad', RuntimeError),
    ('sym simple_bind shape bad', RuntimeError),
    ('sym simple_bind shared_arg_names bad', ValueError),
    ('sym simple_bind shared_buffer bad', ValueError),
    ('sym var bad name', TypeError),
    ('sym var bad kw', ValueError),
    ('sym Group bad', TypeError),
    ('sym Group not list', TypeError),
    ('sym load bad fname', TypeError),
    ('sym load_json bad', TypeError),
    ('sym pow bad', TypeError),
    ('sym maximum bad', TypeError),
    ('nd dtype ones bad', TypeError),
    ('sym histogram bad bins', ValueError),
    ('sym histogram null range', ValueError),
    ('sym split bad', ValueError),
    ('sym reshape kw', MXNetError),
    ('sym copy', MXNetError),
    ('sym asnumpy', MXNetError),
    ('sym wait_to_read', MXNetError),
    ('sym bool', MXNetError),
    ('module get_params uninit', AssertionError),
    ('module init_params missing, initializer None', RuntimeError),
    ('module init_params missing', RuntimeError),
    ('module bad data_names', ValueError),
    ('module predict bad eval_data', ValueError),
    ('module bind grad_req bad', ValueError),
    ('module load_params empty file', MXNetError),
    ('module load_params bad key', ValueError),
    ('base_module forward abstract', NotImplementedError),
    ('io NDArrayIter csr shuffle', NotImplementedError),
    ('io NDArrayIter csr pad', NotImplementedError),
    ('io NDArrayIter bad data', TypeError),
    ('io NDArrayIter bad dict value', IndexError),
    ('io DataDesc bad?', TypeError),
    ('nd ctx bad', MXNetError),
    ('nd astype bad', TypeError),
    ('nd op bad param', MXNetError),
    ('nd op missing param', MXNetError),
    ('nd op shape mismatch', MXNetError),
    ('sym eval missing arg', ValueError),
    ('metric create bad', AssertionError),
    ('metric check label shapes', ValueError),
]


@pytest.mark.parametrize("name, cls", TABLE, ids=[t[0] for t in TABLE])
def test_exception_class_is_mxnets(name, cls):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(cls):
            C[name]()


def test_gpunda_classes_derive_from_both():
    from gpunda import base
    for mine, theirs in ((base.GpundaUserWarning, UserWarning),
                         (base.GpundaKeyError, KeyError),
                         (base.GpundaNotImplementedError, NotImplementedError),
                         (base.GpundaDeprecationWarning, DeprecationWarning),
                         (base.GpundaAssertionError, AssertionError)):
        assert issubclass(mine, theirs) and issubclass(mine, MXNetError)
