"""IdentityAttachKLSparseReg, _contrib_SparseEmbedding (ops/contrib/misc.py) and
_contrib_hawkesll (ops/contrib/hawkes.py) against NumPy references and MXNet 1.9.1's values."""
import math

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

nd = mx.nd
ag = mx.autograd


def test_kl_sparse_reg_forward_is_identity_backward_adds_penalty_and_moves_avg():
    rs = np.random.RandomState(0)
    x, g = rs.rand(4, 3).astype(np.float32), rs.rand(4, 3).astype(np.float32)
    ma0 = np.array([0.2, 0.3, 0.5], np.float32)
    xn, ma = nd.array(x), nd.array(ma0)
    xn.attach_grad()
    with ag.record():
        y = nd.IdentityAttachKLSparseReg(xn, ma, penalty=0.01, sparseness_target=0.2,
                                         momentum=0.8)
    np.testing.assert_array_equal(y.asnumpy(), x)
    np.testing.assert_array_equal(ma.asnumpy(), ma0)      # the forward leaves the state
    y.backward(nd.array(g))
    new = 0.8 * ma0 + 0.2 * x.mean(axis=0)
    np.testing.assert_allclose(ma.asnumpy(), new, rtol=1e-6)
    ref = g + 0.01 * (-0.2 / new + 0.8 / (1 - new))
    np.testing.assert_allclose(xn.grad.asnumpy(), ref, rtol=1e-6)


def test_kl_sparse_reg_in_executor_updates_aux_state():
    sym = mx.sym.IdentityAttachKLSparseReg(mx.sym.Variable("data"), name="kl")
    assert sym.list_arguments() == ["data"]
    assert sym.list_auxiliary_states() == ["kl_moving_avg"]
    ex = sym.simple_bind(mx.cpu(), data=(2, 3))
    ex.aux_dict["kl_moving_avg"][:] = 0.5
    ex.arg_dict["data"][:] = nd.array([[0.1, 0.2, 0.3], [0.3, 0.4, 0.5]])
    ex.forward(is_train=True)
    ex.backward(nd.ones((2, 3)))
    new = 0.9 * 0.5 + 0.1 * np.array([0.2, 0.3, 0.4])
    np.testing.assert_allclose(ex.aux_dict["kl_moving_avg"].asnumpy(), new, rtol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(),
                               np.broadcast_to(1 + 0.001 * (-0.1 / new + 0.9 / (1 - new)),
                                               (2, 3)), rtol=1e-6)


def test_kl_sparse_reg_checks():
    with pytest.raises(GpundaError, match="moving_avg has shape"):
        nd.IdentityAttachKLSparseReg(nd.ones((2, 3)), nd.ones((2,)))
    with pytest.raises(GpundaError, match="momentum=1.5"):
        nd.IdentityAttachKLSparseReg(nd.ones((2, 3)), nd.ones((3,)), momentum=1.5)


def test_sparse_embedding_gives_row_sparse_weight_gradient():
    w = nd.array(np.arange(15, dtype=np.float32).reshape(5, 3))
    w.attach_grad(stype="row_sparse")
    d = nd.array([[0, 2], [2, 3]])
    og = np.random.RandomState(1).rand(2, 2, 3).astype(np.float32)
    with ag.record():
        e = nd.contrib.SparseEmbedding(d, w, input_dim=5, output_dim=3)
    np.testing.assert_array_equal(e.asnumpy(), w.asnumpy()[[[0, 2], [2, 3]]])
    e.backward(nd.array(og))
    assert w.grad.stype == "row_sparse"
    np.testing.assert_array_equal(w.grad.indices.asnumpy(), [0, 2, 3])
    ref = np.zeros((5, 3), np.float32)
    np.add.at(ref, [0, 2, 2, 3], og.reshape(4, 3))
    np.testing.assert_allclose(w.grad.asnumpy(), ref, rtol=1e-6)


def _hawkes_reference(mu, alpha, beta, state, lags, marks, vlen, tmax):
    """The likelihood by its definition, one event at a time in float64."""
    lls, states = [], []
    for i in range(mu.shape[0]):
        s, last, t, ll = state[i].astype(float), np.zeros(mu.shape[1]), 0.0, 0.0
        for j in range(int(vlen[i])):
            c = marks[i, j]
            t += lags[i, j]
            ed = math.exp(-beta[c] * (t - last[c]))
            ll += math.log(mu[i, c] + alpha[c] * beta[c] * s[c] * ed)
            ll -= mu[i, c] * (t - last[c]) + alpha[c] * s[c] * (1 - ed)
            s[c] = 1 + s[c] * ed
            last[c] = t
        ed = np.exp(-beta * (tmax[i] - last))
        ll -= np.sum(mu[i] * (tmax[i] - last) + alpha * s * (1 - ed))
        lls.append(ll)
        states.append(s * ed)
    return np.array(lls), np.array(states)


def _hawkes_inputs():
    rs = np.random.RandomState(3)
    return (rs.rand(4, 3) + 0.5, np.array([0.2, 0.3, 0.4]), np.array([1.0, 2.0, 3.0]),
            rs.rand(4, 3), rs.rand(4, 5) * 2, rs.randint(0, 3, (4, 5)),
            np.array([1, 2, 5, 3]), np.array([20.0, 15.0, 30.0, 12.0]))


def test_hawkesll_matches_definition():
    vals = _hawkes_inputs()
    args = [nd.array(v) for v in vals]
    args[5] = args[5].astype(np.int32)
    ll, st = nd.contrib.hawkesll(*args)
    ref_ll, ref_st = _hawkes_reference(*vals)
    np.testing.assert_allclose(ll.asnumpy(), ref_ll, rtol=1e-5)
    np.testing.assert_allclose(st.asnumpy(), ref_st, rtol=1e-5, atol=1e-7)


def test_hawkesll_matches_mxnet_docstring_example():
    # values printed by MXNet 1.9.1 for the example of its docstring (marks varied)
    N, K = 4, 3
    lda = nd.array([1.5, 2.0, 3.0]).tile((N, 1))
    alpha, beta = nd.array([0.2, 0.3, 0.4]), nd.array([1.0, 2.0, 3.0])
    ia = nd.array([[6, 7, 8, 9], [1, 2, 3, 4], [3, 4, 5, 6], [8, 9, 10, 11]])
    marks = nd.array([[0, 1, 2, 0], [2, 2, 1, 0], [1, 0, 0, 2], [0, 0, 0, 0]]).astype(np.int32)
    for x in (lda, alpha, beta):
        x.attach_grad()
    with ag.record():
        a, s = nd.contrib.hawkesll(lda, alpha, beta, nd.zeros((N, K)), ia, marks,
                                   nd.array([1, 2, 3, 4]), nd.ones((N,)) * 100.0)
    a.backward()
    np.testing.assert_allclose(a.asnumpy(), [-649.7945556640625, -648.601806640625,
                                             -649.1950073242188, -649.1781005859375], rtol=1e-6)
    np.testing.assert_allclose(s.asnumpy(), np.zeros((N, K)), atol=1e-20)
    np.testing.assert_allclose(alpha.grad.asnumpy(),
                               [-6.995388507843018, -1.0, -1.9975236654281616], rtol=1e-5)
    np.testing.assert_allclose(beta.grad.asnumpy(),
                               [-0.0037987446412444115, 0.0, -0.0016508647240698338],
                               rtol=1e-4, atol=1e-8)
    np.testing.assert_allclose(lda.grad.asnumpy()[:, 0],
                               [-99.33333587646484, -100.0, -98.66726684570312,
                                -97.3333511352539], rtol=1e-6)


def test_hawkesll_second_order_raises_and_bad_marks():
    vals = _hawkes_inputs()
    args = [nd.array(v) for v in vals]
    args[5] = args[5].astype(np.int32)
    args[1].attach_grad()
    with ag.record():
        ll, _ = nd.contrib.hawkesll(*args)
        (g,) = ag.grad(ll.sum(), [args[1]], create_graph=True)
        gs = g.sum()
    with pytest.raises(GpundaError, match="non-differentiable because it didn.t register FGradient"):
        gs.backward()
    args[5] = (args[5] * 0 + 7).astype(np.int32)
    with pytest.raises(GpundaError, match="mark outside"):
        nd.contrib.hawkesll(*args)


def test_sync_batch_norm_is_batch_norm_with_variance_output():
    rs = np.random.RandomState(5)
    x = rs.randn(4, 3, 5).astype(np.float32)
    gamma, beta = nd.array(rs.rand(3) + 0.5), nd.array(rs.rand(3))
    mm, mv = nd.zeros(3), nd.ones(3)
    mm2, mv2 = nd.zeros(3), nd.ones(3)
    xs, xb = nd.array(x), nd.array(x)
    xs.attach_grad()
    xb.attach_grad()
    og = nd.array(rs.rand(4, 3, 5))
    with ag.record():
        out, mean, var = nd.contrib.SyncBatchNorm(xs, gamma, beta, mm, mv, fix_gamma=False,
                                                  output_mean_var=True, key="bn0")
        ref = nd.BatchNorm(xb, gamma, beta, mm2, mv2, fix_gamma=False, eps=1e-3)
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var.asnumpy(), x.var(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(mean.asnumpy(), x.mean(axis=(0, 2)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(mv.asnumpy(), mv2.asnumpy(), rtol=1e-6)
    out.backward(og)
    ref.backward(og)
    np.testing.assert_allclose(xs.grad.asnumpy(), xb.grad.asnumpy(), rtol=1e-4, atol=1e-6)
    with pytest.raises(GpundaError, match="ndev=2"):
        nd.contrib.SyncBatchNorm(xs, gamma, beta, mm, mv, key="k", ndev=2)
