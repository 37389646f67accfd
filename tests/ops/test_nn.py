"""NN ops (FullyConnected, activations, softmax family, loss outputs, Dropout, Embedding,
BatchNorm/LayerNorm/InstanceNorm) against NumPy formulas and float64 finite differences."""
import math

import numpy as np
import pytest
from scipy.special import erf

import gpunda as mx
from gpunda.test_utils import check_numeric_gradient
from gpunda.base import GpundaError

nd = mx.nd
F64 = "float64"


def _nd(a):
    return nd.array(np.asarray(a, dtype=np.float64), dtype=F64)


def _fd_check(fn, arrays, wrt, train=False, eps=1e-6, rtol=1e-5, atol=1e-6):
    """Autograd gradients of ``fn`` against central differences, in float64."""
    check_numeric_gradient(fn, [np.array(a, dtype=np.float64) for a in arrays], grad_nodes=wrt,
                           numeric_eps=2 * eps, rtol=rtol, atol=atol, use_forward_train=train,
                           dtype=np.float64)


def _second_order(fn, arrays, i, j, rng, eps=1e-6, rtol=1e-5, atol=1e-6):
    """d/d(input j) of <d sum(fn*h)/d(input i), v> with create_graph, against differences."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    y0 = fn(*[_nd(a) for a in arrays])
    h = rng.standard_normal(y0.shape)
    v = rng.standard_normal(arrays[i].shape)

    def inner(arrs, create):
        xs = [_nd(a) for a in arrs]
        for x in xs:
            x.attach_grad()
        with mx.autograd.record():
            y = fn(*xs)
            (gi,) = mx.autograd.grad(y, [xs[i]], head_grads=_nd(h), create_graph=create)
            s = (gi * _nd(v)).sum()
        return s, xs
    s, xs = inner(arrays, True)
    s.backward()
    num = np.zeros_like(arrays[j])
    for idx in np.ndindex(arrays[j].shape):
        ap = [a.copy() for a in arrays]
        am = [a.copy() for a in arrays]
        ap[j][idx] += eps
        am[j][idx] -= eps
        num[idx] = (inner(ap, False)[0].asscalar() - inner(am, False)[0].asscalar()) / (2 * eps)
    np.testing.assert_allclose(xs[j].grad.asnumpy(), num, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# FullyConnected


def test_fully_connected_forward(rng):
    x = rng.standard_normal((2, 3, 4))
    w = rng.standard_normal((5, 12))
    b = rng.standard_normal(5)
    y = nd.FullyConnected(_nd(x), _nd(w), _nd(b), num_hidden=5)
    np.testing.assert_allclose(y.asnumpy(), x.reshape(2, 12) @ w.T + b, rtol=1e-12)
    w2 = rng.standard_normal((5, 4))
    y2 = nd.FullyConnected(data=_nd(x), weight=_nd(w2), num_hidden="5", flatten="False",
                           no_bias="True")
    np.testing.assert_allclose(y2.asnumpy(), x @ w2.T, rtol=1e-12)


def test_fully_connected_1d_data_is_rows(rng):
    # MXNet 1.9.1: data (n,) with flatten=True is n rows of one feature -> (n, num_hidden)
    x = rng.standard_normal(3)
    w = rng.standard_normal((2, 1))
    y = nd.FullyConnected(_nd(x), _nd(w), num_hidden=2, no_bias=True)
    np.testing.assert_allclose(y.asnumpy(), x[:, None] @ w.T, rtol=1e-12)
    check_numeric_gradient(lambda a, b: nd.FullyConnected(a, b, num_hidden=2, no_bias=True),
                           [x, w])


@pytest.mark.parametrize("flatten,no_bias", [(True, False), (False, True)])
def test_fully_connected_gradient(rng, flatten, no_bias):
    x = rng.standard_normal((2, 2, 3))
    w = rng.standard_normal((4, 6 if flatten else 3))
    arrays = [x, w] if no_bias else [x, w, rng.standard_normal(4)]
    _fd_check(lambda *a: nd.FullyConnected(*a, num_hidden=4, flatten=flatten, no_bias=no_bias),
              arrays, range(len(arrays)))


def test_fully_connected_column_bias(rng):
    # MXNet accepts a bias of shape (num_hidden,) or (num_hidden, 1)
    x, w, b = rng.standard_normal((3, 4)), rng.standard_normal((2, 4)), rng.standard_normal((2, 1))
    y = nd.FullyConnected(_nd(x), _nd(w), _nd(b), num_hidden=2)
    np.testing.assert_allclose(y.asnumpy(), x @ w.T + b[:, 0], rtol=1e-12)
    _fd_check(lambda *a: nd.FullyConnected(*a, num_hidden=2), [x, w, b], range(3))
    bb = _nd(b)
    bb.attach_grad()
    with mx.autograd.record():
        nd.FullyConnected(_nd(x), _nd(w), bb, num_hidden=2).sum().backward()
    assert bb.grad.shape == (2, 1)
    np.testing.assert_allclose(bb.grad.asnumpy(), np.full((2, 1), 3.0))
    with pytest.raises(GpundaError, match=r"bias has shape \(1, 2\), expected \(2,\) or \(2, 1\)"):
        nd.FullyConnected(_nd(x), _nd(w), nd.ones((1, 2), dtype="float64"), num_hidden=2)
    op = mx.ops.get_op("FullyConnected")
    p = op.parse_params({"num_hidden": "2"})
    assert op.infer_shape(p, [(3, 4), None, (2, 1)])[0][2] == (2, 1)


@pytest.mark.parametrize("i,j", [(0, 1), (1, 0)])
def test_fully_connected_second_order(rng, i, j):
    arrays = [rng.standard_normal((3, 4)), rng.standard_normal((2, 4))]
    fn = lambda x, w: nd.tanh(nd.FullyConnected(x, w, num_hidden=2, no_bias=True))  # noqa: E731
    _second_order(fn, arrays, i, j, rng)


def test_fully_connected_errors_and_infer_shape():
    with pytest.raises(GpundaError, match="FullyConnected.*weight"):
        nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 2)), nd.ones((4,)), num_hidden=4)
    with pytest.raises(GpundaError, match="FullyConnected.*num_hidden"):
        nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 3)), nd.ones((4,)))
    op = mx.ops.get_op("FullyConnected")
    p = op.parse_params({"num_hidden": "10", "flatten": "True", "no_bias": "False"})
    assert op.infer_shape(p, [(4, 2, 5), None, None]) == ([(4, 2, 5), (10, 10), (10,)], [(4, 10)])
    p = op.parse_params({"num_hidden": "16", "flatten": "False"})
    assert op.infer_shape(p, [(4, 6, 8), None, None])[1] == [(4, 6, 16)]


# ---------------------------------------------------------------------------
# activations


def _np_act(t, x):
    return {"relu": np.maximum(x, 0), "sigmoid": 1 / (1 + np.exp(-x)), "tanh": np.tanh(x),
            "softrelu": np.log1p(np.exp(x)), "softsign": x / (1 + np.abs(x))}[t]


@pytest.mark.parametrize("t", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_activation(rng, t):
    x = rng.standard_normal((3, 4)) * 2
    x[np.abs(x) < 1e-3] = 0.5     # keep finite differences away from relu's kink
    np.testing.assert_allclose(nd.Activation(_nd(x), act_type=t).asnumpy(), _np_act(t, x), rtol=1e-12)
    _fd_check(lambda a: nd.Activation(a, act_type=t), [x], [0])


def test_activation_bad_type():
    with pytest.raises(GpundaError, match="Activation.*act_type"):
        nd.Activation(nd.ones((2,)), act_type="swish")


def _np_leaky(t, x, slope, gamma=None):
    if t == "leaky":
        return np.where(x > 0, x, slope * x)
    if t == "elu":
        return np.where(x > 0, x, slope * (np.exp(x) - 1))
    if t == "selu":
        a, lam = 1.6732632423543772, 1.0507009873554805
        return lam * np.where(x > 0, x, a * (np.exp(x) - 1))
    if t == "gelu":
        return 0.5 * x * (1 + erf(x / math.sqrt(2)))
    return np.where(x > 0, x, gamma.reshape(1, -1, 1) * x)


@pytest.mark.parametrize("t", ["leaky", "elu", "selu", "gelu"])
def test_leaky_relu_family(rng, t):
    x = rng.standard_normal((2, 3, 4))
    x[np.abs(x) < 1e-3] = 0.3
    y = nd.LeakyReLU(_nd(x), act_type=t, slope=0.3)
    np.testing.assert_allclose(y.asnumpy(), _np_leaky(t, x, 0.3), rtol=1e-6)
    _fd_check(lambda a: nd.LeakyReLU(a, act_type=t, slope=0.3), [x], [0])


def test_prelu(rng):
    x = rng.standard_normal((2, 3, 4))
    x[np.abs(x) < 1e-3] = 0.3
    g = rng.uniform(0.05, 0.3, 3)
    y = nd.LeakyReLU(_nd(x), _nd(g), act_type="prelu")
    np.testing.assert_allclose(y.asnumpy(), _np_leaky("prelu", x, 0, g), rtol=1e-12)
    _fd_check(lambda a, b: nd.LeakyReLU(a, b, act_type="prelu"), [x, g], [0, 1])
    _fd_check(lambda a, b: nd.LeakyReLU(a, b, act_type="prelu"), [x, [0.2]], [0, 1])
    op = mx.ops.get_op("LeakyReLU")
    p = op.parse_params({"act_type": "prelu"})
    assert op.infer_shape(p, [(2, 3, 4), None])[0] == [(2, 3, 4), (3,)]


def test_rrelu_slopes(rng):
    x = -np.abs(rng.standard_normal((50,))) - 0.1
    y = nd.LeakyReLU(_nd(x), act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
    np.testing.assert_allclose(y.asnumpy(), 0.2 * x, rtol=1e-12)
    with mx.autograd.train_mode():
        yt = nd.LeakyReLU(_nd(x), act_type="rrelu", lower_bound=0.1, upper_bound=0.3).asnumpy()
    ratio = yt / x
    assert np.all((ratio >= 0.1) & (ratio <= 0.3)) and ratio.std() > 0


# ---------------------------------------------------------------------------
# softmax family


def _np_softmax(x, axis, t=1.0):
    z = x / t
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis,temp", [(-1, None), (1, 2.0), (0, 0.5)])
def test_softmax_and_log_softmax(rng, axis, temp):
    x = rng.standard_normal((3, 4, 2))
    kw = dict(axis=axis) if temp is None else dict(axis=axis, temperature=temp)
    ref = _np_softmax(x, axis, temp or 1.0)
    np.testing.assert_allclose(nd.softmax(_nd(x), **kw).asnumpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(nd.log_softmax(_nd(x), **kw).asnumpy(), np.log(ref), rtol=1e-12)
    _fd_check(lambda a: nd.softmax(a, **kw), [x], [0])
    _fd_check(lambda a: nd.log_softmax(a, **kw), [x], [0])


def test_softmax_large_values_and_dtype():
    x = nd.array([[1000.0, 1000.0, -1000.0]], dtype="float32")
    np.testing.assert_allclose(nd.softmax(x).asnumpy(), [[0.5, 0.5, 0.0]])
    y = nd.softmax(x, dtype="float64")
    assert y.dtype == np.float64
    assert np.isfinite(nd.log_softmax(x).asnumpy()[0, :2]).all()


def test_softmax_second_order(rng):
    _second_order(lambda a: nd.softmax(a, axis=1), [rng.standard_normal((2, 3))], 0, 0, rng)
    _second_order(lambda a: nd.log_softmax(a), [rng.standard_normal((2, 3))], 0, 0, rng)


@pytest.mark.parametrize("mode", ["instance", "channel"])
def test_softmax_activation(rng, mode):
    x = rng.standard_normal((2, 3, 2))
    y = nd.SoftmaxActivation(_nd(x), mode=mode).asnumpy()
    # MXNet 1.9.1's instance mode is a softmax over the last axis (it runs on FlatTo2D):
    # nd.SoftmaxActivation(nd.array(np.arange(12).reshape(1, 2, 2, 3) / 10.)) has every
    # row [0.301, 0.332, 0.367]
    ref = _np_softmax(x, 1) if mode == "channel" else _np_softmax(x, 2)
    np.testing.assert_allclose(y, ref, rtol=1e-12)
    _fd_check(lambda a: nd.SoftmaxActivation(a, mode=mode), [x], [0])
    if mode == "instance":
        y = nd.SoftmaxActivation(nd.array(np.arange(12).reshape(1, 2, 2, 3) / 10.)).asnumpy()
        np.testing.assert_allclose(y[0, 1, 0], [0.301, 0.332, 0.367], atol=1e-3)


def _np_masked_softmax(x, length, log):
    out = np.zeros_like(x)
    for i, n in enumerate(length.astype(int)):
        if n:
            z = x[i, :n] - x[i, :n].max()
            out[i, :n] = z - np.log(np.exp(z).sum()) if log else np.exp(z) / np.exp(z).sum()
    return out


@pytest.mark.parametrize("op,log", [("softmax", False), ("log_softmax", True)])
def test_softmax_use_length(op, log, rng):
    x = rng.standard_normal((4, 5))
    length = np.array([2, 5, 0, 1], dtype=np.float64)
    y = getattr(nd, op)(_nd(x), _nd(length), axis=1, use_length=True)
    np.testing.assert_allclose(y.asnumpy(), _np_masked_softmax(x, length, log), rtol=1e-12,
                               atol=1e-15)
    # the gradient reaches only the first length cells of each row
    _fd_check(lambda a: getattr(nd, op)(a, _nd(length), axis=1, use_length=True), [x], [0])
    xt = _nd(x)
    xt.attach_grad()
    with mx.autograd.record():
        z = getattr(nd, op)(xt, _nd(length), axis=1, use_length=True)
    z.backward(_nd(rng.standard_normal((4, 5))))
    g = xt.grad.asnumpy()
    assert not g[0, 2:].any() and not g[2].any() and not g[3, 1:].any()
    with pytest.raises(GpundaError, match=r"length has shape \(3,\), expected \(4,\)"):
        getattr(nd, op)(_nd(x), _nd(length[:3]), axis=1, use_length=True)
    s = getattr(mx.sym, op)(mx.sym.var("x"), mx.sym.var("len"), axis=1, use_length=True)
    assert s.list_arguments() == ["x", "len"]
    assert s.infer_shape(x=(4, 5), len=(4,))[1] == [(4, 5)]


def test_softmax_cross_entropy(rng):
    x = rng.standard_normal((4, 3))
    lab = np.array([0, 2, 1, 2.0])
    out = nd.softmax_cross_entropy(_nd(x), _nd(lab))
    ref = -np.log(_np_softmax(x, 1))[np.arange(4), lab.astype(int)].sum()
    assert out.shape == (1,)
    np.testing.assert_allclose(out.asnumpy(), [ref], rtol=1e-12)
    _fd_check(lambda a: nd.softmax_cross_entropy(a, _nd(lab)), [x], [0])


# ---------------------------------------------------------------------------
# SoftmaxOutput and regression outputs


def _grad_of(fn, x, head=None):
    xa = _nd(x)
    xa.attach_grad()
    with mx.autograd.record():
        y = fn(xa)
    y.backward(None if head is None else _nd(head))
    return y.asnumpy(), xa.grad.asnumpy()


def test_softmax_output_gradient_ignores_head(rng):
    x = rng.standard_normal((4, 5))
    lab = np.array([1, 0, 4, 2.0])
    y, g = _grad_of(lambda a: nd.SoftmaxOutput(a, _nd(lab), grad_scale=2.0), x,
                    head=rng.standard_normal((4, 5)))
    p = _np_softmax(x, 1)
    np.testing.assert_allclose(y, p, rtol=1e-12)
    oh = np.eye(5)[lab.astype(int)]
    np.testing.assert_allclose(g, (p - oh) * 2.0, rtol=1e-12)
    _, g = _grad_of(lambda a: nd.Softmax(a, _nd(lab), normalization="batch"), x)
    np.testing.assert_allclose(g, (p - oh) / 4, rtol=1e-12)


def test_softmax_output_ignore_and_valid(rng):
    x = rng.standard_normal((4, 3))
    lab = np.array([1, -1, 2, -1.0])
    _, g = _grad_of(lambda a: nd.SoftmaxOutput(a, _nd(lab), use_ignore=True, ignore_label=-1,
                                               normalization="valid"), x)
    p = _np_softmax(x, 1)
    ref = np.zeros_like(p)
    for i in (0, 2):
        ref[i] = p[i] - np.eye(3)[int(lab[i])]
    np.testing.assert_allclose(g, ref / 2, rtol=1e-12)


def test_softmax_output_multi_output(rng):
    x = rng.standard_normal((2, 3, 2, 2))
    lab = rng.integers(0, 3, (2, 2, 2)).astype(np.float64)
    y, g = _grad_of(lambda a: nd.SoftmaxOutput(a, _nd(lab), multi_output=True), x)
    p = _np_softmax(x, 1)
    np.testing.assert_allclose(y, p, rtol=1e-12)
    oh = np.moveaxis(np.eye(3)[lab.astype(int)], -1, 1)
    # MXNet's multi_output backward divides by the spatial size (2 * 2) unless
    # normalization='valid' (softmax_output-inl.h)
    np.testing.assert_allclose(g, (p - oh) / 4, rtol=1e-12)
    _, gb = _grad_of(lambda a: nd.SoftmaxOutput(a, _nd(lab), multi_output=True,
                                                normalization="batch"), x)
    np.testing.assert_allclose(gb, (p - oh) / (4 * 2), rtol=1e-12)
    _, gv = _grad_of(lambda a: nd.SoftmaxOutput(a, _nd(lab), multi_output=True,
                                                normalization="valid"), x)
    np.testing.assert_allclose(gv, (p - oh) / 8, rtol=1e-12)
    op = mx.ops.get_op("SoftmaxOutput")
    assert op.infer_shape(op.parse_params({"multi_output": "True"}),
                          [(2, 3, 2, 2), None])[0][1] == (2, 2, 2)
    assert op.infer_shape(op.default_params, [(5, 10), None])[0][1] == (5,)


def test_softmax_output_label_gets_no_gradient(rng):
    x, lab = _nd(rng.standard_normal((2, 3))), _nd([0.0, 1.0])
    x.attach_grad()
    lab.attach_grad()
    with mx.autograd.record():
        y = nd.SoftmaxOutput(x, lab)
    y.backward()
    np.testing.assert_array_equal(lab.grad.asnumpy(), 0)


@pytest.mark.parametrize("name", ["LinearRegressionOutput", "LogisticRegressionOutput",
                                  "MAERegressionOutput"])
def test_regression_outputs(rng, name):
    x = rng.standard_normal((4, 3))
    lab = rng.standard_normal((4, 3))
    fn = getattr(nd, name)
    y, g = _grad_of(lambda a: fn(a, _nd(lab), grad_scale=3.0), x, head=rng.standard_normal((4, 3)))
    out = 1 / (1 + np.exp(-x)) if name.startswith("Logistic") else x
    np.testing.assert_allclose(y, out, rtol=1e-12)
    d = np.sign(out - lab) if name.startswith("MAE") else out - lab
    np.testing.assert_allclose(g, d * 3.0 / 3, rtol=1e-12)
    # label (N,) for data (N, 1)
    _, g1 = _grad_of(lambda a: fn(a, _nd(lab[:, 0])), x[:, :1])
    d1 = (np.sign if name.startswith("MAE") else (lambda v: v))(out[:, :1] - lab[:, :1])
    np.testing.assert_allclose(g1, d1, rtol=1e-12)
    with pytest.raises(GpundaError, match=f"{name}.*label"):
        fn(_nd(x), _nd(lab[:2]))


# ---------------------------------------------------------------------------
# Dropout


def test_dropout_predict_is_identity(rng):
    x = _nd(rng.standard_normal((3, 4)))
    np.testing.assert_array_equal(nd.Dropout(x, p=0.5).asnumpy(), x.asnumpy())
    y = nd.Dropout(x)
    assert y.shape == (3, 4)
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())


def test_dropout_training_mask_and_gradient(rng):
    x = _nd(rng.standard_normal((20, 30)) + 5.0)
    x.attach_grad()
    mx.random.seed(7)
    with mx.autograd.record():
        y = nd.Dropout(x, p=0.25)
    y.backward()
    yv, xv, g = y.asnumpy(), x.asnumpy(), x.grad.asnumpy()
    mask = yv / xv
    kept = mask > 0
    np.testing.assert_allclose(mask[kept], 1 / 0.75, rtol=1e-12)
    assert 0.6 < kept.mean() < 0.9
    np.testing.assert_allclose(g, np.where(kept, 1 / 0.75, 0.0), rtol=1e-12)
    mx.random.seed(7)
    with mx.autograd.train_mode():
        y2 = nd.Dropout(x, p=0.25)
    np.testing.assert_array_equal(y2.asnumpy(), yv)


def test_dropout_always_and_axes(rng):
    x = _nd(np.ones((4, 6, 3)))
    y = nd.Dropout(x, p=0.5, mode="always", axes=(1,)).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert (y == y[:, :1, :]).all()      # one mask value shared along axis 1
    out, mask = nd.Dropout(x, p=0.5, mode="always", out=[nd.zeros((4, 6, 3), dtype=F64),
                                                          nd.zeros((4, 6, 3), dtype=F64)])
    np.testing.assert_array_equal(out.asnumpy(), mask.asnumpy())
    with pytest.raises(GpundaError, match="Dropout.*mode"):
        nd.Dropout(x, mode="sometimes")


# ---------------------------------------------------------------------------
# Embedding


def test_embedding_forward_and_weight_gradient(rng):
    w = rng.standard_normal((5, 3))
    idx = np.array([[0, 4, 4], [2, 0, 4.0]])
    wa = _nd(w)
    wa.attach_grad()
    with mx.autograd.record():
        y = nd.Embedding(_nd(idx), wa, input_dim=5, output_dim=3)
    h = rng.standard_normal((2, 3, 3))
    y.backward(_nd(h))
    np.testing.assert_array_equal(y.asnumpy(), w[idx.astype(int)])
    ref = np.zeros_like(w)
    for pos in np.ndindex(idx.shape):
        ref[int(idx[pos])] += h[pos]
    np.testing.assert_allclose(wa.grad.asnumpy(), ref, rtol=1e-12)
    op = mx.ops.get_op("Embedding")
    p = op.parse_params({"input_dim": "30", "output_dim": "8"})
    assert op.infer_shape(p, [(4, 6), None]) == ([(4, 6), (30, 8)], [(4, 6, 8)])


def test_embedding_second_order_and_errors(rng):
    idx = np.array([1.0, 1.0, 0.0])
    fn = lambda w: nd.Embedding(_nd(idx), w, input_dim=2, output_dim=2) ** 2  # noqa: E731
    _second_order(fn, [rng.standard_normal((2, 2))], 0, 0, rng)
    with pytest.raises(GpundaError, match="Embedding.*weight"):
        nd.Embedding(_nd(idx), nd.ones((3, 2)), input_dim=2, output_dim=2)


# ---------------------------------------------------------------------------
# BatchNorm


def _np_bn(x, gamma, beta, mean, var, eps, axis=1):
    shp = [1] * x.ndim
    shp[axis] = -1
    return (x - mean.reshape(shp)) / np.sqrt(var.reshape(shp) + eps) * gamma.reshape(shp) + \
        beta.reshape(shp)


def _bn_inputs(rng, C=3):
    return (rng.uniform(0.5, 1.5, C), rng.standard_normal(C) * 0.1, rng.standard_normal(C) * 0.2,
            rng.uniform(0.5, 1.5, C))


def test_batchnorm_predict_uses_moving_stats(rng):
    x = rng.standard_normal((2, 3, 2, 2))
    g, b, m, v = _bn_inputs(rng)
    y = nd.BatchNorm(_nd(x), _nd(g), _nd(b), _nd(m), _nd(v), fix_gamma=False, eps=1e-5)
    np.testing.assert_allclose(y.asnumpy(), _np_bn(x, g, b, m, v, 1e-5), rtol=1e-12)
    y = nd.BatchNorm(_nd(x), _nd(g), _nd(b), _nd(m), _nd(v))      # fix_gamma=True, eps=1e-3
    np.testing.assert_allclose(y.asnumpy(), _np_bn(x, np.ones(3), b, m, v, 1e-3), rtol=1e-12)


def test_batchnorm_training_updates_moving_stats(rng):
    x = rng.standard_normal((4, 3, 2))
    g, b, m, v = _bn_inputs(rng)
    mm, mv = _nd(m), _nd(v)
    xs = _nd(x)
    xs.attach_grad()
    with mx.autograd.record():
        out, mean, var = nd.BatchNorm(xs, _nd(g), _nd(b), mm, mv, fix_gamma=False,
                                      momentum=0.8, output_mean_var=True)
    bm, bv = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    np.testing.assert_allclose(out.asnumpy(), _np_bn(x, g, b, bm, bv, 1e-3), rtol=1e-10)
    np.testing.assert_allclose(mean.asnumpy(), bm, rtol=1e-12)
    # MXNet's third output is the inverse standard deviation, not the variance
    np.testing.assert_allclose(var.asnumpy(), 1 / np.sqrt(bv + 1e-3), rtol=1e-12)
    # the moving stats change in the backward (tests/ops/test_aux_state_updates.py), with
    # MXNet's float32 momentum also for float64 statistics
    np.testing.assert_array_equal(mm.asnumpy(), m)
    out.backward()
    mom = np.float64(np.float32(0.8))
    np.testing.assert_allclose(mm.asnumpy(), mom * m + (1 - mom) * bm, rtol=1e-12)
    np.testing.assert_allclose(mv.asnumpy(), mom * v + (1 - mom) * bv, rtol=1e-12)
    # use_global_stats and predict mode leave the moving stats alone
    with mx.autograd.train_mode():
        nd.BatchNorm(_nd(x), _nd(g), _nd(b), mm, mv, use_global_stats=True)
    _, mean, istd = nd.BatchNorm(_nd(x), _nd(g), _nd(b), mm, mv, output_mean_var=True)
    np.testing.assert_allclose(mm.asnumpy(), mom * m + (1 - mom) * bm, rtol=1e-12)
    # predicting, the mean/var outputs are the moving mean and 1/sqrt(moving_var + eps)
    np.testing.assert_allclose(mean.asnumpy(), mm.asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(istd.asnumpy(), 1 / np.sqrt(mv.asnumpy() + 1e-3), rtol=1e-12)


@pytest.mark.parametrize("train,fix_gamma,axis", [(True, False, 1), (False, False, 1),
                                                  (True, True, -1), (False, True, -1)])
def test_batchnorm_gradient(rng, train, fix_gamma, axis):
    x = rng.standard_normal((3, 2, 3)) * 2 + 1
    C = x.shape[axis]
    g, b, m, v = _bn_inputs(rng, C)

    def fn(xa, ga, ba):
        return nd.BatchNorm(xa, ga, ba, _nd(m), _nd(v), fix_gamma=fix_gamma, axis=axis, eps=1e-5)
    _fd_check(fn, [x, g, b], [0, 1, 2], train=train)


def _grads_with_extra_outputs(op, args, extra_weight):
    # gradients of sum(out) + extra_weight * sum(mean/var/std outputs) w.r.t. every input
    arrs = [_nd(a) for a in args]
    for a in arrs:
        a.attach_grad()
    with mx.autograd.record():
        outs = op(*arrs)
        loss = outs[0].sum() * (1.0 if extra_weight is not None else 0.0)
        for o in outs[1:]:
            loss = loss + o.sum() * (extra_weight or 3.0)
    loss.backward()
    return [a.grad.asnumpy() for a in arrs]


@pytest.mark.parametrize("name", ["BatchNorm", "LayerNorm", "GroupNorm", "SyncBatchNorm"])
def test_norm_mean_var_outputs_pass_no_gradient(rng, name):
    # MXNet 1.9.1's norm backward kernels read the first output's gradient only: a loss on
    # the mean/var/std outputs alone gives zero gradients (recorded from MXNet), and adding
    # it to the output's loss changes nothing
    x = rng.standard_normal((4, 2, 3)) + 0.5
    g, b = rng.uniform(0.5, 1.5, 2), rng.standard_normal(2)
    ops = {"BatchNorm": lambda a, c, d: nd.BatchNorm(a, c, d, nd.zeros(2, dtype="float64"),
                                                     nd.ones(2, dtype="float64"),
                                                     fix_gamma=False, output_mean_var=True),
           "SyncBatchNorm": lambda a, c, d: nd.contrib.SyncBatchNorm(
               a, c, d, nd.zeros(2, dtype="float64"), nd.ones(2, dtype="float64"),
               fix_gamma=False, output_mean_var=True, key="t"),
           "LayerNorm": lambda a, c, d: nd.LayerNorm(a, c, d, axis=1, output_mean_var=True),
           "GroupNorm": lambda a, c, d: nd.GroupNorm(a, c, d, num_groups=2,
                                                     output_mean_var=True)}
    only_extra = _grads_with_extra_outputs(ops[name], [x, g, b], None)
    for gr in only_extra:
        assert not gr.any(), name
    both = _grads_with_extra_outputs(ops[name], [x, g, b], 5.0)
    plain = _grads_with_extra_outputs(ops[name], [x, g, b], 0.0)
    for a, c in zip(both, plain):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)


def test_batchnorm_second_order(rng):
    x = rng.standard_normal((3, 2)) + 0.3
    g, b, m, v = _bn_inputs(rng, 2)

    def fn(xa, ga):
        return nd.BatchNorm(xa, ga, _nd(b), _nd(m), _nd(v), fix_gamma=False)
    _second_order(fn, [x, g], 0, 1, rng)     # record() trains: batch statistics


def test_batchnorm_shared_twice_in_one_graph(rng):
    """Moving stats updated by a second call must not invalidate the first call's gradient."""
    x = rng.standard_normal((4, 3))
    g, b, m, v = (_nd(a) for a in _bn_inputs(rng))

    def fn(xa):
        y = nd.BatchNorm(xa, g, b, m, v, fix_gamma=False)
        return nd.BatchNorm(y * 2.0, g, b, m, v, fix_gamma=False)
    _fd_check(fn, [x], [0], train=True)
    _fd_check(fn, [x], [0], train=False)


def test_batchnorm_out_counts_and_errors(rng):
    x = _nd(rng.standard_normal((2, 3)))
    ins = [_nd(a) for a in _bn_inputs(rng)]
    outs = [nd.zeros((2, 3), dtype=F64), nd.zeros((3,), dtype=F64), nd.zeros((3,), dtype=F64)]
    nd.BatchNorm(x, *ins, out=outs)
    nd.BatchNorm(x, *ins, out=outs[0])
    with pytest.raises(GpundaError, match="BatchNorm expects 3 .*1 .*got 2"):
        nd.BatchNorm(x, *ins, out=outs[:2])
    mm = ins[2].asnumpy().copy()
    with pytest.raises(GpundaError, match="BatchNorm.*moving_var"):
        with mx.autograd.train_mode():
            nd.BatchNorm(x, ins[0], ins[1], ins[2], nd.ones((4,), dtype=F64))
    np.testing.assert_array_equal(ins[2].asnumpy(), mm)
    op = mx.ops.get_op("BatchNorm")
    shapes, outs_ = op.infer_shape(op.default_params, [(2, 8, 4, 4)] + [None] * 4)
    assert shapes[1:] == [(8,)] * 4 and outs_ == [(2, 8, 4, 4), (8,), (8,)]
    assert op.aux_inputs == ("moving_mean", "moving_var") and op.mutates == (3, 4)


# ---------------------------------------------------------------------------
# LayerNorm, InstanceNorm


def test_layer_norm(rng):
    x = rng.standard_normal((2, 3, 4))
    g, b = rng.uniform(0.5, 1.5, 4), rng.standard_normal(4)
    out, mean, std = nd.LayerNorm(_nd(x), _nd(g), _nd(b), output_mean_var=True, eps=1e-5)
    mu = x.mean(-1, keepdims=True)
    sd = np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.asnumpy(), (x - mu) / sd * g + b, rtol=1e-12)
    np.testing.assert_allclose(mean.asnumpy(), mu, rtol=1e-12)
    np.testing.assert_allclose(std.asnumpy(), sd, rtol=1e-12)
    _fd_check(lambda a, c, d: nd.LayerNorm(a, c, d), [x, g, b], [0, 1, 2])


def test_layer_norm_axis_and_extra_outputs(rng):
    x = rng.standard_normal((2, 3, 2))
    g, b = rng.uniform(0.5, 1.5, 3), rng.standard_normal(3)

    def fn(a, c):
        o, m, s = nd.LayerNorm(a, c, _nd(b), axis=1, output_mean_var=True)
        assert m.shape == s.shape == (2, 1, 2)
        return o
    _fd_check(fn, [x, g], [0, 1])
    _second_order(lambda a: nd.LayerNorm(a, _nd(g), _nd(b), axis=1), [x], 0, 0, rng)


def test_instance_norm(rng):
    x = rng.standard_normal((2, 3, 2, 2))
    g, b = rng.uniform(0.5, 1.5, 3), rng.standard_normal(3)
    y = nd.InstanceNorm(_nd(x), _nd(g), _nd(b), eps=1e-3)
    mu = x.mean((2, 3), keepdims=True)
    ref = (x - mu) / np.sqrt(x.var((2, 3), keepdims=True) + 1e-3) * g.reshape(1, 3, 1, 1) + \
        b.reshape(1, 3, 1, 1)
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-12)
    _fd_check(lambda a, c, d: nd.InstanceNorm(a, c, d), [x, g, b], [0, 1, 2])


def test_softmin_is_softmax_of_the_negation():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5))
    for axis, t in ((1, 1.0), (0, 2.0), (-1, 0.5)):
        e = np.exp(-(x - x.min(axis=axis, keepdims=True)) / t)
        want = e / e.sum(axis=axis, keepdims=True)
        got = mx.nd.softmin(mx.nd.array(x, dtype="float64"), axis=axis, temperature=t)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
    # MXNet 1.9.1's output for [[1, 2, 3]], temperature 2
    np.testing.assert_allclose(mx.nd.array([[1, 2, 3]]).softmin(temperature=2.0).asnumpy(),
                               [[0.5064804, 0.3071959, 0.18632373]], rtol=1e-6)
    check_numeric_gradient(lambda a: mx.nd.softmin(a, axis=1), [x])


@pytest.mark.parametrize("xshape,gshape", [((3, 4), (3, 4)), ((2, 3, 4, 5), (2, 3)),
                                           ((2, 3, 4), (1, 3))])
def test_prelu_multi_dim_gamma_covers_the_first_two_axes(rng, xshape, gshape):
    # MXNet aligns a multi-dim gamma with data's axes 0 and 1 (test_prelu)
    from gpunda import nd, autograd
    x = rng.uniform(-1, 1, xshape)
    gam = rng.uniform(0.1, 0.9, gshape)
    gb = gam.reshape(gshape + (1,) * (len(xshape) - 2))
    xa, ga = nd.array(x, dtype="float64"), nd.array(gam, dtype="float64")
    xa.attach_grad()
    ga.attach_grad()
    with autograd.record():
        y = nd.LeakyReLU(xa, ga, act_type="prelu")
    np.testing.assert_allclose(y.asnumpy(), np.where(x > 0, x, x * gb), rtol=1e-12)
    y.backward()
    np.testing.assert_allclose(xa.grad.asnumpy(), np.where(x > 0, 1.0, gb * np.ones(xshape)),
                               rtol=1e-12)
    dg = np.where(x > 0, 0.0, x)
    axes = tuple(i for i in range(len(xshape)) if i >= 2 or gb.shape[i] == 1)
    np.testing.assert_allclose(ga.grad.asnumpy(), dg.sum(axis=axes).reshape(gshape), rtol=1e-12)


def test_dropout_with_p_one_gives_nan_as_mxnet():
    # MXNet 1.9.1: the mask is 0 * 1/(1 - p), so output and gradient are NaN
    a = mx.nd.ones((2, 3))
    a.attach_grad()
    with mx.autograd.record():
        b = mx.nd.Dropout(a, p=1.0)
    b.backward()
    assert np.isnan(b.asnumpy()).all() and np.isnan(a.grad.asnumpy()).all()
