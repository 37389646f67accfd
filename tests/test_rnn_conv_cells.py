"""mx.rnn.ConvRNNCell / ConvLSTMCell / ConvGRUCell against numbers recorded from MXNet 1.9.1.

Recorded with /work/mxref (MXNet 1.9.1, CPU) by this snippet, gpunda runs the same one::

    def run(cell, n_steps=2, inshape=(2, 3, 4, 4)):
        seq = [mx.sym.var('x%d' % i) for i in range(n_steps)]
        outs, states = cell.unroll(n_steps, seq, merge_outputs=False)
        g = mx.sym.Group(outs + states)
        arg_shapes, out_shapes, _ = g.infer_shape(**{'x%d' % i: inshape for i in range(n_steps)})
        args = {}
        for k, (name, s) in enumerate(zip(g.list_arguments(), arg_shapes)):
            n = int(np.prod(s))
            args[name] = mx.nd.array((np.sin(np.arange(n) * 0.37 + k) * 0.5).reshape(s))
        res = g.bind(mx.cpu(), args).forward()
        [round(float(r.asnumpy().sum()), 5) for r in res], [r.asnumpy().ravel()[:3] for r in res]

    run(mx.rnn.ConvRNNCell((2, 3, 4, 4), 2))
      -> [9.46032, 4.23448, 4.23448], first values [-0.03426, -0.04426, -0.02581], [0.29592, 0.17445, -0.04729]
    run(mx.rnn.ConvLSTMCell((2, 3, 4, 4), 2))
      -> [-0.15596, -0.30216, -0.30216, -5.09695], [-0.00428, -0.00579, -0.00751], [-0.00341, -0.00299, -0.0047],
         ..., [-0.04465, -0.03525, -0.05194]
    run(mx.rnn.ConvGRUCell((2, 3, 4, 4), 2))
      -> [-2.02038, -2.80147, -2.80147], [-0.04112, -0.06633, -0.09544], [-0.02611, 0.00321, -0.04886]
    run(mx.rnn.ConvLSTMCell((2, 3, 4, 4), 2, i2h_stride=(2, 2), h2h_dilate=(2, 2),
                            activation='tanh', prefix='cl_'))
      -> out shapes all (2, 2, 2, 2); [-1.23123, -1.86639, -1.86639, -5.1286],
         [-0.09693, -0.1471, -0.1103], [-0.07834, -0.09796, -0.18992], ..., [-0.20629, -0.21939, -0.53883]
    mx.rnn.ConvGRUCell((2, 3, 4, 4), 2).state_info -> [{'shape': (0, 2, 4, 4), '__layout__': 'NCHW'}]
    mx.rnn.ConvRNNCell((2, 3, 4, 4), 2, h2h_kernel=(2, 2))
      -> AssertionError: Only support odd number, get h2h_kernel= (2, 2)
    internals of ConvGRU: ..., 'ConvGRU_t0__i2h_slice_output0', ... ; arguments
      ['x0', 'ConvGRU_i2h_weight', 'ConvGRU_i2h_bias', 'ConvGRU_h2h_weight', 'ConvGRU_h2h_bias', 'x1']
"""
import numpy as np
import pytest

import gpunda as mx


def _run(cell, n_steps=2, inshape=(2, 3, 4, 4)):
    seq = [mx.sym.var('x%d' % i) for i in range(n_steps)]
    outs, states = cell.unroll(n_steps, seq, merge_outputs=False)
    g = mx.sym.Group(outs + states)
    arg_shapes, out_shapes, _ = g.infer_shape(**{'x%d' % i: inshape for i in range(n_steps)})
    args = {}
    for k, (name, s) in enumerate(zip(g.list_arguments(), arg_shapes)):
        n = int(np.prod(s))
        args[name] = mx.nd.array((np.sin(np.arange(n) * 0.37 + k) * 0.5).reshape(s))
    res = [r.asnumpy() for r in g.bind(mx.cpu(), args).forward()]
    return g, out_shapes, res


CASES = [
    (lambda: mx.rnn.ConvRNNCell((2, 3, 4, 4), 2), (2, 2, 4, 4),
     [9.46032, 4.23448, 4.23448],
     [[-0.03426, -0.04426, -0.02581], [0.29592, 0.17445, -0.04729], [0.29592, 0.17445, -0.04729]]),
    (lambda: mx.rnn.ConvLSTMCell((2, 3, 4, 4), 2), (2, 2, 4, 4),
     [-0.15596, -0.30216, -0.30216, -5.09695],
     [[-0.00428, -0.00579, -0.00751], [-0.00341, -0.00299, -0.0047],
      [-0.00341, -0.00299, -0.0047], [-0.04465, -0.03525, -0.05194]]),
    (lambda: mx.rnn.ConvGRUCell((2, 3, 4, 4), 2), (2, 2, 4, 4),
     [-2.02038, -2.80147, -2.80147],
     [[-0.04112, -0.06633, -0.09544], [-0.02611, 0.00321, -0.04886],
      [-0.02611, 0.00321, -0.04886]]),
    (lambda: mx.rnn.ConvLSTMCell((2, 3, 4, 4), 2, i2h_stride=(2, 2), h2h_dilate=(2, 2),
                                 activation='tanh', prefix='cl_'), (2, 2, 2, 2),
     [-1.23123, -1.86639, -1.86639, -5.1286],
     [[-0.09693, -0.1471, -0.1103], [-0.07834, -0.09796, -0.18992],
      [-0.07834, -0.09796, -0.18992], [-0.20629, -0.21939, -0.53883]]),
]


@pytest.mark.parametrize("make, shape, sums, firsts", CASES)
def test_unrolled_values_match_mxnet(make, shape, sums, firsts):
    _, out_shapes, res = _run(make())
    assert out_shapes == [shape] * len(sums)
    np.testing.assert_allclose([r.sum() for r in res], sums, atol=2e-4)
    np.testing.assert_allclose([r.ravel()[:3] for r in res], firsts, atol=2e-5)


def test_names_and_state_info():
    g, _, _ = _run(mx.rnn.ConvGRUCell((2, 3, 4, 4), 2))
    assert g.list_arguments() == ['x0', 'ConvGRU_i2h_weight', 'ConvGRU_i2h_bias',
                                  'ConvGRU_h2h_weight', 'ConvGRU_h2h_bias', 'x1']
    assert 'ConvGRU_t0__i2h_slice_output0' in g.get_internals().list_outputs()
    cell = mx.rnn.ConvGRUCell((2, 3, 4, 4), 2)
    assert cell.state_info == [{'shape': (0, 2, 4, 4), '__layout__': 'NCHW'}]
    assert mx.rnn.ConvLSTMCell((2, 3, 4, 4), 2).state_shape == [(0, 2, 4, 4)] * 2
    with pytest.raises(AssertionError, match="Only support odd number"):
        mx.rnn.ConvRNNCell((2, 3, 4, 4), 2, h2h_kernel=(2, 2))


def test_unpack_pack_weights_round_trip():
    cell = mx.rnn.ConvLSTMCell((2, 3, 4, 4), 2)
    args = {'ConvLSTM_i2h_weight': mx.nd.array(np.arange(8 * 3 * 9).reshape(8, 3, 3, 3)),
            'ConvLSTM_i2h_bias': mx.nd.arange(8),
            'ConvLSTM_h2h_weight': mx.nd.array(np.arange(8 * 2 * 9).reshape(8, 2, 3, 3)),
            'ConvLSTM_h2h_bias': mx.nd.arange(8)}
    parts = cell.unpack_weights(args)
    assert parts['ConvLSTM_i2h_f_weight'].shape == (2, 3, 3, 3)
    np.testing.assert_array_equal(parts['ConvLSTM_h2h_o_bias'].asnumpy(), [6, 7])
    back = cell.pack_weights(parts)
    for k, v in args.items():
        np.testing.assert_array_equal(back[k].asnumpy(), v.asnumpy())
