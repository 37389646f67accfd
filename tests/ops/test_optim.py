"""Optimizer update ops against hand-written NumPy versions of MXNet's update formulas."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

nd = mx.nd


def _arrays(rng, n, shape=(3, 4)):
    return [rng.standard_normal(shape) for _ in range(n)]


def _clip(g, c):
    return np.clip(g, -c, c) if c >= 0 else g


def _run(name, arrays, **kw):
    """Call op ``name`` with out=weight; return (weight, states) after the call."""
    nds = [nd.array(a, dtype="float64") for a in arrays]
    res = getattr(nd, name)(*nds, out=nds[0], **kw)
    assert res is nds[0]
    return [x.asnumpy() for x in nds]


@pytest.mark.parametrize("clip", [-1.0, 0.5])
def test_sgd_update(rng, clip):
    w, g = _arrays(rng, 2)
    kw = dict(lr=0.1, wd=0.01, rescale_grad=2.0, clip_gradient=clip)
    out = _run("sgd_update", [w, g], **kw)
    np.testing.assert_allclose(out[0], w - 0.1 * (_clip(2.0 * g, clip) + 0.01 * w), rtol=1e-12)
    np.testing.assert_array_equal(out[1], g)


def test_update_without_out_returns_new_weight(rng):
    w, g, m = _arrays(rng, 3)
    wn, gn, mn = (nd.array(a, dtype="float64") for a in (w, g, m))
    new = nd.sgd_mom_update(wn, gn, mn, lr=0.5, momentum=0.9)
    np.testing.assert_array_equal(wn.asnumpy(), w)           # weight untouched (MXNet)
    mom = 0.9 * m - 0.5 * g
    np.testing.assert_allclose(mn.asnumpy(), mom, rtol=1e-12)  # state written in place
    np.testing.assert_allclose(new.asnumpy(), w + mom, rtol=1e-12)


@pytest.mark.parametrize("clip", [-1.0, 0.3])
def test_sgd_mom_update(rng, clip):
    w, g, m = _arrays(rng, 3)
    out = _run("sgd_mom_update", [w, g, m], lr=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5,
               clip_gradient=clip)
    mom = 0.9 * m - 0.1 * 0.01 * w - 0.1 * _clip(0.5 * g, clip)
    np.testing.assert_allclose(out[2], mom, rtol=1e-12)
    np.testing.assert_allclose(out[0], w + mom, rtol=1e-12)


def test_nag_mom_update(rng):
    w, g, m = _arrays(rng, 3)
    out = _run("nag_mom_update", [w, g, m], lr=0.1, momentum=0.9, wd=0.01, rescale_grad=2.0,
               clip_gradient=1.0)
    grad = np.clip(2.0 * g, -1, 1) + 0.01 * w
    mom = 0.9 * m - 0.1 * grad
    np.testing.assert_allclose(out[2], mom, rtol=1e-12)
    # Nesterov look-ahead: w - lr*(grad + momentum*(new momentum direction))
    np.testing.assert_allclose(out[0], w + 0.9 * mom - 0.1 * grad, rtol=1e-12)


@pytest.mark.parametrize("clip", [-1.0, 0.2])
def test_adam_update(rng, clip):
    w, g, m = _arrays(rng, 3)
    v = np.abs(rng.standard_normal(w.shape))
    out = _run("adam_update", [w, g, m, v], lr=0.01, beta1=0.8, beta2=0.99, epsilon=1e-6,
               wd=0.1, rescale_grad=0.5, clip_gradient=clip)
    grad = _clip(0.5 * g + 0.1 * w, clip)
    mean = 0.8 * m + 0.2 * grad
    var = 0.99 * v + 0.01 * grad ** 2
    np.testing.assert_allclose(out[2], mean, rtol=1e-12)
    np.testing.assert_allclose(out[3], var, rtol=1e-12)
    np.testing.assert_allclose(out[0], w - 0.01 * mean / (np.sqrt(var) + 1e-6), rtol=1e-12)


@pytest.mark.parametrize("clip_weights", [-1.0, 0.5])
def test_rmsprop_update(rng, clip_weights):
    w, g = _arrays(rng, 2)
    n = np.abs(rng.standard_normal(w.shape))
    out = _run("rmsprop_update", [w, g, n], lr=0.01, gamma1=0.9, epsilon=1e-8, wd=0.1,
               clip_weights=clip_weights)
    grad = g + 0.1 * w
    nn = 0.1 * grad ** 2 + 0.9 * n
    np.testing.assert_allclose(out[2], nn, rtol=1e-12)
    neww = w - 0.01 * grad / np.sqrt(nn + 1e-8)
    np.testing.assert_allclose(out[0], _clip(neww, clip_weights), rtol=1e-12)


def test_rmspropalex_update(rng):
    w, g, gs, d = _arrays(rng, 4)
    n = np.abs(rng.standard_normal(w.shape)) + 2.0
    out = _run("rmspropalex_update", [w, g, n, gs * 0.1, d], lr=0.01, gamma1=0.9, gamma2=0.8)
    nn = 0.1 * g ** 2 + 0.9 * n
    ng = 0.1 * g + 0.9 * gs * 0.1
    nd_ = 0.8 * d - 0.01 * g / np.sqrt(nn - ng ** 2 + 1e-8)
    np.testing.assert_allclose(out[2], nn, rtol=1e-12)
    np.testing.assert_allclose(out[3], ng, rtol=1e-12)
    np.testing.assert_allclose(out[4], nd_, rtol=1e-12)
    np.testing.assert_allclose(out[0], w + nd_, rtol=1e-12)


def test_signsgd_and_signum(rng):
    w, g, m = _arrays(rng, 3)
    out = _run("signsgd_update", [w, g], lr=0.1, wd=0.01)
    np.testing.assert_allclose(out[0], (1 - 0.001) * w - 0.1 * np.sign(g), rtol=1e-12)
    out = _run("signum_update", [w, g, m], lr=0.1, momentum=0.9, wd=0.01, wd_lh=0.05)
    mom = 0.9 * m - 0.1 * 0.01 * w - 0.1 * g
    np.testing.assert_allclose(out[2], mom, rtol=1e-12)
    np.testing.assert_allclose(out[0], (1 - 0.1 * 0.05) * w + 0.1 * np.sign(mom), rtol=1e-12)


def test_mp_sgd_updates(rng):
    w32, g, m = (a.astype(np.float32) for a in _arrays(rng, 3))
    w16 = nd.array(w32.astype(np.float16), dtype="float16")
    g16 = nd.array(g.astype(np.float16), dtype="float16")
    master, mom = nd.array(w32), nd.array(m)
    nd.mp_sgd_mom_update(w16, g16, mom, master, out=w16, lr=0.1, momentum=0.9, wd=0.01)
    ref_mom = 0.9 * m - 0.1 * 0.01 * w32 - 0.1 * g.astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(mom.asnumpy(), ref_mom, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(master.asnumpy(), w32 + ref_mom, rtol=1e-6, atol=1e-7)
    assert w16.dtype == np.float16
    np.testing.assert_array_equal(w16.asnumpy(), (w32 + ref_mom).astype(np.float16))
    master2 = nd.array(w32)
    nd.mp_sgd_update(w16, g16, master2, out=w16, lr=0.1)
    np.testing.assert_allclose(master2.asnumpy(), w32 - 0.1 * g.astype(np.float16).astype(np.float32),
                               rtol=1e-6)


def test_update_ops_string_params_and_errors(rng):
    w, g = _arrays(rng, 2)
    out = _run("sgd_update", [w, g], lr="0.1", wd="0", rescale_grad="1.0", clip_gradient="-1",
               lazy_update="True")
    np.testing.assert_allclose(out[0], w - 0.1 * g, rtol=1e-12)
    with pytest.raises(GpundaError, match="sgd_update.*lr"):
        nd.sgd_update(nd.ones((2,)), nd.ones((2,)))
    m = nd.ones((3,))
    with pytest.raises(GpundaError, match="sgd_mom_update.*mom"):
        nd.sgd_mom_update(nd.ones((2,)), nd.ones((2,)), m, lr=0.1)
    np.testing.assert_array_equal(m.asnumpy(), 1)
    assert mx.ops.get_op("adam_update").mutates == (2, 3)
    assert mx.ops.get_op("adam_update").nondiff


# values printed by MXNet 1.9.1 for the same inputs (float32)
_FTML_IN = dict(w=[0.5, -1.0, 2.0, 0.01], g=[0.3, -0.2, 1.5, -4.0], d=[0.1, 0.2, 0.3, 0.4],
                v=[0.01, 0.02, 0.03, 0.04], z=[0.05, -0.05, 0.1, 0.0])


def test_ftml_update_matches_mxnet():
    a = {k: nd.array(v) for k, v in _FTML_IN.items()}
    out = nd.ftml_update(a["w"], a["g"], a["d"], a["v"], a["z"], lr=0.1, t=3, wd=0.01,
                         rescale_grad=0.5, clip_grad=1.0)
    np.testing.assert_allclose(out.asnumpy(), [0.491487, -0.9904193, 1.9709222, 0.02371805],
                               rtol=1e-5)
    np.testing.assert_allclose(a["d"].asnumpy(), [14.331062, 20.248983, 25.036364, 28.983707],
                               rtol=1e-5)
    np.testing.assert_allclose(a["v"].asnumpy(), [0.01001402, 0.0199921, 0.03056289, 0.04095999],
                               rtol=1e-5)
    np.testing.assert_allclose(a["z"].asnumpy(), [-7.043531, 20.054983, -49.344727, -0.687437],
                               rtol=1e-5)
    np.testing.assert_array_equal(a["w"].asnumpy(), np.float32(_FTML_IN["w"]))   # out= not given


def test_ftrl_update_matches_mxnet():
    w, g = nd.array(_FTML_IN["w"]), nd.array(_FTML_IN["g"])
    z, n = nd.array([0.05, -0.05, 0.1, 0.0]), nd.array([0.1, 0.2, 0.3, 0.4])
    out = nd.ftrl_update(w, g, z, n, lr=0.1, lamda1=0.02, beta=1.0, wd=0.01, rescale_grad=0.5,
                         clip_gradient=0.5)
    np.testing.assert_allclose(out.asnumpy(), [-0.00082449, 0.00134041, 0.1869568, 0.02752157],
                               rtol=1e-5)
    np.testing.assert_allclose(z.asnumpy(), [0.03113886, -0.03956005, -3.2779462, -0.517377],
                               rtol=1e-5)
    np.testing.assert_allclose(n.asnumpy(), [0.1225, 0.21, 0.55, 0.65], rtol=1e-6)


def test_ftrl_zeroes_weights_inside_lamda1():
    # |z| <= lamda1 after the update gives exactly 0 (the L1 proximal step)
    w, g = nd.zeros((3,)), nd.zeros((3,))
    z, n = nd.array([0.001, -0.5, 0.5]), nd.ones((3,))
    out = nd.ftrl_update(w, g, z, n, lr=1.0, lamda1=0.01)
    assert out.asnumpy()[0] == 0 and out.asnumpy()[1] > 0 and out.asnumpy()[2] < 0
