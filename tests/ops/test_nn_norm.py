"""GroupNorm, L2Normalization, LRN, hard_sigmoid and SVMOutput against NumPy formulas
(gradients of the differentiable ones are checked by tests/test_registry_gradients.py)."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd as ag
from gpunda.base import GpundaError
from gpunda.test_utils import check_numeric_gradient

nd = mx.nd
RNG = np.random.RandomState(3)


def _nd(a):
    return nd.array(np.asarray(a, dtype=np.float64), dtype="float64")


def test_group_norm_matches_numpy_and_outputs_mean_std():
    x = RNG.rand(2, 6, 3, 2)
    gamma, beta = RNG.randn(3), RNG.randn(3)
    out, mean, std = nd.GroupNorm(_nd(x), _nd(gamma), _nd(beta), num_groups=3, eps=1e-5,
                                  output_mean_var=True)
    xr = x.reshape(2, 3, -1)
    m = xr.mean(axis=2, keepdims=True)
    s = np.sqrt(xr.var(axis=2, keepdims=True) + 1e-5)
    ref = ((xr - m) / s * gamma.reshape(1, 3, 1) + beta.reshape(1, 3, 1)).reshape(x.shape)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-10)
    np.testing.assert_allclose(mean.asnumpy(), m.reshape(2, 3), rtol=1e-10)
    np.testing.assert_allclose(std.asnumpy(), s.reshape(2, 3), rtol=1e-10)
    assert isinstance(nd.GroupNorm(_nd(x), _nd(gamma), _nd(beta), num_groups=3), nd.NDArray)


def test_group_norm_gradients_against_differences():
    # mean/std outputs pass no gradient (as MXNet's kernel: see test_nn's
    # test_norm_mean_var_outputs_pass_no_gradient); the output's is checked here
    x, gamma, beta = RNG.rand(2, 4, 3), RNG.randn(2), RNG.randn(2)
    h = RNG.randn(2, 4, 3)

    def loss(a, g, b):
        outs = nd.GroupNorm(a, g, b, num_groups=2, output_mean_var=True)
        return (outs[0] * _nd(h)).sum()
    check_numeric_gradient(loss, [x, gamma, beta], numeric_eps=1e-6, rtol=1e-5, atol=1e-6,
                           dtype=np.float64)


def test_group_norm_symbol_infers_group_shaped_gamma():
    s = mx.sym.GroupNorm(mx.sym.var("data"), num_groups=2)
    args, outs, _ = s.infer_shape(data=(3, 4, 5))
    assert dict(zip(s.list_arguments(), args))["groupnorm0_gamma"] == (2,)
    assert outs == [(3, 4, 5)]


def test_group_norm_rejects_bad_groups_and_gamma():
    x = _nd(RNG.rand(2, 6, 2))
    with pytest.raises(GpundaError, match="num_groups=4"):
        nd.GroupNorm(x, _nd(np.ones(4)), _nd(np.zeros(4)), num_groups=4)
    with pytest.raises(GpundaError, match="gamma"):
        nd.GroupNorm(x, _nd(np.ones(6)), _nd(np.zeros(3)), num_groups=3)


@pytest.mark.parametrize("mode,axes", [("instance", (1, 2, 3)), ("channel", (1,)),
                                       ("spatial", (2, 3))])
def test_l2_normalization_modes(mode, axes):
    x = RNG.randn(2, 3, 2, 4)
    out = nd.L2Normalization(_nd(x), mode=mode, eps=1e-10).asnumpy()
    ref = x / np.sqrt((x * x).sum(axis=axes, keepdims=True) + 1e-10)
    np.testing.assert_allclose(out, ref, rtol=1e-10)


def test_l2_normalization_symbol_has_one_visible_output():
    s = mx.sym.L2Normalization(mx.sym.var("d"), mode="channel")
    assert s.list_outputs() == ["l2normalization0_output"]
    _, outs, _ = s.infer_shape(d=(2, 3, 4))
    assert outs == [(2, 3, 4)]


def _lrn_ref(x, nsize, alpha, beta, knorm):
    C = x.shape[1]
    half = (nsize - 1) // 2
    sq = np.zeros_like(x)
    for c in range(C):
        lo, hi = max(0, c - half), min(C, c + half + 1)
        sq[:, c] = (x[:, lo:hi] ** 2).sum(axis=1)
    return x / (knorm + alpha / nsize * sq) ** beta


def test_lrn_matches_channel_window_formula():
    x = RNG.randn(2, 7, 3, 2)
    out = nd.LRN(_nd(x), nsize=5, alpha=0.3, beta=0.6, knorm=1.5).asnumpy()
    np.testing.assert_allclose(out, _lrn_ref(x, 5, 0.3, 0.6, 1.5), rtol=1e-10)


def test_lrn_gradient_against_differences_and_output_names():
    x = RNG.randn(1, 4, 2, 3)
    check_numeric_gradient(lambda a: nd.LRN(a, nsize=3, alpha=0.7), [x], numeric_eps=1e-6,
                           rtol=1e-5, atol=1e-6, dtype=np.float64)
    assert mx.sym.LRN(mx.sym.var("d"), nsize=3, name="n").list_outputs() == ["n_output"]
    with pytest.raises(GpundaError, match="nsize"):
        nd.LRN(_nd(x), nsize=2)


def test_hard_sigmoid_forward_and_gradient():
    x = np.array([-5.0, -1.0, 0.0, 1.0, 2.0, 5.0])
    a = _nd(x)
    a.attach_grad()
    with ag.record():
        y = nd.hard_sigmoid(a, alpha=0.25, beta=0.5)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), np.clip(0.25 * x + 0.5, 0, 1))
    np.testing.assert_allclose(a.grad.asnumpy(), [0, 0.25, 0.25, 0.25, 0, 0])


@pytest.mark.parametrize("linear", [True, False])
def test_svm_output_backward_is_hinge_gradient(linear):
    x = RNG.randn(4, 3) * 1.5
    label = np.array([0, 2, 1, 2])
    margin, reg = 0.7, 1.3
    a = _nd(x)
    a.attach_grad()
    with ag.record():
        y = nd.SVMOutput(a, _nd(label), margin=margin, regularization_coefficient=reg,
                         use_linear=linear)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), x)
    onehot = np.eye(3)[label].astype(bool)
    if linear:
        ref = np.where(onehot, -1.0 * (margin > x) * reg, 1.0 * (margin > -x) * reg)
    else:
        ref = np.where(onehot, -reg * np.where(margin > x, 2 * (margin - x), 0),
                       -reg * np.where(margin > -x, -2 * (margin + x), 0))
    np.testing.assert_allclose(a.grad.asnumpy(), ref)


def test_svm_output_rejects_wrong_label_count():
    with pytest.raises(GpundaError, match="label"):
        nd.SVMOutput(_nd(np.zeros((3, 2))), _nd(np.zeros(2)))


def _bn_relu_ref(x, gamma, beta, eps):
    mean = x.mean(axis=(0, 2), keepdims=True)
    var = x.var(axis=(0, 2), keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)
    return np.maximum(y, 0)


def test_batch_norm_with_relu_forward_moving_stats_and_gradient():
    x = RNG.randn(4, 3, 5)
    gamma, beta = RNG.rand(3) + 0.5, RNG.randn(3) * 0.3
    mm, mv = _nd(np.zeros(3)), _nd(np.ones(3))
    xs, gs, bs = _nd(x), _nd(gamma), _nd(beta)
    for a in (xs, gs, bs):
        a.attach_grad()
    head = RNG.randn(*x.shape)
    with ag.record():
        y = nd.contrib.BatchNormWithReLU(xs, gs, bs, mm, mv, fix_gamma=False, eps=1e-5,
                                         momentum=0.9)
    y.backward(_nd(head))
    np.testing.assert_allclose(y.asnumpy(), _bn_relu_ref(x, gamma, beta, 1e-5), rtol=1e-10)
    # its backward updates the moving statistics as BatchNorm's does (momentum a float32
    # parameter in MXNet, also for float64 statistics)
    mom = np.float64(np.float32(0.9))
    np.testing.assert_allclose(mm.asnumpy(), (1 - mom) * x.mean(axis=(0, 2)), rtol=1e-10)
    np.testing.assert_allclose(mv.asnumpy(), mom + (1 - mom) * x.var(axis=(0, 2)), rtol=1e-10)

    # central differences of the NumPy formula
    def numeric(arr, f):
        g = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            d = np.zeros_like(arr)
            d[idx] = 1e-6
            g[idx] = ((f(arr + d) - f(arr - d)) * head).sum() / 2e-6
        return g
    np.testing.assert_allclose(xs.grad.asnumpy(),
                               numeric(x, lambda v: _bn_relu_ref(v, gamma, beta, 1e-5)),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gs.grad.asnumpy(),
                               numeric(gamma, lambda v: _bn_relu_ref(x, v, beta, 1e-5)),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(bs.grad.asnumpy(),
                               numeric(beta, lambda v: _bn_relu_ref(x, gamma, v, 1e-5)),
                               rtol=1e-5, atol=1e-7)


def test_batch_norm_with_relu_outputs_and_bad_input():
    x = nd.ones((2, 3, 4))
    outs = nd.contrib.BatchNormWithReLU(x, nd.ones(3), nd.zeros(3), nd.zeros(3), nd.ones(3),
                                        output_mean_var=True)
    assert len(outs) == 3
    s = mx.sym.contrib.BatchNormWithReLU(mx.sym.var("data"), name="bn")
    assert s.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    with pytest.raises(GpundaError, match="gamma"):
        nd.contrib.BatchNormWithReLU(x, nd.ones(4), nd.zeros(3), nd.zeros(3), nd.ones(3))
