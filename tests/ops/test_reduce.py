"""Reductions and orderings against NumPy references, MXNet shape rules, errors, and
gradients against central finite differences (float64)."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.test_utils import numeric_grad
from gpunda.base import GpundaError

nd = mx.nd


# -- helpers -------------------------------------------------------------------------


def _numeric_grads(f, xs, head, eps=1e-6):
    """Central differences of sum(f(*xs) * head) w.r.t. each float64 array in xs."""
    return numeric_grad(f, xs, eps=2 * eps, dtype=np.float64, head_grads=head)


def check_grad(f, xs, rng, rtol=1e-5, atol=1e-6):
    """Autograd gradients of f at xs equal central differences (random head gradients)."""
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    vs = [nd.array(x, dtype="float64") for x in xs]
    for v in vs:
        v.attach_grad()
    with mx.autograd.record():
        outs = f(*vs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    head = [rng.standard_normal(o.shape) for o in outs]
    mx.autograd.backward(outs, [nd.array(h, dtype="float64") for h in head])
    expect = _numeric_grads(f, xs, head)
    for v, e in zip(vs, expect):
        np.testing.assert_allclose(v.grad.asnumpy(), e, rtol=rtol, atol=atol)


def check_second_order(f, x, rng, rtol=1e-5, atol=1e-5):
    """d/dx sum(w * grad f(x)) by create_graph equals central differences of it."""
    w = rng.standard_normal(x.shape)

    def first(xv):
        with mx.autograd.record():
            y = f(xv)
        return mx.autograd.grad(y, [xv], create_graph=True)[0]

    v = nd.array(x, dtype="float64")
    v.attach_grad()
    g = first(v)
    with mx.autograd.record():
        h = (g * nd.array(w, dtype="float64")).sum()
    h.backward()

    def h_of(xn):
        xv = nd.array(xn, dtype="float64")
        xv.attach_grad()
        return float((first(xv).asnumpy() * w).sum())

    num = np.zeros_like(x)
    eps = 1e-5
    for i in np.ndindex(x.shape):
        xp_, xm = x.copy(), x.copy()
        xp_[i] += eps
        xm[i] -= eps
        num[i] = (h_of(xp_) - h_of(xm)) / (2 * eps)
    np.testing.assert_allclose(v.grad.asnumpy(), num, rtol=rtol, atol=atol)


def _ref_axes(axis, exclude, ndim):
    """MXNet's reduction axes, written independently of the implementation."""
    if axis is None or axis == ():
        return tuple(range(ndim))
    ax = [axis] if isinstance(axis, int) else list(axis)
    ax = sorted(a + ndim if a < 0 else a for a in ax)
    if exclude:
        ax = [a for a in range(ndim) if a not in ax]
    return tuple(ax)


def _ref_reduce(fn, x, axis, keepdims, exclude):
    axes = _ref_axes(axis, exclude, x.ndim)
    r = fn(x, axis=axes, keepdims=keepdims)
    r = np.asarray(r)
    return r.reshape(1) if r.ndim == 0 else r


# -- forward values and shapes --------------------------------------------------------

_REDUCERS = {
    "sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min,
    "nansum": np.nansum, "nanprod": np.nanprod,
}
_AXES = [None, (), 0, -1, 1, (0, 2), (-1, 0), (0, 1, 2)]


@pytest.mark.parametrize("name", sorted(_REDUCERS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reductions_match_numpy(name, dtype, rng):
    x = rng.uniform(0.5, 1.5, size=(2, 3, 4)).astype(dtype)
    if name.startswith("nan"):
        x[0, 1, 2] = np.nan
        x[1, 2, 0] = np.nan
    a = nd.array(x, dtype=dtype)
    for axis in _AXES:
        for keepdims in (False, True):
            for exclude in (False, True):
                got = getattr(nd, name)(a, axis=axis, keepdims=keepdims, exclude=exclude)
                want = _ref_reduce(_REDUCERS[name], x, axis, keepdims, exclude)
                assert got.shape == want.shape, (axis, keepdims, exclude)
                assert got.dtype == np.dtype(dtype)
                np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5 if dtype == "float32"
                                           else 1e-12)


def test_full_reduction_shapes_and_aliases():
    x = nd.array(np.arange(6).reshape(2, 3), dtype="float32")
    assert nd.sum(x).shape == (1,)
    assert float(nd.sum(x).asnumpy()[0]) == 15
    assert nd.sum(x, keepdims=True).shape == (1, 1)
    assert nd.sum(x, axis=(0, 1)).shape == (1,)
    assert x.sum(axis=1).shape == (2,)
    np.testing.assert_array_equal(nd.sum_axis(x, axis=0).asnumpy(), [3, 5, 7])
    np.testing.assert_array_equal(nd.max_axis(x, axis=1).asnumpy(), [2, 5])
    np.testing.assert_array_equal(nd.min_axis(x, axis=1).asnumpy(), [0, 3])
    # MXNet string params
    np.testing.assert_array_equal(nd.sum(x, axis="(1,)", keepdims="True").asnumpy(), [[3], [12]])
    # exclude with every axis listed reduces nothing
    np.testing.assert_array_equal(nd.sum(x, axis=(0, 1), exclude=True).asnumpy(), x.asnumpy())
    with mx.util.np_shape(True):
        assert nd.sum(x).shape == ()


def test_reduction_dtypes():
    xi = nd.array(np.array([[1, 2], [3, 4]]), dtype="int32")
    r = nd.sum(xi, axis=0)
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r.asnumpy(), [4, 6])
    assert nd.mean(xi, axis=1).dtype == np.int32
    np.testing.assert_array_equal(nd.mean(xi, axis=1).asnumpy(), [1, 3])
    h = nd.array(np.full(4096, 1.0), dtype="float16")
    # float16 accumulates in float32 (a float16 running sum stalls at 2048)
    assert float(nd.sum(h).asnumpy()[0]) == 4096


def test_reduction_errors():
    x = nd.ones((2, 3))
    with pytest.raises(GpundaError, match=r"sum.*axis=5"):
        nd.sum(x, axis=5)
    with pytest.raises(GpundaError, match=r"mean.*axis=-3"):
        nd.mean(x, axis=-3)
    with pytest.raises(GpundaError, match=r"max.*duplicate"):
        nd.max(x, axis=(1, -1))
    with pytest.raises(GpundaError, match=r"sum.*keepdims"):
        nd.sum(x, keepdims="maybe")


def test_norm(rng):
    x = rng.standard_normal((3, 4, 2)).astype("float32")
    a = nd.array(x)
    np.testing.assert_allclose(nd.norm(a).asnumpy(), [np.sqrt((x ** 2).sum())], rtol=1e-5)
    assert nd.norm(a).shape == (1,)
    np.testing.assert_allclose(nd.norm(a, ord=1, axis=1).asnumpy(), np.abs(x).sum(axis=1),
                               rtol=1e-5)
    np.testing.assert_allclose(nd.norm(a, axis=(0, 2), keepdims=True).asnumpy(),
                               np.sqrt((x ** 2).sum(axis=(0, 2), keepdims=True)), rtol=1e-5)
    np.testing.assert_allclose(a.norm(axis=-1).asnumpy(), np.linalg.norm(x, axis=-1), rtol=1e-5)
    assert nd.norm(a, out_dtype="float64").dtype == np.float64
    with pytest.raises(GpundaError, match=r"norm.*ord=3"):
        nd.norm(a, ord=3)
    with pytest.raises(GpundaError, match=r"norm.*axis=3"):
        nd.norm(a, axis=3)


def test_moments(rng):
    x = rng.standard_normal((3, 4, 5))
    a = nd.array(x, dtype="float64")
    m, v = nd.moments(a, axes=(0, 2))
    np.testing.assert_allclose(m.asnumpy(), x.mean(axis=(0, 2)))
    np.testing.assert_allclose(v.asnumpy(), x.var(axis=(0, 2)))
    m, v = nd.moments(a, axes=1, keepdims=True)
    assert m.shape == v.shape == (3, 1, 5)
    np.testing.assert_allclose(v.asnumpy(), x.var(axis=1, keepdims=True))
    # MXNet 1.9.1 refuses moments without axes: nd.moments(nd.ones((1, 4))) raises
    # "Empty axes is not supported, if you would like to do global moments, please pass all
    # axes to axes argument"
    with pytest.raises(GpundaError, match="Empty axes is not supported"):
        nd.moments(a)
    m, v = nd.moments(a, axes=(0, 1, 2))
    assert m.size == v.size == 1
    np.testing.assert_allclose(v.asnumpy().reshape(-1), [x.var()])


def test_argmax_argmin(rng):
    x = rng.standard_normal((3, 4, 5)).astype("float32")
    a = nd.array(x)
    for axis in (0, 1, -1):
        for kd in (False, True):
            r = nd.argmax(a, axis=axis, keepdims=kd)
            assert r.dtype == np.float32     # MXNet returns indices in the input dtype
            want = np.argmax(x, axis=axis)
            want = np.expand_dims(want, axis) if kd else want
            np.testing.assert_array_equal(r.asnumpy(), want)
            np.testing.assert_array_equal(nd.argmin(a, axis=axis, keepdims=kd).asnumpy(),
                                          np.expand_dims(np.argmin(x, axis=axis), axis) if kd
                                          else np.argmin(x, axis=axis))
    np.testing.assert_array_equal(nd.argmax(a).asnumpy(), [np.argmax(x)])
    assert nd.argmax(a, keepdims=True).shape == (1, 1, 1)
    assert nd.argmax(nd.array([3, 1, 4]), axis=0).shape == (1,)
    assert a.argmax(axis=1).shape == (3, 5)
    # MXNet 1.9.1: argmax_channel is argmax over axis 1 (nd.argmax_channel of a (2, 3, 4)
    # array has shape (2, 4)); a 1-D input raises
    np.testing.assert_array_equal(nd.argmax_channel(a).asnumpy(), np.argmax(x, axis=1))
    with pytest.raises(GpundaError, match="argmax_channel"):
        nd.argmax_channel(nd.array([1, 3, 2]))
    with pytest.raises(GpundaError, match=r"argmax.*axis=3"):
        nd.argmax(a, axis=3)


def test_sort_argsort(rng):
    x = rng.integers(0, 4, size=(3, 6)).astype("float32")   # many ties
    a = nd.array(x)
    np.testing.assert_array_equal(nd.sort(a).asnumpy(), np.sort(x, axis=-1))
    np.testing.assert_array_equal(nd.sort(a, axis=0, is_ascend=False).asnumpy(),
                                  -np.sort(-x, axis=0))
    np.testing.assert_array_equal(nd.sort(a, axis=None).asnumpy(), np.sort(x, axis=None))
    idx = nd.argsort(a)
    assert idx.dtype == np.float32
    np.testing.assert_array_equal(idx.asnumpy(), np.argsort(x, axis=-1, kind="stable"))
    # descending keeps tied elements in their original order
    d = nd.argsort(a, is_ascend=False, dtype="int64").asnumpy()
    assert d.dtype == np.int64
    np.testing.assert_array_equal(d, np.argsort(-x, axis=-1, kind="stable"))
    np.testing.assert_array_equal(nd.argsort(a, axis=None).asnumpy(),
                                  np.argsort(x, axis=None, kind="stable"))
    with pytest.raises(GpundaError, match=r"sort.*axis=2"):
        nd.sort(a, axis=2)


def test_topk(rng):
    x = rng.permutation(24).reshape(2, 3, 4).astype("float64")
    a = nd.array(x, dtype="float64")
    order = np.argsort(-x, axis=-1, kind="stable")
    np.testing.assert_array_equal(nd.topk(a, k=2).asnumpy(), order[..., :2])
    v = nd.topk(a, k=2, ret_typ="value")
    assert isinstance(v, nd.NDArray)
    np.testing.assert_array_equal(v.asnumpy(), np.take_along_axis(x, order[..., :2], -1))
    v, i = nd.topk(a, axis=1, k=2, ret_typ="both", is_ascend=True, dtype="int32")
    o1 = np.argsort(x, axis=1, kind="stable")[:, :2]
    np.testing.assert_array_equal(i.asnumpy(), o1)
    assert i.dtype == np.int32
    np.testing.assert_array_equal(v.asnumpy(), np.take_along_axis(x, o1, 1))
    m = nd.topk(a, k=3, ret_typ="mask").asnumpy()
    assert m.shape == x.shape and m.dtype == np.float64
    np.testing.assert_array_equal(m.sum(axis=-1), np.full((2, 3), 3))
    np.testing.assert_array_equal(np.take_along_axis(m, order[..., :3], -1), 1)
    # k < 1 returns everything; axis=None works on the flattened input
    assert nd.topk(a, k=0).shape == (2, 3, 4)
    np.testing.assert_array_equal(nd.topk(a, axis=None, k=3).asnumpy(),
                                  np.argsort(-x, axis=None, kind="stable")[:3])
    with pytest.raises(GpundaError, match=r"topk.*k=5"):
        nd.topk(a, k=5)
    with pytest.raises(GpundaError, match=r"topk.*ret_typ"):
        nd.topk(a, ret_typ="values")
    with pytest.raises(GpundaError, match=r"topk.*axis=3"):
        nd.topk(a, axis=3)


def test_topk_out_counts():
    a = nd.array([[3.0, 1.0, 2.0]])
    out = nd.zeros((1, 2))
    nd.topk(a, k=2, ret_typ="value", out=out)
    np.testing.assert_array_equal(out.asnumpy(), [[3, 2]])
    with pytest.raises(GpundaError, match=r"expects 2 \(all\) or 1 \(visible only\)"):
        nd.topk(a, k=2, ret_typ="value", out=[nd.zeros((1, 2))] * 3)


def test_failed_call_leaves_input_alone():
    x = np.arange(6.0).reshape(2, 3)
    a = nd.array(x)
    with pytest.raises(GpundaError):
        nd.sum(a, axis=(0, 7))
    np.testing.assert_array_equal(a.asnumpy(), x)


# -- gradients -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "nansum", "nanprod"])
@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"axis": (0, 2), "keepdims": True},
                                {"axis": -1, "exclude": True}])
def test_reduction_gradients(name, kw, rng):
    x = rng.permutation(24).reshape(2, 3, 4) / 24.0 + 0.5      # distinct values: no ties
    check_grad(lambda a: getattr(nd, name)(a, **kw), [x], rng)


def test_nan_reduction_gradients_skip_nans(rng):
    x = rng.uniform(0.5, 1.5, size=(2, 3))
    x[0, 1] = np.nan
    for name in ("nansum", "nanprod"):
        a = nd.array(x, dtype="float64")
        a.attach_grad()
        with mx.autograd.record():
            y = getattr(nd, name)(a, axis=1)
        y.backward()
        g = a.grad.asnumpy()
        assert g[0, 1] == 0 and np.isfinite(g).all()
    xc = np.where(np.isnan(x), 1.0, x)
    np.testing.assert_allclose(g[0, [0, 2]], xc[0].prod() / xc[0, [0, 2]])


def test_max_gradient_ties_like_mxnet():
    # MXNet gives every element equal to the max the full output gradient
    a = nd.array([[1.0, 3.0, 3.0]], dtype="float64")
    a.attach_grad()
    with mx.autograd.record():
        y = nd.max(a, axis=1)
    y.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), [[0, 1, 1]])


@pytest.mark.parametrize("kw", [{}, {"ord": 1, "axis": 1}, {"axis": (0, 2), "keepdims": True}])
def test_norm_gradient(kw, rng):
    check_grad(lambda a: nd.norm(a, **kw), [rng.standard_normal((2, 3, 4))], rng)


@pytest.mark.parametrize("kw", [{"axes": (0, 2)}, {"axes": 1, "keepdims": True},
                                {"axes": (0, 1, 2)}])
def test_moments_gradient(kw, rng):
    check_grad(lambda a: nd.moments(a, **kw), [rng.standard_normal((2, 3, 4))], rng)


@pytest.mark.parametrize("f", [
    lambda a: nd.sort(a, axis=1),
    lambda a: nd.sort(a, axis=None, is_ascend=False),
    lambda a: nd.topk(a, k=2, ret_typ="value"),
    lambda a: nd.topk(a, axis=0, k=1, ret_typ="both", is_ascend=True)[0],
    lambda a: nd.topk(a, axis=None, k=3, ret_typ="value"),
])
def test_ordering_gradients(f, rng):
    check_grad(f, [rng.permutation(12).reshape(3, 4) / 12.0], rng)


def test_topk_indices_have_no_gradient(rng):
    a = nd.array(rng.standard_normal((2, 3)), dtype="float64")
    a.attach_grad()
    with mx.autograd.record():
        y = nd.topk(a, k=2, ret_typ="both")[0].sum() + nd.topk(a, k=1, ret_typ="mask").sum() * 0
    y.backward()
    assert a.grad.asnumpy().sum() == pytest.approx(4.0)


@pytest.mark.parametrize("f", [
    lambda a: nd.sum(a * a * a, axis=1).sum(),
    lambda a: nd.mean(a * a * a, axis=(0,), keepdims=True).sum(),
    lambda a: nd.mean(nd.sum(a * a, axis=0) * nd.sum(a, axis=1, exclude=True)),
    lambda a: nd.prod(a, axis=1).sum(),
    lambda a: nd.norm(a, axis=0).sum(),
    lambda a: (nd.max(a, axis=1) * nd.max(a, axis=1)).sum(),
    lambda a: ((nd.topk(a, k=2, ret_typ="value") ** 2) *
               nd.array([[1.0, 3.0]], dtype="float64")).sum(),
    lambda a: ((nd.sort(a, axis=None) ** 2) * nd.array(np.arange(6.0), dtype="float64")).sum(),
    lambda a: (nd.moments(a, axes=1)[1] ** 2).sum(),
])
def test_second_order(f, rng):
    check_second_order(f, rng.permutation(6).reshape(2, 3) / 6.0 + 0.5, rng)


def test_hidden_broadcast_pair_are_adjoint(rng):
    # <B g, y> == <g, S y>: _broadcast_reduced and _sum_reduced are adjoint maps
    g = rng.standard_normal((2, 4))
    y = rng.standard_normal((2, 3, 4))
    bg = nd._broadcast_reduced(nd.array(g, dtype="float64"), shape=(2, 3, 4), axes=(1,))
    sy = nd._sum_reduced(nd.array(y, dtype="float64"), axes=(1,), shape=(2, 4))
    assert float((bg.asnumpy() * y).sum()) == pytest.approx(float((g * sy.asnumpy()).sum()))


def test_norm_out_dtype_gradient_in_input_dtype(rng):
    a = nd.array(rng.standard_normal((2, 3)), dtype="float64")
    a.attach_grad()
    with mx.autograd.record():
        y = nd.norm(a, axis=1, out_dtype="float32")
    assert y.dtype == np.float32
    y.backward()
    assert a.grad.dtype == np.float64
    x = a.asnumpy()
    np.testing.assert_allclose(a.grad.asnumpy(), x / np.linalg.norm(x, axis=1, keepdims=True),
                               rtol=1e-6)


@pytest.mark.gpu
def test_reductions_on_gpu_match_cpu(rng):
    x = rng.standard_normal((3, 4, 5))
    calls = [
        lambda a: nd.sum(a, axis=(0, 2)), lambda a: nd.mean(a, axis=1, keepdims=True),
        lambda a: nd.max(a, axis=-1), lambda a: nd.prod(a, axis=0, exclude=True),
        lambda a: nd.norm(a, axis=1), lambda a: nd.moments(a, axes=2)[1],
        lambda a: nd.sort(a, axis=1, is_ascend=False), lambda a: nd.topk(a, k=2, ret_typ="value"),
        lambda a: nd.nansum(a, axis=2),
    ]
    for f in calls:
        outs = []
        for ctx in (mx.cpu(), mx.gpu(0)):
            a = nd.array(x, ctx=ctx, dtype="float64")
            a.attach_grad()
            with mx.autograd.record():
                y = f(a)
            y.backward()
            outs.append((y.asnumpy(), a.grad.asnumpy()))
        np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-10)
        np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-10)
    g = nd.argsort(nd.array(x, ctx=mx.gpu(0)), is_ascend=False).asnumpy()
    np.testing.assert_array_equal(g, nd.argsort(nd.array(x), is_ascend=False).asnumpy())
