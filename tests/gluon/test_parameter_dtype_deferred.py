"""The dtype a Parameter's value takes: from the data set_data gives a deferred parameter,
from a file with load_parameters(cast_dtype, dtype_source), and from cast().

Expected values were recorded from real MXNet 1.9.1 (/work/mxref); each test quotes the
MXNet calls that gave them.
"""
import numpy as np
import pytest

import gpunda as mx


@pytest.fixture(autouse=True)
def _on_the_cpu():
    # the values were recorded from MXNet's CPU build, and the load paths name cpu(0)
    with mx.cpu():
        yield

nd, S, gluon = mx.nd, mx.sym, mx.gluon


def _dtypes(p):
    g = p.grad() if p.grad_req != 'null' else None
    return p.dtype, p.data().dtype, None if g is None else g.dtype


def test_symbolblock_set_data_float64_gives_float64():
    # data = sym.var('data'); out = sym.BatchNorm(sym.FullyConnected(data, num_hidden=3,
    #     name='fc'), name='bn'); net = gluon.SymbolBlock(out, [data])
    # net.collect_params().initialize(); p.set_data(nd.ones(shape, dtype='float64'))
    # net(nd.ones((2, 4), dtype='float64')).dtype -> float64; every p.data() float64,
    # p.grad() float64 (where grad_req != 'null'), p.dtype still float32
    data = S.var('data')
    out = S.BatchNorm(S.FullyConnected(data, num_hidden=3, name='fc'), name='bn')
    net = gluon.SymbolBlock(out, [data])
    net.collect_params().initialize()
    for k, p in net.collect_params().items():
        shape = {'fc_weight': (3, 4), 'fc_bias': (3,)}.get(k, (3,))
        p.set_data(nd.ones(shape, dtype='float64'))
    y = net(nd.ones((2, 4), dtype='float64'))
    assert y.dtype == np.float64
    for k, p in net.collect_params().items():
        dtype, value, grad = _dtypes(p)
        assert value == np.float64 and dtype == np.float32, k
        assert grad == (None if 'moving' in k else np.float64), k


def test_load_checkpoint_float64_into_symbolblock(tmp_path):
    # mx.model.save_checkpoint(prefix, 1, FullyConnected(num_hidden=2, name='fc'),
    #     {'fc_weight': nd.ones((2,3), dtype='float64'), 'fc_bias': ...float64}, {})
    # sym, args, _ = mx.model.load_checkpoint(prefix, 1); net = SymbolBlock(sym, [var])
    # net.collect_params().initialize(); set_data(...) -> net(float64 input).dtype float64;
    # net.cast('float32') -> float32 outputs
    sym = S.FullyConnected(S.var('data'), num_hidden=2, name='fc')
    args = {'fc_weight': nd.ones((2, 3), dtype='float64'),
            'fc_bias': nd.zeros((2,), dtype='float64')}
    prefix = str(tmp_path / 'ck')
    mx.model.save_checkpoint(prefix, 1, sym, args, {})
    sym, args, _ = mx.model.load_checkpoint(prefix, 1)
    net = gluon.SymbolBlock(sym, [S.var('data')])
    net.collect_params().initialize()
    for k, v in args.items():
        net.collect_params()[k].set_data(v)
    y = net(nd.ones((1, 3), dtype='float64'))
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y.asnumpy(), [[3.0, 3.0]])
    net.cast('float32')
    assert net(nd.ones((1, 3))).dtype == np.float32


@pytest.mark.parametrize("param_dtype, data_dtype", [
    # Parameter('b', shape=(0,), allow_deferred_init=True).initialize();
    # set_data(nd.ones((2,), dtype=data_dtype)); _finish_deferred_init()
    # -> p.dtype float32 / 'float64', data and grad take data_dtype
    (np.float32, 'float16'), ('float64', 'int32')])
def test_deferred_set_data_takes_data_dtype(param_dtype, data_dtype):
    p = gluon.Parameter('b', shape=(0,), dtype=param_dtype, allow_deferred_init=True)
    p.initialize()
    p.set_data(nd.ones((2,), dtype=data_dtype))
    p._finish_deferred_init()
    assert _dtypes(p) == (param_dtype, np.dtype(data_dtype).type, np.dtype(data_dtype).type)


def test_set_data_on_initialized_param_keeps_its_dtype():
    # p = Parameter('a', shape=(2,)); p.initialize(); p.set_data(nd.ones((2,), 'float64'))
    # -> float32 everywhere
    p = gluon.Parameter('a', shape=(2,))
    p.initialize()
    p.set_data(nd.ones((2,), dtype='float64'))
    assert _dtypes(p) == (np.float32, np.float32, np.float32)


def test_cast_keeps_dtype_as_given():
    # p = Parameter('d', shape=(2,), dtype='float16'); repr(p.dtype) -> 'float16'
    # p.cast('float64') -> p.dtype 'float64' (a string), data/grad float64
    # p.cast(np.float32) -> p.dtype np.float32
    p = gluon.Parameter('d', shape=(2,), dtype='float16')
    assert p.dtype == 'float16'
    p.initialize()
    p.cast('float64')
    assert _dtypes(p) == ('float64', np.float64, np.float64)
    p.cast(np.float32)
    assert _dtypes(p) == (np.float32, np.float32, np.float32)
    q = gluon.Parameter('e', shape=(2,))
    q.cast('float16')
    q.initialize()
    assert _dtypes(q) == ('float16', np.float16, np.float16)


@pytest.mark.parametrize("shape", [(2,), (0,)])
@pytest.mark.parametrize("cast_dtype, source, want", [
    # p._load_init(nd.ones((2,), dtype='float64'), mx.cpu(), cast_dtype, dtype_source)
    # on a float32 Parameter, initialized (shape (2,)) or deferred (shape (0,))
    (False, 'current', AssertionError),
    (True, 'current', (np.float32, np.float32, np.float32)),
    (True, 'saved', (np.float64, np.float64, np.float64))])
def test_load_init_dtype_rules(shape, cast_dtype, source, want):
    p = gluon.Parameter('f', shape=shape, allow_deferred_init=True)
    if shape == (2,):
        p.initialize()
    value = nd.ones((2,), dtype='float64')
    if want is AssertionError:
        with pytest.raises(AssertionError):
            p._load_init(value, mx.cpu(), cast_dtype=cast_dtype, dtype_source=source)
        return
    p._load_init(value, mx.cpu(), cast_dtype=cast_dtype, dtype_source=source)
    assert _dtypes(p) == want


def test_load_init_bad_dtype_source_asserts_first():
    # p._load_init(nd.ones((2,)), None, cast_dtype=True, dtype_source='bogus')
    # -> AssertionError even though the dtypes agree
    p = gluon.Parameter('g', shape=(2,))
    with pytest.raises(AssertionError):
        p._load_init(nd.ones((2,)), None, cast_dtype=True, dtype_source='bogus')


def test_load_parameters_cast_rules(tmp_path):
    # net = nn.Dense(3, in_units=4); initialize; cast('float64'); save_parameters(f)
    # nn.Dense(3).load_parameters(f): AssertionError;
    # cast_dtype=True: weight float32 ('float32' kept as the layer gave it);
    # cast_dtype=True, dtype_source='saved': float64 and float64 outputs
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize()
    net.cast('float64')
    f = str(tmp_path / 'd64.params')
    net.save_parameters(f)
    with pytest.raises(AssertionError):
        gluon.nn.Dense(3).load_parameters(f)
    n2 = gluon.nn.Dense(3)
    n2.load_parameters(f, cast_dtype=True)
    assert _dtypes(n2.weight) == ('float32', np.float32, np.float32)
    n3 = gluon.nn.Dense(3)
    n3.load_parameters(f, cast_dtype=True, dtype_source='saved')
    assert _dtypes(n3.weight) == (np.float64, np.float64, np.float64)
    assert n3(nd.ones((1, 4), dtype='float64')).dtype == np.float64


def test_reset_ctx_keeps_value_dtype():
    p = gluon.Parameter('h', shape=(0,), allow_deferred_init=True)
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    p.set_data(nd.ones((2,), dtype='float64'))
    p._finish_deferred_init()
    p.reset_ctx(mx.cpu(0))
    assert p.data().dtype == np.float64
