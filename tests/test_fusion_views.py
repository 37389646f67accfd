"""View steps in the fused plan (NOTE [View steps] in gpunda/_engine/fusion/views.py).

Shape-only ops outside fused groups run as views of their input in the fused view of a
CachedOp: values and gradients must equal the unfused plan's (each op's own copying
compute and rule), outputs must never alias inputs, the static memory plan must not write
into memory a live view reads, and the kernel count must charge a copy wherever one still
happens."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, sym
from gpunda._engine import fusion
from gpunda._engine.cached_op import CachedOp


@pytest.fixture(autouse=True)
def _cpu():
    with mx.cpu():
        yield


def _run(cop, arrays, train=True):
    args = [mx.nd.array(a) for a in arrays]
    for a in args:
        a.attach_grad()
    with autograd.record(train_mode=train):
        out = cop(*args)
    outs = out if isinstance(out, list) else [out]
    autograd.backward(outs, [mx.nd.ones(o.shape) * (k + 1) for k, o in enumerate(outs)])
    return [o.asnumpy() for o in outs] + [a.grad.asnumpy() for a in args]


def _gate_graph():
    """A GEMM, a reshape, a split along the last axis feeding a fused group, a reshape of
    the group's output and a reshape as a head."""
    x, w, w2 = sym.var("x"), sym.var("w"), sym.var("w2")
    f = sym.FullyConnected(x, w, num_hidden=12, no_bias=True)       # (4, 12)
    r = sym.Reshape(f, shape=(4, 3, 4))
    a, b = sym.split(r, num_outputs=2, axis=-1)                     # (4, 3, 2) strided
    g = sym.sigmoid(a) * sym.tanh(b) + 1
    h = sym.FullyConnected(sym.Flatten(g), w2, num_hidden=6, no_bias=True, flatten=False)
    return sym.Group([sym.Reshape(h, shape=(-1,)), sym.expand_dims(g, axis=0)])


def test_views_match_the_unfused_plan_values_and_gradients():
    rs = np.random.RandomState(0)
    arrays = [rs.randn(4, 5).astype(np.float32), rs.randn(12, 5).astype(np.float32) * 0.5,
              rs.randn(6, 6).astype(np.float32)]
    s = _gate_graph()
    cop = CachedOp(s, {"static_alloc": True})
    view = cop._fused_view(True)
    assert view is not cop
    kinds = {st.op.name: getattr(st.op, "fusion_view", False) for st in view._steps}
    assert kinds["SliceChannel"] and kinds["Flatten"]
    ref = _run(cop, arrays)
    for _ in range(3):      # the first call instruments, later ones run the compiled plans
        got = _run(view, arrays)
        for a, b in zip(ref, got):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    for train in (False, True):      # the static (predict) plan as well
        with autograd.train_mode() if train else autograd.predict_mode():
            for _ in range(3):
                o1 = cop(*[mx.nd.array(a) for a in arrays])
                o2 = view(*[mx.nd.array(a) for a in arrays])
                for a, b in zip(o1, o2):
                    np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-5,
                                               atol=1e-6)


def test_report_lists_views_and_heads_stay_copies():
    s = _gate_graph()
    rep = CachedOp(s, {"static_alloc": True}).fusion_report(train=True)
    assert len(rep["views"]) == 3     # the inner reshape, the split, the Flatten
    heads = {d["node"]: d["reason"] for d in rep["left_out"]}
    # the two heads (Reshape of h, expand_dims of g) are not views
    assert sum("view" in r for r in heads.values()) == 3


def test_an_output_never_aliases_an_input():
    x = sym.var("x")
    s = sym.Group([sym.Reshape(x, shape=(-1,)), sym.exp(x) * 2 + 1])
    cop = CachedOp(s, {"static_alloc": True})
    view = cop._fused_view(False)
    assert view is not cop
    a = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    for _ in range(3):
        out = view(a)
        assert not np.shares_memory(out[0]._data, a._data)
        out[0][:] = -7
        np.testing.assert_array_equal(a.asnumpy(), np.arange(6).reshape(2, 3))


def test_no_in_place_write_into_memory_a_live_view_reads():
    """relu(f) may write in place into f's memory when f dies there: here a reshape of f
    is still to be read afterwards, so it must not."""
    x, w = sym.var("x"), sym.var("w")
    f = sym.FullyConnected(x, w, num_hidden=6, no_bias=True)
    v = sym.Reshape(f, shape=(-1, 2, 3))
    r = sym.Activation(f, act_type="relu")
    out = sym.Group([sym.FullyConnected(r, w, num_hidden=6, no_bias=True) * 1,
                     sym.exp(v) * 2 + 1])
    rs = np.random.RandomState(3)
    arrays = [rs.randn(4, 6).astype(np.float32), rs.randn(6, 6).astype(np.float32)]
    cop = CachedOp(out, {"static_alloc": True, "static_shape": True})
    view = cop._fused_view(False)
    with autograd.predict_mode():
        want = [o.asnumpy() for o in cop(*[mx.nd.array(a) for a in arrays])]
        for _ in range(3):
            got = view(*[mx.nd.array(a) for a in arrays])
            for a, b in zip(want, got):
                np.testing.assert_allclose(b.asnumpy(), a, rtol=1e-5, atol=1e-6)


def _counts(s, shapes, **kw):
    return fusion.kernel_counts(s, shapes, train=True, **kw)


def test_count_charges_the_copies_that_still_happen():
    x, w = sym.var("x"), sym.var("w")
    # a split read by a GEMM stays a copy (only fused kernels read strided views)
    a, b = sym.split(x, num_outputs=2, axis=-1)
    s = sym.FullyConnected(a, w, num_hidden=3, no_bias=True) + sym.exp(b) * 2
    c = _counts(s, {"x": (4, 6)}, grad_inputs=["x", "w"])
    assert c["views"] == 0
    # a reshape of a strided part copies (one kernel), a reshape of a contiguous one not
    t = sym.exp(sym.Reshape(a, shape=(-1,)) * 2)
    c = _counts(t, {"x": (4, 6)}, grad_inputs=["x"])
    assert c["views"] == 2 and c["view_copies"] == 1
    a0, b0 = sym.split(x, num_outputs=2, axis=0)
    t = sym.exp(sym.Reshape(a0, shape=(-1,)) * 2)
    c = _counts(t, {"x": (4, 6)}, grad_inputs=["x"])
    assert c["views"] == 2 and c["view_copies"] == 0
    # the same split read only by a fused group: free (strided loads)
    s = sym.sigmoid(a) * sym.tanh(b) + 1
    c = _counts(s, {"x": (4, 6)}, grad_inputs=["x"])
    assert c["views"] == 1 and c["view_copies"] == 0
    # forward: the group (the split is a view); backward: the group and the split's concat
    assert c["forward"] == (5, 1) and c["backward"] == (5, 2)
    # a reshape of a contiguous GEMM output: no kernel either way (its gradient reshapes)
    f = sym.Reshape(sym.FullyConnected(x, w, num_hidden=6, no_bias=True), shape=(-1, 3))
    s = sym.exp(f) * 2
    c = _counts(s, {"x": (4, 6)}, grad_inputs=["w"])
    assert c["forward"] == (4, 2) and c["backward"] == (4, 2)


def test_reshape_of_a_strided_part_is_contiguous():
    """A reshape view hands every reader a C-contiguous array (copying a strided split
    part), matching the unfused values and gradients."""
    x, w = sym.var("x"), sym.var("w")
    a, b = sym.split(x, num_outputs=2, axis=-1)
    r = sym.Reshape(a, shape=(-1, 3))
    s = sym.broadcast_add(sym.FullyConnected(r, w, num_hidden=2, no_bias=True),
                          sym.sum(sym.exp(b) * 2))
    rs = np.random.RandomState(4)
    arrays = [rs.randn(4, 6).astype(np.float32), rs.randn(2, 3).astype(np.float32)]
    cop = CachedOp(s, {"static_alloc": True})
    view = cop._fused_view(True)
    assert len(cop.fusion_report(True)["views"]) == 2
    ref = _run(cop, arrays)
    for _ in range(2):
        for a, b in zip(ref, _run(view, arrays)):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_views_follow_the_switch():
    """With MXNET_USE_FUSION off no fused view (and so no view step) is made."""
    s = _gate_graph()
    cop = CachedOp(s, {"static_alloc": True})
    old = fusion.ENABLED
    fusion.ENABLED = False
    try:
        assert cop._partition(True) is None
        assert cop.fusion_report(True)["views"] == []
    finally:
        fusion.ENABLED = old
