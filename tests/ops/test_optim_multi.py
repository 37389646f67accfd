"""Multi-tensor optimizer ops (ops/optimizer/multi.py, ops/optimizer/lamb_adamw.py) against NumPy
transcriptions of MXNet's update formulas, and against values MXNet 1.9.1 printed."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError
from gpunda.ops.registry import get_op

nd = mx.nd
RS = np.random.RandomState(7)
SHAPES = [(3, 4), (5,), (2, 2, 2)]


def _rand(scale=1.0):
    return [(RS.randn(*s) * scale).astype(np.float32) for s in SHAPES]


def _clip(g, c):
    return np.clip(g, -c, c) if c >= 0 else g


def _ref_sgd(w, g, mom, lr, wd, momentum, rescale, clip):
    m = -lr * wd * w - lr * _clip(rescale * g, clip)
    if mom is not None:
        m = momentum * mom + m
    return w + m, m


# literals printed by MXNet 1.9.1 for the inputs below
W2 = [[[1., -2.], [0.5, 3.]], [0.25, -1.5, 2.]]
G2 = [[[0.3, 0.6], [-0.9, 0.1]], [1., -0.2, 0.4]]
M2 = [[[0.1, 0.], [-0.1, 0.2]], [0., 0.3, -0.3]]
V2 = [[[0.1, 0.2], [0.3, 0.4]], [0.5, 0.6, 0.7]]
MX_SGD_MOM_W = [[[1.0290000438690186, -2.0980000495910645], [0.5095000267028809, 3.157000064849853]],
                [-0.26249998807907104, -0.9549999833106995, 1.2300000190734863]]
MX_SGD_MOM_M = [[[0.028999991714954376, -0.09800000488758087],
                 [0.009500004351139069, 0.15699999034404755]],
                [-0.512499988079071, 0.5450000166893005, -0.7699999809265137]]
MX_LAMB_W = [[[0.7646244764328003, -2.0273966789245605], [0.6712968349456787, 2.761242389678955]],
             [0.21028168499469757, -1.5907318592071533, 2.077275037765503]]
MX_ADAMW_W = [[[0.9567832350730896, -1.9867100715637207], [0.5196515321731567, 2.940734386444092]],
              [0.24823178350925446, -1.5083955526351929, 2.0074737071990967]]


def _nds(xs, dtype=np.float32):
    return [nd.array(np.asarray(x, np.float32), dtype=dtype) for x in xs]


def _flat(*lists):
    return [x for grp in zip(*lists) for x in grp]


@pytest.mark.parametrize("momentum", [None, 0.9])
@pytest.mark.parametrize("preloaded", [False, True])
def test_multi_sgd_matches_formula_and_mutates_states(momentum, preloaded):
    W, G, M = _rand(), _rand(), _rand(0.1)
    lrs, wds = (0.1, 0.2, 0.05), (0.01, 0.0, 0.1)
    ws, gs, ms = _nds(W), _nds(G), _nds(M)
    lists = (ws, gs) if momentum is None else (ws, gs, ms)
    kw = {} if momentum is None else {"momentum": momentum}
    name = ("preloaded_multi_" if preloaded else "multi_") + \
        ("sgd_update" if momentum is None else "sgd_mom_update")
    if preloaded:
        args = _flat(*lists) + [nd.array(lrs), nd.array(wds)]
    else:
        args = _flat(*lists)
        kw.update(lrs=lrs, wds=wds)
    outs = getattr(nd, name)(*args, rescale_grad=0.5, clip_gradient=0.3, num_weights=3, **kw)
    assert len(outs) == 3
    for i in range(3):
        ref_w, ref_m = _ref_sgd(W[i], G[i], None if momentum is None else M[i], lrs[i], wds[i],
                                momentum, 0.5, 0.3)
        np.testing.assert_allclose(outs[i].asnumpy(), ref_w, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(ws[i].asnumpy(), W[i])      # weight untouched without out=
        if momentum is not None:
            np.testing.assert_allclose(ms[i].asnumpy(), ref_m, rtol=1e-6, atol=1e-7)


def test_multi_sgd_mom_out_matches_mxnet_literal():
    ws, gs, ms = _nds(W2), _nds(G2), _nds(M2)
    res = nd.multi_sgd_mom_update(*_flat(ws, gs, ms), lrs=(0.1, 0.5), wds=(0.01, 0.1),
                                  momentum=0.9, rescale_grad=2.0, clip_gradient=1.0,
                                  num_weights=2, out=ws)
    assert res is ws
    for w, m, ew, em in zip(ws, ms, MX_SGD_MOM_W, MX_SGD_MOM_M):
        np.testing.assert_allclose(w.asnumpy(), ew, rtol=1e-6)
        np.testing.assert_allclose(m.asnumpy(), em, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("momentum", [None, 0.5])
def test_multi_mp_sgd_updates_master_copy(momentum):
    W, G, M = _rand(), _rand(), _rand(0.1)
    w16, g16, w32, ms = _nds(W, np.float16), _nds(G, np.float16), _nds(W), _nds(M)
    lists = (w16, g16, w32) if momentum is None else (w16, g16, ms, w32)
    name = "multi_mp_sgd_update" if momentum is None else "multi_mp_sgd_mom_update"
    kw = {} if momentum is None else {"momentum": momentum}
    outs = getattr(nd, name)(*_flat(*lists), lrs=(0.1, 0.2, 0.3), wds=(0.0, 0.1, 0.0),
                             num_weights=3, **kw)
    for i in range(3):
        g = G[i].astype(np.float16).astype(np.float32)
        ref_w, _ = _ref_sgd(W[i], g, None if momentum is None else M[i], (0.1, 0.2, 0.3)[i],
                            (0.0, 0.1, 0.0)[i], momentum, 1.0, -1)
        np.testing.assert_allclose(w32[i].asnumpy(), ref_w, rtol=1e-6, atol=1e-7)
        assert outs[i].dtype == np.float16
        np.testing.assert_array_equal(outs[i].asnumpy(), ref_w.astype(np.float16))


def test_mutated_inputs_follow_num_weights():
    op = get_op("multi_mp_sgd_mom_update")
    assert op.mutated(op.parse_params({"num_weights": 2, "lrs": (1, 1), "wds": (0, 0)})) == \
        (2, 3, 6, 7)
    assert get_op("sgd_mom_update").mutated(None) == (2,)
    assert not get_op("multi_sum_sq").mutates


def test_multi_sgd_checks_lengths_and_shapes():
    ws, gs = _nds(W2), _nds(G2)
    with pytest.raises(GpundaError, match="lrs has 1 values but num_weights=2"):
        nd.multi_sgd_update(*_flat(ws, gs), lrs=(0.1,), wds=(0.0, 0.0), num_weights=2)
    with pytest.raises(GpundaError, match="expects"):
        nd.multi_sgd_update(*_flat(ws, gs), lrs=(0.1,), wds=(0.0,), num_weights=1)
    with pytest.raises(GpundaError, match="grad_0"):
        nd.multi_sgd_update(ws[0], gs[1], lrs=0.1, wds=0.0)


def test_multi_sum_sq_and_lars():
    G = _rand()
    ss = nd.multi_sum_sq(*_nds(G), num_arrays=3)
    assert ss.dtype == np.float32 and ss.shape == (3,)
    np.testing.assert_allclose(ss.asnumpy(), [np.sum(g.astype(np.float64) ** 2) for g in G],
                               rtol=1e-5)
    np.testing.assert_allclose(nd.multi_sum_sq(*_nds(G2), num_arrays=2).asnumpy(),
                               [1.2699999809265137, 1.1999999284744263], rtol=1e-7)
    lrs, wsq, gsq, wds = [0.1, 0.2, 0.3], [4., 0., 9.], [1., 2., 0.25], [0.01, 0., 0.1]
    out = nd.multi_lars(*(nd.array(x) for x in (lrs, wsq, gsq, wds)), eta=0.5, eps=1e-4,
                        rescale_grad=2.).asnumpy()
    wn, gn = np.sqrt(wsq), np.sqrt(gsq)
    ref = np.where((wn > 0) & (gn > 0),
                   np.array(lrs) * 0.5 * wn / (gn * 2. + np.array(wds) * wn + 1e-4), lrs)
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    np.testing.assert_allclose(out, [0.049502503126859665, 0.20000000298023224,
                                     0.3461272418498993], rtol=1e-7)


def _ref_lamb_g(w, g, m, v, t, wd, b1=0.9, b2=0.999, eps=1e-6, rescale=1.0, clip=-1, bc=True):
    gr = _clip(g * rescale, clip)
    m = b1 * m + (1 - b1) * gr
    v = b2 * v + (1 - b2) * gr * gr
    mh, vh = (m / (1 - b1 ** t), v / (1 - b2 ** t)) if bc else (m, v)
    return mh / (np.sqrt(vh) + eps) + wd * w, m, v


def test_lamb_phases():
    w, g, m, v = _rand()[0], _rand()[0], _rand(0.1)[0], np.abs(_rand()[0])
    a = _nds([w, g, m, v])
    d = nd.lamb_update_phase1(*a, t=3, wd=0.01, rescale_grad=0.7, clip_gradient=0.5)
    ref_d, ref_m, ref_v = _ref_lamb_g(w, g, m, v, 3, 0.01, rescale=0.7, clip=0.5)
    np.testing.assert_allclose(d.asnumpy(), ref_d, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a[2].asnumpy(), ref_m, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(a[3].asnumpy(), ref_v, rtol=1e-6)
    r1, r2 = np.linalg.norm(w), np.linalg.norm(ref_d)
    out = nd.lamb_update_phase2(a[0], d, nd.array([r1]), nd.array([r2]), lr=0.1,
                                upper_bound=1.0)
    np.testing.assert_allclose(out.asnumpy(), w - 0.1 * min(r1, 1.0) / r2 * ref_d, rtol=1e-5)
    keep = nd.lamb_update_phase2(a[0], d, nd.array([0.]), nd.array([r2]), lr=0.1)
    np.testing.assert_allclose(keep.asnumpy(), w - 0.1 * ref_d, rtol=1e-5)


def test_multi_lamb_matches_mxnet_literal_and_formula():
    ws, gs, ms, vs = _nds(W2), _nds(G2), _nds(M2), _nds(V2)
    nd.contrib.multi_lamb_update(ws, gs, ms, vs, step_count=[2, 5], lrs=[0.1, 0.05],
                                 wds=[0.01, 0.0], out=ws)
    for i, (w, e) in enumerate(zip(ws, MX_LAMB_W)):
        np.testing.assert_allclose(w.asnumpy(), e, rtol=1e-6)
        w0 = np.asarray(W2[i], np.float32)
        d, m, _ = _ref_lamb_g(w0, np.asarray(G2[i]), np.asarray(M2[i]), np.asarray(V2[i]),
                              (2, 5)[i], (0.01, 0.0)[i])
        ref = w0 - (0.1, 0.05)[i] * np.linalg.norm(w0) / np.linalg.norm(d) * d
        np.testing.assert_allclose(w.asnumpy(), ref, rtol=1e-5)
        np.testing.assert_allclose(ms[i].asnumpy(), m, rtol=1e-6)


def _ref_adamw(w, g, m, v, lr, eta, wd, rescale, b1=0.9, b2=0.999, eps=1e-8, clip=-1):
    gr = _clip(rescale * g, clip)
    m = b1 * m + (1 - b1) * gr
    v = b2 * v + (1 - b2) * gr * gr
    return w - eta * (lr * m / (np.sqrt(v) + eps) + wd * w), m, v


def test_adamw_update_and_skip_on_bad_scale():
    w, g, m, v = _rand()[0], _rand()[0], _rand(0.1)[0], np.abs(_rand()[0])
    a = _nds([w, g, m, v])
    out = nd.contrib.adamw_update(*a, rescale_grad=0.5, lr=0.1, eta=0.7, wd=0.1,
                                  clip_gradient=0.2)
    ref_w, ref_m, ref_v = _ref_adamw(w, g, m, v, 0.1, 0.7, 0.1, 0.5, clip=0.2)
    np.testing.assert_allclose(out.asnumpy(), ref_w, rtol=1e-5)
    np.testing.assert_allclose(a[3].asnumpy(), ref_v, rtol=1e-5)
    before = [x.asnumpy() for x in a]
    for bad in (float("nan"), float("inf"), 0.0):
        nd.contrib.adamw_update(*a, rescale_grad=bad, lr=0.1, eta=0.7, out=a[0])
        for x, b in zip(a, before):
            np.testing.assert_array_equal(x.asnumpy(), b)


def test_multi_adamw_matches_mxnet_literal():
    ws, gs, ms, vs = _nds(W2), _nds(G2), _nds(M2), _nds(V2)
    nd.contrib.multi_adamw_update(ws, gs, ms, vs, 0.5, lrs=[0.1, 0.05], wds=[0.01, 0.0],
                                  etas=[1.0, 0.5], out=ws)
    for w, e in zip(ws, MX_ADAMW_W):
        np.testing.assert_allclose(w.asnumpy(), e, rtol=1e-6)


def test_mp_adamw_and_mp_nag_update_master_copy():
    w, g, m, v = _rand()[1], _rand()[1], _rand(0.1)[1], np.abs(_rand()[1])
    w32, mm, vv = _nds([w, m, v])
    out = nd.contrib.mp_adamw_update(nd.array(w, dtype=np.float16),
                                     nd.array(g, dtype=np.float16), mm, vv, w32,
                                     rescale_grad=nd.array([2.0]), lr=0.1, eta=0.5, wd=0.01)
    g16 = g.astype(np.float16).astype(np.float32)
    ref_w, _, _ = _ref_adamw(w, g16, m, v, 0.1, 0.5, 0.01, 2.0)
    np.testing.assert_allclose(w32.asnumpy(), ref_w, rtol=1e-5)
    assert out.dtype == np.float16
    w32, mm = _nds([w, m])
    nd.mp_nag_mom_update(nd.array(w, dtype=np.float16), nd.array(g, dtype=np.float16), mm,
                         w32, lr=0.1, momentum=0.9, wd=0.01)
    m1 = 0.9 * m
    new_w = w - m1 + 1.9 * (m1 - 0.1 * (g16 + 0.01 * w))
    np.testing.assert_allclose(w32.asnumpy(), new_w, rtol=1e-5)
    np.testing.assert_allclose(mm.asnumpy(), m1 - 0.1 * (g16 + 0.01 * new_w), rtol=1e-5,
                               atol=1e-7)


def test_group_adagrad_updates_grad_rows_only():
    w = RS.randn(4, 3).astype(np.float32)
    h = RS.rand(4, 1).astype(np.float32)
    vals = RS.randn(2, 3).astype(np.float32)
    g = nd.sparse.row_sparse_array((vals, [0, 2]), shape=(4, 3))
    wn, hn = nd.array(w), nd.array(h)
    nd.contrib.group_adagrad_update(wn, g, hn, lr=0.1, clip_gradient=0.5, rescale_grad=3,
                                    out=wn)
    gr = np.clip(3 * vals, -0.5, 0.5)
    ref_h = h.copy()
    ref_h[[0, 2], 0] += (gr ** 2).mean(axis=1)
    ref_w = w.copy()
    ref_w[[0, 2]] -= 0.1 * gr / np.sqrt(ref_h[[0, 2]] + 1e-5)
    np.testing.assert_allclose(hn.asnumpy(), ref_h, rtol=1e-6)
    np.testing.assert_allclose(wn.asnumpy(), ref_w, rtol=1e-6)
    with pytest.raises(GpundaError, match="row_sparse grad"):
        nd.contrib.group_adagrad_update(wn, nd.array(vals.repeat(2, 0)), hn, lr=0.1)


def test_group_adagrad_row_sparse_weight_and_history_as_mxnet():
    """Row_sparse weight, grad and history (GroupAdaGrad's state for a row_sparse weight):
    MXNet 1.9.1 updates the grad's rows when weight and history hold every row, starts
    from an empty history as zeros, and refuses a history that stores only some rows.
    Numbers recorded with /work/mxref (two steps of the optimizer, lr 0.1, rescale 0.8,
    clip 0.4)."""
    w0 = np.array([[1.0, 2.0, 3.0, 4.0], [0.5, -0.5, 1.5, -1.5], [2.0, 0.0, -2.0, 1.0]], "f")
    g0 = np.array([[0.1, -0.2, 0.3, 0.4], [0, 0, 0, 0], [-0.5, 0.25, 0.75, -1.0]], "f")
    opt = mx.optimizer.contrib.GroupAdaGrad(learning_rate=0.1, eps=1e-5, wd=0.0,
                                            clip_gradient=0.4, rescale_grad=0.8)
    w = nd.array(w0).tostype("row_sparse")
    g = nd.array(g0).tostype("row_sparse")
    st = opt.create_state(0, w)
    assert st.stype == "row_sparse"
    for _ in range(2):
        opt.update(0, w, g, st)
    assert w.stype == "row_sparse" and st.stype == "row_sparse"
    np.testing.assert_allclose(
        w.asnumpy(), [[0.9376704, 2.1246593, 2.8130114, 3.7506816], [0.5, -0.5, 1.5, -1.5],
                      [2.1893806, -0.09469037, -2.1893806, 1.1893808]], rtol=1e-6)
    np.testing.assert_allclose(st.asnumpy().ravel(), [0.096, 0.0, 0.26], rtol=1e-6)
    partial = nd.array([[0.5], [0.0], [1.0]]).tostype("row_sparse")   # stores 2 of 3 rows
    with pytest.raises(GpundaError, match="history to store all its rows"):
        nd.contrib.group_adagrad_update(nd.array(w0).tostype("row_sparse"), g, partial,
                                        lr=0.1)
