"""take, pick, gather_nd, scatter_nd, one_hot, where, recorded __getitem__ and
cross-context copies: values against NumPy, errors, and gradients against central
finite differences (float64), including second order through the scatter/gather pairs."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.test_utils import numeric_grad
from gpunda.base import GpundaError

nd = mx.nd


def _numeric_grad(f, x, head, eps=1e-6):
    """Central differences of sum(f(x) * head), in float64."""
    return numeric_grad(f, [x], eps=2 * eps, dtype=np.float64, head_grads=[head])[0]


def check_grad(f, x, rng, rtol=1e-5, atol=1e-6):
    """Autograd gradient of f at x equals central differences (random head gradient)."""
    x = np.asarray(x, dtype=np.float64)
    v = nd.array(x, dtype="float64")
    v.attach_grad()
    with mx.autograd.record():
        out = f(v)
    head = rng.standard_normal(out.shape)
    out.backward(nd.array(head, dtype="float64"))
    np.testing.assert_allclose(v.grad.asnumpy(), _numeric_grad(f, x, head), rtol=rtol, atol=atol)


def check_second_order(f, x, rng):
    """d/dx sum(w * grad sum(f(x)**2)) by create_graph against central differences."""
    w = rng.standard_normal(x.shape)

    def h(xn):
        v = nd.array(xn, dtype="float64")
        v.attach_grad()
        with mx.autograd.record():
            y = (f(v) ** 2).sum()
        g = mx.autograd.grad(y, [v], create_graph=True)[0]
        with mx.autograd.record():
            s = (g * nd.array(w, dtype="float64")).sum()
        return s, v

    s, v = h(x)
    s.backward()
    num = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, dn = x.copy(), x.copy()
        up[i] += 1e-5
        dn[i] -= 1e-5
        num[i] = (float(h(up)[0].asnumpy()[0]) - float(h(dn)[0].asnumpy()[0])) / 2e-5
    np.testing.assert_allclose(v.grad.asnumpy(), num, rtol=1e-5, atol=1e-5)


# -- take ---------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take(axis, mode, rng):
    x = rng.standard_normal((3, 4, 5)).astype("float32")
    idx = np.array([[0, 2], [7, -1], [1, 1]], dtype="float32")
    got = nd.take(nd.array(x), nd.array(idx), axis=axis, mode=mode)
    want = np.take(x, idx.astype(int), axis=axis, mode=mode)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.asnumpy(), want)


def test_take_raise_and_errors():
    x = nd.array(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(nd.take(x, nd.array([1, 0]), mode="raise").asnumpy(),
                                  [[3, 4, 5], [0, 1, 2]])
    # as MXNet's engine, the bad index is reported at the first read of the result
    y = nd.take(x, nd.array([0, 2]), mode="raise")
    with pytest.raises(GpundaError, match=r"take.*index 2.*size 2"):
        y.asnumpy()
    with pytest.raises(GpundaError, match=r"take.*axis=2"):
        nd.take(x, nd.array([0]), axis=2)
    with pytest.raises(GpundaError, match=r"take.*mode"):
        nd.take(x, nd.array([0]), mode="nearest")


@pytest.mark.parametrize("axis,mode", [(0, "clip"), (1, "wrap"), (-1, "clip")])
def test_take_gradient(axis, mode, rng):
    idx = nd.array([[0, 2], [5, 0]])           # repeats and out-of-range entries
    check_grad(lambda a: nd.take(a, idx, axis=axis, mode=mode), rng.standard_normal((3, 4)), rng)
    check_second_order(lambda a: nd.take(a, idx, axis=axis, mode=mode),
                       rng.standard_normal((3, 4)), rng)


# -- pick ---------------------------------------------------------------------------


def test_pick(rng):
    x = rng.standard_normal((3, 4)).astype("float32")
    a = nd.array(x)
    np.testing.assert_array_equal(nd.pick(a, nd.array([0, 3, 1])).asnumpy(),
                                  x[np.arange(3), [0, 3, 1]])
    np.testing.assert_array_equal(nd.pick(a, nd.array([2, 0, 1, 9]), axis=0).asnumpy(),
                                  x[[2, 0, 1, 2], np.arange(4)])
    r = nd.pick(a, nd.array([[1], [5], [-6]]), axis=1, keepdims=True, mode="wrap")
    assert r.shape == (3, 1)
    np.testing.assert_array_equal(r.asnumpy()[:, 0], x[np.arange(3), [1, 1, 2]])
    np.testing.assert_array_equal(nd.pick(a, nd.array([0, 11]), axis=None).asnumpy(),
                                  x.reshape(-1)[[0, 11]])
    with pytest.raises(GpundaError, match=r"pick.*index shape \(2,\)"):
        nd.pick(a, nd.array([0, 1]))
    with pytest.raises(GpundaError, match=r"pick.*axis=2"):
        nd.pick(a, nd.array([0, 1, 2]), axis=2)


@pytest.mark.parametrize("kw", [{}, {"axis": 0, "keepdims": True}, {"axis": None},
                                {"mode": "wrap"}])
def test_pick_gradient(kw, rng):
    idx = nd.array([0, 0, 3]) if kw.get("axis", -1) is None else (
        nd.array([[1, 0, 2, 2]]) if kw.get("axis") == 0 else nd.array([1, 5, 3]))
    check_grad(lambda a: nd.pick(a, idx, **kw), rng.standard_normal((3, 4)), rng)
    check_second_order(lambda a: nd.pick(a, idx, **kw), rng.standard_normal((3, 4)), rng)


# -- gather_nd / scatter_nd ------------------------------------------------------------


def test_gather_scatter_nd(rng):
    x = rng.standard_normal((3, 4, 2)).astype("float32")
    idx = np.array([[0, 2, 2], [1, 3, 3]], dtype="float32")
    got = nd.gather_nd(nd.array(x), nd.array(idx))
    np.testing.assert_array_equal(got.asnumpy(), x[[0, 2, 2], [1, 3, 3]])
    assert got.shape == (3, 2)
    data = rng.standard_normal((2, 2)).astype("float32")
    sidx = np.array([[0, 2], [1, 0]], dtype="float32")
    s = nd.scatter_nd(nd.array(data), nd.array(sidx), shape=(3, 2, 2))
    want = np.zeros((3, 2, 2), "float32")
    want[[0, 2], [1, 0]] = data
    np.testing.assert_array_equal(s.asnumpy(), want)
    with pytest.raises(GpundaError, match=r"gather_nd.*indices shape \(4, 1\)"):
        nd.gather_nd(nd.array(x), nd.ones((4, 1)))
    with pytest.raises(GpundaError, match=r"scatter_nd.*data shape \(3,\)"):
        nd.scatter_nd(nd.ones((3,)), nd.array(sidx), shape=(3, 2, 2))


def test_gather_nd_gradient_accumulates(rng):
    idx = nd.array([[0, 2, 2], [1, 3, 3]])
    check_grad(lambda a: nd.gather_nd(a, idx), rng.standard_normal((3, 4, 2)), rng)
    check_second_order(lambda a: nd.gather_nd(a, idx), rng.standard_normal((3, 4)), rng)


def test_scatter_nd_gradient(rng):
    idx = nd.array([[0, 2], [1, 0]])
    check_grad(lambda a: nd.scatter_nd(a, idx, shape=(3, 2, 2)), rng.standard_normal((2, 2)), rng)
    check_second_order(lambda a: nd.scatter_nd(a, idx, shape=(3, 2)), rng.standard_normal(2), rng)


# -- one_hot / where ---------------------------------------------------------------------


def test_one_hot():
    r = nd.one_hot(nd.array([[1, 0], [3, -1]]), depth=3, on_value=5, off_value=-1, dtype="int32")
    assert r.shape == (2, 2, 3) and r.dtype == np.int32
    np.testing.assert_array_equal(r.asnumpy(), [[[-1, 5, -1], [5, -1, -1]],
                                                [[-1, -1, -1], [-1, -1, -1]]])
    np.testing.assert_array_equal(nd.one_hot(nd.array([2]), 4).asnumpy(), [[0, 0, 1, 0]])
    with pytest.raises(GpundaError, match=r"one_hot.*depth"):
        nd.one_hot(nd.array([1]))


def test_where(rng):
    x = rng.standard_normal((3, 2)).astype(np.float32)
    y = rng.standard_normal((3, 2)).astype(np.float32)
    c = np.array([[1, 0], [0, 0], [2, 1]], dtype="float32")
    got = nd.where(nd.array(c), nd.array(x), nd.array(y))
    np.testing.assert_array_equal(got.asnumpy(), np.where(c != 0, x, y))
    rows = nd.where(nd.array([0, 1, 0]), nd.array(x), nd.array(y))
    np.testing.assert_array_equal(rows.asnumpy(), np.where([[0], [1], [0]], x, y))
    with pytest.raises(GpundaError, match=r"where.*condition shape \(2,\)"):
        nd.where(nd.array([1, 0]), nd.array(x), nd.array(y))
    with pytest.raises(GpundaError, match=r"where.*y shape \(2, 3\)"):
        nd.where(nd.array(c), nd.array(x), nd.ones((2, 3)))


def test_where_gradient(rng):
    c = nd.array([[1, 0], [0, 0], [2, 1]])
    y = nd.array(rng.standard_normal((3, 2)), dtype="float64")
    check_grad(lambda a: nd.where(c, a, y), rng.standard_normal((3, 2)), rng)
    check_grad(lambda a: nd.where(nd.array([0, 1, 0]), y, a), rng.standard_normal((3, 2)), rng)
    check_second_order(lambda a: nd.where(c, a * a, y), rng.standard_normal((3, 2)), rng)
    # the condition gets no gradient
    cv = nd.array([1.0, 0.0, 1.0])
    cv.attach_grad()
    with mx.autograd.record():
        s = nd.where(cv, nd.ones((3,)), nd.zeros((3,))).sum()
    s.backward()
    np.testing.assert_array_equal(cv.grad.asnumpy(), 0)


# -- recorded __getitem__ ------------------------------------------------------------------

_KEYS = [
    1, -1, (1, 2), slice(1, None), (slice(None), 2), (Ellipsis, 1), (None, 0),
    (slice(None, None, -1), slice(0, 3, 2)), [0, 0, 2], (slice(None), [3, 0, 3]),
    ([0, 2], [1, 1]), None, Ellipsis, (0, None, slice(1, 3)), (-1, -2),
]


@pytest.mark.parametrize("key", _KEYS, ids=repr)
def test_getitem_recorded(key, rng):
    x = rng.standard_normal((3, 4))
    a = nd.array(x, dtype="float64")
    a.attach_grad()
    with mx.autograd.record():
        r = a[key]
    plain = a.detach()[key]
    want = np.asarray(x[key])
    want = want.reshape(1) if want.ndim == 0 else want
    assert r.shape == plain.shape == want.shape
    np.testing.assert_array_equal(r.asnumpy(), want)
    check_grad(lambda v: v[key], x, rng)


def test_getitem_ndarray_and_mask_keys(rng):
    x = rng.standard_normal((3, 4))
    check_grad(lambda v: v[nd.array([2, 0, 2])], x, rng)
    check_grad(lambda v: v[:, nd.array([1, 1], dtype="int64")], x, rng)
    mask = x[:, 0] > 0
    check_grad(lambda v: v[mask], x, rng)
    check_second_order(lambda v: v[1:, nd.array([0, 0])], x, rng)


def test_getitem_result_does_not_alias_input():
    a = nd.array([1.0, 2.0, 3.0])
    a.attach_grad()
    with mx.autograd.record():
        r = a[0:2]
    a[:] = 7          # outside record: allowed, and must not change r
    np.testing.assert_array_equal(r.asnumpy(), [1, 2])


def test_getitem_bad_index():
    a = nd.ones((2, 3))
    a.attach_grad()
    with mx.autograd.record():
        with pytest.raises(GpundaError, match=r"index.*\(2, 3\)"):
            a[5]


# -- _copyto -----------------------------------------------------------------------------


def test_copyto_other_context_and_gradient():
    x = nd.array([1.0, 2.0, 3.0], dtype="float64")
    y = x.copyto(mx.cpu(1))
    assert y.context == mx.cpu(1)
    np.testing.assert_array_equal(y.asnumpy(), [1, 2, 3])
    y[:] = 0                                    # a real copy
    np.testing.assert_array_equal(x.asnumpy(), [1, 2, 3])
    x.attach_grad()
    with mx.autograd.record():
        z = x.as_in_context(mx.cpu(1))
        s = (z * z).sum()
    assert z.context == mx.cpu(1)
    s.backward()
    assert x.grad.context == x.context
    np.testing.assert_array_equal(x.grad.asnumpy(), [2, 4, 6])
    with mx.autograd.record():
        z = x.as_in_context(mx.cpu(1))
        s = (z * z * z).sum()
    g = mx.autograd.grad(s, [x], create_graph=True)[0]
    assert g.context == x.context
    with mx.autograd.record():
        t = g.sum()
    t.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6, 12, 18])


@pytest.mark.gpu
def test_copyto_gpu_roundtrip():
    x = nd.array([1.0, 2.0], dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = x.as_in_context(mx.gpu(0))
        s = (y * y).sum().as_in_context(mx.cpu(0))
    assert y.context == mx.gpu(0)
    s.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [2, 4])


@pytest.mark.gpu
def test_indexing_on_gpu_matches_cpu(rng):
    x = rng.standard_normal((3, 4))
    idx = [2, 0, 2]
    calls = [
        lambda a, c: nd.take(a, nd.array(idx, ctx=c), axis=1),
        lambda a, c: nd.pick(a, nd.array(idx, ctx=c)),
        lambda a, c: nd.gather_nd(a, nd.array([idx, [1, 1, 3]], ctx=c)),
        lambda a, c: a[nd.array(idx, ctx=c)],
        lambda a, c: a[1:, ::2],
        lambda a, c: nd.where(nd.array([1, 0, 1], ctx=c), a, a * 2),
        lambda a, c: nd.one_hot(nd.array(idx, ctx=c), 4, dtype="float64") * a[0:3, 0:1],
    ]
    for f in calls:
        res = []
        for ctx in (mx.cpu(), mx.gpu(0)):
            a = nd.array(x, ctx=ctx, dtype="float64")
            a.attach_grad()
            with mx.autograd.record():
                y = f(a, ctx)
            y.backward()
            res.append((y.asnumpy(), a.grad.asnumpy()))
        np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-12)
        np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-12)


# -- batch_take, ravel/unravel, contrib ops ------------------------------------------------


def test_batch_take(rng):
    x = rng.standard_normal((3, 4))
    got = nd.batch_take(nd.array(x, dtype="float64"), nd.array([0, 3, 9]))
    np.testing.assert_array_equal(got.asnumpy(), x[[0, 1, 2], [0, 3, 3]])
    with pytest.raises(GpundaError, match=r"batch_take.*\(2,\)"):
        nd.batch_take(nd.array(x), nd.array([0, 1]))
    # as MXNet's: batch_take has no gradient rule (no FGradient)
    a = nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        y = nd.batch_take(a, nd.array([1, 1, 2]))
    with pytest.raises(GpundaError, match="batch_take"):
        y.backward()


def test_ravel_unravel(rng):
    shape = (3, 4, 5)
    flat = rng.integers(0, 60, size=(6,))
    multi = np.stack(np.unravel_index(flat, shape))
    r = nd.ravel_multi_index(nd.array(multi), shape=shape)
    assert r.shape == (6,)
    np.testing.assert_array_equal(r.asnumpy(), flat)
    u = nd.unravel_index(nd.array(flat), shape=shape)
    np.testing.assert_array_equal(u.asnumpy(), multi)
    # MXNet 1.9.1: "Input to ravel operator must be two-dimensional"
    with pytest.raises(GpundaError, match=r"_ravel_multi_index.*two-dimensional"):
        nd.ravel_multi_index(nd.array(multi.reshape(3, 2, 3)), shape=shape)
    with pytest.raises(GpundaError, match=r"_ravel_multi_index.*shape"):
        nd.ravel_multi_index(nd.array(multi[:2]), shape=shape)
    with pytest.raises(GpundaError, match=r"_unravel_index.*shape.*missing"):
        nd.unravel_index(nd.array(flat))


def test_boolean_mask(rng):
    x = rng.standard_normal((3, 4))
    m = np.array([1, 0, 1, 1], dtype="float32")
    got = nd.boolean_mask(nd.array(x, dtype="float64"), nd.array(m), axis=1)
    np.testing.assert_array_equal(got.asnumpy(), x[:, m != 0])
    rows = nd._contrib_boolean_mask(nd.array(x, dtype="float64"), nd.array([0, 1, 0]))
    np.testing.assert_array_equal(rows.asnumpy(), x[[1]])
    with pytest.raises(GpundaError, match=r"boolean_mask.*index shape \(2,\)"):
        nd.boolean_mask(nd.array(x), nd.array([1, 0]))
    check_grad(lambda a: nd.boolean_mask(a, nd.array(m), axis=1), x, rng)
    check_second_order(lambda a: nd.boolean_mask(a, nd.array([1, 0, 1])), x, rng)


def test_index_copy_and_index_array(rng):
    old, new = rng.standard_normal((4, 2)), rng.standard_normal((2, 2))
    got = nd.index_copy(nd.array(old, dtype="float64"), nd.array([3, 1]),
                        nd.array(new, dtype="float64"))
    want = old.copy()
    want[[3, 1]] = new
    np.testing.assert_array_equal(got.asnumpy(), want)
    idx = nd.array([3, 1])
    check_grad(lambda a: nd.index_copy(a, idx, nd.array(new, dtype="float64")), old, rng)
    check_grad(lambda b: nd.index_copy(nd.array(old, dtype="float64"), idx, b), new, rng)
    with pytest.raises(GpundaError, match=r"index_copy.*new_tensor shape \(3, 2\)"):
        nd.index_copy(nd.array(old), idx, nd.ones((3, 2)))
    ia = nd.index_array(nd.ones((2, 3)))
    assert ia.shape == (2, 3, 2) and ia.dtype == np.int64
    np.testing.assert_array_equal(ia.asnumpy(), np.stack(np.indices((2, 3)), axis=-1))
    np.testing.assert_array_equal(nd.index_array(nd.ones((2, 3)), axes=(-1,)).asnumpy()[..., 0],
                                  np.indices((2, 3))[1])


def test_choose_and_fill_element_0index_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 4))
    cols = rng.integers(0, 4, size=6)
    vals = rng.standard_normal(6)
    got = mx.nd.choose_element_0index(mx.nd.array(x), mx.nd.array(cols))
    np.testing.assert_allclose(got.asnumpy(), x[np.arange(6), cols].astype(np.float32))
    want = x.astype(np.float32).copy()
    want[np.arange(6), cols] = vals
    got = mx.nd.fill_element_0index(mx.nd.array(x), mx.nd.array(vals), mx.nd.array(cols))
    np.testing.assert_allclose(got.asnumpy(), want)
    with pytest.raises(GpundaError, match="fill_element_0index"):
        mx.nd.fill_element_0index(mx.nd.array(x), mx.nd.array(vals[:3]), mx.nd.array(cols))


def test_fill_element_0index_gradient():
    x, v = mx.nd.ones((2, 3)), mx.nd.ones((2,))
    x.attach_grad()
    v.attach_grad()
    w = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    with mx.autograd.record():
        y = mx.nd.fill_element_0index(x, v, mx.nd.array([2, 0])) * w
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[1, 2, 0], [0, 5, 6]])
    np.testing.assert_array_equal(v.grad.asnumpy(), [3, 4])


def test_gather_nd_out_of_bounds_raises_index_error_and_negatives_wrap():
    from gpunda import nd
    data = nd.array([[0, 1, 2], [3, 4, 5]])
    for bad in (3, -4):
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis 1"):
            nd.gather_nd(data, nd.array([[0, 1], [0, bad]])).asnumpy()
    got = nd.gather_nd(data, nd.array([[0, 1], [-1, -3]])).asnumpy()
    np.testing.assert_array_equal(got, [2, 3])


def test_unravel_index_with_unbounded_leading_dimension():
    # MXNet 1.9.1: shape=(-1, 10) leaves the first coordinate unbounded
    out = nd.unravel_index(nd.array([31, 15, 49, 120]), shape=(-1, 10))
    np.testing.assert_array_equal(out.asnumpy(), [[3, 1, 4, 12], [1, 5, 9, 0]])
