"""im2col / col2im against a loop-over-windows NumPy reference; col2im is im2col's adjoint."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

nd = mx.nd
RNG = np.random.RandomState(5)


def _ref_im2col(x, k, s, d, p):
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((N, C * k[0] * k[1], oh * ow))
    for c in range(C):
        for i in range(k[0]):
            for j in range(k[1]):
                row = (c * k[0] + i) * k[1] + j
                for a in range(oh):
                    for b in range(ow):
                        out[:, row, a * ow + b] = xp[:, c, a * s[0] + i * d[0], b * s[1] + j * d[1]]
    return out


@pytest.mark.parametrize("k,s,d,p", [((3, 3), (1, 1), (1, 1), (0, 0)),
                                     ((2, 3), (2, 1), (1, 2), (1, 0)),
                                     ((3, 2), (2, 2), (2, 1), (1, 1))])
def test_im2col_matches_reference_and_col2im_is_adjoint(k, s, d, p):
    x = RNG.randn(2, 3, 7, 6)
    kw = dict(kernel=k, stride=s, dilate=d, pad=p)
    col = nd.im2col(nd.array(x, dtype="float64"), **kw).asnumpy()
    np.testing.assert_allclose(col, _ref_im2col(x, k, s, d, p))
    y = RNG.randn(*col.shape)
    back = nd.col2im(nd.array(y, dtype="float64"), output_size=(7, 6), **kw).asnumpy()
    # <im2col(x), y> == <x, col2im(y)>
    np.testing.assert_allclose((col * y).sum(), (x * back).sum())


def test_im2col_symbol_shape_and_col2im_bad_input():
    s = mx.sym.im2col(mx.sym.var("d"), kernel=(3, 3), stride=(2, 2))
    _, outs, _ = s.infer_shape(d=(2, 3, 9, 7))
    assert outs == [(2, 27, 12)]
    with pytest.raises(GpundaError, match="col2im"):
        nd.col2im(nd.zeros((1, 10, 4)), output_size=(3, 3), kernel=(2, 2))


def test_im2col_of_a_1x1_kernel_does_not_alias_a_sliced_input():
    # the 1x1 columns are a reshape of the data; for a slice that view's base is not the
    # op's input itself, and writing the result must still leave the input alone
    import gpunda as mx
    base = mx.nd.array(np.arange(48, dtype=np.float32).reshape(2, 2, 3, 4))
    cols = mx.nd.im2col(base[0:1], kernel=(1, 1))
    np.testing.assert_array_equal(cols.asnumpy(), np.arange(24).reshape(1, 2, 12))
    cols[:] = -1
    np.testing.assert_array_equal(base.asnumpy(), np.arange(48).reshape(2, 2, 3, 4))
