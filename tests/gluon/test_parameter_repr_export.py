"""What notebooks show: Parameter/Constant reprs and HybridBlock.export's return value.

Recorded from real MXNet 1.9.1 (/work/mxref)::

    repr(mx.gluon.Parameter('dense0_weight', shape=(2, 3)))
        -> "Parameter dense0_weight (shape=(2, 3), dtype=<class 'numpy.float32'>)"
    Parameter('w', shape=(0, 3))           -> "Parameter w (shape=(0, 3), dtype=<class 'numpy.float32'>)"
    Parameter('w')                         -> "Parameter w (shape=None, dtype=<class 'numpy.float32'>)"
    Parameter('w', shape=(2,), dtype='float16')  -> "Parameter w (shape=(2,), dtype=float16)"
    Parameter('w', shape=(2,), dtype=np.float64) -> "Parameter w (shape=(2,), dtype=<class 'numpy.float64'>)"
    Parameter('w', shape=(2,), dtype=np.dtype('float64')) -> "Parameter w (shape=(2,), dtype=float64)"
    Constant('c', mx.nd.ones((2,)))        -> "Constant c (shape=(2,), dtype=<class 'numpy.float32'>)"
    d = nn.Dense(2, in_units=3); d.initialize(); d.collect_params()
        -> "dense0_ (\n  Parameter dense0_weight (shape=(2, 3), dtype=float32)\n  Parameter dense0_bias (shape=(2,), dtype=float32)\n)"
    d2 = nn.Dense(2); d2.initialize(); repr(d2.weight) -> "Parameter dense1_weight (shape=(2, 0), dtype=float32)"
    h = nn.HybridSequential(); ...; h.hybridize(); h(x); h.export(path) -> None
"""
import os

import numpy as np

import gpunda as mx
from gpunda.gluon import nn


def test_parameter_repr_keeps_dtype_as_given():
    P = mx.gluon.Parameter
    assert repr(P('dense0_weight', shape=(2, 3))) == \
        "Parameter dense0_weight (shape=(2, 3), dtype=<class 'numpy.float32'>)"
    assert repr(P('w', shape=(0, 3))) == "Parameter w (shape=(0, 3), dtype=<class 'numpy.float32'>)"
    assert repr(P('w')) == "Parameter w (shape=None, dtype=<class 'numpy.float32'>)"
    assert repr(P('w', shape=(2,), dtype='float16')) == "Parameter w (shape=(2,), dtype=float16)"
    assert repr(P('w', shape=(2,), dtype=np.float64)) == \
        "Parameter w (shape=(2,), dtype=<class 'numpy.float64'>)"
    assert repr(P('w', shape=(2,), dtype=np.dtype('float64'))) == \
        "Parameter w (shape=(2,), dtype=float64)"
    assert repr(mx.gluon.Constant('c', mx.nd.ones((2,)))) == \
        "Constant c (shape=(2,), dtype=<class 'numpy.float32'>)"


def test_layer_parameters_print_as_mxnet():
    d = nn.Dense(2, in_units=3, prefix='dense0_')
    d.initialize()
    assert repr(d.collect_params()) == (
        "dense0_ (\n  Parameter dense0_weight (shape=(2, 3), dtype=float32)\n"
        "  Parameter dense0_bias (shape=(2,), dtype=float32)\n)")
    d2 = nn.Dense(2, prefix='dense1_')
    d2.initialize()
    assert repr(d2.weight) == "Parameter dense1_weight (shape=(2, 0), dtype=float32)"
    d2(mx.nd.ones((1, 5)))
    assert repr(d2.weight) == "Parameter dense1_weight (shape=(2, 5), dtype=float32)"


def test_export_returns_none_and_writes_files(tmp_path):
    h = nn.HybridSequential()
    h.add(nn.Dense(2, in_units=3))
    h.initialize()
    h.hybridize()
    y = h(mx.nd.ones((1, 3)))
    path = str(tmp_path / "m")
    assert h.export(path, epoch=2) is None
    assert os.path.exists(path + "-symbol.json") and os.path.exists(path + "-0002.params")
    blk = mx.gluon.SymbolBlock.imports(path + "-symbol.json", ["data"], path + "-0002.params")
    np.testing.assert_allclose(blk(mx.nd.ones((1, 3))).asnumpy(), y.asnumpy(), rtol=1e-6)
